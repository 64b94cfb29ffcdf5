"""``reconrisk report``'s page: one self-contained HTML file and ``report.json`` (drawing only).

:func:`write_report` takes the dict of :func:`reconrisk.experiments.riskreport.risk_report` and writes
``report.html`` (inline CSS, plots as inline base64 PNG drawn with matplotlib's Agg backend, no external URL,
no network) and ``report.json`` (the same numbers, plus provenance), each atomically (:mod:`reconrisk._io`).
Every piece of user-supplied text (file paths, the command line) is escaped with :func:`html.escape`.

The page opens with a plain-language summary whose numbers come from the report (rounded *up* where they are
upper bounds, so "at most" stays true), then one table of every bound family, the plots (trade-off curve; ReRo
against prior size), and a provenance footer (version, release, command).
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

from .. import _io

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.summary{background:#f3f7fb;border-left:4px solid #2a6db0;padding:.8rem 1rem;font-size:1.05rem}
.summary p{margin:.35rem 0}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border-bottom:1px solid #e3e3e3;padding:.3rem .4rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.na td{color:#777}
.formula{font-family:ui-monospace,monospace;font-size:.78rem;color:#444}
.hidden{display:none}
figure{margin:1rem 0}figure img{max-width:100%}
footer{margin-top:2.5rem;font-size:.8rem;color:#555;border-top:1px solid #ddd;padding-top:.6rem}
footer code{word-break:break-all}
button{font-size:.85rem}
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


def _num(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if x == 0 or (1e-3 <= abs(x) < 1e5):
            return f"{x:.4f}"
        return f"{x:.4g}"
    return _e(x)


# -- the summary -----------------------------------------------------------------------------------
def summary_sentences(report: dict) -> list[str]:
    """The plain-language summary, as escaped HTML sentences computed from the report's numbers."""
    s = report["summary"]
    who = (f"a 1-in-{s['prior_size']:,} prior" if s.get("prior_size")
           else f"a prior whose blind guess succeeds {_pct(s['kappa'], up=False)} of the time")
    out = [f"An informed adversary with {_e(who)} reconstructs a training example at most "
           f"<strong>{_pct(s['rero_upper'])}</strong> of the time (a blind guess: {_pct(s['kappa'], up=False)})."]
    eps = s.get("epsilon")
    if eps is not None and math.isfinite(eps):
        out.append(f"This release is (ε = {_up(eps):g}, δ = {s['delta']:g})-differentially private.")
    elif eps is not None:
        out.append(f"Its ε at δ = {s['delta']:g} is unbounded: the (ε, δ) guarantee says nothing here.")
    if s.get("membership_advantage_upper") is not None:
        out.append("No membership-inference attack beats a coin flip by more than "
                   f"{_pct(s['membership_advantage_upper'])} (TPR − FPR).")
    if s.get("target_rero") is not None:
        verdict = "meets" if s["meets_target_now"] else "does <strong>not</strong> meet"
        out.append(f"It {verdict} the target risk of {_pct(s['target_rero'], up=False)}: the smallest noise multiplier "
                   f"that does is σ = {_up(s['calibrated_noise_multiplier'], 4):g}.")
    return out


# -- the table ---------------------------------------------------------------------------------------
def _row(family: str, quantity: str, lower, upper, error: str, formula: str, na: bool = False) -> dict:
    return {"family": family, "quantity": quantity, "lower": lower, "upper": upper, "error": error,
            "formula": formula, "na": na}


def table_rows(report: dict) -> list[dict]:
    """One row per number of the page's table (families whose assumptions fail get a row with the reason)."""
    rows = []
    rr = report["rero"]
    k = rr["kappa"]
    rows.append(_row("privacy", f"ε at δ = {report['epsilon']['delta']:g}", None, report["epsilon"]["value"],
                     f"{report['epsilon']['accountant'].upper()} accountant", report["epsilon"]["formula"]))
    for key, label in (("closed_form", "exact (GDP closed form)"), ("pld", "PLD bracket"), ("rdp", "RDP, Eq. (2)"),
                       ("dp", "from (ε, δ)"), ("mc", "Monte Carlo")):
        r = rr.get(key)
        if r is None:
            continue
        if r.get("applicable") is False:
            rows.append(_row("ReRo", f"reconstruction success, {label}", None, None, "", r["reason"], na=True))
            continue
        if key == "mc":
            err = f"{r['confidence']:.0%} CI; estimate {r['estimate']:.4g}"
        elif key in ("pld", "closed_form"):
            err = "certified bracket" if key == "pld" else "exact"
        else:
            err = "certified upper bound"
        rows.append(_row("ReRo", f"reconstruction success at κ = {k:.4g}, {label}", r.get("lower"), r["upper"], err,
                         r.get("formula", "")))
    for r in report["risks"]:
        err = "exact" if r.get("method") == "closed_form" else "certified bracket"
        rows.append(_row("operational risk", f"{r['measure']} (blind guess {r['baseline']:.4g})", r["lower"],
                         r["upper"], err, r["formula"]))
    t = report["tradeoff"]
    rows.append(_row("trade-off", f"max width of the f(α) bracket, {len(t['alpha'])} α in [{t['alpha'][0]:g}, "
                     f"{t['alpha'][-1]:g}]", None, t["max_width"], t["method"], t["formula"] + " (plot below)"))
    f = report["fano"]
    if f.get("applicable"):
        rows.append(_row("Fano", "reconstruction success (uniform prior)", None, f["success_upper"],
                         f"certified; I ≤ {f['mutual_information']:.4g} nats", f["source"]))
        rows.append(_row("Fano", "advantage (success − 1/N)/(1 − 1/N)", None, f["advantage_upper"], "certified", f["formula"]))
    else:
        rows.append(_row("Fano", "reconstruction success", None, None, "", f["reason"], na=True))
    m = report["mse"]
    rows.append(_row("MSE (Guo)", "per-coordinate MSE of any unbiased attack ≥", m["mse_lower_bound"], None,
                     f"exact given ε₂ = {m['rdp_epsilon']:.4g}", m["formula"]))
    a = report["analytic"]
    if a.get("applicable"):
        rows.append(_row("analytic attack", f"P(MSE ≤ {a['mse']['eta']:g})", None, a["mse"]["rero"], "exact (Riess et al. 2024)",
                         a["formula"]))
        rows.append(_row("analytic attack", f"P(PSNR ≥ {a['psnr']['eta']:g} dB)", None, a["psnr"]["rero"], "exact (Riess et al. 2024)",
                         "; ".join(a["assumptions"])))
    else:
        rows.append(_row("analytic attack", "MSE/PSNR ReRo", None, None, "", a["reason"], na=True))
    c = report["capacity"]
    if c.get("applicable"):
        rows.append(_row("Bayes' capacity", "log C (nats)", None, c["log_capacity"], "exact closed form", c["formula"]))
        rows.append(_row("Bayes' capacity", "one-try success ≤ κ·C", None, c["success_upper"], "certified", c["formula"]))
    else:
        rows.append(_row("Bayes' capacity", "log C", None, None, "", c["reason"], na=True))
    cal = report["calibration"]
    if cal.get("applicable"):
        rows.append(_row("calibration", f"smallest σ with ReRo ≤ {cal['target_rero']:g}", None, cal["noise_multiplier"],
                         f"σ bracket [{cal['noise_multiplier_bracket'][0]:.5g}, {cal['noise_multiplier_bracket'][1]:.5g}]",
                         f"{cal['formula']}; ε = {cal['epsilon']:.4g} there"))
    else:
        rows.append(_row("calibration", "σ for a target risk", None, None, "", cal["reason"], na=True))
    at = report["attack"]
    if at.get("applicable"):
        for name, r in at["attacks"].items():
            lo, hi = r["ci_low"], r["ci_high"]
            rows.append(_row("empirical attack", f"{name} success ({r['successes']}/{r['trials']} trials)", lo, hi,
                             f"95% CI; rate {r['rate']:.4g}", at["formula"]))
    else:
        rows.append(_row("empirical attack", "audit", None, None, "", at["reason"], na=True))
    return rows


def _table_html(rows: list[dict]) -> str:
    head = ("<tr><th>family</th><th>quantity</th><th>lower</th><th>upper</th><th>error</th>"
            "<th class='formula'>formula / source</th></tr>")
    body = []
    for r in rows:
        cls = " class='na'" if r["na"] else ""
        body.append(f"<tr{cls}><td>{_e(r['family'])}</td><td>{_e(r['quantity'])}</td>"
                    f"<td class='num'>{_num(r['lower'])}</td><td class='num'>{_num(r['upper'])}</td>"
                    f"<td>{_e(r['error'])}</td><td class='formula'>{_e(r['formula'])}</td></tr>")
    return f"<table id='families'>{head}{''.join(body)}</table>"


# -- the plots ------------------------------------------------------------------------------------
def _png(fig) -> str:
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    finally:
        _io.pyplot().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def tradeoff_png(report: dict) -> str:
    plt = _io.pyplot()
    t = report["tradeoff"]
    fig, ax = plt.subplots(figsize=(5.2, 4.0))
    ax.fill_between(t["alpha"], t["power_lower"], t["power_upper"], color="#2a6db0", alpha=0.35, label="certified bracket")
    ax.plot(t["alpha"], t["power_upper"], color="#2a6db0", lw=1.2, label="TPR ≤ 1 − f(α)")
    ax.plot(t["alpha"], t["alpha"], color="#999", lw=0.8, ls="--", label="blind guess")
    ax.set_xscale("log")
    ax.set_xlabel("false-positive rate α")
    ax.set_ylabel("true-positive rate")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Trade-off curve ({t['method']})")
    ax.legend(loc="upper left", fontsize=8)
    return _png(fig)


def prior_png(report: dict) -> str:
    plt = _io.pyplot()
    p = report["rero_vs_prior"]
    fig, ax = plt.subplots(figsize=(5.2, 4.0))
    ax.fill_between(p["prior_size"], p["lower"], p["upper"], color="#2a6db0", alpha=0.4)
    ax.plot(p["prior_size"], p["upper"], "o-", color="#2a6db0", ms=3, label="ReRo bound (PLD)")
    ax.plot(p["prior_size"], p["rdp"], "s--", color="#c0392b", ms=3, label="RDP bound, Eq. (2)")
    ax.plot(p["prior_size"], p["fano"], "^-.", color="#7d3c98", ms=3, label="Fano (App. H)")
    ax.plot(p["prior_size"], p["kappa"], ":", color="#777", label="blind guess 1/N")
    at = report["attack"]
    if at.get("applicable"):
        r = at["attack"]
        lo, hi = r["ci_low"], r["ci_high"]
        ax.errorbar([at["prior_size"]], [r["rate"]], yerr=[[r["rate"] - lo], [hi - r["rate"]]], fmt="D", color="k",
                    label=f"attack ({at['attack_name']}, 95% CI)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prior size N (κ = 1/N)")
    ax.set_ylabel("reconstruction success")
    ax.set_title("ReRo against prior size")
    ax.legend(fontsize=8)
    return _png(fig)


# -- the page ----------------------------------------------------------------------------------------
def render_html(report: dict, provenance: dict) -> str:
    """The whole page as one string (no external resource)."""
    from .. import __version__

    rel = report["release"]
    if "segments" in rel:
        rel_text = f"{len(rel['segments'])} segments, {rel['steps']} steps, C = {rel['clip_norm']:g}"
    else:
        rel_text = (f"σ = {rel['noise_multiplier']:g}, q = {rel['sample_rate']:g}, T = {rel['steps']}, "
                    f"C = {rel['clip_norm']:g}")
    summary = "".join(f"<p>{s}</p>" for s in summary_sentences(report))
    figs = (f"<figure><img alt='trade-off curve' src='data:image/png;base64,{tradeoff_png(report)}'>"
            "<figcaption>Certified trade-off curve: any membership test's TPR at FPR α lies below the band.</figcaption>"
            "</figure>"
            f"<figure><img alt='ReRo against prior size' src='data:image/png;base64,{prior_png(report)}'>"
            "<figcaption>Reconstruction success bound against the prior size.</figcaption></figure>")
    src = provenance.get("release_source", {})
    src_text = ", ".join(f"{k}: {v}" for k, v in src.items() if v is not None)
    footer = (f"<footer><p>reconrisk {_e(__version__)} · release: {_e(rel_text)} · {_e(src_text)}</p>"
              f"<p>command: <code>{_e(provenance.get('command', ''))}</code></p>"
              f"<p>the same numbers are in <code>report.json</code></p></footer>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>reconrisk report: {_e(rel_text)}</title><style>{_CSS}</style></head><body>"
            f"<h1>Reconstruction risk report</h1><p>{_e(rel_text)}</p>"
            f"<section class='summary' id='summary'>{summary}</section>"
            "<h2>Every bound family</h2><p><button id='toggle-formulas' type='button'>hide formulas</button></p>"
            f"{_table_html(table_rows(report))}"
            f"<h2>Plots</h2>{figs}{footer}<script>{_JS}</script></body></html>")


def write_report(report: dict, out_dir, provenance: dict) -> dict:
    """Write ``report.html`` and ``report.json`` (same numbers + provenance) into ``out_dir``, atomically."""
    out = _io.ensure_out_dir(out_dir)
    page = render_html(report, provenance)
    payload = {**report, "provenance": provenance}
    json_path = _io.write_json(payload, out, "report.json")
    html_path = _io.atomic_write(Path(out) / "report.html", page)
    return {"html": str(html_path), "json": str(json_path)}
