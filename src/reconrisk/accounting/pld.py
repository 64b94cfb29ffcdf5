"""Privacy-loss distributions (PLDs) of Poisson-subsampled Gaussian DP-SGD.

A self-contained, vectorised PLD engine used for the certified ReRo bracket
and for (ε, δ) accounting. It implements the same "connect-the-dots"
pessimistic discretisation as Google's ``dp_accounting`` (Doroshenko et al.,
PETS 2022) — the tests cross-check the two — plus an **optimistic**
discretisation that ``dp_accounting`` lacks in connect-the-dots form, so the
lower end of the ReRo bracket is accurate to O(T h²) rather than O(T h).
It imports only numpy and ``scipy.special`` so that ``reconrisk bound``
answers in well under a second (``import dp_accounting`` alone costs ~0.7 s
on a 2-core machine).

Notation (seed 000, Cor. 4 and spec_000 §1.7). Per step, the pair is

* μ = (1−q)·N(0, σ²) + q·N(1, σ²)   (the target is in the batch with prob. q),
* ν = N(0, σ²)                        (the target is absent),

and the privacy loss of the *remove* direction is
``λ(x) = log((1−q) + q·exp((2x−1)/(2σ²)))`` for x ~ μ. The *add* direction
(ν against μ) is only needed for (ε, δ) accounting, where, as in
``dp_accounting``'s PLD accountant, ε(δ) is the maximum over both.

Discretisations on the loss grid ``l_k = k·h``:

* **pessimistic** (connect the dots): the mass of μ and ν in each cell
  ``[l_k, l_{k+1})`` is split between the two end atoms so that both masses are
  preserved. Splitting can only add information, so the hockey-stick curve
  δ(ε) of the result is ≥ the true one for every ε (the upper tail beyond the
  grid goes to the "infinity" atom, the lower tail is rounded up).
* **optimistic** (merge and round): cells ``[l_k − h/2, l_k + h/2)`` are merged
  (a garbling, which can only remove information) and their aggregate atom
  ``(P_k, Q_k)`` is placed at ``l_k`` with μ-mass ``min(P_k, e^{l_k} Q_k)``,
  which is dominated by the aggregate atom for every ε. Tails are dropped.

Composition preserves both orderings because the hockey-stick divergence of a
composition is ``δ_{A⊗B}(ε) = E_{L∼A}[δ_B(ε − L)]``, monotone in each factor
for non-negative masses.

Floating point: every step here is exact up to rounding, truncation of tails
of mass ≤ ``tail_mass`` and FFT round-off. Those are covered by a slack
(``PMF.slack``, a bound in total variation) that is added to the pessimistic
infinity mass and subtracted from optimistic results. The FFT part of the
slack is a theorem, not a per-atom guess: Higham's FFT error bound (2002,
Thm 24.2) propagated through the product or the t-th power of the spectrum
(a-posteriori, from the computed spectrum; :func:`power_roundoff`), tested
against an extended-precision (long double) composition.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..errors import ReconRiskError
from .pmf import PMF, ROUNDOFF_PER_ATOM

#: Per-step tail mass left out of the discretised support (put in the
#: infinity atom when pessimistic, dropped when optimistic).
STEP_TAIL = 1e-18
#: Largest loss represented on the grid; beyond that mass is "infinite".
MAX_LOSS = 600.0
#: Largest per-step grid.
MAX_ATOMS = 4_000_000


# --------------------------------------------------------------------------------------
# Per-step PMFs of the Poisson-subsampled Gaussian
# --------------------------------------------------------------------------------------


def _norm_mass(a: np.ndarray, b: np.ndarray, loc: float, sigma: float) -> np.ndarray:
    """P(a ≤ X < b) for X ~ N(loc, σ²), accurate in both tails."""
    za = (a - loc) / sigma
    zb = (b - loc) / sigma
    upper = za > 0
    return np.where(upper, special.ndtr(-za) - special.ndtr(-zb), special.ndtr(zb) - special.ndtr(za))


def _x_of_remove_loss(lam: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """Inverse of the remove-direction loss λ(x) (increasing in x); −∞ below log(1−q)."""
    lam = np.asarray(lam, dtype=float)
    if q == 1.0:
        return sigma**2 * lam + 0.5
    with np.errstate(over="ignore"):
        v = np.expm1(lam) + q  # e^λ − (1 − q)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = sigma**2 * (np.log(np.where(v > 0, v, 1.0)) - math.log(q)) + 0.5
    return np.where(v > 0, x, -np.inf)


def _remove_loss_of_x(x: float, sigma: float, q: float) -> float:
    z = (2 * x - 1) / (2 * sigma**2)
    if q == 1.0:
        return z
    return float(np.logaddexp(math.log1p(-q), math.log(q) + z))


def _cell_masses(bounds: np.ndarray, sigma: float, q: float, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) masses of the loss cells [bounds[i], bounds[i+1]) of one step.

    ``direction='remove'``: P = μ (mixture), Q = ν = N(0, σ²), loss λ(x).
    ``direction='add'``: P = ν, Q = μ, loss −λ(x) (decreasing in x).
    """
    if direction == "remove":
        xb = _x_of_remove_loss(bounds, sigma, q)
        a, b = xb[:-1], xb[1:]
    else:
        xb = _x_of_remove_loss(-bounds, sigma, q)
        a, b = xb[1:], xb[:-1]
    m0 = _norm_mass(a, b, 0.0, sigma)
    m1 = _norm_mass(a, b, 1.0, sigma)
    mix = (1.0 - q) * m0 + q * m1
    return (mix, m0) if direction == "remove" else (m0, mix)


def _loss_range(sigma: float, q: float, direction: str) -> tuple[float, float, float, float]:
    """Truncated loss range [lo, hi] of one step and the P-mass below lo and above hi."""
    z = float(-special.ndtri(STEP_TAIL))  # one-sided Gaussian quantile of the tail
    x_lo, x_hi = -sigma * z, 1.0 + sigma * z
    lam_lo = _remove_loss_of_x(x_lo, sigma, q)
    lam_hi = _remove_loss_of_x(x_hi, sigma, q)
    # P-mass beyond each truncation point
    below = (1 - q) * special.ndtr(x_lo / sigma) + q * special.ndtr((x_lo - 1) / sigma)
    above = (1 - q) * special.ndtr(-x_hi / sigma) + q * special.ndtr(-(x_hi - 1) / sigma)
    # The remove loss is bounded below by log(1 − q) but its bulk can sit far above that (large σ):
    # truncate at λ(x_lo) like the top, the P-mass below going to the first atom (pessimistic) or
    # being dropped (optimistic). Very negative losses (q = 1, tiny σ) are clamped at −MAX_LOSS.
    if lam_lo < -MAX_LOSS:
        lam_lo = -MAX_LOSS
        x_l = float(_x_of_remove_loss(np.array([lam_lo]), sigma, q)[0])
        below = (1 - q) * special.ndtr(x_l / sigma) + q * special.ndtr((x_l - 1) / sigma)
    if direction == "remove":
        return lam_lo, lam_hi, below, above
    # add: loss −λ(x) under P = N(0, σ²); x large -> very negative loss
    p_above_xhi = float(special.ndtr(-x_hi / sigma))  # P-mass with loss < −λ(x_hi)
    p_below_xlo = float(special.ndtr(x_lo / sigma))  # P-mass with loss > −λ(x_lo): to +inf (pessimistic)
    return max(-lam_hi, -MAX_LOSS), -lam_lo, p_above_xhi, p_below_xlo


def step_pmf(sigma: float, q: float, h: float, *, pessimistic: bool = True, direction: str = "remove") -> PMF:
    """The discretised PLD of one Poisson-subsampled Gaussian step.

    Sensitivity is normalised to 1 and the noise standard deviation is the
    noise multiplier σ (seed 000 Cor. 4: the bound does not depend on C).
    """
    lam_lo, lam_hi, p_below, p_above = _loss_range(sigma, q, direction)
    if direction == "add" and lam_lo == -MAX_LOSS:
        # P-mass with loss below −MAX_LOSS is rounded up onto the first atom (pessimistic)
        p_below = float(special.ndtr(-_x_of_remove_loss(np.array([MAX_LOSS]), sigma, q)[0] / sigma))
    extra_inf = 0.0
    if lam_hi > MAX_LOSS:
        # losses above MAX_LOSS are treated as infinite (pessimistic) / dropped (optimistic)
        bnd = np.array([MAX_LOSS, lam_hi + 1.0])
        P_hi, _ = _cell_masses(bnd, sigma, q, direction)
        extra_inf = float(P_hi[0])
        lam_hi = MAX_LOSS
    if (lam_hi - lam_lo) / h > MAX_ATOMS:
        h_min = (lam_hi - lam_lo) / MAX_ATOMS
        raise ReconRiskError(
            f"value_discretization must be >= {h_min:.3g} for noise_multiplier={sigma:g}, "
            f"sample_rate={q:g} (the per-step loss range is {lam_hi - lam_lo:.3g}); found {h:g}"
        )
    if pessimistic:
        k0 = math.floor(lam_lo / h)
        k1 = max(math.ceil(lam_hi / h), k0 + 1)
        grid = np.arange(k0, k1 + 1) * h
        P, Q = _cell_masses(grid, sigma, q, direction)
        # split each cell onto its end atoms preserving both masses
        lower = (np.exp(grid[1:]) * Q - P) / math.expm1(h)
        lower = np.clip(lower, 0.0, P)
        probs = np.zeros(grid.size)
        probs[:-1] += lower
        probs[1:] += P - lower
        probs[0] += p_below  # lower tail rounded up to the first atom
        inf_mass = min(1.0, p_above + extra_inf)
        return PMF(h, k0, probs, inf_mass, True, 0.0)
    return _optimistic_ctd(sigma, q, h, lam_lo, lam_hi, direction)


def _log_tail_masses(x: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """log P(X > x) for X ~ N(0, σ²) and X ~ N(1, σ²)."""
    with np.errstate(divide="ignore"):
        return special.log_ndtr(-x / sigma), special.log_ndtr(-(x - 1.0) / sigma)


def _hockey_stick_remove(l: np.ndarray, sigma: float, q: float, with_error: bool = False):
    """Exact δ(ε) of one step, remove direction, at ε = l (vectorised, relative precision).

    δ(ε) = μ(L > ε) − e^ε ν(L > ε) = q·Φ̄((x−1)/σ) − (e^ε − 1 + q)·Φ̄(x/σ), x = x(ε).
    With ``with_error`` also returns a bound on the absolute round-off of each
    value: the result is a·(1 − b/a) with a = q·Φ̄((x−1)/σ) ≥ δ; each factor
    carries a relative error of a few hundred ulps at most (``log_ndtr`` of
    arguments down to 1e-300, one ``exp``, one ``expm1``), so 1e-13·a + 1e-300
    bounds it with a wide margin.
    """
    x = _x_of_remove_loss(l, sigma, q)
    log_n0, log_n1 = _log_tail_masses(x, sigma)
    coef = np.expm1(l) + q  # e^ε − (1 − q) > 0 wherever x is finite
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = math.log(q) + log_n1
        log_b = np.log(np.where(coef > 0, coef, 1.0)) + log_n0
        a = np.exp(log_a)
        d = a * -np.expm1(np.minimum(log_b - log_a, 0.0))
    out = np.where(np.isfinite(x), d, -np.expm1(l))  # below log(1−q): δ = 1 − e^ε exactly
    if not with_error:
        return out
    err = np.where(np.isfinite(x), 1e-13 * a, 1e-16 * np.abs(out)) + 1e-300
    return out, err


def _optimistic_ctd(sigma: float, q: float, h: float, lam_lo: float, lam_hi: float, direction: str) -> PMF:
    """Optimistic connect-the-dots: a grid PMF whose δ-curve lies below the true one.

    Write D(y) = δ(log y) = E_μ[(1 − y e^{−L})₊], convex and non-increasing in
    y = e^ε ≥ 0 with D′(y) = −ν(L > log y). Atoms p_i ≥ 0 at losses l_i give
    D̃(y) = Σ p_i (1 − y/y_i)₊ (y_i = e^{l_i}): every convex, non-increasing,
    piecewise-linear g ≥ 0 with kinks on the grid, linear on [0, y_0] and 0
    beyond the last y_i is such a curve, with p_i = y_i·(slope jump of g at y_i).
    If D̃ ≤ D on all of [0, ∞) then (i) B̃_κ = inf_y [κy + D̃(y)] ≤ B_κ, and
    (ii) composition keeps the order, because
    D_{A⊗B}(y) = E_{L∼μ_A}[D_B(y e^{−L})] is monotone in each factor
    (sub-probability atom measures included). So the lower end needs exactly:
    p_i ≥ 0 and D̃ ≤ D everywhere.

    Construction (the argument, step by step):

    1. Exact values D_i = D(y_i) and, per interval [y_i, y_{i+1}], the exact
       largest gap g_i = max (chord − D) (closed form: D′ equals the chord
       slope at one point). Lowering *both* ends of an interval by ≥ g_i puts
       its chord below D there (chord − D ≤ g_i − min(lowering) ≤ 0). So
       v_i = D_i − max(g_{i−1}, g_i) − (round-off margin) gives a polygon
       ≤ D. On [0, y_0] the slopes lie in [−1, −ν(L > l_0)], which bounds the
       gap by y_0·ν(L ≤ l_0)/4.
    2. The lower convex hull of these points is ≤ the polygon (a convex function
       below points lies below each chord between them), hence ≤ D.
    3. The lowered points may cross zero between grid points y_{m−1} and y_m
       (the first non-positive one). A curve must end at 0 *on the grid*;
       raising negative points to 0 (the former ``max(0, D − lowering)``)
       lifts the chord of [y_{m−1}, y_m] above the lowered one and was the
       cause of the lower end overshooting the exact value whenever a step's
       loss range spans only a few cells (large σ, small q, small T). Instead
       the curve is set to 0 from y_{m−1} on: on [y_{m−2}, y_{m−1}] the chord
       from v_{m−2} to 0 lies below the lowered chord, and beyond y_{m−1}
       0 ≤ D. The hull (step 2) is then taken of these points. The cost is one
       cell's value, O(h²)-small when D is smooth on the grid scale, and
       refinement of h removes it otherwise.

    The error of the whole construction is second order in h, like the
    pessimistic connect-the-dots construction.
    """
    if direction != "remove":
        raise ReconRiskError("the optimistic discretisation is implemented for the remove direction only")
    k0 = math.floor(lam_lo / h)
    k1 = max(math.ceil(lam_hi / h), k0 + 1)
    l = np.arange(k0, k1 + 1) * h
    D = _hockey_stick_remove(l, sigma, q)
    gap = _chord_gaps(l, D, sigma, q)
    # the interval [0, y_0]: ν-mass below l_0 (zero when q < 1 since losses are >= log(1-q))
    x0 = _x_of_remove_loss(l[:1], sigma, q)[0]
    q_below = float(special.ndtr(x0 / sigma)) if np.isfinite(x0) else 0.0
    gap_left = math.exp(l[0]) * q_below / 4
    lower_by = np.maximum(np.concatenate([[gap_left], gap]), np.concatenate([gap, [0.0]]))
    y = np.concatenate([[0.0], np.exp(l)])
    val = np.concatenate([[1.0 - gap_left], D - lower_by])  # may be negative: never raised
    # first point lowered to or below zero: the curve is 0 from the point before it on
    nonpos = np.flatnonzero(val[1:] <= 0.0) + 1
    if nonpos.size == 0:
        zero_from = y.size - 1  # the value there is > 0, so setting it to 0 lowers it
    elif nonpos[0] <= 1:  # pragma: no cover - every grid point lowered below 0: the empty curve
        return PMF(h, k0, np.zeros(1), 0.0, False, 0.0)
    else:
        zero_from = int(nonpos[0]) - 1
    val = val.copy()
    val[zero_from] = 0.0
    pts = np.arange(zero_from + 1)
    if zero_from < y.size - 1:
        pts = np.concatenate([pts, [y.size - 1]])
        val[y.size - 1] = 0.0
    keep = pts[_lower_hull(y[pts], val[pts])]
    yk, vk = y[keep], val[keep]
    slopes = np.diff(vk) / np.diff(yk)
    jumps = np.diff(np.concatenate([slopes, [0.0]]))  # slope increase at each kept grid vertex
    probs = np.zeros(l.size)
    idx = keep[1:] - 1  # grid indices of kept vertices (vertex 0 is y = 0)
    probs[idx] = np.clip(yk[1:] * jumps, 0.0, None)
    slack = ROUNDOFF_PER_ATOM * l.size
    return PMF(h, k0, probs, 0.0, False, slack)._trim()


def _chord_gaps(l: np.ndarray, D: np.ndarray, sigma: float, q: float, err: np.ndarray | None = None) -> np.ndarray:
    """Certified bound on how far the chord Ĉ of the computed values D over [y_i, y_{i+1}] exceeds the true D.

    D is convex with D′(y) = −ν(L > log y), so Ĉ − D is concave on the
    interval. Its maximiser is near ŷ, where D′ equals the chord slope ŝ
    (closed form through the inverse normal CDF). Concavity gives, for every y
    in the interval, (Ĉ − D)(y) ≤ (Ĉ − D)(ŷ) + |ŝ − D′(ŷ)|·(y_{i+1} − y_i):
    a bound that stays valid when ŷ misses the maximiser by round-off. The
    values at ŷ are computed with their round-off bound ``err_c``; 4 ulps of
    the endpoint values cover the rounding of the chord and of the final
    subtraction.
    """
    y = np.exp(l)
    dy = np.diff(y)
    slope = np.diff(D) / dy
    tail = np.clip(-slope, 1e-300, 1.0)
    x_c = -sigma * special.ndtri(tail)  # ν(X > x_c) = tail for X ~ N(0, σ²)
    l_c = _remove_loss_vec(x_c, sigma, q)
    l_c = np.clip(l_c, l[:-1], l[1:])
    D_c, err_c = _hockey_stick_remove(l_c, sigma, q, with_error=True)
    y_c = np.exp(l_c)
    chord_c = D[:-1] + slope * (y_c - y[:-1])
    x_of_c = _x_of_remove_loss(l_c, sigma, q)
    d_prime = -np.where(np.isfinite(x_of_c), special.ndtr(-x_of_c / sigma), 1.0)  # D′(ŷ)
    gap = chord_c - D_c + err_c + np.abs(slope - d_prime) * dy * (1 + 1e-12)
    scale = np.maximum(np.abs(D[:-1]), np.abs(D[1:]))
    return np.maximum(gap, 0.0) + 4.4e-16 * (scale + np.abs(slope) * dy)


def _remove_loss_vec(x: np.ndarray, sigma: float, q: float) -> np.ndarray:
    z = (2.0 * x - 1.0) / (2.0 * sigma**2)
    if q == 1.0:
        return z
    return np.logaddexp(math.log1p(-q), math.log(q) + z)


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of points sorted by x (first and last always kept).

    A few vectorised passes drop every point lying on or above the chord of its
    current neighbours (such a point is never a hull vertex, whether or not the
    neighbours survive); Andrew's monotone chain finishes on what is left.
    """
    keep = np.arange(x.size)
    for _ in range(16):
        if keep.size <= 2:
            return keep
        xs, ys = x[keep], y[keep]
        s = np.diff(ys) / np.diff(xs)
        reflex = np.concatenate([[False], s[1:] <= s[:-1], [False]])
        if not reflex.any():
            return keep
        keep = keep[~reflex]
    hull: list[int] = []
    for i in keep.tolist():
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b if it lies on or above the segment a -> i
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return np.asarray(hull)


def compose_segments(
    segments, h: float, *, pessimistic: bool, direction: str = "remove", loss_cap: float = math.inf
) -> PMF:
    """PMF of a whole (possibly heterogeneous) schedule of (σ, q, steps) segments.

    ``loss_cap`` bounds the represented losses (see :meth:`PMF.self_compose`).
    """
    total: PMF | None = None
    for seg in segments:
        pmf = step_pmf(seg.noise_multiplier, seg.sample_rate, h, pessimistic=pessimistic, direction=direction)
        pmf = pmf.self_compose(seg.steps, loss_cap)
        total = pmf if total is None else total.compose(pmf, loss_cap)
    assert total is not None
    return total
