"""The discrete Gaussian mechanism: f(x) + Z with P[Z = k] proportional to exp(-k^2 / (2 sigma^2)),
k in Z, for an integer-valued query f of sensitivity Delta (a positive integer).

Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020
(CKS20). sigma is the scale parameter, not the standard deviation (which is slightly below it).

Normalising constant. Theta(c) = sum_k exp(-(k - c)^2 / (2 sigma^2)), so P[Z = k] =
exp(-k^2/(2 sigma^2)) / Theta(0). By Poisson summation
    Theta(c) = sigma sqrt(2 pi) [1 + 2 sum_{n >= 1} e^{-2 pi^2 sigma^2 n^2} cos(2 pi n c)],
so Theta(c) <= Theta(0) for every real c, with equality at the integers.

The pair. Neighbours differ by Delta in the query, so the dominating pair is (P, Q) = (Z + Delta,
Z). Its privacy loss is linear in the outcome x:
    L(x) = log P(x)/Q(x) = (x^2 - (x - Delta)^2) / (2 sigma^2) = (Delta / sigma^2)(x - Delta/2),
so the losses form the lattice (2x - Delta) s, s = Delta / (2 sigma^2): consecutive outcomes are
Delta / sigma^2 apart in loss (every loss is an integer multiple of s). The pair is symmetric
(x -> Delta - x exchanges P and Q) and attained by any two neighbours whose query values differ by
Delta. It has infinite support and unbounded loss: not pure DP.

Rényi divergence (exact): with lambda = alpha - 1,
    sum_x P(x)^alpha Q(x)^(1-alpha) = e^{alpha lambda Delta^2/(2 sigma^2)} Theta(alpha Delta)/Theta(0)
(complete the square: alpha (x - Delta)^2 + (1 - alpha) x^2 = (x - alpha Delta)^2 - alpha lambda
Delta^2), so
    eps(alpha) = alpha Delta^2 / (2 sigma^2) + log(Theta(alpha Delta) / Theta(0)) / (alpha - 1)
              <= alpha Delta^2 / (2 sigma^2),
the concentrated-DP bound of CKS20 (equality where alpha Delta is an integer; the derivation
here is self-contained). So the discrete Gaussian is rho-zCDP with rho = Delta^2 / (2 sigma^2),
the continuous Gaussian's.

Truncation (:meth:`DiscreteGaussian.lattice_pair`): the outcomes S = [-K, K] u [Delta - K,
Delta + K] with K the largest integer with exp(-K^2/(2 sigma^2)) / Theta(0) >= e^{-700}; outside
S both P and Q have mass at most P[|Z| > K] <= 2 P[Z = K + 1] / (1 - e^{-(2K + 3)/(2 sigma^2)})
(the ratio P[Z = K + 1 + j] / P[Z = K + 1] = e^{-(j(2K + 2) + j^2)/(2 sigma^2)} is at most
e^{-j(2K + 3)/(2 sigma^2)} for j >= 1: a geometric series).
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.rounding import ulps_up
from .base import Mechanism

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_U = 2.0 ** -52
#: the truncated support keeps the outcomes of mass >= e^LOG_FLOOR (normal doubles)
LOG_FLOOR = -700.0
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: below this sigma Theta is summed directly, above it by Poisson summation
_SIGMA_DIRECT = 0.5


class TruncatedPair(NamedTuple):
    """A pair on integer outcomes truncated to a set S (the discrete Gaussian's, Skellam's):
    the outcomes x of S, their losses, log P- and log Q-masses with an absolute bound on their
    error, the log of a proven bound on P(S^c) and on Q(S^c), and the lattice step of the
    losses (None: no lattice)."""
    x: np.ndarray
    loss: np.ndarray
    lp: np.ndarray
    lq: np.ndarray
    err: np.ndarray
    log_tail: float
    step: float | None


def log_theta_ratio(sigma: float, phi: np.ndarray, dphi: np.ndarray | float = 0.0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Proven bounds (upper, lower) on log(Theta(c) / Theta(0)) <= 0 at c = phi + an integer,
    phi in [-1/2, 1/2] known to within ``dphi`` (vectorised; Theta: the module docstring)."""
    phi = np.asarray(phi, dtype=float)
    dphi = np.broadcast_to(np.asarray(dphi, dtype=float), phi.shape)
    if sigma < _SIGMA_DIRECT:
        lt, err = _log_theta_direct(sigma, phi, dphi)
        lt0, err0 = _log_theta_direct(sigma, np.zeros(1), np.zeros(1))
        lr = lt - lt0[0]
        e = err + err0[0] + 4 * _U * (np.abs(lt) + abs(lt0[0]))
        return np.minimum(lr + e, 0.0), np.minimum(lr - e, 0.0)
    # Poisson summation: Theta(c)/Theta(0) = 1 - 4 S1 / (1 + 2 S0), S0 = sum E_n,
    # S1 = sum E_n sin^2(pi n c), E_n = exp(-2 pi^2 sigma^2 n^2) (1 - cos = 2 sin^2)
    a1 = 2.0 * math.pi ** 2 * sigma * sigma
    n_max = max(1, int(math.sqrt(745.0 / a1)))
    n = np.arange(1, n_max + 1, dtype=float)
    e_n = np.exp(-a1 * n * n)
    s0 = float(e_n.sum())
    flat, dflat = phi.ravel()[:, None], dphi.ravel()[:, None]
    s1 = np.sum(e_n * np.sin(math.pi * n * flat) ** 2, axis=1).reshape(phi.shape)
    # sin^2 to within (pi n + 2) u plus pi n dphi (its slope is at most pi n), absolutely
    abs1 = np.sum(e_n * (2 * _U * (math.pi * n + 2.0) + math.pi * n * dflat),
                  axis=1).reshape(phi.shape)
    # the terms left out: n > n_max, each ratio E_{n+1}/E_n <= E_1
    rest = math.exp(-a1 * (n_max + 1) ** 2) / (1.0 - math.exp(-a1)) + 5e-324
    rel = 8 * _U * (a1 * n_max * n_max + 8.0)      # each E_n to this relative error
    x_lo = 4.0 * np.maximum(s1 * (1 - rel) - abs1, 0.0) / (1.0 + 2.0 * (s0 + rest) * (1 + rel))
    x_hi = 4.0 * (s1 * (1 + rel) + abs1 + rest) / (1.0 + 2.0 * s0 * (1 - rel))
    up = np.log1p(-x_lo) + 4 * _U * x_lo
    lo = np.log1p(-np.minimum(x_hi, 0.5)) - 4 * _U * x_hi - 5e-324
    return np.minimum(up, 0.0), np.minimum(lo, 0.0)


def _log_theta_direct(sigma: float, phi: np.ndarray, dphi: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(log Theta(phi), its absolute error bound) by the direct sum over |k| <= M, the rest
    bounded (sigma < 1/2: a few dozen terms); phi known to within dphi."""
    m = int(math.ceil(0.5 + sigma * math.sqrt(2.0 * 745.0))) + 1
    k = np.arange(-m, m + 1, dtype=float)
    dev = k[None, :] - phi.ravel()[:, None]
    a = dev * dev / (2.0 * sigma * sigma)
    t = np.exp(-a)
    total = t.sum(axis=1)
    # |k - phi| >= m - 1/2 beyond: a geometric tail on either side
    r = math.exp(-(2.0 * m) / (2.0 * sigma * sigma))
    rest = 2.0 * math.exp(-(m - 0.5) ** 2 / (2.0 * sigma * sigma)) / (1.0 - r) + 5e-324
    weighted = np.sum(t * a, axis=1) / total
    # moving phi by dphi moves each exponent by |k - phi| dphi / sigma^2 (to first order)
    slope = np.sum(t * np.abs(dev), axis=1) / total / (sigma * sigma)
    d = dphi.ravel()
    err = 8 * _U * (weighted + 2.0 + a.shape[1]) + rest / total + 2.0 * slope * d
    return (np.log(total + rest)).reshape(phi.shape), err.reshape(phi.shape)


def log_theta0(sigma: float) -> tuple[float, float]:
    """(log Theta(0), its absolute error bound)."""
    if sigma < _SIGMA_DIRECT:
        lt, e = _log_theta_direct(sigma, np.zeros(1), np.zeros(1))
        return float(lt[0]), float(e[0])
    a1 = 2.0 * math.pi ** 2 * sigma * sigma
    n_max = max(1, int(math.sqrt(745.0 / a1)))
    n = np.arange(1, n_max + 1, dtype=float)
    s0 = float(np.exp(-a1 * n * n).sum())
    s0_hi = s0 * (1 + 8 * _U * (a1 * n_max ** 2 + 8)) + 2 * math.exp(-a1 * (n_max + 1) ** 2)
    v = math.log(sigma) + _LOG_SQRT_2PI + math.log1p(2.0 * s0)
    return v, 4 * _U * (abs(math.log(sigma)) + 2.0) + 2.0 * (s0_hi - s0) + 4 * _U * s0


@dataclasses.dataclass(frozen=True)
class DiscreteGaussian(Mechanism):
    """Discrete Gaussian mechanism (CKS20) with scale ``sigma`` > 0 (P[Z = k] proportional to
    exp(-k^2/(2 sigma^2))) on an integer query of integer ``sensitivity`` Delta >= 1.

    RDP (exact, module docstring): eps(alpha) = alpha Delta^2/(2 sigma^2) + log(Theta(alpha
    Delta)/Theta(0))/(alpha - 1), at most the continuous Gaussian's alpha Delta^2/(2 sigma^2)
    (CKS20); rho = Delta^2/(2 sigma^2)-zCDP. Not pure DP. Both curves carry their
    rounding bounds (the upper one never above the closed form, rounded up)."""

    sigma: float
    sensitivity: int = 1
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __post_init__(self):
        object.__setattr__(self, "sigma", V.positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", V.integer("sensitivity", self.sensitivity, low=1))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def rho(self) -> float:
        """Delta^2 / (2 sigma^2) (to a few roundings; ``zcdp`` rounds it up)."""
        d = float(self.sensitivity)
        return d * d / (2.0 * self.sigma * self.sigma)

    def pure_epsilon(self) -> float:
        return math.inf

    def _curve(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) of the exact curve at finite alpha > 1."""
        lam = alpha - 1.0
        c = lam * float(self.sensitivity)      # Theta is 1-periodic: Theta(alpha D) = Theta(c)
        phi = c - np.rint(c)
        # c is lam D to one rounding; far out (|c| > 2^20) the phase is not resolved: there
        # Theta(c) <= Theta(0) alone (upper) and the minimum over phases, at 1/2 (lower)
        far = np.abs(c) > 2.0 ** 20
        phi = np.where(far, 0.5, phi)
        up_lr, lo_lr = log_theta_ratio(self.sigma, phi, _U * np.abs(c))
        up_lr = np.where(far, 0.0, up_lr)
        closed = alpha * self.rho
        up = ulps_up(closed * (1 + 8 * _U) + up_lr / lam * (1 - 4 * _U), 4)
        up = np.minimum(up, ulps_up(closed, 8))
        lo = closed * (1 - 8 * _U) + lo_lr / lam * (1 + 4 * _U)
        return np.asarray(up, dtype=float), np.maximum(lo, 0.0)

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        out = np.full(alpha.shape, np.inf)
        fin = np.isfinite(alpha)
        if fin.any():
            out[fin] = self._curve(alpha[fin])[0]
        return out

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained curve less its rounding bound (the pair is one pair of neighbours)."""
        a = V.orders(alpha).astype(float)
        out = np.full(a.shape, np.inf)
        fin = np.isfinite(a)
        if fin.any():
            out[fin] = self._curve(a[fin])[1]
        return out if out.ndim else float(out)

    def lattice_pair(self, max_atoms: int) -> TruncatedPair:
        """The truncated pair of the module docstring: (x, loss, log P-mass, log Q-mass, their
        absolute error bound, log of the bound on P(S^c) and on Q(S^c), lattice step s) over
        the outcomes x of S. ValueError if S has more than ``max_atoms`` outcomes."""
        s2, d = self.sigma * self.sigma, self.sensitivity
        lt0, e0 = log_theta0(self.sigma)
        k = int(math.floor(self.sigma * math.sqrt(2.0 * max(-LOG_FLOOR - lt0, 0.0))))
        if d <= 2 * k + 1:
            x = np.arange(-k, d + k + 1, dtype=float)
        else:
            x = np.concatenate([np.arange(-k, k + 1), np.arange(d - k, d + k + 1)]).astype(float)
        if x.size > max_atoms:
            raise ValueError(f"DiscreteGaussian(sigma={self.sigma:g}) has {x.size} outcomes of "
                             f"mass above e^{LOG_FLOOR:g}, more than {max_atoms}")
        inv = 1.0 / (2.0 * s2)
        aq, ap = x * x * inv, (x - d) ** 2 * inv
        lq, lp = -aq - lt0, -ap - lt0
        err = 8 * _U * (np.maximum(aq, ap) + abs(lt0) + 1.0) + e0
        step = d * inv
        loss = (2.0 * x - d) * step
        # P(S^c), Q(S^c) <= P[|Z| > K] <= 2 P[Z = K + 1] / (1 - e^{-(2K + 3)/(2 sigma^2)})
        la = (k + 1.0) ** 2 * inv
        log_tail = (math.log(2.0) - la - lt0 - math.log(-math.expm1(-(2.0 * k + 3.0) * inv))
                    + 16 * _U * (la + abs(lt0) + 8.0) + e0)
        return TruncatedPair(x, loss, lp, lq, err, log_tail, step)
