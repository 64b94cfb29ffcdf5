"""The RDP-only event mechanisms (zCDP, DP-FTRL tree aggregation, repeat-and-select) against dp_accounting's RDP
accountant, curve for curve through its public ``rdp`` property (1e-9 relative), and the mixture-of-Gaussians
checks (one ReconRiskError line where dp_accounting raised its own error)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from reconrisk.errors import ReconRiskError
from reconrisk._src.mechanisms import base
from reconrisk._src.mechanisms.samplers import NoAmplification
from reconrisk._src.mechanisms.checks import mixture_of_gaussians
from reconrisk._src.mechanisms.repeat_select import RepeatAndSelect, repeat_and_select_rdp, tnb_gamma, tnb_mean
from reconrisk._src.mechanisms.tree_aggregation import TreeAggregation, tree_depth
from reconrisk._src.mechanisms.zcdp import ZCDP

dpa = pytest.importorskip("dp_accounting")
E = dpa.dp_event
NR = dpa.NeighboringRelation
ORDERS = np.array([1.01, 1.1, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.5, 8.0, 12.0, 16.0, 32.0, 64.0, 128.0, 256.0])


def _theirs(event, relation=NR.ADD_OR_REMOVE_ONE, orders=ORDERS, count=1) -> np.ndarray:
    acc = dpa.rdp.RdpAccountant(list(orders), neighboring_relation=relation)
    acc.compose(event, count)
    return acc.rdp


def _close(ours, theirs, rel=1e-9):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    assert ours.shape == theirs.shape
    assert np.array_equal(np.isinf(ours), np.isinf(theirs))
    f = np.isfinite(theirs)
    np.testing.assert_allclose(ours[f], theirs[f], rtol=rel, atol=0)


@dataclass(frozen=True)
class _Gauss(base.Mechanism):
    """A test-local Gaussian (q = 1) mechanism, RDP α/(2σ²), so the repeat-and-select tests need no other module."""

    sigma: float
    name = ""

    def rdp(self, sampler, orders):
        return np.asarray(orders, float) / (2 * self.sigma**2)


def _read(event):
    """A small reader standing in for the traversal: Gaussian, zCDP, tree aggregation, Composed, SelfComposed."""
    if isinstance(event, E.GaussianDpEvent):
        return [base.Step(_Gauss(event.noise_multiplier), NoAmplification())]
    if isinstance(event, E.ZCDpEvent):
        return ZCDP.from_dp_event(event, _read)
    if isinstance(event, E.SingleEpochTreeAggregationDpEvent):
        return TreeAggregation.from_dp_event(event, _read)
    if isinstance(event, E.ComposedDpEvent):
        return [s for e in event.events for s in _read(e)]
    if isinstance(event, E.SelfComposedDpEvent):
        return [base.Step(s.mechanism, s.sampler, s.count * event.count) for s in _read(event.event)]
    raise AssertionError(event)


# -- zCDP ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rho,xi", [(0.0, 0.0), (0.013, 0.0), (0.7, 0.05), (3.2, 1.5), (0.0, 0.4)])
def test_zcdp_rdp_is_dp_accountings(rho, xi):
    (step,) = ZCDP.from_dp_event(E.ZCDpEvent(rho, xi), _read)
    _close(step.rdp(ORDERS), _theirs(E.ZCDpEvent(rho, xi)))
    _close(base.Step(step.mechanism, step.sampler, 7).rdp(ORDERS), _theirs(E.ZCDpEvent(rho, xi), count=7))


def test_zcdp_pure_epsilon_gdp_and_refusals():
    assert ZCDP(0.0, 0.4).pure_epsilon(NoAmplification()) == 0.4  # every order bounded by ξ: D_∞ ≤ ξ
    assert ZCDP(0.1, 0.0).pure_epsilon(NoAmplification()) == math.inf
    assert ZCDP(0.1).gdp_mu(NoAmplification()) is None and ZCDP(0.0).gdp_mu(NoAmplification()) == 0.0
    assert ZCDP(0.1).pld(NoAmplification(), 1e-3, pessimistic=True, direction="remove") is None
    for bad, needle in [((-0.1, 0.0), "ZCDpEvent.rho"), ((0.1, -1.0), "ZCDpEvent.xi"), ((float("nan"), 0), "rho")]:
        with pytest.raises(ReconRiskError, match=needle):
            ZCDP(*bad)


# -- tree aggregation ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma,counts", [(0.9, [1]), (1.3, [2, 3]), (2.0, [4]), (0.55, [100, 17, 3]), (4.0, 7),
                                          (1.0, [0, 0]), (0.0, [5])])
def test_tree_aggregation_rdp_is_dp_accountings(sigma, counts):
    ev = E.SingleEpochTreeAggregationDpEvent(sigma, counts)
    (step,) = TreeAggregation.from_dp_event(ev, _read)
    _close(step.rdp(ORDERS), _theirs(ev, NR.REPLACE_SPECIAL))
    _close(base.Step(step.mechanism, step.sampler, 3).rdp(ORDERS), _theirs(ev, NR.REPLACE_SPECIAL, count=3))


def test_tree_depth_and_gdp():
    assert [tree_depth(c) for c in ([0], [1], [2], [3], [4], [7], [8], 1000, [5, 1023])] == [0, 1, 2, 2, 3, 3, 4, 10, 10]
    m = TreeAggregation(1.5, [6])
    assert m.gdp_mu(NoAmplification()) == pytest.approx(math.sqrt(3) / 1.5, rel=1e-15)
    for bad, needle in [((-1.0, [3]), "noise_multiplier"), ((1.0, []), "step_counts"), ((1.0, [-2]), "step_counts"),
                        ((1.0, [1.5]), "step_counts")]:
        with pytest.raises(ReconRiskError, match=needle):
            TreeAggregation(*bad)


def _gaussian_delta(mu, eps):
    """Exact δ(ε) of the μ-GDP Gaussian pair (Balle & Wang 2018)."""
    eps = np.asarray(eps, float)
    return special.ndtr(-eps / mu + mu / 2) - np.exp(eps) * special.ndtr(-eps / mu - mu / 2)


@pytest.mark.parametrize("sigma,counts", [(0.8, [3]), (2.5, [40, 9])])
def test_tree_aggregation_pld_brackets_the_gaussian(sigma, counts):
    m = TreeAggregation(sigma, counts)
    mu = math.sqrt(m.depth) / sigma
    eps = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 3.0])
    exact = _gaussian_delta(mu, eps)
    for d in ("remove", "add"):
        hi = m.pld(NoAmplification(), 1e-3, pessimistic=True, direction=d).delta(eps)
        assert np.all(hi >= exact * (1 - 1e-9)) and np.all(hi <= exact * 1.05 + 1e-12)
    lo = m.pld(NoAmplification(), 1e-3, pessimistic=False, direction="remove").delta(eps)
    assert np.all(lo <= exact * (1 + 1e-9)) and np.all(lo >= exact * 0.95 - 1e-12)


def test_tree_aggregation_degenerate_plds():
    none = TreeAggregation(1.0, [0]).pld(NoAmplification(), 1e-3, pessimistic=True, direction="remove")
    assert none.delta(np.array([0.0]))[0] == pytest.approx(0.0, abs=1e-15)
    revealed = TreeAggregation(0.0, [3]).pld(NoAmplification(), 1e-3, pessimistic=True, direction="add")
    assert revealed.delta(np.array([5.0]))[0] == 1.0


# -- repeat and select -------------------------------------------------------------------------------------------

INNER = [E.GaussianDpEvent(1.7), E.ZCDpEvent(0.05, 0.01),
         E.ComposedDpEvent([E.SelfComposedDpEvent(E.GaussianDpEvent(4.0), 10), E.ZCDpEvent(0.02)])]


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("mean,shape", [(1.0, 1.0), (10.0, 1.0), (7.5, 0.0), (3.0, 0.5), (20.0, 3.0),
                                        (5.0, math.inf), (30.0, math.inf)])
def test_repeat_and_select_rdp_is_dp_accountings(inner, mean, shape):
    ev = E.RepeatAndSelectDpEvent(inner, mean, shape)
    (step,) = RepeatAndSelect.from_dp_event(ev, _read)
    _close(step.rdp(ORDERS), _theirs(ev))
    for a in (1.5, 3.0, 32.0):  # one order alone: the curve depends on the grid, as theirs does
        _close(step.rdp(np.array([a])), _theirs(ev, orders=[a]))


def test_repeat_and_select_of_tree_aggregation_under_replace_special():
    ev = E.RepeatAndSelectDpEvent(E.SingleEpochTreeAggregationDpEvent(2.0, [15]), 4.0, 2.0)
    (step,) = RepeatAndSelect.from_dp_event(ev, _read)
    _close(step.rdp(ORDERS), _theirs(ev, NR.REPLACE_SPECIAL))
    assert step.relation == "add_remove"
    assert step.mechanism.pld(step.sampler, 1e-3, pessimistic=True, direction="remove") is None


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.0]), mean=st.floats(1.0, 200.0))
def test_tnb_gamma_inverts_the_mean(shape, mean):
    g = tnb_gamma(shape, mean)
    assert 0 < g <= 1
    assert tnb_mean(g, shape) >= mean * (1 - 1e-6)  # the lower (conservative) γ: a mean at least the asked one


@settings(max_examples=30, deadline=None)
@given(rho=st.floats(0.0, 2.0), mean=st.floats(1.0, 50.0), shape=st.sampled_from([0.0, 1.0, 3.0, math.inf]))
def test_repeat_and_select_is_monotone_in_the_order_and_above_the_inner_curve(rho, mean, shape):
    inner = rho * ORDERS
    out = repeat_and_select_rdp(ORDERS, inner, mean, shape)
    assert np.all(np.diff(out) >= -1e-12 * np.abs(out[1:])) if shape != math.inf else True
    assert np.all(out >= inner - 1e-12)  # choosing among repetitions never makes the release more private


def test_repeat_and_select_refusals():
    (inner,) = ZCDP.from_dp_event(E.ZCDpEvent(0.1), _read)
    for (mean, shape), needle in [((0.5, 1.0), "mean"), ((2.0, -1.0), "shape"), ((float("nan"), 1.0), "mean")]:
        with pytest.raises(ReconRiskError, match=needle):
            RepeatAndSelect((inner,), mean, shape)
    with pytest.raises(ReconRiskError, match="Steps"):
        RepeatAndSelect(("x",), 2.0, 1.0)


def test_registry_reads_the_new_events():
    from reconrisk._src.mechanisms import truncated_poisson

    assert base.for_event("ZCDpEvent") is ZCDP
    assert base.for_event("SingleEpochTreeAggregationDpEvent") is TreeAggregation
    assert base.for_event("RepeatAndSelectDpEvent") is RepeatAndSelect
    assert base.for_event("TruncatedSubsampledGaussianDpEvent") is truncated_poisson.TruncatedSubsampledGaussian
    assert base.by_name("none") is NoAmplification and base.by_name("truncated_poisson") is truncated_poisson.TruncatedPoisson
    assert ZCDP(0.3, 0.1).to_dp_event(NoAmplification()) == E.ZCDpEvent(0.3, 0.1)
    assert TreeAggregation(1.0, [3, 4]).to_dp_event(NoAmplification()) == E.SingleEpochTreeAggregationDpEvent(1.0, [3, 4])


# -- mixture of Gaussians checks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sd,sens,probs,needle", [
    (0.0, [1.0], [1.0], "standard_deviation must be > 0"),
    (-2.0, [0.0, 1.0], [0.5, 0.5], "standard_deviation"),
    (float("nan"), [1.0], [1.0], "standard_deviation"),
    (1.0, [-1.0, 1.0], [0.5, 0.5], "sensitivities must be finite, >= 0"),
    (1.0, [0.0, 1.0], [0.5, 0.7], "summing to 1"),
])
def test_mixture_checks_are_one_line(sd, sens, probs, needle):
    with pytest.raises(ReconRiskError, match=needle):
        mixture_of_gaussians(E.MixtureOfGaussiansDpEvent(sd, sens, probs))


@pytest.mark.parametrize("event", [
    E.MixtureOfGaussiansDpEvent(0, [1], [1]),
    E.SelfComposedDpEvent(E.MixtureOfGaussiansDpEvent(0, [1], [1]), 3),
    E.ComposedDpEvent([E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)), E.MixtureOfGaussiansDpEvent(0, [0, 1], [0.5, 0.5])]),
    E.MixtureOfGaussiansDpEvent(1e-5, [1e-300], [1.0]),  # dp_accounting recursed without end here
    E.MixtureOfGaussiansDpEvent(1.0, [-1.0, 1.0], [0.5, 0.5]),
])
def test_mixture_events_refused_in_one_line_through_analyse(event):
    from reconrisk._src.analysis.dispatch import analyse

    with pytest.raises(ReconRiskError) as info:
        analyse(event).epsilon(1e-5)
    assert type(info.value) is ReconRiskError and "\n" not in str(info.value)
    assert "MixtureOfGaussiansDpEvent" in str(info.value)


def test_stated_guarantees_are_not_amplified_again():
    from reconrisk._src.mechanisms.truncated_poisson import TruncatedPoisson

    poisson_like = TruncatedPoisson(0.1, 100, 100)
    for m in (ZCDP(0.1), TreeAggregation(1.0, [3])):
        assert not m.supports(poisson_like) and "as stated" in m.supports(poisson_like).reason
        with pytest.raises(ReconRiskError, match="states its guarantee"):
            base.Step(m, poisson_like)
        assert m.supports(NoAmplification())
