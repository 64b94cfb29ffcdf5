"""Randomized response over k buckets: :class:`RandomizedResponse` (noise parameter p, replace-one neighbours).

With probability 1 − p the true bucket, else one drawn uniformly from the k. For inputs x ≠ x′ the output x has
probabilities 1 − p + p/k and p/k, x′ the reverse, and each of the k − 2 others p/k under both: three atoms of
privacy loss ±log(1 + k(1 − p)/p) and 0, exact up to the grid rounding (:func:`~.pld_build.atoms_pmf`; the pair
is symmetric). Pure ε = log(1 + k(1 − p)/p) (``dp_accounting``'s ``RandomizedResponseDpEvent``, replace-one).
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


@register
@dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """Randomized response with ``noise_parameter`` p ∈ (0, 1] over ``num_buckets`` k ≥ 2 buckets."""

    noise_parameter: float
    num_buckets: int
    name = "randomized_response"
    event_types = ("RandomizedResponseDpEvent",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_parameter", v.in_range("noise_parameter", self.noise_parameter, 0.0, 1.0,
                                                                high_open=False))
        object.__setattr__(self, "num_buckets", v.integer("num_buckets", self.num_buckets, minimum=2))

    def supports(self, sampler: Sampler) -> Support:
        ok = isinstance(sampler, NoAmplification)
        return Support(ok, "" if ok else f"randomized response under {sampler.describe()} is not analysed")

    def relation(self, sampler: Sampler) -> str:
        return "replace_one"

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        p, k = self.noise_parameter, self.num_buckets
        e = self.pure_epsilon(sampler)
        return atoms_pmf([e, -e, 0.0], [1 - p + p / k, p / k, (k - 2) * p / k], h, pessimistic)

    def pure_epsilon(self, sampler: Sampler) -> float:
        p, k = self.noise_parameter, self.num_buckets
        return math.log1p(k * (1 - p) / p)

    def rdp(self, sampler: Sampler, orders) -> np.ndarray:
        """The exact Rényi divergence of the three-atom pair (symmetric), (1/(α−1)) log Σ P^α Q^(1−α) (as
        ``dp_accounting``'s RDP accountant), never above the pure-DP curve it replaces."""
        p, k = self.noise_parameter, self.num_buckets
        a = np.asarray(orders, dtype=float)
        if p >= 1.0:
            return np.zeros(a.shape)
        hi, lo = math.log(1 - p + p / k), math.log(p / k)
        terms = np.stack([a * hi + (1 - a) * lo, a * lo + (1 - a) * hi, np.full(a.shape, math.log((k - 2) * p / k)
                                                                                  if k > 2 else -np.inf)])
        exact = np.logaddexp.reduce(terms, axis=0) / (a - 1)
        return np.minimum(np.maximum(exact, 0.0), pure_dp_rdp(self.pure_epsilon(sampler), orders))

    def gdp_mu(self, sampler: Sampler) -> float:
        return pure_dp_mu(self.pure_epsilon(sampler))

    def to_dp_event(self, sampler: Sampler):
        import dp_accounting as dpa

        return dpa.RandomizedResponseDpEvent(self.noise_parameter, self.num_buckets)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(event.noise_parameter, event.num_buckets), NoAmplification(), 1)]

    def event_label(self, sampler: Sampler) -> str:
        return f"RandomizedResponseDpEvent(p={self.noise_parameter:g}, k={self.num_buckets})"
