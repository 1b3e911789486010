"""RDP -> (epsilon, delta) conversions, optimised over real orders.

classic  (Wang et al. 2019, Lemma 6 / eq. 2.2): eps = eps(alpha) + log(1/delta) / (alpha - 1)
improved (Steinke 2022, Lemma 33 item 8 = Prop. 14):
    delta = e^{-(alpha-1)(eps - eps(alpha))} (1/alpha) (1 - 1/alpha)^{alpha-1}, i.e.
    eps = eps(alpha) + [log(1/delta) + (alpha-1) log(1 - 1/alpha) - log(alpha)] / (alpha - 1).

Every order alpha gives a valid bound, so the optimisation only affects tightness, never
soundness. Soundness in floating point: the curve is read through :func:`upper_curve` (RDP is a
divergence, so >= 0; a value below 0 or NaN is rounding or a bug and is replaced by its proven
limit, 0 or inf; every value is moved up by a relative 2^-40, far above the few ulps that a sum
of composed curves can lose), and each objective carries the rounding error of its own terms
(``_pad``: 2^-50 times the sum of their magnitudes), so every value it returns is an upper
bound of the real formula at that order. It follows Wang et al. 2019, Algorithm 5: a coarse
geometric ("doubling") sweep over lambda = alpha - 1, extended by doubling while the optimum sits at
the top edge, then four zoom-in passes around the best point (the bisection step, done on
vectorised grids).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..core.rounding import TINY

_CURVE_REL = 2.0 ** -40


def upper_curve(curve: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The RDP curve as an outward-rounded upper bound: never below 0 (a Rényi divergence is
    >= 0), NaN read as inf, and every value moved up by a relative 2^-40."""
    def up(alpha):
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.asarray(curve(alpha), dtype=float)
            v = np.where(np.isnan(v), np.inf, np.maximum(v, 0.0))
            return v * (1.0 + _CURVE_REL)
    return up


def _pad(*terms) -> np.ndarray:
    """A bound on the rounding error of a sum of a few floating-point terms, each computed to
    within a few ulps: 2^-50 (4.5 ulps) times the sum of their magnitudes (NaN-free)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = sum(np.abs(np.asarray(x, dtype=float)) for x in terms)
    return np.where(np.isnan(s), np.inf, s) * 2.0 ** -50


def eps_at_orders(alpha: np.ndarray, rdp: np.ndarray, log_inv_delta: float,
                  improved: bool = True) -> np.ndarray:
    """epsilon(delta) at each order (vectorised); log_inv_delta = log(1/delta)."""
    lam = alpha - 1.0
    t1: np.ndarray | float
    t2: np.ndarray | float
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if improved:
            t1, t2 = np.log1p(-1.0 / alpha), np.log(alpha) / lam
        else:
            t1 = t2 = 0.0
        t0 = log_inv_delta / lam
        out = rdp + t0 + t1 - t2
        out = out + _pad(rdp, t0, t1, t2)
    out = np.where(np.isnan(out), np.inf, out)
    return np.maximum(out, 0.0)


def log_delta_at_orders(alpha: np.ndarray, rdp: np.ndarray, epsilon: float,
                        improved: bool = True) -> np.ndarray:
    """log delta(epsilon) at each order (vectorised)."""
    lam = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t0, t1 = lam * rdp, lam * epsilon
        t2: np.ndarray | float
        t3: np.ndarray | float
        if improved:
            t2, t3 = lam * np.log1p(-1.0 / alpha), np.log(alpha)
        else:
            t2 = t3 = 0.0
        out = t0 - t1 + t2 - t3
        out = out + _pad(t0, t1, t2, t3)
    out = np.where(np.isnan(out), np.inf, out)
    return np.minimum(out, 0.0)


#: the first sweep's lambdas = alpha - 1: every integer order up to 12 and sparser integers up
#: to 64 (the top is extended while the best order sits there: Wang et al. 2019, Alg. 5's doubling);
#: orders in (1, 2) are swept only when order 2 is the best integer: geometrically below 1.1, then
#: dp-accounting's lattice of tenths
_SWEEP = np.concatenate([np.arange(1.0, 12.0), [13.0, 15, 19, 23, 27, 31, 39, 47, 55, 63]])
_BELOW_2 = np.concatenate([np.geomspace(1e-3, 0.1, 9)[:-1], np.arange(1, 10) / 10.0])
_WIDE_BRACKET = 24     # an integer bracket with more interior integers is thinned first
_VERTEX_STEPS = 4      # parabola vertices tried at most (each one vectorised call of one order)
_STENCIL = np.array([-1 / 16, -1 / 32, 0.0, 1 / 32, 1 / 16])
_KL_ORDER = 1e-6       # lambda of the Bretagnolle-Huber test of epsilon_from_rdp


class _Search:
    """The orders tried so far (lambda = alpha - 1, sorted) with the curve's and the
    objective's values there: every order is evaluated once, in a few vectorised calls."""

    def __init__(self, curve: Callable[[np.ndarray], np.ndarray],
                 objective: Callable[[np.ndarray, np.ndarray], np.ndarray]):
        self.curve, self.objective = curve, objective
        self.lam, self.rdp, self.vals = np.empty(0), np.empty(0), np.empty(0)

    def add(self, lam: np.ndarray) -> None:
        lam = np.unique(lam[lam > 0])
        if self.lam.size:   # orders within a few ulps of one tried are the same order
            j = np.clip(np.searchsorted(self.lam, lam), 1, self.lam.size - 1)
            gap = np.minimum(np.abs(lam - self.lam[j - 1]), np.abs(lam - self.lam[j]))
            lam = lam[gap > 1e-12 * lam]
        if lam.size:
            rdp = self.curve(1.0 + lam)
            order = np.argsort(np.concatenate([self.lam, lam]), kind="stable")
            self.lam = np.concatenate([self.lam, lam])[order]
            self.rdp = np.concatenate([self.rdp, rdp])[order]
            self.vals = np.concatenate([self.vals, self.objective(1.0 + lam, rdp)])[order]

    def at(self, lam: float) -> float:
        """The curve's value at an order already tried."""
        return float(self.rdp[np.searchsorted(self.lam, lam)])

    def best(self) -> tuple[int, float, float, float]:
        """Index of the best order (the smallest on ties), its lambda and its neighbours'."""
        i = int(np.argmin(self.vals))
        lo = self.lam[i - 1] if i > 0 else self.lam[0] / 2
        hi = self.lam[i + 1] if i + 1 < self.lam.size else self.lam[i] * 2
        return i, float(self.lam[i]), float(lo), float(hi)

    def downhill(self, j: int) -> int:
        """The local minimum of the values tried reached from index ``j`` by descending."""
        while True:
            if j > 0 and self.vals[j - 1] < self.vals[j]:
                j -= 1
            elif j + 1 < self.vals.size and self.vals[j + 1] < self.vals[j]:
                j += 1
            else:
                return j

    def vertex(self, i: int | None = None) -> tuple[np.ndarray, float]:
        """The vertex of the parabola through the order at index ``i`` (default: the best) and
        its two neighbours, where it lies strictly between them (else nothing), and the
        parabola's value there."""
        i = int(np.argmin(self.vals)) if i is None else i
        if not (0 < i < self.lam.size - 1) or not np.all(np.isfinite(self.vals[i - 1: i + 2])):
            return np.empty(0), math.nan
        (x0, x1, x2), (f0, f1, f2) = self.lam[i - 1: i + 2], self.vals[i - 1: i + 2]
        with np.errstate(all="ignore"):     # objectives near the double range: no vertex
            d0, d2 = (f0 - f1) / (x0 - x1), (f2 - f1) / (x2 - x1)
            c = (d2 - d0) / (x2 - x0)           # f = f1 + b (x - x1) + c (x - x1)^2
            b = d0 - c * (x0 - x1)
            v = x1 - b / (2 * c) if c > 0 else math.nan
            predicted = f1 - b * b / (4 * c) if c > 0 else math.nan
        if not (x0 < v < x2 and math.isfinite(predicted)):
            return np.empty(0), math.nan
        return np.array([v]), float(predicted)


def _minimise(search: _Search) -> tuple[float, float]:
    """Minimise the objective over alpha > 1; returns (best value, argmin alpha).

    Every order gives a valid bound, so the search affects tightness only. It is Wang et al. 2019,
    Alg. 5 arranged for curves that are cheap at integer orders (Steinke 2022, Thm 34) and dearer
    between them (the exact fractional series of Mironov, Talwar & Zhang 2019), each stage one
    vectorised call: the integer sweep, extended by doubling while its best order is the largest
    tried; the bracket around the best integer narrowed over the integers inside it (every integer
    once it is narrow); the orders in (1, 2) when 2 is the best integer; the tenths of a unit
    around the best integer (or 20 steps across the bracket below 2); and the vertex of the
    parabola through the best order and its neighbours, with four orders close around it (at
    1/32 and 1/16 of its distance from that best order), repeated until the parabola predicts
    the value at its vertex to 1e-6; the same in a second basin (a local minimum of the orders
    tried within 1 % of the best), where there is one. The orders tried contain
    dp-accounting's (tenths below 11, integers above) near the best, so where the objective is
    unimodal the value is no larger than its minimum over them."""
    search.add(_SWEEP)
    i, lam, lo, hi = search.best()
    while i == search.lam.size - 1 and lam < 1e6 and np.isfinite(search.vals[i]):
        search.add(np.round(lam * np.array([1.25, 1.5, 1.75, 2.0])))
        i, lam, lo, hi = search.best()
    while lam >= 1.0 and hi - lo > 2.0 and i < search.lam.size - 1 and \
            np.isfinite(search.vals[i]):
        if hi - lo - 1 > _WIDE_BRACKET:
            inner = np.round(np.linspace(lo, hi, 17))
        else:
            inner = np.arange(lo + 1.0, hi)
        search.add(inner)
        i, lam, lo, hi = search.best()
    if lam == 1.0:
        search.add(_BELOW_2)
        i, lam, lo, hi = search.best()
    if not np.isfinite(search.vals[i]):
        return float(search.vals[i]), 1.0 + lam
    search.add(lam + 0.1 * np.arange(-9, 10) if lam >= 1.0 else np.linspace(lo, hi, 21))
    best = int(np.argmin(search.vals))
    # a second basin (interpolated fractional orders can make the objective a sawtooth: a
    # subsampled Laplace's had its minimum at order 1.755 beside the integer 2, 0.1 % lower,
    # with the orders tried between them higher than both): its local minimum, where it is
    # within 1 % of the best
    others = [i for i in range(1, search.vals.size - 1)
              if search.vals[i] < min(search.vals[i - 1], search.vals[i + 1]) and i != best
              and search.vals[i] <= search.vals[best] + 0.01 * abs(search.vals[best])]
    second = float(search.lam[min(others, key=lambda i: search.vals[i])]) if others else None
    _refine(search, best)
    if second is not None:
        _refine(search, int(np.searchsorted(search.lam, second)))
    i, lam, _, _ = search.best()
    return float(search.vals[i]), 1.0 + lam


def _refine(search: _Search, j: int) -> None:
    """Parabola vertices in the basin of the order at index ``j``, until the parabola predicts
    the value at its vertex to 1e-6 relative: the value is then much closer to the basin's
    minimum than that (1e-8 relative on the DP-SGD plan W1)."""
    for _ in range(_VERTEX_STEPS):
        i = search.downhill(j)
        here = float(search.lam[i])
        v, predicted = search.vertex(i)
        if not v.size:
            break
        # with the vertex, four orders close around it, in the same call: the vertex's own
        # error is typically a small fraction of its distance from the best order so far
        search.add(v[0] + abs(v[0] - here) * _STENCIL)
        j = int(np.argmin(np.abs(search.lam - v[0])))
        got = float(search.vals[j])
        if not abs(got - predicted) > 1e-6 * abs(got):
            break


def epsilon_from_rdp(curve: Callable[[np.ndarray], np.ndarray], delta: float,
                     improved: bool = True, pure_epsilon: float = math.inf):
    """Smallest epsilon over alpha for a given delta (> 0), capped by the pure epsilon.
    Returns (epsilon, alpha used; inf alpha means the pure-DP bound was better)."""
    log_inv_delta = -math.log(delta)
    search = _Search(upper_curve(curve),
                     lambda a, r: eps_at_orders(a, r, log_inv_delta, improved))
    search.add(_SWEEP)
    # (0, delta)-DP holds when delta >= TV; TV <= sqrt(1 - e^{-KL}) (Bretagnolle-Huber) and
    # KL <= D_alpha for every alpha > 1, so a small-order RDP value certifies epsilon = 0. The
    # order 1 + 1e-6 is tried only where it can succeed unless the curve grows more than a
    # millionfold from there to order 2 (a matter of tightness only).
    if delta * delta >= -math.expm1(-search.at(1.0)) * 1e-6:
        search.add(np.array([_KL_ORDER]))
        kl_bound = search.at(_KL_ORDER)
        if delta * delta * (1.0 - 2.0 ** -50) >= -math.expm1(-kl_bound) * (1.0 + 2.0 ** -50):
            return 0.0, 1.0 + _KL_ORDER
    val, alpha = _minimise(search)
    if pure_epsilon <= val:
        return pure_epsilon, math.inf
    return val, alpha


def delta_from_rdp(curve: Callable[[np.ndarray], np.ndarray], epsilon: float,
                   improved: bool = True, pure_epsilon: float = math.inf):
    """Smallest delta over alpha for a given epsilon; 0 only when epsilon >= pure epsilon (an
    upper bound of the real pure epsilon). A delta below the double range is reported as the
    smallest positive double, a proven upper bound, never as 0."""
    if epsilon >= pure_epsilon:
        return 0.0, math.inf
    val, alpha = _minimise(_Search(upper_curve(curve), lambda a, r: log_delta_at_orders(
        a, r, epsilon, improved)))
    return min(1.0, max(math.exp(val), TINY)), alpha
