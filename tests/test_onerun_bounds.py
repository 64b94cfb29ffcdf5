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
from scipy import special, stats

from reconrisk._src.audit import onerun
from reconrisk._src.audit.onerun import (
    Guesses,
    dp_blowup_inverse,
    final_sum,
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


# δ = 1e-3 ≪ the per-test level 0.025: counts can refute (ε, δ) curves here (at δ ≥ 0.025 none can: the vacuous
# case, test_vacuous_delta_is_flagged), and the same runs analysed at ε = 0.7 are rejected (test_the_level_test_can_fail)
LEAKY_DELTA = 1e-3
CASES = [("randomized response eps=2", lambda rng: _rr_scores(2.0, rng), dp_blowup_inverse(2.0, 0.0)),
         ("Gaussian mu=2", lambda rng: _gauss_scores(2.0, rng), gdp_blowup_inverse(2.0)),
         ("leaky randomized response eps=1 delta=1e-3", lambda rng: _leaky_rr_scores(1.0, LEAKY_DELTA, rng),
          dp_blowup_inverse(1.0, LEAKY_DELTA))]


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
    """Analysed as if each slot had 20 options (a blind guess half as good), the true curve is rejected often; the
    leaky case analysed at ε = 0.7 (below its true ε = 1, same δ) too — so its level test is not vacuous."""
    assert _rejections(CASES[0], options=2 * K) > THRESHOLD
    name, sim, _ = CASES[2]
    assert _rejections((name, sim, dp_blowup_inverse(0.7, LEAKY_DELTA))) > THRESHOLD


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
    """The level test's validity needs r_0 + h_0 non-decreasing in τ (module docstring), at every start."""
    g = c + extra
    m = g + m_extra
    a, b = sorted((t1, t2))
    inv = gdp_blowup_inverse(mu) if family == "gdp" else dp_blowup_inverse(mu, delta)
    assert np.all(_reference_final_sums(c, g, m, k, a, inv) <= _reference_final_sums(c, g, m, k, b, inv) * (1 + 1e-9)
                  + 1e-15)
    assert final_sum(c, g, m, k, a, inv) <= final_sum(c, g, m, k, b, inv) * (1 + 1e-9) + 1e-15


# ---- the linear test against the former quadratic one -------------------------------------------------------------
# The reference is the code this module used before the test became linear, kept verbatim: it runs the recursion
# from every start c'' = 0 … c at once and rejects when any start does, with its own copies of the two families' B⁻¹.

def _reference_dp_inverse(epsilon, delta):
    e, d = float(epsilon), float(delta)

    def inv(y):
        y = np.asarray(y, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            a = (y - d) * math.exp(-e)
            b = 1.0 - d - np.exp(min(e, 700.0)) * (1.0 - y)
        return np.clip(np.maximum(a, b), 0.0, 1.0)

    return inv


def _reference_gdp_inverse(mu):
    def inv(y):
        y = np.clip(np.asarray(y, dtype=float), 0.0, 1.0)
        return special.ndtr(special.ndtri(y) - float(mu))

    return inv


def _reference_final_sums(c, g, m, k, tau, blowup_inverse):
    starts = np.arange(c + 1, dtype=float)
    r = tau * starts / m
    h = tau * (g - starts) / m
    for i in range(c - 1, -1, -1):  # chains whose start c > i take step i
        live = starts > i
        h_new = np.maximum(h, (k - 1) * blowup_inverse(r))
        r_new = r + (i / (g - i)) * (h_new - h)
        h = np.where(live, h_new, h)
        r = np.where(live, r_new, r)
    return r + h


def _reference_rejects(c, g, m, k, alpha, blowup_inverse):
    if c == 0:
        return False
    sums = _reference_final_sums(c, g, m, k, alpha, blowup_inverse)
    return bool(np.any(sums[1:] > g / m * (1 + 1e-12)))


def _families(family, param, delta):
    if family == "gdp":
        return gdp_blowup_inverse(param), _reference_gdp_inverse(param)
    return dp_blowup_inverse(param, delta), _reference_dp_inverse(param, delta)


@settings(max_examples=60, deadline=None)
@given(g=st.integers(1, 2000), cf=st.floats(0.0, 1.0), mf=st.floats(0.0, 1.0), k=st.sampled_from([2, 3, 10, 50]),
       log_tau=st.floats(-6.0, 0.0), family=st.sampled_from(["gdp", "dp"]), param=st.floats(0.0, 8.0),
       delta=st.sampled_from([0.0, 1e-5, 1e-3, 0.05]))
def test_linear_test_equals_the_quadratic_reference(g, cf, mf, k, log_tau, family, param, delta):
    """At m ≤ 2,000: the observed count alone decides as every start ≤ it did, and r_0 + h_0 is the same float."""
    m = g + round(mf * (2000 - g))
    c = round(cf * g)
    tau = 10.0 ** log_tau
    inv, ref = _families(family, param, delta)
    sums = _reference_final_sums(c, g, m, k, tau, ref)
    assert rejects(c, g, m, k, tau, inv) == _reference_rejects(c, g, m, k, tau, ref)
    assert final_sum(c, g, m, k, tau, inv) == sums[-1]
    # why one count suffices: the final sum does not fall as the start grows (module docstring)
    assert np.all(np.diff(sums) >= -1e-15 * sums[1:])


@pytest.mark.parametrize("m, k, fractions, right, delta", [
    (2000, 2, (0.25, 1.0), 0.62, 1e-5),
    (1000, 10, (0.1, 0.5, 1.0), 0.45, 0.0),
    (400, 4, (0.25, 1.0), 0.9, 1e-3),
    (150, 2, (1.0,), 0.7, 1e-5),
])
def test_lower_bounds_equal_the_quadratic_reference(monkeypatch, m, k, fractions, right, delta):
    """The whole result (ε and μ lower bounds, found by bisection over many tests) is the former code's, float
    for float: the same bisection run with the reference test in place of the linear one."""
    rng = np.random.default_rng([m, k])
    counts = tuple(max(1, round(f * m)) for f in fractions)
    correct = tuple(int(min(g, rng.binomial(g, right + 0.1 * (1 - g / m)))) for g in counts)
    guesses = Guesses(m, k, counts, correct)
    new = onerun_lower_bounds(guesses, delta=delta)
    assert new["epsilon"].lower > 0 and new["gdp_mu"].lower > 0  # the cases refute something
    monkeypatch.setattr(onerun, "rejects", _reference_rejects)
    monkeypatch.setattr(onerun, "dp_blowup_inverse", _reference_dp_inverse)
    monkeypatch.setattr(onerun, "gdp_blowup_inverse", _reference_gdp_inverse)
    old = onerun_lower_bounds(guesses, delta=delta)
    for key in ("epsilon", "gdp_mu"):
        assert new[key].lower == old[key].lower, key
        assert new[key].details["epsilon_if_gaussian" if key == "gdp_mu" else "guesses"] == \
            old[key].details["epsilon_if_gaussian" if key == "gdp_mu" else "guesses"]


def test_a_million_canaries_decide_as_the_full_walk():
    """Where the quadratic reference cannot run (m = 10⁶), the early stops of the linear test decide as walking
    every step to the end does, at each ε and μ the bisection tries."""
    m = 10**6
    seen = []
    # each with the two floats either side of where the decision flips (found by bisection on final_sum), 1e-7
    # and 1e-3 from it, and far from it
    for k, c, g, family, params in [
            (2, 620_000, m, "dp", (0.0, 0.4835982651054286, 0.4845981651054286, 0.4845982651054286,
                                   0.48459826510542864, 0.48459836510542864, 0.4855982651054286, 1.0)),
            (10, 30_000, 100_000, "gdp", (0.0, 0.3545098372590584, 0.3555097372590584, 0.3555098372590584,
                                          0.35550983725905844, 0.35550993725905844, 0.3565098372590584, 1.0)),
            (2, 99_900, 100_000, "dp", (5.0, 6.679313238405562, 6.679313338405562, 6.679313338405563,
                                        6.679313438405563, 9.0)),
            (2, 560_000, m, "gdp", (0.08543532919360966, 0.08543542919360966, 0.08543542919360969,
                                    0.0854355291936097))]:
        for p in params:
            inv = gdp_blowup_inverse(p) if family == "gdp" else dp_blowup_inverse(p, 1e-5)
            full = final_sum(c, g, m, k, 0.0125, inv) > g / m * (1 + 1e-12)
            assert rejects(c, g, m, k, 0.0125, inv) == full, (k, c, g, family, p)
            seen.append(full)
    assert any(seen) and not all(seen)


def test_vacuous_delta_is_flagged():
    """δ ≥ the per-test level: every guess right refutes nothing, and the result says so (not a silent ε ≥ 0)."""
    assert not rejects(500, 500, 500, 10, 0.025, dp_blowup_inverse(0, 0.05))
    allright = Guesses(500, 10, (100, 500), (100, 500))
    b = onerun_lower_bounds(allright, delta=0.05)
    assert b["epsilon"].lower == 0.0 and b["epsilon"].details["vacuous"] is True
    why = b["epsilon"].details["vacuous_reason"]
    assert "every guess right" in why and "delta = 0.05" in why and "0.025" in why
    assert b["gdp_mu"].details["vacuous"] is False and b["gdp_mu"].lower > 0  # the μ family is still tested
    ok = onerun_lower_bounds(allright, delta=1e-5)  # δ ≪ α: the same guesses refute a large ε
    assert ok["epsilon"].details["vacuous"] is False and ok["epsilon"].details["vacuous_reason"] is None
    assert ok["epsilon"].lower > 3
    # vacuous below δ = α too when too few slots are guessed: at δ = 1e-3 one guess cannot refute anything
    one = onerun_lower_bounds(Guesses(500, 10, (1,), (1,)), delta=1e-3)
    assert one["epsilon"].details["vacuous"] and one["gdp_mu"].details["vacuous"]


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


def test_opacus_result_names_the_relation_and_says_vacuous():
    """OneRunAuditResult (the Opacus hook's answer) prints and writes the relation, and says when it is vacuous."""
    from reconrisk._src.analysis.privacy import PrivacyAnalysis
    from reconrisk.integrations.opacus_audit import OneRunAuditResult, replace_one_epsilon
    from reconrisk._src.release import Release

    rel = Release(1.0, 1.0, 10, 1.0)
    allright = Guesses(500, 10, (100, 500), (100, 500))

    def result(delta):
        b = onerun_lower_bounds(allright, delta=delta)
        return OneRunAuditResult("transcript", rel, allright, b["epsilon"], b["gdp_mu"],
                                 replace_one_epsilon(rel, delta), PrivacyAnalysis(rel).epsilon(delta), delta)

    vac, ok = result(0.05), result(1e-5)
    assert vac.vacuous and "replace-one eps >= 0.00 at 95% (vacuous: even every guess right refutes no" in str(vac)
    assert not ok.vacuous and "vacuous" not in str(ok) and f"replace-one eps >= {ok.epsilon.lower:.2f}" in str(ok)
    assert vac.to_dict()["neighbouring"] == ok.to_dict()["neighbouring"] == "replace_one"
    assert vac.to_dict()["vacuous"] is True and "delta = 0.05" in vac.to_dict()["vacuous_reason"]
    assert ok.to_dict()["vacuous"] is False and ok.to_dict()["vacuous_reason"] is None
