"""Run the examples of the README and the documentation, and compare what they print.

Two kinds of fenced block are executable:

* ```` ```console ```` — lines ``$ reconrisk ARGS`` (a trailing ``\\`` continues the
  line) each followed by the output it prints. The command runs in-process
  (:func:`reconrisk._src.cli.main`, the ``reconrisk`` script's entry point) with
  ``COLUMNS=100`` and no colour; the expected text is its stdout (stdout then
  stderr when the exit code is not 0, so an error example shows its one line).
* ```` ```pycon ```` — ``>>>`` / ``...`` lines and their output, as in a doctest.

Comparison: trailing whitespace and trailing blank lines are ignored, a line
that is exactly ``...`` matches any run of lines (a trimmed table), and a
duration written ``(12.3 s)`` matches any duration. Within a line, text and
numbers are compared apart (:func:`line_matches`):

* **text exactly**, except the padding a table gets from its columns' widths:
  runs of spaces and runs of a rule character (``─ ━ ═``) count as one;
* **numbers as numbers** (a decimal token not glued to a word or a dot, so
  ``v0.1.0``, ``ε1`` and hashes stay text): equal when
  ``|a − b| ≤ max(RTOL·max(|a|, |b|), ATOL)``, with ``RTOL = 1e-6`` and
  ``ATOL = 1e-10``. The relative part leaves a value shown with a reader's
  digits (``0.0291``, ``1.828``, ``9.832e-237``) exact — a change in its last
  digit fails — and lets a full-precision float (JSON) differ in its round-off
  digits; the absolute floor lets a value of round-off size (a gradient norm
  of 8.7e-15 at an optimum, 9.1e-15 on another BLAS) be any such value. A
  block whose tiny numbers are meaningful (probabilities of 1e-200) states
  ``<!-- docs: atol 0 -->``; ``rtol X`` likewise. ``pycon`` output is compared
  as a doctest (``ELLIPSIS``, whitespace normalised), then, failing that,
  line by line with the same rule.

Every block of one page runs in one fresh working directory (with the
repository's ``examples/`` and ``docs/examples/`` linked into it at the same
paths, so a command reads ``docs/examples/run.toml`` as a reader at the
repository's root does), in order, sharing Python globals. A fenced block with
``title="PATH"`` shows a file a command of the page reads: PATH is relative to
the repository's root, the file must be there (a reader never has to type it
in) and hold exactly the block's text; the page fails otherwise.

An HTML comment on the line just above a fence changes how it is checked:

* ``<!-- docs: slow -->`` — too slow for the test suite (full audits,
  training): the test only parses each command against the CLI (flag names,
  value types, choices) and does not compare the output.
  ``RECONRISK_DOCS_SLOW=1`` (or ``tools/refresh_docs.py --slow``) runs them for real.
* ``<!-- docs: parse-only -->`` — never run, only parsed, even with
  ``RECONRISK_DOCS_SLOW=1``: commands that need what a test machine lacks
  (files the reader downloaded, a Dask scheduler at a real address).
* ``<!-- docs: atol X -->``, ``<!-- docs: rtol X -->`` — the block's numbers
  are compared with these tolerances instead of ``ATOL`` and ``RTOL``.
* ``<!-- docs: requires MODULE -->`` — skipped (and said so) when MODULE
  cannot be imported, e.g. ``opacus``.
* ``<!-- docs: id NAME -->`` names a block, and ``<!-- docs: requires #NAME -->``
  says a block needs what that earlier block of the page made (a file it
  wrote, a variable it set): when the named block was skipped, or only
  parsed (slow), or failed, the dependent block is skipped with the reason,
  never run into a failure of its own; dependencies chain. A ``#NAME`` that no
  earlier block of the page declares is an error. One ``requires`` may list
  several names, modules and blocks alike (``requires opacus #train``), and
  one comment may hold several directives, separated by ``;``
  (``<!-- docs: id train; requires opacus -->``).

``tools/refresh_docs.py`` rewrites the expected outputs from a fresh run.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = "100"
#: the repository's example files, which a page's commands read (linked into each page's working directory)
EXAMPLE_DIRS = ("examples", "docs/examples")

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<info>[^\n]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs:\s*(?P<what>.*?)\s*-->\s*$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_DURATION = re.compile(r"\(\d+(?:\.\d+)? s\)")
#: a decimal number standing alone: not part of a word (``ε1``, a hash) nor of a dotted version (``0.1.0``)
_NUMBER = re.compile(r"(?<![\w.])([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)(?![\w.])")
_PADDING = re.compile(r" +|─+|━+|═+")
#: default tolerances of a documented number (module docstring): relative, and the floor for round-off-sized values
RTOL = 1e-6
ATOL = 1e-10


def doc_files() -> list[Path]:
    """The README and every page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass
class Block:
    """One fenced block of a Markdown file (line numbers 1-based, fence lines excluded)."""

    path: Path
    lang: str
    title: str | None
    start: int  # first content line
    lines: list[str]
    directives: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.start}"

    @property
    def slow(self) -> bool:
        return "slow" in self.directives or self.parse_only

    @property
    def parse_only(self) -> bool:
        return "parse-only" in self.directives

    def requires(self) -> list[str]:
        """Every name of the block's ``requires`` directives: modules, and ``#NAME`` for earlier blocks."""
        return [name for d in self.directives if d.startswith("requires ") for name in d.split()[1:]]

    @property
    def tolerance(self) -> tuple[float, float]:
        """(rtol, atol) of the block's numbers: ``RTOL``/``ATOL`` unless a directive states its own."""
        tol = {"rtol": RTOL, "atol": ATOL}
        for d in self.directives:
            what = d.split()
            if len(what) == 2 and what[0] in tol:
                tol[what[0]] = float(what[1])
        return tol["rtol"], tol["atol"]

    @property
    def id(self) -> str | None:
        ids = [d.split(None, 1)[1].strip() for d in self.directives if d.startswith("id ")]
        return ids[-1] if ids else None


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the ``docs:`` directives just above it."""
    text = path.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(text):
        m = _FENCE.match(text[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        lang = info.split()[0].lstrip("{.").rstrip("}") if info else ""
        title = _TITLE.search(info)
        directives, k = [], i - 1
        while k >= 0 and _DIRECTIVE.match(text[k]):  # one comment may hold several, separated by ";"
            what = [d.strip() for d in _DIRECTIVE.match(text[k]).group("what").split(";") if d.strip()]
            directives[:0] = what
            k -= 1
        j = i + 1
        while j < len(text) and not text[j].strip().startswith(fence):
            j += 1
        indent = len(m.group("indent"))
        body = [ln[indent:] if ln[:indent].strip() == "" else ln for ln in text[i + 1 : j]]
        found.append(Block(path, lang, title.group("title") if title else None, i + 2, body, directives))
        i = j + 1
    return found


# -- console blocks ----------------------------------------------------------------------


@dataclass
class Command:
    argv_text: str  # as written, continuation lines joined
    source: list[str]  # the lines as written (with "$ " and "\")
    expected: list[str]

    @property
    def argv(self) -> list[str]:
        words = shlex.split(self.argv_text)
        if not words or words[0] != "reconrisk":
            raise ValueError(f"a console example must run `reconrisk ...`; found {self.argv_text!r}")
        return words[1:]


def console_commands(block: Block) -> list[Command]:
    commands: list[Command] = []
    lines = block.lines
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            if commands:
                commands[-1].expected.append(lines[i])
            elif lines[i].strip():
                raise ValueError(f"{block.where}: console block must start with a `$ ` line; found {lines[i]!r}")
            i += 1
            continue
        source = [lines[i]]
        text = lines[i][2:]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            source.append(lines[i])
            text = text[:-1] + " " + lines[i].strip()
        commands.append(Command(text.strip(), source, []))
        i += 1
    return commands


@contextlib.contextmanager
def _terminal(cwd: Path):
    """Fixed width, no colour, cwd = the page's working directory; restored afterwards."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM", "TTY_COMPATIBLE")}
    # what a terminal shows (tables with their grid; a pipe gets plain ones), without colour codes
    os.environ.update({"COLUMNS": COLUMNS, "LINES": "50", "NO_COLOR": "1", "TERM": "dumb", "TTY_COMPATIBLE": "1"})
    os.environ.pop("FORCE_COLOR", None)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_command(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``reconrisk ARGV`` in-process; return (exit code, what a reader of the docs sees)."""
    from reconrisk._src.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _terminal(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:  # pragma: no cover - main() returns its code
            rc = exc.code if isinstance(exc.code, int) else 1
    text = out.getvalue() if rc == 0 else out.getvalue() + err.getvalue()
    return rc, text


def parse_command(argv: list[str]) -> None:
    """Check a command against the CLI without running it: subcommand, flag names, value types."""
    import typer.main

    from reconrisk._src.cli import app

    cmd = typer.main.get_command(app)
    ctx = cmd.context_class(cmd, info_name="reconrisk")
    args = list(argv)
    while hasattr(cmd, "list_commands") and args and not args[0].startswith("-"):
        sub = cmd.get_command(ctx, args[0])
        if sub is None:
            raise ValueError(f"no such command {args[0]!r} under {ctx.command_path!r}")
        name, args = args[0], args[1:]
        cmd, ctx = sub, sub.context_class(sub, info_name=name, parent=ctx)
    cmd.make_context(ctx.info_name, args, parent=ctx.parent)


def normalise(text: str | list[str]) -> list[str]:
    lines = text.split("\n") if isinstance(text, str) else list(text)
    lines = [_DURATION.sub("(<t> s)", ln.rstrip()) for ln in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def numbers_match(a: str, b: str, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Two numbers as written: equal, or ``|a − b| ≤ max(rtol·max(|a|, |b|), atol)``."""
    if a == b:
        return True
    x, y = float(a), float(b)
    return abs(x - y) <= max(rtol * max(abs(x), abs(y)), atol)


def _tokens(line: str) -> list[str]:
    """Text and numbers alternating (text first; odd positions are numbers), table padding collapsed in the text."""
    parts = _NUMBER.split(line)
    return [p if i % 2 else _PADDING.sub(lambda m: m.group(0)[0], p) for i, p in enumerate(parts)]


def line_matches(expected: str, actual: str, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """One documented line against one printed line: text exactly (padding aside), numbers within tolerance."""
    if expected == actual:
        return True
    exp, act = _tokens(expected), _tokens(actual)
    if len(exp) != len(act):
        return False
    return all(numbers_match(e, a, rtol, atol) if i % 2 else e == a for i, (e, a) in enumerate(zip(exp, act)))


def matches(expected: list[str], actual: list[str], rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Line-by-line :func:`line_matches`, where an expected line ``...`` matches any run of lines."""
    exp, act = normalise(expected), normalise(actual)
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def m(i: int, j: int) -> bool:
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(m(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and line_matches(exp[i], act[j], rtol, atol) and m(i + 1, j + 1)

    return m(0, 0)


def diff(expected: list[str], actual: list[str]) -> str:
    import difflib

    return "\n".join(difflib.unified_diff(normalise(expected), normalise(actual), "documented", "printed now", lineterm=""))


# -- pycon blocks ------------------------------------------------------------------------

_CHECKER = doctest.OutputChecker()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def pycon_examples(block: Block) -> list[doctest.Example]:
    return doctest.DocTestParser().get_examples("\n".join(block.lines) + "\n")


def run_example(example: doctest.Example, globs: dict, cwd: Path) -> str:
    """Execute one doctest example as the interactive prompt would; return what it prints."""
    out = io.StringIO()
    with _terminal(cwd), contextlib.redirect_stdout(out):
        try:
            exec(compile(example.source, "<docs>", "single"), globs)
        except Exception as exc:  # shown as the interactive prompt shows it (last line)
            out.write(f"Traceback (most recent call last):\n  ...\n{type(exc).__name__}: {exc}\n")
    return out.getvalue()


def pycon_matches(want: str, got: str, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """As a doctest (``ELLIPSIS``, whitespace normalised), or else line by line with numbers within tolerance."""
    if _CHECKER.check_output(want, got, _FLAGS):
        return True
    return bool(want) and matches(want.split("\n"), got.split("\n"), rtol, atol)


# -- one page ----------------------------------------------------------------------------


@dataclass
class Outcome:
    block: Block
    status: str  # "ok", "parsed", "skipped", "failed"
    message: str = ""
    actual: list = field(default_factory=list)  # per command / example: the text printed now


def run_page(path: Path, *, slow: bool = False) -> list[Outcome]:
    """Run every executable block of one page, in order, in one fresh working directory."""
    outcomes: list[Outcome] = []
    done: dict[str, Outcome] = {}  # block id -> its outcome (for ``requires #id``)
    globs: dict = {"__name__": "__docs__"}
    with tempfile.TemporaryDirectory(prefix="reconrisk-docs-") as tmp:
        cwd = Path(tmp)
        for shared in EXAMPLE_DIRS:
            (cwd / shared).parent.mkdir(parents=True, exist_ok=True)
            (cwd / shared).symlink_to(ROOT / shared)
        for block in blocks(path):
            if block.title and block.lang not in ("console", "pycon"):
                outcomes.append(_check_shown_file(block))
                continue
            if block.lang not in ("console", "pycon"):
                continue
            outcome = _unmet(block, done)
            if outcome is None and block.lang == "console":
                outcome = _run_console(block, cwd, slow)
            elif outcome is None:
                outcome = _run_pycon(block, cwd, globs, slow)
            outcomes.append(outcome)
            if block.id:
                done[block.id] = outcome
    return outcomes


def _check_shown_file(block: Block) -> Outcome:
    """A titled block is a file of the repository, shown as it is."""
    target = (ROOT / block.title).resolve()
    if not target.is_relative_to(ROOT) or not any(target.is_relative_to(ROOT / d) for d in EXAMPLE_DIRS):
        return Outcome(block, "failed", f"{block.where}: title={block.title!r} must name a file under "
                                        f"{' or '.join(d + '/' for d in EXAMPLE_DIRS)} (the repository's example files)")
    if not target.is_file():
        return Outcome(block, "failed", f"{block.where}: the page shows {block.title} but the repository lacks it; "
                                        "add the file, so a reader need not type it in")
    shown = "\n".join(block.lines).rstrip("\n")
    if target.read_text(encoding="utf-8").rstrip("\n") != shown:
        return Outcome(block, "failed", f"{block.where}: the block differs from {block.title} in the repository")
    return Outcome(block, "ok")


def _unmet(block: Block, done: dict[str, Outcome]) -> Outcome | None:
    """The block's outcome when a requirement is not met (a module missing, an earlier block not run), else None."""
    import importlib.util

    modules = [m for m in block.requires() if not m.startswith("#")]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    reasons = [f"needs {', '.join(missing)}"] if missing else []
    for name in (r[1:] for r in block.requires() if r.startswith("#")):
        if name not in done:
            return Outcome(block, "failed", f"{block.where}: requires #{name}, but no earlier block of the page "
                                            f"declares <!-- docs: id {name} -->")
        dep = done[name]
        if dep.status == "skipped":
            reasons.append(f"needs #{name}, which was skipped ({dep.message})")
        elif dep.status == "parsed":
            reasons.append(f"needs #{name}, which was only parsed (slow; RECONRISK_DOCS_SLOW=1 runs it)")
        elif dep.status == "failed":
            reasons.append(f"needs #{name}, which failed")
    return Outcome(block, "skipped", "; ".join(reasons)) if reasons else None


def _run_console(block: Block, cwd: Path, slow: bool) -> Outcome:
    try:
        commands = console_commands(block)
    except ValueError as exc:
        return Outcome(block, "failed", str(exc))
    if block.slow and (block.parse_only or not slow):
        for c in commands:
            try:
                with _terminal(cwd):  # option callbacks (e.g. --out checks) act in the page's directory
                    parse_command(c.argv)
            except Exception as exc:
                return Outcome(block, "failed", f"{block.where}: `{c.argv_text}` does not parse: {exc}")
        return Outcome(block, "parsed")
    problems, actual = [], []
    for c in commands:
        rc, text = run_command(c.argv, cwd)
        actual.append(text)
        if block.slow and not normalise(c.expected):  # a slow command shown without its output
            if rc != 0:
                problems.append(f"{block.where}: `{c.argv_text}` exits {rc}:\n{text}")
            continue
        if not matches(c.expected, text.split("\n"), *block.tolerance):
            problems.append(f"{block.where}: `{c.argv_text}` (exit {rc}) prints something else:\n{diff(c.expected, text.split(chr(10)))}")
    return Outcome(block, "failed" if problems else "ok", "\n\n".join(problems), actual)


def _run_pycon(block: Block, cwd: Path, globs: dict, slow: bool) -> Outcome:
    if block.slow and (block.parse_only or not slow):
        for ex in pycon_examples(block):
            compile(ex.source, block.where, "single")
        return Outcome(block, "parsed")
    problems, actual = [], []
    for ex in pycon_examples(block):
        got = run_example(ex, globs, cwd)
        actual.append(got)
        if not pycon_matches(ex.want, got, *block.tolerance):
            problems.append(f"{block.where}+{ex.lineno}: `{ex.source.strip()}`\nexpected:\n{ex.want}got:\n{got}")
    return Outcome(block, "failed" if problems else "ok", "\n\n".join(problems), actual)


# -- refreshing the expected outputs ------------------------------------------------------


def refreshed_text(path: Path, outcomes: list[Outcome]) -> str:
    """The page with every executed block's expected output replaced by what it printed now."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for outcome in sorted(outcomes, key=lambda o: -o.block.start):
        block = outcome.block
        if outcome.status not in ("ok", "failed") or not outcome.actual:
            continue
        new: list[str] = []
        if block.lang == "console":
            for c, text in zip(console_commands(block), outcome.actual):
                new += c.source
                if block.slow and not normalise(c.expected):
                    continue
                new += c.expected if matches(c.expected, text.split("\n"), *block.tolerance) else normalise_keep(text)
        else:
            src = block.lines
            examples = pycon_examples(block)
            for ex, got in zip(examples, outcome.actual):
                n = ex.source.count("\n")
                new += src[ex.lineno : ex.lineno + n]
                new += ex.want.rstrip("\n").split("\n") if (ex.want and pycon_matches(ex.want, got, *block.tolerance)) else (
                    [ln.rstrip() for ln in got.rstrip("\n").split("\n")] if got.strip() else [])
        indent = len(lines[block.start - 2]) - len(lines[block.start - 2].lstrip(" "))
        new = [(" " * indent + ln) if ln else ln for ln in new]
        lines[block.start - 1 : block.start - 1 + len(block.lines)] = new
    return "\n".join(lines)


def normalise_keep(text: str) -> list[str]:
    """Printed text as it goes into a page: trailing spaces and blank lines dropped, durations kept."""
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


if __name__ == "__main__":  # quick look: python3.11 tools/docs_check.py [--slow] [PAGE ...]
    slow_run = "--slow" in sys.argv[1:]
    pages = [Path(p).resolve() for p in sys.argv[1:] if not p.startswith("--")] or doc_files()
    bad = 0
    for page in pages:
        for o in run_page(page, slow=slow_run):
            print(f"{o.status:8s} {o.block.where}")
            if o.status == "failed":
                bad += 1
                print(o.message)
    sys.exit(1 if bad else 0)
