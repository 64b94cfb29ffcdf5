"""Move reconrisk's implementation under the private tree ``src/reconrisk/_src`` and point every reader at it.

Re-runnable and idempotent (run it after each merge: a file another branch added to an old room is picked up):

a. ``git mv`` everything under ``src/reconrisk`` that is not public (:data:`PUBLIC`) and not yet under ``_src``
   into ``_src`` (a room that already exists there receives the new files one by one);
b. rewrite absolute module paths ``reconrisk.<private>`` → ``reconrisk._src.<private>`` (and file paths
   ``src/reconrisk/<private>`` → ``src/reconrisk/_src/<private>``) in tests/, tools/, benchmarks/, examples/,
   docs/, the README and src/ itself; the public names (the face ``reconrisk``, ``reconrisk.errors``,
   ``reconrisk.integrations.opacus`` / ``.flower``) and the old deprecated paths (``reconrisk.bounds.*``, which
   the alias rule answers) are left alone;
c. print what it moved and rewrote (nothing, on a second run).

``python tools/src_move.py [--dry-run]`` from the repository root.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "reconrisk"
SRC = PKG / "_src"
#: what stays public under src/reconrisk (paths relative to it); everything else lives under _src/
#: the integrations a user's training loop imports: each public path is the implementation module itself
PUBLIC_INTEGRATIONS = ("opacus", "opacus_audit", "opacus_individual", "flower", "flower_adaptive", "flower_local",
                       "flower_release", "flower_runtime", "jax_privacy")
PUBLIC = {"__init__.py", "__main__.py", "errors.py", "_src", "integrations/__init__.py",
          *(f"integrations/{n}.py" for n in PUBLIC_INTEGRATIONS)}
#: public files are thin: they carry this line; a public path without it is an implementation to move
THIN_MARK = "# reconrisk's public face:"
#: a line holding this text is left as it is (it names an old path on purpose: ``<!-- src_move: keep -->``)
KEEP_LINE = "src_move: keep"
#: where module paths are rewritten (relative to the repository root)
REWRITE = ["tests", "tools", "benchmarks", "examples", "docs", "src", "README.md", "DESIGN.md", "mkdocs.yml"]
SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".json", ".cfg"}
#: files that name old paths on purpose (the deprecation tests, the alias rule and this script)
KEEP_AS_IS = {"tools/src_move.py", "tests/test_face.py", "tests/test_face_outside.py",
              "src/reconrisk/_src/_aliases.py", "src/reconrisk/__init__.py"}


def git(*args: str, dry: bool) -> None:
    print("git " + " ".join(args))
    if not dry:
        subprocess.run(["git", *args], cwd=ROOT, check=True)


def _is_thin(path: Path) -> bool:
    return path.is_file() and THIN_MARK in path.read_text(encoding="utf-8")


def move(dry: bool) -> list[str]:
    """Step (a): every private file not yet under _src goes there (``git mv``); returns the moved paths."""
    moved = []
    for path in sorted(PKG.rglob("*")):
        rel = path.relative_to(PKG).as_posix()
        if path.is_dir() or "__pycache__" in rel or rel.startswith("_src/") or rel.endswith(".pyc"):
            continue
        if rel in PUBLIC and (rel.count("/") == 0 and rel != "errors.py" or _is_thin(path)):
            continue
        dest = SRC / rel
        if dest.exists():
            raise SystemExit(f"{rel} exists both in src/reconrisk and in src/reconrisk/_src: merge it by hand")
        if not dry:
            dest.parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(path.relative_to(ROOT)), str(dest.relative_to(ROOT)), dry=dry)
        moved.append(rel)
    if not dry:
        for d in sorted((p for p in PKG.rglob("*") if p.is_dir() and "_src" not in p.relative_to(PKG).parts),
                        key=lambda p: -len(p.parts)):
            if d.name == "__pycache__" or not any(f for f in d.rglob("*") if "__pycache__" not in f.parts):
                subprocess.run(["rm", "-rf", str(d)], check=True)
    return moved


THIN = {
    "errors.py": '''"""The one exception type of reconrisk, :class:`ReconRiskError` (a ``ValueError``), at its public path."""
{mark} the class is defined in reconrisk._src.errors (its __module__ says reconrisk.errors)

from ._src.errors import ReconRiskError

__all__ = ["ReconRiskError"]
''',
    "integrations/__init__.py": '''"""Integrations with other frameworks, each an optional extra imported on its own (nothing is imported here).

:mod:`reconrisk.integrations.opacus` (``ReconRiskAccountant``, ``make_private_with_risk``), ``.opacus_audit``
(``OneRunAudit``), ``.opacus_individual`` (``PerSampleNorms``, ``IndividualFilterHook``) need the ``opacus``
extra; :mod:`reconrisk.integrations.flower` (``ReconRiskAccountant``, ``StopBeforeBudget``,
``calibrate_flower``), ``.flower_adaptive``, ``.flower_local``, ``.flower_release`` and ``.flower_runtime``
the ``flower`` extra. Each public path is the implementation module in ``reconrisk._src.integrations`` itself.
"""
{mark} the modules here stand for reconrisk._src.integrations.*
''',
}
THIN_INTEGRATION = '''"""Public path of :mod:`reconrisk._src.integrations.{name}`: the same module object (see there)."""
{mark} this path is the implementation module itself (one object: isinstance and monkeypatching agree)

import sys as _sys

from reconrisk._src.integrations import {name} as _implementation

_sys.modules[__name__] = _implementation
'''


def write_thin(dry: bool) -> list[str]:
    """The public thin modules that step (a) left missing (errors, integrations)."""
    texts = dict(THIN)
    texts.update({f"integrations/{n}.py": THIN_INTEGRATION.replace("{name}", n) for n in PUBLIC_INTEGRATIONS})
    written = []
    for rel, text in texts.items():
        path = PKG / rel
        if path.exists():
            continue
        print(f"wrote the public thin module src/reconrisk/{rel}")
        written.append(rel)
        if not dry:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{mark}", THIN_MARK), encoding="utf-8")
            git("add", str(path.relative_to(ROOT)), dry=dry)
    return written


def private_names() -> tuple[set[str], set[str]]:
    """(top-level private modules and rooms, private integrations/… submodules)."""
    top = {p.stem if p.suffix == ".py" else p.name for p in SRC.iterdir()
           if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").exists() or p.name == "_data")}
    public_top = {"errors", "integrations"}
    integ = {p.stem for p in (SRC / "integrations").glob("*.py") if p.stem != "__init__"} - {
        Path(p).stem for p in PUBLIC if p.startswith("integrations/")}
    return top - public_top, integ


def _patterns() -> list[tuple[re.Pattern, str]]:
    top, integ = private_names()
    alt = "|".join(sorted(top, key=len, reverse=True))
    ialt = "|".join(sorted(integ, key=len, reverse=True))
    pats = [
        # reconrisk.<private room or core module> (not reconrisk._src…, not an attribute such as reconrisk.epsilon)
        (re.compile(rf"(?<![\w.])reconrisk\.({alt})(?![\w])"), r"reconrisk._src.\1"),
        (re.compile(rf"(?<![\w])src/reconrisk/({alt})(?=[/.\s`'\")]|$)", re.M), r"src/reconrisk/_src/\1"),
        # ``from reconrisk import <private module> [as name]``: the module is under _src now
        (re.compile(rf"^([ \t>.]*)from reconrisk import ({alt})(\s+as\s+\w+)?[ \t]*$", re.M),
         r"\1from reconrisk._src import \2\3"),
    ]
    if ialt:
        pats.append((re.compile(rf"(?<![\w.])reconrisk\.integrations\.({ialt})(?![\w])"),
                     r"reconrisk._src.integrations.\1"))
        pats.append((re.compile(rf"(?<![\w])src/reconrisk/integrations/({ialt})\.py"),
                     r"src/reconrisk/_src/integrations/\1.py"))
    return pats


def rewrite(dry: bool) -> list[str]:
    """Step (b): absolute module and file paths → their place under _src; returns the rewritten files."""
    pats = _patterns()
    changed = []
    for where in REWRITE:
        base = ROOT / where
        files = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for f in files:
            rel = f.relative_to(ROOT).as_posix()
            if not f.is_file() or f.suffix not in SUFFIXES or rel in KEEP_AS_IS or "__pycache__" in rel:
                continue
            if rel.startswith("src/reconrisk/") and not rel.startswith("src/reconrisk/_src/"):
                continue  # the public modules name _src themselves
            text = f.read_text(encoding="utf-8")
            new = text
            for pat, repl in pats:
                new = pat.sub(repl, new)
            if KEEP_LINE in text:  # a line naming an old path on purpose stays as it is
                new = "".join(o if KEEP_LINE in o else n for o, n in zip(text.splitlines(True), new.splitlines(True)))
            if new != text:
                n = sum(a != b for a, b in zip(text.splitlines(), new.splitlines()))
                print(f"rewrote {rel} ({n} lines)")
                changed.append(rel)
                if not dry:
                    f.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    dry = "--dry-run" in argv
    moved = move(dry)
    write_thin(dry)
    changed = rewrite(dry) if SRC.exists() else []
    print(f"moved {len(moved)} files into src/reconrisk/_src; rewrote paths in {len(changed)} files"
          + (" (dry run)" if dry else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
