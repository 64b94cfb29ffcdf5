"""The report page a privacy engineer forwards (issue 25 item 4): the prior in the headline, a warning when it was
defaulted, vacuous rows marked, inapplicable families listed with their reason, MathML formulas, inline
responsive SVG figures, a print stylesheet and each paper's full reference once."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from reconrisk import Release
from reconrisk._src.experiments.riskreport import ReportConfig, risk_report
from reconrisk._src.report import html as H
from reconrisk._src.report.mathml import formula_html


@pytest.fixture(scope="module")
def rep():
    # σ = 0.6, T = 40, q = 0.5: the (ε, δ) conversion is vacuous here (κe^ε + δ > 1)
    return risk_report(Release(0.6, 0.5, 40), ReportConfig(prior_size=10, samples=0))


def _page(rep, defaulted=False):
    return H.render_html(rep, {"command": "reconrisk report", "release_source": {"source": "flags"},
                               "prior": {"defaulted": defaulted, "prior_size": 10, "kappa": None}})


def test_headline_states_the_prior_and_the_default_is_warned(rep):
    page = _page(rep)
    head = re.search(r"<p class='headline' id='headline'>(.*?)</p>", page).group(1)
    assert "with a 1-in-10 prior" in head and "At most <strong>" in head
    assert "with a 1-in-10 prior" in re.search(r"<title>(.*?)</title>", page).group(1)
    assert "No prior was given" not in page
    warned = _page(rep, defaulted=True)
    assert warned.count("class='warning'") == 1 and "No prior was given" in warned and "--prior-size N" in warned


def test_vacuous_rows_are_marked_and_inapplicable_families_listed_apart(rep):
    rows = H.table_rows(rep)
    dp = next(r for r in rows if "(ε, δ)-DP" in r.quantity)
    assert rep.rero.dp.upper >= 1 and dp.vacuous and "vacuous" in dp.error
    pld = next(r for r in rows if "PLD bracket" in r.quantity)
    assert not pld.vacuous and pld.upper < 1
    page = _page(rep)
    table = page[page.index("<table id='families'>"):page.index("</table>")]
    assert "1 (vacuous)" in table and "<tr class='vacuous'>" in table
    na = [r for r in rows if r.na]
    assert na and "id='not-computed'" in page
    for r in na:  # not an empty row in the table, but a line with its reason
        assert formula_html(r.formula) not in table and formula_html(r.formula) in page


def test_formulas_are_mathml_and_words_stay_words():
    out = formula_html("delta(eps) <= delta; MSE >= diam^2/(4(e^eps2 - 1)) (Guo et al. 2022, Thm 1)")
    assert out.count("<math") == 2 and "<mi>δ</mi>" in out and "<mfrac>" in out
    assert out.endswith(" (Guo et al. 2022, Thm 1)")  # a citation is text, its year and theorem number too
    assert formula_html("multiplier nu_a number").startswith("multiplier <math")  # words are left alone
    assert "<math" not in formula_html("Alg. 1 (corrected) with a DKW + Clopper-Pearson interval")
    assert formula_html("1 - f(fpr) (Dong, Roth & Su 2022)").count("<math") == 1


def test_figures_are_inline_responsive_svg_and_the_page_prints(rep):
    page = _page(rep)
    svgs = re.findall(r"<svg[^>]*>", page)
    assert len(svgs) == 2
    for s in svgs:
        assert "viewBox" in s and not re.search(r'\s(width|height)="', s)
    assert "data:image" not in page and "http://" not in page and "https://" not in page
    assert "@media print" in page and "figure svg{display:block;width:100%" in page
    assert "set_yscale" not in page  # (a sanity check that no source leaked into the page)
    # tick labels are plain text (10⁻⁶, 2¹⁰), not mathtext, and every power of ten on the axes is labelled
    assert "mathdefault" not in page and "10⁻⁶" in page and "2¹⁰" in page


def test_each_paper_is_referenced_in_full_once(rep):
    page = _page(rep)
    refs = page[page.index("<section id='references'>"):]
    for short, full in H.REFERENCES:
        assert refs.count(H._e(full)) == 1 and page.count(H._e(full)) == 1
    assert "seed 00" not in page.lower()


def test_audit_plot_legend_names_the_tick_marks(monkeypatch, tmp_path):
    from reconrisk._src.report import audit as A

    seen = {}

    def keep(fig, out_dir, stem, dpi=130):
        seen["labels"] = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        return []

    monkeypatch.setattr(A, "save_figure", keep)
    rate = SimpleNamespace(rate=0.3, ci=(0.2, 0.4), trials=50)
    setting = SimpleNamespace(sample_rate=1.0, steps=10, prior_size=10, delta=1e-5, clip_norm=1.0)
    emp = SimpleNamespace(rero=SimpleNamespace(lower=0.15))
    results = [SimpleNamespace(setting=setting, epsilon=e, certificate=SimpleNamespace(rero=SimpleNamespace(upper=u)), rates={"alg2": rate}, primary="alg2",
                               empirical=lambda: emp)
               for e, u in ((1.0, 0.2), (4.0, 0.5))]
    A.audit_plot(results, tmp_path, curve=None)
    assert "certified bound at each audited ε" in seen["labels"]
