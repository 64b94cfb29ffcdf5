"""The mixture-of-Gaussians mechanism: :class:`MixtureOfGaussians` (``dp_accounting``'s MixtureOfGaussiansDpEvent).

A Gaussian of standard deviation σ whose sensitivity is cᵢ with probability pᵢ (add/remove). Its privacy-loss
distribution is built from ``dp_accounting``'s public ``MixtureGaussianPrivacyLoss`` (connect-the-dots when
pessimistic, privacy buckets rounded down when optimistic: :func:`~.pld_build.continuous_pmf`). No pure ε, RDP
curve or μ-GDP bound is known here (``inf``/``None``). ``dp_accounting`` reads this law slowly (about a minute per
side at h = 1e-4 on a 2-core machine).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PLDRangeError, ReconRiskError
from ..results import Support
from . import checks
from .base import Mechanism, Sampler, Step, register
from .pld_build import continuous_pmf
from .samplers import NoAmplification

_NAME = "MixtureOfGaussiansDpEvent"


@register
@dataclass(frozen=True)
class MixtureOfGaussians(Mechanism):
    """σ = ``standard_deviation`` > 0; ``sensitivities`` (finite, ≥ 0, at most 1e12 σ) with ``sampling_probs`` summing
    to 1 (validated by :func:`~.checks.mixture_of_gaussians`, the one check of the event's fields)."""

    standard_deviation: float
    sensitivities: tuple
    sampling_probs: tuple
    name = "mixture_of_gaussians"
    event_types = (_NAME,)

    def __post_init__(self) -> None:
        sd, sens, probs = checks.mixture_of_gaussians(self)  # the event's own checks (its fields have these names)
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
        try:
            loss = plm.MixtureGaussianPrivacyLoss(self.standard_deviation, list(self.sensitivities),
                                                  list(self.sampling_probs), pessimistic_estimate=pessimistic,
                                                  log_mass_truncation_bound=-50, adjacency_type=adj)
            return continuous_pmf(loss, h, pessimistic)
        except MemoryError:  # dp_accounting's grid for noise tiny against the sensitivities
            raise PLDRangeError(f"{self.event_label(sampler)}: value_discretization {h:g} is too fine for the "
                                "privacy-loss range of this mixture (dp_accounting ran out of memory)") from None
        except RecursionError as exc:  # dp_accounting's inverse loss on sensitivities tiny against the noise
            raise checks.constructor_failure(self.to_dp_event(sampler), exc) from None
        except ValueError as exc:
            if isinstance(exc, ReconRiskError):
                raise
            raise checks.constructor_failure(self.to_dp_event(sampler), exc) from None

    def to_dp_event(self, sampler: Sampler):
        from dp_accounting.dp_event import MixtureOfGaussiansDpEvent

        return MixtureOfGaussiansDpEvent(self.standard_deviation, list(self.sensitivities), list(self.sampling_probs))

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        sd, sens, probs = checks.mixture_of_gaussians(event)
        return [Step(cls(sd, tuple(sens), tuple(probs)), NoAmplification(), 1)]

    def event_label(self, sampler: Sampler) -> str:
        return f"{_NAME}(sd={self.standard_deviation:g})"
