"""How the PLD bracket of :mod:`reconrisk._src.measures.rero` chooses its loss grids and tilts.

Grid choice only: every function here decides *where* the engine looks (the first grid, the refinement
factor, which κ share a tilted composition, when to stop for lack of atoms), never whether an end is
certified — both ends of the bracket are certified on any grid.
"""

from __future__ import annotations

import math

import numpy as np

from ..accounting import pld as _pld
from ..accounting import pld_tilt as _pld_tilt
from ..release import Release

#: Coarsest loss discretisation tried by the PLD bracket.
H_START = 1e-3
#: Refinement stops when h falls below this fraction of a step's loss spread.
H_FINEST_REL = 1e-5
#: Refinement stops before a step's loss grid would exceed this many atoms.
MAX_REFINED_ATOMS = 2_000_000
#: Default target of the PLD bracket: relative width (upper − lower)/upper.
DEFAULT_REL_TOL = 0.01


def _loss_spread(sigma: float, q: float) -> float:
    """Standard deviation scale of one step's privacy loss: ≈ min(1/σ, q·√(e^{1/σ²} − 1)).

    (For q = 1 the loss is N(1/(2σ²), 1/σ²); for small q it is ≈ q(e^{Z} − 1)
    with Z the Gaussian loss.) Used only to choose grids, never for soundness.
    """
    inv = 1.0 / sigma if sigma > 1e-150 else 1e150
    small_q = q * math.sqrt(math.expm1(min(inv * inv, 700.0)))
    return max(min(inv, small_q), 1e-300)


def start_discretization(release: Release) -> float:
    """First loss grid: min(1e-3, 0.05/√T, spread/4) (the error grows like T·h²; a step's loss
    spread, which is ≈ q/σ for large σ, must span several cells)."""
    spread = min(_loss_spread(s.noise_multiplier, s.sample_rate) for s in release.segments)
    return min(H_START, 0.05 / math.sqrt(release.steps), spread / 4)


def first_discretization(release: Release) -> float:
    """First grid of the refinement: min(1e-3, spread/16) — a step's loss spread must span several
    cells for the connect-the-dots error to be in its h² regime; the refinement predicts the rest.
    (spread/16 meets 1 % in one round at every item-4 setting of ``benchmarks/bench_rero.py``;
    spread/8 needed two rounds at three of them, 30 % more time in all.)"""
    spread = min(_loss_spread(s.noise_multiplier, s.sample_rate) for s in release.segments)
    return min(H_START, spread / 16)


def _loss_spread_min(release: Release) -> float:
    return min(_loss_spread(s.noise_multiplier, s.sample_rate) for s in release.segments)


def _atoms_per_step(release: Release, h: float) -> float:
    worst = 0.0
    for s in release.segments:
        lo, hi, _, _ = _pld.loss_range(s.noise_multiplier, s.sample_rate, "remove")
        worst = max(worst, (min(hi, _pld.MAX_LOSS) - lo) / h)
    return worst


#: Largest factor by which a tilted group's grid exceeds the untilted one (see :func:`_tilt_grid_factor`).
TILT_GRID_MAX = 4.0


def _tilt_grid_factor(segments, theta: float) -> float:
    """How much coarser a θ-tilted group's grid may be: the tilted per-step loss spread over the untilted
    one (at most ``TILT_GRID_MAX``). A tiny-κ threshold sits in the tail, where the tilted steps spread
    far wider than the untilted bulk (σ 0.3, q 1e-6: 0.37 against 2.6e-4), and the h² discretisation
    error scales with the spread the tail sees. Kept small (4): both discretisations still need several
    cells across the untilted bulk — the optimistic one loses the tail, the pessimistic one's relative
    rounding bound degrades, on a grid coarser than the bulk's spread. Grid choice only; the refinement
    scales both grids."""
    worst = math.inf
    for s in segments:
        _, k1, k2 = _pld_tilt.step_moments([type(s)(s.noise_multiplier, s.sample_rate, 1)], np.array([theta]))
        worst = min(worst, math.sqrt(float(k2[0])) / _loss_spread(s.noise_multiplier, s.sample_rate))
    return float(min(max(worst, 1.0), TILT_GRID_MAX))


#: κ whose tilt lies within this many tilted standard deviations (of the composed loss) of a group's
#: leader share its composition: the round-off then grows by at most about e^{TILT_GROUP_SD²/2}.
TILT_GROUP_SD = 5.0


def _tilt_tail(segments, k, rel_tol) -> float:
    """Each tilted step's truncated Gaussian tail: at most 1e-3·rel_tol·κ/T (≥ 1e-40), so the +∞ atom stays
    far below the target width."""
    steps = sum(s.steps for s in segments)
    return min(_pld.STEP_TAIL, max(1e-3 * rel_tol * float(np.min(k)) / steps, 1e-40))


def _tilt_groups(segments, kappa, need: np.ndarray, h: float, rel_tol: float = DEFAULT_REL_TOL) -> np.ndarray:
    """Tilts for the κ flagged in ``need`` (others 0): the leader's θ(κ) for each group of κ whose
    θ(κ) lies within TILT_GROUP_SD tilted spreads below it. Grid choice only."""
    thetas = np.zeros(kappa.size)
    idx = np.flatnonzero(need)
    if idx.size == 0:
        return thetas
    th, sd = _pld_tilt.tilt_for_kappa(segments, kappa[idx], h, tail_mass=_tilt_tail(segments, kappa[idx], rel_tol))
    order = list(np.argsort(-th))
    while order:
        lead = order[0]
        if th[lead] <= 1e-3:
            break
        width = TILT_GROUP_SD / max(float(sd[lead]), 1e-300)
        members = [i for i in order if th[i] >= th[lead] - width]
        thetas[idx[members]] = th[lead]
        order = [i for i in order if i not in members]
    return thetas


def _refinement_factor(upper, lower, rel_tol, tol) -> float:
    """Next grid as a fraction of this one: both ends err like h² (connect-the-dots on both sides),
    so h·√(target/width) with a safety factor 0.7, snapped to 1/2 or 1/4 (pre-asymptotic grids can
    be far off the h² law). Grid choice only: never affects soundness."""
    w = upper - lower
    target = rel_tol * upper
    if tol is not None:
        target = np.maximum(target, tol)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(np.nanmin(np.where(w > 0, target / w, np.inf)))
    # snapped to the ladder h₀·2⁻ᵏ (1/2 or 1/4), so that questions asked of one release share grids
    return 0.5 if 0.7 * math.sqrt(max(ratio, 0.0)) >= 0.35 else 0.25
