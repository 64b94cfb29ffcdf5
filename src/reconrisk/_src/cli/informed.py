"""``reconrisk informed closed-form`` (numpy) and ``reconrisk informed reconn`` (JAX) — Balle, Cherubin & Hayes's (2022) informed adversaries."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from . import app
from ._common import print_json, print_table

informed_app = typer.Typer(
    help="Informed adversaries (Balle, Cherubin & Hayes 2022): closed-form attacks on convex models and the reconstructor network.",
    no_args_is_help=True,
)
app.add_typer(informed_app, name="informed")

_DEFAULT_OUT = Path("reconrisk-out") / "informed"


@informed_app.command("closed-form")
def closed_form_cmd(
    model: str = typer.Option("logistic", "--model", help="linear (Thm 8, no intercept, label known) | ridge | logistic (Thm 1)."),
    n: int = typer.Option(50, "--n", help="Training-set size n (the target included)."),
    dim: int = typer.Option(5, "--dim", help="Feature dimension d."),
    lam: Optional[float] = typer.Option(None, "--lam", help="λ of Σℓ + (nλ/2)||θ||² (0 for linear; default 0.1 otherwise)."),
    noise_std: Optional[List[float]] = typer.Option(None, "--noise-std", help="Output-perturbation std s: the release is θ* + N(0, s²I); repeat for an MSE-against-s curve."),
    trials: int = typer.Option(1, "--trials", help="Noise draws (MSE over draws when > 1; 200 by default for a curve)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the data and the noise."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Train a convex model exactly, release it, and reconstruct its last training point in closed form."""
    from ..attacks.closed_form import closed_form_experiment, noise_curve

    stds = list(noise_std or [0.0])
    res = closed_form_experiment(model, n=n, dim=dim, lam=lam, noise_std=stds[0], trials=trials, seed=seed)
    if len(stds) > 1:
        res["noise_curve"] = noise_curve(model, stds, n=n, dim=dim, lam=lam, trials=max(trials, 2) if trials > 1 else 200,
                                         seed=seed)
    if json_out:
        print_json(res)
        return
    rows = [[k, res[k]] for k in ("n", "dim", "lam", "noise_std", "grad_norm", "identifiable", "candidates",
                                  "relative_error", "label_recovered")]
    if res.get("reason"):
        rows.append(["reason", res["reason"]])
    for k, val in (res.get("noise") or {}).items():
        rows.append([f"noise: {k}", val if not isinstance(val, dict) else f"{val['rate']:.3f} [{val['ci_low']:.3f}, {val['ci_high']:.3f}]"])
    print_table(f"Closed-form reconstruction, model = {model} (Balle, Cherubin & Hayes 2022)", ["quantity", "value"], rows)
    if "noise_curve" in res:
        print_table("Reconstruction MSE against the output-perturbation std", ["noise_std", "trials", "mse_mean", "mse_se",
                    "not_identifiable"], [[c["noise_std"], c["trials"], c.get("mse_mean"), c.get("mse_se"),
                                           c["not_identifiable"]] for c in res["noise_curve"]])


def _grid(result, dataset, out: Path, columns: int = 10) -> list:
    """Targets in the top row, one row of reconstructions per setting below (PNG + SVG)."""
    from .._io import pyplot, save_figure

    plt = pyplot()
    h, w, c = dataset.image_shape
    k = min(columns, result.targets.shape[0])
    rows = 1 + len(result.settings)
    fig, axes = plt.subplots(rows, k, figsize=(1.1 * k, 1.2 * rows), squeeze=False)
    labels = ["targets"] + ["no DP" if s.epsilon is None else f"ε = {s.epsilon:g}" for s in result.settings]
    images = [result.targets] + [s.reconstructions for s in result.settings]
    for r, (lab, imgs) in enumerate(zip(labels, images)):
        for j in range(k):
            ax = axes[r][j]
            img = imgs[j].reshape(h, w, c)
            ax.imshow(img[..., 0] if c == 1 else img.clip(0, 1), cmap="gray" if c == 1 else None, vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r][0].set_ylabel(lab, fontsize=8)
    fig.suptitle("RecoNN (Balle, Cherubin & Hayes 2022): targets above, reconstructions below", fontsize=9)
    return [str(p) for p in save_figure(fig, out, "reconn_grid")]


@informed_app.command("reconn")
def reconn_cmd(
    shadow_models: int = typer.Option(256, "--shadow-models", help="Number of shadow models N (one per shadow target)."),
    epsilon: Optional[List[float]] = typer.Option(None, "--epsilon", "-e", help="ε of DP-GD (repeatable); a run without DP is always included."),
    dataset: str = typer.Option("digits", "--dataset", help="digits (embedded) or mnist:PATH."),
    fixed_size: int = typer.Option(50, "--fixed-size", help="|D⁻|, the points the adversary knows."),
    targets: int = typer.Option(64, "--targets", help="Released models, one per test target."),
    steps: int = typer.Option(30, "--steps", help="Full-batch gradient steps of every model."),
    clip_norm: float = typer.Option(1.0, "--clip-norm", help="Per-example clip norm C of DP-GD."),
    delta: float = typer.Option(1e-5, "--delta", help="δ at which ε is met."),
    epochs: int = typer.Option(100, "--epochs", help="Epochs of the reconstructor."),
    hidden: str = typer.Option("256,256", "--hidden", help="Hidden widths of the reconstructor MLP, comma-separated."),
    seed: int = typer.Option(0, "--seed", help="Seed of splits, DP noise and reconstructor."),
    out: Path = typer.Option(_DEFAULT_OUT, "--out", help="Output folder (JSON, PNG, SVG)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON (no progress)."),
) -> None:
    """Train shadow models with vmap, fit a reconstructor network, attack released models (Balle, Cherubin & Hayes 2022, §IV–V)."""
    from .._io import write_json
    from ..attacks.reconstructor import run_reconn
    from ..data import load_dataset

    from ..errors import ReconRiskError

    try:
        widths = tuple(int(w) for w in hidden.split(","))
    except ValueError:
        raise ReconRiskError(f"hidden must be comma-separated integers such as 256,256; found {hidden!r}") from None
    from .._io import check_out_dir

    out = check_out_dir(out)  # before the shadow models are trained: an unwritable --out fails at once
    ds = load_dataset(dataset)
    eps = [None] + list(epsilon or [])

    def say(msg: str) -> None:
        if not json_out:
            typer.echo(f"… {msg}", err=True)

    res = run_reconn(ds, fixed_size=fixed_size, shadow_models=shadow_models, targets=targets, epsilons=eps,
                     steps=steps, clip_norm=clip_norm, delta=delta, hidden=widths, epochs=epochs, seed=seed,
                     progress=say)
    out = Path(out)
    payload = res.to_dict()
    payload["files"] = {"grid": _grid(res, ds, out)}
    payload["files"]["json"] = str(out / "reconn.json")
    write_json(payload, out, "reconn.json")
    if json_out:
        print_json(payload)
        return
    rows = []
    for s in payload["settings"]:
        nn = s["nn_oracle_success"]
        rows.append(["none" if s["epsilon"] is None else s["epsilon"], s["noise_multiplier"], s["released_accuracy"],
                     s["mse"]["mean"], s["oracle_mse"]["mean"], f"{nn['rate']:.3f} [{nn['ci_low']:.3f}, {nn['ci_high']:.3f}]"])
    chance = payload["settings"][0]["chance"]
    print_table(f"RecoNN on {ds.name}: {shadow_models} shadow models, |D⁻| = {fixed_size}, {targets} targets",
                ["epsilon", "noise mult.", "accuracy", "MSE", "NN-oracle MSE", "NN success [95% CI]"], rows,
                caption=f"chance = 1/(|D⁻|+1) = {chance:.4f}; files in {out}")
