"""Installing an extra never downgrades what the core installed, and the README says how to get a CPU torch.

The core's range for a package is what ``pyproject.toml``'s core dependencies and everything they pull require of
it (read from the installed distributions' metadata). Every cap an extra's packages put on such a package
(``rich<15`` from Flower, ``mpmath<1.4`` from torch's sympy) must hold already in the core's range: the version at
the cap must be one the core refuses too. Otherwise ``pip install 'reconrisk[opacus]'`` (or ``[test]``) after the
core install would replace a core package with an older one — as the README's second command did to mpmath 1.4.1
(let in by dp-accounting's ``mpmath~=1.2``), rich 15.0.0 and packaging 26.4. The check needs no index: it reads
the caps, not which releases exist.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from packaging import requirements as packaging_requirements  # pytest's own dependency
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: str):
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for text in reqs:
        req = packaging_requirements.Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req)
    return out


def _closure(top: list[str]) -> dict[str, list]:
    """Every distribution reachable from ``top`` (requirement strings) → the requirements on it met on the way."""
    seen: dict[str, list] = {}
    todo = [packaging_requirements.Requirement(t) for t in top]
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        if name == "reconrisk":  # a self-reference (reconrisk[sim,...]): its extras' requirements
            for extra in req.extras:
                todo += [packaging_requirements.Requirement(t) for t in PROJECT["optional-dependencies"][extra]]
            continue
        first = name not in seen
        seen.setdefault(name, []).append(req)
        if first:
            todo += _requirements(name)
    return seen


def _caps(req) -> list[Version]:
    """The smallest versions above its range that a requirement refuses: one per upper clause."""
    caps = []
    for spec in req.specifier:
        v = Version(spec.version.replace(".*", ""))
        if spec.operator == "<":
            caps.append(v)
        elif spec.operator == "<=":
            caps.append(Version(f"{spec.version}.1"))
        elif spec.operator == "~=":  # ~=1.2 means >=1.2, ==1.*: capped at the next release of the prefix
            parts = v.release[:-1] or v.release
            caps.append(Version(".".join(map(str, (*parts[:-1], parts[-1] + 1)))))
    return caps


def _conflicts(core: dict[str, list], extra: dict[str, list]) -> list[str]:
    found = []
    for name, core_reqs in core.items():
        for r in extra.get(name, []):
            for cap in _caps(r):
                if all(c.specifier.contains(cap, prereleases=True) for c in core_reqs):
                    found.append(f"{name} {cap}: the core allows it, {r} (an extra pulls it) refuses it")
    return found


@pytest.mark.parametrize("extra", ["opacus", "test"])
def test_an_extra_never_downgrades_the_core(extra):
    core = _closure(PROJECT["dependencies"])
    pulled = _closure(PROJECT["optional-dependencies"][extra])
    assert "mpmath" in core and "numpy" in core, "the closure walk is broken"
    assert not _conflicts(core, pulled)


def test_the_check_catches_mpmath_without_its_cap():
    """The check can fail: the core as it was (mpmath only through dp-accounting's ~=1.2) against torch's sympy."""
    core = {"mpmath": [packaging_requirements.Requirement("mpmath~=1.2")]}
    pulled = {"mpmath": [packaging_requirements.Requirement("mpmath<1.4,>=1.1.0")]}
    assert any("mpmath 1.4" in c for c in _conflicts(core, pulled))
    assert not _conflicts({"mpmath": [packaging_requirements.Requirement("mpmath>=1.3,<1.4")]}, pulled)
    assert _conflicts({"rich": [packaging_requirements.Requirement("rich>=13")]},
                      {"rich": [packaging_requirements.Requirement("rich>=14,<15")]})
    assert not _conflicts({"mdurl": [packaging_requirements.Requirement("mdurl~=0.1")]},
                          {"mdurl": [packaging_requirements.Requirement("mdurl~=0.1")]})


def test_readme_says_in_one_line_how_to_get_the_cpu_torch_with_opacus():
    lines = [ln for ln in README.split("\n") if "reconrisk[opacus]" in ln]
    assert any("download.pytorch.org/whl/cpu" in ln and "pip install torch" in ln for ln in lines), lines
