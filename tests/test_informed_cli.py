"""``reconrisk convert`` and ``reconrisk informed closed-form|reconn``: JSON keys, errors (one line, exit 2)."""

import json
import subprocess
import sys

import pytest

from reconrisk.cli import main


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
    d = run_json(capsys, ["convert"] + args)
    assert set(d["rero"]) == {"method", "lower", "upper", "formula"}  # the vocabulary of `bound`, plus the formula
    assert d["rero"]["method"] == args[1] and d["rero"]["lower"] is None
    assert d["rero"]["upper"] == pytest.approx(upper, abs=5.0000001e-9)


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
    code = ("import sys; from reconrisk.cli import main; main(['convert', '--from', 'dp', '--epsilon', '1', "
            "'--kappa', '0.1', '--json']); assert 'jax' not in sys.modules, 'jax imported'")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
