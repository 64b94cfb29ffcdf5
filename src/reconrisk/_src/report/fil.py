"""Figures of the MSE / FIL analysis (Guo, Karrer, Chaudhuri & van der Maaten 2022, Figs. 2–5): matplotlib with the Agg backend, PNG + SVG.

* :func:`plot_dfil_histogram` — Fig. 2: per-example dFIL bounds ``1/η̄²`` as a
  histogram on log10 axes, the Theorem 1 RDP bound as a vertical dashed line
  and the perfect-privacy threshold MSE = 1 dotted.
* :func:`plot_bound_vs_attack` — Fig. 3: predicted bound against realised
  GLM-attack MSE (log–log), the line y = x, violating examples in red.
* :func:`plot_leakage_examples` — Fig. 4: the examples with the highest and
  lowest η̄², originals above their (trial-mean, clamped) reconstructions.
* :func:`plot_privacy_accuracy` — Fig. 5: RDP, max-dFIL and median-dFIL bounds
  against test accuracy with their Pareto frontiers and the MSE = 1 line.

* :func:`logreg_figures` — Figs. 2–4 of a :class:`~reconrisk._src.experiments.fil.LogRegExperiment`.
* :func:`grid_figures` — Fig. 5 and ``fig5_grid.json`` of a :class:`~reconrisk._src.experiments.fil.GridResult`.

Each function returns the list of files written. Nothing here computes: the
experiments in :mod:`reconrisk._src.experiments.fil` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .._io import pyplot, save_figure, write_json
from ..errors import ReconRiskError


def _plt():
    return pyplot()


def _save(fig, out_dir, stem: str) -> list[Path]:
    return save_figure(fig, out_dir, stem)


def _finite_pos(a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return a[np.isfinite(a) & (a > 0)]


def plot_dfil_histogram(bounds, rdp_bound: float, out_dir, *, stem: str = "fig2_dfil_histogram", title: str = "",
                        bins: int = 60) -> list[Path]:
    """Fig. 2: histogram of per-example dFIL bounds with the RDP bound beside it."""
    b = _finite_pos(bounds)
    if b.size == 0:
        raise ReconRiskError("bounds must hold at least one finite positive value")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    lb = np.log10(b)
    lo = min(lb.min(), 0.0)
    rdp_ok = np.isfinite(rdp_bound) and rdp_bound > 0
    if rdp_ok:
        lo = min(lo, np.log10(rdp_bound))
    hi = max(lb.max(), 0.0) + 0.1
    ax.hist(lb, bins=np.linspace(lo - 0.1, hi, bins + 1), color="tab:orange", alpha=0.85, label="dFIL bound 1/η̄² (per example)")
    if rdp_ok:
        ax.axvline(np.log10(rdp_bound), color="tab:blue", ls="--", lw=1.8, label=f"RDP bound (Thm 1) = {rdp_bound:.3g}")
    else:
        ax.plot([], [], color="tab:blue", ls="--", label=f"RDP bound (Thm 1) = {rdp_bound:.3g} (off scale)")
    ax.axvline(0.0, color="k", ls=":", lw=1.2, label="MSE = 1 (perfect privacy)")
    ax.set_xlabel("log10 MSE lower bound")
    ax.set_ylabel("examples")
    ax.set_title(title or "Per-example dFIL bounds vs the RDP bound")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, out_dir, stem)


def plot_bound_vs_attack(bounds, mse, violating, out_dir, *, stem: str = "fig3_bound_vs_attack", title: str = "") -> list[Path]:
    """Fig. 3: predicted bound (x) against realised attack MSE (y); red = below the bound."""
    b = np.asarray(bounds, dtype=float)
    m = np.asarray(mse, dtype=float)
    if b.shape != m.shape:
        raise ReconRiskError(f"bounds and mse must have the same shape; found {b.shape} and {m.shape}")
    ok = np.isfinite(b) & np.isfinite(m) & (b > 0) & (m > 0)
    if not ok.any():
        raise ReconRiskError("no example has a finite positive bound and MSE")
    bad = np.zeros(b.shape, bool)
    bad[np.asarray(violating, dtype=int)] = True
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.scatter(b[ok & ~bad], m[ok & ~bad], s=9, c="tab:blue", alpha=0.7, label="respects the bound")
    if (ok & bad).any():
        ax.scatter(b[ok & bad], m[ok & bad], s=14, c="tab:red", label=f"violates ({int((ok & bad).sum())})")
    lo = min(b[ok].min(), m[ok].min()) / 2
    hi = max(b[ok].max(), m[ok].max()) * 2
    ax.plot([lo, hi], [lo, hi], "k-", lw=1, label="MSE = bound")
    ax.axvline(1.0, color="k", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("dFIL bound 1/η̄²")
    ax.set_ylabel("GLM attack MSE (mean over trials)")
    ax.set_title(title or "Predicted bound vs realised attack MSE")
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, out_dir, stem)


def plot_leakage_examples(x, recon, fil, image_shape, out_dir, *, k: int = 8, stem: str = "fig4_leakage_examples",
                          title: str = "") -> list[Path]:
    """Fig. 4: the k highest- and k lowest-η̄² examples (originals; reconstructions clamped to [0, 1])."""
    x = np.asarray(x, dtype=float)
    fil = np.asarray(fil, dtype=float)
    h, w, c = image_shape
    order = np.argsort(-fil)
    k = int(min(k, max(1, x.shape[0] // 2)))
    groups = [("highest η̄²", order[:k]), ("lowest η̄²", order[::-1][:k])]
    rows = 2 if recon is None else 4
    plt = _plt()
    fig, axes = plt.subplots(rows, k, figsize=(1.1 * k, 1.25 * rows + 0.4), squeeze=False)
    r = 0
    for label, idx in groups:
        pics = [("original", x)] + ([] if recon is None else [("reconstruction", np.clip(np.asarray(recon, dtype=float), 0, 1))])
        for kind, arr in pics:
            for j, i in enumerate(idx):
                ax = axes[r, j]
                img = arr[i].reshape(h, w, c)
                ax.imshow(img[..., 0] if c == 1 else img, cmap="gray" if c == 1 else None, vmin=0, vmax=1)
                ax.set_xticks([])
                ax.set_yticks([])
                if kind == "original":
                    ax.set_title(f"η̄²={fil[i]:.2g}", fontsize=6)
            axes[r, 0].set_ylabel(f"{label}\n{kind}", fontsize=7)
            r += 1
    fig.suptitle(title or "Highest- and lowest-leakage examples", fontsize=9)
    return _save(fig, out_dir, stem)


def pareto_frontier(acc, bound) -> np.ndarray:
    """Indices of the points not dominated in (higher accuracy, higher bound), sorted by accuracy."""
    acc = np.asarray(acc, dtype=float)
    bound = np.asarray(bound, dtype=float)
    ok = np.flatnonzero(np.isfinite(acc) & np.isfinite(bound))
    front = []
    best = -np.inf
    for i in ok[np.lexsort((-bound[ok], -acc[ok]))]:  # accuracy descending, bound descending
        if bound[i] > best:
            front.append(i)
            best = bound[i]
    return np.array(front[::-1], dtype=int)


def plot_privacy_accuracy(rows: Sequence[dict], out_dir, *, stem: str = "fig5_privacy_accuracy", title: str = "") -> list[Path]:
    """Fig. 5: per configuration, the RDP, max-dFIL and median-dFIL MSE bounds against test accuracy.

    ``rows``: dicts with ``test_accuracy``, ``rdp_mse_bound``, ``max_dfil_bound``, ``median_dfil_bound``.
    """
    if not rows:
        raise ReconRiskError("rows must hold at least one configuration")
    acc = np.array([r["test_accuracy"] for r in rows], dtype=float)
    series = [("rdp_mse_bound", "RDP (Thm 1)", "tab:blue"), ("max_dfil_bound", "max-dFIL", "tab:red"),
              ("median_dfil_bound", "median-dFIL", "tab:orange")]
    vals = np.concatenate([np.array([r[k] for r in rows], dtype=float) for k, _, _ in series])
    vals = vals[np.isfinite(vals) & (vals > 0)]
    floor = max(vals.min() / 3, 1e-8) if vals.size else 1e-8
    top = max(vals.max() * 3, 3.0) if vals.size else 3.0
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, label, color in series:
        b = np.array([r[key] for r in rows], dtype=float)
        low = np.isfinite(b) & (b < floor)
        shown = np.where(low, floor, b)
        ax.scatter(acc[~low], shown[~low], s=16, c=color, label=label, alpha=0.8)
        if low.any():  # off the axis: drawn at the floor as ▼
            ax.scatter(acc[low], shown[low], s=22, c=color, marker="v", alpha=0.8,
                       label=f"{label} < {floor:.0e} ({int(low.sum())})")
        f = pareto_frontier(acc, b)
        if f.size > 1:
            ax.plot(acc[f], shown[f], color=color, ls="--", lw=1)
    ax.axhline(1.0, color="k", ls=":", lw=1.2, label="perfect privacy (MSE = 1)")
    ax.set_yscale("log")
    ax.set_ylim(floor / 1.5, top)
    ax.set_xlabel("test accuracy")
    ax.set_ylabel("MSE lower bound")
    ax.set_title(title or "Privacy–accuracy trade-off")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, out_dir, stem)


def logreg_figures(res, out_dir) -> list[Path]:
    """Figs. 2–4 of a logistic-regression experiment (Fig. 3 only when the attack ran)."""
    tag = f"λ={res.lam:g}, σ={res.noise_std:g}, n={res.n}"
    paths = plot_dfil_histogram(res.bounds, res.rdp_mse.lower, out_dir,
                                title=f"Digits 0/1 logistic regression ({tag}; ε={res.rdp_epsilon:.4g}, {res.formula})")
    if res.violations is not None:
        paths += plot_bound_vs_attack(res.bounds, res.attack_mse, res.violations.index, out_dir,
                                      title=f"GLM attack vs dFIL bound ({tag})")
    paths += plot_leakage_examples(res.x, res.mean_reconstruction, res.eta_bar_sq, res.image_shape, out_dir,
                                   k=res.top_k, title=f"Highest/lowest dFIL ({tag})")
    return paths


def grid_figures(res, out_dir) -> list[Path]:
    """Fig. 5 of a DP-SGD grid and its rows as ``fig5_grid.json``."""
    rows = list(res.rows)
    paths = plot_privacy_accuracy(rows, out_dir, title=f"Digits, {res.model}: MSE bounds vs test accuracy")
    paths.append(write_json({"model": res.model, "rows": rows}, out_dir, "fig5_grid.json"))
    return paths
