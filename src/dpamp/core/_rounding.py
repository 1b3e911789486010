"""Printing proven numbers: decimal rounding *outwards* (an upper bound up, a lower bound down
at the printed precision), so a number copied from the output is still proven."""
from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal


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
    if q.adjusted() >= digits or q.adjusted() < -5:
        return f"{q.normalize():e}"
    return f"{q.normalize():f}"
