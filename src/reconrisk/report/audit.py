"""Audit report: ``results.json`` and the bound-against-attack plot (seed 000, Fig. 2 style).

The plot draws the certified ReRo bound as a curve over ε (σ calibrated at
each ε with the same accountant as the audit), the prior baseline κ, and each
attack's success rate with its Clopper–Pearson interval. Matplotlib runs on
the Agg backend and is imported only here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .._io import jsonable, write_json  # noqa: F401  (re-exported for callers)


def bound_curve(
    epsilons: Sequence[float], sample_rate: float, steps: int, prior_size: int, delta: float = 1e-5, points: int = 16
):
    """(ε grid, certified upper bound) spanning the audited ε values."""
    from .. import accounting, rero_bound

    lo, hi = min(epsilons), max(epsilons)
    grid = np.geomspace(lo / 1.5, hi * 1.5, points if sample_rate == 1.0 else max(6, points // 2))
    grid = np.unique(np.concatenate([grid, np.asarray(epsilons, float)]))
    ups = []
    for eps in grid:
        sigma = accounting.noise_multiplier_for_epsilon(float(eps), sample_rate, steps, delta)
        ups.append(rero_bound(sigma, sample_rate, steps, prior_size=prior_size).upper)
    return grid, np.asarray(ups)


def audit_plot(results: Sequence, out_dir: str | Path, *, curve: bool = True) -> list[Path]:
    """Write ``audit.png`` and ``audit.svg``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    s0 = results[0].setting
    eps = np.array([r.epsilon for r in results])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    if curve and len(results) > 0:
        grid, ups = bound_curve(eps, s0.sample_rate, s0.steps, s0.prior_size, s0.delta)
        ax.plot(grid, ups, color="black", lw=1.8, label="certified ReRo bound (Cor. 4)")
    ax.scatter(eps, [r.rero_upper for r in results], color="black", marker="_", s=120, zorder=3)
    ax.axhline(1.0 / s0.prior_size, color="grey", ls=":", lw=1, label=f"prior baseline κ = 1/{s0.prior_size}")
    names = list(results[0].rates)
    markers = ["o", "s", "^", "D", "v"]
    width = 0.06 * max(len(names) - 1, 1)
    for j, name in enumerate(names):
        shift = np.exp((j - (len(names) - 1) / 2) * width / max(len(names) - 1, 1)) if len(names) > 1 else 1.0
        rates = np.array([r.rates[name].rate for r in results])
        lows = np.array([r.rates[name].ci[0] for r in results])
        highs = np.array([r.rates[name].ci[1] for r in results])
        ax.errorbar(eps * shift, rates, yerr=[rates - lows, highs - rates], fmt=markers[j % len(markers)],
                    capsize=3, ms=5, label=f"{_label(name)} (95% CI)")
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("ε (δ = %g)" % s0.delta)
    ax.set_ylabel("reconstruction success probability")
    ax.set_title(
        f"q = {s0.sample_rate:g}, T = {s0.steps}, C = {s0.clip_norm:g}, prior size {s0.prior_size}, "
        f"{results[0].rates[names[0]].trials} trials",
        fontsize=9,
    )
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    paths = [out / "audit.png", out / "audit.svg"]
    fig.savefig(paths[0], dpi=150)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


_LABELS = {
    "alg2": "prior-aware attack, Alg. 2",
    "alg3": "prior-aware attack, Alg. 3 (top ⌈qT⌉)",
    "loglik": "log-likelihood attack (App. G)",
    "no_deduction": "Alg. 2 without deduction (App. E)",
    "gradient_inversion": "gradient inversion + nearest neighbour",
}


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def audit_payload(results: Sequence, *, dataset: dict, config: dict) -> dict:
    """The ``results.json`` document."""
    return {"dataset": dataset, "config": config, "results": [r.to_dict() for r in results]}


def fmt_rate(rate) -> str:
    low, high = rate.ci
    return f"{rate.rate:.3f} [{low:.3f}, {high:.3f}]"

