"""Empirical lower bounds (bounds/empirical.py): closed forms, cross-checks, coverage over simulated audits.

The coverage tests simulate, with numpy only, the reconstruction game on mechanisms whose trade-off curve is
known exactly, 2,000 audits of 200 trials each per mechanism, and check that the one-sided 95 % lower ends exceed
the truth no more often than their level allows (and never the certified upper bound of the same release beyond
that level). Each is shown able to fail: the same simulation with the point estimate in place of the lower end
trips the same threshold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from reconrisk._src.audit.empirical import (
    clopper_pearson_lower,
    dp_rero_ceiling,
    empirical_audit,
    epsilon_from_rero_lower,
    epsilon_lower_bound,
    gdp_mu_from_rero_lower,
    max_epsilon_lower,
    rero_lower_bound,
)
from reconrisk.errors import ReconRiskError
from reconrisk._src.results import Bound

RUNS, TRIALS, LEVEL = 2000, 200, 0.95
# violations of a correct 95 % bound over RUNS runs are ≤ Binomial(RUNS, 0.05); this threshold is passed with
# probability 1 − 1e-6 by a correct bound (fixed seeds make the test deterministic either way)
THRESHOLD = int(stats.binom.ppf(1 - 1e-6, RUNS, 1 - LEVEL))


# -- closed forms and cross-checks -------------------------------------------------------------
def test_max_epsilon_at_1000_trials_kappa_tenth():
    """Every trial a success: 1 − p_lo = 1 − 0.05^{1/n}, ε = log(0.9/(1 − p_lo)) ≈ log(0.9 n / 3) ≈ 5.707."""
    expected = math.log(0.9 / -math.expm1(math.log(0.05) / 1000))
    assert max_epsilon_lower(1000, kappa=0.1) == pytest.approx(expected, rel=1e-12)
    assert 5.6 < expected < 5.8 and abs(expected - math.log(0.9 * 1000 / 3)) < 0.01
    b = epsilon_lower_bound(1000, 1000, kappa=0.1, delta=1e-5)
    assert b.lower == pytest.approx(b.details["max_possible"]) and b.lower < 32


def test_one_sided_clopper_pearson_cross_checks():
    for s, n in [(1, 10), (37, 100), (450, 1000), (999, 1000), (1000, 1000)]:
        lo, om = clopper_pearson_lower(s, n, 0.95)
        # the defining equation: P[Binomial(n, p_lo) ≥ s] = α
        assert stats.binom.sf(s - 1, n, lo) == pytest.approx(0.05, rel=1e-8)
        # scipy's two-sided exact interval at 90 % has the one-sided 95 % lower end
        ref = stats.binomtest(s, n).proportion_ci(confidence_level=0.90, method="exact").low
        assert lo == pytest.approx(ref, rel=1e-9, abs=1e-15)
        assert om == pytest.approx(1 - lo, rel=1e-9, abs=1e-15)
    assert clopper_pearson_lower(0, 50) == (0.0, 1.0)


def test_bound_objects():
    r = rero_lower_bound(30, 100, kappa=0.1)
    assert isinstance(r, Bound) and r.quantity == "reconstruction" and r.upper is None
    assert r.method == "clopper_pearson" and r.confidence == 0.95 and r.estimate == 0.3
    assert "Hayes, Mahloujifar & Balle 2023" in r.formula and "seed" not in r.formula
    e = epsilon_lower_bound(30, 100, kappa=0.1, delta=1e-5, certified_epsilon=4.0)
    assert e.quantity == "epsilon" and e.upper is None and e.lower > 0
    assert e.details["ratio_to_certified"] == pytest.approx(e.lower / 4.0)
    d = empirical_audit(30, 100, kappa=0.1, delta=1e-5, certified_rero=0.4).to_dict()
    assert d["rero"]["lower"] == r.lower and d["consistent"] and d["rero_ratio"] == pytest.approx(r.lower / 0.4)
    by = d["epsilon_by_delta"]  # the same successes refute less at a larger δ
    assert list(by) == ["0", "1e-08", "1e-06", "1e-05", "0.001"] and by["1e-05"] == pytest.approx(d["epsilon"]["lower"])
    assert all(a >= b for a, b in zip(by.values(), list(by.values())[1:]))


@pytest.mark.parametrize("kw,needle", [
    (dict(successes=5, trials=4, kappa=0.1), "successes must be"),
    (dict(successes=1, trials=0, kappa=0.1), "trials must be"),
    (dict(successes=1, trials=4, kappa=0.0), "kappa must be in (0, 1)"),
    (dict(successes=1, trials=4, kappa=0.1, confidence=1.0), "confidence must be in (0, 1)"),
])
def test_validation(kw, needle):
    with pytest.raises(ReconRiskError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        rero_lower_bound(**kw)


def test_epsilon_lower_is_the_larger_branch():
    """p_lo near 1 is decided by the second branch of the trade-off curve, mid-range p_lo by the first."""
    k = 0.1
    assert epsilon_from_rero_lower(0.5, k, 0.0) == pytest.approx(math.log(5.0))  # log(p/κ) > log(0.9/0.5)
    assert epsilon_from_rero_lower(0.99, k, 0.0) == pytest.approx(math.log(90.0))  # log(0.9/0.01) > log(9.9)
    assert epsilon_from_rero_lower(0.05, k, 0.0) == 0.0  # below the baseline: nothing refuted
    assert gdp_mu_from_rero_lower(0.1, 0.1) == 0.0


@given(p=st.floats(0.0, 0.999999), kappa=st.floats(1e-4, 0.9), delta=st.sampled_from([0.0, 1e-6, 1e-3]))
def test_epsilon_lower_is_the_supremum_of_refuted(p, kappa, delta):
    """ε_lo is where the (ε, δ) ReRo cap first reaches p_lo: every smaller ε is refuted, ε_lo is not."""
    e = epsilon_from_rero_lower(p, kappa, delta)
    assert dp_rero_ceiling(e, kappa, delta) >= p - 1e-9
    if e > 1e-6:
        assert dp_rero_ceiling(e * (1 - 1e-6) - 1e-9, kappa, delta) < p


@given(n=st.integers(1, 3000), frac=st.floats(0, 1), kappa=st.floats(1e-3, 0.5))
def test_monotone_in_successes(n, frac, kappa):
    s = int(frac * n)
    a = epsilon_lower_bound(s, n, kappa=kappa, delta=1e-5)
    b = epsilon_lower_bound(min(s + 1, n), n, kappa=kappa, delta=1e-5)
    assert b.details["rero_lower"] >= a.details["rero_lower"] and b.lower >= a.lower
    assert a.lower <= a.details["max_possible"] + 1e-12


# -- coverage over simulated audits on mechanisms with known curves ---------------------------------
def _kary_rr(eps: float, k: int, rng) -> np.ndarray:
    """Per-trial success of 'guess the output' on RR_k: output the target w.p. e^ε/k, else another uniformly.

    Against the empty data set's output (uniform on k) this is ε-DP (needs (k−1) ≤ e^ε (k − e^ε)) and the
    attack's success e^ε/k = κe^ε meets the (ε, 0) ReRo cap exactly: the tightest case for coverage.
    """
    assert (k - 1) <= math.exp(eps) * (k - math.exp(eps))
    z = rng.integers(0, k, (RUNS, TRIALS))
    keep = rng.random((RUNS, TRIALS)) < math.exp(eps) / k
    other = (z + rng.integers(1, k, (RUNS, TRIALS))) % k
    y = np.where(keep, z, other)
    return y == z


def _gaussian(mu: float, k: int, rng) -> np.ndarray:
    """q = 1 Gaussian release y = μ e_z + N(0, I_k) (k orthogonal candidates), attack argmax: μ-GDP."""
    z = rng.integers(0, k, (RUNS, TRIALS))
    y = rng.standard_normal((RUNS, TRIALS, k))
    np.put_along_axis(y, z[..., None], np.take_along_axis(y, z[..., None], -1) + mu, -1)
    return np.argmax(y, -1) == z


def _gaussian_success(mu: float, k: int) -> float:
    f = lambda u: stats.norm.pdf(u) * stats.norm.cdf(u + mu) ** (k - 1)  # noqa: E731
    return integrate.quad(f, -12, 12, epsabs=1e-13)[0]


def _mechanisms():
    from reconrisk._src.accounting.gaussian import gaussian_eps
    from reconrisk._src.measures.rero import closed_form
    from reconrisk._src.release import Release

    out = []
    for eps in (0.5, 1.0, 2.0):  # k-ary RR, δ = 0: truth = certified = κ e^ε
        out.append((f"RR eps={eps}", lambda rng, e=eps: _kary_rr(e, 10, rng), math.exp(eps) / 10,
                    float(dp_rero_ceiling(eps, 0.1, 0.0)), eps, 0.0))
    for mu in (0.5, 1.0, 2.0):  # Gaussian, δ = 1e-5; certified ReRo from the library's q = 1 closed form
        sigma = 1.0 / mu
        upper = float(closed_form(Release(sigma, 1.0, 1), np.array([0.1]))[0])
        out.append((f"Gaussian mu={mu}", lambda rng, m=mu: _gaussian(m, 10, rng), _gaussian_success(mu, 10),
                    upper, gaussian_eps(sigma, 1e-5), 1e-5))
    return out


def _lower_ends(success: np.ndarray, kappa: float, delta: float, point_estimate: bool = False):
    s = success.sum(axis=1)
    if point_estimate:  # a wrong "lower bound", to show the test can fail
        p = s / TRIALS
        return p, np.array([epsilon_from_rero_lower(x, kappa, delta) for x in p])
    p, e = [], []
    for x in s:
        b = epsilon_lower_bound(int(x), TRIALS, kappa=kappa, delta=delta, confidence=LEVEL)
        p.append(b.details["rero_lower"])
        e.append(b.lower)
    return np.array(p), np.array(e)


@pytest.mark.parametrize("index", range(6))
def test_coverage_2000_runs_of_200_trials(index):
    """Over 2,000 simulated audits, p_lo > true success and ε_lo > true ε(δ) happen at most at the 5 % level."""
    name, sim, p_true, upper, eps_true, delta = _mechanisms()[index]
    success = sim(np.random.default_rng([27, index]))
    assert abs(success.mean() - p_true) < 0.01, f"{name}: the simulation does not match its exact success"
    p_lo, eps_lo = _lower_ends(success, 0.1, delta)
    assert (p_lo > p_true).sum() <= THRESHOLD, f"{name}: the Clopper-Pearson lower end misses its level"
    assert (eps_lo > eps_true + 1e-9).sum() <= THRESHOLD, f"{name}: the epsilon lower bound misses its level"
    # the certified upper bound of the same release
    assert p_true <= upper + 1e-9, (f"{name}: bug in the certified bound — the attack's exact success {p_true:.5f} "
                                    f"exceeds the certified ReRo upper bound {upper:.5f}")
    over = int((p_lo > upper).sum())
    assert over <= THRESHOLD, (f"{name}: bug in the empirical lower bound — it exceeds the certified upper bound "
                               f"{upper:.5f} in {over} of {RUNS} runs (at most {THRESHOLD} allowed at 95 %), while "
                               f"the attack's exact success {p_true:.5f} is below it")


@pytest.mark.parametrize("index", [0, 1])
def test_coverage_test_can_fail(index):
    """The same simulation with the point estimate as 'lower bound' trips the coverage threshold."""
    name, sim, p_true, upper, eps_true, delta = _mechanisms()[index]
    success = sim(np.random.default_rng([27, index]))
    p_hat, eps_hat = _lower_ends(success, 0.1, delta, point_estimate=True)
    assert (p_hat > p_true).sum() > THRESHOLD and (eps_hat > eps_true).sum() > THRESHOLD
