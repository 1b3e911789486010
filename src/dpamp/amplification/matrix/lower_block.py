"""Windowed matched filters: proven lower ends for a Poisson-sampled banded C >= 0.

The mechanism releases y = C G + Z (C n x n lower triangular with b bands, C[t, j] = 0 unless
t - b < j <= t; Z i.i.d. N(0, sigma^2) entries), the record taking part in step j with
B_j ~ Bernoulli(q) independently on its joinable steps E (every step under Poisson sampling,
its group's under cyclic Poisson) and never elsewhere; add/remove neighbours. A record whose
clipped gradients are fixed unit vectors, the other records' gradients 0, is an actual pair
of neighbouring inputs (P with the record, Q without), so a lower bound on delta(eps) of any
post-processing of its pair (data processing) is one on the mechanism's.

**Windows.** Cut the steps into the windows W_j = [j L, (j + 1) L) (the last one shorter
where L does not divide n). Let M_j = C[R_j, W_j] (columns outside E set to 0: the record
never enters them) for a set of output rows R_j given below, and with v_j = M_j 1 (the sum
of the window's columns, its *matched filter*: the mean of the pattern "in every step") the
statistic T_j = <v_j, y_j> / |v_j|, y_j the outputs of R_j along the record's direction for
window j. If the y_j are independent across windows under P and under Q, and y_j depends
only on (B_s)_{s in W_j}, then

    T_j ~ sum_{B in {0,1}^{W_j}} pi(B) N(sum_s B_s a_{j,s}, sigma^2) under P, N(0, sigma^2)
    under Q,   a_{j,s} = <v_j, M_j[:, s]> / |v_j| >= 0 (C >= 0),

B over the joinable steps of W_j, pi(B) = q^|B| (1 - q)^(|W_j ∩ E| - |B|): a mixture of
Gaussians (dpamp's ``MixtureOfGaussians``: (P, Q) is its remove order, and (Q, P), the same
two inputs with the record added instead of removed, its add order; both are actual pairs of
add/remove neighbours, and the engine answers for the worse of the two), and the pair of
(T_j)_j is the product of these pairs: composed by dpamp's PLD (optimistic discretisation: a
proven lower bound on its delta(eps)). Two ways to get the independence:

- **windowed** (any model dimension): the gradient is one unit vector u in every step and
  R_j are the rows t in W_j whose read steps {s in E : t - b < s <= t} all lie in W_j (for
  Poisson sampling t >= j L + b - 1, and every row of the first window). y_j = (y u)[R_j]:
  the R_j are disjoint (R_j inside W_j), so the noise is independent, and the mean of row t
  is sum_s C[t, s] B_s over steps of W_j only. L = b keeps one row per window: the
  fixed-direction witness's rows (:mod:`.lower`), with the first window's partial rows added.
- **alternating** (a model of at least two parameters): the gradient is u_1 in the steps of
  the even windows and u_2 in those of the odd ones (orthonormal), and R_j = [j L,
  min((j + 1) L + b - 1, n)), every row that reads W_j; L >= b - 1. y_j = (y u_{j mod 2})[R_j].
  Along u_1 the outputs are C x^(1) + Z u_1 with x^(1) the participation restricted to the
  even windows: window j's steps touch only rows R_j, and the next even window's rows start
  at (j + 2) L > (j + 1) L + b - 2, so the even windows' rows are disjoint; the same along
  u_2; Z u_1 and Z u_2 are independent N(0, sigma^2 I) (orthonormal directions, i.i.d.
  entries). No row is dropped: each window's columns are whole.

**Choice of L** (any choice is valid): candidates b (alternating only), 2 b, 4 b, 8 b (at
most MAX_WINDOW and n, at least b - 1). Each candidate's ``parts`` are the windows sharing
the most common law alone (dropping the other windows' statistics is a post-processing), with
COARSE components; its ``refined`` parts every window, that law with MAX_COMPONENTS.
:func:`.lower.lower_end` composes every candidate's parts and then the best one's refined
parts, and keeps the largest value (each is proven): the PLD's cost grows with the
components and the distinct parts.

**Rounding** (every step moves the pair to one the true one dominates: a stochastically
smaller law of non-negative shifts, or probability moved to the zero shift; :mod:`.lower`,
module docstring). The block is scaled by 2^-k so that its largest entry lies in [1/2, 1)
(exact bar underflow), so |v_j|^2 >= 1/4; the dot products and the squared norm, sums of at
most m = |R_j| non-negative products, are within gamma_m = m u / (1 - m u) relative (Higham
2002, Sec. 3.1), plus an absolute 2^-1070 per term for what was rounded in the subnormals;
the shifts are lowered by both. The law of S_j = sum_s B_s a_{j,s} is computed on a lattice
h Z (h = 2^(e - 12), 2^(e - 1) <= sum_s a_{j,s} < 2^e, LATTICE = 2^12 points): each a_{j,s}
is rounded down to h k_s (integer k_s, exactly: h is a power of two), the
probabilities of S' = h sum_s B_s k_s <= S_j by the recursion p <- (1 - q) p + q p(. - k_s)
(non-negative terms: relative error within gamma_{4 L}; an absolute 2^-1030 covers the
subnormals), each positive value's probability padded down by that and by the merge sums'
bound, the zero shift taking the rest. Then the shifts are rounded down onto at most
MAX_COMPONENTS (COARSE) kept values (:func:`.lower._reduce`), scaled back by 2^k and moved to 0
where they or their ratio to sigma fall below 2^-1000 (MixtureOfGaussians' division is within
its rounding only for normal numbers). Windows with equal shifts share one part; beyond
MAX_PARTS distinct ones, the windows sorted by total shift are split into MAX_PARTS buckets,
each replaced by the entrywise minimum of its windows' sorted shifts (S of the minimum is
stochastically smaller than each member's: couple the sorted steps). For a Toeplitz C the
interior windows (j >= 1, (j + 1) L + b - 1 <= n) of one residue of j L modulo the groups'
period read the same entries and the same joinable pattern: one is computed and counted for
all (:func:`representatives`), so the cost does not grow with n. C with a negative entry, or
computed (a BLT, ``coeff_error`` > 0), gets no witness here, nor a candidate whose blocks
pass MAX_WORK entries.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...mechanisms.matrix_strategies import DenseStrategy, Strategy, Toeplitz
from ...mechanisms.mixture_of_gaussians import MixtureOfGaussians
from .lower import ALTERNATING, MAX_COMPONENTS, WINDOWED, Witness, _reduce

__all__ = ["WINDOWED", "ALTERNATING", "window_shifts", "sum_law", "block_witness",
           "representatives",
           "block_witnesses", "MAX_WINDOW", "LATTICE", "COARSE", "MAX_PARTS"]

_U = 2.0 ** -53
#: a window's law of S from its shifts: (shifts, count) -> (values, probabilities)
Law = Callable[[tuple, int], "tuple[np.ndarray, np.ndarray]"]
#: steps per window at most
MAX_WINDOW = 128
#: lattice points of a window's law of S (the spacing is its largest value over this)
LATTICE = 4096
#: components of the coarse mixtures (the choice of L)
COARSE = 32
#: distinct window laws (PLD parts) at most (beyond: buckets)
MAX_PARTS = 16
#: the most entries of the window blocks computed (beyond: no witness; it is optional)
MAX_WORK = 1 << 23


def _coefficients(strategy: Strategy) -> np.ndarray | None:
    """The Toeplitz coefficients c_0, c_1, ... (None for a dense strategy; a Toeplitz
    strategy's own, without the length-n column)."""
    if isinstance(strategy, Toeplitz):
        return np.asarray(strategy.coeffs, dtype=float)
    c = strategy.toeplitz()
    if c is None or isinstance(strategy, DenseStrategy):
        return None
    return np.asarray(c, dtype=float)


def representatives(strategy: Strategy, length: int, period: int | None = None):
    """(windows to compute, how many windows each stands for): every window, or for a
    Toeplitz C whose joinable steps repeat with ``period`` (cyclic Poisson: its groups) the
    windows j L < b - 1, the windows reaching the last b - 1 rows, and one interior window
    per residue of j L mod period (an interior window, j L >= b - 1 and (j + 1) L + b - 1 <=
    n, reads the same entries and the same pattern of joinable steps as any other of its
    residue: its rows' read steps, down to j L - b + 1 >= 0, are never cut off at step 0,
    which the windowed rows' rule reads; a window of j L < b - 1 has rows reading below step
    0, so it stands for itself alone)."""
    n = strategy.n
    w = -(-n // length)
    if period is None or _coefficients(strategy) is None:
        return np.arange(w), np.ones(w, dtype=np.int64)
    b = int(strategy.bands or n)
    head = max(1, -(-(b - 1) // length))            # windows 0 .. head - 1: on their own
    last = (n - b + 1) // length - 1                 # interior windows: head .. last
    if last < head:
        return np.arange(w), np.ones(w, dtype=np.int64)
    res = (np.arange(head, last + 1) * length) % period
    first = np.unique(res, return_index=True)[1] + head
    counts = np.bincount(res, minlength=period)[res[first - head]]
    edge = np.arange(last + 1, w)
    return (np.concatenate([np.arange(head), first, edge]),
            np.concatenate([np.ones(head, dtype=np.int64), counts,
                            np.ones(edge.size, dtype=np.int64)]))


def _blocks(strategy: Strategy, joinable: np.ndarray, length: int, alternating: bool,
            js=None, strict: bool = False):
    """M (windows x rows x steps): the window blocks C[R_j, W_j] of the module docstring, each
    on the rows j L + r (r < length + b - 1) and steps j L + k (k < length), entries outside
    R_j, W_j ∩ E or the matrix set to 0; for the windows ``js`` (default: every one).
    ``strict`` (windowed only): a row's b read positions all inside the window, so the first
    window keeps only the rows an interior one does."""
    n = strategy.n
    b = int(strategy.bands or n)
    js = np.arange(-(-n // length)) if js is None else np.asarray(js, dtype=np.int64)
    rows = np.arange(length + b - 1)
    steps = np.arange(length)
    t = js[:, None] * length + rows[None, :]                      # (windows, rows)
    s = js[:, None] * length + steps[None, :]                     # (windows, steps)
    start = js[:, None] * length
    if alternating:
        keep_row = t < n
    elif strict:
        # (every read position inside the window: no count of the joinable steps before it,
        # so nothing of the length of the run is built)
        keep_row = (t < n) & (t < start + length) & (t - b + 1 >= start)
    else:
        # row t's read steps {s in E: t - b < s <= t} inside [jL, (j+1)L): t < (j+1)L and
        # no joinable step in [t - b + 1, jL)
        ej = np.concatenate([[0], np.cumsum(joinable)])             # joinable steps below i
        lo = np.clip(t - b + 1, 0, n)
        before = ej[np.minimum(start, n)] - ej[np.minimum(lo, np.minimum(start, n))]
        keep_row = (t < n) & (t < start + length) & ((lo >= start) | (before == 0))
    keep_step = (s < n) & joinable[np.minimum(s, n - 1)]
    d = t[:, :, None] - s[:, None, :]
    coeffs = _coefficients(strategy)
    if coeffs is None:
        dense = np.asarray(strategy.dense(), dtype=float)
        vals = dense[np.minimum(t, n - 1)[:, :, None], np.minimum(s, n - 1)[:, None, :]]
        vals = np.where((d >= 0) & (d < b), vals, 0.0)
    else:
        co = np.zeros(b)
        co[:min(b, coeffs.size)] = coeffs[:b]
        vals = np.where((d >= 0) & (d < b), co[np.clip(d, 0, b - 1)], 0.0)
    return np.where(keep_row[:, :, None] & keep_step[:, None, :], vals, 0.0)


def window_shifts(strategy: Strategy, joinable, length: int, alternating: bool,
                  js=None, strict: bool = False) -> np.ndarray:
    """a (windows x steps): each window's shifts a_{j,s} = <v_j, M_j[:, s]> / |v_j| with v_j
    = M_j 1, rounded down (module docstring: scaled to [1/2, 1), gamma bounds, subnormals;
    a shift below 2^-1000 moved to 0), for the windows ``js`` (default: every one); a window
    without rows or steps has shifts 0; ``strict`` as :func:`_blocks`."""
    m = _blocks(strategy, np.asarray(joinable, dtype=bool), length, alternating, js, strict)
    top = m.max(axis=(1, 2))
    e = np.frexp(np.where(top > 0, top, 1.0))[1]                  # top in [2^(e-1), 2^e)
    m = np.ldexp(m, -e[:, None, None])
    rows = m.shape[1]
    v = np.zeros(m.shape[:2])
    for k in range(m.shape[2]):           # in a fixed order, not a BLAS product: the same
        v = v + m[:, :, k]                # bits on every machine (same question, same answer)
    dot = np.zeros((m.shape[0], m.shape[2]))
    sq = np.zeros(m.shape[0])
    for r in range(rows):
        dot = dot + m[:, r, :] * v[:, r][:, None]
        sq = sq + v[:, r] * v[:, r]
    g = (rows + 2) * _U / (1 - (rows + 2) * _U)
    # the scaled entries and the products rounded in the subnormals: each off by at most
    # 2^-1075, times |v_r| <= length per row
    tiny = rows * (length + 2) * 2.0 ** -1070
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.maximum(dot * (1 - g) - tiny, 0.0) / np.sqrt(sq * (1 + g) + tiny)[:, None]
    with np.errstate(over="ignore"):     # (a shift beyond the doubles: inf, no witness)
        a = np.ldexp(np.where(top[:, None] > 0, a * (1 - 8 * _U), 0.0), e[:, None])
    # scaled back into the subnormals, a shift may round up: moved to 0 (dominated)
    return np.where(a >= 2.0 ** -1000, a, 0.0)


def sum_law(shifts, q: float, count: int = MAX_COMPONENTS) -> tuple[np.ndarray, np.ndarray]:
    """(values, probabilities) of a law the true law of S = sum_s B_s a_s (B_s ~ Bernoulli(q)
    independent, a_s >= 0) stochastically dominates, with at most ``count`` values, 0 first
    (module docstring: the lattice, the recursion's bounds, the reduction)."""
    a = np.asarray(shifts, dtype=float)
    a = a[a > 0]
    total = math.fsum(a.tolist())
    if not a.size or not math.isfinite(total) or q == 0:
        return np.zeros(1), np.ones(1)
    e = math.frexp(total)[1]
    a = np.ldexp(a, -e)                                           # sum in [1/2, 1): exact
    h = 2.0 ** -math.ceil(math.log2(LATTICE))                     # a power of two: exact
    k = np.floor(a / h * (1 - 4 * _U)).astype(np.int64)           # k h <= a
    k = k[k > 0]
    p = np.zeros(int(k.sum()) + 1)
    p[0] = 1.0
    keep = 1.0 - q
    for x in k.tolist():
        nxt = p * keep
        nxt[x:] += q * p[:p.size - x]
        p = nxt
    vals = np.ldexp(np.arange(p.size) * h, e)                     # exact: integers times 2^j
    nz = p > 0
    vals, p = vals[nz], p[nz]
    # relative error: 4 roundings a step (1 - q, two products, a sum) and the merge of at
    # most p.size terms below; absolute: 2^-1075 a rounding in the subnormals, times at most
    # 4 L steps and p.size merged terms (< 2^-1030)
    rel = (4 * k.size + p.size + 16) * 2 * _U
    if vals.size > count:
        vals, p = _reduce(vals, p, count, 64 if count >= MAX_COMPONENTS else count // 2 - 1)
    pos = vals > 0
    p = np.where(pos, np.maximum(p * (1 - rel) - 2.0 ** -1030, 0.0), 0.0)
    p = np.where(p < 2.0 ** -1000, 0.0, p)
    if vals[0] > 0:
        vals, p = np.concatenate([[0.0], vals]), np.concatenate([[0.0], p])
    p[0] = max(1.0 - math.fsum(p[1:].tolist()), 0.0)
    return vals, p


def _mixture(vals: np.ndarray, probs: np.ndarray, sigma: float) -> MixtureOfGaussians | None:
    """The mixture of these shifts (a shift or its mu below 2^-1000 moved to 0), or None where
    no shift is left or one is not finite."""
    with np.errstate(over="ignore", under="ignore"):
        mus = vals / sigma
    if not (np.isfinite(vals).all() and np.isfinite(mus).all()):
        return None
    vals = np.where((vals >= 2.0 ** -1000) & (mus >= 2.0 ** -1000), vals, 0.0)
    u, inv = np.unique(vals, return_inverse=True)
    pp = np.bincount(inv, weights=probs, minlength=u.size)
    pos = u > 0
    if not pos.any() or not (pp[pos] > 0).any():
        return None
    # the merge of positive shifts (at most two per value, from the move to 0 above: none)
    # and MixtureOfGaussians' normalisation, within 4 ulps
    pp = np.where(pos, pp * (1 - 8 * _U), 0.0)
    pp[~pos] = max(1.0 - math.fsum(pp[pos].tolist()), 0.0)
    return MixtureOfGaussians(sigma, tuple(u.tolist()), tuple(pp.tolist()))


def _window_keys(a: np.ndarray, counts: np.ndarray, ordered: bool = False
                 ) -> dict[tuple, int]:
    """{positive shifts (sorted, or in step order where ``ordered``): windows} over the
    windows (row i of ``a`` standing for ``counts[i]`` windows); beyond MAX_PARTS distinct
    ones, the rows sorted by their shifts split into MAX_PARTS buckets, each replaced by the
    entrywise minimum of its rows' (sorted) shifts (module docstring). ``ordered`` (a law
    that depends on the steps' order, :mod:`.lower_minsep`): the zeros are kept in place."""
    vals = np.array(a, dtype=float) if ordered else -np.sort(-a, axis=1)
    if np.unique(vals, axis=0).shape[0] > MAX_PARTS:
        order = np.lexsort(tuple((-np.sort(-vals, axis=1)).T[::-1]))
        for chunk in np.array_split(order, MAX_PARTS):
            vals[chunk] = vals[chunk].min(axis=0)
    keys: dict[tuple, int] = {}
    for row, count in zip(vals, counts.tolist()):
        if not (row > 0).any():
            continue
        key = tuple(float(x) for x in row) if ordered else \
            tuple(float(x) for x in row if x > 0)
        keys[key] = keys.get(key, 0) + count
    return keys


def block_witness(strategy: Strategy, sigma: float, q: float, joinable, length: int,
                  alternating: bool, group: int = 0, period: int | None = None,
                  law: Law | None = None, ordered: bool = False) -> Witness | None:
    """The windowed (``alternating`` False) or alternating witness with windows of ``length``
    steps on the ``joinable`` steps (repeating with ``period``, if given: see
    :func:`representatives`) (module docstring): as ``parts`` the windows of the most
    common law alone (the interior of a Toeplitz C) with COARSE components, as ``refined``
    every window, that law with MAX_COMPONENTS and the others with COARSE; None where no
    window has a shift. ``law(shifts, count)``: the law of a window's S from its shifts
    (default: independent participations at rate ``q``, :func:`sum_law`, which reads them
    sorted); ``ordered``: the law reads them in step order, zeros included."""
    b = int(strategy.bands or strategy.n)
    if length < 1 or (alternating and length < b - 1):
        # the alternating windows' rows are independent only for L >= b - 1 (module docstring)
        raise ValueError(f"length: {length} steps per window, the alternating witness needs "
                         f"at least b - 1 = {b - 1} and any witness at least 1")
    if law is None:
        def law(shifts: tuple, count: int) -> tuple[np.ndarray, np.ndarray]:
            return sum_law(shifts, q, count)
    js, counts = representatives(strategy, length, period)
    a = window_shifts(strategy, joinable, length, alternating, js)
    keys = sorted(_window_keys(a, counts, ordered).items())
    if not keys:
        return None
    most = max(range(len(keys)), key=lambda i: keys[i][1])       # ties: the first
    coarse, fine = [], []
    for i, (key, count) in enumerate(keys):
        mog = _mixture(*law(key, COARSE), sigma)
        if mog is not None and i == most:
            coarse.append((mog, count))
        elif mog is not None:
            fine.append((mog, count))
    mog = _mixture(*law(keys[most][0], MAX_COMPONENTS), sigma)
    if mog is not None:
        fine.append((mog, keys[most][1]))
    if not coarse or not fine:
        return None
    name = ALTERNATING if alternating else WINDOWED
    return Witness(name, tuple(coarse), group, 2 if alternating else 1, length, tuple(fine))


def _lengths(n: int, bands: int, alternating: bool) -> list[int]:
    """The candidate window lengths (module docstring)."""
    out = {min(f * bands, MAX_WINDOW, n) for f in ((1, 2, 4, 8) if alternating else (2, 4, 8))}
    return sorted(x for x in out if x >= max(bands - 1, 1))


def block_witnesses(strategy: Strategy, sigma: float, q: float, partitions: int = 1,
                    col_sq=None) -> list[Witness]:
    """Every candidate windowed and alternating witness (module docstring) of the group whose
    columns weigh most (``col_sq``: the squared column norms; ties: the first), or [] where
    they do not apply (C not square lower triangular, not >= 0, computed, no bands known, or
    the blocks beyond MAX_WORK)."""
    b = strategy.bands
    if b is None or not strategy.square_lower or not strategy.nonnegative() \
            or strategy.coeff_error:
        return []
    n = strategy.n
    groups = [np.arange(n) % partitions == g for g in range(min(partitions, n))]
    g = 0
    if col_sq is not None and len(groups) > 1:
        g = int(np.argmax([float(np.sum(np.asarray(col_sq)[e])) for e in groups]))
    out = []
    for alternating in (False, True):
        for length in _lengths(n, int(b), alternating):
            js, _ = representatives(strategy, length, partitions)
            if js.size * length * (length + b) > MAX_WORK:
                continue
            w = block_witness(strategy, sigma, q, groups[g], length, alternating, g,
                              partitions)
            if w is not None:
                out.append(w)
    return out
