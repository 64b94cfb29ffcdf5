"""Old import paths, kept working by one rule: a private ``reconrisk.<path>`` is ``reconrisk._src.<path>``.

The implementation lives under ``reconrisk._src``; public are only the face (``reconrisk``), ``reconrisk.errors``,
``reconrisk.integrations`` and its public modules, and ``python -m reconrisk``. A finder at the front of
``sys.meta_path`` answers any other ``reconrisk.<path>`` whose ``reconrisk._src.<path>`` exists with that module
itself — the same object, registered in ``sys.modules`` under both names, so ``isinstance`` and monkeypatching
agree — and one ``DeprecationWarning`` at the user's import line
(:func:`~reconrisk._src._deprecated.warn_once_per_statement`; ``import reconrisk.analysis.privacy`` passes two
names through the finder and warns once).

Paths of releases before the rooms were redrawn (``reconrisk.bounds.*``, ``reconrisk.opacus``, …) are first
renamed by :data:`RENAMED` to the module that holds them now, then follow the same rule.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import PathFinder

from ._deprecated import warn_once_per_statement

ROOT = "reconrisk"
PRIVATE = "reconrisk._src"
#: public modules: answered by the ordinary finders, never aliased
PUBLIC = frozenset({"reconrisk.errors", "reconrisk.__main__", "reconrisk.integrations"})
#: renames of earlier releases (old path → the path it had before the move to _src); the rule does the rest
RENAMED = {
    **{f"reconrisk.bounds.{old}": f"reconrisk.{new}" for old, new in {
        "analysis": "analysis.privacy", "events": "analysis.events", "guarantee": "analysis.guarantee",
        "calibrate": "analysis.calibrate", "calibrate_risk": "analysis.calibrate_risk",
        "rero": "measures.rero", "rero_analytic": "measures.rero_analytic", "montecarlo": "measures.montecarlo",
        "tradeoff": "measures.tradeoff", "risk": "measures.risk", "risk_curves": "measures.risk_curves",
        "conversions": "measures.conversions", "fdp": "measures.fdp", "rdp_tradeoff": "measures.rdp_tradeoff",
        "vmf_rero": "measures.vmf_rero", "reference": "measures.reference", "empirical": "audit.empirical",
        "onerun": "audit.onerun", "individual": "individual.privacy", "individual_filter": "individual.filter",
        "mse": "theory.mse", "fano": "theory.fano", "capacity": "theory.capacity",
        "analytic_laws": "theory.analytic_laws", "analytic": "theory.analytic"}.items()},
    **{f"reconrisk.{m}": f"reconrisk.integrations.{m}" for m in ("opacus", "opacus_audit", "opacus_individual")},
    "reconrisk.experiments.recipes": "reconrisk.reproduce.recipes",
    **{f"reconrisk.experiments.recipes_{p}": f"reconrisk.reproduce.{p}" for p in ("balle", "fmte", "guo", "hayes", "vmf")},
}
#: old packages that no longer exist: empty packages whose submodules are the renamed modules
OLD_PACKAGES = frozenset({"reconrisk.bounds"})


def _is_public(name: str) -> bool:
    return name == ROOT or name == PRIVATE or name.startswith(PRIVATE + ".") or any(
        name == p or name.startswith(p + ".") and p != "reconrisk.integrations" for p in PUBLIC)


def private_path(name: str) -> str | None:
    """The module that the old path ``name`` stands for (None: not an alias): ``reconrisk._src.<path>``, or a
    public module an earlier release's rename leads to (``reconrisk.opacus`` → ``reconrisk.integrations.opacus``)."""
    renamed = RENAMED.get(name, name)
    if _public_integration(renamed):
        return renamed if renamed != name else None
    if not renamed.startswith(ROOT + ".") or _is_public(renamed):
        return None
    return PRIVATE + renamed[len(ROOT):]


def _public_integration(name: str) -> bool:
    """A public module of ``reconrisk.integrations`` (a thin file there): the ordinary finders load it."""
    if not name.startswith("reconrisk.integrations."):
        return False
    parent = sys.modules.get("reconrisk.integrations") or importlib.import_module("reconrisk.integrations")
    return PathFinder.find_spec(name, parent.__path__) is not None


class _PrivatePaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self._specs: dict[str, object] = {}

    def find_spec(self, name, path=None, target=None):
        if name in OLD_PACKAGES:
            return importlib.util.spec_from_loader(name, self, is_package=True)
        new = private_path(name)
        if new is None:
            return None
        try:
            found = importlib.util.find_spec(new)
        except ModuleNotFoundError:
            return None
        if found is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=found.submodule_search_locations is not None)

    def create_module(self, spec):
        if spec.name in OLD_PACKAGES:
            return None  # a fresh, empty package
        new = private_path(spec.name)
        # one statement passing a parent and its child (or then a moved name of the child) warns once
        warn_once_per_statement(f"{spec.name} moved to {new}; the old path will be removed in a later release (the "
                                "public names are in reconrisk, reconrisk.errors and reconrisk.integrations)", new)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        if module.__spec__.name in OLD_PACKAGES:
            module.__path__ = []
            return
        module.__spec__ = self._specs.pop(module.__spec__.name)  # the import system set the old name's spec


def install() -> None:
    """Put the finder first (once): it answers only private paths, which the ordinary finders would load twice."""
    if not any(isinstance(f, _PrivatePaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _PrivatePaths())
