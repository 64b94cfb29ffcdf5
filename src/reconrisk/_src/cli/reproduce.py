"""``reconrisk reproduce RECIPE``: a seed paper's headline figure or table, with the paper's numbers beside ours.

Small by default (CI time, the embedded digits), ``--full`` at paper scale.
Each run writes ``OUT/<recipe>/figure.png``, ``table.csv`` and
``result.json``. JAX and matplotlib are imported only when a recipe runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import fmt, print_json, print_table


def _interval(r: dict) -> str:
    if r["ours_lower"] is None and r["ours_upper"] is None:
        return r["error"]
    return f"[{fmt(r['ours_lower'])}, {fmt(r['ours_upper'])}] {r['error']}"


def _paper(r: dict) -> str:
    if r["paper"] is None:
        return r["paper_text"]
    return fmt(r["paper"])


def _verdict(r: dict) -> str:
    a = r["agrees"]
    if a is None:
        return "shown only"
    word = "yes" if a else "NO"
    return f"{word} ({r['tolerance']})" if r["tolerance"] else f"{word} (claim)"


def _list(as_json: bool) -> None:
    from ..reproduce.recipes import registry

    reg = registry()
    if as_json:
        print_json({"recipes": [r.describe() for r in reg.values()]})
        return
    print_table("reconrisk reproduce: recipes", ["recipe", "paper", "reproduces"],
                [[r.name, r.citation, r.reproduces] for r in reg.values()])


@app.command("reproduce")
def reproduce(
    recipe: Optional[str] = typer.Argument(None, help="Recipe name (see --list), e.g. hayes-fig5."),
    list_: bool = typer.Option(False, "--list", help="List the recipes and exit."),
    full: bool = typer.Option(False, "--full", help="Paper scale (slow: minutes to hours) instead of the small form."),
    tiny: bool = typer.Option(False, "--tiny", hidden=True, help="Smoke-test size (for the test suite)."),
    out: Path = typer.Option(Path("reconrisk-out") / "reproduce", "--out", "-o",
                             help="Folder; files go to OUT/<recipe>/ (figure.png, table.csv, result.json)."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random draw (same seed, same numbers)."),
    as_json: bool = typer.Option(False, "--json", help="Print result.json to stdout instead of a table."),
) -> None:
    """Reproduce a seed paper's figure or table; prints the paper's number beside ours (small form by default)."""

    from .. import _io
    from .. import _validate as v
    from ..errors import ReconRiskError

    if list_:
        if recipe is not None:
            raise ReconRiskError(f"give either --list or a recipe name, not both; found --list and {recipe!r}")
        _list(as_json)
        return
    if recipe is None:
        raise ReconRiskError("recipe must be given (one name from 'reconrisk reproduce --list'); found none")
    if full and tiny:
        raise ReconRiskError("give at most one of --full and --tiny; found both")
    from ..reproduce.recipes import get_recipe, run_recipe

    rec = get_recipe(recipe)
    seed = v.integer("seed", seed, minimum=0, maximum=2**31 - 1)
    out = _io.check_out_dir(out)
    size = "full" if full else ("tiny" if tiny else "small")

    def say(text: str) -> None:
        if not as_json:
            print(f"… {text}", file=sys.stderr)

    if not as_json:
        print(f"reconrisk reproduce {rec.name} ({size} form) — {rec.scale}", file=sys.stderr)
    result = run_recipe(rec.name, size, seed=seed, progress=say)
    from ..report.recipes import write_recipe

    files = write_recipe(result, out)
    if as_json:
        payload = result.to_dict()
        payload["files"] = files
        print_json(payload)
        return
    rows = [[r["quantity"], r["setting"], r["ours"], _interval(r), _paper(r), _verdict(r)] for r in result.rows]
    print_table(f"{rec.name} — {rec.citation}: {rec.reproduces}",
                ["quantity", "setting", "ours", "error", "paper", "agrees (tol)"], rows,
                caption=f"This run: {size} form. {rec.scale}. Departures: {rec.departures or 'none'}. "
                        "What the paper says for each row: table.csv, column paper_text.")
    print(f"agreement: {result.agreeing}/{result.compared} compared rows agree; {result.seconds:.1f} s")
    for k in ("figure", "table", "result"):
        print(f"{k}: {files[k]}")
