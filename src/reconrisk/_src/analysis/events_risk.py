"""An event's own readings for the δ-based risk measures: total variation and the best success over a prior.

:class:`~reconrisk._src.analysis.events.EventAnalysis` answers ``total_variation`` and ``prior_success`` here: its
pessimistic distributions of both directions and its optimistic one, refined by :func:`event_pair` (the loop that
asks :meth:`EventAnalysis.pmf <reconrisk._src.analysis.events.EventAnalysis.pmf>` for each grid), read as curves
(:mod:`reconrisk._src.measures.risk_curves`) by the formulas of :mod:`reconrisk._src.measures.risk`.
"""

from __future__ import annotations

import numpy as np

from ..measures.risk import _dual_upper, _primal_lower
from ..measures.risk_curves import _MaxDelta, _Pmf


def event_pair(analysis, tol: float, width_fn):
    """The curves of an event analysis, refined (halving its grid) until ``width_fn(up, lo) ≤ tol``.

    ``up``: the larger δ of the pessimistic distributions of both directions; ``lo``: the optimistic
    distribution of the remove direction. Stops short (``converged`` False, both ends still certified)
    after the event's halvings or when the next grid would exceed its atom budget (``analysis.can_refine``).
    """
    h = analysis.h
    while True:
        up = _MaxDelta(_Pmf(analysis.pmf(h, pessimistic=True, direction=d)) for d in analysis.directions(True))
        lo = _Pmf(analysis.pmf(h, pessimistic=False, direction="remove"))
        width = float(width_fn(up, lo))
        if width <= tol or not analysis.can_refine(h):
            break
        h /= 2
    return up, lo, {"method": "pld", "discretization": h, "max_width": width, "target_width": tol,
                    "converged": bool(width <= tol)}


def event_total_variation(an, tol: float) -> tuple[float, float, dict]:
    """TV of an event (:meth:`EventAnalysis.total_variation <reconrisk._src.analysis.events.EventAnalysis.total_variation>`):
    δ(0) of its pessimistic and optimistic distributions."""
    zero = np.zeros(1)
    up, lo, det = event_pair(an, tol, lambda u, l: u.delta(zero)[0] - l.delta(zero)[0])
    hi = float(up.delta(zero)[0])
    return min(float(lo.delta(zero)[0]), hi), hi, det


def event_prior_success(an, vals: np.ndarray, counts: np.ndarray, tol: float):
    """(lower, upper, log λ, details) of S(π) for an event: the dual and primal on its two distributions."""
    def width(pu, pl):
        return _dual_upper(pu, vals, counts)[0] - _primal_lower(pl, vals, counts)

    cu, cl, det = event_pair(an, tol, width)
    up, u = _dual_upper(cu, vals, counts)
    return _primal_lower(cl, vals, counts), up, u, det
