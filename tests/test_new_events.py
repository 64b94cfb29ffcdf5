"""End to end: the events reconrisk used to refuse, through ``reconrisk.analyse`` (issue 41, m-events).

Each certified ε (and ReRo) is at most dp_accounting's best accountant for the event (the minimum of its PLD and
RDP accountants where each supports it) plus a stated tolerance, and at least a sound lower reference (an exact
value of a pair the event dominates, or reconrisk's own optimistic side), read through the one traversal
(``reconrisk._src.mechanisms.traverse``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

dpa = pytest.importorskip("dp_accounting")
E = dpa.dp_event
NR = dpa.NeighboringRelation

DELTAS = (1e-5, 1e-7)


def _analyse(event):
    import reconrisk

    return reconrisk.analyse(event)


def _pld_eps(event, count, delta, relation=NR.ADD_OR_REMOVE_ONE):
    acc = dpa.pld.PLDAccountant(relation, value_discretization_interval=1e-4)
    acc.compose(event, count)
    return acc.get_epsilon(delta)


def _rdp_eps(event, count, delta, relation=NR.ADD_OR_REMOVE_ONE):
    acc = dpa.rdp.RdpAccountant(neighboring_relation=relation)
    acc.compose(event, count)
    return acc.get_epsilon(delta)


def _gaussian_eps(mu, delta):
    """Exact ε(δ) of the μ-GDP Gaussian pair (Balle & Wang 2018), by root finding."""
    d = lambda e: special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2) - delta  # noqa: E731
    return 0.0 if d(0.0) <= 0 else optimize.brentq(d, 0.0, 10 * mu + mu * mu + 50, xtol=1e-14, rtol=1e-14)


def _rero_ceiling(kappa, eps_of_delta):
    from reconrisk._src.measures.baselines import rero_from_dp

    return min(float(rero_from_dp(kappa, eps_of_delta(d), d)[0]) for d in (1e-3, 1e-5, 1e-7))


@pytest.mark.parametrize("n,q,b,sigma,T", [(2000, 75 / 2000, 90, 1.1, 300), (500, 0.1, 45, 1.5, 50)])
def test_truncated_poisson_end_to_end(n, q, b, sigma, T):
    from reconrisk._src.mechanisms.truncated_poisson import TruncatedPoisson, truncated_poisson_pld

    event = E.SelfComposedDpEvent(E.TruncatedSubsampledGaussianDpEvent(n, q, b, sigma), T)
    a = _analyse(event)
    for delta in DELTAS:
        ours = a.epsilon(delta).upper
        theirs = _pld_eps(event.event, T, delta)  # dp_accounting's RDP accountant does not support this event
        low = max(truncated_poisson_pld(sigma, TruncatedPoisson(q, n, b), 1e-3, False, d).self_compose(T).epsilon(delta)
                  for d in ("remove", "add"))
        assert ours <= theirs * (1 + 1e-3) + 1e-9
        assert ours >= low * (1 - 1e-9)
    kappa = 1e-3
    r = a.rero(kappa)
    assert kappa <= r.upper <= _rero_ceiling(kappa, lambda d: _pld_eps(event.event, T, d)) + 1e-9


@pytest.mark.parametrize("sigma,counts,T", [(1.2, [15], 1), (3.0, [100, 20], 4)])
def test_tree_aggregation_end_to_end(sigma, counts, T):
    event = E.SelfComposedDpEvent(E.SingleEpochTreeAggregationDpEvent(sigma, counts), T)
    depth = math.ceil(math.log2(max(counts) + 1))
    a = _analyse(event)
    for delta in DELTAS:
        ours = a.epsilon(delta).upper
        theirs = _rdp_eps(event.event, T, delta, NR.REPLACE_SPECIAL)  # dp_accounting's PLD accountant refuses it
        exact = _gaussian_eps(math.sqrt(T * depth) / sigma, delta)  # the worst case is this Gaussian pair
        assert ours <= theirs * (1 + 1e-6)
        assert ours >= exact * (1 - 1e-9)
    r = a.rero(1e-2)
    assert 1e-2 <= r.upper <= _rero_ceiling(1e-2, lambda d: _rdp_eps(event.event, T, d, NR.REPLACE_SPECIAL)) + 1e-9


@pytest.mark.parametrize("rho,xi", [(0.05, 0.0), (0.5, 0.01)])
def test_zcdp_end_to_end(rho, xi):
    a = _analyse(E.ZCDpEvent(rho, xi))
    for delta in DELTAS:
        ours = a.epsilon(delta).upper
        assert ours <= _rdp_eps(E.ZCDpEvent(rho, xi), 1, delta) * (1 + 1e-6)
        assert ours >= _gaussian_eps(math.sqrt(2 * rho), delta) * (1 - 1e-9)  # √(2ρ)-GDP Gaussians are ρ-zCDP
    r = a.rero(1e-2)
    assert 1e-2 <= r.upper <= _rero_ceiling(1e-2, lambda d: _rdp_eps(E.ZCDpEvent(rho, xi), 1, d)) + 1e-9


@pytest.mark.parametrize("mean,shape", [(10.0, 1.0), (5.0, 0.0), (8.0, math.inf)])
def test_repeat_and_select_end_to_end(mean, shape):
    inner = E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.5)), 200)
    event = E.RepeatAndSelectDpEvent(inner, mean, shape)
    a = _analyse(event)
    for delta in DELTAS:
        ours = a.epsilon(delta).upper
        assert ours <= _rdp_eps(event, 1, delta) * (1 + 1e-6)  # only dp_accounting's RDP accountant supports it
        assert ours > 0
    r = a.rero(1e-2)
    assert 1e-2 <= r.upper <= _rero_ceiling(1e-2, lambda d: _rdp_eps(event, 1, d)) + 1e-9


def test_repeat_and_select_of_one_run_is_at_least_the_run():
    """Geometric with mean 1: exactly one run (K ≡ 1), so any sound ε is at least the run's exact ε."""
    inner = E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(1.0)), 100)
    ours = _analyse(E.RepeatAndSelectDpEvent(inner, 1.0, 1.0)).epsilon(1e-5).upper
    assert ours >= _analyse(inner).epsilon(1e-5, two_sided=True).lower * (1 - 1e-9)
    assert ours <= _rdp_eps(E.RepeatAndSelectDpEvent(inner, 1.0, 1.0), 1, 1e-5) * (1 + 1e-6)


def test_composed_new_and_old_events_and_mixture_zero_noise_one_line():
    from reconrisk.errors import ReconRiskError

    ev = E.ComposedDpEvent([E.ZCDpEvent(0.01), E.SingleEpochTreeAggregationDpEvent(2.0, [7])])
    e = _analyse(ev).epsilon(1e-5).upper
    rdp = dpa.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_SPECIAL)
    rdp.compose(ev)
    assert 0 < e <= rdp.get_epsilon(1e-5) * (1 + 1e-6)
    for bad in (E.MixtureOfGaussiansDpEvent(0, [1], [1]),
                E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.5, E.MixtureOfGaussiansDpEvent(0, [1], [1])), 3)):
        with pytest.raises(ReconRiskError) as info:
            _analyse(bad).epsilon(1e-5)
        assert "\n" not in str(info.value)
