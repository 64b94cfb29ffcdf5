"""The face: ``reconrisk`` exports a few names, the implementation lives under ``reconrisk._src``, and every old
name or module path keeps working with one DeprecationWarning at the caller's line that names the new spelling.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import reconrisk as rr
from reconrisk._src import _aliases

ROOT = Path(__file__).resolve().parents[1]
#: slots of the face kept for the mechanism and sampler nouns (Gaussian, Poisson, Step, …) added beside these
NOUN_SLOTS = 0  # the mechanism and sampler nouns are in the face now


def _deprecations(got) -> list:
    return [w for w in got if issubclass(w.category, DeprecationWarning)]


def test_the_face_is_narrow_and_whole():
    names = [n for n in rr.__all__]
    assert len(names) == len(set(names)) and len(names) + NOUN_SLOTS <= 40, len(names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a face name never warns
        for name in names:
            assert getattr(rr, name) is not None, name
    assert not set(rr._DEPRECATED) & set(names) and not set(rr._DEPRECATED) & set(rr._LAZY)


def test_only_the_public_modules_sit_beside_the_private_tree():
    assert {m.name for m in pkgutil.iter_modules(rr.__path__)} == {"__main__", "_src", "errors", "integrations"}
    import reconrisk.errors
    from reconrisk._src import errors

    assert reconrisk.errors.ReconRiskError is errors.ReconRiskError is rr.ReconRiskError
    assert rr.ReconRiskError.__module__ == "reconrisk.errors" and issubclass(rr.ReconRiskError, ValueError)


@pytest.mark.parametrize("name", sorted(rr._DEPRECATED))
def test_a_dropped_name_warns_at_the_callers_line_and_names_the_new_spelling(name):
    module, instead = rr._DEPRECATED[name]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        value = getattr(rr, name)
    (w,) = _deprecations(got)
    assert (w.filename, w.lineno) == (__file__, line), (w.filename, w.lineno)
    assert f"reconrisk.{name} is deprecated" in str(w.message) and "use reconrisk." in str(w.message)
    assert instead is None or instead in str(w.message)
    assert value is getattr(importlib.import_module(f"reconrisk._src.{module}"), name)


def test_the_old_rero_bound_and_its_new_spelling_agree():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        old = rr.rero_bound(1.0, 1.0, 1, prior_size=10, method="closed_form")
    assert "use reconrisk.analyse(release).rero(kappa)" in str(_deprecations(got)[0].message)
    new = rr.analyse(rr.Release(1.0, 1.0, 1)).rero(prior_size=10, method="closed_form")
    assert (old.lower, old.upper) == (new.lower, new.upper)


def _forget(*names: str) -> None:
    """Drop old names from ``sys.modules`` (the modules under ``_src`` stay), so that the next import asks the rule."""
    for n in names:
        sys.modules.pop(n, None)
    for parent in {n.rpartition(".")[0] for n in names}:
        mod = sys.modules.get(parent)
        for n in names:
            if mod is not None and n.rpartition(".")[0] == parent:
                mod.__dict__.pop(n.rpartition(".")[2], None)


@pytest.mark.parametrize("old,new", [
    ("reconrisk.theory.fano", "reconrisk._src.theory.fano"),
    ("reconrisk.analysis.privacy", "reconrisk._src.analysis.privacy"),
    ("reconrisk.bounds.mse", "reconrisk._src.theory.mse"),  # an earlier release's rename, then the rule
    ("reconrisk.integrations.opacus_watch", "reconrisk._src.integrations.opacus_watch"),
    ("reconrisk.opacus_audit", "reconrisk.integrations.opacus_audit"),  # renamed to a public module
])
def test_an_old_path_imports_the_same_module_and_warns_once_at_the_import(old, new):
    parts = old.split(".")
    _forget(*[n for i in range(2, len(parts) + 1)
              if (n := ".".join(parts[:i])) in _aliases.OLD_PACKAGES or _aliases.private_path(n)])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        module = importlib.import_module(old)
    dep = _deprecations(got)
    assert len(dep) == 1, [str(w.message) for w in dep]
    assert (dep[0].filename, dep[0].lineno) == (__file__, line) and "moved to" in str(dep[0].message)
    assert module is importlib.import_module(new) is sys.modules[old] is sys.modules[module.__name__]
    assert module.__spec__.name == module.__name__  # the module keeps its own spec


def test_monkeypatching_an_old_path_patches_the_implementation(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import reconrisk.release as old
    from reconrisk._src import release as new

    monkeypatch.setattr(old, "_face_probe", 1, raising=False)
    assert new._face_probe == 1 and old.Release is new.Release


def test_public_integrations_are_the_implementation_and_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import reconrisk.integrations.opacus_audit as public
    from reconrisk._src.integrations import opacus_audit

    assert public is opacus_audit
    assert _aliases.private_path("reconrisk.integrations.opacus_audit") is None  # the ordinary finders answer
    assert _aliases.private_path("reconrisk.cli.bound") == "reconrisk._src.cli.bound"
    assert _aliases.private_path("reconrisk.errors") is None and _aliases.private_path("numpy.linalg") is None


def test_import_reconrisk_stays_light_and_python_m_reconrisk_runs():
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    code = "import sys, reconrisk; print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr
    run = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-m", "reconrisk", "--help"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "Usage" in run.stdout and "moved to" not in run.stderr, run.stderr


def test_the_package_data_ships_under_the_private_tree():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"_src/_data/*.npz"' in pyproject and 'reconrisk = "reconrisk._src.cli:main"' in pyproject
    from importlib import resources

    assert resources.files("reconrisk._src._data").joinpath("digits.npz").is_file()


def test_the_move_script_has_nothing_left_to_do():
    """``tools/src_move.py`` is idempotent: on the moved tree it moves and rewrites nothing (a file added to an old
    room, or an absolute path to a private module outside the tree's own modules, would be listed)."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "src_move.py"), "--dry-run"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith("moved 0 files into src/reconrisk/_src; rewrote paths in 0 files"), \
        out.stdout
