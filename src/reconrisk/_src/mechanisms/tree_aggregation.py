"""DP-FTRL's tree aggregation, one epoch: ``dp_accounting``'s ``SingleEpochTreeAggregationDpEvent`` (:class:`TreeAggregation`).

Kairouz et al. 2021 ("Practical and Private (Deep) Learning without Sampling or Shuffling", App. D): the
gradients are summed through a binary tree of Gaussian-noised prefix sums, restarted after each of the
``step_counts`` epochs-worth of steps, and no example occurs twice across the trees. An example enters at most
``depth = ⌈log₂(max step_counts + 1)⌉`` nodes of its tree, each noised with N(0, σ²) at sensitivity 1, so the
release is the Gaussian mechanism at ℓ₂ sensitivity √depth: RDP α·depth/(2σ²) (what ``dp_accounting``'s RDP
accountant composes for this event), μ-GDP with μ = √depth/σ, and — the worst case being one Gaussian pair —
the privacy-loss distribution of the Gaussian step at noise multiplier σ/√depth, which reconrisk builds on its
own PLD engine (pessimistic and optimistic).

The pair is symmetric, so one distribution (the engine's remove direction) stands for both directions.
``dp_accounting`` states the guarantee for its REPLACE_SPECIAL relation (an example replaced by a special one
contributing zero); removing the example's contribution is the same pair, so the step is read under
``add_remove``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..accounting.pld import step_pmf
from ..accounting.pmf import PMF
from ..errors import ReconRiskError
from ..results import Support
from .base import DIRECTIONS, Mechanism, Step, register
from .samplers import NoAmplification, stated_only


def _as_list(counts) -> list:
    return np.ravel(counts).tolist() if isinstance(counts, np.ndarray) else list(counts)


def tree_depth(step_counts) -> int:
    """⌈log₂(max(step_counts) + 1)⌉: the most tree nodes one example enters (0 for trees of no step)."""
    if not np.isscalar(step_counts) and not isinstance(step_counts, (list, tuple, np.ndarray)):
        raise ReconRiskError("SingleEpochTreeAggregationDpEvent.step_counts must be an integer or a non-empty list of "
                             f"integers >= 0; found {type(step_counts).__name__}")
    counts = [step_counts] if np.isscalar(step_counts) else _as_list(step_counts)
    if not counts:
        raise ReconRiskError("SingleEpochTreeAggregationDpEvent.step_counts must be a non-empty list of integers "
                             ">= 0; found []")
    counts = [v.integer("SingleEpochTreeAggregationDpEvent.step_counts", c, minimum=0, maximum=v.MAX_STEPS)
              for c in counts]
    return math.ceil(math.log2(max(counts) + 1))


@register
@dataclass(frozen=True)
class TreeAggregation(Mechanism):
    """Single-epoch tree aggregation (DP-FTRL) with noise multiplier σ over trees of ``step_counts`` steps."""

    noise_multiplier: float
    step_counts: tuple[int, ...]

    name = "tree_aggregation"
    event_types = ("SingleEpochTreeAggregationDpEvent",)

    def __post_init__(self) -> None:
        s = v.in_range("SingleEpochTreeAggregationDpEvent.noise_multiplier", self.noise_multiplier, 0.0, v.MAX_NOISE,
                       low_open=False, high_open=False)
        tree_depth(self.step_counts)  # validates (an integer or a non-empty list of them)
        counts = (self.step_counts,) if np.isscalar(self.step_counts) else tuple(_as_list(self.step_counts))
        object.__setattr__(self, "noise_multiplier", s)
        object.__setattr__(self, "step_counts", tuple(int(c) for c in counts))

    @property
    def depth(self) -> int:
        return tree_depth(self.step_counts)

    @property
    def effective_noise_multiplier(self) -> float:
        """σ/√depth: the Gaussian step of sensitivity 1 this release is (inf for depth 0)."""
        d = self.depth
        return math.inf if d == 0 else self.noise_multiplier / math.sqrt(d)

    def supports(self, sampler) -> Support:
        return stated_only("tree aggregation", sampler)

    def relation(self, sampler) -> str:
        return "add_remove"

    def has_pld(self, sampler) -> bool:
        """False only where :meth:`pld` builds none: noise below the PLD engine's range (the RDP curve answers)."""
        return self.depth == 0 or self.noise_multiplier == 0.0 or self.effective_noise_multiplier >= v.MIN_NOISE

    def pld(self, sampler, h: float, *, pessimistic: bool, direction: str):
        if direction not in (*DIRECTIONS, "symmetric"):
            raise ReconRiskError(f"direction must be one of {(*DIRECTIONS, 'symmetric')}; found {direction!r}")
        if self.depth == 0:  # no example enters a node: both worlds see the same output
            return PMF(h, 0, np.ones(1), 0.0, bool(pessimistic), 0.0)
        if self.noise_multiplier == 0.0:  # noiseless: the example is revealed
            return PMF(h, 0, np.zeros(1), 1.0, bool(pessimistic), 0.0)
        sigma = self.effective_noise_multiplier
        if sigma < v.MIN_NOISE:
            return None  # below the PLD engine's range: the RDP curve answers
        # the unsampled Gaussian pair N(0, s²) vs N(1, s²) is symmetric: its add, remove and symmetrised PLDs are one
        # (so the engine's remove direction, which it builds on both sides, answers every direction)
        return step_pmf(sigma, 1.0, h, pessimistic=pessimistic, direction="remove")

    def rdp(self, sampler, orders) -> np.ndarray:
        orders = np.asarray(orders, dtype=float)
        d = self.depth
        if d == 0:
            return np.zeros(orders.size)
        if self.noise_multiplier == 0.0:
            return np.full(orders.size, np.inf)
        return orders * d / (2.0 * self.noise_multiplier**2)

    def pure_epsilon(self, sampler) -> float:
        return 0.0 if self.depth == 0 else math.inf

    def gdp_mu(self, sampler) -> float | None:
        d = self.depth
        if d == 0:
            return 0.0
        return math.inf if self.noise_multiplier == 0.0 else math.sqrt(d) / self.noise_multiplier

    def to_dp_event(self, sampler):
        from dp_accounting import dp_event

        return dp_event.SingleEpochTreeAggregationDpEvent(self.noise_multiplier, list(self.step_counts))

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.noise_multiplier, event.step_counts), NoAmplification())]

    def event_label(self, sampler) -> str:
        return f"SingleEpochTreeAggregationDpEvent(s={self.noise_multiplier:g}, depth={self.depth})"
