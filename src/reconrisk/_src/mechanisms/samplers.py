"""The samplers a step can be amplified by: :class:`Poisson`, :class:`FixedBatch`, :class:`NoAmplification`,
:class:`Shuffled`.

One small module for the four (each is a validated frozen dataclass of a few lines, and a sampler is read by
every mechanism module, so one place to import them from keeps the room's arrows simple).

* :class:`Poisson` — every example independently with probability ``sample_rate`` (add/remove neighbours;
  ``dp_accounting``'s ``PoissonSampledDpEvent``);
* :class:`FixedBatch` — a uniformly random batch of exactly ``batch_size`` of ``dataset_size`` examples, without
  replacement (replace-one neighbours; ``SampledWithoutReplacementDpEvent``; Dong, Roth & Su 2022, Thm 4.2);
* :class:`NoAmplification` — the mechanism sees the whole data set (q = 1); it amplifies nothing, so it joins
  either relation. A guarantee stated for a whole step (zCDP, tree aggregation, repeat-and-select: sampling, if
  any, already inside it) is read under it and refuses every other sampler (:func:`stated_only`), so it is never
  amplified again;
* :class:`Shuffled` — ``passes`` full-batch replace-one steps: the sound stand-in for shuffled batches that
  :meth:`Release.shuffled <reconrisk._src.release.Release.shuffled>` uses (no tight analysis of shuffling is known).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Support
from .base import Sampler, Step, register


def _wrapped(event, read, sampler: Sampler) -> list[Step]:
    """The steps of ``event.event`` (read by the traversal), each put under ``sampler`` (one line where nested)."""
    out = []
    for step in read(event.event):
        if not isinstance(step.sampler, NoAmplification):
            raise ReconRiskError(f"{type(event).__name__} of an event already sampled ({step.event_name}) is not "
                                 "analysed")
        out.append(Step(step.mechanism, sampler, step.count))
    return out


@register
@dataclass(frozen=True)
class Poisson(Sampler):
    """Poisson sampling with probability ``sample_rate`` ∈ [0, 1] (0: the target is never used)."""

    sample_rate: float
    name = "poisson"
    event_types = ("PoissonSampledDpEvent",)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return _wrapped(event, read, cls(event.sampling_probability))

    def __post_init__(self) -> None:
        object.__setattr__(self, "sample_rate", v.in_range("sample_rate", self.sample_rate, 0.0, 1.0,
                                                             low_open=False, high_open=False))

    @property
    def relation(self) -> str:
        return "add_remove"

    @property
    def rate(self) -> float:
        return self.sample_rate

    def describe(self) -> str:
        return f"poisson q={self.sample_rate:g}"


@register
@dataclass(frozen=True)
class FixedBatch(Sampler):
    """A batch of exactly ``batch_size`` of ``dataset_size`` examples, drawn without replacement (replace-one)."""

    batch_size: int
    dataset_size: int
    name = "fixed"
    event_types = ("SampledWithoutReplacementDpEvent",)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return _wrapped(event, read, cls(event.sample_size, event.source_dataset_size))

    def __post_init__(self) -> None:
        n = v.integer("dataset_size", self.dataset_size, minimum=1)
        b = v.integer("batch_size", self.batch_size, minimum=1)
        if b > n:
            raise ReconRiskError(f"batch_size must be an integer in [1, dataset_size={n}]; found {b}")
        object.__setattr__(self, "batch_size", b)
        object.__setattr__(self, "dataset_size", n)

    @property
    def relation(self) -> str:
        return "replace_one"

    @property
    def rate(self) -> float:
        return self.batch_size / self.dataset_size

    def describe(self) -> str:
        return f"fixed batch {self.batch_size}/{self.dataset_size}"


@register
@dataclass(frozen=True)
class NoAmplification(Sampler):
    """The whole data set at every step (q = 1): no amplification, so either neighbouring relation."""

    name = "none"

    @property
    def relation(self) -> None:
        return None

    @property
    def rate(self) -> float:
        return 1.0

    def describe(self) -> str:
        return "no amplification"


@register
@dataclass(frozen=True)
class Shuffled(Sampler):
    """``passes`` full-batch replace-one steps, the sound stand-in for shuffled batches (Release.shuffled):
    revealing the permutation only helps the adversary, and each pass then touches the target once."""

    passes: int
    name = "shuffled"

    def __post_init__(self) -> None:
        object.__setattr__(self, "passes", v.integer("passes", self.passes, minimum=1, maximum=v.MAX_STEPS))

    @property
    def relation(self) -> str:
        return "replace_one"

    @property
    def rate(self) -> float:
        return 1.0

    def describe(self) -> str:
        return f"shuffled, {self.passes} passes"


def stated_only(what: str, sampler: Sampler) -> Support:
    """The support of a mechanism whose guarantee is stated for the whole step: :class:`NoAmplification` only, since
    reconrisk applies no amplification on top of a stated guarantee (a sampled event wrapping it is refused)."""
    if isinstance(sampler, NoAmplification):
        return Support(True)
    return Support(False, f"{what} states its guarantee for the whole step; it is analysed as stated, not under "
                          f"{sampler.describe()}")
