"""Old public spellings kept working for one release, with a one-line :class:`DeprecationWarning`.

The vocabulary: ``kappa`` means only the prior's baseline success probability, the von Mises–Fisher
concentration is ``concentration``, a Gaussian standard deviation is ``noise_std``, and ``gamma`` is gone from
public names. The renamed keyword arguments and functions stay callable under the old name until the next
release:

* :func:`renamed_kwargs` — ``@renamed_kwargs(kappa="concentration")`` accepts ``f(kappa=…)``, warns, and
  passes the value on as ``concentration``; both at once is a :class:`~reconrisk.errors.ReconRiskError`.
* :func:`renamed_function` — ``old = renamed_function("old", new)``, a wrapper that warns and calls ``new``.

Every warning here (and the old import paths of :mod:`reconrisk._src._aliases`) is attributed to the user's line —
the first frame outside the package and outside the import machinery — by :func:`warn_at_caller`, so a plain
script run with ``-W default`` shows ``script.py:LINE: DeprecationWarning: …`` (a fixed ``stacklevel`` points
into reconrisk, or at ``sys:1`` for an import, where the default filters hide it).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import warnings
from typing import Callable

from .errors import ReconRiskError

_WHY = {
    "kappa": "kappa now means only the prior's baseline success probability",
    "kappas": "kappa now means only the prior's baseline success probability",
    "gamma": "gamma is no longer a public name",
    "sigma": "a Gaussian standard deviation is noise_std",
}


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # reconrisk/, face and _src


_IMPORTLIB = os.path.dirname(os.path.abspath(importlib.__file__)) + os.sep


def _internal(filename: str) -> bool:
    """Frames ``warnings.warn`` itself skips when it counts a stacklevel (the import system's bootstrap)."""
    return "importlib" in filename and "_bootstrap" in filename


def _ours(filename: str) -> bool:
    """Frames that are not the user's: reconrisk's own (the face and ``_src``) and importlib's
    (``importlib.import_module`` called by a user is the user's import)."""
    path = os.path.abspath(filename)
    return path.startswith(_PACKAGE) or path.startswith(_IMPORTLIB)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the caller name the first frame outside reconrisk.

    Counted as ``warnings.warn`` counts (frames of the import bootstrap are skipped), so an old import path
    (``import reconrisk.bounds.rero``: reconrisk's finder, then importlib) and an attribute read through a
    property both land on the user's line.
    """
    frame, level = sys._getframe(1), 1  # the caller of this function: stacklevel 1 of its warnings.warn
    while frame is not None:
        name = frame.f_code.co_filename
        if not _internal(name):
            if not _ours(name):
                return level
            level += 1
        frame = frame.f_back
    return level


def user_frame():
    """The first frame outside reconrisk and the import machinery (None if there is none)."""
    frame = sys._getframe(1)
    while frame is not None and (_internal(frame.f_code.co_filename) or _ours(frame.f_code.co_filename)):
        frame = frame.f_back
    return frame


def warn_at_caller(message: str, category: type[Warning] = DeprecationWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line (:func:`user_stacklevel`)."""
    warnings.warn(message, category, stacklevel=user_stacklevel())


#: (id of the user's frame, its code, line, instruction, subject) of the last warning :func:`warn_once_per_statement`
#: gave, so that the next one of the same statement is recognised
_LAST_STATEMENT: list = [None]


def warn_once_per_statement(message: str, subject: str) -> None:
    """:func:`warn_at_caller`, unless the user's statement being run already warned about ``subject`` or a module
    above it (``subject`` is a dotted path, ``reconrisk._src.measures.rero.rero_bounds``).

    One statement can pass several deprecated spellings: an old module path and its parent (``import`` of
    ``reconrisk.<room>.<module>``: one instruction), an old path and then a moved name of it (``from`` the old
    ``measures.rero`` ``import rero_bounds``: a later instruction of the same line), ``from reconrisk import PrivacyAnalysis`` the same dropped name twice
    (the import system's ``hasattr``, then the ``IMPORT_FROM``). The user is warned once, at the first. The same line
    run again (a loop, a second call) is at an earlier instruction, or is a different frame, and warns again.
    """
    frame = user_frame()
    here = None if frame is None else (id(frame), frame.f_code, frame.f_lineno, frame.f_lasti, subject)
    last = _LAST_STATEMENT[0]
    if here is not None and last is not None and last[:3] == here[:3] and (
            here[4] == last[4] and here[3] > last[3] or here[4].startswith(last[4] + ".") and here[3] >= last[3]):
        _LAST_STATEMENT[0] = last[:3] + (here[3], last[4])  # the same statement, further on
        return
    _LAST_STATEMENT[0] = here
    warn_at_caller(message)


def warn_renamed(old: str, new: str, where: str, stacklevel: int | None = None) -> None:
    """Emit ``where: OLD is deprecated and will be removed in the next release; use NEW (why)``, at the user's line.

    ``stacklevel`` is ignored (kept for callers of earlier releases): the user's frame is found by walking the stack.
    """
    why = _WHY.get(old.split("=")[0].split("(")[0].split(".")[-1])
    note = f"{where}: {old} is deprecated and will be removed in the next release; use {new}"
    warn_at_caller(note + (f" ({why})" if why else ""))


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


def deprecated_module_attributes(module_name: str, views: dict[str, tuple[Callable, str]]) -> None:
    """Old module-level names of ``module_name`` kept readable for one release (PEP 562): ``views`` maps each old
    name to ``(compute, replacement)``; reading it warns (at the user's line) and returns ``compute()``, a value
    computed afresh (a read-only view, never a second table)."""
    module = sys.modules[module_name]

    def __getattr__(name: str):
        if name in views:
            compute, new = views[name]
            warn_renamed(f"{module_name}.{name}", new, "reconrisk")
            return compute()
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    module.__getattr__ = __getattr__


def moved_names(module: str, package: str, moved: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that keeps the public names which moved out of ``module`` readable there.

    ``moved`` maps each old name to the module that now holds it, relative to ``package`` (the old module's
    package: ``"..analysis.privacy_rero"``), so the mapping survives a move of the whole tree. Reading the old
    name warns once per read (:func:`warn_at_caller`) and returns the very object (``is`` holds). Used where a
    question moved up to the analysis room (:mod:`reconrisk._src.analysis`), which the old, lower module may not import.
    """
    def __getattr__(name: str):
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = importlib.import_module(moved[name], package)
        warn_once_per_statement(f"{module}.{name} moved to {new.__name__}.{name}; the old path will be removed in a "
                                "later release", f"{module}.{name}")
        return getattr(new, name)

    return __getattr__


def moved_function(old: str, module: str, package: str, name: str) -> Callable:
    """``old`` kept callable after the function moved to ``module`` (relative to ``package``) under ``name``: a
    wrapper that warns (:func:`warn_at_caller`) and calls it. For a function that moved up a layer (the old, lower
    module may not import it)."""

    def inner(*args, **kwargs):
        new = importlib.import_module(module, package)
        warn_at_caller(f"{old}() moved to {new.__name__}.{name}(); the old path will be removed in a later release")
        return getattr(new, name)(*args, **kwargs)

    inner.__name__ = inner.__qualname__ = name
    inner.__doc__ = f"Deprecated path of ``{module.lstrip('.')}.{name}`` (removed in a later release)."
    return inner
