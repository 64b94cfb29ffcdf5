"""The README and the documentation site cannot drift from the code.

* Every ```console block (``$ reconrisk ...`` and its output) and every
  ```pycon block is executed and its output compared (tools/docs_check.py:
  in-process, COLUMNS=100, trailing whitespace ignored, ``...`` lines match
  trimmed rows, durations ``(12.3 s)`` match any duration).
* **Lighter check for slow blocks** (marked ``<!-- docs: slow -->``: the
  full audit, training, reproductions): each command is only parsed against
  the CLI — the subcommand exists, every flag exists and its value has the
  right type — and Python is only compiled. Their outputs are compared when
  ``RECONRISK_DOCS_SLOW=1`` is set (or refreshed with
  ``python3.11 tools/refresh_docs.py --slow``).
* Blocks marked ``<!-- docs: requires opacus -->`` are skipped, with the
  reason (a warning in the test's summary), where Opacus is not installed; a
  block marked ``<!-- docs: requires #NAME -->`` needs the earlier block
  marked ``<!-- docs: id NAME -->`` (e.g. a file it wrote) and is skipped with
  it, never failed for it.
* ``mkdocs build --strict`` succeeds: no broken link or anchor, no page left
  out of the navigation, no mkdocstrings warning; the CLI reference and the
  Python API pages are generated from the code at build time.
* Numbers in outputs are compared at a stated tolerance (1e-6 relative, 1e-10 absolute; a block may state its
  own), text exactly: round-off digits never fail a page, a changed number or word does.
* Every file a page's command reads is in the repository (``docs/examples/``, ``examples/``) or written by an
  earlier block of the page; a titled block shows such a file exactly as the repository holds it.
* Every public name in ``reconrisk.__all__`` has a docstring, and no page a
  user reads calls a paper by our internal file number.

After a change that alters printed numbers, refresh the expected outputs:
``PYTHONPATH=src python3.11 tools/refresh_docs.py`` and review the diff.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import docs_check  # noqa: E402

PAGES = docs_check.doc_files()
SLOW = bool(os.environ.get("RECONRISK_DOCS_SLOW"))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_print_what_the_page_shows(page):
    outcomes = docs_check.run_page(page, slow=SLOW)
    for o in outcomes:
        if o.status == "skipped":
            warnings.warn(f"{o.block.where}: example skipped: {o.message}", stacklevel=1)
    failures = [o.message for o in outcomes if o.status == "failed"]
    assert not failures, "\n\n".join(failures) + "\n\n(refresh with: PYTHONPATH=src python3.11 tools/refresh_docs.py)"


def test_every_page_has_something_executable_or_is_prose():
    """A page that shows a reconrisk command must show it as a checked block, never as plain shell."""
    shown_unchecked = []
    for page in PAGES:
        for block in docs_check.blocks(page):
            if block.lang in ("bash", "sh", "shell", "text", ""):
                for line in block.lines:
                    if re.match(r"^\s*\$?\s*reconrisk\s", line):
                        shown_unchecked.append(f"{block.where}: {line.strip()}")
    assert not shown_unchecked, "show these as ```console blocks with their output:\n" + "\n".join(shown_unchecked)


def test_the_comparison_can_fail(tmp_path):
    """The checker is not vacuous: a wrong number, a missing line and a bad flag are caught."""
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ reconrisk convert --from dp --epsilon 1 --kappa 0.01 --json\n{\n  \"nothing\": 1\n}\n```\n\n"
        "```pycon\n>>> 1 + 1\n3\n```\n\n"
        "<!-- docs: slow -->\n```console\n$ reconrisk audit --no-such-flag\n```\n",
        encoding="utf-8",
    )
    outcomes = docs_check.run_page(page)
    assert [o.status for o in outcomes] == ["failed", "failed", "failed"]
    assert docs_check.matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert not docs_check.matches(["a", "...", "d"], ["a", "b", "c"])
    assert docs_check.matches(["took (1.0 s)  "], ["took (25.3 s)"])


def test_numbers_are_compared_at_a_stated_tolerance_and_text_exactly():
    """Round-off digits never fail a page; a change a reader would see always does (tools/docs_check.py: RTOL, ATOL)."""
    m = docs_check.matches
    # JSON: another BLAS's round-off (8.7e-15 vs 9.1e-15, 1.34e-14 vs 1.43e-14) passes; the full-precision last digits too
    assert m(['  "grad_norm": 8.736649034052116e-15,'], ['  "grad_norm": 9.099e-15,'])
    assert m(['  "relative_error": 1.3404170087885714e-14,'], ['  "relative_error": 1.4271834527717e-14,'])
    assert m(['  "target_residual": 0.20226174072330735,'], ['  "target_residual": 0.20226174072330788,'])
    assert not m(['  "target_residual": 0.20226174072330735,'], ['  "target_residual": 0.2023,'])
    assert not m(['  "identifiable": true,'], ['  "identifiable": false,'])
    assert not m(['  "grad_norm": 8.736649034052116e-15,'], ['  "grad_norm": 3.2e-09,'])  # not round-off any more
    # rich tables: a digit a reader sees, a word, a sign; the padding a wider round-off value brings is layout
    row = "│ pld                    │ 0.0291 │ 0.0291 │          │ 1.296e-05 │"
    assert m([row], [row.replace("│ 0.0291 │ 0.0291", "│ 0.0291 │ 0.0292")]) is False
    assert m([row], [row.replace("pld ", "rdp ")]) is False
    assert m([row], [row.replace("1.296e-05", "1.297e-05")]) is False
    assert m(["│ grad_norm         8.737e-15  │", "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩"],
             ["│ grad_norm          9.1e-15  │", "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩"])
    assert not m(["ε = 1.828 at δ = 1e-05"], ["ε = 1.829 at δ = 1e-05"])
    assert not m(["ε = 1.828 at δ = 1e-05"], ["ε = -1.828 at δ = 1e-05"])
    assert not m(["19.5% of the time"], ["19.6% of the time"]) and not m(["at most 5%"], ["at most 6%"])
    # text around numbers is exact; versions, hashes and words with digits are text
    assert not m(["reconrisk 0.1.0"], ["reconrisk 0.1.1"]) and not m(["sha 3fa9"], ["sha 3fa8"])
    assert not m(["1 2"], ["1 2 3"])
    # a block may state its own tolerances: meaningful tiny numbers with atol 0
    assert m(["κ = 9.832e-237"], ["κ = 9.9e-237"]) and not m(["κ = 9.832e-237"], ["κ = 9.9e-237"], atol=0)
    assert docs_check.pycon_matches("0.0500\n", "0.05000000001\n") and not docs_check.pycon_matches("0.0500\n", "0.0501\n")


def test_a_page_passes_on_round_off_and_fails_on_a_real_change(tmp_path):
    """End to end on the documented closed-form attack: its round-off lines perturbed pass, a documented number
    changed fails, and a block's ``atol 0`` makes a tiny meaningful number count."""
    (block,) = [b for b in docs_check.blocks(ROOT / "docs" / "explanation" / "informed.md")
                if b.lang == "console" and "closed-form" in b.lines[0]]
    text = "\n".join(block.lines)
    assert '"grad_norm": ' in text and '"relative_error": ' in text and '"target_residual": 0.2022' in text
    page = tmp_path / "page.md"
    perturbed = re.sub(r'"grad_norm": [^,]+', '"grad_norm": 9.099e-15', text)
    perturbed = re.sub(r'"relative_error": [^,]+', '"relative_error": 1.427e-14', perturbed)
    page.write_text(f"```console\n{perturbed}\n```\n", encoding="utf-8")
    assert [o.status for o in docs_check.run_page(page)] == ["ok"]
    changed = re.sub(r'"target_residual": 0\.2022', '"target_residual": 0.2023', perturbed)
    page.write_text(f"```console\n{changed}\n```\n", encoding="utf-8")
    assert [o.status for o in docs_check.run_page(page)] == ["failed"]
    cmd = "$ reconrisk convert --from dp --epsilon 100 --log-kappa -543.427 --json"
    printed = docs_check.run_command(cmd[12:].split(), tmp_path)[1]
    kappa = re.search(r'"kappa": ([0-9.e+-]+)', printed).group(1)
    wrong = printed.replace(kappa, repr(float(kappa) * 1.01))
    for directive, status in (("", "ok"), ("<!-- docs: atol 0 -->\n", "failed")):
        page.write_text(f"{directive}```console\n{cmd}\n{wrong}\n```\n", encoding="utf-8")
        assert [o.status for o in docs_check.run_page(page)] == [status], directive


def test_dependent_blocks_skip_together(tmp_path):
    """A block that needs what a skipped (or slow, only parsed) block made is skipped with the reason, in a chain;
    a block whose requirement ran runs; a requirement no earlier block declares fails the page."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs: id train; requires no_such_module_for_docs -->\n"
        "```pycon\n>>> open('model.txt', 'w').write('m')\n1\n```\n\n"
        "<!-- docs: id use -->\n<!-- docs: requires #train -->\n"
        "```console\n$ reconrisk report --from-opacus model.txt --samples 0 --out r\nwhatever\n```\n\n"
        "<!-- docs: requires #use -->\n```pycon\n>>> open('model.txt').read()\n'm'\n```\n\n"
        "<!-- docs: id fine -->\n```pycon\n>>> x = 2\n```\n\n"
        "<!-- docs: requires #fine -->\n```pycon\n>>> x + 1\n3\n```\n\n"
        "<!-- docs: id audit -->\n<!-- docs: slow -->\n```console\n$ reconrisk audit\n```\n\n"
        "<!-- docs: requires #audit -->\n```pycon\n>>> open('reconrisk-out/results.json').read()[:1]\n'{'\n```\n",
        encoding="utf-8",
    )
    outcomes = docs_check.run_page(page)
    assert [o.status for o in outcomes] == ["skipped", "skipped", "skipped", "ok", "ok", "parsed", "skipped"]
    assert outcomes[0].message == "needs no_such_module_for_docs"
    assert outcomes[1].message == "needs #train, which was skipped (needs no_such_module_for_docs)"
    assert outcomes[2].message.startswith("needs #use, which was skipped (needs #train")
    assert "only parsed" in outcomes[6].message
    page.write_text("<!-- docs: requires #nowhere -->\n```pycon\n>>> 1\n1\n```\n", encoding="utf-8")
    (bad,) = docs_check.run_page(page)
    assert bad.status == "failed" and "no earlier block" in bad.message


def test_refresh_rewrites_only_what_changed(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```console\n$ reconrisk convert --from dp --epsilon 1 --kappa 0.01\nstale\n```\n\n"
                    "```pycon\n>>> 2 + 2\n5\n>>> 'kept'\n'kept'\n```\n", encoding="utf-8")
    new = docs_check.refreshed_text(page, docs_check.run_page(page))
    assert "stale" not in new and "rero upper" in new  # the table `convert --from dp` prints now
    assert ">>> 2 + 2\n4\n>>> 'kept'\n'kept'\n" in new
    page.write_text(new, encoding="utf-8")
    assert all(o.status == "ok" for o in docs_check.run_page(page))


def _documented_audit_rows():
    """(page, ε, σ, bound, success, ci_low, ci_high) of every documented default `reconrisk audit` table."""
    rows = []
    row = re.compile(r"^│\s*([\d.]+) │\s*([\d.]+) │\s*([\d.]+) │\s*([\d.]+) \[([\d.]+), ([\d.]+)\] │")
    for page in PAGES:
        for block in docs_check.blocks(page):
            if block.lang != "console":
                continue
            for c in docs_check.console_commands(block):
                if c.argv_text.strip() == "reconrisk audit":
                    rows += [(page.name, *map(float, m.groups())) for m in map(row.match, c.expected) if m]
    return rows


def test_documented_audit_certified_columns():
    """The lighter check of the slow main job: its certified columns are recomputed, its attack column is coherent.

    The full audit (1,000 trials × 4 ε) is too slow for the suite; its σ and ReRo-bound columns depend on the
    theory only, so they are recomputed here (q = 1, T = 100, δ = 1e-5, κ = 0.1), and every documented success
    must lie in its interval and the interval's lower end below the bound (the bound holds).
    """
    import reconrisk as rr

    rows = _documented_audit_rows()
    assert len(rows) >= 8, "the README and the auditor's tutorial each show the main job's four rows"
    for page, eps, sigma, bound, success, lo, hi in rows:
        assert rr.noise_multiplier_for_epsilon(eps, 1.0, 100, delta=1e-5) == pytest.approx(sigma, abs=6e-5), page
        b = rr.rero_bound(sigma, 1.0, 100, kappa=0.1, method="closed_form")
        assert round(b.upper, 4) == pytest.approx(bound, abs=1.5e-4), page
        assert lo <= success <= hi and lo <= bound, page


def test_public_names_have_docstrings():
    import importlib

    hooks = importlib.import_module("mkdocs_hooks")
    missing = []
    for name, module in hooks.public_names():
        obj = getattr(importlib.import_module(module), name)
        if not (getattr(obj, "__doc__", None) or "").strip():
            missing.append(f"{module}.{name}")
    assert not missing, f"public names without a docstring: {missing}"


def test_no_internal_paper_numbers_in_pages():
    bad = []
    for page in PAGES:
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            if re.search(r"\bseed 00\d\b|spec_00\d", line) and "$ reconrisk" not in line:
                bad.append(f"{page.relative_to(ROOT)}:{n}: {line.strip()}")
    # Printed CLI output may still say "seed 00N" until the CLI strings are renamed; prose must not.
    prose = [b for b in bad if not _inside_output(b)]
    assert not prose, "cite papers by their authors:\n" + "\n".join(prose)


def _inside_output(entry: str) -> bool:
    path, n = entry.split(":")[0], int(entry.split(":")[1])
    for block in docs_check.blocks(ROOT / path):
        if block.lang in ("console", "pycon") and block.start <= n < block.start + len(block.lines):
            return True
    return False


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the 'dev' extra brings it)")
    pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings[python] is not installed (the 'dev' extra)")
    pytest.importorskip("material", reason="mkdocs-material is not installed (the 'dev' extra)")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("reconrisk-bound", "reconrisk-audit", "reconrisk-sweep-run", "reconrisk-analytic-simulate"):
        assert f'id="{command}"' in cli, f"generated CLI reference lacks {command}"
    api = (tmp_path / "site" / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    assert "rero_bound" in api and "make_private_with_risk" in api
    _site_is_self_contained(tmp_path / "site")
    _formulas_are_mathml(tmp_path / "site")


#: Key formulas of each page whose formulas are written ``$…$``: each must be on the built page as ``<math>``
#: (its plain text kept as ``alttext``). Page → the formulas' plain text.
KEY_FORMULAS = {
    "explanation/rero": ["B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]", "Phi(Phi^-1(kappa) + mu_GDP)",
                         "P[rho(Z, R(w)) <= eta] <= gamma", "kappa = sup_{z_0} P_{Z ~ pi}[rho(Z, z_0) <= eta]"],
    "explanation/tradeoff": ["S(pi) = max_{t in simplex} sum_z pi_z g(t_z)",
                             "f(alpha) = inf \\{1 - P_mu[E] : P_nu[E] <= alpha\\}",
                             "beta^* ≈ 1 - erf((q sqrt(T))/(sqrt(2) sigma) Delta/2)"],
    "explanation/mse-fil": ["(E||z_hat - z||^2)/d >= diam^2/(4(e^eps - 1))", "I(z) = (J_f^T J_f)/s^2"],
    "explanation/vmf": ["C = (e^kappa A(S^{p-1}))/C_{p, kappa}", "VMF(g/||g||, kappa)"],
    "explanation/informed": ["gamma = (kappa e^eps)^{(alpha - 1)/alpha}",
                             "gamma = exp(-(sqrt(log(1/kappa)) - sqrt(rho))^2)"],
    "explanation/analytic": ["X_hat ~ N(X, sigma^2 ||X||^2 I_N)", "P[PSNR >= eta]"],
    "explanation/departures": ["P_mu[E] = E_nu[r 1_E] ≈ 1/N sum_{i in E} r_i",
                               "(nabla g_tilde^T nabla g_tilde)/(sigma^2 C^2)", "(e^{eps_s} - 1)/(e^{eps_s} + 1)"],
    "reference/guarantees": ["K = sum_t m_t^2", "k/sqrt(k^2/z^2 + 1/sigma_b^2)"],
    "how-to/risks": ["1 - f(b)"],
    "how-to/priors": ["kappa = 1/n"],
    "how-to/who-is-at-risk": ["ReRo_i"],
    "tutorials/auditor": ["mu = (2 sqrt(T))/sigma"],
    "tutorials/flower": ["(z^-2 + sigma_b^-2)^{-1/2}", "mu = sqrt(T)/sigma"],
    "tutorials/jax": ["⌈q T⌉"],
    "tutorials/opacus": ["K = max sum_t m_t^2"],
    "reproduction": ["P(PSNR >= eta)"],
}
_SHOWN_AS_IS = re.compile(r"<(pre|code|math|script|style)\b.*?</\1>", re.S | re.I)  # code, MathML, scripts
_LEFT_DOLLAR = re.compile(r"\$\$?\S(?:[^$\n<]*\S)?\$")  # a $…$ or $$…$$ the hook did not convert


def _site_pages(site):
    return [p for p in sorted(site.rglob("*.html")) if "assets" not in p.parts]


def _site_is_self_contained(site):
    """No page loads anything from the network: no Google Fonts (``theme: font: false``), no external stylesheet,
    script, image or frame, no ``url(http…)`` or ``@import`` of a remote file in a style."""
    loads = re.compile(r"<(?:link|script|img|iframe|source|audio|video|embed)\b[^>]*?\b(?:href|src|srcset)"
                       r"\s*=\s*[\"']?\s*(?:https?:)?//", re.I)
    remote_css = re.compile(r"url\(\s*[\"']?\s*(?:https?:)?//|@import\s+[\"']?(?:https?:)?//", re.I)
    bad = []
    for page in _site_pages(site):
        html = page.read_text(encoding="utf-8")
        rel = str(page.relative_to(site))
        if re.search(r"fonts\.(googleapis|gstatic)\.com", html):
            bad.append(f"{rel}: Google Fonts")
        bad += [f"{rel}: {m.group(0)[:120]}" for m in loads.finditer(html)]
        bad += [f"{rel}: {m.group(0)}" for m in remote_css.finditer(html)]
    for css in sorted(site.rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        bad += [f"{css.relative_to(site)}: {m.group(0)}" for m in remote_css.finditer(text)]
    assert not bad, "the site must load nothing from the network:\n" + "\n".join(bad)


def _formulas_are_mathml(site):
    """Every ``$…$`` outside code was converted (tools/mkdocs_hooks.py): no page shows a ``$`` formula, a
    placeholder or MathJax; every ``<math>`` is well-formed; the key formulas of each converted page are MathML."""
    import xml.etree.ElementTree as ET

    left, counts = [], {}
    for page in _site_pages(site):
        html = page.read_text(encoding="utf-8")
        rel = str(page.relative_to(site))
        maths = re.findall(r"<math\b.*?</math>", html, re.S)
        for m in maths:
            ET.fromstring(m)  # well-formed
        counts[rel] = len(maths)
        prose = _SHOWN_AS_IS.sub(" ", re.sub(r"<!--.*?-->", " ", html, flags=re.S))
        left += [f"{rel}: {m.group(0)}" for m in _LEFT_DOLLAR.finditer(prose)]
        assert "RECONRISKMATH" not in html and "mathjax" not in html.lower(), rel
    assert not left, "formulas left unconverted:\n" + "\n".join(left)
    for page, formulas in KEY_FORMULAS.items():
        built = (site / page / "index.html").read_text(encoding="utf-8")
        for formula in formulas:
            alt = formula.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#x27;")
            assert re.search(f"<math display='(inline|block)' alttext='{re.escape(alt)}'>", built), (page, formula)


#: Path parameters a command writes (or keeps its state in), not files a reader must have
_WRITTEN = {"out", "store", "csv", "parquet", "compile_cache"}


def _read_paths(argv: list[str]) -> dict[str, str]:
    """{parameter: value} of the Path parameters a command reads, parsed as the CLI parses it."""
    import click
    import typer.main

    from reconrisk._src.cli import app

    cmd = typer.main.get_command(app)
    ctx = cmd.context_class(cmd, info_name="reconrisk")
    args = list(argv)
    while hasattr(cmd, "list_commands") and args and not args[0].startswith("-"):
        sub = cmd.get_command(ctx, args[0])
        args, cmd, ctx = args[1:], sub, sub.context_class(sub, info_name=args[0], parent=ctx)
    with cmd.make_context(ctx.info_name, args, parent=ctx.parent, resilient_parsing=True) as sub_ctx:
        return {p.name: str(sub_ctx.params[p.name]) for p in cmd.params
                if isinstance(p.type, click.Path) and p.name not in _WRITTEN and sub_ctx.params.get(p.name) is not None}


def test_every_file_a_page_reads_is_in_the_repository():
    """A command of a page reads only files the repository holds (docs/examples/, examples/) or an earlier block of
    the same page wrote (e.g. the Opacus tutorial's accountant.json); a titled block is that file, as it is."""
    read, missing = set(), []
    for page in PAGES:
        written: set[str] = set()
        for block in docs_check.blocks(page):
            if block.title and block.lang not in ("console", "pycon"):
                outcome = docs_check._check_shown_file(block)
                assert outcome.status == "ok", outcome.message
            if block.lang == "pycon":
                written |= set(re.findall(r"""open\(\s*["']([^"']+)["']\s*,\s*["']w""", "\n".join(block.lines)))
            if block.lang != "console":
                continue
            for c in docs_check.console_commands(block):
                for name, value in _read_paths(c.argv).items():
                    read.add(name)
                    repo_file = (ROOT / value).is_file() and any(
                        (ROOT / value).resolve().is_relative_to(ROOT / d) for d in docs_check.EXAMPLE_DIRS)
                    if not (repo_file or value in written):
                        missing.append(f"{block.where}: `{c.argv_text}` reads {value} ({name})")
    assert {"release_file", "from_opacus", "sweep_file"} <= read, f"the scan saw only {read}"
    assert not missing, "put these files under docs/examples/ and say so on the page:\n" + "\n".join(missing)


def test_a_titled_block_must_be_the_repository_file(tmp_path):
    """The check can fail: a titled file the repository lacks, one that differs, one outside the example folders."""
    page = tmp_path / "page.md"
    for title, body, why in (("docs/examples/nowhere.toml", "steps = 1", "lacks it"),
                             ("docs/examples/run.toml", "[release]\nnoise_multiplier = 2.0", "differs"),
                             ("pyproject.toml", "x = 1", "must name a file under")):
        page.write_text(f'```toml title="{title}"\n{body}\n```\n', encoding="utf-8")
        (outcome,) = docs_check.run_page(page)
        assert outcome.status == "failed" and why in outcome.message, outcome.message
    shown = (ROOT / "docs" / "examples" / "run.toml").read_text(encoding="utf-8")
    page.write_text(f'```toml title="docs/examples/run.toml"\n{shown}```\n\n```console\n'
                    "$ reconrisk bound --release docs/examples/run.toml --prior-size 100 --json\n...\n```\n",
                    encoding="utf-8")
    assert [o.status for o in docs_check.run_page(page)] == ["ok", "ok"]
