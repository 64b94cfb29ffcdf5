"""Who is at risk: the per-example audit's figures, JSON and HTML page (drawing only).

* the histogram — the ex-post ReRo_i at κ of every training example, the median and the release's
  worst case (the certified number every example gets without per-example accounting) marked; with a
  filtered run, what each of its examples spent (ex post) and the one number certified for all of them.
* the gallery — the k most exposed examples as images (and, for contrast, the k least exposed), each
  with its ReRo_i, label and the number of steps its gradient was clipped.
* the FIL scatter — ReRo_i against Guo, Karrer, Chaudhuri & van der Maaten 2022's per-example dFIL η̄²
  of the same run, with Spearman's ρ.
* the attack plot — the prior-aware attack's success on the most and least exposed deciles (95 %
  Clopper–Pearson) beside each decile's largest ex-post ReRo_i and the worst case.

:func:`figures` draws each once, as SVG; :func:`write_individual` writes ``per_example.json`` (every
example's numbers), each figure's SVG file and ``per_example.html``, one self-contained page whose section
:func:`section_html` is the "Who is at risk" section (the same drawings inline, escaped text).

Ex-post numbers are labelled "estimate (ex post, not a DP guarantee)" everywhere, a filtered run's spent
numbers included; what a filtered run certifies is its budget, one number for every example ("certified for
every example (filtered run)"). Nothing here computes: :mod:`reconrisk._src.experiments.individual` does, and
every number drawn is one the audit holds (the filtered run's certificate included, never recomputed here).
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from .. import _io
from .._io import pyplot
from .html import _CSS, _pct
from .report_plots import inline_svg, matplotlib_svg

EX_POST_TITLE = "estimate (ex post, not a DP guarantee)"
CERTIFIED_TITLE = "certified for every example (filtered run)"


def _hist_figure(audit):
    plt = pyplot()
    s = audit.setting
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    worst = float(audit.worst_rero.upper)
    bins = np.linspace(s.kappa, max(worst, float(np.max(audit.rero))) * 1.02 + 1e-9, 41)
    ax.hist(audit.rero, bins=bins, color="tab:orange", alpha=0.85,
            label=f"ex-post ReRo_i, {audit.n} examples: {EX_POST_TITLE}")
    if audit.filtered is not None:
        spent, cert = audit.filtered.spent_rero, audit.filtered.rero
        ax.hist(spent, bins=bins, color="tab:green", alpha=0.55,
                label=f"filtered run: what each spent, {EX_POST_TITLE}")
        ax.axvline(cert, color="tab:green", ls="--", lw=1.5,
                   label=f"filtered run: certified {cert:.3f} for every example (budget {audit.filtered.budget:g})")
    med = float(np.median(audit.rero))
    ax.axvline(med, color="tab:orange", ls="-", lw=1.5, label=f"median (ex post) {med:.3f}")
    ax.axvline(worst, color="black", ls="--", lw=1.8, label=f"worst case (certified, every example) {worst:.3f}")
    ax.axvline(s.kappa, color="grey", ls=":", lw=1, label=f"blind guess κ = {s.kappa:g}")
    ax.set_xlabel(f"ReRo_i at κ = {s.kappa:g}: histograms and median ex-post estimates, dashed lines certified")
    ax.set_ylabel("examples")
    ax.set_title(_release_title(audit), fontsize=9)
    ax.legend(fontsize=7.5, loc="upper left")
    ax.grid(True, alpha=0.25)
    fig.tight_layout()
    return fig


def _release_title(audit) -> str:
    s = audit.setting
    r = s.release
    eps = f"ε = {s.epsilon:g}, " if s.epsilon is not None else ""
    return (f"{eps}σ = {r.noise_multiplier:.4g}, q = {r.sample_rate:g}, T = {r.steps}, C = {r.clip_norm:g}, "
            f"learning rate {s.learning_rate:g}, N = {audit.n}")


def _gallery_figure(audit, k: int | None = None, least: bool = True):
    plt = pyplot()
    top = audit.most_exposed if k is None else audit.most_exposed[:k]
    k = top.size
    order = np.lexsort((np.arange(audit.n), audit.rero))
    rows = [("most exposed", top)] + ([("least exposed", order[:k])] if least else [])
    cols = min(k, 8)
    nrows = sum(-(-r[1].size // cols) for r in rows)
    fig, axes = plt.subplots(nrows, cols, figsize=(1.25 * cols, 1.55 * nrows), squeeze=False)
    h, w, c = audit.image_shape
    clip = audit.setting.release.clip_norm
    r0 = 0
    for name, idx in rows:
        for j, i in enumerate(idx):
            ax = axes[r0 + j // cols][j % cols]
            img = audit.x[i].reshape(h, w, c)
            ax.imshow(img[..., 0] if c == 1 else img, cmap="gray_r" if c == 1 else None, vmin=0, vmax=1)
            clipped = int(np.sum(audit.norms[i] >= clip))
            ax.set_title(f"{audit.rero[i]:.3f}\nlabel {int(audit.y[i])}, {clipped} clipped", fontsize=6.5)
            ax.set_xticks([])
            ax.set_yticks([])
        for j in range(idx.size, -(-idx.size // cols) * cols):
            axes[r0 + j // cols][j % cols].axis("off")
        axes[r0][0].set_ylabel(name, fontsize=8)
        r0 += -(-idx.size // cols)
    fig.suptitle(f"ex-post ReRo_i at κ = {audit.setting.kappa:g} ({EX_POST_TITLE}); steps of "
                 f"{audit.setting.release.steps} with ‖g‖ ≥ C", fontsize=8)
    fig.tight_layout()
    return fig


def _fil_figure(audit):
    plt = pyplot()
    rel = audit.fil_relation
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    f = np.where(audit.dfil > 0, audit.dfil, np.nan)
    ax.scatter(f, audit.rero, s=6, alpha=0.5, color="tab:blue", label="training examples")
    ax.scatter(f[audit.most_exposed], audit.rero[audit.most_exposed], s=14, color="tab:red",
               label=f"{audit.most_exposed.size} most exposed (ReRo_i)")
    ax.set_xscale("log")
    ax.set_xlabel("per-example dFIL η̄² (Guo, Karrer, Chaudhuri & van der Maaten 2022, Alg. 1)")
    ax.set_ylabel(f"ex-post ReRo_i at κ = {audit.setting.kappa:g}")
    ax.set_title(f"Spearman ρ = {rel['spearman_rho']:.3f}; {rel['top_decile_overlap']} of the {rel['top_decile']} "
                 "most exposed by ReRo_i are in FIL's top 10%", fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5)
    fig.tight_layout()
    return fig


def _attack_figure(audit, attacks):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    xs = np.arange(len(attacks))
    for j, a in enumerate(attacks):
        r = a.rate
        lo, hi = r.ci
        ax.errorbar([j], [r.rate], yerr=[[r.rate - lo], [hi - r.rate]], fmt="o", color="tab:blue", capsize=4,
                    label=f"{a.attack} success (95% CI)" if j == 0 else None)
        ax.scatter([j], [a.largest_rero], marker="_", s=500, color="tab:orange", zorder=3,
                   label="decile's largest ex-post ReRo_i (estimate)" if j == 0 else None)
        ax.scatter([j], [a.target_rero], marker="x", color="tab:orange", zorder=3,
                   label="mean ex-post ReRo_i of the targets" if j == 0 else None)
    ax.axhline(float(audit.worst_rero.upper), color="black", ls="--", lw=1.5, label="worst case (certified)")
    ax.axhline(audit.setting.kappa, color="grey", ls=":", lw=1, label=f"blind guess κ = {audit.setting.kappa:g}")
    ax.set_xticks(xs, [("most" if a.group == "most" else "least") + " exposed 10%" for a in attacks])
    ax.set_xlim(-0.6, len(attacks) - 0.4)
    ax.set_ylim(0, 1.3)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("reconstruction success")
    ax.set_title(f"{attacks[0].rate.trials} trials per decile, prior size {audit.setting.prior_size}", fontsize=9)
    ax.grid(True, alpha=0.25)
    ax.legend(fontsize=6.5, loc="upper center", ncol=2)
    fig.tight_layout()
    return fig


#: Each figure of the page: (file stem, what it shows, for screen readers).
FIGURES = (("per_example_histogram", "histogram of per-example ReRo"),
           ("per_example_gallery", "most and least exposed examples"),
           ("per_example_fil", "ReRo against dFIL"),
           ("per_example_attack", "attack success per decile"))


def figures(audit, attacks=()) -> dict[str, str]:
    """Each figure of the audit drawn once, as an SVG document, by file stem (:data:`FIGURES`): the FIL scatter
    where the run accounted dFIL, the attack plot where there are attacks."""
    out = {"per_example_histogram": matplotlib_svg(_hist_figure(audit)),
           "per_example_gallery": matplotlib_svg(_gallery_figure(audit))}
    if audit.dfil is not None:
        out["per_example_fil"] = matplotlib_svg(_fil_figure(audit))
    if attacks:
        out["per_example_attack"] = matplotlib_svg(_attack_figure(audit, attacks))
    return out


def payload(audit, attacks=(), *, config: dict | None = None) -> dict:
    """The ``per_example.json`` document: every example's numbers, the summary, the attack check."""
    out = audit.to_dict()
    if config:
        out["config"] = config
    if attacks:
        out["attack_check"] = [a.to_dict() for a in attacks]
    return out


def section_html(audit, attacks=(), drawn: dict[str, str] | None = None) -> str:
    """The "Who is at risk" section: summary, histogram, gallery, FIL relation, attack check (inline SVG).

    ``drawn``: the :func:`figures` already drawn (drawn here when not given)."""
    drawn = figures(audit, attacks) if drawn is None else drawn
    labels = dict(FIGURES)
    svg = lambda stem: inline_svg(drawn[stem], labels[stem])  # noqa: E731
    e = lambda t: html.escape(str(t), quote=True)  # noqa: E731
    sm = audit.summary()
    s = audit.setting
    parts = [f"<section id='who-is-at-risk'><h2>Who is at risk</h2><p class='release'>{e(_release_title(audit))}</p>",
             "<div class='summary'>",
             f"<p>Worst case (certified for every example): an informed adversary with a 1-in-{s.prior_size} prior "
             f"reconstructs a training example at most {_pct(sm['worst_case_rero'])} of the time.</p>",
             f"<p>Per example, from the gradients this run produced — an <b>{e(EX_POST_TITLE)}</b>: the median "
             f"example's ReRo_i is {sm['ex_post_rero_median']:.3f} (10% of examples below "
             f"{sm['ex_post_rero_decile_10']:.3f}, 10% above {sm['ex_post_rero_decile_90']:.3f}; "
             f"{sm['share_at_worst_case']:.0%} at the worst case).</p>"]
    if audit.filtered is not None:
        f = audit.filtered
        spent = f.spent_rero
        parts.append(f"<p>Trained with a per-example budget of ReRo ≤ {f.budget:g} fixed before training — "
                     f"<b>{e(CERTIFIED_TITLE)}</b>: each example's ReRo_i is at most "
                     f"{f.rero:.3f}, the budget's (Feldman &amp; Zrnic 2021); "
                     f"{np.mean(f.filtered):.1%} of the examples were stopped by the filter; test accuracy "
                     f"{f.test_accuracy:.3f} (without the filter {audit.test_accuracy:.3f}). What each example "
                     f"spent — an <b>{e(EX_POST_TITLE)}</b>: median {float(np.median(spent)):.3f}, largest "
                     f"{float(np.max(spent)):.3f}.</p>")
    parts.append("</div>")
    parts.append(f"<figure>{svg('per_example_histogram')}<figcaption>Ex-post "
                 f"ReRo_i at κ = {s.kappa:g} of every training example ({e(EX_POST_TITLE)}), its median and the "
                 "worst case.</figcaption></figure>")
    parts.append(f"<figure>{svg('per_example_gallery')}<figcaption>The "
                 f"{audit.most_exposed.size} most exposed examples (top rows) and the least exposed (bottom rows), "
                 "with ReRo_i, label and the steps their gradient was clipped.</figcaption></figure>")
    rel = audit.fil_relation
    if rel is not None:
        parts.append(f"<figure>{svg('per_example_fil')}<figcaption>Ex-post ReRo_i against "
                     "the per-example Fisher information leakage of Guo, Karrer, Chaudhuri &amp; van der Maaten 2022 "
                     f"(same run): Spearman ρ = {rel['spearman_rho']:.3f}.</figcaption></figure>")
    if attacks:
        rows = "".join(
            f"<tr><td>{e(a.to_dict()['decile'])}</td><td class='num'>{a.rate.rate:.3f} "
            f"[{a.rate.ci[0]:.3f}, {a.rate.ci[1]:.3f}]</td><td class='num'>{a.largest_rero:.3f}</td>"
            f"<td class='num'>{a.target_rero:.3f}</td><td class='num'>{a.worst_case:.3f}</td></tr>" for a in attacks)
        parts.append("<h3>Attack check</h3><table id='attack-check'><thead><tr><th>targets</th><th>success [95% CI]"
                     "</th><th>largest ex-post ReRo_i</th><th>targets' mean ex-post ReRo_i</th><th>worst case "
                     "(certified)</th></tr>"
                     f"</thead><tbody>{rows}</tbody></table>")
        parts.append(f"<figure>{svg('per_example_attack')}<figcaption>"
                     "Prior-aware attack (Hayes, Mahloujifar &amp; Balle 2023) on targets from the most and the "
                     "least exposed deciles.</figcaption></figure>")
    parts.append("</section>")
    return "".join(parts)


def render_page(audit, attacks=(), drawn: dict[str, str] | None = None) -> str:
    """``per_example.html``: the section on a self-contained page (the report's stylesheet, no external URL)."""
    from .. import __version__

    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>Who is at risk: per-example reconstruction risk</title><style>{_CSS}</style></head><body>"
            "<header><h1>Per-example reconstruction risk</h1></header>"
            f"{section_html(audit, attacks, drawn)}"
            f"<footer><p>reconrisk {__version__} · the same numbers, every example's, are in "
            "<code>per_example.json</code></p></footer></body></html>")


def write_individual(audit, out_dir, attacks=(), *, config: dict | None = None, plot: bool = True) -> dict:
    """Write ``per_example.json``, the figures as SVG and ``per_example.html`` (both unless ``plot`` is False).

    Each figure is drawn once (:func:`figures`): the same drawing is its file and the page's inline figure."""
    out = _io.ensure_out_dir(out_dir)
    files: list[Path] = []
    if plot:
        drawn = figures(audit, attacks)
        files += [_io.atomic_write(Path(out) / f"{stem}.svg", doc) for stem, doc in drawn.items()]
        files.append(_io.atomic_write(Path(out) / "per_example.html", render_page(audit, attacks, drawn)))
    files.append(_io.write_json(payload(audit, attacks, config=config), out, "per_example.json"))
    return {"files": [str(p) for p in files]}
