"""Trade-off curves (f-DP) from privacy profiles: proven lower and upper bounds on the type II
error beta(alpha) of the best test between two neighbouring output distributions.

Setting. For an ordered pair (P, Q) write F(x) = H_x(P || Q) = sup_S P(S) - x Q(S), x >= 0
(x = e^eps; Steinke 2022, Prop. 7's hockey-stick curve). F is convex and non-increasing on [0, inf),
F(0) = 1, F(x) >= (1 - x)_+, and for x <= 1 it is the perspective of the swapped pair's curve,
F(x) = 1 - x + x H_{1/x}(Q || P). The trade-off function of testing Q (null) against P
(alternative), T(alpha) = inf {1 - E_P phi : E_Q phi <= alpha} (Dong, Roth & Su, "Gaussian
Differential Privacy", JRSS-B 2022, arXiv:1905.02383, Def. 2.1; the hypothesis-testing view of
Kairouz, Oh & Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015,
arXiv:1311.0776, Sec. 2), is the convex conjugate of F:

    T(alpha) = sup_{x >= 0} [1 - F(x) - x alpha].                                   (*)

">=" for each x: for any test, E_P phi - x E_Q phi <= F(x), so beta >= 1 - F(x) - x alpha.
"=" is Fenchel-Moreau: 1 - F(x) = inf_alpha [T(alpha) + x alpha] and T is convex and closed
(DRS Prop. 2.2). Splitting (*) at x = 1 and writing x = e^eps (x >= 1) and x = e^-eps (x <= 1)
with the perspective gives the two families of lines of DRS Prop. 2.12 / Eq. (5),

    T(alpha) = max( sup_{eps >= 0} 1 - H_{e^eps}(P||Q) - e^eps alpha,
                    sup_{eps >= 0} e^-eps (1 - H_{e^eps}(Q||P) - alpha) ),

one per order of the pair: DRS state it with the symmetric delta(eps) = max of both orders; we
keep the orders apart (``rows`` 0 and 1 as in :mod:`dpamp.profiles.core`), which is never looser.

Lower bound on beta (:func:`beta_lower`): any finite set of eps and any *upper* bounds on the
two rows give lines each of which is below T, hence so is their maximum. Upper bound on beta
(:func:`beta_upper`): needs *lower* bounds on both rows of one actual pair and an argument that
covers every x >= 0, not only the grid (the sup in (*) runs over all x): see its docstring.
GDP (:func:`gdp_mu_upper`): the Gaussian trade-off G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)
(DRS Def. 2.6) lies below a maximum of lines everywhere iff it lies below each line at the ends
of the interval where that line is the maximum (G_mu is convex, so G_mu - line is convex and
peaks at an end).

All functions take an increasing eps grid with eps[0] = 0, optionally ending in +inf (the mass
at infinity), and rows of shape (2, n) for the two orders; everything is rounded outwards.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_U = 2.0 ** -53
#: relative padding of the normal quantile and distribution functions (scipy's ndtri / ndtr,
#: accurate to a few ulps; padded by ~10^5 of that)
_PHI_PAD = 1e-10
_CHUNK = 256
#: relative rounding pad of the conjugate's few operations per value (~450 ulps)
_R = 1e-13


def _lines(eps: np.ndarray, up: np.ndarray, order: int, zero: bool = True):
    """Lines beta >= w (1 - u - s alpha), valid for every test of the ordered pair (rows
    ``order``, ``1 - order``) from upper rows u: family 1 (x = e^eps >= 1) w = 1, u = u_a,
    s = e^eps; family 2 (x = e^-eps) w = e^-eps, u = u_b, s = 1. s is rounded up and w down
    (w multiplies a value that matters only where it is >= 0), so each is a valid line as a
    real function; u is kept as given (1 - u rounds to 1 for u below an ulp, and a line
    through (1 - u, 0) must stay positive before it: family 2's zero is exactly at 1 - u).
    Returns (w, u, s, c_inf) with the zero line (w = 0) appended if ``zero``; c_inf is the
    eps = inf column's constant at alpha = 0 (1 - mass at infinity, rounded down), or None."""
    a, b = up[order], up[1 - order]
    fin = np.isfinite(eps)
    e, ua, ub = eps[fin], np.clip(a[fin], 0.0, 1.0), np.clip(b[fin], 0.0, 1.0)
    with np.errstate(over="ignore"):
        sa = _up(np.exp(e))
    z = [[0.0]] if zero else []
    w = np.concatenate([np.ones(e.size), _down(np.exp(-e))] + z)
    u = np.concatenate([ua, ub] + z)
    s = np.concatenate([sa, np.ones(e.size)] + z)
    c_inf = None
    if (~fin).any():
        ui = float(np.clip(a[~fin], 0.0, 1.0).max())
        c_inf = 1.0 if ui == 0 else math.nextafter(1.0 - ui, -math.inf)
    ok = np.isfinite(s)
    return w[ok], u[ok], s[ok], c_inf


def _line_at(w, u, s, t):
    """w (1 - u - s t) rounded down (t >= 0): 1 - s t - u carries at most 2 ulps of 1 + s t."""
    d = (1.0 - s * t) - u
    d = d - np.where(t > 0, 2 * _U * (1.0 + s * t), _U * u)
    return np.where(d > 0, w * d * (1 - 2 * _U), w * d * (1 + 2 * _U))


def _up(x):
    return np.nextafter(np.nextafter(x, np.inf), np.inf)


def _down(x):
    return np.maximum(np.nextafter(np.nextafter(x, -np.inf), -np.inf), 0.0)


def _line_exact(w, u, s, t) -> float:
    """w (1 - u - s t) for floats, computed in rationals and rounded down to a float."""
    v = Fraction(float(w)) * (1 - Fraction(float(u)) - Fraction(float(s)) * Fraction(float(t)))
    f = float(v)
    return f if Fraction(f) <= v else math.nextafter(f, -math.inf)


def _eval_lines(w, c, s, alpha):
    """max_i w_i (1 - c_i - s_i alpha) at each alpha, rounded down (:func:`_line_at`)."""
    out = np.empty(alpha.size)
    for k in range(0, alpha.size, _CHUNK):
        a = alpha[k:k + _CHUNK, None]
        out[k:k + _CHUNK] = _line_at(w[None, :], c[None, :], s[None, :], a).max(axis=1)
    return out


def beta_lower(alpha, eps, up) -> np.ndarray:
    """Proven lower bound on beta(alpha) for every test of every ordered pair whose curves are
    below the upper rows ``up`` (row 0 for one order, row 1 for the other, or the same curve
    twice): the minimum over both orders of the maximum of the lines of the module docstring
    (DRS Prop. 2.12), and >= 0. Any finite eps grid is valid; a finer one is tighter."""
    alpha = np.asarray(alpha, dtype=float)
    flat = alpha.ravel()
    res = []
    for order in (0, 1):
        w, c, s, c_inf = _lines(eps, up, order)
        v = np.maximum(_eval_lines(w, c, s, flat), 0.0)
        if c_inf is not None:
            v = np.where(flat == 0, np.maximum(v, c_inf), v)
        res.append(v)
    return np.minimum(res[0], res[1]).reshape(alpha.shape)


def _knots(eps, up, low, order):
    """Knots x_k (increasing, x_0 = 0) of the curve F of the ordered pair (row ``order`` for
    x >= 1, the perspective of row ``1 - order`` for x < 1) with lower bounds ell_k <= F(x_k)
    <= u_k, and a lower bound on F(inf) (the mass at +inf; 0 if unknown)."""
    fin = np.isfinite(eps)
    e = eps[fin]
    la, lb = np.clip(low[order][fin], 0.0, 1.0), np.clip(low[1 - order][fin], 0.0, 1.0)
    ua, ub = np.clip(up[order][fin], 0.0, 1.0), np.clip(up[1 - order][fin], 0.0, 1.0)
    l_inf = float(np.clip(low[order][~fin], 0.0, 1.0).max()) if (~fin).any() else 0.0
    # x < 1 from the swapped row: F(x) = 1 - x + x F_rev(1/x); e > 0 only (x = 1 is shared)
    r = e[1:][::-1]
    xr = np.exp(-r)
    slack = 4 * _U * (1.0 + 2 * xr)                     # rounding of 1 - x + x v and of x
    lr = np.maximum(1.0 - xr + xr * lb[1:][::-1] - slack, 0.0)
    ur = np.minimum(1.0 - xr + xr * ub[1:][::-1] + slack, 1.0)
    xf = np.exp(e)
    x = np.concatenate([[0.0], xr, xf])
    ell = np.concatenate([[1.0], lr, la])
    u = np.concatenate([[1.0], ur, ua])
    # F(1) is the total variation, the same for both orders
    i1 = xr.size + 1
    ell[i1] = max(la[0], lb[0])
    u[i1] = min(ua[0], ub[0])
    # F >= (1 - x)_+ and F is non-increasing: running max from the right / min from the left
    ell = np.maximum(ell, np.maximum(1.0 - x - 4 * _U, 0.0))
    ell = np.maximum.accumulate(ell[::-1])[::-1]
    u = np.minimum.accumulate(u)
    # repeated knots (a grid point given twice) merge: the best bounds of both
    xs, inv = np.unique(x, return_inverse=True)
    if xs.size < x.size:
        e2, u2 = np.zeros(xs.size), np.ones(xs.size)
        np.maximum.at(e2, inv, ell)
        np.minimum.at(u2, inv, u)
        x, ell, u = xs, e2, u2
    return x, ell, np.maximum(u, ell), l_inf


def beta_upper(alpha, eps, up, low) -> np.ndarray:
    """Proven upper bound on the trade-off of one actual pair of neighbours, hence on the
    mechanism's: some pair and some test reach beta <= this at level alpha. ``low`` are lower
    bounds on both curves of that pair (rows as ``up``), ``up`` upper bounds on them.

    By (*) we need sup_{x >= 0} g(x), g(x) = 1 - F(x) - alpha x, over *every* x, knowing F only
    through bounds at knots 0 = x_0 < ... < x_K (:func:`_knots`): G_k = 1 - ell_k - alpha x_k
    >= g(x_k) and g_k = 1 - u_k - alpha x_k <= g(x_k). g is concave (F convex), so on a cell
    [x_k, x_{k+1}] it lies below the extension of each neighbouring chord:

        g(x) <= G_k + S_L (x - x_k),        S_L = (G_k - g_{k-1}) / (x_k - x_{k-1}),
        g(x) <= G_{k+1} + S_R (x_{k+1} - x), S_R = (G_{k+1} - g_{k+2}) / (x_{k+2} - x_{k+1})

    (the chord slope (g(x_k) - g(x_{k-1})) / dx bounds the slope right of x_k from above, and
    the right side g(x_k) (1 + r) - g(x_{k-1}) r, r >= 0, grows with g(x_k) and falls with
    g(x_{k-1}); the same on the right). F non-increasing gives g(x) <= 1 - ell_{k+1} - alpha x_k
    on the cell too, and F(x) >= 1 - x gives g(x) <= (1 - alpha) x_{k+1}. The maximum over the cell
    of the minimum of the two lines is at an end or at their crossing, all evaluated. Beyond x_K,
    g(x) <= 1 - F(inf) - alpha x_K, and <= G_K when S_L <= 0 there. So the maximum over cells bounds
    T(alpha); it is exact up to second order in the knot spacing where ell = u. Each candidate is
    padded for rounding (see
    :func:`_sup_concave`). Capped at 1 - alpha (the test ignoring the data)."""
    alpha = np.asarray(alpha, dtype=float)
    flat = alpha.ravel()
    res = []
    for order in (0, 1):
        x, ell, u, l_inf = _knots(eps, up, low, order)
        res.append(_sup_concave(flat, x, ell, u, l_inf))
    out = np.minimum(np.minimum(res[0], res[1]), 1.0 - flat + _U)
    return np.clip(out, 0.0, 1.0).reshape(alpha.shape)


def _sup_concave(alpha, x, ell, u, l_inf):
    """:func:`beta_upper`'s bound for one order. Rounding: every value is padded by _R times
    the magnitudes it is computed from (mG, mg bound |G|, |g| and their rounding: 1 + bound +
    alpha x), a chord's slope carries (mG + mg) / dx of them, times the distance it is
    extended over."""
    K = x.size - 1
    out = np.empty(alpha.size)
    dx = np.diff(x)                                     # K cells
    for k0 in range(0, alpha.size, _CHUNK):
        a = alpha[k0:k0 + _CHUNK, None]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ax = a * x[None, :]
            G = 1.0 - ell[None, :] - ax                 # >= g at the knots
            g = 1.0 - u[None, :] - ax                   # <= g at the knots
            mG, mg = 1.0 + ell[None, :] + ax, 1.0 + u[None, :] + ax
            SL = np.full((a.shape[0], K), np.inf)
            EL = np.zeros((a.shape[0], K))              # rounding of SL, per unit extended
            SL[:, 1:] = (G[:, 1:K] - g[:, :K - 1]) / dx[None, :K - 1]
            EL[:, 1:] = _R * (mG[:, 1:K] + mg[:, :K - 1]) / dx[None, :K - 1]
            SR = np.full((a.shape[0], K), np.inf)
            ER = np.zeros((a.shape[0], K))
            SR[:, :K - 1] = (G[:, 1:K] - g[:, 2:]) / dx[None, 1:]
            ER[:, :K - 1] = _R * (mG[:, 1:K] + mg[:, 2:]) / dx[None, 1:]
            xl, xr = x[None, :K], x[None, 1:]
            GL, GR = G[:, :K], G[:, 1:]
            mL, mR = mG[:, :K], mG[:, 1:]

            def both(xx):
                dl, dr = xx - xl, xr - xx
                l1 = np.where(np.isinf(SL), np.inf,
                              GL + SL * dl + _R * (mL + np.abs(SL) * dl) + EL * dl)
                l2 = np.where(np.isinf(SR), np.inf,
                              GR + SR * dr + _R * (mR + np.abs(SR) * dr) + ER * dr)
                return np.minimum(l1, l2)
            den = SL + SR
            cross = np.where(np.isfinite(den) & (den > 0),
                             (GR - GL + SL * xl + SR * xr) / den, xl)
            # (any point of the cell is a valid place to evaluate the two lines; the maximum
            # of their minimum is at an end or the crossing, wherever rounding puts it)
            cross = np.clip(np.nan_to_num(cross, nan=0.0), xl, xr)
            peak = np.maximum(np.maximum(both(xl), both(xr)), both(cross))
            step = 1.0 - ell[None, 1:] - a * xl + _R * (1.0 + a * xl)
            # F(x) >= 1 - x: g(x) <= (1 - alpha) x <= (1 - alpha) x_{k+1}
            origin = (1.0 - a) * xr * (1 + _R) + _R
            cell = np.minimum(np.minimum(np.nan_to_num(peak, nan=np.inf), step), origin)
            # beyond x_K: F >= F(inf), and g falls if the chord (x_{K-1}, x_K) surely falls
            last_sl = (G[:, K] - g[:, K - 1] + _R * (mG[:, K] + mg[:, K - 1])) / dx[K - 1]
            tail = 1.0 - l_inf - a[:, 0] * x[-1]
            tail = np.where(last_sl < 0, np.minimum(tail, G[:, -1]), tail)
            tail = tail + _R * (2.0 + a[:, 0] * x[-1])
        out[k0:k0 + _CHUNK] = np.maximum(np.nan_to_num(cell, nan=np.inf).max(axis=1), tail)
    return out


# --- Gaussian differential privacy ------------------------------------------------------------

def _z_upper(alpha):
    """Upper bound on Phi^-1(1 - alpha) = -Phi^-1(alpha) (by symmetry; no 1 - alpha rounding)."""
    from scipy.special import ndtri
    z = -ndtri(alpha)
    return z + _PHI_PAD * (1.0 + np.abs(z))


def gaussian_beta(alpha, mu, upper: bool):
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) (DRS Def. 2.6), rounded up (upper) or down."""
    from scipy.special import ndtr, ndtri
    a = np.asarray(alpha, dtype=float)
    z = -ndtri(a)
    pad = _PHI_PAD * (1.0 + np.abs(z) + mu)
    with np.errstate(invalid="ignore"):
        v = ndtr(z - mu + (pad if upper else -pad))
    v = v * (1 + 1e-12) + 1e-300 if upper else v * (1 - 1e-12)
    v = np.where(a <= 0, 1.0, np.where(a >= 1, 0.0, v))
    return np.clip(np.minimum(v, 1.0 - a + _U) if upper else v, 0.0, 1.0)


def _hull_pieces(c, s, lo, hi):
    """The upper envelope of the lines c - s alpha on [lo, hi]: [(a, b, index of the line)],
    consecutive pieces
    sharing their ends, covering [lo, hi]. Floating-point crossings are fine for soundness: any
    cover of [lo, hi] by pieces, each with a valid line, proves what is checked on it."""
    order = np.lexsort((c, -s))               # steepest first; for ties the largest c last
    c, s = c[order], s[order]
    keep_c: list[float] = []
    keep_s: list[float] = []
    keep_i: list[int] = []
    for ci, si, ii in zip(c, s, order):
        if keep_s and keep_s[-1] == si:
            keep_c.pop(), keep_s.pop(), keep_i.pop()
        while len(keep_c) >= 2:
            # drop the last line if the new one overtakes it before it overtakes the one before
            c1, s1, c2, s2 = keep_c[-2], keep_s[-2], keep_c[-1], keep_s[-1]
            x12 = (c1 - c2) / (s1 - s2)
            x13 = (c1 - ci) / (s1 - si)
            if x13 <= x12:
                keep_c.pop(), keep_s.pop(), keep_i.pop()
            else:
                break
        keep_c.append(ci)
        keep_s.append(si)
        keep_i.append(ii)
    kc, ks = np.array(keep_c), np.array(keep_s)
    brk = (kc[:-1] - kc[1:]) / (ks[:-1] - ks[1:])
    pieces, start = [], lo
    for i in range(kc.size):
        end = brk[i] if i < brk.size else hi
        end = min(end, hi)
        if end > start or (i == kc.size - 1 and start <= hi):
            pieces.append((start, max(end, start), keep_i[i]))
            start = end
        if start >= hi:
            break
    return pieces


def gdp_mu_upper(eps, up, lo: float = 0.0, hi: float = 1.0) -> tuple[float, float]:
    """Smallest mu (rounded up) such that G_mu <= the proven lower bound :func:`beta_lower` on
    [lo, hi], hence G_mu <= the mechanism's trade-off there (mu-GDP, DRS Def. 2.6, when the range
    is [0, 1]); inf when none exists: G_mu(0) = 1 and G_mu > 0 on [0, 1), so a lower bound with
    beta(0) < 1 (mass at infinity, or an upper profile that does not reach 0) or beta = 0 before
    alpha = 1 admits no mu.

    Proof: on each piece [a, b] of the upper envelope of the lines (one line c - s alpha valid
    for every test), G_mu - line is convex, so G_mu <= line on [a, b] iff it holds at a and b;
    there it holds iff mu >= Phi^-1(1 - alpha) - Phi^-1(c - s alpha) (G_mu is decreasing in mu).
    The pieces share their (floating-point) ends and cover [lo, hi] exactly; the lines are
    evaluated there in rationals. A last piece [a, 1] whose line is below 0 at 1 (the line of
    the pure epsilon overtakes it within an ulp of 1) is covered by that line: G_mu lies below
    its chord to (1, 0). Returns (mu, the alpha that needs it)."""
    from scipy.special import ndtri

    def mu_for(t, val):
        """mu with G_mu(t) <= val, 0 < t < 1 (inf if val <= 0)."""
        if val <= 0.0:
            return math.inf
        zl = float(ndtri(min(val, 1.0)))
        za = float(_z_upper(t))
        return za - zl + _PHI_PAD * (1.0 + abs(za) + abs(zl))
    need, where = 0.0, lo
    for order in (0, 1):
        w, u, s, c_inf = _lines(eps, up, order, zero=False)
        # the steepest line through (1, 0): family 2 with u = 0 (the pure epsilon), if any
        zero_at_1 = np.nonzero((u == 0) & (s == 1.0))[0]
        p = int(zero_at_1[np.argmax(w[zero_at_1])]) if zero_at_1.size else None
        for a, b, i in _hull_pieces(w * (1.0 - u), w * s, lo, hi):
            for t in (a, b):
                val = _line_exact(w[i], u[i], s[i], t)
                if t == 0.0:
                    if c_inf is not None:
                        val = max(val, c_inf)
                    if val < 1.0:
                        return math.inf, t
                    continue
                if t >= 1.0:
                    if val >= 0.0 or a >= 1.0:
                        continue
                    # a line below 0 at 1 crossed by the line p only within an ulp of 1: on
                    # [a, 1], G_mu lies below its chord from (a, G_mu(a)) to (1, 0), which lies
                    # below line p if G_mu(a) <= p(a) (both linear, both 0 at 1)
                    v = math.inf if p is None else mu_for(a, _line_exact(w[p], 0.0, 1.0, a))
                    t = a
                else:
                    v = mu_for(t, val)
                if v == math.inf:
                    return math.inf, t
                if v > need:
                    need, where = v, t
    return need, where


def gdp_mu_lower(alpha, beta_up) -> float:
    """A proven lower bound on the smallest mu with G_mu <= the mechanism's trade-off: at every
    alpha, G_mu(alpha) <= beta(alpha) <= beta_up forces mu >= Phi^-1(1 - alpha) -
    Phi^-1(beta_up) (rounded down). The largest over the given alphas (0 if none binds)."""
    from scipy.special import ndtri
    a = np.asarray(alpha, dtype=float).ravel()
    b = np.asarray(beta_up, dtype=float).ravel()
    ok = (a > 0) & (a < 1) & (b > 0) & (b < 1)
    if not ok.any():
        return 0.0
    za = -ndtri(a[ok])
    zb = ndtri(b[ok])
    v = za - zb - _PHI_PAD * (1.0 + np.abs(za) + np.abs(zb))
    return float(max(np.max(v), 0.0))
