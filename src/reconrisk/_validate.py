"""Boundary checks shared by every public function.

Each helper returns the validated, converted value or raises
:class:`~reconrisk.errors.ReconRiskError` naming the parameter, the value
found and the valid range.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .errors import ReconRiskError


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def real(name: str, value: Any) -> float:
    """A finite real number (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        try:
            if isinstance(value, str) or value is None:
                raise TypeError
            value = float(value)
        except (TypeError, ValueError):
            raise ReconRiskError(f"{name} must be a real number; found {_fmt(value)}") from None
    value = float(value)
    if math.isnan(value):
        raise ReconRiskError(f"{name} must be a number, not NaN; found nan")
    return value


def positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    v = real(name, value)
    if not v > 0 or (math.isinf(v) and not allow_inf):
        raise ReconRiskError(f"{name} must be > 0{'' if allow_inf else ' and finite'}; found {_fmt(value)}")
    return v


def in_range(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool = True,
    high_open: bool = True,
) -> float:
    """A real number in an interval; ``(0, 1]`` is ``low_open=True, high_open=False``."""
    v = real(name, value)
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (ok_low and ok_high):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ReconRiskError(f"{name} must be in {interval}; found {_fmt(value)}")
    return v


def probability_open(name: str, value: Any) -> float:
    """A number in the open interval (0, 1)."""
    return in_range(name, value, 0.0, 1.0)


def sample_rate(name: str, value: Any) -> float:
    return in_range(name, value, 0.0, 1.0, high_open=False)


def integer(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer >= minimum (integral floats such as 100.0 are accepted)."""
    if isinstance(value, bool):
        raise ReconRiskError(f"{name} must be an integer >= {minimum}; found {_fmt(value)}")
    if isinstance(value, (numbers.Integral, np.integer)):
        v = int(value)
    else:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ReconRiskError(f"{name} must be an integer >= {minimum}; found {_fmt(value)}") from None
        if not math.isfinite(f) or f != int(f):
            raise ReconRiskError(f"{name} must be an integer >= {minimum}; found {_fmt(value)}")
        v = int(f)
    if v < minimum or (maximum is not None and v > maximum):
        rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ReconRiskError(f"{name} must be an integer {rng}; found {_fmt(value)}")
    return v


def choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ReconRiskError(f"{name} must be one of {', '.join(map(repr, options))}; found {_fmt(value)}")
    return value


def kappa_array(name: str, value: Any) -> tuple[np.ndarray, bool]:
    """Baseline probabilities in (0, 1); returns (1-d array, was_scalar)."""
    arr = np.asarray(value, dtype=float) if not isinstance(value, str) else None
    if arr is None or arr.dtype.kind not in "fiu":
        raise ReconRiskError(f"{name} must be a number or array of numbers in (0, 1); found {_fmt(value)}")
    scalar = arr.ndim == 0
    flat = np.atleast_1d(arr).astype(float).ravel()
    if flat.size == 0:
        raise ReconRiskError(f"{name} must not be empty")
    bad = ~((flat > 0) & (flat < 1))
    if bad.any():
        raise ReconRiskError(f"{name} must be in (0, 1); found {_fmt(flat[bad][0])}")
    return flat, scalar


def positive_array(name: str, value: Any, *, allow_zero: bool = False, allow_inf: bool = False) -> tuple[np.ndarray, bool]:
    """A number or array of numbers > 0 (``>= 0`` with ``allow_zero``; ``inf`` only with ``allow_inf``).

    Returns ``(array, was_scalar)`` so element-wise functions can hand back a
    float for a scalar input.
    """
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise ReconRiskError(f"{name} must be a number or an array of numbers; found {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name} must be a number or an array of numbers; found {value!r}") from None
    if arr.size == 0:
        raise ReconRiskError(f"{name} must not be empty")
    if np.isnan(arr).any():
        raise ReconRiskError(f"{name} must not contain NaN; found nan")
    bad = (arr < 0) if allow_zero else (arr <= 0)
    if not allow_inf:
        bad = bad | np.isinf(arr)
    if bad.any():
        rel = ">= 0" if allow_zero else "> 0"
        fin = "" if allow_inf else " and finite"
        raise ReconRiskError(f"{name} must be {rel}{fin}; found {float(arr[bad].ravel()[0])}")
    return arr, arr.ndim == 0
