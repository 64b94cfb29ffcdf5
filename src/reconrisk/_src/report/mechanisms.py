"""Figures and table of the Gaussian-versus-VMF comparison (Biswas et al. 2024, Figs 1, 4, 5); drawing only.

The numbers come from :func:`reconrisk._src.experiments.mechanisms.compare_mechanisms`.
"""

from __future__ import annotations

from pathlib import Path

from .._io import pyplot, save_figure, write_json

_STYLE = {"gaussian": ("tab:blue", "o", "Gaussian"), "vmf": ("tab:red", "s", "VMF"),
          "gaussian@capacity": ("tab:green", "^", "Gaussian, capacity of the VMF")}


def _series(points, mech, key):
    pts = sorted((p for p in points if p.mechanism == mech), key=lambda p: p.epsilon)
    return pts, [getattr(p, key) for p in pts]


def plot_comparison(result, out_dir: str | Path) -> list[Path]:
    """Write ``results.json`` and three figures: accuracy & MSE vs ε (Fig 1), MSE vs log capacity (Fig 4),
    ε vs log capacity (Fig 5). Returns the written paths."""
    plt = pyplot()
    paths = [write_json(result.to_dict(), out_dir)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for mech in ("gaussian", "vmf"):  # the ε-matched runs only
        color, marker, label = _STYLE[mech]
        pts, acc = _series(result.points, mech, "accuracy")
        eps = [p.epsilon for p in pts]
        axes[0].plot(eps, acc, marker=marker, color=color, label=label)
        axes[1].errorbar(eps, [p.mse for p in pts], yerr=[p.mse_se for p in pts], marker=marker, color=color,
                         label=label, capsize=3)
    axes[0].axhline(result.baseline["accuracy"], color="grey", ls="--", label="clip only")
    axes[1].axhline(result.baseline["mse"], color="grey", ls="--", label="clip only")
    for ax, ylab in zip(axes, ("test accuracy", "reconstruction MSE (IGA)")):
        ax.set_xscale("log")
        ax.set_xlabel("ε (matched)")
        ax.set_ylabel(ylab)
        ax.legend()
    paths += save_figure(fig, out_dir, "accuracy_mse_vs_epsilon")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for mech, (color, marker, label) in _STYLE.items():
        pts, lc = _series(result.points, mech, "log_capacity")
        axes[0].errorbar(lc, [p.mse for p in pts], yerr=[p.mse_se for p in pts], marker=marker, color=color,
                         label=label, capsize=3, ls="none")
        if mech != "gaussian@capacity":
            axes[1].plot(lc, [p.epsilon for p in pts], marker=marker, color=color, label=label, ls="none")
    axes[0].set_xlabel("log Bayes' capacity (nats)")
    axes[0].set_ylabel("reconstruction MSE (IGA)")
    axes[1].set_xlabel("log Bayes' capacity (nats)")
    axes[1].set_ylabel("ε")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xscale("log")
        ax.legend()
    paths += save_figure(fig, out_dir, "mse_and_epsilon_vs_capacity")
    return paths


def table_rows(result) -> list[list]:
    rows = [["clip only", "", "", "", result.baseline["accuracy"], result.baseline["mse"], result.baseline["ssim"]]]
    for p in sorted(result.points, key=lambda p: (p.epsilon, p.mechanism)):
        rows.append([p.mechanism, p.epsilon, p.parameter, p.log_capacity, p.accuracy, p.mse, p.ssim])
    return rows


TABLE_COLUMNS = ["mechanism", "ε", "σ or κ", "log capacity", "accuracy", "MSE", "SSIM"]
