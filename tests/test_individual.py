"""Per-example (ex-post) accounting from realised gradient norms (bounds/individual.py, accounting/pld_batch.py).

Sizes: T ≤ 40 steps and a handful of examples keep every composition to a few thousand atoms; the worst-case
analysis of each release is built once per module (fixtures). An independent check composes a two-level
schedule with dp_accounting's own PLD accountant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from reconrisk import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.individual.privacy import (
    IndividualFilter, bucket_index, individual_analysis, sensitivity_levels,
)
from reconrisk.errors import ReconRiskError

REL = Release(1.0, 0.1, 20, clip_norm=2.0)
DELTA, KAPPA = 1e-5, 0.1


@pytest.fixture(scope="module")
def ip():
    rng = np.random.default_rng(3)
    norms = rng.uniform(0.0, 3.0, (6, REL.steps))
    norms[0] = 2.0  # at C on every step: the worst case
    norms[1] = np.nan  # never observed: taken as C
    norms[2] *= 0.1  # small gradients
    norms[3, ::2] = 5.0  # above C: clipped to C
    return individual_analysis(REL, norms)


def test_every_example_is_at_most_the_worst_case_and_the_clipped_one_equals_it(ip):
    eps, wc_eps = ip.epsilon(DELTA), ip.worst_case_epsilon(DELTA).upper
    rr, wc_rr = ip.rero(KAPPA), ip.worst_case_rero(KAPPA).upper
    assert np.all(eps <= wc_eps) and np.all(rr <= wc_rr) and np.all(rr >= KAPPA)
    assert eps[0] == wc_eps and rr[0] == wc_rr  # the same release, the same analysis: equal, not just close
    assert eps[1] == wc_eps and rr[1] == wc_rr  # NaN is C
    assert eps[2] < 0.5 * wc_eps and rr[2] < wc_rr  # small gradients: far less exposed
    assert ip.most_exposed(2, KAPPA).tolist() == [0, 1]
    assert ip.groups == 5  # rows 0 and 1 share one composition


def test_labels_say_ex_post_and_not_certified(ip):
    d = ip.to_dict(delta=DELTA, kappa=KAPPA)
    assert d["kind"] == "ex_post" and d["certified"] is False and "not itself" in d["note"]
    assert len(d["ex_post_epsilon"]) == 6 and len(d["ex_post_rero"]) == 6
    assert not any(k.startswith("certified_") for k in d)
    assert d["worst_case_rero"]["upper"] == ip.worst_case_rero(KAPPA).upper
    assert d["ex_post_rero_summary"]["max"] == max(d["ex_post_rero"])


def test_two_level_composition_against_dp_accounting_and_the_engine():
    """n = 3, T = 4, norms exactly on the levels {C/2, C}: each example's schedule is exact, so its ε must be
    the engine's ε of the explicit heterogeneous schedule (compose_segments, not the Fourier path) and
    dp_accounting's (its own PLD accountant; on a 1e-3 grid to stay cheap), and its ReRo inside the engine's
    certified bracket of that schedule."""
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant

    rel = Release(0.8, 0.3, 4)
    norms = np.array([[1.0, 1.0, 1.0, 1.0], [0.5, 1.0, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]])
    ip = individual_analysis(rel, norms, buckets=[0.5, 1.0])
    eps, rr = ip.epsilon(DELTA), ip.rero(KAPPA)
    for i, counts in enumerate([(0, 4), (3, 1), (4, 0)]):
        segs = [(0.8, 0.3, counts[1])] * (counts[1] > 0) + [(1.6, 0.3, counts[0])] * (counts[0] > 0)
        sched = Release.schedule(segs)
        assert ip.example_release(i) == sched
        a = PrivacyAnalysis(sched)
        e = a.epsilon(DELTA, two_sided=True)
        assert e.lower <= eps[i] <= e.upper * (1 + 1e-3), (i, e, eps[i])  # sound; the ex-post grid is 1e-3
        b = a.rero(KAPPA)
        assert b.lower <= rr[i] <= b.upper * (1 + 1e-3), (i, b, rr[i])  # sound, and as tight as the engine
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(dpa.PoissonSampledDpEvent(0.3, dpa.GaussianDpEvent(0.8)), 1)
    acc.compose(dpa.PoissonSampledDpEvent(0.3, dpa.GaussianDpEvent(1.6)), 3)
    assert eps[1] == pytest.approx(acc.get_epsilon(DELTA), rel=1e-2)
    assert eps[0] > eps[1] > eps[2]


def test_fourier_composition_equals_the_engine_on_the_same_grid():
    """accounting/pld_batch.compose_counts (one exp and inverse FFT per row) against compose_segments (FFT powers
    and products) on the same grid: the same δ(ε) curve up to their certified slacks, both directions."""
    from reconrisk._src.accounting.pld import compose_segments, step_pmf
    from reconrisk._src.accounting.pld_batch import LevelSpectra, compose_counts

    sigmas, q, h = (1.0, 1.6, 4.0), 0.2, 1e-3
    counts = np.array([[5, 0, 3], [1, 7, 0], [0, 0, 9]])
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    for d in ("remove", "add"):
        lev = LevelSpectra([step_pmf(s_, q, h, pessimistic=True, direction=d) for s_ in sigmas])
        for i, pmf in compose_counts(lev, counts, loss_cap=250.0):
            sched = Release.schedule([(s_, q, int(c)) for s_, c in zip(sigmas, counts[i]) if c])
            ref = compose_segments(sched.segments, h, pessimistic=True, direction=d, loss_cap=250.0)
            np.testing.assert_allclose(pmf.delta(eps), ref.delta(eps), rtol=1e-9, atol=1e-12)
            assert pmf.slack < 1e-9 and ref.slack < 1e-9


@given(st.lists(st.floats(0.0, 10.0), min_size=2, max_size=30), st.integers(1, 40))
def test_bucketing_rounds_up_and_is_monotone(values, k):
    levels = sensitivity_levels(k)
    s = np.array(values)
    idx = bucket_index(s, 2.0, levels)
    assert np.all(levels[idx] >= np.minimum(s / 2.0, 1.0))  # upward: never a smaller sensitivity
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(idx[order]) >= 0)  # a larger norm never gets a smaller level
    assert np.all(idx[s >= 2.0] == levels.size - 1)


def test_nan_is_the_clip_norm_and_zero_is_no_loss():
    levels = sensitivity_levels(4)
    assert bucket_index(np.array([np.nan, 0.0, 7.0]), 1.0, levels).tolist() == [4, 0, 4]
    ip = individual_analysis(Release(1.0, 0.5, 3), np.zeros((2, 3)))
    assert ip.epsilon(DELTA).tolist() == [0.0, 0.0] and ip.rero(KAPPA).tolist() == [KAPPA, KAPPA]


def test_inputs_are_checked():
    with pytest.raises(ReconRiskError, match="norms must be an array"):
        individual_analysis(REL, np.ones((3, 5)))
    with pytest.raises(ReconRiskError, match="norms must be >= 0"):
        individual_analysis(REL, -np.ones((2, REL.steps)))
    with pytest.raises(ReconRiskError, match="certified=True needs the individual_filter"):
        individual_analysis(REL, np.ones((2, REL.steps)), certified=True)
    with pytest.raises(ReconRiskError, match="Poisson"):
        individual_analysis(Release.fixed_batch(1.0, 10, 100, 5), np.ones((2, 5)))
    with pytest.raises(ReconRiskError, match="buckets"):
        sensitivity_levels([0.5, 0.9])


def test_a_filtered_run_is_reported_as_certified():
    rel = Release(1.0, 0.1, 10)
    f = IndividualFilter(rel, target_rero=0.2, kappa=KAPPA)
    rng = np.random.default_rng(1)
    norms = rng.uniform(0, 1.0, (4, 10))
    for t in range(10):
        f.admit(norms[:, t])
    ip = individual_analysis(rel, f.contributed(norms), individual_filter=f)
    d = ip.to_dict(delta=DELTA, kappa=KAPPA)
    assert d["kind"] == "certified" and "certified_rero" in d and "ex_post_rero" in d  # the spend: an estimate
    assert d["certified_rero"] == [d["certified_rero_every_example"]] * 4 and d["filter"]["target_rero"] == 0.2
    assert d["certified_rero_every_example"] == f.certificate_rero(KAPPA) <= 0.2
    assert math.isfinite(d["certified_epsilon_every_example"]) and "estimates, not guarantees" in d["note"]
