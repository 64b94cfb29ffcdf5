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
step's own rounding is measured a posteriori too (:func:`reconrisk._src.accounting.pld_optimistic._vertex_polygon_excess`).

Departure from this module's first construction of the optimistic step: it
no longer lowers every grid value by its neighbouring chord gaps alone; next
to a (nearly) linear stretch of D it uses secant or tangent lines so that no deficit is spread by the convex hull (:func:`_lowered_values`).
That was the dominant error of long runs.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..errors import PLDRangeError, ReconRiskError
from .pld_optimistic import TAIL_ZERO, optimistic_ctd
from .pld_rounding import pessimistic_scale
from .pld_step import MAX_LOSS, STEP_TAIL, cell_masses, loss_range, x_of_remove_loss  # noqa: F401  (loss_range re-exported)
from .pmf import PMF, UNIT, WindowTooLarge  # noqa: F401  (PMF re-exported)

#: Largest per-step grid.
MAX_ATOMS = 4_000_000



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
    above the true one (:func:`pessimistic_scale`). Add direction, pessimistic:
    the same argument with P = ν (its cells are ndtr differences in the tail
    they describe too), c = max ν(L > ε)/δ_add(ε), charged relatively up to
    where δ_add(ε) → 0 at −log(1 − q) and absolutely beyond
    (``pessimistic_scale(..., "add")``). Optimistic: see
    :func:`optimistic_ctd` (scaled *down* by its measured relative excess).
    """
    if not (0.0 < tail_mass <= STEP_TAIL):
        raise ReconRiskError(f"tail_mass must be in (0, {STEP_TAIL:g}]; found {tail_mass!r}")
    if direction == "symmetric":
        return symmetrised(step_pmf(sigma, q, h, pessimistic=pessimistic, direction="remove", tail_mass=tail_mass))
    lam_lo, lam_hi, p_below, p_above = loss_range(sigma, q, direction, tail_mass)
    if direction == "add" and lam_lo == -MAX_LOSS:
        # P-mass with loss below −MAX_LOSS is rounded up onto the first atom (pessimistic)
        p_below = float(special.ndtr(-x_of_remove_loss(np.array([MAX_LOSS]), sigma, q)[0] / sigma))
    extra_inf = 0.0
    if lam_hi > MAX_LOSS:
        # losses above MAX_LOSS are treated as infinite (pessimistic) / dropped (optimistic)
        bnd = np.array([MAX_LOSS, lam_hi + 1.0])
        P_hi, _ = cell_masses(bnd, sigma, q, direction)
        extra_inf = float(P_hi[0])
        lam_hi = MAX_LOSS
    if (lam_hi - lam_lo) / h > MAX_ATOMS:
        h_min = (lam_hi - lam_lo) / MAX_ATOMS
        raise PLDRangeError(
            f"value_discretization must be >= {h_min:.3g} for noise_multiplier={sigma:g}, "
            f"sample_rate={q:g} (the per-step loss range is {lam_hi - lam_lo:.3g}); found {h:g}"
        )
    if pessimistic:
        k0 = math.floor(lam_lo / h)
        k1 = max(math.ceil(lam_hi / h), k0 + 1)
        grid = np.arange(k0, k1 + 1) * h
        P, Q = cell_masses(grid, sigma, q, direction)
        # split each cell onto its end atoms preserving both masses
        lower = (np.exp(grid[1:]) * Q - P) / math.expm1(h)
        lower = np.clip(lower, 0.0, P)
        probs = np.zeros(grid.size)
        probs[:-1] += lower
        probs[1:] += P - lower
        probs[0] += p_below  # lower tail rounded up to the first atom
        inf_mass = min(1.0, p_above + extra_inf)
        slack = 0.0
        scale, slack = pessimistic_scale(grid, sigma, q, direction)
        probs = probs * scale
        return PMF(h, k0, probs, inf_mass, True, slack)
    return optimistic_ctd(sigma, q, h, lam_lo, lam_hi, direction, zero_below=min(TAIL_ZERO, tail_mass * 1e-2))

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
