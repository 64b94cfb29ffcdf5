"""``reconrisk convert``: a DP guarantee → the ReRo bound γ and the trade-off curve; ReRo against two-point priors → (ε, δ)-DP.

By default the tightest conversion of the guarantee alone (both branches of the (ε, δ) trade-off curve; the
optimal RDP → trade-off conversion of Riess et al. 2026 for RDP and zCDP); ``--conversion balle2022`` gives
Balle, Cherubin & Hayes 2022's Thm 2, Cor. 3, Cor. 4. Theory only: no JAX.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
import typer

from .._io import parse_text
from ..errors import ReconRiskError
from . import app
from ._common import print_json, print_table


def curve_pairs(source: str, curve: str | None, order, epsilon):
    """(orders, epsilons) of an RDP curve given as ``--curve`` (then only with ``--from rdp``, and not also as
    ``--order``/``--epsilon`` pairs), or the pairs as given."""
    from ..errors import ReconRiskError

    if curve is None:
        return order, epsilon
    if source != "rdp":
        raise ReconRiskError("--curve belongs to --from rdp")
    if epsilon or order:
        raise ReconRiskError("give the RDP curve either as --curve or as --epsilon/--order pairs, not both")
    return parse_curve(curve)


def parse_curve(text: str) -> tuple[list[float], list[float]]:
    """An RDP curve from ``"1.5:0.3,2:0.5"`` (order:epsilon pairs, comma or space separated) or a file of such pairs.

    A file holds one pair per line as ``order epsilon``, ``order,epsilon`` or ``order:epsilon`` (``#`` starts a
    comment; a header line of words is skipped), or JSON ``{"orders": [...], "epsilons": [...]}``.
    """

    from ..errors import ReconRiskError

    s = str(text).strip()
    path = Path(s)
    if ":" not in s and not path.is_file():
        raise ReconRiskError(f"curve must be order:epsilon pairs such as '2:0.5,8:1.2' or a file; found {text!r}")
    if path.is_file():
        try:
            body = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            raise ReconRiskError(f"curve file {s!r} cannot be read as text: {exc}") from None
        if body.lstrip().startswith("{"):
            d = parse_text(body, "json", f"curve file {s!r}")
            try:
                return [float(x) for x in d["orders"]], [float(x) for x in d["epsilons"]]
            except (ValueError, KeyError, TypeError) as exc:
                raise ReconRiskError(f"curve file {s!r}: JSON needs numeric 'orders' and 'epsilons' lists ({exc})") from None
        items = []
        for line in body.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                items.append(line.replace(",", " ").replace(":", " ").split())
    else:
        items = [tok.split(":") for tok in s.replace(",", " ").split()]
    orders, eps = [], []
    for n, it in enumerate(items):
        try:
            o, e = (float(x) for x in it)
        except ValueError:
            if n == 0 and path.is_file():
                continue  # a header
            raise ReconRiskError(f"curve must hold order:epsilon pairs of numbers; found {':'.join(it)!r}") from None
        orders.append(o)
        eps.append(e)
    if not orders:
        raise ReconRiskError(f"curve holds no order:epsilon pair; found {text!r}")
    return orders, eps


@app.command("convert")
def convert_cmd(
    source: str = typer.Option(..., "--from", help="dp | rdp | zcdp (a DP guarantee) or rero (a ReRo guarantee, Balle et al. Thm 5)."),
    epsilon: Optional[List[float]] = typer.Option(None, "--epsilon", "-e", help="ε of (ε, δ)-DP, or of (α, ε)-RDP (repeat with --order for a curve)."),
    delta: Optional[List[float]] = typer.Option(None, "--delta", help="δ of (ε, δ)-DP (default 0: pure ε-DP; one per --epsilon, or one for all)."),
    order: Optional[List[float]] = typer.Option(None, "--order", "-a", help="Rényi order ≥ 1 of each --epsilon (rdp; 1 is the KL, inf pure DP)."),
    curve: Optional[str] = typer.Option(None, "--curve", help="RDP curve: order:epsilon pairs ('1.5:0.3,2:0.5') or a file of pairs (rdp)."),
    rho: Optional[float] = typer.Option(None, "--rho", help="ρ of ρ-zCDP."),
    rero: Optional[float] = typer.Option(None, "--rero", help="γ of an (η, γ)-ReRo guarantee against two-point priors (--from rero)."),
    kappa: Optional[float] = typer.Option(None, "--kappa", help="Baseline success probability κ in (0, 1)."),
    prior_size: Optional[int] = typer.Option(None, "--prior-size", "-n", help="Uniform prior over n candidates (κ = 1/n)."),
    log_kappa: Optional[float] = typer.Option(None, "--log-kappa", help="log κ (< 0) for priors whose κ underflows."),
    alpha: Optional[List[float]] = typer.Option(None, "--alpha", help="Also print the trade-off curve f(α) at this type-I error (repeatable)."),
    conversion: str = typer.Option("optimal", "--conversion", help="optimal (tightest from the guarantee alone) | balle2022 (the paper's)."),
    one_sided: bool = typer.Option(False, "--one-sided", help="rdp/zcdp: the curve bounds D(P||Q) only, not both directions."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Convert an (ε, δ)-DP, RDP or zCDP guarantee into a reconstruction-robustness bound and trade-off curve."""
    from .. import _validate as v
    from ..measures.conversions import CONVERSIONS, SOURCES, dp_from_two_point_rero, rero_from_guarantee
    from ..errors import ReconRiskError
    from ..priors import resolve_kappa

    source = v.choice("from", source, SOURCES + ("rero",))
    conversion = v.choice("conversion", conversion, CONVERSIONS)
    given = [a is not None for a in (kappa, prior_size, log_kappa)]
    if sum(given) > 1 or (sum(given) == 0 and not alpha):
        raise ReconRiskError("give exactly one of --kappa K, --prior-size N or --log-kappa L (or only --alpha A)")
    k = resolve_kappa(kappa, prior_size) if (kappa is not None or prior_size is not None) else None
    if source == "rero":
        if rero is None or epsilon or order or delta or curve or alpha or rho is not None:
            raise ReconRiskError("--from rero takes --rero G and --kappa K only")
        if k is None:
            raise ReconRiskError("--from rero takes --kappa K in [1/2, 1) (the weight of the likelier point)")
        eps, dl = dp_from_two_point_rero(k, rero)
        payload = {"source": "rero", "kappa": k, "rero": {"upper": rero},
                   "dp": {"epsilon": eps, "delta": dl,
                          "formula": "epsilon = log(kappa/(1-kappa)), delta = (rero-kappa)/(1-kappa) "
                                     "(Balle, Cherubin & Hayes 2022, Thm 5)"}}
        if json_out:
            print_json(payload)
            return
        print_table(f"(η, {rero:g})-ReRo against two-point priors with κ = {k:g} ⇒ DP (Balle, Cherubin & Hayes 2022, Thm 5)",
                    ["quantity", "value"], [["epsilon", eps], ["delta", dl]])
        return
    if rero is not None:
        raise ReconRiskError("--rero belongs to --from rero")
    order, epsilon = curve_pairs(source, curve, order, epsilon)
    if source != "dp" and delta:
        raise ReconRiskError("--delta belongs to --from dp")
    if one_sided and (source == "dp" or conversion != "optimal"):
        raise ReconRiskError("--one-sided belongs to the optimal conversion of --from rdp or zcdp ((epsilon, delta)-DP "
                             "holds in both directions by definition; Balle et al.'s conversions use one already)")
    eps_arg = None if not epsilon else (epsilon[0] if len(epsilon) == 1 else list(epsilon))
    del_arg = None if not delta else (delta[0] if len(delta) == 1 else list(delta))
    ord_arg = None if not order else list(order)
    guarantee = {"epsilon": eps_arg, "order": ord_arg, "rho": rho, "delta": del_arg}
    payload = {"source": source, "conversion": conversion, "prior_size": prior_size, **guarantee}
    rows = []
    if k is not None or log_kappa is not None:
        b = rero_from_guarantee(source, k, log_kappa=log_kappa, conversion=conversion, symmetric=not one_sided,
                                **guarantee)
        payload.update(kappa=b.details["kappa"], log_kappa=b.details["log_kappa"], rero=b.to_dict())
        rows += [["kappa", b.details["kappa"]], ["log_kappa", b.details["log_kappa"]], ["rero upper", b.upper],
                 ["method", b.method]]
        if b.details.get("order") is not None:
            rows.append(["order used", b.details["order"]])
        rows.append(["formula", b.formula])
    if alpha:
        t = _tradeoff(source, alpha, conversion, not one_sided, guarantee)
        payload["tradeoff"] = t
        rows += [[f"f({a:g})", f] for a, f in zip(t["alpha"], t["beta"])]
        if k is None:
            rows += [["method", t["method"]], ["formula", t["formula"]]]
    if json_out:
        print_json(payload)
        return
    print_table(f"ReRo bound and trade-off curve from {source} ({conversion} conversion)", ["quantity", "value"], rows)


def _tradeoff(source: str, alphas, conversion: str, symmetric: bool, g: dict) -> dict:
    """f(α) of the guarantee, ``beta`` (a lower bound on the true trade-off curve), with method and formula."""

    from ..measures.conversions import rero_from_guarantee

    if conversion == "optimal":
        from ..measures.fdp import tradeoff_dp
        from ..measures.rdp_tradeoff import tradeoff_rdp_curve, tradeoff_zcdp
        from ..errors import ReconRiskError

        if source == "dp":
            if g["epsilon"] is None:
                raise ReconRiskError("dp needs epsilon (>= 0)")
            t = tradeoff_dp(alphas, g["epsilon"], 0.0 if g["delta"] is None else g["delta"])
        elif source == "rdp":
            if g["epsilon"] is None or g["order"] is None:
                raise ReconRiskError("rdp needs epsilon and order (or --curve)")
            t = tradeoff_rdp_curve(alphas, np.atleast_1d(g["order"]), np.atleast_1d(g["epsilon"]), symmetric=symmetric)
        else:
            if g["rho"] is None:
                raise ReconRiskError("zcdp needs rho")
            t = tradeoff_zcdp(alphas, g["rho"], symmetric=symmetric)
        return {"alpha": t.alpha.tolist(), "beta": t.beta.lower.tolist(), "power": t.power.upper.tolist(),
                "method": t.method, "formula": t.details["formula"]}
    # the paper's conversions: f(α) = 1 − (their ReRo bound at κ = α)
    bs = [rero_from_guarantee(source, a, conversion="balle2022", **g) for a in alphas]
    return {"alpha": [float(a) for a in alphas], "beta": [1.0 - b.upper for b in bs], "power": [b.upper for b in bs],
            "method": bs[0].method, "formula": "f(alpha) = 1 - (the ReRo bound at kappa = alpha): " + bs[0].formula}
