"""The continuous parts of many loss distributions evaluated together (the engine's step 1 for
plans of many heterogeneous parts, issue 18: part by part, numpy's per-call overhead is most of
the cost).

A :class:`~.loss.LossDistribution` built by :func:`~.loss.gaussian`, ``.poisson(q)`` and
``.swapped()`` carries ``family``, the nested steps it was built by: ("gaussian", mu),
("poisson", q, base), ("swap", base). Parts whose families have the same shape are evaluated in
one pass, each parameter repeated over its own part's points. The formulas are written once
(:func:`gaussian_pair`, :func:`gaussian_tail`, :func:`poisson_base_loss`, :func:`poisson_mix`,
:func:`poisson_loss`), for a scalar parameter or one repeated per point alike: the parts' own
``cdf``/``sf`` and tail functions (:mod:`.loss`) are these on one part, so the batched values
are bit for bit theirs (tests/test_pld_batch.py). Parts of any other kind are evaluated one by
one.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from scipy.special import ndtr, ndtri_exp

_FLIP = {"cdf": "sf", "sf": "cdf"}


# --- the families' formulas (parameters: scalars, or arrays like t) ---------------------------

def gaussian_pair(t, mu, half, which: str):
    """(P, Q) of the loss of N(mu, 1) vs N(0, 1), N(+-half, mu^2) with half = mu^2/2 (Steinke 2022,
    Prop. 3): the ``which`` ("cdf" or "sf") of both at t."""
    if which == "cdf":
        return ndtr((t - half) / mu), ndtr((t + half) / mu)
    return ndtr((half - t) / mu), ndtr((-half - t) / mu)


def gaussian_tail(log_tail, mu, half, upper: bool):
    """The Gaussian pair's tail point: P and Q both have mass <= tail above it (``upper``: P,
    N(half, mu^2), is the larger there) or below it (Q, N(-half, mu^2), the larger there)."""
    if upper:
        return half + mu * (ndtri_exp(log_tail) * -1.0)
    return -half + mu * ndtri_exp(log_tail)


def poisson_base_loss(t, q, log_q):
    """g(t) = log((e^t - (1 - q)) / q), the base pair's loss where the Poisson-subsampled pair's
    is t (-inf for t <= log(1 - q)); e^t - 1 + q as expm1(t) + q, accurate near t = log(1 - q)
    only that way."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inner = np.expm1(t) + q
        if np.size(inner) and np.min(inner) >= 1e-320:
            return np.log(inner) - log_q      # (the where and the floor below change nothing)
        return np.where(inner > 0, np.log(np.maximum(inner, 1e-320)) - log_q, -np.inf)


def poisson_mix(bp, bq, q, one_minus_q):
    """(P', Q') = ((1 - q) Q + q P, Q) of the base's masses (P, Q) = (bp, bq)."""
    return one_minus_q * bq + q * bp, bq


def poisson_loss(loss, q, one_minus_q, log1mq, log_q):
    """The Poisson-subsampled pair's loss L' = log(1 - q + q e^L) at the base's loss L."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(loss > 0, loss + np.log(q + one_minus_q * np.exp(-loss)),
                        np.logaddexp(log1mq, log_q + loss))


def shape(family) -> tuple | None:
    """The family with its parameters left out (parts of one shape are evaluated together), or
    None when some step is not one of the three."""
    if not family:
        return None
    kind = family[0]
    if kind == "gaussian":
        return ("gaussian",)
    inner = shape(family[-1]) if kind in ("poisson", "swap") else None
    return None if inner is None else (kind, inner)


def _one_by_one(srcs, fns, args):
    """([fn(arg)] for the parts without a family, None for those without the function, and
    None (to be filled) for the others; the others' indices grouped by family shape)."""
    out = [None] * len(srcs)
    groups = defaultdict(list)
    for i, (src, fn) in enumerate(zip(srcs, fns)):
        key = shape(src.family) if fn is not None else None
        if key is None:
            out[i] = fn(args[i]) if fn is not None else None
        else:
            groups[key].append(i)
    return out, list(groups.values())


def evaluate_many(srcs, ts, which: str) -> list:
    """[getattr(src, which)(t) for src, t in zip(srcs, ts)] (``which``: "cdf" or "sf"; None
    for a part without a continuous part), the parts of one family shape in one pass each."""
    out, groups = _one_by_one(srcs, [getattr(s, which) for s in srcs], ts)
    for idx in groups:
        sizes = np.array([ts[i].size for i in idx], dtype=np.int64)
        t = np.concatenate([np.asarray(ts[i], dtype=float) for i in idx])
        p, q = _evaluate([srcs[i].family for i in idx], sizes, t, which)
        if len(idx) == 1:                 # (np.split's one view, without its cost)
            out[idx[0]] = (p, q)
            continue
        cut = np.cumsum(sizes)[:-1]
        for i, a, b in zip(idx, np.split(p, cut), np.split(q, cut)):
            out[i] = (a, b)
    return out


def evaluate_flat(srcs, sizes, t, which: str):
    """(P, Q) of the parts' ``which`` ("cdf" or "sf") at their points laid end to end (``t``,
    ``sizes[i]`` points for part i), laid out the same way: :func:`evaluate_many` without
    splitting its values part by part (every part has the function; one of no family is
    evaluated by it, on its own points)."""
    if len(srcs) == 1:
        # (its own function: the family's formulas on its own parameters, the same bits)
        return getattr(srcs[0], which)(t)
    sizes = np.asarray(sizes, dtype=np.int64)
    groups = defaultdict(list)
    for i, src in enumerate(srcs):
        groups[shape(src.family)].append(i)
    if len(groups) == 1 and None not in groups:
        return _evaluate([s.family for s in srcs], sizes, t, which)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    p, q = np.empty_like(t), np.empty_like(t)
    for key, idx in groups.items():
        if key is None:
            for i in idx:
                a, b = starts[i], starts[i + 1]
                p[a:b], q[a:b] = getattr(srcs[i], which)(t[a:b])
            continue
        where = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in idx])
        a, b = _evaluate([srcs[i].family for i in idx], sizes[idx], t[where], which)
        p[where], q[where] = a, b
    return p, q


def _evaluate(fams, sizes, t, which):
    def rep(values):
        return np.repeat(np.array(values, dtype=float), sizes)
    kind = fams[0][0]
    if kind == "gaussian":
        return gaussian_pair(t, rep([f[1] for f in fams]),
                             rep([0.5 * f[1] * f[1] for f in fams]), which)
    if kind == "swap":
        p, q = _evaluate([f[1] for f in fams], sizes, -t, _FLIP[which])
        return q, p
    # ("poisson", q, base): P' = (1 - q) Q + q P at the base's loss g(t)
    q = rep([f[1] for f in fams])
    g = poisson_base_loss(t, q, rep([math.log(f[1]) for f in fams]))
    bp, bq = _evaluate([f[2] for f in fams], sizes, g, which)
    return poisson_mix(bp, bq, q, rep([1 - f[1] for f in fams]))


def tail_points_many(srcs, tails, upper: bool) -> list:
    """[src.upper_tail(tail) if upper else src.lower_tail(tail)] (None where the part has no
    such function), the parts of one family shape together: the Gaussian's mu^2/2 -+ mu z with
    z = ndtri_exp(log tail) (-z above), mapped by the Poisson pair's L -> log(1 - q + q e^L),
    negated and swapped by the swap, each operation as the parts' own functions do it."""
    out, groups = _one_by_one(srcs, [s.upper_tail if upper else s.lower_tail for s in srcs],
                              tails)
    for idx in groups:
        log_tail = np.array([math.log(tails[i]) for i in idx])
        for i, v in zip(idx, _tail_points([srcs[i].family for i in idx], log_tail, upper)):
            out[i] = float(v)
    return out


def _tail_points(fams, log_tail, upper):
    def col(values):
        return np.array(values, dtype=float)
    kind = fams[0][0]
    if kind == "gaussian":
        return gaussian_tail(log_tail, col([f[1] for f in fams]),
                             col([0.5 * f[1] * f[1] for f in fams]), upper)
    if kind == "swap":
        return -_tail_points([f[1] for f in fams], log_tail, not upper)
    loss = _tail_points([f[2] for f in fams], log_tail, upper)
    return poisson_loss(loss, col([f[1] for f in fams]), col([1 - f[1] for f in fams]),
                        col([math.log1p(-f[1]) for f in fams]), col([math.log(f[1]) for f in fams]))


def quantile_ranges(srcs, tails) -> list[tuple[float, float]]:
    """[src.quantile_range(tail)] (see :meth:`.loss.LossDistribution.quantile_range`), the
    parts' CDF scans evaluated together: each part's range holds its finite atoms of mass above
    tail * 1e-3 and its continuous part between the tail points, first from its tail functions
    (or a bisection of its CDF), then moved in by :func:`scan_tails`; (0, 0) for a part with
    neither."""
    out = []
    for src, tail in zip(srcs, tails):
        fin = np.isfinite(src.atom_loss) & (np.maximum(src.atom_p, src.atom_q) > tail * 1e-3)
        out.append((float(src.atom_loss[fin].min()) if fin.any() else math.inf,
                    float(src.atom_loss[fin].max()) if fin.any() else -math.inf))
    cont = [i for i, src in enumerate(srcs) if src.cdf is not None]
    if cont:
        cs, ct = [srcs[i] for i in cont], [tails[i] for i in cont]
        a = [v if v is not None else s._bisect_tail(t, False)
             for s, t, v in zip(cs, ct, tail_points_many(cs, ct, False))]
        b = [v if v is not None else s._bisect_tail(t, True)
             for s, t, v in zip(cs, ct, tail_points_many(cs, ct, True))]
        # the tail functions are safe but can be loose (a mixture's tail point is mapped from
        # its components'); the scans move the ends in to where the tails actually reach
        # ``tail`` (this keeps the grids of subsampled losses ~30% shorter)
        a, b = scan_tails(cs, ct, a, False), scan_tails(cs, ct, b, True)
        for i, ai, bi in zip(cont, a, b):
            out[i] = (min(out[i][0], ai), max(out[i][1], bi))
    return [(lo, hi) if math.isfinite(lo) else (0.0, 0.0) for lo, hi in out]


def scan_tails(srcs, tails, ends, upper: bool, n: int = 64) -> list[float]:
    """For each part, the grid point nearest the centre among n between its mean and its
    ``end`` (twice, the second time inside the first's last step) beyond which its tails under
    P and Q are still <= tail; ``end`` itself where no grid point is (or the mean or end is not
    finite, or end is on the wrong side of the mean). The tails are monotone, so the first grid
    point that is in them starts them."""
    out = [float(e) for e in ends]
    near = [float(s.mean) for s in srcs]
    todo = [i for i, (s, e) in enumerate(zip(srcs, out))
            if math.isfinite(e) and math.isfinite(near[i])
            and not ((e <= near[i]) if upper else (e >= near[i]))]
    which = "sf" if upper else "cdf"
    for _ in range(2):
        if not todo:
            break
        # np.linspace's points, all parts at once: near + k (end - near) / (n - 1), the last
        # one the end itself
        a, b = np.array([near[i] for i in todo]), np.array([out[i] for i in todo])
        grid = np.arange(n) * ((b - a) / (n - 1))[:, None] + a[:, None]
        grid[:, -1] = b
        ts = list(grid)
        with np.errstate(all="ignore"):
            vals = evaluate_many([srcs[i] for i in todo], ts, which)
        nxt = []
        for i, t, (p, q) in zip(todo, ts, vals):
            # (a NaN compares False: not in the tail)
            ok = (p <= tails[i]) & (q <= tails[i])
            if not ok.any():
                continue
            k = int(np.argmax(ok))
            if k == 0:
                out[i] = float(t[0])
                continue
            near[i], out[i] = float(t[k - 1]), float(t[k])
            nxt.append(i)
        todo = nxt
    return out
