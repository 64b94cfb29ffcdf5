"""Curves of the ReRo bound: γ against ε for several priors, and γ against q at fixed ε (seed 000 Fig. 5).

For each ε the noise multiplier is calibrated with the PLD accountant
(add/remove, Poisson sampling; spec_000 §5.5), the certified PLD bracket's
upper end is plotted as the bound, and the Rényi-DP bound (seed 000 Eq. 2 /
seed 002 Thm 2) of the same σ is drawn dashed beside it.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import _validate as v
from .._io import pyplot, save_figure
from ..accounting import noise_multiplier_for_epsilon
from ..bounds.conversions import rdp_rero_bound
from ..bounds.rero import pld_bracket
from ..errors import ReconRiskError
from ..release import Release


def rero_curves(
    *,
    steps: int = 100,
    sample_rate: float = 1.0,
    prior_sizes: Sequence[int] = (2, 10, 100, 1024),
    epsilon_range: tuple[float, float] = (0.25, 64.0),
    points: int = 12,
    fixed_epsilon: float = 4.0,
    sample_rates: Sequence[float] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.99),
    delta: float = 1e-5,
    out: Path | str = "reconrisk-out",
    progress: bool = True,
) -> dict:
    """Compute both panels, write ``curve.csv``, ``curve.png`` and ``curve.svg`` into ``out``."""
    steps = v.integer("steps", steps, minimum=1)
    sample_rate = v.sample_rate("sample_rate", sample_rate)
    sizes = [v.integer("prior_size", n, minimum=2) for n in prior_sizes]
    if not sizes:
        raise ReconRiskError("prior_size must be given at least once")
    e_lo = v.positive("epsilon_min", epsilon_range[0])
    e_hi = v.positive("epsilon_max", epsilon_range[1])
    if e_hi <= e_lo:
        raise ReconRiskError(f"epsilon_max must be > epsilon_min; found {e_hi} <= {e_lo}")
    points = v.integer("points", points, minimum=2, maximum=200)
    fixed_epsilon = v.positive("fixed_epsilon", fixed_epsilon)
    qs = [v.sample_rate("sample_rates", q) for q in sample_rates]
    delta = v.probability_open("delta", delta)
    out = Path(out)
    kappas = np.array([1.0 / n for n in sizes])
    eps_grid = np.geomspace(e_lo, e_hi, points)

    rows: list[dict] = []
    jobs = [("epsilon", float(e), sample_rate) for e in eps_grid] + [("sample_rate", fixed_epsilon, q) for q in qs]

    def run(job):
        panel, eps, q = job
        sigma = noise_multiplier_for_epsilon(eps, q, steps, delta)
        rel = Release(sigma, q, steps)
        lo, up, det = pld_bracket(rel, kappas)
        rdp = rdp_rero_bound(rel.segments, kappas)
        for n, k, a, b, r in zip(sizes, kappas, lo, up, rdp):
            rows.append(
                dict(panel=panel, epsilon=eps, sample_rate=q, steps=steps, noise_multiplier=sigma, prior_size=n,
                     kappa=k, rero_lower=a, rero_upper=b, rero_width=b - a,
                     rero_converged=bool(b - a <= det["target_rel_width"] * b), rdp_bound=r)
            )

    if progress:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("calibrating and bounding", total=len(jobs))
            for job in jobs:
                run(job)
                bar.advance(task)
    else:
        for job in jobs:
            run(job)

    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "curve.csv"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    png, svg = _plot(rows, sizes, steps, sample_rate, fixed_epsilon, delta, out)
    return {"rows": rows, "files": {"csv": str(csv_path), "png": str(png), "svg": str(svg)}}


def _plot(rows, sizes, steps, sample_rate, fixed_epsilon, delta, out: Path):
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, n in enumerate(sizes):
        c = colors[i % len(colors)]
        a = [r for r in rows if r["panel"] == "epsilon" and r["prior_size"] == n]
        e = [r["epsilon"] for r in a]
        ax1.plot(e, [r["rero_upper"] for r in a], "-o", ms=3, color=c, label=f"ReRo bound, n={n}")
        ax1.plot(e, [r["rdp_bound"] for r in a], "--", color=c, alpha=0.7, label=f"RDP bound, n={n}")
        b = [r for r in rows if r["panel"] == "sample_rate" and r["prior_size"] == n]
        qv = [r["sample_rate"] for r in b]
        ax2.plot(qv, [r["rero_upper"] for r in b], "-o", ms=3, color=c, label=f"ReRo bound, n={n}")
        ax2.plot(qv, [r["rdp_bound"] for r in b], "--", color=c, alpha=0.7, label=f"RDP bound, n={n}")
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
