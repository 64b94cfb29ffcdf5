"""mode='law' of simulate_success (seed 003): the metrics sampled from their exact joint law.

The shortcut must agree in distribution with the explicit DP-SGD step (a real
JAX linear layer, clipping and noise) and with the fast path (the
reconstruction's law, per coordinate). Two-sample KS tests at the 1e-3 level,
each paired with a power check that a wrong law (wrong variance) is rejected.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reconrisk._src.attacks.analytic import simulate_success
from reconrisk.errors import ReconRiskError


def _tile(x, reps):
    return np.tile(x, (reps, 1))


@pytest.mark.parametrize("rows,clip_factor,bias", [(4, 1.5, False), (1, 0.3, False), (3, 1.0, True)])
def test_law_agrees_with_explicit_step(rows, clip_factor, bias):
    x = np.random.default_rng(9).uniform(0, 1, 6)
    reps, sigma = 2000, 0.3
    clip = clip_factor * float(np.linalg.norm(x))
    ex = simulate_success(_tile(x, reps), [sigma], clip, rows, bias=bias, mode="explicit", seed=1, data_range=None)
    law = simulate_success(_tile(x, reps), [sigma], clip, rows, bias=bias, mode="law", seed=2, data_range=None)
    assert law.mode == "law" and law.to_dict()["mode"] == "law"
    for k in ("mse", "ncc", "psnr"):
        assert stats.ks_2samp(getattr(ex, k)[0], getattr(law, k)[0]).pvalue > 1e-3, k
    # power: the law with a 30 % larger σ is told apart from the explicit step
    wrong = simulate_success(_tile(x, reps), [1.3 * sigma], clip, rows, bias=bias, mode="law", seed=2,
                             data_range=None)
    assert stats.ks_2samp(ex.mse[0], wrong.mse[0]).pvalue < 1e-3
    assert stats.ks_2samp(ex.ncc[0], wrong.ncc[0]).pvalue < 1e-3


def test_law_agrees_with_fast_path_on_larger_images():
    rng = np.random.default_rng(4)
    x = np.vstack([rng.uniform(0, 1, 50), np.linspace(0, 1, 50) ** 2])  # two different images
    reps, sigma = 3000, 0.05
    xs = np.repeat(x, reps, axis=0)
    fast = simulate_success(xs, [sigma], 1.0, 1, mode="fast", seed=3)
    law = simulate_success(xs, [sigma], 1.0, 1, mode="law", seed=5)
    for j in range(2):
        sl = slice(j * reps, (j + 1) * reps)
        for k in ("mse", "ncc"):
            assert stats.ks_2samp(getattr(fast, k)[0, sl], getattr(law, k)[0, sl]).pvalue > 1e-3, (j, k)
    # power: NCC of the other image is told apart (the law depends on the centred norm)
    assert stats.ks_2samp(fast.ncc[0, :reps], law.ncc[0, reps:]).pvalue < 1e-3


def test_law_same_seed_same_numbers_and_edge_dims():
    x = np.random.default_rng(1).uniform(0, 1, (7, 5))
    a = simulate_success(x, [0.1, 1.0], 1.0, 3, mode="law", seed=4)
    b = simulate_success(x, [0.1, 1.0], 1.0, 3, mode="law", seed=4)
    c = simulate_success(x, [0.1, 1.0], 1.0, 3, mode="law", seed=5)
    assert np.array_equal(a.mse, b.mse) and np.array_equal(a.ncc, b.ncc) and not np.allclose(a.mse, c.mse)
    one = simulate_success(np.full((2000, 1), 0.7), [0.5], 0.7, 1, mode="law", seed=0)  # N = 1: MSE = v·χ²_1
    assert np.isnan(one.ncc).all()
    assert stats.kstest(one.mse[0] / (0.25 * 0.49), stats.chi2(1).cdf).pvalue > 1e-3
    const = simulate_success(np.full((3, 4), 0.5), [0.5], 1.0, 1, mode="law", seed=0)
    assert np.isnan(const.ncc).all() and np.isfinite(const.mse).all()


def test_law_refuses_ratio_scale_and_unknown_mode():
    with pytest.raises(ReconRiskError, match="law"):
        simulate_success(np.ones((2, 3)), [0.1], 1.0, 2, bias=True, scale="ratio", mode="law")
    with pytest.raises(ReconRiskError, match="mode"):
        simulate_success(np.ones((2, 3)), [0.1], 1.0, 2, mode="fastest")


def test_many_laws_at_once_are_the_per_law_floats_bit_for_bit():
    """simulate's CSV and summary evaluate one law per sample as arrays (mse_cdfs, psnr_means): the same floats.

    Variances over 40 decades and MSEs from 0 (and below, clamped), the median, and far tails, so both ends of
    gammainc are compared; exact equality, so a reordered product (one ulp) fails. An invalid variance raises the
    per-law error.
    """
    from reconrisk._src.theory.analytic_laws import MSELaw, PSNRLaw, mse_cdfs, psnr_means

    rng = np.random.default_rng(4)
    v = 10.0 ** rng.uniform(-20, 20, 300)
    r = rng.uniform(0.1, 300, 300)
    for dim in (1, 7, 784):
        x = v * rng.choice([0.0, -1.0, 1e-3, 1.0, 3.0, 1e3], 300) * rng.uniform(0.5, 2, 300)
        assert mse_cdfs(v, dim, x).tolist() == [MSELaw(vi, dim).cdf(xi) for vi, xi in zip(v, x)]
        assert psnr_means(v, dim, r) == [PSNRLaw(vi, dim, ri).mean() for vi, ri in zip(v, r)]
    with pytest.raises(ReconRiskError, match="variance"):
        mse_cdfs(np.array([1.0, 0.0]), 3, np.ones(2))
    with pytest.raises(ReconRiskError, match="data_range"):
        psnr_means(np.ones(2), 3, np.array([1.0, np.nan]))


def test_many_densities_at_once_are_the_per_law_floats_bit_for_bit():
    """The Fig. 2 background (one law per sample and σ) is evaluated as arrays (mse_pdfs, psnr_pdfs): the same
    floats as each law's pdf, including zeros below/above the support and far tails (exact equality: a one-ulp
    change in a per-law constant fails)."""
    from reconrisk._src.theory.analytic_laws import MSELaw, PSNRLaw, mse_pdfs, psnr_pdfs

    rng = np.random.default_rng(5)
    v = 10.0 ** rng.uniform(-8, 4, 60)
    r = rng.uniform(0.1, 300, 60)
    for dim in (1, 5, 784):
        x = np.concatenate([[-1.0, 0.0], 10.0 ** np.linspace(-12, 6, 157)])
        assert (mse_pdfs(v, dim, x) == np.array([MSELaw(vi, dim).pdf(x) for vi in v])).all()
        p = np.linspace(-80, 200, 160)
        assert (psnr_pdfs(v, dim, r, p) == np.array([PSNRLaw(vi, dim, ri).pdf(p) for vi, ri in zip(v, r)])).all()
    with pytest.raises(ReconRiskError, match="variance"):
        mse_pdfs(np.array([1.0, -2.0]), 3, x)
