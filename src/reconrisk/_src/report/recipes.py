"""Drawing and writing a paper reproduction: ``DIR/<recipe>/figure.png``, ``table.csv`` and ``result.json``.

Computation lives in :mod:`reconrisk._src.reproduce.recipes`; this module only
draws a :class:`~reconrisk._src.reproduce.recipes.RecipeResult` and writes it.
The generic drawing puts, per panel, our values against the row's ``x`` (with
their bracket / confidence interval as error bars) and the paper's values as
hollow black markers beside them. A recipe may name a dedicated drawing
(``Recipe.drawer``) that reuses an existing ``report/*`` figure; it then draws
from the result's ``artifacts``.
"""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

from .._io import atomic_path, pyplot, save_figure, write_json
from ..reproduce.recipes import TABLE_COLUMNS
from .analytic import figure_rero_curves, figure_success_vs_noise
from .fil import plot_dfil_histogram, plot_privacy_accuracy
from .mechanisms import plot_comparison


def _csv_value(x):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    return x


def write_table(result, path: Path) -> Path:
    """``table.csv``: one line per row, the paper's number beside ours (columns of ``TABLE_COLUMNS``)."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TABLE_COLUMNS)
        for r in result.rows:
            w.writerow([_csv_value(r.get(c)) for c in TABLE_COLUMNS])
    return Path(path)


def write_recipe(result, out_dir) -> dict:
    """Write ``figure.png`` (and ``.svg``), ``table.csv`` and ``result.json`` into ``out_dir/<recipe>``; returns paths."""
    folder = Path(out_dir) / result.recipe.name
    folder.mkdir(parents=True, exist_ok=True)
    draw = DRAWERS.get(result.recipe.drawer, _generic)
    figs = draw(result, folder)
    files = {"figure": str(folder / "figure.png"), "table": str(folder / "table.csv"),
             "result": str(folder / "result.json")}
    files.update({f"figure_{p.suffix[1:]}": str(p) for p in figs if p.suffix != ".png"})
    write_table(result, folder / "table.csv")
    payload = result.to_dict()
    payload["files"] = files
    write_json(payload, folder, "result.json")
    return files


# ----------------------------------------------------------------------------------------
# drawings
# ----------------------------------------------------------------------------------------
def _finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _generic(result, folder: Path) -> list[Path]:
    """Per panel: ours (line + error bars) against x, per series; the paper's values as hollow markers."""
    plt = pyplot()
    rows = [r for r in result.rows if _finite(r.get("x")) and _finite(r.get("ours"))]
    panels = list(dict.fromkeys(r["panel"] for r in rows)) or [""]
    axes_info = result.info.get("axes", {})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        prow = [r for r in rows if r["panel"] == panel]
        paper_labelled = False
        for s in dict.fromkeys(r["series"] for r in prow):
            sr = sorted((r for r in prow if r["series"] == s), key=lambda r: r["x"])
            xs = [r["x"] for r in sr]
            ys = [r["ours"] for r in sr]
            lo = [max(y - (r["ours_lower"] if _finite(r["ours_lower"]) else y), 0.0) for y, r in zip(ys, sr)]
            hi = [max((r["ours_upper"] if _finite(r["ours_upper"]) else y) - y, 0.0) for y, r in zip(ys, sr)]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="-o", ms=4, capsize=3, label=s)
            pr = [r for r in sr if _finite(r["paper"])]
            if pr:
                ax.plot([r["x"] for r in pr], [r["paper"] for r in pr], "o", mfc="none", mec="black", ms=9,
                        label=None if paper_labelled else "the paper's value")
                paper_labelled = True
        info = axes_info.get(panel, {})
        if info.get("xlog"):
            ax.set_xscale("log")
        if info.get("ylog"):
            ax.set_yscale("log")
        ax.set_xlabel(info.get("xlabel", "x"))
        ax.set_ylabel(info.get("ylabel", "value"))
        ax.set_title(panel, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    r = result.recipe
    fig.suptitle(f"{r.name}: {r.reproduces}\n({result.size} form; hollow black markers: the paper's values)",
                 fontsize=9)
    fig.tight_layout()
    return save_figure(fig, folder, "figure")


def _guo_fig2(result, folder: Path) -> list[Path]:
    a = result.artifacts
    return [Path(p) for p in plot_dfil_histogram(a["bounds"], a["rdp_bound"], folder, stem="figure",
                                                 title=a.get("title", ""))]


def _guo_fig5(result, folder: Path) -> list[Path]:
    return [Path(p) for p in plot_privacy_accuracy(result.artifacts["grid_rows"], folder, stem="figure",
                                                   title=result.artifacts.get("title", ""))]


def _fmte_fig2(result, folder: Path) -> list[Path]:
    return [Path(p) for p in figure_success_vs_noise(result.artifacts["simulations"], out_dir=folder, name="figure",
                                                     title=result.artifacts.get("title"))]


def _fmte_fig3(result, folder: Path) -> list[Path]:
    return [Path(p) for p in figure_rero_curves(out_dir=folder, name="figure")]


def _vmf_fig1(result, folder: Path) -> list[Path]:
    paths = [Path(p) for p in plot_comparison(result.artifacts["comparison"], folder)]
    first = next(p for p in paths if p.name == "accuracy_mse_vs_epsilon.png")  # Fig. 1 itself
    shutil.copyfile(first, folder / "figure.png")  # plot_comparison names its files itself
    return [folder / "figure.png", *paths]


DRAWERS = {"generic": _generic, "guo-fig2": _guo_fig2, "guo-fig5": _guo_fig5, "fmte-fig2": _fmte_fig2,
           "fmte-fig3": _fmte_fig3, "vmf-fig1": _vmf_fig1}

__all__ = ["DRAWERS", "write_recipe", "write_table"]
