"""The optimal adaptive composition of eps-bounded-range mechanisms, by dynamic programming.

A mechanism is eps-BR when its privacy loss on every pair of neighbours lies in an interval of
width eps (:mod:`dpamp.mechanisms.selection`: the exponential mechanism, report-noisy-max with
Gumbel noise). Every such pair is dominated by a *generalized randomized response* pair
(P_t, Q_t), t in [0, eps]: loss t with P-mass p_t = (e^eps - e^t) / (e^eps - 1), loss t - eps
otherwise (Dong, Durfee & Rogers 2020, "Optimal differential privacy composition for
exponential mechanisms", Sec. 4; the chord argument in the selection module's docstring), and
every (P_t, Q_t), 0 < t < eps, is an exponential mechanism on two candidates.

Write H_c(P || Q) = E_P[(1 - c dQ/dP)_+] (the hockey-stick divergence at c = e^eps') and W_k(c)
for its supremum over adaptive compositions of k eps-BR mechanisms. Then (DDR 2020 Sec. 6 give
this optimum; the recursion below is the form computed here)

    W_0(c) = (1 - c)_+,
    W_k(c) = sup_{t in [0, eps]} p_t W_{k-1}(c e^{-t}) + (1 - p_t) W_{k-1}(c e^{eps - t}).

*Proof.* Split the first output: H_c(P || Q) = E_{y ~ P_1}[H_{c q_1(y)/p_1(y)}(rest | y)], and
the rest, given y, is an adaptive composition of k - 1 eps-BR mechanisms, so its divergence is
at most W_{k-1}(c e^{-L_1}). E_{P_1}[W_{k-1}(c e^{-L_1})] = E_{Q_1}[phi(e^{L_1})] with
phi(X) = X W_{k-1}(c / X), the perspective of W_{k-1}, which is convex (a supremum of
hockey-stick divergences, each convex in c); e^{L_1} ranges over [e^{t - eps}, e^t] with
E_{Q_1}[e^{L_1}] = 1, so E_{Q_1}[phi] is at most its value on the two ends, which is the right
side at that t. Conversely the right side is attained: run the two-candidate exponential
mechanism with that t, then the optimal continuation for the loss seen. []

Both ends are computed on the grid x_j = j h of log c, h = eps / m (so c e^{eps} is a grid
point whenever c is):

* **upper**: W_{k-1} is convex in c, so on [c_j, c_{j+1}] it lies below the chord through its
  grid values, and below the chord through any upper bounds of them. With the chord in place
  of W_{k-1}, each grid cell of t gives p_t f(c e^{-t}) + (1 - p_t) g(c e^{eps - t}) of the
  form (A + B r + K / (1 + r eta)) / (e^eps - 1), r in [0, 1] the position in the cell,
  eta = e^h - 1: its maximum is at an end, or at the stationary point where it is concave
  (K < 0, B < 0): (A + (E - B) / eta - 2 sqrt(B K / eta)) / (e^eps - 1) (:func:`_cell_max`).
  So the supremum over all real t is computed exactly, cell by cell; the only relaxation is
  the chord, a second-order error in h.
* **lower**: the same recursion with t restricted to the grid {0, h, ..., eps}: the value of
  an actual adaptive strategy, so a lower bound, evaluated without interpolation (both
  arguments are grid points).

The last step is taken at the queried eps' itself (not a grid point): the upper end by the
same cell maxima over the partial cells of the window, the lower end with t = eps' - x_j.
W_k(c) for c < 1 follows from c > 1 by W_k(c) = 1 - c + c W_k(1/c) (the class is closed under
swapping P and Q: t -> eps - t). The grid may end where every W_k is proven below ``tiny``
by a Chernoff bound (:func:`tail_end`): past it the upper bound is tiny and the lower one 0,
which moves the answer by at most T x tiny. Every value carries its rounding bound (the upper one is moved
up, the lower one down).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.errors import OutOfReach

__all__ = ["envelope_log_profile", "Ladder", "ladder", "delta_bracket", "epsilon_bracket",
           "dp_cost", "tail_end"]

_U = 2.0 ** -52
#: the largest eps the dynamic program takes (e^eps and e^{2 eps} stay far inside the doubles)
MAX_EPS = 50.0


def envelope_log_profile(eps0: float, eps, upper: bool = True) -> np.ndarray:
    """log of the privacy profile of one eps0-BR mechanism, sup_t H_{e^eps}(P_t || Q_t) =
    (e^{eps0/2} - e^{eps/2})^2 / (e^eps0 - 1) for 0 <= eps < eps0 (attained at
    t = (eps0 + eps) / 2), 0 beyond; both orders (the class is closed under swap). Written
    eps0 + 2 log(-expm1((eps - eps0)/2)) - log(expm1(eps0)), each term to a few ulps; moved
    by its rounding bound up (``upper``) or down."""
    e = np.asarray(eps, dtype=float)
    out = np.full(e.shape, -np.inf)
    inside = e < eps0
    if inside.any():
        ei = e[inside]
        with np.errstate(divide="ignore"):
            lead = 2.0 * np.log(-np.expm1((ei - eps0) / 2.0))
        tail = math.log(math.expm1(eps0)) if eps0 < 709 else eps0
        v = eps0 + lead - tail
        err = 16 * _U * (eps0 + np.abs(lead) + abs(tail) + 1.0)
        out[inside] = v + err if upper else v - err
    return np.minimum(out, 0.0)


@dataclasses.dataclass(frozen=True)
class _Grid:
    eps0: float
    m: int

    @property
    def h(self) -> float:
        return self.eps0 / self.m

    @property
    def eta(self) -> float:
        return math.expm1(self.h)

    @property
    def e1(self) -> float:
        return math.expm1(self.eps0)

    def weights(self, t):
        """(p_t, 1 - p_t), each to a few ulps: e^t expm1(eps - t) / expm1(eps) and
        expm1(t) / expm1(eps)."""
        t = np.asarray(t, dtype=float)
        return np.exp(t) * np.expm1(self.eps0 - t) / self.e1, np.expm1(t) / self.e1


def _swap(values: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """W(e^{-x}) = 1 - e^{-x} + e^{-x} W(e^x) for x >= 0 (the class is swap-closed)."""
    v = -np.expm1(-x) + np.exp(-x) * values
    return v * (1 + 8 * _U) if upper else v * (1 - 8 * _U)


def _interior(g: _Grid, f0, f1, g0, g1, rho, r_lo, r_hi):
    """The stationary value of p f(a) + (1 - p) g(a e^eps) over one grid cell where it is
    concave and its maximum lies inside [r_lo, r_hi] (module docstring), with its rounding
    bound added; 0 elsewhere. a = c_j (1 + r eta), f and g the chords (f0 -> f1, g0 -> g1),
    rho = c / c_j. Vectorised."""
    eta, ee = g.eta, math.exp(g.eps0)
    df, dg = f1 - f0, g1 - g0
    a = ee * f0 - g0
    b = ee * df - dg
    e = rho * (dg - df)
    k = rho * (g0 - f0) - e / eta
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        y2 = k * eta / b                               # (1 + r* eta)^2
        root = 2.0 * np.sqrt(b * k / eta)
        inner = (a + (e - b) / eta - root + 64 * _U * (
            np.abs(a) + (np.abs(e) + np.abs(b)) / eta + root)) / g.e1
    ok = (k < 0) & (b < 0) & (y2 > (1 + r_lo * eta) ** 2) & (y2 < (1 + r_hi * eta) ** 2)
    return np.where(ok, inner, 0.0)


def _cell_max(g: _Grid, f0, f1, g0, g1, rho, r_lo, r_hi):
    """max over r in [r_lo, r_hi] of p f(a) + (1 - p) g(a e^eps) over one grid cell (see
    :func:`_interior`): the ends directly (t = log(rho / (1 + r eta))) and the stationary
    point. Vectorised."""
    df, dg = f1 - f0, g1 - g0

    def at(r):
        p, q = g.weights(np.log(rho) - np.log1p(r * g.eta))
        return p * (f0 + r * df) + q * (g0 + r * dg)
    return np.maximum(np.maximum(at(r_lo), at(r_hi)),
                      _interior(g, f0, f1, g0, g1, rho, r_lo, r_hi))


def _step_upper(g: _Grid, w: np.ndarray, n: int) -> np.ndarray:
    """Upper bounds of W_k at x_0..x_{n-1} from those of W_{k-1} (``w``, stored from grid
    index -m, long enough), by the cell maxima over t in [0, eps]: cell s = 1..m of x_i is
    [x_{i-s}, x_{i-s+1}] (t from s h down to (s - 1) h), all cells at once; the cells' ends
    are the grid t, shared by neighbouring cells (:func:`_step_lower`'s sum)."""
    m = g.m
    s = np.arange(1, m + 1)[:, None]
    j = np.arange(n)[None, :] - s + m                 # stored index of each cell's left end
    inner = _interior(g, w[j], w[j + 1], w[j + m], w[j + m + 1], np.exp(s * g.h), 0.0, 1.0)
    ends = _grid_max(g, w, n)
    return np.minimum(np.maximum(ends, np.max(inner, axis=0)) * (1 + 16 * _U), 1.0)


def _grid_max(g: _Grid, w: np.ndarray, n: int) -> np.ndarray:
    """max over the grid t = s h, s = 0..m, of p_t w(x_i - t) + (1 - p_t) w(x_i - t + eps)."""
    m = g.m
    s = np.arange(m + 1)[:, None]
    p, q = g.weights(g.h * s)
    i = np.arange(n)[None, :]
    return np.max(p * w[i - s + m] + q * w[i - s + 2 * m], axis=0)


def _step_lower(g: _Grid, w: np.ndarray, n: int) -> np.ndarray:
    """Lower bounds of W_k at x_0..x_{n-1}: the best grid t = s h, s = 0..m (actual
    strategies), from lower bounds of W_{k-1} (``w`` stored from grid index -m)."""
    return _grid_max(g, w, n) * (1 - 16 * _U)


def _stored(g: _Grid, pos: np.ndarray, fill: float, upper: bool) -> np.ndarray:
    """W at grid indices -m .. len(pos) + 2m + 1, stored from 0: the swap identity below 0
    (from the values at 1..m, ``fill`` where ``pos`` ends before), ``pos`` from 0, ``fill``
    past its end."""
    m = g.m
    full = np.concatenate([pos, np.full(max(0, m + 1 - pos.size), fill)])
    neg = _swap(full[m:0:-1], g.h * np.arange(m, 0, -1, dtype=float), upper)
    return np.concatenate([neg, pos, np.full(2 * m + 2, fill)])


@dataclasses.dataclass(frozen=True)
class Ladder:
    """Bounds of W_{T-1} on the grid (stored from index -m, see :func:`_stored`), from which
    the last step is taken at any eps' (:meth:`upper_at`, :meth:`lower_at`)."""

    grid: _Grid
    steps: int
    up: np.ndarray
    low: np.ndarray

    def upper_at(self, x: float) -> float:
        """Upper bound of W_T(e^x): the last step's supremum over t taken at x itself."""
        if x < 0:
            return float(min(1.0, (-math.expm1(x) + math.exp(x) * self.upper_at(-x))
                             * (1 + 8 * _U)))
        g, m = self.grid, self.grid.m
        if x >= self.steps * g.eps0:
            return 0.0
        jt = int(math.floor(x / g.h))                 # the cell holding c
        r0 = min(1.0, max(0.0, math.expm1(x - jt * g.h) / g.eta))
        s = np.arange(m + 1)                          # cells jt - s: partial at both ends
        lo = np.where(s == m, r0, 0.0)
        hi = np.where(s == 0, r0, 1.0)
        j = jt - s
        k = self._k(j)
        v = _cell_max(g, self.up[k], self.up[k + 1], self.up[k + m], self.up[k + m + 1],
                      np.exp(x - j * g.h), lo, hi)
        return min(1.0, float(np.max(v)) * (1 + 16 * _U))

    def lower_at(self, x: float) -> float:
        """Lower bound of W_T(e^x): the last step with t = x - x_j (an actual strategy)."""
        if x < 0:
            return max(0.0, (-math.expm1(x) + math.exp(x) * self.lower_at(-x)) * (1 - 8 * _U))
        g, m = self.grid, self.grid.m
        j = np.arange(int(math.ceil((x - g.eps0) / g.h)), int(math.floor(x / g.h)) + 1)
        t = np.clip(x - j * g.h, 0.0, g.eps0)
        p, q = g.weights(t)
        k = self._k(j)
        v = p * self.low[k] + q * self.low[k + m]
        return float(np.max(v) * (1 - 16 * _U)) if v.size else 0.0

    def _k(self, j):
        """Stored indices of grid indices j (clamped to the stored range: past the end the
        fill value is stored, which is the bound there)."""
        return np.minimum(np.asarray(j) + self.grid.m, self.up.size - self.grid.m - 2)


def dp_cost(eps0: float, steps: int, m: int, tiny: float = 0.0) -> float:
    """Cell updates :func:`ladder` makes: steps x m cells x the grid points in reach."""
    reach = min(steps * eps0, tail_end(eps0, steps, tiny))
    return float(steps) * m * (m * reach / eps0 + m)


def tail_end(eps0: float, steps: int, tiny: float) -> float:
    """An x past which W_k(e^x) <= tiny for every k <= steps: W_k <= W_T (a step with t = 0
    changes nothing) and W_T(e^x) <= exp((alpha - 1)(T eps(alpha) - x)) at every order
    (Chernoff, with the RDP of T adaptive eps0-BR runs, :func:`~dpamp.mechanisms.selection.
    br_rdp`); the best of a few orders. inf for tiny = 0."""
    from ..mechanisms.selection import br_rdp
    if tiny <= 0.0:
        return math.inf
    alpha = 1.0 + np.geomspace(1e-3, 1e4, 200)
    x = steps * br_rdp(eps0, alpha) + math.log(1.0 / tiny) / (alpha - 1.0)
    return float(np.min(x))


def ladder(eps0: float, steps: int, m: int, tiny: float = 0.0) -> Ladder:
    """Run the dynamic program for ``steps`` - 1 steps on the grid h = eps0 / m (the last
    step is taken at the query by the :class:`Ladder`). ``tiny`` > 0: the grid ends where
    every W_k is proven <= tiny (:func:`tail_end`), which moves the answer by at most
    steps x tiny."""
    if not 0 < eps0 <= MAX_EPS:
        raise OutOfReach(f"the bounded-range dynamic program takes 0 < eps <= {MAX_EPS:g} "
                         f"(got {eps0:g})")
    g = _Grid(float(eps0), int(m))
    reach = tail_end(eps0, steps, tiny) / g.h
    top = steps * g.m + 1 if reach > steps * g.m else int(math.ceil(reach)) + 1
    up = _stored(g, np.zeros(1), 0.0, True)
    low = _stored(g, np.zeros(1), 0.0, False)
    for k in range(1, steps):
        n = min(k * g.m + 1, top)
        fill = 0.0 if n == k * g.m + 1 else tiny       # W_k = 0 from k eps on, exactly
        u = np.minimum.accumulate(_step_upper(g, up, n))
        up = _stored(g, u, fill, True)
        low = _stored(g, _step_lower(g, low, n), 0.0, False)
    return Ladder(g, steps, up, low)


def delta_bracket(lad: Ladder, eps: float) -> tuple[float, float]:
    """(lower, upper) of the optimal adaptive delta at eps."""
    return lad.lower_at(eps), lad.upper_at(eps)


def epsilon_bracket(lad: Ladder, delta: float, iterations: int = 60) -> tuple[float, float]:
    """(lower, upper) of the smallest eps with W_T(e^eps) <= delta: the upper end by bisection
    on the non-increasing upper bound (an eps where it is <= delta is proven), the lower end
    the largest eps found where the lower bound still exceeds delta (any such eps is below
    the true value)."""
    top = lad.steps * lad.grid.eps0
    if lad.upper_at(0.0) <= delta:
        hi = 0.0
    else:
        lo, hi = 0.0, top
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if lad.upper_at(mid) > delta else (lo, mid)
    if lad.lower_at(0.0) <= delta:
        return 0.0, hi
    lo2, hi2 = 0.0, hi
    for _ in range(iterations):
        mid = 0.5 * (lo2 + hi2)
        lo2, hi2 = (mid, hi2) if lad.lower_at(mid) > delta else (lo2, mid)
    return lo2, hi
