"""The add direction of one allocation epoch for small noise: the sum of X_i ^ t.

The add curve of the epoch's pair (:mod:`.pld`) is H_x(Q || P) = E_Q[(1 - x S/t)_+], S the sum
of the t likelihood ratios X_i = dP0/dQ0 (independent under Q). It only looks at S < t / x, so
for the x >= 1 where the PLD needs it (our observation):

    E_Q[(1 - x S/t)_+] = E_Q[(1 - x S'/t)_+],   S' = sum_i min(X_i, c), any c >= t,

exactly: if some X_i > c then both S and S' exceed c >= t >= t/x, and both terms vanish.
(For c < t it stays an upper bound, X ^ c <= X and the curve decreases in S.) So the add
direction needs X only up to c = t, at the step that resolves the sums near t e^{-eps}, while
the remove direction needs X's long right tail (:mod:`.tail`) at a coarse step. For Gaussian
sigma < ~0.38 the two do not fit on one grid: X's median e^{-1/(2 sigma^2)} is below 1e-3 and
the remove body reaches ~1e5, so with one grid the add curve was about 0.6 at every x. With its
own grid up to c = t the add curve is that of the whole pair again.

The lower pair keeps the body (every X_i <= c) as the grid's lowered atoms and merges the event
N = #{i: X_i > c} >= 1 into one atom, with its exact masses

    Q[N >= 1] = 1 - (1 - q_c)^t,    P[N >= 1] = 1 - (1 - p_c)(1 - q_c)^{t-1},

q_c = Q0[X > c], p_c = P0[X > c] (P = the mixture over the step holding the record). Merging
outcomes is a post-processing, so the pair stays dominated; Q-mass is rounded down and P-mass
up (a smaller add loss log(Q/P) of the atom lowers every hockey-stick divergence).

For few steps the add direction's large epsilon needs sums near t e^-eps, below the grid's
step at any affordable size; there :func:`max_bound` (the largest coordinate alone) bounds the
add curve as well, and :mod:`.pld` takes the smaller of the two upper bounds.

This module only sizes the grid and forms the atom and that bound; :mod:`.pld` composes the
grid.
"""
from __future__ import annotations

import math

import numpy as np

_U = 2.0 ** -53
#: epochs of at most this many steps also get :func:`max_bound` on their add curve at any
#: noise (sigma 0.4, t 3: the grid alone gave [5.0, 26.9] against RDP's 14.23)
FEW_STEPS = 64


def cap_for(t: int, x_body_end: float) -> float:
    """The cap c of X for the add direction: t (exact for x >= 1), or the body end of the remove
    grid if that is smaller (then the two grids coincide; see :func:`needs_own_grid`)."""
    return float(min(t, x_body_end))


def needs_own_grid(sd_x: float, max_sd: float) -> bool:
    """True where X is too spread for the remove grid to resolve the add direction's small sums
    (standard deviation of X above ``max_sd``: Gaussian sigma < ~0.38)."""
    return sd_x > max_sd


def step_for(c: float, dx: float, max_k: int) -> tuple[float, int]:
    """(step, K) of the add grid on [0, c]: the remove grid's step dx, coarsened so that K <=
    max_k, with K step >= c exactly in floating point."""
    K = max(2, int(math.ceil(c / dx)))
    if K > max_k:
        K = max_k
    step = c / K
    while K * step < c:
        step = math.nextafter(step, math.inf)
    return step, K


def merged_atom(q_c: float, p_c: float, t: int) -> tuple[float, float]:
    """(Q-mass, P-mass) of the merged event N >= 1 (module docstring), Q-mass rounded down and
    P-mass up. ``q_c``, ``p_c`` are upper bounds of Q0[X > c] and P0[X > c] (including
    P0[X = inf]); the Q-mass is lowered by the relative rounding of those bounds as well."""
    if q_c <= 0.0 and p_c <= 0.0:
        return 0.0, 0.0
    # 1 - e^z as -expm1(z): no cancellation for tiny tails; 1e-12 relative covers the few ulps
    # of log1p / expm1 and of the sums
    q_lo = min(max(q_c * (1 - 1e-12), 0.0), 1.0)
    m_q = (-math.expm1(t * math.log1p(-q_lo)) if q_lo < 1 else 1.0) * (1 - 1e-12)
    q_up, p_up = min(q_c, 1.0), min(p_c, 1.0)
    if q_up >= 1 or p_up >= 1:
        return m_q, 1.0
    m_p = -math.expm1(math.log1p(-p_up) + (t - 1) * math.log1p(-q_up))
    m_p = min(m_p * (1 + 1e-12), 1.0)
    return m_q, m_p


def max_bound(loss, t: int, x) -> np.ndarray:
    """Upper bounds on the add curve at x > 0 from the largest coordinate M = max_i X_i <= S:

        E_Q[(1 - x S/t)_+] <= E_Q[(1 - x M/t)_+] = int_0^{t/x} (x/t) F(m)^t dm,

    F(m) = Q0[X <= m], Q[M <= m] = F(m)^t (integration by parts against the cdf). With
    m = (t/x) r this is int_0^1 F(r t/x)^t dr, bounded by a right-endpoint sum (F^t increases)
    on a geometric grid of r (the first piece [0, r_0] at F(r_0 t/x)^t). Our bound, for few
    steps at small noise, where S near t e^-eps is below any linear grid's resolution and is
    mostly its largest term."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    r = np.geomspace(1e-12, 1.0, 321)
    dr = np.diff(np.concatenate([[0.0], r]))
    with np.errstate(divide="ignore", over="ignore"):
        m = (t / np.maximum(x, 1e-300))[:, None] * r[None, :]
        F = _cdf_q_up(loss, np.log(m))
        Ft = np.exp(t * np.log(np.maximum(F, 1e-300)))
    # exp(t log F) to ~t ulps of F's relative rounding; 1e-9 covers t up to ~1e6
    return np.minimum(np.sum(dr[None, :] * Ft, axis=1) * (1 + 1e-9), 1.0)


def _cdf_q_up(loss, lk: np.ndarray) -> np.ndarray:
    """Q0[l <= lk] from above: the continuous part's cdf (FUNC_ULPS-accurate, raised by 1e-12
    relative) plus the atoms at or below lk (those at -inf included)."""
    out = np.zeros(lk.shape)
    if loss.cdf is not None:
        out += np.asarray(loss.cdf(lk)[1], dtype=float)
    if loss.atom_loss.size:
        order = np.argsort(loss.atom_loss)
        al, aq = loss.atom_loss[order], np.cumsum(loss.atom_q[order])
        k = np.searchsorted(al, lk, side="right")
        out += np.where(k > 0, aq[np.maximum(k - 1, 0)], 0.0)
    return np.minimum(out * (1 + 1e-12), 1.0)


__all__ = ["cap_for", "needs_own_grid", "step_for", "merged_atom", "max_bound"]
