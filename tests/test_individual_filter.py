"""The individual Rényi filter (bounds/individual_filter.py): it certifies its budget, for every example alike.

* The counter-example (a two-step run whose second step's norm depends on the first released output): the
  mechanism's exact blow-up and ε, by numerical integration here, are at most the filter's certified numbers
  in both branches — while what the example *spent* in one branch converts to far less (an estimate, not a
  guarantee: Feldman & Zrnic 2021 certify the budget fixed before training).
* A filtered run's certified numbers are the same for every example and equal the budget's conversion,
  recomputed without the filter (``rdp_power`` and ``dp_accounting`` on c steps' RDP curve), capped by the
  release's worst case; never below what an example at C on ⌊c⌋ steps (which the filter admits) is exposed to.
* The bookkeeping against a direct recomputation; every number at most the target.

Sizes: 12 examples over 30 steps at σ = 1, q = 0.2 (the budget of a ReRo target 0.3 at κ = 0.1 is ~20 steps
at C, so examples near C are stopped mid-run and small-gradient ones are not): every branch of the admission
test is taken. The direct recomputation sums the subsampled Gaussian's RDP step by step from
reconrisk._src.accounting.rdp, without the filter's level table.
"""

from __future__ import annotations

import numpy as np
import pytest

import math

from scipy import integrate, optimize, stats

from reconrisk import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.accounting.rdp import subsampled_gaussian_rdp
from reconrisk._src.individual.privacy import individual_analysis
from reconrisk._src.individual.filter import MARGIN, IndividualFilter, _rdp_to_epsilon, _rdp_to_rero
from reconrisk._src.measures.rdp_tradeoff import rdp_power
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
    assert np.all(f.spent_rero_estimate(KAPPA) <= f.certified_rero(KAPPA) + 1e-12)  # an estimate of a part of it
    g = IndividualFilter(REL, target_epsilon=2.0, delta=1e-5)
    for t in range(REL.steps):
        g.admit(_norms(1)[:, t])
    assert np.all(g.certified_epsilon(1e-5) <= 2.0) and g.filtered.any()
    assert np.all(g.spent_epsilon_estimate(1e-5) <= g.certified_epsilon(1e-5) + 1e-12)


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
    np.testing.assert_allclose(f.spent_rero_estimate(KAPPA), _rdp_to_rero(f.orders, f.spent_rdp, KAPPA), rtol=0)
    contributed = f.contributed(norms)
    assert np.all(contributed[scales == 0] == 0) and np.all(contributed[scales == 1] == norms[scales == 1])


def test_without_a_target_nothing_is_filtered_and_the_worst_case_is_the_release():
    f = IndividualFilter(REL, orders=(1.5, 2.0, 4.0, 16.0), buckets=8)
    for _ in range(REL.steps):
        f.admit(np.full(3, 10.0))  # clipped at C on every step
    assert not f.filtered.any()
    w = f.spent_rdp[0]
    np.testing.assert_allclose(w, REL.steps * subsampled_gaussian_rdp(1.0, 0.2, f.orders), rtol=1e-12)
    assert f.spent_epsilon_estimate(1e-5)[0] == pytest.approx(_rdp_to_epsilon(f.orders, w[None, :], 1e-5)[0])
    # the budget (T steps at C, RDP) converts to more than the release's own PLD worst case: that caps it
    worst = PrivacyAnalysis(REL).epsilon(1e-5).upper
    assert worst < f.budget_epsilon(1e-5) and f.certified_epsilon(1e-5).tolist() == [worst] * 3


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
    from reconrisk._src.individual.filter import FILTER_ORDERS
    from reconrisk._src.measures.rdp_tradeoff import rdp_power

    rng = np.random.default_rng(3)
    curves = rng.uniform(0.0, 2.0, (3, FILTER_ORDERS.size)) * FILTER_ORDERS[None, :] / 10
    rows = curves[[0, 1, 0, 2, 1, 0]]
    rows[4] = 0.0
    for kappa in (0.1, 0.01, 0.1):
        got = _rdp_to_rero(FILTER_ORDERS, rows, kappa)
        want = [kappa if not r.any() else rdp_power(kappa, FILTER_ORDERS, r)[0] for r in rows]
        assert got.tolist() == want and len(set(want)) == 4


# -- the counter-example: the norm at step 2 is a function of the released y₁ -----------------------------------
# Release(0.5, 1.0, 2, clip_norm=1.0): noise std σC = 0.5 on the sum, every example in every batch. One example's
# clipped-gradient norm is 0.01 at step 1, and at step 2 it is C when the released y₁ < 0 (along the direction
# of its step-1 gradient, the only one its step-1 output informs), 0 otherwise. In that direction, target in (P)
# against target out (Q): y₁ ~ N(0.01, 0.5²) vs N(0, 0.5²); given y₁ < 0, y₂ ~ N(1, 0.5²) vs N(0, 0.5²), else
# the same law under both. Privacy loss L = log dP/dQ = L₁(y₁) + 1[y₁ < 0]·L₂ with L₁(y) = (a·y − a²/2)/s² and
# L₂ ~ N(M/2, M) under P, N(−M/2, M) under Q (M = (b/s)² = 4). Everything below integrates over y₁ numerically
# (scipy.integrate.quad; the inner Gaussian in closed form), independently of reconrisk.

TOY = Release(0.5, 1.0, 2, clip_norm=1.0)
S, A, B = 0.5, 0.01, 1.0  # noise std σC, the step-1 norm, the step-2 norm in its branch
M2, SD2 = (B / S) ** 2 / 2, B / S  # mean and s.d. of L₂ under P (−M2 under Q)
LO, HI = -14 * S, 14 * S  # y₁ beyond 14 s.d. carries < 1e-40 mass under either law
_N = stats.norm
_QUAD = dict(epsabs=1e-15, epsrel=1e-12, limit=400)


def _l1(y):
    return (A * y - A * A / 2) / S**2


def _tail(t, under, thr):
    """Pr[L > t] under ``under`` ("P" or "Q"); the step-2 branch is y₁ < thr."""
    mean, mu2 = (A, M2) if under == "P" else (0.0, -M2)
    y_t = t * S**2 / A + A / 2  # L₁(y) > t  ⇔  y > y_t
    first = _N.sf(max(thr, y_t), mean, S) if thr < HI else 0.0
    second = integrate.quad(lambda y: _N.pdf(y, mean, S) * _N.sf(t, _l1(y) + mu2, SD2), LO, min(thr, HI), **_QUAD)[0]
    return first + second


def exact_blowup(kappa, thr=0.0):
    """B_κ in both orientations (Neyman–Pearson: reject on a large, resp. small, privacy loss)."""
    t = optimize.brentq(lambda t: _tail(t, "Q", thr) - kappa, -60, 60, xtol=1e-13)
    t_rev = optimize.brentq(lambda t: (1 - _tail(t, "P", thr)) - kappa, -60, 60, xtol=1e-13)
    return _tail(t, "P", thr), 1 - _tail(t_rev, "Q", thr)


def _hinge(c, mu, sd):
    """E[(1 − e^{c − X})₊] for X ~ N(mu, sd²)."""
    return _N.sf(c, mu, sd) - math.exp(c - mu + sd * sd / 2 + _N.logsf((c - mu + sd * sd) / sd))


def _delta(eps, orient, thr):
    if orient == "PQ":  # E_P[(1 − e^{ε − L})₊]
        y0 = eps * S**2 / A + A / 2  # L₁ > ε above y0
        first = integrate.quad(lambda y: _N.pdf(y, A, S) * -math.expm1(eps - _l1(y)), max(thr, y0), HI,
                               **_QUAD)[0] if max(thr, y0) < HI else 0.0
        second = integrate.quad(lambda y: _N.pdf(y, A, S) * _hinge(eps, _l1(y) + M2, SD2), LO, min(thr, HI),
                                **_QUAD)[0]
        return first + second
    # E_Q[(1 − e^{ε + L})₊]: −L = −L₁ − L₂, −L₂ ~ N(M2, SD2²) under Q; outside the branch −L₁ > ε below y1
    y1 = -eps * S**2 / A + A / 2
    first = integrate.quad(lambda y: _N.pdf(y, 0.0, S) * -math.expm1(eps + _l1(y)), max(thr, LO), y1,
                           **_QUAD)[0] if max(thr, LO) < y1 else 0.0
    second = integrate.quad(lambda y: _N.pdf(y, 0.0, S) * _hinge(eps, -_l1(y) + M2, SD2), LO, min(thr, HI),
                            **_QUAD)[0]
    return first + second


def exact_epsilon(delta, thr=0.0):
    """ε(δ) in both orientations (the smallest ε with δ(ε) ≤ δ, from the exact privacy loss)."""
    return tuple(optimize.brentq(lambda e: _delta(e, o, thr) - delta, 0.0, 60.0, xtol=1e-10) for o in ("PQ", "QP"))


def test_the_integration_reproduces_a_closed_form():
    """With the step-2 branch always taken (thr = ∞) the toy is the Gaussian mechanism, μ = √(a² + b²)/s:
    B_κ = Φ(Φ⁻¹(κ) + μ) and δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13)."""
    mu = math.hypot(A, B) / S
    want_b = _N.cdf(_N.ppf(0.1) + mu)
    want_e = optimize.brentq(lambda e: _N.cdf(-e / mu + mu / 2) - math.exp(e) * _N.cdf(-e / mu - mu / 2) - 1e-5,
                             0.0, 60.0, xtol=1e-12)
    for got in exact_blowup(0.1, math.inf):
        assert got == pytest.approx(want_b, abs=1e-9)
    for got in exact_epsilon(1e-5, math.inf):
        assert got == pytest.approx(want_e, abs=1e-7)


@pytest.fixture(scope="module")
def exact():
    b = exact_blowup(0.1)
    e = exact_epsilon(1e-5)
    # the figures of the review that found the flaw (Neyman–Pearson on the exact privacy loss)
    assert b[0] == pytest.approx(0.4357, abs=1e-4) and e[0] == pytest.approx(9.65, abs=0.01)
    return max(b), max(e)


@pytest.mark.parametrize("budget", [{}, {"target_rero": 0.96, "kappa": 0.1}], ids=["worst-case", "target-0.96"])
@pytest.mark.parametrize("y1_negative", [False, True], ids=["y1>=0", "y1<0"])
def test_the_certificate_holds_in_both_branches_of_the_counter_example(exact, budget, y1_negative):
    b_exact, e_exact = exact
    f = IndividualFilter(TOY, **budget)
    step2 = 1.0 if y1_negative else 0.0
    norms = np.array([[A, step2]])
    for t in range(2):
        assert f.admit(norms[:, t]).tolist() == [1.0]  # never stopped: the filtered run is the toy mechanism
    assert not f.filtered.any()
    assert f.certified_rero(0.1)[0] >= b_exact and f.certified_epsilon(1e-5)[0] >= e_exact
    ip = individual_analysis(TOY, norms, individual_filter=f)
    assert ip.certified and ip.rero(0.1)[0] >= b_exact and ip.epsilon(1e-5)[0] >= e_exact
    if not y1_negative:  # what the example spent in this branch is far below the truth: an estimate only
        assert f.spent_rero_estimate(0.1)[0] < 0.11 < b_exact and f.spent_epsilon_estimate(1e-5)[0] < 0.1
        assert ip.ex_post_rero(0.1)[0] < b_exact


def test_a_filtered_runs_certificate_is_the_budgets_for_every_example(run):
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    f, norms, _ = run
    spent = f.spent_rero_estimate(KAPPA)
    assert np.ptp(spent) > 0.1 and f.filtered.any() and not f.filtered.all()  # examples spent very differently
    c = f.budget_steps
    budget = c * subsampled_gaussian_rdp(REL.noise_multiplier, REL.sample_rate, f.orders)  # c steps at C
    worst = PrivacyAnalysis(REL)
    want = min(rdp_power(KAPPA, f.orders, budget)[0], worst.rero(KAPPA).upper)
    np.testing.assert_allclose(f.certified_rero(KAPPA), np.full(f.n, want), rtol=1e-12, atol=0)
    # an example at C on ⌊c⌋ steps fits the budget: the certificate is at least its exposure
    assert want >= PrivacyAnalysis(Release(REL.noise_multiplier, REL.sample_rate, math.floor(c))).rero(KAPPA).upper
    ip = individual_analysis(REL, norms, individual_filter=f)
    np.testing.assert_allclose(ip.rero(KAPPA), np.full(f.n, want), rtol=1e-12, atol=0)
    d = ip.to_dict(delta=1e-5, kappa=KAPPA)
    assert d["certified_rero"] == [d["certified_rero_every_example"]] * f.n
    assert len(set(d["ex_post_rero"])) > 1  # what each spent, beside it, as an estimate
    post = ip.ex_post_rero(KAPPA)  # who is most exposed: ranked by what each spent, not by the (equal) certificates
    assert ip.most_exposed(3, KAPPA).tolist() == np.lexsort((np.arange(f.n), -post))[:3].tolist() != [0, 1, 2]
    # ε: an (ε, δ) budget, its certificate recomputed by dp_accounting's own RDP conversion
    g = IndividualFilter(REL, target_epsilon=2.0, delta=1e-5)
    for t in range(REL.steps):
        g.admit(_norms(1)[:, t])
    assert np.ptp(g.spent_epsilon_estimate(1e-5)) > 0.5
    budget = g.budget_steps * subsampled_gaussian_rdp(REL.noise_multiplier, REL.sample_rate, g.orders)
    want = min(compute_epsilon(g.orders, budget, 1e-5)[0], worst.epsilon(1e-5).upper)
    np.testing.assert_allclose(g.certified_epsilon(1e-5), np.full(g.n, want), rtol=1e-9, atol=0)
    assert want <= 2.0
