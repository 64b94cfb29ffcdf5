"""Drawing the ReRo curves: γ against ε for several priors, and γ against q at fixed ε (Hayes, Mahloujifar & Balle 2023, Fig. 5).

The rows come from :func:`reconrisk._src.experiments.curves.rero_curves` (σ
calibrated per ε with the PLD accountant, the certified PLD bracket's upper
end plotted as the bound, the Rényi-DP bound of the same σ dashed beside it).
This module only writes ``curve.csv``, ``curve.png`` and ``curve.svg``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

from .._io import pyplot, save_figure
from ..errors import ReconRiskError

#: Columns of ``curve.csv``: the JSON row flattened (``rero.lower`` → ``rero_lower``, ``baselines.rdp`` → ``baseline_rdp``).
CSV_COLUMNS = ("panel", "epsilon", "sample_rate", "steps", "noise_multiplier", "prior_size", "kappa",
               "rero_method", "rero_lower", "rero_upper", "baseline_rdp")


def flat_row(row: dict) -> dict:
    """One curve row as a flat CSV record."""
    out = {k: row[k] for k in CSV_COLUMNS[:7]}
    out.update(rero_method=row["rero"]["method"], rero_lower=row["rero"]["lower"], rero_upper=row["rero"]["upper"],
               baseline_rdp=row["baselines"]["rdp"])
    return out


def write_curves(rows: Sequence[dict], out: Path | str, *, delta: float, fixed_epsilon: float) -> dict:
    """Write ``curve.csv``, ``curve.png`` and ``curve.svg`` into ``out``; returns ``{"csv", "png", "svg"}`` paths."""
    if not rows:
        raise ReconRiskError("rows must hold at least one curve point; found none")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "curve.csv"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS))
        writer.writeheader()
        writer.writerows(flat_row(r) for r in rows)
    png, svg = _plot(rows, delta, fixed_epsilon, out)
    return {"csv": str(csv_path), "png": str(png), "svg": str(svg)}


def _plot(rows, delta, fixed_epsilon, out: Path):
    sizes = list(dict.fromkeys(r["prior_size"] for r in rows))
    steps = rows[0]["steps"]
    eps_rows = [r for r in rows if r["panel"] == "epsilon"]
    sample_rate = eps_rows[0]["sample_rate"] if eps_rows else float("nan")
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, n in enumerate(sizes):
        c = colors[i % len(colors)]
        a = [r for r in eps_rows if r["prior_size"] == n]
        e = [r["epsilon"] for r in a]
        ax1.plot(e, [r["rero"]["upper"] for r in a], "-o", ms=3, color=c, label=f"ReRo bound, n={n}")
        ax1.plot(e, [r["baselines"]["rdp"] for r in a], "--", color=c, alpha=0.7, label=f"RDP bound, n={n}")
        b = [r for r in rows if r["panel"] == "sample_rate" and r["prior_size"] == n]
        qv = [r["sample_rate"] for r in b]
        ax2.plot(qv, [r["rero"]["upper"] for r in b], "-o", ms=3, color=c, label=f"ReRo bound, n={n}")
        ax2.plot(qv, [r["baselines"]["rdp"] for r in b], "--", color=c, alpha=0.7, label=f"RDP bound, n={n}")
    ax1.set_xscale("log")
    ax1.set_xlabel(f"ε (δ = {delta:g})")
    ax1.set_ylabel("reconstruction success bound γ")
    ax1.set_title(f"γ against ε  (q = {sample_rate:g}, T = {steps})")
    ax1.set_ylim(0, 1.02)
    ax1.grid(alpha=0.3)
    ax2.set_xscale("log")
    ax2.set_xlabel("sample rate q")
    ax2.set_title(f"γ against q at ε = {fixed_epsilon:g}  (T = {steps})")
    ax2.set_ylim(0, 1.02)
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    png, svg = save_figure(fig, out, "curve")
    return png, svg
