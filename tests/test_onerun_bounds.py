"""One-run audits (bounds/onerun.py): the guessing-game bound holds at its level on mechanisms with known curves.

Simulated with numpy: 150 runs of one guessing game each (m = 500 canaries, k = 10 options per slot), on k-ary
randomized response (replace-one ε-DP exactly), a Gaussian slot mechanism (μ-GDP exactly) and randomized response
that leaks the choice with probability δ ((ε, δ)-DP); the attacker guesses
the argmax of each slot on its 100 and 500 most confident slots. The rejections of the true curve (= runs whose
lower bound exceeds the truth) stay within the level; the same simulation analysed with a wrong number of options
trips the threshold (the test can fail), and with every slot guessed the bound comes close to the truth (power).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from reconrisk.bounds.onerun import (
    Guesses,
    dp_blowup_inverse,
    final_sums,
    gdp_blowup_inverse,
    onerun_lower_bounds,
    pure_dp_pvalue,
    pvalue,
    rejects,
)
from reconrisk.errors import ReconRiskError

RUNS, M, K, COUNTS, LEVEL = 150, 500, 10, (100, 500), 0.95
THRESHOLD = int(stats.binom.ppf(1 - 1e-6, RUNS, 1 - LEVEL))


def _rr_scores(eps, rng, m=M):
    """k-ary randomized response per slot: report S_i w.p. e^ε/(e^ε + k − 1), else another option uniformly."""
    s = rng.integers(0, K, m)
    keep = rng.random(m) < 1.0 / (1.0 + (K - 1) * math.exp(-eps))
    y = np.where(keep, s, (s + rng.integers(1, K, m)) % K)
    return np.eye(K)[y] + 1e-6 * rng.random((m, K)), s  # ties broken at random


def _gauss_scores(mu, rng, m=M):
    """y_i = (μ/√2) e_{S_i} + N(0, I_k): replacing one slot's choice moves the mean by μ, so μ-GDP."""
    s = rng.integers(0, K, m)
    y = rng.standard_normal((m, K))
    y[np.arange(m), s] += mu / math.sqrt(2)
    return y, s


def _leaky_rr_scores(eps, delta, rng, m=M):
    """With probability δ a slot reports S_i outright, else randomized response: (ε, δ)-DP per slot."""
    scores, s = _rr_scores(eps, rng, m)
    leak = rng.random(m) < delta
    scores[leak] = np.eye(K)[s[leak]] + 1e-6 * rng.random((int(leak.sum()), K))
    return scores, s


CASES = [("randomized response eps=2", lambda rng: _rr_scores(2.0, rng), dp_blowup_inverse(2.0, 0.0)),
         ("Gaussian mu=2", lambda rng: _gauss_scores(2.0, rng), gdp_blowup_inverse(2.0)),
         ("leaky randomized response eps=1 delta=0.05", lambda rng: _leaky_rr_scores(1.0, 0.05, rng),
          dp_blowup_inverse(1.0, 0.05))]


def _rejections(case, options=K):
    name, sim, inv = case
    alpha = (1 - LEVEL) / len(COUNTS)  # Bonferroni over the guess counts, as onerun_lower_bounds does
    n = 0
    for run in range(RUNS):
        g = Guesses.from_scores(*sim(np.random.default_rng([27, 1, run])), COUNTS)
        n += any(rejects(c, cp, M, options, alpha, inv) for cp, c in zip(g.guesses, g.correct))
    return n


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_level_150_runs_of_500_canaries(case):
    n = _rejections(case)
    assert n <= THRESHOLD, (f"{case[0]}: the one-run analysis rejects the mechanism's true curve in {n} of {RUNS} "
                            f"runs (at most {THRESHOLD} allowed at {LEVEL:.0%}): the bound is not valid")


def test_the_level_test_can_fail():
    """Analysed as if each slot had 20 options (a blind guess half as good), the true curve is rejected often."""
    assert _rejections(CASES[0], options=2 * K) > THRESHOLD


def test_power_every_slot_guessed():
    """1,000 canaries, all guessed: the ε lower bound of ε = 2 randomized response reaches most of the way."""
    scores, s = _rr_scores(2.0, np.random.default_rng(5), m=1000)
    b = onerun_lower_bounds(Guesses.from_scores(scores, s, [1000]), delta=0.0, certified_epsilon=2.0)
    assert 1.4 < b["epsilon"].lower <= 2.0
    assert b["epsilon"].quantity == "epsilon" and b["epsilon"].upper is None and b["epsilon"].method == "one_run_fdp"
    assert b["epsilon"].details["ratio_to_certified"] == pytest.approx(b["epsilon"].lower / 2.0)
    scores, s = _gauss_scores(2.0, np.random.default_rng(6), m=1000)
    b = onerun_lower_bounds(Guesses.from_scores(scores, s, [250, 1000]), delta=1e-5)
    assert 0.8 < b["gdp_mu"].lower <= 2.0
    assert b["gdp_mu"].details["epsilon_if_gaussian"] > 0


def test_pure_dp_cross_check_with_the_binomial_bound():
    """For pure ε-DP the f-DP recursion and Steinke et al.'s binomial tail refute about the same ε."""
    scores, s = _rr_scores(3.0, np.random.default_rng(7), m=1000)
    g = Guesses.from_scores(scores, s, [1000])
    e_fdp = onerun_lower_bounds(g, delta=0.0)["epsilon"].lower
    c = g.correct[0]
    lo, hi = 0.0, 10.0
    for _ in range(40):  # sup ε with binomial p-value ≤ 0.05
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if pure_dp_pvalue(c, 1000, K, mid) <= 0.05 else (lo, mid)
    assert abs(e_fdp - lo) < 0.25, (e_fdp, lo)


@settings(max_examples=40, deadline=None)
@given(c=st.integers(1, 60), extra=st.integers(0, 60), m_extra=st.integers(0, 100), k=st.integers(2, 12),
       mu=st.floats(0.1, 4.0), t1=st.floats(1e-6, 1.0), t2=st.floats(1e-6, 1.0), family=st.sampled_from(["gdp", "dp"]),
       delta=st.sampled_from([0.0, 1e-5, 0.01]))
def test_final_sum_grows_with_tau(c, extra, m_extra, k, mu, t1, t2, family, delta):
    """The level test's validity needs r_0 + h_0 non-decreasing in τ (module docstring)."""
    g = c + extra
    m = g + m_extra
    a, b = sorted((t1, t2))
    inv = gdp_blowup_inverse(mu) if family == "gdp" else dp_blowup_inverse(mu, delta)
    assert np.all(final_sums(c, g, m, k, a, inv) <= final_sums(c, g, m, k, b, inv) * (1 + 1e-9) + 1e-15)


def test_pvalue_and_validation():
    p = pvalue(300, 500, 1000, 10, gdp_blowup_inverse(0.5))
    assert 0 < p < 1e-4  # 300 of 500 right with k = 10 is far beyond what 0.5-GDP allows
    assert not rejects(300, 500, 1000, 10, p / 1.001, gdp_blowup_inverse(0.5))
    assert rejects(300, 500, 1000, 10, 1.0001 * p, gdp_blowup_inverse(0.5))
    assert pvalue(60, 500, 1000, 10, gdp_blowup_inverse(0.5)) == 1.0  # 12 % right: the blind guess's 10 %
    with pytest.raises(ReconRiskError, match="correct must be"):
        rejects(600, 500, 1000, 10, 0.05, gdp_blowup_inverse(1.0))
    with pytest.raises(ReconRiskError, match="options must be"):
        Guesses(10, 1, (5,), (2,))
