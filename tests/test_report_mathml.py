"""Issue 40 items 2 and 3: formulas a person can read (MathML in the report and the docs) and a report true to
itself (the plot's RDP line is the table's conversion, legends never cover data, an empty panel says so, every
cited work is in References with its authors, the summary states how it rounds)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconrisk import Release
from reconrisk._src.experiments.riskreport import PRIOR_SIZES, ReportConfig, risk_report
from reconrisk._src.report import html as H
from reconrisk._src.report.mathml import formula_html, to_mathml
from reconrisk._src.report.report_plots import prior_svg, tradeoff_svg

# three releases no issue names: full batch (exact curve), subsampled, and subsampled with few steps
CASES = {
    "q1": (Release(2.5, 1.0, 7, clip_norm=0.7), ReportConfig(prior_size=32, samples=0, target_rero=0.4, model_dim=12,
                                                            data_dim=50, min_norm=0.3)),
    "sub": (Release(1.1, 0.03, 300), ReportConfig(prior_size=64, samples=500, seed=3, target_rero=0.2, model_dim=5)),
    "kappa": (Release(0.9, 0.25, 12), ReportConfig(kappa=0.07, samples=0)),
    # fixed-size batches: the zero-out reference's rows cite their own works too
    "fixed": (Release.fixed_batch(1.5, 20, 200, 40), ReportConfig(prior_size=50, samples=0)),
}


@pytest.fixture(scope="module")
def reports():
    # as report.json holds them (the page reads a report read back from its JSON as it reads the typed object)
    return {k: risk_report(rel, cfg).to_dict() for k, (rel, cfg) in CASES.items()}


def _page(rep):
    return H.render_html(rep, {"command": "reconrisk report", "release_source": {"source": "flags"}})


def _xml(math: str) -> ET.Element:
    return ET.fromstring(math)


# -- MathML ---------------------------------------------------------------------------------------------
def test_the_issues_formulas_are_structured_mathml():
    b = _xml(to_mathml("B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]"))
    assert b.tag == "math" and b.get("alttext") == "B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]"
    sub = b.find(".//msub")
    assert [c.text for c in sub] == ["B", "κ"]  # B_κ: a subscript, not the text "B_kappa"
    assert any([c.text for c in s] == ["inf", "ε"] for s in b.iter("msub"))
    assert any([c.text for c in s] == ["e", "ε"] for s in b.iter("msup"))
    phi = _xml(to_mathml("Phi(Phi^-1(kappa) + mu_GDP)"))
    inv = phi.find(".//msup")
    assert inv[0].text == "Φ" and "".join(inv[1].itertext()) == "−1"
    assert any([c.text for c in s] == ["μ", "GDP"] for s in phi.iter("msub"))
    rad = _xml(to_mathml("max_{t in simplex} sum_z prior(z) (1 - f(t_z))"))
    under = next(s for s in rad.iter("msub") if s[0].text == "max")
    assert "".join(under[1].itertext()) == "t∈simplex"
    assert any(s[0].text == "∑" and s[1].text == "z" for s in rad.iter("msub"))
    frac = _xml(to_mathml("MSE >= diam^2/(4(e^eps2 - 1))")).find(".//mfrac")
    assert "".join(frac[0].itertext()) == "diam2" and "".join(frac[1].itertext()) == "4(eε2−1)"


@pytest.mark.parametrize("key", sorted(CASES))
def test_every_formula_column_entry_renders_as_mathml(reports, key):
    """Every formula a row shows: its mathematics is MathML (well-formed), and no ASCII math is left as text."""
    page = _page(reports[key])
    table = page[page.index("<table id='families'>"):page.index("</table>")]
    cells = re.findall(r"<td class='formula'>(.*?)</td>", table)
    rows = [r for r in H.table_rows(reports[key]) if not r.na]
    assert len(cells) == len(rows) > 10
    for cell, row in zip(cells, rows):
        maths = re.findall(r"<math.*?</math>", cell)
        if re.search(r"<=|>=|kappa|eps|sigma|\^|\w_\w|=", row.formula):
            assert maths, row.formula
        for m in maths:
            _xml(m)  # well-formed
        text = re.sub(r"<code>.*?</code>", "", re.sub(r"<math.*?</math>", "", cell))
        for ascii_math in ("kappa", "epsilon", "sigma", "delta(", "<=", "&lt;=", ">=", "&gt;=", "^", "sqrt(", "mu_"):
            assert ascii_math not in text, (ascii_math, row.formula, text)
    assert "B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]" in reports[key]["rero"]["pld"]["formula"]  # JSON


_ALLOWED = {"math", "mrow", "mi", "mo", "mn", "msub", "msup", "msubsup", "mfrac", "msqrt", "mover", "mspace", "code"}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))



def test_the_docs_constructs_are_structured_mathml():
    """What the explanation pages need beyond the report's formulas: an optimum's asterisk, primes, accents,
    named symbols, a bare minus as a superscript, shown braces."""
    star = _xml(to_mathml("theta^* + N(0, sigma^2 I)")).find(".//msup")
    assert [c.text for c in star] == ["θ", "∗"]  # an asterisk, not the product dot
    prime = _xml(to_mathml("1/N' sum_{i <= N'} r'_i"))
    frac = prime.find(".//mfrac")
    assert "".join(frac[1].itertext()) == "N′"  # the prime belongs to the denominator
    assert any("".join(s[0].itertext()) == "r′" and s[1].text == "i" for s in prime.iter("msub"))
    fim = _xml(to_mathml("(nabla g_tilde^T nabla g_tilde)/(sigma^2 C^2)"))
    accents = [[c.text for c in m] for m in fim.iter("mover")]
    assert accents == [["g", "~"], ["g", "~"]] and "∇" in "".join(fim.itertext())
    assert "_" not in "".join(fim.itertext()) and "tilde" not in "".join(fim.itertext())
    assert [c.text for c in _xml(to_mathml("x_bar")).find(".//mover")] == ["x", "¯"]
    assert "ℓ" in "".join(_xml(to_mathml("sum ell + (n lambda)/2 ||theta||^2")).itertext())
    minus = _xml(to_mathml("theta_i = A(D^{-} ∪ \\{z_i\\})"))
    sup = minus.find(".//msup")
    assert sup[0].text == "D" and "".join(sup[1].itertext()) == "−"
    assert [m.text for m in minus.iter("mo")].count("{") == 1  # the brace is shown
    inv = _xml(to_mathml("k/sqrt(k^2/z^2 + 1/sigma_b^2)")).find(".//mfrac")
    assert inv[1].find(".//msqrt") is not None and inv[1].find(".//msubsup") is not None  # σ_b² under the root

@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("<>&'\"/=_^(){}[]|-+* ,;:.akqtN12") + ["<script>", "&amp;", "kappa", "eps",
                                                                          "TV", "log", "sum_", "Prop."]),
                max_size=30).map("".join))
def test_no_string_becomes_markup(text):
    """Whatever a formula string holds, the HTML has only the converter's own tags, every <math> is well-formed
    and its alttext is the string (whitespace collapsed)."""
    out = formula_html(text)
    p = _Tags()
    p.feed(out)
    assert {t for t, _ in p.tags} <= _ALLOWED
    for m in re.findall(r"<math.*?</math>", out):
        _xml(m)
    assert "<script" not in out


def test_the_docs_hook_turns_dollars_into_mathml_outside_code():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import mkdocs_hooks as hooks

    md = ("A | $B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]$ | costs $5 and $$Phi(Phi^-1(kappa))$$\n"
          "```console\n$ reconrisk bound $x$\n```\nand `$y$`\n")
    out = hooks.math_html(hooks.math_markdown(md, "page"), "page")
    assert out.count("<math") == 2 and "display='block'" in out and "costs $5" in out
    assert "$ reconrisk bound $x$" in out and "`$y$`" in out and "|" in out.split("<math")[0]


# -- a report true to itself -----------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["q1", "sub"])
def test_the_plot_rdp_line_is_the_tables_rdp_row(reports, key):
    rep = reports[key]
    p, row = rep["rero_vs_prior"], rep["rero"]["rdp"]
    n = rep["rero"]["prior_size"]
    assert n in PRIOR_SIZES
    assert p["rdp_method"] == row["method"] == "rdp_optimal"
    # the same conversion; its order grid follows the smallest κ asked, hence agreement to 1e-6, not to the bit
    assert p["rdp"][p["prior_size"].index(n)] == pytest.approx(row["upper"], rel=1e-6)
    # Eq. 2 stays only as the named baseline of the JSON, never below the optimal conversion
    assert all(o <= e + 1e-12 for o, e in zip(p["rdp"], p["rdp_hayes2023_eq2"]))
    assert "Eq. (2)" not in prior_svg(rep) and "optimal conversion" in prior_svg(rep)


def _points(svg: str) -> np.ndarray:
    """Every plotted coordinate outside the legends: polyline vertices, marker centres and vertices."""
    body = re.sub(r"<g class='legend'>.*?</g>", "", svg)
    pts = []
    for poly in re.findall(r"<(?:polyline|polygon) points='([^']*)'", body):
        pts += [tuple(map(float, p.split(","))) for p in poly.split()]
    pts += [(float(x), float(y)) for x, y in re.findall(r"<circle cx='([-\d.]+)' cy='([-\d.]+)'", body)]
    return np.array(pts)


@pytest.mark.parametrize("key", sorted(CASES))
def test_legends_never_cover_a_plotted_point(reports, key):
    for svg in (tradeoff_svg(reports[key]), prior_svg(reports[key])):
        legends = re.findall(r"<g class='legend'><rect x='([-\d.]+)' y='([-\d.]+)' width='([-\d.]+)' "
                             r"height='([-\d.]+)'", svg)
        assert legends
        pts = _points(svg)
        assert len(pts) > 20
        axes = [tuple(map(float, r)) for r in re.findall(r"<clipPath id='[^']*'><rect x='([-\d.]+)' y='([-\d.]+)' "
                                                            r"width='([-\d.]+)' height='([-\d.]+)'", svg)]
        for x, y, w, h in (tuple(map(float, g)) for g in legends):
            inside = (pts[:, 0] >= x) & (pts[:, 0] <= x + w) & (pts[:, 1] >= y) & (pts[:, 1] <= y + h)
            assert not inside.any(), pts[inside][:3]
            for ax, ay, aw, ah in axes:  # nor any panel's axes
                assert x >= ax + aw or x + w <= ax or y >= ay + ah or y + h <= ay
        height = float(re.search(r"viewBox='0 0 [\d.]+ ([\d.]+)'", svg).group(1))
        assert max(float(g[1]) + float(g[3]) for g in legends) <= height  # on the canvas


def test_an_empty_panel_says_so_instead_of_drawing_axes(reports):
    exact = tradeoff_svg(reports["q1"])  # q = 1: the curve is exact, its band has no width
    assert max(reports["q1"]["tradeoff"]["max_width"], 0) == 0 or reports["q1"]["tradeoff"]["max_width"] < 1e-15
    assert "band width: nothing to show" in exact and exact.count("<g class='panel'>") == 1
    assert exact.count("<g class='panel empty'>") == 1 and "band width</text>" not in exact
    assert "attack false-positive rate α" in exact  # the x axis is labelled on the panel that is drawn
    sub = tradeoff_svg(reports["sub"])
    assert "nothing to show" not in sub and sub.count("<g class='panel'>") == 2 and "band width</text>" in sub


_CITE = re.compile(r"((?:van der )?[A-Z][A-Za-z\u00C0-\u017F-]+)(?: et al\.(?:'s)?|(?:,? (?:&|and)? ?(?:van der )?"
                   r"[A-Z][A-Za-z\u00C0-\u017F-]+)*(?:'s)?),? \(?((?:19|20)\d\d)\b")


def _cited(text: str) -> set[tuple[str, str]]:
    """(first author's surname, year) of every "Author et al. YEAR" / "A, B & C YEAR" in ``text``."""
    return {(m.group(1), m.group(2)) for m in _CITE.finditer(text)}


@pytest.mark.parametrize("key", sorted(CASES))
def test_every_cited_work_is_in_the_references_with_its_authors(reports, key):
    page = _page(reports[key])
    refs = page[page.index("<section id='references'>"):page.index("</section>", page.index("<section id='references'>"))]
    body = re.sub(r"<[^>]+>", " ", page.replace(refs, ""))
    body = re.sub(r"<math.*?</math>", " ", body)
    cited = _cited(body.replace("&amp;", "&"))
    assert ("Kulynych", "2025") in cited and ("Riess", "2026") in cited and ("Chatzikokolakis", "2023") in cited
    listed = {}
    for short, full in re.findall(r"<span class='cite'>([^<]*)</span>: ([^<]*)</li>", refs):
        (key_,) = _cited(short.replace("&amp;", "&"))
        listed[key_] = full
        authors = re.split(r"(?<=[A-Za-z]{2})\. ", full)[0]  # the author list first (initials kept), "and" before the last
        assert key_[0] in authors and " and " in authors and "et al" not in authors, full
    assert cited <= set(listed), cited - set(listed)


def test_a_missing_reference_is_caught(reports):
    page = _page(reports["q1"]).replace("Kulynych et al. 2025</span>", "Somebody 2025</span>")
    refs = page[page.index("<section id='references'>"):]
    listed = {c for short in re.findall(r"<span class='cite'>([^<]*)</span>", refs) for c in _cited(short)}
    assert ("Kulynych", "2025") not in listed  # (so the test above fails on a page that lacks it)


def test_the_summary_says_where_it_rounds(reports):
    rep = reports["sub"]
    eps = rep["summary"]["epsilon"]
    sentence = next(s for s in H.summary_sentences(rep) if "differentially private" in s)
    shown = float(re.search(r"ε = ([0-9.]+),", sentence).group(1))
    assert eps <= shown and shown != eps
    assert f"ε = {eps:.6g} rounded up to 3 significant digits, so the stated value is still a bound" in sentence
    page = _page(rep)
    assert "id='rounding'" in page and "rounded up to 3 significant digits" in page
    exact = dict(rep, summary=dict(rep["summary"], epsilon=2.5))  # nothing rounded: nothing said
    assert "rounded" not in next(s for s in H.summary_sentences(exact) if "differentially private" in s)


def test_a_work_only_some_releases_cite_is_listed_when_cited(reports):
    rep = reports["kappa"]
    assert "Balle &amp; Wang 2018</span>" not in _page(rep)
    cites = dict(rep, epsilon=dict(rep["epsilon"], formula="Gaussian privacy profile (Balle & Wang 2018)"))
    page = _page(cites)
    refs = page[page.index("<section id='references'>"):]
    assert "Balle &amp; Wang 2018</span>: Borja Balle and Yu-Xiang Wang." in refs


@pytest.mark.parametrize("key", sorted(CASES))
def test_the_table_rounds_every_bracket_outward(reports, key):
    page = _page(reports[key])
    table = page[page.index("<table id='families'>"):page.index("</table>")]
    shown = re.findall(r"data-label='lower'>([^<]*)</td><td class='num' data-label='upper'>([^<]*)</td>", table)
    rows = [r for r in H.table_rows(reports[key]) if not r.na]
    assert len(shown) == len(rows)
    checked = 0
    for (lo, hi), r in zip(shown, rows):
        for text, value, up in ((lo, r.lower, False), (hi, r.upper, True)):
            if not isinstance(value, float) or text in ("—", "1 (vacuous)") or not np.isfinite(value):
                continue
            x = float(text)
            assert (x >= value if up else x <= value), (r.quantity, text, value)
            assert abs(x - value) <= max(1e-4, 1e-3 * abs(value)) + 1e-12
            checked += 1
    assert checked > 10
    assert H._num(0.11344, up=True) == "0.1135" and H._num(0.11346, up=False) == "0.1134"
    assert H._num(0.1135, up=True) == "0.1135" and H._num(2.5e-7, up=True) == "2.5e-07"
