"""One traversal from a ``dp_accounting`` event to reconrisk's steps: :func:`steps`.

``ComposedDpEvent``, ``SelfComposedDpEvent`` and ``NoOpDpEvent`` are read here; every other event by the one
registered class that reads its class name (:func:`~.base.for_event`): a mechanism for a mechanism's event
(``GaussianDpEvent`` → :class:`~.gaussian.Gaussian`), a sampler for a sampling event
(``PoissonSampledDpEvent`` → :class:`~.samplers.Poisson`, which reads the event it wraps through this same
traversal). An event no class reads is refused in one line naming it; at most ``MAX_STEPS`` steps in all (an
event composed 10³⁰ times is refused, not accepted and left to overflow or run for ever).
"""

from __future__ import annotations

from .. import _validate as v
from ..errors import ReconRiskError
from . import repeat_select, zcdp  # noqa: F401  (numpy only: registered on import, as the layout rule asks)
from .base import Mechanism, Step, for_event, registered


def _count_text(n: int) -> str:
    return str(n) if n < 10**15 else f"an integer of {len(str(n)) if n < 10**4000 else 'over 4000'} digits"


def _too_many(n: int) -> ReconRiskError:
    return ReconRiskError(f"an event may compose at most {v.MAX_STEPS:g} steps; this one composes {_count_text(n)}")


def _name(event) -> str:
    inner = getattr(event, "event", None)
    return type(event).__name__ + (f"({type(inner).__name__})" if inner is not None else "")


#: The deepest nesting of Composed/SelfComposed/sampling events read (deeper is refused in one line, not left to
#: Python's recursion limit).
MAX_DEPTH = 200


def _read(event, count: int, dpa, depth: int = 0) -> list[Step]:
    if count > v.MAX_STEPS:
        raise _too_many(count)
    if depth > MAX_DEPTH:
        raise ReconRiskError(f"an event may nest at most {MAX_DEPTH} composed or sampled events; this one nests deeper")
    if not isinstance(event, dpa.DpEvent):
        raise ReconRiskError(f"event must be a dp_accounting DpEvent; found {type(event).__name__}")
    if isinstance(event, dpa.NoOpDpEvent) or count == 0:
        return []
    if isinstance(event, dpa.SelfComposedDpEvent):
        n = v.integer("SelfComposedDpEvent.count", event.count, minimum=0)
        return _read(event.event, count * n, dpa, depth + 1) if n else []
    if isinstance(event, dpa.ComposedDpEvent):
        if not isinstance(event.events, (list, tuple)):
            raise ReconRiskError(f"ComposedDpEvent.events must be a list of DpEvents; found {type(event.events).__name__}")
        return [s for e in event.events for s in _read(e, count, dpa, depth + 1)]
    cls = for_event(type(event).__name__)
    if cls is None:
        known = sorted({e for c in registered().values() for e in getattr(c, "event_types", ())})
        raise ReconRiskError(f"{_name(event)} is not read by reconrisk (it reads ComposedDpEvent, SelfComposedDpEvent, "
                             f"NoOpDpEvent, {', '.join(known)})")
    try:
        found = cls.from_dp_event(event, lambda e: _read(e, 1, dpa, depth + 1))
    except ReconRiskError as exc:
        name = _name(event)
        raise (exc if str(exc).startswith(name) else ReconRiskError(f"{name}: {exc}")) from None
    return [Step(s.mechanism, s.sampler, s.count * count) if count != 1 else s for s in found]


def register_all() -> None:
    """Import (so register) every mechanism module: the readers of events that load scipy or dp_accounting (off
    the numpy-only path of ``import reconrisk._src.release``, so imported here, when an event is read; the numpy-only
    readers are imported at the top). A new mechanism adds one name."""
    from . import discrete_gaussian, discrete_laplace, laplace, mixture_gaussians, randomized_response  # noqa: F401
    from . import tree_aggregation, truncated_poisson  # noqa: F401


def steps(event) -> tuple[Step, ...]:
    """The steps of ``event`` in order (NoOp events dropped), one per leaf (see the module docstring)."""
    try:
        import dp_accounting as dpa
    except ImportError:  # pragma: no cover - dp_accounting is a dependency
        raise ReconRiskError("reading a DpEvent needs the dp_accounting package") from None
    register_all()
    out = _read(event, 1, dpa)
    total = sum(s.count for s in out)
    if total > v.MAX_STEPS:
        raise _too_many(total)
    return tuple(out)


def to_dp_event(steps_) -> object:
    """The ``dp_accounting`` event of a sequence of steps (each mechanism's :meth:`~.base.Mechanism.to_dp_event`)."""
    import dp_accounting as dpa

    parts = []
    for s in steps_:
        if not isinstance(s, Step) or not isinstance(s.mechanism, Mechanism):
            raise ReconRiskError(f"steps must be reconrisk Steps; found {type(s).__name__}")
        e = s.mechanism.to_dp_event(s.sampler)
        parts.append(e if s.count == 1 else dpa.SelfComposedDpEvent(e, s.count))
    return parts[0] if len(parts) == 1 else dpa.ComposedDpEvent(parts)
