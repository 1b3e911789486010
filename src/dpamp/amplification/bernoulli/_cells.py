"""Cells of the d > 1 search (Imola & Chaudhuri 2021, Alg. 3) and their interval propagation.

A cell gives, for each support corner v, intervals for s_v = P_v + Q_v and w_v = P_v / s_v
(step (4)); both constraints are sums of per-corner terms s_v psi(w_v) built from
h(u) = (1+u)^a - 1 - a u (step (1)), so each term's budget bounds its corner's intervals by
the others' (step (6), :func:`_propagate`). Every value carries a bound on its rounding error
and enters on the safe side. Steps (1)-(6) are those of the proof in the docstring of
:mod:`dpamp.amplification.bernoulli._support_search`.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ...core import roots

#: relative rounding slack of one floating-point operation, with room to spare
_U = 2.3e-16


# --------------------------------------------------------------------------------------------
# h(u) = (1+u)^a - 1 - a u and its derivative, with error bounds
# --------------------------------------------------------------------------------------------
def _h(u, a):
    """h(u) = (1+u)^a - 1 - a u >= 0 for u >= -1, and a bound on its evaluation error.

    With l = log1p(u): h = expm1(a l) - a expm1(l) = sum_{j>=2} (a^j - a) l^j / j!. For
    |a l| <= 0.1 the series up to j = 11 (the rest is below 1e-16 of the first term, which
    dominates the alternating ones) avoids the cancellation of the difference; elsewhere the
    difference loses at most a factor ~20, which the error bound covers."""
    u = np.asarray(u, float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        l = np.log1p(u)
        al = a * l
        val = np.expm1(al) - a * u
        # (the last term: the rounding of l through e^{a l}; 0 at u = -1, where l = -inf)
        mag = (np.abs(np.expm1(al)) + a * np.abs(u)
               + np.where(np.isfinite(l), np.exp(np.minimum(al, 709.0)) * a * np.abs(l), 0.0))
        err = 16 * _U * mag
        small = np.abs(al) <= 0.1
        if small.any():
            ls = l[small]
            aa = a if np.ndim(a) == 0 else np.broadcast_to(a, u.shape)[small]
            pj = aa * ls       # (a l)^j / j!
            qj = ls.copy()     # l^j / j!
            ser = np.zeros(ls.shape)
            for j in range(2, 12):
                pj = pj * (aa * ls) / j
                qj = qj * ls / j
                ser = ser + (pj - aa * qj)
            val[small] = ser
            err[small] = 32 * _U * np.abs(ser)
        zero = u == 0
        val = np.where(zero, 0.0, val)
        err = np.where(zero, 0.0, err)
    return np.maximum(val, 0.0), err


def _dh_abs_max(u_lo, u_hi, a):
    """max |h'| over [u_lo, u_hi] (h' = a ((1+u)^(a-1) - 1) is increasing), rounded up."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        u_lo = np.maximum(u_lo, -1.0)
        d_lo = a * np.expm1((a - 1.0) * np.log1p(u_lo))
        d_hi = a * np.expm1((a - 1.0) * np.log1p(u_hi))
        out = np.maximum(np.abs(d_lo), np.abs(d_hi))
    return out * (1.0 + 64 * _U) + 1e-300


# --------------------------------------------------------------------------------------------
# per-corner terms s psi1(w), s psi2(w) of C1, C2
# --------------------------------------------------------------------------------------------
def _psi(w, a):
    """(psi1(w), err1, psi2(w), err2): psi1 = (1-w) h((2w-1)/(1-w)), psi2(w) = psi1(1-w);
    +inf at w = 1 (resp. 0), where Q (resp. P) vanishes but the other does not."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = np.asarray(w, float)
        one_w = 1.0 - w
        u1 = (2.0 * w - 1.0) / one_w
        u2 = (1.0 - 2.0 * w) / w
        h1, e1 = _h(u1, a)
        h2, e2 = _h(u2, a)
        # rounding of u (a few ulps relative, plus an absolute ulp of 2w - 1) through h'
        du1 = 8 * _U * (np.abs(u1) + 1.0 / np.maximum(one_w, 1e-300))
        du2 = 8 * _U * (np.abs(u2) + 1.0 / np.maximum(w, 1e-300))
        e1 = e1 + _dh_abs_max(u1 - du1, u1 + du1, a) * du1
        e2 = e2 + _dh_abs_max(u2 - du2, u2 + du2, a) * du2
        p1 = one_w * h1
        p2 = w * h2
        e1 = one_w * e1 + 4 * _U * p1
        e2 = w * e2 + 4 * _U * p2
    p1 = np.where(w >= 1.0, np.inf, p1)
    p2 = np.where(w <= 0.0, np.inf, p2)
    e1 = np.where(np.isfinite(p1), e1, 0.0)
    e2 = np.where(np.isfinite(p2), e2, 0.0)
    return p1, e1, p2, e2


def _psi_min(w_lo, w_hi, a):
    """Lower bounds on min psi1, min psi2 over [w_lo, w_hi] (0 if 1/2 is inside; else the
    value at the end nearest 1/2 minus its error: both decrease towards 1/2)."""
    near = np.clip(0.5, w_lo, w_hi)
    p1, e1, p2, e2 = _psi(near, a)
    inside = (w_lo <= 0.5) & (w_hi >= 0.5)
    return (np.where(inside, 0.0, np.maximum(p1 - e1, 0.0)),
            np.where(inside, 0.0, np.maximum(p2 - e2, 0.0)))


def _shrink_w(w_lo, w_hi, bound, a, which):
    """Shrink [w_lo, w_hi] so that it still holds every w with psi_which(w) <= bound (bound
    may be inf). Each end moves only to a point where psi - err > bound is proven, and psi
    is monotone between that point and the old end (both on one side of 1/2)."""
    def infeasible(w):      # psi_which(w) - its error > bound: w is proven infeasible
        p = _psi(w, a)
        return (p[0] - p[1] if which == 1 else p[2] - p[3]) > bound

    new_lo, new_hi = w_lo.copy(), w_hi.copy()
    fin = np.isfinite(bound)
    for side in (-1, 1):
        # side -1: the part below 1/2, moving w_lo up; side +1: above 1/2, moving w_hi down
        end = w_lo if side < 0 else w_hi
        on_side = fin & ((end < 0.5) if side < 0 else (end > 0.5))
        if not on_side.any():
            continue
        far = np.where(on_side, end, 0.5)
        move = on_side & infeasible(far)
        if not move.any():
            continue
        # bisection on [far, 1/2 clipped to the interval]: out = proven-infeasible end
        inn = np.where(side < 0, np.minimum(w_hi, 0.5), np.maximum(w_lo, 0.5))
        _, out = roots.bisect_array(infeasible, inn, far, iterations=14, where=move)
        if side < 0:
            new_lo = np.where(move, out, new_lo)
        else:
            new_hi = np.where(move, out, new_hi)
    return new_lo, new_hi


# --------------------------------------------------------------------------------------------
# cells: safe rounding, ratio bounds, vertices, the constants of one search
# --------------------------------------------------------------------------------------------
def _widen_lo(v):
    """A float <= v for a bound computed with a few roundings (pushes a lower end out)."""
    return v - 16 * _U * np.abs(v) - 1e-300


def _widen_hi(v):
    return v + 16 * _U * np.abs(v) + 1e-300


def _log_ratio_bounds(w_lo, w_hi):
    """log L over a w-interval, L = w / (1 - w) = P / Q: (lower end rounded down, upper end
    rounded up; -inf / +inf at w = 0 / 1). The two logs and their difference err by at most
    a few ulps of |log w| + |log1p(-w)| + |result|, which 8 ulps of 1 + |result| cover."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.log(w_lo) - np.log1p(-w_lo)
        hi = np.log(w_hi) - np.log1p(-w_hi)
        return lo - 8 * _U * (1.0 + np.abs(lo)), hi + 8 * _U * (1.0 + np.abs(hi))


@functools.lru_cache(maxsize=None)
def _vertex_table(m: int) -> np.ndarray:
    """(4^m, m) table: vertex i of a cell takes corner-vertex idx[i, v] in 0..3 at corner v,
    where 2 * (s at its high end) + (w at its high end) numbers the quadrilateral's corners."""
    return np.array(list(itertools.product(range(4), repeat=m)), dtype=np.intp)


class _Instance:
    """Constants of one (eps, alpha, support) search."""

    def __init__(self, eps, a, logw_s, orbit, activity):
        self.a = float(a)
        E = (a - 1.0) * eps
        self.eta_hi = math.expm1(E * (1 + 4 * _U)) * (1 + 4 * _U)
        self.eta_lo = math.expm1(E * (1 - 4 * _U)) * (1 - 4 * _U)
        self.W = np.exp(logw_s)                           # (S, m)
        self.m = logw_s.shape[1]
        # relative error of a W entry and of a sum of m products of W with cell coordinates
        self.rho = 16 * _U * (8.0 + self.m + 2.0 * float(np.abs(logw_s).max()))
        self.orbit = orbit
        self.activity = activity                          # "both" (m = 4) or "one" (m = 3)


def _propagate(inst, s_lo, s_hi, w_lo, w_hi, rounds=3):
    """Shrink every cell to one holding all its feasible points (see (6) in the module
    docstring); returns the new bounds and a mask of cells proven to hold none."""
    a, eta = inst.a, inst.eta_hi
    dead = np.zeros(s_lo.shape[0], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(rounds):
            # sum s = 2
            tot_lo, tot_hi = s_lo.sum(1, keepdims=True), s_hi.sum(1, keepdims=True)
            s_lo = np.fmax(s_lo, _widen_lo(2.0 - (tot_hi - s_hi)))
            s_hi = np.fmin(s_hi, _widen_hi(2.0 - (tot_lo - s_lo)))
            # sum P = 1 and sum Q = 1, P = s w, Q = s (1 - w)
            for part in (0, 1):
                if part == 0:
                    v_lo, v_hi = _widen_lo(s_lo * w_lo), _widen_hi(s_hi * w_hi)
                else:
                    v_lo, v_hi = _widen_lo(s_lo * (1.0 - w_hi)), _widen_hi(s_hi * (1.0 - w_lo))
                t_lo, t_hi = v_lo.sum(1, keepdims=True), v_hi.sum(1, keepdims=True)
                n_lo = np.fmax(v_lo, _widen_lo(1.0 - (t_hi - v_hi)))
                n_hi = np.fmin(v_hi, _widen_hi(1.0 - (t_lo - v_lo)))
                # fraction f = w (P) or 1 - w (Q) lies in [n_lo / s_hi, n_hi / s_lo]
                f_lo = np.where(s_hi > 0, _widen_lo(n_lo / s_hi), 0.0)
                f_hi = np.where(s_lo > 0, _widen_hi(n_hi / s_lo), 1.0)
                f_lo, f_hi = np.nan_to_num(f_lo, nan=0.0), np.nan_to_num(f_hi, nan=1.0)
                if part == 0:
                    w_lo, w_hi = np.fmax(w_lo, f_lo), np.fmin(w_hi, f_hi)
                    fr_lo, fr_hi = w_lo, w_hi
                else:
                    w_lo = np.fmax(w_lo, _widen_lo(1.0 - f_hi))
                    w_hi = np.fmin(w_hi, _widen_hi(1.0 - f_lo))
                    fr_lo, fr_hi = _widen_lo(1.0 - w_hi), _widen_hi(1.0 - w_lo)
                # and s in [n_lo / fr_hi, n_hi / fr_lo]
                s_lo = np.fmax(s_lo, np.where(fr_hi > 0, _widen_lo(n_lo / fr_hi), 0.0))
                s_hi = np.fmin(s_hi, np.where(fr_lo > 0, _widen_hi(n_hi / fr_lo), np.inf))
            # C1, C2 budgets: each term s psi(w) is >= s_lo min psi and the terms sum to <= eta
            m1, m2 = _psi_min(w_lo, w_hi, a)
            t1 = s_lo * m1
            t2 = s_lo * m2
            dead |= (_widen_lo(t1.sum(1)) > eta) | (_widen_lo(t2.sum(1)) > eta)
            b1 = _widen_hi(eta - (t1.sum(1, keepdims=True) - t1))
            b2 = _widen_hi(eta - (t2.sum(1, keepdims=True) - t2))
            s_hi = np.fmin(s_hi, np.where(m1 > 0, _widen_hi(b1 / m1), np.inf))
            s_hi = np.fmin(s_hi, np.where(m2 > 0, _widen_hi(b2 / m2), np.inf))
            pos = s_lo > 0
            lim1 = np.where(pos, _widen_hi(b1 / np.where(pos, s_lo, 1.0)), np.inf)
            lim2 = np.where(pos, _widen_hi(b2 / np.where(pos, s_lo, 1.0)), np.inf)
            shape = w_lo.shape
            w_lo, w_hi = (v.reshape(shape) for v in _shrink_w(
                w_lo.ravel(), w_hi.ravel(), lim1.ravel(), a, 1))
            w_lo, w_hi = (v.reshape(shape) for v in _shrink_w(
                w_lo.ravel(), w_hi.ravel(), lim2.ravel(), a, 2))
            w_lo, w_hi = np.clip(w_lo, 0.0, 1.0), np.clip(w_hi, 0.0, 1.0)
            s_lo, s_hi = np.clip(s_lo, 0.0, 2.0), np.clip(s_hi, 0.0, 2.0)
    dead |= ((s_lo > s_hi) | (w_lo > w_hi)).any(axis=1)
    # symmetry (3): WLOG Q_p >= Q_j along the chain of support_orbits
    if inst.orbit:
        q_lo = s_lo * (1.0 - w_hi)
        q_hi = s_hi * (1.0 - w_lo)
        for p, others in inst.orbit:
            for j in others:
                dead |= _widen_lo(q_lo[:, j]) > _widen_hi(q_hi[:, p])
    return s_lo, s_hi, w_lo, w_hi, dead
