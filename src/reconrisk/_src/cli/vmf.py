"""``reconrisk vmf epsilon|concentration`` — privacy accounting of the VMF mechanism (Biswas et al. 2024; theory only, no JAX)."""

from __future__ import annotations

from typing import Optional

import typer

from ..errors import ReconRiskError
from . import app
from ._common import deprecated_alias, pick, print_json, print_table, spinner

vmf_app = typer.Typer(help="Von Mises–Fisher mechanism: ε of subsampled, composed releases (Biswas et al. 2024).",
                      no_args_is_help=True)
app.add_typer(vmf_app, name="vmf")


def parse_number(name: str, text: str) -> float:
    """A number given as ``0.25``, ``1e-5`` or a fraction ``128/60000``."""
    from ..errors import ReconRiskError

    s = str(text).strip()
    try:
        if "/" in s:
            num, den = s.split("/", 1)
            return float(num) / float(den)
        return float(s)
    except (ValueError, ZeroDivisionError):
        raise ReconRiskError(f"{name} must be a number or a fraction a/b; found {text!r}") from None


_COMMON = {
    "dim": typer.Option(..., "--dim", "-p", help="Dimension p (number of model weights; the sphere is S^{p−1})."),
    "sample_rate": typer.Option(..., "--sample-rate", "-q", help="Poisson sample rate q in (0, 1], e.g. 128/60000."),
    "compositions": typer.Option(..., "--compositions", "-N",
                                 help="Composition count N (the paper used epochs = 3 for VMF; steps are sound)."),
    "delta": typer.Option(..., "--delta", help="δ, e.g. 1/60000."),
    "approach": typer.Option("best", "--approach", help="1 (convert, amplify, KOV) | 2 (subsampled RDP) | best"),
    "interpolation": typer.Option("cgf", "--interpolation",
                                  help="fractional orders in approach 2: cgf (sound) | paper (Biswas et al.'s (2024), optimistic)"),
}


@vmf_app.command("epsilon")
def epsilon_cmd(
    concentration: Optional[float] = typer.Option(None, "--concentration", "-k",
                                                  help="VMF concentration κ > 0 (larger = less noise). Required."),
    kappa: Optional[float] = typer.Option(None, "--kappa", hidden=True,
                                          callback=deprecated_alias("--kappa", "--concentration")),
    dim: int = _COMMON["dim"],
    sample_rate: str = _COMMON["sample_rate"],
    compositions: int = _COMMON["compositions"],
    delta: str = _COMMON["delta"],
    approach: str = _COMMON["approach"],
    interpolation: str = _COMMON["interpolation"],
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `epsilon`) instead of a table."),
) -> None:
    """ε at δ of N Poisson-subsampled VMF mechanisms (Biswas et al. 2024, Props 1 and 4, approaches 1 and 2)."""
    from ..accounting.vmf import vmf_epsilon

    conc = pick("--concentration", concentration, kappa)
    if conc is None:
        raise ReconRiskError("concentration must be given with --concentration (a number > 0); found none")
    with spinner("VMF accounting", enabled=not json_out):
        res = vmf_epsilon(conc, dim, parse_number("sample_rate", sample_rate), compositions,
                          parse_number("delta", delta), approach, interpolation=interpolation)
    if json_out:
        print_json(res.to_dict())
        return
    d = res.to_dict()  # the ε each Bound holds (the paper's interpolation: an estimate)
    rows = [["epsilon", d["epsilon"]], ["approach used", res.approach], ["epsilon, approach 1", d["epsilon_approach1"]],
            ["epsilon, approach 2", d["epsilon_approach2"]], ["optimal order α (approach 2)", res.alpha],
            ["optimal un-subsampled ε (approach 1)", res.eps0]]
    print_table(f"VMF mechanism, κ = {res.concentration:g}, p = {res.dim}", ["quantity", "value"], rows,
                caption=f"q = {res.sample_rate:.6g}, N = {res.compositions}, δ = {res.delta:.3g}, "
                        f"interpolation = {res.interpolation}")


@vmf_app.command("concentration")
def concentration_cmd(
    epsilon: float = typer.Option(..., "--epsilon", "-e", help="Target ε > 0."),
    dim: int = _COMMON["dim"],
    sample_rate: str = _COMMON["sample_rate"],
    compositions: int = _COMMON["compositions"],
    delta: str = _COMMON["delta"],
    approach: str = _COMMON["approach"],
    interpolation: str = _COMMON["interpolation"],
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `concentration`) instead of a table."),
) -> None:
    """Largest κ whose release meets the target ε (bisection on log κ)."""
    from ..accounting.vmf import concentration_for_epsilon, vmf_epsilon

    q, d = parse_number("sample_rate", sample_rate), parse_number("delta", delta)
    with spinner("searching the concentration (bisection on log κ)", enabled=not json_out):
        k = concentration_for_epsilon(epsilon, dim, q, compositions, d, approach, interpolation=interpolation)
        achieved = vmf_epsilon(k, dim, q, compositions, d, approach, interpolation=interpolation).to_dict()["epsilon"]
    payload = {"concentration": k, "epsilon_target": epsilon, "epsilon": achieved, "dim": dim, "sample_rate": q,
               "compositions": compositions, "delta": d, "approach": approach, "interpolation": interpolation}
    if json_out:
        print_json(payload)
        return
    print_table("VMF concentration for a target ε", ["quantity", "value"],
                [["concentration κ", k], ["epsilon achieved", achieved], ["epsilon target", epsilon]])


@vmf_app.command("rero")
def rero_cmd(
    concentration: float = typer.Option(..., "--concentration", help="VMF concentration κ_VMF > 0 (larger = less noise)."),
    dim: int = _COMMON["dim"],
    sample_rate: str = _COMMON["sample_rate"],
    compositions: int = _COMMON["compositions"],
    prior_size: int = typer.Option(None, "--prior-size", "-n", help="Uniform prior over n candidates (baseline 1/n)."),
    prior_kappa: float = typer.Option(None, "--prior-kappa", help="Baseline success probability of the prior, in (0, 1)."),
    log_kappa: float = typer.Option(None, "--log-kappa", help="log of the prior's baseline (< 0), for tiny baselines."),
    conversion: str = typer.Option("optimal", "--conversion", help="optimal (Riess et al. 2026) | balle2022 (Thm 2)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (key `rero`) instead of a table."),
) -> None:
    """Certified reconstruction risk of a VMF release from its RDP curve (optimal RDP → trade-off conversion)."""
    from ..measures.vmf_rero import rero_vmf
    from ..errors import ReconRiskError
    from ..priors import resolve_kappa

    if sum(x is not None for x in (prior_size, prior_kappa, log_kappa)) != 1:
        raise ReconRiskError("give exactly one of --prior-size N, --prior-kappa K or --log-kappa L")
    k = resolve_kappa(prior_kappa, prior_size) if log_kappa is None else None
    b = rero_vmf(k, concentration, dim, parse_number("sample_rate", sample_rate), compositions, log_kappa=log_kappa,
                 conversion=conversion)
    if json_out:
        print_json({"rero": b.to_dict()})
        return
    print_table(f"VMF mechanism, κ_VMF = {concentration:g}, p = {dim}: reconstruction risk", ["quantity", "value"],
                [["prior baseline", b.details["kappa"]], ["rero upper", b.upper], ["method", b.method],
                 ["order used", b.details["order"]], ["formula", b.formula]],
                caption=f"γ = {b.details['sample_rate']:.6g}, N = {compositions}")
