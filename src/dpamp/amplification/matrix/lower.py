"""A proven lower end for the amplified route of a Poisson-sampled banded matrix mechanism.

The mechanism releases y = C G + Z, C lower triangular and b-banded (C[t, j] = 0 unless
t - b < j <= t), Z ~ N(0, sigma^2 I), the record taking part in step j with s_j ~ Bernoulli(q)
independently on the steps it may join (every step under Poisson sampling, its group's steps
g, g + p, ... under cyclic Poisson with p groups) and never elsewhere, its clipped gradients
g_j (|g_j| <= 1) chosen by the adversary; add/remove neighbours. Any gradient sequence the
adversary may choose, with the other records' gradients 0, is an actual pair of neighbouring
inputs (P with the record, Q without it). So a lower bound on delta(eps) of that pair, or of
any post-processing of it (data processing), is a lower bound on the mechanism's. Two such
pairs are built here; each is a PRODUCT of one-dimensional pairs, whose PLD composition
(dpamp's engine, optimistic discretisation) is a proven lower bound on its delta(eps).

**Fixed direction** (any gradient dimension). g_j = e_j u, one unit vector u, e_j = +-1 the
sign of C on the row that reads step j (1 where C >= 0: the record whose clipped gradient is
always u). Project y on u. Keep rows T whose sets of read steps S_t = {j : C[t, j] != 0, j
joinable} are disjoint (rows t = r, r + b, r + 2b, ... for Poisson: row t reads s_{t-b+1..t}).
The kept coordinates y_t = sum_{j in S_t} |C[t, j]| s_j + sigma N(0, 1) depend on disjoint sets
of the independent s and on independent noise, so under P and under Q they are independent:
the pair is the product over t in T of (P_t, Q_t) = (sum_{s in {0,1}^S_t} pi(s)
N(a_t(s), sigma^2), N(0, sigma^2)), pi(s) = q^|s| (1 - q)^(|S_t| - |s|), a_t(s) = sum_j
|C[t, j]| s_j >= 0: dpamp's ``MixtureOfGaussians`` (the remove order; its swap is the add
order, and the engine composes both). Rows are chosen by weighted interval scheduling on
their read intervals (weight sum_j C[t, j]^2, a proxy: any choice is valid); for a Toeplitz C
under Poisson it keeps floor(n / b) full rows and, where b does not divide n, the first
partial row with the most coefficients (every other offset r keeps no more full rows, and a
partial row is dominated by a full one, see below).

**Orthogonal directions** (gradients of at least D = ceil(b / p) dimensions). g_j = e_{k(j)
mod D} for the record's k(j)-th joinable step (e_i the unit vectors). In direction i, two
steps j < j' carrying e_i are D p >= b apart, so the columns C[:, j] and C[:, j'] (rows j to
j + b - 1) share no row: the outputs along e_i are C[:, j] s_j + sigma N(0, I) on disjoint
rows, one block per step, independent across directions (independent noise coordinates). The
pair is exactly the product over the joinable steps j of Poisson-subsampled Gaussians with
mu_j = |C[:, j]| / sigma (rotation invariance): DP-SGD at the column norms, the reduction of
Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta & Xu (NeurIPS 2023) for b <= p, here
a witness for any b. It needs the model to have at least D parameters, which the answer
states.

**Rounding.** Every shift and mu is rounded down and every positive shift's probability is
padded down (the zero shift takes what is left). Where C is computed (a BLT: each entry
within ``coeff_error`` of the exact one) the fixed-direction witness lowers each |entry| by
that error (what remains has the exact entry's sign; where nothing remains the record's
gradient at that step is 0) and a row reads every joinable step of its band, a computed 0
included, so the kept rows' read sets are disjoint under the exact C. Both give a pair the true one dominates:
moving probability to the zero shift, or lowering a shift, makes the law of the shifts
stochastically smaller, and a stochastically smaller law of non-negative shifts gives a
dominated mixture in both orders (dpamp's lemma behind conditional composition,
docs/matrix-mechanisms.md step 1: pad each shift to the larger norm in a new coordinate, a
post-processing, then the comonotone case is the largest: Tchen 1980, Dhaene, Denuit,
Goovaerts, Kaas & Vyncke 2002). The same lemma lets a mixture of more than MAX_COMPONENTS
shifts be reduced by rounding shifts down onto kept values, and rows beyond MAX_ROW_PARTS
distinct ones be replaced by an entrywise minimum of a bucket of rows. So each part built is
dominated by the true factor, the product by the true product, and the optimistic PLD of the
parts is a proven lower bound of the mechanism.

What is loose: the fixed-direction pair drops all but one row in b (about 1/b of the squared
column norms is seen); the orthogonal one gives up the coherent sums of one direction. The
truth of the fixed-direction pair (Monte Carlo, ``dpamp.accounting.montecarlo_matrix``) is
above both on the benchmarks.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...core.errors import OutOfReach
from ...core.rounding import onto_levels, ulps_down
from ...core.sampling import Poisson
from ...mechanisms.composition import compose_counts
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.mixture_of_gaussians import MixtureOfGaussians
from ...mechanisms.subsampled import Subsampled
from .toeplitz_view import LowerToeplitzAbs

__all__ = ["Witness", "witnesses", "lower_end", "LowerEnd", "offset_rows", "select_rows",
           "row_mixture", "MAX_BANDS", "FIXED", "ORTHOGONAL", "WINDOWED", "ALTERNATING"]

_U = 2.0 ** -53
#: most bands the fixed-direction witness takes (2^b participation patterns per row)
MAX_BANDS = 16
#: shifts of one row's mixture at most (beyond: rounded down onto kept values)
MAX_COMPONENTS = 256
#: distinct rows (PLD parts) of the fixed-direction witness at most (beyond: buckets)
MAX_ROW_PARTS = 32
#: distinct mu of the orthogonal witness at most (beyond: rounded down onto levels)
MAX_LEVELS = 16
FIXED, ORTHOGONAL = "fixed-direction", "orthogonal"
#: balls in bins' witnesses (:mod:`.lower_bins`)
MATCHED, ALLOCATED, FILTERED = "matched-filter", "row-allocation", "filter-allocation"
#: balls in bins' whole-run matched filter (:mod:`.lower_run`)
RUN = "whole-run-filter"
#: the windowed witnesses of Poisson sampling (:mod:`.lower_block`)
WINDOWED, ALTERNATING = "windowed", "alternating-windows"


@dataclasses.dataclass(frozen=True)
class Witness:
    """A pair of neighbours of the mechanism (or a pair it dominates), as a product of
    one-dimensional parts ((mechanism, count), ...); ``group`` the cyclic-Poisson group of the
    record, ``dimensions`` the gradient dimensions it needs; ``window`` the steps per window
    of the windowed witnesses (:mod:`.lower_block`; else 0), ``refined`` a finer product of
    the same pair's parts (dominated by it as well; () if none), which :func:`lower_end`
    composes for the best candidate only."""

    name: str
    parts: tuple
    group: int
    dimensions: int
    window: int = 0
    refined: tuple = ()
    #: the periods summed by a fixed bins' witness (:mod:`.lower_bins`; else 0)
    periods: int = 0

    def _summed(self) -> str:
        return f", summed over the {self.periods} periods of the bins" if self.periods else ""

    def describe(self) -> str:
        if self.name == FIXED:
            return ("fixed-direction witness (a record whose clipped gradient is one unit "
                    "vector, signed as C; any model dimension), output rows with disjoint read sets kept")
        if self.name == ALLOCATED:
            return ("row-allocation witness (a record whose clipped gradient is one unit "
                    "vector; any model dimension), per epoch the rows reading disjoint blocks "
                    "of its steps: random allocation of a mixture over the coefficients")
        if self.name == FILTERED:
            return ("filter-allocation witness (a record whose clipped gradient is one unit "
                    f"vector; any model dimension), the matched filters of every "
                    f"{self.window}-th step ("
                    + (f"summed over the {self.periods} periods of the bins" if self.periods
                       else "per epoch") +
                    "): random allocation of a mixture over the filter's autocorrelations")
        if self.name == WINDOWED:
            return (f"windowed witness (a record whose clipped gradient is one unit vector; any "
                    f"model dimension), windows of {self.window} steps, the output rows reading "
                    "one window only projected on the window's matched filter" + self._summed())
        if self.name == ALTERNATING:
            return (f"alternating-windows witness (the record's gradient alternates between two "
                    f"orthogonal unit vectors every {self.window} steps; a model of at least 2 "
                    "parameters), every output row reading a window projected on the "
                    "window's matched filter" + self._summed())
        if self.name == RUN:
            return ("whole-run matched-filter witness (a record whose clipped gradient is one "
                    "unit vector; any model dimension), the outputs projected on their mean "
                    "were the record in every step it may join")
        if self.name == MATCHED:
            return ("matched-filter witness (a record whose clipped gradient is one unit "
                    "vector; any model dimension), the outputs projected on one participation's "
                    "mean")
        return (f"orthogonal witness (the record's gradient cycles over {self.dimensions} "
                "orthogonal unit vectors: DP-SGD at the column norms; a model of at least "
                f"{self.dimensions} parameters)")


@dataclasses.dataclass(frozen=True)
class LowerEnd:
    """A proven lower bound ``value`` (epsilon or delta, as queried) from the witness
    ``witness`` (the largest of ``values``, one per witness built)."""

    value: float
    witness: Witness
    values: tuple


def offset_rows(c, bands: int) -> np.ndarray:
    """R[t, k] = |C[t, t - k]| for k < ``bands`` (0 where t - k < 0 or outside the view's
    mask), from a dense C or a :class:`LowerToeplitzAbs`; an entry of a dense C outside the
    band is an error naming ``strategy``."""
    if isinstance(c, LowerToeplitzAbs):
        n = c.n
        co = np.zeros(bands)
        m = min(bands, c.coeffs.size)
        co[:m] = c.coeffs[:m]
        if c.coeffs[bands:].any():
            raise ValueError(f"strategy: C has more than {bands} bands")
        t = np.arange(n)[:, None]
        off = np.arange(bands)[None, :]
        r = np.where(t >= off, co[None, :], 0.0)
        return np.where(c.mask[np.maximum(t - off, 0)], r, 0.0)
    a = np.abs(np.asarray(c, dtype=float))
    n = a.shape[0]
    if np.tril(a, -bands).any():
        raise ValueError(f"strategy: C has more than {bands} bands")
    r = np.zeros((n, bands))
    for k in range(min(bands, n)):
        r[k:, k] = np.diagonal(a, -k)
    return r


def select_rows(r: np.ndarray, reads: np.ndarray | None = None) -> np.ndarray:
    """Rows t whose read intervals [t - max k, t - min k] (k with ``reads[t, k]``, default
    R[t, k] > 0) are pairwise disjoint, of largest total weight sum_k R[t, k]^2 (weighted
    interval scheduling over the intervals sorted by their ends; a tie leaves the later
    interval out): disjoint intervals read disjoint sets of steps."""
    nz = r > 0 if reads is None else np.asarray(reads, dtype=bool)
    rows = np.flatnonzero(nz.any(axis=1))
    if not rows.size:
        return rows
    k = np.arange(r.shape[1])
    lo = rows - np.max(np.where(nz[rows], k, -1), axis=1)
    hi = rows - np.min(np.where(nz[rows], k, r.shape[1]), axis=1)
    w = np.sum(r[rows] * r[rows], axis=1)
    order = np.lexsort((rows, hi))
    lo, hi, w, rows = lo[order], hi[order], w[order], rows[order]
    prev = np.searchsorted(hi, lo, side="left") - 1       # last interval ending before lo
    best = np.zeros(rows.size + 1)
    take = np.zeros(rows.size, dtype=bool)
    for i in range(rows.size):
        with_i = w[i] + best[prev[i] + 1]
        take[i] = with_i > best[i]
        best[i + 1] = with_i if take[i] else best[i]
    out, i = [], rows.size - 1
    while i >= 0:
        if take[i]:
            out.append(rows[i])
            i = prev[i]
        else:
            i -= 1
    return np.sort(np.array(out, dtype=int))


def _row_keys(r: np.ndarray, rows: np.ndarray) -> dict[tuple, int]:
    """{row values (sorted, non-zero): count} over the kept rows; beyond MAX_ROW_PARTS
    distinct ones, the rows sorted by weight are split into MAX_ROW_PARTS buckets, each
    replaced by the entrywise minimum of its rows' sorted values (smaller shifts: dominated,
    module docstring)."""
    vals = -np.sort(-r[rows], axis=1)                   # largest first, zeros last
    keys: dict[tuple, int] = {}
    uniq = np.unique(vals, axis=0)
    if uniq.shape[0] > MAX_ROW_PARTS:
        order = np.lexsort(tuple(vals.T[::-1]))
        for chunk in np.array_split(order, MAX_ROW_PARTS):
            vals[chunk] = vals[chunk].min(axis=0)
    for v in vals:
        key = tuple(float(x) for x in v if x > 0)
        keys[key] = keys.get(key, 0) + 1
    return keys


def row_mixture(values, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(shifts, probabilities) of one row's mixture sum_s pi(s) N(sum_j v_j s_j, .), rounded
    so that the true mixture dominates it (module docstring): shifts down by 64 ulps (the sum
    of at most 16 terms and the division by sigma are within that), positive shifts'
    probabilities down by their computed error, the zero shift the rest; at most
    MAX_COMPONENTS shifts."""
    v = np.asarray(values, dtype=float)
    k = v.size
    bits = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(float)
    ones = bits.sum(axis=1)
    shifts = np.zeros(bits.shape[0])
    for j in range(k):               # in a fixed order, not a BLAS product: the same bits
        shifts = shifts + bits[:, j] * v[j]     # on every machine (same question, same answer)
    shifts = shifts * (1.0 - 64 * _U)
    lq = math.log(q)
    l1q = math.log1p(-q) if q < 1 else -math.inf
    with np.errstate(invalid="ignore"):
        logp = np.where(ones > 0, ones * lq, 0.0) + np.where(ones < k, (k - ones) * l1q, 0.0)
    # below 2^-1000 (near the subnormals, where a rounding is absolute and no relative
    # padding covers it) a probability is rounded down to 0: its mass goes to the zero shift
    p = np.where(logp < -1000 * math.log(2.0), 0.0, np.exp(logp))
    u, inv = np.unique(shifts, return_inverse=True)
    pp = np.bincount(inv, weights=p, minlength=u.size)
    if u.size > MAX_COMPONENTS:
        u, pp = _reduce(u, pp)
    # relative error of each merged probability: the exponent's (k |log q| + k |log(1-q)|
    # terms), the merge sums and MixtureOfGaussians' normalisation
    big = k * (abs(lq) + (abs(l1q) if math.isfinite(l1q) else 0.0)) + 8.0
    rel = 4 * _U * big + 2 * (2 ** k + 8) * _U
    pos = u > 0
    pp = np.where(pos, pp * (1.0 - rel) * (1.0 - 4 * _U), 0.0)
    pp[~pos] = max(1.0 - math.fsum(pp[pos]), 0.0)
    return u, pp


def _reduce(u: np.ndarray, pp: np.ndarray, count: int = MAX_COMPONENTS,
            points: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Each shift rounded down onto the kept values: 0, the ``count`` - ``points`` - 1 shifts
    of largest probability, and ``points`` geometric points between the smallest positive
    shift and the largest (a smaller shift: dominated)."""
    top = u[np.argsort(-pp, kind="stable")[:count - points - 1]]
    pos = u[u > 0]
    grid = np.geomspace(pos[0], pos[-1], points) if pos.size else np.zeros(0)
    kept = np.unique(np.concatenate([[0.0], top, np.minimum(grid, pos[-1] if pos.size else 0)]))
    idx = np.searchsorted(kept, u, side="right") - 1
    return kept, np.bincount(idx, weights=pp, minlength=kept.size)


def _groups(n: int, partitions: int) -> list[np.ndarray]:
    return [np.arange(n) % partitions == g for g in range(min(partitions, n))]


def fixed_direction(c, bands: int, sigma: float, q: float, partitions: int = 1,
                    coeff_error: float = 0.0) -> Witness:
    """The fixed-direction witness (module docstring): of the group whose kept rows weigh
    most (ties: the first). A computed C (``coeff_error`` e > 0, a bound on each entry's
    error): each |entry| is lowered by e (then its sign is the true one, or it is 0 and the
    record's gradient at that step is 0), and a row reads every joinable step of its band,
    a computed 0 included (the exact entry may not be 0)."""
    n = c.shape[0]
    best = None
    for g, e in enumerate(_groups(n, partitions)):
        view = c.with_mask(e) if isinstance(c, LowerToeplitzAbs) else \
            np.where(e[None, :], np.abs(np.asarray(c, dtype=float)), 0.0)
        r = offset_rows(view, bands)
        reads = None
        if coeff_error > 0:
            t, k = np.arange(n)[:, None], np.arange(bands)[None, :]
            reads = (t >= k) & e[np.maximum(t - k, 0)]
            r = np.maximum(r - coeff_error, 0.0)
        rows = select_rows(r, reads)
        weight = float(np.sum(r[rows] ** 2))
        if best is None or weight > best[0]:
            best = (weight, g, r, rows)
    assert best is not None
    _, g, r, rows = best
    parts = []
    for key, count in sorted(_row_keys(r, rows).items()):
        shifts, probs = row_mixture(key, q)
        parts.append((MixtureOfGaussians(sigma, tuple(shifts.tolist()),
                                         tuple(probs.tolist())), count))
    return Witness(FIXED, tuple(parts), g, 1)


def orthogonal(col_sq, bands: int, sigma: float, q: float, partitions: int = 1,
               coeff_error: float = 0.0) -> Witness:
    """The orthogonal witness (module docstring): Poisson-subsampled Gaussians at mu_j =
    |C[:, j]| / sigma over the joinable steps of the group of largest sum of squared column
    norms (ties: the first), mu rounded down (the norms' summation error, (n + 8) ulps, and a
    computed strategy's coefficient error) and onto at most MAX_LEVELS levels."""
    col_sq = np.asarray(col_sq, dtype=float)
    n = col_sq.size
    groups = _groups(n, partitions)
    g = int(np.argmax([float(np.sum(col_sq[e])) for e in groups]))
    sq = col_sq[groups[g]]
    err = (n + 8) * 2 * _U
    mu = ulps_down(np.maximum(np.sqrt(sq * (1 - err)) * (1 - 2 * _U) - coeff_error, 0.0)
                   / sigma, 4)
    mu = np.sort(mu[mu > 0])
    mu = onto_levels(mu, MAX_LEVELS, False)
    vals, counts = np.unique(mu, return_counts=True)
    parts = tuple((Subsampled(Gaussian(1.0, float(m)), Poisson(q)), int(k))
                  for m, k in zip(vals, counts))
    dims = max(1, min(-(-bands // partitions), int(groups[g].sum())))
    return Witness(ORTHOGONAL, parts, g, dims)


def witnesses(c, col_sq, bands: int, sigma: float, q: float, partitions: int = 1,
              coeff_error: float = 0.0, fixed: bool = True) -> list[Witness]:
    """The witnesses that apply: the orthogonal one always, the fixed-direction one for at
    most MAX_BANDS bands where ``fixed`` (the family leaves it out where the windowed
    witnesses of :mod:`.lower_block` apply: their windows of 2 b steps and more keep its rows,
    though projected on one direction per window: they were above it, or below by at most
    1e-4 relative (their lattice's rounding), on every case measured; a choice of speed, any
    witness being valid)."""
    out = [orthogonal(col_sq, bands, sigma, q, partitions, coeff_error)]
    if bands <= MAX_BANDS and fixed:
        out.append(fixed_direction(c, bands, sigma, q, partitions, coeff_error))
    return [w for w in out if w.parts]


def _value(parts, field: str, x: float) -> float | None:
    """The PLD's lower end of the product of ``parts`` at ``x`` (None: out of its reach, or
    no finite value)."""
    parts = list(parts)
    # (one Gaussian: its closed-form profile, exact at both ends and beyond the PLD's range)
    one = len(parts) == 1 and parts[0][1] == 1 and isinstance(parts[0][0], Gaussian)
    try:
        v = getattr(compose_counts(parts), field)(x, method="profile" if one else "pld").lower
    except OutOfReach:
        return None
    return float(v) if v is not None and math.isfinite(v) else None


def lower_end(ws: list[Witness], field: str, x: float) -> LowerEnd | None:
    """The largest proven lower bound over the witnesses ``ws`` of epsilon at delta = x
    (``field`` "epsilon") or of delta at epsilon = x ("delta"): each witness's product
    composed by the PLD engine, its lower end (optimistic discretisation); then the
    ``refined`` product of the best witness that has one (the larger of its two values
    counts: both are proven). ``values`` holds the best value of each witness name. A witness
    whose losses the PLD cannot take (``OutOfReach``) is left out: the lower end is optional,
    and the upper routes answer without it."""
    vals: list[float] = []
    kept: list[Witness] = []
    for w in ws:
        v = _value(w.parts, field, x)
        if v is not None:
            vals.append(v)
            kept.append(w)
    fine = [i for i, w in enumerate(kept) if w.refined]
    if fine:
        top = max(fine, key=lambda i: vals[i])                   # ties: the first
        v = _value(kept[top].refined, field, x)
        if v is not None and v > vals[top]:
            vals[top] = v
    if not vals:
        return None
    best: dict[str, float] = {}
    for v, w in zip(vals, kept):
        best[w.name] = max(v, best.get(w.name, -math.inf))
    i = max(range(len(vals)), key=lambda i: vals[i])
    return LowerEnd(vals[i], kept[i], tuple(best.items()))
