"""The two figures of ``reconrisk report``'s page, as inline SVG (drawing only).

* :func:`tradeoff_svg` — the certified trade-off curve on log–log axes (false-positive rate α against the
  attack's true-positive rate 1 − f(α)), where the certified band is visible at every α, with a second panel
  showing the band's width (upper − lower end), i.e. the error of the certificate;
* :func:`prior_svg` — the ReRo bound against the prior size N, with the RDP and Fano bounds and the blind guess.

The SVG is made responsive (the root's fixed width/height are dropped; its viewBox stays) and keeps its text as
text (``svg.fonttype = "none"``): small, selectable, and drawn with the reader's own sans-serif font, offline.
"""

from __future__ import annotations

import io
import re

import numpy as np

from .. import _io

_BLUE, _RED, _PURPLE, _GREY = "#2a6db0", "#c0392b", "#7d3c98", "#777777"


def svg_of(fig, label: str) -> str:
    """``fig`` as an inline ``<svg>`` element that scales with its container; closes the figure."""
    import matplotlib

    buf = io.StringIO()
    try:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "reconrisk",
                                    "font.family": ["DejaVu Sans", "sans-serif"]}):
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    finally:
        _io.pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # no XML declaration or DOCTYPE inside HTML
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate
    head_end = text.index(">")
    # inline in HTML the parser supplies the SVG and xlink namespaces: no namespace URL stays on the page
    head = re.sub(r'\s(width|height|xmlns(:\w+)?)="[^"]*"', "", text[:head_end])
    head += f' role="img" aria-label="{label}" preserveAspectRatio="xMidYMid meet"'
    return head + text[head_end:]


def _positive(a: np.ndarray) -> np.ndarray:
    """Values ≤ 0 as NaN, so that log axes skip them instead of failing."""
    a = np.asarray(a, dtype=float)
    return np.where(a > 0, a, np.nan)


def tradeoff_svg(report: dict) -> str:
    plt = _io.pyplot()
    t = report["tradeoff"]
    a = np.asarray(t["alpha"], dtype=float)
    lo, hi = _positive(t["power_lower"]), _positive(t["power_upper"])
    fig, (ax, aw) = plt.subplots(2, 1, figsize=(8.0, 6.2), sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
    ax.fill_between(a, lo, hi, color=_BLUE, alpha=0.35, lw=0, label="certified band (lower to upper end)")
    ax.plot(a, hi, color=_BLUE, lw=1.4, label="certified bound: TPR ≤ 1 − f(α)")
    ax.plot(a, lo, color=_BLUE, lw=0.7, ls="--", label="lower end of the band")
    ax.plot(a, a, color=_GREY, lw=0.9, ls=":", label="blind guess (TPR = α)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylabel("attack true-positive rate")
    ax.set_title(f"Certified trade-off curve ({t['method']}): any membership test lies below the band", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    width = _positive(np.asarray(t["power_upper"], float) - np.asarray(t["power_lower"], float))
    aw.plot(a, width, color=_BLUE, lw=1.2)
    aw.set_yscale("log")
    aw.set_ylabel("band width")
    aw.set_xlabel("attack false-positive rate α")
    aw.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return svg_of(fig, "certified trade-off curve, log-log, with the width of the certified band")


def prior_svg(report: dict) -> str:
    plt = _io.pyplot()
    p = report["rero_vs_prior"]
    fig, ax = plt.subplots(figsize=(8.0, 4.6))
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
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prior size N (κ = 1/N)")
    ax.set_ylabel("reconstruction success")
    ax.set_title("Reconstruction success bound against the prior size", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return svg_of(fig, "ReRo bound against prior size")
