"""The README's two commands are the whole set-up, and CI runs exactly them.

* The README opens with one ```bash block of exactly two commands: install and run the main job; install the
  ``test`` extra and run the suite.
* The ``test`` extra brings everything the suite imports (a test that skips for a missing module must name a
  module the extra brings, or one the README names with its reason) and pins torch to the CPU wheel.
* ``.ci/run`` makes a fresh ``python3.11 -m venv`` and runs the README's commands as written (its lines between
  the ``# --- the README's commands ---`` markers equal the README's block); nothing else there installs anything.
* The README stays short: at most 150 lines.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROSE = " ".join(README.split())  # the README's words, whatever the line breaks
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]

#: What each module the tests import-or-skip comes with. A new optional import in a test must be added here
#: (and to the extra that brings it), or named in the README as a reason to skip.
MODULE_EXTRA = {"jax": "sim", "optax": "sim", "dask": "scale", "pyarrow": "scale", "opacus": "opacus",
                "torch": "test", "flwr": "flower", "ray": "flower", "mpmath": None, "mkdocs": "dev", "material": "dev", "mkdocstrings_handlers": "dev",
                "dp_accounting": None, "jax_privacy": "test", "keras": "test"}  # None: a core dependency
#: Modules whose tests skip where they are absent, as the README says (peers are never dependencies).
README_SKIPS = {"riskcal": "riskcal (never a dependency)"}


def readme_commands() -> list[str]:
    """The lines of the README's first fenced block, which must be ```bash and come first."""
    lines = README.split("\n")
    first = next(i for i, ln in enumerate(lines) if ln.startswith("```"))
    assert lines[first] == "```bash", f"the README's first block must be ```bash, found {lines[first]!r}"
    assert all(ln.startswith("#") or not ln.strip() for ln in lines[:first]), "the README opens with the commands"
    end = next(i for i in range(first + 1, len(lines)) if lines[i].startswith("```"))
    return [ln for ln in lines[first + 1 : end] if ln.strip()]


def test_readme_opens_with_exactly_the_two_commands():
    one, two = readme_commands()  # exactly two
    assert re.fullmatch(r'python3\.11 -m pip install -e "\.\[[a-z,]+\]" && reconrisk audit', one), one
    assert two.startswith('python3.11 -m pip install -e ".[test]" && python3.11 -m pytest'), two


def test_the_test_extra_brings_everything_the_suite_imports():
    test = EXTRAS["test"]
    (self_ref,) = [r for r in test if r.startswith("reconrisk[")]
    brought = set(self_ref[len("reconrisk["):-1].split(","))
    assert {"sim", "scale", "dev", "opacus"} <= brought and brought <= set(EXTRAS)
    assert "torch==2.13.0" in test  # pinned: pip takes the CPU wheel, not the newest torch's CUDA stack
    skipped = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip"
                    and isinstance(node.args[0], ast.Constant)):
                skipped.add((node.args[0].value.split(".")[0], path.name))
    assert skipped, "the scan found no importorskip: it is broken"
    unexplained = []
    for module, where in sorted(skipped):
        if module in README_SKIPS:
            assert README_SKIPS[module] in PROSE, f"the README must say why {where} skips without {module}"
        elif module not in MODULE_EXTRA:
            unexplained.append(f"{where}: {module}")
        else:
            extra = MODULE_EXTRA[module]
            assert extra is None or extra == "test" or extra in brought, (module, extra)
    assert not unexplained, ("tests skip without modules the test extra does not bring; add them to an extra "
                             f"(and MODULE_EXTRA) or state the skip in the README: {unexplained}")


def test_other_skips_are_the_ones_the_readme_states():
    """Skips that depend on the machine: Chromium (named with its package), XLA's levels, CPU-only rules."""
    assert "`apt-get install chromium`" in PROSE and "report page's rendering without Chromium" in PROSE
    assert "XLA-level tests on a CPU where XLA's two levels round alike" in PROSE
    assert "CPU-only rules on a GPU" in PROSE
    assert "the Keras tests where Keras was loaded with a backend other than JAX" in PROSE
    allowed = {"test_xla_level.py": "round this function alike", "test_jax_rng.py": "for CPU only",
               "test_shadow_dense.py": "for the CPU backend", "test_report_browser.py": "CHROMIUM",
               "test_jax_privacy_keras.py": "jax-privacy needs jax"}
    found = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        calls = [n for n in ast.walk(ast.parse(text))
                 if isinstance(n, ast.Call) and getattr(n.func, "attr", None) in ("skip", "skipif")]
        if calls:
            found.add(path.name)
            assert path.name in allowed and allowed[path.name] in text, (
                f"{path.name} skips for a reason the README does not state")
    assert "test_report_browser.py" in found, "the scan found no skip: it is broken"


def ci_commands(text: str) -> list[str]:
    """The lines of ``.ci/run`` between its README markers."""
    lines = text.split("\n")
    start = lines.index("# --- the README's commands ---")
    end = lines.index("# --- end ---")
    return [ln for ln in lines[start + 1:end] if ln.strip()]


def test_ci_runs_the_readme_commands_in_a_fresh_venv():
    assert ci_commands(CI) == readme_commands()
    code = _code_lines(CI)
    venv = next(i for i, ln in enumerate(code) if re.search(r"\bpython3\.11 -m venv\b", ln))
    activate = next(i for i, ln in enumerate(code) if re.search(r"\bsource\b.*bin/activate", ln))
    first = code.index(readme_commands()[0])
    assert venv < activate < first, "the README's commands run inside the fresh venv"


def test_ci_installs_nothing_the_readme_does_not_name():
    readme = set(readme_commands())
    extra = [ln for ln in _code_lines(CI) if ln not in readme
             and re.search(r"\bpip\b|\buv\b|\bconda\b|\bcurl\b|\bwget\b|\bapt(?:-get)?\b|\bpytest\b", ln)]
    assert not extra, f".ci/run does more than the README's commands: {extra}"


def test_the_ci_checks_can_fail():
    bad = CI.replace("# --- end ---", "apt-get install -y chromium\n# --- end ---")
    with pytest.raises(AssertionError):
        assert ci_commands(bad) == readme_commands()
    worse = CI.replace("set -euo pipefail", "set -euo pipefail\npip install torch")
    assert [ln for ln in _code_lines(worse) if ln not in set(readme_commands()) and re.search(r"\bpip\b", ln)]


def test_readme_is_at_most_150_lines():
    n = README.rstrip("\n").count("\n") + 1
    assert n <= 150, f"README.md has {n} lines; move examples to docs/ and link them"


def _code_lines(script: str) -> list[str]:
    """The script's lines without comments and echo'd messages."""
    out = []
    for ln in script.split("\n"):
        ln = ln.split(" #", 1)[0] if not ln.lstrip().startswith("#") else ""
        ln = re.sub(r'echo "[^"]*"', "", ln)
        if ln.strip():
            out.append(ln)
    return out
