"""Replace-one ReRo against the zero-out reference (issue 39, item 5): fixed batches, shuffling, cohorts.

References, none of which reads the PLD engine or :mod:`reconrisk._src.measures.rero_zeroout`'s solver:

* q = 1 (a fixed batch of the whole data set, or a shuffle with K = epochs): Φ(Φ⁻¹(κ) + √K/σ), which
  two antipodal candidates attain at κ = ½ (checked by a Monte Carlo of the real mechanism as well);
* T ≤ 2, q < 1: the revealed-selection pair's blow-up by maximising over the allocation directly
  (:func:`reconrisk._src.measures.reference.exact_zero_out`);
* a Monte Carlo of the real mechanism — actual batches of B of N drawn without replacement, the other
  records' gradients known to the adversary, the likelihood-ratio (MAP) guess among the candidates — whose
  Clopper–Pearson lower end (99.9 %, explicit seeds) must not exceed the certified upper end.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from reconrisk._src.api import risk
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.measures.reference import exact_zero_out
from reconrisk._src.measures.rero_zeroout import zero_out_bracket
from reconrisk._src.metrics import clopper_pearson
from reconrisk._src.release import Release, Segment


def gdp(kappa: float, mu: float) -> float:
    return float(special.ndtr(special.ndtri(kappa) + mu))


def never_sampled(rel: Release, kappa: float):
    """The previous bound: the Poisson remove pair at σ/2 (what a fixed-batch ReRo was before)."""
    s = rel.segments[0]
    return PrivacyAnalysis(Release(s.noise_multiplier / 2, s.sample_rate, s.steps)).rero(kappa)


# -- (a) q = 1: the attained closed form ----------------------------------------------------------
def test_the_issues_two_cases():
    fixed = Release.fixed_batch(2.0, 50, 50, 4)  # σ 2, T 4, prior 2
    r = PrivacyAnalysis(fixed).rero(prior_size=2)
    assert never_sampled(fixed, 0.5).upper == pytest.approx(0.97725, abs=1e-5)  # before: Φ(2)
    assert r.lower <= gdp(0.5, 1.0) <= r.upper and r.upper - r.lower < 1e-13  # exact, ends moved out by ulps
    assert round(r.upper, 3) == 0.841
    assert r.details["reference"] == "zero-out"
    shuffled = Release.shuffled(1.0, 3)  # σ 1, 3 epochs, prior 100
    r = PrivacyAnalysis(shuffled).rero(prior_size=100)
    assert round(never_sampled(shuffled, 0.01).upper, 3) == 0.872  # before: Φ(Φ⁻¹(.01) + 2√3)
    assert r.upper == pytest.approx(gdp(0.01, math.sqrt(3)), rel=1e-13) and round(r.upper, 3) == 0.276


@pytest.mark.parametrize("sigma, steps, kappa", [(0.5, 1, 0.5), (1.3, 7, 0.2), (4.0, 250, 1e-3), (0.8, 30, 1e-9),
                                                 (10.0, 3, 0.9)])
def test_full_batch_equals_the_closed_form_for_fixed_and_shuffled(sigma, steps, kappa):
    mu = math.sqrt(steps) / sigma
    for rel in (Release.fixed_batch(sigma, 17, 17, steps), Release.shuffled(sigma, steps)):
        for method in ("pld", "closed_form"):
            r = PrivacyAnalysis(rel).rero(kappa, method=method)
            assert r.lower == pytest.approx(gdp(kappa, mu), rel=1e-12) and r.upper == pytest.approx(r.lower, rel=1e-12)


# -- q < 1: the allocation reference ------------------------------------------------------------------
@pytest.mark.parametrize("sigma, q, steps, kappa", [(1.0, 0.5, 1, 0.5), (1.0, 0.1, 1, 0.01), (0.7, 0.3, 2, 0.05),
                                                    (2.0, 0.8, 2, 1e-4), (0.3, 0.2, 2, 0.5), (1.5, 0.9, 2, 0.3)])
def test_bracket_contains_the_allocation_reference(sigma, q, steps, kappa):
    lo, up = zero_out_bracket(Release(sigma, q, steps, sampler="fixed"), [kappa])
    ref = exact_zero_out(sigma, q, steps, kappa)
    assert lo[0] * (1 - 1e-8) <= ref <= up[0] * (1 + 1e-8)
    assert up[0] - lo[0] <= 1e-8 * up[0]  # the exact mixture: a bracket only as wide as its round-off allowance


# -- (b) a Monte Carlo of the real mechanism ------------------------------------------------------
def simulate(sigma, batch, n, steps, others, cands, trials, seed):
    """Successes of the MAP guess among ``cands`` (rows, norm ≤ 1 = C) on real fixed-size batches: the target's
    slot is index 0, every other record's clipped gradient is the known vector ``others``."""
    rng = np.random.default_rng(seed)
    q = batch / n
    inb = np.zeros((trials, steps), bool)
    for t in range(steps):  # a uniformly random batch of exactly `batch` of the n indices, per trial
        idx = np.argpartition(rng.random((trials, n)), batch - 1, axis=1)[:, :batch]
        inb[:, t] = (idx == 0).any(axis=1)
    zi = rng.integers(0, len(cands), trials)
    b = inb[:, :, None]
    y = (batch - b) * others + b * cands[zi][:, None, :] + sigma * rng.standard_normal((trials, steps, cands.shape[1]))
    ll = []
    for c in cands:
        l1 = -0.5 * np.sum((y - (batch - 1) * others - c) ** 2, axis=2) / sigma**2 + math.log(q)
        if q < 1:
            l0 = -0.5 * np.sum((y - batch * others) ** 2, axis=2) / sigma**2 + math.log1p(-q)
            l1 = np.logaddexp(l0, l1)
        ll.append(l1.sum(axis=1))
    return int(np.sum(np.argmax(np.stack(ll, axis=1), axis=1) == zi))


ANTIPODAL = np.array([[1.0, 0.0], [-1.0, 0.0]])
HEXAGON = np.stack([np.cos(np.arange(6) * np.pi / 3), np.sin(np.arange(6) * np.pi / 3)], axis=1)


@pytest.mark.parametrize("sigma, batch, n, steps, others, cands, seed", [
    (1.0, 5, 10, 10, (1.0, 0.0), ANTIPODAL, 1),
    (0.7, 30, 40, 5, (-1.0, 0.0), ANTIPODAL, 2),
    (2.0, 8, 10, 20, (0.0, 0.0), ANTIPODAL, 3),
    (1.0, 1, 10, 30, (1.0, 0.0), ANTIPODAL, 4),
    (0.8, 6, 10, 6, (0.0, 1.0), HEXAGON, 5),
])
def test_real_mechanism_success_never_exceeds_the_certified_bound(sigma, batch, n, steps, others, cands, seed):
    trials = 20_000
    wins = simulate(sigma, batch, n, steps, np.array(others), cands, trials, seed)
    lo, _ = clopper_pearson(wins, trials, 0.999)
    r = PrivacyAnalysis(Release.fixed_batch(sigma, batch, n, steps)).rero(1.0 / len(cands))
    assert lo <= r.upper, (wins / trials, r)


@pytest.mark.parametrize("sigma, steps, seed", [(2.0, 4, 11), (1.0, 3, 12), (3.0, 2, 13)])
def test_antipodal_candidates_attain_the_bound_at_q_one(sigma, steps, seed):
    """At q = 1 the bound at κ = ½ is attained: the interval holds Φ(√T/σ), not the never-sampled Φ(2√T/σ)."""
    trials = 20_000
    wins = simulate(sigma, 4, 4, steps, np.array([0.3, 0.0]), ANTIPODAL, trials, seed)
    lo, hi = clopper_pearson(wins, trials, 0.999)
    r = PrivacyAnalysis(Release.fixed_batch(sigma, 4, 4, steps)).rero(0.5)
    assert lo <= r.lower <= r.upper <= hi
    assert hi < never_sampled(Release.fixed_batch(sigma, 4, 4, steps), 0.5).lower


# -- (c) invariants -----------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(0.3, 5.0), n=st.integers(2, 200), frac=st.floats(0.01, 1.0), steps=st.integers(1, 40),
       logk=st.floats(-8.0, math.log10(0.9)))
def test_never_worse_than_the_never_sampled_reference_and_above_the_blind_guess(sigma, n, frac, steps, logk):
    batch = max(1, min(n, round(frac * n)))
    rel = Release.fixed_batch(sigma, batch, n, steps)
    k = 10.0**logk
    r = PrivacyAnalysis(rel).rero(k)
    old = never_sampled(rel, k)
    assert k * (1 - 1e-12) <= r.lower <= r.upper <= old.upper * (1 + 1e-12)
    lo, up = zero_out_bracket(rel, [k])
    assert r.upper <= up[0] * (1 + 1e-12) and lo[0] <= up[0]


@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(0.3, 5.0), q=st.floats(0.01, 1.0), steps=st.integers(1, 60),
       k1=st.floats(1e-8, 0.9), k2=st.floats(1e-8, 0.9))
def test_zero_out_bound_is_non_decreasing_in_steps_and_kappa(sigma, q, steps, k1, k2):
    k1, k2 = sorted((k1, k2))
    lo, up = zero_out_bracket(Release(sigma, q, steps, sampler="fixed"), [k1, k2])
    lo2, up2 = zero_out_bracket(Release(sigma, q, steps + 1, sampler="fixed"), [k1, k2])
    assert np.all(lo <= up) and np.all(lo2 <= up2)
    assert np.all(up2 >= lo)  # B(T + 1) ≥ B(T): dropping the last step's output is a garbling
    assert up[1] >= lo[0]  # B(κ₂) ≥ B(κ₁) for κ₂ ≥ κ₁


def test_several_segments_bracket_the_single_segment_values():
    """Two segments of equal (σ, q) are one segment: the rounded convolution brackets the exact binomial."""
    one = Release(1.2, 0.3, 20, sampler="fixed")
    split = Release(segments=[Segment(1.2, 0.3, 8), Segment(1.2, 0.3000001, 12)], sampler="fixed")  # not merged
    for k in (1e-4, 0.1):
        lo1, up1 = zero_out_bracket(one, [k])
        lo2, up2 = zero_out_bracket(split, [k])
        assert lo2[0] <= up1[0] * (1 + 1e-6) and lo1[0] <= up2[0] * (1 + 1e-6)
        assert up2[0] - lo2[0] <= 1e-3 * up2[0]


# -- the measures resting on the same argument ------------------------------------------------------
def test_reidentification_attribute_and_rad_use_the_zero_out_reference():
    a = PrivacyAnalysis(Release.fixed_batch(2.0, 50, 50, 4))
    exact = gdp(0.1, 1.0)
    assert risk(a, "reidentification", prior_size=10).upper == pytest.approx(exact, rel=1e-12)
    assert risk(a, "attribute", baseline=0.1).upper == pytest.approx(exact, rel=1e-12)
    rad = risk(a, "rad", prior_size=10)
    assert rad.lower - 1e-6 <= exact - 0.1 <= rad.upper + 1e-12 and rad.upper == pytest.approx(exact - 0.1, rel=1e-6)
    assert rad.details["reference"] == "zero-out"


def test_pair_questions_are_unchanged():
    """ε, δ and membership stay on the symmetrised curve (replace-one pairs, sensitivity 2C): μ = 2√T/σ at q = 1."""
    a = PrivacyAnalysis(Release.fixed_batch(2.0, 50, 50, 4))
    assert a.gdp_mu().upper == pytest.approx(2.0)
    assert risk(a, "membership_tpr", fpr=0.5).upper == pytest.approx(gdp(0.5, 2.0), rel=1e-9)


def test_a_dp_accounting_event_without_replacement_gets_the_same_bound():
    """A Gaussian event sampled without replacement is the fixed-batch release (σ = 2·its noise multiplier)."""
    import dp_accounting as dpa

    ev = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(100, 100, dpa.GaussianDpEvent(1.0)), 4)
    r = PrivacyAnalysis.from_dp_event(ev).rero(0.5)
    assert r.upper == pytest.approx(gdp(0.5, 1.0), rel=1e-12) and r.details["reference"] == "zero-out"


# -- the amplification investigation of the module docstring ---------------------------------------
def one_step_blowup(sigma, q, h, kappa):
    """B_κ of one real fixed-size step, selection hidden, 1-D (units of C): P = qN(1) + (1 − q)N(h) against
    Q = qN(0) + (1 − q)N(h), by Neyman–Pearson on a grid of 600,001 points over [−30, 30] (error < 1e-6 here)."""
    x = np.linspace(-30.0, 30.0, 600_001)

    def n(m):
        return np.exp(-0.5 * ((x - m) / sigma) ** 2)

    p, qd = q * n(1.0) + (1 - q) * n(h), q * n(0.0) + (1 - q) * n(h)
    p, qd = p / p.sum(), qd / qd.sum()
    o = np.argsort(-(np.log(p + 1e-300) - np.log(qd + 1e-300)))
    cq, cp = np.cumsum(qd[o]), np.cumsum(p[o])
    i = int(np.searchsorted(cq, kappa))
    return float((cp[i - 1] if i else 0.0) + (kappa - (cq[i - 1] if i else 0.0)) / qd[o][i] * p[o][i])


def test_hiding_the_selection_does_not_give_the_add_remove_amplification():
    """The docstring's numbers: with h = g one hidden step reaches the revealed value (σ 1, q 0.5, κ ½: 0.6915);
    with h = −g (σ 1, q 0.1, κ 0.01) 0.0323, above the add/remove pair at sensitivity C (0.0182), below 0.0389."""
    _, up = zero_out_bracket(Release(1.0, 0.5, 1, sampler="fixed"), [0.5])
    assert one_step_blowup(1.0, 0.5, 1.0, 0.5) == pytest.approx(up[0], abs=1e-5) and round(up[0], 4) == 0.6915
    hidden = one_step_blowup(1.0, 0.1, -1.0, 0.01)
    add_remove = 0.9 * 0.01 + 0.1 * gdp(0.01, 1.0)
    _, up = zero_out_bracket(Release(1.0, 0.1, 1, sampler="fixed"), [0.01])
    assert round(hidden, 4) == 0.0323 and round(add_remove, 4) == 0.0182 and round(up[0], 4) == 0.0389
    assert add_remove < hidden <= up[0]


# -- the Monte-Carlo row estimates the reported quantity ----------------------------------------------
@pytest.mark.parametrize("sigma, batch, n, steps, kappa", [(2.0, 50, 100, 20, 0.1), (2.0, 50, 50, 4, 0.5),
                                                           (3.0, 5, 100, 1, 0.01)])
def test_monte_carlo_row_brackets_the_bound_it_stands_beside(sigma, batch, n, steps, kappa):
    """``method="mc"`` on a fixed-batch release brackets min(never-sampled, zero-out), the quantity the certified
    bracket bounds: its interval used to be the never-sampled pair's alone (σ 2, 50 of 100, T 20, κ 0.1: MC
    [0.829, 0.834] beside the certified [0.6124, 0.6124])."""
    a = PrivacyAnalysis(Release.fixed_batch(sigma, batch, n, steps))
    cert = a.rero(kappa)
    mc = a.rero(kappa, method="mc", samples=20_000, seed=3)
    assert mc.lower <= cert.upper * (1 + 1e-12) and cert.lower <= mc.upper * (1 + 1e-12)
    assert mc.lower <= mc.estimate <= mc.upper
    assert mc.details["reference"] == cert.details["reference"]


def test_every_door_names_the_reference():
    """``risk(…, "reconstruction")`` carries the rero bound's ``reference`` (it used to drop it), and ``reconrisk bound``
    labels its rows with it, so a fixed-batch table says which reference each row reads."""
    from typer.testing import CliRunner

    from reconrisk._src.cli import app

    a = PrivacyAnalysis(Release.fixed_batch(2.0, 50, 100, 20))
    for measure, kw in (("reconstruction", {"prior_size": 10}), ("reidentification", {"prior_size": 10}),
                        ("attribute", {"baseline": 0.1})):
        r = risk(a, measure, **kw)
        assert r.details["reference"] == "zero-out" and r.upper == pytest.approx(a.rero(0.1).upper, rel=1e-12)
    res = CliRunner().invoke(app, ["bound", "-s", "2", "-T", "20", "--batch-size", "50", "--dataset-size", "100",
                                   "-n", "10", "--method", "all", "--samples", "20000"])
    assert res.exit_code == 0, res.output
    assert "pld (zero-out reference)" in res.output and "mc (zero-out reference)" in res.output
    res = CliRunner().invoke(app, ["risk", "-m", "reconstruction", "-s", "3", "-T", "1", "--batch-size", "5",
                                   "--dataset-size", "100", "-n", "100"])
    assert res.exit_code == 0 and "reconstruction (never-sampled reference)" in res.output, res.output
    res = CliRunner().invoke(app, ["calibrate", "-g", "0.1", "-T", "100", "--batch-size", "500", "--dataset-size",
                                   "1000", "-n", "100"])
    assert res.exit_code == 0 and "zero-out" in res.output, res.output


def test_the_reports_rero_rows_name_the_reference_and_meet_the_bracket():
    """The report's ReRo rows on fixed batches: the Monte-Carlo interval meets the certified bracket and every
    row names the reference it reads."""
    from reconrisk._src.experiments.riskreport import ReportConfig, risk_report
    from reconrisk._src.report.html import table_rows

    report = risk_report(Release.fixed_batch(2.0, 50, 100, 20), ReportConfig(prior_size=10, samples=20_000, seed=2))
    rr = report.rero
    assert rr.mc.lower <= rr.pld.upper and rr.pld.lower <= rr.mc.upper
    names = [r.quantity for r in table_rows(report) if r.family == "ReRo"]
    assert any("PLD bracket, zero-out reference" in q for q in names)
    assert any("Monte Carlo estimate, zero-out reference" in q for q in names)


# -- an independent Lagrangian reference at parameters no issue names ----------------------------------
def lagrangian_reference(segments, kappa):
    """B_κ of the revealed-selection pair without windows, grids or tails: the exact law of μ² = Σ K_i/σ_i² (every
    binomial over its full support, convolved exactly), and the Neyman–Pearson allocation κ_k = Φ(−t/μ_k − μ_k/2)
    at the threshold t where Σ_k p_k κ_k = κ (bisection, randomised on the K = 0 atom); float64 throughout."""
    from scipy import stats

    law = {0.0: 1.0}
    for sigma, q, steps in segments:
        k = np.arange(steps + 1)
        pk = stats.binom.pmf(k, steps, q)
        new: dict = {}
        for v0, p0 in law.items():
            for kk, pp in zip(k, pk):
                if pp > 0:
                    key = round(v0 + kk / sigma**2, 12)
                    new[key] = new.get(key, 0.0) + p0 * pp
        law = new
    mu = np.sqrt(np.array([v for v in law if v > 0]))
    p = np.array([law[v] for v in law if v > 0])
    atom = law.get(0.0, 0.0)

    def nu(t):
        return float(np.sum(p * special.ndtr(-t / mu - mu / 2)))

    def power(t):
        return float(np.sum(p * special.ndtr(-t / mu + mu / 2)))

    if nu(0.0) <= kappa <= nu(0.0) + atom:
        return power(0.0) + kappa - nu(0.0)
    lo, hi = (0.0, 1.0) if kappa < nu(0.0) else (-1.0, 0.0)
    extra = 0.0 if kappa < nu(0.0) else atom
    while nu(hi) + extra > kappa:
        hi *= 2.0
    while nu(lo) + extra < kappa:
        lo *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if nu(mid) + extra > kappa else (lo, mid)
    return power(hi) + extra


@pytest.mark.parametrize("segments, kappa", [
    ([(1.0, 0.5, 200)], 1e-9), ([(50.0, 0.3, 100)], 0.01), ([(0.05, 0.01, 5)], 0.5), ([(2.0, 1e-4, 1000)], 0.01),
    ([(0.3, 0.999, 10)], 1e-9), ([(0.01, 0.001, 100)], 0.2), ([(1000.0, 0.9, 1000)], 1e-9), ([(0.8, 0.7, 5)], 0.9),
    ([(1.0, 0.3, 4), (3.0, 0.6, 7)], 0.01), ([(0.5, 0.05, 20), (2.0, 0.5, 10), (1.0, 1.0, 2)], 1e-6),
])
def test_bracket_contains_an_independent_lagrangian_reference(segments, kappa):
    rel = Release(segments=[Segment(*s) for s in segments], sampler="fixed")
    lo, up = zero_out_bracket(rel, [kappa])
    ref = lagrangian_reference(segments, kappa)
    assert lo[0] <= ref * (1 + 1e-9) and ref <= up[0] * (1 + 1e-9)
    assert up[0] - lo[0] <= (2e-3 if len(segments) > 1 else 1e-8) * up[0]
