"""The profile interface: one dominating pair per mechanism, described by its two hockey-stick
curves, dispatched on the mechanism's type (Balle et al. 2018, Sec. 2-3).

Conventions (shared with the PLD engine):

* Every mechanism's worst case is ONE dominating pair (P, Q): for add/remove the "remove" order
  (the larger dataset first); for substitution an ordered pair. Row 0 of a profile pair is
  H_{e^eps}(P || Q), row 1 is H_{e^eps}(Q || P), for eps >= 0 (+inf allowed: the mass at infinity).
* Upper rows dominate every actual ordered neighbouring pair (A, B) of that order:
  H(A||B) <= row 0 and H(B||A) <= row 1. For a symmetric relation whose theorem bounds only the
  profile delta = max of both orders (Balle et al. 2018, Thms 9, 10, 14), both rows carry the same
  curve.
* Lower rows are the two curves of ONE actual neighbouring pair, rounded down (a "membership"
  pair, Balle et al. 2018, Lemma 12), or None when no lower bound is known.

Each family declares its handlers (:class:`~dpamp.mechanisms.family.ProfileHooks`, in
:mod:`dpamp.families`); this module looks them up and never switches on a mechanism's class.
Internally everything is log H.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..mechanisms.family import family_of
from ..mechanisms.family import is_binary as family_is_binary
from .numerics import to_linear_lower, to_linear_upper

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..mechanisms.base import Mechanism


def no_profile(mechanism, what="privacy profile"):
    name = type(mechanism).__name__
    return NotImplementedError(
        f"{name} has no {what} in dpamp.profiles (Balle, Barthe & Gaboardi 2018): profiles "
        "exist for Gaussian, Laplace, RandomizedResponse, PureDP, EpsDelta, "
        "RandomizedMembership and their subsampled versions; use the RDP, zCDP or PLD "
        "methods for this mechanism")


def _hooks(mechanism):
    """The profile hooks its family declares (:mod:`dpamp.mechanisms.family`), or None."""
    fam = family_of(mechanism)
    return None if fam is None else fam.profile


def log_pair(mechanism, eps: np.ndarray) -> np.ndarray:
    """log of the upper rows, shape (2,) + eps.shape; eps >= 0 float array (inf allowed)."""
    hooks = _hooks(mechanism)
    if hooks is None:
        raise no_profile(mechanism)
    return hooks.pair(mechanism, eps)


def log_pair_lower(mechanism, eps: np.ndarray):
    """log of the lower rows of one actual pair (shape (2,) + eps.shape), or None."""
    hooks = _hooks(mechanism)
    if hooks is None or hooks.lower is None:
        return None
    return hooks.lower(mechanism, eps)


def log_group(mechanism, k: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log of an upper bound on the k-group profile delta_{M,k}(e^eps) (both orders, so one
    curve), k >= 1 integer array broadcast against eps. Default: the black-box bound of Balle et al.
    2018 Sec. 3 (see :func:`dpamp.profiles.group.log_group_blackbox`)."""
    hooks = _hooks(mechanism)
    if hooks is not None and hooks.group is not None:
        return hooks.group(mechanism, k, eps)
    from .group import log_group_blackbox
    return log_group_blackbox(lambda e: log_symmetric(mechanism, e), k, eps)


def is_binary(mechanism) -> bool:
    """True when every output distribution of the mechanism is one of two fixed distributions
    chosen by a bit of the input (randomized response of a {0,1}-valued statistic): then
    Balle et al. 2018, Lemma 12's argument gives the exact subsampled profile for any sampling
    scheme."""
    return family_is_binary(mechanism)


def symmetric_pair(mechanism) -> bool:
    """True when the two upper rows of ``log_pair`` are the same curve *by construction* (the
    handler returns one curve for both orders: a symmetric closed form, or a theorem that
    bounds the max of both orders). Only then may a consumer (the PLD from profiles) compose a
    single direction; agreement at a few points proves nothing (two rows can meet at eps = 0,
    where both are the total variation, and beyond the pure epsilon, where both are 0)."""
    hooks = _hooks(mechanism)
    return bool(hooks is not None and hooks.symmetric is not None and hooks.symmetric(mechanism))


def register(cls, *, pair, lower=None, group=None, binary=None, symmetric=None):
    """Declare a family that has only a privacy profile (a user's own mechanism class):
    ``pair(mech, eps) -> log rows``, ``lower(mech, eps) -> log rows or None``,
    ``group(mech, k, eps) -> log curve``; ``binary``: randomized response of a bit;
    ``symmetric``: True, or a predicate of the mechanism, where ``pair`` returns one curve for
    both rows by construction (see :func:`symmetric_pair`). A family with more
    representations declares them all at once with :func:`dpamp.mechanisms.family.declare`."""
    from ..mechanisms.family import Family, ProfileHooks, declare
    hooks = ProfileHooks(
        pair=pair, lower=lower, group=group,
        binary=None if binary is None else (lambda m: bool(binary)),
        symmetric=None if symmetric is None else
        (symmetric if callable(symmetric) else (lambda m: bool(symmetric))))
    declare(cls, Family(cls.__name__, profile=hooks))


def log_symmetric(mechanism, eps):
    """log delta_M(e^eps) = max of the two upper rows (the privacy profile, Balle et al. 2018, Sec.
    2)."""
    rows = log_pair(mechanism, eps)
    return np.maximum(rows[0], rows[1])


def eps_array(epsilon) -> np.ndarray:
    """epsilon >= 0 as a float array (ValueError naming ``epsilon`` otherwise)."""
    return _eps_array(epsilon)


def _eps_array(epsilon) -> np.ndarray:
    return V.reals("epsilon", epsilon, low=0.0)


def single(mechanism):
    """A composition of one part used once is that part (a non-mechanism is refused here, at
    the profiles' boundary, with an error naming the parameter)."""
    from ..mechanisms.base import check_mechanism
    parts = check_mechanism(mechanism, "mechanism").parts()
    if len(parts) == 1 and parts[0][1] == 1 and parts[0][0] is not mechanism:
        return parts[0][0]
    return mechanism


# --- public API -------------------------------------------------------------------------------

def profile_pair(mechanism: Mechanism, epsilon: ArrayLike) -> np.ndarray:
    """Proven upper bounds on both hockey-stick curves of the mechanism's dominating pair:
    an array of shape ``(2,) + np.shape(epsilon)``, row 0 = H_{e^eps}(P || Q), row 1 =
    H_{e^eps}(Q || P), epsilon >= 0 (inf gives the mass at infinity). See the module docstring
    for what "dominating" means per relation, and docs/profiles.md for the theorem used per
    mechanism / sampling scheme. Raises NotImplementedError when there is no profile."""
    eps = _eps_array(epsilon)
    return to_linear_upper(log_pair(single(mechanism), eps))


def profile_pair_lower(mechanism: Mechanism, epsilon: ArrayLike) -> np.ndarray | None:
    """Proven lower bounds on the two hockey-stick curves of one actual neighbouring pair of the
    mechanism (same shape as :func:`profile_pair`), or None when none is known. For tight cases
    these are the exact values rounded down; for subsampled mechanisms they come from the
    membership construction of Balle et al. 2018, Lemma 12 / Thm 13."""
    eps = _eps_array(epsilon)
    rows = log_pair_lower(single(mechanism), eps)
    return None if rows is None else to_linear_lower(rows)


def privacy_profile(mechanism: Mechanism, epsilon: ArrayLike) -> float | np.ndarray:
    """The privacy profile delta_M(eps) = sup over neighbours of H_{e^eps}(M(x) || M(x'))
    (Balle et al. 2018, Sec. 2), as a proven upper bound, vectorised over epsilon >= 0. A float for
    a scalar epsilon. Mechanisms without a direct profile (compositions) raise NotImplementedError
    here;
    :func:`dpamp.accounting.profile.privacy_profile` (``dp.privacy_profile``,
    ``m.profile``) takes theirs from the PLD engine (Steinke 2022, Prop. 7)."""
    eps = _eps_array(epsilon)
    m = single(mechanism)
    try:
        rows = log_pair(m, eps)
    except NotImplementedError as err:
        raise NotImplementedError(
            f"{type(m).__name__} has no direct privacy profile ({err}); dp.privacy_profile "
            "and m.profile(eps) take it from the PLD engine") from None
    out = to_linear_upper(np.maximum(rows[0], rows[1]))
    return out if out.ndim else float(out)


def privacy_profile_lower(mechanism, epsilon):
    """A proven lower bound on the privacy profile (max of the lower rows), or None."""
    low = profile_pair_lower(mechanism, epsilon)
    if low is None:
        return None
    out = np.maximum(low[0], low[1])
    return out if out.ndim else float(out)


def has_profile(mechanism) -> bool:
    try:
        log_pair(single(mechanism), np.zeros(1))
    except NotImplementedError:
        return False
    return True


# --- inversion: epsilon(delta) ------------------------------------------------------------------

def _first_below(curve, delta: float, *, want_upper: bool, hi0: float = 1.0) -> float:
    """For a non-increasing curve (vectorised, linear scale), the bracket end of
    inf{eps >= 0 : curve(eps) <= delta} on the safe side:

    want_upper=True: an eps with curve(eps) <= delta (so the true epsilon(delta) <= eps when
    curve is an upper bound on the true profile); inf when curve(inf) > delta.
    want_upper=False: the largest eps found with curve(eps) > delta (so the true
    epsilon(delta) >= eps when curve is a lower bound), 0 when curve(0) <= delta."""
    from ..core import roots
    c0 = float(curve(np.array([0.0]))[0])
    if c0 <= delta:
        return 0.0
    if float(curve(np.array([np.inf]))[0]) > delta:
        return math.inf
    meets = lambda e: not float(curve(np.array([e]))[0]) > delta
    lo, hi = roots.expand(meets, 0.0, hi0, limit=1e300)
    if hi > 1e300:
        return math.inf if want_upper else lo
    # vectorised bisection: 4 rounds of 64 points, then scalar halving to ~1e-13 relative
    for _ in range(4):
        grid = np.linspace(lo, hi, 66)[1:-1]
        vals = curve(grid)
        above = vals > delta
        if above.any():
            lo = float(grid[np.nonzero(above)[0][-1]])
        below = ~above
        if below.any():
            hi = float(grid[np.nonzero(below)[0][0]])
    lo, hi = roots.bisect(meets, lo, hi, iterations=60, rtol=1e-13, atol=1e-300)
    return hi if want_upper else lo


def epsilon_for_delta(mechanism, delta: float):
    """(upper, lower) on the smallest epsilon with delta_M(eps) <= delta, by bisection on the
    monotone profile bounds; lower is None when there is no lower profile."""
    d = V.delta(delta, allow_zero=True)
    m = single(mechanism)
    up_curve = lambda e: to_linear_upper(log_symmetric(m, e))  # noqa: E731
    upper = _first_below(up_curve, d, want_upper=True)
    low_rows = log_pair_lower(m, np.zeros(1))
    lower = None
    if low_rows is not None:
        def low_curve(e):
            r = log_pair_lower(m, e)
            return to_linear_lower(np.maximum(r[0], r[1]))
        lower = _first_below(low_curve, d, want_upper=False,
                             hi0=max(upper, 1e-3) if math.isfinite(upper) else 1.0)
    return upper, lower


@dataclasses.dataclass(frozen=True)
class PrivacyProfile:
    """The privacy profile delta_M(eps) of a mechanism as an object (Balle et al. 2018, Sec. 2):
    call it for the upper bound (vectorised over eps >= 0), ``pair`` / ``pair_lower`` for both
    orders of the dominating pair, ``lower`` for a proven lower bound, ``epsilon(delta)`` for the
    (upper, lower) inversion."""

    mechanism: Mechanism

    def __call__(self, epsilon):
        return privacy_profile(self.mechanism, epsilon)

    def pair(self, epsilon):
        return profile_pair(self.mechanism, epsilon)

    def pair_lower(self, epsilon):
        return profile_pair_lower(self.mechanism, epsilon)

    def lower(self, epsilon):
        return privacy_profile_lower(self.mechanism, epsilon)

    def epsilon(self, delta):
        return epsilon_for_delta(self.mechanism, delta)
