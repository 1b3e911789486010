"""Private selection: the exponential mechanism, report-noisy-max and permute-and-flip.

Each picks one of finitely many candidates r with utilities u(x, r) of sensitivity Delta
(|u(x, r) - u(x', r)| <= Delta on neighbours x, x'); ``epsilon`` is the usual pure-DP parameter
with the sensitivity folded in:

| mechanism                              | output law                                          |
|----------------------------------------|-----------------------------------------------------|
| ``ExponentialMechanism(eps)``          | P[r] proportional to exp(eps u(x, r) / (2 Delta))    |
| ``ReportNoisyMax(eps, "gumbel")``      | argmax_r u(x, r) + Gumbel(2 Delta / eps): the same   |
| ``ReportNoisyMax(eps, "exponential")`` | argmax_r u(x, r) + Exponential(2 Delta / eps)        |
| ``PermuteAndFlip(eps)``                | candidates in random order, r kept w.p. exp(eps (u(x, r) - max u) / (2 Delta)) |

(For monotone utilities, where every u(x', r) - u(x, r) has one sign, exp(eps u / Delta) is
eps-DP and eps-bounded-range too: the same descriptions apply with that eps.)

**Bounded range.** A mechanism is eps-BR (Durfee & Rogers 2019, "Practical differentially
private top-k selection with pay-what-you-get composition", Def. 3) when on every pair of
neighbours its privacy loss L = log dP/dQ lies in an interval of width eps. The exponential
mechanism is eps-BR (ibid., Lemma 4: L = (eps/2Delta)(u(x, r) - u(x', r)) + log(Z'/Z), the first
term in [-eps/2, eps/2]); report-noisy-max with Gumbel noise is the exponential mechanism
(Gumbel-max). Since E_Q[e^L] = 1, the interval is [t - eps, t] with t in [0, eps]. For X = e^L
and any convex phi, E_Q[phi(X)] is largest when X sits on the two ends of its range with mean 1
(the chord of phi lies above it), i.e. for the *generalized randomized response* pair (Dong,
Durfee & Rogers 2020, "Optimal differential privacy composition for exponential mechanisms",
Sec. 4)

    loss t with P-mass p_t = (e^eps - e^t) / (e^eps - 1),  loss t - eps with 1 - p_t,

so every eps-BR pair is dominated by one of these, for every f-divergence and hockey-stick
divergence at once. Each of them, t in (0, eps), *is* an exponential mechanism: two candidates
whose utility gap moves by 2 Delta (P[1] = sigmoid(s), Q[1] = sigmoid(s - eps)). Hence, for the
class of eps-DP exponential mechanisms:

* RDP (exact, :func:`br_rdp`): sup_t D_alpha(P_t || Q_t); with u = e^t the moment is
  u^lambda (A - B u) / (e^eps - 1), A = e^eps - e^{-lambda eps}, B = 1 - e^{-lambda eps},
  lambda = alpha - 1, maximised at u* = lambda A / (alpha B), which lies in [1, e^eps]
  (u* <= e^eps is the weighted AM-GM e^eps + lambda e^{-lambda eps} >= (lambda + 1)
  e^{(1 - lambda) eps}; u* >= 1 is 1 - e^{-lambda eps} <= lambda eps <= lambda (e^eps - 1)):

      eps(alpha) = log u* + [log(A / (e^eps - 1)) - log alpha] / (alpha - 1),

  attained at every order (by the pair t* = log u*), below the zCDP bound alpha eps^2 / 8 of
  Cesar & Rogers 2021 ("Bounding, concentrating, and truncating", Lemmas 3.2, 3.4).
* the privacy profile of one run (exact): sup_t of the pairs' curves, attained at
  t = (eps + eps') / 2: delta(eps') = (e^{eps/2} - e^{eps'/2})^2 / (e^eps - 1), 0 <= eps' < eps.

**Permute-and-flip** (McKenna & Sheldon 2020, "Permute-and-flip: a new mechanism for
differentially private selection", Thm 1) is eps-DP, and report-noisy-max with exponential noise
is the same mechanism in distribution (Ding, Kifer, Saghaian, Steinke, Wang, Xiao & Zhang 2021,
"The permute-and-flip mechanism is identical to report-noisy-max with exponential noise"). No
bounded-range property better than the 2 eps every eps-DP mechanism has is proven for it, and
it has none: on two candidates with utilities (0, 0) and (Delta, -Delta) its losses are eps and
-log(2 - e^{-eps}), an interval wider than eps. dpamp accounts it as eps-DP (randomized
response with eps dominates it) and proves a lower bound with one pair it attains: two
candidates whose utilities swap, (0, -Delta) vs (-Delta, 0), give randomized response with
p = 1 - e^{-eps/2} / 2, i.e. pure eps_PF = log(2 e^{eps/2} - 1) (in (eps/2, eps)).
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.rounding import ulps_down
from .base import Mechanism
from .randomized_response import rr_rdp

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["ExponentialMechanism", "ReportNoisyMax", "PermuteAndFlip", "br_rdp",
           "br_rdp_error", "pf_pair_epsilon", "NOISES"]

_U = 2.0 ** -52
#: report-noisy-max's noise laws: Gumbel (the exponential mechanism) and exponential
#: (permute-and-flip)
NOISES = ("gumbel", "exponential")


def _br_terms(eps0: float, alpha: np.ndarray):
    """(value, absolute rounding bound) of the closed form of :func:`br_rdp` at finite
    alpha > 1, as log(lambda / B) - log1p(lambda) + log A + [log1p(B / (e^eps - 1))
    - log1p(lambda)] / lambda, each term accurate to a few ulps of its size (log A is
    eps + log(-expm1(-alpha eps)), which never overflows; the bracket is a difference of two
    logs of size lambda, divided by lambda)."""
    lam = alpha - 1.0
    with np.errstate(over="ignore", under="ignore"):
        b = -np.expm1(-lam * eps0)
        l1 = np.log(lam) - np.log(b)
        l2 = -np.log1p(lam)
        l3 = eps0 + np.log(-np.expm1(-alpha * eps0))
        n1 = np.log1p(b / math.expm1(eps0)) if eps0 < 709 else np.zeros_like(b)
        value = l1 + l2 + l3 + (n1 + l2) / lam
    err = 32 * _U * (np.abs(l1) + np.abs(l2) + np.abs(l3) + (np.abs(n1) + np.abs(l2)) / lam
                     + 4.0)
    return value, err


def br_rdp(eps0: float, alpha, upper: bool = True) -> np.ndarray:
    """The exact Rényi-DP curve of the eps0-bounded-range class (module docstring): a proven
    upper bound (``upper``), or a proven lower bound, at orders ``alpha`` > 1 (inf: eps0).
    Also capped by eps0 and by Cesar & Rogers' alpha eps0^2 / 8, which it never exceeds."""
    a = np.asarray(alpha, dtype=float)
    out = np.full(a.shape, float(eps0))
    if eps0 == 0.0:
        return np.zeros(a.shape)
    fin = np.isfinite(a)
    if fin.any():
        v, err = _br_terms(eps0, a[fin])
        if upper:
            cap = a[fin] * (eps0 * eps0 / 8.0) * (1 + 8 * _U)
            out[fin] = np.minimum(np.minimum(v + err, cap), eps0)
        else:
            out[fin] = np.minimum(np.maximum(v - err, 0.0), eps0 * (1 - 4 * _U))
    return out


def br_rdp_error(eps0: float, alpha) -> np.ndarray:
    """The absolute rounding bound of :func:`br_rdp`'s closed form at finite orders."""
    return _br_terms(eps0, np.asarray(alpha, dtype=float))[1]


def pf_pair_epsilon(eps0: float) -> float:
    """eps_PF = log(2 e^{eps/2} - 1) = log1p(2 expm1(eps/2)): the pure epsilon of the
    randomized-response pair permute-and-flip attains (module docstring), rounded down."""
    return ulps_down(math.log1p(2.0 * math.expm1(eps0 / 2.0)), 4)


def _check_epsilon(value) -> float:
    return V.positive("epsilon", value)


class _Selection(Mechanism):
    """The shared parts of the selection mechanisms: ``epsilon_`` (stored so because
    ``epsilon(delta)`` is the query) and the relation."""

    epsilon_: float
    relation: Relation

    @property
    def eps0(self) -> float:
        return self.epsilon_

    def pure_epsilon(self) -> float:
        return self.epsilon_

    def with_epsilon(self, epsilon: float) -> _Selection:
        """The same mechanism with another epsilon (on a group of k records: k epsilon, the
        utilities moving by k Delta)."""
        rest = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if f.name != "epsilon_"}
        return type(self)(epsilon, **rest)  # type: ignore[call-arg]


@dataclasses.dataclass(frozen=True, init=False)
class ExponentialMechanism(_Selection):
    """The exponential mechanism with the pure-DP parameter ``epsilon`` (utility sensitivity
    folded in: P[r] proportional to exp(epsilon u(x, r) / (2 Delta))). It is epsilon-bounded-
    range: its RDP curve is the exact one of that class (:func:`br_rdp`, attained order by
    order), its one-run privacy profile (e^{eps/2} - e^{eps'/2})^2 / (e^eps - 1) is exact, and
    compositions of it are accounted by the ``bounded-range`` method (the optimal adaptive
    composition of Dong, Durfee & Rogers 2020, by dynamic programming). Module docstring for
    the statements and proofs."""

    epsilon_: float
    relation: Relation = ADD_REMOVE

    def __init__(self, epsilon: float, relation: Relation = ADD_REMOVE):
        object.__setattr__(self, "epsilon_", _check_epsilon(epsilon))
        object.__setattr__(self, "relation", as_relation(relation))

    @property
    def bounded_range(self) -> float:
        return self.epsilon_

    def _rdp(self, alpha):
        return br_rdp(self.epsilon_, alpha)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The class's curve is attained at each order (by the pair t* of that order), so the
        closed form less its rounding bound is a lower bound."""
        out = br_rdp(self.epsilon_, V.orders(alpha), upper=False)
        return out if out.ndim else float(out)

    def __repr__(self):
        return f"ExponentialMechanism(epsilon={self.epsilon_!r}, relation={self.relation})"


@dataclasses.dataclass(frozen=True, init=False)
class ReportNoisyMax(_Selection):
    """Report-noisy-max with the pure-DP parameter ``epsilon``: the argmax of the utilities
    plus independent noise of scale 2 Delta / epsilon, ``noise`` "gumbel" (the exponential
    mechanism: epsilon-bounded-range, accounted as :class:`ExponentialMechanism`) or
    "exponential" (permute-and-flip in distribution: accounted as :class:`PermuteAndFlip`)."""

    epsilon_: float
    noise: str = "gumbel"
    relation: Relation = ADD_REMOVE

    def __init__(self, epsilon: float, noise: str = "gumbel", relation: Relation = ADD_REMOVE):
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {', '.join(map(repr, NOISES))} "
                             f"(got {noise!r})")
        object.__setattr__(self, "epsilon_", _check_epsilon(epsilon))
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "relation", as_relation(relation))

    @property
    def bounded_range(self) -> float | None:
        return self.epsilon_ if self.noise == "gumbel" else None

    def equivalent(self) -> Mechanism:
        """The mechanism it is in distribution: ExponentialMechanism or PermuteAndFlip."""
        cls = ExponentialMechanism if self.noise == "gumbel" else PermuteAndFlip
        return cls(self.epsilon_, relation=self.relation)

    def _rdp(self, alpha):
        return self.equivalent()._rdp(alpha)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        return self.equivalent().rdp_lower(alpha)

    def __repr__(self):
        return (f"ReportNoisyMax(epsilon={self.epsilon_!r}, noise={self.noise!r}, "
                f"relation={self.relation})")


@dataclasses.dataclass(frozen=True, init=False)
class PermuteAndFlip(_Selection):
    """Permute-and-flip (McKenna & Sheldon 2020) with the pure-DP parameter ``epsilon``:
    accounted as an epsilon-DP mechanism (upper bounds of randomized response with epsilon),
    with the lower bounds of the pair it attains, randomized response with
    eps_PF = log(2 e^{eps/2} - 1) (module docstring)."""

    epsilon_: float
    relation: Relation = ADD_REMOVE

    def __init__(self, epsilon: float, relation: Relation = ADD_REMOVE):
        object.__setattr__(self, "epsilon_", _check_epsilon(epsilon))
        object.__setattr__(self, "relation", as_relation(relation))

    def _rdp(self, alpha):
        return rr_rdp(self.epsilon_, alpha)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained pair's curve (randomized response with eps_PF), rounded down."""
        a = V.orders(alpha).astype(float)
        out = ulps_down(np.maximum(rr_rdp(pf_pair_epsilon(self.epsilon_), a), 0.0), 8)
        out = np.asarray(out, dtype=float)
        return out if out.ndim else float(out)

    def __repr__(self):
        return f"PermuteAndFlip(epsilon={self.epsilon_!r}, relation={self.relation})"
