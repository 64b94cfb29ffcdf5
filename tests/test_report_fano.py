"""Fano's bound (seed 000 App. H; bounds/fano.py): Table 2's "Guo" row, the mutual-information bounds,
soundness against an exact optimal attack, and the boundary checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from reconrisk import Release
from reconrisk._src.theory.fano import (
    fano_bound,
    gaussian_mutual_information,
    kl_mutual_information,
    kl_step,
    release_mutual_information,
)
from reconrisk.errors import ReconRiskError

SIGMAS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
#: spec_000 §4a.3, Table 2, "Guo" row (advantage upper bound, T = 1, q = 1, C = 1), printed to 3 d.p.
TABLE2_GUO = {10: (0.976, 0.593, 0.380, 0.274, 0.213, 0.174), 100: (0.861, 0.346, 0.195, 0.131, 0.097, 0.076)}


@pytest.mark.parametrize("n", sorted(TABLE2_GUO))
def test_table2_guo_row_to_three_decimals(n):
    # spec_000 [checked]: reproduced with Δ = √2 (the prior is |π| orthonormal points)
    got = [fano_bound(gaussian_mutual_information(n, math.sqrt(2.0) / s), n).advantage.upper for s in SIGMAS]
    assert np.allclose(got, TABLE2_GUO[n], atol=5e-4 + 1e-9), got


def _map_success_one_hot(n: int, sigma: float) -> float:
    """Exact success of the optimal (MAP) guess of one of n one-hot points under N(0, σ²I): P(argmax = i)."""
    f = lambda u: stats.norm.pdf(u - 1.0 / sigma) * stats.norm.cdf(u) ** (n - 1)  # noqa: E731
    return integrate.quad(f, -np.inf, np.inf)[0]


@pytest.mark.parametrize("n", [2, 10, 100])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.0])
def test_fano_is_above_the_exact_optimal_attack(n, sigma):
    # an independent computation: the Bayes-optimal success for orthonormal candidates must not exceed Fano
    fb = fano_bound(gaussian_mutual_information(n, math.sqrt(2.0) / sigma), n)
    exact = _map_success_one_hot(n, sigma)
    assert exact <= fb.success.upper + 1e-12
    t_lo, t_hi = fb.error_bracket
    assert 0.0 <= t_lo <= t_hi and t_hi - t_lo < 1e-12


def test_kl_step_q1_closed_form_and_quadrature_agree_near_q1():
    assert kl_step(2.0, 1.0) == (1.0 / 8.0, 0.0)
    near, err = kl_step(2.0, 1.0 - 1e-9)
    assert abs(near - 1.0 / 8.0) < 1e-8 and err < 1e-10


@pytest.mark.parametrize("sigma,q", [(0.8, 0.1), (1.5, 0.5), (0.6, 0.02)])
def test_kl_step_against_monte_carlo_mean_of_the_privacy_loss(sigma, q):
    # independent: KL(μ‖ν) = E_μ[log μ/ν], sampled with the Monte-Carlo module's own sampler
    from reconrisk._src.measures.montecarlo import sample_log_ratios

    rel = Release(sigma, q, 1)
    rng = np.random.default_rng(0)
    x = sample_log_ratios(rng, 400_000, rel.segments, from_mu=True)
    kl, _ = kl_step(sigma, q)
    se = x.std() / math.sqrt(x.size)
    assert abs(x.mean() - kl) < 5 * se + 1e-12, (x.mean(), kl, se)


@pytest.mark.parametrize("sigma,q", [(0.8, 0.1), (1.5, 0.5), (3.0, 1.0)])
def test_kl_below_renyi_order_two(sigma, q):
    # KL = D_1 ≤ D_2 (Rényi divergences increase in the order): seed 000's "I ≤ ε of any (α, ε)-RDP"
    from reconrisk._src.accounting.order2 import release_rdp_alpha2

    rel = Release(sigma, q, 7)
    kl, _ = kl_mutual_information(rel)
    assert kl <= release_rdp_alpha2(rel) + 1e-12


def test_release_mutual_information_takes_the_smaller_certified_bound():
    full = release_mutual_information(Release(0.5, 1.0, 10), 10)  # KL = 20 nats, closed form ≤ log 10
    assert full["source"] == "gaussian_closed_form" and full["mutual_information"] <= math.log(10)
    sub = release_mutual_information(Release(2.0, 0.01, 100), 10)
    assert sub["gaussian_closed_form"] is None and sub["source"] == "kl_chain_rule"
    assert sub["mutual_information"] >= sub["kl_chain_rule"] - sub["kl_quadrature_error"]
    # two segments add their KLs
    two = kl_mutual_information(Release.schedule([(2.0, 0.01, 50), (1.0, 0.02, 30)]))[0]
    assert two == pytest.approx(50 * kl_step(2.0, 0.01)[0] + 30 * kl_step(1.0, 0.02)[0], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 10**6), i1=st.floats(0, 20), i2=st.floats(0, 20))
def test_fano_monotone_in_information_and_within_range(n, i1, i2):
    a, b = sorted((i1, i2))
    fa, fb = fano_bound(a, n), fano_bound(b, n)
    assert 1.0 / n - 1e-12 <= fa.success.upper <= fb.success.upper + 1e-12 <= 1.0 + 1e-12
    # at I = 0 the bound is the blind guess 1/N (at I = 0 the root is the maximum of h(t) + t log(N-1), a double root:
    # rounding moves it by ~sqrt(machine eps), always towards the sound side)
    assert fano_bound(0.0, n).success.upper == pytest.approx(1.0 / n, rel=0, abs=3e-8)
    assert fano_bound(math.log(n) + 1.0, n).success.upper == 1.0


@pytest.mark.parametrize("call", [
    lambda: fano_bound(-0.1, 10),
    lambda: fano_bound(1.0, 1),
    lambda: fano_bound(float("nan"), 10),
    lambda: gaussian_mutual_information(10, -1.0),
    lambda: kl_step(0.0, 0.5),
    lambda: kl_step(1.0, 1.5),
    lambda: release_mutual_information(Release.vmf(10.0, 1.0, 1), 10),
])
def test_bad_inputs_raise_reconrisk_error(call):
    with pytest.raises(ReconRiskError):
        call()
