"""The report page in headless Chromium: no console error, no exception, no network request, the summary in the
DOM and the formula toggle working — with negative controls showing the check catches each kind of failure."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from _chromium import CHROMIUM, load_page

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"headless Chromium not installed at {CHROMIUM} (apt-get install chromium)")

SUMMARY = "document.getElementById('summary').innerText"
TOGGLE = ("(function(){var b=document.getElementById('toggle-formulas'); b.click();"
          "var hidden=document.querySelector('td.formula').classList.contains('hidden'); b.click();"
          "return [hidden, document.querySelector('td.formula').classList.contains('hidden'), b.textContent];})()")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    from reconrisk import Release
    from reconrisk._src.experiments.riskreport import ReportConfig, risk_report
    from reconrisk._src.report.html import write_report

    out = tmp_path_factory.mktemp("page")
    rep = risk_report(Release(1.5, 0.2, 10), ReportConfig(prior_size=10, samples=2000, target_rero=0.3, model_dim=10))
    write_report(rep, out, {"command": "reconrisk report <test> & 'quotes'", "release_source": {"source": "flags"}})
    return out / "report.html"


def test_report_renders_without_console_errors(page):
    res = load_page(page, (SUMMARY, TOGGLE))
    assert res["problems"] == []
    summary, toggle = res["values"]
    assert summary.startswith("An informed adversary with a 1-in-10 prior reconstructs a training example at most")
    assert toggle == [True, False, "hide formulas"]  # the page's one script ran and toggles the column


@pytest.mark.parametrize("body,needle", [
    ("<script>console.error('deliberate')</script>", "console.error: deliberate"),
    ("<script>window.nothingHere()</script>", "exception: TypeError"),
    ("<script>console.assert(1 === 2, 'asserted')</script>", "console.assert"),
    ("<img src='http://example.invalid/x.png'>", "network request: http://example.invalid/x.png"),
])
def test_negative_controls_are_detected(tmp_path, body, needle):
    bad = tmp_path / "bad.html"
    bad.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><p id='summary'>x</p>{body}</body></html>")
    res = load_page(bad, (SUMMARY,), settle=0.5)
    assert any(p.startswith(needle) for p in res["problems"]), res["problems"]


LAYOUT = ("(function(){var w=document.documentElement.clientWidth;"
          "var figs=[].map.call(document.querySelectorAll('figure svg'),function(s){"
          "var r=s.getBoundingClientRect();return [Math.round(r.width),Math.round(r.height)];});"
          "var fig=document.querySelector('figure').getBoundingClientRect().width;"
          "return {overflow: document.documentElement.scrollWidth - w, client: w, figs: figs, figure: Math.round(fig),"
          "headline: document.getElementById('headline').innerText,"
          "warning: !!document.querySelector('.warning')};})()")


@pytest.mark.parametrize("width", [1280, 800])
def test_page_fits_the_window_with_full_width_figures(page, tmp_path, width):
    """A screenshot at each width (kept under $RECONRISK_SCREENSHOTS when set, to look at by eye): nothing is wider
    than the window, both figures span their container and have a drawn height, the headline names the prior."""
    shots = Path(os.environ.get("RECONRISK_SCREENSHOTS") or tmp_path)
    shot = shots / f"report_{width}.png"
    res = load_page(page, (LAYOUT,), width=width, screenshot=shot)
    assert res["problems"] == []
    lay = res["values"][0]
    assert lay["overflow"] <= 0, lay
    assert len(lay["figs"]) == 2
    for w, h in lay["figs"]:
        assert abs(w - lay["figure"]) <= 1 and h > 0.4 * w, lay
    assert "with a 1-in-10 prior" in lay["headline"] and lay["warning"] is False
    png = shot.read_bytes()  # a full-page screenshot exactly as wide as the page
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == lay["client"]


# MathML laid out by the browser: a subscript sits below its base's baseline, a fraction's numerator above its
# denominator, and each formula is a box of real height. Shown as raw text (no MathML), the same elements are
# inline spans on one baseline, side by side — the negative control below.
MATHML = ("(function(){var ms=[].slice.call(document.querySelectorAll('td.formula math'));"
          "function box(e){var r=e.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom,r.width,r.height];}"
          "var subs=[].slice.call(document.querySelectorAll('td.formula msub')).map(function(s){"
          "var b=box(s.children[0]), x=box(s.children[1]); return [x[3]-b[3], x[0]-b[2]];});"
          "var fracs=[].slice.call(document.querySelectorAll('td.formula mfrac')).map(function(f){"
          "var n=box(f.children[0]), d=box(f.children[1]); return [d[1]-n[3], Math.abs(n[0]-d[0])<Math.max(n[4],d[4])];});"
          "return {n: ms.length, boxes: ms.map(box), subs: subs, fracs: fracs,"
          "display: ms.length ? getComputedStyle(ms[0]).display : null};})()")


def _mathml_layout(path):
    res = load_page(path, (MATHML,), width=1280)
    assert res["problems"] == []
    return res["values"][0]


def _assert_mathml(lay):
    assert lay["n"] >= 20
    for left, top, right, bottom, w, h in lay["boxes"]:
        assert w > 0 and h > 4  # a drawn box (a lone ε is ~7 px tall at this size)
    assert lay["subs"] and all(drop > 1 for drop, _ in lay["subs"])  # every subscript set below its base
    assert all(gap > -2 for _, gap in lay["subs"])  # and after it, not over it
    assert lay["fracs"] and all(below >= -1 and stacked for below, stacked in lay["fracs"])  # stacked fractions


def test_formulas_render_as_mathml(page, tmp_path):
    """The formula column's MathML is laid out by the browser (screenshot kept under $RECONRISK_SCREENSHOTS)."""
    shots = Path(os.environ.get("RECONRISK_SCREENSHOTS") or tmp_path)
    res = load_page(page, (MATHML,), width=1280, screenshot=shots / "report_mathml.png")
    assert res["problems"] == []
    _assert_mathml(res["values"][0])


def test_raw_text_formulas_fail_the_mathml_check(page, tmp_path):
    """Negative control: the same page without its <math> wrappers — what a browser without MathML shows, the
    elements inline on one baseline — fails the check, on the subscripts and the fractions alike."""
    text = page.read_text(encoding="utf-8")
    raw = re.sub(r"<math[^>]*>|</math>", "", text)
    bad = tmp_path / "raw.html"
    bad.write_text(raw.replace("td.formula math", "td.formula"), encoding="utf-8")
    lay = _mathml_layout(bad)
    assert lay["subs"] and all(drop <= 1 for drop, _ in lay["subs"])
    assert lay["fracs"] and not any(stacked and below >= -1 for below, stacked in lay["fracs"])
    with pytest.raises(AssertionError):
        _assert_mathml(dict(lay, n=99, boxes=[]))
