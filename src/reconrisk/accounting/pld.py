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

Notation (Hayes, Mahloujifar & Balle 2023, Cor. 4 and spec_000 §1.7). Per step, the pair is

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
against an extended-precision (long double) composition. The optimistic
step's own rounding is measured a posteriori too (:func:`_vertex_polygon_excess`).

Departure from this module's first construction of the optimistic step: it
no longer lowers every grid value by its neighbouring chord gaps alone; next
to a (nearly) linear stretch of D it uses secant or tangent lines so that no deficit is spread by the convex hull (:func:`_lowered_values`).
That was the dominant error of long runs.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..errors import ReconRiskError
from .hull import _lower_hull, _monotone_chain  # noqa: F401  (re-exported for the tests)
from .pmf import PMF, UNIT, WindowTooLarge

#: Per-step tail mass left out of the discretised support (put in the
#: infinity atom when pessimistic, dropped when optimistic).
STEP_TAIL = 1e-18
#: Largest loss represented on the grid; beyond that mass is "infinite".
MAX_LOSS = 600.0
#: Optimistic curve values below this are set to 0 (each step loses at most this much; it keeps
#: the convex hull linear-time in the far tail).
TAIL_ZERO = 1e-20
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


def _loss_range(sigma: float, q: float, direction: str, tail: float = STEP_TAIL) -> tuple[float, float, float, float]:
    """Truncated loss range [lo, hi] of one step and the P-mass below lo and above hi."""
    z = float(-special.ndtri(tail))  # one-sided Gaussian quantile of the tail
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


def step_pmf(sigma: float, q: float, h: float, *, pessimistic: bool = True, direction: str = "remove",
             tail_mass: float = STEP_TAIL) -> PMF:
    """The discretised PLD of one Poisson-subsampled Gaussian step.

    ``direction``: ``"remove"``, ``"add"`` or ``"symmetric"`` — the PLD of the symmetrised
    trade-off curve C_q = min{f_q, f_q⁻¹}** (Dong, Roth & Su 2022, Thm 4.2), built from the
    remove PLD by :func:`symmetrised` (what sampling without replacement under replace-one
    neighbours needs; see there).

    Sensitivity is normalised to 1 and the noise standard deviation is the
    noise multiplier σ (Hayes, Mahloujifar & Balle 2023, Cor. 4: the bound does not depend on C).
    ``tail_mass``: the Gaussian tail left out of the grid on each side (to +∞
    or the first atom when pessimistic, dropped when optimistic); a caller
    reading tiny tails (κ ≈ 1e-12 over 1e5 steps) asks for less than the
    default ``STEP_TAIL``.

    Rounding, relative to the tail (what a tilted composition needs). Remove
    direction, pessimistic: the cell masses are differences of ``ndtr`` values
    (each with relative error α ≤ 4u), so their suffix sums, and the split of
    a cell onto its end atoms (which moves at most 2αP/h over a distance h),
    put δ(ε) within 8α·μ(L > ε) ≤ 32u·c·δ(ε), c = max μ(L > ε)/δ(ε) over the
    grid; the atoms are scaled *up* by that factor, which keeps the δ-curve
    above the true one (:func:`_pessimistic_scale`). Optimistic: see
    :func:`_optimistic_ctd` (scaled *down* by its measured relative excess).
    """
    if not (0.0 < tail_mass <= STEP_TAIL):
        raise ReconRiskError(f"tail_mass must be in (0, {STEP_TAIL:g}]; found {tail_mass!r}")
    if direction == "symmetric":
        return symmetrised(step_pmf(sigma, q, h, pessimistic=pessimistic, direction="remove", tail_mass=tail_mass))
    lam_lo, lam_hi, p_below, p_above = _loss_range(sigma, q, direction, tail_mass)
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
        slack = 0.0
        if direction == "remove":
            from .pld_tilt import _pessimistic_scale

            scale, slack = _pessimistic_scale(grid, sigma, q)
            probs = probs * scale
        return PMF(h, k0, probs, inf_mass, True, slack)
    return _optimistic_ctd(sigma, q, h, lam_lo, lam_hi, direction, zero_below=min(TAIL_ZERO, tail_mass * 1e-2))


def symmetrised(pmf: PMF) -> PMF:
    """The PLD of the symmetrised curve C = min{f, f⁻¹}** of a remove-direction step PLD ``pmf``.

    Construction. Let ω be the μ-masses of the remove PLD (μ the mixture with the target, ν
    without it, f = T(ν, μ) its trade-off curve) and m its mass at +∞. The new distribution S
    keeps ω's atoms at losses l > 0 (and m), puts their mirror images e^{−l}·ω(l) at −l, and
    the rest, S(0) = 1 − m − Σ_{l>0} (1 + e^{−l})·ω(l), at 0. Its ν-masses e^{−l}S(l) are the
    μ-masses mirrored, so S is the PLD of a *symmetric* pair (P, P∘(−1)) — the standard
    symmetrisation of a privacy-loss distribution.

    Why its trade-off curve is C (every ε, not only ε ≥ 0):

    1. ε ≥ 0: only atoms above ε enter δ_S(ε) = E_S[(1 − e^{ε−L})₊], and these are ω's, so
       δ_S(ε) = δ_ω(ε), the remove direction's hockey-stick divergence.
    2. ε < 0: with the S(0) above, a direct sum gives δ_S(ε) = 1 − e^ε + e^ε·δ_ω(−ε) — the
       identity δ_{P‖Q}(ε) = 1 − e^ε + e^ε·δ_{Q‖P}(−ε) of a pair, for a symmetric one.
    3. C: the convex conjugate of a pointwise minimum is the maximum of the conjugates, so
       δ_C(ε) = max{δ_f(ε), δ_{f⁻¹}(ε)} (δ_g(ε) = 1 + g*(−e^ε)). For f = q·G_μ + (1 − q)·Id
       (f_q of a symmetric base curve) Dong, Roth & Su 2022 (Prop. in §4.2, the explicit form
       of C_q) give C = f on [0, x*], a segment of slope −1, f⁻¹ beyond, with x* the fixed
       point of G_μ, where f′(x*) = −1; so for ε ≥ 0 (slopes ≤ −1) the supremum defining
       δ_C(ε) is attained on [0, x*], δ_C(ε) = δ_f(ε) = δ_ω(ε) = δ_S(ε). C is symmetric, so
       for ε < 0 it obeys the identity of 2. as well: δ_C = δ_S everywhere, and equal
       hockey-stick curves are equal trade-off curves. (S(0) = f(x*) − x* ≥ 0 exactly.)

    Discretisations. The identities 1.–2. hold for *any* atoms ω (formally), so the order of
    two remove PLDs on ε ≥ 0 carries over to their symmetrisations on all of ε: the
    symmetrisation of a pessimistic PLD is pessimistic for C, of an optimistic one optimistic.
    Only what ω holds at l ≤ 0 is discarded. Rounding: pessimistic — the mirrored atoms are
    rounded up by 4u (relative; larger masses only raise δ) and S(0) is raised by the
    summation's error bound (and to 0 if the discretisation made it negative, which raises δ
    too); optimistic — mirrored atoms rounded down, S(0) lowered, and if S(0) would be
    negative every atom (and m) is scaled by c < 1 so that S(0) = 0 (δ_{cω} = c·δ_ω ≤ δ_ω
    on ε ≥ 0). ``slack`` (an ℓ₁ error bound of ω's atoms) becomes 4× itself: the kept, the
    mirrored and (twice) the zero atom. Tilted PMFs are symmetrised before tilting only.
    """
    if not pmf.plain:
        raise ReconRiskError("symmetrised() takes an untilted PMF (tilt it afterwards)")
    u = UNIT
    k = pmf.offset + np.arange(pmf.probs.size)
    pos = k >= 1
    kp = k[pos]
    wp = pmf.probs[pos].astype(float)
    m = float(pmf.infinity_mass)
    if kp.size == 0:  # no positive loss: μ ≤ ν everywhere, i.e. μ = ν (up to the tails)
        kmax = 0
        mirror = np.zeros(0)
    else:
        kmax = int(kp[-1])
        mirror = wp * np.exp(-kp * pmf.h)
    n = 2 * kp.size + 1
    total = m + float(np.sum(wp)) + float(np.sum(mirror))
    err = (math.log2(n) + 6) * u * (1.0 + total)  # pairwise summation and the products' rounding
    zero = 1.0 - total
    slack = 4.0 * pmf.slack
    if pmf.pessimistic:
        mirror = mirror * (1 + 4 * u)
        zero = max(zero + err, 0.0)
    else:
        mirror = mirror * (1 - 4 * u)
        zero -= err
        if zero < 0.0:
            c = (1.0 - 2 * u) / (total + err)
            wp, mirror, m, zero = wp * c, mirror * c, m * c, 0.0
    probs = np.zeros(2 * kmax + 1)
    if kp.size:
        probs[kmax + kp] = wp
        probs[kmax - kp] = mirror
    probs[kmax] = zero
    return PMF(pmf.h, -kmax, probs, m, pmf.pessimistic, slack)


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


def _optimistic_ctd(sigma: float, q: float, h: float, lam_lo: float, lam_hi: float, direction: str,
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
    D, D_err = _hockey_stick_remove(l, sigma, q, with_error=True)
    gap = _chord_gaps(l, D, sigma, q)
    # the interval [0, y_0]: ν-mass below l_0 (zero when q < 1 since losses are >= log(1-q))
    x0 = _x_of_remove_loss(l[:1], sigma, q)[0]
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
    from .pld_tilt import _relative_excess

    rel = _relative_excess(y, val, keep, pts, l, D, D_err, probs, sigma, q)
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
    """Step 1 of :func:`_optimistic_ctd`: grid values v_i whose polygon lies below D.

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
    Dc, ec = _hockey_stick_remove(lc, sigma, q, with_error=True)
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


def compose_segments(
    segments, h: float, *, pessimistic: bool, direction: str = "remove", loss_cap: float = math.inf,
    slack_budget: float = 0.0, tilt: float = 0.0, tail_mass: float | None = None, coarsen: bool = True,
) -> PMF:
    """PMF of a whole (possibly heterogeneous) schedule of (σ, q, steps) segments.

    ``loss_cap`` bounds the represented losses and ``slack_budget`` the round-off
    allowance a caller can afford without extra work (see :meth:`PMF.self_compose`).
    ``tilt`` θ ≥ 0 composes the exponentially tilted PMFs (:meth:`PMF.tilted`), so the
    round-off allowance is relative to the tail near the tilted mean (choose θ with
    :func:`tilt_for_kappa`); ``tail_mass`` is each step's truncated Gaussian tail (default
    ``STEP_TAIL``). When a composed window would not fit the memory target the grid is
    coarsened (h doubled until it fits; ``coarsen=False`` raises instead): a coarser
    pessimistic or optimistic discretisation is still a valid bound, only a wider one. The
    grid used is the result's ``h``.
    """
    tail = STEP_TAIL if tail_mass is None else float(tail_mass)
    for _ in range(64):
        try:
            return _compose_once(segments, h, pessimistic, direction, loss_cap, slack_budget, tilt, tail)
        except WindowTooLarge:
            if not coarsen:
                raise
            h *= 2.0
    raise ReconRiskError("internal: no grid fits the composition window")  # pragma: no cover


def _compose_once(segments, h, pessimistic, direction, loss_cap, slack_budget, tilt, tail) -> PMF:
    total: PMF | None = None
    budget = slack_budget / max(len(segments), 1)
    for seg in segments:
        pmf = step_pmf(seg.noise_multiplier, seg.sample_rate, h, pessimistic=pessimistic, direction=direction,
                       tail_mass=tail).tilted(tilt)
        pmf = pmf.self_compose(seg.steps, loss_cap, budget)
        total = pmf if total is None else total.compose(pmf, loss_cap)
    assert total is not None
    return total


def tilt_for_kappa(segments, kappa, h: float | None = None, tail_mass: float = STEP_TAIL):
    """See :func:`reconrisk.accounting.pld_tilt.tilt_for_kappa` (the tilt θ(κ) for :func:`compose_segments`)."""
    from .pld_tilt import tilt_for_kappa as _impl

    return _impl(segments, kappa, h, tail_mass)
