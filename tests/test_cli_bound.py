"""The theory commands of the CLI: JSON shape, errors (one line, exit 2), files, no JAX."""

import json
import subprocess
import sys

import pytest

from reconrisk._src.cli import main


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_bound_json_has_the_documented_keys(capsys):
    d = run_json(capsys, ["bound", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000", "--prior-size", "100"])
    assert d["kappa"] == 0.01
    assert d["epsilon"] == pytest.approx(1.828, abs=2e-3)
    assert d["rero"]["method"] == "pld"
    assert d["rero"]["lower"] <= d["rero"]["upper"] <= d["baselines"]["rdp"]


def test_bound_rdp_baseline_is_the_optimal_conversion(capsys):
    """The "rdp" row is the optimal conversion of the release's own RDP curve (Riess et al. 2026), named so;
    Hayes et al.'s Eq. 2 stays in the JSON under its own name (0.6964 against 0.7499 at κ = 0.5)."""
    argv = ["bound", "-s", "1", "-q", "0.01", "-T", "1000", "--kappa", "0.5"]
    d = run_json(capsys, argv)
    assert d["baselines"]["rdp"] == pytest.approx(0.6964, abs=1e-4)
    assert d["baselines"]["rdp_hayes2023_eq2"] == pytest.approx(0.7499, abs=1e-4)
    assert "Riess et al. 2026" in d["baseline_formulas"]["rdp"]
    assert "Eq. 2" in d["baseline_formulas"]["rdp_hayes2023_eq2"]
    assert d["rero"]["upper"] <= d["baselines"]["rdp"] <= d["baselines"]["rdp_hayes2023_eq2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "rdp_optimal (baseline)" in out and "0.6964" in out and "0.7499" not in out


def test_bound_all_methods(capsys):
    d = run_json(capsys, ["bound", "-s", "2", "-q", "1", "-T", "10", "--kappa", "0.1", "--method", "all", "--samples", "20000"])
    assert set(d["methods"]) == {"pld", "closed_form", "mc"}
    cf = d["methods"]["closed_form"]["upper"]
    assert d["methods"]["mc"]["lower"] <= cf <= d["methods"]["mc"]["upper"]


def test_calibrate_json(capsys):
    d = run_json(capsys, ["calibrate", "--target-rero", "0.2", "--prior-size", "10", "--sample-rate", "0.01", "--steps", "100"])
    assert set(d["rero"]) >= {"method", "lower", "upper"} and "rero_upper" not in d
    assert d["rero"]["lower"] <= d["rero"]["upper"] <= 0.2
    assert d["noise_multiplier"] > 0 and d["epsilon"] > 0
    # the same numbers as `reconrisk bound` at the calibrated σ: one shape, one meaning
    b = run_json(capsys, ["bound", "-s", repr(d["noise_multiplier"]), "-q", "0.01", "-T", "100", "-n", "10"])
    assert b["rero"]["lower"] == pytest.approx(d["rero"]["lower"], rel=1e-12)
    assert b["rero"]["upper"] >= d["rero"]["upper"] - 1e-12  # calibrate reports the tighter of two certified uppers


@pytest.mark.parametrize(
    "args, word",
    [
        (["bound", "-s", "0", "-q", "0.1", "-T", "10", "-n", "10"], "noise_multiplier"),
        (["bound", "-s", "1", "-q", "1.5", "-T", "10", "-n", "10"], "sample_rate"),
        (["bound", "-s", "1", "-q", "0.1", "-T", "0", "-n", "10"], "steps"),
        (["bound", "-s", "1", "-q", "0.1", "-T", "10", "--kappa", "1"], "kappa"),
        (["bound", "-s", "1", "-q", "0.1", "-T", "10", "-n", "1"], "prior_size"),
        (["bound", "-s", "1", "-q", "0.1", "-T", "10", "-n", "10", "--delta", "0"], "delta"),
        (["bound", "-s", "nan", "-q", "0.1", "-T", "10", "-n", "10"], "noise_multiplier"),
        (["bound", "-s", "1", "-q", "0.1", "-T", "10"], "kappa"),
        (["calibrate", "--target-rero", "0.01", "-n", "10", "-q", "0.1", "-T", "10"], "target_rero"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, word):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and word in err and "Traceback" not in err


def test_curve_writes_png_svg_csv(tmp_path, capsys):
    d = run_json(
        capsys,
        ["curve", "--steps", "10", "--points", "3", "--prior-size", "10", "--sample-rates", "0.1", "--sample-rates", "0.9",
         "--out", str(tmp_path)],
    )
    for key in ("png", "svg", "csv"):
        assert (tmp_path / f"curve.{key}").stat().st_size > 0
    assert len(d["rows"]) == 3 + 2
    assert all(r["rero"]["lower"] <= r["rero"]["upper"] <= r["baselines"]["rdp"] + 1e-9 for r in d["rows"])
    assert all(r["rero"]["method"] == "pld" and r["kappa"] == 0.1 for r in d["rows"])
    header = (tmp_path / "curve.csv").read_text().splitlines()[0].split(",")
    assert header[-4:] == ["rero_method", "rero_lower", "rero_upper", "baseline_rdp"]


def test_bound_never_imports_jax():
    code = (
        "import sys; from reconrisk._src.cli import main; "
        "rc = main(['bound','-s','1','-q','0.01','-T','100','-n','10','--json']); "
        "assert 'jax' not in sys.modules, 'jax imported'; "
        "assert 'dp_accounting' not in sys.modules, 'dp_accounting imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_simulation_commands_without_jax_say_how_to_install_it():
    code = (
        "import sys; sys.modules['jax'] = None; from reconrisk._src.cli import main; "
        "sys.exit(main(['audit', '--trials', '2', '--epsilon', '4', '--no-plot', '--json']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "reconrisk[sim]" in proc.stderr and "Traceback" not in proc.stderr
