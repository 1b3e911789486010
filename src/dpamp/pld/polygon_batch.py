"""Many halves of :mod:`.polygon` at once, on one grid step: the same construction, row by row.

:func:`halves` takes the argument tuples of :func:`.polygon._half` (all with the same h) and
returns what ``[_half(*a) for a in args]`` returns, bit for bit: the halves are laid out as the
rows of 2-D arrays, padded at the far end, and every step of ``_half`` / ``_half_core`` is the
same floating-point operation on each element (elementwise arithmetic, exact minima and
maxima, and the reverse cumulative sums, which over a row padded with zeros at its far end
add the same terms in the same order after a run of exact zeros). Padding cells carry no mass,
are never lowered and never "bad"; padding knots are kept at zero lowering. Why it pays: a
hundred heterogeneous parts are two hundred halves of a few thousand cells each, whose cost
was mostly numpy's per-call overhead (issue 18, plans of 100 stages).

The lowering loop runs on all rows together; a row without a deficit receives no update, as
when its own loop stops. After each round only the deficits of cells next to a knot that round
may have moved are recomputed (the others' knots, hence their deficits, are unchanged). The far
end of flat-ended rows gets :func:`.polygon._end_chord`, vectorised. A row whose loop does not settle within the 200 rounds (which the
per-half code follows with its second attempt on the hard floors) is recomputed by ``_half``
itself, as is any half whose arguments lack the atoms' shares (``cont``, ``beta_atoms``,
``q_end``). So the proofs in :mod:`.polygon` and :mod:`.discretize` are those of the rows.
tests/test_pld_batch.py checks the equality on heterogeneous plans.
"""
from __future__ import annotations

import numpy as np

from .polygon import FAR_KINK, Half, _half, pair_crossings

#: rounds of the lowering loop (those of polygon._half_core's first attempt)
ROUNDS = 200
#: rows of one batch are within this ratio of lengths (padding costs at most this much)
_SPREAD = 1.6
#: and hold at most this many cells (beyond, the arrays leave the caches: slower)
_CELLS = 1 << 15


def halves(args_list) -> list:
    """``[_half(*a) for a in args_list]``, computed in batches of similar lengths."""
    out: list[Half | None] = [None] * len(args_list)
    ok = []
    for i, a in enumerate(args_list):
        if a.cells.p.size < 2 or (a.optimistic and a.cells.half_p is None):
            out[i] = _half(a)
        else:
            ok.append(i)
    if not ok:
        return out
    hs = {float(args_list[i].h) for i in ok}
    if len(hs) != 1 or len({bool(args_list[i].optimistic) for i in ok}) != 1:
        for i in ok:
            out[i] = _half(args_list[i])
        return out
    ok.sort(key=lambda i: args_list[i].cells.p.size)
    start = 0
    while start < len(ok):
        lo = args_list[ok[start]].cells.p.size
        stop = start + 1
        while (stop < len(ok) and args_list[ok[stop]].cells.p.size <= _SPREAD * lo
               and (stop - start + 1) * args_list[ok[stop]].cells.p.size <= _CELLS):
            stop += 1
        group = ok[start:stop]
        for i, r in zip(group, _halves_2d([args_list[i] for i in group])):
            out[i] = r if r is not None else _half(args_list[i])
        start = stop
    return out


def _pad(rows, Km):
    out = np.zeros((len(rows), Km))
    for r, v in enumerate(rows):
        out[r, :v.size] = v
    return out


def _kinks2(lines):
    """:func:`.polygon._kinks` on arrays of any shape (the same elementwise operations)."""
    lams = pair_crossings(lines)
    # nan_to_num then clip to [0, 1] in two passes: fmax drops a NaN for 0, and +-inf go to
    # the ends as the clip of nan_to_num's +-max float does
    lam = np.array(lams)
    np.fmin(np.fmax(lam, 0.0, out=lam), 1.0, out=lam)
    vals = None                   # the minimum over the lines (exact in any order)
    for sl, c0 in lines:
        v = sl[None] * lam + c0[None]
        vals = v if vals is None else np.minimum(vals, v)
    return lam, vals


def _pick(dc, lam):
    """The largest deficit over the kinks (axis 0) and its position (first on ties)."""
    if dc.shape[0] == 1:
        return dc[0], lam[0]
    if dc.shape[0] == 3 and not np.isnan(dc).any():
        # argmax of three without NaN: the first of the largest, by two comparisons
        later = dc[1] > dc[0]
        d, lm = np.where(later, dc[1], dc[0]), np.where(later, lam[1], lam[0])
        later = dc[2] > d
        return np.where(later, dc[2], d), np.where(later, lam[2], lm)
    w = np.argmax(dc, axis=0)[None]
    return np.take_along_axis(dc, w, 0)[0], np.take_along_axis(lam, w, 0)[0]


def _halves_2d(args):
    """The rows of one batch (see the module docstring); None for a row to redo alone."""
    R = len(args)
    Ks = np.array([a.cells.p.size for a in args])
    Km = int(Ks.max())
    h = float(args[0].h)
    optimistic = bool(args[0].optimistic)
    rows = np.arange(R)
    V = np.arange(Km)[None, :] < Ks[:, None]                # real cells
    dB = _pad([a.cells.q for a in args], Km)     # (the P-masses enter through cont)
    A_tail = np.array([a.A_tail for a in args], dtype=float)
    B_tail = np.array([a.B_tail for a in args], dtype=float)
    flat_end = np.array([bool(a.flat_end) for a in args])
    inf_true = np.array([a.inf_true for a in args], dtype=float)
    cA, cB = _pad([a.cells.cont_p for a in args], Km), _pad([a.cells.cont_q for a in args], Km)
    batoms = _pad([a.cells.beta for a in args], Km)
    q_end = _pad([a.cells.end for a in args], Km)
    # --- _half ------------------------------------------------------------------------------
    t = h * np.arange(Km + 1)
    x = np.exp(t)
    em1 = np.expm1(h)
    dx = x[:-1] * em1
    with np.errstate(over="ignore", invalid="ignore"):
        beta = (cA * np.exp(-t[:-1]) - cB) / em1
    beta = np.clip(np.nan_to_num(beta, nan=0.0, posinf=0.0), 0.0, cB)
    beta = beta + batoms
    beta = np.clip(beta, 0.0, dB)
    zc = np.zeros((R, 1))
    qbar = np.concatenate([np.cumsum(dB[:, ::-1], axis=1)[:, ::-1], zc], axis=1) \
        + B_tail[:, None]
    s_up = -qbar[:, 1:] - beta
    xK = x[Ks]
    f_K = np.maximum(np.maximum(A_tail - xK * B_tail, inf_true), 0.0)
    v = np.where(V, -s_up * dx, 0.0)
    f = np.concatenate([np.cumsum(v[:, ::-1], axis=1)[:, ::-1], zc], axis=1) + f_K[:, None]
    alpha = dB - beta
    beta_end = np.clip(beta - q_end, 0.0, None)
    end_slope = np.where(flat_end, 0.0, -B_tail)
    mid_line = None
    if optimistic:
        dA2, dB2 = _pad([a.cells.half_p for a in args], Km), _pad([a.cells.half_q for a in args], Km)
        xm = x[:-1] * np.exp(0.5 * h)
        gap = x[1:] - xm
        inner = np.clip(dA2 - xm * dB2, 0.0, gap * dB2)
        f_m = f[:, 1:] + gap * qbar[:, 1:] + inner
        s_m = -(qbar[:, 1:] + dB2)
        c0 = f[:, :-1] - f_m + s_m * (xm - x[:-1])
        pad = 16 * 2.0 ** -53 * (np.abs(f[:, :-1]) + np.abs(f[:, 1:]) + f_m
                                 + np.abs(s_m) * (xm - x[:-1] + dx))
        mid_line = (f[:, 1:] - f[:, :-1] - s_m * dx, c0 + pad)
    # --- _half_core -----------------------------------------------------------------------
    s_pad = np.where(V, s_up, 0.0)
    s_full = np.concatenate([s_pad, zc], axis=1)
    m_up = x[1:] * (s_full[:, 1:] - s_full[:, :-1])
    if not optimistic:
        return [Half(f[r, :Ks[r] + 1], m_up[r, :Ks[r]], float(f_K[r]), float(s_up[r, 0]),
                     None, None, None, float(end_slope[r]), args[r].floor) for r in rows]
    fl = np.array([(a.floor.a, a.floor.b, a.floor.c) for a in args], dtype=float)
    a_, b_, c_ = fl[:, 0:1], fl[:, 1:2], fl[:, 2:3]
    fi, fj, xi = f[:, :-1], f[:, 1:], x[:-1]
    tangents = [(alpha * dx, np.zeros((R, Km))), (-beta_end * dx, beta_end * dx), mid_line]
    floors = [(fj - fi - b_ * dx, fi - a_ - b_ * xi), (fj - fi, fi - c_)]
    lam_c, vals = _kinks2(tangents)
    floor_near = np.minimum(floors[0][0][None] * lam_c + floors[0][1][None],
                            floors[1][0][None] * lam_c + floors[1][1][None])
    hr, hi = np.nonzero((floor_near < vals).any(axis=0) & V)
    need_c = np.maximum(vals, 0.0)
    if hr.size:
        lam_h, vals_h = _kinks2([(sl[hr, hi], c0_[hr, hi]) for sl, c0_ in tangents + floors])
        need_h = np.maximum(vals_h, 0.0)
    G = need_c.max(axis=0)
    if hr.size:
        G[hr, hi] = need_h.max(axis=0)
    G = np.where(V, G, 0.0)

    def deficits(e):
        d, lam = _pick(need_c - ((1.0 - lam_c) * e[None, :, :-1] + lam_c * e[None, :, 1:]),
                       lam_c)
        if hr.size:
            dh, lh = _pick(need_h - ((1.0 - lam_h) * e[hr, hi][None] + lam_h * e[hr, hi + 1][None]),
                           lam_h)
            d = d.copy()
            lam = lam.copy()
            d[hr, hi] = dh
            lam[hr, hi] = lh
        return np.where(V, d, -np.inf), lam

    if hr.size:
        hpos = np.full((R, Km), -1, dtype=np.int64)
        hpos[hr, hi] = np.arange(hr.size)

    def deficits_at(e, r, i):
        """deficits(e)[r, i] (the same operations, on these cells only)."""
        lc = lam_c[:, r, i]
        d, lam = _pick(need_c[:, r, i] - ((1.0 - lc) * e[r, i][None] + lc * e[r, i + 1][None]),
                       lc)
        if hr.size:
            m = hpos[r, i] >= 0
            if m.any():
                k, rm, im = hpos[r, i][m], r[m], i[m]
                lh = lam_h[:, k]
                dh, lk = _pick(need_h[:, k] - ((1.0 - lh) * e[rm, im][None]
                                               + lh * e[rm, im + 1][None]), lh)
                d, lam = d.copy(), lam.copy()
                d[m], lam[m] = dh, lk
        return np.where(V[r, i], d, -np.inf), lam

    line = a_ + b_ * x
    cap_hard = np.maximum(f - line, 0.0)
    cap = np.minimum(np.maximum(f - np.maximum(line, c_), 0.0), cap_hard)
    fe = np.nonzero(flat_end)[0]
    last = np.maximum(f[fe, Ks[fe]] - inf_true[fe], 0.0)
    cap[fe, Ks[fe]] = last
    cap_hard[fe, Ks[fe]] = last
    knots = np.arange(Km + 1)[None, :] <= Ks[:, None]
    cap = np.where(knots, cap, 0.0)
    cap_hard = np.where(knots, cap_hard, 0.0)
    tol = 64 * 2.0 ** -53 * (np.abs(f[:, :-1]) + np.abs(f[:, 1:]))
    e = np.zeros((R, Km + 1))
    e[:, :-1] = G
    e[:, 1:] = np.maximum(e[:, 1:], G)
    e[fe, Ks[fe]] = cap[fe, Ks[fe]]
    e = np.minimum(e, cap)
    settled = False
    # the deficits of every cell once; then, after each round, of the cells next to a knot
    # the round may have moved (the others' knots are unchanged: so are their deficits)
    D, LAM = deficits(e)
    for _ in range(ROUNDS):
        br, bi = np.nonzero(D > tol)
        if br.size == 0:
            settled = True
            break
        moved = [br, br, bi, bi + 1]
        lb = LAM[br, bi]
        d = D[br, bi] * (1.0 + 1e-12)
        need = d / np.maximum(lb, 1e-300)
        far = ((lb > FAR_KINK) & (cap[br, bi + 1] - e[br, bi + 1] < need)
               & (cap_hard[br, bi + 1] - e[br, bi + 1] >= need))
        if far.any():
            fr, fi_ = br[far], bi[far] + 1
            np.maximum.at(e, (fr, fi_), e[fr, fi_] + need[far])
            cap[fr, fi_] = np.maximum(cap[fr, fi_], e[fr, fi_])
            br, bi, lb, d = br[~far], bi[~far], lb[~far], d[~far]
        up_l = np.maximum(np.minimum(cap[br, bi] - e[br, bi],
                                     d / np.maximum(1.0 - lb, 1e-300)), 0.0)
        np.maximum.at(e, (br, bi), e[br, bi] + up_l)
        rest = d - (1.0 - lb) * up_l
        up_r = np.where(rest > 0, rest / np.maximum(lb, 1e-300), 0.0)
        np.maximum.at(e, (br, bi + 1), np.minimum(e[br, bi + 1] + up_r, cap[br, bi + 1]))
        kr = np.concatenate(moved[:2])
        ki = np.concatenate(moved[2:])
        cell = np.unique(np.concatenate([kr * (Km + 1) + ki - 1, kr * (Km + 1) + ki]))
        cr, ci = cell // (Km + 1), cell % (Km + 1)
        keep = (ci >= 0) & (ci < Ks[cr]) & (cell >= 0)
        cr, ci = cr[keep], ci[keep]
        D[cr, ci], LAM[cr, ci] = deficits_at(e, cr, ci)
    # (a loop that settled has just found no deficit anywhere: nothing to redo)
    redo = np.zeros(R, dtype=bool) if settled else (D > tol).any(axis=1)
    # the far end made convex (polygon._end_chord), flat-ended rows with K > 1
    g = f - e
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (g[rows, Ks][:, None] - g[:, :-1]) / (xK[:, None] - x[None, :-1])
    s = np.where(V & ~np.isnan(s), s, -np.inf)
    istar = np.argmax(s, axis=1)
    sel = flat_end & (Ks > 1) & (istar < Ks - 1)
    if sel.any():
        cols = np.arange(Km + 1)[None, :]
        band = sel[:, None] & (cols > istar[:, None]) & (cols < Ks[:, None])
        br, bi = np.nonzero(band)
        with np.errstate(invalid="ignore", over="ignore"):
            low = f[br, bi] - (g[br, Ks[br]] + s[br, istar[br]] * (x[bi] - xK[br]))
        e[br, bi] = np.where(np.isfinite(low), np.maximum(e[br, bi], low), e[br, bi])
    s_lo = s_up - np.diff(e, axis=1) / dx
    s_lo = np.where(V, s_lo, end_slope[:, None])
    s_lo_full = np.concatenate([s_lo, end_slope[:, None]], axis=1)
    m_lo = x[1:] * (s_lo_full[:, 1:] - s_lo_full[:, :-1])
    out = []
    for r in rows:
        if redo[r]:
            out.append(None)
            continue
        K = Ks[r]
        out.append(Half(f[r, :K + 1], m_up[r, :K], float(f_K[r]), float(s_up[r, 0]),
                        e[r, :K + 1], m_lo[r, :K], float(s_lo[r, 0]), float(end_slope[r]),
                        args[r].floor))
    return out
