"""Seed 003 theory: spec_003 §12 (A) statements and (B) values, log tails, properties, input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from reconrisk._src._validate import MAX_EPSILON

from reconrisk._src.theory.analytic import (
    analytic_bound,
    analytic_calibration,
    averaged_variance,
    eta_for_rero,
    ncc_bound,
    ncc_exact,
    analytic_noise_multiplier_for_rero,
    optimal_num_rows,
    reconstruction_variance,
    rero_mse,
    rero_psnr,
    sample_ncc_decomposition,
    selection_probability,
)
from reconrisk._src.theory.analytic_laws import (
    MSELaw,
    PSNRLaw,
    log_gammainc,
    log_gammaincc,
    mse_asymptotic_normal,
    mse_law,
    psnr_law,
)
from reconrisk.errors import ReconRiskError
from reconrisk._src.accounting.gaussian import (
    gaussian_delta,
    gaussian_eps,
    gaussian_log_delta,
    gaussian_sigma,
    gdp_compose,
    gdp_mu,
)

REL = 1e-6


def close(value: float, printed: str) -> bool:
    """``value`` equals the spec's printed number to 1e-6 relative, or to half a unit of its last printed digit."""
    target = float(printed)
    mant = printed.lower().split("e")[0]
    exp = int(printed.lower().split("e")[1]) if "e" in printed.lower() else 0
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    tol = max(REL * abs(target), 0.5 * 10.0 ** (exp - decimals) * (1 + 1e-9))
    return abs(value - target) <= tol


def test_close_helper_can_fail():
    assert close(0.7255217, "0.72552")
    assert not close(0.72558, "0.72552")
    assert not close(0.126936737507 * (1 + 2e-6), "0.126936737507")


# ----------------------------------------------------------------------------
# (B) values — Eq. 3 privacy profile and its inverses
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps,sigma,printed", [(1, 1, "0.126936737507"), (0.5, 2, "0.0524403233"), (8, 0.5, "4.954017e-4")]
)
def test_privacy_profile_values(eps, sigma, printed):
    assert close(gaussian_delta(eps, sigma), printed)


@pytest.mark.parametrize(
    "eps,delta,printed",
    [(1, 1e-5, "3.7306316"), (3, 1e-5, "1.3905935"), (8, 1e-5, "0.6002291"), (0.5, 1e-5, "7.0318267"), (1, 1e-6, "4.2246789")],
)
def test_sigma_from_eps_delta(eps, delta, printed):
    assert close(gaussian_sigma(eps, delta), printed)


@pytest.mark.parametrize(
    "sigma,printed",
    [(5, "0.72552"), (2, "1.99309"), (1, "4.37718"), (0.5, "9.99726"), (0.1, "91.817"), (1e-2, "5425.5"), (1e-3, "5.0426e5"), (5e-4, "2.0085e6")],
)
def test_eps_from_sigma(sigma, printed):
    eps = gaussian_eps(sigma, 1e-5)
    assert close(eps, printed)
    # the inverse is tight: δ(ε) = 1e-5 to 1e-9 relative even at ε ≈ 2·10⁶
    assert gaussian_log_delta(eps, sigma) == pytest.approx(math.log(1e-5), rel=1e-9)


def test_log_delta_matches_direct_formula_and_does_not_overflow():
    for eps, sigma in [(0.3, 0.7), (2.0, 1.3), (5.0, 0.9), (0.0, 2.0)]:
        a, b = -eps * sigma + 0.5 / sigma, -eps * sigma - 0.5 / sigma
        direct = special.ndtr(a) - math.exp(eps) * special.ndtr(b)
        assert gaussian_delta(eps, sigma) == pytest.approx(direct, rel=1e-10)
    huge = gaussian_log_delta([1e3, 1e5, 1e8], 1.0)
    assert np.all(np.isfinite(huge)) and np.all(np.diff(huge) < 0)
    # far tail: log δ ≈ log φ(a) + log(1/|a| − 1/|b|) (Mills ratio), a = 1/2 − ε at σ = 1
    eps = 1e3
    a, b = 0.5 - eps, -0.5 - eps
    approx = -0.5 * a * a - 0.5 * math.log(2 * math.pi) + math.log(1 / abs(a) - 1 / abs(b))
    assert gaussian_log_delta(eps, 1.0) == pytest.approx(approx, rel=1e-5)
    assert gaussian_log_delta(math.inf, 1.0) == -math.inf


def test_gdp_composition():
    assert gdp_mu(2.0, steps=16) == pytest.approx(2.0)
    assert gdp_compose(2.0, 16) == pytest.approx(0.5)
    assert gaussian_delta(1.0, 2.0, steps=16) == pytest.approx(gaussian_delta(1.0, 0.5), rel=1e-12)
    s1 = gaussian_sigma(1.0, 1e-5)
    assert gaussian_sigma(1.0, 1e-5, steps=9) == pytest.approx(3 * s1, rel=1e-10)
    assert gaussian_eps(3 * s1, 1e-5, steps=9) == pytest.approx(1.0, rel=1e-9)


def test_eps_is_zero_when_delta_exceeds_tv_distance():
    tv = gaussian_delta(0.0, 1.0)
    assert gaussian_eps(1.0, min(0.999, tv * 1.01)) == 0.0


# ----------------------------------------------------------------------------
# (B) values — MSE and PSNR laws
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,eta,sigma,printed",
    [
        (1, 1.0, 1.0, "0.682689492"),
        (1, 0.1, 1.0, "0.248170366"),
        (1, 0.5, 1.0, "0.520500"),
        (4, 1.0, 1.0, "0.593994150"),
        (100, 1.0, 1.0, "0.518808315"),
        (10, 0.5, 1.0, "0.108822"),
        (10, 1.0, 1.0, "0.559507"),
        (1000, 1.0, 1.0, "0.505947"),
        (4, 0.1, 0.5, "0.191207865"),
    ],
)
def test_mse_cdf_values(n, eta, sigma, printed):
    assert close(mse_law(sigma, 1.0, n).cdf(eta), printed)
    assert close(rero_mse(eta, sigma, n, min_norm=1.0), printed)


def test_mse_quantiles():
    assert close(mse_law(1, 1, 1).median(), "0.454936")
    lo, hi = mse_law(1, 1, 4).ppf([0.01, 0.99])
    assert close(lo, "0.0742774") and close(hi, "3.3191760")


@pytest.mark.parametrize(
    "n,eta,sigma,m,printed",
    [
        (1, 0.0, 1.0, 1.0, "0.682689"),
        (1, 10.0, 1.0, 1.0, "0.248170"),
        (1, 3.0, 1.0, 1.0, "0.521021"),
        (10, 3.0, 1.0, 1.0, "0.109616"),
        (4, 20.0, 0.1, 0.5, "0.996981"),
    ],
)
def test_psnr_survival_values(n, eta, sigma, m, printed):
    assert close(psnr_law(sigma, m, n).sf(eta), printed)
    assert close(rero_psnr(eta, sigma, n, min_norm=m, data_range=1.0), printed)


@pytest.mark.parametrize(
    "n,sigma,norm,mean,sd",
    [
        (1, 1.0, 1.0, "5.517116", "9.6476"),
        (10, 1.0, 1.0, "0.448714", "2.0431"),
        (1000, 1.0, 1.0, "0.004344", "0.19432"),
        (1, 0.1, 1.0, "25.517116", None),
        (1, 1.0, 0.1, "25.517116", None),
        (1, 10.0, 1.0, "-14.482884", None),
        (1, 1.0, 10.0, "-14.482884", None),
    ],
)
def test_psnr_mean_and_sd(n, sigma, norm, mean, sd):
    law = psnr_law(sigma, norm, n)
    assert close(law.mean(), mean)
    if sd is not None:
        assert close(law.std(), sd)


def test_psnr_moments_against_quadrature():
    from scipy import integrate

    for n in (1, 3, 40):
        law = psnr_law(0.7, 1.3, n, data_range=2.0)
        lo, hi = law.ppf(1e-12), law.isf(1e-12)
        m1 = integrate.quad(lambda t: t * law.pdf(t), lo, hi, limit=400)[0]
        m2 = integrate.quad(lambda t: (t - m1) ** 2 * law.pdf(t), lo, hi, limit=400)[0]
        assert m1 == pytest.approx(law.mean(), rel=1e-7, abs=1e-9)
        assert m2 == pytest.approx(law.var(), rel=1e-6)


@pytest.mark.parametrize(
    "n,sigma,printed",
    [(4, 1, "0.4472136"), (4, 0.1, "0.9805807"), (150528, 1e-3, "0.9322908"), (150528, 1e-2, "0.2495885"), (12288, 1e-3, "0.9939120"), (12288, 1e-2, "0.6698298")],
)
def test_ncc_bound_values(n, sigma, printed):
    assert close(ncc_bound(sigma, n), printed)


@pytest.mark.parametrize(
    "sigma,mse,psnr,ncc",
    [(1e-3, "0.037632", "14.244", "0.9323"), (2.154e-3, "0.17460", "7.580", "0.7673"), (4.642e-3, "0.81090", "0.910", "0.4854"), (1e-2, "3.7632", "-5.756", "0.2496")],
)
def test_imagenet_like_target(sigma, mse, psnr, ncc):
    n = 150528
    norm = math.sqrt(0.25 * n)  # all entries 0.5
    law = mse_law(sigma, norm, n)
    assert close(law.mean(), mse)
    assert close(10 * math.log10(1.0 / law.mean()), psnr)
    assert close(ncc_bound(sigma, n), ncc)


def test_imagenet_like_tails():
    n = 150528
    law = mse_law(1e-3, math.sqrt(0.25 * n), n)
    assert close(law.cdf(0.037), "1.809e-6")
    assert close(law.ppf(0.05), "0.0374067")
    assert law.cdf(0.03) < 1e-300  # "≈ 0" in the spec; the log form gives the exact value
    lg = law.logcdf(0.03)
    assert np.isfinite(lg) and lg < -1000
    assert stats.chi2.logcdf(0.03 * n / 0.037632, n) == -np.inf  # what scipy gives: a wrong −inf


def test_calibration_value():
    assert close(analytic_noise_multiplier_for_rero("mse", 0.01, 0.05, 4, 0.5), "0.47447114")
    # closed form = brentq on the bound (spec_003 §12 B)
    from scipy.optimize import brentq

    s = brentq(lambda s: rero_mse(0.01, s, 4, min_norm=0.5) - 0.05, 1e-3, 10, xtol=1e-15)
    assert s == pytest.approx(analytic_noise_multiplier_for_rero("mse", 0.01, 0.05, 4, 0.5), rel=1e-9)


@pytest.mark.parametrize(
    "K,k,n,paper,exact", [(1000, 2, 1000, "0.4995", "0.184032"), (10000, 3, 50000, "1.33293e-3", "1.09138e-3")]
)
def test_selection_probability_values(K, k, n, paper, exact):
    assert close(selection_probability(k, K, n, exact=False), paper)
    assert close(selection_probability(k, K, n), exact)


def test_selection_paper_formula_is_not_a_probability():
    assert selection_probability(1, 100, 100, exact=False) == pytest.approx(1.0, rel=1e-9)
    assert selection_probability(2, 100, 10, exact=False) > 1  # C(100,2)/100 = 49.5
    assert close(selection_probability(1, 100, 100), "0.3697")
    total = sum(selection_probability(k, 30, 7) for k in range(31))
    assert total == pytest.approx(1.0, rel=1e-12)


# ----------------------------------------------------------------------------
# (A) statements
# ----------------------------------------------------------------------------


def test_mse_is_scaled_chi_square_with_mean_and_asymptotic_variance():
    sigma, norm, n = 0.3, 2.5, 17
    v = sigma**2 * norm**2
    law = mse_law(sigma, norm, n)
    eta = np.linspace(0.01, 3, 50)
    assert np.allclose(law.cdf(eta), stats.chi2.cdf(n * eta / v, n), rtol=1e-12)
    assert np.allclose(law.pdf(eta), stats.gamma.pdf(eta, n / 2, scale=2 * v / n), rtol=1e-10)
    assert law.mean() == pytest.approx(v)
    assert law.var() == pytest.approx(2 * v**2 / n)
    # Prop. B.3: Var of √N(MSE − v) is 2σ⁴‖X‖⁴
    assert n * law.var() == pytest.approx(2 * sigma**4 * norm**4)
    norm_approx = mse_asymptotic_normal(sigma, norm, n)
    assert norm_approx.mean() == pytest.approx(v) and norm_approx.var() == pytest.approx(law.var())


def test_optimal_variance_independent_of_clip_and_rows():
    sigma, norm = 0.2, 3.0
    for c, m in [(0.5, 1), (3.0, 1), (30.0, 100), (30.0, 1000), (300.0, 10**4)]:
        assert reconstruction_variance(sigma, c, m, norm) == pytest.approx(sigma**2 * norm**2)
    # Prop. B.2: the limit M → ∞ is σ²‖X‖² for any C
    assert reconstruction_variance(sigma, 1e6, 10**15, norm) == pytest.approx(sigma**2 * norm**2)
    # not clipped: over-proportional noise σ²C²/M
    assert reconstruction_variance(sigma, 30.0, 10, norm) == pytest.approx(sigma**2 * 90.0)
    assert reconstruction_variance(sigma, 0.5, 1, norm, bias=True) == pytest.approx(sigma**2 * (norm**2 + 1))


def test_fig1_setting_squared_row_rule():
    n = 150528
    norm = math.sqrt(0.25 * n)
    assert norm == pytest.approx(193.99, abs=0.005)
    assert (5000 / norm) ** 2 == pytest.approx(664.33, abs=0.005)
    assert math.sqrt(reconstruction_variance(5e-4, 5000, 1, norm)) == pytest.approx(2.5)
    assert math.sqrt(reconstruction_variance(5e-4, 5000, 1000, norm)) == pytest.approx(0.09699, rel=1e-4)
    assert optimal_num_rows(5000, norm) == 665
    paper_rows = optimal_num_rows(5000, norm, rule="paper")
    assert paper_rows == 26
    assert math.sqrt(reconstruction_variance(5e-4, 5000, paper_rows, norm)) == pytest.approx(0.49, abs=0.005)
    assert optimal_num_rows(2.0, 1.0) == 4 and optimal_num_rows(0.5, 1.0) == 1


def test_fig5_mse_scales_with_square_of_factor():
    a = 10.0
    assert mse_law(1e-3, a * 7.0, 300).mean() / mse_law(1e-3, 7.0, 300).mean() == pytest.approx(a * a)
    # PSNR with the range scaled by a is unchanged in law
    p1, p2 = psnr_law(1e-3, 7.0, 300, data_range=1.0), psnr_law(1e-3, a * 7.0, 300, data_range=a)
    assert p1.mean() == pytest.approx(p2.mean()) and p1.sf(40.0) == pytest.approx(p2.sf(40.0))


def test_ncc_bound_statement():
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = rng.uniform(-1, 2, size=rng.integers(2, 50))
        for s in (1e-3, 0.1, 1.0):
            assert ncc_exact(s, x) <= ncc_bound(s, x.size) + 1e-15
    # equality iff σ = 0: < 1 for every σ > 0, → 1 as σ → 0
    assert ncc_bound(1e-6, 4) < 1.0 and ncc_bound(1e-6, 4) == pytest.approx(1.0)
    # equality in Var(x) ≤ ‖X‖²/N for a zero-mean sample
    x = np.array([1.0, -1.0, 2.0, -2.0])
    assert ncc_exact(0.3, x) == pytest.approx(float(ncc_bound(0.3, 4)))
    # exact NCC matches the authors' exact_ncc(sv, s, C, σ) = sv·s/sqrt((sv·s)² + (Cσ)²) with C = ‖X‖·s
    x = np.array([0.1, 0.5, 0.9, 0.3])
    sv = np.std(x)
    ref = sv / math.sqrt(sv**2 + (np.linalg.norm(x) * 0.2) ** 2)
    assert ncc_exact(0.2, x) == pytest.approx(ref)


def test_sample_ncc_decomposition_eq66():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 4)
    z = rng.normal(0, 0.5, 4)
    d = sample_ncc_decomposition(x, z)
    assert d["ncc"] == pytest.approx(d["ratio_term"] + d["covariance_term"], rel=1e-12)
    assert d["ncc"] == pytest.approx(np.corrcoef(x, x + z)[0, 1], rel=1e-12)


def test_sample_ncc_can_exceed_prop6_bound():
    """Remark B.1: with N = 4 a sizeable fraction of sample NCCs lie above the population bound."""
    rng = np.random.default_rng(1)
    sigma, n = 1.0, 4
    above = 0
    for _ in range(200):
        x = rng.uniform(0, 1, n)
        xh = x + rng.normal(0, sigma * np.linalg.norm(x), n)
        above += np.corrcoef(x, xh)[0, 1] > ncc_bound(sigma, n)
    assert above > 20


def test_averaging_prop7():
    assert averaged_variance(0.5, 2.0, 4) == pytest.approx(0.25)
    assert mse_law(0.5, 2.0, 10, averaged=4).mean() == pytest.approx(0.25)
    # the σ² → σ²/k rule: averaging k equals σ/√k
    assert rero_mse(0.3, 1.0, 5, min_norm=1.0, averaged=4) == pytest.approx(rero_mse(0.3, 0.5, 5, min_norm=1.0))
    assert ncc_bound(1.0, 8, averaged=2) == pytest.approx(ncc_bound(1 / math.sqrt(2), 8))


def test_clip_variant_is_looser():
    for eta in (0.01, 0.1, 1.0):
        g = rero_mse(eta, 0.5, 8, min_norm=1.0)
        gc = rero_mse(eta, 0.5, 8, clip_norm=0.8)
        assert gc >= g
    assert rero_psnr(10.0, 0.5, 8, clip_norm=0.8) >= rero_psnr(10.0, 0.5, 8, min_norm=1.0)
    b = analytic_bound("mse", 0.5, 8, eta=0.1, min_norm=1.0, clip_norm=2.0)
    assert b.clip is None and b.optimal_rows == 4  # C > m: the C-variant does not apply


# ----------------------------------------------------------------------------
# log tails: no underflow to a wrong 0
# ----------------------------------------------------------------------------


def test_log_gammainc_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    cases = [(0.5, 1e-300), (2.0, 1e-200), (75264.0, 60000.0), (5.0, 0.01), (500.0, 100.0), (3.0, 2.0)]
    for a, x in cases:
        ref = float(mp.log(mp.gammainc(a, 0, x, regularized=True)))
        assert float(log_gammainc(a, x)) == pytest.approx(ref, rel=1e-10)
    for a, x in [(0.5, 800.0), (2.0, 1000.0), (100.0, 2000.0), (75264.0, 95000.0), (3.0, 2.0)]:
        ref = float(mp.log(mp.gammainc(a, x, mp.inf, regularized=True)))
        assert float(log_gammaincc(a, x)) == pytest.approx(ref, rel=1e-10)


def test_logcdf_down_to_1e_minus_300_and_beyond():
    law = mse_law(1.0, 1.0, 2)  # cdf = 1 − exp(−η) for N = 2, v = 1
    for target in (1e-100, 1e-300, 1e-320):
        eta = -math.log1p(-target)
        assert law.logcdf(eta) == pytest.approx(math.log(target), rel=1e-9)
    # beyond the smallest double: N = 4, v = 1 gives P(2, 2η) ≈ 2η², so log P(η = 1e-200) = log 2 − 400·ln 10
    law4 = mse_law(1.0, 1.0, 4)
    assert law4.cdf(1e-200) == 0.0
    assert law4.logcdf(1e-200) == pytest.approx(math.log(2.0) - 400 * math.log(10), rel=1e-12)
    psnr = psnr_law(1.0, 1.0, 2)  # sf(x) = 1 − exp(−10^{−x/10})
    assert psnr.logsf(3000.0) == pytest.approx(-300 * math.log(10), rel=1e-9)
    assert psnr.logsf(4000.0) == pytest.approx(-400 * math.log(10), rel=1e-9)
    # upper tails: sf of the MSE for N = 2 is exp(−η)
    assert law.logsf(1000.0) == pytest.approx(-1000.0, rel=1e-12)
    assert psnr.logcdf(-40.0) == pytest.approx(-1e4, rel=1e-9)
    # the ReRo bound in log form
    lg = rero_mse(1e-5, 1.0, 1000, min_norm=1.0, log=True)
    assert np.isfinite(lg) and lg < -5000


def test_logcdf_continuous_across_switch():
    law = mse_law(1.0, 1.0, 40)
    eta = np.geomspace(1e-30, 1.0, 2000)
    lg = law.logcdf(eta)
    assert np.all(np.isfinite(lg)) and np.all(np.diff(lg) > 0)
    ok = law.cdf(eta) > 1e-250
    assert np.allclose(lg[ok], np.log(law.cdf(eta[ok])), rtol=1e-10)


# ----------------------------------------------------------------------------
# distribution interface
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("law", [mse_law(0.4, 1.7, 6), psnr_law(0.4, 1.7, 6, data_range=2.0), MSELaw(2.0, 1), PSNRLaw(0.01, 3000)])
def test_distribution_interface(law):
    q = np.array([1e-6, 0.01, 0.3, 0.5, 0.9, 0.999999])
    x = law.ppf(q)
    assert np.allclose(law.cdf(x), q, rtol=1e-9)
    assert np.allclose(law.sf(law.isf(q)), q, rtol=1e-9)
    assert np.allclose(law.cdf(x) + law.sf(x), 1.0)
    assert np.allclose(np.exp(law.logsf(x)), law.sf(x), rtol=1e-10)
    assert np.allclose(np.exp(law.logpdf(x)), law.pdf(x))
    # pdf is the derivative of the cdf
    h = 1e-5 * (np.abs(x) if isinstance(law, MSELaw) else law.std())
    assert np.allclose((law.cdf(x + h) - law.cdf(x - h)) / (2 * h), law.pdf(x), rtol=1e-4)
    lo, hi = law.interval(0.9)
    assert law.cdf(hi) - law.cdf(lo) == pytest.approx(0.9)
    assert law.median() == pytest.approx(float(law.ppf(0.5)))
    assert np.isnan(law.ppf(1.5)) and np.isnan(law.ppf(-0.1))
    a, b = law.rvs(size=5, random_state=3), law.rvs(size=5, random_state=3)
    assert np.array_equal(a, b) and not np.array_equal(a, law.rvs(size=5, random_state=4))
    assert isinstance(law.cdf(float(x[2])), float)
    assert law.to_dict()["dim"] == law.dim


def test_mse_law_outside_support():
    law = mse_law(1.0, 1.0, 3)
    assert law.cdf(-1.0) == 0.0 and law.sf(-1.0) == 1.0 and law.pdf(-1.0) == 0.0
    assert law.logcdf(0.0) == -np.inf and law.cdf(np.inf) == 1.0


def test_rvs_matches_law():
    law = psnr_law(0.5, 1.0, 5)
    sample = law.rvs(size=4000, random_state=0)
    assert stats.kstest(sample, law.cdf).pvalue > 1e-3
    assert np.mean(sample) == pytest.approx(law.mean(), abs=4 * law.std() / math.sqrt(4000))


# ----------------------------------------------------------------------------
# properties (hypothesis)
# ----------------------------------------------------------------------------

sigmas = st.floats(1e-3, 1e2)
dims = st.integers(1, 5000)
norms = st.floats(1e-2, 1e2)
gammas = st.floats(1e-12, 1 - 1e-9)


@settings(max_examples=60, deadline=None)
@given(eta=st.floats(1e-6, 1e4), s1=sigmas, s2=sigmas, n=dims, m=norms)
def test_gamma_mse_decreasing_in_sigma(eta, s1, s2, n, m):
    lo, hi = sorted((s1, s2))
    g_lo = rero_mse(eta, lo, n, min_norm=m, log=True)
    g_hi = rero_mse(eta, hi, n, min_norm=m, log=True)
    assert g_hi <= g_lo + 1e-12 * abs(g_lo)


@settings(max_examples=60, deadline=None)
@given(e1=st.floats(0, 1e3), e2=st.floats(0, 1e3), s=sigmas, n=dims, m=norms)
def test_gamma_mse_increasing_in_eta(e1, e2, s, n, m):
    lo, hi = sorted((e1, e2))
    a, b = rero_mse(lo, s, n, min_norm=m), rero_mse(hi, s, n, min_norm=m)
    assert 0.0 <= a <= b <= 1.0


@settings(max_examples=60, deadline=None)
@given(e1=st.floats(-100, 200), e2=st.floats(-100, 200), s1=sigmas, s2=sigmas, n=dims, m=norms)
def test_gamma_psnr_decreasing_in_eta_and_sigma(e1, e2, s1, s2, n, m):
    lo, hi = sorted((e1, e2))
    a = rero_psnr(lo, s1, n, min_norm=m, log=True)
    b = rero_psnr(hi, s1, n, min_norm=m, log=True)
    assert b <= a + 1e-12 * abs(a)
    slo, shi = sorted((s1, s2))
    assert rero_psnr(lo, shi, n, min_norm=m, log=True) <= rero_psnr(lo, slo, n, min_norm=m, log=True) + 1e-9


@settings(max_examples=60, deadline=None)
@given(s=sigmas, norm=norms, n=dims, x=st.floats(-1e3, 1e6))
def test_cdf_in_unit_interval(s, norm, n, x):
    for law, pt in ((mse_law(s, norm, n), abs(x)), (psnr_law(s, norm, n), x / 1e3)):
        c, sf = law.cdf(pt), law.sf(pt)
        assert 0.0 <= c <= 1.0 and 0.0 <= sf <= 1.0
        assert c + sf == pytest.approx(1.0, abs=1e-12)
        assert law.logcdf(pt) <= 0.0 and law.logsf(pt) <= 0.0


@settings(max_examples=60, deadline=None)
@given(s=sigmas, norm=norms, n=dims, q=st.floats(1e-10, 1 - 1e-10))
def test_ppf_cdf_round_trip(s, norm, n, q):
    for law in (mse_law(s, norm, n), psnr_law(s, norm, n, data_range=3.0)):
        x = law.ppf(q)
        assert law.cdf(x) == pytest.approx(q, rel=1e-7, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(metric=st.sampled_from(["mse", "psnr"]), g=gammas, n=dims, m=norms, s=sigmas)
def test_calibrate_bound_round_trip(metric, g, n, m, s):
    eta = eta_for_rero(metric, g, s, n, m, data_range=2.0)
    s_back = analytic_noise_multiplier_for_rero(metric, eta, g, n, m, data_range=2.0)
    assert s_back == pytest.approx(s, rel=1e-9)
    fn = rero_mse if metric == "mse" else rero_psnr
    kw = {} if metric == "mse" else {"data_range": 2.0}
    assert fn(eta, s, n, min_norm=m, **kw) == pytest.approx(g, rel=1e-7)
    # every larger σ satisfies the target
    assert fn(eta, 1.5 * s, n, min_norm=m, **kw) <= g * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(sigma=st.floats(0.05, 50), delta=st.floats(1e-12, 1e-2))
def test_eps_sigma_round_trip(sigma, delta):
    eps = gaussian_eps(sigma, delta)
    if 0 < eps <= MAX_EPSILON:  # ε above the cap is refused as an input (issue 10)
        assert gaussian_delta(eps, sigma) == pytest.approx(delta, rel=1e-8)
        assert gaussian_sigma(eps, delta) == pytest.approx(sigma, rel=1e-8)


@settings(max_examples=40, deadline=None)
@given(e1=st.floats(0, 50), e2=st.floats(0, 50), s=st.floats(0.1, 10))
def test_profile_decreasing_in_eps(e1, e2, s):
    lo, hi = sorted((e1, e2))
    assert gaussian_log_delta(hi, s) <= gaussian_log_delta(lo, s) + 1e-12


def test_analytic_calibration_result():
    r = analytic_calibration("psnr", 20.0, 0.05, 4, 0.5)
    assert r.noise_multiplier == pytest.approx(0.47447114, rel=1e-6)  # PSNR 20 dB ⟺ MSE 0.01 at range 1
    assert r.bound.upper == pytest.approx(0.05, rel=1e-9)
    assert r.to_dict()["noise_multiplier"] == r.noise_multiplier


# ----------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,fragment",
    [
        (lambda: rero_mse(0.1, 0.0, 4, min_norm=1.0), "noise_multiplier must be > 0"),
        (lambda: rero_mse(0.1, -1.0, 4, min_norm=1.0), "noise_multiplier must be > 0"),
        (lambda: rero_mse(0.1, 1.0, 0, min_norm=1.0), "dim must be an integer >= 1"),
        (lambda: rero_mse(-0.1, 1.0, 4, min_norm=1.0), "eta must be >= 0"),
        (lambda: rero_mse(float("nan"), 1.0, 4, min_norm=1.0), "eta must be >= 0"),
        (lambda: rero_mse(0.1, 1.0, 4, min_norm=0.0), "min_norm must be > 0"),
        (lambda: rero_mse(0.1, 1.0, 4), "exactly one of min_norm"),
        (lambda: rero_mse(0.1, 1.0, 4, min_norm=1.0, clip_norm=1.0), "exactly one of min_norm"),
        (lambda: rero_psnr(float("inf"), 1.0, 4, min_norm=1.0), "eta must be a finite number of dB"),
        (lambda: rero_psnr(10.0, 1.0, 4, min_norm=1.0, data_range=0.0), "data_range must be > 0"),
        (lambda: analytic_noise_multiplier_for_rero("mse", 0.1, 1.0, 4, 1.0), "target_rero must be in (0, 1)"),
        (lambda: analytic_noise_multiplier_for_rero("mse", 0.0, 0.5, 4, 1.0), "eta must be > 0"),
        (lambda: analytic_noise_multiplier_for_rero("ncc", 0.1, 0.5, 4, 1.0), "metric must be one of"),
        (lambda: ncc_bound(0.0, 4), "noise_multiplier must be > 0"),
        (lambda: ncc_exact(1.0, np.zeros(4)), "nonzero norm"),
        (lambda: ncc_exact(1.0, np.ones(4)), "not be constant"),
        (lambda: mse_law(1.0, 0.0, 4), "norm must be > 0"),
        (lambda: psnr_law(1.0, 1.0, 0), "dim must be an integer >= 1"),
        (lambda: selection_probability(5, 3, 10), "k must be an integer in [0, 3]"),
        (lambda: gaussian_delta(-1.0, 1.0), "eps must be >= 0"),
        (lambda: gaussian_eps(1.0, 1.5), "delta must be in (0, 1)"),
        (lambda: gaussian_sigma(-1.0, 1e-5), "eps must be in [0, 250]"),
        (lambda: optimal_num_rows(1.0, 0.0), "min_norm must be > 0"),
        (lambda: optimal_num_rows(1.0, 1.0, rule="x"), "rule must be one of"),
        (lambda: analytic_bound("ncc", 1.0, 4, eta=1.5), "eta must be in [-1, 1]"),
        (lambda: analytic_bound("mse", 1.0, 4, eta=0.1), "min_norm must be given"),
        (lambda: analytic_bound("psnr", 1.0, 4, min_norm=1.0), "eta must be given"),
        (lambda: reconstruction_variance(1.0, 1.0, 1, [1.0, 0.0]), "norm must be > 0"),
    ],
)
def test_bad_input_raises(call, fragment):
    with pytest.raises(ReconRiskError, match=None) as exc:
        call()
    assert fragment in str(exc.value)
