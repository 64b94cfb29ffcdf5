"""``reconrisk report``: one page (HTML + JSON) with every bound family for one release (no JAX unless --attack)."""

from __future__ import annotations

import shlex
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import command_options, echo, monte_carlo_note, print_json, print_table, progress


#: The stages :func:`reconrisk._src.experiments.riskreport.risk_report` announces through its ``progress`` callback.
REPORT_STAGES = ("epsilon", "ReRo", "trade-off curve", "risk measures", "Fano, MSE, analytic, capacity", "calibration",
                 "attack")


def _early_draws(release, samples: int, seed: int, progress):
    """The Monte-Carlo draws of ``release``, started before the report's heavier imports.

    They need only the release's segments, the seed and the sample count (numpy, no scipy), so they run on the
    idle core while the rest of the report is imported and computed; the report checks they are its own draws
    and uses them (:func:`~reconrisk._src.analysis.privacy_rero.start_monte_carlo`). None for a ``dp_accounting`` event (no
    Monte Carlo), for fixed-size batches (analysed at σ/2, :meth:`~reconrisk._src.release.Release.dominating`: the
    report draws those itself), and for values the Monte Carlo's own checks
    (:func:`~reconrisk._src.measures.montecarlo.check_draws`) refuse, which the report's validation says in one line.
    """
    from ..errors import ReconRiskError
    from ..release import Release

    if not isinstance(release, Release) or release.sampler == "fixed" or not samples:
        return None
    from ..measures.montecarlo import LogRatioSampler, check_draws

    try:
        samples, seed = check_draws(samples, seed, release.steps)
    except ReconRiskError:
        return None
    return LogRatioSampler(seed, samples, release.segments, progress=progress)


class _DrawCounts:
    """Progress of draws started before the progress bar exists: counted, then handed to the bar."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bar = None
        self._pending = 0

    def __call__(self, k: int) -> None:
        with self._lock:
            if self._bar is None:
                self._pending += k
                return
        self._bar(k)

    def attach(self, bar) -> None:
        with self._lock:
            self._bar, k, self._pending = bar, self._pending, 0
        if k:
            bar(k)


@app.command("report")
def report_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Directory for report.html and report.json."),
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", "-s", help="DP-SGD noise multiplier σ."),
    sample_rate: Optional[float] = typer.Option(None, "--sample-rate", "-q", help="Poisson sampling rate q in (0, 1]."),
    steps: Optional[int] = typer.Option(None, "--steps", "-T", help="Number of DP-SGD steps T."),
    clip_norm: Optional[float] = typer.Option(None, "--clip-norm", "-C", help="Clip norm C (default 1)."),
    release_file: Optional[Path] = typer.Option(None, "--release", help="A TOML release file instead of the flags."),
    from_opacus: Optional[Path] = typer.Option(
        None, "--from-opacus", help="A saved Opacus accountant state (JSON, or torch.save read weights-only)."),
    prior_size: Optional[int] = typer.Option(
        None, "--prior-size", "-n",
        help="Uniform prior over N candidates. Give it (or --kappa) for your data: without either the report assumes "
             "a 1-in-10 prior and says so on the page and on stderr."),
    kappa: Optional[float] = typer.Option(None, "--kappa", help="Baseline success κ instead of --prior-size."),
    target_rero: Optional[float] = typer.Option(None, "--target-rero", "-g", help="Target ReRo: also calibrate σ for it."),
    delta: float = typer.Option(1e-5, "--delta", help="δ at which ε is reported."),
    samples: int = typer.Option(1_000_000, "--samples", help="Monte-Carlo samples of the ReRo estimate (the Monte-Carlo method of `reconrisk bound`); 0 skips."),
    seed: int = typer.Option(0, "--seed", help="Seed of the Monte-Carlo sampler."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the Monte-Carlo interval."),
    fpr: float = typer.Option(0.01, "--fpr", help="False-positive rate of the membership-TPR row."),
    attribute_baseline: float = typer.Option(0.5, "--attribute-baseline", help="Blind-guess success of attribute inference."),
    diam: float = typer.Option(1.0, "--diam", help="Per-coordinate data diameter of Guo's MSE bound."),
    model_dim: Optional[int] = typer.Option(None, "--model-dim", help="Dimension p of the released gradient (Bayes' capacity)."),
    data_dim: Optional[int] = typer.Option(None, "--data-dim", help="Input dimension N (analytic attack, Riess et al. 2024)."),
    min_norm: Optional[float] = typer.Option(None, "--min-norm", help="Smallest nonzero data norm m (analytic attack)."),
    mse_eta: float = typer.Option(0.01, "--mse-eta", help="MSE threshold η of the analytic ReRo (data units²)."),
    psnr_eta: float = typer.Option(20.0, "--psnr-eta", help="PSNR threshold (dB) of the analytic ReRo."),
    attack: bool = typer.Option(False, "--attack", help="Also run the audit's informed adversary (needs JAX)."),
    trials: int = typer.Option(100, "--trials", help="Attack trials with --attack."),
    attack_seed: int = typer.Option(0, "--attack-seed", help="Seed of the attack trials."),
    json_out: bool = typer.Option(False, "--json", help="Print report.json to stdout instead of a table."),
) -> None:
    """Every bound family side by side for one release: a self-contained report.html and report.json."""
    from .._io import check_out_dir
    from ..experiments.release_source import resolve_source

    out = check_out_dir(out)  # before any computation: an unwritable --out fails at once
    # the one release (or dp_accounting event) of this command, read where its flags are parsed and carried on
    released, source = resolve_source(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                      clip_norm=clip_norm, release_file=release_file, from_opacus=from_opacus,
                                      options=command_options())
    counts = _DrawCounts()
    sampler = _early_draws(released, samples, seed, counts)
    try:
        from ..errors import ParameterError, ReconRiskError
        from ..experiments.riskreport import ReportConfig, risk_report

        try:
            cfg = ReportConfig(prior_size=prior_size, kappa=kappa, delta=delta, samples=samples, seed=seed,
                               confidence=confidence, fpr=fpr, attribute_baseline=attribute_baseline, diam=diam,
                               target_rero=target_rero, model_dim=model_dim, data_dim=data_dim, min_norm=min_norm,
                               mse_eta=mse_eta, psnr_eta=psnr_eta, attack=attack, trials=trials,
                               attack_seed=attack_seed)
        except ParameterError as exc:  # the library names Python parameters; here they are flags
            flags = ", ".join("--" + p.replace("_", "-") for p in exc.parameters)
            raise ReconRiskError(f"{exc} (flag{'s' if len(exc.parameters) > 1 else ''} {flags})") from None
    except BaseException:
        if sampler is not None:
            sampler.cancel()
        raise
    defaulted = prior_size is None and kappa is None
    if defaulted and not json_out:
        print(f"reconrisk: warning: no prior given (--prior-size or --kappa): every number assumes a uniform 1-in-"
              f"{cfg.prior_size} prior (κ = {1 / cfg.prior_size:g}); give the prior of your data", file=sys.stderr)
    if source.get("clip_norm_source", "").startswith("default") and model_dim is not None and not json_out:
        print("reconrisk: note: the Opacus file holds no clip norm (max_grad_norm); Bayes' capacity assumes C = 1 "
              "(give --clip-norm)", file=sys.stderr)
    # one bar: the Monte-Carlo samples, plus one unit per stage of the report (named as it starts)
    from ..release import Release

    draws = 2 * samples * released.steps if samples and isinstance(released, Release) else 0  # an event: none
    if draws:
        monte_carlo_note(samples, released.steps, enabled=not json_out)
    total = draws + len(REPORT_STAGES)
    with progress(total, "report", enabled=not json_out) as bar:
        def stage(name: str) -> None:
            bar.describe(f"report: {name}")
            bar(1)

        figures = []  # drawn while the Monte-Carlo draws finish on other threads (the figures do not show them)

        def draw(partial) -> None:  # (the report whose Monte-Carlo row is not in yet)
            from ..report.report_plots import figures as draw_figures

            figures.append(draw_figures(partial))

        counts.attach(bar)
        report = risk_report(released, cfg, progress=stage, mc_progress=bar, before_monte_carlo=draw,
                             sampler=sampler)
    from .. import __version__
    from ..report.html import write_report
    from ..report_model import PriorProvenance, Provenance, report_json

    provenance = Provenance(shlex.join(["reconrisk", *sys.argv[1:]]), source,
                            PriorProvenance(defaulted, cfg.prior_size, cfg.kappa), __version__)
    files = write_report(report, out, provenance, figures[0] if figures else None)
    if json_out:
        print_json({**report_json(report, provenance), "files": files})
        return
    from ..report.html import summary, table_rows

    for sentence in summary(report):
        echo(sentence.text)
    rows = [[r.family, r.quantity, r.lower, r.upper, r.error or r.formula] for r in table_rows(report)]
    print_table("reconrisk report", ["family", "quantity", "lower", "upper", "error / note"], rows,
                caption=f"wrote {files['html']} and {files['json']}")
