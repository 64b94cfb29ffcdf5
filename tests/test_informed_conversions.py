"""Seed 002 §VII conversions and continuous-prior κ: spec_002 §5.10's table, brute-force and independent cross-checks."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from reconrisk._src.measures.conversions import (
    rero_from_guarantee,
    dp_from_two_point_rero,
    rero_from_dp,
    rero_from_rdp,
    rero_from_rdp_order,
    rero_from_zcdp,
    zcdp_optimal_order,
)
from reconrisk.errors import ReconRiskError
from reconrisk._src.priors import log_kappa_gaussian, log_kappa_gaussian_dg, log_kappa_uniform_ball

# spec_002 §5.10 (printed to 8 decimals): we match to half a unit in the last printed place, 5e-9
TABLE_RDP = [((0.01, 1.0, 2.0), 0.16487213), ((0.01, 1.0, 10.0), 0.03898208), ((1e-3, 2.0, 4.0), 0.02520239)]
TABLE_DP = [((0.01, 1.0), 0.02718282), ((1e-3, 2.0), 0.00738906)]
TABLE_ZCDP = [((0.01, 0.5), 0.12614592), ((1e-3, 1.0), 0.07056412), ((1e-6, 2.0), 0.00497929)]


@pytest.mark.parametrize("args, gamma", TABLE_RDP)
def test_theorem2_table(args, gamma):
    k, e, a = args
    assert rero_from_rdp_order(k, e, a) == pytest.approx(gamma, abs=5.0000001e-9)
    assert rero_from_guarantee("rdp", k, epsilon=e, order=a, conversion="balle2022").upper == pytest.approx(gamma, abs=5.0000001e-9)
    assert rero_from_rdp(k, [a], [e])[0] == pytest.approx(gamma, abs=5.0000001e-9)  # the curve form agrees


@pytest.mark.parametrize("args, gamma", TABLE_DP)
def test_corollary3_table(args, gamma):
    k, e = args
    assert rero_from_guarantee("dp", k, epsilon=e, conversion="balle2022").upper == pytest.approx(gamma, abs=5.0000001e-9)
    assert rero_from_dp(k, e)[0] == pytest.approx(gamma, abs=5.0000001e-9)


@pytest.mark.parametrize("args, gamma", TABLE_ZCDP)
def test_corollary4_table(args, gamma):
    k, r = args
    assert rero_from_guarantee("zcdp", k, rho=r, conversion="balle2022").upper == pytest.approx(gamma, abs=5.0000001e-9)
    assert rero_from_zcdp(k, r)[0] == pytest.approx(gamma, abs=5.0000001e-9)


def test_corollary4_optimal_order_from_table():
    assert zcdp_optimal_order(0.01, 0.5) == pytest.approx(3.03485, abs=1e-5)


def _brute_zcdp(k, r):
    """min over α > 1 of Thm 2 along ε(α) = ρα: a fine grid, then a bounded scalar search around its best point."""
    alphas = np.exp(np.linspace(1e-9, math.log(1e4), 20001))
    vals = (alphas - 1) / alphas * (math.log(k) + r * alphas)
    i = int(np.argmin(vals))
    lo, hi = alphas[max(i - 1, 0)], alphas[min(i + 1, alphas.size - 1)]
    res = optimize.minimize_scalar(lambda a: (a - 1) / a * (math.log(k) + r * a), bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-12})
    return min(1.0, math.exp(min(res.fun, vals[i])))


@given(st.floats(1e-8, 0.5), st.floats(1e-3, 5.0))
def test_zcdp_equals_brute_force_minimisation_over_orders(k, r):
    brute = _brute_zcdp(k, r)
    closed = rero_from_guarantee("zcdp", k, rho=r, conversion="balle2022").upper
    assert closed == pytest.approx(brute, rel=1e-7, abs=1e-12)


@given(st.floats(1e-6, 0.5), st.floats(0.0, 10.0), st.floats(1.01, 100.0))
def test_rdp_bound_lies_between_kappa_and_dp_bound_when_informative(k, e, a):
    g = rero_from_rdp_order(k, e, a)
    assert 0 < g <= 1
    # (α, ε)-RDP → (∞, ε) is weaker, so Thm 2 is never worse than Cor. 3 for the same ε (when κe^ε < 1)
    if k * math.exp(e) < 1:
        assert g >= k * math.exp(e) * (1 - 1e-12)


def test_log_kappa_keeps_tiny_priors_finite():
    lk = log_kappa_uniform_ball(784, 0.5)
    out = rero_from_guarantee("zcdp", log_kappa=lk, rho=10.0, conversion="balle2022")
    assert out.upper == pytest.approx(math.exp(-(math.sqrt(-lk) - math.sqrt(10.0)) ** 2), rel=1e-12)
    assert 0 < out.upper < 1e-100


@pytest.mark.parametrize("source,kw", [("dp", {"epsilon": 800.0}), ("dp", {"epsilon": 1e308}),
                                       ("rdp", {"epsilon": 1e300, "order": 2.0}),
                                       ("rdp", {"epsilon": 3000.0, "order": 1.0001})])
def test_huge_epsilon_caps_at_one_instead_of_overflowing(source, kw):
    # min(1, e^x) is taken as e^min(0, x): math.exp(800) raised OverflowError before (an internal error in the CLI)
    assert rero_from_guarantee(source, 0.5, conversion="balle2022", **kw).upper == 1.0
    assert rero_from_guarantee(source, 0.5, **kw).upper >= 1.0 - 1e-12  # the optimal conversion saturates too
    assert rero_from_dp(0.5, 1e308)[0] == 1.0
    assert rero_from_rdp(0.5, [2.0, 8.0], [1e300, 1e300])[0] == 1.0
    assert rero_from_rdp_order(0.5, 1e300, 2.0) == 1.0
    # the cap is not reached below it: κ e^ε < 1 is returned as is
    assert rero_from_guarantee("dp", 1e-300, epsilon=600.0).upper == pytest.approx(math.exp(600.0 - 300 * math.log(10)))


# ---------------------------------------------------------------------------------------- Theorem 5
def test_theorem5_table():
    assert dp_from_two_point_rero(0.5, 0.6) == pytest.approx((0.0, 0.2), abs=1e-12)
    e, d = dp_from_two_point_rero(0.75, 0.8)
    assert e == pytest.approx(math.log(3), abs=1e-12) and d == pytest.approx(0.2, abs=1e-12)


@given(st.floats(0.5, 0.999), st.floats(0.0, 1.0))
def test_theorem5_is_the_rearranged_attack_inequality(k, t):
    """Check the DP inequality it returns on two Gaussian output laws whose best two-point attack meets γ."""
    g = k + t * (1 - k)
    e, d = dp_from_two_point_rero(k, g)
    assert 0 <= d <= 1 + 1e-12
    # any event probabilities p0 = P[M(D⁻∪z) ∈ E], p1 = P[M(D⁻∪z′) ∈ E] with attack success ≤ γ satisfy the DP inequality
    p0 = np.linspace(0, 1, 101)
    p1 = np.clip((g - k * (1 - p0)) / (1 - k), 0, 1)  # the largest p1 that ReRo allows
    assert np.all(p1 <= math.exp(e) * p0 + d + 1e-9)


# ---------------------------------------------------------------------------------------- κ of continuous priors
def test_prop6_table():
    assert log_kappa_uniform_ball(784, 0.5) == pytest.approx(-543.427, abs=1e-3)
    assert log_kappa_uniform_ball(10, 0.5) == pytest.approx(-6.9315, abs=1e-4)
    assert log_kappa_uniform_ball(10, 1.5) == 0.0


def test_prop6_against_monte_carlo():
    """Independent check: sample the unit 3-ball and count points within η of the centre."""
    rng = np.random.default_rng(0)
    g = rng.standard_normal((200_000, 3))
    pts = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.random((200_000, 1)) ** (1 / 3)
    p = np.mean(np.linalg.norm(pts, axis=1) <= 0.5)
    assert p == pytest.approx(math.exp(log_kappa_uniform_ball(3, 0.5)), abs=4 * math.sqrt(0.125 * 0.875 / 200_000))


def test_prop7_table():
    assert math.exp(log_kappa_gaussian(10, 1.0, 1.0)) == pytest.approx(1.7212e-4, rel=1e-4)
    assert math.exp(log_kappa_gaussian_dg(10, 1.0, 1.0)) == pytest.approx(9.0017e-4, rel=1e-4)
    assert math.exp(log_kappa_gaussian(100, 1.0, 5.0)) == pytest.approx(1.1350e-15, rel=1e-4)
    assert math.exp(log_kappa_gaussian_dg(100, 1.0, 5.0)) == pytest.approx(1.524e-14, rel=1e-3)


@given(st.integers(1, 400), st.floats(0.1, 3.0), st.floats(0.05, 30.0))
def test_prop7_matches_scipy_and_lies_below_the_dg_bound(d, sigma, eta):
    lk = log_kappa_gaussian(d, sigma, eta)
    ref = stats.chi2.logcdf(eta**2 / sigma**2, d)
    if np.isfinite(ref) and ref > -600:
        assert lk == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert lk <= log_kappa_gaussian_dg(d, sigma, eta) + 1e-9
    assert lk <= 0


def test_prop7_stays_finite_where_scipy_underflows():
    lk = log_kappa_gaussian(784, 1.0, 5.0)
    assert np.isfinite(lk) and lk < -700
    assert lk <= log_kappa_gaussian_dg(784, 1.0, 5.0)


# ---------------------------------------------------------------------------------------- boundary
@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: rero_from_guarantee("rdp", 0.1, epsilon=1.0), "order"),
        (lambda: rero_from_guarantee("rdp", 0.1, epsilon=1.0, order=1.0, conversion="balle2022"), "order"),
        (lambda: rero_from_guarantee("rdp", 0.1, epsilon=1.0, order=0.5), "order"),
        (lambda: rero_from_guarantee("rdp", 0.1, epsilon=-1.0, order=2.0), "epsilon"),
        (lambda: rero_from_guarantee("rdp", 0.1, epsilon=1.0, order=2.0, delta=0.1), "delta"),
        (lambda: rero_from_guarantee("dp", 0.1, epsilon=1.0, delta=1.5), "delta"),
        (lambda: rero_from_guarantee("dp", 0.1, epsilon=[1.0, 2.0], delta=[0.1, 0.2, 0.3]), "delta"),
        (lambda: rero_from_guarantee("dp", 0.1, epsilon=1.0, conversion="tight"), "conversion"),
        (lambda: rero_from_guarantee("rdp", 0.1, epsilon=[1.0, 2.0], order=[2.0]), "order"),
        (lambda: rero_from_guarantee("dp", 1.5, epsilon=1.0), "kappa"),
        (lambda: rero_from_guarantee("dp", 0.1, epsilon=-1.0), "epsilon"),
        (lambda: rero_from_guarantee("dp", 0.1, rho=1.0), "rho"),
        (lambda: rero_from_guarantee("zcdp", 0.1, rho=0.0), "rho"),
        (lambda: rero_from_guarantee("zcdp", 0.1, epsilon=1.0), "rho"),
        (lambda: rero_from_guarantee("gdp", 0.1, epsilon=1.0), "source"),
        (lambda: rero_from_guarantee("dp", epsilon=1.0), "kappa"),
        (lambda: rero_from_guarantee("dp", log_kappa=0.5, epsilon=1.0), "log_kappa"),
        (lambda: dp_from_two_point_rero(0.4, 0.5), "kappa"),
        (lambda: dp_from_two_point_rero(0.7, 0.6), "rero"),
        (lambda: log_kappa_uniform_ball(0, 0.5), "dim"),
        (lambda: log_kappa_gaussian(10, -1.0, 1.0), "sigma"),
        (lambda: log_kappa_gaussian(10, 1.0, float("nan")), "eta"),
    ],
)
def test_bad_input_names_the_parameter(call, word):
    with pytest.raises(ReconRiskError, match=word):
        call()
