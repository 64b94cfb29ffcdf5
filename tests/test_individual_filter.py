"""The individual Rényi filter (bounds/individual_filter.py): certified ≤ target by construction, bookkeeping.

Sizes: 12 examples over 30 steps at σ = 1, q = 0.2 (the budget of a ReRo target 0.3 at κ = 0.1 is ~20 steps
at C, so examples near C are stopped mid-run and small-gradient ones are not): every branch of the admission
test is taken. The direct recomputation sums the subsampled Gaussian's RDP step by step from
reconrisk.accounting.rdp, without the filter's level table.
"""

from __future__ import annotations

import numpy as np
import pytest

from reconrisk import Release
from reconrisk.accounting.rdp import subsampled_gaussian_rdp
from reconrisk.bounds.individual_filter import MARGIN, IndividualFilter, _rdp_to_epsilon, _rdp_to_rero
from reconrisk.errors import ReconRiskError

REL = Release(1.0, 0.2, 30, clip_norm=1.5)
KAPPA, GAMMA = 0.1, 0.3


def _norms(seed=0):
    rng = np.random.default_rng(seed)
    scale = np.linspace(0.05, 1.3, 12)[:, None]  # from tiny gradients to always clipped
    return scale * 1.5 * rng.uniform(0.5, 1.0, (12, REL.steps))


@pytest.fixture(scope="module")
def run():
    f = IndividualFilter(REL, target_rero=GAMMA, kappa=KAPPA)
    norms = _norms()
    scales = np.stack([f.admit(norms[:, t]) for t in range(REL.steps)], axis=1)
    return f, norms, scales


def test_certified_numbers_are_at_most_the_target(run):
    f, _, _ = run
    assert 0 < f.filtered.sum() < f.n  # some stopped, some not
    assert np.all(f.certified_rero(KAPPA) <= GAMMA)
    assert f.budget_rero(KAPPA) <= GAMMA and f.budget_rero(KAPPA) > 0.99 * GAMMA  # the budget is the target
    assert np.all(f.spent <= 1.0)
    g = IndividualFilter(REL, target_epsilon=2.0, delta=1e-5)
    for t in range(REL.steps):
        g.admit(_norms(1)[:, t])
    assert np.all(g.certified_epsilon(1e-5) <= 2.0) and g.filtered.any()


def test_bookkeeping_equals_a_direct_recomputation(run):
    f, norms, scales = run
    levels = f.levels
    memo = {}  # the direct per-step charge, memoised by level (360 steps, ≤ 33 distinct quadratures)

    def direct(level):
        if level not in memo:
            memo[level] = subsampled_gaussian_rdp(REL.noise_multiplier / level, REL.sample_rate, f.orders)
        return memo[level]

    for i in range(f.n):
        spent = np.zeros(f.orders.size)
        stopped = REL.steps
        for t in range(REL.steps):
            u = min(norms[i, t] / REL.clip_norm, 1.0)
            level = levels[np.searchsorted(levels, u)]  # the level just above: what the filter charges
            assert level >= u
            charge = direct(level)
            if stopped == REL.steps and np.all((spent + charge) * (1 + MARGIN) <= f.budget):
                spent += charge
                assert scales[i, t] == 1.0
            else:
                stopped = min(stopped, t)
                assert scales[i, t] == 0.0  # stopped for good
        np.testing.assert_allclose(f.spent_rdp[i], spent, rtol=1e-12, atol=0)
        assert f.stopped_at[i] == stopped and f.filtered[i] == (stopped < REL.steps)
    np.testing.assert_allclose(f.certified_rero(KAPPA), _rdp_to_rero(f.orders, f.spent_rdp, KAPPA), rtol=0)
    contributed = f.contributed(norms)
    assert np.all(contributed[scales == 0] == 0) and np.all(contributed[scales == 1] == norms[scales == 1])


def test_without_a_target_nothing_is_filtered_and_the_worst_case_is_the_release():
    f = IndividualFilter(REL, orders=(1.5, 2.0, 4.0, 16.0), buckets=8)
    for _ in range(REL.steps):
        f.admit(np.full(3, 10.0))  # clipped at C on every step
    assert not f.filtered.any()
    w = f.spent_rdp[0]
    np.testing.assert_allclose(w, REL.steps * subsampled_gaussian_rdp(1.0, 0.2, f.orders), rtol=1e-12)
    assert f.certified_epsilon(1e-5)[0] == pytest.approx(_rdp_to_epsilon(f.orders, w[None, :], 1e-5)[0])


def test_inputs_are_checked():
    few = dict(orders=(2.0, 8.0), buckets=4)  # integer orders: no quadrature
    with pytest.raises(ReconRiskError, match="not both"):
        IndividualFilter(REL, target_rero=0.3, kappa=0.1, target_epsilon=1.0, delta=1e-5, **few)
    with pytest.raises(ReconRiskError, match="target_rero must be > kappa"):
        IndividualFilter(REL, target_rero=0.1, kappa=0.2, **few)
    with pytest.raises(ReconRiskError, match="needs kappa"):
        IndividualFilter(REL, target_rero=0.3, **few)
    with pytest.raises(ReconRiskError, match="orders must be"):
        IndividualFilter(REL, orders=(0.5, 2.0))
    f = IndividualFilter(REL, **few)
    with pytest.raises(ReconRiskError, match="has not seen a step"):
        _ = f.spent
    f.admit(np.ones(4))
    with pytest.raises(ReconRiskError, match="norms_t must hold"):
        f.admit(np.ones(5))
    with pytest.raises(ReconRiskError, match="homogeneous"):
        IndividualFilter(Release.schedule([(1.0, 0.1, 3), (2.0, 0.1, 3)]))


def test_each_distinct_curve_converted_once_gives_each_rows_own_bound():
    """_rdp_to_rero converts each distinct spent curve once (cached on its bytes and κ): every row still gets
    exactly rdp_power of its own curve at the κ asked, whatever rows or κ came before (a cache that ignored κ,
    or mixed up rows, fails here); all-zero rows are κ."""
    from reconrisk.bounds.individual_filter import FILTER_ORDERS
    from reconrisk.bounds.rdp_tradeoff import rdp_power

    rng = np.random.default_rng(3)
    curves = rng.uniform(0.0, 2.0, (3, FILTER_ORDERS.size)) * FILTER_ORDERS[None, :] / 10
    rows = curves[[0, 1, 0, 2, 1, 0]]
    rows[4] = 0.0
    for kappa in (0.1, 0.01, 0.1):
        got = _rdp_to_rero(FILTER_ORDERS, rows, kappa)
        want = [kappa if not r.any() else rdp_power(kappa, FILTER_ORDERS, r)[0] for r in rows]
        assert got.tolist() == want and len(set(want)) == 4
