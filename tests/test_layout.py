"""The house rules of DESIGN.md, checked on the source with ``ast`` (no imports executed).

* no module over ~600 lines (a file holds one idea; split along a seam a reader would name);
* downward imports only: core < mechanisms, accounting < bounds < train, attacks < experiments < report < cli
  — every import, including the lazy ones inside functions, is checked;
* no import circle among module-level imports (what Python executes at import time).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "reconrisk"
MAX_LINES = 600

#: Layer of each first-level name under reconrisk; a module may import from its own layer or lower ones.
LAYERS = {
    # core: the one description (Release), errors, validation, I/O, data, priors, metrics
    "errors": 0, "_validate": 0, "_io": 0, "_jax": 0, "_roots": 0, "_data": 0, "release": 0, "priors": 0, "metrics": 0,
    "data": 0, "results": 0, "_deprecated": 0, "_aliases": 0, "dp_events": 0,
    # theory
    "mechanisms": 1, "accounting": 1,
    "measures": 2, "theory": 2, "analysis": 2, "audit": 2, "individual": 2, "api": 2, "": 2,  # "" is the root package (its __init__ re-exports the api)
    # simulation
    "train": 3, "attacks": 3,
    # orchestration
    "experiments": 4, "reproduce": 4, "integrations": 4,
    "report": 5,
    "cli": 6, "__main__": 6,
}
LAYER_NAMES = {0: "core", 1: "accounting/mechanisms", 2: "theory (measures, analysis, audit, individual)", 3: "train/attacks", 4: "experiments",
               5: "report", 6: "cli"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(module: str, path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Names of reconrisk modules an import statement reaches (attributes resolve to their module)."""
    targets = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names if a.name == "reconrisk" or a.name.startswith("reconrisk.")]
        return names
    if node.level:
        base = _package_of(module, path).split(".")
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        base_name = ".".join(base + ([node.module] if node.module else []))
    elif node.module and (node.module == "reconrisk" or node.module.startswith("reconrisk.")):
        base_name = node.module
    else:
        return []
    for alias in node.names:
        sub = f"{base_name}.{alias.name}"
        targets.append(sub if sub in MODULES else base_name)
    return targets


def _imports(module: str, path: Path, *, top_level_only: bool) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(node.lineno, t) for t in _resolve(module, path, node)]
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    first = parts[1] if len(parts) > 1 else ""
    return LAYERS.get(first)


def test_every_module_has_a_layer():
    unknown = sorted({m for m in MODULES if _layer(m) is None})
    assert not unknown, f"add these to LAYERS in tests/test_layout.py (and to DESIGN.md): {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    n = len(MODULES[module].read_text().splitlines())
    assert n <= MAX_LINES, f"{module} has {n} lines (> {MAX_LINES}); split it along a seam a reader would name"


def test_imports_point_downward():
    bad = []
    for module, path in MODULES.items():
        if module == "reconrisk":  # the public facade re-exports from every layer, lazily
            continue
        mine = _layer(module)
        for line, target in _imports(module, path, top_level_only=False):
            theirs = _layer(target)
            if theirs is not None and mine is not None and theirs > mine:
                bad.append(f"{path.relative_to(SRC)}:{line} ({LAYER_NAMES[mine]}) imports {target} ({LAYER_NAMES[theirs]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_import_circles():
    graph = {m: {t for _, t in _imports(m, p, top_level_only=True) if t in MODULES and t != m} for m, p in MODULES.items()}
    # a package's module-level imports of its own submodules are fine only if those do not import it back
    seen, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for t in sorted(graph[m]):
            visit(t)
        stack.pop()

    for m in sorted(graph):
        visit(m)
    # importing a submodule runs its package's __init__ first: a package importing its own children is not a circle
    real = [c for c in cycles if not all(c[i + 1].startswith(c[i] + ".") or c[i].startswith(c[i + 1] + ".")
                                         for i in range(len(c) - 1))]
    assert not real, "import circles:\n" + "\n".join(" -> ".join(c) for c in real)


def test_the_checker_can_fail(tmp_path):
    """The resolver sees an upward lazy import (a report import inside an experiments function)."""
    path = PKG / "experiments" / "fil.py"
    node = ast.parse("def f():\n    from ..report.fil import grid_figures\n").body[0].body[0]
    (target,) = _resolve("reconrisk.experiments.fil", path, node)
    assert target == "reconrisk.report.fil" and _layer(target) > _layer("reconrisk.experiments.fil")
    node = ast.parse("from .. import _validate as v").body[0]
    assert _resolve("reconrisk.theory.mse", PKG / "bounds" / "mse.py", node) == ["reconrisk._validate"]
