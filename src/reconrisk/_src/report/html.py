"""``reconrisk report``'s page: one self-contained HTML file and ``report.json`` (drawing only).

:func:`write_report` takes the :class:`~reconrisk._src.report_model.RiskReport` of
:func:`reconrisk._src.experiments.riskreport.risk_report` (or ``report.json`` read back) and writes
``report.html`` (inline CSS, the plots as inline responsive SVG written by :mod:`.report_plots`, no matplotlib —
no external URL, no network, a print stylesheet) and ``report.json`` (the same numbers, plus provenance), each
atomically (:mod:`reconrisk._src._io`). Every piece of user-supplied text (file paths, the command line) is escaped
with :func:`html.escape`.

The page opens with a headline that states the prior ("at most 19.5% reconstruction success with a 1-in-10
prior"), a warning when the prior was defaulted rather than given, and a plain-language summary whose numbers
come from the report (rounded *up* where they are upper bounds, so "at most" stays true); then one table of
every bound family (formulas as MathML, :mod:`.mathml`, the JSON keeping their plain text; a bound of 1 is marked vacuous; families whose assumptions fail are
listed apart with the reason), the plots (trade-off curve on log–log axes with its certified band; ReRo against
prior size), the full references (every work a formula or note cites, with its authors) and a provenance
footer (version, release, command). Where the summary rounds, the page says how (:data:`ROUNDING`).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

from .. import _io
from ..report_model import Provenance, RiskReport, Unavailable, report_json
from .mathml import formula_html
from .report_plots import figures as draw

_CSS = """
:root{--ink:#1b1b1b;--muted:#555;--rule:#e3e3e3;--accent:#2a6db0}
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;max-width:72rem;margin:1.5rem auto;
padding:0 1.25rem;color:var(--ink);line-height:1.5}
h1{font-size:1.7rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ddd}
.headline{font-size:1.3rem;margin:.3rem 0}.release{color:var(--muted);margin:.2rem 0 1rem}
.warning{background:#fff4e5;border-left:4px solid #e67e22;padding:.6rem 1rem;margin:.8rem 0}
.summary{background:#f3f7fb;border-left:4px solid var(--accent);padding:.8rem 1rem;font-size:1.05rem}
.summary p{margin:.35rem 0}.note{color:var(--muted);font-size:.9rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{border-bottom:1px solid var(--rule);padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#fafafa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.vacuous td{color:#888}tr.vacuous td.num{font-style:italic}
.formula{font-size:.85rem;color:#444;max-width:30rem;overflow-wrap:anywhere}
math{font-size:1.08em}.formula math{overflow-wrap:normal}
.hidden{display:none}
ul.na{font-size:.9rem;color:var(--muted)}ul.na b{color:var(--ink);font-weight:600}
figure{margin:1.2rem 0;width:100%}figure svg{display:block;width:100%;height:auto;max-width:100%}
figcaption{font-size:.9rem;color:var(--muted)}
ul.refs{font-size:.9rem;padding-left:1.2rem}ul.refs .cite{font-weight:600}
footer{margin-top:2.5rem;font-size:.8rem;color:var(--muted);border-top:1px solid #ddd;padding-top:.6rem}
footer code{word-break:break-all}
button{font-size:.85rem}
@media (max-width:900px){
  #families thead{display:none}#families,#families tbody{display:block}
  #families tr{display:grid;grid-template-columns:minmax(6rem,auto) 1fr auto auto;column-gap:.7rem;padding:.45rem 0;
    border-bottom:1px solid var(--rule)}
  #families td{border:0;padding:.1rem .2rem}
  #families td.err,#families td.formula{grid-column:1/-1;max-width:none}
  #families td.num::before{content:attr(data-label) ": ";color:var(--muted);font-size:.8rem}
}
@media (max-width:600px){body{padding:0 .6rem}.headline{font-size:1.1rem}
  #families tr{grid-template-columns:1fr 1fr}#families td:nth-child(2){grid-column:1/-1}}
@media print{
  body{max-width:none;margin:0;padding:0;font-size:10pt;color:#000}
  .no-print,button,script{display:none !important}
  .formula.hidden{display:revert !important}
  .summary,.warning{background:none;border:1px solid #999}
  h2{break-after:avoid}figure,tr,.summary,.warning{break-inside:avoid}
  .scroll{overflow:visible}a{color:#000}
}
"""

# a few lines of JS: show or hide the formula column (what the headless-browser test guards)
_JS = """
document.addEventListener('DOMContentLoaded', function () {
  var button = document.getElementById('toggle-formulas');
  if (!button) { return; }
  button.addEventListener('click', function () {
    var cells = document.querySelectorAll('.formula');
    var hide = !cells.length || !cells[0].classList.contains('hidden');
    cells.forEach(function (c) { c.classList.toggle('hidden', hide); });
    button.textContent = hide ? 'show formulas' : 'hide formulas';
  });
});
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _round_safe(x: float, digits: int, up: bool) -> float:
    """x to ``digits`` significant digits, never below x (``up``) or above it (else), compared as floats."""
    if x is None or not math.isfinite(x) or x <= 0:
        return x
    p = digits - 1 - math.floor(math.log10(x))
    scale = 10.0**p
    r = round(x * scale)  # the nearest candidate first, so that 0.19 prints as 0.19, not 0.2
    step = 1 if up else -1
    while (r / scale < x) if up else (r / scale > x):
        r += step
    return r / scale


def _up(x: float, digits: int = 3) -> float:
    """x rounded *up* to ``digits`` significant digits (an upper bound stays an upper bound when printed)."""
    return _round_safe(x, digits, True)


def _down(x: float, digits: int = 3) -> float:
    return _round_safe(x, digits, False)


def _pct(x: float, *, up: bool = True) -> str:
    """A probability as a percentage, rounded towards the safe side."""
    if x is None:
        return "—"
    y = (_up if up else _down)(100.0 * x)
    if y == 0:
        return "0%"
    if y >= 1:
        return f"{y:.3g}%"
    return f"{y:.2g}%"


def _num(x, up: bool | None = None) -> str:
    """A table cell's number: 4 decimals (4 significant digits when tiny or huge), rounded outward when ``up`` is
    given — an upper end up, a lower end down — so that the printed bracket still contains the computed one."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            return f"{x:.4g}"
        if x == 0 or (1e-3 <= abs(x) < 1e5):
            r = round(x * 1e4)
            if up is not None:
                while (r / 1e4 < x) if up else (r / 1e4 > x):
                    r += 1 if up else -1
            return f"{r / 1e4:.4f}"
        if up is not None and x > 0:
            x = _round_safe(x, 4, up)
        return f"{x:.4g}"
    return _e(x)


# -- the summary -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sentence:
    """One sentence of the plain-language summary, made as text: its ``parts`` in order, each with whether the
    page emphasises it. :attr:`text` is what the terminal prints, :attr:`html` what the page shows."""

    parts: tuple[tuple[str, bool], ...]

    @property
    def text(self) -> str:
        return "".join(p for p, _ in self.parts)

    @property
    def html(self) -> str:
        return "".join(f"<strong>{_e(p)}</strong>" if strong else _e(p) for p, strong in self.parts)


def _sentence(*parts) -> Sentence:
    """A :class:`Sentence` of plain strings and :func:`_strong` parts."""
    return Sentence(tuple(p if isinstance(p, tuple) else (p, False) for p in parts))


def _strong(text: str) -> tuple[str, bool]:
    return (text, True)


def summary(report: RiskReport) -> list[Sentence]:
    """The plain-language summary, computed from the report's numbers (upper bounds rounded up)."""
    typed = RiskReport.from_dict(report)
    s = typed.summary
    out = [_sentence(f"An informed adversary with {_prior_text(report)} reconstructs a training example at most ",
                     _strong(_pct(s.rero_upper)), f" of the time (a blind guess: {_pct(s.kappa, up=False)}).")]
    eps = s.epsilon
    if eps is not None and math.isfinite(eps):
        shown = _up(eps)
        rule = (f" (ε = {eps:.6g} rounded up to 3 significant digits, so the stated value is still a bound)"
                if shown != eps else "")
        out.append(_sentence(f"This release is (ε = {shown:g}, δ = {s.delta:g})-differentially private{rule}."))
    elif eps is not None:
        out.append(_sentence(f"Its ε at δ = {s.delta:g} is unbounded: the (ε, δ) guarantee says nothing here."))
    if s.membership_advantage_upper is not None:
        out.append(_sentence("No membership-inference attack beats a coin flip by more than "
                             f"{_pct(s.membership_advantage_upper)} (TPR − FPR)."))
    segs = typed.release.get("segments")
    if segs:  # a schedule (a noise scheduler's run: every step may differ): say how large it is
        key = "concentration" if "concentration" in segs[0] else "noise_multiplier"
        lv, qs = [d[key] for d in segs], [d["sample_rate"] for d in segs]
        out.append(_sentence(f"The release is a schedule of {len(segs):,} segments ({typed.release['steps']:,} steps "
                             f"in all): {key.replace('_', ' ')} {min(lv):.4g} to {max(lv):.4g}, sample rate "
                             f"{min(qs):.4g} to {max(qs):.4g}."))
    if s.target_rero is not None:
        verdict = ("meets",) if s.meets_target_now else ("does ", _strong("not"), " meet")
        out.append(_sentence("It ", *verdict, f" the target risk of {_pct(s.target_rero, up=False)}: the smallest "
                             f"noise multiplier that does is σ = {_up(s.calibrated_noise_multiplier, 4):g}."))
    return out


def summary_sentences(report: RiskReport) -> list[str]:
    """The plain-language summary as the page shows it: escaped HTML sentences (:func:`summary`)."""
    return [s.html for s in summary(report)]


#: How the page rounds (stated on the page, under the summary).
ROUNDING = ("Rounding: in the summary, upper bounds (reconstruction success, ε, membership advantage) are rounded "
            "up to 3 significant digits and the calibrated σ up to 4 (more noise still meets the target), blind "
            "guesses and targets down, so every \u201cat most\u201d stays true; "
            "the table rounds each number outward to 4 decimals (lower ends down, upper ends up), so a printed "
            "bracket still contains the computed one; report.json holds every number in full.")


# -- the table ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TableRow:
    """One row of the page's table (and of ``reconrisk report``'s terminal table): ``na`` for a family not computed
    (its ``formula`` then holds the reason), ``vacuous`` for a probability bound of 1 (or ε = ∞)."""

    family: str
    quantity: str
    lower: float | None
    upper: float | None
    error: str
    formula: str
    na: bool = False
    vacuous: bool = False


def _row(family: str, quantity: str, lower, upper, error: str, formula: str, na: bool = False) -> TableRow:
    return TableRow(family, quantity, lower, upper, error, formula, na)


def _na_row(family: str, quantity: str, na: Unavailable) -> TableRow:
    return _row(family, quantity, None, None, "", na.reason, na=True)


def table_rows(report: RiskReport) -> list[TableRow]:
    """One row per number of the page's table (families whose assumptions fail get a row with the reason)."""
    rep = RiskReport.from_dict(report)
    rows = []
    rr, e = rep.rero, rep.epsilon
    rows.append(_row("privacy", f"ε at δ = {e.delta:g}", None, e.value, f"{e.accountant.upper()} accountant",
                     e.bound.formula))
    for key, label, r in rr.rows():
        if isinstance(r, Unavailable):
            rows.append(_na_row("ReRo", f"reconstruction success, {label}", r))
            continue
        if key == "mc":
            err = f"{r.confidence:.0%} CI; estimate {r.estimate:.4g}"
        elif key in ("pld", "closed_form"):
            err = "certified bracket" if key == "pld" else "exact"
        else:
            err = "certified upper bound"
        ref = r.details.get("reference")  # fixed-size batches: which reference won
        rows.append(_row("ReRo", f"reconstruction success at κ = {rr.kappa:.4g}, {label}"
                         f"{f', {ref} reference' if ref else ''}", r.lower, r.upper, err, r.formula))
    for r in rep.risks:
        err = "exact" if r.bound.method == "closed_form" else "certified bracket"
        rows.append(_row("operational risk", f"{r.measure} (blind guess {r.baseline:.4g})", r.bound.lower,
                         r.bound.upper, err, r.bound.formula))
    t = rep.tradeoff
    rows.append(_row("trade-off", f"max width of the f(α) bracket, {len(t.alpha)} α in [{t.alpha[0]:g}, "
                     f"{t.alpha[-1]:g}]", None, t.max_width, t.method, t.formula + " (plot below)"))
    f = rep.fano
    if isinstance(f, Unavailable):
        rows.append(_na_row("Fano", "reconstruction success", f))
    else:
        rows.append(_row("Fano", "reconstruction success (uniform prior)", None, f.success_upper,
                         f"certified; I ≤ {f.mutual_information:.4g} nats", f.source))
        rows.append(_row("Fano", "advantage (success − 1/N)/(1 − 1/N)", None, f.advantage_upper, "certified", f.formula))
    m = rep.mse
    if isinstance(m, Unavailable):
        rows.append(_na_row("MSE (Guo)", "per-coordinate MSE of any unbiased attack", m))
    else:
        rows.append(_row("MSE (Guo)", "per-coordinate MSE of any unbiased attack ≥", m.mse_lower_bound, None,
                         f"exact given ε₂ = {m.rdp_epsilon:.4g}", m.formula))
    a = rep.analytic
    if isinstance(a, Unavailable):
        rows.append(_na_row("analytic attack", "MSE/PSNR ReRo", a))
    else:
        rows.append(_row("analytic attack", f"P(MSE ≤ {a.mse['eta']:g})", None, a.mse["rero"], "exact (Riess et al. 2024)",
                         a.formula))
        rows.append(_row("analytic attack", f"P(PSNR ≥ {a.psnr['eta']:g} dB)", None, a.psnr["rero"],
                         "exact (Riess et al. 2024)", "; ".join(a.assumptions)))
    c = rep.capacity
    if isinstance(c, Unavailable):
        rows.append(_na_row("Bayes' capacity", "log C", c))
    else:
        rows.append(_row("Bayes' capacity", "log C (nats)", None, c.log_capacity, "exact closed form", c.formula))
        rows.append(_row("Bayes' capacity", "one-try success ≤ κ·C", None, c.success_upper, "certified", c.formula))
    cal = rep.calibration
    if isinstance(cal, Unavailable):
        rows.append(_na_row("calibration", "σ for a target risk", cal))
    else:
        lo, hi = cal.noise_multiplier_bracket
        rows.append(_row("calibration", f"smallest σ with ReRo ≤ {cal.target_rero:g}", None, cal.noise_multiplier,
                         f"σ bracket [{lo:.5g}, {hi:.5g}]", f"{cal.formula}; ε = {cal.epsilon:.4g} there"))
    at = rep.attack
    if isinstance(at, Unavailable):
        rows.append(_na_row("empirical attack", "audit", at))
    else:
        rows += _attack_rows(at)
    return [replace(r, vacuous=True, error="vacuous: a probability bound of 1 says nothing for this release")
            if _vacuous(r) else r for r in rows]


def _attack_rows(at) -> list[TableRow]:
    """The audit's rows: each attack's success with its interval, and what its successes refute."""
    rows = []
    for name, r in at.rates.items():
        rows.append(_row("empirical attack", f"{name} success ({r['successes']}/{r['trials']} trials)", r["ci_low"],
                         r["ci_high"], f"95% CI; rate {r['rate']:.4g}", at.formula))
        emp = at.empirical.get(name)
        if emp is not None:  # what the successes refute, beside the certified upper bounds
            e, rero = emp["epsilon"], emp["rero"]
            rows.append(_row("empirical lower bound", f"ReRo at κ = {rero['kappa']:.3g} ({name})", rero["lower"], None,
                             "one-sided 95% (Clopper-Pearson)", rero["formula"]))
            rows.append(_row("empirical lower bound", f"ε at δ = {e['delta']:g} ({name})", e["lower"], None,
                             f"one-sided 95%; at most {e['max_possible']:.3g} from {e['trials']} trials", e["formula"]))
    return rows


#: Rows whose upper end is a probability: an upper end of 1 certifies nothing.
_PROBABILITY_FAMILIES = ("ReRo", "Fano", "analytic attack")


def _vacuous(r: TableRow) -> bool:
    up = r.upper
    if r.na or up is None:
        return False
    if r.family == "privacy":
        return isinstance(up, float) and math.isinf(up)
    prob = r.family in _PROBABILITY_FAMILIES or (r.family == "Bayes' capacity" and r.quantity.startswith("one-try"))
    return prob and up >= 1.0


def _table_html(rows: list[TableRow]) -> str:
    head = ("<thead><tr><th>family</th><th>quantity</th><th>lower</th><th>upper</th><th>error</th>"
            "<th class='formula'>formula / source</th></tr></thead>")
    body = []
    for r in rows:
        cls = " class='vacuous'" if r.vacuous else ""
        upper = "1 (vacuous)" if r.vacuous and r.upper == 1 else _num(r.upper, up=True)
        body.append(f"<tr{cls}><td>{_e(r.family)}</td><td>{_e(r.quantity)}</td>"
                    f"<td class='num' data-label='lower'>{_num(r.lower, up=False)}</td>"
                    f"<td class='num' data-label='upper'>{upper}</td>"
                    f"<td class='err'>{_e(r.error)}</td>"
                    f"<td class='formula'>{formula_html(r.formula)}</td></tr>")
    return f"<table id='families'>{head}<tbody>{''.join(body)}</tbody></table>"


def _na_html(rows: list[TableRow]) -> str:
    """The families whose assumptions fail for this release, each with its reason (not empty table rows)."""
    if not rows:
        return ""
    items = "".join(f"<li><b>{_e(r.family)}</b> ({_e(r.quantity)}): {formula_html(r.formula)}</li>" for r in rows)
    return f"<h3>Not computed for this release</h3><ul class='na' id='not-computed'>{items}</ul>"


# -- the page ----------------------------------------------------------------------------------------
#: Works that only some releases' rows cite (a sampler's or a closed form's source): listed when the page names them.
CITED_IF_NAMED = (
    ("Balle & Wang 2018", "Borja Balle and Yu-Xiang Wang. Improving the Gaussian Mechanism for Differential Privacy: "
     "Analytical Calibration and Optimal Denoising. International Conference on Machine Learning (ICML) 2018."),
    ("Wang, Balle & Kasiviswanathan 2019", "Yu-Xiang Wang, Borja Balle and Shiva Prasad Kasiviswanathan. Subsampled "
     "R\u00e9nyi Differential Privacy and Analytical Moments Accountant. AISTATS 2019."),
    ("Cherubin et al. 2024", "Giovanni Cherubin, Boris K\u00f6pf, Andrew Paverd, Shruti Tople, Lukas Wutschitz and "
     "Santiago Zanella-B\u00e9guelin. Closed-Form Bounds for DP-SGD against Record-level Inference. USENIX Security 2024."),
    ("Bu et al. 2020", "Zhiqi Bu, Jinshuo Dong, Qi Long and Weijie J. Su. Deep Learning with Gaussian Differential "
     "Privacy. Harvard Data Science Review 2(3), 2020."),
    ("Steinke, Nasr & Jagielski 2023", "Thomas Steinke, Milad Nasr and Matthew Jagielski. Privacy Auditing with One (1) "
     "Training Run. NeurIPS 2023."),
    ("Mahloujifar, Melis & Chaudhuri 2025", "Saeed Mahloujifar, Luca Melis and Kamalika Chaudhuri. Auditing "
     "f-Differential Privacy in One Run. 2025."),
)

#: The papers the page cites, in full, once (the rows cite them by author and year).
REFERENCES = (
    ("Hayes, Mahloujifar & Balle 2023", "Jamie Hayes, Saeed Mahloujifar and Borja Balle. Bounding Training Data "
     "Reconstruction in DP-SGD. Advances in Neural Information Processing Systems (NeurIPS) 2023."),
    ("Guo, Karrer, Chaudhuri & van der Maaten 2022", "Chuan Guo, Brian Karrer, Kamalika Chaudhuri and Laurens van "
     "der Maaten. Bounding Training Data Reconstruction in Private (Deep) Learning. International Conference on "
     "Machine Learning (ICML) 2022; arXiv:2201.12383."),
    ("Balle, Cherubin & Hayes 2022", "Borja Balle, Giovanni Cherubin and Jamie Hayes. Reconstructing Training Data "
     "with Informed Adversaries. IEEE Symposium on Security and Privacy (S&P) 2022; arXiv:2201.04845."),
    ("Riess et al. 2024", "Anneliese Riess, Alexander Ziller, Stefan Kolek, Daniel Rueckert, Julia Schnabel and "
     "Georgios Kaissis. From Mean to Extreme: Formal Differential Privacy Bounds on the Success of Real-World Data "
     "Reconstruction Attacks. 2024."),
    ("Riess et al. 2026", "Anneliese Riess, Juan Felipe Gomez, Flavio du Pin Calmon, Julia Anne Schnabel and Georgios "
     "Kaissis. Optimal conversion from R\u00e9nyi Differential Privacy to f-Differential Privacy. arXiv:2602.04562, "
     "2026 (the RDP rows' optimal conversion)."),
    ("Biswas et al. 2024", "Sayan Biswas, Mark Dras, Pedro Faustini, Natasha Fernandes, Annabelle McIver, "
     "Catuscia Palamidessi and Parastoo Sadeghi. Comparing privacy notions for protection against reconstruction "
     "attacks in machine learning. 2024."),
    ("Guo, Sablayrolles & Sanjabi 2022", "Chuan Guo, Alexandre Sablayrolles and Maziar Sanjabi. Analyzing Privacy "
     "Leakage in Machine Learning via Multiple Hypothesis Testing: A Lesson From Fano. arXiv:2210.13662, 2022 "
     "(the page's \u201cGuo et al. 2022b\u201d, Fano's bound)."),
    ("Kulynych et al. 2025", "Bogdan Kulynych, Juan Felipe Gomez, Georgios Kaissis, Jamie Hayes, Borja Balle, "
     "Flavio P. Calmon and Jean Louis Raisaro. Unifying Re-Identification, Attribute Inference, and Data "
     "Reconstruction Risks in Differential Privacy. NeurIPS 2025; arXiv:2507.06969."),
    ("Guerra-Balboa et al. 2026", "Patricia Guerra-Balboa, Annika Sauer, H\u00e9ber H. Arcolezi and Thorsten Strufe. "
     "Understanding Disclosure Risk in Differential Privacy with Applications to Noise Calibration and Auditing "
     "(Extended Version). arXiv:2603.12142, 2026 (reconstruction advantage, RAD)."),
    ("Chatzikokolakis et al. 2023", "Konstantinos Chatzikokolakis, Giovanni Cherubin, Catuscia Palamidessi and "
     "Carmela Troncoso. Bayes Security: A Not-So-Average Metric. IEEE Computer Security Foundations Symposium "
     "(CSF) 2023."),
    ("Dong, Roth & Su 2022", "Jinshuo Dong, Aaron Roth and Weijie J. Su. Gaussian Differential Privacy. Journal of "
     "the Royal Statistical Society Series B 84(1), 2022."),
)

def _release_text(rel) -> str:
    if "dp_event" in rel:
        return f"the dp_accounting event {rel['dp_event']} ({rel['relation'].replace('_', '/')} neighbours)"
    if "segments" in rel:
        return f"{len(rel['segments'])} segments, T = {rel['steps']:,} steps, clip norm C = {rel['clip_norm']:g}"
    sampler = {"fixed": " (fixed-size batches, replace-one)", "full": " (full batch)"}.get(rel.get("sampler"), "")
    return (f"noise multiplier σ = {rel['noise_multiplier']:g}, sample rate q = {rel['sample_rate']:g}{sampler}, "
            f"T = {rel['steps']:,} steps, clip norm C = {rel['clip_norm']:g}")


def _prior_text(report: RiskReport) -> str:
    s = RiskReport.from_dict(report).summary
    if s.prior_size:
        return f"a 1-in-{s.prior_size:,} prior"
    return f"a prior whose blind guess succeeds {_pct(s.kappa, up=False)} of the time"


def _warnings(report: RiskReport, provenance: Provenance) -> str:
    out = []
    if provenance.prior is not None and provenance.prior.defaulted:
        out.append(f"<strong>No prior was given.</strong> Every number on this page assumes {_e(_prior_text(report))} "
                   f"(κ = {report.rero.kappa:g}, the default of Hayes, Mahloujifar &amp; Balle 2023). The risk "
                   "depends on it: rerun with <code>--prior-size N</code> (N equally likely candidates) or "
                   "<code>--kappa</code> for the prior of your data.")
    src = provenance.release_source
    if str(src.get("clip_norm_source", "")).startswith("default") and report.capacity.applicable:
        out.append("The Opacus file holds no clip norm (max_grad_norm): Bayes' capacity assumes C = 1. "
                   "Give <code>--clip-norm</code>.")
    return "".join(f"<p class='warning' role='alert'>{w}</p>" for w in out)


def _headline(report: RiskReport) -> str:
    return (f"At most <strong>{_pct(report.summary.rero_upper)}</strong> reconstruction success with "
            f"{_e(_prior_text(report))} (a blind guess: {_pct(report.summary.kappa, up=False)})")


def _references(page_text: str = "") -> str:
    """Every work of :data:`REFERENCES`, and those of :data:`CITED_IF_NAMED` that ``page_text`` cites."""
    extra = tuple(r for r in CITED_IF_NAMED if r[0] in page_text)
    items = "".join(f"<li id='ref-{i}'><span class='cite'>{_e(short)}</span>: {_e(full)}</li>"
                    for i, (short, full) in enumerate(REFERENCES + extra))
    return f"<section id='references'><h2>References</h2><ul class='refs'>{items}</ul></section>"


def render_html(report: RiskReport, provenance: Provenance, figures: tuple[str, str] | None = None) -> str:
    """The whole page as one string (no external resource). ``figures``: the two inline SVGs of
    :func:`reconrisk._src.report.report_plots.figures` when already drawn (they depend on the report only)."""
    from .. import __version__

    report, provenance = RiskReport.from_dict(report), Provenance.from_dict(provenance)
    rel_text = _release_text(report.release)
    summary = "".join(f"<p>{s}</p>" for s in summary_sentences(report))
    rows = table_rows(report)
    shown = [r for r in rows if not r.na]
    tradeoff_fig, prior_fig = figures if figures is not None else draw(report)
    figs = (f"<figure>{tradeoff_fig}<figcaption>Certified trade-off curve on log–log axes: any "
            "membership test's true-positive rate at false-positive rate α lies below the band; the lower panel is "
            "the band's width, the certificate's own error (or says that there is none to draw).</figcaption></figure>"
            f"<figure>{prior_fig}<figcaption>Reconstruction success bound against the prior size N "
            "(κ = 1/N).</figcaption></figure>")
    src = provenance.release_source
    src_text = ", ".join(f"{k}: {v}" for k, v in src.items() if v is not None)
    footer = (f"<footer><p>reconrisk {_e(__version__)} · release: {_e(rel_text)} · {_e(src_text)}</p>"
              f"<p>command: <code>{_e(provenance.command)}</code></p>"
              f"<p>the same numbers are in <code>report.json</code></p></footer>")
    title = f"Reconstruction risk: at most {_pct(report.summary.rero_upper)} with {_prior_text(report)}"
    body = _table_html(shown) + _na_html([r for r in rows if r.na]) + figs + summary  # what may cite a work
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>Reconstruction risk report</h1><p class='headline' id='headline'>{_headline(report)}</p>"
            f"<p class='release'>DP-SGD release: {_e(rel_text)}</p></header>"
            f"{_warnings(report, provenance)}"
            f"<section class='summary' id='summary'>{summary}</section>"
            f"<p class='note' id='rounding'>{_e(ROUNDING)}</p>"
            "<h2>Every bound family</h2>"
            "<p class='note'>Certified bounds hold for every attack; estimates carry their error. A bound of 1 says "
            "nothing for this release and is marked <em>vacuous</em>.</p>"
            "<p class='no-print'><button id='toggle-formulas' type='button'>hide formulas</button></p>"
            f"<div class='scroll'>{_table_html(shown)}</div>"
            f"{_na_html([r for r in rows if r.na])}"
            f"<h2>Plots</h2>{figs}{_references(html.unescape(body))}{footer}<script>{_JS}</script></body></html>")


#: Checks run on every ``report.json`` before it is written, each called with the JSON-ready dict (none by default;
#: the test suite adds its JSON Schema validation, ``tests/conftest.py``, so every report a test writes is checked).
JSON_CHECKS: list = []


def write_report(report: RiskReport, out_dir, provenance: Provenance,
                 figures: tuple[str, str] | None = None) -> dict:
    """Write ``report.html`` and ``report.json`` (:func:`~reconrisk._src.report_model.report_json`: the same numbers +
    provenance) into ``out_dir``, atomically. ``provenance``: a :class:`~reconrisk._src.report_model.Provenance` (or its
    dict); an empty ``reconrisk_version`` is this version's."""
    from .. import __version__

    report, provenance = RiskReport.from_dict(report), Provenance.from_dict(provenance)
    if not provenance.reconrisk_version:
        provenance = replace(provenance, reconrisk_version=__version__)
    payload = json.loads(_io.dumps(report_json(report, provenance)))
    for check in JSON_CHECKS:
        check(payload)
    out = _io.ensure_out_dir(out_dir)
    page = render_html(report, provenance, figures)
    json_path = _io.write_json(payload, out, "report.json")
    html_path = _io.atomic_write(Path(out) / "report.html", page)
    return {"html": str(html_path), "json": str(json_path)}
