"""Private hyper-parameter tuning, ``dp_accounting``'s ``RepeatAndSelectDpEvent``: :class:`RepeatAndSelect`.

Papernot & Steinke 2022 ("Hyperparameter Tuning with Renyi Differential Privacy"): a mechanism is run a random
number K of times (K truncated negative binomial with shape η ≥ 0 — logarithmic at 0, geometric at 1 — or
Poisson, shape ∞, with the given mean) and only the best run is released. From the inner mechanism's RDP curve
ε(·) on the order grid:

* truncated negative binomial (Thm 2): ε'(λ) = ε(λ) + (1 + η)·min_λ̂ [(1 − 1/λ̂)ε(λ̂) − log(γ)/λ̂] + log(E K)/(λ − 1),
  γ the distribution's parameter for its mean, then made non-decreasing in λ (RDP is monotone in the order);
* Poisson (Thm 6): ε'(λ) = ε(λ) + μ·δ̂ + log(μ)/(λ − 1), δ̂ the inner curve's δ at ε̂ = log(1 + 1/(λ − 1)).

The numbers are computed as ``dp_accounting``'s RDP accountant computes them (the same grid search for γ, the
same RDP → δ conversion for δ̂), so the result depends on the order grid it is asked at, as theirs does. No
privacy-loss distribution is known: the analysis answers from the RDP curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Support
from .base import Mechanism, Step, register
from .samplers import NoAmplification, stated_only


def _expm1_over_x(x: float) -> float:
    if x < -0.1 or x > 0.1:
        return math.expm1(x) / x
    terms, y = [], 1.0
    for k in range(1, 100):
        y = y / k
        terms.append(y)
        y = y * x
    return math.fsum(terms)


def _logx_over_xm1(x: float) -> float:
    if x < 0.9 or x > 1.1:
        return math.log(x) / (x - 1)
    return math.fsum((1 - x) ** (k - 1) / k for k in range(1, 100))


def tnb_mean(gamma: float, shape: float) -> float:
    """Mean of the truncated negative binomial law of parameter γ ∈ (0, 1] and shape η ≥ 0 (Papernot & Steinke
    2022, Def. 1)."""
    if shape == 1:
        return 1 / gamma
    if shape == 0:
        return 1 / (gamma * _logx_over_xm1(gamma))
    return 1 / (gamma * _expm1_over_x(shape * math.log(gamma)) * _logx_over_xm1(gamma))


def tnb_gamma(shape: float, mean: float, tolerance: float = 1e-9) -> float:
    """γ of the truncated negative binomial law with that mean: bisection to relative ``tolerance``, the lower
    (conservative) end returned, as ``dp_accounting`` does."""
    if shape == 1:
        return 1 / mean
    lo, hi = 0.0, min(1.0, 2 * (shape + 1) / mean)
    while hi > lo * (1 + tolerance):
        g = (lo + hi) / 2
        if tnb_mean(g, shape) < mean:
            hi = g
        else:
            lo = g
    return lo


def rdp_to_delta(orders: np.ndarray, rdp: np.ndarray, epsilon: float) -> float:
    """δ at ``epsilon`` from an RDP curve: min over orders of Canonne, Kamath & Steinke 2020, Prop. 12 and the KL
    bound √(1 − e^{−ε(α)}) — the conversion ``dp_accounting`` uses inside the Poisson case."""
    logdeltas = []
    for a, r in zip(orders, rdp):
        if r < 0 or r == 0:
            logdelta = -math.inf
        else:
            logdelta = 0.5 * math.log1p(-math.exp(-r))
        if a > 1.01:
            logdelta = min(logdelta, (a - 1) * (r - epsilon + math.log1p(-1 / a)) - math.log(a))
        logdeltas.append(logdelta)
    return min(math.exp(min(logdeltas)), 1.0)


def repeat_and_select_rdp(orders, rdp, mean: float, shape: float) -> np.ndarray:
    """The RDP curve of the best of K runs of a mechanism whose RDP curve is ``rdp`` at ``orders`` (module
    docstring); +inf at orders ≤ 1."""
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    if orders.shape != rdp.shape or orders.ndim != 1 or orders.size == 0:
        raise ReconRiskError(f"orders and rdp must be non-empty lists of equal length; found {orders.size} and {rdp.size}")
    mean = v.in_range("RepeatAndSelectDpEvent.mean", mean, 1.0, math.inf, low_open=False)
    shape = v.in_range("RepeatAndSelectDpEvent.shape", shape, 0.0, math.inf, low_open=False, high_open=False)
    out = np.full(orders.size, np.inf)
    if shape == math.inf:  # Poisson: Thm 6
        for i, a in enumerate(orders):
            if a <= 1:
                continue
            dhat = rdp_to_delta(orders, rdp, math.log1p(1 / (a - 1)))
            out[i] = rdp[i] + mean * dhat + math.log(mean) / (a - 1)
        return out
    gamma = tnb_gamma(shape, mean)  # Thm 2
    with np.errstate(invalid="ignore"):
        c = (1 + shape) * np.min((1 - 1 / orders) * rdp - math.log(gamma) / orders)
    for i, a in enumerate(orders):
        if a > 1:
            out[i] = rdp[i] + math.log(mean) / (a - 1) + c
    return np.array([out[orders >= a].min() for a in orders])


@register
@dataclass(frozen=True)
class RepeatAndSelect(Mechanism):
    """The best of K runs of ``inner`` (a sequence of steps), K of mean ``mean`` and shape ``shape``."""

    inner: tuple[Step, ...]
    mean: float
    shape: float

    name = "repeat_and_select"
    event_types = ("RepeatAndSelectDpEvent",)

    def __post_init__(self) -> None:
        inner = tuple(self.inner)
        if not all(isinstance(s, Step) for s in inner):
            raise ReconRiskError("RepeatAndSelect.inner must be a sequence of reconrisk Steps")
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "mean", v.in_range("RepeatAndSelectDpEvent.mean", self.mean, 1.0, math.inf,
                                                    low_open=False))
        object.__setattr__(self, "shape", v.in_range("RepeatAndSelectDpEvent.shape", self.shape, 0.0, math.inf, high_open=False,
                                                     low_open=False))
        self._inner_relation()

    def _inner_relation(self) -> str | None:
        rels = {s.relation for s in self.inner} - {None}
        if len(rels) > 1:
            raise ReconRiskError("the repeated event mixes add/remove and replace-one steps; one guarantee needs one "
                                 "relation")
        return rels.pop() if rels else None

    def supports(self, sampler) -> Support:
        return stated_only("repeat-and-select", sampler)

    def relation(self, sampler) -> str | None:
        return self._inner_relation()

    def inner_rdp(self, orders) -> np.ndarray:
        orders = np.asarray(orders, dtype=float)
        total = np.zeros(orders.size)
        for s in self.inner:
            total = total + s.rdp(orders)
        return total

    def rdp(self, sampler, orders) -> np.ndarray:
        orders = np.asarray(orders, dtype=float)
        return repeat_and_select_rdp(orders, self.inner_rdp(orders), self.mean, self.shape)

    def to_dp_event(self, sampler):
        """``RepeatAndSelectDpEvent`` of the inner steps' events (one, or their composition; counts self-composed)."""
        from dp_accounting import dp_event

        parts = [s.mechanism.to_dp_event(s.sampler) for s in self.inner]
        parts = [e if s.count == 1 else dp_event.SelfComposedDpEvent(e, s.count) for e, s in zip(parts, self.inner)]
        inner = parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)
        return dp_event.RepeatAndSelectDpEvent(inner, self.mean, self.shape)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        return [Step(cls(tuple(read(event.event)), event.mean, event.shape), NoAmplification())]

    def event_label(self, sampler) -> str:
        inner = " + ".join(f"{s.count}×{s.mechanism.event_label(s.sampler)}" for s in self.inner)
        return f"RepeatAndSelectDpEvent({inner}, mean={self.mean:g}, shape={self.shape:g})"
