"""Rewrite the papers' file numbers (000-004) in the user-facing docs as author-year names.

    python tools/rename_paper_ids.py docs/pld.md docs/rdp.md ...

"paper 003" becomes a link to the paper's page, "003 Thm 19" becomes "Wang et al. 2019 Thm 19".
The code's docstrings name the papers the same way; docs/papers/index.md maps the numbers. Idempotent; the rows of
a table that maps the numbers themselves (lines starting "| 00") are left alone."""
from __future__ import annotations

import re
import sys
from pathlib import Path

#: number -> (author-year name, page under docs/papers/)
PAPERS = {
    "000": ("Balle et al. 2018", "balle-barthe-gaboardi-2018.md"),
    "001": ("Imola & Chaudhuri 2021", "imola-chaudhuri-2021.md"),
    "002": ("Balle et al. 2019", "balle-barthe-gaboardi-geumlek-2019.md"),
    "003": ("Wang et al. 2019", "wang-balle-kasiviswanathan-2019.md"),
    "004": ("Steinke 2022", "steinke-2022.md"),
}
_REF = (r"Thms?\.?|Theorems?|Lemmas?|Props?\.?|Propositions?|Cor\.|Corollary|Algs?\.?|Algorithms?"
        r"|Def\.|Definitions?|eqs?\.|Remark|Examples?|Sec\.|Section|§|footnote|fn\.|App\.")
_PAPER = re.compile(r"\bpapers? (00[0-4])\b")
_BARE = re.compile(r"(?<![\w./-])(00[0-4])(?=(?:,? (?:" + _REF + r"))|[,;)]|$| and | \()", re.M)


def rename(text: str, prefix: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("| 00"):
            out.append(line)
            continue
        line = _PAPER.sub(lambda m: f"[{PAPERS[m[1]][0]}]({prefix}{PAPERS[m[1]][1]})", line)
        line = _BARE.sub(lambda m: PAPERS[m[1]][0], line)
        out.append(line)
    return "".join(out)


def main(argv: list[str]) -> int:
    for name in argv:
        path = Path(name)
        prefix = "papers/" if path.parent.name == "docs" else ""
        text = path.read_text(encoding="utf-8")
        new = rename(text, prefix)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"renamed paper numbers in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
