"""Audit report: ``results.json`` and the bound-against-attack plot (Hayes, Mahloujifar & Balle 2023, Fig. 2 style).

The plot draws the certified ReRo bound as a curve over ε (σ calibrated at
each ε with the same accountant as the audit; computed by
:func:`reconrisk._src.experiments.curves.bound_curve`), the prior baseline κ,
each attack's success rate with its Clopper–Pearson interval, and the band in
which ReRo must lie: from the headline attack's one-sided 95 % lower end
(:mod:`reconrisk._src.audit.empirical`) up to the certified bound. Matplotlib runs
on the Agg backend (through :mod:`reconrisk._src._io`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .._io import jsonable, pyplot, save_figure, write_json  # noqa: F401  (jsonable, write_json re-exported)
from ..experiments.curves import bound_curve


def audit_plot(results: Sequence, out_dir: str | Path, *, curve=True) -> list[Path]:
    """Write ``audit.png`` and ``audit.svg``; returns their paths.

    ``curve``: the certified bound curve ``(ε grid, upper bounds)`` as
    computed by :func:`reconrisk._src.experiments.curves.bound_curve`; ``True``
    asks for it to be computed here from the results' setting, ``False`` or
    ``None`` draws no curve.
    """
    plt = pyplot()
    s0 = results[0].setting
    eps = np.array([r.epsilon for r in results])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    if curve is True:
        curve = bound_curve(eps, s0.sample_rate, s0.steps, s0.prior_size, s0.delta)
    if curve is not None and curve is not False:
        grid, ups = curve
        ax.plot(grid, ups, color="black", lw=1.8, label="certified ReRo bound (Cor. 4)")
    ax.scatter(eps, [r.certificate.rero.upper for r in results], color="black", marker="_", s=120, zorder=3,
               label="certified bound at each audited ε")
    # the two-sided answer: ReRo lies between what the headline attack refutes and what the release certifies
    # (one band per audited ε: between two audited ε neither end is known, so nothing is interpolated)
    lows = np.array([r.empirical().rero.lower for r in results])
    ups = np.array([r.certificate.rero.upper for r in results])
    ax.vlines(eps, lows, np.maximum(ups, lows), color="tab:green", alpha=0.3, lw=9, zorder=1,
              label=f"ReRo lies here: empirical lower ({results[0].primary}, one-sided 95%) to certified upper")
    ax.scatter(eps, lows, color="tab:green", marker=6, s=40, zorder=3)
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
    return save_figure(fig, out_dir, "audit", dpi=150)


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

