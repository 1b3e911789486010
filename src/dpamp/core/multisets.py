"""Count vectors: every way c draws fall into m kinds."""
from __future__ import annotations

import numpy as np

__all__ = ["count_vectors"]


def count_vectors(m: int, c: int) -> np.ndarray:
    """Every count vector (n_1..n_m) >= 0 with sum c, as the rows of an int64 array of
    C(c + m - 1, m - 1) rows (stars and bars), in decreasing lexicographic order (n_1 = c
    first), built column by column without recursion."""
    if m < 1:
        raise ValueError(f"m must be at least 1 (got {m})")
    rows = np.zeros((1, 0), dtype=np.int64)
    rem = np.array([c], dtype=np.int64)
    for _ in range(m - 1):
        reps = rem + 1
        parent = np.repeat(np.arange(rows.shape[0]), reps)
        # each parent's next coordinate runs from what is left down to 0
        first = rem[parent] - (np.arange(parent.size) - np.repeat(np.cumsum(reps) - reps, reps))
        rows = np.column_stack([rows[parent], first])
        rem = rem[parent] - first
    return np.column_stack([rows, rem])
