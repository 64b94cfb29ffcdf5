"""The register of guarantees (docs/reference/guarantees.md) cannot drift from the code.

* Every string constant of ``src/reconrisk/_src`` that says "certif…" (case-insensitive; docstrings excluded,
  f-string pieces included) is listed in the page's table "Where the word appears": a row of the same file
  whose string equals the constant (whitespace normalised) or is a part of it of at least 12 characters that
  itself says "certif". A new "certified" key or label without a row fails here, naming file, line and string.
* Reverse: every row's string still occurs in its file, every row points to a quantity of the register, every
  test the page names exists (``def test_name`` in that file), every JSON key and Python name the page lists
  exists in ``src``.
* The references the register cites where no other test compared a certified number with an independent one:
  the audit's and the sweep's certificate, the one-run audit's replace-one ε, the shuffled stand-in and the
  calibrated σ, each at q = 1 against the Gaussian-DP closed form computed here with scipy (Balle & Wang 2018;
  Dong, Roth & Su 2022; Hayes, Mahloujifar & Balle 2023, Cor. 4 at q = 1: B = Φ(Φ⁻¹(κ) + μ)).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from scipy import optimize, special

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "reconrisk" / "_src"  # the implementation (the face holds no such string)
PAGE = ROOT / "docs" / "reference" / "guarantees.md"
WORD = re.compile(r"certif", re.IGNORECASE)
MIN_PART = 12  # a row's string may be a part of a longer constant, at least this long and saying "certif"
TEST_REF = re.compile(r"^(tests/[\w/]+\.py)::(\w+)(\[[^\]]*\])?$")


# -- reading the source ----------------------------------------------------------------------------------
def _norm(s: str) -> str:
    return " ".join(s.split())


def _docstring_ids(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def certified_strings(root: Path = SRC) -> list[tuple[str, int, str]]:
    """(file relative to src/reconrisk/_src, line, normalised string) of every non-docstring constant saying certif…."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstring_ids(tree)
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and WORD.search(node.value):
                out.append((rel, node.lineno, _norm(node.value)))
    return sorted(out)


def _source_names() -> tuple[set[str], set[str]]:
    """(every string constant, every name defined or used as a key: defs, classes, assignments, dataclass
    fields, attributes, keyword arguments) of src/reconrisk."""
    strings, names = set(), set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return strings, names


# -- reading the page ------------------------------------------------------------------------------------
@dataclass
class Table:
    heading: str
    header: list[str]
    rows: list[dict[str, str]]
    lines: list[int]


def tables(text: str) -> list[Table]:
    """The Markdown tables of a page, each under the last ``##`` heading above it."""
    out, heading, block = [], "", []
    lines = text.split("\n")
    for n, line in enumerate(lines + [""], 1):
        if line.startswith("|"):
            block.append((n, line))
            continue
        if block:
            header = [c.strip() for c in block[0][1].strip().strip("|").split("|")]
            rows, where = [], []
            for m, row in block[2:]:
                cells = [c.strip() for c in row.strip().strip("|").split("|")]
                assert len(cells) == len(header), f"{PAGE.name}:{m}: {len(cells)} cells, the header has {len(header)}"
                rows.append(dict(zip(header, cells)))
                where.append(m)
            out.append(Table(heading, header, rows, where))
            block = []
        if line.startswith("## "):
            heading = line[3:].strip()
    return out


def spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _table(heading: str) -> Table:
    found = [t for t in tables(PAGE.read_text(encoding="utf-8")) if t.heading == heading]
    assert len(found) == 1, f"the page must have one table under '## {heading}'"
    return found[0]


def register() -> dict[str, dict[str, str]]:
    """{quantity id: its row} of the table "The register"."""
    out = {}
    for row in _table("The register").rows:
        m = re.search(r'<span id="([\w-]+)"></span>', row["Quantity"])
        assert m, f"a register row without an id: {row['Quantity'][:60]}"
        assert m.group(1) not in out, f"two register rows with the id {m.group(1)}"
        out[m.group(1)] = row
    return out


def where_rows() -> list[tuple[int, str, str, list[str]]]:
    """(page line, file, string, quantity ids) of the table "Where the word appears"."""
    t = _table("Where the word appears")
    out = []
    for n, row in zip(t.lines, t.rows):
        (file,), (text,) = spans(row["Source file"]), spans(row["As it appears"])
        out.append((n, file, _norm(text), re.findall(r"\]\(#([\w-]+)\)", row["Quantity"])))
    return out


def covers(row_text: str, constant: str) -> bool:
    return row_text == constant or (len(row_text) >= MIN_PART and WORD.search(row_text) is not None
                                    and row_text in constant)


def uncovered(strings, rows) -> list[str]:
    by_file: dict[str, list[str]] = {}
    for _, file, text, _ in rows:
        by_file.setdefault(file, []).append(text)
    return [f"src/reconrisk/_src/{f}:{line}: {s!r}" for f, line, s in strings
            if not any(covers(t, s) for t in by_file.get(f, []))]


def stale(strings, rows) -> list[str]:
    by_file: dict[str, list[str]] = {}
    for f, _, s in strings:
        by_file.setdefault(f, []).append(s)
    return [f"{PAGE.relative_to(ROOT)}:{n}: {file}: {text!r}" for n, file, text, _ in rows
            if not any(covers(text, s) for s in by_file.get(file, []))]


# -- the register against the source ---------------------------------------------------------------------
def test_every_certified_string_in_the_source_is_in_the_register():
    missing = uncovered(certified_strings(), where_rows())
    assert not missing, ("strings that say 'certif…' with no row in docs/reference/guarantees.md, table "
                         "'Where the word appears' (add a row naming the quantity, or stop calling it certified):\n"
                         + "\n".join(missing))


def test_no_register_row_is_stale():
    gone = stale(certified_strings(), where_rows())
    assert not gone, "rows of 'Where the word appears' whose string is no longer in that file:\n" + "\n".join(gone)


def test_every_row_names_a_quantity_of_the_register():
    ids = set(register())
    bad = [f"{PAGE.name}:{n}: {file} {text!r} -> {q or 'nothing'}" for n, file, text, q in where_rows()
           if not q or not set(q) <= ids]
    assert not bad, "rows pointing to no quantity of the register:\n" + "\n".join(bad)
    used = {x for *_, q in where_rows() for x in q}
    assert used <= ids


def test_the_check_can_fail(tmp_path):
    """A new 'certified_foo' key is reported with its file and line; a removed row makes its string uncovered;
    a row whose string left the source is stale; a short part (< 12 characters) covers nothing."""
    pkg = tmp_path / "reconrisk"
    (pkg / "bounds").mkdir(parents=True)
    (pkg / "bounds" / "x.py").write_text('"""certified docstring: ignored."""\nA = {"certified_foo": 1}\n'
                                         'B = f"{A} certified bracket ({A})"\n', encoding="utf-8")
    strings = certified_strings(pkg)
    assert strings == [("bounds/x.py", 2, "certified_foo"), ("bounds/x.py", 3, "certified bracket (")]
    rows = [(1, "bounds/x.py", "certified bracket (", ["rero"])]
    assert uncovered(strings, rows) == ["src/reconrisk/_src/bounds/x.py:2: 'certified_foo'"]
    assert uncovered(strings, rows + [(2, "bounds/y.py", "certified_foo", ["rero"])])  # another file's row
    assert not uncovered(strings, rows + [(2, "bounds/x.py", "certified_foo", ["rero"])])
    assert uncovered(strings, [(1, "bounds/x.py", "certified", ["rero"])])  # too short to be a part
    assert stale(strings, [(7, "bounds/x.py", "certified bound (", ["rero"])])
    real = where_rows()
    assert uncovered(certified_strings(), real[1:]) and not uncovered(certified_strings(), real)


# -- the page's other claims -----------------------------------------------------------------------------
def _test_refs() -> list[str]:
    return [s for s in spans(PAGE.read_text(encoding="utf-8")) if s.startswith("tests/") and "::" in s]


def test_every_quantity_names_a_test_and_every_named_test_exists():
    for qid, row in register().items():
        assert [s for s in spans(row["Checked by"]) if TEST_REF.match(s)], f"quantity {qid} names no test"
    refs = _test_refs()
    assert len(refs) >= 30
    missing = []
    for ref in refs:
        m = TEST_REF.match(ref)
        assert m, f"not a test reference (tests/FILE.py::test_name): {ref}"
        path = ROOT / m.group(1)
        if not path.is_file() or not re.search(rf"^\s*(async\s+)?def {m.group(2)}\(", path.read_text(encoding="utf-8"),
                                               re.MULTILINE):
            missing.append(ref)
    assert not missing, "tests named on the register page that do not exist:\n" + "\n".join(missing)


def _listed(column: str) -> list[str]:
    out = []
    for t in tables(PAGE.read_text(encoding="utf-8")):
        for row in t.rows:
            out += spans(row.get(column, ""))
    return out


def test_every_listed_json_key_exists_in_the_source():
    strings, names = _source_names()
    keys = [k for k in _listed("JSON")]
    assert "certified_rero" in keys and len(keys) >= 40
    missing = [k for k in keys for part in k.split(".") if part not in strings and part not in names]
    assert not missing, "JSON keys on the register page that appear nowhere in src/reconrisk:\n" + "\n".join(missing)


def test_every_listed_python_name_exists_in_the_source():
    strings, names = _source_names()
    listed = [s for s in _listed("Python") if re.fullmatch(r"[\w.]+(\(.*\))?", s)]
    assert "IndividualFilter.certified_rero" in listed and len(listed) >= 60
    missing = [s for s in listed for part in s.split("(")[0].split(".")[-1:] if part not in names | strings]
    assert not missing, "Python names on the register page that src/reconrisk does not define:\n" + "\n".join(missing)


def test_the_page_is_in_the_navigation_and_the_reference_index():
    assert "reference/guarantees.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "(guarantees.md)" in (ROOT / "docs" / "reference" / "index.md").read_text(encoding="utf-8")
    text = PAGE.read_text(encoding="utf-8")
    assert "```" not in text  # nothing executable: the page is checked here, not by tests/test_docs.py
    assert not re.search(r"\bseed 00\d\b|spec_00\d", text)


# -- independent references the register cites -----------------------------------------------------------
def _gdp_delta(eps: float, mu: float) -> float:
    """Gaussian DP's privacy profile (Balle & Wang 2018; Dong, Roth & Su 2022, Cor. 2.13), computed here."""
    return special.ndtr(-eps / mu + mu / 2) - math.exp(eps + special.log_ndtr(-eps / mu - mu / 2))


def _gdp_epsilon(delta: float, mu: float) -> float:
    return optimize.brentq(lambda e: _gdp_delta(e, mu) - delta, 0.0, 500.0, xtol=1e-13, rtol=1e-14)


def _gdp_rero(kappa: float, mu: float) -> float:
    return float(special.ndtr(special.ndtri(kappa) + mu))


@pytest.mark.parametrize("sigma, steps, n", [(4.9989, 100, 10), (1.3, 7, 1000), (20.0, 3, 2)])
def test_audit_and_sweep_certificates_are_the_closed_form_at_full_batch(sigma, steps, n):
    """The bound an audit prints before any trial and a sweep stores per point, at q = 1: μ = √T/σ."""
    from reconrisk._src.experiments.audit import AuditSetting, certify
    from reconrisk._src.experiments.sweep import certify_point
    from reconrisk._src.release import Release

    mu = math.sqrt(steps) / sigma
    rero, eps = _gdp_rero(1 / n, mu), _gdp_epsilon(1e-5, mu)
    c = certify(AuditSetting(Release(sigma, 1.0, steps), prior_size=n, delta=1e-5))
    assert c.rero.upper == pytest.approx(rero, rel=1e-9) and c.rero.upper >= rero * (1 - 1e-12)
    assert c.privacy.upper == pytest.approx(eps, rel=1e-7)
    p = certify_point({"noise_multiplier": sigma, "sample_rate": 1.0, "steps": steps, "clip_norm": 1.0,
                       "prior_size": n, "epsilon": None, "delta": 1e-5})
    assert p["rero_upper"] == pytest.approx(rero, rel=1e-9) and p["rero_lower"] <= rero * (1 + 1e-12)
    assert p["epsilon"] == pytest.approx(eps, rel=1e-7)


@pytest.mark.parametrize("sigma, steps", [(4.5, 20), (1.0, 1), (8.0, 300)])
def test_replace_one_epsilon_at_full_batch_is_the_gaussian_profile(sigma, steps):
    """Replace-one at q = 1: the clipped sum moves by at most 2C, so μ = 2√T/σ (both one-run audits)."""
    from reconrisk._src.experiments.onerun import OneRunSetting
    from reconrisk.integrations.opacus_audit import replace_one_epsilon
    from reconrisk._src.release import Release

    mu = 2 * math.sqrt(steps) / sigma
    want = _gdp_epsilon(1e-5, mu)
    b = replace_one_epsilon(Release(sigma, 1.0, steps), 1e-5)
    assert b.lower == b.upper == pytest.approx(want, rel=1e-7) and b.details["neighbouring"] == "replace_one"
    cert = OneRunSetting(Release(sigma, 1.0, steps), delta=1e-5).certified()
    assert cert["gdp_mu"] == pytest.approx(mu, rel=1e-12) and cert["epsilon"] == pytest.approx(want, rel=1e-7)
    assert cert["epsilon_add_remove"] == pytest.approx(_gdp_epsilon(1e-5, mu / 2), rel=1e-7)


@pytest.mark.parametrize("sigma, epochs, n", [(2.0, 9, 10), (0.7353, 2, 100), (5.0, 40, 1000)])
def test_shuffled_stand_in_is_one_gaussian_step_per_epoch(sigma, epochs, n):
    """``Release.shuffled(σ, E)``: given each example's batch, E Gaussian steps of replace-one sensitivity 2C (pairs);
    against the zero-out reference, E steps of sensitivity C (ReRo)."""
    from reconrisk._src.analysis.privacy import PrivacyAnalysis
    from reconrisk._src.release import Release

    rel = Release.shuffled(sigma, epochs=epochs)
    assert rel.neighbouring == "replace_one"
    a = PrivacyAnalysis(rel)
    mu = 2 * math.sqrt(epochs) / sigma
    assert a.epsilon(1e-5).upper == pytest.approx(_gdp_epsilon(1e-5, mu), rel=1e-7)
    assert a.delta(1.0).upper == pytest.approx(_gdp_delta(1.0, mu), rel=1e-7, abs=1e-300)
    r = a.rero(prior_size=n)  # ReRo: the zero-out reference, one Gaussian step of sensitivity C per epoch
    exact = _gdp_rero(1 / n, mu / 2)  # both ends within ulps of it (moved outward), the bracket as narrow
    assert r.upper == pytest.approx(exact, rel=1e-12) and r.lower == pytest.approx(exact, rel=1e-12)
    assert r.lower <= r.upper < r.lower * (1 + 1e-12)
    assert a.gdp_mu().upper == pytest.approx(mu, rel=1e-12)


@pytest.mark.parametrize("target, steps, n", [(0.3, 100, 10), (0.02, 10, 1000), (0.9, 1, 2)])
def test_calibrated_noise_meets_the_closed_form_at_full_batch(target, steps, n):
    """At q = 1 the bound meets γ iff σ ≥ √T/(Φ⁻¹(γ) − Φ⁻¹(κ)); the calibrated σ is at least that and within
    the relative tolerance of it. The same for ε at δ: σ ≥ √T/μ with δ(ε; μ) = δ."""
    from reconrisk._src.analysis.calibrate import calibrate, noise_multiplier_for_epsilon

    exact = math.sqrt(steps) / (special.ndtri(target) - special.ndtri(1 / n))
    cal = calibrate("reconstruction", target, sample_rate=1.0, steps=steps, prior_size=n)
    assert exact * (1 - 1e-12) <= cal.noise_multiplier <= exact * (1 + 1e-3)
    assert cal.bound.upper <= target
    for eps in (0.5, 4.0):
        mu = optimize.brentq(lambda m: _gdp_delta(eps, m) - 1e-5, 1e-3, 100.0, xtol=1e-14, rtol=1e-14)
        sigma = noise_multiplier_for_epsilon(eps, 1.0, steps, 1e-5)
        assert math.sqrt(steps) / mu * (1 - 1e-9) <= sigma <= math.sqrt(steps) / mu * (1 + 1e-3)
