"""The discrete Gaussian (Canonne, Kamath & Steinke 2020) as a step: δ(ε) of its PLD against a direct sum over the
lattice in 50-digit arithmetic (mpmath), pessimistic ≥ exact ≥ optimistic, its RDP bound above the exact Rényi
divergence, and the analysis of steps that dp_accounting has no event for.

Tolerances: the exact references are summed over |y| ≤ 60σ + Δ in mpmath (the rest is below e^{−1800}); the
brackets are compared with 1e-12 of float slack.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk._src.analysis.dispatch import analyse
from reconrisk._src.analysis.events import EventAnalysis
from reconrisk.errors import ReconRiskError
from reconrisk._src.mechanisms.base import Step, by_name
from reconrisk._src.mechanisms.discrete_gaussian import DiscreteGaussian
from reconrisk._src.mechanisms.samplers import NoAmplification, Poisson

mp.mp.dps = 50


def _lattice(sigma: float, sens: int):
    k = int(math.ceil(60 * sigma)) + sens
    ys = range(-k, k + 1)
    w = [mp.e ** (-mp.mpf(y) ** 2 / (2 * mp.mpf(sigma) ** 2)) for y in ys]
    z = mp.fsum(w)
    return list(ys), [x / z for x in w]


def exact_delta(sigma: float, sens: int, eps: float, t: int = 1) -> float:
    """δ(ε) = Σ_y P(y)(1 − e^{ε − L(y)})₊ of t composed steps, the t-fold loss being the loss of Σ y_i (affine)."""
    ys, ps = _lattice(sigma, sens)
    dist = {0: mp.mpf(1)}
    for _ in range(t):  # the distribution of the sum of t independent lattice draws
        nxt: dict = {}
        for a, pa in dist.items():
            for y, p in zip(ys, ps):
                if p > mp.mpf(10) ** -40:
                    nxt[a + y] = nxt.get(a + y, 0) + pa * p
        dist = nxt
    s2, d = mp.mpf(sigma) ** 2, mp.mpf(sens)
    out = mp.mpf(0)
    for y, p in dist.items():
        loss = (t * d * d - 2 * y * d) / (2 * s2)
        if loss > eps:
            out += p * (1 - mp.e ** (eps - loss))
    return float(out)


@pytest.mark.parametrize("sigma,sens", [(0.6, 1), (2.5, 1), (1.5, 3)])
def test_delta_is_bracketed_by_the_two_sides_of_its_pld(sigma, sens):
    m = DiscreteGaussian(sigma, sens)
    for h in (1e-2, 1e-4):
        up = m.pld(NoAmplification(), h, pessimistic=True, direction="remove")
        lo = m.pld(NoAmplification(), h, pessimistic=False, direction="remove")
        for eps in (0.0, 0.3, 1.0, 2.5):
            ex = exact_delta(sigma, sens, eps)
            u, l_ = float(up.delta([eps])[0]), float(lo.delta([eps])[0])
            assert l_ - 1e-12 <= ex <= u + 1e-12, (h, eps, l_, ex, u)
            assert u - l_ <= 2 * h * max(ex, 1e-3) + 1e-9  # the grid's width, no more


def test_composed_steps_are_bracketed_and_dispatched_without_an_event():
    sigma, sens, t = 1.2, 1, 3
    a = analyse([Step(DiscreteGaussian(sigma, sens), NoAmplification(), t)])
    assert isinstance(a, EventAnalysis) and a.relation == "add_remove"
    for eps in (0.2, 1.0):
        b = a.delta(eps, two_sided=True)
        ex = exact_delta(sigma, sens, eps, t)
        assert b.lower - 1e-12 <= ex <= b.upper + 1e-12 and b.upper - b.lower <= 1e-2 * b.upper
    assert a.rero(0.01).upper >= a.rero(0.01).lower >= 0.01
    assert "DiscreteGaussian(sigma=1.2, sensitivity=1)" in a.label


@settings(max_examples=10, deadline=None)
@given(sigma=st.floats(0.4, 4.0), sens=st.integers(1, 4), alpha=st.sampled_from([1.5, 2.0, 4.0, 10.0]))
def test_rdp_bound_is_above_the_exact_renyi_divergence(sigma, sens, alpha):
    ys, ps = _lattice(sigma, sens)
    pq = dict(zip(ys, ps))
    a = mp.mpf(alpha)
    s = mp.fsum(p ** a * pq.get(y - sens, mp.mpf(0)) ** (1 - a) for y, p in zip(ys, ps) if y - sens in pq)
    exact = float(mp.log(s) / (a - 1))
    bound = float(DiscreteGaussian(sigma, sens).rdp(NoAmplification(), [alpha])[0])
    assert exact <= bound * (1 + 1e-12) and bound == alpha * sens**2 / (2 * sigma**2)


def test_registered_validated_and_refused_in_one_line():
    assert by_name("discrete_gaussian") is DiscreteGaussian and DiscreteGaussian.event_types == ()
    for make, needle in [(lambda: DiscreteGaussian(0.0), r"sigma must be in \(0, 100000\]; found 0"),
                         (lambda: DiscreteGaussian(1.0, 0), r"sensitivity must be an integer in \[1, 1000000\]; found 0"),
                         (lambda: Step(DiscreteGaussian(1.0), Poisson(0.1)), "not analysed"),
                         (lambda: DiscreteGaussian(1.0).to_dp_event(NoAmplification()), "has no dp_accounting event")]:
        with pytest.raises(ReconRiskError, match=needle) as e:
            make()
        assert "\n" not in str(e.value)
    np.testing.assert_array_equal(DiscreteGaussian(2.0, 2).rdp(NoAmplification(), [2.0, 3.0]), [1.0, 1.5])
