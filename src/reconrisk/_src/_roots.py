"""A bracketing root finder for monotone functions (no scipy.optimize import)."""

from __future__ import annotations

import math
from typing import Callable

from .errors import ReconRiskError


def bisect_log(
    pred: Callable[[float], bool],
    lo: float,
    hi: float,
    *,
    rel_tol: float = 1e-4,
    max_expand: int = 60,
    name: str = "value",
) -> tuple[float, float]:
    """Smallest x > 0 with ``pred(x)`` true, for ``pred`` monotone (false … false true … true).

    Works on log x. Returns ``(lo, hi)`` with ``pred(hi)`` true, ``pred(lo)``
    false (or ``lo`` the lower limit searched) and ``hi/lo − 1 ≤ rel_tol``.
    """
    for _ in range(max_expand):
        if pred(hi):
            break
        lo, hi = hi, hi * 4
    else:
        raise ReconRiskError(f"no {name} up to {hi:g} satisfies the target")
    for _ in range(max_expand):
        if not pred(lo):
            break
        hi, lo = lo, lo / 4
    else:
        return lo, lo
    return bisect_between(pred, lo, hi, rel_tol=rel_tol)


def bisect_between(pred: Callable[[float], bool], lo: float, hi: float, *, rel_tol: float) -> tuple[float, float]:
    """Narrow ``(lo, hi)`` — ``pred(lo)`` false, ``pred(hi)`` true, ``pred`` monotone — by bisection in log x
    until ``hi/lo − 1 ≤ rel_tol``; every returned end is a point where ``pred`` was evaluated (or given)."""
    while hi / lo - 1 > rel_tol:
        mid = math.sqrt(lo * hi)
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def strict_up(x: float, ok: Callable[[float], bool]) -> float:
    """Step ``x`` up until ``ok(x)`` holds exactly in floating point (``ok`` monotone; ``x`` the exact answer)."""
    for step in range(200):
        if ok(x):
            return x
        x = math.nextafter(x, math.inf) if step < 8 else x * (1 + 1e-9 * 2 ** min(step - 8, 40))
    raise ReconRiskError(f"could not meet the target in floating point near {x:g}")  # pragma: no cover
