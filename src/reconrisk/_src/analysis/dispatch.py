"""One dispatch from what was run to its :class:`~reconrisk._src.analysis.base.Analysis`: :func:`analyse`.

* an :class:`~reconrisk._src.analysis.base.Analysis` — itself;
* a :class:`~reconrisk._src.release.Release` — its :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`;
* a ``dp_accounting`` ``DpEvent`` — read **once** into steps (:func:`reconrisk._src.mechanisms.traverse.steps`);
* a sequence of :class:`~reconrisk._src.mechanisms.base.Step` (a run described directly, e.g. a mechanism
  ``dp_accounting`` has no event for) — :func:`analyse_steps`.

The steps choose: Gaussian steps of one sampler, in a release's range, become a
:class:`~reconrisk._src.release.Release` (:meth:`~reconrisk._src.release.Release.from_steps`) and get the full analysis;
steps that all have a privacy-loss distribution an :class:`~reconrisk._src.analysis.events.EventAnalysis` handed
those steps; if any step has none (an RDP-only mechanism), a
:class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis` of the composed RDP curve (the sum of the steps'
curves on ``DEFAULT_ORDERS``), whose results say "RDP curve (no privacy-loss distribution for …)".

Modelled on ``dp_accounting``'s accountants, which traverse an event once and say with ``supports`` what
they can account for. ``PrivacyAnalysis.from_dp_event`` and ``PrivacyAnalysis.from_guarantee`` are this
module's entry points under their public names.
"""

from __future__ import annotations

import numpy as np

from ..accounting.rdp import DEFAULT_ORDERS
from ..errors import PLDRangeError, ReconRiskError
from ..mechanisms.base import Step
from ..mechanisms.traverse import steps as event_steps
from ..mechanisms.zcdp import NonPrivate
from ..release import Release, release_refusal
from .accountant import shared_analysis
from .base import Analysis, register_entry_points, with_details
from .events import EventAnalysis
from .guarantee import GuaranteeAnalysis
from .privacy import PrivacyAnalysis


class _StepsGuarantee(GuaranteeAnalysis):
    """A guarantee read off steps (``steps``), every result naming why (``via``)."""

    steps: tuple = ()
    via: str = ""

    @property
    def formula(self) -> str:
        return f"{self.via}: " + super().formula

    def describe(self) -> dict:
        return {**super().describe(), "steps": " + ".join(f"{s.count}×{s.mechanism.event_label(s.sampler)}"
                                                           for s in self.steps), "via": self.via}

    def _rero(self, k, lk):
        return with_details(super()._rero(k, lk), via=self.via)


class StepsRdpAnalysis(_StepsGuarantee):
    """The composed RDP curve of steps of which some have no privacy-loss distribution, read as a guarantee
    (upper ends only, the optimal RDP → trade-off conversion); every result names why (``via``)."""

    def __init__(self, steps, orders: np.ndarray, curve: np.ndarray, via: str) -> None:
        ok = np.isfinite(curve)
        if not ok.any():
            raise ReconRiskError(f"{via}: the composed RDP curve is infinite at every order; it bounds nothing")
        super().__init__("rdp", order=orders[ok], epsilon=curve[ok])
        self.steps, self.via = tuple(steps), via


class StepsWithoutGuarantee(_StepsGuarantee):
    """Steps of which one states no guarantee (``NonPrivateDpEvent``): the composition is (0, 1)-DP and nothing
    better — ε = ∞ at every δ < 1, ReRo = 1, the trade-off curve 0 — as ``dp_accounting`` answers (ε = ∞). With
    ``nothing_run`` (no step at all: only ``NoOpDpEvent``, or counts of 0) it is the opposite: (0, 0)-DP, ε = 0,
    ReRo = κ (the blind guess), as ``dp_accounting`` answers (ε = 0)."""

    def __init__(self, steps, *, nothing_run: bool = False) -> None:
        super().__init__("dp", epsilon=0.0, delta=0.0 if nothing_run else 1.0)
        self.steps = tuple(steps)
        self.via = ("no step uses the data (only NoOpDpEvent or counts of 0): the output is independent of it"
                    if nothing_run else "a non-private step (NonPrivateDpEvent): the composition guarantees nothing")


def analyse_steps(steps, *, source=None, value_discretization: float | None = None) -> Analysis:
    """The analysis of ``steps`` (see the module docstring); ``source`` is what they were read from (an event)."""
    steps = tuple(steps)
    for s in steps:
        if not isinstance(s, Step):
            raise ReconRiskError(f"steps must be reconrisk.Step objects (a mechanism under a sampler, a count); found "
                                 f"{type(s).__name__}")
    if any(isinstance(s.mechanism, NonPrivate) and s.count for s in steps):
        return StepsWithoutGuarantee(steps)
    if not any(s.count for s in steps):
        return StepsWithoutGuarantee(steps, nothing_run=True)
    no_pld = [s for s in steps if not s.never_sampled and not s.mechanism.has_pld(s.sampler)]
    if no_pld:
        names = sorted({s.mechanism.name for s in no_pld})
        return _rdp_analysis(steps, f"RDP curve (no privacy-loss distribution for {', '.join(names)})")
    if value_discretization is None and release_refusal(steps) is None:
        return shared_analysis(Release.from_steps(steps))  # (the one composition cache, as analyse(release))
    analysis = EventAnalysis(source, value_discretization=value_discretization, steps=steps)
    if value_discretization is not None:
        return analysis
    try:  # the first grid's distribution (cached: the first question reads it); noise far below the grid's range
        analysis.pmf(pessimistic=True)  # has no PLD there, as dp_accounting's RDP accountant still answers
    except PLDRangeError as exc:
        try:
            return _rdp_analysis(steps, f"RDP curve (the privacy-loss range exceeds the grid {analysis.h:g})")
        except ReconRiskError:
            raise exc from None
    return analysis


def _rdp_analysis(steps, via: str) -> "StepsRdpAnalysis":
    curve = sum(s.rdp(DEFAULT_ORDERS) for s in steps)
    return StepsRdpAnalysis(steps, DEFAULT_ORDERS, np.asarray(curve, dtype=float), via)


def analyse_dp_event(event, *, value_discretization: float | None = None) -> Analysis:
    """The analysis of a ``dp_accounting`` ``DpEvent``, read once (see the module docstring).

    ``value_discretization`` (a loss grid) asks for the event analysis whatever the event holds.
    """
    return analyse_steps(event_steps(event), source=event, value_discretization=value_discretization)


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
    if isinstance(source, (list, tuple)) and (not source or any(isinstance(s, Step) for s in source)):
        if not source:  # a run described as steps (analyse_steps names a wrong element); numbers: refused below
            raise ReconRiskError("source must be a Release, a dp_accounting event, an analysis or a non-empty sequence "
                                 "of reconrisk.Step; found an empty sequence")
        return analyse_steps(source)
    if isinstance(source, Release):  # the shared analysis: one composition cache for every door
        return shared_analysis(source)
    return PrivacyAnalysis(source)  # (anything else is refused there in one line)


register_entry_points(dp_event=analyse_dp_event, guarantee=analyse_guarantee)
