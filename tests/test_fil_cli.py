"""``reconrisk mse-bound`` and ``reconrisk fil logreg|dpsgd``: JSON keys, values, files, errors (exit 2)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from reconrisk import Release
from reconrisk._src.theory.mse import GELU_CLIP_OVERSHOOT, release_rdp_alpha2
from reconrisk._src.cli import main
from reconrisk.errors import ReconRiskError


def run_json(capsys, args):
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_mse_bound_from_epsilon(capsys):
    d = run_json(capsys, ["mse-bound", "--rdp-epsilon", "1.5792"])
    assert d["rdp_epsilon"] == 1.5792
    assert d["mse_lower_bound"] == pytest.approx(1 / (4 * math.expm1(1.5792)), rel=1e-12)
    assert run_json(capsys, ["mse-bound", "-e", "2", "--diam", "100"])["mse_lower_bound"] == pytest.approx(391.29, abs=0.01)


def test_mse_bound_from_dpsgd(capsys):
    d = run_json(capsys, ["mse-bound", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000"])
    assert d["rdp_epsilon"] == pytest.approx(0.17181, abs=1e-5)
    g = run_json(capsys, ["mse-bound", "-s", "1", "-q", "0.01", "-T", "1000", "--gelu-clip"])
    assert g["rdp_epsilon"] == pytest.approx(release_rdp_alpha2(Release(1, 0.01, 1000), sensitivity=GELU_CLIP_OVERSHOOT))
    assert g["mse_lower_bound"] < d["mse_lower_bound"]


def test_mse_bound_table(capsys):
    assert main(["mse-bound", "-e", "0.5"]) == 0
    assert "mse_lower_bound" in capsys.readouterr().out


def test_mse_bound_never_imports_jax():
    code = (
        "import sys; from reconrisk._src.cli import main; "
        "rc = main(['mse-bound', '-e', '1', '--json']); "
        "assert rc == 0 and 'jax' not in sys.modules, 'jax imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.parametrize(
    "args, word",
    [
        (["mse-bound", "-e", "-1"], "rdp_epsilon"),
        (["mse-bound", "-e", "nan"], "rdp_epsilon"),
        (["mse-bound", "-e", "1", "-s", "1"], "not both"),
        (["mse-bound", "-s", "1", "-q", "0.1"], "--steps"),
        (["mse-bound"], "--rdp-epsilon"),
        (["mse-bound", "-e", "1", "--diam", "0"], "diam"),
        (["mse-bound", "-s", "1", "-q", "1.5", "-T", "10"], "sample_rate"),
        (["mse-bound", "-s", "0", "-q", "0.5", "-T", "10"], "noise_multiplier"),
        (["mse-bound", "-e", "1", "--gelu-clip"], "gelu-clip"),
        (["fil", "logreg", "--lam", "0"], "lam"),
        (["fil", "logreg", "--noise-std", "-1", "--no-figures"], "noise_std"),
        (["fil", "logreg", "--trials", "-3"], "trials"),
        (["fil", "dpsgd", "--method", "full"], "method"),
        (["fil", "dpsgd", "--model", "resnet"], "model"),
        (["fil", "dpsgd", "-q", "2"], "sample_rate"),
        (["fil", "dpsgd", "--runs", "0"], "runs"),
        (["fil", "dpsgd", "--momentum", "1.5"], "momentum"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, word):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and word in err and "Traceback" not in err


def test_fil_logreg_json_and_figures(capsys, tmp_path):
    d = run_json(capsys, ["fil", "logreg", "--lam", "1e-4", "--noise-std", "1e-5", "--trials", "200", "--out", str(tmp_path)])
    assert {"rdp_epsilon", "rdp_mse_bound", "dfil_bound", "violation_fraction"} <= set(d)
    assert set(d["dfil_bound"]) == {"min", "median", "max"}
    assert d["n"] == 360 and d["d"] == 64 and d["epsilon_formula"] == "gaussian"
    assert d["rdp_epsilon"] == pytest.approx(4 / (360 * 1e-4 * 1e-5) ** 2)
    assert d["violation_fraction"] == 0.0 and d["violations"]["among_bound_le_1"] == 0
    assert max(d["highest_dfil"]["attack_mse"]) < 1e-5 < 0.1 < sorted(d["lowest_dfil"]["attack_mse"])[4]
    names = {p.name for p in tmp_path.iterdir()}
    for stem in ("fig2_dfil_histogram", "fig3_bound_vs_attack", "fig4_leakage_examples"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
        assert (tmp_path / f"{stem}.png").stat().st_size > 5000


def test_fil_logreg_paper_formula_without_attack(capsys):
    d = run_json(capsys, ["fil", "logreg", "--paper-formula", "--trials", "0", "--no-figures"])
    assert d["rdp_epsilon"] == pytest.approx(2 / (360 * 1e-2 * 1e-2))
    assert d["violation_fraction"] is None and d["figures"] == []


# The three DP-SGD + FIL runs below (one configuration, the CLI grid, the Python grid) share one static
# configuration — mlp:4 on the seed-0 digits split, q = 0.02, T = 40 (one chunk), C = 0.5, m = 4, the CLI's
# learning rate and momentum — so the trainer compiles once for all of them (σ is traced). q·n ≈ 27 keeps the
# hook's row chunks few; T = 40 samples the median example at least once (P = 1 − 0.98⁴⁰ ≈ 0.55 per example, so
# ~55 ± 1.4 % of the 1348: the median-dFIL bound is finite). C = 0.5 is not the non-grid default (1) and σ = 3,
# T = 40 are not on the default grid, so the CLI grid test still sees which axis values it was given.
Q, T, C = "0.02", "40", "0.5"


def test_fil_dpsgd_single_configuration(capsys):
    d = run_json(capsys, ["fil", "dpsgd", "--model", "mlp:4", "--steps", T, "-q", Q, "-C", C, "--num-coords", "4"])
    assert {"rdp_epsilon", "rdp_mse_bound", "dfil_bound", "violation_fraction", "test_accuracy", "subsampling_factor"} <= set(d)
    assert "kappa" not in d  # kappa is the prior's baseline only; seed 001's factor has its own name
    assert d["violation_fraction"] is None
    assert d["rdp_epsilon"] == pytest.approx(release_rdp_alpha2(Release(1.0, 0.02, 40), sensitivity=GELU_CLIP_OVERSHOOT))
    assert d["release"]["clip_norm"] == 0.5 and d["release"]["steps"] == 40
    assert 0.0 <= d["test_accuracy"] <= 1.0


def test_small_grid_writes_fig5(tmp_path):
    from reconrisk._src.experiments.fil import dpsgd_grid, grid_configurations
    from reconrisk._src.report.fil import grid_figures
    from reconrisk._src.train.fil import FILConfig

    grid = {"steps": (int(T),), "noise_multiplier": (0.8, 4.0), "clip_norm": (float(C),)}
    res = dpsgd_grid(model="mlp:4", grid=grid, sample_rate=float(Q), config=FILConfig(num_coords=4, learning_rate=0.5))
    assert res.figures == () and not any(tmp_path.iterdir())  # experiments compute, report draws
    grid_figures(res, tmp_path)
    assert len(res.rows) == 2
    lo, hi = res.rows
    assert hi["rdp_mse_bound"] > lo["rdp_mse_bound"]  # more noise, larger bound
    assert hi["median_dfil_bound"] > lo["median_dfil_bound"]
    for r in res.rows:
        assert r["max_dfil_bound"] <= r["median_dfil_bound"] < math.inf
    for name in ("fig5_privacy_accuracy.png", "fig5_privacy_accuracy.svg", "fig5_grid.json"):
        assert (tmp_path / name).is_file()
    assert len(grid_configurations(None)) == 24
    with pytest.raises(ReconRiskError, match="1 to 24"):
        grid_configurations({"steps": tuple(range(1, 26))})


def test_grid_uses_the_given_sigma_steps_and_clip_norm(capsys, tmp_path):
    """--grid no longer ignores -s/-T/-C: each one given fixes that axis of the grid."""
    d = run_json(capsys, ["fil", "dpsgd", "--grid", "--model", "mlp:4", "-s", "3", "-T", T, "-C", C, "-q", Q,
                          "--num-coords", "4", "--out", str(tmp_path)])
    assert d["configurations"] == 1
    (row,) = d["rows"]
    assert (row["noise_multiplier"], row["steps"], row["clip_norm"]) == (3.0, 40, 0.5)
    assert (tmp_path / "fig5_grid.json").is_file()


def test_old_flag_spellings_are_hidden_aliases_with_a_note(capsys, tmp_path):
    new = run_json(capsys, ["fil", "logreg", "--noise-std", "0.01", "--trials", "0", "--no-figures"])
    assert main(["fil", "logreg", "--noise", "0.01", "--trials", "0", "--no-figures", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == new and new["noise_std"] == 0.01
    assert cap.err.strip() == "reconrisk: note: --noise is deprecated and will be removed in the next release; use --noise-std"
    assert main(["fil", "dpsgd", "--help"]) == 0
    helptext = capsys.readouterr().out
    assert "--no-subsampling-factor" in helptext and "--no-kappa" not in helptext
