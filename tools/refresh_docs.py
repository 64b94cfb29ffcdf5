"""Refresh the expected outputs shown in the README and the documentation.

    python3.11 tools/refresh_docs.py              # every page; slow blocks are left as they are
    python3.11 tools/refresh_docs.py --slow       # also rerun the slow ones (the full audit: minutes)
    python3.11 tools/refresh_docs.py docs/how-to/calibrate.md

Each executable block (see tools/docs_check.py) is run as tests/test_docs.py
runs it, and its expected output is replaced by what it prints now. An
expected output that still matches (a trimmed ``...`` table included, numbers
within the tolerance ``docs_check`` states) is kept as written, so only what changed is rewritten: review the diff
(``git diff README.md docs/``) before committing; a trimmed output that no
longer matches comes back in full, to be trimmed again by hand.
Run it with the sources you mean to document: ``PYTHONPATH=src``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docs_check  # noqa: E402


def main(argv: list[str]) -> int:
    slow = "--slow" in argv
    pages = [Path(a).resolve() for a in argv if not a.startswith("--")] or docs_check.doc_files()
    changed = 0
    for page in pages:
        outcomes = docs_check.run_page(page, slow=slow)
        old = page.read_text(encoding="utf-8")
        new = docs_check.refreshed_text(page, outcomes)
        for o in outcomes:
            if o.status == "skipped":
                print(f"skipped  {o.block.where}: {o.message}")
            elif o.status == "parsed":
                print(f"kept     {o.block.where} (slow; --slow reruns it)")
        if new != old:
            page.write_text(new, encoding="utf-8")
            changed += 1
            print(f"updated  {page.relative_to(docs_check.ROOT)}")
    print(f"{changed} page(s) updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
