"""``reconrisk compare-mechanisms`` — Gaussian vs VMF DP-SGD on the digits at matched ε (Biswas et al. 2024; needs JAX)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import print_json, print_table, progress


@app.command("compare-mechanisms")
def compare_cmd(
    epsilons: str = typer.Option("1,8,64", "--epsilons", help="Comma-separated ε grid."),
    epochs: int = typer.Option(10, "--epochs", help="Training epochs."),
    batch_size: int = typer.Option(32, "--batch-size", help="Batch size L (training and attacked batch)."),
    learning_rate: float = typer.Option(0.05, "--learning-rate", help="Adam learning rate."),
    delta: float = typer.Option(1e-5, "--delta", help="δ of the matched ε."),
    vmf_compositions: str = typer.Option("steps", "--vmf-compositions",
                                         help="steps (sound) | epochs (Biswas et al.'s (2024) count for VMF)"),
    attack_iterations: int = typer.Option(300, "--attack-iterations", help="Inverting-gradients iterations."),
    tv_weight: float = typer.Option(1e-2, "--tv-weight", help="Total-variation weight of the attack."),
    seed: int = typer.Option(0, "--seed", help="Seed of data split, initialisation, noise and attack."),
    capacity_matched: bool = typer.Option(False, "--capacity-matched",
                                          help="Also run a Gaussian whose Bayes' capacity equals each VMF's (Fig 4)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Directory for results.json and the figures."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Train and attack both mechanisms over an ε grid; accuracy, IGA MSE/SSIM and log Bayes' capacity (Figs 1, 4, 5)."""
    from ..errors import ReconRiskError
    from ..experiments.mechanisms import CompareConfig, compare_mechanisms

    if out is not None:
        from .._io import check_out_dir

        out = check_out_dir(out)  # before the training: an unwritable --out fails at once
    try:
        grid = tuple(float(e) for e in epsilons.split(",") if e.strip())
    except ValueError:
        raise ReconRiskError(f"epsilons must be comma-separated numbers; found {epsilons!r}") from None
    cfg = CompareConfig(epsilons=grid, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, delta=delta,
                        vmf_compositions=vmf_compositions, attack_iterations=attack_iterations, tv_weight=tv_weight,
                        seed=seed, capacity_matched=capacity_matched)
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)  # dp_accounting's fractional-order convergence notes
    models = 1 + len(grid) * (3 if capacity_matched else 2)  # clip-only baseline, then each mechanism per ε
    with progress(models, "training and attacking", enabled=not json_out) as bar:
        result = compare_mechanisms(cfg, progress=bar)
    if out is not None:
        from ..report.mechanisms import plot_comparison

        plot_comparison(result, out)
    if json_out:
        print_json(result.to_dict())
        return
    from ..report.mechanisms import TABLE_COLUMNS, table_rows

    print_table("Gaussian vs VMF DP-SGD on the digits (Biswas et al. 2024)", TABLE_COLUMNS, table_rows(result),
                caption=f"p = {result.dim}, q = {result.sample_rate:.4g}, {result.steps} steps, "
                        f"VMF composed over {cfg.vmf_compositions}, δ = {cfg.delta:g}")
