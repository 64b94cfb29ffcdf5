"""``reconrisk audit``: train with DP-SGD, play the informed adversary, compare with the bound.

JAX and matplotlib are imported inside the command, so registering it costs
nothing for the other commands.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from . import app
from ._common import console, fmt, note_saved, print_json, progress_columns
from .audit_individual import run_per_example

DEFAULT_EPSILONS = (1.0, 4.0, 10.0, 32.0)
_ATTACK_ALIASES = {
    "alg2": "alg2",
    "alg3": "alg3",
    "loglik": "loglik",
    "no-deduction": "no_deduction",
    "no_deduction": "no_deduction",
    "gradient-inversion": "gradient_inversion",
    "gradient_inversion": "gradient_inversion",
}


def _attacks(names: Optional[List[str]], sample_rate: float) -> tuple[str, ...]:
    from ..errors import ReconRiskError

    if not names:
        return ("alg2",) if sample_rate >= 1.0 else ("alg3", "alg2", "loglik")
    out = []
    for n in names:
        if n not in _ATTACK_ALIASES:
            raise ReconRiskError(
                "attack must be one of 'alg2', 'alg3', 'loglik', 'no-deduction', 'gradient-inversion'; "
                f"found {n!r}"
            )
        out.append(_ATTACK_ALIASES[n])
    return tuple(dict.fromkeys(out))


@app.command("audit")
def audit(
    epsilon: Optional[List[float]] = typer.Option(
        None, "--epsilon", "-e", help="Target ε (repeatable); σ is calibrated with the PLD accountant. Default: 1, 4, 10, 32."
    ),
    noise_multiplier: Optional[List[float]] = typer.Option(
        None, "--noise-multiplier", help="Noise multiplier σ (repeatable), instead of --epsilon."
    ),
    sample_rate: float = typer.Option(1.0, "--sample-rate", "-q", help="Poisson sampling rate q (1 = full batch)."),
    batch_size: Optional[int] = typer.Option(
        None, "--batch-size", help="Fixed-size batches of exactly B of the |D₋| + 1 training points, without replacement "
        "(replace-one bound; instead of --sample-rate)."),
    steps: int = typer.Option(100, "--steps", "-T", help="Number of DP-SGD steps T."),
    clip_norm: Optional[float] = typer.Option(
        None, "--clip-norm", "-C", help="Clipping norm C. Default: 0.1; 3 with --per-example (gradients shrink below it)."),
    prior_size: int = typer.Option(10, "--prior-size", "-n", help="Candidates in the uniform prior (κ = 1/n)."),
    trials: int = typer.Option(1000, "--trials", help="Informed-adversary trials per setting."),
    attack: Optional[List[str]] = typer.Option(
        None, "--attack", "-a",
        help="alg2, alg3, loglik, no-deduction, gradient-inversion (repeatable; the first is the headline). "
        "Default: alg2 when q = 1, else alg3, alg2, loglik.",
    ),
    dataset: str = typer.Option("digits", "--dataset", help="digits | mnist:PATH | cifar10:PATH"),
    model: str = typer.Option("mlp", "--model", help="mlp (input→10→10, eLU) | cnn | logistic | mlp:W1,W2,..."),
    known_size: Optional[int] = typer.Option(None, "--known-size", help="|D₋|, the points the adversary knows. Default: min(999, N − n)."),
    prior: str = typer.Option("data", "--prior", help="data (candidates from the dataset) | uniform (uniform noise, Hayes, Mahloujifar & Balle 2023, Fig. 9)."),
    learning_rate: float = typer.Option(2.0, "--learning-rate", help="SGD step size on g_t / (qN)."),
    clip_mode: str = typer.Option("hard", "--clip-mode", help="hard | gelu (Guo, Karrer, Chaudhuri & van der Maaten 2022 soft clip)."),
    delta: float = typer.Option(1e-5, "--delta", help="δ for ε."),
    seed: int = typer.Option(0, "--seed", help="Seed for the data split, priors, training noise."),
    out: Path = typer.Option(Path("reconrisk-out"), "--out", "-o", help="Directory for results.json, audit.png, audit.svg."),
    json_output: bool = typer.Option(False, "--json", help="Print results.json to stdout instead of a table (no progress bar)."),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Write audit.png and audit.svg."),
    per_example: bool = typer.Option(
        False, "--per-example",
        help="Who is at risk: one run (default ε = 10, C = 3, N = 1,000) with every example's gradient norms; each "
             "example's ex-post ε_i and ReRo_i (estimates, not DP guarantees), the most exposed, their relation to "
             "Guo et al.'s per-example FIL, and the attack on the most/least exposed deciles (--trials each; 0 skips "
             "it). Writes per_example.json, per_example.html and figures."),
    per_example_budget: Optional[float] = typer.Option(
        None, "--per-example-budget",
        help="With --per-example: also train with a per-example budget, a target ReRo at κ (an individual filter "
             "fixed before training; Feldman & Zrnic 2021): every example's ReRo_i is then certified ≤ it."),
    top_k: int = typer.Option(8, "--top-k", help="With --per-example: how many of the most exposed examples to show."),
    train_size: int = typer.Option(1000, "--train-size", help="With --per-example: training examples N."),
) -> None:
    """Empirical reconstruction success of real attacks beside the certified ReRo bound."""

    from .. import _validate as v
    from ..data import load_dataset
    from ..errors import ReconRiskError
    from ..experiments.audit import calibrated_settings
    from ..experiments.trials import split_dataset

    from .. import _io

    if per_example_budget is not None and not per_example:
        raise ReconRiskError("--per-example-budget needs --per-example")
    if per_example:
        from ..experiments.individual import DEFAULT_CLIP_NORM

        for flag, bad in (("--batch-size", batch_size is not None), ("--known-size", known_size is not None),
                          ("--prior uniform", prior != "data"), ("--clip-mode gelu", clip_mode != "hard")):
            if bad:
                raise ReconRiskError(f"--per-example does not take {flag} (it trains on --train-size examples with "
                                     "Poisson or full batches and hard clipping)")
        sample_rate = v.sample_rate("sample_rate", sample_rate)
        run_per_example(epsilon=epsilon, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                        clip_norm=DEFAULT_CLIP_NORM if clip_norm is None else clip_norm, prior_size=prior_size,
                        trials=trials, attack=_attacks(attack, sample_rate)[0], dataset=dataset, model=model,
                        learning_rate=learning_rate, delta=delta, seed=v.seed("seed", seed), budget=per_example_budget,
                        top_k=top_k, train_size=train_size, out=out, json_output=json_output, plot=plot)
        return
    clip_norm = 0.1 if clip_norm is None else clip_norm
    if epsilon and noise_multiplier:
        raise ReconRiskError("give --epsilon or --noise-multiplier, not both")
    # every flag, the seed and --out are checked before any data is read or model trained
    out = _io.check_out_dir(out)
    seed = v.seed("seed", seed)
    sample_rate = v.sample_rate("sample_rate", sample_rate)
    attacks = _attacks(attack, sample_rate)
    kwargs = dict(
        clip_norm=clip_norm, prior_size=prior_size, trials=trials, known_size=known_size, model=model,
        learning_rate=learning_rate, clip_mode=clip_mode, prior=prior, attacks=attacks, seed=seed,
    )
    # validate everything cheap before any training
    for x in epsilon or []:
        v.epsilon("epsilon", x)
    for x in noise_multiplier or []:
        v.noise_multiplier("noise_multiplier", x)
    v.steps("steps", steps)
    if known_size is not None:
        v.integer("known_size", known_size, minimum=1)
    v.positive("clip_norm", clip_norm)
    v.positive("learning_rate", learning_rate)
    v.probability_open("delta", delta)
    v.max_count("--trials", v.integer("trials", trials, minimum=1), 10**7, "informed-adversary trials per setting")
    v.max_count("--steps", steps * trials, 10**11, "steps × trials of DP-SGD to simulate per setting")
    data = load_dataset(dataset)
    from ..train.models import get_model

    get_model(model, data.image_shape, data.num_classes)
    known_x = split_dataset(data, v.integer("prior_size", prior_size, minimum=2), known_size, seed)[0]
    if batch_size is not None:
        n_train = len(known_x) + 1  # D₋ and the target
        b = v.integer("batch_size", batch_size, minimum=1, maximum=n_train)
        if sample_rate != 1.0:
            raise ReconRiskError("give --batch-size or --sample-rate, not both")
        sample_rate = b / n_train
        kwargs["sampler"] = "fixed"
        if attack is None:
            attacks = kwargs["attacks"] = _attacks(None, sample_rate)
    if noise_multiplier:
        settings = calibrated_settings(noise_multipliers=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                       delta=delta, **kwargs)
    else:
        settings = calibrated_settings(list(epsilon or DEFAULT_EPSILONS), sample_rate=sample_rate, steps=steps,
                                       delta=delta, **kwargs)

    from ..experiments.audit import certify

    _io.ensure_out_dir(out)
    # each finished setting is saved at once (atomically), so an interrupted run keeps what it finished
    partial = _io.IncrementalResults(out, "results.partial.json", header={"command": "audit", "dataset": dataset})
    certificates = [certify(s) for s in settings]  # cheap: shown before any trial runs
    t0 = time.perf_counter()
    note_saved(None, "no setting had finished")

    def saved(result) -> None:
        path = partial.add(result)
        n = len(partial.results)
        note_saved(path, f"{n} of {len(settings)} settings finished",
                   "results.json and the plots are written when every setting is done")

    results = _run(settings, certificates, data, attacks, quiet=json_output, saved=saved)
    elapsed = time.perf_counter() - t0

    from ..report.audit import audit_payload, audit_plot, write_json

    config = {
        "dataset": dataset, "model": model, "sample_rate": sample_rate, "steps": steps, "clip_norm": clip_norm,
        "prior_size": prior_size, "prior": prior, "trials": trials, "attacks": list(attacks), "seed": seed,
        "delta": delta, "learning_rate": learning_rate, "clip_mode": clip_mode, "accountant": "pld",
        "known_size": results[0].known_size, "seconds": elapsed,
    }
    payload = audit_payload(results, dataset=data.to_dict(), config=config)
    plot_paths = audit_plot(results, out) if plot else []
    json_path = write_json(payload, out)  # atomic, and after the plots: results.json never outlives its figures
    partial.path.unlink(missing_ok=True)
    note_saved(json_path, "every result")
    if json_output:
        print_json(payload)
        return
    _print_table(results, attacks)

    files = ", ".join(str(p) for p in [json_path, *plot_paths])
    console().print(f"wrote {files}  ({elapsed:.1f} s)")


def _run(settings, certificates, data, attacks, *, quiet: bool, saved=lambda result: None):
    """Run every setting; unless ``quiet``, show the certified bounds at once and fill in each ε's result live."""
    from ..experiments.audit import run_setting, total_trials

    if quiet:
        out = []
        for s, c in zip(settings, certificates):
            out.append(run_setting(s, data, certificate=c))
            saved(out[-1])  # an interrupted audit keeps every finished setting
        return out
    from rich.console import Console, Group
    from rich.live import Live
    from rich.progress import Progress

    err = Console(stderr=True)
    results: list = []
    bar = Progress(*progress_columns(), console=err)
    task = bar.add_task("audit trials", total=total_trials(settings))
    if not err.is_terminal:  # logs: one line per bound now, one per result as it finishes
        for s, c in zip(settings, certificates):
            err.print(f"certified: {_label(s)}  σ={s.noise_multiplier:.4g}  ReRo bound {c.rero.upper:.4f}")
    with Live(Group(_table(settings, certificates, results, attacks), bar), console=err, transient=True,
              refresh_per_second=4) as live:
        for s, c in zip(settings, certificates):
            bar.update(task, description=f"audit {_label(s)}")
            results.append(run_setting(s, data, certificate=c, progress=lambda k: bar.advance(task, k)))
            saved(results[-1])
            live.update(Group(_table(settings, certificates, results, attacks), bar))
            if not err.is_terminal:
                r = results[-1]
                err.print(f"done: {_label(s)}  {attacks[0]} {r.rates[attacks[0]].rate:.3f}  ({r.seconds:.1f} s)")
    return results


def _label(s) -> str:
    return f"ε={s.epsilon:g}" if s.epsilon is not None else f"σ={s.noise_multiplier:.3g}"


RELATION_WORDS = {"add_remove": "add/remove", "replace_one": "replace-one"}  # Release.neighbouring, as read


def _table(settings, certificates, results, attacks):
    from rich.table import Table

    s0 = settings[0]
    known = results[0].known_size if results else None
    title = (f"Reconstruction audit: q={s0.sample_rate:g}{' (fixed batches)' if s0.release.sampler == 'fixed' else ''}, T={s0.steps}, C={s0.clip_norm:g}, "
             f"prior size {s0.prior_size} (κ={1 / s0.prior_size:.3g})" + (f", |D₋|={known}" if known is not None else ""))
    from ..audit.empirical import max_epsilon_lower

    eps_max = max_epsilon_lower(s0.trials, kappa=1 / s0.prior_size, delta=s0.delta)
    relation = RELATION_WORDS[s0.release.neighbouring]
    caption = (f"ReRo ≥, ε ≥: what {attacks[0]}'s successes refute (one-sided 95% Clopper–Pearson; {relation} ε "
               f"at δ={s0.delta:g}, % of the certified ε). {s0.trials:,} trials at κ={1 / s0.prior_size:.3g} can show at "
               f"most ε ≥ {eps_max:.2f} (every trial a success), so this audit cannot confirm a larger ε.")
    table = Table(title=title, caption=caption)
    for col in ("ε", "σ", "ReRo bound", *[f"{a} success [95% CI]" for a in attacks], "clipped", "ReRo ≥", "ε ≥"):
        table.add_column(col, justify="right")
    for i, (s, c) in enumerate(zip(settings, certificates)):
        cells = [fmt(c.label), fmt(s.noise_multiplier), fmt(c.rero.upper)]
        if i < len(results):
            r = results[i]
            for a in attacks:
                rate = r.rates[a]
                lo, hi = rate.ci
                flag = "  [red]> bound[/red]" if lo > r.certificate.rero.upper else ""
                cells.append(f"{rate.rate:.3f} [{lo:.3f}, {hi:.3f}]{flag}")
            cells.append(f"{r.clipped_fraction:.0%}")
            emp = r.empirical()
            flag = "  [red]> bound[/red]" if not emp.consistent else ""
            cells.append(f"{emp.rero.lower:.3f}{flag}")
            cells.append(f"{emp.epsilon.lower:.2f} ({emp.epsilon.details['ratio_to_certified']:.0%})")
        else:
            cells += ["…"] * len(attacks) + ["", "", ""]
        table.add_row(*cells)
    return table


def _print_table(results, attacks) -> None:
    console().print(_table([r.setting for r in results], [r.certificate for r in results], results, attacks))
