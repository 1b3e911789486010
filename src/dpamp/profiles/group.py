"""Group-privacy profiles delta_{M,k}(e^eps) = sup over inputs at distance <= k of the
hockey-stick divergence (Balle et al. 2018, Sec. 2-3), used by the with-replacement theorems (Balle
et al. 2018, Thms 10, 11).

* black-box (Balle et al. 2018, Sec. 3): delta_{M,k}(e^eps) <= (e^eps - 1)/(e^{eps/k} - 1) *
delta_M(e^{eps/k}),
  from H_{e^{a+b}}(P||R) <= H_{e^a}(P||Q) + e^a H_{e^b}(Q||R) along a chain of k neighbours;
* white-box (registered per mechanism in closed_forms): Gaussian / Laplace with k * sensitivity,
  randomized response of a bit unchanged, pure eps0-DP as k*eps0-DP.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from . import core
from .numerics import down, envelope, log_expm1, pad_up, to_linear_upper

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..mechanisms.base import Mechanism


def log_group_blackbox(log_profile, k, eps):
    """log of the black-box group bound (Balle et al. 2018, Sec. 3) for the symmetric profile whose
    log is ``log_profile(eps)`` (vectorised); k >= 1 integers broadcast against eps (eps may be inf:
    the mass at infinity of a chain is 0 exactly when each link has none). The bound is not
    monotone in eps (the factor grows), the group profile is: monotone envelope per k."""
    k = np.asarray(k, dtype=float)
    eps = np.asarray(eps, dtype=float)
    k, eps = np.broadcast_arrays(k, eps)
    out = np.empty(k.shape)
    for kk in np.unique(k):
        sel = k == kk
        out[sel] = envelope(lambda e: _blackbox(log_profile, np.full(e.shape, kk), e), eps[sel])
    return out


def _blackbox(log_profile, k, eps):
    with np.errstate(invalid="ignore", divide="ignore"):
        ek = down(eps / k)
        base = np.asarray(log_profile(ek), dtype=float)
        factor = np.where(eps == 0, np.log(k), log_expm1(eps) - log_expm1(ek))
        out = np.where(np.isposinf(eps), np.where(np.isneginf(base), -np.inf, 0.0),
                       np.where(np.isneginf(base), -np.inf, factor + base))
    out = np.where(k == 1, base, out)
    return pad_up(np.minimum(out, 0.0))


def group_profile(mechanism: Mechanism, k: int, epsilon: ArrayLike) -> float | np.ndarray:
    """An upper bound on the k-group privacy profile delta_{M,k}(e^eps) of a mechanism: white-box
    where the mechanism is known (Gaussian, Laplace: k * sensitivity; randomized response;
    pure DP: min of k*eps0-DP and black-box), else the black-box bound of Balle et al. 2018, Sec. 3
    applied to its profile. Vectorised over epsilon >= 0."""
    k = V.integer("k", k, low=1)
    eps = V.reals("epsilon", epsilon, low=0.0)
    out = to_linear_upper(core.log_group(core.single(mechanism), np.asarray(k), eps))
    return out if out.ndim else float(out)


def group_profile_blackbox(profile, k: int, epsilon):
    """The black-box group bound (Balle et al. 2018, Sec. 3) for any profile given as a callable
    ``profile(eps) -> delta`` (linear scale, vectorised, non-increasing)."""
    k = V.integer("k", k, low=1)
    eps = V.reals("epsilon", epsilon, low=0.0)

    def log_prof(e):
        with np.errstate(divide="ignore"):
            return np.log(np.minimum(np.asarray(profile(e), dtype=float), 1.0))
    out = to_linear_upper(log_group_blackbox(log_prof, k, eps))
    return out if out.ndim else float(out)
