"""``reconrisk capacity vmf|gaussian`` — Bayes' capacity of a noise mechanism (Biswas et al. 2024, Thms 5–6; no JAX)."""

from __future__ import annotations

import math
from typing import Optional

import typer

from ..errors import ReconRiskError
from . import app
from ._common import deprecated_alias, pick, print_json, print_table

capacity_app = typer.Typer(help="Bayes' capacity (one-try reconstruction leakage, natural log) of a mechanism (Biswas et al. 2024).",
                           no_args_is_help=True)
app.add_typer(capacity_app, name="capacity")


def _show(payload: dict, title: str, json_out: bool) -> None:
    if json_out:
        print_json(payload)
        return
    lc = payload["log_capacity"]
    rows = [["log_capacity (natural log)", lc], ["log10 capacity", lc / math.log(10.0)]]
    print_table(title, ["quantity", "value"], rows)


@capacity_app.command("vmf")
def vmf_cmd(
    concentration: Optional[float] = typer.Option(None, "--concentration", "-k",
                                                  help="VMF concentration κ ≥ 0 (required)."),
    kappa: Optional[float] = typer.Option(None, "--kappa", hidden=True,
                                          callback=deprecated_alias("--kappa", "--concentration")),
    dim: int = typer.Option(..., "--dim", "-p", help="Dimension p ≥ 2."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `log_capacity`)."),
) -> None:
    """log C_Bayes of the VMF mechanism on S^{p−1} (Biswas et al. 2024, Thm 6)."""
    from ..theory.capacity import log_capacity_vmf

    conc = pick("--concentration", concentration, kappa)
    if conc is None:
        raise ReconRiskError("concentration must be given with --concentration (a number >= 0); found none")
    lc = log_capacity_vmf(conc, dim)
    _show({"mechanism": "vmf", "concentration": conc, "dim": dim, "log_capacity": lc},
          f"Bayes' capacity, VMF κ = {conc:g}, p = {dim}", json_out)


@capacity_app.command("gaussian")
def gaussian_cmd(
    noise_std: Optional[float] = typer.Option(None, "--noise-std", "-s",
                                              help="Standard deviation σ > 0 of the Gaussian noise itself "
                                                   "(for DP-SGD: noise multiplier × clip norm). Required."),
    sigma: Optional[float] = typer.Option(None, "--sigma", hidden=True,
                                          callback=deprecated_alias("--sigma", "--noise-std")),
    radius: float = typer.Option(..., "--radius", "-R", help="Radius R of the input ball (clip norm)."),
    dim: int = typer.Option(..., "--dim", "-p", help="Dimension p ≥ 1."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `log_capacity`)."),
) -> None:
    """log C_Bayes of N(x, σ²I) over the ball ‖x‖ ≤ R (Biswas et al. 2024, Thm 5, with its constants corrected)."""
    from ..theory.capacity import log_capacity_gaussian

    std = pick("--noise-std", noise_std, sigma)
    if std is None:
        raise ReconRiskError("noise_std must be given with --noise-std (a number > 0); found none")
    lc = log_capacity_gaussian(std, radius, dim)
    _show({"mechanism": "gaussian", "noise_std": std, "radius": radius, "dim": dim, "log_capacity": lc},
          f"Bayes' capacity, Gaussian noise std σ = {std:g}, R = {radius:g}, p = {dim}", json_out)
