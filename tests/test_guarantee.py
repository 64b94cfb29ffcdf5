"""Risks of a guarantee alone (issue 24): GuaranteeAnalysis, ``reconrisk risk --from``, VMF's risks.

Soundness is checked against a mechanism whose exact values are known in closed form: the Gaussian
mechanism with μ = 1/σ is μ-GDP, so it satisfies (ε, δ_μ(ε))-DP for every ε, ρ-zCDP with ρ = μ²/2 and
the RDP curve ε(a) = aμ²/2 — every upper end a guarantee of it certifies must lie above its exact value.
Sizes: each GuaranteeAnalysis of an (ε, δ) pair costs milliseconds, an RDP/zCDP one about a second, so the
hypothesis tests use (ε, δ) only and the RDP/zCDP checks a few fixed points.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from reconrisk._src.measures.conversions import rero_from_guarantee
from reconrisk._src.analysis.guarantee import GuaranteeAnalysis, GuaranteeCurve
from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError


def gdp_delta(eps, mu):
    return special.ndtr(-eps / mu + mu / 2) - np.exp(eps) * special.ndtr(-eps / mu - mu / 2)


def gdp_power(t, mu):
    return special.ndtr(special.ndtri(t) + mu)


def gdp_tv(mu):
    return 2 * special.ndtr(mu / 2) - 1


def test_pure_dp_both_branches_and_closed_forms():
    g = GuaranteeAnalysis("dp", epsilon=1.0)
    b = g.rero(0.6)
    assert b.lower is None and b.method == "dp_tradeoff" and b.upper == pytest.approx(1 - math.exp(-1) * 0.4, abs=1e-15)
    assert round(b.upper, 3) == 0.853  # the issue's number (Balle et al.'s Cor. 3 gives 1)
    for eps, dl in [(1.0, 0.0), (0.3, 1e-3), (4.0, 1e-6)]:
        g = GuaranteeAnalysis("dp", epsilon=eps, delta=dl)
        ma = g.risk("membership_advantage")
        assert ma.lower is None and ma.method == "dp_tradeoff" and "Kairouz" in ma.details["conversion"]
        assert ma.upper == pytest.approx((math.expm1(eps) + 2 * dl) / (math.exp(eps) + 1), abs=1e-12)
        bs = g.risk("bayes_security")
        assert bs.upper is None and bs.lower == pytest.approx(1 - ma.upper, abs=1e-15)
        for e2 in (0.0, 0.5 * eps):  # δ(ε') = δ + (1 − δ)(e^ε − e^ε')/(1 + e^ε) on [0, ε]
            exact = dl + (1 - dl) * (math.exp(eps) - math.exp(e2)) / (1 + math.exp(eps))
            assert g.delta(e2).upper == pytest.approx(exact, abs=1e-12)
        target = dl + 0.5 * (1 - dl) * (math.exp(eps) - 1) / (1 + math.exp(eps))
        e_exact = math.log(math.exp(eps) - (target - dl) * (1 + math.exp(eps)) / (1 - dl))
        assert e_exact <= g.epsilon(target).upper <= e_exact * (1 + 1e-5) + 1e-9
    assert math.isinf(GuaranteeAnalysis("dp", epsilon=1.0, delta=1e-3).epsilon(1e-5).upper)  # δ below f's jump at 0


@settings(max_examples=25, deadline=None)
@given(mu=st.floats(0.05, 4.0), eps=st.floats(0.0, 4.0), la=st.floats(-12, -0.05), e2=st.floats(0.0, 3.0))
def test_dp_guarantee_of_the_gaussian_mechanism_is_above_its_exact_values(mu, eps, la, e2):
    dl = float(gdp_delta(eps, mu))
    g = GuaranteeAnalysis("dp", epsilon=eps, delta=min(max(dl, 0.0), 1.0))
    k = 10.0**la
    assert g.rero(k).upper >= gdp_power(k, mu) - 1e-12
    tv = g.risk("membership_advantage").upper
    assert tv >= gdp_tv(mu) - 1e-12
    assert g.delta(e2).upper >= gdp_delta(e2, mu) - 1e-12
    # monotone: a weaker guarantee never certifies less
    assert GuaranteeAnalysis("dp", epsilon=eps + 0.5, delta=min(max(dl, 0.0), 1.0)).risk("membership_advantage").upper >= tv


@pytest.fixture(scope="module")
def gaussian_guarantees():
    """μ = 1 (σ = 1): its zCDP and RDP guarantees, shared by the tests below (one curve each)."""
    mu = 1.0
    orders = np.array([1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0])
    return mu, {"zcdp": GuaranteeAnalysis("zcdp", rho=mu**2 / 2),
                "rdp": GuaranteeAnalysis("rdp", order=orders, epsilon=orders * mu**2 / 2)}


@pytest.mark.parametrize("kind", ["zcdp", "rdp"])
def test_rdp_and_zcdp_guarantees_are_above_the_exact_values_and_name_the_conversion(gaussian_guarantees, kind):
    mu, gs = gaussian_guarantees
    g = gs[kind]
    for k in (1e-6, 1e-3, 0.1, 0.5):
        r = g.risk("reconstruction", kappa=k)
        assert r.lower is None and r.method == f"{kind}_optimal" and "Riess et al. 2026" in r.details["conversion"]
        assert gdp_power(k, mu) - 1e-12 <= r.upper
        # the same number as ``reconrisk convert`` (the one conversion function)
        g_args = {"rho": mu**2 / 2} if kind == "zcdp" else {"order": list(g.source["order"]), "epsilon": list(g.source["epsilon"])}
        assert r.upper == rero_from_guarantee(kind, k, **g_args).upper
    ma = g.risk("membership_advantage")
    assert gdp_tv(mu) - 1e-12 <= ma.upper < 1 and ma.converged
    assert g.delta(1.0).upper >= gdp_delta(1.0, mu) - 1e-12
    eps_exact = _gdp_epsilon(1e-5, mu)
    assert g.epsilon(1e-5).upper >= eps_exact - 1e-9
    rad = g.risk("rad", prior=[0.5, 0.3, 0.2])
    assert rad.lower is None and rad.upper >= 0.0


def _gdp_epsilon(delta, mu):
    from scipy import optimize

    return optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, 50.0, xtol=1e-12)


@pytest.mark.parametrize("kind,args", [("dp", {"epsilon": 2.0, "delta": 1e-5}), ("zcdp", {"rho": 0.3}),
                                       ("rdp", {"order": [1.5, 2.0, 4.0, 8.0], "epsilon": [0.2, 0.3, 0.6, 1.2]})])
def test_never_looser_than_the_papers_conversions_on_a_grid(kind, args):
    g = GuaranteeAnalysis(kind, **args)
    for k in np.logspace(-9, -0.05, 25):
        new = g.rero(float(k)).upper
        old = rero_from_guarantee(kind, float(k), conversion="balle2022", **args).upper
        assert new <= old + 1e-12


def test_the_envelope_is_above_a_known_concave_curve_and_tight():
    mu = 1.3
    curve = GuaranteeCurve(lambda u: gdp_power(special.expit(u), mu), allowance=1e-15)
    eps = np.linspace(-1.0, 4.0, 11)
    coarse = curve.delta(eps)
    fine = curve.delta(eps, refine=True)
    exact = gdp_delta(eps, mu)
    assert np.all(coarse >= exact - 1e-13) and np.all(fine >= exact - 1e-13)
    assert np.all(fine <= coarse + 1e-15) and np.max(fine - exact) < 1e-6 and curve.converged


def test_vmf_risks_use_the_optimal_conversion():
    from reconrisk import Release
    from reconrisk._src.measures.vmf_rero import rero_vmf

    g = GuaranteeAnalysis.vmf(50.0, 64, 1.0, 4)
    r = g.risk("reconstruction", kappa=0.01)
    assert r.method == "rdp_optimal" and r.upper == rero_vmf(0.01, 50.0, 64, 1.0, 4).upper
    assert r.upper <= rero_vmf(0.01, 50.0, 64, 1.0, 4, conversion="balle2022").upper
    assert g.risk("membership_advantage").upper <= 1.0
    same = GuaranteeAnalysis.from_release(Release.vmf(50.0, 1.0, 4), dim=64)
    assert same.risk("reconstruction", kappa=0.01).upper == r.upper
    with pytest.raises(ReconRiskError, match="GuaranteeAnalysis.from_release"):
        from reconrisk._src.api import risk

        risk(Release.vmf(50.0, 1.0, 4), "reconstruction", kappa=0.01)


def test_guarantee_inputs_are_checked_in_one_line():
    for kw in ({"epsilon": -1.0}, {"rho": 0.5}, {"epsilon": 1.0, "order": 2.0}):
        with pytest.raises(ReconRiskError) as e:
            GuaranteeAnalysis("dp", **kw)
        assert "\n" not in str(e.value)


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("g", [["--from", "dp", "--epsilon", "1"], ["--from", "dp", "--epsilon", "1", "--delta", "1e-5"],
                               ["--from", "zcdp", "--rho", "0.5"], ["--from", "rdp", "--curve", "2:0.5,8:1.2"]])
def test_risk_from_a_guarantee_reproduces_convert(capsys, g):
    c = run_json(capsys, ["convert", *g, "--kappa", "0.6"])
    r = run_json(capsys, ["risk", *g, "--measure", "reconstruction", "--kappa", "0.6"])
    assert r["upper"] == c["rero"]["upper"] and r["lower"] is None and r["method"] == c["rero"]["method"]
    assert r["guarantee"]["guarantee"] == g[1]


def test_risk_from_a_guarantee_all_measures_and_refusals(capsys):
    d = run_json(capsys, ["risk", "--from", "dp", "--epsilon", "1", "--measure", "all", "--prior-size", "10",
                          "--fpr", "0.01"])
    assert {r["measure"] for r in d["risks"]} == {"reconstruction", "reidentification", "membership-tpr",
                                                   "membership-advantage", "rad", "bayes-security"}
    assert all(r["method"] == "dp_tradeoff" for r in d["risks"])
    for args in (["--from", "dp", "--epsilon", "1", "-s", "1"], ["--epsilon", "1", "-s", "1", "-q", "1", "-T", "1"],
                 ["--from", "dp", "--epsilon", "1", "--one-sided"]):
        assert main(["risk", *args, "--measure", "membership-advantage"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "reconrisk: error" in err


# -- ε and δ of an (ε, δ) profile read exactly off its piecewise-linear curve ---------------------------------
def _mp_one_pair_eps(e, d, dd):
    """ε' of one (ε, δ) pair at δ' ≥ δ in closed form (mpmath, 50 digits): log max(1, e^ε − (δ' − δ)(1 + e^ε)/(1 − δ))."""
    import mpmath as mp

    mp.mp.dps = 50
    e, d, dd = mp.mpf(e), mp.mpf(d), mp.mpf(dd)
    x = mp.e**e - (dd - d) * (1 + mp.e**e) / (1 - d)
    return float(mp.log(x)) if x > 1 else 0.0


@pytest.mark.parametrize("e, d", [(3.0, 0.28), (1.0, 1e-5), (3.0, 0.0), (0.01, 1e-9), (20.0, 1e-12), (1e-6, 0.5)])
def test_an_eps_delta_guarantee_at_its_own_delta_is_its_eps(e, d):
    """The guarantee's ε at its own δ is ε (was ε + ln 2: the grid reading's additive allowance near t = 0), its δ at its
    own ε is δ; pure DP at δ = 1e-300 is ε (was 11.0); other δ' match the closed form to 1e-12 and never fall below it."""
    g = GuaranteeAnalysis("dp", epsilon=e, delta=d)
    if d > 0:
        assert g.epsilon(d).upper == e
    assert g.delta(e).upper == d
    assert g.epsilon(1e-300).upper == (e if d == 0 else math.inf)
    for dd in (d + 1e-9, d + 1e-3, 0.5 * (1 + d), 0.999):
        if dd >= 1:
            continue
        ref = _mp_one_pair_eps(e, d, dd)
        got = g.epsilon(dd).upper
        assert ref <= got <= ref + 1e-12 * (1 + ref)


def test_profile_eps_and_delta_match_a_dense_reading_of_the_curve():
    """A profile's δ(ε) and ε(δ) against the curve g = 1 − f evaluated on 2·10⁵ points (in logit t): never below,
    within 1e-7 of it; the profile's own pairs are read back exactly."""
    from reconrisk._src.measures.fdp import dp_power

    eps, dels = [1.0, 2.0, 5.0], [1e-3, 1e-5, 0.0]
    g = GuaranteeAnalysis("dp", epsilon=eps, delta=dels)
    u = np.linspace(-40, 36, 200_001)

    def sup(score):  # max of score(t) over the grid, then over 10⁵ points between the argmax's neighbours
        k = int(np.argmax(score(special.expit(u))))
        fine = special.expit(np.linspace(u[max(k - 1, 0)], u[min(k + 1, u.size - 1)], 100_001))
        return float(np.max(score(fine)))

    for e2 in (0.0, 0.5, 1.0, 1.7, 2.0, 3.0, 4.99):
        ref = sup(lambda t: dp_power(t, eps, dels) - np.exp(e2) * t)
        got = g.delta(e2).upper
        assert ref - 1e-15 <= got <= ref + 1e-8
    for dd in (1e-3, 1e-4, 1e-5, 1e-7, 1e-12, 1e-300):
        def score(t, dd=dd):
            p = dp_power(t, eps, dels)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(p > dd, np.log((p - dd) / t), -np.inf)

        ref = sup(score)
        got = g.epsilon(dd).upper
        assert ref - 1e-12 <= got <= ref + 1e-7
    for e1, d1 in zip(eps, dels):
        assert g.epsilon(d1).upper == e1 if d1 > 0 else g.epsilon(1e-300).upper == 5.0


@pytest.mark.parametrize("args", [{"source": "rdp", "order": [2, 4, 8, 16, 32], "epsilon": [0.5, 1, 2, 4, 8]},
                                  {"source": "zcdp", "rho": 0.5}])
def test_rdp_guarantee_eps_at_tiny_delta_is_never_looser_than_the_classical_conversion(args):
    """At δ down to 1e-300 an RDP/zCDP guarantee's ε is at most the classical conversion (Canonne, Kamath & Steinke
    2020, Prop. 12) at the best order — the grid reading of the optimal conversion was looser there (31.34 against
    30.14 at 1e-300) — and at least the exact ε of a mechanism meeting the guarantee (the Gaussian of ρ = 0.5)."""
    g = GuaranteeAnalysis(**args)
    for dd in (1e-12, 1e-100, 1e-300):
        if args["source"] == "rdp":
            o, e = np.array(args["order"], float), np.array(args["epsilon"], float)
        else:
            o = 1.0 + np.logspace(-4, 6, 2001)
            e = 0.5 * o
        classical = float(np.min(e + np.log1p(-1 / o) - (math.log(dd) + np.log(o)) / (o - 1)))
        got = g.epsilon(dd).upper
        assert math.isfinite(got) and got <= classical * (1 + 1e-9)
    if args["source"] == "zcdp":  # the Gaussian with μ = 1 is 0.5-zCDP: its exact ε(1e-12) lies below
        from reconrisk._src.accounting.gaussian import gaussian_eps

        assert gaussian_eps(1.0, 1e-12) <= g.epsilon(1e-12).upper
