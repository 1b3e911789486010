"""The Skellam mechanism: f(x) + X with X = N1 - N2, N1, N2 independent Poisson(mu), for an
integer-valued query f of sensitivity Delta (a positive integer).

Agarwal, Kairouz & Liu, "The Skellam Mechanism for Differentially Private Federated Learning",
NeurIPS 2021 (AKL21). Var X = 2 mu (their parameter is that variance: AKL21's mu is 2 mu here);
sums of independent Skellam noises are Skellam, so clients under secure aggregation can each add
a share.

The law. P[X = k] = f(k) = e^{-2 mu} I_|k|(2 mu) (I the modified Bessel function of the first
kind; scipy's ``ive(k, 2 mu)`` is exactly this). f is symmetric and log-concave (a convolution of
log-concave laws), and I_nu(z) decreases in nu >= 0.

The pair. (P, Q) = (X + Delta, X), loss L(x) = log f(x - Delta) - log f(x): non-decreasing in x
(log-concavity), unbounded (f(x-1)/f(x) grows like x / mu), so not pure DP. Symmetric (x ->
Delta - x exchanges P and Q) and attained by two neighbours whose query values differ by Delta.

Two bounds used below (x >= 1, z = 2 mu):
* ratio: Amos (1974, Math. Comp. 28, "Computation of modified Bessel functions and their
  ratios") I_{nu+1}(z)/I_nu(z) >= z/(nu + 1 + sqrt((nu + 1)^2 + z^2)), nu >= 0, so
  f(x - 1)/f(x) = I_{x-1}(z)/I_x(z) <= (x + sqrt(x^2 + 4 mu^2))/(2 mu) = e^{asinh(x / (2 mu))};
* Chernoff: E e^{t X} = e^{2 mu (cosh t - 1)}, so P[X >= x] <= exp(-x asinh(x/(2 mu)) +
  sqrt(x^2 + 4 mu^2) - 2 mu) (t = asinh(x / (2 mu))).

Truncation (:meth:`Skellam.truncated_pair`): the outcomes S = [-K, K] u [Delta - K, Delta + K], K
the largest k with f(k) >= e^{-700}; P(S^c), Q(S^c) <= P[|X| > K] <= 2 Chernoff(K + 1).

Rényi divergence (exact up to the tails): sum_x P(x)^alpha Q(x)^(1-alpha) over |x| <= K, plus
- x > K (>= Delta): each term is Q(x) (P(x)/Q(x))^alpha <= e^{phi(x)}, phi(x) = -(x - alpha
  Delta) asinh(x/(2 mu)) + sqrt(x^2 + 4 mu^2) - 2 mu (the two bounds), phi concave, so the sum
  is at most e^{phi(K+1)} / (1 - e^{phi'(K+1)}) where phi'(K+1) < 0 (else unbounded: inf);
- x < -K: P(x) <= Q(x) there, so the terms are at most Q(x): at most Chernoff(K + 1).
AKL21's own closed-form bound (for their variance 2 mu) is checked against this sum in the tests.

Rounding. scipy's ``ive`` (Amos's algorithms) carries no proven error bound; measured against
mpmath (tests/test_skellam.py) its relative error grows with |log f| and mu (1.8e-12 at mu = 3e4,
log f = -700). dpamp assumes IVE_C u (|log f| + 16) per value and charges it: in the PLD as a
relative mass error (``mass_rel_err``), in the RDP curves as a padding of each term.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.rounding import ulps_up
from .base import Mechanism
from .discrete_gaussian import LOG_FLOOR, TruncatedPair

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_U = 2.0 ** -52
#: assumed relative error of scipy's ive: IVE_C ulps per unit of |log f| (+16); measured <= ~11
IVE_C = 128.0


def log_chernoff(mu: float, x: np.ndarray) -> np.ndarray:
    """log of the Chernoff bound on P[X >= x] (x >= 0), rounded up."""
    x = np.asarray(x, dtype=float)
    r = np.sqrt(x * x + 4.0 * mu * mu)
    v = -x * np.arcsinh(x / (2.0 * mu)) + x * x / (r + 2.0 * mu)
    return np.minimum(v + 16 * _U * (np.abs(v) + 1.0) + 1e-300, 0.0)


def log_pmf(mu: float, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log f(k), its assumed absolute error bound), vectorised (-inf where ive underflows)."""
    from scipy.special import ive
    with np.errstate(divide="ignore"):
        lf = np.log(ive(np.abs(np.asarray(k, dtype=float)), 2.0 * mu))
    err = IVE_C * _U * (np.where(np.isfinite(lf), np.abs(lf), 0.0) + 16.0)
    return lf, err


def _window(mu: float) -> int:
    """K: the largest k >= 0 with f(k) >= e^LOG_FLOOR (bisection: f falls in k >= 0)."""
    hi = 1
    while float(log_chernoff(mu, np.array([float(hi)]))[0]) > LOG_FLOOR:
        hi *= 2
    lo = 0                                    # f(0) >= e^LOG_FLOOR (1/sqrt(4 pi mu) far above)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if float(log_pmf(mu, np.array([mid]))[0][0]) >= LOG_FLOOR:
            lo = mid
        else:
            hi = mid
    return lo


@dataclasses.dataclass(frozen=True)
class Skellam(Mechanism):
    """Skellam mechanism (AKL21): noise Poisson(``mu``) - Poisson(``mu``) (variance 2 mu) on an
    integer query of integer ``sensitivity`` Delta >= 1.

    RDP: the exact Rényi sum over |x| <= K with proven tail bounds (module docstring), padded by
    the assumed error of scipy's ive; lower curve: the sum alone, padded down. Not pure DP."""

    mu: float
    sensitivity: int = 1
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __post_init__(self):
        object.__setattr__(self, "mu", V.positive("mu", self.mu))
        object.__setattr__(self, "sensitivity", V.integer("sensitivity", self.sensitivity, low=1))
        object.__setattr__(self, "relation", as_relation(self.relation))

    def pure_epsilon(self) -> float:
        return math.inf

    def _terms(self):
        """(K, log P, log Q, error of each) over x = -K..K."""
        k = _window(self.mu)
        x = np.arange(-k, k + 1, dtype=float)
        lp, ep = log_pmf(self.mu, x - self.sensitivity)
        lq, eq = log_pmf(self.mu, x)
        return k, lp, lq, ep, eq

    def _curve(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) of the Rényi curve at finite alpha > 1 (module docstring)."""
        k, lp, lq, ep, eq = self._terms()
        d, mu = float(self.sensitivity), self.mu
        if k < self.sensitivity:
            # the two laws barely overlap (Delta beyond ~50 standard deviations): no bound
            return np.full(alpha.shape, np.inf), np.zeros(alpha.shape)
        a = alpha[:, None]
        with np.errstate(invalid="ignore"):
            t = np.where(np.isfinite(lp), a * lp + (1.0 - a) * lq, -np.inf)
        te = a * ep + (a - 1.0) * eq + 8 * _U * (a * np.abs(np.where(np.isfinite(lp), lp, 0.0))
                                                 + a * np.abs(lq) + 1.0)
        top = np.max(t, axis=1, keepdims=True)
        w = np.exp(t - top)
        s = np.sum(w, axis=1)
        err = np.sum(w * te, axis=1) / s + (lp.size + 4) * _U     # relative, weighted
        log_s = np.log(s) + top[:, 0]
        # the tails (module docstring), relative to the sum
        x1 = float(k + 1)
        r = math.sqrt(x1 * x1 + 4 * mu * mu)
        ash = math.asinh(x1 / (2 * mu))
        phi = -(x1 - alpha * d) * ash + x1 * x1 / (r + 2 * mu)
        slope = -ash + alpha * d / r
        with np.errstate(over="ignore", divide="ignore"):
            upper_tail = np.where(slope < 0, phi - np.log(-np.expm1(np.minimum(slope, -1e-300))),
                                  np.inf)
        lower_tail = float(log_chernoff(mu, np.array([x1]))[0])
        tails = np.logaddexp(upper_tail, lower_tail) + 1e-12
        lam = alpha - 1.0
        up = np.logaddexp(log_s + err, tails) + 8 * _U * np.abs(log_s)
        lo = log_s - err - 8 * _U * np.abs(log_s)
        return (np.maximum(ulps_up(up / lam * (1 + 4 * _U), 2), 0.0),
                np.maximum(lo / lam * (1 - 4 * _U), 0.0))

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        out = np.full(alpha.shape, np.inf)
        fin = np.isfinite(alpha)
        if fin.any():
            out[fin] = self._curve(alpha[fin])[0]
        return out

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained curve over |x| <= K, padded down (the pair is one pair of neighbours)."""
        a = V.orders(alpha).astype(float)
        out = np.full(a.shape, np.inf)
        fin = np.isfinite(a)
        if fin.any():
            out[fin] = self._curve(a[fin])[1]
        return out if out.ndim else float(out)

    def truncated_pair(self, max_atoms: int) -> TruncatedPair:
        """The truncated pair of the module docstring over the outcomes of S (no lattice).
        ValueError if S has more than ``max_atoms`` outcomes."""
        k, d = _window(self.mu), self.sensitivity
        if d <= 2 * k + 1:
            x = np.arange(-k, d + k + 1, dtype=float)
        else:
            x = np.concatenate([np.arange(-k, k + 1), np.arange(d - k, d + k + 1)]).astype(float)
        if x.size > max_atoms:
            raise ValueError(f"Skellam(mu={self.mu:g}) has {x.size} outcomes of mass above "
                             f"e^{LOG_FLOOR:g}, more than {max_atoms}")
        lp, ep = log_pmf(self.mu, x - d)
        lq, eq = log_pmf(self.mu, x)
        with np.errstate(invalid="ignore"):
            loss = lp - lq
        log_tail = math.log(2.0) + float(log_chernoff(self.mu, np.array([k + 1.0]))[0])
        return TruncatedPair(x, loss, lp, lq, np.maximum(ep, eq), log_tail, None)
