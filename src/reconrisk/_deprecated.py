"""Old public spellings kept working for one release, with a one-line :class:`DeprecationWarning`.

The vocabulary: ``kappa`` means only the prior's baseline success probability, the von Mises–Fisher
concentration is ``concentration``, a Gaussian standard deviation is ``noise_std``, and ``gamma`` is gone from
public names. The renamed keyword arguments and functions stay callable under the old name until the next
release:

* :func:`renamed_kwargs` — ``@renamed_kwargs(kappa="concentration")`` accepts ``f(kappa=…)``, warns, and
  passes the value on as ``concentration``; both at once is a :class:`~reconrisk.errors.ReconRiskError`.
* :func:`renamed_function` — ``old = renamed_function("old", new)``, a wrapper that warns and calls ``new``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

from .errors import ReconRiskError

_WHY = {
    "kappa": "kappa now means only the prior's baseline success probability",
    "kappas": "kappa now means only the prior's baseline success probability",
    "gamma": "gamma is no longer a public name",
    "sigma": "a Gaussian standard deviation is noise_std",
}


def warn_renamed(old: str, new: str, where: str, stacklevel: int = 3) -> None:
    """Emit ``where: OLD is deprecated and will be removed in the next release; use NEW (why)``."""
    why = _WHY.get(old.split("=")[0].split("(")[0].split(".")[-1])
    note = f"{where}: {old} is deprecated and will be removed in the next release; use {new}"
    warnings.warn(note + (f" ({why})" if why else ""), DeprecationWarning, stacklevel=stacklevel)


def renamed_kwargs(**old_to_new: str) -> Callable:
    """Decorator: keyword arguments renamed ``old=new``; the old spelling warns and still works."""

    def wrap(func: Callable) -> Callable:
        @functools.wraps(func)
        def inner(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise ReconRiskError(
                            f"give {new} once ({old} is its deprecated spelling); found {new}={kwargs[new]!r} "
                            f"and {old}={kwargs[old]!r}")
                    warn_renamed(f"{old}=", f"{new}=", f"{func.__name__}()")
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return inner

    return wrap


def renamed_function(old: str, new: Callable) -> Callable:
    """``old`` as a deprecated alias of ``new`` (same signature; warns on every call)."""

    @functools.wraps(new)
    def inner(*args, **kwargs):
        warn_renamed(f"{old}()", f"{new.__name__}()", "reconrisk")
        return new(*args, **kwargs)

    inner.__name__ = inner.__qualname__ = old
    inner.__doc__ = f"Deprecated alias of :func:`{new.__name__}` (removed in the next release)."
    return inner
