"""L2 sensitivity of a strategy matrix C under (k, b)-participation, as a proven bracket.

A record entering the steps pi (at most k of them, any two at least b apart) with clipped
gradients g_t (|g_t| <= 1, any dimension d) moves C G by D = sum_{t in pi} C[:, t] g_t^T, and

    |D|_F^2 = sum_{s, t in pi} X[s, t] <g_s, g_t>,    X = C^T C.

The sensitivity is sup over pi and g of |D|_F (in units of the clipping norm, add/remove; the
mechanism doubles it under substitution). Routes (the best proven ends are kept):

- **single** (k = 1): max_t |C[:, t]|, exact.
- **banded** (X[s, t] = 0 for |s - t| >= b, e.g. C lower triangular with at most b bands):
  the cross terms vanish, |D|^2 = sum_{t in pi} |C[:, t]|^2 |g_t|^2, so the sensitivity is
  exactly the largest sum of column norms^2 over patterns, found by dynamic programming
  (Choquette-Choo et al. NeurIPS 2023, "(Amplified) banded matrix factorization", Alg. 3
  "VecSens").
- **toeplitz-monotone** (lower-triangular Toeplitz, c_0 >= c_1 >= ... >= 0): exact, attained by
  the earliest pattern 0, b, ..., (k'-1) b with equal gradients. Proof: X >= 0, so equal g
  maximise each pattern (value 1^T X_pi 1) and more steps never hurt; for a sorted pattern
  p_1 < ... < p_k' and q_i = (i - 1) b we have q_j <= p_j and q_j - q_i <= p_j - p_i, and
  X[p_i, p_j] = sum_{m <= n-1-p_j} c_m c_{m + p_j - p_i} is at most the same sum for q (more
  terms, each no smaller as c is non-increasing), entry by entry.
- **enumeration** (few patterns, the Gram fits in memory): every pattern; upper sum |X_pi|,
  lower 1^T X_pi 1 (equal g). Exact where X >= 0.
- **row bound** (the Gram fits): sum_{s,t in pi} |X[s,t]| <= sum_{s in pi} r_s with r_s the
  best pattern sum of row s of |X|, maximised again over pi (Choquette-Choo et al. NeurIPS
  2023, Alg. 4). An upper bound.
- **lag bound** (Toeplitz, any n): |X[s, t]| <= a(|s - t|) = sum_j |c_j| |c_{j + |s-t|}|, and
  with a-bar the running maximum of a from the right, sum over pi <= k' a(0) +
  2 sum_{m=1}^{k'-1} (k' - m) a-bar(m b). An upper bound.
- **triangle**: |D| <= sum_{t in pi} |C[:, t]|, maximised over pi. An upper bound, any C.

The lower end is always an attained value: |C 1_pi| for the patterns tried, equal gradients,
and where C has negative entries |C[:, pi] s| for signs s = +-1 on the earliest pattern (both
valid in any dimension). Rounding: every float sum is padded outward by its
gamma_m = m u / (1 - m u) bound (Higham 2002, Sec. 3.1), the Gram by gamma_rows |C|^T |C|; a
BLT's computed coefficients by k' times their error's l2 norm.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.memory import memory_limit
from .matrix_strategies import Strategy

__all__ = ["SensitivityBracket", "sensitivity", "vec_sens", "count_patterns"]

_U = 2.0 ** -53
#: patterns enumerated at most (route "enumeration"): work, not time
ENUMERATION_LIMIT = 20_000
#: element operations of the row bound (n^2 k') at most
ROW_BOUND_WORK = 2 * 10 ** 8


@dataclasses.dataclass(frozen=True)
class SensitivityBracket:
    """Proven ends of the L2 sensitivity (clipping-norm units, add/remove), the route that gave
    the upper end, and whether that route is exact (the ends then differ by rounding only)."""

    lower: float
    upper: float
    route: str
    exact: bool
    participations: int
    separation: int

    def describe(self) -> str:
        tag = "exact" if self.exact else "upper bound"
        return (f"sensitivity in [{self.lower:.6g}, {self.upper:.6g}] ({tag}, route "
                f"{self.route}; at most {self.participations} participations, "
                f"separation {self.separation})")


def _gamma(m: int) -> float:
    return (m + 2) * _U / (1 - (m + 2) * _U)


def vec_sens(x, separation: int, participations: int):
    """max over patterns (at most ``participations`` indices, any two >= ``separation``
    apart) of sum_{t in pattern} x_t, for x >= 0, by dynamic programming (Choquette-Choo et al.
    NeurIPS 2023, Alg. 3): f_k(i) = max(x_i + f_{k-1}(i + b), f_k(i + 1)). O(n k). The float
    value, not padded (callers pad by gamma_k)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    b = int(separation)
    f = np.zeros(x.shape[:-1] + (n + b,))
    for _ in range(int(participations)):
        g = np.array(f)
        g[..., :n] = x + f[..., b:b + n]
        f = np.maximum.accumulate(g[..., ::-1], axis=-1)[..., ::-1]
    return f[..., 0]


def count_patterns(n: int, separation: int, participations: int, cap: int) -> int:
    """Non-empty patterns of at most k indices in range(n), gaps >= b; min(count, cap + 1)."""
    # N[i][j]: patterns of exactly j indices in range(i)
    b, k = int(separation), int(participations)
    row = [1] + [0] * k                    # N[.][j] for the current i
    hist = [row]
    for i in range(1, n + 1):
        prev = hist[i - 1]
        back = hist[i - b] if i - b >= 0 else [1] + [0] * k
        new = [1] + [min(prev[j] + back[j - 1], cap + 1) for j in range(1, k + 1)]
        hist.append(new)
        if sum(new[1:]) > cap:     # the counts only grow with i: stop at the cap
            return cap + 1
    return min(sum(hist[n][1:]), cap + 1)


def _patterns(n: int, b: int, k: int):
    """Every non-empty pattern (sorted tuples), depth first."""
    def grow(start, chosen):
        for t in range(start, n):
            nxt = chosen + (t,)
            yield nxt
            if len(nxt) < k:
                yield from grow(t + b, nxt)
    yield from grow(0, ())


def _up(v: float, terms: int) -> float:
    return float(v) * (1 + 2 * _gamma(terms)) if v > 0 else 0.0


def _down(v: float, terms: int) -> float:
    return max(float(v) * (1 - 2 * _gamma(terms)), 0.0)


def _equal_g_lower(strategy: Strategy, pattern) -> float:
    """A proven lower bound on |C 1_pattern|^2 (equal gradients): |v~| - gamma |C| 1_pi."""
    p = list(pattern)
    v, w = strategy.pattern_sums(p)
    norm_v = math.sqrt(_down(float(v @ v), v.size))
    norm_w = math.sqrt(_up(float(w @ w), w.size))
    low = norm_v - _gamma(len(p)) * norm_w
    return low * low if low > 0 else 0.0


#: n k'^2 at most for the signed lower end (the Gram of a pattern's columns)
SIGNED_WORK = 10 ** 8


def _signed_lower(strategy: Strategy, k: int, b: int) -> float:
    """Gradients +-g on the earliest pattern (valid in any dimension): the signs by a few
    rounds of s <- sign(G s) on the pattern's Gram G from s = 1 (deterministic), the value
    |C[:, pi] s|^2 bounded below as in :func:`_equal_g_lower`. 0 beyond ``SIGNED_WORK``."""
    n = strategy.n
    pat = list(range(0, min(n, k * b), b))
    if n * len(pat) ** 2 > SIGNED_WORK:
        return 0.0
    cols = np.stack([strategy.pattern_sums([t])[0] for t in pat], axis=1)
    g = cols.T @ cols
    s = np.ones(len(pat))
    for _ in range(20):
        nxt = np.where(g @ s >= 0, 1.0, -1.0)
        if np.array_equal(nxt, s):
            break
        s = nxt
    v = cols @ s
    w = np.abs(cols).sum(axis=1)
    norm_v = math.sqrt(_down(float(v @ v), v.size))
    norm_w = math.sqrt(_up(float(w @ w), w.size))
    low = norm_v - _gamma(len(pat)) * norm_w
    return low * low if low > 0 else 0.0


def _lower(strategy: Strategy, k: int, b: int, col_sq: np.ndarray) -> float:
    """The best attained |C 1_pi|^2 over a few patterns: the earliest one (0, b, ...), the
    largest column alone, the latest one (n - 1, n - 1 - b, ...)."""
    n = strategy.n
    earliest = range(0, min(n, k * b), b)
    latest = sorted(range(n - 1, max(n - 1 - k * b, -1), -b))[-k:]
    best = _down(float(col_sq.max()), _rows(strategy))
    for pat in (earliest, latest):
        best = max(best, _equal_g_lower(strategy, pat))
    return best


def _rows(strategy: Strategy) -> int:
    """Terms of each column norm^2 as computed (the rows of C)."""
    return max(int(getattr(strategy, "rows", strategy.n)), 1)


def _gram_fits(n: int, rows: int) -> bool:
    return 6 * 8 * n * n + 8 * rows * n <= memory_limit() // 2


def _dense_rows(strategy: Strategy) -> int:
    return 2 * strategy.n


def _enumerate(strategy, x, e, k, b):
    """(upper^2, lower^2) over every pattern."""
    ax = np.abs(x) + e
    lo_x = x - e
    kk = k * k
    up, lo = 0.0, 0.0
    for pat in _patterns(strategy.n, b, k):
        idx = np.asarray(pat)
        up = max(up, float(ax[np.ix_(idx, idx)].sum()))
        sub = lo_x[np.ix_(idx, idx)]
        # a sum of mixed signs errs by gamma times the sum of magnitudes, not of the result
        lo = max(lo, float(sub.sum()) - 2 * _gamma(kk) * float(np.abs(sub).sum()))
    return _up(up, kk), max(lo, 0.0)


def _row_bound(x, e, k, b) -> float:
    ax = np.abs(x) + e
    rows = vec_sens(ax, b, k)
    return _up(float(vec_sens(_up_arr(rows, k), b, k)), k)


def _up_arr(a, terms):
    return np.asarray(a) * (1 + 2 * _gamma(terms))


def _lag_bound(c: np.ndarray, k: int, b: int) -> float:
    n = c.size
    ac = np.abs(c)
    a = np.correlate(ac, ac, mode="full")[n - 1:]          # lags 0 .. n-1
    a = _up_arr(a, n)
    abar = np.maximum.accumulate(a[::-1])[::-1]
    total = k * a[0]
    for m in range(1, k):
        if m * b < n:
            total += 2 * (k - m) * abar[m * b]
    return _up(float(total), k * k)


def _toeplitz_monotone(strategy: Strategy, k: int, b: int) -> tuple[float, float]:
    c = strategy.toeplitz()
    assert c is not None
    n = c.size
    v = np.zeros(n)
    for j in range(k):
        if j * b < n:
            v[j * b:] += c[:n - j * b]
    s = float(v @ v)
    terms = n + 2 * k
    return _up(s, terms), _down(s, terms)


def _upper_routes(strategy: Strategy, k: int, b: int, col_sq, col) -> list[tuple[float, str,
                                                                                 bool]]:
    """[(upper^2, route, exact)] of every route that applies (see the module docstring)."""
    terms = _rows(strategy) + k
    out = [(_up(float(vec_sens(col, b, k)), terms) ** 2, "triangle", False)]
    if strategy.gram_bands <= b:
        out.append((_up(float(vec_sens(col_sq, b, k)), terms), "banded", True))
        return out
    tree = strategy.pattern_sum_bound(k, b)
    if tree is not None:
        out.append((_up(tree, 1), "tree levels", False))
    c = strategy.toeplitz()
    if c is not None and strategy.nonnegative_nonincreasing():
        return out + [(_toeplitz_monotone(strategy, k, b)[0], "toeplitz-monotone", True)]
    if c is not None:
        out.append((_lag_bound(c, k, b), "lag bound", False))
    return out


def sensitivity(strategy: Strategy, participations: int, separation: int) -> SensitivityBracket:
    """The proven sensitivity bracket of ``strategy`` under at most ``participations`` steps
    per record, any two at least ``separation`` apart (module docstring for the routes)."""
    n = strategy.n
    b = int(separation)
    k = min(int(participations), -(-n // b))
    col_sq = np.asarray(strategy.column_norms_sq(), dtype=float)
    rows = _rows(strategy)
    if k == 1:
        m = float(col_sq.max())
        return _finish(strategy, _up(m, rows), _down(m, rows), "single", True, 1, b)
    col = np.sqrt(col_sq) * (1 + 2 * _gamma(rows))
    routes = _upper_routes(strategy, k, b, col_sq, col)
    low = _lower(strategy, k, b, col_sq)
    if strategy.gram_bands <= b:     # every pattern's value is its sum of column norms^2
        low = max(low, _down(float(vec_sens(col_sq, b, k)), rows + k))
    if not any(ex for _, _, ex in routes) and _gram_fits(n, _dense_rows(strategy)):
        few = count_patterns(n, b, k, ENUMERATION_LIMIT) <= ENUMERATION_LIMIT
        if few or n * n * k <= ROW_BOUND_WORK:
            x, e = strategy.gram()
            if few:
                up, lo = _enumerate(strategy, x, e, k, b)
                exact = strategy.nonnegative() or bool((x - e >= 0).all())
                routes.append((up, "enumeration", exact))
                low = max(low, lo)
            else:
                routes.append((_row_bound(x, e, k, b), "row bound", False))
    up, route, exact = min(routes, key=lambda r: (r[0], not r[2]))
    if not exact and not strategy.nonnegative():
        low = max(low, _signed_lower(strategy, k, b))
    # a bracket closed to rounding is exact whatever route closed it
    exact = exact or low >= up * (1 - 1e-9)
    return _finish(strategy, up, low, route, exact, k, b)


def _finish(strategy, up_sq, low_sq, route, exact, k, b) -> SensitivityBracket:
    """Square roots rounded outward, the coefficient error added (k' e), ends ordered."""
    e = k * strategy.coeff_error
    up = math.sqrt(up_sq) * (1 + 2 * _U) + e
    up = math.nextafter(up, math.inf) if e else up
    low = max(math.sqrt(low_sq) * (1 - 2 * _U) - e, 0.0)
    return SensitivityBracket(min(low, up), up, route, exact, k, b)
