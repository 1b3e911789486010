"""The discrete Laplace mechanism: f(x) + Z with P[Z = k] proportional to exp(-a |k|), k in Z,
for an integer-valued query f of sensitivity Delta (a positive integer).

Z is the two-sided geometric law of Ghosh, Roughgarden & Sundararajan 2009 ("Universally
utility-maximizing privacy mechanisms"), r = e^{-a}: P[Z = k] = (1 - r)/(1 + r) r^{|k|}; it is
dp-accounting's ``DiscreteLaplaceDpEvent(noise_parameter=a, sensitivity=Delta)``.

Its dominating pair (P, Q) = (Z, Z + Delta) has a finite privacy loss (a sufficient statistic):
L(k) = a(|k - Delta| - |k|) is a Delta for k <= 0, -a Delta for k >= Delta and a(Delta - 2k)
between, so the pair is exactly the Delta + 1 atoms j = 0..Delta of :meth:`log_atoms`:
    loss a(Delta - 2j), P-mass P_j, Q-mass P_{Delta - j},
    P_0 = 1/(1 + r), P_Delta = r^Delta/(1 + r), P_j = (1 - r)/(1 + r) r^j (0 < j < Delta).
The pair is symmetric ((Q, P) has the same loss law), attained by any two neighbours whose query
values differ by Delta, and pure (a Delta)-DP.
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

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_U = 2.0 ** -52


@dataclasses.dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    """Discrete Laplace mechanism with decay ``a`` > 0 (P[Z = k] ∝ exp(-a|k|)) on an integer
    query of integer ``sensitivity`` Delta >= 1: pure (a Delta)-DP.

    RDP (exact, from the finite pair of the module docstring), lambda = alpha - 1,
    b = a(2 alpha - 1), n = Delta - 1:
        (alpha - 1) eps(alpha) = log( e^{a Delta lambda}/(1 + r) + e^{-a Delta alpha}/(1 + r)
                                     + (1-r)/(1+r) e^{a Delta lambda} sum_{j=1}^{n} e^{-b j} ),
    the geometric sum in closed form; the upper curve is padded by its rounding error."""

    a: float
    sensitivity: int = 1
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __post_init__(self):
        object.__setattr__(self, "a", V.positive("a", self.a))
        object.__setattr__(self, "sensitivity", V.integer("sensitivity", self.sensitivity, low=1))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def eps0(self) -> float:
        """The pure epsilon a Delta (exact to one rounding; ``pure_epsilon`` rounds it up)."""
        return self.a * self.sensitivity

    def pure_epsilon(self) -> float:
        return ulps_up(self.eps0, 1)

    def log_atoms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(loss, log P-mass, log Q-mass, absolute error bound of each log mass) of the Delta + 1
        atoms of the dominating pair, j = 0..Delta (module docstring)."""
        a, d = self.a, self.sensitivity
        log1p_r = math.log1p(math.exp(-a))
        log_c = math.log(-math.expm1(-a)) - log1p_r
        j = np.arange(d + 1, dtype=float)
        lp = log_c - a * j
        lp[0], lp[-1] = -log1p_r, -log1p_r - a * d
        if d == 0:  # pragma: no cover - sensitivity >= 1
            lp[0] = 0.0
        loss = a * (d - 2.0 * j)
        # log c, log1p(r) and a j carry a few roundings each, relative to their sizes
        err = 8 * _U * (abs(log_c) + log1p_r + a * j + 1.0)
        return loss, lp, lp[::-1].copy(), np.maximum(err, err[::-1])

    def _log_moment(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(log E_Q[(P/Q)^alpha], its absolute rounding bound) at finite alpha > 1."""
        a, d = self.a, float(self.sensitivity)
        lam = alpha - 1.0
        log1p_r = math.log1p(math.exp(-a))
        t0 = a * d * lam - log1p_r
        td = -a * d * alpha - log1p_r
        terms = [t0, td]
        if self.sensitivity >= 2:
            b = a * (2.0 * alpha - 1.0)
            log_c = math.log(-math.expm1(-a)) - log1p_r
            geo = -b + np.log(-np.expm1(-b * (d - 1.0))) - np.log(-np.expm1(-b))
            terms.append(log_c + a * d * lam + geo)
        s = np.logaddexp.reduce(np.stack(terms), axis=0)
        err = 16 * _U * (np.abs(t0) + np.abs(td) + a * d * alpha + 4.0)
        return s, err

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        out = np.full(alpha.shape, self.pure_epsilon())
        fin = np.isfinite(alpha)
        if fin.any():
            s, err = self._log_moment(alpha[fin])
            out[fin] = ulps_up(np.maximum(s + err, 0.0) / (alpha[fin] - 1.0), 2)
        return np.minimum(out, self.pure_epsilon())

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained curve (the pair is one pair of neighbours) less its rounding bound."""
        a = V.orders(alpha).astype(float)
        out = np.full(a.shape, self.eps0 * (1.0 - 2 * _U))
        fin = np.isfinite(a)
        if fin.any():
            s, err = self._log_moment(a[fin])
            low = np.maximum(s - err, 0.0) / (a[fin] - 1.0) * (1.0 - 4 * _U)
            out[fin] = np.minimum(low, out[fin])
        return out if out.ndim else float(out)
