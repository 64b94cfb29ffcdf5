"""The risk report as a typed object and the JSON Schema of ``report.json``.

* ``RiskReport.from_dict`` reads ``report.json`` back and ``to_dict`` of what it read is that JSON again;
* the schema ships as package data, is a valid draft 2020-12 schema, accepts every report (hypothesis: random
  releases, samplers and priors) and rejects a broken one (a missing key, a wrong type, an unknown key, a wrong
  method); every ``report.json`` the suite writes passes through it (``tests/conftest.py``);
* the report asks types, not messages: the RDP fallback of ε is taken on ``PLDRangeError`` only, and a family an
  event cannot answer is refused from the analysis's ``supports`` answer.
"""

from __future__ import annotations

import copy
import json
import tomllib
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPORTS_CHECKED, check_report_json
from reconrisk import Release
from reconrisk._src._io import dumps
from reconrisk._src.errors import PLDRangeError, ReconRiskError
from reconrisk._src.experiments.riskreport import ReportConfig, epsilon_entry, risk_report
from reconrisk._src.report_model import (MC_PENDING, BelowCertified, Provenance, RiskReport, Unavailable, report_json,
                                    report_schema)

ROOT = Path(__file__).resolve().parents[1]
PROV = Provenance("reconrisk report <test>", {"source": "flags"}, None, "0.0-test")


def _json(report: RiskReport) -> dict:
    """``report.json`` as written (infinities as strings, tuples as lists)."""
    return json.loads(dumps(report_json(report, PROV)))


@pytest.fixture(scope="module")
def reports():
    cases = {
        "full": (Release(2.0, 1.0, 9, 0.5), ReportConfig(prior_size=10, target_rero=0.3, model_dim=20, data_dim=64,
                                                          min_norm=0.8, samples=500)),
        "fixed": (Release.fixed_batch(2.0, 50, 100, 20), ReportConfig(kappa=0.05, samples=0)),
        "schedule": (Release.schedule([(1.2, 0.05, 20), (0.9, 0.05, 20)]), ReportConfig(prior_size=100, samples=0)),
    }
    return {k: risk_report(rel, cfg) for k, (rel, cfg) in cases.items()}


def test_the_schema_ships_and_is_a_draft_2020_12_schema():
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False and set(schema["required"]) == set(schema["properties"])
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["reconrisk"]
    assert "_src/_data/*.json" in data  # shipped in the wheel beside the digits
    assert report_schema() is not schema  # a fresh dict each call: a caller's edit never reaches the next


@pytest.mark.parametrize("key", ["full", "fixed", "schedule"])
def test_a_report_read_back_is_the_same_report(reports, key):
    d = _json(reports[key])
    back = RiskReport.from_dict(d)
    assert _json(back) == d and list(_json(back)) == list(d)  # same keys, same order, same values
    check_report_json(d)


def test_the_typed_report_holds_bounds_estimates_and_reasons(reports):
    full, fixed = reports["full"], reports["fixed"]
    assert full.rero.headline == "closed_form" and full.rero.head is full.rero.closed_form
    assert full.rero.mc.confidence == 0.95 and full.rero.mc.method == "mc"  # the estimate, labelled
    assert full.summary.rero_upper == full.rero.closed_form.upper
    assert isinstance(fixed.fano, Unavailable) and "--prior-size" in fixed.fano.reason  # κ only: no Fano
    assert fixed.rero.mc == Unavailable("Monte Carlo skipped (samples = 0)")
    assert [k for k, _, _ in full.rero.rows()] == ["closed_form", "pld", "rdp", "dp", "mc"]
    assert MC_PENDING.to_dict() is None and Unavailable("x", ("a",)).to_dict() == {
        "applicable": False, "reason": "x", "assumptions": ["a"]}
    assert BelowCertified("y", value=0.1, method="dp").to_dict() == {
        "applicable": False, "reason": "y", "value": 0.1, "method": "dp"}


def test_provenance_is_read_whole_or_refused():
    assert Provenance.from_dict({"command": "c", "release_source": {"source": "flags"}}).prior is None
    d = {"reconrisk_version": "1", "command": "c", "release_source": {"source": "flags"},
         "prior": {"defaulted": True, "prior_size": 10, "kappa": None}}
    assert Provenance.from_dict(d).to_dict() == d
    with pytest.raises(ReconRiskError, match="provenance has unknown key"):
        Provenance.from_dict({"command": "c", "who": "me"})  # never dropped silently


def test_indexing_the_report_still_answers_with_a_deprecation_warning(reports):
    rep = reports["full"]
    with pytest.warns(DeprecationWarning, match="returns a RiskReport"):
        assert rep["rero"]["pld"]["upper"] == rep.rero.pld.upper


def test_the_schema_rejects_a_broken_report(reports):
    good = _json(reports["full"])
    check_report_json(good)
    broken = []
    d = copy.deepcopy(good)
    del d["summary"]["rero_upper"]  # a missing key
    broken.append(d)
    d = copy.deepcopy(good)
    d["epsilon"]["value"] = "7.05"  # a number as text
    broken.append(d)
    d = copy.deepcopy(good)
    d["rero"]["surprise"] = 1  # an unknown key in a closed section
    broken.append(d)
    d = copy.deepcopy(good)
    d["rero"]["mc"]["method"] = "pld"  # the estimate's row claiming another method
    broken.append(d)
    d = copy.deepcopy(good)
    d["fano"] = {"applicable": False}  # a family not computed without its reason
    broken.append(d)
    d = copy.deepcopy(good)
    d["risks"][0]["measure"] = "membership_advantage"  # the Python spelling, not the report's
    broken.append(d)
    d = copy.deepcopy(good)
    d.pop("provenance")
    broken.append(d)
    for d in broken:
        with pytest.raises(AssertionError, match="does not match its schema"):
            check_report_json(d)


def test_the_writer_validates_every_report_json(reports, tmp_path):
    """The hook of ``tests/conftest.py`` runs inside ``write_report``: a broken report is refused, a good one is
    counted (so a test that writes report.json, through the CLI or directly, is checked)."""
    from reconrisk._src.report.html import write_report

    n = len(REPORTS_CHECKED)
    write_report(reports["fixed"], tmp_path / "ok", PROV)
    assert len(REPORTS_CHECKED) == n + 1 and (tmp_path / "ok" / "report.json").is_file()
    bad = replace(reports["fixed"], summary=replace(reports["fixed"].summary, method=3))
    with pytest.raises(AssertionError, match="summary/method"):
        write_report(bad, tmp_path / "bad", PROV)
    assert not (tmp_path / "bad").exists()


def test_the_cli_report_goes_through_the_schema_check(tmp_path, capsys):
    from reconrisk._src.cli import main

    n = len(REPORTS_CHECKED)
    assert main(["report", "-s", "1.5", "-q", "1", "-T", "3", "--samples", "0", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert len(REPORTS_CHECKED) == n + 1


@settings(max_examples=8, deadline=None)
@given(sigma=st.floats(0.6, 6.0), q=st.sampled_from([0.02, 0.1, 0.5, 1.0]), steps=st.integers(1, 30),
       sampler=st.sampled_from(["poisson", "fixed"]), prior=st.one_of(st.integers(2, 1000), st.floats(1e-4, 0.5)),
       target=st.one_of(st.none(), st.floats(0.3, 0.9)), mc=st.sampled_from([0, 200]))
def test_every_report_validates(sigma, q, steps, sampler, prior, target, mc):
    """Random valid inputs (σ, q, T, sampler, a prior size or κ, a target or none, Monte Carlo or not) → a report
    whose JSON the schema accepts and which reads back to itself."""
    if sampler == "fixed":
        n = 200
        rel = Release.fixed_batch(sigma, max(1, round(q * n)), n, steps)
    else:
        rel = Release(sigma, q, steps)
    prior_kw = {"prior_size": prior} if isinstance(prior, int) else {"kappa": prior}
    rep = risk_report(rel, ReportConfig(**prior_kw, target_rero=target, samples=mc, model_dim=3))
    d = _json(rep)
    check_report_json(d)
    assert _json(RiskReport.from_dict(d)) == d


def test_an_event_report_validates_and_names_the_event(tmp_path):
    import dp_accounting as dp

    event = dp.SelfComposedDpEvent(dp.LaplaceDpEvent(2.0), 3)
    rep = risk_report(event, ReportConfig(prior_size=10, samples=0))
    assert rep.is_event and isinstance(rep.rero.rdp, Unavailable) and isinstance(rep.capacity, Unavailable)
    tail = " reads a DP-SGD release (sigma, q, T); not defined for the event LaplaceDpEvent"
    assert rep.fano.reason == "Fano's bound" + tail and rep.calibration.reason == "calibration of sigma" + tail
    # the report words the analysis's own answer (asked before computing) about each family
    from reconrisk._src.analysis.dispatch import analyse

    assert analyse(event).supports("mechanism").reason.endswith(tail)
    check_report_json(_json(rep))


def test_the_rdp_fallback_asks_the_exception_type_not_its_message(monkeypatch):
    from reconrisk._src.accounting import epsilon
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    rel = Release(1.0, 0.1, 10)
    a = PrivacyAnalysis(rel)

    def too_wide(delta):
        raise PLDRangeError("the PLD grid cannot hold this")

    monkeypatch.setattr(a, "epsilon", too_wide)
    e = epsilon_entry(a, 1e-5)
    assert e.accountant == "rdp" and e.value == epsilon(release=rel, delta=1e-5, accountant="rdp")
    assert "lower" not in e.to_dict() and e.to_dict()["accountant"] == "rdp"

    def other(delta):  # the old message, but not the type: not a reason to fall back
        raise ReconRiskError("noise_multiplier=0.01 is too small for the PLD accountant at this sample_rate")

    monkeypatch.setattr(a, "epsilon", other)
    with pytest.raises(ReconRiskError, match="too small"):
        epsilon_entry(a, 1e-5)


def test_the_pld_accountant_raises_its_own_type(monkeypatch):
    """Where the grid cannot hold the per-step loss range the engine raises :class:`PLDRangeError` and the
    accountant says so in the user's terms with the same type (rare since the engine coarsens: the inner call is
    forced here); a plain error with the same words is not taken for it."""
    from reconrisk._src.accounting import pld

    with pytest.raises(PLDRangeError, match="value_discretization must be >="):
        pld.step_pmf(0.001, 0.01, 1e-4)
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    def grid_fails(*a, **k):
        raise PLDRangeError("value_discretization must be >= 0.127 for noise_multiplier=0.001, sample_rate=0.01")

    monkeypatch.setattr(PrivacyAnalysis, "pmf", grid_fails)
    with pytest.raises(PLDRangeError, match="too small for the PLD accountant"):
        PrivacyAnalysis(Release(0.001, 0.01, 100)).epsilon_on_grid(1e-5, 1e-4)

    def words_only(*a, **k):
        raise ReconRiskError("value_discretization must be >= 0.127 (an untyped error)")

    monkeypatch.setattr(PrivacyAnalysis, "pmf", words_only)
    with pytest.raises(ReconRiskError, match="an untyped error"):
        PrivacyAnalysis(Release(0.001, 0.01, 100)).epsilon_on_grid(1e-5, 1e-4)


def test_a_guarantee_alone_is_refused_in_one_line():
    from reconrisk._src.analysis.guarantee import GuaranteeAnalysis

    with pytest.raises(ReconRiskError, match="a guarantee alone has no release to report on"):
        risk_report(GuaranteeAnalysis("dp", epsilon=1.0, delta=1e-5), ReportConfig(samples=0))


@pytest.mark.parametrize("kwargs,names,flags", [
    ({"model_dim": 0}, ("model_dim",), "(flag --model-dim)"),
    ({"trials": 10**7}, ("trials",), "(flag --trials)"),
    ({"prior_size": 10, "kappa": 0.1}, ("prior_size", "kappa"), "(flags --prior-size, --kappa)"),
])
def test_config_errors_name_python_parameters_and_the_cli_adds_its_flags(kwargs, names, flags, capsys, tmp_path):
    from reconrisk._src.cli import main
    from reconrisk._src.errors import ParameterError

    with pytest.raises(ParameterError) as caught:
        ReportConfig(**kwargs)
    assert caught.value.parameters == names and "--" not in str(caught.value)  # the library speaks Python
    argv = [x for k, val in kwargs.items() for x in ("--" + k.replace("_", "-"), str(val))]
    assert main(["report", "-s", "1", "-q", "0.1", "-T", "5", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.strip().endswith(flags) and str(caught.value) in err
