"""The lower convex hull of points sorted by x, shared by the PLD's optimistic discretisation
and the CGF projection of user RDP curves (Wang et al. 2019, Prop. 24).

The hull is the graph of the greatest convex minorant of the polygon through the points, whose
slope on each segment is the isotonic (non-decreasing) regression of the segments' slopes
weighted by their lengths (Barlow, Bartholomew, Bremner and Brunk, *Statistical Inference under
Order Restrictions*, 1972, Ch. 1: the isotonic regression is the left derivative of the
greatest convex minorant of the cumulative sum diagram; here the diagram is the polygon
itself). scipy's pool-adjacent-violators (``scipy.optimize.isotonic_regression``, compiled)
gives its blocks in O(n); the hull's vertices are the blocks' ends."""
from __future__ import annotations

from typing import Any

import numpy as np


def _isotonic_regression():
    """scipy's pool-adjacent-violators (scipy >= 1.12), imported when first needed (``import
    dpamp`` loads no scipy), or None on an older scipy (the passes and the chain then)."""
    global _ISOTONIC
    if _ISOTONIC is False:
        try:
            from scipy.optimize import isotonic_regression as _ISOTONIC
        except ImportError:                # pragma: no cover - older scipy
            _ISOTONIC = None
    return _ISOTONIC


_ISOTONIC: Any = False      # not imported yet (then scipy's function, or None)


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of the points (x_i, y_i), x increasing.

    A point is dropped when the turn test (x_b - x_a)(y_i - y_a) - (y_b - y_a)(x_i - x_a) <= 0;
    in floating point a point within rounding of a hull edge may go either way, so the hull
    returned can differ from the exact one by that much (callers say why that is safe for them).

    Vectorised passes first: every point whose turn with its current neighbours is not convex
    is removed at once (a vertex of the lower hull lies strictly below the chord of any two
    points on either side of it, so it is never removed); local non-convexities go in a few
    passes. What is left after 4 passes goes to the pool-adjacent-violators blocks of the
    slopes (module doc), whose ends are cleaned by the same passes (a rounding-level tie may
    leave a point on an edge); Andrew's monotone chain finishes only what 64 passes leave."""
    keep = _passes(x, y, np.arange(x.size), 4)
    _isotonic = _isotonic_regression() if keep.size and keep[0] < 0 else None
    if _isotonic is not None:
        k = -keep - 1                       # (not done: the points left, encoded)
        xs, ys = x[k], y[k]
        dx = np.diff(xs)
        with np.errstate(all="ignore"):
            s = np.diff(ys) / dx
        if np.all(np.isfinite(s)) and np.all(dx > 0):
            blocks = _isotonic(s, weights=dx, increasing=True).blocks
            keep = -k[np.asarray(blocks, dtype=np.int64)] - 1
    if keep.size and keep[0] < 0:
        keep = _passes(x, y, -keep - 1, 64)
    if keep.size and keep[0] < 0:
        k = -keep - 1
        return k[_monotone_chain(x[k], y[k])]
    return keep


def _passes(x, y, keep, passes):
    """Up to ``passes`` removal passes over the points ``keep``; returns the hull's indices
    when every turn is convex, else the indices left encoded as -i - 1 (all negative)."""
    for _ in range(passes):
        if keep.size < 3:
            return keep
        xs, ys = x[keep], y[keep]
        cross = ((xs[1:-1] - xs[:-2]) * (ys[2:] - ys[:-2])
                 - (ys[1:-1] - ys[:-2]) * (xs[2:] - xs[:-2]))
        bad = cross <= 0
        if not bad.any():
            return keep
        mask = np.ones(keep.size, dtype=bool)
        mask[1:-1] = ~bad
        keep = keep[mask]
    if keep.size < 3:
        return keep
    return -keep - 1


def _monotone_chain(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain (the lower half), in Python: for what the passes leave."""
    hull: list[int] = []
    for i in range(x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a]) <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.array(hull, dtype=int)
