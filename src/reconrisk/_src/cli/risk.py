"""``reconrisk risk`` (every operational risk from the certified curve) and ``reconrisk tradeoff`` (the curve)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
import typer

from . import app
from ._common import print_json, print_table, resolve_analysis, spinner
from .convert import curve_pairs

_MEASURE_HELP = (
    "all | reconstruction | reidentification | attribute | membership-tpr | membership-advantage | rad | bayes-security"
)


def parse_prior(text: Optional[str]):
    """``"0.5,0.3,0.2"`` → a list of floats (validated by the measure)."""
    if text is None:
        return None
    from ..errors import ReconRiskError

    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ReconRiskError(f"prior must be comma-separated probabilities, e.g. 0.5,0.3,0.2; found {text!r}") from None


def measure_kwargs(prior_size, kappa, baseline, prior, fpr) -> dict:
    kw = dict(prior_size=prior_size, kappa=kappa, baseline=baseline, prior=parse_prior(prior), fpr=fpr)
    return {k: x for k, x in kw.items() if x is not None}


def guarantee_analysis(source, epsilon, delta, order, curve, rho, one_sided):
    """The :class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis` of ``--from dp|rdp|zcdp`` and the guarantee's
    flags, read as ``reconrisk convert`` reads them."""
    from .. import _validate as v
    from ..analysis.guarantee import SOURCES, GuaranteeAnalysis
    from ..errors import ReconRiskError

    source = v.choice("from", source, SOURCES)
    order, epsilon = curve_pairs(source, curve, order, epsilon)
    if one_sided and source == "dp":
        raise ReconRiskError("--one-sided belongs to --from rdp or zcdp ((epsilon, delta)-DP holds in both directions by "
                             "definition)")
    one = lambda x: None if not x else (x[0] if len(x) == 1 else list(x))  # noqa: E731
    return GuaranteeAnalysis(source, epsilon=one(epsilon), delta=one(delta), order=None if not order else list(order),
                             rho=rho, symmetric=not one_sided)


def source_label(analysis) -> str:
    """What a table title says the numbers are about: σ, q, T (and the sampler), the event, or the guarantee."""
    src = analysis.source
    if analysis.supports("mechanism"):  # a release: σ, q, T
        if not src.homogeneous:
            return f"{len(src.segments)} segments, T={src.steps}"
        sampler = {"fixed": " (fixed batches)", "full": " (full batch)"}.get(src.sampler, "")
        return f"σ={src.noise_multiplier:g}, q={src.sample_rate:g}{sampler}, T={src.steps}"
    if not analysis.supports("two_sided"):  # a guarantee
        g = src["guarantee"]
        if g == "dp":
            e, d = src["epsilon"], src["delta"]
            return f"(ε={e:g}, δ={d:g})-DP" if not isinstance(e, list) else f"a privacy profile of {len(e)} (ε, δ) pairs"
        if g == "rdp":
            return f"an RDP curve of {len(src['order'])} orders"
        if g == "zcdp":
            return f"ρ={src['rho']:g}-zCDP"
        return f"VMF κ={src['concentration']:g}, p={src['dim']}, q={src['sample_rate']:g}, T={src['compositions']}"
    return analysis.label


def source_dict(analysis) -> dict:
    """The JSON keys that say what was analysed: the release as run, the event, or the guarantee."""
    src = analysis.source
    if hasattr(src, "to_dict"):
        return src.to_dict()
    return {"guarantee": src} if isinstance(src, dict) else analysis.describe()


@app.command("risk")
def risk_cmd(
    measure: str = typer.Option(..., "--measure", "-m", help=_MEASURE_HELP),
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", "-s", help="DP-SGD noise multiplier σ."),
    sample_rate: Optional[float] = typer.Option(None, "--sample-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
    steps: Optional[int] = typer.Option(None, "--steps", "-T", help="Number of DP-SGD steps T."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Fixed-size batches of B examples without replacement (instead of -q; with --dataset-size)."),
    dataset_size: Optional[int] = typer.Option(None, "--dataset-size", help="Number of training examples N (with --batch-size)."),
    release_file: Optional[Path] = typer.Option(None, "--release", help="A TOML release file (release keys, a schedule, or dp_accounting events, e.g. Laplace)."),
    source: Optional[str] = typer.Option(None, "--from", help="dp | rdp | zcdp: the risks a guarantee alone certifies (upper ends; flags as `reconrisk convert`)."),
    epsilon: Optional[List[float]] = typer.Option(None, "--epsilon", "-e", help="ε of (ε, δ)-DP, or of (order, ε)-RDP (repeat with --order)."),
    delta: Optional[List[float]] = typer.Option(None, "--delta", help="δ of (ε, δ)-DP (default 0: pure ε-DP)."),
    order: Optional[List[float]] = typer.Option(None, "--order", "-a", help="Rényi order of each --epsilon (--from rdp)."),
    curve: Optional[str] = typer.Option(None, "--curve", help="RDP curve: order:epsilon pairs or a file of pairs (--from rdp)."),
    rho: Optional[float] = typer.Option(None, "--rho", help="ρ of ρ-zCDP (--from zcdp)."),
    one_sided: bool = typer.Option(False, "--one-sided", help="--from rdp/zcdp: the curve bounds one direction only."),
    prior_size: Optional[int] = typer.Option(None, "--prior-size", "-n", help="N candidates, uniform prior (b = 1/N)."),
    kappa: Optional[float] = typer.Option(None, "--kappa", help="Baseline success κ of a reconstruction prior."),
    baseline: Optional[float] = typer.Option(None, "--baseline", help="Baseline success b (attribute: max prior mass)."),
    prior: Optional[str] = typer.Option(None, "--prior", help="Prior probabilities, comma-separated (attribute, rad)."),
    fpr: Optional[float] = typer.Option(None, "--fpr", help="False-positive rate α (membership-tpr)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Certified bound on one operational risk (or --measure all), read off the trade-off curve of a release, a
    dp_accounting event (--release) or a guarantee alone (--from; upper ends, the conversion named)."""
    from ..measures.risk import CLI_NAMES, canonical_measure
    from ..errors import ReconRiskError

    if source is not None:
        given = [f for f, x in (("-s", noise_multiplier), ("-q", sample_rate), ("-T", steps), ("--batch-size", batch_size),
                                ("--dataset-size", dataset_size), ("--release", release_file)) if x is not None]
        if given:
            raise ReconRiskError(f"--from takes a guarantee instead of a release; found {', '.join(given)}")
        analysis = guarantee_analysis(source, epsilon, delta, order, curve, rho, one_sided)
    else:
        extra = [f for f, x in (("--epsilon", epsilon), ("--delta", delta), ("--order", order), ("--curve", curve),
                                ("--rho", rho)) if x] + (["--one-sided"] if one_sided else [])
        if extra:
            raise ReconRiskError(f"{', '.join(extra)} {'describes' if len(extra) == 1 else 'describe'} a guarantee: "
                                 f"give --from dp|rdp|zcdp with {'it' if len(extra) == 1 else 'them'}")
        analysis, _ = resolve_analysis(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                       release_file=release_file, batch_size=batch_size, dataset_size=dataset_size)
    if measure == "all":
        _all(analysis, measure_kwargs(prior_size, kappa, baseline, prior, fpr), json_out)
        return
    r = analysis.risk(canonical_measure(measure, cli=True), **measure_kwargs(prior_size, kappa, baseline, prior, fpr))
    payload = {"measure": CLI_NAMES[r.quantity], **r.to_dict(), **source_dict(analysis)}
    if json_out:
        print_json(payload)
        return
    ref = r.details.get("reference")  # fixed-size batches: the one-reference bound that won
    rows = [[CLI_NAMES[r.quantity] + (f" ({ref} reference)" if ref else ""), r.baseline, r.lower, r.upper]]
    for name, val in payload.get("baselines", {}).items():
        rows.append([f"{name} (baseline)", None, None, val])
    caption = r.formula if r.lower is not None else f"{r.formula}; upper end only ({r.method} conversion of a guarantee)"
    print_table(f"{CLI_NAMES[r.quantity]}: {source_label(analysis)}", ["method", "blind guess", "lower", "upper"], rows,
                caption=caption)


def _all(analysis, kw, json_out: bool) -> None:
    from ..analysis.risk import all_risks
    from ..measures.risk import CLI_NAMES
    from ..errors import ReconRiskError

    with spinner("every risk measure from the certified curve", enabled=not json_out):
        risks = all_risks(analysis, **kw)
    try:
        eps = analysis.epsilon(1e-5).upper
    except ReconRiskError:  # an accountant corner (e.g. extreme noise): the risks stand on their own
        eps = None
    if json_out:
        payload = {"measure": "all", **source_dict(analysis), "epsilon": eps, "delta": 1e-5,
                   "risks": [{"measure": CLI_NAMES[r.quantity], **r.to_dict()} for r in risks]}
        print_json(payload)
        return
    rows = []
    for r in risks:
        rows.append([_MEANING.get(r.quantity, r.quantity), r.baseline, r.lower, r.upper])
        for name, val in r.details.get("baselines", {}).items():
            rows.append(["  Cherubin et al. closed form" if name.startswith("cherubin") else f"  {name}", None, None, val])
    if analysis.supports("mechanism") and getattr(getattr(analysis, "source", None), "sampler", None) == "fixed":
        caption = ("each row certified two-sided: membership and Bayes security from the symmetrised replace-one "
                   "curve, the reconstruction rows from the smaller of two one-reference bounds (never-sampled, "
                   "zero-out); lower/upper bracket each bound (Cherubin et al.: an approximation when q < 1)")
    elif analysis.supports("mechanism"):
        caption = "each row certified two-sided from one trade-off curve (Cherubin et al.: an approximation when q < 1)"
    elif not analysis.supports("two_sided"):
        caption = f"upper ends only: a guarantee bounds the risks from above ({risks[0].method} conversion)"
    else:
        caption = "each row certified two-sided from the event's pessimistic and optimistic privacy-loss distributions"
    print_table(
        (f"What ε = {eps:.3g} (δ = 1e-5) means: " if eps is not None and eps != float("inf") else "Risks of ")
        + source_label(analysis), ["risk", "blind guess", "lower", "upper"], rows, caption=caption)


_MEANING = {
    "reconstruction": "reconstruction success",
    "reidentification": "re-identification among N",
    "attribute": "attribute inference",
    "membership_tpr": "membership TPR at the FPR",
    "membership_advantage": "membership advantage TPR − FPR",
    "rad": "reconstruction advantage",
    "bayes_security": "Bayes security (1 = perfect)",
}


@app.command("tradeoff")
def tradeoff_cmd(
    noise_multiplier: float = typer.Option(..., "--noise-multiplier", "-s", help="DP-SGD noise multiplier σ."),
    sample_rate: float = typer.Option(..., "--sample-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
    steps: int = typer.Option(..., "--steps", "-T", help="Number of DP-SGD steps T."),
    alpha_min: float = typer.Option(1e-6, "--alpha-min", help="Smallest false-positive rate α (down to 1e-12)."),
    alpha_max: float = typer.Option(0.5, "--alpha-max", help="Largest α (< 1)."),
    points: int = typer.Option(200, "--points", help="Number of α values (log-spaced)."),
    log_axes: bool = typer.Option(False, "--log-axes", help="Log-log ROC axes (small α in view)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Directory for tradeoff.png/.svg/.csv/.json."),
    json_out: bool = typer.Option(False, "--json", help="Print the curve as JSON."),
) -> None:
    """Certified two-sided trade-off curve f(α) (ROC: TPR = 1 − f(α)) with the GDP and RDP curves beside it."""

    from .. import _validate as v
    from .._io import check_out_dir
    from ..errors import ReconRiskError
    from ..release import Release

    if out is not None:
        out = check_out_dir(out)  # before the curve: an unwritable --out fails at once, in one line
    release = Release(noise_multiplier, sample_rate, steps)
    lo = v.probability_open("alpha_min", alpha_min)
    hi = v.probability_open("alpha_max", alpha_max)
    if lo >= hi:
        raise ReconRiskError(f"alpha_min must be < alpha_max; found alpha_min={lo:g}, alpha_max={hi:g}")
    n = v.integer("points", points, minimum=2, maximum=100_000)
    from ..analysis.accountant import shared_analysis

    curve = shared_analysis(release).tradeoff(np.logspace(np.log10(lo), np.log10(hi), n))
    files = None
    if out is not None:
        from ..report.tradeoff import write_tradeoff

        files = write_tradeoff(release, curve, out, log_axes=log_axes)
    if json_out:
        payload = curve.to_dict()
        payload["files"] = files
        print_json(payload)
        return
    idx = np.unique(np.linspace(0, n - 1, min(n, 9)).round().astype(int))
    rows = [[curve.alpha[i], curve.beta.lower[i], curve.beta.upper[i], curve.power.upper[i]] for i in idx]
    caption = f"certified ({curve.method}); max width {float(np.max(curve.width)):.2g}"
    if files:
        caption += f"; figure: {files['png']}"
    print_table(f"Trade-off curve: σ={noise_multiplier:g}, q={sample_rate:g}, T={steps}",
                ["α (FPR)", "f(α) lower", "f(α) upper", "TPR ≤"], rows, caption=caption)


def calibrate_measure(measure, target, solve, noise_multiplier, sample_rate, steps, target_rero, baseline_args,
                      json_out, delta: float = 1e-5, batch_size=None, dataset_size=None):
    """``reconrisk calibrate`` — both routes (``--target-rero`` and ``--measure M --target X``) call this, and it
    calls the one calibrator, :func:`reconrisk._src.analysis.calibrate.calibrate`."""
    from ..analysis.accountant import shared_analysis
    from ..analysis.calibrate import calibrate
    from ..measures.risk import CLI_NAMES, canonical_measure
    from ..errors import ReconRiskError

    if target_rero is not None:
        if measure is not None or target is not None:
            raise ReconRiskError("give either --target-rero or --measure M --target X, not both")
        measure, target = "reconstruction", target_rero
        if baseline_args["prior_size"] is not None or baseline_args["kappa"] is not None:
            from .. import _validate as v
            from ..priors import resolve_kappa

            v.in_range("target_rero", target_rero, resolve_kappa(baseline_args["kappa"], baseline_args["prior_size"]), 1.0)
    elif measure is None or target is None:
        raise ReconRiskError("calibrate needs --target-rero, --sample-rate and --steps (or --measure M --target X "
                             "--solve ...)")
    quantity = canonical_measure(measure, cli=True)
    kw = measure_kwargs(baseline_args["prior_size"], baseline_args["kappa"], baseline_args["baseline"],
                        baseline_args["prior"], baseline_args["fpr"])

    with spinner(f"calibrating {solve.replace('-', ' ')}", enabled=not json_out):
        fixed = {} if batch_size is None and dataset_size is None else dict(batch_size=batch_size,
                                                                            dataset_size=dataset_size)
        cal = calibrate(quantity, target, solve.replace("-", "_"), noise_multiplier=noise_multiplier,
                        sample_rate=sample_rate, steps=steps, **fixed, **kw)
    b = cal.bound
    payload = cal.to_dict()
    payload.update(measure=CLI_NAMES[quantity], lower=b.lower, upper=b.upper, prior_size=baseline_args["prior_size"])
    if quantity == "reconstruction":  # the one ``rero`` shape of ``reconrisk bound``
        payload["rero"] = {"method": b.method, "lower": b.lower, "upper": b.upper, "converged": b.converged}
    payload["epsilon"] = shared_analysis(cal.release).epsilon(delta).upper  # (the analysis the search composed)
    payload["delta"] = delta
    if json_out:
        print_json(payload)
        return
    solved = cal.solve
    sampling = ([["batch_size", cal.batch_size], ["dataset_size", cal.dataset_size]] if cal.sampler == "fixed"
                else [["sample_rate", cal.sample_rate]])
    print_table(
        f"Calibration of {CLI_NAMES[quantity]} to {target:g}: solved {solved}",
        ["quantity", "value"],
        [["noise_multiplier", cal.noise_multiplier], *sampling, ["steps", cal.steps],
         [f"{CLI_NAMES[quantity]} lower", b.lower], [f"{CLI_NAMES[quantity]} upper (certified)", b.upper],
         [f"epsilon (δ={delta:g})", payload["epsilon"]]],
        caption=(("fixed-size batches without replacement (replace-one neighbours)"
                  + (f"; read against the {b.details['reference']} reference" if b.details.get("reference") else ""))
                 if cal.sampler == "fixed" else None),
    )
