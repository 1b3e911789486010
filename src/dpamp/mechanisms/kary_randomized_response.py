"""k-ary randomized response: report a k-valued statistic truthfully with probability 1 - p, else
a value drawn uniformly from all k (so possibly the true one again).

This is dp-accounting's ``RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)`` (its
docstring: "with probability 1 - p, it simply outputs the input bucket. Otherwise, with
probability p, it outputs a bucket drawn uniformly at random from the k buckets"), the k-RR of
Kairouz, Bonawitz & Ramage 2016 with truth probability e^eps / (e^eps + k - 1).

Its exact pair. The output law R(v) puts a = 1 - p + p/k on v and b = p/k on each other value.
Two inputs whose statistic differs, v != v', give the three output classes {v}, {v'}, the other
k - 2 values, with masses

    P = R(v)  = (a, b, c),   Q = R(v') = (b, a, c),   c = (k - 2) p / k,

and privacy losses +eps, -eps, 0, eps = log(a / b) = log1p(k (1 - p) / p) (the three cases of
dp-accounting's ``from_randomized_response`` under REPLACE_ONE, Google 2021). Inputs whose
statistic agrees give equal laws, and every pair v != v' is this pair up to a relabelling of the
outputs, so (P, Q) is an exact dominating pair (Zhu, Dong & Wang 2022), attained by every
such pair of neighbours, and symmetric ((Q, P) is (P, Q) with v and v' exchanged). As a mixture,
P = (a + b) RR_eps + c 1_rest: binary randomized response with the same eps (which dominates
every eps-DP mechanism, Kairouz, Oh & Viswanath 2015) diluted by the common zero-loss mass c, so
its profile is (a + b) times the eps-DP one -- strictly below it for k > 2, which is why reading
it as pure eps-DP overstated the lower bound.

Neighbouring relation: as for :class:`~.randomized_response.RandomizedResponse`, the
description is randomized response of a k-valued statistic of the dataset, and ``relation``
says which neighbours the statistic is taken to change under; two neighbours give either equal
laws or the pair above under either relation (and so does a group of any size). dp-accounting
accounts the event under REPLACE_ONE (a record's value changes), which :func:`dpamp.
from_dp_event` reads as substitution.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.rounding import ulps_down, ulps_up
from .base import Mechanism

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_U = 2.0 ** -52
#: above this x = (alpha - 1) eps, expm1(x) is near overflow: the moment is taken as
#: x + log(a + c e^{-x} + b e^{-2x}) instead
_X_FAR = 700.0


def kary_epsilon(p: float, k: int, up: bool = True) -> float:
    """eps = log(1 + k (1 - p) / p) = log((1 - p + p/k) / (p/k)), rounded up (``up``) or down
    to a proven bound. 1 - p, k (1 - p) and the division carry half an ulp each (k <= 2^53 is
    exact) and log1p has condition number <= 1 and its own ulp: under 3 ulps in all, 6 taken.
    Where k (1 - p) / p overflows (p subnormal) the logs are taken apart, with the same
    margin (eps > 700 there, no cancellation)."""
    x = k * (1.0 - p) / p
    if math.isfinite(x):
        eps = math.log1p(x)
    else:
        eps = (math.log(k) - math.log(p)) + math.log1p(-p) + math.log1p(p / (k * (1.0 - p)))
    if eps == 0.0:
        return 0.0
    return ulps_up(eps, 6) if up else ulps_down(eps, 6)


@dataclasses.dataclass(frozen=True)
class KaryRandomizedResponse(Mechanism):
    """k-ary randomized response (``k`` >= 2 values): the true value with probability
    1 - ``noise_parameter``, else a uniform draw from all k values (dp-accounting's
    ``RandomizedResponseDpEvent(noise_parameter, num_buckets=k)``).

    Exact pair (module docstring): P = (1 - p + p/k, p/k, (k-2) p/k), Q = (p/k, 1 - p + p/k,
    (k-2) p/k), losses +eps, -eps, 0, pure eps = log((1 - p + p/k) / (p/k)).

    RDP (exact, attained): with x = (alpha - 1) eps,

        (alpha - 1) eps(alpha) = log(a e^x + b e^{-x} + c)
                               = log1p(expm1(x) ((1 - p) + (p/k)(1 - e^{-x}))),

    a sum of non-negative terms (a - b e^{-x} = (1 - p) + b (1 - e^{-x})), so accurate also as
    alpha -> 1. ``KaryRandomizedResponse.from_epsilon(eps, k)`` gives p = k / (k + e^eps - 1)."""

    k: int
    noise_parameter: float
    relation: Relation = ADD_REMOVE
    tight_rdp = True
    #: every pair of neighbours with different values is the same pair of laws up to a
    #: relabelling of the outputs, so one pair attains every divergence (Wang et al. 2019, Def. 18)
    self_consistent_rdp = True

    def __post_init__(self):
        object.__setattr__(self, "k", V.integer("k", self.k, low=2))
        object.__setattr__(self, "noise_parameter", V.probability(
            "noise_parameter", self.noise_parameter, low_open=True))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int, relation: Relation = ADD_REMOVE):
        """The k-ary randomized response with pure epsilon ``epsilon``: truth probability
        e^eps / (e^eps + k - 1) (Kairouz, Bonawitz & Ramage 2016), i.e. p = k / (k + e^eps - 1)."""
        e = V.nonnegative("epsilon", epsilon)
        kk = V.integer("k", k, low=2)
        with np.errstate(over="ignore"):
            p = kk / (kk + math.expm1(e)) if e < 709.0 else 0.0
        if p <= 0.0:
            raise ValueError(f"epsilon must be below about 700 for KaryRandomizedResponse (the "
                             f"noise parameter rounds to 0 at {e:g}); use dp.PureDP(epsilon)")
        return cls(kk, p, relation=relation)

    @property
    def eps0(self) -> float:
        """The pure epsilon log((1 - p + p/k) / (p/k)), rounded up."""
        return kary_epsilon(self.noise_parameter, self.k, up=True)

    def pure_epsilon(self) -> float:
        return self.eps0

    def _log_moment(self, alpha: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """(log E_Q[(P/Q)^alpha], an absolute error bound) at finite alpha > 1 for the pair
        with loss ``eps`` in place of the exact one and the exact masses' ratios otherwise:
        increasing in eps (a e^x + b e^{-x} + c grows with x = (alpha - 1) eps as a >= b), so
        eps rounded up (down) gives an upper (lower) bound.

        Near form (x <= _X_FAR): y = expm1(x) (d + b (-expm1(-x))), d = 1 - p, b = p/k. x
        carries 2 ulps relative ((alpha - 1) and the product), which moves expm1(x) by at most
        2u(1 + x) relative and -expm1(-x) by 2u; the masses, products and sum a few ulps more:
        relative error of y <= u (16 + 4x), and log1p moves it by that times y / (1 + y),
        plus 2 ulps of the result. Far form: x + log(a + c e^{-x} + b e^{-2x}), absolute error
        <= 4u (x + |log a| + 1)."""
        p, k = self.noise_parameter, float(self.k)
        d, b = 1.0 - p, p / k
        c = p * (k - 2.0) / k
        x = (alpha - 1.0) * eps
        near = x <= _X_FAR
        xs = np.where(near, x, 0.0)
        with np.errstate(over="ignore", under="ignore"):
            y = np.expm1(xs) * (d + b * -np.expm1(-xs))
            ln_near = np.log1p(y)
            rel = _U * (16.0 + 4.0 * xs)
            err_near = rel * y / (1.0 + y) + 2 * _U * ln_near
            xf = np.where(near, _X_FAR, x)
            a = d + b
            ln_far = xf + np.log(a + c * np.exp(-xf) + b * np.exp(-2.0 * xf))
            err_far = 4 * _U * (xf + abs(math.log(a)) + 1.0)
        return np.where(near, ln_near, ln_far), np.where(near, err_near, err_far)

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        e_up = self.eps0
        out = np.full(alpha.shape, e_up)
        fin = np.isfinite(alpha)
        if fin.any() and e_up > 0.0:
            s, err = self._log_moment(alpha[fin], e_up)
            out[fin] = ulps_up((s + err) / (alpha[fin] - 1.0), 4)
        return np.minimum(np.maximum(out, 0.0), e_up)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained curve (every pair of neighbours with different values) at eps rounded
        down, less its rounding bound."""
        a = V.orders(alpha).astype(float)
        e_dn = kary_epsilon(self.noise_parameter, self.k, up=False)
        out = np.full(a.shape, e_dn)
        fin = np.isfinite(a)
        if fin.any() and e_dn > 0.0:
            s, err = self._log_moment(a[fin], e_dn)
            out[fin] = np.minimum(ulps_down(np.maximum(s - err, 0.0) / (a[fin] - 1.0), 4), e_dn)
        return out if out.ndim else float(out)
