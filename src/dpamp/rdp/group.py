"""Group privacy of Rényi DP (Mironov 2017, "Rényi Differential Privacy", Prop. 2): if a
mechanism is (alpha, eps(alpha))-RDP for neighbours differing in one record, then for inputs
differing in at most 2^c records (a 2^c-stable map into its input) it is

    (alpha / 2^c, 3^c eps(alpha))-RDP,   for alpha >= 2^{c+1},

so a group of k <= 2^c records has the curve eps_k(beta) <= 3^c eps(2^c beta) at orders
beta >= 2 (and none below). The classic route to user-level DP-SGD (compose per record, then
this, then convert to (eps, delta)); a comparison only (:mod:`dpamp.theorems.group_privacy`).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..core import validate as V
from ..core.rounding import ulps_up
from .conversion import epsilon_from_rdp

__all__ = ["group_exponent", "group_rdp_curve", "group_rdp_epsilon"]


def group_exponent(k: int) -> int:
    """c = ceil(log2 k): the smallest c with k <= 2^c (exact integer arithmetic)."""
    k = V.integer("k", k, low=1)
    return (k - 1).bit_length()


def group_rdp_curve(curve: Callable[[np.ndarray], np.ndarray], k: int
                    ) -> Callable[[np.ndarray], np.ndarray]:
    """The k-group curve beta -> 3^c curve(2^c beta) for beta >= 2, inf below (Prop. 2)."""
    c = group_exponent(k)
    scale, factor = float(2 ** c), float(3 ** c)

    def group(beta):
        b = np.asarray(beta, dtype=float)
        out = np.full(b.shape, np.inf)
        ok = b >= 2.0 if c > 0 else b > 1.0
        if ok.any():
            out[ok] = ulps_up(factor * np.asarray(curve(scale * b[ok]), dtype=float), 2)
        return out
    return group


def group_rdp_epsilon(curve: Callable[[np.ndarray], np.ndarray], k: int, delta: float
                      ) -> float:
    """epsilon at ``delta`` of the k-group curve (dpamp's RDP conversion, Wang et al. 2019 / Balle
    et al. 2020's improved one)."""
    d = V.delta(delta)
    eps, _ = epsilon_from_rdp(group_rdp_curve(curve, k), d)
    return float(eps) if math.isfinite(eps) else math.inf
