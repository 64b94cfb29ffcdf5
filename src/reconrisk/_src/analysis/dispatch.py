"""One dispatch from what was run to its :class:`~reconrisk._src.analysis.base.Analysis`: :func:`analyse`.

* an :class:`~reconrisk._src.analysis.base.Analysis` — itself;
* a :class:`~reconrisk._src.release.Release` — its :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`;
* a ``dp_accounting`` ``DpEvent`` — :func:`analyse_dp_event`: the event is walked **once**
  (:func:`~reconrisk._src.release.dp_event_leaves`) and the leaves choose: Gaussian steps of one sampler, in a
  release's range, become a :class:`~reconrisk._src.release.Release` and get the full analysis; any other event a
  :class:`~reconrisk._src.analysis.events.EventAnalysis`, handed the leaves so that nobody walks the event again.

Modelled on ``dp_accounting``'s accountants, which traverse an event once and say with ``supports`` what
they can account for. ``PrivacyAnalysis.from_dp_event`` and ``PrivacyAnalysis.from_guarantee`` are this
module's entry points under their public names.
"""

from __future__ import annotations

from .base import Analysis, register_entry_points
from .events import EventAnalysis
from .guarantee import GuaranteeAnalysis
from .privacy import PrivacyAnalysis
from ..adapters.dp_events import dp_event_leaves, dp_event_release_refusal
from ..release import Release


def analyse_dp_event(event, *, value_discretization: float | None = None) -> Analysis:
    """The analysis of a ``dp_accounting`` ``DpEvent``, walking it once (see the module docstring).

    ``value_discretization`` (a loss grid) asks for the event analysis whatever the event holds.
    """
    leaves = dp_event_leaves(event)
    if value_discretization is None and dp_event_release_refusal(leaves) is None:
        return PrivacyAnalysis(Release.from_leaves(leaves))
    return EventAnalysis(event, value_discretization=value_discretization, leaves=leaves)


def analyse_guarantee(source: str, **guarantee) -> GuaranteeAnalysis:
    """What a guarantee alone certifies: :class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis` (``reconrisk convert``'s
    inputs: ``"dp"``, ``"rdp"`` or ``"zcdp"`` and their parameters)."""
    return GuaranteeAnalysis(source, **guarantee)


def analyse(source) -> Analysis:
    """The analysis of what was run, so callers can pass any of them (see the module docstring).

    >>> from reconrisk import Release
    >>> a = analyse(Release(1.0, 0.01, 1000))
    >>> type(a).__name__, analyse(a) is a
    ('PrivacyAnalysis', True)
    """
    if isinstance(source, Analysis):
        return source
    if type(source).__module__.startswith("dp_accounting"):
        return analyse_dp_event(source)
    return PrivacyAnalysis(source)  # a Release (anything else is refused there in one line)


register_entry_points(dp_event=analyse_dp_event, guarantee=analyse_guarantee)
