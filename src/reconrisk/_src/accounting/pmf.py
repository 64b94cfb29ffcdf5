"""A discrete privacy-loss distribution and its certified composition (used by :mod:`reconrisk._src.accounting.pld`).

:class:`PMF` holds μ-masses on a loss grid, an infinity atom and a slack
that bounds every numerical error made so far (dropped tails, FFT
round-off): the pessimistic side adds the slack to its results, the
optimistic side subtracts it. Composition is by FFT (self-composition by
powering the spectrum) with the round-off allowance of
:mod:`reconrisk._src.accounting.fft_roundoff`.

Exponential tilting (relative precision in the tail). The FFT round-off
bound is relative to the norm of the vector transformed, so untilted it is an
*absolute* allowance (≈ 1e-11 after 1e3–1e5 steps) that swamps the tiny tail
masses a small κ or α reads (B ≈ 1e-12). A PMF may therefore store the
tilted vector p̃(l) ∝ p(l)·e^{θl} (θ ≥ 0, :meth:`PMF.tilted`), the μ-mass at
loss l being ``probs·exp(log_scale − θl)``. Tilting commutes with
convolution ((p e^{θl}) ∗ (r e^{θl}) = (p ∗ r) e^{θl}; normalisers multiply,
i.e. log-scales add), so the engine composes the tilted vectors and untilts
only in the queries, in log space. The ``slack`` then bounds the *weighted*
error Σ_l |p̂(l) − p*(l)|·e^{θl − log_scale} (p* the exact pessimistic or
optimistic PMF; for θ = 0 this is the total variation, as before), so the
error of every tail sum above a loss a is at most
``slack·exp(log_scale − θa)``: relative to the tail when θ puts the tilted
bulk near a. Both ends stay certified for every θ; θ only decides where the
precision is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ..errors import ReconRiskError
from .fft_roundoff import accurate_low_frequencies, fast_len, power_roundoff, power_roundoff_refined, product_roundoff

#: Tail mass dropped by a composition window (bounded by Chernoff).
COMPOSE_TAIL = 1e-14
#: Lower-tail mass cut by :meth:`PMF.cap` (also removes FFT round-off junk far below the bulk).
LOWER_TAIL = 1e-14
#: Largest composed window (atoms): a few float64/complex buffers of this size stay under ~1 GiB.
MAX_WINDOW_ATOMS = 1 << 24
#: Largest window composed by one FFT power; beyond it (and beyond the loss cap) by capped squaring.
MAX_POWER_ATOMS = 1 << 22
#: FFT round-off allowance of a power above which its amplified low frequencies are recomputed.
REFINE_ABOVE = 1e-10
#: Floating-point allowance per retained atom for FFT round-off.
ROUNDOFF_PER_ATOM = 1e-16
UNIT = 2.0**-53


class WindowTooLarge(ReconRiskError):
    """A composition's window would exceed ``MAX_WINDOW_ATOMS`` (the caller may coarsen the grid)."""


@dataclass(frozen=True)
class PMF:
    """A discrete privacy-loss distribution on the grid ``(offset + i)·h``.

    ``probs[i]`` is the μ-mass at loss ``(offset + i)·h``; ``infinity_mass``
    is μ-mass at loss +∞; ``slack`` bounds, in total variation, the numerical
    error of the representation (truncated tails and round-off).

    With ``tilt`` θ > 0 the entries are tilted (module docstring): the
    μ-mass at ``losses[i]`` is ``probs[i]·exp(log_scale − θ·losses[i])`` and
    ``slack`` bounds the error weighted by ``e^{θl − log_scale}``. Queries
    (:meth:`delta`, :meth:`blowup`) untilt in log space and charge the error
    above the loss they read, ``slack·exp(log_scale − θ·l)``.
    """

    h: float
    offset: int
    probs: np.ndarray
    infinity_mass: float
    pessimistic: bool
    slack: float = 0.0
    #: exponential tilt θ ≥ 0: the μ-mass at loss l is ``probs · exp(log_scale − θ·l)`` (see :meth:`tilted`)
    tilt: float = 0.0
    log_scale: float = 0.0

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.probs.size)) * self.h

    # -- composition --------------------------------------------------------------
    def _window(self, log_mgf_fn, n_times: int, tail: float) -> tuple[int, int]:
        """Index window [lo, hi] holding all but ``tail`` of the n-fold composition (Chernoff)."""
        # every λ gives a valid bound; the best is near λ* = √(2 log(2/tail)/(n·var)) for a near-Gaussian
        # sum, so 9 points around it per side plus a global sweep (heavy tails, small σ: the optimum can be
        # far from λ*) — at most 46 MGF passes instead of 52, fewer where they overlap
        var = self._variance()
        ls = math.sqrt(2 * math.log(2 / tail) / max(n_times * var, 1e-300)) if var > 0 else 1.0
        near = ls * np.logspace(-1, 1, 9)
        # (λ* above 100 — tiny per-step spread, huge T — used to be clipped to 100: a window of 1000 sd)
        mags = np.unique(np.clip(np.concatenate([near, np.logspace(-3, 2, 14)]), 1e-3, 1e8))
        lam = np.concatenate([-mags, mags])
        kmgf = n_times * log_mgf_fn(lam)  # log E[exp(lam * L_total)] in loss units
        log_t = math.log(tail / 2)
        # P(L >= a) <= exp(K(lam) - lam a) for lam > 0  =>  a = (K - log t)/lam
        pos = lam > 0
        with np.errstate(over="ignore", invalid="ignore"):
            a_hi = np.nanmin(np.where(np.isfinite(kmgf[pos]), (kmgf[pos] - log_t) / lam[pos], np.inf))
            a_lo = np.nanmax(np.where(np.isfinite(kmgf[~pos]), (kmgf[~pos] - log_t) / lam[~pos], -np.inf))
        full_lo = n_times * self.offset
        full_hi = n_times * (self.offset + self.probs.size - 1)
        lo = full_lo if not np.isfinite(a_lo) else max(full_lo, int(math.floor(a_lo / self.h)) - 1)
        hi = full_hi if not np.isfinite(a_hi) else min(full_hi, int(math.ceil(a_hi / self.h)) + 1)
        return lo, max(hi, lo)

    def _variance(self) -> float:
        p = self.probs
        tot = float(p.sum())
        if tot <= 0:
            return 0.0
        k = np.arange(p.size, dtype=float)
        m = float(np.sum(p * k)) / tot
        return float(np.sum(p * (k - m) ** 2)) / tot * self.h**2

    def _log_mgf(self, lam: np.ndarray) -> np.ndarray:
        """log E[exp(lam·L)] over the finite atoms (normalised), one λ at a time."""
        p = self.probs
        mask = p > 0
        lp = np.log(p[mask])
        lp -= special.logsumexp(lp)
        l = self.losses[mask]
        lam = np.asarray(lam, dtype=float)
        out = np.empty(lam.size)
        step = max(1, 4_000_000 // max(l.size, 1))  # bound the temporary matrix to ~32 MB
        for i in range(0, lam.size, step):
            m = lam[i : i + step, None] * l[None, :] + lp[None, :]
            top = m.max(axis=1)
            out[i : i + step] = top + np.log(np.exp(m - top[:, None]).sum(axis=1))
        return out

    def self_compose(self, n_times: int, loss_cap: float = math.inf, slack_budget: float = 0.0) -> "PMF":
        """The ``n_times``-fold composition.

        When the Chernoff window of the result stays below ``loss_cap``, or
        holds at most ``MAX_POWER_ATOMS`` atoms, the whole power is taken at
        once by FFT on that window (then capped). Otherwise (huge compositions
        whose loss runs far beyond any ε or log(1/κ) of interest) the power is
        built by repeated squaring, capping the loss after every product at
        ``loss_cap``: pessimistic PMFs move the mass above it to +∞,
        optimistic ones move it down onto the cap — both keep the ordering of
        the δ-curves, so the result stays a valid bound. (Capping only after
        the power is the same: capping is monotone, and the cap of the exact
        power dominates / is dominated as the capped squarings are.)

        Round-off: the plain a-posteriori allowance grows like t (the t-th power
        amplifies the forward FFT's error at the frequencies where |X| ≈ 1). When
        it exceeds ``slack_budget`` (``REFINE_ABOVE`` when none is given) those few frequencies are
        recomputed in long double with per-frequency bounds
        (:func:`~reconrisk._src.accounting.fft_roundoff.accurate_low_frequencies`);
        ``slack_budget`` lets a caller who can afford a larger allowance skip that work.

        A tilted PMF (θ > 0) is powered as it is: the t-th power of the tilted
        vector is the tilt of the t-th power, with ``t·log_scale``.
        Slack: (n + s)^t − n^t ≤ t·s·(n + s)^{t−1} (n the vector's ℓ₁ norm),
        plus twice the Chernoff window's dropped mass (missing, and aliased
        into the window by the circular FFT), plus the FFT round-off.
        """
        if n_times == 1:
            return self.cap(loss_cap)
        lo, hi = self._window(self._log_mgf, n_times, COMPOSE_TAIL)
        if hi * self.h > loss_cap and hi - lo + 1 > MAX_POWER_ATOMS:
            result: PMF | None = None
            base = self.cap(loss_cap)
            n = n_times
            while n:
                if n & 1:
                    result = base if result is None else result.compose(base, loss_cap)
                n >>= 1
                if n:
                    base = base.compose(base, loss_cap)  # squaring: one forward FFT (see compose)
            assert result is not None
            return result
        out_len = hi - lo + 1
        _check_window(out_len, self.h)
        n_fft = fast_len(max(out_len, self.probs.size))
        x_hat = np.fft.rfft(self.probs, n_fft)
        spec = x_hat**n_times
        fft_err = power_roundoff(self.probs, x_hat, spec, n_times, n_fft, out_len)
        if fft_err > (slack_budget if slack_budget > 0 else REFINE_ABOVE):
            # the t-fold amplified FFT error of the few frequencies near |X| = 1 dominates: recompute
            # them in long double and bound them one by one (fft_roundoff.accurate_low_frequencies)
            low, delta = accurate_low_frequencies(self.probs, x_hat, n_times, n_fft)
            if low.size:
                spec = x_hat**n_times
                fft_err = power_roundoff_refined(self.probs, x_hat, low, delta, spec, n_times, n_fft, out_len)
        full = np.fft.irfft(spec, n_fft)
        # entry j of the circular result holds index (n*offset + j) mod n_fft
        shift = (lo - n_times * self.offset) % n_fft
        probs = np.roll(full, -shift)[:out_len]
        probs = np.clip(probs, 0.0, None)
        inf_mass = -math.expm1(n_times * math.log1p(-self.infinity_mass)) if self.infinity_mass < 1 else 1.0
        del full, spec, x_hat
        norm = self._norm1()
        grown = math.exp(min(n_times * math.log(max(norm, 1.0)), 700.0))
        slack = _power_slack(norm, self.slack, n_times) + 2 * COMPOSE_TAIL * grown + fft_err
        out = self._finish(lo, probs, inf_mass, self._clip_slack(slack), n_times * self.log_scale)
        return out.cap(loss_cap) if hi * self.h > loss_cap else out

    def compose(self, other: "PMF", loss_cap: float = math.inf) -> "PMF":
        """Composition of two PMFs on the same grid (full linear convolution), then :meth:`cap`.

        Slack: ‖(p̂ + e)∗(r̂ + f) − p̂∗r̂‖₁ ≤ s_p‖r̂‖₁ + s_r‖p̂‖₁ + s_p s_r, plus the FFT round-off
        (tilted PMFs: the same in the tilted norm, both with the same θ).
        """
        if other.h != self.h or other.pessimistic != self.pessimistic or other.tilt != self.tilt:
            raise ReconRiskError("PMFs on different grids, of different kinds or tilts cannot be composed")
        n = self.probs.size + other.probs.size - 1
        _check_window(n, self.h)
        n_fft = fast_len(n)
        xa = np.fft.rfft(self.probs, n_fft)
        z = xa * xa if other is self else xa * np.fft.rfft(other.probs, n_fft)
        del xa
        probs = np.fft.irfft(z, n_fft)[:n]
        probs = np.clip(probs, 0.0, None)
        inf_mass = 1.0 - (1.0 - self.infinity_mass) * (1.0 - other.infinity_mass)
        na, nb = self._norm1(), other._norm1()
        fft_err = product_roundoff(self.probs, other.probs, z, n_fft, n, x_l1=na, y_l1=nb)
        slack = self.slack * nb + other.slack * na + self.slack * other.slack + fft_err
        out = self._finish(self.offset + other.offset, probs, inf_mass, self._clip_slack(slack),
                           self.log_scale + other.log_scale)
        return out._trim().cap(loss_cap)

    def tilted(self, theta: float) -> "PMF":
        """The exponentially tilted copy p̃(l) = p(l)·e^{θl − log Z}, normalised to ℓ₁ norm ≤ 1 (θ ≥ 0).

        Each entry is one product p·exp(θl − log Z) (log Z rounded up by 1e-12 so the norm stays
        ≤ 1), with relative error ≤ 3u(|θl| + |log Z|) + 4u (the exponent's argument, exp, product);
        their sum goes to the (tilted) slack. An untilted slack s (total variation) becomes at most
        s·e^{θ·l_max − log Z} in the tilted norm.
        """
        theta = float(theta)
        if theta == 0.0:
            return self
        if self.tilt != 0.0 or theta < 0 or not math.isfinite(theta):
            raise ReconRiskError(f"tilt must be finite and >= 0 and applied to an untilted PMF; found {theta!r}")
        l = self.losses
        p = self.probs
        pos = p > 0
        with np.errstate(divide="ignore"):
            lp = np.where(pos, np.log(np.where(pos, p, 1.0)), -np.inf)
        log_z = float(special.logsumexp(lp[pos] + theta * l[pos])) + 1e-12 if pos.any() else 0.0
        arg = theta * l - log_z
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            direct = p * np.exp(np.minimum(arg, 700.0))
            via_log = np.exp(np.minimum(lp + arg, 0.0))
        big = arg > 700.0
        pt = np.where(pos, np.where(big, via_log, direct), 0.0)
        rel = 3 * UNIT * (np.abs(theta * l) + abs(log_z)) + 4 * UNIT
        # only atoms with mass: an empty atom far above the last one (arg > 700) has lp = −∞, and 0·∞ made the
        # slack NaN (then every tail error +∞: the tilted PLD said nothing and RDP answered)
        rel = np.where(big & pos, rel + 4 * UNIT * np.abs(np.where(pos, lp, 0.0)), rel)
        rel = np.expm1(rel) * 1.01
        slack = float(np.sum(pt * rel)) * (1 + 1e-9)
        if self.slack > 0:
            slack += self.slack * math.exp(min(theta * float(l[-1]) - log_z + self.log_scale, 700.0))
        return PMF(self.h, self.offset, pt, self.infinity_mass, self.pessimistic, slack, theta, self.log_scale + log_z)

    def cap(self, loss_cap: float) -> "PMF":
        """Bound the support: losses above ``loss_cap`` and a lower tail of mass ≤ ``LOWER_TAIL``.

        Pessimistic: mass above the cap goes to +∞ and the lower tail is rounded
        up onto the first kept atom. Optimistic: mass above the cap is moved down
        onto it and the lower tail is dropped. Both preserve the ordering.
        Tilted PMFs: the μ-mass above the cap is untilted (log space) before it
        goes to +∞, and the pessimistic lower tail (tilted mass ≤ ``LOWER_TAIL``)
        is dropped and charged to the slack instead of rounded up (rounding it up
        would multiply its tilted mass by e^{θ·distance}).
        """
        if self.tilt != 0.0:
            return self._cap_tilted(loss_cap)
        p = self.probs
        offset = self.offset
        inf_mass = self.infinity_mass
        if math.isfinite(loss_cap):
            top = int(math.floor(loss_cap / self.h)) - offset  # last kept index
            if top < 0:
                # every atom lies above the cap: one atom at the cap carries the mass
                # (optimistic) or nothing does and the mass goes to +inf (pessimistic)
                total = float(p.sum()) * math.exp(self.log_scale)
                offset = int(math.floor(loss_cap / self.h))
                if self.pessimistic:
                    return self._finish(offset, np.zeros(1), min(1.0, inf_mass + total), self.slack)
                return self._finish(offset, np.array([float(p.sum())]), inf_mass, self.slack)
            if top < p.size - 1:
                above = float(p[top + 1 :].sum())
                p = p[: top + 1].copy()
                if self.pessimistic:
                    inf_mass = min(1.0, inf_mass + above * math.exp(self.log_scale))
                else:
                    p[-1] += above
        csum = np.cumsum(p)
        cut = int(np.searchsorted(csum, LOWER_TAIL, side="right"))
        cut = min(cut, p.size - 1)
        if cut > 0:
            low = float(csum[cut - 1])
            p = p[cut:].copy()
            if self.pessimistic:
                p[0] += low
            offset += cut
        if p is self.probs and inf_mass == self.infinity_mass:
            return self
        return self._finish(offset, p, inf_mass, self.slack)

    def _cap_tilted(self, loss_cap: float) -> "PMF":
        p = self.probs
        offset = self.offset
        inf_mass = self.infinity_mass
        slack = self.slack
        th = self.tilt
        if math.isfinite(loss_cap):
            top = int(math.floor(loss_cap / self.h)) - offset  # last kept index
            if top < p.size - 1:
                keep = max(top, 0)
                first = top + 1 if top >= 0 else 0
                seg = p[first:]
                ls = (offset + first + np.arange(seg.size)) * self.h
                pos = seg > 0
                if self.pessimistic:
                    if pos.any():
                        lm = np.log(seg[pos]) + self.log_scale - th * ls[pos]
                        inf_mass = min(1.0, inf_mass + math.exp(min(float(special.logsumexp(lm)), 0.0)) * (1 + 1e-12))
                    if top < 0:
                        return self._finish(int(math.floor(loss_cap / self.h)), np.zeros(1), inf_mass, slack)
                    p = p[: top + 1].copy()
                else:
                    cap_l = (offset + keep) * self.h if top >= 0 else math.floor(loss_cap / self.h) * self.h
                    moved = float(np.sum(seg * np.exp(-th * np.maximum(ls - cap_l, 0.0)))) * (1 - 8 * UNIT)
                    if top < 0:
                        return self._finish(int(math.floor(loss_cap / self.h)), np.array([moved]), inf_mass, slack)
                    p = p[: top + 1].copy()
                    p[-1] += moved
        csum = np.cumsum(p)
        cut = int(np.searchsorted(csum, LOWER_TAIL, side="right"))
        cut = min(cut, p.size - 1)
        if cut > 0:
            low = float(csum[cut - 1])
            p = p[cut:].copy()
            if self.pessimistic:
                slack += low * (1 + 1e-12)
            offset += cut
        if p is self.probs and inf_mass == self.infinity_mass:
            return self
        return self._finish(offset, p, inf_mass, slack)

    def _finish(self, offset: int, probs: np.ndarray, inf_mass: float, slack: float,
                log_scale: float | None = None) -> "PMF":
        ls = self.log_scale if log_scale is None else log_scale
        return PMF(self.h, int(offset), probs, float(inf_mass), self.pessimistic, float(slack), self.tilt, float(ls))

    def _clip_slack(self, slack: float) -> float:
        # untilted: an error above 1 in total variation says nothing more than 1 (results are clipped)
        return min(1.0, slack) if self.tilt == 0.0 and self.log_scale == 0.0 else slack

    def _norm1(self) -> float:
        """ℓ₁ norm of ``probs``, rounded up (pairwise summation of non-negative terms)."""
        return float(np.sum(self.probs)) * (1 + 1e-12)

    def _trim(self) -> "PMF":
        nz = np.flatnonzero(self.probs > 0)
        if nz.size == 0:
            return self
        return self._finish(self.offset + nz[0], self.probs[nz[0] : nz[-1] + 1], self.infinity_mass, self.slack)

    # -- queries ----------------------------------------------------------------------
    @property
    def plain(self) -> bool:
        """True when ``probs`` are the μ-masses themselves (no tilt, no scale)."""
        return self.tilt == 0.0 and self.log_scale == 0.0

    def _log_masses(self, l: np.ndarray) -> np.ndarray:
        p = self.probs
        with np.errstate(divide="ignore"):
            lp = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -np.inf)
        return lp + (self.log_scale - self.tilt * l)

    def masses(self) -> np.ndarray:
        """The μ-masses at :attr:`losses` (untilted in log space; entries clipped at e, far above any
        true mass — only round-off junk far below a tilted bulk can exceed 1)."""
        if self.plain:
            return self.probs
        return np.exp(np.minimum(self._log_masses(self.losses), 1.0))

    def _margin(self) -> float:
        """Relative rounding of the untilting exp(log p + log_scale − θl) (0 for a plain PMF)."""
        if self.plain:
            return 0.0
        l_max = max(abs(self.offset), abs(self.offset + self.probs.size)) * self.h
        return 1e-12 + 16 * UNIT * (abs(self.log_scale) + self.tilt * l_max + 800.0)

    def tail_error(self, loss) -> np.ndarray:
        """Bound on Σ_{l ≥ loss} |p̂(l) − p*(l)| (μ-mass), i.e. ``slack·exp(log_scale − θ·loss)``."""
        loss = np.asarray(loss, dtype=float)
        if not (math.isfinite(self.slack) and math.isfinite(self.log_scale)):
            return np.full(loss.shape, math.inf)  # nothing is known: the ends become 1 and 0
        with np.errstate(over="ignore", invalid="ignore"):
            e = self.slack * np.exp(np.minimum(self.log_scale - self.tilt * loss, 700.0))
        return np.where(np.isnan(e), math.inf, e)

    def delta(self, epsilon) -> np.ndarray:
        """Hockey-stick divergence δ(ε) = E_μ[(1 − e^{ε−L})₊] for an array of ε.

        Pessimistic: + the infinity mass + the error above ε; optimistic: − the error above ε.
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        l = self.losses
        p = self.masses()
        # suffix sums over atoms with loss > eps
        P_suf = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])
        W = _nu_mass(p, l)
        W_suf = np.concatenate([np.cumsum(W[::-1])[::-1], [0.0]])
        idx = np.searchsorted(l, eps, side="right")
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            w_term = np.where(W_suf[idx] > 0, np.exp(eps + np.log(np.where(W_suf[idx] > 0, W_suf[idx], 1.0))), 0.0)
        d = np.maximum(P_suf[idx] - w_term, 0.0)
        err = self.tail_error(eps)
        if self.pessimistic:
            d = self.infinity_mass + d * (1 + self._margin()) + err
        else:
            d = self.infinity_mass + d * (1 - self._margin()) - err
        return np.clip(np.where(np.isnan(d), 1.0 if self.pessimistic else 0.0, d), 0.0, 1.0)

    def epsilon(self, delta: float) -> float:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta (exact for this discrete PMF; untilted PMFs only)."""
        if self.tilt != 0.0:
            raise ReconRiskError("epsilon(delta) is answered from untilted PMFs (tilt = 0)")
        m = self.infinity_mass + float(self.tail_error(0.0)) if self.pessimistic else self.infinity_mass
        m = min(1.0, m)
        if m >= delta:
            return math.inf
        l = self.losses
        p = self.masses()
        d_at = self.delta(l)  # non-increasing in l
        if self.delta(np.array([0.0]))[0] <= delta:
            return 0.0
        # first atom where delta <= target; the crossing is in (l[k-1], l[k]]
        k = int(np.argmax(d_at <= delta)) if (d_at <= delta).any() else l.size
        # on (l[k-1], l[k]) atoms with loss >= l[k] are active
        P = m + p[k:].sum()
        W = float(np.sum(_nu_mass(p[k:], l[k:])))
        if W <= 0:
            return float(l[k - 1]) if k > 0 else 0.0
        eps = math.log(P - delta) - math.log(W)
        return max(0.0, eps)

    def blowup(self, kappa: np.ndarray, *, return_error: bool = False):
        """B_κ = inf_ε [e^ε κ + δ(ε)] for an array of κ, evaluated exactly.

        For a discrete PMF the objective is piecewise monotone between atoms, so
        the infimum is attained at the atom where the ν-mass of the atoms
        above it crosses κ — the randomised Neyman–Pearson test (Hayes, Mahloujifar & Balle 2023,
        Eq. 3). No ε grid is involved.

        Errors. Pessimistic: the value is κe^ε + δ̂(ε) at the switching atom ε,
        plus the infinity mass and the error of the atoms above it
        (:meth:`tail_error`) — a valid upper end for any ε (weak duality).
        Optimistic: the test E (atoms above the switching atom a, a fraction
        of it) is chosen for κ′ = κ − (ν-error above a₀), so that its true
        ν-mass stays ≤ κ, and valued at μ̂(E) − (μ-error above a) — a valid lower
        end (untilted PMFs: simply B̂ − slack, as D̂ − D ≤ slack everywhere).
        ``return_error`` also returns the error charged.
        """
        kappa = np.asarray(kappa, dtype=float)
        l = self.losses[::-1]
        lm = self._log_masses(l[::-1])[::-1] if not self.plain else None
        if lm is None:
            p = self.probs[::-1]
            w = _nu_mass(p, l)
        else:
            p = np.exp(np.minimum(lm, 1.0))
            w = np.exp(np.minimum(lm - l, 700.0))
        P = np.concatenate([[0.0], np.cumsum(p)])
        S = np.concatenate([[0.0], np.cumsum(w)])
        n = l.size

        def evaluate(kap):
            i = np.searchsorted(S, kap, side="right")  # S[i-1] <= kappa < S[i]
            inner = np.clip(np.minimum(i, n), 1, n)  # atom index (1-based) where the test switches
            rest = np.clip(kap - S[inner - 1], 0.0, None)
            with np.errstate(divide="ignore", over="ignore"):
                term = np.where(rest > 0, np.exp(l[inner - 1] + np.log(np.where(rest > 0, rest, 1.0))), 0.0)
            return np.where(i > n, P[n], P[inner - 1] + term), l[inner - 1]

        val, thr = evaluate(kappa)
        margin = self._margin()
        if self.pessimistic:
            if self.tilt != 0.0:
                # κ beyond the ν-mass of every atom: the value P(all atoms) is the limit ε → −∞, where the
                # tilted allowance is unbounded (mass below the window is not represented); read
                # κe^ε + δ̂(ε) at ε = the lowest atom instead: P(all) + (κ − S(all))·e^{l_min}
                beyond = np.searchsorted(S, kappa, side="right") > n
                with np.errstate(over="ignore"):
                    val = np.where(beyond, P[n] + np.maximum(kappa - S[n], 0.0) * np.exp(min(float(l[-1]), 700.0)), val)
            err = self.tail_error(thr)
            out = self.infinity_mass + val * (1 + margin) + err
        elif self.tilt == 0.0:
            err = self.tail_error(thr)
            out = self.infinity_mass + val * (1 - margin) - err
        else:
            with np.errstate(over="ignore"):
                nu_err = self.slack * np.exp(np.minimum(self.log_scale - (self.tilt + 1.0) * thr, 700.0)) * (1 + 1e-9)
            k2 = kappa - nu_err
            val2, thr2 = evaluate(np.maximum(k2, 0.0))
            err = self.tail_error(thr2)
            out = np.where(k2 > 0, self.infinity_mass + val2 * (1 - margin) - err, 0.0)
        out = np.clip(np.where(np.isnan(out), 1.0 if self.pessimistic else 0.0, out), 0.0, 1.0)
        return (out, err) if return_error else out


def _power_slack(norm: float, slack: float, t: int) -> float:
    """(n + s)^t − n^t ≤ t·s·(n + s)^{t−1}: the error of a t-th power of a vector known to within s (ℓ₁)."""
    if slack <= 0:
        return 0.0
    return t * slack * math.exp(min((t - 1) * math.log(norm + slack), 700.0))


def _check_window(atoms: int, h: float) -> None:
    """Refuse a composition whose window would not fit the memory target (~1 GiB of FFT buffers)."""
    if atoms > MAX_WINDOW_ATOMS:
        raise WindowTooLarge(
            f"value_discretization={h:g} needs a composed privacy-loss window of {atoms:,} atoms "
            f"(at most {MAX_WINDOW_ATOMS:,} fit the memory target); use a coarser grid"
        )


def _nu_mass(p: np.ndarray, l: np.ndarray) -> np.ndarray:
    """ν-mass p·e^{−l} of each atom, without overflow (round-off junk far below the bulk)."""
    with np.errstate(divide="ignore"):
        return np.where(p > 0, np.exp(np.minimum(np.log(np.where(p > 0, p, 1.0)) - l, 600.0)), 0.0)
