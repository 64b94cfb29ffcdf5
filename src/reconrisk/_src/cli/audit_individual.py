"""``reconrisk audit --per-example``: who is at risk — per-example ReRo_i of one run, the most exposed
examples, their relation to Guo et al.'s per-example FIL, and the attack on the most/least exposed deciles.

Called by :func:`reconrisk._src.cli.audit.audit`; the computation is :mod:`reconrisk._src.experiments.individual`
and :mod:`reconrisk._src.experiments.individual_attack`, the files :mod:`reconrisk._src.report.individual`.
"""

from __future__ import annotations

import time

import numpy as np

from ._common import console, note_saved, print_json, progress

#: How many of the most exposed examples the terminal table lists (the gallery and JSON keep ``--top-k``).
TABLE_ROWS = 5


def run_per_example(*, epsilon, noise_multiplier, sample_rate: float, steps: int, clip_norm: float, prior_size: int,
                    trials: int, attack: str, dataset: str, model: str, learning_rate: float, delta: float, seed: int,
                    budget, top_k: int, train_size: int, out, json_output: bool, plot: bool) -> None:
    from .. import _io
    from .. import _validate as v
    from ..data import load_dataset
    from ..errors import ReconRiskError
    from ..experiments.individual import DEFAULT_EPSILON, PerExampleSetting
    from ..train.models import get_model

    if epsilon and noise_multiplier:
        raise ReconRiskError("give --epsilon or --noise-multiplier, not both")
    if len(epsilon or []) > 1 or len(noise_multiplier or []) > 1:
        raise ReconRiskError("--per-example audits one release: give one --epsilon or one --noise-multiplier")
    out = _io.check_out_dir(out)
    v.max_count("--trials", v.integer("trials", trials, minimum=0), 10**7, "attack trials per decile")
    setting = PerExampleSetting.of(
        None if noise_multiplier else (epsilon[0] if epsilon else DEFAULT_EPSILON),
        noise_multiplier=noise_multiplier[0] if noise_multiplier else None, sample_rate=sample_rate, steps=steps,
        clip_norm=v.positive("clip_norm", clip_norm), delta=delta, train_size=train_size, prior_size=prior_size,
        model=model, learning_rate=learning_rate, seed=seed, top_k=top_k, budget=budget)
    data = load_dataset(dataset)
    get_model(model, data.image_shape, data.num_classes)
    _io.ensure_out_dir(out)
    note_saved(None, "the per-example audit had not finished")
    t0 = time.perf_counter()
    from ..experiments.individual import per_example_audit
    from ..experiments.individual_attack import decile_attacks

    runs = 2 if budget is not None else 1
    with progress(runs * setting.release.steps, "per-example audit: training", enabled=not json_output) as bar:
        audit = per_example_audit(setting, data, progress=bar)
    attacks = []
    if trials > 0:
        with progress(2 * trials, "per-example audit: attack on the deciles", enabled=not json_output) as bar:
            attacks = decile_attacks(audit, trials=trials, attack=attack, progress=bar)
    elapsed = time.perf_counter() - t0
    from ..report.individual import payload, write_individual

    config = {"command": "audit --per-example", "dataset": dataset, "trials_per_decile": trials, "attack": attack,
              "seconds": elapsed}
    files = write_individual(audit, out, attacks, config=config, plot=plot)["files"]
    note_saved(files[-1], "the per-example audit")
    if json_output:
        print_json(payload(audit, attacks, config=config))
        return
    print_tables(audit, attacks)
    names = ", ".join(str(f) for f in files)
    console().print(f"wrote {names}  ({elapsed:.1f} s)")


def print_tables(audit, attacks) -> None:
    from rich.table import Table

    from ..report.individual import CERTIFIED_TITLE, EX_POST_TITLE

    s = audit.setting
    sm = audit.summary()
    r = s.release
    con = console()
    plain = {} if con.is_terminal else {"box": _box()}
    eps = f"ε={s.epsilon:g}, " if s.epsilon is not None else ""
    con.print(f"Who is at risk: {eps}σ={r.noise_multiplier:.4g}, q={r.sample_rate:g}, T={r.steps}, C={r.clip_norm:g}, "
              f"learning rate {s.learning_rate:g}, N={audit.n}, κ={s.kappa:g}; test accuracy {audit.test_accuracy:.3f}")
    title = f"Per-example risk, {EX_POST_TITLE}"
    t = Table(title=title, min_width=len(title) + 2, **plain)
    for c in ("", "ReRo_i", f"ε_i (δ={s.delta:g})"):
        t.add_column(c, justify="right")
    t.add_row("worst case (certified)", f"{sm['worst_case_rero']:.4f}", f"{sm['worst_case_epsilon']:.3f}")
    t.add_row("max", f"{sm['ex_post_rero_max']:.4f}", f"{sm['ex_post_epsilon_max']:.3f}")

    for name, qn in (("90th percentile", 0.9), ("median", 0.5), ("10th percentile", 0.1)):
        t.add_row(name, f"{np.quantile(audit.rero, qn):.4f}", f"{np.quantile(audit.epsilon, qn):.3f}")
    con.print(t)
    if audit.dfil is not None:
        con.print(_fil_caption(audit))
    rows = audit.top_rows()[:TABLE_ROWS]
    t = Table(title=f"Most exposed examples, {EX_POST_TITLE}", **plain)
    cols = ["rank", "index", "label", "ReRo_i", "ε_i", "steps clipped"]
    cols += ["dFIL bound"] if audit.dfil is not None else []
    for c in cols:
        t.add_column(c, justify="right")
    for row in rows:
        cells = [str(row["rank"]), str(row["dataset_index"]), str(row["label"]), f"{row['ex_post_rero']:.4f}",
                 f"{row['ex_post_epsilon']:.3f}", f"{row['steps_clipped']}/{r.steps}"]
        if audit.dfil is not None:
            cells.append(f"{row['dfil_mse_bound']:.3g}")
        t.add_row(*cells)
    con.print(t)
    if audit.filtered is not None:
        f = audit.filtered
        spent = f.spent_rero
        t = Table(title=f"Per-example budget ReRo ≤ {f.budget:g}: {CERTIFIED_TITLE}", **plain)
        for c in ("run", "certified ReRo_i", "ex-post max", "ex-post median", "filtered", "test accuracy"):
            t.add_column(c, justify="right")
        t.add_row("filtered", f"{f.rero:.4f}", f"{np.max(spent):.4f}", f"{np.median(spent):.4f}",
                  f"{np.mean(f.filtered):.1%}", f"{f.test_accuracy:.3f}")
        t.add_row("plain DP-SGD", f"{sm['worst_case_rero']:.4f}", f"{np.max(audit.rero):.4f}",
                  f"{np.median(audit.rero):.4f}", "—", f"{audit.test_accuracy:.3f}")
        con.print(t)
        con.print("certified ReRo_i: the same for every example (filtered: the budget; plain DP-SGD: the worst case); "
                  "ex-post: ReRo_i from the norms each example contributed, estimates, not DP guarantees")
    if attacks:
        a0 = attacks[0]
        t = Table(title=f"Attack check: {a0.attack}, {a0.rate.trials} trials per decile, prior size {s.prior_size}",
                  **plain)
        for c in ("targets", "success [95% CI]", "max", "targets' ReRo_i", "in trials", "worst case"):
            t.add_column(c, justify="right")
        for a in attacks:
            lo, hi = a.rate.ci
            flag = "" if a.holds else "  > max"
            trial = "" if a.trial_target_rero is None else f"{a.trial_target_rero:.3f}"
            t.add_row(f"{a.group} exposed 10%", f"{a.rate.rate:.3f} [{lo:.3f}, {hi:.3f}]{flag}",
                      f"{a.largest_rero:.3f}", f"{a.target_rero:.3f}", trial, f"{a.worst_case:.3f}")
        con.print(t)
        con.print("max: the decile's largest ReRo_i; targets' ReRo_i: their mean, in the recorded run and from their "
                  "own norms in the trials; all ex post (estimates, not bounds)")


def _fil_caption(audit) -> str | None:
    rel = audit.fil_relation
    if rel is None:
        return None
    return (f"Spearman ρ(ReRo_i, per-example dFIL of Guo, Karrer, Chaudhuri & van der Maaten 2022) = "
            f"{rel['spearman_rho']:.3f}; {rel['top_decile_overlap']} of the {rel['top_decile']} most exposed by "
            "ReRo_i are in FIL's top 10%")


def _box():
    from rich import box

    return box.SIMPLE
