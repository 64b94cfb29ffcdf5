"""One analysis, built once (issue 22): the PrivacyAnalysis cache, its counter, and one answer through every door."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import reconrisk as rr
from reconrisk import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.analysis.calibrate import calibrate, meets
from reconrisk._src.analysis.calibrate_risk import calibrate_risk
from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError
from reconrisk._src.experiments.riskreport import TRADEOFF_ALPHA, ReportConfig, calibration_entry, risk_report
from reconrisk._src.results import Bound


def _json(capsys, args):
    code = main(args + ["--json"])
    out = capsys.readouterr().out
    assert code in (0, None), out
    return json.loads(out)


def _deprecated(call):
    """``call()``, a deprecated door that must still answer, and warn."""
    with pytest.deprecated_call():
        return call()


def test_report_composes_each_distribution_once():
    """Every family of the report asks one analysis: each (grid, side, direction) is composed at most once."""
    a = PrivacyAnalysis(Release(1.0, 0.01, 1000))
    rep = risk_report(a, ReportConfig(prior_size=10, target_rero=0.15, samples=0))
    assert max(a.compositions.values()) == 1, a.compositions
    # 54 before the analysis existed; now one per (grid, side, direction, round-off threshold): ε (2 directions),
    # each ReRo question's two sides at its own threshold, the δ-based measures' own grids
    assert rep.compositions == a.composition_count <= 20
    n = a.composition_count
    # asking again (any door of the same analysis) composes nothing
    lo, hi, k = TRADEOFF_ALPHA
    a.rero(prior_size=10), a.risk("membership_advantage"), a.epsilon(1e-5)
    a.tradeoff(np.logspace(np.log10(lo), np.log10(hi), k))
    assert a.composition_count == n
    # a new question with a stricter round-off threshold (a smaller α) composes at its own threshold, once
    a.tradeoff([1e-3, 0.1])
    m = a.composition_count
    a.tradeoff([1e-3, 0.1])
    assert a.composition_count == m and max(a.compositions.values()) == 1


def test_cached_answers_equal_fresh_ones():
    """The cache never changes a number: a question asked after many others equals the same question asked of a
    fresh analysis, to the last bit (so the report, ``bound`` and the calibrator agree exactly)."""
    r = Release(0.9, 0.02, 400)
    busy = PrivacyAnalysis(r)
    busy.epsilon(1e-5), busy.tradeoff(np.logspace(-6, -0.3, 50)), busy.rero_many([1 / 2**k for k in range(1, 17)])
    busy.risk("rad", prior_size=7), busy.risk("membership_advantage")
    for k in (0.5, 0.1, 0.01, 1e-4):
        assert busy.rero(k) == PrivacyAnalysis(r).rero(k)
    assert busy.risk("bayes_security") == PrivacyAnalysis(r).risk("bayes_security")


def test_bounds_are_the_one_result_shape():
    a = PrivacyAnalysis(Release(1.0, 0.05, 50))
    for b in (a.rero(prior_size=10), a.epsilon(1e-5), a.delta(1.0), a.gdp_mu(), a.risk("membership_advantage"),
              a.rero(prior_size=10, method="rdp")):
        assert isinstance(b, Bound)
        d = b.to_dict()
        assert {"quantity", "lower", "upper", "estimate", "confidence", "method", "formula", "converged"} <= set(d)
        assert b.lower is None or b.lower <= b.upper


def test_epsilon_bracket_contains_dp_accounting():
    """ε: our pessimistic end equals the PLD accountant's ε, the optimistic end is below, and Google's
    dp_accounting (an independent implementation of the pessimistic side) lands in between (to its grid)."""
    r = Release(1.1, 0.02, 300)
    b = PrivacyAnalysis(r).epsilon(1e-5, two_sided=True)
    assert b.upper == rr.epsilon(release=r, delta=1e-5)
    assert PrivacyAnalysis(r).epsilon(1e-5).lower is None  # the optimistic end is asked for, not default
    ref = rr.epsilon(release=r, delta=1e-5, accountant="dp_accounting")
    assert b.lower <= ref <= b.upper + 1e-3
    assert b.upper - b.lower < 1e-2


def test_delta_bracket_is_consistent_with_epsilon():
    a = PrivacyAnalysis(Release(1.0, 0.01, 1000))
    e = a.epsilon(1e-5)
    d = a.delta(e.upper, two_sided=True)
    assert d.lower <= 1e-5 * (1 + 1e-9)


@pytest.mark.parametrize("sigma, q, t", [(2.0, 1.0, 10), (0.8, 0.1, 1)])
def test_gdp_mu_bracket_contains_the_exact_value(sigma, q, t):
    """q = 1: μ = √T/σ exactly. T = 1: the exact curve is known in closed form; its smallest GDP μ is the sup over α
    of Φ⁻¹(1 − α) − Φ⁻¹(f(α)) (evaluated here on a grid down to α = 1e-300, a lower estimate of the sup)."""
    b = PrivacyAnalysis(Release(sigma, q, t)).gdp_mu()
    if q == 1.0:
        assert b.lower == b.upper == pytest.approx(math.sqrt(t) / sigma)
        return
    a = np.logspace(-300, -0.3, 4000)
    power = (1 - q) * a + q * special.ndtr(special.ndtri(a) + 1 / sigma)  # 1 − f(α), without cancellation
    sup = float(np.max(special.ndtri(power) - special.ndtri(a)))  # Φ⁻¹(1−α) − Φ⁻¹(f) = Φ⁻¹(1−f) − Φ⁻¹(α)
    assert b.lower <= sup + 1e-9 and b.lower <= b.upper
    assert b.upper >= 1 / sigma - 1e-12  # the Gaussian-tail limit of a subsampled step is 1/σ


# -- one calibrator, one answer through every door -------------------------------------------------------------
#: hidden-style settings: none of them is an example of the README or of an issue
DOORS = [(0.07, 0.013, 777, 50), (0.3, 0.25, 40, 10), (0.021, 0.004, 2500, 1000)]


@pytest.mark.parametrize("target, q, t, n", DOORS)
def test_the_same_question_through_every_door(capsys, target, q, t, n):
    ref = calibrate("reconstruction", target, sample_rate=q, steps=t, prior_size=n)
    assert meets(ref.bound, target) and ref.bound.upper <= target
    doors = {
        "cli --target-rero": _json(capsys, ["calibrate", "--target-rero", repr(target), "--prior-size", str(n),
                                            "--sample-rate", repr(q), "--steps", str(t)])["noise_multiplier"],
        "cli --measure": _json(capsys, ["calibrate", "--measure", "reconstruction", "--target", repr(target),
                                        "--prior-size", str(n), "-q", repr(q), "-T", str(t)])["noise_multiplier"],
        "calibrate_noise (deprecated)": _deprecated(lambda: rr.calibrate_noise(target, q, t, prior_size=n))["noise_multiplier"],
        "calibrate_risk (deprecated)": _deprecated(lambda: calibrate_risk("reconstruction", target, sample_rate=q, steps=t,
                                                                         prior_size=n))["noise_multiplier"],
        "kappa instead of prior_size": calibrate("reconstruction", target, sample_rate=q, steps=t,
                                                 kappa=1.0 / n).noise_multiplier,
        "report": calibration_entry(PrivacyAnalysis(Release(1.0, q, t)),
                                    ReportConfig(prior_size=n, target_rero=target)).noise_multiplier,
    }
    assert all(x == ref.noise_multiplier for x in doors.values()), (ref.noise_multiplier, doors)
    # the report decides "meets" by the bound at the release: the calibrated release meets, 2 % less noise does not
    at = calibration_entry(PrivacyAnalysis(ref.release), ReportConfig(prior_size=n, target_rero=target))
    assert at.meets_target_now is True and at.current_rero.upper == ref.bound.upper
    below = calibration_entry(PrivacyAnalysis(Release(ref.noise_multiplier * 0.98, q, t)),
                              ReportConfig(prior_size=n, target_rero=target))
    assert below.meets_target_now is False


def test_epsilon_calibration_is_the_same_calibrator():
    s = rr.noise_multiplier_for_epsilon(2.0, 0.02, 300, 1e-5)
    assert s == calibrate("epsilon", 2.0, sample_rate=0.02, steps=300, delta=1e-5).noise_multiplier
    assert rr.epsilon(s, 0.02, 300, 1e-5) <= 2.0 < rr.epsilon(s * (1 - 2e-4), 0.02, 300, 1e-5)
    # q = 1: the exact Gaussian-DP answer, stepped by ulps until the certified ε meets the target
    s1 = rr.noise_multiplier_for_epsilon(4.0, 1.0, 100, 1e-5)
    assert rr.epsilon(s1, 1.0, 100, 1e-5) <= 4.0 and s1 == pytest.approx(10.8116, abs=1e-4)


@settings(max_examples=12, deadline=None)
@given(frac=st.floats(0.05, 0.95), t=st.integers(1, 60))
def test_calibration_meets_exactly_and_is_not_wasteful(frac, t):
    """The bound at the answer meets the target exactly in floating point; rel_tol less noise does not."""
    top = 1 - 0.8**t * 0.9  # no noise at all: the target is reconstructed iff it was ever sampled
    target = 0.1 + frac * (top - 0.1)
    cal = calibrate("reconstruction", target, sample_rate=0.2, steps=t, prior_size=10, rel_tol=1e-3)
    assert cal.bound.upper <= target
    lo = cal.bracket[0]
    if lo < cal.noise_multiplier:
        assert not meets(PrivacyAnalysis(Release(lo, 0.2, t)).risk("reconstruction", prior_size=10), target)


@pytest.mark.parametrize("solve, given_, key", [("steps", {"noise_multiplier": 1.0, "sample_rate": 0.05}, "steps"),
                                                ("sample_rate", {"noise_multiplier": 1.0, "steps": 200}, "sample_rate")])
def test_solving_for_steps_and_sample_rate(solve, given_, key):
    cal = calibrate("reconstruction", 0.2, solve, prior_size=10, **given_)
    assert cal.bound.upper <= 0.2
    nxt = dict(given_)
    nxt[key] = cal.steps + 1 if key == "steps" else min(1.0, cal.sample_rate * 1.01)
    b = PrivacyAnalysis(Release(nxt.get("noise_multiplier"), nxt.get("sample_rate"), nxt.get("steps"))).rero(
        prior_size=10)
    assert b.upper > 0.2


def test_calibrator_errors_name_the_parameter():
    with pytest.raises(ReconRiskError, match="target"):
        calibrate("reconstruction", 0.05, sample_rate=0.1, steps=10, prior_size=10)  # below the blind guess
    with pytest.raises(ReconRiskError, match="solve"):
        calibrate("reconstruction", 0.5, "epochs", sample_rate=0.1, steps=10, prior_size=10)
    with pytest.raises(ReconRiskError, match="quantity"):
        calibrate("privacy", 0.5, sample_rate=0.1, steps=10)
    with pytest.raises(ReconRiskError, match="sample_rate"):
        calibrate("reconstruction", 0.5, steps=10, prior_size=10)
