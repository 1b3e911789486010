"""Binary randomized response and the tightest RDP of a pure epsilon-DP mechanism."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import validate as V
from ..core.rounding import ulps_up
from ..core.relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism


def rr_epsilon(p: float) -> float:
    """Pure epsilon of binary randomized response with truth probability p: log(q / (1-q)),
    q = max(p, 1-p) (p < 1/2 is the same mechanism with its outputs relabelled)."""
    q = max(p, 1.0 - p)
    # log(q) - log1p(-q) cancels near q = 1/2 (relative error up to 1e-8); 2q - 1 and 1 - q
    # are exact for q in [1/2, 1), the division adds half an ulp and log1p (condition number
    # <= 1) at most an ulp: 2 ulps up make it an upper bound (a pure epsilon is claimed exactly)
    return ulps_up(math.log1p((2.0 * q - 1.0) / (1.0 - q)), 2)


def rr_rdp(eps0: float, alpha: np.ndarray) -> np.ndarray:
    """RDP of binary randomized response with pure epsilon eps0 (truth probability
    p = e^eps0 / (1 + e^eps0)) (Wang et al. 2019, Sec. 2 table):

        epsilon(alpha) = 1/u log(p^alpha (1-p)^{1-alpha} + (1-p)^alpha p^{1-alpha}),  u = alpha - 1.

    The sum is S = p e^{u eps0} + (1-p) e^{-u eps0} = cosh(u eps0) + tanh(eps0/2) sinh(u eps0), so

        epsilon(alpha) = log1p(2 sinh^2(u eps0 / 2) + tanh(eps0 / 2) sinh(u eps0)) / u,

    a sum of non-negative terms: accurate to a few ulps and never negative, also as alpha -> 1
    (where the textbook form cancels: -8.9e-11 at eps0 = 1e-6, alpha = 1 + 1e-6). It is used
    where u eps0 <= 1; above, the overflow-free form
    eps0 + [log p + log1p(e^{-eps0} e^{-2 u eps0})] / u, whose bracket no longer cancels
    (e^{-2 u eps0} <= e^{-2}), is accurate."""
    alpha = np.asarray(alpha, dtype=float)
    if eps0 == 0.0:
        return np.zeros_like(alpha, dtype=float)
    if math.isinf(eps0):
        return np.full_like(alpha, np.inf, dtype=float)
    u = np.where(np.isinf(alpha), 1.0, alpha - 1.0)
    ux = u * eps0
    small = ux <= 1.0
    with np.errstate(over="ignore", under="ignore"):
        us = np.where(small, ux, 1.0)
        near = np.log1p(2.0 * np.sinh(0.5 * us) ** 2 + math.tanh(0.5 * eps0) * np.sinh(us)) \
            / np.where(small, u, 1.0)
        log_p = -np.logaddexp(0.0, -eps0)  # log sigmoid(eps0)
        far = eps0 + (log_p + np.log1p(np.exp(-eps0 - 2.0 * ux))) / u
    out = np.where(small, near, far)
    # both forms are accurate to ~2 ulps (measured against 80-digit mpmath): 4 ulps up make
    # the curve a proven upper bound; at alpha = inf it is eps0 itself
    return np.where(np.isinf(alpha), eps0, ulps_up(np.maximum(out, 0.0), 4))


@dataclasses.dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """Binary randomized response: report the true bit with probability ``p``, else flip it.

    Pure epsilon = log(p / (1-p)) (for p >= 1/2; p < 1/2 is the same mechanism relabelled).
    ``RandomizedResponse.from_epsilon(eps)`` gives p = e^eps / (1 + e^eps)."""

    p: float
    relation: Relation = ADD_REMOVE
    tight_rdp = True
    self_consistent_rdp = True  # one pair of outputs up to swap

    def __post_init__(self):
        object.__setattr__(self, "p", V.probability("p", self.p, low_open=True, high_open=True))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @classmethod
    def from_epsilon(cls, epsilon: float, relation: Relation = ADD_REMOVE):
        e = V.nonnegative("epsilon", epsilon)
        p = 1.0 / (1.0 + math.exp(-e))
        if p >= 1.0:
            raise ValueError(f"epsilon must be < 36 for RandomizedResponse (p rounds to 1 at "
                             f"{e:g}); use dp.PureDP(epsilon), which has the same RDP curve")
        return cls(p, relation=relation)

    @property
    def eps0(self) -> float:
        return rr_epsilon(self.p)

    def _rdp(self, alpha):
        return rr_rdp(self.eps0, alpha)


@dataclasses.dataclass(frozen=True, init=False)
class PureDP(Mechanism):
    """Any epsilon-DP mechanism. Its tightest RDP curve is that of randomized response with the
    same epsilon: RR is the dominating pair of every epsilon-DP mechanism (the pair with
    privacy losses +-epsilon), so its Rényi divergences bound all others' (Steinke 2022, Sec. 5,
    footnote 16 with delta = 0); this is below the zCDP bound alpha eps^2 / 2 of Steinke 2022, Prop.
    16."""

    epsilon_: float
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __init__(self, epsilon: float, relation: Relation = ADD_REMOVE):
        # the field is stored as ``epsilon_`` because ``epsilon(delta)`` is the query method
        object.__setattr__(self, "epsilon_", V.nonnegative("epsilon", epsilon))
        object.__setattr__(self, "relation", as_relation(relation))

    @property
    def eps0(self) -> float:
        return self.epsilon_

    def _rdp(self, alpha):
        return rr_rdp(self.epsilon_, alpha)

    def __repr__(self):
        return f"PureDP(epsilon={self.epsilon_!r}, relation={self.relation})"
