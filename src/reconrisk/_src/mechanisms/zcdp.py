"""A zero-concentrated DP guarantee, ``dp_accounting``'s ``ZCDpEvent``: :class:`ZCDP`.

(ξ, ρ)-zCDP (Bun & Steinke 2016, Def. 1.1) is the RDP curve ε(α) = ξ + ρα at every order α > 1; that is all
that is known of the mechanism, so it has no privacy-loss distribution (the analysis answers from the RDP curve
and says so) and no μ-GDP bound (ρ-zCDP does not imply √(2ρ)-GDP). With ρ = 0 every order is bounded by ξ, so
D_∞ ≤ ξ: the step is ξ-DP (its pure ε); with ρ = ξ = 0 it reveals nothing.

The guarantee is stated for whatever neighbouring relation its author proved it for; reconrisk reads it under
the sampler :class:`~reconrisk._src.mechanisms.samplers.NoAmplification` (relation ``None``: it joins either) and refuses
any sampler that would amplify it again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..results import Support
from .base import Mechanism, Step, register
from .samplers import NoAmplification, stated_only


@register
@dataclass(frozen=True)
class ZCDP(Mechanism):
    """(ξ, ρ)-zCDP: RDP ξ + ρα at every order α > 1."""

    rho: float
    xi: float = 0.0

    name = "zcdp"
    event_types = ("ZCDpEvent",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", v.in_range("ZCDpEvent.rho", self.rho, 0.0, math.inf, low_open=False))
        object.__setattr__(self, "xi", v.in_range("ZCDpEvent.xi", self.xi, 0.0, math.inf, low_open=False))

    def supports(self, sampler) -> Support:
        return stated_only("zCDP", sampler)

    def rdp(self, sampler, orders) -> np.ndarray:
        orders = np.asarray(orders, dtype=float)
        return self.xi + self.rho * orders

    def pure_epsilon(self, sampler) -> float:
        return self.xi if self.rho == 0.0 else math.inf

    def gdp_mu(self, sampler) -> float | None:
        return 0.0 if self.rho == 0.0 and self.xi == 0.0 else None

    def to_dp_event(self, sampler):
        from dp_accounting import dp_event

        return dp_event.ZCDpEvent(self.rho, self.xi)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.rho, event.xi), NoAmplification())]

    def event_label(self, sampler) -> str:
        return f"ZCDpEvent(rho={self.rho:g}, xi={self.xi:g})"


@register
@dataclass(frozen=True)
class NonPrivate(Mechanism):
    """A step that states no guarantee at all (``dp_accounting``'s ``NonPrivateDpEvent``): the weakest stated
    guarantee, (0, 1)-DP — δ(ε) = 1 at every ε. A composition holding one certifies nothing (ε = ∞, ReRo = 1, the
    trade-off curve 0), which is what ``dp_accounting``'s accountants answer (ε = ∞); reconrisk analyses it so, in
    one line of explanation, instead of refusing it."""

    name = "non_private"
    event_types = ("NonPrivateDpEvent",)

    def supports(self, sampler) -> Support:
        return stated_only("a non-private step", sampler)

    def to_dp_event(self, sampler):
        from dp_accounting import dp_event

        return dp_event.NonPrivateDpEvent()

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(), NoAmplification())]

    def event_label(self, sampler) -> str:
        return "NonPrivateDpEvent()"
