"""The discrete Laplace mechanism: :class:`DiscreteLaplace` (parameter a, integer sensitivity Δ, add/remove).

Noise X on the integers with P(X = x) = tanh(a/2)·e^{−a|x|}. The privacy loss of the pair (X, X + Δ) at x is
a(|x − Δ| − |x|): aΔ with probability 1/(1 + e^{−a}) (x ≤ 0), −aΔ with probability e^{−aΔ}/(1 + e^{−a})
(x ≥ Δ), a(Δ − 2x) with probability tanh(a/2)e^{−ax} for 0 < x < Δ — a finite support, so the PLD is exact up to
the grid rounding (:func:`~.pld_build.atoms_pmf`); the pair is symmetric (add = remove). Pure ε = aΔ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..results import Support
from .base import Mechanism, Sampler, Step, register
from .pld_build import atoms_pmf, pure_dp_mu, pure_dp_rdp
from .samplers import NoAmplification

#: The largest sensitivity whose support is enumerated (Δ + 1 atoms).
MAX_SENSITIVITY = 10**7


@register
@dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    """Discrete Laplace noise of parameter ``noise_parameter`` a > 0 for integer ``sensitivity`` Δ ≥ 1."""

    noise_parameter: float
    sensitivity: int = 1
    name = "discrete_laplace"
    event_types = ("DiscreteLaplaceDpEvent",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_parameter", v.positive("noise_parameter", self.noise_parameter))
        object.__setattr__(self, "sensitivity", v.integer("sensitivity", self.sensitivity, minimum=1,
                                                          maximum=MAX_SENSITIVITY))

    def supports(self, sampler: Sampler) -> Support:
        ok = isinstance(sampler, NoAmplification)
        return Support(ok, "" if ok else f"a discrete Laplace step under {sampler.describe()} is not analysed")

    def relation(self, sampler: Sampler) -> str:
        return "add_remove"

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        a, d = self.noise_parameter, self.sensitivity
        x = np.arange(1, d)
        log_norm = math.log(math.tanh(a / 2)) if a < 30 else -2 * math.exp(-a)  # log tanh(a/2), stable
        losses = np.concatenate([[a * d, -a * d], a * (d - 2.0 * x)])
        probs = np.concatenate([[1 / (1 + math.exp(-a)), math.exp(-a * d) / (1 + math.exp(-a))],
                                np.exp(log_norm - a * x)])
        return atoms_pmf(losses, probs, h, pessimistic)

    def pure_epsilon(self, sampler: Sampler) -> float:
        return float(self.noise_parameter * self.sensitivity)

    def rdp(self, sampler: Sampler, orders) -> np.ndarray:
        return pure_dp_rdp(self.pure_epsilon(sampler), orders)

    def gdp_mu(self, sampler: Sampler) -> float:
        return pure_dp_mu(self.pure_epsilon(sampler))

    def to_dp_event(self, sampler: Sampler):
        from dp_accounting.dp_event import DiscreteLaplaceDpEvent

        return DiscreteLaplaceDpEvent(self.noise_parameter, self.sensitivity)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.noise_parameter, event.sensitivity), NoAmplification(), 1)]

    def event_label(self, sampler: Sampler) -> str:
        return f"DiscreteLaplaceDpEvent(a={self.noise_parameter:g}, sensitivity={self.sensitivity})"
