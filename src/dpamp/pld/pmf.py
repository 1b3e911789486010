"""A composed privacy-loss measure on a grid, with its error budget, and its queries.

delta(eps) = sum_{t_j > eps} m_j (1 - e^{eps - t_j}) + m_inf  (Steinke 2022, Prop. 7), evaluated
through the suffix sums A_k = sum_{j >= k} m_j and C_k = sum_{j >= k} m_j e^{t_k - t_j} (no
overflow: every exponent is <= 0), so that on [t_{k-1}, t_k) delta(eps) = A_k - e^{eps - t_k} C_k +
m_inf, which also inverts in closed form.

``err`` is an array E_k bounding the total floating-point error of sum_{j >= k} |m_j| weights: an
upper bound adds it, a lower bound subtracts it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np


@dataclasses.dataclass
class GridPMF:
    h: float
    jlo: int
    mass: np.ndarray            # finite part on t_j = (jlo + i) h
    inf: float                  # mass at +inf (already including tail and truncation bounds)
    err: np.ndarray             # E_k: error budget of the suffix starting at bin k (length n+1)
    upper: bool                 # True: every value is rounded towards larger delta
    #: the losses t_j, h (jlo + arange(n)), where the caller has them already (the same bits)
    grid: dataclasses.InitVar[np.ndarray | None] = None

    def __post_init__(self, grid=None):
        n = self.mass.size
        t = self.h * (self.jlo + np.arange(n)) if grid is None else grid
        self._t = t
        # the error bound of each bin alone (read by dpamp.amplification.allocation, which
        # needs masses bin by bin): set by the engine, as a function computing it on first read
        self._bin_err: np.ndarray | Callable[[], np.ndarray] | None = None
        self._A = suffix_sums(self.mass)
        # C_k = m_k + e^{-h} C_{k+1}: a first-order linear recursion, done by scipy.signal-free
        # vectorised form C_k = sum_j m_j e^{-(j-k)h} = e^{k h} S_k with S_k = sum_{j>=k} m_j
        # e^{-jh}; computed in blocks so that no exponent exceeds ~700 in magnitude; on first use
        # (the S-domain compositions of dpamp.amplification.allocation never query it)
        self._C_cache = None
        # epsilon(delta) by delta: a query reads each PMF's epsilon more than once (to pick the
        # worse direction, then for the bracket), and the PMF never changes
        self._eps_memo: dict[float, float] = {}

    @property
    def _C(self) -> np.ndarray:
        if self._C_cache is None:
            C = np.empty(self.mass.size + 1)
            C[-1] = 0.0
            _discounted_suffix(self.mass, self.h, out=C[:-1])
            self._C_cache = C
        return self._C_cache

    @property
    def t(self) -> np.ndarray:
        return self._t

    @property
    def bin_err(self) -> np.ndarray | None:
        got = self._bin_err
        if callable(got):
            got = self._bin_err = got()
        return got

    @bin_err.setter
    def bin_err(self, value):
        """An array, or a function of no arguments giving it (called on first read)."""
        self._bin_err = value

    def _raw(self, e: np.ndarray, k: np.ndarray | None = None) -> np.ndarray:
        """The bound at eps before the monotone envelope (``k``: the first bin strictly above
        each eps, when the caller knows it)."""
        n = self.mass.size
        if k is None:
            k = np.searchsorted(self._t, e, side="right")
        A = self._A[k]
        C = self._C[k]
        tk = self._t[np.minimum(k, n - 1)] if n else np.zeros_like(e)
        with np.errstate(over="ignore", invalid="ignore"):
            val = A - np.where(k < n, np.exp(np.minimum(e - tk, 0.0)) * C, 0.0)
        val = np.maximum(val, 0.0) + self.inf          # (a NaN stays NaN here...)
        if self.upper:                                 # (...and is read as 1 above, 0 below)
            return np.fmin(val + self.err[k], 1.0)
        return np.fmax(val - self.err[k], 0.0)

    def _grid_envelope(self) -> np.ndarray:
        """Values at the grid points after the monotone envelope: the true delta(eps) is
        non-increasing, so an upper bound at eps' <= eps bounds it at eps (prefix minimum) and a
        lower bound at eps' >= eps bounds it from below at eps (suffix maximum). This matters
        where the error budget is large (far from the tilt), not near the answer."""
        env = getattr(self, "_env", None)
        if env is None:
            # (a copy: the point reads of _env_at keep the raw values)
            g = self._grid_values().copy()
            # (in place: each output is its op on the one before and its own input)
            env = np.minimum.accumulate(g, out=g) if self.upper else \
                np.maximum.accumulate(g[::-1], out=g[::-1])[::-1]
            self._env = env
        return env

    def _grid_values(self) -> np.ndarray:
        """:meth:`_grid_raw`, computed once."""
        g = getattr(self, "_graw", None)
        if g is None:
            g = self._graw = self._grid_raw()
        return g

    def _env_at(self, j: int) -> float:
        """``_grid_envelope()[j]`` (0 <= j < n) without the whole envelope: the minimum of the
        raw values up to j (upper) or the maximum from j on (lower). A minimum or maximum is
        exact in any order, and the raw values are never NaN (fmin/fmax with a number), so
        this is the running one's value; only the sign of a zero could depend on the order,
        and a zero is read off the running envelope itself. A query reads a few points: one
        reduction each, where the running envelope is a sequential pass over the whole grid."""
        env = getattr(self, "_env", None)
        if env is not None:
            return env[j]
        g = self._grid_values()
        v = np.min(g[:j + 1]) if self.upper else np.max(g[j:])
        if v == 0.0:
            # the sign of a zero: the running pass itself, over the values its entry j reads
            # (laid out as in _grid_envelope: in place, the lower one over the reversed values)
            x = g[:j + 1].copy() if self.upper else g[j:].copy()
            v = np.minimum.accumulate(x, out=x)[-1] if self.upper else \
                np.maximum.accumulate(x[::-1], out=x[::-1])[-1]
        return v

    def _grid_raw(self) -> np.ndarray:
        """``_raw`` at the grid points, eps = t_j with k = j + 1 (the next bin), by slices
        rather than gathers: at the last point k = n, where ``_raw`` takes 0 for the discounted
        term, and here e^0 C_n = 1 x 0 = 0 (C_n is 0), so every value is the same bits."""
        # (in place on one array: the same operations as _raw, without its temporaries)
        t = self._t
        v = np.empty(t.size)
        np.subtract(t[:-1], t[1:], out=v[:-1])             # t_j - t[min(j + 1, n - 1)]
        v[-1] = t[-1] - t[-1]
        with np.errstate(over="ignore", invalid="ignore"):
            np.minimum(v, 0.0, out=v)
            np.exp(v, out=v)
            np.multiply(v, self._C[1:], out=v)
            np.subtract(self._A[1:], v, out=v)
        np.maximum(v, 0.0, out=v)
        v += self.inf
        if self.upper:
            v += self.err[1:]
            return np.fmin(v, 1.0, out=v)
        np.subtract(v, self.err[1:], out=v)
        return np.fmax(v, 0.0, out=v)

    def delta_at(self, eps: float) -> float:
        """float(self.delta(np.array([eps]))[0]): the bound at one eps."""
        if not self.mass.size:
            return float(self.delta(np.array([eps]))[0])
        return self._delta1(eps)

    def _delta1(self, eps: float) -> float:
        """float(self.delta(np.array([eps]))[0]) of a non-empty PMF, with the same ufuncs on
        scalars (one searchsorted, no arrays; the same bits, tests/test_pld.py)."""
        n = self.mass.size
        k = int(np.searchsorted(self._t, eps, side="right"))
        e = np.float64(eps)
        if k < n:
            with np.errstate(over="ignore", invalid="ignore"):
                val = self._A[k] - np.exp(np.minimum(e - self._t[k], 0.0)) * self._C[k]
        else:
            val = self._A[k] - 0.0
        val = np.maximum(val, 0.0) + self.inf
        if self.upper:
            raw = np.fmin(val + self.err[k], 1.0)
            return float(np.minimum(raw, self._env_at(k - 1) if k > 0 else np.inf))
        raw = np.fmax(val - self.err[k], 0.0)
        return float(np.maximum(raw, self._env_at(k) if k < n else 0.0))

    def _first_below(self, i0: int, delta: float) -> int:
        """The first k >= i0 with ``_grid_envelope()[k] <= delta`` (n if none), where the bound
        at eps = 0 exceeds delta, from the raw values (:meth:`_grid_raw`, never NaN) without
        the envelope's sequential pass. Upper (prefix minimum): the envelope at i0 - 1 is part
        of the bound at 0, so it exceeds delta, and the envelope drops to delta exactly where
        a raw value first does. Lower (suffix maximum): the envelope at k is <= delta exactly
        when every raw value from k on is, i.e. past the last raw value above delta."""
        n = self.mass.size
        ok = self._grid_values()[i0:] <= delta
        if not ok.size:
            return n
        if self.upper:
            j = int(np.argmax(ok))
            return i0 + j if ok[j] else n
        j = int(np.argmin(ok[::-1]))           # the last raw value above delta, from the end
        return i0 + (ok.size - j if not ok[ok.size - 1 - j] else 0)

    def delta(self, epsilon) -> np.ndarray:
        """Bound on delta(epsilon) (upper or lower as this PMF is), vectorised over epsilon."""
        e = np.asarray(epsilon, dtype=float)
        raw = self._raw(e)
        n = self.mass.size
        if n == 0:
            return raw
        env = self._grid_envelope()
        k = np.searchsorted(self._t, e, side="right")
        if self.upper:   # grid points t_j <= eps: index k - 1
            prev = np.where(k > 0, env[np.maximum(k - 1, 0)], np.inf)
            return np.minimum(raw, prev)
        nxt = np.where(k < n, env[np.minimum(k, n - 1)], 0.0)   # grid points > eps
        return np.maximum(raw, nxt)

    def budget(self, eps: float) -> float:
        """The error budget of delta(eps): E_k of the suffix it reads (the bins above eps)."""
        return float(self.err[int(np.searchsorted(self._t, eps, side="right"))])

    def epsilon(self, delta: float) -> float:
        """For an upper bound: some eps >= 0 (the smallest up to rounding) with bound(eps) <=
        delta, so the true epsilon(delta) is <= it. For a lower bound: an eps such that
        bound(eps') > delta for every eps' < eps, so the true epsilon(delta) is >= it. inf if the
        bound never drops to delta on the grid."""
        return remembered(self._eps_memo, float(delta), self._epsilon)

    def _epsilon(self, delta: float) -> float:
        n = self.mass.size
        if n == 0:
            return 0.0 if self.inf <= delta else math.inf
        if self._delta1(0.0) <= delta:
            return 0.0
        # the first grid point t_k > 0 with bound <= delta (t increases: those > 0 are a suffix)
        i0 = int(np.searchsorted(self._t, 0.0, side="right"))
        k = self._first_below(i0, delta)
        if k >= n:
            return math.inf
        lo_t = max(self._t[k - 1], 0.0) if k > 0 else 0.0
        tk = self._t[k]
        # on (t_{k-1}, t_k] the raw bound is A_k - e^{eps - t_k} C_k + (constant): solve it
        A, C = self._A[k], self._C[k]
        rest = self.inf + (self.err[k] if self.upper else -self.err[k])
        target = delta - rest
        if C > 0 and A - target > 0:
            # (a difference of logs: the ratio overflows where C is subnormal)
            eps = min(max(tk + math.log(A - target) - math.log(C), lo_t), tk)
        else:
            eps = tk
        f = self._delta1
        if self.upper:
            # rounding in the closed form: step up until the bound is <= delta (t_k always is)
            for _ in range(4):
                if f(eps) <= delta:
                    break
                eps = min(tk, eps + 1e-12 * max(1.0, abs(eps)))
            else:
                eps = tk
        else:
            # every eps' < eps must have a bound > delta: step down until just below eps it is
            for _ in range(4):
                below = np.nextafter(eps, -np.inf)
                if below <= lo_t or f(below) > delta:
                    break
                eps = max(lo_t, eps - 1e-12 * max(1.0, abs(eps)))
            else:
                eps = lo_t
        return max(eps, 0.0)


def suffix_sums(x: np.ndarray) -> np.ndarray:
    """[sum_{j >= k} x_j for k = 0..n] (the last 0): the running sums from the end, as
    np.cumsum(x[::-1])[::-1] with a 0 appended, written into one array."""
    out = np.empty(x.size + 1)
    out[-1] = 0.0
    if x.size:
        np.cumsum(x[::-1], out=out[-2::-1])
    return out


def _discounted_suffix(m: np.ndarray, h: float, out: np.ndarray | None = None) -> np.ndarray:
    """C_k = sum_{j >= k} m_j e^{-(j - k) h}, without overflow or underflow: in blocks of <= 30/h
    terms the weights e^{-jh} stay above e^{-30}, so m_j e^{-jh} underflows only for masses
    below ~1e-295 (blocks of 600/h let masses below ~1e-47 vanish, which raised the lower
    bound A_k - e^{eps - t_k} C_k). ``out``: an array of m's size to write them into."""
    n = m.size
    if n == 0:
        return np.zeros(0) if out is None else out
    out = np.empty(n) if out is None else out
    block = max(1, int(30.0 / max(h, 1e-300)))
    carry = 0.0
    # (in place on w and on out: the same operations as on new arrays, without them; a fresh
    # array of a long grid costs page faults, which cost more than the arithmetic)
    for end in range(n, 0, -block):
        start = max(0, end - block)
        seg, s = m[start:end], out[start:end]
        w = np.arange(seg.size, dtype=float)                 # j from block start (exact)
        np.multiply(w, -h, out=w)
        np.exp(w, out=w)                                     # e^{-(j) h}
        np.multiply(seg, w, out=s)
        np.cumsum(s[::-1], out=s[::-1])                      # sum_{i>=j} m_i e^{-i h}
        np.divide(s, w, out=s)
        if carry:
            s += carry * np.exp(-h * (seg.size - np.arange(seg.size)))
        carry = out[start]
    return out


def remembered(memo: dict, key: float, compute) -> float:
    """memo[key], computed by ``compute(key)`` on first need (a PMF's epsilon by delta: a query
    reads each PMF's more than once, and the PMF never changes)."""
    got = memo.get(key)
    if got is None:
        got = memo[key] = compute(key)
    return got
