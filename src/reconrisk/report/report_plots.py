"""The two figures of ``reconrisk report``'s page, as inline SVG (drawing only).

* :func:`tradeoff_svg` — the certified trade-off curve on log–log axes (false-positive rate α against the
  attack's true-positive rate 1 − f(α)), where the certified band is visible at every α, with a second panel
  showing the band's width (upper − lower end), i.e. the error of the certificate;
* :func:`prior_svg` — the ReRo bound against the prior size N, with the RDP and Fano bounds and the blind guess.

The SVG is made responsive (the root's fixed width/height are dropped; its viewBox stays) and keeps its text as
text (``svg.fonttype = "none"``): small, selectable, and drawn with the reader's own sans-serif font, offline.

Drawn once each, cheaply: a bare :class:`matplotlib.figure.Figure` (no pyplot), fixed margins instead of a
tight layout (which draws the figure to measure it, and ``bbox_inches="tight"`` once more), and tick labels as
plain Unicode text (10⁻⁶) instead of mathtext, ticks at the powers only — the same picture at about a
tenth of the time.
"""

from __future__ import annotations

import io
import math
import re

import numpy as np

_BLUE, _RED, _PURPLE, _GREY = "#2a6db0", "#c0392b", "#7d3c98", "#777777"
_RC = {"svg.fonttype": "none", "svg.hashsalt": "reconrisk", "font.family": ["DejaVu Sans", "sans-serif"]}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def figures(report: dict) -> tuple[str, str]:
    """Both figures of the page: (:func:`tradeoff_svg`, :func:`prior_svg`)."""
    return tradeoff_svg(report), prior_svg(report)


def svg_of(fig, label: str) -> str:
    """``fig`` as an inline ``<svg>`` element that scales with its container."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # no XML declaration or DOCTYPE inside HTML
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate
    head_end = text.index(">")
    # inline in HTML the parser supplies the SVG and xlink namespaces: no namespace URL stays on the page
    head = re.sub(r'\s(width|height|xmlns(:\w+)?)="[^"]*"', "", text[:head_end])
    head += f' role="img" aria-label="{label}" preserveAspectRatio="xMidYMid meet"'
    return head + text[head_end:]


def _figure(size: tuple[float, float]):
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        return Figure(figsize=size)


def _power_label(base: int):
    """Tick labels b^k as plain text (10⁻⁶, 2¹⁰; 1 for b⁰), empty off the powers of ``base``."""
    from matplotlib.ticker import FuncFormatter

    def fmt(x, pos=None) -> str:
        if not x > 0:
            return ""
        k = math.log(x, base)
        e = round(k)
        if abs(k - e) > 1e-6:
            return ""
        return f"{base}{str(e).translate(_SUPERSCRIPT)}"

    return FuncFormatter(fmt)


def _log_axes(ax, *, xbase: int = 10) -> None:
    """Log axes with ticks and grid lines at the powers only (each tick is a handful of artists to build and
    draw: the minor ones of a seven-decade axis cost more than the rest of the figure)."""
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log", base=xbase)
    ax.set_yscale("log")
    for axis, base in ((ax.xaxis, xbase), (ax.yaxis, 10)):
        axis.set_major_formatter(_power_label(base))
        axis.set_minor_locator(NullLocator())
    ax.grid(True, which="major", alpha=0.3)


def _positive(a: np.ndarray) -> np.ndarray:
    """Values ≤ 0 as NaN, so that log axes skip them instead of failing."""
    a = np.asarray(a, dtype=float)
    return np.where(a > 0, a, np.nan)


def tradeoff_svg(report: dict) -> str:
    t = report["tradeoff"]
    a = np.asarray(t["alpha"], dtype=float)
    lo, hi = _positive(t["power_lower"]), _positive(t["power_upper"])
    fig = _figure((8.0, 6.2))
    grid = fig.add_gridspec(2, 1, height_ratios=[3, 1.2], left=0.105, right=0.985, top=0.955, bottom=0.085,
                            hspace=0.07)
    ax = fig.add_subplot(grid[0])
    aw = fig.add_subplot(grid[1], sharex=ax)
    ax.fill_between(a, lo, hi, color=_BLUE, alpha=0.35, lw=0, label="certified band (lower to upper end)")
    ax.plot(a, hi, color=_BLUE, lw=1.4, label="certified bound: TPR ≤ 1 − f(α)")
    ax.plot(a, lo, color=_BLUE, lw=0.7, ls="--", label="lower end of the band")
    ax.plot(a, a, color=_GREY, lw=0.9, ls=":", label="blind guess (TPR = α)")
    _log_axes(ax)
    ax.tick_params(labelbottom=False)
    ax.set_ylabel("attack true-positive rate")
    ax.set_title(f"Certified trade-off curve ({t['method']}): any membership test lies below the band", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    width = _positive(np.asarray(t["power_upper"], float) - np.asarray(t["power_lower"], float))
    aw.plot(a, width, color=_BLUE, lw=1.2)
    _log_axes(aw)
    aw.set_ylabel("band width")
    aw.set_xlabel("attack false-positive rate α")
    return svg_of(fig, "certified trade-off curve, log-log, with the width of the certified band")


def prior_svg(report: dict) -> str:
    p = report["rero_vs_prior"]
    fig = _figure((8.0, 4.6))
    ax = fig.add_axes((0.105, 0.12, 0.88, 0.8))
    ax.fill_between(p["prior_size"], p["lower"], p["upper"], color=_BLUE, alpha=0.4, lw=0)
    ax.plot(p["prior_size"], p["upper"], "o-", color=_BLUE, ms=3, label="ReRo bound (PLD, certified bracket)")
    if p.get("rdp") is not None:  # (an event has neither)
        ax.plot(p["prior_size"], p["rdp"], "s--", color=_RED, ms=3, label="RDP bound, Eq. (2)")
    if p.get("fano") is not None:
        ax.plot(p["prior_size"], p["fano"], "^-.", color=_PURPLE, ms=3, label="Fano's bound (App. H)")
    ax.plot(p["prior_size"], p["kappa"], ":", color=_GREY, label="blind guess 1/N")
    at = report["attack"]
    if at.get("applicable"):
        r = at["attack"]
        ax.errorbar([at["prior_size"]], [r["rate"]], yerr=[[r["rate"] - r["ci_low"]], [r["ci_high"] - r["rate"]]],
                    fmt="D", color="k", label=f"attack ({at['attack_name']}, 95% CI)")
    n = report["rero"].get("prior_size")
    if n:
        ax.axvline(n, color="0.5", lw=0.8, ls="-", alpha=0.6, label=f"this report's prior (N = {n:,})")
    _log_axes(ax, xbase=2)
    ax.set_xlabel("prior size N (κ = 1/N)")
    ax.set_ylabel("reconstruction success")
    ax.set_title("Reconstruction success bound against the prior size", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return svg_of(fig, "ReRo bound against prior size")
