"""ε(δ) and δ(ε) of a release below its untilted PLD's floor, from tilted compositions (the question's loop).

The mathematics is :mod:`reconrisk._src.accounting.epsilon_tilt` (why each step is sound, and where it departs
from ``dp_accounting``); here the analysis asks its own cached distributions
(:meth:`~reconrisk._src.analysis.privacy.PrivacyAnalysis.pmf` with ``tilt`` and ``tail_mass``) for them. The RDP
conversion is only a second opinion: both are certified upper ends and the smaller is kept.
"""

from __future__ import annotations

import math

from ..accounting.epsilon import EPSILON_CAP
from ..accounting.epsilon_tilt import (TILT_SLACK_BUDGET, lower_epsilon, rounded_tilt, tilt_for_delta,
                                       tilt_for_epsilon, tiny_tail, upper_epsilon)
from ..errors import ReconRiskError

#: Re-tilt when the ε read lies more than this many tilted standard deviations from the tilted mean.
RETILT_SD = 0.5


def _directions(analysis) -> tuple[str, ...]:
    return ("symmetric",) if analysis.symmetric else ("remove", "add")


def _tilted(analysis, h: float, pessimistic: bool, direction: str, theta: float, tail: float):
    return analysis.pmf(h, pessimistic=pessimistic, direction=direction, loss_cap=EPSILON_CAP,
                        slack_budget=TILT_SLACK_BUDGET, tilt=rounded_tilt(theta), tail_mass=tail)


def tiny_epsilon(analysis, delta: float, h: float, two_sided: bool) -> tuple[float | None, float, dict]:
    """``(lower, upper, details)`` of ε(δ) from tilted compositions on grid ``h``: the upper end the largest over
    the directions of the pessimistic PLD's ε, the lower end (``two_sided``) the remove (or symmetric)
    direction's optimistic ε. Each direction is tilted for itself (:func:`tilt_for_delta`), and re-tilted once
    at the ε it read if that lies more than ``RETILT_SD`` tilted spreads from the tilted mean."""
    segs = getattr(analysis, "tilt_segments", analysis.release.segments)  # grid choice only
    tail = tiny_tail(delta, analysis.release.steps)
    # the pessimistic +∞ atom alone would exceed δ (δ near 1e-300): no upper end here; the lower end from the
    # untilted optimistic composition (as before the tilt: it drops its tails, so it has no floor)
    no_upper = tail * analysis.release.steps >= delta
    if no_upper:
        opt = analysis.pmf(h, pessimistic=False, direction=_directions(analysis)[0], loss_cap=EPSILON_CAP)
        return (lower_epsilon(opt, delta) if two_sided else None), math.inf, {}
    up, thetas, first = 0.0, {}, _directions(analysis)[0]
    for d in _directions(analysis):
        th, mean, sd = tilt_for_delta(segs, delta, d, tail)
        e = upper_epsilon(_tilted(analysis, h, True, d, th, tail), delta)
        # re-tilting only tightens; a direction already below the other's upper end cannot raise the maximum
        if math.isfinite(e) and e > up and abs(e - mean) > RETILT_SD * max(sd, h):
            th, mean, sd, _ = tilt_for_epsilon(segs, e, d, tail)
            e = min(e, upper_epsilon(_tilted(analysis, h, True, d, th, tail), delta))
        thetas[d] = rounded_tilt(th)
        up = max(up, e)
    lo = None
    if two_sided:
        th = thetas[first] if first in thetas and math.isfinite(up) else tilt_for_delta(segs, delta, first, tail)[0]
        try:
            lo = min(lower_epsilon(_tilted(analysis, h, False, first, th, tail), delta), up)
        except ReconRiskError:
            lo = 0.0  # no optimistic composition at this tilt: the trivial lower end
    return lo, up, {"tilt": thetas, "tail_mass": tail}


def tiny_delta(analysis, eps: float, h: float, two_sided: bool) -> tuple[float | None, float, dict]:
    """``(lower, upper, details)`` of δ(ε) from compositions tilted so that their mean is ε
    (:func:`tilt_for_epsilon`); the per-step tail is ≤ 1e-3·(1e-4 × the Chernoff bound on P(L ≥ ε))/T (the size
    of δ(ε) is within a few orders of it), at least 1e-300."""
    segs = getattr(analysis, "tilt_segments", analysis.release.segments)  # grid choice only
    up, lo, thetas = 0.0, None, {}
    log_c = tilt_for_epsilon(segs, eps, _directions(analysis)[0], tiny_tail(1e-24, analysis.release.steps))[3]
    tail = tiny_tail(1e-4 * math.exp(max(log_c, -700.0)), analysis.release.steps)
    for d in _directions(analysis):
        th = tilt_for_epsilon(segs, eps, d, tail)[0]
        thetas[d] = rounded_tilt(th)
        up = max(up, float(_tilted(analysis, h, True, d, th, tail).delta([eps])[0]))
    if two_sided:
        d = _directions(analysis)[0]
        lo = min(up, float(_tilted(analysis, h, False, d, thetas[d], tail).delta([eps])[0]))
    return lo, up, {"tilt": thetas, "tail_mass": tail}
