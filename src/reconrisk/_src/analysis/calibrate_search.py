"""The search of the one calibrator (:func:`reconrisk._src.analysis.calibrate.calibrate`): the smallest x > 0 at
which a monotone certified predicate holds, bracketed to a relative tolerance, every answer a point where the
predicate was evaluated and held. Plain functions of a predicate (and a score that guides it); no analysis here.
"""

from __future__ import annotations

import math
from typing import Callable

from .._roots import bisect_between
from ..errors import ReconRiskError

__all__ = ["smallest"]


def _smallest(ok: Callable[[float], bool], start: float, rel_tol: float, low: float, high: float, name: str,
              none_msg: str | None = None, score: Callable[[float], float] | None = None) -> tuple[float, float]:
    """(lo, hi) with ``ok(hi)`` true, ``ok(lo)`` false and hi/lo − 1 ≤ rel_tol, for ``ok`` monotone in x > 0.

    Without ``score``: widens geometrically from ``start`` (factor 1.05, doubling its exponent each time),
    then bisects in log x. With ``score`` (a number that is ≤ 0 where ``ok`` holds and roughly linear in
    log x near the answer — the log of the certified bound over the target), the same bracket is found by
    interpolation on (log x, score) with a certified evaluation at every point: secant extrapolation to a
    bracket, one secant point inside it, then, with three points known (inverse quadratic interpolation), the
    two points 0.45·rel_tol either side of the estimated root, which close the bracket in one step when the
    estimate is that accurate (bisection after eight rounds, should the score misbehave). Only ``ok``
    decides the bracket, so ``hi`` is a point where the predicate was evaluated and held; the score only
    chooses where to look (4–5 evaluations where bisection took ~8).
    """
    x = min(max(start, low), high)
    if score is None:
        return _smallest_bisect(ok, x, rel_tol, low, high, name, none_msg)
    tol_u = math.log1p(rel_tol)
    lu, hu = math.log(low), math.log(high)

    def test(u: float) -> tuple[float, bool, float, float]:
        """(log x, ok(x), score, x) at x = e^u (``low``/``high`` exactly at the limits)."""
        return test_x(low if u <= lu else high if u >= hu else math.exp(u))

    def test_x(xv: float) -> tuple[float, bool, float, float]:
        good = ok(xv)
        sv = float(score(xv))
        if not math.isfinite(sv):
            sv = -math.inf if good else math.inf
        return math.log(xv), good, sv, xv

    def secant(ua: float, sa: float, ub: float, sb: float) -> float | None:
        if not (math.isfinite(sa) and math.isfinite(sb)) or sa == sb:
            return None
        r = ua - sa * (ub - ua) / (sb - sa)
        return r if math.isfinite(r) else None

    def narrow_enough(lo, hi) -> bool:
        return hi[3] / lo[3] - 1 <= rel_tol

    # 1. a bracket: step from the start towards the answer, extrapolating the secant once two points are known
    cur, prev = test(math.log(x)), None
    pts = [cur]
    mag = math.log(1.05)
    while prev is None or prev[1] == cur[1]:
        down = cur[1]
        r = secant(prev[0], prev[2], cur[0], cur[2]) if prev is not None else None
        want = None if r is None else r - cur[0]
        if want is not None and want != 0 and (want < 0) == down:
            mag = min(1.2 * abs(want) + tol_u, 4.0 * mag)
        elif prev is not None:
            mag *= 4.0 if prev[2] == cur[2] else 2.0  # (a flat score: the bound is saturated there, stride on)
        u = max(cur[0] - mag, lu) if down else min(cur[0] + mag, hu)
        if (down and cur[3] <= low) or (not down and cur[3] >= high):
            if down:
                raise ReconRiskError(f"every {name} down to {low:g} meets the target")
            raise ReconRiskError(none_msg or f"no {name} up to {high:g} meets the target")
        prev, cur = cur, test(u)
        pts.append(cur)
    lo, hi = (prev, cur) if cur[1] else (cur, prev)
    # 2. narrow it: interpolate the root (inverse quadratic through the three points nearest it, else the
    # secant of the ends); once it is known to a few tolerances, evaluate 0.45·rel_tol either side of it
    rounds = 0
    while not narrow_enough(lo, hi):
        rounds += 1
        w = hi[0] - lo[0]
        r = _root_estimate(pts, lo, hi)
        if rounds > 8:  # (a score that does not behave: plain bisection, which always ends)
            r = None
        if r is None:
            trials = [lo[0] + w / 2]
        elif w <= 16 * tol_u or len(pts) >= 3:
            trials = [r + 0.45 * tol_u, r - 0.45 * tol_u]  # (one beyond an end is skipped: the end serves)
        else:
            trials = [min(max(r, lo[0] + 0.02 * w), hi[0] - 0.02 * w)]
        for u in trials:
            if narrow_enough(lo, hi) or not lo[0] < u < hi[0]:
                continue
            t = test(u)
            if not lo[3] < t[3] < hi[3]:
                t = test_x(math.sqrt(lo[3] * hi[3]))  # (e^u rounded onto an end)
                if not lo[3] < t[3] < hi[3]:
                    return lo[3], hi[3]  # adjacent floats: nothing lies between
            pts.append(t)
            if t[1]:
                hi = t
            else:
                lo = t
    return lo[3], hi[3]


def _root_estimate(pts, lo, hi) -> float | None:
    """Where the score crosses 0 inside (lo, hi), in log x: inverse quadratic interpolation through the three
    evaluated points of smallest |score|, or the secant of the bracket's ends; None if neither lands inside."""
    near = sorted((p for p in pts if math.isfinite(p[2])), key=lambda p: abs(p[2]))
    cand = []
    if len(near) >= 3:
        (u0, _, s0, _), (u1, _, s1, _), (u2, _, s2, _) = near[:3]
        if s0 != s1 and s1 != s2 and s0 != s2:
            cand.append(u0 * s1 * s2 / ((s0 - s1) * (s0 - s2)) + u1 * s0 * s2 / ((s1 - s0) * (s1 - s2))
                        + u2 * s0 * s1 / ((s2 - s0) * (s2 - s1)))
    if math.isfinite(lo[2]) and math.isfinite(hi[2]) and lo[2] != hi[2]:
        cand.append(lo[0] - lo[2] * (hi[0] - lo[0]) / (hi[2] - lo[2]))
    for r in cand:
        if math.isfinite(r) and lo[0] < r < hi[0]:
            return r
    return None


def _smallest_bisect(ok: Callable[[float], bool], x: float, rel_tol: float, low: float, high: float, name: str,
                     none_msg: str | None = None) -> tuple[float, float]:
    step = 1.05
    if ok(x):
        hi = x
        while True:
            lo = max(hi / step, low)
            if lo == hi:
                raise ReconRiskError(f"every {name} down to {low:g} meets the target")
            if not ok(lo):
                break
            hi, step = lo, step * step
    else:
        lo = x
        while True:
            hi = min(lo * step, high)
            if hi == lo:
                raise ReconRiskError(none_msg or f"no {name} up to {high:g} meets the target")
            if ok(hi):
                break
            lo, step = hi, step * step
    return bisect_between(ok, lo, hi, rel_tol=rel_tol)


smallest = _smallest
