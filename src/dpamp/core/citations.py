"""Sources in the words a paper's reader knows: authors, year and result.

Code, docstrings and everything a user reads (a Guarantee's ``source`` and ``note``, the method
list, reports, JSON) name the five papers dpamp implements by authors and year
(``Steinke 2022, Prop. 7``). :func:`cite` still translates the papers' three-digit file
numbers (docs/papers/index.md maps them) where a text written with them reaches it, e.g. a
ledger saved by an older version.
"""
from __future__ import annotations

import re

#: the papers by the number the code cites them by, and the other short keys it uses
PAPERS = {
    "000": "Balle, Barthe & Gaboardi 2018",
    "001": "Imola & Chaudhuri 2021",
    "002": "Balle, Barthe, Gaboardi & Geumlek 2019",
    "003": "Wang, Balle & Kasiviswanathan 2019",
    "004": "Steinke 2022",
}

# a paper number as a word; what follows it (a result's name) is joined with a comma
_NUMBER = re.compile(r"(?<![\w.])(00[0-4])(?![\w.])(\s+(?=[A-Za-z]))?")


def cite(text: str) -> str:
    """``text`` with every paper number (a key of PAPERS, as a word) replaced by its authors and
    year; a result named after it is joined with a comma (number, space, "Prop. 7" becomes
    "Steinke 2022, Prop. 7" for Steinke's key), a number alone in brackets keeps them."""
    if not text or "00" not in text:
        return text
    return _NUMBER.sub(lambda m: PAPERS[m.group(1)] + (", " if m.group(2) else ""), text)
