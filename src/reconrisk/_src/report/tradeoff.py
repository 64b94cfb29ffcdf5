"""Drawing of the certified trade-off curve (``reconrisk tradeoff --out DIR``).

ROC style: the x axis is the attack's false-positive rate α, the y axis its
true-positive rate 1 − f(α). Drawn: the certified bracket (shaded between
lower and upper; the upper end is the bound), the GDP(μ) curve (exact for
q = 1, the central-limit approximation otherwise — labelled as such) and the
RDP-derived curve (a valid but looser bound). The computation lives in
:mod:`reconrisk._src.measures.tradeoff`; this module only draws and writes files.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .._io import pyplot, save_figure, write_json
from ..measures.tradeoff import TradeOff, gdp_curve, rdp_curve
from ..release import Release


def write_tradeoff(release: Release, curve: TradeOff, out: Path | str, *, log_axes: bool = False) -> dict:
    """Write ``tradeoff.csv``, ``tradeoff.json``, ``tradeoff.png`` and ``tradeoff.svg`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    a = curve.alpha
    gdp_beta, mu, gdp_exact = gdp_curve(release, a)
    rdp_beta = rdp_curve(release, a)
    csv_path = out / "tradeoff.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["alpha", "beta_lower", "beta_upper", "tpr_lower", "tpr_upper", "gdp_beta", "rdp_beta"])
        for row in zip(a, curve.beta.lower, curve.beta.upper, curve.power.lower, curve.power.upper, gdp_beta, rdp_beta):
            w.writerow([f"{x:.17g}" for x in row])
    payload = curve.to_dict()
    payload["gdp"] = {"mu": mu, "exact": gdp_exact, "beta": gdp_beta.tolist()}
    payload["rdp"] = {"beta": rdp_beta.tolist()}
    json_path = write_json(payload, out, "tradeoff.json")

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    ax.fill_between(a, curve.power.lower, curve.power.upper, color="C0", alpha=0.35, lw=0)
    ax.plot(a, curve.power.upper, color="C0", lw=1.8, label=f"certified bound ({curve.method})")
    gdp_label = f"GDP μ={mu:.3g}" + ("" if gdp_exact else " (CLT approx.)")
    ax.plot(a, 1 - gdp_beta, color="C1", ls="--", lw=1.2, label=gdp_label)
    ax.plot(a, 1 - rdp_beta, color="C2", ls=":", lw=1.2, label="RDP-derived bound")
    ax.plot(a, a, color="0.6", lw=0.8, label="random guess")
    if log_axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.set_xlim(0, float(a.max()))
        ax.set_ylim(0, 1)
    ax.set_xlabel("attack false-positive rate α")
    ax.set_ylabel("attack true-positive rate 1 − f(α)")
    ax.set_title(_title(release), fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    figs = save_figure(fig, out, "tradeoff")
    return {"csv": str(csv_path), "json": str(json_path), "png": str(figs[0]), "svg": str(figs[1])}


def _title(release: Release) -> str:
    if release.homogeneous:
        return f"Trade-off curve: σ={release.noise_multiplier:g}, q={release.sample_rate:g}, T={release.steps}"
    return f"Trade-off curve: {len(release.segments)} segments, T={release.steps}"
