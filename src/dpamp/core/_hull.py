"""The lower convex hull of points sorted by x (Andrew's monotone chain), shared by the PLD's
optimistic discretisation and the CGF projection of user RDP curves (003 Prop. 24)."""
from __future__ import annotations

import numpy as np


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of the points (x_i, y_i), x increasing.

    A point is dropped when the turn test (x_b - x_a)(y_i - y_a) - (y_b - y_a)(x_i - x_a) <= 0;
    in floating point a point within rounding of a hull edge may go either way, so the hull
    returned can be below the exact one by that much (callers say why that is safe for them).

    Vectorised passes: every point whose turn with its current neighbours is not convex is
    removed at once (a vertex of the lower hull lies strictly below the chord of any two points
    on either side of it, so it is never removed), until all turns are convex, which is then
    the lower hull. Non-convexities are local in practice (a few passes); after 64 passes the
    rest is finished by Andrew's monotone chain on the points left."""
    n = x.size
    keep = np.arange(n)
    for _ in range(64):
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
    return keep[_monotone_chain(x[keep], y[keep])]


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
