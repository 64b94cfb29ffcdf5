"""Schedules whose every step differs: certified grouping and one composition in the transform domain.

A schedule of Poisson-subsampled Gaussian steps (σ_i, q_i) — 10⁴ distinct steps from a noise scheduler — is
composed here without one privacy-loss distribution (PLD) per step. Each part is a theorem:

1. **Commuting.** Composition of PLDs is a convolution, so it commutes: equal (σ, q) anywhere in the schedule
   are one factor raised to its count (:func:`distinct_steps`; ``Release.schedule`` merges only neighbours).
2. **Grouping, certified by post-processing.** The Poisson-subsampled Gaussian pair
   (μ, ν) = ((1−q)N(0,σ²) + qN(1,σ²), N(0,σ²)) at σ' ≥ σ is the image of the pair at σ under one kernel
   (add independent N(0, σ'² − σ²)), and the pair at q' ≤ q is the image of the pair at q under one kernel
   (keep the output with probability q'/q, else replace it by a fresh N(0, σ²) draw: it maps ν → ν and
   (1−q)ν + qN(1,σ²) → (1−q')ν + q'N(1,σ²)). A kernel applied to both laws of a pair can only lower the
   hockey-stick divergence in *both* directions, and the trade-off curve of the image dominates
   (so does its symmetrisation min{f, f⁻¹}**, which is monotone in f). Hence for a group of steps with
   σ ∈ [σ_lo, σ_hi] and q ∈ [q_lo, q_hi], every member is dominated by the pair at (σ_lo, q_hi) and dominates
   the pair at (σ_hi, q_lo). Composition preserves dominance (adaptive composition of dominating pairs,
   Zhu, Dong & Wang 2022, Thm 10), so composing every group at (σ_lo, q_hi) with the *pessimistic*
   discretisation is an upper end for the schedule, and composing it at (σ_hi, q_lo) with the *optimistic*
   one a lower end: the pair of compositions brackets the exact schedule at every ε, δ and κ.
   :func:`group_steps` splits the groups that contribute most to the width (count·(q_hi²·(e^{1/σ_lo²} − 1)
   − q_lo²·(e^{1/σ_hi²} − 1)): the χ²-divergence of a step, to first order the Gaussian-DP μ² it adds) until
   that proxy width is a small fraction of the schedule's total; a group of one (σ, q) is exact.
3. **One shared grid, one inverse FFT.** Every group's step PMF is transformed once at the final window's
   FFT length N, its log-spectrum multiplied by its count and summed; one ``exp`` and one inverse FFT give
   the composition (as :mod:`reconrisk._src.accounting.pld_batch` composes per-example counts, whose helpers
   this reuses). Memory: the groups' step PMFs (at most ``MAX_GROUPS``) and two length-N/2 vectors — flat in
   the number of steps. The error terms are those of :func:`reconrisk._src.accounting.pld_batch.compose_counts`
   (Chernoff window, step slacks, forward FFTs by Higham 2002 Thm 24.2, the exponent's rounding, the inverse
   FFT), except that the exponent's rounding is bounded a posteriori (each log within 4u(|ℓ̂| + 1), each
   product by the count u|cℓ̂|, each addition u|S_k| of the computed partial sum: no factor G·T) and the forward error is bounded group by group as in
   :func:`~reconrisk._src.accounting.fft_roundoff.power_roundoff_refined`: |Π X̂^c − Π X^c| ≤
   Σ_k c_k|X̂_k − X_k|·M_k^{c_k−1}·Π_{i≠k} M_i^{c_i} with M ≥ |X̂|, |X|, the product over the other groups
   bounded at each frequency by P/min_k M_k (P = Π M^c), and the few frequencies the whole product
   amplifies (|Z| ≈ 1) recomputed by a direct sum with an entrywise bound (:func:`_refine_low`) when the
   plain allowance would exceed the caller's round-off budget.
4. **Grid.** Grouped schedules are composed on h ≥ ``GROUPED_MIN_H_REL`` × the smallest per-step loss
   spread (the optimistic side, whose error is second order in h, on twice that): there the discretisation's share of the width (≈ 3e-4 relative at
   10⁴ steps) is usually far below the grouping's, and a coarser pessimistic or optimistic discretisation is
   still a valid bound; the result's ``h`` says which grid was used. Not at small σ (0.7 → 0.63, q 0.01, 10⁴
   steps: 4.4 % at ε ≈ 16, the floor's share): there the caller lowers the floor (``floor_scale``).
5. **Refinement** (:meth:`PrivacyAnalysis.regroup <reconrisk._src.analysis.privacy.PrivacyAnalysis.regroup>`): a
   bracket measured wider than its target either splits the widest groups further (:func:`refine_groups`) or,
   where the grouping's proxy share is far below the measured width (:func:`grid_dominates`), lowers the grid
   floor; the cached compositions are dropped and the question asked again. Every grouping and every grid is
   sound (2., 4.), so each bracket contains the exact value and so does their intersection.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..errors import ReconRiskError
from . import pld as _pld
from .rdp import minimise_over_orders
from .fft_roundoff import UNIT_ROUNDOFF, UNIT_ROUNDOFF_LD, fast_len, fft_eta, full_norm, norm2
from .pmf import COMPOSE_TAIL, MAX_WINDOW_ATOMS, PMF, WindowTooLarge

#: At most this many groups are composed (each costs one step PMF and one FFT at the final length).
MAX_GROUPS = 200
#: Schedules with at most this many distinct steps are composed exactly (one group per step).
EXACT_MAX = 8
#: Grouping stops when the groups' proxy width is at most this fraction of the schedule's proxy total.
GROUP_REL_WIDTH = 2e-3
#: Finest loss grid of a grouped composition, relative to the smallest loss spread q·√(e^{1/σ²} − 1) of a
#: representative step, pessimistic side (the optimistic side: twice that; module docstring, 4.).
GROUPED_MIN_H_REL = 0.06


def grouped_min_h(groups, pessimistic: bool, scale: float = 1.0) -> float:
    """The finest grid a grouped composition uses (module docstring, 4.), times ``scale`` (< 1 where a measured
    bracket showed the discretisation's share of the width dominating: :func:`grid_dominates`)."""
    spread = min(math.sqrt(float(_chi2(np.array(g[1]), np.array(g[2])))) for g in groups)
    return GROUPED_MIN_H_REL * spread * (1.0 if pessimistic else 2.0) * scale
#: Exponent of a zero spectrum entry (exp(c·this) = 0 for every count c ≥ 1).
_LOG_ZERO = -1e4


def _chi2(sigma: np.ndarray, q: np.ndarray) -> np.ndarray:
    """q²·(e^{1/σ²} − 1): the χ²-divergence of one Poisson-subsampled Gaussian step (its width proxy)."""
    return q * q * np.expm1(np.minimum(1.0 / (sigma * sigma), 700.0))


def distinct_steps(segments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(σ, q, count) of the distinct steps of ``segments`` (Segment objects or (σ, q, steps) triples), each
    pair once wherever it occurs (composition commutes), sorted by σ then q."""
    rows = [(s.noise_multiplier, s.sample_rate, s.steps) if hasattr(s, "noise_multiplier") else tuple(s)
            for s in segments]
    if not rows:
        raise ReconRiskError("a schedule needs at least one segment; found none")
    a = np.array(rows, dtype=float)
    keys, inv = np.unique(a[:, :2], axis=0, return_inverse=True)
    counts = np.bincount(inv.ravel(), weights=a[:, 2]).astype(np.int64)
    return keys[:, 0].copy(), keys[:, 1].copy(), counts


class Group(tuple):
    """(σ_lo, σ_hi, q_lo, q_hi, count) of one group of steps."""

    __slots__ = ()

    def __new__(cls, sig_lo, sig_hi, q_lo, q_hi, count):
        return super().__new__(cls, (float(sig_lo), float(sig_hi), float(q_lo), float(q_hi), int(count)))

    def representative(self, pessimistic: bool) -> tuple[float, float]:
        """(σ, q) of the pair that dominates every member (pessimistic) or that every member dominates."""
        return (self[0], self[3]) if pessimistic else (self[1], self[2])

    @property
    def exact(self) -> bool:
        return self[0] == self[1] and self[2] == self[3]


def group_steps(sigma, q, counts, *, rel_width: float = GROUP_REL_WIDTH, max_groups: int = MAX_GROUPS
                ) -> list[Group]:
    """Groups of the distinct steps (σ, q, counts) whose (σ_lo, q_hi) / (σ_hi, q_lo) compositions bracket
    the schedule (module docstring, 2.). Exact (one group per distinct step) when there are at most
    ``EXACT_MAX`` distinct steps; otherwise, from one group of all, the group whose
    proxy width count·(χ²(σ_lo, q_hi) − χ²(σ_hi, q_lo)) is largest is split (at the geometric middle of σ or
    of q, whichever leaves the smaller width) until the total is ≤ ``rel_width`` × the schedule's Σ count·χ², or ``max_groups``.
    Deterministic in its inputs; any grouping is sound, this one only decides the width."""
    sigma = np.asarray(sigma, dtype=float)
    q = np.asarray(q, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    total = float(np.sum(counts * _chi2(sigma, q)))
    if sigma.size <= min(max_groups, EXACT_MAX):
        return [Group(s, s, r, r, c) for s, r, c in zip(sigma, q, counts)]

    def make(idx):
        s, r, c = sigma[idx], q[idx], counts[idx]
        g = Group(s.min(), s.max(), r.min(), r.max(), c.sum())
        w = float(g[4] * (_chi2(np.array(g[0]), np.array(g[3])) - _chi2(np.array(g[1]), np.array(g[2]))))
        return w, g, idx

    heap: list = []
    tie = 0
    w, g, idx = make(np.arange(sigma.size))
    heap.append((-w, tie, g, idx))
    width = w
    while heap and len(heap) < max_groups and width > rel_width * total:
        negw, t0, g, idx = heapq.heappop(heap)
        if g.exact or idx.size < 2 or negw >= 0.0:  # the widest group is exact: nothing left to split
            heapq.heappush(heap, (negw, t0, g, idx))
            break
        # split at the geometric middle of σ or of q, whichever leaves the smaller total width
        best = None
        for vals, lo_, hi_ in ((sigma[idx], g[0], g[1]), (q[idx], g[2], g[3])):
            if hi_ > lo_:
                left = vals <= math.sqrt(lo_ * hi_)
                parts = [make(idx[left]), make(idx[~left])]
                if best is None or parts[0][0] + parts[1][0] < best[0][0] + best[1][0]:
                    best = parts
        width += negw
        for w, gg, ii in best:
            tie += 1
            width += w
            heapq.heappush(heap, (-w, tie, gg, ii))
    return sorted((item[2] for item in heap), key=lambda g: (g[0], g[2]))


#: A measured bracket wider than its target regroups the schedule (:func:`refine_groups`): into at most this many
#: groups, at most ``REGROUP_ROUNDS`` times per analysis.
REGROUP_MAX_GROUPS = 800
REGROUP_ROUNDS = 2
#: The refined grouping aims its proxy width at this fraction of the measured-to-target ratio (a margin: the
#: bracket's width is proportional to the proxy only to first order).
REGROUP_MARGIN = 0.7


def proxy_width(groups) -> float:
    """Σ count·(χ²(σ_lo, q_hi) − χ²(σ_hi, q_lo)) over the groups: the grouping's share of the bracket's width,
    to first order (the quantity :func:`group_steps` splits by)."""
    return float(sum(g[4] * (_chi2(np.array(g[0]), np.array(g[3])) - _chi2(np.array(g[1]), np.array(g[2])))
                     for g in groups))


#: A measured relative width above this multiple of the grouping's relative proxy width is the discretisation's:
#: the grouping's share of the bracket's width was 0.2–0.65 × its proxy at the schedules measured (σ and q both
#: varying, 200 groups), and far below it at small σ (σ 0.7 → 0.63, q 0.01, 10⁴ steps: 4.4 % measured,
#: unchanged from 200 to 800 groups, the grid floor's share).
GRID_SHARE = 2.0
#: Each grid refinement scales the grouped grid floor by this.
GRID_STEP = 0.25


def grid_dominates(groups, sigma, q, counts, measured: float) -> bool:
    """Whether a bracket of relative width ``measured`` read from ``groups`` is mostly the discretisation's (the
    grouping's share, to first order its proxy, is below measured/``GRID_SHARE``): then a finer grid, not more
    groups, narrows it. Work choice only (every grid and grouping is sound)."""
    total = float(np.sum(np.asarray(counts) * _chi2(np.asarray(sigma, float), np.asarray(q, float))))
    return total > 0 and measured > GRID_SHARE * proxy_width(groups) / total


def refine_groups(groups, sigma, q, counts, measured: float, target: float) -> list[Group] | None:
    """A finer grouping of the distinct steps (σ, q, counts) after a bracket read from ``groups`` measured
    ``measured`` (relative width) against a ``target``: :func:`group_steps` continued (the same deterministic
    greedy order, so the widest groups are split further) until the proxy width is
    ``REGROUP_MARGIN``·target/measured of the current one, at most ``REGROUP_MAX_GROUPS`` groups. None when
    that gives no more groups (every group exact, or the cap reached). Any grouping is sound (module docstring,
    2.): refining only narrows the bracket, and both ends of a bracket read the same grouping."""
    if len(groups) >= REGROUP_MAX_GROUPS or all(g.exact for g in groups) or not measured > target > 0:
        return None
    total = float(np.sum(np.asarray(counts) * _chi2(np.asarray(sigma, float), np.asarray(q, float))))
    aim = proxy_width(groups) * REGROUP_MARGIN * target / measured
    new = group_steps(sigma, q, counts, rel_width=aim / total if total > 0 else 0.0, max_groups=REGROUP_MAX_GROUPS)
    return new if len(new) > len(groups) else None


# -- the composition -------------------------------------------------------------------------------------

def _window(pmfs, counts, h: float) -> tuple[int, int]:
    """Index window [lo, hi] of the composition holding all but ``COMPOSE_TAIL`` (Chernoff on the summed
    normalised log-MGFs; every λ gives a valid bound: a few around the Gaussian optimum and a sweep).

    Each log-MGF is one matrix-vector product with the table exp(λ·(i − i_top)·h) (entries ≤ 1, non-negative
    terms: relative error ≤ (size + 4)u), shifted back by λ·(o + i_top)·h; 1e-9 is added to the sum so that
    its rounding can only widen the window."""
    var = sum(c * p._variance() for p, c in zip(pmfs, counts))
    ls = math.sqrt(2 * math.log(2 / COMPOSE_TAIL) / max(var, 1e-300)) if var > 0 else 1.0
    mags = np.unique(np.clip(np.concatenate([ls * np.logspace(-0.5, 0.5, 4), np.logspace(-2, 2, 3)]), 1e-3, 1e8))
    lam = np.concatenate([-mags, mags])
    size = max(p.probs.size for p in pmfs)
    i = np.arange(size, dtype=float)
    kmgf = np.zeros(lam.size)
    for p, c in zip(pmfs, counts):
        s = p.probs.size
        top = np.where(lam > 0, s - 1, 0)
        with np.errstate(under="ignore"):
            table = np.exp(lam[:, None] * ((i[None, :s] - top[:, None]) * h))
            m = table @ p.probs
        with np.errstate(divide="ignore"):
            kmgf += c * (np.log(m) + lam * ((p.offset + top) * h) - math.log(float(np.sum(p.probs))) + 1e-9)
    log_t = math.log(COMPOSE_TAIL / 2)
    pos = lam > 0
    with np.errstate(over="ignore", invalid="ignore"):
        a_hi = np.nanmin(np.where(np.isfinite(kmgf[pos]), (kmgf[pos] - log_t) / lam[pos], np.inf))
        a_lo = np.nanmax(np.where(np.isfinite(kmgf[~pos]), (kmgf[~pos] - log_t) / lam[~pos], -np.inf))
    full_lo = sum(c * p.offset for p, c in zip(pmfs, counts))
    full_hi = sum(c * (p.offset + p.probs.size - 1) for p, c in zip(pmfs, counts))
    lo = full_lo if not np.isfinite(a_lo) else max(full_lo, int(math.floor(a_lo / h)) - 1)
    hi = full_hi if not np.isfinite(a_hi) else min(full_hi, int(math.ceil(a_hi / h)) + 1)
    return int(lo), int(max(hi, lo))


#: Frequencies recomputed directly at most, and the forward-error contribution that asks for it.
MAX_LOW = 64
LOW_TARGET = 1e-12
#: π to long-double precision (``np.pi`` is π rounded to double: 1e-16 relative, far above u_L).
_PI_LD = 4 * np.arctan(np.longdouble(1))
#: Frequencies per block of the long-double phase table (bounds its memory: block × atoms × 32 bytes).
LOW_BLOCK = 16


def _mean_index(probs: np.ndarray) -> int:
    """The index nearest the mean of ``probs`` (any integer is exact; the mean keeps the phases small)."""
    tot = float(np.sum(probs))
    return int(round(float(np.sum(probs * np.arange(probs.size))) / tot)) if tot > 0 else 0


def _centred(probs: np.ndarray, m: int, n: int) -> np.ndarray:
    """Length-n vector holding probs[i] at index (i − m) mod n."""
    x = np.zeros(n)
    x[:probs.size] = probs
    return np.roll(x, -m)


def _refine_low(pmfs, counts, centre, n: int, low: np.ndarray, acc: np.ndarray, abs_acc: np.ndarray) -> float:
    """Recompute the spectra at the few frequencies ``low`` that the composition amplifies (|Z_j| ≈ 1) by a
    direct sum in long double, replace them in ``acc`` / ``abs_acc``, and return the ℓ₂ bound on the
    product's forward error there (both Hermitian halves).

    X_kj = e^{2πi·j·m_k/N}·Σ_i p_i·e^{−2πi·j·i/N} (the atoms centred at their mean index m_k, as the caller
    transforms them; the offsets are applied after the inverse transform). The phase table is computed once per block of frequencies from the exact integers
    (j·i) mod N, in long double (unit round-off u_L): each entry is off by ≤ 3u_L·2π (the angle) + 4u_L
    (cos, sin) in each component; the products add u_L, numpy's pairwise sum along a contiguous row at most
    (⌈log₂ s⌉ + 24)u_L of Σ|terms| (blocks of 128 summed by 8 accumulators, then halved). So
    |X̂_kj − X_kj| ≤ r_k = (⌈log₂ s⌉ + 80)·√2·u_L·‖p_k‖₁ (the centring phase, computed as the table, and
    its four products fit in the same allowance's margin of 40u_L), and rounding X̂ to double adds √2u‖p_k‖₁; with M = |X̂| + r the telescoping bound
    |ΔZ_j| ≤ (P_j/min_k M_kj)·Σ_k c_k r_k holds there.
    """
    size = max(p.probs.size for p in pmfs)
    u_l = UNIT_ROUNDOFF_LD
    idx = np.arange(size, dtype=np.int64)
    r = [(math.ceil(math.log2(max(p.probs.size, 2))) + 80) * math.sqrt(2.0) * u_l * p._norm1() * (1 + 1e-9)
         for p in pmfs]
    r_sum = float(sum(ck * rk for ck, rk in zip(counts, r)))
    ratio = np.zeros(low.size)
    for start in range(0, low.size, LOW_BLOCK):
        blk = low[start:start + LOW_BLOCK]
        ang = (-2 * _PI_LD / np.longdouble(n)) * ((blk[:, None] * idx[None, :]) % n).astype(np.longdouble)
        w_re, w_im = np.cos(ang), np.sin(ang)
        del ang
        new = np.zeros(blk.size, dtype=complex)
        new_abs = np.zeros(blk.size)
        log_p = np.zeros(blk.size)
        log_min = np.full(blk.size, np.inf)
        for p, ck, rk, mk in zip(pmfs, counts, r, centre):
            s = p.probs.size
            pl = p.probs.astype(np.longdouble)
            ph = (2 * _PI_LD / np.longdouble(n)) * ((blk * mk) % n).astype(np.longdouble)  # undo the centring
            xr, xi = np.sum(w_re[:, :s] * pl, axis=1), np.sum(w_im[:, :s] * pl, axis=1)
            c_, s_ = np.cos(ph), np.sin(ph)
            x = ((xr * c_ - xi * s_) + 1j * (xr * s_ + xi * c_)).astype(complex)
            with np.errstate(divide="ignore"):
                lm = np.log(np.abs(x) * (1 + 2 * UNIT_ROUNDOFF) + rk)  # (|x| rounded to double: 2u more)
                lx = np.where(x == 0, _LOG_ZERO, np.log(np.where(x == 0, 1.0, x)))
            log_p += ck * lm
            np.minimum(log_min, lm, out=log_min)
            new += ck * lx
            new_abs += ck * (5.0 * np.abs(lx) + 4.0)
            new_abs += np.abs(new)
        acc[blk] = new
        abs_acc[blk] = new_abs
        ratio[start:start + blk.size] = np.exp(np.minimum(log_p - log_min, 700.0))
        del w_re, w_im
    # and x rounded to double moves it by ≤ √2u|x| ≤ √2u‖p_k‖₁ more
    r_sum += math.sqrt(2.0) * UNIT_ROUNDOFF * float(sum(ck * p._norm1() for p, ck in zip(pmfs, counts)))
    return math.sqrt(2.0) * r_sum * norm2(ratio)


def compose_counted(pmfs, counts, *, loss_cap: float = math.inf, slack_budget: float = 0.0) -> PMF:
    """Π_k p_k^{*c_k} of step PMFs on one grid (all pessimistic or all optimistic, one tilt: the bounds are in
    the stored vectors' ℓ₁ norm, as for :meth:`PMF.self_compose`), composed in the transform domain with a certified slack (module docstring, 3.). ``slack_budget``: the round-off
    allowance above which the amplified low frequencies are recomputed in long double."""
    pmfs = list(pmfs)
    counts = [int(c) for c in counts]
    if not pmfs or len(pmfs) != len(counts) or min(counts) < 1:
        raise ReconRiskError("compose_counted needs step PMFs and positive counts of the same length")
    h, pess = pmfs[0].h, pmfs[0].pessimistic
    tilt = pmfs[0].tilt
    for p in pmfs:
        if p.h != h or p.pessimistic != pess or p.tilt != tilt:
            raise ReconRiskError("the step PMFs must share one grid, side and tilt")
    lo, hi = _window(pmfs, counts, h)
    out_len = hi - lo + 1
    if out_len > MAX_WINDOW_ATOMS:
        raise WindowTooLarge(f"value_discretization={h:g} needs a composed privacy-loss window of {out_len:,} "
                             f"atoms (at most {MAX_WINDOW_ATOMS:,}); use a coarser grid")
    n = fast_len(max(out_len, max(p.probs.size for p in pmfs)))
    eta = fft_eta(n)
    c = np.array(counts, dtype=float)
    norm1 = np.array([p._norm1() for p in pmfs])
    slack = np.array([p.slack for p in pmfs])
    e = eta * math.sqrt(n) * np.array([norm2(p.probs) for p in pmfs])
    budget = slack_budget if slack_budget > 0 else 1e-10
    # each PMF is transformed with its atoms' mean index m_k at 0 (a circular shift, undone through ``base``):
    # the low-frequency logs then carry no large phase, whose rounding the exponent's bound would charge
    centre = [_mean_index(p.probs) for p in pmfs]
    acc = np.zeros(n // 2 + 1, dtype=complex)
    abs_acc = np.zeros(n // 2 + 1)
    log_p = np.zeros(n // 2 + 1)  # Σ_k c_k log M_k, M_k = |X̂_k| + e_k ≥ |X̂_k|, |X_k|
    log_min = np.full(n // 2 + 1, np.inf)  # min_k log M_k
    for p, ck, ek, mk in zip(pmfs, counts, e, centre):
        x_hat = np.fft.rfft(_centred(p.probs, mk, n))
        with np.errstate(divide="ignore"):
            lm = np.log(np.abs(x_hat) + ek)
            lx = np.log(np.where(x_hat == 0, 1.0, x_hat))
        log_p += ck * lm
        np.minimum(log_min, lm, out=log_min)
        lx = np.where(x_hat == 0, _LOG_ZERO, lx)
        acc += ck * lx
        abs_acc += ck * (5.0 * np.abs(lx) + 4.0)  # the log (4u(|ℓ̂| + 1)) and the product by c (u|cℓ̂|)
        abs_acc += np.abs(acc)  # the addition's rounding: u|S_k| for the computed partial sum S_k
        del x_hat, lx, lm
    # forward error: |Π X̂^c − Π X^c| ≤ Σ_k c_k|ΔX_k|·P/M_k ≤ (P/min_k M_k)·Σ_k c_k|ΔX_k| (telescoping, every factor
    # ≤ M), and ‖ΔX_k‖₂ ≤ e_k over the whole spectrum, so off a set J: ‖ΔZ‖₂ ≤ E·max_{j∉J} P_j/min M_j
    with np.errstate(over="ignore", invalid="ignore"):
        ratio = np.exp(np.minimum(log_p - log_min, 700.0))
    e_sum = float(np.sum(c * e))
    low = np.zeros(0, dtype=np.int64)
    if e_sum * float(np.max(ratio)) * math.sqrt(out_len / n) > budget:
        order = np.argsort(-ratio)[:MAX_LOW]
        low = np.sort(order[e_sum * ratio[order] > LOW_TARGET])
    if low.size:
        fwd = _refine_low(pmfs, counts, centre, n, low, acc, abs_acc)
    else:
        fwd = 0.0
    rest = np.ones(ratio.size, dtype=bool)
    rest[low] = False
    fwd += e_sum * float(np.max(ratio[rest])) if rest.any() else 0.0
    d = UNIT_ROUNDOFF * abs_acc * (1 + 1e-6)  # a-posteriori bound on |Ŝ − Σ c log X̂| (√2: both components)
    d *= math.sqrt(2.0)
    spec = np.exp(acc)
    del acc
    z_norm = full_norm(spec, n)
    exp_err = math.sqrt(2.0) * norm2(np.abs(spec) * (np.expm1(d) + 4 * UNIT_ROUNDOFF)) / (1 - 4 * UNIT_ROUNDOFF)
    full = np.fft.irfft(spec, n)
    del spec
    fft_err = math.sqrt(out_len) * ((fwd + exp_err) * (1 + eta) + eta * z_norm) / math.sqrt(n) * (1 + 1e-9)
    base = sum(ck * (p.offset + mk) for p, ck, mk in zip(pmfs, counts, centre))
    probs = np.clip(np.roll(full, -int((lo - base) % n))[:out_len], 0.0, None)
    del full
    log_keep = sum(ck * math.log1p(-p.infinity_mass) if p.infinity_mass < 1 else -math.inf
                   for p, ck in zip(pmfs, counts))
    inf_mass = -math.expm1(log_keep) if math.isfinite(log_keep) else 1.0
    log_grow = float(np.sum(c * np.log(np.maximum(norm1, 1.0))))
    log_grow_s = float(np.sum(c * np.log(np.maximum(norm1 + slack, 1.0))))
    step_slack = float(np.sum(c * slack)) * math.exp(min(log_grow_s, 700.0))
    total = step_slack + 2 * COMPOSE_TAIL * math.exp(min(log_grow, 700.0)) + fft_err
    log_scale = float(sum(ck * p.log_scale for p, ck in zip(pmfs, counts)))
    if tilt == 0.0:
        total = min(1.0, total)
    out = PMF(h, lo, probs, float(min(1.0, inf_mass)), pess, float(total), tilt, log_scale)
    return out._trim().cap(loss_cap)


class _Rep:
    """A representative step as :func:`reconrisk._src.accounting.pld.compose_segments` reads a segment."""

    __slots__ = ("noise_multiplier", "sample_rate", "steps")

    def __init__(self, sigma: float, q: float, steps: int) -> None:
        self.noise_multiplier, self.sample_rate, self.steps = sigma, q, steps


def compose_groups(groups, h: float, *, pessimistic: bool, direction: str = "remove", loss_cap: float = math.inf,
                   slack_budget: float = 0.0, tilt: float = 0.0, tail_mass: float | None = None,
                   coarsen: bool = True, floor_scale: float = 1.0) -> PMF:
    """The PMF of the schedule bracketed by ``groups`` (:func:`group_steps`): each group composed at its
    representative (σ_lo, q_hi) when ``pessimistic``, (σ_hi, q_lo) otherwise (module docstring, 2.), so the
    result is a pessimistic / optimistic discretisation of the *exact* schedule, composed in the transform
    domain (:func:`compose_counted`; tilted steps, θ > 0, as :meth:`PMF.self_compose` powers them: the tilted
    vectors' product is the tilt of the product, with the summed ``log_scale``). ``floor_scale`` scales the grid floor
    (:func:`grouped_min_h`; any grid is sound). A window too large for memory coarsens the grid (h doubled; still a valid bound), as the engine does."""
    reps = [_Rep(*g.representative(pessimistic), g[4]) for g in groups]
    if any(not g.exact for g in groups):
        h = max(h, grouped_min_h(groups, pessimistic, floor_scale))
    tail = _pld.STEP_TAIL if tail_mass is None else float(tail_mass)
    for _ in range(64):
        try:
            pmfs = [_pld.step_pmf(r.noise_multiplier, r.sample_rate, h, pessimistic=pessimistic, direction=direction,
                                  tail_mass=tail).tilted(tilt) for r in reps]
            return compose_counted(pmfs, [r.steps for r in reps], loss_cap=loss_cap, slack_budget=slack_budget)
        except WindowTooLarge:
            if not coarsen:
                raise
            h *= 2.0
    raise ReconRiskError("internal: no grid fits the composition window")  # pragma: no cover


#: Orders of the grouped RDP bound (integers: exact and cheap; any set of orders gives a valid bound).
RDP_ORDERS = np.concatenate([np.arange(2, 33), [40, 48, 64, 96, 128, 192, 256, 512, 1024]]).astype(float)
#: Groups of the RDP bound (its own, coarser grouping: any grouping gives a valid upper curve).
RDP_GROUPS = 32


def rdp_representatives(groups, max_groups: int = RDP_GROUPS) -> list[tuple[float, float, int]]:
    """(σ, q, count) segments whose RDP curve is ≥ the grouped schedule's: the groups' dominating
    representatives, regrouped into at most ``max_groups`` (each at its dominating end again). Their counts sum
    to the schedule's steps; :attr:`PrivacyAnalysis.tilt_segments` reads ``TILT_GROUPS`` of them."""
    reps = [(*g.representative(True), g[4]) for g in groups]
    if len(reps) > max_groups:
        sig, q, n = distinct_steps(reps)
        reps = [(*g.representative(True), g[4]) for g in group_steps(sig, q, n, max_groups=max_groups)]
    return reps


#: Segments the tilt of a grouped schedule is chosen from (grid choice only: any tilt gives a certified bracket;
#: each segment costs one coarse step PMF and its moments at ~360 tilts, 0.1 s, so not one per group).
TILT_GROUPS = 8


def grouped_rdp_epsilon(groups, delta: float) -> float:
    """A certified ε(δ) from RDP of the Poisson schedule the groups bracket: each group at its dominating
    representative (σ_lo, q_hi) (RDP obeys data processing, so its curve is ≥ each member's), composed
    additively (regrouped into at most ``RDP_GROUPS``, each at the dominating end), converted by ε = min_α ε(α) + log((α−1)/α) − (log δ + log α)/(α−1) (Canonne, Kamath & Steinke
    2020, Prop. 12) over integer orders. The upper end of the schedule's ε never exceeds it."""
    reps = [_Rep(*t) for t in rdp_representatives(groups)]

    def objective(a, e):
        return (e + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1))[None, :]

    best, _ = minimise_over_orders(reps, objective, RDP_ORDERS, refine=False)
    return float(max(0.0, best[0]))
