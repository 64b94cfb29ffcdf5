#!/usr/bin/env python3
"""Replace our file numbers for the papers ("seed 000" ... "seed 004") by author citations.

Usage (from the repository root): python3 tools/cite_papers.py [PATH ...]   (default: src examples benchmarks)

"seed 000 Cor. 4" and "seed 000, Cor. 4" become "Hayes, Mahloujifar & Balle 2023, Cor. 4"; "seed 003's" becomes
"Riess et al.'s (2024)". Guo, Karrer, Chaudhuri & van der Maaten 2022 is written in full at its first mention in a
file and "Guo et al. 2022" after it. Idempotent: a second run changes nothing.
"""
import pathlib
import re
import sys

FULL = {"000": ("Hayes, Mahloujifar & Balle", "2023"),
        "001": ("Guo, Karrer, Chaudhuri & van der Maaten", "2022"),
        "002": ("Balle, Cherubin & Hayes", "2022"),
        "003": ("Riess et al.", "2024"),
        "004": ("Biswas et al.", "2024")}
SHORT = {"001": "Guo et al."}
# A locator after the citation ("Thm 2", "§4", "Eq. 3") is separated from the year by a comma.
LOC = (r"(?:Thm|Theorem|Eqs?\b|Cor\b|Corollary|Props?\b|Proposition|Figs?\b|Figure|App\b|Appendix|Alg\b|"
       r"Algorithm|Defs?\b|Definition|Table|Tab\b|§|Sec\b|Section|Lemma|Remark|footnote)")
PAT = re.compile(r"\b[Ss]eed(?:[ -]|[ \t]*\n[ \t#]*)(00[0-4])(?:('s)|(,? (?=" + LOC + r")))?")
SUFFIXES = {".py", ".toml", ".md", ".txt", ".html", ".css", ".js"}


def cite(text: str) -> str:
    seen = set()

    def sub(m):
        n, poss, loc = m.groups()
        who, year = FULL[n]
        if n in seen and n in SHORT:
            who = SHORT[n]
        seen.add(n)
        if poss:
            return f"{who}'s ({year})"
        return f"{who} {year}" + (", " if loc else "")

    return PAT.sub(sub, text)


def main(paths):
    for root in paths or ["src", "examples", "benchmarks"]:
        root = pathlib.Path(root)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES)
        for p in files:
            old = p.read_text(encoding="utf-8")
            new = cite(old)
            if new != old:
                p.write_text(new, encoding="utf-8")
                print(p)


if __name__ == "__main__":
    main(sys.argv[1:])
