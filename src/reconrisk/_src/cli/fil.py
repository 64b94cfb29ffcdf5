"""``reconrisk mse-bound`` (theory only, no JAX) and ``reconrisk fil logreg|dpsgd`` (Guo, Karrer, Chaudhuri & van der Maaten 2022)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import deprecated_alias, pick, print_json, print_table, progress

fil_app = typer.Typer(
    help="Fisher-information-leakage accounting and MSE bounds on the digits data (Guo et al. 2022).",
    no_args_is_help=True,
)
app.add_typer(fil_app, name="fil")


@app.command("mse-bound")
def mse_bound_cmd(
    rdp_epsilon: Optional[float] = typer.Option(None, "--rdp-epsilon", "-e", help="ε of a (2, ε)-RDP guarantee."),
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", "-s", help="DP-SGD noise multiplier σ."),
    sample_rate: Optional[float] = typer.Option(None, "--sample-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
    steps: Optional[int] = typer.Option(None, "--steps", "-T", help="Number of DP-SGD steps T."),
    diam: float = typer.Option(1.0, "--diam", help="Per-coordinate diameter of the data space (1 for [0, 1]^d)."),
    gelu_clip: bool = typer.Option(False, "--gelu-clip", help="GELU soft clipping: sensitivity 1.11522·C (σ_eff = σ/1.11522)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Theorem 1 of Guo et al. 2022: MSE lower bound 1/(4(e^ε − 1))·diam² for any unbiased reconstruction attack."""
    from .. import _validate as v
    from ..theory.mse import GELU_CLIP_OVERSHOOT, mse_bound
    from ..errors import ReconRiskError
    from ..release import Release

    if rdp_epsilon is not None:
        rdp_epsilon = v.positive("rdp_epsilon", rdp_epsilon)

    dpsgd = [noise_multiplier, sample_rate, steps]
    if rdp_epsilon is not None and any(a is not None for a in dpsgd):
        raise ReconRiskError("give either --rdp-epsilon or --noise-multiplier/--sample-rate/--steps, not both")
    if rdp_epsilon is None:
        if any(a is None for a in dpsgd):
            raise ReconRiskError("give --rdp-epsilon E, or all of --noise-multiplier, --sample-rate and --steps")
        res = mse_bound(release=Release(noise_multiplier, sample_rate, steps), diam=diam,
                        sensitivity=GELU_CLIP_OVERSHOOT if gelu_clip else 1.0)
    else:
        if gelu_clip:
            raise ReconRiskError("--gelu-clip applies to --noise-multiplier/--sample-rate/--steps, not to --rdp-epsilon")
        res = mse_bound(rdp_epsilon=rdp_epsilon, diam=diam)
    if json_out:
        print_json(res.to_dict())
        return
    rows = [["rdp_epsilon (α = 2)", res.rdp_epsilon], ["diam", res.diam], ["mse_lower_bound", res.mse.lower],
            ["log10 mse_lower_bound", res.mse.log10_lower], ["rms error per coordinate ≥", res.mse.rms_lower]]
    print_table("MSE lower bound for unbiased attacks (Guo et al. 2022, Thm 1)", ["quantity", "value"], rows)


@fil_app.command("logreg")
def fil_logreg_cmd(
    lam: float = typer.Option(1e-2, "--lam", help="L2 regularisation λ of (1/n)Σℓ + (λ/2)||θ||²."),
    noise_std: Optional[float] = typer.Option(None, "--noise-std", help="Output-perturbation noise std σ (θ* + N(0, σ²I)); default 0.01."),
    noise: Optional[float] = typer.Option(None, "--noise", hidden=True, callback=deprecated_alias("--noise", "--noise-std")),
    paper_formula: bool = typer.Option(False, "--paper-formula", help="ε = 2/(nλσ) as printed in Guo et al. 2022 (default: standard 4/(nλσ)²)."),
    trials: int = typer.Option(10_000, "--trials", help="Noise draws for the GLM attack (0: no attack)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the noise draws."),
    out: Path = typer.Option(Path("reconrisk-out/fil-logreg"), "--out", help="Directory for the figures."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Do not write figures."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Digits 0-vs-1 logistic regression: dFIL bounds vs the RDP bound (Fig. 2), GLM attack (Figs. 3–4)."""

    from .. import _io
    from .. import _validate as v
    from ..experiments.fil import logreg_experiment

    noise_std = pick("--noise-std", noise_std, noise, default=1e-2)
    trials = v.max_count("--trials", v.integer("trials", trials, minimum=0), 10**7, "GLM attack draws")
    _io.check_out_dir(out)  # before the fit and the attack, also with --no-figures (no flag is ignored)
    with progress(trials, "GLM attack", enabled=not json_out) as adv:
        res = logreg_experiment(lam=lam, noise_std=noise_std, formula="paper" if paper_formula else "gaussian",
                                trials=trials, seed=seed, progress=adv)
    if not no_figures:
        from ..report.fil import logreg_figures

        res = dataclasses.replace(res, figures=tuple(logreg_figures(res, out)))
    d = res.to_dict()
    if json_out:
        print_json(d)
        return
    rows = [["n, d", f"{res.n}, {res.d}"], [f"rdp_epsilon ({res.formula})", res.rdp_epsilon],
            ["rdp_mse_bound (Thm 1)", res.rdp_mse.lower]]
    rows += [[f"dfil_bound {k}", val] for k, val in d["dfil_bound"].items()]
    rows += [["fraction with bound ≤ 1", d["fraction_bound_le_1"]], ["train accuracy", res.train_accuracy]]
    if res.violations is not None:
        rows += [[f"attack mse {k}", val] for k, val in d["attack_mse"].items()]
        vd = d["violations"]
        rows += [["violation_fraction", vd["fraction"]], ["violations (> 3 s.e.)", vd["significant"]],
                 ["violations with bound ≤ 1", vd["among_bound_le_1"]], ["violations bias-dominated", vd["bias_dominated"]]]
    for p in d["figures"]:
        rows.append(["figure", p])
    print_table(f"FIL of output-perturbed logistic regression (λ={res.lam:g}, σ={res.noise_std:g})", ["quantity", "value"], rows)


@fil_app.command("dpsgd")
def fil_dpsgd_cmd(
    model: str = typer.Option("mlp", "--model", help="mlp | cnn | logistic | mlp:W1,W2,..."),
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", "-s", help="Noise multiplier σ (noise std σC); default 1. With --grid: fixes σ instead of the grid's 4 values."),
    sample_rate: float = typer.Option(0.05, "--sample-rate", "-q", help="Poisson sampling rate q."),
    steps: Optional[int] = typer.Option(None, "--steps", "-T", help="DP-SGD steps T; default 300. With --grid: fixes T instead of the grid's 2 values."),
    clip_norm: Optional[float] = typer.Option(None, "--clip-norm", "-C", help="Clip norm C; default 1. With --grid: fixes C instead of the grid's 3 values."),
    learning_rate: float = typer.Option(0.5, "--learning-rate", help="Learning rate ρ (update ρ·v, v ← μv + g/(qN))."),
    momentum: float = typer.Option(0.5, "--momentum", help="Momentum μ in [0, 1)."),
    method: str = typer.Option("trace_sampled", "--method", help="trace_sampled | trace_exact | spectral"),
    num_coords: int = typer.Option(50, "--num-coords", help="Sampled input coordinates per example and step."),
    clip_mode: str = typer.Option("gelu", "--clip-mode", help="gelu (Guo et al. 2022) | hard"),
    runs: int = typer.Option(1, "--runs", help="Repeated runs averaged (Guo et al. 2022: 10)."),
    delta: Optional[float] = typer.Option(None, "--delta", help="Per-step δ of the subsampling factor (default 1/(n·T))."),
    no_subsampling_factor: bool = typer.Option(False, "--no-subsampling-factor", help="Subsampling factor 1 (Eq. 2) instead of Eq. 3."),
    no_kappa: bool = typer.Option(False, "--no-kappa", hidden=True, callback=deprecated_alias("--no-kappa", "--no-subsampling-factor")),
    paper_literal: bool = typer.Option(False, "--paper-literal", help="Noise std σ in the FIM (the paper's Eq. 1) instead of σC."),
    grid: bool = typer.Option(False, "--grid", help="Run the 24-configuration grid (Table 3 scaled to digits; -s, -T, -C given fix that axis) and write Fig. 5."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split, initialisation, batches, noise and coordinates."),
    out: Path = typer.Option(Path("reconrisk-out/fil-dpsgd"), "--out", help="Directory for Fig. 5 (with --grid)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """DP-SGD with FIL accounting (Guo et al. 2022, Algorithm 1) on the digits: per-example dFIL bounds, RDP bound, accuracy."""

    from ..experiments.fil import DEFAULT_GRID, dpsgd_experiment, dpsgd_grid, grid_total_steps
    from ..train.fil import FILConfig

    cfg = FILConfig(method=method, num_coords=num_coords, clip_mode=clip_mode, learning_rate=learning_rate,
                    momentum=momentum, use_subsampling_factor=not (no_subsampling_factor or no_kappa), delta=delta,
                    paper_literal=paper_literal, runs=runs, seed=seed)
    if grid:
        from .. import _io

        _io.check_out_dir(out)  # Fig. 5 goes there: an unwritable --out fails before the grid is trained
        # σ, T or C given with --grid fix that axis of the grid (never silently ignored)
        fixed = {"noise_multiplier": noise_multiplier, "steps": steps, "clip_norm": clip_norm}
        grid_spec = {k: ((val,) if val is not None else DEFAULT_GRID[k]) for k, val in fixed.items()}
        total = grid_total_steps(grid_spec, cfg.runs)
        with progress(total, f"FIL grid ({model})", enabled=not json_out) as adv:
            res = dpsgd_grid(model=model, grid=grid_spec, sample_rate=sample_rate, config=cfg, seed=seed, progress=adv)
        from ..report.fil import grid_figures

        res = dataclasses.replace(res, figures=tuple(grid_figures(res, out)))
        if json_out:
            print_json(res.to_dict())
            return
        rows = [[r["noise_multiplier"], r["clip_norm"], r["steps"], r["test_accuracy"], r["rdp_epsilon"],
                 r["rdp_mse_bound"], r["max_dfil_bound"], r["median_dfil_bound"]] for r in res.rows]
        print_table(f"FIL grid on digits ({model}, q={sample_rate:g}, runs={cfg.runs})",
                    ["σ", "C", "T", "test acc", "ε (α=2)", "RDP bound", "max-dFIL bound", "median-dFIL bound"], rows)
        for p in res.figures:
            print(f"wrote {p}")
        return
    from .. import _validate as v

    noise_multiplier = 1.0 if noise_multiplier is None else noise_multiplier
    clip_norm = 1.0 if clip_norm is None else clip_norm
    steps = v.integer("steps", 300 if steps is None else steps, minimum=1)
    with progress(steps * cfg.runs, f"DP-SGD + FIL ({model})", enabled=not json_out) as adv:
        res = dpsgd_experiment(model=model, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                               clip_norm=clip_norm, config=cfg, seed=seed, progress=adv)
    d = res.to_dict()
    d["violation_fraction"] = None  # no attack is run against DP-SGD here
    if json_out:
        print_json(d)
        return
    rows = [["rdp_epsilon (α = 2)", res.rdp_epsilon], ["rdp_mse_bound (Thm 1)", res.rdp_mse.lower],
            ["subsampling factor (Eq. 3)", res.subsampling_factor], ["max-dFIL bound", res.max_fil_bound], ["median-dFIL bound", res.median_fil_bound]]
    rows += [[f"dfil_bound {k}", val] for k, val in d["dfil_bound"].items()]
    rows += [["test accuracy", res.test_accuracy], ["seconds", res.train_seconds]]
    print_table(f"DP-SGD with FIL accounting ({model}, σ={noise_multiplier:g}, q={sample_rate:g}, T={steps}, C={clip_norm:g})",
                ["quantity", "value"], rows)
