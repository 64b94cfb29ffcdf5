"""Boundary checks shared by every public function and every command.

Each helper returns the validated, converted value or raises
:class:`~reconrisk.errors.ReconRiskError` naming the parameter, the value
found and the valid range. The rules:

* a *real* is a finite Python/numpy real number (``int``, ``float``,
  ``np.integer``, ``np.floating``, a 0-d real array); ``bool``/``np.bool_``,
  strings, ``None``, complex numbers and containers are refused. Python ints
  of any size are handled: one too large for a float (``10**400``) is refused
  as "too large", never an ``OverflowError``;
* an *integer* is an ``int``/``np.integer`` or a float with no fractional
  part (``100.0``); strings, bools and fractional floats are refused; any
  size is compared exactly (no float round-trip);
* a *seed* is any non-negative integer; :func:`seed_words` and
  :func:`jax_seed` map it deterministically into what numpy and JAX accept;
* resource guards (:func:`max_count`, :func:`memory`) refuse a request
  before anything is allocated, naming the flag the user gave.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

from .errors import ReconRiskError

#: Largest array, in bytes, a single request may allocate (a quarter of the
#: machine's memory when it can be read, else 4 GiB).
def _default_memory_cap() -> int:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return int(pages * size // 4)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        pass
    return 4 * 2**30  # pragma: no cover


MEMORY_CAP = _default_memory_cap()
#: Largest number of DP-SGD steps any accountant or simulator accepts.
MAX_STEPS = 10**9
#: Largest ε any inverse accountant accepts: e^250 ≈ 1e108, no privacy meaning
#: is left, and the PLD accountant reports larger ε as inf.
MAX_EPSILON = 250.0
#: Noise multipliers accepted by the accountants and bounds. Below 1e-12 every
#: bound is already its noiseless value, above 1e8 it equals κ (ε = 0), to
#: double precision; outside, σ² and 1/σ² overflow or underflow.
MIN_NOISE, MAX_NOISE = 1e-12, 1e8


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return repr(value[:60] + ("…" if len(value) > 60 else ""))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**16:
        digits = len(str(abs(value)))
        return f"{'-' if value < 0 else ''}an integer of {digits} digits"
    try:
        text = str(value)
    except Exception:  # pragma: no cover - hostile __str__
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _numeric_0d(value: np.ndarray) -> Any:
    """The scalar inside a 0-d integer or real array; None for any other array."""
    if value.ndim != 0 or value.dtype.kind not in "fiu":
        return None
    return value[()]


def _real_or_none(value: Any) -> float | None:
    """float(value) for a genuine real number, None for anything else (bools, str, complex, …)."""
    if _is_bool(value) or isinstance(value, (str, bytes, complex, np.complexfloating)) or value is None:
        return None
    if isinstance(value, np.ndarray):
        value = _numeric_0d(value)
        if value is None:
            return None
    if isinstance(value, (numbers.Integral, np.integer)):
        try:
            return float(int(value))
        except OverflowError:
            return math.inf if int(value) > 0 else -math.inf
    if isinstance(value, (numbers.Real, np.floating)):
        return float(value)
    return None


def real(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number, finite unless ``allow_inf`` (bools, strings, complex and NaN refused)."""
    f = _real_or_none(value)
    if f is None:
        raise ReconRiskError(f"{name} must be a real number; found {_fmt(value)} ({type(value).__name__})")
    if math.isnan(f):
        raise ReconRiskError(f"{name} must be a number, not NaN; found nan")
    if math.isinf(f) and not allow_inf:
        if isinstance(value, (numbers.Integral, np.integer)) and not _is_bool(value):
            raise ReconRiskError(f"{name} is too large; found {_fmt(value)}")
        raise ReconRiskError(f"{name} must be finite; found {_fmt(value)}")
    return f


def positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number > 0 (finite unless ``allow_inf``)."""
    v = real(name, value, allow_inf=True)
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
    v = real(name, value, allow_inf=True)
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (ok_low and ok_high) or (math.isinf(v) and not (math.isinf(low) or math.isinf(high))):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ReconRiskError(f"{name} must be in {interval}; found {_fmt(value)}")
    return v


def probability_open(name: str, value: Any) -> float:
    """A number in the open interval (0, 1)."""
    return in_range(name, value, 0.0, 1.0)


def sample_rate(name: str, value: Any) -> float:
    return in_range(name, value, 0.0, 1.0, high_open=False)


def _int_or_none(value: Any) -> int | None:
    if _is_bool(value) or isinstance(value, (str, bytes)) or value is None:
        return None
    if isinstance(value, np.ndarray):
        value = _numeric_0d(value)
        if value is None:
            return None
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    f = _real_or_none(value)
    if f is None or not math.isfinite(f) or f != math.floor(f):
        return None
    return int(f)


def _fmt_int(n: int) -> str:
    return str(n) if abs(n) < 10**16 else f"{float(n):.6g}"


def integer(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer in ``[minimum, maximum]`` (integral floats such as 100.0 are accepted; any size is exact)."""
    v = _int_or_none(value)
    rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {_fmt_int(maximum)}]"
    if v is None:
        raise ReconRiskError(f"{name} must be an integer {rng}; found {_fmt(value)} ({type(value).__name__})")
    if v < minimum or (maximum is not None and v > maximum):
        raise ReconRiskError(f"{name} must be an integer {rng}; found {_fmt(value)}")
    return v


def noise_multiplier(name: str, value: Any) -> float:
    """A DP-SGD noise multiplier σ in [MIN_NOISE, MAX_NOISE] (see there)."""
    v = positive(name, value)
    if not MIN_NOISE <= v <= MAX_NOISE:
        raise ReconRiskError(
            f"{name} must be in [{MIN_NOISE:g}, {MAX_NOISE:g}] (beyond, every bound is its noiseless value "
            f"or κ to double precision); found {_fmt(value)}"
        )
    return v


def epsilon(name: str, value: Any) -> float:
    """A target ε in (0, MAX_EPSILON]."""
    v = positive(name, value)
    if v > MAX_EPSILON:
        raise ReconRiskError(
            f"{name} must be in (0, {MAX_EPSILON:g}] (e^{MAX_EPSILON:g} ≈ 1e108: no privacy is left, the bound is 1 "
            f"at any noise multiplier you could use); found {_fmt(value)}"
        )
    return v


def steps(name: str, value: Any) -> int:
    """A number of DP-SGD steps: an integer in [1, MAX_STEPS]."""
    return integer(name, value, minimum=1, maximum=MAX_STEPS)


def seed(name: str, value: Any, *, allow_none: bool = False) -> int | None:
    """A seed: any non-negative integer (``None`` only when ``allow_none``)."""
    if value is None and allow_none:
        return None
    return integer(name, value, minimum=0)


def seed_words(value: int) -> np.ndarray:
    """Four uint32 words derived from a seed of any size (numpy ``SeedSequence``), deterministic."""
    return np.random.SeedSequence(int(value)).generate_state(4, dtype=np.uint32)


def jax_seed(value: Any, name: str = "seed") -> int:
    """A validated seed as an int that ``jax.random.PRNGKey`` accepts.

    Seeds below 2³² are passed unchanged (so published numbers stay the same);
    larger ones are folded into 32 bits by numpy's ``SeedSequence``.
    """
    s = seed(name, value)
    return s if s < 2**32 else int(seed_words(s)[0])


def choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ReconRiskError(f"{name} must be one of {', '.join(map(repr, options))}; found {_fmt(value)}")
    return value


def max_count(flag: str, value: int, cap: int, what: str = "") -> int:
    """Refuse a size or count above ``cap`` before any work, naming the flag."""
    if value > cap:
        extra = f" ({what})" if what else ""
        raise ReconRiskError(f"{flag} must be <= {_fmt_int(cap) if cap >= 10**16 else format(cap, ',')}{extra}; "
                             f"found {_fmt(value)}")
    return value


def memory(flag: str, value: Any, nbytes: float, *, cap: int | None = None) -> None:
    """Refuse a request whose arrays need ``nbytes`` (an int of any size, or a float) above the cap."""
    cap = MEMORY_CAP if cap is None else cap
    if isinstance(nbytes, int) and nbytes > cap:
        nbytes = math.inf if nbytes > 10**300 else float(nbytes)
    if not (nbytes <= cap):  # also catches inf / NaN from an overflowing product
        need = "more than 10^300" if not math.isfinite(nbytes) else f"{nbytes / 2**30:.3g} GiB"
        raise ReconRiskError(
            f"{flag} {_fmt(value)} needs about {need} of memory; the limit on this machine is "
            f"{cap / 2**30:.3g} GiB"
        )


def kappa_array(name: str, value: Any) -> tuple[np.ndarray, bool]:
    """Baseline probabilities in (0, 1); returns (1-d array, was_scalar)."""
    if _is_bool(value) or isinstance(value, (str, bytes)) or value is None:
        raise ReconRiskError(f"{name} must be a number or array of numbers in (0, 1); found {_fmt(value)}")
    try:
        arr = np.asarray(value)
    except Exception:
        raise ReconRiskError(f"{name} must be a number or array of numbers in (0, 1); found {_fmt(value)}") from None
    if arr.dtype.kind not in "fiu":
        raise ReconRiskError(f"{name} must be a number or array of numbers in (0, 1); found {_fmt(value)}")
    arr = arr.astype(float)
    scalar = arr.ndim == 0
    flat = np.atleast_1d(arr).ravel()
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
