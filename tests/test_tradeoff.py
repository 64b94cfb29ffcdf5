"""The certified trade-off curve: the bracket contains the exact curve (q = 1, T = 1) from α = 1e-12 to 0.5."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from reconrisk import Release
from reconrisk._src.accounting.gaussian import gaussian_delta
from reconrisk._src.measures.tradeoff import exact_beta, exact_power, gdp_curve, rdp_curve
from reconrisk._src.api import tradeoff
from reconrisk.errors import ReconRiskError

REL = 1e-9  # relative tolerance of the containment checks (the exact values carry ~1e-15 relative error)

log_alpha = st.floats(math.log(1e-12), math.log(0.5))


def _contains(t, release, alphas):
    p = exact_power(release, alphas)
    b = exact_beta(release, alphas)
    assert np.all(t.power.lower <= p * (1 + REL)), (t.power.lower - p) / p
    assert np.all(t.power.upper >= p * (1 - REL)), (t.power.upper - p) / p
    assert np.all(t.beta.lower <= b * (1 + REL)), (t.beta.lower - b) / b
    assert np.all(t.beta.upper >= b * (1 - REL)), (t.beta.upper - b) / b


@settings(max_examples=40)
@given(
    sigma=st.floats(math.log(0.5), math.log(200.0)).map(math.exp),
    q=st.floats(math.log(1e-5), math.log(0.999)).map(math.exp),
    la=st.lists(log_alpha, min_size=5, max_size=12),
)
def test_single_step_pld_bracket_contains_the_exact_mixture_curve(sigma, q, la):
    """T = 1: f(α) = (1−q)(1−α) + qΦ(−Φ⁻¹(α) − 1/σ) must lie in the PLD bracket (hundreds of points in all)."""
    r = Release(sigma, q, 1)
    a = np.exp(np.array(la))
    _contains(tradeoff(r, a, method="pld"), r, a)


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.5, 20.0), t=st.integers(1, 300), la=st.lists(log_alpha, min_size=5, max_size=12))
def test_full_batch_pld_bracket_contains_the_gaussian_dp_curve(sigma, t, la):
    """q = 1, any T: f(α) = Φ(Φ⁻¹(1−α) − √T/σ) must lie in the PLD engine's bracket (not the closed-form path)."""
    r = Release(sigma, 1.0, t)
    a = np.exp(np.array(la))
    tr = tradeoff(r, a, method="pld")
    p, b = exact_power(r, a), exact_beta(r, a)
    # β = 1 − B inherits B's absolute rounding (a few ulps of 1), so where β is tiny the check allows 4e-16 absolute
    slack = 4e-16
    assert np.all(tr.power.lower <= p * (1 + REL) + slack) and np.all(tr.power.upper >= p * (1 - REL) - slack)
    assert np.all(tr.beta.lower <= b * (1 + REL) + slack) and np.all(tr.beta.upper >= b * (1 - REL) - slack)


@settings(max_examples=20)
@given(sigma=st.floats(0.3, 30.0), t=st.integers(1, 2000), la=st.lists(log_alpha, min_size=3, max_size=8))
def test_full_batch_closed_form_matches_an_independent_neyman_pearson_minimisation(sigma, t, la):
    """q = 1: 1 − f(α) = inf_ε e^ε α + δ(ε) with δ the Gaussian privacy profile (an independent code path)."""
    r = Release(sigma, 1.0, t)
    a = np.exp(np.array(la))
    tr = tradeoff(r, a)
    assert tr.method == "closed_form"
    _contains(tr, r, a)
    for alpha, p in zip(a, tr.power.upper):
        res = optimize.minimize_scalar(
            lambda e: math.exp(e) * alpha + float(gaussian_delta(e, sigma, steps=t)), bounds=(0.0, 400.0), method="bounded",
            options={"xatol": 1e-10},
        )
        np_value = min(res.fun, 1.0)
        mu = math.sqrt(t) / sigma
        if p < 1 - 1e-9 and alpha < 0.5 * math.erfc(mu / (2 * math.sqrt(2))):  # optimum at some ε ≥ 0
            assert np_value >= p * (1 - 1e-9) - 1e-300
            assert np_value <= p * (1 + 1e-4) + 1e-14


def test_curve_shape_and_trivial_test():
    r = Release(1.0, 0.02, 500)
    a = np.logspace(-12, math.log10(0.5), 300)
    t = tradeoff(r, a)
    assert t.method == "pld"
    assert np.all(t.beta.lower <= t.beta.upper)
    assert np.all(t.power.lower <= t.power.upper)
    assert np.all(np.diff(t.beta.upper) <= 1e-15)  # f is non-increasing
    assert np.all(t.beta.upper <= 1 - a + 1e-15)  # the trivial test: f(α) ≤ 1 − α
    assert np.all(t.power.lower >= a * (1 - 1e-12))
    assert float(np.max(t.width)) < 1e-3
    # relative precision of small TPRs (issue 9: relative width ≤ 1 % for κ ≥ 1e-6)
    small = a >= 1e-6
    assert np.all(t.power.upper[small] / t.power.lower[small] < 1.02)


def test_schedule_q1_is_one_gaussian():
    a = np.array([1e-9, 1e-3, 0.2])
    s = Release.schedule([(1.0, 1.0, 10), (2.0, 1.0, 40)])
    mu2 = 10 / 1.0 + 40 / 4.0
    one = Release(1.0 / math.sqrt(mu2), 1.0, 1)
    np.testing.assert_allclose(tradeoff(s, a).beta.upper, tradeoff(one, a).beta.upper, rtol=1e-12)


def test_side_curves_are_below_or_near_the_certified_curve():
    r = Release(1.0, 0.01, 1000)
    a = np.logspace(-8, math.log10(0.5), 50)
    t = tradeoff(r, a)
    assert np.all(rdp_curve(r, a) <= t.beta.upper + 1e-12)  # RDP gives a valid (looser) lower bound on f
    b, mu, exact = gdp_curve(r, a)
    assert not exact and mu == pytest.approx(0.01 * math.sqrt(1000 * math.expm1(1.0)))
    b1, mu1, exact1 = gdp_curve(Release(2.0, 1.0, 4), a)
    assert exact1 and mu1 == pytest.approx(1.0)
    np.testing.assert_allclose(b1, exact_beta(Release(2.0, 1.0, 4), a), rtol=1e-12)


@pytest.mark.parametrize("alphas", [[0.0], [1.0], [-0.1], [float("nan")], "x", []])
def test_bad_alphas(alphas):
    with pytest.raises(ReconRiskError, match="alphas"):
        tradeoff(Release(1.0, 0.1, 10), alphas)


def test_bad_release_and_method():
    with pytest.raises(ReconRiskError, match="release"):
        tradeoff((1.0, 0.1, 10), [0.1])
    with pytest.raises(ReconRiskError, match="method"):
        tradeoff(Release(1.0, 0.1, 10), [0.1], method="edgeworth")
    with pytest.raises(ReconRiskError, match="closed_form"):
        tradeoff(Release(1.0, 0.1, 10), [0.1], method="closed_form")
