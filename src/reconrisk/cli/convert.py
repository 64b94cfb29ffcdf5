"""``reconrisk convert``: a DP guarantee → the ReRo bound γ, and ReRo against two-point priors → (ε, δ)-DP (Balle, Cherubin & Hayes 2022, §VII).

Theory only: no JAX.
"""

from __future__ import annotations

from typing import List, Optional

import typer

from . import app
from ._common import print_json, print_table


@app.command("convert")
def convert_cmd(
    source: str = typer.Option(..., "--from", help="rdp | dp | zcdp (a DP guarantee) or rero (a ReRo guarantee, Thm 5)."),
    epsilon: Optional[List[float]] = typer.Option(None, "--epsilon", "-e", help="ε of ε-DP, or of (α, ε)-RDP (repeat with --order for a curve)."),
    order: Optional[List[float]] = typer.Option(None, "--order", "-a", help="Rényi order α > 1 of each --epsilon (rdp)."),
    rho: Optional[float] = typer.Option(None, "--rho", help="ρ of ρ-zCDP."),
    rero: Optional[float] = typer.Option(None, "--rero", help="γ of an (η, γ)-ReRo guarantee against two-point priors (--from rero)."),
    kappa: Optional[float] = typer.Option(None, "--kappa", help="Baseline success probability κ in (0, 1)."),
    prior_size: Optional[int] = typer.Option(None, "--prior-size", "-n", help="Uniform prior over n candidates (κ = 1/n)."),
    log_kappa: Optional[float] = typer.Option(None, "--log-kappa", help="log κ (< 0) for priors whose κ underflows."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Convert an RDP, DP or zCDP guarantee into a reconstruction-robustness bound (Balle, Cherubin & Hayes 2022, Thm 2, Cor. 3, Cor. 4)."""
    from .. import _validate as v
    from ..bounds.conversions import SOURCES, dp_from_two_point_rero, rero_from_guarantee
    from ..errors import ReconRiskError
    from ..priors import resolve_kappa

    source = v.choice("from", source, SOURCES + ("rero",))
    given = [a is not None for a in (kappa, prior_size, log_kappa)]
    if sum(given) != 1:
        raise ReconRiskError("give exactly one of --kappa K, --prior-size N or --log-kappa L")
    k = resolve_kappa(kappa, prior_size) if log_kappa is None else None
    if source == "rero":
        if rero is None or epsilon or order or rho is not None:
            raise ReconRiskError("--from rero takes --rero G and --kappa K only")
        if k is None:
            raise ReconRiskError("--from rero takes --kappa K in [1/2, 1) (the weight of the likelier point)")
        eps, delta = dp_from_two_point_rero(k, rero)
        payload = {"source": "rero", "kappa": k, "rero": {"upper": rero},
                   "dp": {"epsilon": eps, "delta": delta,
                          "formula": "epsilon = log(kappa/(1-kappa)), delta = (rero-kappa)/(1-kappa) (Balle, Cherubin & Hayes 2022, Thm 5)"}}
        if json_out:
            print_json(payload)
            return
        print_table(f"(η, {rero:g})-ReRo against two-point priors with κ = {k:g} ⇒ DP (Balle, Cherubin & Hayes 2022, Thm 5)",
                    ["quantity", "value"], [["epsilon", eps], ["delta", delta]])
        return
    if rero is not None:
        raise ReconRiskError("--rero belongs to --from rero")
    eps_arg = None if not epsilon else (epsilon[0] if source == "dp" and len(epsilon) == 1 else list(epsilon))
    if source == "dp" and isinstance(eps_arg, list):
        raise ReconRiskError(f"--from dp takes one --epsilon; found {len(eps_arg)}")
    ord_arg = None if not order else list(order)
    out = rero_from_guarantee(source, k, log_kappa=log_kappa, epsilon=eps_arg, order=ord_arg, rho=rho)
    payload = {"source": source, "kappa": out["kappa"], "log_kappa": out["log_kappa"], "prior_size": prior_size,
               "epsilon": out.get("epsilon"), "order": out.get("order"), "rho": out.get("rho"),
               "rero": {"method": source, "lower": None, "upper": out["upper"], "formula": out["formula"]}}
    if json_out:
        print_json(payload)
        return
    rows = [[k_, payload[k_]] for k_ in ("kappa", "log_kappa", "epsilon", "order", "rho") if payload[k_] is not None]
    rows.append(["rero upper", out["upper"]])
    rows.append(["formula", out["formula"]])
    print_table(f"ReRo bound from {source} (Balle, Cherubin & Hayes 2022)", ["quantity", "value"], rows)
