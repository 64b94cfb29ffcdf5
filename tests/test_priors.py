import math

import numpy as np
import pytest

from reconrisk import ReconRiskError, kappa_from_points, kappa_from_samples, kappa_uniform, log_kappa_coordinate_match


def test_uniform():
    assert kappa_uniform(10) == 0.1
    for bad in (1, 0, 2.5, -3):
        with pytest.raises(ReconRiskError, match="prior_size"):
            kappa_uniform(bad)


def test_points_exact_metric_counts_duplicates():
    pts = np.array([[0, 0], [0, 0], [1, 1], [2, 2]])
    assert kappa_from_points(pts, metric="exact") == 0.5


def test_points_euclidean_any_centre_is_an_upper_bound_on_point_centres():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(200, 3))
    k_points = kappa_from_points(pts, eta=0.5, centers="points")
    k_any = kappa_from_points(pts, eta=0.5, centers="any")
    assert 1 / 200 <= k_points <= k_any <= 1
    # a brute-force check of the centred count on the points themselves
    d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    assert k_points == (d <= 0.5).sum(1).max() / 200


def test_samples_upper_confidence_bound_covers_truth():
    # prior: 20 atoms, the first with probability 0.3 -> kappa = 0.3 (exact metric)
    rng = np.random.default_rng(1)
    probs = np.full(20, 0.7 / 19)
    probs[0] = 0.3
    misses = 0
    for _ in range(200):
        draws = rng.choice(20, size=300, p=probs)[:, None].astype(float)
        est = kappa_from_samples(draws, metric="exact", confidence=0.9)
        assert est.upper >= est.estimate
        misses += est.upper < 0.3
    assert misses / 200 <= 0.1 + 0.05  # coverage at least 90% (with slack for 200 repetitions)
    ch = kappa_from_samples(draws, metric="exact", confidence=0.9, method="chernoff")
    assert ch.upper >= est.estimate


def test_coordinate_match_prior_matches_appendix_i_values_in_log_space():
    # spec_000 §2.3: MNIST 9.66e-473, CIFAR-10 2.96e-1850 (rho = 1, delta' = 32/256)
    lk = log_kappa_coordinate_match(784)
    assert lk / math.log(10) == pytest.approx(math.log10(9.66) - 473, abs=2e-3)
    lk = log_kappa_coordinate_match(3072)
    assert lk / math.log(10) == pytest.approx(math.log10(2.96) - 1850, abs=2e-3)
    # the exact binomial tail is never smaller than the paper's formula
    for rho in (0.3, 0.6, 0.9):
        assert log_kappa_coordinate_match(784, fraction=rho) >= log_kappa_coordinate_match(784, fraction=rho, paper_formula=True)


def test_bad_prior_inputs():
    with pytest.raises(ReconRiskError, match="eta"):
        kappa_from_points(np.zeros((3, 2)), eta=-1)
    with pytest.raises(ReconRiskError, match="metric"):
        kappa_from_points(np.zeros((3, 2)), metric="cosine")
    with pytest.raises(ReconRiskError, match="points"):
        kappa_from_points(np.array([[np.nan, 1.0], [0.0, 0.0]]))
