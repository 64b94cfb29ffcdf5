"""The optimistic discretisation of one step (for :func:`reconrisk._src.accounting.pld.step_pmf`).

Connect-the-dots from below: a grid PMF whose hockey-stick curve lies below the true one everywhere
(:func:`optimistic_ctd`, the argument step by step), so the lower end of the ReRo bracket is accurate to
O(T h²) rather than O(T h); its own rounding is measured a posteriori (:func:`_vertex_polygon_excess`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..errors import ReconRiskError
from .hull import _lower_hull
from .pld_rounding import relative_excess
from .pld_step import hockey_stick_remove, remove_loss_vec, x_of_remove_loss
from .pmf import PMF, UNIT

#: Optimistic curve values below this are set to 0 (each step loses at most this much; it keeps
#: the convex hull linear-time in the far tail).
TAIL_ZERO = 1e-20

def optimistic_ctd(sigma: float, q: float, h: float, lam_lo: float, lam_hi: float, direction: str,
                    zero_below: float = TAIL_ZERO) -> PMF:
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
    D, D_err = hockey_stick_remove(l, sigma, q, with_error=True)
    gap = _chord_gaps(l, D, sigma, q)
    # the interval [0, y_0]: ν-mass below l_0 (zero when q < 1 since losses are >= log(1-q))
    x0 = x_of_remove_loss(l[:1], sigma, q)[0]
    q_below = float(special.ndtr(x0 / sigma)) if np.isfinite(x0) else 0.0
    gap_left = math.exp(l[0]) * q_below / 4
    y = np.concatenate([[0.0], np.exp(l)])
    val = np.concatenate([[1.0 - gap_left], _lowered_values(y[1:], D, D_err, gap, gap_left, l, h, sigma, q)])  # may be < 0
    # first point lowered to or below zero: the curve is 0 from the point before it on
    # (values below TAIL_ZERO count as zero: setting a value ≥ 0 to 0 only lowers the curve, and
    # the nearly flat far tail otherwise costs the hull one pass per point)
    nonpos = np.flatnonzero(val[1:] <= zero_below) + 1
    if nonpos.size == 0:
        zero_from = y.size - 1  # the value there is > 0, so setting it to 0 lowers it
    elif val[nonpos[0]] >= 0.0:
        zero_from = int(nonpos[0])  # a tiny non-negative value: 0 from here on lowers the curve
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
    keep, jumps = _positive_jumps(y, val, keep)
    yk = y[keep]
    probs = np.zeros(l.size)
    idx = keep[1:] - 1  # grid indices of kept vertices (vertex 0 is y = 0)
    probs[idx] = yk[1:] * jumps
    rel = relative_excess(y, val, keep, pts, l, D, D_err, probs, sigma, q)
    if rel <= 1e-6:
        # D̃ ≤ (1 + rel)·D everywhere: the atoms divided by 1 + rel (rounded down) are a valid optimistic PMF
        return PMF(h, k0, probs * ((1.0 - rel) * (1.0 - 4 * UNIT)), 0.0, False, 0.0)._trim()
    slack = _vertex_polygon_excess(y, val, keep, pts) + ROUNDOFF_STEP
    return PMF(h, k0, probs, 0.0, False, slack)._trim()

#: Rounding allowance of one optimistic step beyond the measured excess (see :func:`_vertex_polygon_excess`).
ROUNDOFF_STEP = 32 * 2.0**-53

def _positive_jumps(y: np.ndarray, val: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop hull vertices whose *computed* slope increase is negative (reflex by rounding), so that
    every atom p = y·jump is ≥ 0 as computed; dropping a vertex only lowers the polygon, and whatever
    the hull's rounding did is measured afterwards by :func:`_vertex_polygon_excess`."""
    for _ in range(100):
        slopes = np.diff(val[keep]) / np.diff(y[keep])
        jumps = np.diff(np.concatenate([slopes, [0.0]]))  # slope increase at each kept grid vertex
        bad = np.flatnonzero(jumps[:-1] < 0.0) + 1  # never the first (y = 0) or the last vertex
        if bad.size == 0:
            return keep, np.maximum(jumps, 0.0)
        # drop one of each run of adjacent bad vertices per round (neighbours change when one goes)
        bad = bad[np.concatenate([[True], np.diff(bad) > 1])]
        keep = np.delete(keep, bad)
    raise ReconRiskError("internal: the optimistic hull did not become convex")  # pragma: no cover

def _vertex_polygon_excess(y: np.ndarray, val: np.ndarray, keep: np.ndarray, pts: np.ndarray) -> float:
    """How far the polygon through the kept vertices rises above the certified points (ŷ_j, v_j), j ∈ pts.

    The certified polygon through all points lies below D (step 1); both it and
    the vertex polygon are linear between consecutive grid points, so the
    largest excess is at a grid point. Measured here directly (local
    interpolation, no long sums: its own rounding is ≤ 6 ulps of the values ≤ 1).

    The PMF's curve then differs from the vertex polygon only by the rounding of
    its atoms p_k = ŷ_k·(ŝ_k − ŝ_{k−1}): writing the curve as the integral of
    its slopes from the right end, slopes with relative error 3u move it by at
    most 3u·(total variation ≤ 1), the jumps' and products' rounding by
    2.2u·Σp, the atoms' positions e^{l_k} against the computed ŷ_k by 2.2u,
    the certified points at ŷ_j instead of e^{l_j} by 6u — all inside
    ``ROUNDOFF_STEP`` (32u). This replaces the former a-priori allowance of
    1e-16 per atom, which at T = 1e5 steps of 2.5e6 atoms came to 2.5e-5 —
    more than B_κ itself at σ 0.5, q 1e-4, κ 1e-6.
    """
    j = pts
    pos = np.clip(np.searchsorted(keep, j, side="left"), 1, keep.size - 1)
    a, b = keep[pos - 1], keep[pos]
    poly = val[a] + (val[b] - val[a]) * ((y[j] - y[a]) / (y[b] - y[a]))
    poly = np.where(j == a, val[a], np.where(j == b, val[b], poly))
    exc = float(np.max(poly - val[j]))
    return max(exc, 0.0) + 6 * 2.0**-53

def _lowered_values(
    y: np.ndarray, D: np.ndarray, err: np.ndarray, gap: np.ndarray, gap_left: float,
    l: np.ndarray | None = None, h: float = 0.0, sigma: float | None = None, q: float = 1.0,
) -> np.ndarray:
    """Step 1 of :func:`optimistic_ctd`: grid values v_i whose polygon lies below D.

    Each interval [y_i, y_{i+1}] gets a line below D on it, and v_i is the
    minimum of the two lines at y_i (so each chord of the polygon lies below
    its interval's line, hence below D). Three lines are used:

    * **chord** (c): the chord of the computed values lowered by the certified
      gap g_i (:func:`_chord_gaps`) — both ends lowered by g_i;
    * **left secant** (L): the secant of D through y_{i−1} and y_i (through
      (0, D(0) = 1) and y_0 for i = 0), extended to the right — below the
      convex D beyond y_i; it keeps y_i exact and lowers y_{i+1} only;
    * **right secant** (R): the secant through y_{i+1} and y_{i+2} extended to
      the left — keeps y_{i+1} exact and lowers y_i only.

    Why not the chord everywhere: a deficit at a grid point next to a region
    where D is (nearly) linear cannot be absorbed by curvature, so the convex
    hull (step 2) spreads it over that whole region. At the bottom of the loss
    range D is exactly linear (D(y) = 1 − y below 1 − q) and the ν-mass piles
    up just above log(1 − q), where the chord gap is large; the hull then
    lowered the curve on all of [0, y_1], giving the PMF a ν-mass above 1 and
    a mean loss too small by g — per step, so the bias grew like T (at σ 0.6,
    q 1e-3, h 1.25e-4: mean loss −76 %, and the T = 1e5 lower end 30 % low
    while the upper end was within 0.02 %). The choice per interval is L where
    the left neighbour is much flatter (g_{i−1} < g_i/4) and flatter than the
    right one, R in the mirror case, the chord otherwise. Every choice is
    valid; the choice only moves the deficit toward the more curved side.

    Errors: computed values carry bounds ``err`` (|D̂ − D| ≤ err); a secant
    extrapolated by the ratio r of the cell widths moves by at most
    err_b(1 + r) + err_a·r, which is subtracted; 8 ulps of the magnitudes
    cover the rounding of each line. The first value is also lowered by
    ``gap_left`` for the chord of [0, y_0].
    """
    n = y.size
    u8 = 8.8e-16
    exact = D - err - u8 * np.abs(D)  # certified lower values of D at the grid points
    if n == 1:
        return np.array([exact[0] - gap_left])
    dy = np.diff(y)
    slope = np.diff(D) / dy
    m = n - 1
    g_prev = np.concatenate([[gap_left], gap[:-1]])
    g_next = np.concatenate([gap[1:], [np.inf]])
    flat_left = g_prev < gap / 4
    flat_right = g_next < gap / 4
    use_l = flat_left & (~flat_right | (g_prev <= g_next))
    use_r = flat_right & ~use_l
    # right-end values (constraint on v_{i+1} from interval i)
    right_end = D[1:] - gap
    # L: secant through (y_{i-1}, D_{i-1}) and (y_i, D_i), at y_{i+1}
    ext_l = np.empty(m)
    r0 = y[1] / y[0]
    ext_l[0] = 1.0 + (D[0] - 1.0) * r0 - err[0] * r0 - u8 * (1.0 + abs(D[0] - 1.0) * r0)
    if m > 1:
        r = dy[1:] / dy[:-1]
        step = slope[:-1] * dy[1:]
        ext_l[1:] = D[1:-1] + step - (err[1:-1] * (1 + r) + err[:-2] * r) - u8 * (np.abs(D[1:-1]) + np.abs(step))
    left_end = D[:-1] - gap
    # among the lines of a left-flat interval pick the smallest a + 2h·b (a, b: deficits at its ends;
    # a spreads over the flat side, b costs about two cells), never a deficit b over half of D (the hull
    # would collapse behind it); the chord stays the default
    best_a, best_b = gap.copy(), gap.copy()
    cost = np.where(use_l, gap + 2 * h * gap, np.inf)
    ok = use_l & ((D[1:] - ext_l) <= 0.5 * np.abs(D[1:]))
    a_l, b_l = D[:-1] - exact[:-1], D[1:] - ext_l
    c_l = a_l + 2 * h * b_l
    pick = ok & (c_l < cost)
    best_a, best_b, cost = np.where(pick, a_l, best_a), np.where(pick, b_l, best_b), np.where(pick, c_l, cost)
    idx = np.flatnonzero(use_l)
    if idx.size and sigma is not None:
        for t in (1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3):
            lc = l[idx] + t * h
            va, vb = _tangent_values(lc, y[idx], y[idx + 1], sigma, q)
            a_t, b_t = D[idx] - va, D[idx + 1] - vb
            c_t = a_t + 2 * h * b_t
            pick = (b_t <= 0.5 * np.abs(D[idx + 1])) & (c_t < cost[idx])
            best_a[idx] = np.where(pick, a_t, best_a[idx])
            best_b[idx] = np.where(pick, b_t, best_b[idx])
            cost[idx] = np.where(pick, c_t, cost[idx])
    right_end = np.where(use_l, D[1:] - best_b, D[1:] - gap)
    left_end = np.where(use_l, D[:-1] - best_a, left_end)
    if m > 1:
        ext_r = np.full(m, -np.inf)
        r = dy[:-1] / dy[1:]
        step = slope[1:] * dy[:-1]
        ext_r[:-1] = D[1:-1] - step - (err[1:-1] * (1 + r) + err[2:] * r) - u8 * (np.abs(D[1:-1]) + np.abs(step))
        use_r &= (D[:-1] - ext_r) <= 0.1 * np.abs(D[:-1])
        right_end = np.where(use_r, exact[1:], right_end)
        left_end = np.where(use_r, ext_r, left_end)
    val = np.empty(n)
    val[0] = left_end[0]
    val[1:-1] = np.minimum(right_end[:-1], left_end[1:])
    val[-1] = right_end[-1]
    val[0] = min(val[0], exact[0]) - gap_left
    return val

def _tangent_values(lc: np.ndarray, ya: np.ndarray, yb: np.ndarray, sigma: float, q: float):
    """Certified lower values at ya and yb of the tangent of D at y = e^{lc} (ya ≤ e^{lc} ≤ yb).

    The tangent D(c) + D′(c)(y − c) lies below the convex D everywhere. It is
    evaluated with D̂(c) − err_c and the computed slope ŝ = −Φ̄(x̂/σ); the
    slope error |ŝ − D′(c)| ≤ Δ moves the line by at most Δ·(yb − ya) on the
    interval, the rounded ĉ = fl(e^{lc}) (and ŷa, ŷb) move it by |ŝ|·u·y, and Δ bounds the propagation of the error in x̂ (from
    e^λ − 1 + q, its log and the scaling, each a few ulps, through the
    Lipschitz constant max φ/σ of Φ̄ near x̂) plus 8 ulps of Φ̄. Where
    e^λ − 1 + q is not resolved (cancellation below 64 ulps) the value is −∞,
    i.e. the candidate is never chosen.
    """
    u = 2.0**-53
    c = np.exp(lc)
    Dc, ec = hockey_stick_remove(lc, sigma, q, with_error=True)
    em1 = np.expm1(lc)
    v = em1 + q
    resolved = v > 64 * u * (np.abs(em1) + q)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = sigma**2 * (np.log(np.where(resolved, v, 1.0)) - math.log(q)) + 0.5
        dx = sigma**2 * (8 * u * (np.abs(em1) + q) / np.where(resolved, v, 1.0) + 8 * u) + 8 * u * np.abs(x)
        z = np.maximum(np.abs(x) - dx, 0.0) / sigma
        lip = np.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))
    s = -special.ndtr(-x / sigma)
    delta = lip * dx + 8 * u * np.abs(s)
    base = Dc - ec - delta * (yb - ya)
    # rounding of the line, plus the computed ĉ = fl(e^{lc}), ŷa, ŷb against the exact points (|s|·u·y each)
    mag = np.abs(Dc) + np.abs(s) * (yb - ya) + 4.0 * np.abs(s) * np.maximum(c, yb)
    va = base + s * (ya - c) - 8.8e-16 * mag
    vb = base + s * (yb - c) - 8.8e-16 * mag
    bad = ~resolved | ~np.isfinite(va) | ~np.isfinite(vb)
    return np.where(bad, -np.inf, va), np.where(bad, -np.inf, vb)

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
    l_c = remove_loss_vec(x_c, sigma, q)
    l_c = np.clip(l_c, l[:-1], l[1:])
    D_c, err_c = hockey_stick_remove(l_c, sigma, q, with_error=True)
    y_c = np.exp(l_c)
    chord_c = D[:-1] + slope * (y_c - y[:-1])
    x_of_c = x_of_remove_loss(l_c, sigma, q)
    d_prime = -np.where(np.isfinite(x_of_c), special.ndtr(-x_of_c / sigma), 1.0)  # D′(ŷ)
    gap = chord_c - D_c + err_c + np.abs(slope - d_prime) * dy * (1 + 1e-12)
    scale = np.maximum(np.abs(D[:-1]), np.abs(D[1:]))
    return np.maximum(gap, 0.0) + 4.4e-16 * (scale + np.abs(slope) * dy)
