"""Rules that move a guarantee from one neighbouring relation (or one pair) to another.

| function                        | source            | rule                                      |
|---------------------------------|-------------------|-------------------------------------------|
| ``add_remove_to_substitution``  | Steinke 2022, Sec. 6.2      | (eps, delta) -> (2 eps, (1 + e^eps) delta) |
| ``substitution_to_add_remove``  | Steinke 2022, Sec. 6.2      | (eps, delta) -> (eps, delta), null record  |
| ``rdp_triangle``                | Steinke 2022, Lemma 33.7    | D_a(P||R) <= a'/(a'-1) D_{a(a'-1)/(a'-a)}(P||Q) + D_{a'}(Q||R) |
| ``zcdp_triangle``               | Steinke 2022, Lemma 33.7    | rho_PR = (sqrt rho_1 + sqrt rho_2)^2     |
| ``rdp_group``                   | Steinke 2022, Lemma 33.7    | RDP of a 2-step chain of neighbours (e.g. add/remove -> substitution) |
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from . import validate as V

__all__ = ["add_remove_to_substitution", "substitution_to_add_remove", "rdp_triangle",
           "zcdp_triangle", "rdp_group"]


def add_remove_to_substitution(epsilon: float, delta: float) -> tuple[float, float]:
    """Steinke 2022, Sec. 6.2: a replacement is a removal followed by an addition, so by group
    privacy an (eps, delta)-DP mechanism under add/remove is (2 eps, (1 + e^eps) delta)-DP under
    substitution. delta is capped at 1."""
    e = V.nonnegative("epsilon", epsilon, allow_inf=True)
    d = V.real("delta", delta, low=0.0, high=1.0)
    if d == 0:
        return 2.0 * e, 0.0
    return 2.0 * e, min(1.0, d * (1.0 + math.exp(min(e, 800.0))) * (1.0 + 1e-15))


def substitution_to_add_remove(epsilon: float, delta: float) -> tuple[float, float]:
    """Steinke 2022, Sec. 6.2: removal or addition can be simulated by replacing the record with a
    null value, so (eps, delta)-DP under substitution gives the same (eps, delta) under add/remove,
    provided the algorithm accepts a null record (the caller's responsibility)."""
    e = V.nonnegative("epsilon", epsilon, allow_inf=True)
    d = V.real("delta", delta, low=0.0, high=1.0)
    return e, d


def rdp_triangle(rdp_pq: Callable, rdp_qr: Callable, alpha, alpha_prime):
    """Steinke 2022, Lemma 33 item 7 (triangle-like inequality): for 1 < alpha < alpha' < inf,

        D_alpha(P||R) <= alpha'/(alpha'-1) D_{alpha (alpha'-1)/(alpha'-alpha)}(P||Q)
                         + D_{alpha'}(Q||R),

    with D(P||Q) <= rdp_pq(.) and D(Q||R) <= rdp_qr(.) (callables vectorised over orders).
    Vectorised over alpha / alpha_prime (broadcast together)."""
    a = V.orders(alpha)
    ap = V.orders(alpha_prime, "alpha_prime")
    a, ap = np.broadcast_arrays(a, ap)
    if (ap <= a).any() or np.isinf(ap).any():
        raise ValueError("alpha_prime must be in (alpha, inf) for Steinke 2022, Lemma 33.7")
    inner = a * (ap - 1.0) / (ap - a)
    out = (ap / (ap - 1.0) * np.asarray(rdp_pq(inner), dtype=float)
           + np.asarray(rdp_qr(ap), dtype=float)) * (1.0 + 1e-15)
    return out if out.ndim else float(out)


def zcdp_triangle(rho1: float, rho2: float) -> float:
    """Steinke 2022, Lemma 33 item 7: D(P||Q) <= rho_1 alpha and D(Q||R) <= rho_2 alpha for all
    alpha imply D(P||R) <= (sqrt(rho_1) + sqrt(rho_2))^2 alpha. E.g. rho-zCDP under add/remove gives
    4 rho-zCDP under substitution."""
    r1 = V.nonnegative("rho1", rho1)
    r2 = V.nonnegative("rho2", rho2)
    return (math.sqrt(r1) + math.sqrt(r2)) ** 2 * (1.0 + 1e-15)


def rdp_group(rdp: Callable, alpha, rdp2: Callable | None = None):
    """RDP across two neighbouring steps P ~ Q ~ R (group privacy of size 2, Steinke 2022, Lemma
    33.7, used in Steinke 2022, Sec. 6.7 for substitution = removal + addition): min over alpha' >
    alpha of ``rdp_triangle`` on a grid alpha' = alpha (1 + x), x in [1e-3, 1e3] (every alpha' is
    valid, so the grid minimum is a valid bound). ``rdp2`` is the second step's curve (default:
    rdp). Vectorised over alpha."""
    a = np.atleast_1d(V.orders(alpha)).astype(float).ravel()
    second = rdp if rdp2 is None else rdp2
    x = np.geomspace(1e-3, 1e3, 241)
    ap = a[:, None] * (1.0 + x[None, :])
    aa = np.broadcast_to(a[:, None], ap.shape)
    vals = rdp_triangle(lambda z: np.asarray(rdp(z.ravel()), dtype=float).reshape(z.shape),
                        lambda z: np.asarray(second(z.ravel()), dtype=float).reshape(z.shape),
                        aa, ap)
    out = np.min(np.where(np.isnan(vals), np.inf, vals), axis=1)
    shape = np.shape(alpha)
    return out.reshape(shape) if shape else float(out[0])
