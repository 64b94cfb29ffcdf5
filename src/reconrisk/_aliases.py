"""Import paths of earlier releases, kept working: each old module name is the module that now holds it.

The rooms of the package were redrawn (``bounds/`` split by concept into ``analysis/``, ``measures/``,
``audit/``, ``individual/`` and ``theory/``; the Opacus modules moved to ``integrations/``; the papers'
recipes to ``reproduce/``). ``import reconrisk.bounds.analysis`` or ``import reconrisk.opacus`` still
works: a finder at the end of ``sys.meta_path`` answers the old name with the new module itself (the same
object, so monkeypatching and ``isinstance`` behave) and a ``DeprecationWarning`` naming the new path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from ._deprecated import warn_at_caller

#: old module → new module (the complete list of moves)
MOVED = {
    "reconrisk.bounds.analysis": "reconrisk.analysis.privacy",
    "reconrisk.bounds.events": "reconrisk.analysis.events",
    "reconrisk.bounds.guarantee": "reconrisk.analysis.guarantee",
    "reconrisk.bounds.calibrate": "reconrisk.analysis.calibrate",
    "reconrisk.bounds.calibrate_risk": "reconrisk.analysis.calibrate_risk",
    "reconrisk.bounds.rero": "reconrisk.measures.rero",
    "reconrisk.bounds.rero_analytic": "reconrisk.measures.rero_analytic",
    "reconrisk.bounds.montecarlo": "reconrisk.measures.montecarlo",
    "reconrisk.bounds.tradeoff": "reconrisk.measures.tradeoff",
    "reconrisk.bounds.risk": "reconrisk.measures.risk",
    "reconrisk.bounds.risk_curves": "reconrisk.measures.risk_curves",
    "reconrisk.bounds.conversions": "reconrisk.measures.conversions",
    "reconrisk.bounds.fdp": "reconrisk.measures.fdp",
    "reconrisk.bounds.rdp_tradeoff": "reconrisk.measures.rdp_tradeoff",
    "reconrisk.bounds.vmf_rero": "reconrisk.measures.vmf_rero",
    "reconrisk.bounds.reference": "reconrisk.measures.reference",
    "reconrisk.bounds.empirical": "reconrisk.audit.empirical",
    "reconrisk.bounds.onerun": "reconrisk.audit.onerun",
    "reconrisk.bounds.individual": "reconrisk.individual.privacy",
    "reconrisk.bounds.individual_filter": "reconrisk.individual.filter",
    "reconrisk.bounds.mse": "reconrisk.theory.mse",
    "reconrisk.bounds.fano": "reconrisk.theory.fano",
    "reconrisk.bounds.capacity": "reconrisk.theory.capacity",
    "reconrisk.bounds.analytic_laws": "reconrisk.theory.analytic_laws",
    "reconrisk.bounds.analytic": "reconrisk.theory.analytic",
    "reconrisk.opacus": "reconrisk.integrations.opacus",
    "reconrisk.opacus_audit": "reconrisk.integrations.opacus_audit",
    "reconrisk.opacus_individual": "reconrisk.integrations.opacus_individual",
    "reconrisk.experiments.recipes": "reconrisk.reproduce.recipes",
    "reconrisk.experiments.recipes_balle": "reconrisk.reproduce.balle",
    "reconrisk.experiments.recipes_fmte": "reconrisk.reproduce.fmte",
    "reconrisk.experiments.recipes_guo": "reconrisk.reproduce.guo",
    "reconrisk.experiments.recipes_hayes": "reconrisk.reproduce.hayes",
    "reconrisk.experiments.recipes_vmf": "reconrisk.reproduce.vmf",
}
#: old packages that no longer exist: empty packages whose submodules are the moved modules
OLD_PACKAGES = frozenset({"reconrisk.bounds"})


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self._specs: dict[str, object] = {}

    def find_spec(self, name, path=None, target=None):
        if name in MOVED or name in OLD_PACKAGES:
            return importlib.util.spec_from_loader(name, self, is_package=name in OLD_PACKAGES)
        return None

    def create_module(self, spec):
        if spec.name in OLD_PACKAGES:
            return None  # a fresh, empty package
        new = MOVED[spec.name]
        warn_at_caller(f"{spec.name} moved to {new}; the old path will be removed in a later release")
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        if module.__spec__.name in OLD_PACKAGES:
            module.__path__ = []
            return
        module.__spec__ = self._specs.pop(module.__spec__.name)  # the import system set the old name's spec


def install() -> None:
    """Add the finder once, after the regular ones (a real module of an old name would win)."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
