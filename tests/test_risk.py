"""Risk measures from the certified curve: each bracket contains its closed form; RAD against an independent optimiser."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from reconrisk import Release
from reconrisk._src.analysis import risk as R
from reconrisk._src.measures import risk as M
from reconrisk._src.measures.tradeoff import exact_power
from reconrisk import tradeoff
from reconrisk.errors import ReconRiskError
from reconrisk import analyse

REL = 1e-9


def _in(r, exact):
    assert r.lower <= exact * (1 + REL) + 1e-15, (r.lower, exact)
    assert r.upper >= exact * (1 - REL) - 1e-15, (r.upper, exact)


def _exact_tv(release):
    if all(s.sample_rate == 1.0 for s in release.segments):
        mu = math.sqrt(sum(s.steps / s.noise_multiplier**2 for s in release.segments))
        return 2 * special.ndtr(mu / 2) - 1
    s = release.segments[0]
    return s.sample_rate * (2 * special.ndtr(1 / (2 * s.noise_multiplier)) - 1)


closed = st.one_of(
    st.builds(lambda s, t: Release(s, 1.0, t), st.floats(0.3, 50.0), st.integers(1, 5000)),
    st.builds(lambda s, q: Release(s, q, 1), st.floats(0.3, 50.0), st.floats(1e-4, 0.999)),
)


@settings(max_examples=20)
@given(release=closed, n=st.integers(2, 10**6), fpr=st.floats(1e-12, 0.5))
def test_every_measure_contains_its_closed_form(release, n, fpr):
    b = 1.0 / n
    exact_b = float(exact_power(release, np.array([b]))[0])
    for m in ("reconstruction", "reidentification", "attribute"):
        _in(R.risk(analyse(release), m, prior_size=n), exact_b)
    _in(R.risk(analyse(release), "attribute", baseline=b), exact_b)
    _in(R.risk(analyse(release), "membership_tpr", fpr=fpr), float(exact_power(release, np.array([fpr]))[0]))
    tv = _exact_tv(release)
    _in(R.membership_advantage(analyse(release)), tv)
    bs = R.bayes_security(analyse(release))
    assert bs.lower <= 1 - tv + 1e-12 and bs.upper >= 1 - tv - 1e-12
    rad = R.reconstruction_advantage(analyse(release), prior_size=n)
    assert rad.baseline == b
    assert rad.lower <= exact_b - b + 1e-9 and rad.upper >= exact_b - b - 1e-9


@pytest.mark.parametrize("release", [Release(1.0, 0.05, 200), Release(0.8, 0.2, 3), Release.schedule([(1.0, 0.05, 50), (2.0, 0.1, 20)])])
def test_pld_measures_agree_with_the_curve(release):
    """Advantage = max_α (1 − α − f(α)): the curve's certified values on a grid can never beat the TV bracket."""
    adv = R.membership_advantage(analyse(release))
    assert adv.method == "pld" and 0 < adv.lower <= adv.upper < 1
    a = np.linspace(1e-4, 0.999, 400)
    t = tradeoff(release, a)
    assert float(np.max(t.power.lower - a)) <= adv.upper + 1e-12
    assert float(np.max(t.power.upper - a)) >= adv.lower - 2e-3  # grid spacing 2.5e-3 of a 1-Lipschitz gap
    bs = R.bayes_security(analyse(release))
    assert bs.lower == pytest.approx(1 - adv.upper) and bs.upper == pytest.approx(1 - adv.lower)


def _rad_by_slsqp(mu, prior):
    """max Σ π_z Φ(Φ⁻¹(t_z) + μ) over the simplex, by a generic optimiser (independent of the dual)."""
    p = np.asarray(prior)

    def neg(t):
        t = np.clip(t, 1e-300, 1.0)
        return -float(np.sum(p * special.ndtr(special.ndtri(t) + mu)))

    x0 = p / p.sum()
    res = optimize.minimize(neg, x0, method="SLSQP", bounds=[(0.0, 1.0)] * p.size,
                            constraints=[{"type": "ineq", "fun": lambda t: 1.0 - np.sum(t)}], options={"ftol": 1e-12, "maxiter": 500})
    return -res.fun


@pytest.mark.parametrize("mu, prior", [(1.0, [0.5, 0.3, 0.2]), (0.3, [0.7, 0.1, 0.1, 0.05, 0.05]), (2.5, [0.4, 0.4, 0.2])])
def test_rad_nonuniform_prior_matches_an_independent_optimiser(mu, prior):
    r = Release(1.0 / mu, 1.0, 1)
    rad = R.reconstruction_advantage(analyse(r), prior=prior)
    s = _rad_by_slsqp(mu, prior)
    assert rad.details["success_lower"] - 1e-9 <= s + 1e-6  # a feasible point can't beat the optimum
    assert s <= rad.details["success_upper"] + 1e-9  # nor the dual upper end
    assert rad.upper - rad.lower < 1e-6
    # Jensen: never above ReRo at κ = max prior, and strictly below it for a non-uniform prior
    rero = R.reconstruction_risk(analyse(r), kappa=max(prior))
    assert rad.upper + max(prior) < rero.lower


def test_rad_pld_path_is_two_sided_and_refines_rero():
    r = Release(1.0, 0.02, 300)
    prior = [0.4, 0.3, 0.2, 0.1]
    rad = R.reconstruction_advantage(analyse(r), prior=prior)
    assert rad.method == "pld"
    assert 0 <= rad.lower <= rad.upper
    assert rad.upper - rad.lower < 1e-3
    rero = R.reconstruction_risk(analyse(r), kappa=0.4)
    assert rad.upper + 0.4 <= rero.upper + 1e-12
    uni = R.reconstruction_advantage(analyse(r), prior_size=10)
    rr = R.reconstruction_risk(analyse(r), prior_size=10)
    assert uni.lower <= rr.upper - 0.1 + 1e-9 and uni.upper >= rr.lower - 0.1 - 1e-9


def test_cherubin_baseline_is_exact_at_q1():
    r = Release(2.0, 1.0, 9)
    bs = R.bayes_security(analyse(r))
    assert bs.details["baselines"]["cherubin_closed_form"] == pytest.approx(bs.lower, rel=1e-12)
    r2 = Release(1.0, 0.01, 1000)
    c = M.cherubin_bayes_security(r2)
    assert c == pytest.approx(1 - math.erf(0.01 * math.sqrt(1000) / (2 * math.sqrt(2))))


def test_json_shape():
    """Every risk is the one result shape (reconrisk._src.results.Bound): fixed fields, measure-specific details."""
    b = R.risk(analyse(Release(1.0, 0.01, 100)), "reconstruction", prior_size=100)
    d = b.to_dict()
    for k in ("quantity", "method", "lower", "upper", "width", "estimate", "confidence", "converged", "formula",
              "baseline", "prior_size"):
        assert k in d
    assert d["quantity"] == "reconstruction" and d["baseline"] == b.baseline == 0.01
    assert "Hayes, Mahloujifar & Balle 2023" in d["formula"]


def test_python_names_and_the_cli_spelling_map_in_one_place():
    r = Release(1.0, 0.01, 100)
    assert R.risk(analyse(r), "membership_advantage").quantity == "membership_advantage"
    with pytest.warns(DeprecationWarning, match="membership_advantage"):
        old = R.risk(analyse(r), "membership-advantage")
    assert old == R.risk(analyse(r), "membership_advantage")
    assert M.canonical_measure("bayes-security", cli=True) == "bayes_security"
    with pytest.raises(ReconRiskError, match="measure must be one of"):
        M.canonical_measure("membership advantage")


@pytest.mark.parametrize(
    "measure, kw, word",
    [
        ("nope", {}, "measure"),
        ("membership_tpr", {}, "fpr"),
        ("membership_tpr", {"fpr": 1.5}, "fpr"),
        ("membership_advantage", {"fpr": 0.1}, "fpr"),
        ("reconstruction", {}, "exactly one"),
        ("reconstruction", {"kappa": 0.1, "prior_size": 10}, "exactly one"),
        ("attribute", {"prior": [0.5, 0.6]}, "sum to 1"),
        ("attribute", {"prior": [1.0, 0.0]}, "prior"),
        ("rad", {"prior": "abc"}, "prior"),
        ("rad", {"kappa": 0.1}, "kappa"),
        ("reidentification", {"prior_size": 1}, "prior_size"),
    ],
)
def test_bad_input(measure, kw, word):
    with pytest.raises(ReconRiskError, match=word):
        R.risk(analyse(Release(1.0, 0.1, 10)), measure, **kw)


@pytest.mark.parametrize("sigma, q, t", [(1.0, 0.05, 100), (0.7, 0.01, 300)])
def test_advantage_bracket_overlaps_dp_accounting_two_sided(sigma, q, t):
    """Independent engine: dp_accounting's pessimistic and optimistic PLDs bracket δ_remove(0) = TV too."""
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    adv = R.membership_advantage(analyse(Release(sigma, q, t)))
    tv = []
    for pess in (True, False):
        pld = pld_module.from_gaussian_mechanism(
            standard_deviation=sigma, sampling_prob=q, pessimistic_estimate=pess, value_discretization_interval=1e-3,
            use_connect_dots=pess,
        ).self_compose(t)
        tv.append(pld._pmf_remove.get_delta_for_epsilon(0.0))
    dpa_up, dpa_lo = tv
    assert dpa_lo <= dpa_up
    assert adv.lower <= dpa_up + 1e-12 and dpa_lo <= adv.upper + 1e-12
    assert adv.upper - adv.lower <= dpa_up - dpa_lo + 1e-4  # and ours is at least about as tight


@pytest.mark.parametrize("sigma", [1e-12, 1e-9, 1e6, 1e8])  # the accepted range of σ (issue 10) and its edges
def test_extreme_noise_gives_a_clean_answer(sigma):
    """No traceback at any σ; the limits are exact: σ → 0 reveals whether the target was sampled, σ → ∞ nothing."""
    r = Release(sigma, 0.5, 10)
    never = 0.5**10
    adv = R.membership_advantage(analyse(r))
    rad = R.reconstruction_advantage(analyse(r), prior=[0.5, 0.3, 0.2])
    bs = R.bayes_security(analyse(r))
    if sigma < 1:
        assert adv.lower <= 1 - never <= adv.upper + 1e-15
        exact_rad = (1 - never) + never * 0.5 - 0.5
        assert rad.lower <= exact_rad + 1e-15 and exact_rad <= rad.upper + 1e-15
    else:
        assert adv.upper < 10 / sigma and rad.upper < 10 / sigma  # the advantages shrink like 1/σ
    assert bs.lower == pytest.approx(1 - adv.upper) and math.isfinite(bs.details["baselines"]["cherubin_closed_form"])
