"""``reconrisk bound``, ``reconrisk calibrate`` and ``reconrisk curve`` (theory layer only; no JAX)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from . import app
from ._common import monte_carlo_note, print_json, print_table, progress, resolve_analysis, spinner
from .risk import calibrate_measure, source_dict, source_label

_METHODS = ("pld", "mc", "closed_form", "rdp", "all")


def _kappa(kappa: Optional[float], prior_size: Optional[int]) -> float:
    from ..priors import resolve_kappa

    return resolve_kappa(kappa, prior_size)


@app.command("bound")
def bound_cmd(
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", "-s", help="DP-SGD noise multiplier σ (noise std σC)."),
    sample_rate: Optional[float] = typer.Option(None, "--sample-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
    steps: Optional[int] = typer.Option(None, "--steps", "-T", help="Number of DP-SGD steps T."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Fixed-size batches of B examples without replacement (instead of -q; with --dataset-size)."),
    dataset_size: Optional[int] = typer.Option(None, "--dataset-size", help="Number of training examples N (with --batch-size)."),
    release_file: Optional[Path] = typer.Option(None, "--release", help="A TOML release file (release keys, a schedule, or dp_accounting events, e.g. Laplace)."),
    prior_size: Optional[int] = typer.Option(None, "--prior-size", "-n", help="Uniform prior over n candidates (κ = 1/n)."),
    kappa: Optional[float] = typer.Option(None, "--kappa", help="Baseline success probability κ in (0, 1)."),
    delta: float = typer.Option(1e-5, "--delta", help="δ at which ε is reported."),
    method: str = typer.Option("pld", "--method", help="pld | mc | closed_form | rdp | all"),
    samples: int = typer.Option(1_000_000, "--samples", help="Monte-Carlo samples (method mc)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the Monte-Carlo sampler."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the Monte-Carlo interval."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Certified bound on the probability that an informed adversary reconstructs a training example."""
    from .. import _validate as v
    from ..analysis.accountant import epsilon
    from ..measures.conversions import rero_from_dp
    from ..results import below_certified

    method = v.choice("method", method, _METHODS)
    # every flag is checked, also those the chosen method does not use (none is ignored silently)
    samples = v.integer("samples", samples, minimum=100)
    seed = v.seed("seed", seed)
    confidence = v.probability_open("confidence", confidence)
    if method in ("mc", "all"):
        v.memory("--samples", samples, 48 * samples)
    analysis, _ = resolve_analysis(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                   release_file=release_file, batch_size=batch_size, dataset_size=dataset_size)
    k = _kappa(kappa, prior_size)
    release = analysis.release  # the Poisson-subsampled Gaussian release the numbers are for (None: an event)
    delta = v.probability_open("delta", delta)
    from ..errors import PLDRangeError, ReconRiskError

    if method != "pld" and not analysis.supports("mechanism"):
        raise ReconRiskError(f"--method {method} is for DP-SGD with Gaussian noise; {analysis.name} has the PLD "
                             "bracket only (--method pld)")

    accountant = "PLD"
    try:
        eps = analysis.epsilon(delta).upper
    except PLDRangeError:
        eps, accountant = epsilon(release=release, delta=delta, accountant="rdp"), "RDP"
    if method == "all":
        methods = ["pld"] + (["closed_form"] if analysis.supports("rero_closed_form") else []) + ["mc"]
    else:
        methods = [method]
    if "mc" in methods:  # the long part (10⁶ samples by default): its cost is said before it starts
        monte_carlo_note(samples, analysis.release.steps, enabled=not json_out)
    results = {}
    for m in methods:
        if m == "mc":
            results[m] = _run_mc(analysis, k, samples, seed, confidence, quiet=json_out)
        else:
            with spinner(f"certified bracket ({m})", enabled=not json_out):
                results[m] = analysis.rero(k, method=m)
    rdp = rdp_eq2 = None
    if analysis.supports("rero_rdp"):  # the release's own RDP curve: the optimal conversion, and the paper's Eq. 2 (JSON)
        from ..measures.rdp_tradeoff import rero_release_rdp

        with spinner("RDP baseline", enabled=not json_out):
            rdp = rero_release_rdp(release, k)[0]
            rdp_eq2 = analysis.rero(k, method="rdp")
    primary = results[methods[0]]
    certified = [(r.lower, m) for m, r in results.items() if m != "mc" and r.lower is not None]
    lower, against = max(certified) if certified else (None, None)
    dp_value = float(rero_from_dp(k, eps, delta)[0])
    unavailable = {}  # a baseline below the certified bracket's lower end is a numerical failure, not a bound
    for key, value in (("rdp", None if rdp is None else rdp.upper),
                       ("rdp_hayes2023_eq2", None if rdp_eq2 is None else rdp_eq2.upper), ("dp", dp_value)):
        reason = below_certified(value, lower, what=f"the {key} baseline", against=f"{against} bracket")
        if reason:
            unavailable[key] = reason
    src = source_dict(analysis)
    where = ({key: src.get(key) for key in ("noise_multiplier", "sample_rate", "steps")}
             | {key: src[key] for key in ("sampler", "segments", "dp_event", "relation") if key in src})

    payload = {
        "kappa": k,
        "prior_size": prior_size,
        "delta": delta,
        "epsilon": eps,
        "epsilon_accountant": accountant.lower(),
        **where,
        "rero": primary.to_dict(),
        "baselines": {"rdp": None if rdp is None or "rdp" in unavailable else rdp.upper,
                      "rdp_hayes2023_eq2": None if rdp_eq2 is None or "rdp_hayes2023_eq2" in unavailable
                      else rdp_eq2.upper,
                      "dp": None if "dp" in unavailable else dp_value},
        "baselines_unavailable": unavailable,
        "baseline_formulas": {
            "rdp": None if rdp is None else rdp.formula,
            "rdp_hayes2023_eq2": None if rdp_eq2 is None else rdp_eq2.formula,
            "dp": "kappa*exp(epsilon) + delta (Balle, Cherubin & Hayes 2022)",
        },
    }
    _warn_unconverged(results.values())
    if len(methods) > 1:
        payload["methods"] = {m: r.to_dict() for m, r in results.items()}
    if json_out:
        print_json(payload)
        return
    rows = []
    for m, r in results.items():
        label = m if r.converged is not False else f"{m} (stopped short)"
        if r.details.get("reference"):  # fixed-size batches: the one-reference bound that won
            label = f"{label} ({r.details['reference']} reference)"
        rows.append([label, r.lower, r.upper, r.estimate, (r.upper - r.lower) if r.lower is not None else None])
    shown = {key: "unavailable" if key in unavailable else value for key, value in payload["baselines"].items()}
    if rdp is not None:
        rows.append([f"{rdp.method} (baseline)", None, shown["rdp"], None, None])
    rows.append(["κe^ε+δ (baseline)", None, shown["dp"], None, None])
    for reason in unavailable.values():
        print(f"reconrisk: note: {reason}", file=sys.stderr)
    title = f"ReRo bound: {source_label(analysis)}, κ={k:.4g}"
    caption = f"ε = {eps:.3f} at δ = {delta:g} ({accountant} accountant)"
    print_table(title, ["method", "lower", "upper", "estimate", "width"], rows, caption=caption)


def _warn_unconverged(results) -> None:
    """One line on stderr for each PLD bracket that stopped short of its width target (still certified)."""

    for r in results:
        if r.method == "pld" and r.converged is False:
            d = r.details
            print(
                f"warning: the PLD bracket stopped short of its target (relative width {d.get('max_rel_width', 0):.3g} > "
                f"{d.get('target_rel_width')}); lower and upper are still certified",
                file=sys.stderr,
            )


def _run_mc(analysis, k, samples, seed, confidence, *, quiet: bool):
    from ..analysis.privacy_rero import rero_bounds

    with progress(2 * samples * analysis.release.steps, "Monte Carlo", enabled=not quiet) as bar:
        return rero_bounds(
            analysis, k, method="mc", samples=samples, seed=seed, confidence=confidence, progress=bar
        )[0]


@app.command("calibrate")
def calibrate_cmd(
    target_rero: Optional[float] = typer.Option(None, "--target-rero", "-g", help="Largest acceptable reconstruction success γ*."),
    sample_rate: Optional[float] = typer.Option(None, "--sample-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
    steps: Optional[int] = typer.Option(None, "--steps", "-T", help="Number of DP-SGD steps T."),
    prior_size: Optional[int] = typer.Option(None, "--prior-size", "-n", help="Uniform prior over n candidates."),
    kappa: Optional[float] = typer.Option(None, "--kappa", help="Baseline success probability κ."),
    delta: float = typer.Option(1e-5, "--delta", help="δ at which the implied ε is reported."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    measure: Optional[str] = typer.Option(None, "--measure", "-m", help="Calibrate any risk measure (see `reconrisk risk`)."),
    target: Optional[float] = typer.Option(None, "--target", help="Target of --measure (bayes-security: the minimum)."),
    solve: str = typer.Option("noise-multiplier", "--solve", help="noise-multiplier | steps | sample-rate | batch-size (with --measure)."),
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", "-s", help="σ, when solving for steps or sample-rate."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Fixed-size batches of B examples without replacement (instead of -q; with --dataset-size)."),
    dataset_size: Optional[int] = typer.Option(None, "--dataset-size", help="Number of training examples N (fixed-size batches)."),
    baseline: Optional[float] = typer.Option(None, "--baseline", help="Baseline success b (with --measure)."),
    prior: Optional[str] = typer.Option(None, "--prior", help="Prior probabilities, comma-separated (with --measure)."),
    fpr: Optional[float] = typer.Option(None, "--fpr", help="False-positive rate (with --measure membership-tpr)."),
) -> None:
    """Smallest noise multiplier whose certified reconstruction bound is ≤ the target (or, with --measure, any risk)."""

    if target_rero is not None and ((sample_rate is None and batch_size is None) or steps is None) \
            and solve == "noise-multiplier":
        from ..errors import ReconRiskError

        raise ReconRiskError("calibrate needs --target-rero, --sample-rate and --steps (or --measure M --target X --solve ...)")
    calibrate_measure(measure, target, solve, noise_multiplier, sample_rate, steps, target_rero,
                      dict(prior_size=prior_size, kappa=kappa, baseline=baseline, prior=prior, fpr=fpr), json_out,
                      delta=delta, batch_size=batch_size, dataset_size=dataset_size)


@app.command("curve")
def curve_cmd(
    steps: int = typer.Option(100, "--steps", "-T", help="Number of DP-SGD steps T."),
    sample_rate: float = typer.Option(1.0, "--sample-rate", "-q", help="q for the γ-against-ε panel."),
    prior_size: List[int] = typer.Option([2, 10, 100, 1024], "--prior-size", "-n", help="Prior sizes (repeatable)."),
    epsilon_min: float = typer.Option(0.25, "--epsilon-min", help="Smallest ε of the γ-against-ε panel."),
    epsilon_max: float = typer.Option(64.0, "--epsilon-max", help="Largest ε of the γ-against-ε panel."),
    points: int = typer.Option(12, "--points", help="Number of ε values (log-spaced)."),
    fixed_epsilon: float = typer.Option(4.0, "--fixed-epsilon", help="ε of the γ-against-q panel (Hayes, Mahloujifar & Balle 2023, Fig. 5)."),
    sample_rates: List[float] = typer.Option(
        [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.99], "--sample-rates", help="q values of the γ-against-q panel (repeatable)."
    ),
    delta: float = typer.Option(1e-5, "--delta", help="δ of the accountant."),
    out: Path = typer.Option(Path("reconrisk-out"), "--out", help="Output directory."),
    json_out: bool = typer.Option(False, "--json", help="Print the table as JSON."),
) -> None:
    """Plot γ against ε (several prior sizes) and γ against q at fixed ε, with the RDP baseline."""
    from .._io import check_out_dir
    from ..experiments.curves import curve_jobs, rero_curves
    from ..report.curves import write_curves

    out = check_out_dir(out)  # before the calibrations: an unwritable --out fails at once

    grid = dict(steps=steps, sample_rate=sample_rate, epsilon_range=(epsilon_min, epsilon_max), points=points,
                fixed_epsilon=fixed_epsilon, sample_rates=sample_rates)
    with progress(len(curve_jobs(**grid)), "calibrating and bounding", enabled=not json_out) as bar:
        rows = rero_curves(prior_sizes=prior_size, delta=delta, progress=bar, **grid)
    files = write_curves(rows, out, delta=delta, fixed_epsilon=fixed_epsilon)
    short = [r for r in rows if not r["rero"].get("converged", True)]
    if short:
        print(f"warning: {len(short)} PLD bracket(s) stopped short of the 1 % relative width target "
              "(still certified; see rero.width in the JSON)", file=sys.stderr)
    if json_out:
        print_json({"rows": rows, "files": files})
        return
    print_table("reconrisk curve", ["quantity", "value"], [[k, str(v)] for k, v in files.items()])
