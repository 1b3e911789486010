"""The randomized membership mechanism of Balle et al. 2018, Sec. 5 and its exact subsampled
profile.

M_{v,p}(x) = R_p(1[v in x]): randomized response (truth probability p) of whether the record v
is in the input. Its profile is phi_p(alpha) = [(1 + alpha) max(p, 1-p) - alpha]_+ (Balle et al.
2018, Sec. 5, general form from the errata), and for every natural subsampling scheme S (Balle et
al. 2018, Lemma 12, with the roles of alpha and alpha' as corrected in the errata):

    delta_{M^S}(alpha) = gamma * phi_p(1 + (alpha - 1)/gamma),   gamma = sup TV(S(x), S(x')),

which equals the upper bounds of Balle et al. 2018, Thms 8, 9 and 10 (Balle et al. 2018, Thm 13):
those theorems are tight.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import validate as V
from ..mechanisms.randomized_response import RandomizedResponse, rr_epsilon
from ..core.relations import ADD_REMOVE, Relation
from .numerics import ajc_epsilon, down, pad_up, to_linear_upper
from .closed_forms import rr_log_profile


@dataclasses.dataclass(frozen=True)
class RandomizedMembership(RandomizedResponse):
    """Randomized membership M_{v,p} (Balle et al. 2018, Sec. 5): report whether a fixed record v is
    in the dataset, truthfully with probability ``p`` -- randomized response of the bit 1[v in x],
    so it shares RandomizedResponse's RDP curve, profile and loss distribution. It is
    (log(q/(1-q)))-DP with q = max(p, 1-p), and (eps, delta)-DP for
    p = (e^eps + delta)/(e^eps + 1) (``from_epsilon_delta``). Subsampled by any scheme its
    profile is exactly gamma phi_p(1 + (alpha-1)/gamma) (Balle et al. 2018, Lemma 12): it is the
    mechanism that shows Balle et al. 2018, Thms 8-10 cannot be improved."""

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float = 0.0,
                           relation: Relation = ADD_REMOVE):
        """p = (e^eps + delta)/(e^eps + 1) (Balle et al. 2018, Sec. 5): phi_p(e^eps) = delta."""
        e = V.nonnegative("epsilon", epsilon)
        d = V.delta(delta, allow_zero=True)
        p = (1.0 + d * math.exp(-e)) / (1.0 + math.exp(-e))
        if p >= 1.0:
            raise ValueError(f"epsilon must be < 36 (got {e:g}): p rounds to 1")
        return cls(p, relation=relation)


def phi(p: float, alpha):
    """phi_p(alpha) = [(1 + alpha) max(p, 1-p) - alpha]_+ (Balle et al. 2018, Sec. 5, errata form),
    alpha >= 0."""
    p = V.probability("p", p)
    a = V.reals("alpha", alpha, low=0.0)
    q = max(p, 1.0 - p)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isinf(a), 0.0, np.maximum((1.0 + a) * q - a, 0.0))
    return out if out.ndim else float(out)


def membership_profile(p: float, gamma: float, epsilon):
    """Balle et al. 2018, Lemma 12: the exact profile gamma * phi_p(1 + (e^eps - 1)/gamma) of
    randomized membership under any natural subsampling scheme with sup TV = gamma (gamma = rate for
    Poisson, m/n without replacement, 1 - (1 - 1/n)^m with replacement). Upper bound (rounded
    up); gamma = 0 gives 0."""
    p = V.probability("p", p, low_open=True, high_open=True)
    g = V.probability("gamma", gamma)
    eps = V.reals("epsilon", epsilon, low=0.0)
    if g == 0.0:
        out = np.zeros_like(eps)
    else:
        out = to_linear_upper(pad_up(math.log(g) + rr_log_profile(
            rr_epsilon(p), down(ajc_epsilon(eps, g)), upper=True)))
    return out if out.ndim else float(out)
