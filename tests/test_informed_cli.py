"""``reconrisk convert`` and ``reconrisk informed closed-form|reconn``: JSON keys, errors (one line, exit 2)."""

import json
import math
import subprocess
import sys

import pytest

from reconrisk._src.cli import main


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "args, upper",
    [
        (["--from", "rdp", "--epsilon", "1", "--order", "2", "--kappa", "0.01"], 0.16487213),
        (["--from", "rdp", "--epsilon", "1", "--order", "2", "--epsilon", "1", "--order", "10", "--kappa", "0.01"], 0.03898208),
        (["--from", "dp", "--epsilon", "2", "--kappa", "0.001"], 0.00738906),
        (["--from", "zcdp", "--rho", "0.5", "--prior-size", "100"], 0.12614592),
    ],
)
def test_convert_json_matches_the_spec_table(capsys, args, upper):
    """The paper's conversions (--conversion balle2022) reproduce spec_002 §5.10; the default is never looser."""
    d = run_json(capsys, ["convert"] + args + ["--conversion", "balle2022"])
    assert {"method", "lower", "upper", "formula"} <= set(d["rero"])  # the vocabulary of `bound`, plus the formula
    assert d["rero"]["method"] == args[1] + "_balle2022" and d["rero"]["lower"] is None
    assert "Balle, Cherubin & Hayes 2022" in d["rero"]["formula"]
    assert d["rero"]["upper"] == pytest.approx(upper, abs=5.0000001e-9)
    opt = run_json(capsys, ["convert"] + args)
    assert opt["rero"]["method"] in ("rdp_optimal", "dp_tradeoff", "zcdp_optimal")
    assert opt["rero"]["upper"] <= upper + 5e-9 and opt["rero"]["balle2022_upper"] == pytest.approx(upper, abs=5e-9)


def test_convert_pure_dp_uses_both_branches(capsys):
    d = run_json(capsys, ["convert", "--from", "dp", "--epsilon", "1", "--kappa", "0.6"])
    assert d["rero"]["upper"] == pytest.approx(1 - math.exp(-1) * 0.4, rel=1e-12)  # 0.853, not 1.0
    assert d["rero"]["method"] == "dp_tradeoff"
    d = run_json(capsys, ["convert", "--from", "dp", "--epsilon", "1", "--delta", "0.01", "--kappa", "0.6",
                          "--alpha", "0.01", "--alpha", "0.6"])
    assert d["rero"]["upper"] == pytest.approx(1 - math.exp(-1) * (1 - 0.01 - 0.6), rel=1e-12)
    assert d["tradeoff"]["beta"] == pytest.approx([1 - 0.01 - math.e * 0.01, math.exp(-1) * (1 - 0.01 - 0.6)], rel=1e-12)
    assert d["tradeoff"]["beta"][1] == pytest.approx(1 - d["rero"]["upper"], rel=1e-12)


def test_convert_rdp_curve_as_pairs_and_as_file(capsys, tmp_path):
    pairs = run_json(capsys, ["convert", "--from", "rdp", "--curve", "1:0.05, 2:0.11,8:0.6", "--kappa", "0.1"])
    f = tmp_path / "curve.csv"
    f.write_text("order,epsilon\n1,0.05  # the KL\n2,0.11\n8,0.6\n")
    fromfile = run_json(capsys, ["convert", "--from", "rdp", "--curve", str(f), "--kappa", "0.1"])
    j = tmp_path / "curve.json"
    j.write_text(json.dumps({"orders": [1, 2, 8], "epsilons": [0.05, 0.11, 0.6]}))
    fromjson = run_json(capsys, ["convert", "--from", "rdp", "--curve", str(j), "--kappa", "0.1"])
    flags = run_json(capsys, ["convert", "--from", "rdp", "--order", "1", "--epsilon", "0.05", "--order", "2",
                              "--epsilon", "0.11", "--order", "8", "--epsilon", "0.6", "--kappa", "0.1"])
    assert pairs["rero"]["upper"] == fromfile["rero"]["upper"] == fromjson["rero"]["upper"] == flags["rero"]["upper"]
    assert pairs["rero"]["method"] == "rdp_optimal" and pairs["rero"]["points"] == 3
    one = run_json(capsys, ["convert", "--from", "rdp", "--curve", "1:0.05,2:0.11,8:0.6", "--kappa", "0.1", "--one-sided"])
    assert one["rero"]["upper"] >= pairs["rero"]["upper"] and one["rero"]["symmetric"] is False


def test_convert_tradeoff_only(capsys):
    d = run_json(capsys, ["convert", "--from", "zcdp", "--rho", "0.5", "--alpha", "0.01", "--alpha", "0.1"])
    assert "rero" not in d and d["tradeoff"]["method"] == "zcdp_optimal"
    b = run_json(capsys, ["convert", "--from", "zcdp", "--rho", "0.5", "--alpha", "0.01", "--alpha", "0.1",
                          "--conversion", "balle2022"])
    assert all(x >= y for x, y in zip(d["tradeoff"]["beta"], b["tradeoff"]["beta"]))  # optimal f is higher (tighter)
    r = run_json(capsys, ["convert", "--from", "zcdp", "--rho", "0.5", "--kappa", "0.01"])
    assert d["tradeoff"]["power"][0] == pytest.approx(r["rero"]["upper"], rel=1e-6)


def test_vmf_rero_json(capsys):
    args = ["vmf", "rero", "--concentration", "100", "--dim", "13700", "--sample-rate", "128/60000",
            "--compositions", "3", "--prior-size", "10"]
    d = run_json(capsys, args)["rero"]
    o = run_json(capsys, args + ["--conversion", "balle2022"])["rero"]
    assert d["method"] == "rdp_optimal" and o["method"] == "rdp_balle2022"
    assert 0.1 <= d["upper"] <= o["upper"] and d["balle2022_upper"] == pytest.approx(o["upper"], rel=1e-12)


def test_convert_rero_to_dp(capsys):
    d = run_json(capsys, ["convert", "--from", "rero", "--rero", "0.6", "--kappa", "0.5"])
    assert d["dp"]["epsilon"] == pytest.approx(0.0, abs=1e-12) and d["dp"]["delta"] == pytest.approx(0.2)


def test_convert_log_kappa(capsys):
    d = run_json(capsys, ["convert", "--from", "dp", "--epsilon", "100", "--log-kappa", "-543.427"])
    assert 0 < d["rero"]["upper"] < 1e-190


def test_closed_form_json(capsys):
    d = run_json(capsys, ["informed", "closed-form", "--model", "logistic", "--n", "40", "--dim", "4", "--lam", "0.05"])
    assert d["relative_error"] <= 1e-8 and d["label_recovered"] is True
    d = run_json(capsys, ["informed", "closed-form", "--model", "ridge", "--noise-std", "0.001", "--trials", "20"])
    assert d["noise"]["trials"] == 20 and d["noise"]["mse_mean"] > 0
    d = run_json(capsys, ["informed", "closed-form", "--model", "logistic", "--noise-std", "1e-5", "--noise-std", "1e-4",
                          "--trials", "50"])
    curve = [c["mse_mean"] for c in d["noise_curve"]]
    assert len(curve) == 2 and curve[0] < curve[1]


@pytest.mark.parametrize(
    "args, word",
    [
        (["convert", "--from", "gdp", "--epsilon", "1", "--kappa", "0.1"], "from"),
        (["convert", "--from", "rdp", "--epsilon", "1", "--kappa", "0.1"], "order"),
        (["convert", "--from", "rdp", "--epsilon", "1", "--order", "0.5", "--kappa", "0.1"], "order"),
        (["convert", "--from", "rdp", "--curve", "2:a", "--kappa", "0.1"], "curve"),
        (["convert", "--from", "rdp", "--curve", "nofile", "--kappa", "0.1"], "curve"),
        (["convert", "--from", "dp", "--curve", "2:1", "--kappa", "0.1"], "curve"),
        (["convert", "--from", "rdp", "--curve", "2:1", "--epsilon", "1", "--order", "2", "--kappa", "0.1"], "curve"),
        (["convert", "--from", "zcdp", "--rho", "1", "--delta", "0.1", "--kappa", "0.1"], "delta"),
        (["convert", "--from", "dp", "--epsilon", "1", "--delta", "2", "--kappa", "0.1"], "delta"),
        (["convert", "--from", "dp", "--epsilon", "1", "--kappa", "0.1", "--conversion", "best"], "conversion"),
        (["convert", "--from", "dp", "--epsilon", "1", "--alpha", "1.5"], "alpha"),
        (["convert", "--from", "dp", "--epsilon", "1", "--kappa", "0.1", "--one-sided"], "one-sided"),
        (["convert", "--from", "zcdp", "--rho", "1", "--kappa", "0.1", "--one-sided", "--conversion", "balle2022"],
         "one-sided"),
        (["vmf", "rero", "--concentration", "10", "--dim", "5", "--sample-rate", "1", "--compositions", "1"], "prior"),
        (["vmf", "rero", "--concentration", "-1", "--dim", "5", "--sample-rate", "1", "--compositions", "1",
          "--prior-size", "10"], "concentration"),
        (["convert", "--from", "dp", "--epsilon", "1"], "kappa"),
        (["convert", "--from", "dp", "--epsilon", "1", "--kappa", "0.1", "--prior-size", "10"], "kappa"),
        (["convert", "--from", "dp", "--epsilon", "-1", "--kappa", "0.1"], "epsilon"),
        (["convert", "--from", "zcdp", "--rho", "0", "--kappa", "0.1"], "rho"),
        (["convert", "--from", "zcdp", "--kappa", "0.1"], "rho"),
        (["convert", "--from", "dp", "--epsilon", "1", "--prior-size", "1"], "prior_size"),
        (["convert", "--from", "rero", "--rero", "0.3", "--kappa", "0.5"], "rero"),
        (["informed", "closed-form", "--model", "poisson"], "model"),
        (["informed", "closed-form", "--model", "ridge", "--lam", "-1"], "lam"),
        (["informed", "closed-form", "--model", "logistic", "--noise-std", "nan"], "noise_std"),
        (["informed", "closed-form", "--model", "logistic", "--noise-std", "0.1", "--noise-std", "0"], "noise_std"),
        (["informed", "reconn", "--hidden", "a,b"], "hidden"),
        (["informed", "reconn", "--shadow-models", "0"], "shadow_models"),
        (["informed", "reconn", "--dataset", "mnist:/no/such/path"], "path"),
        (["informed", "reconn", "--shadow-models", "5000"], "dataset size"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, word):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("reconrisk: error:") and "\n" not in err and word in err


def test_convert_does_not_import_jax():
    code = ("import sys; from reconrisk._src.cli import main; main(['convert', '--from', 'dp', '--epsilon', '1', "
            "'--kappa', '0.1', '--json']); assert 'jax' not in sys.modules, 'jax imported'")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
