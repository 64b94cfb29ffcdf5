"""Seed 001 theory: Theorem 1, Theorem 2 (closed forms), MIA, RDP(α=2), κ of Eq. 3, output-perturbation ε (spec_001 §9)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from reconrisk import Release
from reconrisk._src.theory import mse as M
from reconrisk.errors import ReconRiskError


# ---------------------------------------------------------------- §9 unit values
def test_mia_values():
    assert M.mia_success_bound(0.1) == pytest.approx(0.5250, abs=5e-5)  # "≈ 53%"
    assert M.mia_success_bound(2.0) == pytest.approx(0.8808, abs=5e-5)  # "> 88%"
    assert M.mia_advantage_bound(0.0) == 0.0
    assert M.mia_advantage_bound(math.inf) == 1.0
    e = 0.7
    assert M.mia_advantage_bound(e) == pytest.approx((math.exp(e) - 1) / (math.exp(e) + 1), rel=1e-14)


def test_observation_3_diameter_100():
    b = M.rdp_mse_lower_bound(2.0, 100.0)
    assert b == pytest.approx(391.29, abs=0.01)
    assert math.sqrt(b) == pytest.approx(19.78, abs=0.01)
    assert M.rdp_mse_lower_bound(2.0, [100.0] * 5) == pytest.approx(b, rel=1e-14)


def test_unbiased_unit_cube():
    for e in (1e-6, 0.3, 1.0, 5.0, 40.0):
        assert M.rdp_mse_lower_bound(e) == pytest.approx(1 / (4 * math.expm1(e)), rel=1e-12)


def test_tightness_limit_of_the_gaussian_example():
    # A = z + N(0, σ²) on [0, M] is (2, M²/σ²)-RDP; the bound M²/(4(e^{M²/σ²}−1)) → σ²/4 as M → 0.
    sigma = 0.3
    for m in (1e-3, 1e-5):
        assert M.rdp_mse_lower_bound(m**2 / sigma**2, m) == pytest.approx(sigma**2 / 4, rel=1e-5)


@pytest.mark.parametrize(
    "sigma, steps, eps, bound",
    [(1, 1000, 0.24665, 0.894), (1, 5000, 1.233, 0.103), (2, 5000, 0.1823, 1.25), (10, 1000, 0.001251, 199.7), (0.5, 1000, 14.24, 1.6e-7)],
)
def test_rdp_table_mnist(sigma, steps, eps, bound):
    e = M.release_rdp_alpha2(Release(sigma, 0.01, steps), sensitivity=M.GELU_CLIP_OVERSHOOT_PAPER)
    assert e == pytest.approx(eps, rel=1e-3)
    assert M.rdp_mse_lower_bound(e) == pytest.approx(bound, rel=5e-3 if bound > 1e-6 else 3e-2)  # the table quotes 3–4 digits
    closed = steps * math.log1p(0.01**2 * math.expm1((M.GELU_CLIP_OVERSHOOT_PAPER / sigma) ** 2))
    assert e == pytest.approx(closed, rel=1e-10)


def test_rdp_without_overshoot_matches_opacus_value_and_cifar():
    assert M.release_rdp_alpha2(Release(1.0, 0.01, 1000)) == pytest.approx(0.17181, abs=1e-5)
    e = M.release_rdp_alpha2(Release(1.0, 0.004, 25000), sensitivity=1.115)
    assert e == pytest.approx(0.98669, abs=1e-5)
    assert M.rdp_mse_lower_bound(e) == pytest.approx(0.149, abs=5e-4)


def test_rdp_of_a_schedule_adds_up():
    a = M.release_rdp_alpha2(Release(1.0, 0.01, 300))
    b = M.release_rdp_alpha2(Release(2.0, 0.02, 700))
    both = M.release_rdp_alpha2(Release.schedule([(1.0, 0.01, 300), (2.0, 0.02, 700)]))
    assert both == pytest.approx(a + b, rel=1e-12)


@pytest.mark.parametrize("sigma, kappa", [(1, 0.99995), (2, 0.9322), (5, 0.1534), (10, 0.04102)])
def test_kappa_mnist(sigma, kappa):
    f = M.subsampling_factor(sigma, 0.01, 1000, 1e-9, sensitivity_factor=2 * M.GELU_CLIP_OVERSHOOT_PAPER)
    assert f.value == pytest.approx(kappa, abs=1e-4)
    assert f.step_epsilon == pytest.approx(14.43 / sigma, rel=1e-3)
    assert f.failure_probability == pytest.approx(1e-6)


@pytest.mark.parametrize("sigma, kappa", [(2, 0.8895), (1, 0.99994)])
def test_kappa_cifar(sigma, kappa):
    f = M.subsampling_factor(sigma, 0.004, 100, 1e-10, sensitivity_factor=2 * M.GELU_CLIP_OVERSHOOT_PAPER)
    assert f.value == pytest.approx(kappa, abs=1e-4)


def test_kappa_limits_and_failure_target():
    assert M.subsampling_factor_value(0.03, 0.0) == pytest.approx(0.03, rel=1e-12)
    assert M.subsampling_factor_value(0.03, 800.0) == 1.0
    assert M.subsampling_factor_value(1.0, 0.5) == 1.0
    assert M.subsampling_factor_value(0.2, 1.3) == pytest.approx(0.2 / (0.2 + 0.8 * math.exp(-1.3)), rel=1e-13)
    f = M.subsampling_factor(2.0, 0.05, 400, n=1000)
    assert f.meets_target and f.failure_probability <= 1 / 1000
    assert M.subsampling_factor(2.0, 0.05, 400, 1e-3, n=1000).meets_target is False


def test_output_perturbation_epsilon_both_formulas():
    assert M.output_perturbation_rdp(12665, 1e-2, 1e-2, "paper") == pytest.approx(1.58, abs=5e-3)
    assert M.output_perturbation_rdp(12665, 1e-2, 1e-5, "paper") == pytest.approx(1579.16, abs=0.01)
    assert M.output_perturbation_rdp(12665, 1e-2, 1e-2, "gaussian") == pytest.approx(2.494, abs=1e-3)
    assert M.output_perturbation_rdp(12665, 1e-2, 1e-5, "gaussian") == pytest.approx(2.494e6, rel=1e-3)
    assert M.rdp_mse_lower_bound(M.output_perturbation_rdp(12665, 1e-2, 1e-2, "paper")) == pytest.approx(0.0649, abs=1e-4)
    assert M.rdp_mse_lower_bound(M.output_perturbation_rdp(12665, 1e-2, 1e-2, "gaussian")) == pytest.approx(0.0225, abs=1e-4)


def test_gelu_clip_overshoot():
    r = np.linspace(0, 10, 200_001)
    ratio = r / ((r - 1) * stats.norm.cdf(r - 1) + 1)
    assert ratio.max() <= M.GELU_CLIP_OVERSHOOT
    assert ratio.max() > M.GELU_CLIP_OVERSHOOT_PAPER  # the paper's 1.115 rounds down
    assert ratio.max() == pytest.approx(1.11522, abs=1e-5)
    assert 1 / (stats.norm.cdf(-1) * -1 + 1) == pytest.approx(1.1886, abs=1e-4)  # small gradients scaled up


# ---------------------------------------------------------------- Theorem 2 closed forms
def test_identity_gaussian_mechanism():
    d, s = 6, 0.37
    I = M.gaussian_mechanism_fim(np.eye(d), s)
    np.testing.assert_allclose(I, np.eye(d) / s**2)
    assert M.dfil(I) == pytest.approx(1 / s**2)
    assert M.spectral_fil(I) == pytest.approx(1 / s**2)
    assert M.crb_mse_lower_bound(I) == pytest.approx(s**2)
    # the unbiased attack ẑ = h attains it
    rng = np.random.default_rng(0)
    z = rng.uniform(size=d)
    h = z + s * rng.standard_normal((200_000, d))
    mse = np.mean((h - z) ** 2)
    assert mse == pytest.approx(s**2, rel=0.01)
    assert M.dfil_bound(M.dfil(I)) == pytest.approx(s**2)


def test_linear_gaussian_mechanism():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((9, 4))
    s = 0.5
    I = M.gaussian_mechanism_fim(A, s)
    np.testing.assert_allclose(I, A.T @ A / s**2, rtol=1e-12)
    # CRB attained by the unbiased least-squares attack ẑ = (AᵀA)⁻¹Aᵀh: MSE = s² Tr((AᵀA)⁻¹)/d
    crb = M.crb_mse_lower_bound(I)
    assert crb == pytest.approx(s**2 * np.trace(np.linalg.inv(A.T @ A)) / 4, rel=1e-10)
    z = rng.uniform(size=4)
    h = A @ z + s * rng.standard_normal((100_000, 9))
    zhat = np.linalg.lstsq(A, h.T, rcond=None)[0].T
    assert np.mean((zhat - z) ** 2) == pytest.approx(crb, rel=0.02)


def test_biased_crb_and_singular_fim():
    I = np.diag([4.0, 1.0, 0.0])
    assert M.crb_mse_lower_bound(I) == math.inf
    Jm = np.diag([1.0, 1.0, 0.0])  # the attack ignores the unidentifiable coordinate
    assert M.crb_mse_lower_bound(I, jac_mu=Jm, bias_sq=0.1) == pytest.approx((0.25 + 1.0) / 3 + 0.1)
    assert M.crb_mse_lower_bound(I, jac_mu=np.eye(3)) == math.inf
    shrink = 0.5 * np.eye(2)
    assert M.crb_mse_lower_bound(np.eye(2), jac_mu=shrink) == pytest.approx(0.25)


@given(st.integers(2, 6), st.integers(0, 10_000))
def test_bound_chain_tr_inverse_ge_dfil_ge_spectral(d, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d + 2, d))
    I = A.T @ A + 1e-3 * np.eye(d)
    crb, dfil_b, spec_b = M.crb_mse_lower_bound(I), M.dfil_bound(M.dfil(I)), M.spectral_bound(M.spectral_fil(I))
    assert crb >= dfil_b * (1 - 1e-10)
    assert dfil_b >= spec_b * (1 - 1e-10)


# ---------------------------------------------------------------- Theorem 1 general form, properties
def test_general_form_per_coordinate():
    diam = np.array([1.0, 2.0, 0.5])
    gamma = np.array([1.0, 0.5, 2.0])
    e = 0.8
    expect = np.sum(gamma**2 * diam**2) / (4 * 3) / math.expm1(e) + 0.02
    assert M.rdp_mse_lower_bound(e, diam, bias_factor=gamma, d=3, bias_sq=0.02) == pytest.approx(expect, rel=1e-12)
    with pytest.raises(ReconRiskError, match="dimension"):
        M.rdp_mse_lower_bound(e, diam, d=4)


def test_extreme_epsilon_stays_finite():
    assert M.rdp_mse_lower_bound(1e-12) == pytest.approx(0.25e12, rel=1e-6)
    assert M.rdp_mse_lower_bound(1579.16) == 0.0
    r = M.mse_bound(rdp_epsilon=1579.16)
    assert r.mse.log10_lower == pytest.approx((-math.log(4) - 1579.16) / math.log(10), rel=1e-12)
    assert M.rdp_mse_lower_bound(np.array([1.0, 2.0])).shape == (2,)


@given(st.floats(1e-6, 500), st.floats(1e-6, 500))
def test_rdp_bound_decreases_in_epsilon(e1, e2):
    lo, hi = sorted((e1, e2))
    assert M.rdp_mse_lower_bound(lo) >= M.rdp_mse_lower_bound(hi)


@given(st.floats(0.3, 20), st.floats(0.3, 20), st.floats(1e-3, 1.0), st.integers(1, 2000))
def test_release_bound_increases_with_sigma(s1, s2, q, steps):
    lo, hi = sorted((s1, s2))
    e_lo = M.release_rdp_alpha2(Release(lo, q, steps))
    e_hi = M.release_rdp_alpha2(Release(hi, q, steps))
    assert e_hi <= e_lo * (1 + 1e-12)
    assert M.mse_bound(release=Release(hi, q, steps)).mse.lower >= M.mse_bound(release=Release(lo, q, steps)).mse.lower * (1 - 1e-12)


@given(st.floats(1e-4, 1.0), st.floats(0, 50), st.floats(0, 50))
def test_kappa_monotone_and_in_q_1(q, e1, e2):
    lo, hi = sorted((e1, e2))
    k_lo, k_hi = M.subsampling_factor_value(q, lo), M.subsampling_factor_value(q, hi)
    assert q * (1 - 1e-12) <= k_lo <= k_hi * (1 + 1e-12) <= 1 + 1e-12


@given(st.floats(1e-3, 30), st.floats(1e-6, 1e3))
def test_dfil_bound_monotone_in_noise(s, scale):
    # η̄² ∝ 1/σ² for a fixed Jacobian: more noise, larger bound
    J = np.array([[1.0, 2.0], [0.5, -1.0]]) * scale
    b1 = M.dfil_bound(M.dfil(M.gaussian_mechanism_fim(J, s)))
    b2 = M.dfil_bound(M.dfil(M.gaussian_mechanism_fim(J, 2 * s)))
    assert b2 == pytest.approx(4 * b1, rel=1e-9)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: M.rdp_mse_lower_bound(-1.0), "rdp_epsilon"),
        (lambda: M.rdp_mse_lower_bound(float("nan")), "rdp_epsilon"),
        (lambda: M.rdp_mse_lower_bound(1.0, 0.0), "diam"),
        (lambda: M.rdp_mse_lower_bound(1.0, bias_sq=-1), "bias_sq"),
        (lambda: M.rdp_mse_lower_bound("a"), "rdp_epsilon"),
        (lambda: M.gaussian_mechanism_fim(np.eye(2), 0.0), "noise_std"),
        (lambda: M.gaussian_mechanism_fim(np.ones(3), 1.0), "jacobian"),
        (lambda: M.dfil(np.ones((2, 3))), "fim"),
        (lambda: M.dfil_bound(-1.0), "eta_bar_sq"),
        (lambda: M.mia_advantage_bound(-0.1), "epsilon"),
        (lambda: M.subsampling_factor_value(1.5, 1.0), "sample_rate"),
        (lambda: M.subsampling_factor(1.0, 0.1, 10), "delta"),
        (lambda: M.subsampling_factor(1.0, 0.1, 10, delta=1.0), "delta"),
        (lambda: M.output_perturbation_rdp(10, 0.1, 0.1, "other"), "formula"),
        (lambda: M.output_perturbation_rdp(0, 0.1, 0.1), "n"),
        (lambda: M.output_perturbation_rdp(10, -0.1, 0.1), "lam"),
        (lambda: M.release_rdp_alpha2("not a release"), "release"),
        (lambda: M.mse_bound(), "exactly one"),
        (lambda: M.gaussian_step_dp_epsilon(0.0, 1e-5), "noise_multiplier"),
    ],
)
def test_bad_input_raises_reconrisk_error(call, word):
    with pytest.raises(ReconRiskError, match=word):
        call()
