"""Strategy matrices C of the matrix mechanism (correlated noise; DP-FTRL / DP-MF).

A matrix-factorisation mechanism releases B (C G + Z) for the workload A = B C (prefix sums,
momentum, ...), G the n x d matrix of the n steps' clipped gradient sums (clipping norm 1) and
Z Gaussian noise of standard deviation z (the noise multiplier) per entry; B is
post-processing, so the privacy is that of C G + Z (Denisov, McMahan, Rush, Smith & Thakurta
2022, "Improved differential privacy for SGD via optimal private linear operators on data
streams"; Choquette-Choo, McMahan, Rush & Thakurta 2023, "Multi-epoch matrix factorization
mechanisms for private machine learning"). A record entering steps pi with gradients g_t
(|g_t| <= 1) moves C G by sum_{t in pi} C[:, t] g_t^T, so everything the accounting needs is
in the columns of C and their Gram matrix X = C^T C.

The strategies here give C by its structure, so that the sensitivity can use it:

- :class:`DenseStrategy`: any real m x n matrix (n steps = columns; m noise rows);
- :class:`Toeplitz`: lower-triangular Toeplitz n x n, C[i, j] = c_{i-j} (:class:`BandedToeplitz`:
  at most ``bands`` non-zero diagonals, Choquette-Choo et al. NeurIPS 2023, "(Amplified) banded
  matrix factorization: a unified approach to private training");
- :class:`BLT`: buffered linear Toeplitz (Dvijotham, McMahan, Pillutla, Steinke & Thakurta,
  "Efficient and near-optimal noise generation for streaming differential privacy", FOCS 2024):
  c_0 = 1, c_k = sum_i omega_i theta_i^(k-1) (k >= 1), buffer decays theta, output scales omega;
- :class:`BinaryTree`: the online binary tree of DP-FTRL (one row per completed dyadic node;
  Kairouz et al. 2021), the C of :class:`~dpamp.TreeAggregation`.

Each gives its column norms, its Gram matrix (dense, memory-checked), its structural band
width of the Gram (X[s, t] = 0 structurally for |s - t| >= ``gram_bands``), its Toeplitz
coefficients where it has them, and ``dense()`` (the C the amplified bounds of
:mod:`dpamp.amplification.matrix` take). Floating point: a strategy given by exact floats
(dense, Toeplitz) has ``coeff_error`` 0; a BLT's coefficients are computed, and
``coeff_error`` bounds the l2 norm of their error (the sensitivity is padded by it).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..core import validate as V
from ..core.memory import memory_limit

__all__ = ["Strategy", "DenseStrategy", "Toeplitz", "BandedToeplitz", "BLT", "BinaryTree",
           "as_strategy"]

_U = 2.0 ** -53


def _check_bytes(what: str, nbytes: int) -> None:
    """Refuse an allocation beyond the memory budget (dpamp.core.memory), naming it."""
    if nbytes > memory_limit():
        raise MemoryError(f"{what} needs {nbytes / 2**20:.0f} MiB, over the memory budget "
                          f"({memory_limit() / 2**20:.0f} MiB; DPAMP_MAX_MEMORY raises it)")


class Strategy:
    """Base of the strategy matrices; subclasses are frozen dataclasses."""

    #: steps (columns of C)
    n: int
    #: an absolute bound on the l2 norm of the error of the computed Toeplitz coefficients
    #: (0 where the matrix is given exactly)
    coeff_error: float = 0.0

    def column_norms_sq(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def dense(self) -> np.ndarray:  # pragma: no cover - abstract
        """C as a dense float array (rows x n)."""
        raise NotImplementedError

    def toeplitz(self) -> np.ndarray | None:
        """c_0 .. c_{n-1} of a lower-triangular Toeplitz C, else None."""
        return None

    @property
    def square_lower(self) -> bool:
        """C is n x n lower triangular (a streaming factorisation)."""
        return False

    @property
    def bands(self) -> int | None:
        """For a square lower-triangular C, the number of non-zero diagonals (C[i, j] = 0 for
        i - j >= bands); None otherwise."""
        return None

    @property
    def gram_bands(self) -> int:
        """X[s, t] = 0 structurally (disjoint column supports) for |s - t| >= gram_bands."""
        b = self.bands
        return self.n if b is None else b

    def nonnegative_nonincreasing(self) -> bool:
        """A lower-triangular Toeplitz C with c_0 >= c_1 >= ... >= 0 (proven, not computed)."""
        return False

    def nonnegative(self) -> bool:
        """Every entry of C is >= 0 (so X >= 0 entrywise), proven."""
        return False

    def gram(self) -> tuple[np.ndarray, np.ndarray]:
        """(X~, E): the computed Gram matrix C~^T C~ of the stored C~ and an entrywise bound E
        on its rounding error (gamma_m |C~|^T |C~|, m the rows; Higham 2002, "Accuracy and
        stability of numerical algorithms", Sec. 3.5). A BLT's coefficient error is not in E:
        the sensitivity adds it once (``coeff_error``)."""
        c = self.dense()
        m, n = c.shape
        _check_bytes(f"the Gram matrix of a {n}-step strategy", 3 * 8 * n * n + 8 * m * n)
        x = c.T @ c
        if self.nonnegative():
            a = x
        else:
            ac = np.abs(c)
            a = ac.T @ ac
        gamma = (m + 2) * _U / (1 - (m + 2) * _U)
        return x, a * (gamma * (1 + 4 * gamma + 4 * _U))

    def pattern_sums(self, pattern: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(C 1_pi, |C| 1_pi) for the steps ``pattern``, as computed (each entry a float sum
        of at most |pi| terms)."""
        p = list(pattern)
        c = self.toeplitz()
        if c is None:
            m = self.dense()[:, p]
            return m.sum(axis=1), np.abs(m).sum(axis=1)
        n = self.n
        v, w = np.zeros(n), np.zeros(n)
        for t in p:
            v[t:] += c[:n - t]
            w[t:] += np.abs(c[:n - t])
        return v, w

    def pattern_sum_bound(self, participations: int, separation: int) -> float | None:
        """A structural upper bound on max over patterns of sum |X_pi|, where the strategy
        has one (the binary tree), else None."""
        return None

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclasses.dataclass(frozen=True, eq=False)
class DenseStrategy(Strategy):
    """Any real m x n strategy matrix C (n steps), given densely."""

    matrix: np.ndarray

    def __post_init__(self):
        a = V.real_array("C", self.matrix)
        if a.ndim != 2 or a.shape[1] < 1 or a.shape[0] < 1:
            raise ValueError(f"C must be a 2-D matrix with at least one row and one column "
                             f"(got shape {a.shape})")
        if not np.isfinite(a).all():
            raise ValueError("C must be finite (it has inf or nan entries)")
        object.__setattr__(self, "matrix", _readonly(a))

    def __eq__(self, other):
        return isinstance(other, DenseStrategy) and self.matrix.shape == other.matrix.shape \
            and bool(np.array_equal(self.matrix, other.matrix))

    def __hash__(self):
        return hash((self.matrix.shape, self.matrix.tobytes()))

    @property
    def n(self) -> int:  # type: ignore[override]
        return int(self.matrix.shape[1])

    @property
    def rows(self) -> int:
        return int(self.matrix.shape[0])

    def column_norms_sq(self) -> np.ndarray:
        return np.einsum("ij,ij->j", self.matrix, self.matrix)

    def dense(self) -> np.ndarray:
        return self.matrix

    @functools.cached_property
    def _structure(self) -> tuple[bool, int | None, int, np.ndarray | None]:
        """(square lower triangular, bands, gram bands, Toeplitz coefficients), once: each
        column's support lies in rows [first_t, last_t]; columns whose intervals do not meet
        share no row, so X[s, t] = 0 structurally (a conservative, exact-integer test)."""
        a = self.matrix
        m, n = a.shape
        nz = a != 0
        any_col = nz.any(axis=0)
        first = np.where(any_col, nz.argmax(axis=0), m)
        last = np.where(any_col, m - 1 - nz[::-1].argmax(axis=0), -1)
        # the largest t with first_t <= last_s: on the suffix minima of first (non-decreasing)
        suffix = np.minimum.accumulate(first[::-1])[::-1]
        reach = np.searchsorted(suffix, last, side="right") - 1
        gram_bands = int(max(int((reach - np.arange(n)).max()), 0)) + 1
        lower = m == n and not np.triu(a, 1).any()
        if not lower:
            return False, None, gram_bands, None
        i, j = np.nonzero(a)
        bands = int((i - j).max()) + 1 if i.size else 1
        c = a[:, 0].copy()
        for k in range(n):  # every diagonal constant
            if not np.array_equal(np.diagonal(a, -k), np.full(n - k, c[k])):
                return True, bands, gram_bands, None
        return True, bands, gram_bands, c

    @property
    def square_lower(self) -> bool:
        return self._structure[0]

    @property
    def bands(self) -> int | None:
        return self._structure[1]

    @property
    def gram_bands(self) -> int:
        return self._structure[2]

    def nonnegative(self) -> bool:
        return bool((self.matrix >= 0).all())

    def toeplitz(self) -> np.ndarray | None:
        c = self._structure[3]
        return None if c is None else c.copy()

    def nonnegative_nonincreasing(self) -> bool:
        c = self.toeplitz()
        return c is not None and bool((c >= 0).all() and (np.diff(c) <= 0).all())

    def describe(self) -> str:
        m, n = self.matrix.shape
        return f"dense {m}x{n} strategy" + (f" ({self.bands}-banded)" if self.bands is not None
                                            and self.bands < n else "")


@dataclasses.dataclass(frozen=True)
class Toeplitz(Strategy):
    """Lower-triangular Toeplitz C of ``n`` steps: C[i, j] = coeffs[i - j] (0 beyond the
    coefficients given). Trailing zero coefficients are dropped."""

    coeffs: tuple[float, ...]
    n: int

    def __post_init__(self):
        c = V.real_array("coeffs", self.coeffs).ravel()
        if c.size < 1:
            raise ValueError("coeffs must have at least one coefficient (c_0)")
        if not np.isfinite(c).all():
            raise ValueError("coeffs must be finite")
        object.__setattr__(self, "n", V.integer("n", self.n, low=1))
        # (the check after the cut to n steps: (0, 1) over one step is C = 0 too)
        nz = np.nonzero(c[:self.n])[0]
        if nz.size == 0:
            raise ValueError("coeffs must not all be 0 within the n steps (C = 0 releases "
                             "pure noise)")
        c = c[: int(nz[-1]) + 1]
        object.__setattr__(self, "coeffs", tuple(float(v) for v in c))

    def toeplitz(self) -> np.ndarray:
        c = np.zeros(self.n)
        c[:len(self.coeffs)] = self.coeffs
        return c

    def column_norms_sq(self) -> np.ndarray:
        c = np.asarray(self.coeffs)
        cum = np.cumsum(c * c)                      # column t holds c_0 .. c_{n-1-t}
        idx = np.minimum(self.n - 1 - np.arange(self.n), len(c) - 1)
        return cum[idx]

    def dense(self) -> np.ndarray:
        _check_bytes(f"a dense {self.n}x{self.n} strategy", 8 * self.n * self.n)
        c = self.toeplitz()
        i, j = np.indices((self.n, self.n))
        return np.where(i >= j, c[np.clip(i - j, 0, self.n - 1)], 0.0)

    @property
    def square_lower(self) -> bool:
        return True

    @property
    def bands(self) -> int:
        return len(self.coeffs)

    def nonnegative(self) -> bool:
        return all(v >= 0 for v in self.coeffs)

    def nonnegative_nonincreasing(self) -> bool:
        c = self.coeffs
        return self.nonnegative() and all(c[i + 1] <= c[i] for i in range(len(c) - 1))

    def describe(self) -> str:
        kind = f"{self.bands}-banded Toeplitz" if self.bands < self.n else "Toeplitz"
        return f"{kind} strategy, {self.n} steps"


@dataclasses.dataclass(frozen=True)
class BandedToeplitz(Toeplitz):
    """A b-banded lower-triangular Toeplitz C: ``coeffs`` c_0 .. c_{b-1} (b = len(coeffs)
    bands), n steps; banded MF of Choquette-Choo et al. (NeurIPS 2023)."""

    def __post_init__(self):
        super().__post_init__()
        if len(self.coeffs) > self.n:
            raise ValueError(f"a banded strategy has at most n = {self.n} bands")


@dataclasses.dataclass(frozen=True)
class BLT(Strategy):
    """Buffered linear Toeplitz strategy (Dvijotham et al., FOCS 2024): lower-triangular
    Toeplitz with c_0 = 1 and c_k = sum_i omega_i theta_i^(k-1) for k >= 1, buffer decays
    theta_i in [0, 1] and output scales omega_i, ``n`` steps.

    The coefficients are computed in floating point: c_k with |error| <= (d + 8) u
    sum_i |omega_i| theta_i^(k-1) + 3 d' 2^-1074 (d buffers, d' of them with omega_i != 0,
    u = 2^-53: d - 1 additions, one product, and a power within a few ulps, as the C
    library's pow is; the absolute term for what lands in the subnormals), and
    ``coeff_error`` is the l2 norm of those bounds."""

    buffer_decays: tuple[float, ...]
    output_scales: tuple[float, ...]
    n: int

    def __post_init__(self):
        th = V.real_array("buffer_decays", self.buffer_decays).ravel()
        om = V.real_array("output_scales", self.output_scales).ravel()
        if th.size < 1 or th.size != om.size:
            raise ValueError(f"buffer_decays and output_scales must be of one length >= 1 "
                             f"(got {th.size} and {om.size})")
        if not (np.isfinite(th).all() and ((th >= 0) & (th <= 1)).all()):
            raise ValueError("buffer_decays must lie in [0, 1]")
        if not np.isfinite(om).all():
            raise ValueError("output_scales must be finite")
        object.__setattr__(self, "n", V.integer("n", self.n, low=1))
        object.__setattr__(self, "buffer_decays", tuple(float(v) for v in th))
        object.__setattr__(self, "output_scales", tuple(float(v) for v in om))

    def _coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        _check_bytes(f"the coefficients of a {self.n}-step BLT",
                     8 * self.n * (len(self.buffer_decays) + 3))
        th = np.asarray(self.buffer_decays)[:, None]
        om = np.asarray(self.output_scales)[:, None]
        k = np.arange(self.n - 1, dtype=float)[None, :]
        with np.errstate(divide="ignore"):
            terms = om * np.power(th, k)          # 0^0 = 1
        c = np.concatenate([[1.0], terms.sum(axis=0)])
        mag = np.concatenate([[0.0], np.abs(terms).sum(axis=0)])
        # relative (d + 8) u of the magnitudes, and, where a power or a product lands in the
        # subnormals (relative bounds fail there), 2^-1074 per operation of each buffer
        live = int(np.count_nonzero(om))
        err = mag * ((len(self.buffer_decays) + 8) * _U)
        err[1:] += 3 * live * 2.0 ** -1074
        return c, err

    def toeplitz(self) -> np.ndarray:
        return self._coefficients()[0]

    @property
    def coeff_error(self) -> float:  # type: ignore[override]
        """The l2 norm of the coefficients' error bounds, scaled by their largest (the squares
        neither underflow for tiny output scales nor overflow for huge ones), rounded up."""
        err = self._coefficients()[1]
        top = float(err.max())
        if top == 0.0:
            return 0.0
        if not math.isfinite(top):
            return math.inf
        return top * math.sqrt(math.fsum(((err / top) ** 2).tolist())) * (1 + 1e-12)

    def column_norms_sq(self) -> np.ndarray:
        return Toeplitz(tuple(self.toeplitz()), self.n).column_norms_sq()

    def dense(self) -> np.ndarray:
        return Toeplitz(tuple(self.toeplitz()), self.n).dense()

    @property
    def square_lower(self) -> bool:
        return True

    @property
    def bands(self) -> int:
        return self.n if self.n > 1 and any(self.output_scales) else 1

    def nonnegative(self) -> bool:
        return all(w >= 0 for w in self.output_scales)

    def nonnegative_nonincreasing(self) -> bool:
        """omega >= 0, theta in [0, 1] and sum omega <= 1 = c_0 (summed exactly): then
        c_k = sum omega_i theta_i^(k-1) is >= 0 and non-increasing in k."""
        return self.nonnegative() and \
            sum(Fraction(w) for w in self.output_scales) <= 1

    def describe(self) -> str:
        return f"BLT strategy ({len(self.buffer_decays)} buffers), {self.n} steps"


@dataclasses.dataclass(frozen=True)
class BinaryTree(Strategy):
    """The binary-tree strategy of ``n`` steps: one row per completed dyadic node
    [j 2^h, (j + 1) 2^h) (2^h <= n), a 1 in each step it covers (Dwork, Naor, Pitassi &
    Rothblum 2010; Chan, Shi & Song 2011). A step lies in at most depth = n.bit_length()
    nodes (step 0 in exactly that many): single-epoch sensitivity sqrt(depth), as
    :class:`~dpamp.TreeAggregation`."""

    n: int

    def __post_init__(self):
        object.__setattr__(self, "n", V.integer("n", self.n, low=1))

    def _nodes(self):
        h = 0
        while (1 << h) <= self.n:
            w = 1 << h
            for j in range(self.n // w):
                yield j * w, (j + 1) * w
            h += 1

    def column_norms_sq(self) -> np.ndarray:
        t = np.arange(self.n)
        out = np.zeros(self.n)
        h = 0
        while (1 << h) <= self.n:
            w = 1 << h
            out += ((t // w + 1) * w <= self.n)     # t's node at level h is completed
            h += 1
        return out

    def dense(self) -> np.ndarray:
        rows = 2 * self.n
        _check_bytes(f"the {self.n}-step binary tree", 8 * rows * self.n)
        nodes = list(self._nodes())
        c = np.zeros((len(nodes), self.n))
        for r, (a, b) in enumerate(nodes):
            c[r, a:b] = 1.0
        return c

    def nonnegative(self) -> bool:
        return True

    def pattern_sums(self, pattern: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The count of the pattern's steps in each completed node (exact integers)."""
        p = np.asarray(sorted(pattern), dtype=np.int64)
        out = []
        h = 0
        while (1 << h) <= self.n:
            w = 1 << h
            out.append(np.bincount(p // w, minlength=self.n // w + 1)[: self.n // w])
            h += 1
        v = np.concatenate(out).astype(float)
        return v, v

    def pattern_sum_bound(self, participations: int, separation: int) -> float:
        """sum_{s,t in pi} X[s, t] = sum over completed nodes of (steps of pi in the node)^2.
        At level h a node of w = 2^h steps holds at most m_h = min(k, ceil(w / b)) of them,
        and the counts sum to at most k, so the level contributes at most
        floor(k / m_h) m_h^2 + (k mod m_h)^2 (the squares' sum is convex: fill nodes first).
        Exact integers."""
        k, b = int(participations), int(separation)
        total = 0
        h = 0
        while (1 << h) <= self.n:
            w = 1 << h
            m = min(k, -(-w // b), w)
            full, rest = divmod(k, m)
            full = min(full, self.n // w)
            total += full * m * m + (rest * rest if full < self.n // w else 0)
            h += 1
        return float(total)

    @property
    def depth(self) -> int:
        return int(self.n).bit_length()

    def describe(self) -> str:
        return f"binary-tree strategy, {self.n} steps (depth {self.depth})"


def as_strategy(c) -> Strategy:
    """A :class:`Strategy` as given, or a dense one from an array-like matrix."""
    if isinstance(c, Strategy):
        return c
    return DenseStrategy(c)
