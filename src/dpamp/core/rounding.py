"""Outward rounding: floats moved up by a counted number of ulps (an upper bound computed to
within that many ulps of the real value stays an upper bound), and printing proven numbers with
decimal rounding *outwards* (an upper bound up, a lower bound down at the printed precision), so
a number copied from the output is still proven."""
from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction

import numpy as np


#: the smallest positive double: the upper bound reported for a delta below the double range
#: (a proven bound that is not 0; delta = 0 is claimed only where it is exact)
TINY = 5e-324


def ulps_up(x, ulps: int = 4):
    """x moved up by ``ulps`` units in the last place (x itself where it is 0, inf or NaN): an
    upper bound of any real within ``ulps`` ulps of x. Vectorised."""
    a = np.asarray(x, dtype=float)
    out = np.where(np.isfinite(a) & (a != 0), a + ulps * np.spacing(np.abs(a)), a)
    return float(out) if out.ndim == 0 else out


def ulps_down(x, ulps: int = 4):
    """x moved down by ``ulps`` units in the last place, not below 0 (a lower bound of any
    non-negative real within ``ulps`` ulps of x). Vectorised."""
    a = np.asarray(x, dtype=float)
    out = np.where(np.isfinite(a) & (a != 0), np.maximum(a - ulps * np.spacing(np.abs(a)), 0.0),
                   a)
    return float(out) if out.ndim == 0 else out


def onto_levels(values, count: int, upper: bool):
    """``values`` with at most ``count`` distinct entries: each moved up (``upper``) or down to
    one of ``count`` of the distinct values themselves (spread evenly over their sorted list,
    both extremes kept), so that a plan of steps at these values still dominates (up) or is
    dominated by (down) the one it replaces, with at most ``count`` distinct parts."""
    v = np.asarray(values, dtype=float)
    distinct = np.unique(v)
    if distinct.size <= count:
        return v
    levels = distinct[np.linspace(0, distinct.size - 1, count).round().astype(int)]
    if upper:
        return levels[np.searchsorted(levels, v, side="left")]
    return levels[np.searchsorted(levels, v, side="right") - 1]


def weighted_sum_up(pairs) -> float:
    """sum of count x value over (count, value) pairs, summed exactly (rationals) and rounded
    up to a float; inf if any value is inf. A float sum can fall just below the exact one
    (3 x 0.7 gives 2.0999999999999996 < 3 x float(0.7)); exact sums stay exact."""
    total = Fraction(0)
    for count, value in pairs:
        if not math.isfinite(value):
            return math.inf
        total += int(count) * Fraction(value)
    up = float(total)
    return up if Fraction(up) >= total else math.nextafter(up, math.inf)


def fmt(x: float) -> str:
    """A number as given, in the one format every output uses (the command line, ``str`` of a
    Guarantee, reports, Markdown, errors): its shortest round-trip digits, fixed-point from
    1e-4 up, else an unpadded exponent -- ``1e-5``, ``2.5e-7``, ``0.001``, ``60``, ``1e+15``
    (Python's ``:g`` writes ``1e-05``; ``round_up``/``round_down`` use the same layout)."""
    if not math.isfinite(x):
        return "∞" if x > 0 else "-∞" if x < 0 else "nan"
    if x == 0:
        return "0"
    return _layout(Decimal(repr(float(x))).normalize(), 15)


def _layout(q: Decimal, digits: int) -> str:
    """A normalised decimal as text: scientific (``1e-5``, ``1.23e+20``) below 1e-4 or from
    10^digits up, else fixed-point."""
    if q.adjusted() >= digits or q.adjusted() < -4:
        return f"{q:e}"
    return f"{q:f}"


def round_up(x: float, digits: int = 4) -> str:
    """x rounded *up* to ``digits`` significant digits (for upper bounds)."""
    return _round(x, digits, True)


def round_down(x: float, digits: int = 4) -> str:
    """x rounded *down* to ``digits`` significant digits (for lower bounds)."""
    return _round(x, digits, False)


def _round(x, digits, up: bool) -> str:
    """Decimal rounding of x's shortest round-trip representation ``repr(x)`` (exact decimal
    arithmetic, no float on the way). repr(x) is within half an ulp (1.1e-16 relative) of x,
    far inside the rounding margins the methods add to their bounds, and it keeps an input
    such as 0.1 printed as 0.1 rather than as the binary float's 0.1000000000000000055."""
    if x is None:
        return ""
    if not math.isfinite(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    d = Decimal(repr(float(x)))
    exp = d.adjusted() - digits + 1
    q = d.quantize(Decimal(1).scaleb(exp), rounding=ROUND_CEILING if up else ROUND_FLOOR)
    return _layout(q.normalize(), digits)
