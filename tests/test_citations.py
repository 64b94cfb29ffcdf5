"""Users know the papers by their authors: no "seed 000" … "seed 004" (our file numbers) anywhere a user reads.

Docstrings and comments count (they become API docs), so the whole of ``src/`` is checked, plus README.md and
docs/ when present. ``tools/cite_papers.py`` rewrites the old spelling mechanically.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"\bseeds?(?:[ _-]?|\s*\n[\s#]*)00[0-4]\b", re.IGNORECASE)
SUFFIXES = {".py", ".md", ".toml", ".txt", ".html", ".css", ".js", ".rst", ".cfg", ".yml", ".yaml"}


def _src_files():
    return [p for p in (ROOT / "src").rglob("*") if p.suffix in SUFFIXES]


def _doc_files():
    out = [ROOT / "README.md"] if (ROOT / "README.md").exists() else []
    if (ROOT / "docs").is_dir():
        out += [p for p in (ROOT / "docs").rglob("*") if p.suffix in SUFFIXES]
    return out


def hits(paths) -> list[str]:
    out = []
    for p in paths:
        text = p.read_text(encoding="utf-8", errors="replace")
        name = p.relative_to(ROOT) if p.is_relative_to(ROOT) else p
        for m in PATTERN.finditer(text):  # on the whole text: a citation may be broken across lines
            i = text.count("\n", 0, m.start()) + 1
            out.append(f"{name}:{i}: {' '.join(m.group().split())}")
    return out


def test_no_file_numbers_for_papers_in_the_package():
    found = hits(_src_files())
    assert not found, ("cite the paper by its authors (python3 tools/cite_papers.py does it):\n" + "\n".join(found))


def test_no_file_numbers_for_papers_in_the_docs():
    found = hits(_doc_files())
    assert not found, ("cite the paper by its authors (python3 tools/cite_papers.py README.md docs does it):\n"
                       + "\n".join(found))


def test_the_check_can_fail(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text('"""ReRo (seed 000, Cor. 4)."""\n# Seed-003 bound\nok = "seed 0001, seeds 2"\n# seed\n#   004\n')
    assert [h.split(":")[1] for h in hits([bad])] == ["1", "2", "4"]
