"""The two figures of ``reconrisk report``'s page, as inline SVG (drawing only).

* :func:`tradeoff_svg` — the certified trade-off curve on log–log axes (false-positive rate α against the
  attack's true-positive rate 1 − f(α)), where the certified band is visible at every α, with a second panel
  showing the band's width (upper − lower end), i.e. the error of the certificate;
* :func:`prior_svg` — the ReRo bound against the prior size N, with the RDP bound (the optimal conversion, the
  same as the table's RDP row), Fano's bound and the blind guess.

Legends are drawn under the panels, outside the axes, so that they never cover a point; a panel with nothing
to show (the band width of an exact curve, q = 1) says so in words instead of drawing empty axes.

Both are written directly as SVG text by :mod:`.svgplot` (a viewBox and no fixed size, so they scale with the
page; text as text; tick labels at the powers of the base as plain Unicode, 10⁻⁶, 2¹⁰): a few milliseconds,
where matplotlib's import and drawing took ~0.6 s of the report. :func:`matplotlib_svg` draws a matplotlib figure
once as an SVG file's text and :func:`inline_svg` turns that text into the same kind of inline SVG, for the pages
whose figures matplotlib draws (the per-example page writes the one drawing as a file and inlines it).
"""

from __future__ import annotations

import io
import re

import numpy as np

from .._io import pyplot
from ..report_model import RiskReport
from .svgplot import LogChart, log_limits, svg_document

_BLUE, _RED, _PURPLE, _GREY = "#2a6db0", "#c0392b", "#7d3c98", "#777777"
#: The prior plot's RDP line: the optimal conversion, as the table's RDP row (not Hayes et al.'s Eq. 2).
RDP_LABEL = "RDP bound, optimal conversion (Riess et al. 2026), as in the table"
_RC = {"svg.fonttype": "none", "svg.hashsalt": "reconrisk", "font.family": ["DejaVu Sans", "sans-serif"]}


def figures(report: RiskReport) -> tuple[str, str]:
    """Both figures of the page: (:func:`tradeoff_svg`, :func:`prior_svg`)."""
    return tradeoff_svg(report), prior_svg(report)


def matplotlib_svg(fig) -> str:
    """``fig`` drawn once, as a standalone SVG document (text as text, no date, stable ids); the figure is closed."""
    import matplotlib

    buf = io.StringIO()
    try:
        with matplotlib.rc_context(_RC):
            fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        pyplot().close(fig)
    return buf.getvalue()


def inline_svg(document: str, label: str) -> str:
    """An SVG document (:func:`matplotlib_svg`) as an inline ``<svg>`` element that scales with its container."""
    text = document[document.index("<svg"):]  # no XML declaration or DOCTYPE inside HTML
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate
    head_end = text.index(">")
    # inline in HTML the parser supplies the SVG and xlink namespaces: no namespace URL stays on the page
    head = re.sub(r'\s(width|height|xmlns(:\w+)?)="[^"]*"', "", text[:head_end])
    head += f' role="img" aria-label="{label}" preserveAspectRatio="xMidYMid meet"'
    return head + text[head_end:]


def svg_of(fig, label: str) -> str:
    """``fig`` as an inline ``<svg>`` element that scales with its container (drawn once; the figure is closed)."""
    return inline_svg(matplotlib_svg(fig), label)


def _positive(a: np.ndarray) -> np.ndarray:
    """Values ≤ 0 as NaN, so that log axes skip them instead of failing."""
    a = np.asarray(a, dtype=float)
    return np.where(a > 0, a, np.nan)


def tradeoff_svg(report: RiskReport) -> str:
    t = RiskReport.from_dict(report).tradeoff
    a = np.asarray(t.alpha, dtype=float)
    lo, hi = _positive(t.power_lower), _positive(t.power_upper)
    top = LogChart((84, 34, 704, 396))
    top.band(a, lo, hi, color=_BLUE, opacity=0.35, label="certified band (lower to upper end)")
    top.line(a, hi, color=_BLUE, width=1.4, label="certified bound: TPR ≤ 1 − f(α)")
    top.line(a, lo, color=_BLUE, width=0.7, dash="--", label="lower end of the band")
    top.line(a, a, color=_GREY, width=0.9, dash=":", label="blind guess (TPR = α)")
    top.title = f"Certified trade-off curve ({t.method}): any membership test lies below the band"
    top.ylabel = "attack true-positive rate"
    top.legend_at = "below"  # outside the axes: it never covers the curve
    width = _positive(np.asarray(t.power_upper, float) - np.asarray(t.power_lower, float))
    bottom = LogChart((84, 448, 704, 118))
    bottom.line(a, width, color=_BLUE, width=1.2)
    bottom.ylabel = "band width"
    bottom.xlabel = "attack false-positive rate α"
    bottom.empty_note = ("band width: nothing to show\nthe lower and upper ends of the band agree at every α "
                         "(the curve is exact), so there is no width to draw")
    bottom.xlim = top.xlim = log_limits(a, 10)  # (shared x axis)
    if bottom.has_data():
        top.show_xticklabels = False
    else:  # the top panel carries the x axis's labels
        top.xlabel = bottom.xlabel
    return svg_document((800, 620), [top, bottom],
                        "certified trade-off curve, log-log, with the width of the certified band", "tradeoff")


def prior_svg(report: RiskReport) -> str:
    report = RiskReport.from_dict(report)
    p = report.rero_vs_prior
    n_all = np.asarray(p.prior_size, dtype=float)
    ax = LogChart((84, 34, 704, 368), xbase=2)
    ax.band(n_all, list(p.lower), list(p.upper), color=_BLUE, opacity=0.4)
    ax.line(n_all, list(p.upper), color=_BLUE, width=1.4, marker="o", label="ReRo bound (PLD, certified bracket)")
    if p.rdp is not None:  # (an event has neither; None where it fell below the certified lower end); the
        ok = [i for i, y in enumerate(p.rdp) if y is not None]  # table's RDP row's conversion
        if ok:
            ax.line(n_all[ok], [p.rdp[i] for i in ok], color=_RED, width=1.2, dash="--", marker="s",
                    label=RDP_LABEL)
    if p.fano is not None:
        ax.line(n_all, list(p.fano), color=_PURPLE, width=1.2, dash="-.", marker="^",
                label="Fano's bound (Hayes, Mahloujifar & Balle 2023, App. H)")
    ax.line(n_all, list(p.kappa), color=_GREY, width=1.0, dash=":", label="blind guess 1/N")
    at = report.attack
    if at.applicable:
        name, r = at.primary
        ax.errorbar(at.prior_size, r["rate"], r["ci_low"], r["ci_high"], color="#000",
                    label=f"attack ({name}, 95% CI)")
    n = report.rero.prior_size
    if n:
        ax.vline(n, color="#808080", label=f"this report's prior (N = {n:,})")
    ax.xlabel = "prior size N (κ = 1/N)"
    ax.ylabel = "reconstruction success"
    ax.title = "Reconstruction success bound against the prior size"
    ax.legend_at = "below"  # outside the axes: it never covers a point
    return svg_document((800, 460), [ax], "ReRo bound against prior size", "prior")
