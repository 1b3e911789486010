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


#: spacing of the common grid of log m in :func:`max_bound` (a right-endpoint sum over pieces
#: 1 % apart in m; the former per-x grid of 321 points was 9 % apart and 30-300x the work)
LOG_M_STEP = 0.01
#: the sum starts at m = 1e-12 t/x of the largest x (its first piece, [0, m_0], is charged at
#: F(m_0)^t in full)
LOG_R_FLOOR = math.log(1e-12)


def max_bound(loss, t: int, x) -> np.ndarray:
    """Upper bounds on the add curve at x > 0 from the largest coordinate M = max_i X_i <= S:

        E_Q[(1 - x S/t)_+] <= E_Q[(1 - x M/t)_+] = int_0^{t/x} (x/t) F(m)^t dm,

    F(m) = Q0[X <= m], Q[M <= m] = F(m)^t (integration by parts against the cdf). F^t
    increases, so a right-endpoint sum over any partition bounds it from above. The partition
    is one grid g_k = g_0 + k eta of log m shared by every x (F is evaluated once per knot, at
    the knot itself, so its argument carries no rounding): the pieces [e^g_(k-1), e^g_k] below
    t/x, each charged (x/t)(1 - e^-eta) e^g_k G_k with G_k = F(e^g_k)^t, the first [0, e^g_0]
    in full, and the last, [e^g_(K-1), t/x], at the first knot g_K >= log(t/x). The weighted
    prefix sums come from the contraction T_(K+1) = e^-eta (T_K + G_K), T_K =
    sum_(k<K) e^-(K-k) eta G_k (no overflow for any x). Our bound, for few steps at small
    noise, where S near t e^-eps is below any linear grid's resolution and is mostly its
    largest term."""
    from scipy.signal import lfilter
    x = np.atleast_1d(np.asarray(x, dtype=float))
    with np.errstate(divide="ignore"):
        top = math.log(t) - np.log(np.clip(x, 1e-300, 1e300))      # log(t/x)
    # (log(t/x) is known to ~1e-15 of its size: a knot is taken at or above it with room)
    top_up = top + 1e-12 * (1.0 + np.abs(top))
    eta = LOG_M_STEP
    g0 = float(np.min(top)) + LOG_R_FLOOR
    g = g0 + eta * np.arange(int(math.ceil((float(np.max(top_up)) - g0) / eta)) + 2)
    G = np.exp(t * np.log(np.maximum(_cdf_q_up(loss, g), 1e-300)))
    shrink = math.exp(-eta)
    T = np.concatenate([[0.0], lfilter([shrink], [1.0, -shrink], G)])     # T[K], K = 0..N
    K = np.minimum(np.searchsorted(g, top_up, side="left"), g.size - 1)
    rho_K = np.exp(g[K] - top)                                 # e^g_K x/t, in [1, e^eta)
    body = -math.expm1(-eta) * rho_K * T[K]
    first = np.exp(g0 - top) * shrink * G[0]                   # (K >= 1: g_0 < log(t/x))
    last = np.maximum(1.0 - rho_K * shrink, 0.0) * G[K]
    # exp(t log F) to ~t ulps of F's relative rounding, the recursion's and the weights' few
    # ulps per knot: 1e-9 covers t up to ~1e6 and 1e5 knots
    return np.minimum((body + first + last) * (1 + 1e-9), 1.0)


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
