"""The Laplace mechanism: :class:`Laplace` (scale b, sensitivity 1, add/remove neighbours), alone or Poisson-sampled.

Its privacy-loss distribution is built from ``dp_accounting``'s public ``LaplacePrivacyLoss`` (connect-the-dots
when pessimistic, privacy buckets rounded down when optimistic: :func:`~.pld_build.continuous_pmf`); b = 0 is
the noiseless step (:func:`~.gaussian.noiseless_pmf`: the outputs are points whatever the noise law).
Pure ε = 1/b, amplified by Poisson sampling to log(1 + q(e^{1/b} − 1)) (Balle, Barthe & Gaboardi 2018); RDP:
Mironov 2017, Prop. 6 (at q = 1; sampled, the ε-DP pair's curve); μ-GDP from the pure ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Support
from .base import Mechanism, Sampler, Step, register
from .gaussian import noiseless_pmf
from .pld_build import continuous_pmf, pure_dp_mu, pure_dp_rdp
from .samplers import NoAmplification, Poisson


@register
@dataclass(frozen=True)
class Laplace(Mechanism):
    """Laplace noise of scale ``noise_multiplier`` b (sensitivity 1): 0 (no noise) or in [1e-12, 1e8]."""

    noise_multiplier: float
    name = "laplace"
    event_types = ("LaplaceDpEvent",)

    def __post_init__(self) -> None:
        b = v.real("noise_multiplier", self.noise_multiplier)
        if b != 0.0 and not v.MIN_NOISE <= b <= v.MAX_NOISE:
            raise ReconRiskError(f"noise_multiplier must be 0 (no noise) or in [{v.MIN_NOISE:g}, {v.MAX_NOISE:g}]; "
                                 f"found {self.noise_multiplier!r}")
        object.__setattr__(self, "noise_multiplier", b)

    def supports(self, sampler: Sampler) -> Support:
        if isinstance(sampler, (NoAmplification, Poisson)):
            return Support(True)
        return Support(False, f"a Laplace step under {sampler.describe()} is not analysed (Poisson sampling or none)")

    def relation(self, sampler: Sampler) -> str:
        return "add_remove"

    def _loss(self, q: float, direction: str):
        from dp_accounting.pld import privacy_loss_mechanism as plm

        adj = plm.AdjacencyType.ADD if direction == "add" and q < 1.0 else plm.AdjacencyType.REMOVE
        return plm.LaplacePrivacyLoss(self.noise_multiplier, sampling_prob=q, adjacency_type=adj)

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        q = sampler.rate
        if self.noise_multiplier == 0.0:
            return noiseless_pmf(q, h, pessimistic, "remove" if direction == "symmetric" else direction)
        return continuous_pmf(self._loss(q, direction), h, pessimistic)

    def pure_epsilon(self, sampler: Sampler) -> float:
        q, b = sampler.rate, self.noise_multiplier
        if b == 0.0:
            return math.inf
        if q == 1.0:
            return 1.0 / b
        return float(np.logaddexp(math.log1p(-q), math.log(q) + 1.0 / b))

    def rdp(self, sampler: Sampler, orders) -> np.ndarray:
        o = np.asarray(orders, dtype=float)
        if self.noise_multiplier > 0 and sampler.rate == 1.0:
            lam = 1.0 / self.noise_multiplier
            with np.errstate(over="ignore"):
                t = np.logaddexp(np.log(o / (2 * o - 1)) + (o - 1) * lam, np.log((o - 1) / (2 * o - 1)) - o * lam)
            return t / (o - 1)
        return pure_dp_rdp(self.pure_epsilon(sampler), o)

    def gdp_mu(self, sampler: Sampler) -> float:
        """μ of the ε-DP curve at the unsampled ε = 1/b (as before: a sampled step is a garbling of the unsampled)."""
        return pure_dp_mu(math.inf if self.noise_multiplier == 0 else 1.0 / self.noise_multiplier)

    def to_dp_event(self, sampler: Sampler):
        import dp_accounting as dpa

        e = dpa.LaplaceDpEvent(self.noise_multiplier)
        return dpa.PoissonSampledDpEvent(sampler.sample_rate, e) if isinstance(sampler, Poisson) else e

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.noise_multiplier), NoAmplification(), 1)]

    def event_label(self, sampler: Sampler) -> str:
        b = f"(b={self.noise_multiplier:g})"
        return f"PoissonSampledDpEvent(LaplaceDpEvent{b}, q={sampler.rate:g})" if isinstance(sampler, Poisson) \
            else f"LaplaceDpEvent{b}"
