"""``reconrisk analytic`` commands and the seed 003 figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reconrisk._src.theory.analytic import rero_mse
from reconrisk._src.cli import main


def run_json(capsys, *args) -> dict:
    assert main(["analytic", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_bound_mse_json(capsys):
    d = run_json(capsys, "bound", "--metric", "mse", "--eta", "0.5", "--noise-multiplier", "1", "--dim", "10", "--min-norm", "1")
    assert d["rero"] == pytest.approx(0.108822, rel=1e-5)
    assert d["expected"] == pytest.approx(1.0)


def test_bound_psnr_defaults_to_range_one(capsys):
    d = run_json(capsys, "bound", "--metric", "psnr", "--eta", "3", "--noise-multiplier", "1", "--dim", "10", "--min-norm", "1")
    assert d["rero"] == pytest.approx(0.109616, rel=1e-5) and d["data_range"] == 1.0
    d = run_json(
        capsys, "bound", "--metric", "psnr", "--eta", "-3", "--noise-multiplier", "1", "--dim", "1", "--min-norm", "1", "--data-range", "2"
    )
    assert 0 < d["rero"] < 1 and d["data_range"] == 2.0


def test_bound_ncc(capsys):
    d = run_json(capsys, "bound", "--metric", "ncc", "--noise-multiplier", "0.001", "--dim", "150528")
    assert d["ncc_bound"] == pytest.approx(0.9322908, rel=1e-6)
    assert "rero" not in d


def test_bound_clip_variant_and_rows(capsys):
    d = run_json(
        capsys, "bound", "--metric", "mse", "--eta", "0.1", "--noise-multiplier", "0.5", "--dim", "8", "--min-norm", "1", "--clip-norm", "0.8"
    )
    assert d["rero_clip"] == pytest.approx(rero_mse(0.1, 0.5, 8, clip_norm=0.8))
    assert d["rero_clip"] >= d["rero"] and d["optimal_rows"] == 1


def test_bound_with_clip_norm_only_is_the_c_variant(capsys):
    d = run_json(capsys, "bound", "--metric", "psnr", "--eta", "10", "--noise-multiplier", "0.5", "--dim", "8", "--clip-norm", "0.8")
    assert d["basis"] == "clip_norm" and "min_norm" not in d
    from reconrisk._src.theory.analytic import rero_psnr

    assert d["rero"] == pytest.approx(rero_psnr(10.0, 0.5, 8, clip_norm=0.8), rel=1e-12)


def test_bound_tiny_gamma_has_log(capsys):
    d = run_json(capsys, "bound", "--metric", "mse", "--eta", "1e-6", "--noise-multiplier", "1", "--dim", "1000", "--min-norm", "1")
    assert d["rero"] == 0.0 and d["log_rero"] < -5000


def test_bound_table(capsys):
    assert main(["analytic", "bound", "--metric", "psnr", "--eta", "20", "--noise-multiplier", "0.1", "--dim", "4", "--min-norm", "0.5", "--clip-norm", "1"]) == 0
    out = capsys.readouterr().out
    assert "P(PSNR ≥ η)" in out and "0.9970" in out and "C > m" in out


def test_calibrate_json_round_trip(capsys):
    d = run_json(capsys, "calibrate", "--metric", "mse", "--eta", "0.01", "--target-rero", "0.05", "--dim", "4", "--min-norm", "0.5")
    assert d["noise_multiplier"] == pytest.approx(0.47447114, rel=1e-6)
    b = run_json(
        capsys, "bound", "--metric", "mse", "--eta", "0.01", "--noise-multiplier", repr(d["noise_multiplier"]), "--dim", "4", "--min-norm", "0.5"
    )
    assert b["rero"] == pytest.approx(0.05, rel=1e-9)
    p = run_json(capsys, "calibrate", "--metric", "psnr", "--eta", "20", "--target-rero", "0.05", "--dim", "4", "--min-norm", "0.5")
    assert p["noise_multiplier"] == pytest.approx(d["noise_multiplier"], rel=1e-12)


def test_dp_both_directions(capsys):
    d = run_json(capsys, "dp", "--noise-multiplier", "1", "--delta", "1e-5")
    assert d["epsilon"] == pytest.approx(4.37718, rel=1e-5)
    d = run_json(capsys, "dp", "--epsilon", "1", "--delta", "1e-5")
    assert d["noise_multiplier"] == pytest.approx(3.7306316, rel=1e-7)


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["bound", "--metric", "mse", "--eta", "0.1", "--noise-multiplier", "0", "--dim", "4", "--min-norm", "1"], "noise_multiplier must be > 0"),
        (["bound", "--metric", "mse", "--eta", "0.1", "--noise-multiplier", "-1", "--dim", "4", "--min-norm", "1"], "noise_multiplier must be > 0"),
        (["bound", "--metric", "mse", "--eta", "0.1", "--noise-multiplier", "1", "--dim", "0", "--min-norm", "1"], "dim must be an integer >= 1"),
        (["bound", "--metric", "mse", "--eta", "-0.1", "--noise-multiplier", "1", "--dim", "4", "--min-norm", "1"], "eta must be >= 0"),
        (["bound", "--metric", "ncc", "--eta", "1.5", "--noise-multiplier", "1", "--dim", "4"], "eta must be in [-1, 1]"),
        (["bound", "--metric", "psnr", "--eta", "inf", "--noise-multiplier", "1", "--dim", "4", "--min-norm", "1"], "eta must be a finite"),
        (["bound", "--metric", "mse", "--eta", "0.1", "--noise-multiplier", "1", "--dim", "4", "--min-norm", "0"], "min_norm must be > 0"),
        (["bound", "--metric", "mse", "--eta", "0.1", "--noise-multiplier", "1", "--dim", "4"], "min_norm must be given"),
        (["bound", "--metric", "ssim", "--eta", "0.1", "--noise-multiplier", "1", "--dim", "4"], "metric must be one of"),
        (["calibrate", "--metric", "mse", "--eta", "0.1", "--target-rero", "1.2", "--dim", "4", "--min-norm", "1"], "target_rero must be in (0, 1)"),
        (["calibrate", "--metric", "mse", "--eta", "0.1", "--dim", "4", "--min-norm", "1"], "target_rero must be given"),
        (["calibrate", "--metric", "ncc", "--eta", "0.1", "--target-rero", "0.2", "--dim", "4", "--min-norm", "1"], "metric must be one of"),
        (["dp", "--delta", "1e-5"], "exactly one of"),
        (["simulate", "--noise-multipliers", "0.1,-1", "--samples", "3"], "noise_multipliers must be > 0"),
        (["simulate", "--noise-multipliers", "a,b", "--samples", "3"], "comma-separated"),
        (["simulate", "--mode", "torch", "--samples", "3"], "mode must be one of"),
    ],
)
def test_bad_input_exit_2(capsys, args, fragment):
    assert main(["analytic", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("reconrisk: error:") and fragment in err and err.count("\n") == 1


def test_usage_error_exit_2(capsys):
    assert main(["analytic", "bound", "--metric", "mse", "--eta", "x", "--noise-multiplier", "1", "--dim", "4"]) == 2


def test_simulate_writes_csv_and_figure(tmp_path, capsys):
    d = run_json(capsys, "simulate", "--samples", "12", "--noise-multipliers", "0.1,1", "--out", str(tmp_path), "--seed", "3")
    assert d["samples"] == 12 and len(d["summary"]) == 2 and d["clipped_fraction"] == 1.0
    for key in ("csv", "png", "svg"):
        assert (tmp_path / f"simulate.{key}").stat().st_size > 0
    assert (tmp_path / "simulate.json").exists()
    lines = (tmp_path / "simulate.csv").read_text().splitlines()
    assert len(lines) == 1 + 2 * 12
    # same seed, same numbers
    d2 = run_json(capsys, "simulate", "--samples", "12", "--noise-multipliers", "0.1,1", "--out", str(tmp_path / "b"), "--seed", "3", "--no-figure")
    assert d2["summary"] == d["summary"]


def test_simulate_table_and_digits_message(tmp_path, capsys):
    assert main(["analytic", "simulate", "--samples", "5", "--noise-multipliers", "1", "--out", str(tmp_path), "--no-figure"]) == 0
    assert "theory" in capsys.readouterr().out
    from reconrisk._src.experiments.analytic import load_digits_or_none

    x = load_digits_or_none(10)
    code = main(["analytic", "simulate", "--data", "digits", "--samples", "10", "--noise-multipliers", "1", "--out", str(tmp_path / "d"), "--no-figure", "--json"])
    if x is None:
        assert code == 2 and "reconrisk._src.data.load_digits" in capsys.readouterr().err
    else:
        assert code == 0 and x.shape == (10, 64) and 0 <= x.min() and x.max() <= 1


def test_figures_command(tmp_path, capsys):
    d = run_json(capsys, "figures", "--fig", "all", "--data", "both", "--out", str(tmp_path))
    for name in ("fig2_synthetic", "fig3_synthetic", "fig5_synthetic"):
        assert name in d["files"]
        for p in d["files"][name]:
            assert p.endswith((".png", ".svg")) and (tmp_path / p.split("/")[-1]).stat().st_size > 1000
    from reconrisk._src.experiments.analytic import load_digits_or_none

    if load_digits_or_none(1) is None:
        assert d["skipped"] and "digits" in d["skipped"][0]
    else:
        assert "fig2_digits" in d["files"]


def test_figure_scale_demo_numbers(tmp_path):
    from reconrisk._src.experiments.analytic import scale_demo
    from reconrisk._src.report.analytic import figure_scale_demo

    res = scale_demo(factor=10.0)
    paths = figure_scale_demo(res, out_dir=tmp_path)
    assert res["mse_ratio"] == pytest.approx(100.0, rel=1e-10)
    assert res["original"]["psnr"] == pytest.approx(res["scaled"]["psnr"])
    assert all(p.exists() for p in paths)


def test_bound_command_does_not_import_jax_or_matplotlib():
    code = (
        "import sys; from reconrisk._src.cli import main; "
        "rc = main(['analytic','bound','--metric','mse','--eta','0.1','--noise-multiplier','1','--dim','4','--min-norm','1','--json']); "
        "assert rc == 0; bad = [m for m in ('jax','matplotlib') if m in sys.modules]; assert not bad, bad"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert res.returncode == 0, res.stderr


def _env():
    import os

    from pathlib import Path

    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_deprecated_spellings_still_work_with_a_one_line_note(capsys):
    """--gamma and --eps are hidden aliases of --target-rero and --epsilon for one release."""
    new = run_json(capsys, "calibrate", "--metric", "mse", "--eta", "0.01", "--target-rero", "0.05", "--dim", "4", "--min-norm", "0.5")
    assert main(["analytic", "calibrate", "--metric", "mse", "--eta", "0.01", "--gamma", "0.05", "--dim", "4", "--min-norm", "0.5", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == new and new["target_rero"] == 0.05 and "achieved_rero" in new
    assert cap.err.count("\n") == 1 and "--gamma is deprecated" in cap.err and "--target-rero" in cap.err
    assert main(["analytic", "dp", "--eps", "1", "--delta", "1e-5", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["epsilon"] == 1.0 and "--eps is deprecated" in cap.err and cap.err.count("\n") == 1
    both = ["calibrate", "--metric", "mse", "--eta", "0.1", "--target-rero", "0.1", "--gamma", "0.1", "--dim", "4", "--min-norm", "1"]
    assert main(["analytic", *both]) == 2
    note, error = capsys.readouterr().err.splitlines()
    assert "deprecated" in note and error.startswith("reconrisk: error: give --target-rero once")
    assert main(["analytic", "calibrate", "--help"]) == 0
    assert "--gamma" not in capsys.readouterr().out  # hidden
