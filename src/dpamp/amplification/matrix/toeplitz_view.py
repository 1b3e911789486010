"""|C| of a lower-triangular Toeplitz C read entry by entry, without the dense n x n array.

The conditional-composition bounds (:mod:`.conditional`, :mod:`.bins`) read C through a few
index patterns: a row, a row's entries at some columns, a block of rows by columns, and the
trailing square C[lo:, lo:]. For a Toeplitz C (entry c_{i-j} for i >= j, 0 above the
diagonal; banded and BLT strategies among them) each is computed from the coefficients, so
memory grows like n (a row), not n^2 (8 n^2 bytes: 800 MB at n = 10^4). The values are the
same numbers as the dense array's, so the bounds are the same bits.
"""
from __future__ import annotations

import numpy as np


class LowerToeplitzAbs:
    """|C| for the Toeplitz coefficients ``coeffs`` (c_0 .. c_{m-1}, zero beyond) of an n x n
    lower-triangular C, with the columns where ``mask`` is False set to 0 (cyclic Poisson: the
    steps a record is never sampled in). Indexing as numpy does for a 2-D array with
    ``a[i]``, ``a[i, j]``, ``a[i, cols]``, ``a[rows, j]``, ``a[rows, cols]`` (outer, where
    ``rows`` or ``cols`` is a slice) and ``a[lo:, lo:]`` (a view of the same kind)."""

    ndim = 2

    def __init__(self, coeffs, n: int, mask=None):
        c = np.abs(np.asarray(coeffs, dtype=float))
        if c.ndim != 1 or not np.isfinite(c).all():
            raise ValueError("strategy: the Toeplitz coefficients must be finite numbers")
        nz = np.flatnonzero(c)
        self.coeffs = c[:int(nz[-1]) + 1] if nz.size else c[:1]
        self.n = int(n)
        self.mask = np.ones(self.n, dtype=bool) if mask is None else np.asarray(mask, bool)
        if self.mask.shape != (self.n,):
            raise ValueError(f"mask must hold one boolean per step ({self.n})")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def with_mask(self, mask) -> "LowerToeplitzAbs":
        return LowerToeplitzAbs(self.coeffs, self.n, self.mask & np.asarray(mask, bool))

    def _index(self, k):
        """(indices, scalar?) of one axis' key."""
        if isinstance(k, slice):
            return np.arange(*k.indices(self.n)), False
        if np.ndim(k) == 0:
            i = int(k)
            if not -self.n <= i < self.n:
                raise IndexError(i)
            return np.array([i % self.n]), True
        return np.asarray(k, dtype=np.int64) % self.n, False

    def __getitem__(self, key):
        r, c = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(r, slice) and isinstance(c, slice) and r == c and r.step in (None, 1) \
                and r.stop is None:
            lo = r.indices(self.n)[0]          # shift invariance: C[lo:, lo:] is C of n - lo
            return LowerToeplitzAbs(self.coeffs, self.n - lo, self.mask[lo:])
        ri, rs = self._index(r)
        ci, cs = self._index(c)
        if not (rs or cs or isinstance(r, slice) or isinstance(c, slice)):
            raise NotImplementedError("element-wise fancy indexing of a Toeplitz view")
        d = ri[:, None] - ci[None, :]
        inside = (d >= 0) & (d < self.coeffs.size)
        vals = np.where(inside, self.coeffs[np.clip(d, 0, self.coeffs.size - 1)], 0.0)
        vals = np.where(self.mask[ci][None, :], vals, 0.0)
        if rs and cs:
            return float(vals[0, 0])
        if rs:
            return vals[0]
        if cs:
            return vals[:, 0]
        return vals

    def dense(self) -> np.ndarray:
        """The whole array (tests; small n)."""
        return self[slice(0, self.n), slice(0, self.n)]
