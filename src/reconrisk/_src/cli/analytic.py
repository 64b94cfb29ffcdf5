"""``reconrisk analytic``: Riess et al.'s (2024) analytic gradient-inversion bounds, calibration, simulation and figures.

``bound`` and ``calibrate`` import only numpy/scipy; ``simulate`` and
``figures`` import matplotlib (and JAX for ``--mode explicit``) inside the
command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import numpy as np
import typer

from .. import _validate as val
from .._io import write_json
from ..errors import ReconRiskError
from . import app
from ._common import deprecated_alias, pick, print_json, print_table, progress

analytic_app = typer.Typer(
    name="analytic",
    help="Optimal analytic gradient inversion under DP (Riess et al. 2024): ReRo for MSE/PSNR, NCC bound, calibration, attacks.",
    no_args_is_help=True,
)
app.add_typer(analytic_app, name="analytic")

_DEFAULT_OUT = Path("reconrisk-out") / "analytic"


def _check_sizes(*, dim, averaged, metric=None, eta=None, **norms) -> None:
    """Sizes and norms in a range where N, k and R², m², C² stay finite doubles (checked even where
    the metric does not use them, so no flag is ignored silently)."""
    val.max_count("--dim", val.integer("dim", dim, minimum=1), 10**12)
    val.max_count("--averaged", val.integer("averaged", averaged, minimum=1), 10**12)
    if metric == "psnr" and isinstance(eta, float) and abs(eta) < float("inf"):  # 10^(±η/10) must stay finite
        val.in_range("eta", eta, -3000.0, 3000.0, low_open=False, high_open=False)
    for name, x in norms.items():
        if x is not None:
            val.in_range(name, val.positive(name, x), 1e-100, 1e100, low_open=False, high_open=False)


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _floats(name: str, text: str) -> list[float]:
    try:
        vals = [float(t) for t in text.replace(";", ",").split(",") if t.strip()]
    except ValueError:
        raise ReconRiskError(f"{name} must be a comma-separated list of numbers; found {text!r}") from None
    if not vals:
        raise ReconRiskError(f"{name} must hold at least one number; found {text!r}")
    return [val.positive(name, x) for x in vals]


@analytic_app.command("bound")
def bound_cmd(
    metric: str = typer.Option(..., "--metric", help="mse | psnr | ncc"),
    noise_multiplier: float = typer.Option(..., "--noise-multiplier", help="σ: noise std / clip norm (> 0)."),
    dim: int = typer.Option(..., "--dim", help="N: input dimension (>= 1)."),
    eta: Optional[float] = typer.Option(None, "--eta", help="Threshold: MSE (>= 0, data units²) or PSNR (dB); optional for ncc (in [-1, 1])."),
    min_norm: Optional[float] = typer.Option(None, "--min-norm", help="m: smallest nonzero data norm (> 0); mse and psnr need it or --clip-norm."),
    clip_norm: Optional[float] = typer.Option(None, "--clip-norm", help="C: also report the looser C-variant (valid if C <= m) and the rows ⌈(C/m)²⌉; alone, γ is the C-variant."),
    data_range: Optional[float] = typer.Option(None, "--data-range", help="Global data range R for PSNR (default 1)."),
    averaged: int = typer.Option(1, "--averaged", help="k matched reconstructions averaged (Prop. 7): σ² → σ²/k."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON dict."),
) -> None:
    """ReRo bound γ(η) for MSE (Prop. 3) or PSNR (Prop. 5), or the NCC bound (Prop. 6)."""
    from ..theory.analytic import analytic_bound

    _check_sizes(dim=dim, averaged=averaged, metric=metric, eta=eta, data_range=data_range, min_norm=min_norm,
                 clip_norm=locals().get("clip_norm"))

    res = analytic_bound(
        metric,
        noise_multiplier,
        dim,
        eta=eta,
        min_norm=min_norm,
        clip_norm=clip_norm,
        data_range=data_range,
        averaged=averaged,
    )
    d = _drop_none(res.to_dict())
    if as_json:
        print_json(d)
        return
    labels = {
        "rero": "γ = P(success) bound" if res.metric != "mse" else "γ = P(MSE ≤ η) bound",
        "log_rero": "log γ",
        "rero_clip": "γ, C-variant (C ≤ m)",
        "expected": f"E[{res.metric.upper()}] at ‖X‖ = m",
        "ncc_bound": "NCC bound (Prop. 6)",
        "optimal_rows": "rows for the optimal attack ⌈(C/m)²⌉",
        "basis": "γ computed with",
    }
    if res.metric == "psnr":
        labels["rero"] = "γ = P(PSNR ≥ η) bound"
    rows = [(labels.get(k, k), v) for k, v in d.items()]
    if clip_norm is not None and min_norm is not None and res.metric != "ncc" and clip_norm > min_norm:
        rows.append(("note", "C > m: the C-variant does not apply"))
    if res.basis == "clip_norm":
        rows.append(("note", "m unknown: γ is the C-variant, valid only if C <= every nonzero data norm"))
    print_table(f"Riess et al. 2024 analytic bound ({res.metric})", ["quantity", "value"], rows)


@analytic_app.command("calibrate")
def calibrate_cmd(
    metric: str = typer.Option(..., "--metric", help="mse | psnr"),
    eta: float = typer.Option(..., "--eta", help="Threshold: MSE (> 0) or PSNR (dB)."),
    target_rero: Optional[float] = typer.Option(None, "--target-rero", help="Target bound γ* in (0, 1) (required)."),
    gamma: Optional[float] = typer.Option(None, "--gamma", hidden=True, callback=deprecated_alias("--gamma", "--target-rero")),
    dim: int = typer.Option(..., "--dim", help="N: input dimension (>= 1)."),
    min_norm: float = typer.Option(..., "--min-norm", help="m: smallest nonzero data norm (> 0)."),
    data_range: Optional[float] = typer.Option(None, "--data-range", help="Global data range R for PSNR (default 1)."),
    averaged: int = typer.Option(1, "--averaged", help="k matched reconstructions averaged (Prop. 7)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON dict."),
) -> None:
    """Smallest noise multiplier σ with γ(η) ≤ G (closed form)."""
    from ..theory.analytic import analytic_calibration

    _check_sizes(dim=dim, averaged=averaged, metric=metric, eta=eta, data_range=data_range, min_norm=min_norm,
                 clip_norm=locals().get("clip_norm"))
    target = pick("--target-rero", target_rero, gamma)
    if target is None:
        raise ReconRiskError("target_rero must be given with --target-rero (a number in (0, 1)); found none")
    res = analytic_calibration(metric, eta, target, dim, min_norm, data_range=data_range, averaged=averaged)
    d = _drop_none(res.to_dict())
    if as_json:
        print_json(d)
        return
    print_table(f"Riess et al. 2024 calibration ({res.metric})", ["quantity", "value"], list(d.items()))


@analytic_app.command("dp")
def dp_cmd(
    delta: float = typer.Option(..., "--delta", help="δ in (0, 1)."),
    noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", help="σ → ε."),
    epsilon: Optional[float] = typer.Option(None, "--epsilon", help="ε → σ."),
    eps: Optional[float] = typer.Option(None, "--eps", hidden=True, callback=deprecated_alias("--eps", "--epsilon")),
    steps: int = typer.Option(1, "--steps", help="T full-batch steps composed by GDP (σ → σ/√T)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON dict."),
) -> None:
    """(ε, δ) of the Gaussian mechanism by its exact privacy profile (Riess et al. 2024, Eq. 3), either direction."""
    from ..accounting.gaussian import gaussian_eps, gaussian_sigma, gdp_mu

    epsilon = pick("--epsilon", epsilon, eps)
    if (noise_multiplier is None) == (epsilon is None):
        raise ReconRiskError("give exactly one of --noise-multiplier or --epsilon")
    if epsilon is None:
        e = gaussian_eps(noise_multiplier, delta, steps=steps)
        d = {"noise_multiplier": float(noise_multiplier), "delta": delta, "steps": steps, "epsilon": e}
    else:
        s = gaussian_sigma(epsilon, delta, steps=steps)
        d = {"epsilon": float(epsilon), "delta": delta, "steps": steps, "noise_multiplier": s}
    d["mu"] = gdp_mu(d["noise_multiplier"], steps=steps)
    if as_json:
        print_json(d)
        return
    print_table("Gaussian mechanism (full batch, no subsampling)", ["quantity", "value"], list(d.items()))


def _load_data(data: str, samples: int, dim: int, seed: int):
    from ..experiments.analytic import load_digits_or_none, synthetic_uniform

    kind = val.choice("data", data, ("synthetic", "digits"))
    if kind == "synthetic":
        return synthetic_uniform(samples, dim, seed)
    x = load_digits_or_none(samples)
    if x is None:
        raise ReconRiskError(
            "data 'digits' needs reconrisk._src.data.load_digits (the DP-SGD simulator issue), not installed here; "
            "use --data synthetic"
        )
    return x


@analytic_app.command("simulate")
def simulate_cmd(
    noise_multipliers: str = typer.Option("0.01,0.1,1,10", "--noise-multipliers", help="Comma-separated σ values."),
    data: str = typer.Option("synthetic", "--data", help="synthetic (U(0,1)^dim) | digits (8×8, needs reconrisk._src.data)."),
    samples: int = typer.Option(100, "--samples", help="Number of samples attacked per σ."),
    dim: int = typer.Option(4, "--dim", help="N for synthetic data."),
    rows: int = typer.Option(100, "--rows", help="M: rows of the linear layer."),
    clip_norm: Optional[float] = typer.Option(None, "--clip-norm", help="C; default from --clip-regime."),
    clip_regime: str = typer.Option("min", "--clip-regime", help="min (C = m) | sqrt_rows (C = √M·m) | large (10·√M·max‖X‖)."),
    mode: str = typer.Option(
        "fast", "--mode",
        help="fast (exact law, numpy) | explicit (JAX linear layer, real DP-SGD step) | law (metrics from their exact joint law, oracle scale).",
    ),
    scale: str = typer.Option("oracle", "--scale", help="oracle (optimal) | ratio (naive bias trick; needs --bias)."),
    bias: bool = typer.Option(False, "--bias", help="Give the layer a learnable bias."),
    data_range: float = typer.Option(1.0, "--data-range", help="Fixed PSNR data range."),
    seed: int = typer.Option(0, "--seed", help="Seed of the data and the noise."),
    repeats: int = typer.Option(1, "--repeats", help="Attacks per sample (independent noise); rows = samples × repeats."),
    out: Path = typer.Option(_DEFAULT_OUT, "--out", help="Output folder (CSV, JSON, PNG, SVG)."),
    figure: bool = typer.Option(True, "--figure/--no-figure", help="Write the Fig. 2-style figure."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON dict (no progress bar)."),
) -> None:
    """Attack samples through DP-SGD at several σ; CSV of MSE/PSNR/NCC with the theory, and a figure."""

    from ..attacks.analytic import clip_norm_for_regime, simulate_success

    from .. import _io

    out = _io.check_out_dir(out)
    sig = _floats("noise_multipliers", noise_multipliers)
    n = val.max_count("--samples", val.integer("samples", samples, minimum=1), 10**7)
    dim = val.max_count("--dim", val.integer("dim", dim, minimum=1), 10**7)
    rows = val.max_count("--rows", val.integer("rows", rows, minimum=1), 10**7)
    for name, x in (("data_range", data_range), ("clip_norm", clip_norm)):  # x² must stay a finite double
        if x is not None:
            val.in_range(name, val.positive(name, x), 1e-100, 1e100, low_open=False, high_open=False)
    val.choice("mode", mode, ("fast", "explicit", "law"))
    reps = val.max_count("--repeats", val.integer("repeats", repeats, minimum=1), 10**7)
    val.max_count("--samples × --repeats", n * reps, 10**7)
    # data, reconstructions and per-sample laws: ~6 float64 arrays of samples × dim (× repeats in fast mode, which
    # forms every reconstruction); explicit mode adds rows × dim; the CSV holds one line per row
    formed = n * reps if mode == "fast" else n
    val.memory("--samples × --dim", f"{n} × {dim}", 48 * len(sig) * formed * dim + (48 * rows * dim if mode == "explicit" else 0))
    x = _load_data(data, n, val.integer("dim", dim, minimum=1), val.integer("seed", seed, minimum=0))
    c = clip_norm if clip_norm is not None else clip_norm_for_regime(clip_regime, np.linalg.norm(x, axis=1), rows)
    with progress(len(sig) * x.shape[0] * reps, f"simulating ({mode})", enabled=not as_json) as prog:
        sim = simulate_success(
            x, sig, c, rows, bias=bias, scale=scale, mode=mode, data_range=data_range, seed=seed, repeats=reps,
            progress=prog,
        )
    out = Path(out)
    paths = {"csv": str(sim.write_csv(out / "simulate.csv"))}
    if figure:
        from ..report.analytic import figure_simulation

        figs = figure_simulation(sim, out_dir=out, name="simulate", title=f"{data} data, N = {sim.dim}")
        paths.update({p.suffix[1:]: str(p) for p in figs})
    d = sim.to_dict()
    d["data"] = data
    d["files"] = paths
    write_json(d, out, "simulate.json")
    if as_json:
        print_json(d)
        return
    cols = ["σ", "MSE mean", "theory E[MSE]", "PSNR mean", "theory E[PSNR]", "NCC mean", "NCC bound"]
    rows_ = [
        (r["noise_multiplier"], r["mse_mean"], r["theory_mse_mean"], r["psnr_mean"], r["theory_psnr_mean"], r["ncc_mean"], r["ncc_bound"])
        for r in d["summary"]
    ]
    print_table(
        f"Analytic attack ({mode}/{scale}), C = {sim.clip_norm:.4g}, M = {rows}, optimal for {sim.clipped_fraction:.0%} of samples",
        cols,
        rows_,
    )
    for k, p in paths.items():
        print(f"{k}: {p}")


@analytic_app.command("figures")
def figures_cmd(
    fig: str = typer.Option("all", "--fig", help="2 | 3 | 5 | all"),
    data: str = typer.Option("both", "--data", help="synthetic | digits | both (digits skipped if reconrisk._src.data is absent)."),
    mode: str = typer.Option("fast", "--mode", help="fast | explicit (Fig. 2)."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(_DEFAULT_OUT, "--out", help="Output folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the written paths as JSON."),
) -> None:
    """Reproduce Riess et al. 2024, Figs. 2, 3 and 5 on synthetic data and on the digits."""

    from ..experiments import analytic as ea
    from ..report import analytic as ra

    from .. import _io

    out = _io.check_out_dir(out)
    val.choice("mode", mode, ("fast", "explicit"))
    which = val.choice("fig", fig, ("2", "3", "5", "all"))
    kinds = {"synthetic": ["synthetic"], "digits": ["digits"], "both": ["synthetic", "digits"]}
    sources = kinds[val.choice("data", data, tuple(kinds))]
    sd = val.integer("seed", seed, minimum=0)
    written: dict[str, list[str]] = {}
    skipped: list[str] = []
    for src in sources:
        if src == "synthetic":
            x2, img = ea.synthetic_uniform(100, 4, sd), None
        else:
            xd = ea.load_digits_or_none()
            if xd is None:
                msg = "digits skipped: reconrisk._src.data.load_digits is not available in this install"
                skipped.append(msg)
                if not as_json:
                    print(msg, file=sys.stderr)
                continue
            x2 = xd[np.random.default_rng(sd).choice(len(xd), size=min(100, len(xd)), replace=False)]
            img = xd[0].reshape(8, 8)
        if which in ("2", "all"):
            with progress(len(ea.FIG2_REGIMES) * len(ea.FIG2_SIGMAS) * len(x2), f"Fig. 2 ({src})", enabled=not as_json) as prog:
                sims = ea.fig2_simulations(x2, mode=mode, seed=sd, progress=prog)
            paths = ra.figure_success_vs_noise(
                sims, out_dir=out, name=f"fig2_{src}",
                title=f"Riess et al. 2024, Fig. 2 on {src} data (N = {x2.shape[1]}, {len(x2)} samples, M = 100)",
            )
            written[f"fig2_{src}"] = [str(p) for p in paths]
        if which in ("3", "all"):
            if src == "synthetic":
                paths = ra.figure_rero_curves(out_dir=out, name="fig3_synthetic")
            else:
                norms = np.linalg.norm(x2, axis=1)
                paths = ra.figure_rero_curves(
                    sigmas=(0.01, 0.1, 1.0),
                    dims=(),
                    norms=tuple(float(q) for q in np.quantile(norms, [0.0, 0.5, 1.0])),
                    base=(0.1, float(norms.min()), x2.shape[1]),
                    out_dir=out,
                    name="fig3_digits",
                    title=f"ReRo curves at the digits' N = {x2.shape[1]} (‖X‖ rows: min/median/max norm; σ rows at m)",
                )
            written[f"fig3_{src}"] = [str(p) for p in paths]
        if which in ("5", "all"):
            paths = ra.figure_scale_demo(ea.scale_demo(img, seed=sd), out_dir=out, name=f"fig5_{src}")
            written[f"fig5_{src}"] = [str(p) for p in paths]
    payload = {"files": written, "skipped": skipped}
    if as_json:
        print_json(payload)
        return
    for k, ps in written.items():
        print(f"{k}: {', '.join(ps)}")
