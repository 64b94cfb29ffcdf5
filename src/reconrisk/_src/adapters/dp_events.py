"""``dp_accounting`` events, flattened once: :func:`dp_event_leaves`, and whether they are one DP-SGD release.

The dp_accounting side of :meth:`Release.from_dp_event <reconrisk._src.release.Release.from_dp_event>` and of the
analyses' dispatch (:func:`reconrisk._src.analysis.dispatch.analyse`), which walks an event once and hands the
leaves on. ``dp_accounting`` is imported on first use (it is slow to import).
"""

from __future__ import annotations

import numbers

from .. import _validate as v
from ..errors import ReconRiskError


def dp_event_release_refusal(leaves: list) -> str | None:
    """Why the flattened event ``leaves`` is not one DP-SGD :class:`Release` (one line), or None where it is:
    only Gaussian steps, one sampler (Poisson and without-replacement steps need different neighbouring
    relations; a plain Gaussian step joins either), at least one step."""
    samplers = {k for k, *_ in leaves if k != "gaussian"}
    other = [k for k in samplers if k not in ("poisson", "fixed")]
    if other:
        return (f"a Release describes DP-SGD with Gaussian noise; this event holds {other[0]} (analyse it with "
                "PrivacyAnalysis.from_dp_event)")
    if len(samplers) > 1:
        return ("a Release has one sampler; this event mixes PoissonSampledDpEvent (add/remove neighbours) and "
                "SampledWithoutReplacementDpEvent (replace-one neighbours)")
    if not leaves:
        return "the event holds no privacy-relevant step (only NoOpDpEvent)"
    scale = 2.0 if "fixed" in samplers else 1.0  # (see Release.from_dp_event: the units of the relation)
    for _, s, q, t in leaves:
        ok = (isinstance(s, numbers.Real) and isinstance(q, numbers.Real) and v.MIN_NOISE <= scale * s <= v.MAX_NOISE
              and 0.0 < q <= 1.0)
        if not ok:
            return (f"a Release's steps have noise_multiplier in [{v.MIN_NOISE:g}, {v.MAX_NOISE:g}] and sample_rate in "
                    f"(0, 1]; this event has a Gaussian step with noise multiplier {scale * s!r} and sampling "
                    f"probability {q!r}")
    if sum(t for *_, t in leaves) > v.MAX_STEPS:
        return f"a Release has at most {v.MAX_STEPS:g} steps; this event has {sum(t for *_, t in leaves)}"
    return None


def dp_event_leaves(event, count: int = 1) -> list:
    """A ``DpEvent`` flattened to ``[(kind, noise_multiplier, sample_rate, count), …]`` for its Gaussian steps.

    ``kind`` is ``"gaussian"`` (q = 1), ``"poisson"`` or ``"fixed"``; any other event gives
    ``(EventName, event, None, count)`` so the caller can refuse or analyse it. NoOp events are dropped.
    At most ``MAX_STEPS`` steps in all (an event composed 10³⁰ times is refused in one line, not accepted
    and left to overflow or run for ever).
    """
    leaves = _leaves(event, count)
    total = sum(t for *_, t in leaves)
    if total > v.MAX_STEPS:
        raise ReconRiskError(f"an event may compose at most {v.MAX_STEPS:g} steps; this one composes "
                             f"{_count_text(total)}")
    return leaves


def _count_text(n: int) -> str:
    return str(n) if n < 10**15 else f"an integer of {len(str(n)) if n < 10**4000 else 'over 4000'} digits"


def _leaves(event, count: int) -> list:
    if count > v.MAX_STEPS:
        raise ReconRiskError(f"an event may compose at most {v.MAX_STEPS:g} steps; this one composes "
                             f"{_count_text(count)}")
    try:
        import dp_accounting as dpa
    except ImportError:  # pragma: no cover - dp_accounting is a dependency
        raise ReconRiskError("reading a DpEvent needs the dp_accounting package") from None
    name = type(event).__name__
    if not isinstance(event, dpa.DpEvent):
        raise ReconRiskError(f"event must be a dp_accounting DpEvent; found {name}")
    if isinstance(event, dpa.NoOpDpEvent):
        return []
    if isinstance(event, dpa.SelfComposedDpEvent):
        n = v.integer("SelfComposedDpEvent.count", event.count, minimum=0)
        return _leaves(event.event, count * n) if n else []
    if isinstance(event, dpa.ComposedDpEvent):
        return [leaf for e in event.events for leaf in _leaves(e, count)]
    if isinstance(event, dpa.GaussianDpEvent):
        return [("gaussian", event.noise_multiplier, 1.0, count)] if count else []
    inner = getattr(event, "event", None)
    if isinstance(inner, dpa.GaussianDpEvent):
        if isinstance(event, dpa.PoissonSampledDpEvent):
            return [("poisson", inner.noise_multiplier, event.sampling_probability, count)]
        if isinstance(event, dpa.SampledWithoutReplacementDpEvent):
            n = v.integer("source_dataset_size", event.source_dataset_size, minimum=1)
            b = v.integer("sample_size", event.sample_size, minimum=1, maximum=n)
            return [("fixed", inner.noise_multiplier, b / n, count)]
    if inner is not None:
        name = f"{name}({type(inner).__name__})"
    return [(name, event, None, count)]
