"""Upper bounds on a convex function between points where it is bounded: chords.

If f is convex on [x_a, x_b] and u_a >= f(x_a), u_b >= f(x_b), then for x in between
f(x) <= ((x_b - x) f(x_a) + (x - x_a) f(x_b)) / (x_b - x_a) <= the same with u_a, u_b. The
allocation curves that cost most per point are convex in x (a hockey-stick curve
E[(L - x)_+] is, and so is every sum of calls C(t x - y) in :mod:`.tail`), so where they are
asked at points much denser than their own resolution (a plan whose loss grid other parts
set), they are evaluated at a subset and bounded in between by chords.
"""
from __future__ import annotations

import math

import numpy as np

_U = 2.0 ** -53


def chord_points(x: np.ndarray, log_step: float):
    """Indices of increasing positive ``x`` at least ``log_step`` apart in log x, the first and
    last included; None where that would not halve the points (or x is not increasing)."""
    n = x.size
    if n < 8 or not (x[0] > 0 and np.all(np.diff(x) > 0)):
        return None
    lx = np.log(x)
    k = int(math.ceil((lx[-1] - lx[0]) / log_step))
    if 2 * (k + 2) > n:
        return None
    at = np.searchsorted(lx, lx[0] + log_step * np.arange(k + 1), side="left")
    return np.unique(np.concatenate([[0], np.minimum(at, n - 1), [n - 1]]))


def chords(x: np.ndarray, at: np.ndarray, u: np.ndarray) -> np.ndarray:
    """At every x, the chord through (x[at], u) of the two evaluated points around it (u >= 0
    bounds a convex function at x[at], so the chord bounds it in between; ``at`` increasing,
    its first and last the ends of x). The chord's value lies between its ends: rounding w and
    the products costs at most 4 ulps of the larger end, charged."""
    xa = x[at]
    j = np.clip(np.searchsorted(xa, x, side="right") - 1, 0, at.size - 2)
    a, b = u[j], u[j + 1]
    w = np.clip((x - xa[j]) / (xa[j + 1] - xa[j]), 0.0, 1.0)
    with np.errstate(invalid="ignore"):
        out = (a + w * (b - a) + 4 * _U * np.maximum(a, b)) * (1 + 2 * _U)
    # an unbounded end leaves the chord unbounded (inf - inf is nan)
    out = np.where(np.isnan(out), np.inf, out)
    out[at] = u                                   # the evaluated points keep their bounds
    return out


__all__ = ["chord_points", "chords"]
