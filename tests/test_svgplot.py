"""The report's hand-written SVG charts: coordinates on log axes, broken lines, ticks, legend, determinism."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from reconrisk._src.report.svgplot import LogChart, log_limits, power_label, svg_document


def _chart(**kw):
    c = LogChart((100, 20, 400, 300), **kw)
    c.xlim = (0.0, 2.0)  # x in [1, 100] on 400 px: 200 px per decade
    return c


def test_points_land_where_the_log_axes_put_them():
    c = _chart()
    c.line([1.0, 10.0, 100.0], [1e-2, 1e-1, 1.0], color="#000", marker="o", label="a")
    svg = svg_document((600, 400), [c], "t", "u")
    ET.fromstring(svg)  # well-formed XML
    xs = [float(v) for v in re.findall(r"<circle cx='([\d.]+)'", svg)]
    assert xs == [100.0, 300.0, 500.0]  # decades equally spaced from the left edge of the box
    ys = [float(v) for v in re.findall(r"<circle cx='[\d.]+' cy='([\d.]+)'", svg)]
    assert ys[0] > ys[1] > ys[2] and abs((ys[0] - ys[1]) - (ys[1] - ys[2])) < 0.02  # up the page, evenly


def test_values_a_log_axis_cannot_show_break_the_line():
    c = _chart()
    c.line([1, 2, 3, 4, 5], [0.1, 0.2, 0.0, np.nan, 0.5], color="#000")
    svg = svg_document((600, 400), [c], "t", "u")
    runs = re.findall(r"<polyline points='([^']*)'", svg)
    assert [len(r.split()) for r in runs] == [2, 1]  # 0 and NaN dropped, the line split there


def test_ticks_at_every_power_inside_the_axes_labelled_as_text():
    c = LogChart((100, 20, 400, 300), xbase=2)
    c.line(2.0 ** np.arange(1, 11), np.logspace(-6, 0, 10), color="#000")
    svg = svg_document((600, 400), [c], "t", "u")
    for k in range(1, 11):
        assert f">{power_label(2, k)}<" in svg
    for k in range(-6, 1):
        assert f">{power_label(10, k)}<" in svg
    assert power_label(10, -6) == "10⁻⁶" and power_label(2, 10) == "2¹⁰" and power_label(10, 0) == "1"


def test_legend_band_errorbar_and_escaping():
    c = _chart()
    c.band([1, 10, 100], [0.1, 0.2, 0.3], [0.2, 0.3, 0.4], color="#00f", opacity=0.3, label="band <lo & hi>")
    c.errorbar(10.0, 0.25, 0.2, 0.3, color="#000", label="attack")
    c.vline(3.0, color="#888", label="prior")
    c.legend_at = "upper right"
    svg = svg_document((600, 400), [c], "a & b", "u")
    root = ET.fromstring(svg)
    assert "band &lt;lo &amp; hi&gt;" in svg and root.get("aria-label") == "a & b"
    legend = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.text] or \
             [t.text for t in root.iter("text") if t.text]
    assert {"band <lo & hi>", "attack", "prior"} <= set(legend)
    assert svg.count("<polygon") >= 3  # the band, the diamond, the legend's diamond
    assert "viewBox='0 0 600 400'" in svg and not re.search(r"<svg[^>]*\s(width|height)=", svg)


def test_same_input_same_bytes_and_unknown_marker_refused():
    def draw():
        c = _chart()
        c.line([1, 10], [0.1, 1], color="#000", marker="s")
        d = _chart()
        d.line([1, 10], [0.2, 0.5], color="#000")
        return svg_document((600, 400), [c, d], "t", "fig")
    assert draw() == draw() and "id='fig-0'" in draw() and "id='fig-1'" in draw()
    c = _chart()
    c.line([1, 10], [0.1, 1], color="#000", marker="x")
    with pytest.raises(ValueError, match="marker"):
        svg_document((600, 400), [c], "t", "u")


def test_limits_pad_the_log_span():
    lo, hi = log_limits(np.array([1e-6, 1.0, -1.0, np.nan]), 10)
    assert lo == pytest.approx(-6.3) and hi == pytest.approx(0.3)


def test_an_empty_panel_is_a_sentence_and_a_legend_below_grows_the_canvas():
    empty = _chart()
    empty.line([1, 10], [0.0, np.nan], color="#000")  # nothing a log axis can show
    empty.empty_note = "nothing to show: first line\nsecond line"
    svg = svg_document((600, 400), [empty], "t", "u")
    ET.fromstring(svg)
    assert "clipPath" not in svg and "<polyline" not in svg and ">first line<" not in svg
    assert ">nothing to show: first line</tspan>" in svg and ">second line</tspan>" in svg
    c = _chart()
    c.line([1, 10, 100], [0.1, 0.5, 1.0], color="#000", label="a line")
    c.legend_at = "below"
    svg = svg_document((600, 400), [c], "t", "u")
    y = float(re.search(r"<g class='legend'><rect x='[\d.]+' y='([\d.]+)'", svg).group(1))
    assert y >= 400 and "viewBox='0 0 600 4" in svg and "viewBox='0 0 600 400'" not in svg  # under the panel
