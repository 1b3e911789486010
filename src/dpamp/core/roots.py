"""Bracketing root finders for monotone predicates: bisection of a real bracket (one target, or
many at once, element by element), bisection of an integer bracket, and the geometric growth
that finds a bracket in the first place.

Every function here keeps one invariant, stated in its docstring: the bracket (lo, hi) has
pred(lo) false and pred(hi) true, and an end is only ever replaced by a point at which pred
was evaluated on that end's side. A caller that certifies a bound keeps the end whose side it
needs (hi where pred says "the bound holds", lo where it says "the bound fails"), and the
answer is proven by that evaluation, never by an interpolation between the ends.

The midpoint is 0.5 * (lo + hi) throughout, and the number of steps is set by the caller, not
by a clock: the same inputs give the same bracket bit for bit, whatever the machine's speed.
"""
from __future__ import annotations

import math

import numpy as np


def bisect(pred, lo: float, hi: float, *, iterations: int, rtol: float | None = None,
           atol: float = 0.0) -> tuple[float, float]:
    """Bisect the bracket (lo, hi) of a monotone predicate, pred(lo) false and pred(hi) true.

    Each step evaluates pred at mid = 0.5 * (lo + hi) and moves the end on mid's side there:
    hi = mid where pred(mid), lo = mid otherwise, so the invariant holds after every step.
    lo < hi is not needed (a bracket whose true end is the lower one bisects the same way)
    unless ``rtol`` is given.

    At most ``iterations`` steps (exactly that many without ``rtol``), each halving
    |hi - lo| (up to the rounding of mid). With ``rtol`` (and ``atol``), the steps stop
    earlier, checked before each step, once hi - lo <= rtol * hi + atol; this test reads
    lo <= hi (a reversed bracket counts as narrow enough). Returns (lo, hi)."""
    for _ in range(iterations):
        if rtol is not None and hi - lo <= rtol * hi + atol:
            break
        mid = 0.5 * (lo + hi)
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def bisect_array(pred, lo, hi, *, iterations: int, where=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bisect` of many brackets at once: ``pred`` maps an array of points to an array of
    booleans, element by element; pred(lo) false and pred(hi) true in every element (lo < hi is
    not needed). Exactly ``iterations`` steps; each evaluates pred at mid = 0.5 * (lo + hi) for
    every element and moves each element's end on mid's side there, so the invariant holds
    element by element and the width of each bracket halves at each step (up to the rounding of
    mid). Where ``where`` is false an element's bracket is left as it is (pred is still
    evaluated there: an element never depends on which others are searched). Returns new
    arrays (lo, hi)."""
    lo = np.array(lo, dtype=float)
    hi = np.array(hi, dtype=float)
    live = True if where is None else np.asarray(where, dtype=bool)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        up = np.asarray(pred(mid), dtype=bool)
        hi = np.where(live & up, mid, hi)
        lo = np.where(live & ~up, mid, lo)
    return lo, hi


def bisect_int(pred, lo: int, hi: int) -> tuple[int, int]:
    """Bisect an integer bracket lo < hi of a monotone predicate, pred(lo) false and pred(hi)
    true, at mid = (lo + hi) // 2, until hi = lo + 1: then lo is the largest integer with pred
    false and hi the smallest with pred true. Between floor(log2(hi - lo)) and
    ceil(log2(hi - lo)) evaluations. Returns (lo, hi)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def expand(pred, lo, hi, *, factor: float = 2.0, limit: float = math.inf):
    """Grow a bracket geometrically until it holds the threshold: while pred(hi) is false,
    (lo, hi) -> (hi, hi * factor). On return pred(hi) is true, and pred(lo) is false where lo
    is a point this moved (the ``lo`` given is kept only when pred(hi) holds at once; it is
    not evaluated).

    The growth stops as well once |hi| exceeds ``limit`` after a step; hi is then that first
    point past the limit, not evaluated, and the caller tells the two ends apart by
    |hi| > limit. factor < 1 shrinks towards 0 instead (a bracket of a predicate true near 0).
    Returns (lo, hi)."""
    while not pred(hi):
        lo, hi = hi, hi * factor
        if abs(hi) > limit:
            break
    return lo, hi


__all__ = ["bisect", "bisect_array", "bisect_int", "expand"]
