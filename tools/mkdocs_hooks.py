"""MkDocs hooks: pages generated at build time from the code, so that they cannot drift.

* ``<!-- reconrisk:cli-reference -->`` in a page becomes the reference of every
  ``reconrisk`` command, read from the Typer app itself (``typer.main.get_command``,
  walked command by command): usage, help text, every visible option with its
  type, default and help — the same records ``--help`` prints.
* ``<!-- reconrisk:python-api -->`` becomes one mkdocstrings ``:::`` block per
  name in ``reconrisk.__all__`` (the face), in its order, pointed at the module
  under ``reconrisk._src`` that defines it (the package loads its names lazily,
  which a static reader cannot follow).
* ``<!-- reconrisk:layout -->`` becomes the table of the package's rooms under
  ``_src/``, read from the source tree with ``ast`` (nothing imported): each
  room's files and lines, and the first line of its ``__init__`` docstring;
  then the public modules of the face.

* ``$…$`` (inline) and ``$$…$$`` (a display line) outside code become MathML (``<math>``), written by
  :func:`reconrisk._src.report.mathml.to_mathml` from the same plain-text syntax as the report's formulas
  (``$B_kappa(mu, nu) = inf_eps [e^eps kappa + delta(eps)]$``). Browsers render MathML natively: no MathJax,
  no script, no network. Each formula is swapped for a placeholder before Markdown runs (so ``|``, ``_`` and
  ``*`` inside it never reach the Markdown parser) and put back into the page's HTML.

Also usable without MkDocs: ``python3.11 tools/mkdocs_hooks.py cli`` prints the
generated CLI reference.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

CLI_MARKER = "<!-- reconrisk:cli-reference -->"
API_MARKER = "<!-- reconrisk:python-api -->"
LAYOUT_MARKER = "<!-- reconrisk:layout -->"
PKG = Path(__file__).resolve().parents[1] / "src" / "reconrisk"


def _cell(text: str) -> str:
    """Text fit for a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _anchor(path: list[str]) -> str:
    return "-".join(path).replace("_", "-")


def _command_markdown(cmd, ctx, path: list[str], out: list[str]) -> None:
    depth = len(path)
    title = " ".join(path)
    out.append(f"{'#' * min(depth + 1, 6)} `{title}` {{ #{_anchor(path)} }}\n")
    if cmd.help:
        out.append(cmd.help.strip() + "\n")
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out.append(f"```text\nUsage: {title} {usage}\n```\n")
    rows = []
    for param in cmd.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        kind = "argument" if param.param_type_name == "argument" else ""
        rows.append(f"| `{_cell(names)}`{kind and ' ' + kind} | {_cell(help_text) or '—'} |")
    if rows:
        out.append("| option | meaning |\n|---|---|")
        out.extend(rows)
        out.append("")
    sub = getattr(cmd, "list_commands", None)
    if sub is not None:
        names = [n for n in cmd.list_commands(ctx) if not cmd.get_command(ctx, n).hidden]
        if names:
            out.append("Subcommands: " + ", ".join(f"[`{n}`](#{_anchor(path + [n])})" for n in names) + ".\n")
        for name in names:
            child = cmd.get_command(ctx, name)
            child_ctx = child.context_class(child, info_name=name, parent=ctx)
            _command_markdown(child, child_ctx, path + [name], out)


def cli_markdown() -> str:
    """The reference of every ``reconrisk`` command, generated from the Typer app."""
    import typer.main

    from reconrisk._src.cli import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="reconrisk")
    out: list[str] = []
    _command_markdown(root, ctx, ["reconrisk"], out)
    return "\n".join(out)


def public_names() -> list[tuple[str, str]]:
    """``(name, defining module)`` for every name in ``reconrisk.__all__`` (``__version__`` aside): the face."""
    import reconrisk

    found = []
    for name in reconrisk.__all__:
        if name.startswith("__"):
            continue
        lazy = reconrisk._LAZY.get(name)
        if lazy == "api":  # re-exported by the public entry points: document it where it is defined
            module = getattr(importlib.import_module("reconrisk._src.api"), name).__module__
        elif lazy is not None:
            module = f"reconrisk._src.{lazy}"
        else:
            module = getattr(reconrisk, name).__module__
        found.append((name, module))
    return found


def api_markdown() -> str:
    """mkdocstrings blocks for the face, one per name in the order of ``reconrisk.__all__`` (its groups)."""
    out = []
    for name, module in public_names():
        out.append(f"### `reconrisk.{name}`\n")
        out.append(f"::: {module}.{name}\n    options:\n      show_root_heading: false\n")
    return "\n".join(out)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = re.sub(r":\w+:`~?\.?([^`]+)`", r"`\1`", doc.split("\n\n")[0])  # Sphinx roles → code
    return _cell(first.replace("``", "`")) or "—"


def layout_markdown() -> str:
    """The rooms of ``src/reconrisk/_src`` (first-level packages), the modules beside them, and the public modules
    of the face, read from the tree."""
    private = PKG / "_src"
    out = ["| room | files | lines | what it holds (its `__init__` docstring) |", "|---|---:|---:|---|"]
    for room in sorted(p for p in private.iterdir() if (p / "__init__.py").is_file() and not p.name.startswith("_")):
        files = sorted(room.rglob("*.py"))
        out.append(f"| `_src/{room.name}/` | {len(files)} | {sum(map(_lines, files)):,} | {_summary(room / '__init__.py')} |")
    beside = sorted(p for p in private.glob("*.py"))
    out += ["", "Beside the rooms (the core and the public entry points, under `_src/`):", "",
            "| module | lines | what it holds |", "|---|---:|---|"]
    out += [f"| `_src/{p.name}` | {_lines(p):,} | {_summary(p)} |" for p in beside]
    face = sorted(p for p in PKG.rglob("*.py") if "_src" not in p.relative_to(PKG).parts)
    out += ["", "The face (public; everything else is private):", "",
            "| module | lines | what it holds |", "|---|---:|---|"]
    out += [f"| `{p.relative_to(PKG).as_posix()}` | {_lines(p):,} | {_summary(p)} |" for p in face]
    return "\n".join(out) + "\n"


_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|^(?: {4}|\t).*?$|`[^`\n]+`", re.M | re.S)
_MATH = re.compile(r"\$\$(?=\S)(.+?)(?<=\S)\$\$|(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\w$])")
_PLACEHOLDER = "RECONRISKMATH{}X"
_FORMULAS: dict[str, list[str]] = {}  # page → its formulas' MathML, by placeholder number


def math_markdown(markdown: str, key: str) -> str:
    """``$…$``/``$$…$$`` outside code → placeholders; their MathML is kept for :func:`math_html`."""
    from reconrisk._src.report.mathml import to_mathml

    found = _FORMULAS.setdefault(key, [])

    def swap(m: re.Match) -> str:
        found.append(to_mathml(m.group(1), display=True) if m.group(1) else to_mathml(m.group(2)))
        return _PLACEHOLDER.format(len(found) - 1)

    out, last = [], 0
    for code in _FENCE.finditer(markdown):  # code (fenced, indented, inline) is left as it is
        out.append(_MATH.sub(swap, markdown[last:code.start()]))
        out.append(code.group(0))
        last = code.end()
    out.append(_MATH.sub(swap, markdown[last:]))
    return "".join(out)


def math_html(html: str, key: str) -> str:
    """The placeholders of :func:`math_markdown` → their ``<math>`` elements."""
    found = _FORMULAS.pop(key, [])
    return re.sub(r"RECONRISKMATH(\d+)X", lambda m: found[int(m.group(1))], html)


def on_page_content(html: str, page, config, files) -> str:  # MkDocs hook
    return math_html(html, page.file.src_uri)


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs hook
    markdown = math_markdown(markdown, page.file.src_uri)
    if LAYOUT_MARKER in markdown:
        markdown = markdown.replace(LAYOUT_MARKER, layout_markdown())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_markdown())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_markdown())
    return markdown


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "cli"
    print({"cli": cli_markdown, "api": api_markdown, "layout": layout_markdown}[what]())
