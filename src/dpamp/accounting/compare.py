"""Every applicable accounting method on one plan, side by side: which theorem each number
comes from, and how tight each is.

    dp.compare(dp.PureDP(0.1) * 100, delta=1e-6)
    -> [Guarantee(method="kov", ...), Guarantee(method="advanced", ...), ...]
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable

from ..core import validate as V
from ..core.guarantee import Guarantee
from ..mechanisms.base import check_mechanism

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism

__all__ = ["compare", "compare_rows"]


def compare_rows(x, delta: float, methods=None, **options):
    """[(method name, Guarantee or error text, seconds)] for every method that applies to ``x``
    (best rank first), or for the given method names. A method that fails (ValueError /
    NotImplementedError, e.g. delta below the parts' deltas) yields its error text."""
    from . import registry as M
    check_mechanism(x, "x")
    d = V.delta(delta, allow_zero=True)
    names = M.available(x) if methods is None else list(methods)
    rows = []
    for name in names:
        t0 = time.perf_counter()
        try:
            g = x.epsilon(d, method=name, **options)
        except (ValueError, NotImplementedError) as e:
            g = str(e)
        rows.append((name, g, time.perf_counter() - t0))
    return rows


def compare(x: Mechanism, delta: float, methods: Iterable[str] | None = None,
            **options: Any) -> list[Guarantee]:
    """epsilon(delta) of ``x`` by every applicable method, one Guarantee per method (its
    ``.method`` says which), best-ranked first; methods that fail on this input are skipped
    (``compare_rows`` keeps their error text)."""
    return [g for _, g, _ in compare_rows(x, delta, methods, **options)
            if isinstance(g, Guarantee)]
