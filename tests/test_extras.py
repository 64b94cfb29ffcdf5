"""Installing an extra never downgrades what the core installed, and the README says how to get a CPU torch.

The core's effective range for a package is the intersection of what ``pyproject.toml``'s core dependencies and
everything they pull require of it (read from the installed distributions' metadata). Every distribution an
extra pulls (``opacus``, ``test``: torch, sympy, …) must accept every version that range allows, probed at the
installed version and the next minor release; otherwise a fresh ``pip install 'reconrisk[opacus]'``
after ``pip install reconrisk`` would replace a core package with an older one (as torch's sympy, which caps
mpmath below 1.4, did to the mpmath 1.4 that dp-accounting's ``mpmath~=1.2`` let in).
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


def _probes(version: str) -> list[Version]:
    v = Version(version)
    return [v, Version(f"{v.major}.{v.minor + 1}.0")]


def _conflicts(core: dict[str, list], extra: dict[str, list]) -> list[str]:
    found = []
    for name, core_reqs in core.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        for probe in _probes(installed):
            if all(r.specifier.contains(probe, prereleases=True) for r in core_reqs):
                found += [f"{name} {probe}: the core allows it, {r} (an extra pulls it) refuses it"
                          for r in extra.get(name, []) if not r.specifier.contains(probe, prereleases=True)]
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
    assert any("mpmath 1.4.0" in c for c in _conflicts(core, pulled))


def test_readme_says_in_one_line_how_to_get_the_cpu_torch_with_opacus():
    lines = [ln for ln in README.split("\n") if "reconrisk[opacus]" in ln]
    assert any("download.pytorch.org/whl/cpu" in ln and "pip install torch" in ln for ln in lines), lines
