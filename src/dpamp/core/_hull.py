"""The lower convex hull of points sorted by x (Andrew's monotone chain), shared by the PLD's
optimistic discretisation and the CGF projection of user RDP curves (003 Prop. 24)."""
from __future__ import annotations

import numpy as np


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of the points (x_i, y_i), x increasing.

    A point is dropped when the turn test (x_b - x_a)(y_i - y_a) - (y_b - y_a)(x_i - x_a) <= 0;
    in floating point a point within rounding of a hull edge may go either way, so the hull
    returned can be below the exact one by that much (callers say why that is safe for them).
    The chain keeps every point of a prefix whose consecutive turns are all convex (the same
    test, evaluated vectorised in the same floating-point operations) and starts after it: the
    usual non-convexity is a few points at one end of a long convex polygon."""
    n = x.size
    if n >= 3:
        cross = ((x[1:-1] - x[:-2]) * (y[2:] - y[:-2]) - (y[1:-1] - y[:-2]) * (x[2:] - x[:-2]))
        bad = np.nonzero(cross <= 0)[0]
        if bad.size == 0:
            return np.arange(n)
        start = int(bad[0]) + 2
    else:
        start = 0
    hull: list[int] = list(range(start))
    for i in range(start, n):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a]) <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.array(hull, dtype=int)
