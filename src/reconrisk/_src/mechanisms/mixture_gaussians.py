"""The mixture-of-Gaussians mechanism: :class:`MixtureOfGaussians` (``dp_accounting``'s MixtureOfGaussiansDpEvent).

A Gaussian of standard deviation σ whose sensitivity is cᵢ with probability pᵢ (add/remove). Its privacy-loss
distribution is built from ``dp_accounting``'s public ``MixtureGaussianPrivacyLoss`` (connect-the-dots when
pessimistic, privacy buckets rounded down when optimistic: :func:`~.pld_build.continuous_pmf`). No pure ε, RDP
curve or μ-GDP bound is known here (``inf``/``None``). ``dp_accounting`` reads this law slowly (about a minute per
side at h = 1e-4 on a 2-core machine).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Support
from .base import Mechanism, Sampler, Step, register
from .pld_build import continuous_pmf
from .samplers import NoAmplification

_NAME = "MixtureOfGaussiansDpEvent"


@register
@dataclass(frozen=True)
class MixtureOfGaussians(Mechanism):
    """σ = ``standard_deviation`` > 0; ``sensitivities`` (finite, at most 1e12 σ) with ``sampling_probs`` summing to 1."""

    standard_deviation: float
    sensitivities: tuple
    sampling_probs: tuple
    name = "mixture_of_gaussians"
    event_types = (_NAME,)

    def __post_init__(self) -> None:
        sd = v.positive(f"{_NAME}.standard_deviation", self.standard_deviation)
        try:
            sens = np.asarray(self.sensitivities, dtype=float)
            probs = np.asarray(self.sampling_probs, dtype=float)
        except (TypeError, ValueError):
            raise ReconRiskError(f"{_NAME}.sensitivities and .sampling_probs must be lists of numbers; found "
                                 f"{self.sensitivities!r:.60} and {self.sampling_probs!r:.60}") from None
        if sens.ndim != 1 or sens.size == 0 or sens.shape != probs.shape:
            raise ReconRiskError(f"{_NAME}.sensitivities and .sampling_probs must be non-empty lists of equal length; "
                                 f"found {sens.size} and {probs.size}")
        if not np.isfinite(sens).all() or (np.abs(sens) / sd > 1.0 / v.MIN_NOISE).any():
            raise ReconRiskError(f"{_NAME}.sensitivities must be finite and at most {1.0 / v.MIN_NOISE:g} standard "
                                 f"deviations ({sd:g}) in size; found {sens.tolist()!r:.80}")
        if not np.isfinite(probs).all() or (probs < 0).any() or abs(float(probs.sum()) - 1.0) > 1e-9:
            raise ReconRiskError(f"{_NAME}.sampling_probs must be probabilities in [0, 1] summing to 1; found "
                                 f"{probs.tolist()!r:.80} (sum {float(probs.sum()):.6g})")
        object.__setattr__(self, "standard_deviation", sd)
        object.__setattr__(self, "sensitivities", tuple(float(x) for x in sens))
        object.__setattr__(self, "sampling_probs", tuple(float(x) for x in probs))

    def supports(self, sampler: Sampler) -> Support:
        ok = isinstance(sampler, NoAmplification)
        return Support(ok, "" if ok else f"a mixture of Gaussians under {sampler.describe()} is not analysed")

    def relation(self, sampler: Sampler) -> str:
        return "add_remove"

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        from dp_accounting.pld import privacy_loss_mechanism as plm

        adj = plm.AdjacencyType.ADD if direction == "add" else plm.AdjacencyType.REMOVE
        loss = plm.MixtureGaussianPrivacyLoss(self.standard_deviation, list(self.sensitivities),
                                              list(self.sampling_probs), pessimistic_estimate=pessimistic,
                                              log_mass_truncation_bound=-50, adjacency_type=adj)
        return continuous_pmf(loss, h, pessimistic)

    def to_dp_event(self, sampler: Sampler):
        from dp_accounting.dp_event import MixtureOfGaussiansDpEvent

        return MixtureOfGaussiansDpEvent(self.standard_deviation, list(self.sensitivities), list(self.sampling_probs))

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.standard_deviation, event.sensitivities, event.sampling_probs), NoAmplification(), 1)]

    def event_label(self, sampler: Sampler) -> str:
        return f"{_NAME}(sd={self.standard_deviation:g})"
