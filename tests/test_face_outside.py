"""An outside check of the face, the private tree, the typed report and its schema (issue 41), as a user meets them.

* the face: ``import reconrisk`` in a fresh interpreter loads only the face's own modules (no numpy, scipy, typer),
  ``dir()`` and ``from reconrisk import *`` show the public names and nothing of the machinery, ``python -W error -m
  reconrisk`` runs; a wheel built from the tree ships the schema, the digits and the console script, and its
  ``reconrisk report`` writes a valid report.json;
* old paths in a user's script: every spelling (``import x``, ``from x import y``, ``importlib.import_module``, an
  attribute of the face, ``from reconrisk import OldName``) warns exactly once, at the script's own line; pickles
  written under the old module name load as the face's classes; ``-W error`` with the face alone passes;
* reports: ``reconrisk report`` at parameter sets no other test uses, and ``risk_report(...).to_dict()`` from
  Python, all valid against the shipped schema (``tests/conftest.py`` validates every report.json written; here the
  Python report, which no writer sees, is checked directly); the schema refuses a mutated report;
* the docs and README spell only the face, ``reconrisk.errors``, ``reconrisk.integrations`` or ``reconrisk._src``.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import reconrisk as rr
from conftest import check_report_json
from reconrisk._src.cli import main
from reconrisk._src.report_model import report_json

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _python(*args: str, code: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    argv = [sys.executable, *args] + (["-c", code] if code is not None else [])
    return subprocess.run(argv, capture_output=True, text=True, env=ENV, cwd=cwd, timeout=120)


# -- the face ---------------------------------------------------------------------------------------------------
def test_a_fresh_import_is_the_face_alone_and_every_public_name_resolves_without_a_warning():
    out = _python("-W", "error", code=textwrap.dedent("""
        import json, sys
        import reconrisk
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "scipy", "typer", "jax", "torch"))
        ours = sorted(m for m in sys.modules if m.startswith("reconrisk"))
        names = {}
        exec("from reconrisk import *", names)
        for n in reconrisk.__all__:
            getattr(reconrisk, n)
        print(json.dumps({"loaded": loaded, "ours": ours, "all": reconrisk.__all__, "dir": dir(reconrisk),
                          "star": sorted(k for k in names if k != "__builtins__")}))
    """))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["loaded"] == []  # the import itself, before any name is read, is numpy-, scipy- and CLI-free
    assert set(got["ours"]) <= {"reconrisk", "reconrisk._src", "reconrisk._src._aliases", "reconrisk._src._deprecated",
                                "reconrisk._src.errors", "reconrisk.errors"}, got["ours"]
    assert len(got["all"]) == len(set(got["all"])) <= 40
    assert got["star"] == sorted(got["all"])
    public_dir = {n for n in got["dir"] if not n.startswith("_")}
    # beyond the face: only the public modules (importlib and the warning helper were module globals)
    assert public_dir - set(got["all"]) <= {"errors", "integrations"}, public_dir - set(got["all"])
    assert set(got["all"]) - {"__version__"} <= public_dir


def test_python_m_reconrisk_runs_under_warnings_as_errors():
    out = _python("-W", "error", "-m", "reconrisk", "--help")
    assert out.returncode == 0 and "report" in out.stdout, out.stderr[-2000:]
    out = _python("-W", "error::DeprecationWarning", code="import reconrisk; reconrisk.analyse")
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
def test_the_wheel_ships_the_private_tree_its_data_and_a_working_console_script(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, tree / f)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp_path / "w"), str(tree)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp_path / "w").glob("reconrisk-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry = next(z.read(n).decode() for n in names if n.endswith("entry_points.txt"))
        z.extractall(tmp_path / "site")
    shipped = {n for n in names if ".dist-info/" not in n}
    source = {p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src" / "reconrisk").rglob("*")
              if p.is_file() and p.suffix in (".py", ".npz", ".json") and "__pycache__" not in p.parts}
    assert shipped == source, (source ^ shipped)
    assert {"reconrisk/_src/_data/report.schema.json", "reconrisk/_src/_data/digits.npz"} <= shipped
    assert re.search(r"^reconrisk = reconrisk\._src\.cli:main$", entry, re.M), entry
    # the installed package alone (not this tree) answers the console script's entry point
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    script = ("import sys; from reconrisk._src.cli import main; import reconrisk; "
              "assert reconrisk.__file__.startswith(sys.argv[1]), reconrisk.__file__; sys.exit(main(sys.argv[2:]))")
    run = lambda *a: subprocess.run([sys.executable, "-W", "error", "-c", script, str(tmp_path / "site"), *a],
                                    capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    b = run("bound", "-s", "1", "-q", "0.01", "-T", "100", "--prior-size", "10")
    assert b.returncode == 0 and "0.1271" in b.stdout, b.stderr[-2000:]
    r = run("report", "-s", "1", "-q", "0.01", "-T", "100", "--prior-size", "10", "--samples", "0", "-o", "rep")
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    check_report_json(rep)
    assert rep["provenance"]["release_source"]["source"] == "flags" and (tmp_path / "rep" / "report.html").is_file()
    digits = subprocess.run([sys.executable, "-W", "error", "-c", "import reconrisk; print(len(reconrisk.load_digits().x))"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)  # from the wheel's data
    assert digits.returncode == 0 and int(digits.stdout) > 1000, digits.stderr[-2000:]


# -- old paths in a user's script -------------------------------------------------------------------------------
#: (statement, how many deprecation warnings it gives): each at the statement's own line
STATEMENTS = [
    ("import reconrisk.analysis.privacy", 1),
    ("from reconrisk.measures.rero import rero_bounds", 1),  # an old path, then a moved name: one statement
    ("import importlib; importlib.import_module('reconrisk.release')", 1),
    ("import reconrisk.bounds.rero", 1),
    ("from reconrisk.bounds.rero import rero_bounds", 1),
    ("import reconrisk; reconrisk.rero_bound", 1),
    ("from reconrisk import PrivacyAnalysis", 1),  # the import system reads it twice
    ("from reconrisk import analysis", 1),
    ("import reconrisk.opacus", 1),
    ("import reconrisk; reconrisk.rero_bound; reconrisk.tradeoff", 2),  # two dropped names: two warnings
    ("import reconrisk\nfor _ in range(3): reconrisk.rero_bound", 3),  # run three times: three warnings
    ("import reconrisk.errors, reconrisk.integrations.opacus", 0),  # public paths
]


def test_every_old_spelling_warns_once_at_the_users_own_line(tmp_path):
    for i, (statement, count) in enumerate(STATEMENTS):
        script = tmp_path / f"user_{i}.py"
        script.write_text("import warnings\nwarnings.simplefilter('always')\n" + statement + "\n")
        out = _python("-W", "always", str(script), cwd=tmp_path)
        assert out.returncode == 0, (statement, out.stderr[-2000:])
        lines = [ln for ln in out.stderr.splitlines() if "DeprecationWarning" in ln]
        last = 2 + statement.count("\n") + 1
        assert len(lines) == count, (statement, lines)
        assert all(ln.startswith(f"{script}:{last}: DeprecationWarning") for ln in lines), (statement, lines)


def test_pickles_under_the_old_and_the_new_module_name_load_as_the_face_class(tmp_path, monkeypatch):
    release = rr.Release(noise_multiplier=1.3, sample_rate=0.02, steps=70)
    monkeypatch.delitem(sys.modules, "reconrisk.release", raising=False)  # (an earlier test may have imported it)
    from reconrisk._src import release as implementation

    new = pickle.dumps(release)
    classes = (implementation.Release, implementation.Segment)
    try:  # written by an earlier release, whose classes lived at reconrisk.release
        with pytest.warns(DeprecationWarning):
            import reconrisk.release  # noqa: F401  (the old name must be importable for pickle to write it)
        for c in classes:
            c.__module__ = "reconrisk.release"
        old = pickle.dumps(release)
    finally:
        for c in classes:
            c.__module__ = "reconrisk._src.release"
    assert b"reconrisk.release\x94" in old and b"reconrisk._src.release" in new
    code = ("import pickle, sys, reconrisk; r = pickle.loads(sys.stdin.buffer.read()); "
            "assert type(r) is reconrisk.Release and r == reconrisk.Release(1.3, 0.02, 70), r; print('ok')")
    for blob in (old, new):
        out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, env=ENV, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == b"ok", out.stderr[-2000:]


def test_old_and_new_module_objects_are_one_for_isinstance_and_monkeypatching(monkeypatch):
    for name in ("reconrisk.analysis.privacy", "reconrisk.analysis"):  # (an earlier test may have imported them)
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning):
        import reconrisk.analysis.privacy as old
    from reconrisk._src.analysis import privacy as new

    assert old is new and isinstance(rr.analyse(rr.Release(1.0, 0.01, 10)), old.PrivacyAnalysis)
    monkeypatch.setattr(old, "PrivacyAnalysis", "patched")
    assert new.PrivacyAnalysis == "patched"


# -- reports ----------------------------------------------------------------------------------------------------
def _files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "laplace.toml": '[[release.events]]\ntype = "poisson_sampled_laplace"\nnoise_multiplier = 0.7\n'
                        'sampling_probability = 0.05\ncount = 40\n',
        "mixed.toml": '[[release.events]]\ntype = "laplace"\nnoise_multiplier = 5.0\ncount = 2\n'
                      '[[release.events]]\ntype = "gaussian"\nnoise_multiplier = 3.0\ncount = 1\n',
        "fixed.toml": '[release]\nnoise_multiplier = 1.3\nsteps = 50\nsampler = "fixed"\nbatch_size = 32\n'
                      'dataset_size = 1000\n',
        "opacus.json": json.dumps({"history": [[1.1, 0.02, 60], [0.9, 0.02, 10]], "mechanism": "reconrisk"}),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {name: tmp_path / name for name in files}


#: parameter sets no other test uses: each writes a report.json (validated by tests/conftest.py's hook)
REPORTS = {
    "full batch": ["-s", "2", "-q", "1", "-T", "3", "-n", "10", "--samples", "500"],
    "tiny sigma": ["-s", "1e-3", "-q", "0.01", "-T", "20", "-n", "10", "--samples", "0"],
    "huge sigma": ["-s", "1e3", "-q", "0.01", "-T", "20", "-n", "10", "--samples", "0"],
    "fixed batch": ["--release", "fixed.toml", "-n", "10", "--samples", "500"],
    "from opacus": ["--from-opacus", "opacus.json", "-n", "50", "--samples", "0"],
    "laplace events": ["--release", "laplace.toml", "-n", "10"],
    "laplace and gaussian": ["--release", "mixed.toml", "-n", "10", "--samples", "0"],
    "samples 0": ["-s", "0.7", "-q", "0.003", "-T", "2000", "--samples", "0", "-n", "1000"],
    "target": ["-s", "1.2", "-q", "0.05", "-T", "40", "-n", "20", "--target-rero", "0.08", "--samples", "0"],
    "prior size 2": ["-s", "1", "-q", "0.1", "-T", "10", "--prior-size", "2", "--samples", "500"],
    "kappa 1e-9": ["-s", "1", "-q", "0.1", "-T", "10", "--kappa", "1e-9", "--samples", "0"],
    "no prior, analytic": ["-s", "4", "-q", "1", "-T", "1", "--data-dim", "64", "--min-norm", "0.5",
                           "--model-dim", "1000", "--samples", "0"],
}


@pytest.mark.parametrize("case", sorted(REPORTS))
def test_reconrisk_report_writes_a_report_json_that_its_schema_accepts(case, tmp_path, capsys):
    files = _files(tmp_path)
    argv = [str(files[a]) if a in files else a for a in REPORTS[case]]
    assert main(["report", "--out", str(tmp_path / "rep"), "--json", *argv]) == 0, capsys.readouterr().err
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "rep" / "report.json").read_text())
    check_report_json(written)
    assert printed.pop("files") and printed == written  # --json prints report.json itself


def _python_reports():
    import dp_accounting as dpa

    cfg = rr.ReportConfig(prior_size=10, samples=0)
    return {
        "release": rr.risk_report(rr.Release(1.1, 0.02, 50), cfg),
        "event": rr.risk_report(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(3.0), 4), cfg),
        "steps": rr.risk_report([rr.Step(rr.Laplace(2.0), rr.NoAmplification(), 3)], cfg),
    }


@pytest.fixture(scope="module")
def python_reports():
    return _python_reports()


def test_risk_report_to_dict_is_report_json_and_valid(python_reports):
    for name, rep in python_reports.items():
        d = rep.to_dict()
        assert json.loads(json.dumps(d, allow_nan=False)) == d, name  # plain, strict JSON as it stands
        check_report_json(d)
        assert d["provenance"]["release_source"] == {"source": "python"} and d["provenance"]["reconrisk_version"]
        assert type(rep).from_dict(d) == rep and type(rep).from_dict(d).to_dict() == d
        given = {"command": "reconrisk report -s 1", "release_source": {"source": "flags"}, "reconrisk_version": "x"}
        assert report_json(rep, given) == {**d, "provenance": given}


def test_the_schema_refuses_a_mutated_report(python_reports):
    good = python_reports["release"].to_dict()
    mutations = {
        "unknown top-level key": lambda d: d.update(extra=1),
        "unknown key in the summary": lambda d: d["summary"].update(extra=1),
        "unknown key in the release": lambda d: d["release"].update(extra=1),
        "unknown key in the config": lambda d: d["config"].update(extra=1),
        "unknown key in the provenance": lambda d: d["provenance"].update(extra=1),
        "a number as text": lambda d: d["rero"]["pld"].update(upper="0.5"),
        "a count as a float": lambda d: d["analysis"].update(compositions=1.5),
        "a missing family": lambda d: d.pop("fano"),
        "no provenance": lambda d: d.pop("provenance"),
        "a risk without its measure": lambda d: d["risks"][0].pop("measure"),
    }
    for name, mutate in mutations.items():
        d = copy.deepcopy(good)
        mutate(d)
        with pytest.raises(AssertionError, match="does not match its schema"):
            check_report_json(d)
        assert name


# -- what users read --------------------------------------------------------------------------------------------
def test_the_docs_and_readme_spell_only_the_face():
    """A name read from the face that is not in ``__all__`` (it warns), or a module path that reaches the
    implementation only through the deprecation rule (it warns), in any page or the README."""
    public = set(rr.__all__) | {"errors", "integrations", "_src"}
    bad = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if "src_move: keep" in line:  # a sentence about the old spellings, on purpose
                continue
            for m in re.finditer(r"\b(?:reconrisk|rr)\.([A-Za-z_]\w*)", line):
                if m.group(1) not in public and not m.group(1).startswith("__"):
                    bad.append(f"{page.relative_to(ROOT)}:{n}: {m.group(0)}")
            m = re.search(r"from reconrisk import \(?([\w, ]+)", line)
            for name in (m.group(1).replace(" ", "").split(",") if m else ()):
                if name and name not in public:
                    bad.append(f"{page.relative_to(ROOT)}:{n}: from reconrisk import {name}")
    assert not bad, "\n".join(bad)
