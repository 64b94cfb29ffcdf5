"""``reconrisk sweep run|status|export`` — audit-trial sweeps at scale with a resumable SQLite store.

JAX, Dask and pyarrow are imported only by the commands that need them (Dask only for ``--workers`` or
``--scheduler``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import console, fmt, note_saved, print_json, progress

sweep_app = typer.Typer(help="Sweeps of audit trials (TOML grid) on a process pool or Dask, stored in SQLite.",
                        no_args_is_help=True)
app.add_typer(sweep_app, name="sweep")

_STORE_HELP = "SQLite results store (created if missing; one row per finished trial)."


@sweep_app.command("run")
def run_cmd(
    sweep_file: Path = typer.Argument(..., help="Sweep file (TOML): \\[sweep] seed, trials, chunk, dataset; \\[grid] axes (see examples/sweep.toml)."),
    store: Path = typer.Option(..., "--store", help=_STORE_HELP),
    pool: Optional[int] = typer.Option(None, "--pool", help="Local process pool of N processes (default: CPU count, "
                                       "at most 8); 0 runs in this process."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Start a local Dask cluster of N worker processes."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Use an existing Dask cluster, tcp://HOST:PORT "
                                            "(its workers need reconrisk installed)."),
    compile_cache: Optional[Path] = typer.Option(None, "--compile-cache", help="Folder for JAX's persistent "
                                                 "compilation cache, shared by the workers and by reruns (on a remote "
                                                 "cluster: a folder on the workers' machines)."),
    json_output: bool = typer.Option(False, "--json", help="Print the run summary as JSON (no progress bar)."),
) -> None:
    """Run every trial of SWEEP_FILE that the store does not hold yet; rerun after a crash to resume."""
    from ..experiments.store import ResultStore
    from ..experiments.sweep import check_backend, load_sweep, run_sweep

    from .._io import check_out_dir, check_out_file

    check_backend(pool, workers, scheduler)
    sweep = load_sweep(sweep_file)
    if not store.exists():
        check_out_file(store, "--store")
    if compile_cache is not None:
        check_out_dir(compile_cache, "--compile-cache")
    with ResultStore.open(store, create=True) as s:
        done = s.done()
    pending = sum(1 for pt in sweep.points for ids in pt.chunks() for h, _ in ids if h not in done)
    note_saved(store, "the trials finished so far are", "rerun the same command to resume")
    with progress(pending, f"sweep {sweep.name}", enabled=not json_output) as bar:
        result = run_sweep(sweep, store, pool=pool, workers=workers, scheduler=scheduler,
                           compile_cache=str(compile_cache) if compile_cache is not None else None, progress=bar)
    if json_output:
        print_json(result.to_dict())
        return
    _print_points(result.points, f"Sweep {sweep.name}: {result.backend}")

    console().print(f"{result.written} trials written, {result.skipped} already stored, "
                    f"{result.total} in the sweep  ({result.seconds:.1f} s) → {store}")


@sweep_app.command("status")
def status_cmd(
    store: Path = typer.Option(..., "--store", help="An existing results store."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON (points, trials, integrity)."),
) -> None:
    """Trials stored per grid point, success rates with 95% CIs beside the certified bound."""
    from ..experiments.store import ResultStore
    from ..experiments.sweep import summarize

    with ResultStore.open(store) as s:
        points = summarize(s)
        total = s.count()
    if json_output:
        print_json({"store": str(store), "trials": total, "points": points})
        return
    _print_points(points, f"Store {store}: {total} trials")


@sweep_app.command("export")
def export_cmd(
    store: Path = typer.Option(..., "--store", help="An existing results store."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="Write one row per trial as CSV."),
    parquet: Optional[Path] = typer.Option(None, "--parquet", help="Write one row per trial as Parquet (pyarrow)."),
    run_columns: bool = typer.Option(True, "--run-columns/--no-run-columns",
                                     help="Include seconds, worker and finish time (they differ between runs)."),
) -> None:
    """Export the trials (configuration columns, certified bound, per-attack success) to CSV and/or Parquet."""
    from ..errors import ReconRiskError
    from ..experiments.store import ResultStore

    if csv is None and parquet is None:
        raise ReconRiskError("sweep export needs --csv FILE and/or --parquet FILE; found neither")
    from .._io import check_out_file

    for flag, p in (("--csv", csv), ("--parquet", parquet)):
        if p is not None:
            check_out_file(p, flag)
    with ResultStore.open(store) as s:
        written = []
        if csv is not None:
            written.append(s.export_csv(csv, run_columns=run_columns))
        if parquet is not None:
            written.append(s.export_parquet(parquet, run_columns=run_columns))
        n = s.count()
    print(f"wrote {n} trials to {', '.join(map(str, written))}")


_LABELS = (("noise_multiplier", "σ"), ("sample_rate", "q"), ("steps", "T"), ("clip_norm", "C"), ("prior_size", "n"),
           ("known_size", "|D₋|"), ("model", "model"), ("learning_rate", "lr"), ("clip_mode", "clip"),
           ("prior", "prior"), ("delta", "δ"), ("dataset", "data"), ("seed", "seed"))


def _label(c: dict, cert: dict, varying: list[str]) -> str:
    eps = c.get("epsilon") if c.get("epsilon") is not None else cert.get("epsilon")
    parts = [f"ε={eps:.3g}" if eps is not None else "ε=?"]
    parts += [f"{short}={_show(c.get(k))}" for k, short in _LABELS if k in varying]
    return " ".join(parts)


def _show(x) -> str:
    if x is None:
        return "auto"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _print_points(points: list[dict], title: str) -> None:
    """One row per grid point: the keys that vary (σ always), trials, headline attack's success [CI], bound."""
    from rich.table import Table

    keys = [k for k, _ in _LABELS]
    varying = [k for k in keys if len({repr(e["config"].get(k)) for e in points}) > 1 or k == "noise_multiplier"]
    fixed = ", ".join(f"{short}={_show(points[0]['config'].get(k))}"
                      for k, short in _LABELS if k not in varying and k != "seed") if points else ""
    table = Table(title=title, caption=fixed or None)
    for col in ("point", "trials", "attack", "success [95% CI]", "ReRo bound", "ReRo ≥", "ε ≥"):
        table.add_column(col, justify="left" if col in ("point", "attack") else "right")
    for e in points:
        c, cert = e["config"], e["certificate"] or {}
        a = e["primary"]
        rate = e["attacks"].get(a)
        cell = "" if rate is None else f"{rate['rate']:.3f} [{rate['ci_low']:.3f}, {rate['ci_high']:.3f}]"
        if rate is not None and cert.get("rero_upper") is not None and rate["ci_low"] > cert["rero_upper"]:
            cell += "  [red]> bound[/red]"
        emp = e.get("empirical", {}).get(a)
        lower = "" if emp is None else f"{emp['rero']['lower']:.3f}" + ("" if emp["consistent"] else "  [red]> bound[/red]")
        eps_lo = "" if emp is None else f"{emp['epsilon']['lower']:.2f}"
        table.add_row(_label(c, cert, varying), str(e["trials"]), a, cell, fmt(cert.get("rero_upper")), lower, eps_lo)
    if points:
        table.caption = ((table.caption + "\n") if table.caption else "") + (
            "ReRo ≥, ε ≥ (at the point's δ): what the headline attack's successes refute (one-sided 95% "
            "Clopper–Pearson)")
    console().print(table)
