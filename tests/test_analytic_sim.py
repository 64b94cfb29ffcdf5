"""Seed 003 attack simulation: spec_003 §12 (C) Monte-Carlo checks, explicit layer vs fast path.

Tolerances: a pooled variance from n draws has relative sd sqrt(2/n); we
allow 4 sd. KS tests use a 1e-3 significance level and are paired with a
power check (a wrong law must be rejected) so that they can fail.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from reconrisk._src.attacks import analytic as atk
from reconrisk._src.attacks.analytic import (
    SuboptimalRowsWarning,
    average_reconstructions,
    clip_norm_for_regime,
    mse,
    ncc,
    psnr,
    simulate_attack,
    simulate_success,
)
from reconrisk._src.theory.analytic import reconstruction_variance
from reconrisk._src.theory.analytic_laws import MSELaw, psnr_law
from reconrisk.errors import ReconRiskError

SIGMA = 0.1
X4 = np.random.default_rng(2024).uniform(0, 1, 4)  # X ~ U(0, 1)^4
NORM = float(np.linalg.norm(X4))


def _pooled_variance_ratio(xh: np.ndarray, x: np.ndarray, expected: float) -> tuple[float, float]:
    err = (xh - x).ravel()
    n = err.size
    return float(np.mean(err**2) / expected), 4 * math.sqrt(2 / n)


CASES = [  # (rows M, clip C, bias), spec_003 §12 C.1
    (1, 0.5, False),
    (100, NORM, False),
    (100, 10 * NORM, False),
    (10, 10 * NORM, False),
    (100, 100.0, False),
    (100, NORM, True),
]


@pytest.mark.parametrize("mode", ["explicit", "fast"])
@pytest.mark.parametrize("rows,clip,bias", CASES)
def test_variance_sigma2_max_c2_over_m_norm2(mode, rows, clip, bias):
    reps = 5000
    x = np.tile(X4, (reps, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuboptimalRowsWarning)
        xh = simulate_attack(x, SIGMA, clip, rows, bias=bias, mode=mode, seed=11)
    expected = SIGMA**2 * max(clip**2 / rows, NORM**2 + (1.0 if bias else 0.0))
    assert reconstruction_variance(SIGMA, clip, rows, NORM, bias=bias) == pytest.approx(expected)
    ratio, _ = _pooled_variance_ratio(xh, X4, expected)  # the estimator is unbiased: E[X̂] = X
    assert abs(ratio - 1) < 0.02, ratio  # spec_003 §12 C.1: ~2% at 5000 reps (2.8 sd; fixed seed)
    assert np.abs(np.mean(xh - X4, axis=0)).max() < 5 * math.sqrt(expected / reps)


def test_variance_check_can_fail():
    """The same check rejects the paper's unsquared row rule at C = 10‖X‖ (M = 10 is not optimal)."""
    x = np.tile(X4, (5000, 1))
    with pytest.warns(SuboptimalRowsWarning):
        xh = simulate_attack(x, SIGMA, 10 * NORM, 10, mode="explicit", seed=11)
    ratio, tol = _pooled_variance_ratio(xh, X4, SIGMA**2 * NORM**2)
    assert abs(ratio - 1) > tol  # ≈ 10× the optimal variance


def test_mse_ks_against_scaled_chi_square_explicit():
    # X4 and 5000 draws with M = 1 (was a 16-dim x, 1500 draws): the explicit step's shapes are those of the first
    # variance case, so its compiled program is reused (σ and C are traced); 5000 draws give the KS test more power
    n, reps = 4, 5000
    x = X4
    norm = float(np.linalg.norm(x))
    clip = 0.5 * norm  # clipping active with M = 1
    xh = simulate_attack(np.tile(x, (reps, 1)), 0.2, clip, 1, mode="explicit", seed=3)
    errs = mse(x, xh)
    law = MSELaw(0.2**2 * norm**2, n)
    assert stats.kstest(errs, law.cdf).pvalue > 1e-3
    assert stats.kstest(errs, MSELaw(1.15 * law.variance, n).cdf).pvalue < 1e-3  # power: a 15% wrong law is rejected


def test_psnr_mean_against_digamma_formula():
    n, reps = 8, 20000
    x = np.random.default_rng(6).uniform(0, 1, n)
    norm = float(np.linalg.norm(x))
    xh = simulate_attack(np.tile(x, (reps, 1)), 0.05, norm, 1, mode="fast", seed=8)
    p = psnr(x, xh, data_range=1.0)
    law = psnr_law(0.05, norm, n, data_range=1.0)
    se = law.std() / math.sqrt(reps)
    assert abs(p.mean() - law.mean()) < 4 * se
    assert abs(p.mean() - 10 * math.log10(1 / law.variance)) > 4 * se  # power: PSNR at E[MSE] is not the mean
    assert np.var(p) == pytest.approx(law.var(), rel=0.05)


def test_fig2_clipped_rows_match_theory_and_unclipped_row_does_not():
    x = np.random.default_rng(0).uniform(0, 1, (100, 4))
    norms = np.linalg.norm(x, axis=1)
    sig = [1e-2, 1e-1, 1.0, 10.0]
    pits = {}
    for regime in ("min", "sqrt_rows", "large"):
        c = clip_norm_for_regime(regime, norms, 100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SuboptimalRowsWarning)
            sim = simulate_success(x, sig, c, 100, mode="fast", seed=1)
        # probability integral transform under the *optimal* law σ²‖X‖²: uniform iff the theory holds
        pits[regime] = np.array(
            [MSELaw(v, 4).cdf(e) for v, e in zip(sim.optimal_variance.ravel(), sim.mse.ravel())]
        )
        if regime != "large":
            assert sim.clipped_fraction == 1.0
            assert np.allclose(sim.variance, sim.optimal_variance)
    assert stats.kstest(pits["min"], "uniform").pvalue > 1e-3
    assert stats.kstest(pits["sqrt_rows"], "uniform").pvalue > 1e-3
    assert stats.kstest(pits["large"], "uniform").pvalue < 1e-10
    assert np.median(pits["large"]) > 0.99  # much higher MSE than the optimal attack


def test_explicit_and_fast_agree_in_distribution():
    # X4, 5000 draws, M ∈ {100, 1} (was a 6-dim x, 3000 draws, M ∈ {4, 1}): the explicit steps have the shapes of
    # the variance cases above and reuse their compiled programs; only the ratio estimator's step compiles here
    n, reps = 4, 5000
    x = X4
    norm = float(np.linalg.norm(x))
    for rows, clip in [(100, 1.5 * norm), (1, 0.3 * norm)]:
        a = simulate_attack(np.tile(x, (reps, 1)), 0.3, clip, rows, mode="explicit", seed=1)
        b = simulate_attack(np.tile(x, (reps, 1)), 0.3, clip, rows, mode="fast", seed=2)
        assert stats.ks_2samp(mse(x, a), mse(x, b)).pvalue > 1e-3
        assert stats.ks_2samp((a - x)[:, 0], (b - x)[:, 0]).pvalue > 1e-3
    # the naive ratio estimator (with bias): heavy-tailed, compare by KS on one coordinate
    a = simulate_attack(np.tile(x, (reps, 1)), 0.3, 0.5, 10, bias=True, scale="ratio", mode="explicit", seed=1)
    b = simulate_attack(np.tile(x, (reps, 1)), 0.3, 0.5, 10, bias=True, scale="ratio", mode="fast", seed=2)
    assert stats.ks_2samp(a[:, 0], b[:, 0]).pvalue > 1e-3
    # power: a fast path with the wrong rows is told apart
    with pytest.warns(SuboptimalRowsWarning):
        c = simulate_attack(np.tile(x, (reps, 1)), 0.3, 1.5 * norm, 1, mode="fast", seed=2)
    a = simulate_attack(np.tile(x, (reps, 1)), 0.3, 1.5 * norm, 100, mode="explicit", seed=1)
    assert stats.ks_2samp(mse(x, a), mse(x, c)).pvalue < 1e-3  # variance σ²C² vs σ²‖X‖²: 2.25×


def test_ratio_estimator_is_worse_than_oracle():
    x = np.tile(X4, (2000, 1))
    oracle = simulate_attack(x, 0.3, NORM, 100, bias=True, mode="fast", seed=0)
    ratio = simulate_attack(x, 0.3, NORM, 100, bias=True, scale="ratio", mode="fast", seed=0)
    assert np.median(mse(X4, ratio)) > np.median(mse(X4, oracle))


def test_same_seed_same_numbers_and_chunking_invariance(monkeypatch):
    x = np.random.default_rng(1).uniform(0, 1, (7, 5))
    for mode in ("fast", "explicit"):
        a = simulate_attack(x, 0.1, 1.0, 3, mode=mode, seed=42)
        b = simulate_attack(x, 0.1, 1.0, 3, mode=mode, seed=42)
        c = simulate_attack(x, 0.1, 1.0, 3, mode=mode, seed=43)
        assert np.array_equal(a, b) and not np.allclose(a, c)
    full = simulate_attack(x, 0.1, 1.0, 3, mode="explicit", seed=42)
    monkeypatch.setattr(atk, "_ELEMENTS_PER_CHUNK", 2 * 3 * 5)  # two samples per chunk, last one padded
    chunked = simulate_attack(x, 0.1, 1.0, 3, mode="explicit", seed=42)
    assert np.allclose(full, chunked, rtol=1e-6, atol=1e-7)


def test_scale_demo_fig5_exact_ratio():
    x = np.random.default_rng(3).uniform(0, 1, 300)
    a = 10.0
    r1 = simulate_attack(x, 1e-3, np.linalg.norm(x), 1, seed=5)
    r2 = simulate_attack(a * x, 1e-3, np.linalg.norm(a * x), 1, seed=5)
    assert mse(a * x, r2) / mse(x, r1) == pytest.approx(a * a, rel=1e-10)
    assert psnr(x, r1, data_range=1.0) == pytest.approx(psnr(a * x, r2, data_range=a))
    assert ncc(x, r1) == pytest.approx(ncc(a * x, r2))


def test_averaging_k_reconstructions_divides_variance():
    k, reps = 5, 4000
    recs = np.stack([simulate_attack(np.tile(X4, (reps, 1)), SIGMA, 1.0, 100, seed=j) for j in range(k)])
    avg = average_reconstructions(recs)
    ratio, tol = _pooled_variance_ratio(avg, X4, SIGMA**2 * NORM**2 / k)
    assert abs(ratio - 1) < tol


def test_warning_only_when_rows_too_few():
    x = np.array([[3.0, 4.0]])  # ‖X‖ = 5
    with pytest.warns(SuboptimalRowsWarning, match="M < \\(C/\\|X\\|\\)\\^2"):
        simulate_attack(x, 0.1, 10.0, 3, seed=0)  # needs (10/5)² = 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", SuboptimalRowsWarning)
        simulate_attack(x, 0.1, 10.0, 4, seed=0)
        simulate_attack(x, 0.1, 5.0, 1, seed=0)


def test_simulation_result_structure(tmp_path):
    x = np.random.default_rng(0).uniform(0, 1, (5, 4))
    sim = simulate_success(x, [0.1, 1.0], 0.5, 10, seed=0)
    d = sim.to_dict()
    assert d["samples"] == 5 and len(d["summary"]) == 2 and d["clipped_fraction"] == 1.0
    p = sim.write_csv(tmp_path / "s.csv")
    lines = p.read_text().strip().splitlines()
    assert len(lines) == 1 + 2 * 5 and lines[0].startswith("noise_multiplier,sample,norm,mse,psnr,ncc")
    again = simulate_success(x, [0.1, 1.0], 0.5, 10, seed=0)
    assert np.array_equal(sim.mse, again.mse)


@pytest.mark.parametrize(
    "call,fragment",
    [
        (lambda: simulate_attack(np.zeros((2, 4)), 0.1, 1.0, 1), "nonzero norm"),
        (lambda: simulate_attack(np.array([1.0, np.nan]), 0.1, 1.0, 1), "finite"),
        (lambda: simulate_attack(X4, 0.0, 1.0, 1), "noise_multiplier must be > 0"),
        (lambda: simulate_attack(X4, 0.1, -1.0, 1), "clip_norm must be > 0"),
        (lambda: simulate_attack(X4, 0.1, 1.0, 0), "rows must be an integer >= 1"),
        (lambda: simulate_attack(X4, 0.1, 1.0, 1, mode="opacus"), "mode must be one of"),
        (lambda: simulate_attack(X4, 0.1, 1.0, 1, scale="ratio"), "needs bias=True"),
        (lambda: simulate_attack(X4, 0.1, 1.0, 1, seed="x"), "seed must be"),
        (lambda: simulate_success(X4, [], 1.0, 1), "at least one"),
        (lambda: clip_norm_for_regime("huge", [1.0], 1), "regime must be one of"),
        (lambda: average_reconstructions(np.ones(3)), "reconstructions must have shape"),
    ],
)
def test_bad_input(call, fragment):
    with pytest.raises(ReconRiskError) as exc:
        call()
    assert fragment in str(exc.value)


def test_pairwise_norm_is_float32_safe_where_a_plain_sum_drifts():
    """The 'wrong norm under load' was float32 rounding: a sequential float32 sum of 4·10⁶ squares drifts by
    > 1e-5 relative, the pairwise device sum stays within 1e-6 of the float64 value (and the explicit step's
    clipping norm is the pairwise one)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from reconrisk._src.train.clipping import pairwise_sum

    rng = np.random.default_rng(3)
    v = rng.uniform(0.3, 0.7, 4_000_000).astype(np.float32)
    exact = float(np.sum(v.astype(np.float64) ** 2))
    seq = np.cumsum(v**2, dtype=np.float32)[-1]  # sequential float32 accumulation
    assert abs(float(seq) - exact) / exact > 1e-5
    got = float(jax.jit(lambda u: pairwise_sum(u**2))(jnp.asarray(v)))
    assert abs(got - exact) / exact < 1e-6
    x = rng.uniform(0, 1, (3, 5000))
    _, norms = atk._explicit(x, 0.1, 1.0, 300, False, "oracle", 7, None, return_norms=True)
    want = np.sqrt(300 * np.sum(x**2, axis=1))
    np.testing.assert_allclose(norms, want, rtol=1e-6)


def test_explicit_metrics_on_device_equal_host_metrics():
    """simulate_success(mode='explicit') reduces on the device; same keys, same numbers as the host metrics."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (4, 300))
    sim = simulate_success(x, [0.05, 0.2], 2.0, 3, mode="explicit", seed=9, data_range=None)
    for i, s in enumerate((0.05, 0.2)):
        xh = simulate_attack(x, s, 2.0, 3, mode="explicit", seed=np.random.default_rng([9, i]))
        np.testing.assert_allclose(sim.mse[i], atk.mse(x, xh), rtol=1e-4)
        np.testing.assert_allclose(sim.ncc[i], atk.ncc(x, xh), rtol=1e-4)
        np.testing.assert_allclose(sim.psnr[i], atk.psnr(x, xh, data_range=None), rtol=1e-5)
    assert not np.allclose(sim.mse[0], sim.mse[1])
