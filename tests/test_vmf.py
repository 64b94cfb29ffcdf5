"""Seed 004: VMF mechanism, its accounting and Bayes' capacity (spec_004 §9.3, §9.4, Table I, Table IV)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from reconrisk._src.accounting import vmf as acc
from reconrisk._src.theory import capacity as cap
from reconrisk.errors import ReconRiskError
from reconrisk._src.mechanisms import vmf as mech

P = 13700
GAMMA = 128 / 60000
DELTA = 1 / 60000


# -- log I_ν ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "nu,x",
    [(0, 3.0), (0.5, 1e-200), (5, 1e-300), (20, 700.0), (29, 2000.0), (45, 45.0), (50, 3.0), (60, 60.0),
     (100, 1e4), (6849, 25.0), (6849, 500.0), (1e5, 1.0), (10, 1e5)],
)
def test_log_iv_matches_mpmath(nu, x):
    mpmath.mp.dps = 30
    ref = float(mpmath.log(mpmath.besseli(nu, x, maxterms=10**6)))
    assert mech.log_iv(nu, x) == pytest.approx(ref, rel=1e-12, abs=1e-11)


@pytest.mark.parametrize("nu,x", [(1e5, 1e6), (6849.0, 1e6), (6849.0, 1e5), (3e4, 2e3), (99.5, 1e6), (51.0, 0.5)])
def test_log_iv_recurrence_where_mpmath_is_slow_or_fails(nu, x):
    # I_{ν−1}(x) − I_{ν+1}(x) = (2ν/x) I_ν(x) in ratio form: I_{ν−1}/I_ν = 2ν/x + I_{ν+1}/I_ν
    lm, l0, lp = mech.log_iv(nu - 1, x), mech.log_iv(nu, x), mech.log_iv(nu + 1, x)
    assert math.exp(lm - l0) == pytest.approx(2 * nu / x + math.exp(lp - l0), rel=1e-9)


def test_log_iv_agrees_with_scipy_where_scipy_works():
    nu = np.array([0.0, 1.0, 2.5, 10.0, 49.0, 51.0, 80.0, 200.0])[:, None]
    x = np.array([0.1, 1.0, 10.0, 100.0, 500.0])[None, :]
    with np.errstate(divide="ignore"):
        ref = np.log(special.ive(nu, x)) + x
    ok = np.isfinite(ref)
    np.testing.assert_allclose(mech.log_iv(nu, x)[ok], ref[ok], rtol=1e-11, atol=1e-11)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 2e4), st.floats(1e-3, 1e5))
def test_bessel_ratio_in_unit_interval_and_log_iv_decreasing_in_nu(nu, x):
    r = mech.bessel_ratio(nu, x)
    assert 0 < r < 1
    assert mech.log_iv(nu + 1, x) < mech.log_iv(nu, x)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1e5), st.floats(1e-300, 1e6))
def test_log_iv_scalar_fast_path_equals_array_path(nu, x):
    assert mech.log_iv(nu, x) == float(mech.log_iv(np.array([nu]), np.array([x]))[0])


def test_log_iv_rejects_bad_input():
    with pytest.raises(ReconRiskError, match="nu"):
        mech.log_iv(-1, 2.0)
    with pytest.raises(ReconRiskError, match="x"):
        mech.log_iv(1, float("nan"))
    with pytest.raises(ReconRiskError, match="x"):
        mech.log_iv(100.0, -1.0)
    with pytest.raises(ReconRiskError, match="nu"):
        mech.log_iv(float("inf"), 1.0)


def test_mean_resultant_spec_values():
    assert mech.vmf_mean_resultant(P, 75) == pytest.approx(0.0054743, rel=1e-4)
    assert mech.vmf_mean_resultant(P, 500) == pytest.approx(0.0364479, rel=1e-5)
    k = 2.0  # p = 3: A = coth κ − 1/κ
    assert mech.vmf_mean_resultant(3, k) == pytest.approx(1 / math.tanh(k) - 1 / k, rel=1e-13)


def test_logpdf_normalised_on_circle():
    # p = 2: ∫ e^{κ cos θ} dθ / C = 1
    k = 3.3
    th = np.linspace(0, 2 * np.pi, 20001)
    y = np.stack([np.cos(th), np.sin(th)], axis=1)
    f = np.exp(mech.vmf_logpdf(y, [1.0, 0.0], k))
    assert np.trapezoid(f, th) == pytest.approx(1.0, rel=1e-9)


# -- sampler -----------------------------------------------------------------------------------
@pytest.mark.parametrize("p,concentration,n", [(3, 2.0, 20000), (100, 30.0, 5000), (P, 75.0, 400), (P, 500.0, 400)])
def test_sampler_mean_cosine_within_3_se(p, concentration, n):
    rng = np.random.default_rng(1234)
    mu = rng.standard_normal(p)
    mu /= np.linalg.norm(mu)
    y = mech.sample_vmf(mu, concentration, n, rng, batch=200)
    assert np.allclose(np.linalg.norm(y, axis=1), 1.0)
    c = y @ mu
    assert abs(c.mean() - mech.vmf_mean_resultant(p, concentration)) < 3 * c.std(ddof=1) / math.sqrt(n)


def test_sampler_cosine_law_ks_p3():
    # p = 3: W = μᵀy has density κ e^{κw} / (2 sinh κ) on [−1, 1]
    k = 2.5
    rng = np.random.default_rng(7)
    mu = np.array([0.3, -0.4, 0.866])
    w = mech.sample_vmf(mu, k, 5000, rng) @ (mu / np.linalg.norm(mu))
    cdf = lambda t: np.expm1(k * (t + 1)) / np.expm1(2 * k)  # noqa: E731
    assert stats.kstest(w, cdf).pvalue > 0.01
    # and the law of the rotation: the tangent part is isotropic (mean ≈ 0 off the mean direction)
    y = mech.sample_vmf(mu, k, 5000, np.random.default_rng(8))
    mean = y.mean(axis=0)
    assert np.allclose(mean, mech.vmf_mean_resultant(3, k) * mu / np.linalg.norm(mu), atol=0.03)


def test_sampler_same_seed_same_numbers():
    a = mech.sample_vmf([1.0, 2.0, 3.0, 4.0], 5.0, 10, np.random.default_rng(3))
    b = mech.sample_vmf([1.0, 2.0, 3.0, 4.0], 5.0, 10, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_sampler_rejects_bad_input():
    with pytest.raises(ReconRiskError, match="mu"):
        mech.sample_vmf([0.0, 0.0], 1.0, 2, np.random.default_rng(0))
    with pytest.raises(ReconRiskError, match="concentration"):
        mech.sample_vmf([1.0, 0.0], -1.0, 2, np.random.default_rng(0))
    with pytest.raises(ReconRiskError, match="rng"):
        mech.sample_vmf([1.0, 0.0], 1.0, 2, 42)


# -- RDP, δ (spec_004 §9.3) ------------------------------------------------------------------------
RDP_TABLE = {
    25: [0.091241, 0.13686, 0.182479, 0.273711, 0.91186],
    75: [0.821143, 1.23166, 1.64209, 2.462545, 8.167771],
    100: [1.459776, 2.189489, 2.918931, 4.376534, 14.461263],
    500: [36.447874, 54.563601, 72.514327, 107.67281, 308.052555],
}


@pytest.mark.parametrize("concentration", sorted(RDP_TABLE))
def test_rdp_table(concentration):
    got = acc.vmf_rdp([1.0, 1.5, 2.0, 3.0, 10.0], concentration, P)
    np.testing.assert_allclose(got, RDP_TABLE[concentration], rtol=2e-5)


def test_rdp_small_p_closed_forms():
    a = np.array([1.5, 2.0, 3.0])
    np.testing.assert_allclose(acc.vmf_rdp(a, 2.0, 3), [2.650005494716, 2.919867013927, 3.204523766165], rtol=1e-10)
    np.testing.assert_allclose(acc.vmf_rdp(a, 2.0, 2), [3.201958508065, 3.384191583593, 3.559489270818], rtol=1e-10)
    # p = 3 formula for arbitrary κ, α
    k, al = 0.7, 4.2
    ref = (math.log(math.sinh((2 * al - 1) * k) / math.sinh(k)) - math.log(2 * al - 1)) / (al - 1)
    assert acc.vmf_rdp(al, k, 3) == pytest.approx(ref, rel=1e-12)


def test_rdp_theorem1_and_prop3():
    got = [acc.vmf_rdp(2.0, 100.0, p) for p in (150, 750, 12800, 13700)]
    np.testing.assert_allclose(got, [135.463, 49.395, 3.124, 2.919], atol=6e-4)
    assert acc.vmf_rdp_multi(2.0, [100] * 3, [12800, 750, 150]) == pytest.approx(187.98, abs=0.01)


def test_kl_is_limit_of_rdp():
    kl = acc.vmf_rdp(1.0, 75.0, P)
    assert kl < acc.vmf_rdp(1.0 + 1e-5, 75.0, P) == pytest.approx(kl, rel=3e-5)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.1, 300), st.integers(2, 20000), st.floats(1.01, 50))
def test_rdp_increasing_in_alpha_and_below_pure_dp(concentration, p, alpha):
    lo, hi = acc.vmf_rdp([alpha, alpha + 0.5], concentration, p)
    assert 0 <= lo <= hi * (1 + 1e-9) + 1e-12
    assert hi <= 2 * concentration * (1 + 1e-9)


def test_delta_values():
    d, a = acc.vmf_delta(5.0, 100.0, P)
    assert d == pytest.approx(2.4066e-2, rel=1e-4) and a == pytest.approx(2.3987, abs=1e-3)
    d, a = acc.vmf_delta(100.0, 500.0, P)
    assert d == pytest.approx(1.944e-13, rel=1e-3) and a == pytest.approx(1.894, abs=1e-3)
    assert acc.vmf_delta(200.0, 100.0, P)[0] == 0.0  # ε ≥ 2κ: pure DP


def test_delta_is_infimum_over_alpha():
    d, a = acc.vmf_delta(5.0, 100.0, P)
    al = np.linspace(1.05, 20, 500)
    tau = acc.vmf_rdp(al, 100.0, P)
    dal = np.exp((al - 1) * (tau - 5.0)) / (al - 1) * (1 - 1 / al) ** al
    assert d <= dal.min() * (1 + 1e-9)
    assert d >= dal.min() * (1 - 1e-3)


# -- Table I and the conversions ---------------------------------------------------------------------
TABLE_I_APPROACH2 = {100: 2.4825, 125: 4.5855, 150: 7.9659, 175: 9.7176, 200: 10.8928, 225: 17.2446, 300: 41.0086}
PAPER_TABLE_I = {100: 2.48, 125: 4.59, 150: 7.97, 175: 9.72, 200: 10.9, 225: 17.25, 300: 41.02}


@pytest.mark.parametrize("concentration", sorted(TABLE_I_APPROACH2))
def test_table_i_approach2(concentration):
    res = acc.vmf_epsilon(concentration, P, GAMMA, 3, DELTA, "2", interpolation="paper")
    assert res.bound.upper is None  # the paper's interpolation is not an upper bound: an estimate
    assert res.bound.estimate == pytest.approx(PAPER_TABLE_I[concentration], abs=0.02)
    assert res.bound.estimate == pytest.approx(TABLE_I_APPROACH2[concentration], abs=2e-3)


@pytest.mark.parametrize("concentration,eps", [(25, 0.0139), (50, 0.0867), (75, 0.49)])
def test_table_i_approach1(concentration, eps):
    res = acc.vmf_epsilon(concentration, P, GAMMA, 3, DELTA, "1")
    assert res.bound.upper == pytest.approx(eps, rel=0.05)


def test_cgf_interpolation_is_never_below_paper():
    for k in (150, 300):
        paper = acc.vmf_epsilon(k, P, GAMMA, 3, DELTA, "2", interpolation="paper").bound.estimate
        cgf = acc.vmf_epsilon(k, P, GAMMA, 3, DELTA, "2", interpolation="cgf").bound.upper
        assert cgf >= paper - 1e-9
    assert acc.vmf_epsilon(300, P, GAMMA, 3, DELTA, "2", interpolation="cgf").bound.upper > 41.1


def test_more_compositions_more_epsilon_and_kappa_inverse():
    e3 = acc.vmf_epsilon(100, P, GAMMA, 3, DELTA, "2").bound.upper
    e30 = acc.vmf_epsilon(100, P, GAMMA, 30, DELTA, "2").bound.upper
    assert e30 > e3
    k = acc.concentration_for_epsilon(2.0, P, GAMMA, 3, DELTA, "2", rel_tol=1e-3)
    assert acc.vmf_epsilon(k, P, GAMMA, 3, DELTA, "2").bound.upper <= 2.0
    assert acc.vmf_epsilon(k * 1.002, P, GAMMA, 3, DELTA, "2").bound.upper > 2.0


def test_full_batch_rdp_conversion_matches_direct():
    # γ = 1, N = 1: approach 2 is the CKS conversion of Prop. 1 itself
    res = acc.vmf_epsilon(100, P, 1.0, 1, 1e-5, "2")
    al = np.linspace(1.01, 60, 6000)
    eps, _ = acc.rdp_to_epsilon(al, acc.vmf_rdp(al, 100, P), 1e-5)
    assert res.bound.upper == pytest.approx(eps, rel=1e-4)
    # and it is consistent with δ(ε) of Prop. 4
    assert acc.vmf_delta(res.bound.upper, 100, P)[0] == pytest.approx(1e-5, rel=1e-3)


def test_vmf_epsilon_rejects_bad_input():
    with pytest.raises(ReconRiskError, match="concentration"):
        acc.vmf_epsilon(-1, P, GAMMA, 3, DELTA)
    with pytest.raises(ReconRiskError, match="compositions"):
        acc.vmf_epsilon(10, P, GAMMA, 0, DELTA)
    with pytest.raises(ReconRiskError, match="approach"):
        acc.vmf_epsilon(10, P, GAMMA, 3, DELTA, "3")
    with pytest.raises(ReconRiskError, match="delta"):
        acc.vmf_epsilon(10, P, GAMMA, 3, 1.5)


@pytest.mark.parametrize("eps,sigma", [(0.49, 1.23), (2.48, 0.660), (10.9, 0.420), (41.02, 0.282), (173, 0.174)])
def test_table_iv_gaussian_sigma(eps, sigma):
    # Opacus RDP accountant (fractional orders) via dp_accounting, steps = 1406 (spec_004 §4)
    assert acc.gaussian_sigma_opacus(eps, GAMMA, 1406, DELTA, rel_tol=1e-3) == pytest.approx(sigma, rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("eps,sigma", [(0.49, 1.23), (10.9, 0.420), (173, 0.174)])
def test_table_iv_gaussian_sigma_with_our_rdp_accountant(eps, sigma):
    # reconrisk's own RDP accountant (fractional orders, continuous minimisation; issue 9) against the same column
    from reconrisk._src.api import noise_multiplier_for_epsilon

    assert noise_multiplier_for_epsilon(eps, GAMMA, 1406, DELTA, accountant="rdp") == pytest.approx(sigma, rel=0.01)


# -- Bayes' capacity (spec_004 §9.4) ---------------------------------------------------------------------
def test_capacity_small_p_exact():
    assert math.exp(cap.log_capacity_vmf(3, 2)) == pytest.approx(4.115220339696, rel=1e-9)
    assert math.exp(cap.log_capacity_vmf(3, 3)) == pytest.approx(6.014909469941, rel=1e-9)
    assert math.exp(cap.log_capacity_gaussian(0.5, 1, 1)) == pytest.approx(2.595769121606, rel=1e-9)
    assert math.exp(cap.log_capacity_gaussian(0.5, 1, 2)) == pytest.approx(5.506628274631, rel=1e-9)


@pytest.mark.parametrize(
    "concentration,sigma,vmf,g1,g3",
    [(75, 1.23, 74.795, 94.99, 283.99), (100, 0.66, 99.635, 176.77, 526.89), (150, 0.461, 149.179, 252.72, 751.19),
     (200, 0.42, 198.54, 277.27, 823.41), (300, 0.282, 296.716, 411.93, 1217.29),
     (400, 0.204, 394.163, 567.78, 1668.31), (500, 0.174, 490.882, 664.48, 1945.52)],
)
def test_capacity_p13700(concentration, sigma, vmf, g1, g3):
    # the spec's values are printed to 5–6 digits; 1e-4 relative is looser than their rounding
    assert cap.log_capacity_vmf(concentration, P) == pytest.approx(vmf, rel=1e-4)
    assert cap.log_capacity_gaussian(sigma, 1, P) == pytest.approx(g1, rel=1e-4)
    assert cap.log_capacity_gaussian(sigma, 3, P) == pytest.approx(g3, rel=1e-4)
    assert cap.log_capacity_vmf(concentration, P) < cap.log_capacity_gaussian(sigma, 1, P)


@pytest.mark.parametrize("p", [1, 2, 3, 5, 12])
def test_capacity_closed_forms_match_numeric_integral(p):
    assert cap.log_capacity_gaussian(0.7, 1.3, p) == pytest.approx(
        cap.log_capacity_numeric("gaussian", p, noise_std=0.7, radius=1.3), rel=1e-10)
    if p >= 2:
        assert cap.log_capacity_vmf(3.7, p) == pytest.approx(cap.log_capacity_numeric("vmf", p, concentration=3.7), rel=1e-10)


def test_capacity_limits_and_discrete():
    assert cap.log_capacity_vmf(0.0, 50) == pytest.approx(0.0, abs=1e-12)  # κ → 0: no leakage
    assert cap.log_capacity_vmf(2.0, 3) == pytest.approx(math.log(2.0 * math.exp(2.0) / math.sinh(2.0)), rel=1e-12)  # κe^κ/sinh κ
    assert cap.log_bayes_capacity(np.eye(4)) == pytest.approx(math.log(4))  # identity: |X|
    assert cap.log_bayes_capacity(np.full((3, 5), 0.2)) == pytest.approx(0.0)  # no leak
    # data processing (Lemma 3): C·D leaks no more than D
    rng = np.random.default_rng(0)
    d = rng.dirichlet(np.ones(6), size=4)
    c = np.eye(4)[rng.integers(0, 4, size=7)]
    assert cap.log_bayes_capacity(c @ d) <= cap.log_bayes_capacity(d) + 1e-12
    with pytest.raises(ReconRiskError, match="rows must sum to 1"):
        cap.log_bayes_capacity([[0.5, 0.4]])


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 10), st.floats(0.01, 10), st.integers(1, 3000))
def test_gaussian_capacity_monotone(sigma, radius, p):
    base = cap.log_capacity_gaussian(sigma, radius, p)
    assert base >= 0
    assert cap.log_capacity_gaussian(sigma, radius * 1.1, p) > base
    assert cap.log_capacity_gaussian(sigma * 1.1, radius, p) < base


@pytest.mark.parametrize("concentration,eps", [(25, 0.164), (75, 1.64), (100, 4.56), (150, 14.1), (200, 174)])
def test_steps_as_compositions_spec_values(concentration, eps):
    # spec_004 §3: with N = 1406 steps (approach 2, paper interpolation) VMF's ε is far larger than Table I's
    res = acc.vmf_epsilon(concentration, P, GAMMA, 1406, DELTA, "2", interpolation="paper")
    assert res.bound.estimate == pytest.approx(eps, rel=0.01)


def test_subsampling_amplification_is_stable():
    e, d = acc.subsample_eps_delta(1.0, 1e-5, 0.01)
    assert e == pytest.approx(math.log1p(0.01 * math.expm1(1.0)), rel=1e-14) and d == pytest.approx(1e-7)
    assert acc.subsample_eps_delta(1000.0, 1e-5, 0.01)[0] == pytest.approx(1000.0 + math.log(0.01), rel=1e-12)
    assert acc.subsample_eps_delta(2.0, 1e-5, 1.0) == (2.0, 1e-5)


def test_old_keyword_spellings_warn_and_still_work():
    """Issue 22: `kappa` is only the prior's baseline; the VMF concentration's old keyword works for one release."""
    import warnings

    new = acc.vmf_epsilon(concentration=50.0, dim=P, sample_rate=GAMMA, compositions=3, delta=DELTA, approach="2")
    with pytest.warns(DeprecationWarning, match=r"vmf_epsilon\(\): kappa= is deprecated.*use concentration="):
        old = acc.vmf_epsilon(kappa=50.0, dim=P, sample_rate=GAMMA, compositions=3, delta=DELTA, approach="2")
    assert old == new
    with pytest.warns(DeprecationWarning, match="concentration="):
        assert mech.vmf_mean_resultant(3, kappa=2.0) == mech.vmf_mean_resultant(3, 2.0)
    with pytest.warns(DeprecationWarning, match="noise_std="):
        assert cap.log_capacity_gaussian(sigma=0.5, radius=1, dim=2) == cap.log_capacity_gaussian(0.5, 1, 2)
    with pytest.warns(DeprecationWarning, match="sample_rate="):
        assert acc.subsample_eps_delta(1.0, 1e-5, gamma=0.1) == acc.subsample_eps_delta(1.0, 1e-5, 0.1)
    with pytest.raises(ReconRiskError, match="give concentration once"):
        acc.vmf_delta(1.0, kappa=3.0, concentration=3.0, dim=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling is silent
        acc.vmf_delta(1.0, concentration=3.0, dim=3)


def test_vmf_release_has_a_concentration_not_a_noise_multiplier():
    from reconrisk import Release, Segment

    r = Release.vmf(500.0, 0.25, 5, clip_norm=2.0)
    assert r.concentration == 500.0 and r.noise_scale == 500.0 and r.noise == "vmf"
    assert r.segments == (Segment(None, 0.25, 5, concentration=500.0),)
    assert r.to_dict() == {"clip_norm": 2.0, "noise": "vmf", "steps": 5, "concentration": 500.0, "sample_rate": 0.25}
    assert Release(concentration=500.0, sample_rate=0.25, steps=5, clip_norm=2.0) == r
    for attr in ("noise_multiplier", "noise_std"):
        with pytest.raises(ReconRiskError, match="VMF release.*concentration"):
            getattr(r, attr)
    with pytest.raises(ReconRiskError, match="a VMF release has a concentration, not a noise multiplier"):
        Release(5.0, noise="vmf")
    with pytest.raises(ReconRiskError, match="concentration is for noise='vmf'"):
        Release(concentration=5.0, noise="gaussian")
    with pytest.raises(ReconRiskError, match="not both"):
        Segment(1.0, 0.5, 3, concentration=2.0)
    sched = Release.schedule([(5.0, 0.1, 3), (5.0, 0.1, 4), (7.0, 0.1, 1)], noise="vmf")
    assert [s.to_dict() for s in sched.segments] == [
        {"concentration": 5.0, "sample_rate": 0.1, "steps": 7}, {"concentration": 7.0, "sample_rate": 0.1, "steps": 1}]
    g = Release(2.0, 0.1, 3, clip_norm=0.5)
    assert g.noise_std == g.noise_scale == 1.0
