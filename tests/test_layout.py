"""The house rules of DESIGN.md, checked on the source with ``ast`` (no imports executed).

* no module over 550 lines (a file holds one idea; split along a seam a reader would name);
* no room (first-level package) over 4,000 lines or 18 files;
* downward imports only: core < mechanisms, accounting < measures, analysis, … < train, attacks < experiments
  < report < cli — every import, including the lazy ones inside functions, is checked;
* no import circle, counting the imports inside functions (they run too, only later);
* imports inside functions only for heavy or optional modules (:data:`LAZY_THIRD_PARTY`, and project modules
  that load one of them at import), the root package's lazy names, and — in ``cli/`` only — the computation
  a command runs (every command module is imported when the CLI starts).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "reconrisk"
MAX_LINES = 550
#: A room (first-level package) holds at most this many lines and files.
MAX_ROOM_LINES = 4000
MAX_ROOM_FILES = 18
#: Third-party modules that may be imported inside functions: heavy or optional frameworks (the ``sim``,
#: ``opacus``, ``flower``, ``dask`` and ``parquet`` extras, matplotlib), modules slow to import and kept off the
#: fast paths (scipy's submodules beyond ``scipy.special`` — ``reconrisk bound`` answers in well under a
#: second —, ``dp_accounting``, ~0.7 s, for cross-checks and ``accountant="dp_accounting"``, mpmath), the
#: CLI's rich (tables and bars, loaded when one is drawn) and the standard library's process pools and logging
#: (~6 ms, one path each). Everything else is imported at module top.
LAZY_THIRD_PARTY = frozenset({
    "jax", "jaxlib", "optax", "torch", "opacus", "flwr", "dask", "distributed", "pyarrow", "matplotlib",
    "scipy", "dp_accounting", "mpmath", "rich", "multiprocessing", "concurrent", "logging",
    "jax_privacy", "keras",  # jax-privacy's Keras API (keras_api imports Keras 3, which reads its backend at import)
})
#: The subset whose import makes a project module "heavy" (a project module may be imported lazily if it loads one).
HEAVY_THIRD_PARTY = frozenset({"jax", "jaxlib", "optax", "torch", "opacus", "flwr", "dask", "distributed", "matplotlib",
                               "jax_privacy", "keras"})

#: Layer of each first-level name under reconrisk; a module may import from its own layer or lower ones.
LAYERS = {
    # core: the one description (Release), errors, validation, I/O, data, priors, metrics
    "errors": 0, "_validate": 0, "_io": 0, "_jax": 0, "_roots": 0, "_data": 0, "priors": 0, "metrics": 0,
    "data": 0, "results": 0, "_deprecated": 0, "_aliases": 0, "report_model": 0, "report_sections": 0,
    # adapters: other libraries' descriptions of a run read into reconrisk's terms (Release calls them)
    "adapters": 0,
    # theory
    "mechanisms": 1, "accounting": 1, "release": 1,  # release: a Segment holds a typed mechanism
    "measures": 2, "theory": 2, "analysis": 2, "audit": 2, "individual": 2, "api": 2,
    "": 0,  # "" is reconrisk._src itself (it imports nothing)
    # simulation
    "train": 3, "attacks": 3,
    # orchestration
    "experiments": 4, "reproduce": 4, "integrations": 4,
    "report": 5,
    "cli": 6,
}
#: The face (layer 7): every module outside reconrisk._src — the root package (lazy names), ``__main__``,
#: ``errors`` and the public ``integrations`` modules — may import anything below it; nothing imports it.
FACE_LAYER = 7
LAYER_NAMES = {0: "core", 1: "accounting/mechanisms", 2: "theory (measures, analysis, audit, individual)", 3: "train/attacks", 4: "experiments",
               5: "report", 6: "cli", 7: "face"}
PRIVATE = "reconrisk._src"


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


def _private_parts(module: str) -> list[str] | None:
    """``reconrisk._src.a.b`` → ``["reconrisk", "a", "b"]`` (the path LAYERS speaks of); None for the face."""
    if module != PRIVATE and not module.startswith(PRIVATE + "."):
        return None
    return ["reconrisk"] + module.split(".")[2:]


def _layer(module: str) -> int | None:
    """The layer of a module: its own entry in LAYERS ("package.module") if it has one, else its room's; the
    face (anything outside reconrisk._src) is FACE_LAYER."""
    parts = _private_parts(module)
    if parts is None:
        return FACE_LAYER if module == "reconrisk" or module.startswith("reconrisk.") else None
    own = ".".join(parts[1:3])
    if len(parts) > 2 and own in LAYERS:
        return LAYERS[own]
    first = parts[1] if len(parts) > 1 else ""
    return LAYERS.get(first)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(path: Path) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that runs, with whether it sits inside a function (``if TYPE_CHECKING:`` skipped)."""
    out = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for c in child.orelse:
                    visit(c, in_function)
                continue
            visit(child, in_function)

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, in_function))
        walk(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(path.read_text(), filename=str(path)), False)
    return out


def _third_party(node: ast.Import | ast.ImportFrom) -> list[str]:
    """Top-level names of the non-project modules an import statement reaches."""
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names if a.name.split(".")[0] != "reconrisk"]
    if node.level or not node.module or node.module.split(".")[0] == "reconrisk":
        return []
    return [node.module.split(".")[0]]


def _all_imports() -> dict[str, list[tuple[int, str, bool]]]:
    """module -> [(line, project module imported, inside a function)]."""
    return {m: [(node.lineno, t, f) for node, f in _import_nodes(p) for t in _resolve(m, p, node)]
            for m, p in MODULES.items()}


ALL_IMPORTS = _all_imports()


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def modules_loading(third_party: frozenset[str]) -> set[str]:
    """Project modules whose import loads one of ``third_party`` (directly or through module-level imports)."""
    found = {m for m, p in MODULES.items()
             if any(not f and set(_third_party(node)) & third_party for node, f in _import_nodes(p))}
    grew = True
    while grew:
        grew = False
        for m, imports in ALL_IMPORTS.items():
            if m in found:
                continue
            loads = {t for _, t, f in imports if not f} | {a for _, t, f in imports if not f for a in _ancestors(t)}
            if loads & found - {"reconrisk"}:
                found.add(m)
                grew = True
    return found


def heavy_modules() -> set[str]:
    """Project modules whose import loads a heavy framework (``_jax``, the Flower integration, …)."""
    return modules_loading(HEAVY_THIRD_PARTY)


def _lazy_allowed(module: str, target: str, heavy: set[str], slow: set[str]) -> bool:
    """May ``module`` import the project module ``target`` inside a function?"""
    if target in ("reconrisk", PRIVATE) or target in heavy:  # the root package (its lazy names; reconrisk._src: its __version__); a heavy module
        return True
    # mechanisms/ is on `import reconrisk._src.release`'s numpy-only path (a Segment holds a typed mechanism): its
    # classes load the numeric engines (a module of layer <= 1 that loads scipy or dp_accounting) where a number is
    # computed
    if module.startswith("reconrisk._src.mechanisms.") and target in slow and (_layer(target) or 0) <= 1:
        return True
    in_cli = module == "reconrisk._src.cli" or module.startswith("reconrisk._src.cli.")
    # the CLI imports every command module at start: a command loads what it computes or reads (any module
    # outside cli/) when it runs, so that every command's start pays only for the CLI itself
    return in_cli and not (target == "reconrisk._src.cli" or target.startswith("reconrisk._src.cli."))


def lazy_import_violations(module: str, heavy: set[str], slow: set[str], path: Path | None = None) -> list[str]:
    """The imports inside functions of ``module`` (read from ``path``) that the rule does not allow (module docstring)."""
    path = MODULES[module] if path is None else path
    where = path.relative_to(SRC) if path.is_relative_to(SRC) else path.name
    bad = []
    for node, in_function in _import_nodes(path):
        if not in_function:
            continue
        for t in _resolve(module, path, node):
            if not _lazy_allowed(module, t, heavy, slow):
                bad.append(f"{where}:{node.lineno} imports {t} inside a function")
        for name in _third_party(node):
            if name not in LAZY_THIRD_PARTY and name != "__future__":
                bad.append(f"{where}:{node.lineno} imports {name} inside a function")
    return bad


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


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (each one is a circle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def import_graph() -> dict[str, set[str]]:
    """Every project import, at module level or inside a function; a module's import of its own package (run
    before the module anyway) and of the root package (its lazy public names) are not arrows."""
    return {m: {t for _, t, _ in imports if t in MODULES and t != m and t not in _ancestors(m)}
            for m, imports in ALL_IMPORTS.items()}


def test_no_import_circles_counting_imports_inside_functions():
    circles = _strongly_connected(import_graph())
    assert not circles, "import circles (imports inside functions included):\n" + "\n".join(
        " <-> ".join(c) for c in circles)


def _room(module: str) -> str | None:
    parts = _private_parts(module)
    if parts is None or len(parts) < 2 or MODULES[module].name != "__init__.py" and len(parts) == 2:
        return None  # the face, reconrisk._src itself and the core modules beside the rooms
    return parts[1]


@pytest.mark.parametrize("room", sorted({r for m in MODULES if (r := _room(m))}))
def test_room_size(room):
    files = [p for m, p in MODULES.items() if _room(m) == room]
    lines = sum(len(p.read_text().splitlines()) for p in files)
    assert len(files) <= MAX_ROOM_FILES and lines <= MAX_ROOM_LINES, (
        f"{room}/ holds {len(files)} files and {lines} lines (at most {MAX_ROOM_FILES} and {MAX_ROOM_LINES}); "
        "move a coherent part to a room of its own")


HEAVY = heavy_modules()
SLOW = modules_loading(LAZY_THIRD_PARTY)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_inside_functions_only_for_heavy_modules(module):
    bad = lazy_import_violations(module, HEAVY, SLOW)
    assert not bad, "move these imports to the module top (a heavy third-party module: LAZY_THIRD_PARTY):\n" + "\n".join(bad)


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
    path = PKG / "_src" / "experiments" / "fil.py"
    node = ast.parse("def f():\n    from ..report.fil import grid_figures\n").body[0].body[0]
    (target,) = _resolve("reconrisk._src.experiments.fil", path, node)
    assert target == "reconrisk._src.report.fil" and _layer(target) > _layer("reconrisk._src.experiments.fil")
    node = ast.parse("from .. import _validate as v").body[0]
    assert _resolve("reconrisk._src.theory.mse", PKG / "_src" / "theory" / "mse.py", node) == ["reconrisk._src._validate"]


def test_the_circle_and_lazy_checks_can_fail(tmp_path):
    """A circle through a function-level import is found; a light module imported lazily is flagged, a heavy
    one (JAX) and the root package's lazy names are not, and the CLI may load a command's computation lazily."""
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []
    assert "reconrisk._src._jax" in HEAVY and "reconrisk._src.release" not in HEAVY and "reconrisk._src.accounting.pld" not in HEAVY
    lib = tmp_path / "fake.py"
    lib.write_text("import numpy\n\ndef f():\n    from ..release import Release\n    from .._jax import jax\n"
                   "    from reconrisk import epsilon\n    import json\n    from scipy import stats\n"
                   "    from ..experiments.fil import run_fil\n")
    assert lazy_import_violations("reconrisk._src.train.fake", HEAVY, SLOW, lib) == [
        "fake.py:4 imports reconrisk._src.release inside a function", "fake.py:7 imports json inside a function",
        "fake.py:9 imports reconrisk._src.experiments.fil inside a function"]
    assert lazy_import_violations("reconrisk._src.cli.fake", HEAVY, SLOW, lib) == ["fake.py:7 imports json inside a function"]
    cli = tmp_path / "cmd.py"
    cli.write_text("def f():\n    from ._common import echo\n    from ..release import Release\n")
    assert lazy_import_violations("reconrisk._src.cli.cmd", HEAVY, SLOW, cli) == [
        "cmd.py:2 imports reconrisk._src.cli._common inside a function"]
    assert _third_party(ast.parse("import numpy.linalg").body[0]) == ["numpy"]
    assert _third_party(ast.parse("from scipy import stats").body[0]) == ["scipy"]
    assert _third_party(ast.parse("from .. import errors").body[0]) == []
    assert _layer("reconrisk._src.adapters.opacus_history") == 0 and _layer("reconrisk._src.integrations.opacus") == 4
    assert _layer("reconrisk.integrations.opacus") == _layer("reconrisk") == _layer("reconrisk.errors") == FACE_LAYER
    assert _room("reconrisk._src.cli.bound") == "cli" and _room("reconrisk.integrations.opacus") is None


DESIGN = SRC.parent / "DESIGN.md"


def design_rooms(text: str) -> dict[str, int]:
    """``room -> layer`` from the table of DESIGN.md's "Rooms and layers" section (rows ``| `room/` | layer | … |``)."""
    section = text.split("\n## Rooms and layers", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`") and cells[0].endswith("/`") and cells[1].isdigit():
            rows[cells[0].strip("`").rstrip("/")] = int(cells[1])
    return rows


def test_design_names_every_room_with_its_layer():
    """DESIGN.md's table of rooms cannot go stale: every room of the tree has a row, every row a room, and the
    layer it states is the one :data:`LAYERS` enforces."""
    rooms = {r for m in MODULES if (r := _room(m)) and not r.startswith("_")}
    stated = design_rooms(DESIGN.read_text())
    assert set(stated) == rooms, (f"DESIGN.md's room table lacks {sorted(rooms - set(stated))} "
                                  f"and names rooms not in the tree: {sorted(set(stated) - rooms)}")
    wrong = {r: (n, LAYERS[r]) for r, n in stated.items() if LAYERS[r] != n}
    assert not wrong, f"DESIGN.md states these layers (stated, enforced): {wrong}"


def test_the_design_check_can_fail():
    table = "x\n## Rooms and layers\n| room | layer |\n|---|---|\n| `cli/` | 6 | the app |\n| `train/` | 2 | x |\n## Next\n| `report/` | 5 |"
    assert design_rooms(table) == {"cli": 6, "train": 2}


def room_sheet() -> str:
    """Every room's files, lines and layer (``python tests/test_layout.py``), largest first."""
    rows = []
    for room in sorted({r for m in MODULES if (r := _room(m))}):
        files = [p for m, p in MODULES.items() if _room(m) == room]
        rows.append((sum(len(p.read_text().splitlines()) for p in files), len(files), room))
    core = [p for m, p in MODULES.items() if _room(m) is None]
    rows.append((sum(len(p.read_text().splitlines()) for p in core), len(core), "(modules beside the rooms)"))
    out = [f"{'room':<26}{'layer':>6}{'files':>7}{'lines':>7}   (limits: {MAX_ROOM_FILES} files, {MAX_ROOM_LINES} lines)"]
    for lines, n, room in sorted(rows, reverse=True):
        layer = LAYERS.get(room, "-")
        out.append(f"{room:<26}{layer:>6}{n:>7}{lines:>7}")
    return "\n".join(out)


if __name__ == "__main__":
    print(room_sheet())
