"""User-level DP-SGD: the privacy unit is a user who holds at most m records (group privacy).

One step adds N(0, z^2 C^2) noise to a sum of per-record gradients clipped to norm C (z the
noise multiplier); neighbouring datasets differ by one *user*: all of its (at most m) records
are added or removed. Where the records are drawn, and what is clipped, decide the worst case
(units of C, sigma = z):

| sampling               | clipping                  | dominating pair (P vs Q = N(0, z^2))                 |
|------------------------|---------------------------|------------------------------------------------------|
| records, Poisson rate q | per record                | sum_k Bin(k; m, q) N(k, z^2): a mixture of Gaussians |
| records, Poisson rate q | the user's sum, to C      | (1-g) N(0, z^2) + g N(1, z^2), g = 1 - (1-q)^m        |
| users, Poisson rate q  | the user's sum, to C      | (1-q) N(0, z^2) + q N(1, z^2) (ordinary DP-SGD)      |
| users, Poisson rate q  | per record                | (1-q) N(0, z^2) + q N(m, z^2)                         |
| none (full batch)      | per record / user's sum   | N(m, z^2) / N(1, z^2)                                 |

Both orders (remove: (P, Q); add: (Q, P)) are accounted, as for every add/remove pair.

*Record sampling, per-record clipping.* The number K of the user's records in a batch is
Binomial(m, q) and the user moves the clipped sum by a vector of norm at most K; the worst case
aligns the user's gradients, so the pair is the mixture of the table. That it dominates every
pair of neighbouring users is Ganesh, "Tight Group-Level DP Guarantees for DP-SGD with Sampling
via Mixture of Gaussians Mechanisms", arXiv:2401.10294 (2024), Thm 3.1, and the Gaussian case
of Schuchardt, Stoian, Dalirrooyfard & Günnemann, "Unified Mechanism-Specific Amplification by
Subsampling and Group Privacy Amplification", NeurIPS 2024 (group privacy amplification: the
group's sampled size is Binomial and its shift grows with it); the reduction of a vector
mixture to the scalar one with each shift replaced by its norm is Choquette-Choo, Ganesh,
Steinke & Thakurta, ICLR 2024, Cor. 4.7 (:mod:`dpamp.mechanisms.mixture_of_gaussians`). The
pair is attained (m aligned records of norm C), so it also gives lower bounds.

*Record sampling, user clipping.* With probability (1-q)^m none of the user's records is drawn
and the step's law is that of the smaller dataset; otherwise the clipped sum moves by a vector
of norm at most 1. The step's law on the larger dataset is (1-g) Q' + g P' with Q' the smaller
dataset's law and P' a mixture over the drawn subsets of Q' shifted by a vector of norm <= 1;
advanced joint convexity (Balle, Barthe & Gaboardi 2018, Thm 2, as in their Thm 8 for Poisson
sampling) and plain joint convexity over the subsets give the Poisson-subsampled Gaussian at
rate g = 1 - (1-q)^m; attained by a user whose clipped sum has norm C whatever is drawn.

*User sampling.* Users are the records of ordinary DP-SGD: the Poisson-subsampled Gaussian, at
sensitivity 1 with user clipping, or m (the user's sum of m clipped records) without.

Exactness. q is the rate as given (a double); the binomial weights are computed exactly in
rational arithmetic (:func:`binomial_weights`) and rounded *outward* into two mixtures: the
upper one moves probability to larger shifts (its tail sums P[K >= k] are at least the exact
ones, after the mixture's own normalisation), the lower one to smaller shifts. Moving mass to a
larger shift gives a dominating pair in both orders (a mixture of Gaussians is monotone in
each of its sensitivities, the fact the conditional composition of Choquette-Choo, Ganesh,
Steinke & Thakurta 2024 rests on; checked by quadrature in the tests), so the
upper mixture bounds the truth from above and the lower mixture is dominated by it: the
bracket holds. Weights below 2^-1000 are folded into the largest shift (upper) or into shift 0
(lower). The rate g is rounded up and down likewise (the Poisson pair grows with its rate).

The classic route (per-record accounting, then group privacy) is
:mod:`dpamp.theorems.group_privacy`; it is a comparison, never the reported bound.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["UserLevelGaussian", "binomial_weights", "MAX_RECORDS_PER_USER"]

#: the largest m of the record-sampled mixture (its exact weights take ~0.2 s at m = 1000)
MAX_RECORDS_PER_USER = 1024
_TINY = Fraction(1, 2 ** 1000)
_U = 2.0 ** -53


@dataclasses.dataclass(frozen=True)
class UserLevelGaussian(Mechanism):
    """One step of DP-SGD at user level (module docstring): noise multiplier z, at most
    ``records_per_user`` = m records per user, Poisson sampling at ``sample_rate`` q of the
    records (``user_sampling=False``) or of the users (``True``), or none (``sample_rate=None``:
    every record in every step); gradients clipped per record (``user_clipping=False``) or the
    user's summed contribution clipped (``True``). Add/remove of a whole user."""

    noise_multiplier: float
    records_per_user: int
    sample_rate: float | None = None
    user_sampling: bool = False
    user_clipping: bool = False
    relation: Relation = ADD_REMOVE

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier",
                           V.positive("noise_multiplier", self.noise_multiplier))
        m = V.integer("records_per_user", self.records_per_user, low=1)
        object.__setattr__(self, "records_per_user", m)
        for name in ("user_sampling", "user_clipping"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False (got {getattr(self, name)!r})")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if self.sample_rate is None:
            if self.user_sampling:
                raise ValueError("user_sampling needs sample_rate (the rate at which users are "
                                 "drawn)")
        else:
            object.__setattr__(self, "sample_rate", V.probability(
                "sample_rate", self.sample_rate, low_open=True))
        rel = as_relation(self.relation)
        if rel is not ADD_REMOVE:
            raise ValueError("relation must be add/remove: user-level accounting here adds or "
                             "removes one whole user (Poisson sampling)")
        object.__setattr__(self, "relation", rel)
        if self.is_mixture:
            assert self.sample_rate is not None     # is_mixture asks for one
            _check_mixture(m, float(self.sample_rate))

    @property
    def is_mixture(self) -> bool:
        """Record sampling with per-record clipping and m > 1: the binomial mixture."""
        return (self.sample_rate is not None and not self.user_sampling
                and not self.user_clipping and self.records_per_user > 1
                and self.sample_rate < 1.0)

    def bracket(self) -> tuple[Mechanism, Mechanism]:
        """(upper, lower): a mechanism that dominates this step and one it dominates (the same
        mechanism where the pair is exact): the pairs of the module docstring."""
        return _bracket(self)

    def _rdp(self, alpha):
        return self.bracket()[0]._rdp(alpha)

    def has_rdp(self) -> bool:
        return self.bracket()[0].has_rdp()

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The lower mechanism's proven lower curve (it is dominated by this step)."""
        return self.bracket()[1].renyi(alpha).lower

    def pure_epsilon(self) -> float:
        return math.inf

    def witnesses(self) -> tuple[Mechanism, ...]:
        return self.bracket()[1].witnesses()


def _check_mixture(m: int, q: float) -> None:
    if m > MAX_RECORDS_PER_USER:
        raise ValueError(f"records_per_user must be at most {MAX_RECORDS_PER_USER} with record "
                         f"sampling and per-record clipping (got {m}); clip each user's sum "
                         "(user_clipping) or sample users (user_sampling)")
    # (1 - q)^m >= 2^-36 leaves shift 0 room for the upper weights' margins (binomial_weights)
    if m * -math.log1p(-q) > 36 * math.log(2.0):
        raise ValueError(f"sample_rate {q:g} with records_per_user {m}: P[no record of a user "
                         f"is drawn] = (1 - q)^m is below 2^-36 (about {m * q:.3g} records of a "
                         "user per batch), outside the mixture's range; clip each user's sum "
                         "(user_clipping) or sample users (user_sampling)")


@functools.lru_cache(maxsize=256)
def _bracket(u: UserLevelGaussian) -> tuple[Mechanism, Mechanism]:
    from ..core.sampling import Poisson
    from .gaussian import Gaussian
    from .mixture_of_gaussians import MixtureOfGaussians
    z, m, q = u.noise_multiplier, u.records_per_user, u.sample_rate
    shift = 1.0 if (u.user_clipping or m == 1) else float(m)
    if q is None:
        g = Gaussian(z, sensitivity=shift)
        return g, g
    if u.user_sampling or m == 1 or q >= 1.0:
        g = Gaussian(z, sensitivity=shift)
        s = g if q >= 1.0 else g.subsample(Poisson(q))
        return s, s
    if u.user_clipping:
        lo, hi = _rate_bounds(m, q)
        g = Gaussian(z)
        return g.subsample(Poisson(hi)), (g.subsample(Poisson(lo)) if lo > 0 else
                                          MixtureOfGaussians(z, (0.0,), (1.0,)))
    shifts = tuple(float(k) for k in range(m + 1))
    up, low = binomial_weights(m, q)
    return MixtureOfGaussians(z, shifts, up), MixtureOfGaussians(z, shifts, low)


def _rate_bounds(m: int, q: float) -> tuple[float, float]:
    """(g rounded down, g rounded up), g = 1 - (1 - q)^m exactly (q as a double)."""
    g = 1 - (1 - Fraction(q)) ** m
    f = float(g)
    lo = f if Fraction(f) <= g else math.nextafter(f, 0.0)
    hi = f if Fraction(f) >= g else math.nextafter(f, 2.0)
    return lo, min(hi, 1.0)


def binomial_weights(m: int, q: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(upper, lower) weights of shifts 0..m for Bin(m, q), q a double taken exactly: the
    upper tail sums sum_{j>=k} w_j are at least the exact P[K >= k] for every k >= 1 (and stay
    so after the mixture normalises them: each weight of k >= 1 carries a margin of 4 (m + 8)
    ulps), the lower ones at most; shift 0 takes the rest. Exact rational arithmetic, then one
    rounding per weight (module docstring)."""
    qq = Fraction(q)
    one = 1 - qq
    exact = []
    p = one ** m
    for k in range(m + 1):
        exact.append(p)
        if k < m:
            p = p * (m - k) / (k + 1) * qq / one
    margin = 4 * (m + 8) * _U
    up, low = [0.0] * (m + 1), [0.0] * (m + 1)
    folded = Fraction(0)
    for k in range(1, m + 1):
        if exact[k] < _TINY:
            folded += exact[k]
            continue
        f = float(exact[k])
        up[k] = math.nextafter(f * (1 + margin), 2.0)
        low[k] = max(math.nextafter(f * (1 - margin), 0.0), 0.0)
    if folded:                  # upper: onto the largest shift (mass moves up); lower: dropped
        up[m] = math.nextafter(up[m] + float(folded) * (1 + margin) + 2.0 ** -1000, 2.0)
    rest = 1 - sum(Fraction(w) for w in up[1:])
    # (1 - q)^m >= 2^-36 (checked by the mechanism) is far above the margins added
    assert rest > 0, "shift 0's weight must stay positive"
    up[0] = math.nextafter(float(rest), 0.0)
    low[0] = math.nextafter(float(1 - sum(Fraction(w) for w in low[1:])), 2.0)
    return tuple(up), tuple(low)
