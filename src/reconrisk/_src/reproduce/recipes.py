"""Paper reproductions behind ``reconrisk reproduce RECIPE``: a registry of small declarative recipes.

A :class:`Recipe` names the seed paper and the figure or table it reproduces,
holds its parameters in three sizes and a function that computes a table.
Every row of that table puts **our** number (with its error: the certified
PLD bracket, a 95 % Clopper–Pearson interval, a standard error, or "exact")
beside the **paper's** number for the same quantity, with the tolerance it is
held to and whether it agrees:

* ``small`` (the default) runs in CI time on the embedded digits data;
* ``full`` uses the paper's scale (trial counts, grids) where the embedded data allow it;
* ``tiny`` is a smoke-test size for the test suite (same code path, fewer trials/steps).

Recipes only *call* the library (experiments/, analysis/, measures/, accounting/,
attacks/); they never re-implement a method. The recipes themselves live in
one module per seed paper (:mod:`.hayes` Hayes, Mahloujifar & Balle 2023, :mod:`.guo`
Guo, Karrer, Chaudhuri & van der Maaten 2022, :mod:`.balle` Balle, Cherubin & Hayes 2022, :mod:`.fmte` Riess et al. 2024,
:mod:`.vmf` Biswas et al. 2024); :mod:`reconrisk._src.report.recipes` draws and
writes ``figure.png``, ``table.csv`` and ``result.json``.

"Paper" values are the numbers the paper prints, or — where the paper only
draws a curve — the value the spec (``../shared/specs/spec_NNN.md``)
recomputed from the paper's own formulas; each row's ``paper_text`` says
which. A claim the paper states without a number ("the attack stays below
the bound") is a row whose ``agrees`` is the claim checked on our numbers.
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import _validate as v
from ..errors import ReconRiskError

#: The sizes a recipe runs at (``--tiny`` is for tests; ``--full`` is paper scale).
SIZES = ("tiny", "small", "full")
#: Modules holding the recipes, one per seed paper (imported on first use of the registry).
_MODULES = ("hayes", "guo", "balle", "fmte", "vmf")
#: Column order of ``table.csv`` and of the printed table.
TABLE_COLUMNS = ("panel", "quantity", "setting", "ours", "ours_lower", "ours_upper", "error", "paper", "paper_text",
                 "tolerance", "agrees")


# ----------------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------------
def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x


def row(quantity: str, setting: str, ours, *, lower=None, upper=None, error: str = "exact", paper=None,
        paper_text: str = "", tol: float | None = None, rel_tol: float | None = None, agrees: bool | None = None,
        panel: str = "", x=None, series: str = "") -> dict:
    """One table row: our number (and its interval) beside the paper's.

    With a numeric ``paper`` and ``tol`` (absolute) or ``rel_tol`` (relative
    to the paper's value), ``agrees`` is computed: the distance from the
    paper's value to our interval ``[lower, upper]`` (our value alone when
    there is no interval) is at most the tolerance. Otherwise ``agrees`` is
    what the caller passes (a checked claim) or ``None`` (nothing to compare).
    """
    o = _num(ours)
    lo = o if lower is None else _num(lower)
    hi = o if upper is None else _num(upper)
    p = _num(paper)
    tolerance = ""
    if p is not None and (tol is not None or rel_tol is not None):
        t = tol if tol is not None else rel_tol * abs(p)
        tolerance = f"±{tol:g}" if tol is not None else f"±{100 * rel_tol:g}%"
        if o is None or any(math.isnan(z) for z in (lo, hi)):
            agrees = False
        else:
            gap = max(lo - p, p - hi, 0.0)
            agrees = bool(gap <= t * (1 + 1e-12))
    return {"panel": panel, "quantity": quantity, "setting": setting, "ours": o, "ours_lower": _num(lower),
            "ours_upper": _num(upper), "error": error, "paper": p, "paper_text": paper_text, "tolerance": tolerance,
            "agrees": agrees, "x": _num(x), "series": series or quantity}


def rate_row(quantity: str, setting: str, rate, **kw) -> dict:
    """A row for a :class:`reconrisk._src.metrics.SuccessRate` (or its dict): the rate with its Clopper–Pearson interval.

    ``empirical=`` (an :class:`~reconrisk._src.audit.empirical.EmpiricalAudit` or its dict) adds, for a reconstruction
    success, the ReRo and ε lower bounds it gives.
    """
    d = rate.to_dict() if hasattr(rate, "to_dict") else dict(rate)
    level = getattr(rate, "confidence", d.get("confidence", 0.95))
    empirical = kw.pop("empirical", None)
    out = row(quantity, f"{setting}; {d['successes']}/{d['trials']} trials", d["rate"], lower=d["ci_low"],
              upper=d["ci_high"], error=f"{100 * level:g}% CI (Clopper-Pearson)", **kw)
    if empirical is not None:  # a reconstruction success: what it refutes (audit/empirical.py), in result.json
        out["empirical"] = empirical.to_dict() if hasattr(empirical, "to_dict") else dict(empirical)
    return out


# ----------------------------------------------------------------------------------------
# recipes and results
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecipeOutput:
    """What a recipe's compute function returns: rows, JSON-able facts, and arrays for the drawing."""

    rows: list
    info: dict = field(default_factory=dict)
    artifacts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    """One reproduction: which paper and figure, its parameters per size, how to compute and how to draw it.

    ``compute(params, seed, progress)`` returns a :class:`RecipeOutput`;
    ``progress(text)`` (may be ``None``) announces each phase. ``sizes`` maps
    ``tiny``/``small``/``full`` to parameter dicts and ``scale`` to the
    sentence printed with the output ("small form: 100 trials; --full: 10,000
    as in the paper"). ``drawer`` names a drawing in
    :mod:`reconrisk._src.report.recipes`.
    """

    name: str
    citation: str  # the paper by its authors and year, e.g. "Hayes, Mahloujifar & Balle 2023"
    paper: str
    reproduces: str
    sizes: dict
    scale: str
    compute: Callable[..., RecipeOutput]
    departures: str = ""
    drawer: str = "generic"
    uses_jax: bool = False

    def params(self, size: str) -> dict:
        return dict(self.sizes[v.choice("size", size, SIZES)])

    def describe(self) -> dict:
        return {"name": self.name, "citation": self.citation, "paper": self.paper, "reproduces": self.reproduces,
                "scale": self.scale, "departures": self.departures, "uses_jax": self.uses_jax}


@dataclass(frozen=True)
class RecipeResult:
    """A recipe's run: rows (ours beside the paper's), facts, and what the drawing needs (``artifacts``)."""

    recipe: Recipe
    size: str
    seed: int
    params: dict
    rows: list
    info: dict
    seconds: float
    artifacts: dict = field(default_factory=dict, repr=False)

    @property
    def compared(self) -> int:
        return sum(r["agrees"] is not None for r in self.rows)

    @property
    def agreeing(self) -> int:
        return sum(r["agrees"] is True for r in self.rows)

    def to_dict(self) -> dict:
        return {**self.recipe.describe(), "size": self.size, "seed": self.seed, "params": self.params,
                "seconds": self.seconds, "compared": self.compared, "agreeing": self.agreeing,
                "rows": self.rows, "info": self.info}


_REGISTRY: dict[str, Recipe] = {}


def register(recipe: Recipe) -> Recipe:
    """Add ``recipe`` to the registry (called by the ``recipes_*`` modules at import)."""
    _REGISTRY[recipe.name] = recipe
    return recipe


def registry() -> dict[str, Recipe]:
    """Every recipe by name, in the order of the seed papers."""

    for mod in _MODULES:
        importlib.import_module(f".{mod}", __package__)
    return dict(_REGISTRY)


def recipe_names() -> list[str]:
    """Names of the paper reproductions ``reconrisk reproduce`` runs (``hayes-fig2``, …), in registry order."""
    return list(registry())


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; a one-line :class:`ReconRiskError` naming the valid names otherwise."""
    reg = registry()
    if not isinstance(name, str) or name not in reg:
        raise ReconRiskError(f"recipe must be one of {', '.join(reg)}; found {name!r} (see 'reconrisk reproduce --list')")
    return reg[name]


def run_recipe(name: str, size: str = "small", *, seed: int = 0, progress: Callable[[str], Any] | None = None,
               overrides: dict | None = None) -> RecipeResult:
    """Run recipe ``name`` at ``size`` (``tiny``/``small``/``full``) with ``seed``; same seed → same numbers."""
    recipe = get_recipe(name)
    size = v.choice("size", size, SIZES)
    seed = v.integer("seed", seed, minimum=0, maximum=2**31 - 1)
    params = recipe.params(size)
    for k, val in (overrides or {}).items():
        if k not in params:
            raise ReconRiskError(f"override must name a parameter of {name} ({', '.join(params)}); found {k!r}")
        params[k] = val
    t0 = time.perf_counter()
    out = recipe.compute(params, seed, progress)
    if not out.rows:
        raise ReconRiskError(f"recipe {name} produced no rows")  # pragma: no cover - a bug in a recipe
    return RecipeResult(recipe, size, seed, _jsonable_params(params), list(out.rows), dict(out.info),
                        time.perf_counter() - t0, dict(out.artifacts))


def _jsonable_params(params: dict) -> dict:
    return {k: (list(val) if isinstance(val, tuple) else val) for k, val in params.items()}


def say(progress, text: str) -> None:
    """Announce a phase through the optional ``progress(text)`` callback."""
    if progress is not None:
        progress(text)


__all__ = ["SIZES", "TABLE_COLUMNS", "Recipe", "RecipeOutput", "RecipeResult", "get_recipe", "recipe_names", "register",
           "registry", "row", "rate_row", "run_recipe", "say"]
