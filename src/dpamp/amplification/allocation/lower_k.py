"""A proven lower bound for one epoch of k-out-of-t random allocation, 1 < k < t.

**The pair.** With (P0, Q0) the base mechanism's dominating pair under add/remove and
X = dP0/dQ0, one epoch of k-out-of-t allocation (a record in a uniform k-subset S of the t
steps) has, for the worst-case neighbouring datasets, the pair

    P = mean over uniform k-subsets S of (P0 on the coordinates in S, Q0 elsewhere),  Q = Q0^t

("remove"; "add" is (Q, P)); V. Feldman, M. Shenfeld, *Privacy amplification by random
allocation*, arXiv:2502.08202 ("FS25a"), Sec. 2. The pair is attained: the mechanism run on
those datasets has exactly these output laws, so its hockey-stick curve H_x(P || Q) is the true
one, not a bound of it.

**Post-processing.** For any deterministic map T of the output Y = (Y_1, ..., Y_t),
H_x(P T^-1 || Q T^-1) <= H_x(P || Q) for every x >= 0 (data processing for f-divergences;
Steinke 2022, Sec. 3). Composition keeps this: the curve of a composition of pairs is an increasing
functional of each factor's curve (:mod:`dpamp.pld.discretize`, Fubini argument), so
post-processed pairs compose into lower bounds of the composed mechanism, epoch by epoch. We use

    T(Y) = sum_i c(X_i),   c(x) = index of the cell of x,

on cells uniform in y = g(x) = log(1 + z x) z0 / z, z0 = k / (t - k), z = (1 - 1/k) z0
(knots y_c = c dy, c = 1..K, as losses l_c = log((e^{y_c z / z0} - 1) / z); cell 0 is
l <= l_1, cell c is l_c < l <= l_{c+1}, index K is l > l_K and l = +inf; a purely atomic base
gets one knot on each finite atom). The cells partition the losses, so c(X_i) is a
deterministic function of Y_i; let p_c = P0[cell c], q_c = Q0[cell c] (:func:`_cell_masses`).
Under Q the c(X_i) are independent with law q, so Q T^-1 = q^{*t}. Under one term P_S the k
coordinates in S have law p and the others q, all independent: P_S T^-1 = p^{*k} * q^{*(t-k)},
the same for every S (the sum is exchangeable), hence P T^-1 is that too. Both are laws on the
integers 0..tK, computed by FFT.

Why g: dP/dQ = e_k(X) / C(t, k) (elementary symmetric polynomial) = [w^k] prod_i (1 + w X_i) /
[w^k] (1 + w)^t. At the saddle point w ~ z0 this is ~ prod (1 + z0 X_i) / (1 + z0)^t, a
function of sum log(1 + z0 X_i) (the Poisson-like form; for t >> k also ~ (sum X_i / t)^k);
where one X_i is large it takes one of the k draws and the saddle moves to ~ (k - 1) / t, hence
z = (1 - 1/k) z0 (c = 0, the plain sum, for k = 1). Measured at delta 1e-6 (Gaussian, sigma 0.8
to 2, t 50 to 1000): the sum of x-cells gives 0.908 where z gives 0.9455 (sigma 1, k 5,
t 1000; truth <= 0.9513), 2.534 against 3.342 (sigma 0.8, k 10). For k = 1 this T is a valid
(looser) version of :mod:`.pld`'s lower bound; for k = t it is one of the t-fold composition.

**Numerics, outward.** Let p_lo <= p <= p_up and q_lo <= q <= q_up pointwise (cell masses with
their error bounds, :mod:`.grid`'s FUNC_ULPS per cdf / sf value, rounded outward).
Convolutions of non-negative vectors are monotone in every entry, so
P_lo(s) <= P T^-1(s) <= P_up(s) and likewise for Q, with P_lo = p_lo^{*k} * q_lo^{*(t-k)} etc.
The engine's FFT (:func:`dpamp.pld.engine.compose`) returns each bin with a per-bin budget
(``bin_err``: the FFT error untilted, plus for the lower kind the mass that may have wrapped
around); a bin's lower bound is mass - bin_err, its upper one mass + bin_err (capped at the
total mass of the upper vectors, which also covers the untilting factor's cap at e^700). Three
tilts (P's right tail, untilted, Q's left tail, each used for both laws) are computed and each
bin keeps its best bounds. Where no composition fits the engine's largest FFT the cells are
made coarser (any cells are sound), and at worst the part's lower PMF is empty (a lower bound
of 0, never a refusal of the upper bound).

Then for the remove direction take the atoms (log(p~_s / q~_s), p~_s, q~_s) with
p~_s = P_lo(s) <= P T^-1(s) and q~_s = Q_up(s) >= Q T^-1(s): for every x >= 0,

    sum_s (p~_s - x q~_s)_+ <= sum_s (P T^-1(s) - x Q T^-1(s))_+ = H_x(P T^-1 || Q T^-1),

termwise (lowering p and raising q lowers each positive part). This is the curve F(x) for all
x >= 0, both half-lines (for x < 1 too: F(x) = E_P[(1 - x e^-L)_+] = sum_s (p_s - x q_s)_+),
which is what the composition argument needs. Bins without a known upper bound are dropped
(that removes non-negative terms). The atoms are scaled by 1 / max(1, total P-mass, total
Q-mass) (scaling both by lambda <= 1 scales every term: lower still), so they form a genuine
sub-probability pair, discretised optimistically by :func:`dpamp.pld.discretize.discretize`
(below its curve on every grid). Add: the same with (Q_lo, P_up) for (P-mass, Q-mass).

**Wiring** (:func:`allocation_parts_lower`). The engine composes parts, each with an upper and a
lower PMF. The block parts of :mod:`.pld` keep their upper PMFs and get the trivial pair
P = Q = the point mass at loss 0 as their lower (its curve (1 - x)_+ is below every pair's: a
constant map is a post-processing); one more part, :class:`TLowerSource`, has the trivial pair
as its upper and the post-processed pair's discretisation as its lower. The trivial pair is the
unit of composition, so the product of the uppers is the blocks' upper bound and the product of
the lowers is the post-processed pair's: epochs (``* epochs``) multiply every count alike.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import grid as G
from ...core.once import OnceCache
from .sums import DELTA_REF, composed_moments

_U = 2.0 ** -53
#: cut points of X tried, finest first (P0 and Q0 mass above the cut about this): above it all
#: values share the top index K, which the lower bound only loses
CUT_TAILS = (1e-14, 1e-12, 1e-10)
#: most cells of one step (the epoch's FFT is at least this long)
MAX_K = 1 << 18
#: the engine's grid step for T (index i at i _H): a power of two, so positions are exact, and
#: small, so that the engine's delta-query tables (blocks of ~700 / h points) are one block;
#: its mass margin expm1(8 u t / _H) stays ~1e-12 t, charged like every margin
_H = 2.0 ** -10


def allocation_parts_lower(base, k: int, t: int, blocks):
    """[(source, count)] of one epoch of k-out-of-t allocation, 1 < k < t: the block parts of
    :func:`.pld.allocation_parts` (``blocks``) with trivial lowers, and the post-processed
    pair with a trivial upper (see the module docstring)."""
    return [(UpperOnly(src), c) for src, c in blocks] + [(TLowerSource(_tpair(base, k, t)), 1)]


@functools.lru_cache(maxsize=8)
def _tpair(base, k: int, t: int) -> _TPair:
    from ...pld.sources import loss_distribution
    from .lower_split import chosen_pair
    # the large coordinate kept apart (lower_split.py): at or above T's remove bound in every
    # case measured (sigma 0.6-2, t 100-10000, k 2-10), the add one within 4e-5 of it, and
    # the same pair where the base is atomic; its body cells' c chosen where t / k is small
    return chosen_pair(loss_distribution(base), k, t)


def _delta0(h: float, jlo: int, jhi: int):
    """The trivial pair P = Q = point mass at loss 0, both kinds."""
    from ...pld.discretize import Discretized
    m = np.zeros(jhi - jlo + 1)
    m[-jlo] = 1.0
    return Discretized(h, jlo, m, 0.0, m.copy(), 0.0)


class UpperOnly:
    """A part whose upper PMF is ``inner``'s and whose lower is the trivial pair (point mass at
    loss 0: the unit of composition, dominated by every pair)."""

    has_lower = True
    attained = True
    gaussian_mu = None     # never merged with exact Gaussian parts (that would give a lower)
    exact = False          # its bracket does not close as the grid is refined

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def symmetric(self):
        return False

    def swapped(self):
        return UpperOnly(self.inner.swapped())

    def discretize(self, h, jlo, jhi, optimistic: bool = True):
        from ...pld.discretize import Discretized
        from ...pld.sources import discretize_source
        d = discretize_source(self.inner, h, jlo, jhi, optimistic=False)
        one = _delta0(h, jlo, jhi)
        return Discretized(h, jlo, d.upper, d.upper_inf, one.lower, 0.0)


class TLowerSource:
    """The post-processed pair (P T^-1, Q T^-1) of one epoch as a lower PMF, with the trivial
    pair as its upper (remove direction; ``swapped`` gives add)."""

    symmetric = False
    has_lower = True
    attained = True
    gaussian_mu = None
    exact = False
    #: the upper PMF is the trivial pair's (pld.batch sizes a pessimistic-only pass by it)
    upper_trivial = True
    # moments of the upper PMF (the trivial pair): sizing of the grid comes from the blocks
    mean = 0.0
    var = 0.0
    inf_mass = 0.0

    def __init__(self, tp: _TPair, remove: bool = True):
        self.tp = tp
        self.remove = remove

    def swapped(self):
        return TLowerSource(self.tp, not self.remove)

    def quantile_range(self, tail):
        return self.tp.loss_range(tail, self.remove)

    def discretize(self, h, jlo, jhi, optimistic: bool = True):
        from ...pld.discretize import Discretized, discretize
        one = _delta0(h, jlo, jhi)
        if not optimistic:
            return Discretized(h, jlo, one.upper, 0.0, np.zeros_like(one.upper), 0.0)
        dy = self.tp.dx_for(h)
        # within 10 % of the sizing pass's cell width (or coarser): that pair, already computed
        # (a coarse query spent half its time composing T's laws a second time, 0.2% finer)
        dy = self.tp.sizing_dy() if dy >= 0.9 * self.tp.sizing_dy() else dy
        pair = self.tp.pair_fitting(dy, self.remove)
        if pair is None:
            return Discretized(h, jlo, one.upper, 0.0, np.zeros_like(one.upper), 0.0)
        lo = discretize(pair, h, jlo, jhi, optimistic=True)
        return Discretized(h, jlo, one.upper, 0.0, lo.lower, lo.lower_inf, lo.lower_slack)


class _TPair:
    """The laws of T under P and Q, bin by bin bounded, cached per cell width dy."""

    def __init__(self, loss, k: int, t: int, c: float | None = None):
        self.loss, self.k, self.t = loss, k, t
        # y = g(x) = log(1 + z x) z0 / z with z = c z0, z0 = k / (t - k): ~ z0 x for small x
        # whatever c; c = 0 is y = z0 x (cells uniform in x: T resolves the sum of the X_i).
        # dP/dQ = e_k(X) / C(t, k) = [w^k] prod (1 + w X_i) / [w^k] (1 + w)^t; at the saddle
        # point w ~ k / (t - k) = z0 it is ~ prod (1 + z0 X_i) / (1 + z0)^t, a function of
        # sum log(1 + z0 X_i); where one X_i is large it takes one of the k draws and the
        # saddle moves to ~ (k - 1) / t: c = 1 - 1/k follows the tails, which decide small
        # deltas (measured, sigma 0.8-2, t 50-1000: the best of c in {0, 1/2, 1 - 1/k,
        # 1 - 1/(2k), 1} at delta 1e-6, or within 2e-4 of it)
        self.z0 = k / (t - k) if t > k else 1.0
        self.z = (1.0 - 1.0 / k if c is None else c) * self.z0
        self.cuts = [math.exp(min(max(loss.quantile_range(c)[1], 0.0) + 1e-9, 600.0))
                     for c in CUT_TAILS]
        fin = np.isfinite(loss.atom_loss) & (np.maximum(loss.atom_p, loss.atom_q) > 0)
        self.atoms = np.unique(loss.atom_loss[fin]) if loss.cdf is None else None
        self._cache = OnceCache(keep=4)       # shared by the two directions' threads

    # --- the cells -------------------------------------------------------------------------
    def dx_for(self, h: float) -> float:
        """Cell width in y for the loss step h: the loss, about sum_i y_i, moves by about
        sqrt(t) dy / 2 within the cells' spread, kept at about h / 2 (measured: a width 4
        times finer or coarser moves the lower bound by < 1e-4 relative; what limits it is
        the statistic, not its resolution)."""
        return h / math.sqrt(self.t)

    def _knots(self, dy: float) -> np.ndarray:
        """log X at the knots 1..K (cells (-inf, l_1], (l_1, l_2], ..., (l_{K-1}, l_K]; the top
        cell K is l > l_K): uniform in y = g(X), up to the finest cut that fits MAX_K cells. A
        purely atomic base: one knot on each finite atom, so each value has its own cell (two
        values: T counts the high ones, a sufficient statistic)."""
        if self.atoms is not None:
            return self.atoms.astype(float)
        width = self._width
        fits = [a for a in self.cuts if width(a) / dy <= MAX_K]
        a_cut = fits[0] if fits else self.cuts[-1]
        K = max(2, int(math.ceil(width(a_cut) / max(dy, width(a_cut) / MAX_K))))
        y = (width(a_cut) / K) * np.arange(1, K + 1)
        if self.z == 0.0:
            return np.log(y) - math.log(self.z0)
        return np.log(np.expm1(y * (self.z / self.z0))) - math.log(self.z)

    def _width(self, a: float) -> float:
        if self.z == 0.0:
            return a * self.z0
        return math.log1p(self.z * a) * (self.z0 / self.z)

    def _vectors(self, dy: float):
        """(p_lo, p_up, q_lo, q_up) on the cell indices 0..K (K: the top cell)."""
        m = _cell_masses(self.loss, self._knots(dy))
        p, q, ep, eq = m
        p_up = (p + ep) * (1 + 4 * _U)
        q_up = (q + eq) * (1 + 4 * _U)
        p_lo = np.maximum(p - ep, 0.0) * (1 - 4 * _U)
        q_lo = np.maximum(q - eq, 0.0) * (1 - 4 * _U)
        return p_lo, p_up, q_lo, q_up

    # --- the laws of T ----------------------------------------------------------------------
    def compute(self, dx: float) -> dict:
        return self._cache.get(dx, lambda: self._compute(dx))

    def _compute(self, dx: float) -> dict:
        from ...pld.discretize import Discretized
        from ...pld.engine import PartPMF
        p_lo, p_up, q_lo, q_up = self._vectors(dx)
        k, t = self.k, self.t
        pp = PartPMF(Discretized(_H, 0, p_up, 0.0, p_lo, 0.0), k)
        qq = lambda c: PartPMF(Discretized(_H, 0, q_up, 0.0, q_lo, 0.0), c)
        Pp, Qp = [pp] + ([qq(t - k)] if t > k else []), [qq(t)]
        # both laws at the same tilts: P's right tail (remove reads P and Q there), Q's left
        # tail (add), and untilted
        tilts = [_tilts(Pp)[i] for i in (0, 1)] + _tilts(Qp)[2:]
        P = _bin_bounds(Pp, tilts)
        Q = _bin_bounds(Qp, tilts)
        return {"P": P, "Q": Q}

    def pair(self, dx: float, remove: bool):
        """The lower pair's atoms as a LossDistribution (module docstring), or None."""
        r = self.compute(dx)
        (P_lo, P_up), (Q_lo, Q_up) = r["P"], r["Q"]
        n = max(P_lo.size, P_up.size, Q_lo.size, Q_up.size)
        P_lo, P_up, Q_lo, Q_up = (_pad(v, n, f) for v, f in
                                  ((P_lo, 0.0), (P_up, np.inf), (Q_lo, 0.0), (Q_up, np.inf)))
        a, b = (P_lo, Q_up) if remove else (Q_lo, P_up)     # (P-mass down, Q-mass up)
        return atoms_pair(a, b, f"allocation-T-lower({self.k},{self.t})")

    def pair_fitting(self, dy: float, remove: bool):
        """:meth:`pair` at dy, or at a coarser width where the FFT would exceed the engine's
        largest grid (any cells are sound); None where none fits."""
        for _ in range(12):
            try:
                return self.pair(dy, remove)
            except MemoryError:
                dy *= 4.0
        return None

    def sizing_dy(self) -> float:
        """The cell width of :meth:`loss_range`'s coarse pair."""
        return max(self._width(self.cuts[0]) / 2048, self.dx_for(2e-2))

    def loss_range(self, tail: float, remove: bool):
        """Range of the lower pair's losses outside which its masses are below ``tail``
        (sizing only: from a coarse grid, widened)."""
        pr = self.pair_fitting(self.sizing_dy(), remove)
        if pr is None:
            return -1.0, 1.0
        l, a, b = pr.atom_loss, pr.atom_p, pr.atom_q
        fin = np.isfinite(l)
        l, a, b = l[fin], a[fin], b[fin]
        if l.size == 0:
            return -1.0, 1.0
        ca, cb = np.cumsum(a), np.cumsum(b)
        ok_lo = (ca <= tail) & (cb <= tail)
        ok_hi = (ca[-1] - ca + a <= tail) & (cb[-1] - cb + b <= tail)
        lo = float(l[int(np.argmin(ok_lo))]) if not ok_lo.all() else float(l[-1])
        hi = float(l[np.nonzero(~ok_hi)[0][-1]]) if (~ok_hi).any() else float(l[0])
        w = 0.25 * (hi - lo) + 0.05
        return min(lo - w, -1e-3), max(hi + w, 1e-3)


def atoms_pair(a: np.ndarray, b: np.ndarray, name: str):
    """The lower pair of atoms with P-masses ``a`` (bounds from below) and Q-masses ``b`` (from
    above) as a LossDistribution, or None (module docstring: scaled to a sub-probability pair,
    each loss label lowered and b made consistent with it)."""
    from ...pld.loss import LossDistribution
    keep = (a > 0) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if a.size == 0:
        return None
    scale = 1.0 / max(1.0, float(np.sum(a)) * (1 + a.size * _U),
                      float(np.sum(b)) * (1 + b.size * _U))
    a = a * scale * (1 - 2 * _U)
    b = b * scale
    with np.errstate(divide="ignore"):
        loss = np.where(b > 0, np.log(a) - np.log(np.maximum(b, 1e-320)), np.inf)
    # the loss is only a label of the atom (its masses are a and b), but the discretiser
    # reads both: lower it by 4 ulps-of-log, and make b consistent with it (b' = a e^-loss
    # >= b), so each atom's term (a - x b')_+ <= (a - x b)_+
    fin = np.isfinite(loss)
    with np.errstate(invalid="ignore"):                  # (inf - inf where not used)
        loss = np.where(fin, loss - 8 * _U * (np.abs(loss) + 1.0), loss)
    with np.errstate(over="ignore"):
        b = np.where(fin, np.maximum(b, a * np.exp(-loss) * (1 + 4 * _U)), 0.0)
    order = np.argsort(loss)
    return LossDistribution(loss[order], a[order], b[order], name=name)


def _cell_masses(loss, lk: np.ndarray):
    """P0 and Q0 masses of the cells (-inf, l_1], (l_1, l_2], ..., (l_{K-1}, l_K], (l_K, +inf]
    of the privacy loss (l = -inf in the first, +inf in the last), and their error bounds.
    Continuous part: differences of the cdf where the cell lies left of 0 and of the sf
    otherwise (relative precision in both tails), each value known to FUNC_ULPS ulps
    (:mod:`.grid`'s convention); atoms: each in the cell its loss falls in (a fixed assignment,
    so the cells partition the outputs for P0 and Q0 alike), 8 ulps of their mass charged."""
    K = lk.size
    rel = G.FUNC_ULPS * _U
    P = np.zeros(K + 1)
    Q = np.zeros(K + 1)
    eP = np.zeros(K + 1)
    eQ = np.zeros(K + 1)
    if loss.cdf is not None and K:
        cp, cq = (np.asarray(v, dtype=float) for v in loss.cdf(lk))
        sp, sq = (np.asarray(v, dtype=float) for v in loss.sf(lk))
        # cell c in 1..K-1 is (l_c, l_{c+1}]: by the cdf when l_{c+1} <= 0, else by the sf
        left = lk[1:] <= 0.0
        with np.errstate(invalid="ignore"):
            dp = np.where(left, cp[1:] - cp[:-1], sp[:-1] - sp[1:])
            dq = np.where(left, cq[1:] - cq[:-1], sq[:-1] - sq[1:])
            vp = np.where(left, cp[1:] + cp[:-1], sp[:-1] + sp[1:])
            vq = np.where(left, cq[1:] + cq[:-1], sq[:-1] + sq[1:])
        P[1:K] = np.maximum(np.nan_to_num(dp), 0.0)
        Q[1:K] = np.maximum(np.nan_to_num(dq), 0.0)
        eP[1:K] = rel * np.nan_to_num(vp, nan=2.0) + _U * P[1:K]
        eQ[1:K] = rel * np.nan_to_num(vq, nan=2.0) + _U * Q[1:K]
        P[0], Q[0] = max(float(cp[0]), 0.0), max(float(cq[0]), 0.0)
        P[K], Q[K] = max(float(sp[-1]), 0.0), max(float(sq[-1]), 0.0)
        eP[0], eQ[0] = rel * P[0], rel * Q[0]
        eP[K], eQ[K] = rel * P[K], rel * Q[K]
    if loss.atom_loss.size:
        l = loss.atom_loss
        # cell index = number of knots strictly below the loss (-inf: 0; +inf: K)
        idx = np.searchsorted(lk, l, side="left")
        ap = np.bincount(idx, loss.atom_p, K + 1)
        aq = np.bincount(idx, loss.atom_q, K + 1)
        P += ap
        Q += aq
        eP += 8 * _U * ap
        eQ += 8 * _U * aq
    return P, Q, eP + 4 * _U * P, eQ + 4 * _U * Q


def _pad(v: np.ndarray, n: int, fill: float) -> np.ndarray:
    return v if v.size >= n else np.concatenate([v, np.full(n - v.size, fill)])


def _tilts(parts):
    """(lam, target) of three compositions: the right tail's, untilted, the left tail's (half
    the Chernoff saddles for DELTA_REF, at most 20 over the standard deviation, as the engine's
    own tilt cap)."""
    from ...pld.engine import grid_log_mgf
    mean, sd = composed_moments(parts, 1.0)
    th = np.geomspace(1e-2, 1e2, 80) * math.sqrt(2 * math.log(1 / DELTA_REF)) / sd
    out: list[tuple[float, tuple[float, float]] | None] = [(0.0, (mean, 0.0))]  # None: no tilt
    ld = math.log(DELTA_REF)
    for sign in (1.0, -1.0):
        K = np.zeros(th.size)
        for p in parts:
            K += p.count * grid_log_mgf(p.d.upper, 0.0, 1.0, sign * th)
        with np.errstate(invalid="ignore"):
            s = (K - ld) / th               # right: s <= this; left: s >= -this
        if not np.isfinite(s).any():
            out.append(None)
            continue
        i = int(np.nanargmin(s))
        lam = sign * min(0.5 * float(th[i]), 20.0 / sd)
        out.append((lam, (sign * float(s[i]), ld)))
    return out


def _bin_bounds(parts, tilts):
    """(lower, upper) bounds on every bin 0..n-1 of the composition of the parts (upper kinds
    composed for the upper, lower kinds for the lower), the best of three tilts; inf where no
    tilt's window covers a bin."""
    from ...pld.engine import compose
    from ...pld.state import BOTH
    # the composed upper vectors' total mass, from above: fsum is correctly rounded (u
    # relative), a power of c adds ~ c u more
    total, steps = 1.0, 0
    for p in parts:
        total *= math.fsum(p.d.upper) ** p.count
        steps += p.count
    total *= 1 + 4 * (steps + 2) * _U + 1e-9
    lo = np.zeros(0)
    up = np.zeros(0)
    for lam, target in (tl for tl in tilts if tl is not None):
        try:
            r = compose(parts, _H, lam / _H, bounds=BOTH, target=(target[0] * _H, target[1]))
        except MemoryError:
            continue
        g = r.upper
        # both kinds asked for (BOTH); compose sets bin_err on every PMF it returns
        assert g is not None and g.bin_err is not None
        n = g.jlo + g.mass.size
        v = np.minimum((g.mass + g.bin_err) * (1 + 1e-9), total)
        v = np.where(np.isnan(v), total, v)
        if up.size < n:
            up = _pad(up, n, np.inf)
        up[g.jlo:n] = np.minimum(up[g.jlo:n], v)
        g = r.lower
        assert g is not None and g.bin_err is not None
        n = g.jlo + g.mass.size
        v = np.maximum(g.mass - g.bin_err, 0.0) * (1 - 1e-12)
        v = np.where(np.isnan(v), 0.0, v)
        if lo.size < n:
            lo = _pad(lo, n, 0.0)
        lo[g.jlo:n] = np.maximum(lo[g.jlo:n], v)
    if up.size == 0 and lo.size == 0:
        raise MemoryError("random allocation (k > 1): no composition of T fits")
    return lo, up


__all__ = ["TLowerSource", "UpperOnly", "allocation_parts_lower"]
