"""``reconrisk risk``, ``reconrisk tradeoff`` and ``reconrisk calibrate --measure``: JSON keys, files, exit 2 on bad input."""

import json

import pytest

from reconrisk._src.cli import main

REL = ["-s", "1", "-q", "0.01", "-T", "200"]


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "extra",
    [
        ["--measure", "reconstruction", "--prior-size", "100"],
        ["--measure", "reidentification", "--prior-size", "1000"],
        ["--measure", "attribute", "--prior", "0.6,0.3,0.1"],
        ["--measure", "membership-tpr", "--fpr", "0.01"],
        ["--measure", "membership-advantage"],
        ["--measure", "rad", "--prior", "0.5,0.3,0.2"],
        ["--measure", "bayes-security"],
    ],
)
def test_risk_json_top_level(capsys, extra):
    d = run_json(capsys, ["risk", *REL, *extra])
    assert {"measure", "baseline", "lower", "upper", "formula"} <= set(d)
    assert d["noise_multiplier"] == 1.0 and d["sample_rate"] == 0.01 and d["steps"] == 200
    assert 0.0 <= d["lower"] <= d["upper"] <= 1.0


def test_risk_reconstruction_equals_bound(capsys):
    r = run_json(capsys, ["risk", *REL, "--measure", "reconstruction", "--prior-size", "100"])
    b = run_json(capsys, ["bound", *REL, "--prior-size", "100"])
    assert r["lower"] == b["rero"]["lower"] and r["upper"] == b["rero"]["upper"]


def test_tradeoff_writes_files(capsys, tmp_path):
    d = run_json(capsys, ["tradeoff", *REL, "--alpha-min", "1e-12", "--points", "40", "--log-axes", "--out", str(tmp_path)])
    assert len(d["alpha"]) == 40 and d["alpha"][0] == pytest.approx(1e-12)
    for k in ("csv", "json", "png", "svg"):
        assert (tmp_path / f"tradeoff.{k}").stat().st_size > 0
    assert all(lo <= up for lo, up in zip(d["beta_lower"], d["beta_upper"]))


@pytest.mark.parametrize(
    "solve, fixed, key",
    [("noise-multiplier", ["-q", "0.01", "-T", "200"], "noise_multiplier"),
     ("steps", ["-s", "1", "-q", "0.01"], "steps"),
     ("sample-rate", ["-s", "1", "-T", "200"], "sample_rate")],
)
def test_calibrate_measure_meets_target_exactly(capsys, solve, fixed, key):
    d = run_json(capsys, ["calibrate", "--measure", "membership-advantage", "--target", "0.1", "--solve", solve, *fixed])
    assert d["solve"] == key and d[key] > 0
    assert d["upper"] <= 0.1  # certified, exactly


def test_calibrate_bayes_security_is_a_minimum(capsys):
    d = run_json(capsys, ["calibrate", "--measure", "bayes-security", "--target", "0.95", "-q", "0.01", "-T", "200"])
    assert d["lower"] >= 0.95


def test_plain_calibrate_still_works(capsys):
    d = run_json(capsys, ["calibrate", "--target-rero", "0.2", "--prior-size", "10", "--sample-rate", "0.01", "--steps", "100"])
    up = d["rero"]["upper"] if "rero" in d else d["rero_upper"]  # the JSON shape is H-house's (issue 8)
    assert up <= 0.2


@pytest.mark.parametrize(
    "args, word",
    [
        (["risk", *REL, "--measure", "nope"], "measure"),
        (["risk", *REL, "--measure", "membership-tpr"], "fpr"),
        (["risk", *REL, "--measure", "attribute", "--prior", "0.5,x"], "prior"),
        (["risk", "-s", "-1", "-q", "0.01", "-T", "10", "--measure", "membership-advantage"], "noise_multiplier"),
        (["tradeoff", *REL, "--alpha-min", "0.6", "--alpha-max", "0.5"], "alpha_min"),
        (["tradeoff", *REL, "--alpha-min", "0"], "alpha_min"),
        (["calibrate", "--measure", "reconstruction", "--kappa", "0.1", "--target", "0.05", "-q", "0.01", "-T", "10"], "target"),
        (["calibrate", "--measure", "membership-advantage", "--target", "0.1", "--solve", "steps", "-q", "0.01"], "noise_multiplier"),
        (["calibrate", "--measure", "membership-advantage", "--target", "0.1", "--solve", "epochs", "-q", "0.1", "-T", "5"], "solve"),
        (["calibrate", "--measure", "membership-advantage"], "--target"),
        (["calibrate", "--sample-rate", "0.1"], "--target-rero"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args, word):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("reconrisk: error:") and word in err[0]


def test_risk_all_side_by_side(capsys):
    d = run_json(capsys, ["risk", *REL, "--measure", "all", "--prior-size", "100", "--fpr", "0.001"])
    got = {r["measure"]: r for r in d["risks"]}
    assert set(got) == {"reconstruction", "reidentification", "membership-tpr", "membership-advantage", "rad", "bayes-security"}
    assert d["epsilon"] > 0 and d["noise_multiplier"] == 1.0
    # one curve: RAD with a uniform prior is ReRo minus the blind guess; Bayes security is 1 − advantage
    assert got["rad"]["upper"] == pytest.approx(got["reconstruction"]["upper"] - 0.01, abs=2e-4)
    assert got["bayes-security"]["lower"] == pytest.approx(1 - got["membership-advantage"]["upper"])
    assert main(["risk", *REL, "--measure", "all"]) == 0  # table, no baseline: advantage and Bayes security only
    assert "Bayes security" in capsys.readouterr().out
