"""A discrete privacy-loss distribution and its certified composition (used by :mod:`reconrisk.accounting.pld`).

:class:`PMF` holds μ-masses on a loss grid, an infinity atom and a slack
that bounds, in total variation, every numerical error made so far (dropped
tails, FFT round-off): the pessimistic side adds the slack to the infinity
mass, the optimistic side subtracts it from its results. Composition is by
FFT (self-composition by powering the spectrum) with the round-off allowance
of :mod:`reconrisk.accounting.fft_roundoff`.
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


@dataclass(frozen=True)
class PMF:
    """A discrete privacy-loss distribution on the grid ``(offset + i)·h``.

    ``probs[i]`` is the μ-mass at loss ``(offset + i)·h``; ``infinity_mass``
    is μ-mass at loss +∞; ``slack`` bounds, in total variation, the numerical
    error of the representation (truncated tails and round-off).
    """

    h: float
    offset: int
    probs: np.ndarray
    infinity_mass: float
    pessimistic: bool
    slack: float = 0.0

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
        (:func:`~reconrisk.accounting.fft_roundoff.accurate_low_frequencies`);
        ``slack_budget`` lets a caller who can afford a larger allowance skip that work.
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
        slack = min(1.0, n_times * self.slack + COMPOSE_TAIL + fft_err)
        out = self._finish(lo, probs, inf_mass, slack)
        return out.cap(loss_cap) if hi * self.h > loss_cap else out

    def compose(self, other: "PMF", loss_cap: float = math.inf) -> "PMF":
        """Composition of two PMFs on the same grid (full linear convolution), then :meth:`cap`."""
        if other.h != self.h or other.pessimistic != self.pessimistic:
            raise ReconRiskError("PMFs on different grids or of different kinds cannot be composed")
        n = self.probs.size + other.probs.size - 1
        _check_window(n, self.h)
        n_fft = fast_len(n)
        xa = np.fft.rfft(self.probs, n_fft)
        z = xa * xa if other is self else xa * np.fft.rfft(other.probs, n_fft)
        del xa
        probs = np.fft.irfft(z, n_fft)[:n]
        probs = np.clip(probs, 0.0, None)
        inf_mass = 1.0 - (1.0 - self.infinity_mass) * (1.0 - other.infinity_mass)
        fft_err = product_roundoff(self.probs, other.probs, z, n_fft, n)
        slack = min(1.0, self.slack + other.slack + fft_err)
        return self._finish(self.offset + other.offset, probs, inf_mass, slack)._trim().cap(loss_cap)

    def cap(self, loss_cap: float) -> "PMF":
        """Bound the support: losses above ``loss_cap`` and a lower tail of mass ≤ ``LOWER_TAIL``.

        Pessimistic: mass above the cap goes to +∞ and the lower tail is rounded
        up onto the first kept atom. Optimistic: mass above the cap is moved down
        onto it and the lower tail is dropped. Both preserve the ordering.
        """
        p = self.probs
        offset = self.offset
        inf_mass = self.infinity_mass
        if math.isfinite(loss_cap):
            top = int(math.floor(loss_cap / self.h)) - offset  # last kept index
            if top < 0:
                # every atom lies above the cap: one atom at the cap carries the mass
                # (optimistic) or nothing does and the mass goes to +inf (pessimistic)
                total = float(p.sum())
                offset = int(math.floor(loss_cap / self.h))
                if self.pessimistic:
                    return self._finish(offset, np.zeros(1), min(1.0, inf_mass + total), self.slack)
                return self._finish(offset, np.array([total]), inf_mass, self.slack)
            if top < p.size - 1:
                above = float(p[top + 1 :].sum())
                p = p[: top + 1].copy()
                if self.pessimistic:
                    inf_mass = min(1.0, inf_mass + above)
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

    def _finish(self, offset: int, probs: np.ndarray, inf_mass: float, slack: float) -> "PMF":
        return PMF(self.h, int(offset), probs, float(inf_mass), self.pessimistic, float(slack))

    def _trim(self) -> "PMF":
        nz = np.flatnonzero(self.probs > 0)
        if nz.size == 0:
            return self
        return self._finish(self.offset + nz[0], self.probs[nz[0] : nz[-1] + 1], self.infinity_mass, self.slack)

    # -- queries ----------------------------------------------------------------------
    def _effective_infinity(self) -> float:
        # pessimistic: round-off may have removed mass anywhere -> add it at +inf
        return min(1.0, self.infinity_mass + self.slack) if self.pessimistic else self.infinity_mass

    def delta(self, epsilon) -> np.ndarray:
        """Hockey-stick divergence δ(ε) = E_μ[(1 − e^{ε−L})₊] for an array of ε."""
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        l = self.losses
        p = self.probs
        # suffix sums over atoms with loss > eps
        P_suf = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])
        W = _nu_mass(p, l)
        W_suf = np.concatenate([np.cumsum(W[::-1])[::-1], [0.0]])
        idx = np.searchsorted(l, eps, side="right")
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            w_term = np.where(W_suf[idx] > 0, np.exp(eps + np.log(np.where(W_suf[idx] > 0, W_suf[idx], 1.0))), 0.0)
        d = self._effective_infinity() + P_suf[idx] - w_term
        d = np.clip(d, 0.0, 1.0)
        if not self.pessimistic:
            d = np.clip(d - self.slack, 0.0, 1.0)
        return d

    def epsilon(self, delta: float) -> float:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta (exact for this discrete PMF)."""
        m = self._effective_infinity()
        if m >= delta:
            return math.inf
        l = self.losses
        p = self.probs
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

    def blowup(self, kappa: np.ndarray) -> np.ndarray:
        """B_κ = inf_ε [e^ε κ + δ(ε)] for an array of κ, evaluated exactly.

        For a discrete PMF the objective is piecewise monotone between atoms, so
        the infimum is attained at the atom where the ν-mass of the atoms
        above it crosses κ — the randomised Neyman–Pearson test (Hayes, Mahloujifar & Balle 2023,
        Eq. 3). No ε grid is involved.
        """
        kappa = np.asarray(kappa, dtype=float)
        m = self._effective_infinity()
        l = self.losses[::-1]
        p = self.probs[::-1]
        P = np.concatenate([[0.0], np.cumsum(p)])
        S = np.concatenate([[0.0], np.cumsum(_nu_mass(p, l))])
        i = np.searchsorted(S, kappa, side="right")  # S[i-1] <= kappa < S[i]
        n = l.size
        inner = np.minimum(i, n)  # atom index (1-based) where the test switches
        rest = np.clip(kappa - S[inner - 1], 0.0, None)
        with np.errstate(divide="ignore", over="ignore"):
            term = np.where(rest > 0, np.exp(l[inner - 1] + np.log(np.where(rest > 0, rest, 1.0))), 0.0)
        val = np.where(i > n, m + P[n], m + P[inner - 1] + term)
        if not self.pessimistic:
            val = val - self.slack
        return np.clip(val, 0.0, 1.0)


def _check_window(atoms: int, h: float) -> None:
    """Refuse a composition whose window would not fit the memory target (~1 GiB of FFT buffers)."""
    if atoms > MAX_WINDOW_ATOMS:
        raise ReconRiskError(
            f"value_discretization={h:g} needs a composed privacy-loss window of {atoms:,} atoms "
            f"(at most {MAX_WINDOW_ATOMS:,} fit the memory target); use a coarser grid"
        )


def _nu_mass(p: np.ndarray, l: np.ndarray) -> np.ndarray:
    """ν-mass p·e^{−l} of each atom, without overflow (round-off junk far below the bulk)."""
    with np.errstate(divide="ignore"):
        return np.where(p > 0, np.exp(np.minimum(np.log(np.where(p > 0, p, 1.0)) - l, 600.0)), 0.0)
