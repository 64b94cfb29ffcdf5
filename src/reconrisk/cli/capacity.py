"""``reconrisk capacity vmf|gaussian`` — Bayes' capacity of a noise mechanism (Biswas et al. 2024, Thms 5–6; no JAX)."""

from __future__ import annotations

import math

import typer

from . import app
from ._common import print_json, print_table

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
    kappa: float = typer.Option(..., "--concentration", "--kappa", "-k",
                                help="VMF concentration κ ≥ 0; --kappa is the seed's spelling."),
    dim: int = typer.Option(..., "--dim", "-p", help="Dimension p ≥ 2."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `log_capacity`)."),
) -> None:
    """log C_Bayes of the VMF mechanism on S^{p−1} (Biswas et al. 2024, Thm 6)."""
    from ..bounds.capacity import log_capacity_vmf

    lc = log_capacity_vmf(kappa, dim)
    _show({"mechanism": "vmf", "concentration": kappa, "dim": dim, "log_capacity": lc},
          f"Bayes' capacity, VMF κ = {kappa:g}, p = {dim}", json_out)


@capacity_app.command("gaussian")
def gaussian_cmd(
    sigma: float = typer.Option(..., "--sigma", "-s", help="Noise standard deviation σ > 0."),
    radius: float = typer.Option(..., "--radius", "-R", help="Radius R of the input ball (clip norm)."),
    dim: int = typer.Option(..., "--dim", "-p", help="Dimension p ≥ 1."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `log_capacity`)."),
) -> None:
    """log C_Bayes of N(x, σ²I) over the ball ‖x‖ ≤ R (Biswas et al. 2024, Thm 5 as corrected in spec_004 §6)."""
    from ..bounds.capacity import log_capacity_gaussian

    lc = log_capacity_gaussian(sigma, radius, dim)
    _show({"mechanism": "gaussian", "sigma": sigma, "radius": radius, "dim": dim, "log_capacity": lc},
          f"Bayes' capacity, Gaussian σ = {sigma:g}, R = {radius:g}, p = {dim}", json_out)
