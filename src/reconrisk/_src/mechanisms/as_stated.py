"""The sampler of a guarantee stated for a whole step: :class:`AsStated` (no amplification applied here).

Events such as ``ZCDpEvent``, ``SingleEpochTreeAggregationDpEvent`` or ``RepeatAndSelectDpEvent`` state their
guarantee for what was released, sampling (if any) already inside it; reconrisk applies no amplification on top.
Its ``relation`` is ``None`` (the mechanism says which relation its guarantee is stated for, see
:meth:`~reconrisk._src.mechanisms.base.Mechanism.relation`) and its ``rate`` 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..results import Support
from .base import Sampler, register


@register
@dataclass(frozen=True)
class AsStated(Sampler):
    """No sampling applied by reconrisk: the mechanism's guarantee is read as it is stated."""

    name = "as_stated"

    @property
    def relation(self) -> str | None:
        return None

    @property
    def rate(self) -> float:
        return 1.0

    def describe(self) -> str:
        return "as stated"


def stated_only(what: str, sampler: Sampler) -> Support:
    """A mechanism whose guarantee is stated for the whole step is analysed under :class:`AsStated` only (no
    amplification is applied on top of a stated guarantee)."""
    if isinstance(sampler, AsStated):
        return Support(True)
    return Support(False, f"{what} states its guarantee for the whole step; it is analysed as stated, not under "
                          f"{sampler.describe()}")
