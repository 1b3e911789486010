"""Shuffled fixed-size batches (ABLQ_S): proven lower bounds and the proven upper bound.

The sampler: every epoch permutes the n records uniformly at random and cuts them into
t = n // b batches of b records (the remainder is dropped); the epochs are reshuffled
independently (``reshuffle=False``: one permutation for all epochs). Each step releases the sum
of the batch's contributions (clipped to norm 1) plus N(0, sigma^2 I): ``sigma`` is the noise
multiplier. This is the Adaptive Batch Linear Queries mechanism with shuffling of L. Chua,
B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi, A. Sinha, C. Zhang, *How Private are DP-SGD
Implementations?*, ICML 2024, arXiv:2403.17673 ("CGK24"), extended to several epochs in
*Scalable DP-SGD: Shuffling vs. Poisson Subsampling*, NeurIPS 2024, arXiv:2411.04205
("CGK24b"); DP-SGD is a post-processing of it.

**Lower bounds (proven; our computation of the CGK24 construction).** Contributions are 1-D
(a linear query with values in [-1, 1]). Let every record but one contribute c, and the
differing record contribute a in one dataset and b in the other. Subtracting the known sums
b c from every step (post-processing), one epoch releases, in units of sigma... exactly

    MoG(u) = (1/t) sum_i N(u e_i, sigma^2 I_t),     u = a - c  vs  MoG(v), v = b - c,

since the differing record sits in a uniformly random batch, and the other records, all equal,
add the same constant everywhere. CGK24 take c = -1, a = 1, b = 0 (their neighbouring relation
replaces a record by one contributing 0): (u, v) = (2, 1), where the location is as uncertain on
both sides, so the pair behaves like an unamplified Gaussian when sigma is small.
* ``SUBSTITUTION`` (replace one record; a change of up to 2 in a batch sum): every (u, v) with
  u = a - c, v = b - c, |a|, |b|, |c| <= 1 is realised; we take the better of (2, 1) (CGK24)
  and (2, 0) (a = 1, b = c = -1), which beat (2, 1/2), (2, 3/2) and (1, -1) on every plan we
  tried (sigma 0.3 .. 4, t 10 .. 1000). With a remainder (n > t b, given through
  ``batch_size`` and ``dataset_size``; without them n = t b is assumed) the differing record is
  dropped with probability rho = (n - t b)/n, at the same position in both datasets: the pair
  (rho N(0) + (1 - rho) MoG(u), rho N(0) + (1 - rho) MoG(v)).
* ``ADD_REMOVE`` with the remainder dropped: for the dataset D of n records (x among them)
  and its neighbour D - x, couple a uniform permutation of D with one of D - x by taking x out
  of its uniform position j and putting the last record of D (in the remainder) there (when b
  does not divide n, so that both datasets give t = n // b batches). With c = -1 and x
  contributing 1, D releases MoG(2) when j <= t b and the same as D - x otherwise: the pair
  (rho N(0) + (1 - rho) MoG(2), N(0)), rho = (n - t b)/n. (D + x against D, the same
  coupling with n + 1 records, drops x with 1 - t b/(n + 1), more often: a weaker bound.)
  When b divides n, D and D - x give different numbers of steps, and when b divides n + 1 so
  do D + x and D (one batch more): no finite guarantee, and the lower bound is infinite.

A lower bound on the hockey-stick divergence of a pair is a lower bound for the mechanism
(its privacy profile is the supremum over neighbouring pairs). We post-process each epoch's
output to its largest coordinate (CGK24's "cube" test sets {max_i y_i <= C} are events of it),
then to the cell of a fine grid of cut points it falls in (tails included, so the cells cover the
line): a pair of finite distributions whose cell masses are computed with mpmath (60 digits) and
rounded outwards (the first distribution's masses down, the second's up). One epoch: the
hockey-stick divergence of the cell pair, sum_j (p_j - e^eps q_j)_+, which dominates every
cube test whose threshold is a cut point, and the best cube test of all thresholds (searched,
then evaluated in mpmath), whichever is larger: at least every single cube test. Several
reshuffled epochs: the epochs are independent, so the pair is the product; we post-process
again by mapping each epoch's cell to the integer floor(loss / h) of its
privacy loss and adding these over the epochs (a deterministic map of the observations: still a
lower bound), and compute the two laws of the sum exactly by direct convolutions of
nonnegative vectors, with their rounding bounded and pushed the safe way. Both directions of the
pair are tried. No Monte Carlo anywhere.

**Upper bound (proven).** In every epoch the differing record changes at most one step, by a
substitution (add/remove: by the coupling above): conditionally on the permutation (and on j),
one step of an adaptive composition differs, with L2 change at most 2, and the other steps have
the same conditional law; mixing over the permutation (same weights on both sides) does not
increase a hockey-stick divergence. So E epochs are at most the Gaussian mechanism with
mu = 2 sqrt(E) / sigma (Balle et al. 2018, Thm 4, exact closed form, rounded up). We know of no
proven bound for ABLQ_S that beats this "no amplification" bound under either relation: CGK24/CGK24b
give lower bounds only and note shuffling has no numerically tight accountant; the amplification of
random allocation (Feldman & Shenfeld, arXiv:2502.08202) does not transfer, because under
shuffling the records' batches are dependent (the lower bounds above exceed the random-allocation
guarantee for small sigma).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...core import roots, validate as V
from ...core.relations import Relation, as_relation

_DPS = 60
_ABS = 1e-55  # absolute error allowance on a cell mass computed at 60 digits
_U = 2.0 ** -53
_MAX_LEN = 2 ** 13


def _sizes(relation: Relation, steps: int, batch_size, dataset_size):
    """(drop probability rho, finite): rho = (n - t b)/n, the differing record falls in the
    dropped remainder (substitution; add/remove: D against D - x, module docstring); finite is
    False when, under add/remove, b divides n or n + 1. Substitution without sizes assumes
    n = t b (no remainder)."""
    if relation is Relation.SUBSTITUTION and batch_size is None and dataset_size is None:
        return 0.0, True
    if batch_size is None or dataset_size is None:
        raise ValueError("batch_size and dataset_size are needed under add/remove (and must be "
                         "given together under substitution)")
    b = V.integer("batch_size", batch_size, low=1)
    n = V.integer("dataset_size", dataset_size, low=b)
    if n // b != steps:
        raise ValueError(f"steps_per_epoch must be dataset_size // batch_size = {n // b} "
                         f"(got {steps})")
    # (add/remove: D of n records against D - x, x dropped with the remainder's share of D;
    # the pair D + x against D drops it with 1 - t b / (n + 1), more often: a weaker bound)
    return (n - steps * b) / n, relation is Relation.SUBSTITUTION or not _length_differs(b, n)


def _length_differs(b: int, n: int) -> bool:
    """Under add/remove, whether a neighbour of a dataset of n records (n - 1 or n + 1 of them)
    gives another number of batches than n // b: b divides n (D - x has one batch fewer) or
    n + 1 (D + x one more). Every output then reveals which dataset it came from."""
    return n % b == 0 or (n + 1) % b == 0


def _pairs(relation: Relation, steps: int, batch_size, dataset_size):
    """The (u, v, rho) candidates: P = rho N(0) + (1 - rho) MoG(u), Q = rho N(0) +
    (1 - rho) MoG(v) (the differing record dropped with probability rho, at the same position
    in both datasets), or None when the outputs differ in length."""
    rho, finite = _sizes(relation, steps, batch_size, dataset_size)
    if not finite:
        return None
    if relation is Relation.SUBSTITUTION:
        return [(2.0, 1.0, rho), (2.0, 0.0, rho)]
    return [(2.0, 0.0, rho)]


def _mpmath():
    """mpmath, which the shuffled-batches lower bound evaluates its cells in (60 digits): an
    optional dependency (dpamp's runtime needs numpy and scipy only). Without it the bound is
    not computed: NotImplementedError, which the accounting reads as "no lower bound"."""
    try:
        import mpmath
    except ImportError:
        raise NotImplementedError("the shuffled-batches lower bound (Chua et al. 2024) needs "
                                  "mpmath: pip install mpmath") from None
    return mpmath


def _cells(sigma: float, t: int, u: float, v: float, rho: float, n_cells: int):
    """Cell masses (p_lo, q_hi) of the largest coordinate under P and Q (module docstring),
    on cut points spanning the bulk of both laws; the two tail cells close the partition."""
    mp = _mpmath()
    cuts = tuple(float(c) for c in _cut_points(sigma, t, u, v, n_cells))
    with mp.workdps(_DPS):
        fp = [mp.mpf(0), *_cdf_at_cuts(sigma, t, u, rho, cuts), mp.mpf(1)]
        fq = [mp.mpf(0), *_cdf_at_cuts(sigma, t, v, rho, cuts), mp.mpf(1)]
        dp_ = [fp[i + 1] - fp[i] for i in range(len(fp) - 1)]
        dq_ = [fq[i + 1] - fq[i] for i in range(len(fq) - 1)]
        down = lambda xs: np.array([max(float(x - _ABS), 0.0) for x in xs])
        up = lambda xs: np.array([float(x + _ABS) for x in xs])
        # float() rounds to nearest: one ulp the safe way makes them lower / upper bounds
        return (np.nextafter(down(dp_), 0.0), np.nextafter(up(dp_), np.inf),
                np.nextafter(down(dq_), 0.0), np.nextafter(up(dq_), np.inf))


@functools.lru_cache(maxsize=8)
def _phi_at_cuts(sigma: float, t: int, cuts: tuple) -> tuple:
    """(Phi(c / sigma), Phi(c / sigma)^(t - 1)) at each cut, at _DPS digits: the part of the
    largest coordinate's law that every candidate pair and both of its laws share (cached:
    the same values whatever asked first; it was most of a samplers table's time)."""
    mp = _mpmath()
    with mp.workdps(_DPS):
        s = mp.mpf(sigma)
        base = [mp.ncdf(mp.mpf(c) / s) for c in cuts]
        return tuple((b, b ** (t - 1)) for b in base)


@functools.lru_cache(maxsize=8)
def _cdf_at_cuts(sigma: float, t: int, shift: float, rho: float, cuts: tuple) -> tuple:
    """F(c) = rho Phi(c/s)^t + (1 - rho) Phi((c - shift)/s) Phi(c/s)^(t-1) at each cut, at
    _DPS digits: the law of the largest coordinate (module docstring) of one side of a pair
    (cached: the two substitution candidates share their P side)."""
    mp = _mpmath()
    with mp.workdps(_DPS):
        s, r = mp.mpf(sigma), mp.mpf(rho)
        out = []
        for c, (base, head) in zip(cuts, _phi_at_cuts(sigma, t, cuts)):
            spike = base if shift == 0 else mp.ncdf((mp.mpf(c) - shift) / s)
            out.append(r * head * base + (1 - r) * spike * head)
        return tuple(out)


def _hockey_lower(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """sum_j (p_j - e^eps q_j)_+ rounded down, for lower masses p and upper masses q."""
    e = np.exp(eps) * (1 + 4 * _U)
    terms = np.maximum(p[None, :] - e[:, None] * q[None, :] * (1 + 4 * _U), 0.0)
    total = terms.sum(axis=1)
    # each difference p_j - x_j is rounded by at most u p_j (absolute: sum_j p_j <= 1 + ...),
    # and the sum of n nonnegative terms by n u relative
    return np.maximum(total * (1 - (p.size + 4) * _U) - 4 * _U * (1 + float(p.sum())), 0.0)


def _conv_power(x: np.ndarray, e: int) -> tuple[np.ndarray, float]:
    """x^{*e} by binary powering with direct convolutions, and a relative error bound: a
    direct convolution of nonnegative vectors of lengths l1, l2 adds at most
    (min(l1, l2) + 1) u to the sum of the inputs' relative errors."""
    result, r_err = None, 0.0
    cur, c_err = x, 0.0
    while True:
        if e & 1:
            if result is None:
                result, r_err = cur, c_err
            else:
                r_err = r_err + c_err + (min(result.size, cur.size) + 1) * _U
                result = np.convolve(result, cur)
        e >>= 1
        if not e:
            break
        c_err = 2 * c_err + (cur.size + 1) * _U
        cur = np.convolve(cur, cur)
    assert result is not None                     # e >= 1
    return result, r_err


def _composed(p, q, epochs: int, h: float):
    """Laws (lower, upper) of the sum over epochs of floor(loss / h) of each epoch's cell."""
    with np.errstate(divide="ignore"):
        loss = np.log(np.maximum(p, 1e-320)) - np.log(q)
    # cells of negligible mass under both laws are merged into the extreme bins (any merge is a
    # post-processing), so that the grid spans only the losses that carry mass
    heavy = (p > 1e-30) | (q > 1e-30)
    lo, hi = float(loss[heavy].min()), float(loss[heavy].max())
    # at most _MAX_LEN entries in the composed laws: a coarser step is still a lower bound
    h = max(h, (hi - lo) * epochs / _MAX_LEN)
    idx = np.floor((np.clip(loss, lo, hi) - lo) / h).astype(np.int64)
    size = int(idx.max()) + 1
    pb = np.bincount(idx, weights=p, minlength=size) * (1 - (p.size + 2) * _U)
    qb = np.bincount(idx, weights=q, minlength=size) * (1 + (q.size + 2) * _U)
    pe, pr = _conv_power(pb, epochs)
    qe, qr = _conv_power(qb, epochs)
    # an entry of a convolution may underflow towards 0 from a positive value: the upper law
    # gets an absolute allowance far below any delta of interest
    return pe * max(1 - pr, 0.0), qe * (1 + qr) + 1e-300


class _LowerPair:
    """The post-processed pair of one candidate, composed over the epochs (both orders)."""

    def __init__(self, sigma, t, epochs, u, v, rho, n_cells, h):
        p_lo, p_hi, q_lo, q_hi = _cells(sigma, t, u, v, rho, n_cells)
        self.args = (sigma, t, u, v, rho)
        self.epochs = epochs
        self.cuts = _cut_points(sigma, t, u, v, n_cells)
        self.cdfs = (np.cumsum(p_lo), np.cumsum(q_hi))      # at the cuts (search only)
        # both orders of the pair: H(P || Q) with P's masses down and Q's up, and H(Q || P)
        if epochs == 1:
            self.laws = [(p_lo, q_hi), (q_lo, p_hi)]
        else:
            self.laws = [_composed(p_lo, q_hi, epochs, h), _composed(q_lo, p_hi, epochs, h)]

    def delta(self, eps: np.ndarray) -> np.ndarray:
        cells = np.maximum.reduce([_hockey_lower(a, b, eps) for a, b in self.laws])
        if self.epochs > 1:
            return cells
        # the cells dominate the cube tests whose threshold is a cut point; the best threshold
        # of all, found by search and evaluated exactly, is a test of its own (CGK24's cube test
        # at its optimum): the bound is at least every single cube test
        cube = np.array([_best_cube(self, float(e)) for e in np.ravel(eps)])
        return np.maximum(cells, cube.reshape(np.shape(cells)))


def _cut_points(sigma, t, u, v, n_cells):
    """The cut points of :func:`_cells`: from where Phi(lo / sigma)^t = e^-120 (the cell below
    is nearly empty under both laws) to 12 sigma above the shifts."""
    mp = _mpmath()
    with mp.workdps(_DPS):
        z = mp.sqrt(2) * mp.erfinv(2 * mp.exp(-mp.mpf(120) / t) - 1)
    lo = min(u, v, 0.0) + sigma * float(z)
    return np.linspace(lo, max(u, v, 0.0) + 12.0 * sigma, n_cells + 1)


def _best_cube(pair: _LowerPair, eps: float) -> float:
    """max over thresholds C of the cube tests A(C) - e^eps B(C), for A, B the laws of the
    largest coordinate under the pair's two distributions (either order) of {max <= C} or
    {max > C}, rounded down: the best cut point first (float cell sums), then a golden-section
    search on its two neighbouring cells, in floats (only where the search ends depends on
    them); the value is exact (60 digits, mpmath) at whatever C the search ends, so a lower
    bound whether or not that C is the optimum."""
    mp = _mpmath()
    sigma, t, u, v, rho = pair.args
    cp, cq = pair.cdfs
    cuts = pair.cuts
    best = 0.0
    with mp.workdps(_DPS):
        s, r, x = mp.mpf(sigma), mp.mpf(rho), mp.e ** mp.mpf(eps)

        def cdf(c, shift):
            base = mp.ncdf(c / s)
            return r * base ** t + (1 - r) * mp.ncdf((c - shift) / s) * base ** (t - 1)
        for a_shift, b_shift, (fa, fb) in ((u, v, (cp, cq)), (v, u, (cq, cp))):
            for upper_set in (False, True):
                A = 1 - fa[:cuts.size] if upper_set else fa[:cuts.size]
                B = 1 - fb[:cuts.size] if upper_set else fb[:cuts.size]
                k = int(np.argmax(A - math.exp(min(eps, 700.0)) * B))
                lo, hi = cuts[max(k - 1, 0)], cuts[min(k + 1, cuts.size - 1)]

                def g(c):
                    c = mp.mpf(c)
                    pa, pb = cdf(c, a_shift), cdf(c, b_shift)
                    return (1 - pa) - x * (1 - pb) if upper_set else pa - x * pb
                c = _golden_max(_float_test(sigma, t, rho, a_shift, b_shift, eps, upper_set),
                                lo, hi)
                best = max(best, float(g(c) - 4 * _ABS))
    return float(np.nextafter(best, 0.0)) if best > 0 else 0.0


def _float_test(sigma, t, rho, a_shift, b_shift, eps, upper_set):
    """The cube test of :func:`_best_cube` as a float function of the threshold C, for the
    search only (its value is never reported): math.erfc's Phi, ~1e-16 absolute, far finer
    than the tests' values at the deltas searched (a 60-digit search took seconds per
    epsilon of a bisection)."""
    x = math.exp(min(eps, 700.0))

    def phi(z):
        return 0.5 * math.erfc(-z / math.sqrt(2.0))

    def cdf(c, shift):
        base = phi(c / sigma)
        head = base ** (t - 1)
        return rho * head * base + (1 - rho) * phi((c - shift) / sigma) * head

    def g(c):
        pa, pb = cdf(c, a_shift), cdf(c, b_shift)
        return (1 - pa) - x * (1 - pb) if upper_set else pa - x * pb
    return g


def _golden_max(g, lo: float, hi: float, rounds: int = 48) -> float:
    """A point of [lo, hi] near the maximum of g (unimodal there): golden-section search."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    gc, gd = g(c), g(d)
    for _ in range(rounds):
        if gc >= gd:
            b, d, gd = d, c, gc
            c = b - ratio * (b - a)
            gc = g(c)
        else:
            a, c, gc = c, d, gd
            d = a + ratio * (b - a)
            gd = g(d)
    return c if gc >= gd else d


def _check(sigma, steps_per_epoch, epochs, relation):
    sigma = V.positive("sigma", sigma)
    t = V.integer("steps_per_epoch", steps_per_epoch, low=1)
    e = V.integer("epochs", epochs, low=1, high=10 ** 6)
    return sigma, t, e, as_relation(relation)


def _lower_pairs(sigma, t, epochs, relation, batch_size, dataset_size, reshuffle,
                 n_cells, h):
    pairs = _pairs(relation, t, batch_size, dataset_size)
    if pairs is None:
        return None
    if not reshuffle:
        # one permutation for all epochs: summing each step's E outputs is a post-processing
        # that leaves one epoch with noise sigma / sqrt(E) (per unit of contribution)
        sigma, epochs = sigma / math.sqrt(epochs), 1
    return [_LowerPair(sigma, t, epochs, u, v, rho, n_cells, h) for u, v, rho in pairs]


def shuffle_lower_delta(sigma, steps_per_epoch, epochs, epsilon, relation="substitution", *,
                        batch_size=None, dataset_size=None, reshuffle=True, n_cells=1000,
                        loss_step=None):
    """A proven LOWER bound on delta(epsilon) of ``epochs`` epochs of shuffled fixed-size
    batches (ABLQ_S, CGK24) of the Gaussian with noise multiplier ``sigma`` and
    ``steps_per_epoch`` batches per epoch, under ``relation`` (module docstring: substitution;
    add/remove needs ``batch_size`` and ``dataset_size``, and returns 1 when b divides n or
    n + 1).
    Vectorised over ``epsilon``. ``n_cells`` / ``loss_step`` set the resolution of the
    post-processing (any value gives a proven lower bound; finer is tighter and slower)."""
    sigma, t, epochs, relation = _check(sigma, steps_per_epoch, epochs, relation)
    eps = V.real_array("epsilon", epsilon)
    if (eps < 0).any() or np.isnan(eps).any():
        raise ValueError("epsilon must be >= 0")
    n_cells = V.integer("n_cells", n_cells, low=10, high=10 ** 5)
    h = 2e-3 if loss_step is None else V.positive("loss_step", loss_step)
    pairs = _lower_pairs(sigma, t, epochs, relation, batch_size, dataset_size, reshuffle,
                         n_cells, h)
    flat = eps.ravel()
    if pairs is None:
        out = np.ones(flat.shape)
    else:
        out = np.maximum.reduce([pr.delta(flat) for pr in pairs])
    out = np.minimum(out, 1.0)
    return out.reshape(eps.shape) if eps.ndim else float(out[0])


def shuffle_lower_epsilon(sigma, steps_per_epoch, epochs, delta, relation="substitution", *,
                          batch_size=None, dataset_size=None, reshuffle=True, n_cells=1000,
                          loss_step=None):
    """A proven LOWER bound on the smallest epsilon with (epsilon, delta)-DP for ABLQ_S (see
    :func:`shuffle_lower_delta`): the largest epsilon found by bisection at which the lower
    delta still exceeds ``delta`` (0 when none does; inf when the outputs differ in length)."""
    sigma, t, epochs, relation = _check(sigma, steps_per_epoch, epochs, relation)
    delta = V.delta(delta)
    n_cells = V.integer("n_cells", n_cells, low=10, high=10 ** 5)
    h = 2e-3 if loss_step is None else V.positive("loss_step", loss_step)
    pairs = _lower_pairs(sigma, t, epochs, relation, batch_size, dataset_size, reshuffle,
                         n_cells, h)
    if pairs is None:
        return math.inf
    f = lambda e: max(float(pr.delta(np.array([e]))[0]) for pr in pairs)
    lo, _ = _crossing(f, delta, cap=1e4, rtol=1e-6, rounds=60)
    return lo  # f(lo) > delta (or lo = 0): the true epsilon(delta) is at least lo


def _crossing(f, delta, cap, rtol, rounds):
    """(lo, hi) around the epsilon where the non-increasing delta(epsilon) ``f`` falls to
    ``delta``: f(lo) > delta or lo = 0, f(hi) <= delta (hi = 0 when f(0) <= delta; hi = inf
    when f stays above delta up to ``cap``, lo the last point tried), bisected to relative
    ``rtol`` in at most ``rounds`` steps. The lower bound keeps lo, the upper bound hi."""
    if f(0.0) <= delta:
        return 0.0, 0.0
    below = lambda e: not f(e) > delta
    lo, hi = roots.expand(below, 0.0, 1.0, limit=cap)
    if hi > cap:
        return lo, math.inf
    # (the width is tested before each step; the bracket found, (0, 1) or (e, 2 e), is wider
    # than rtol hi for rtol < 1/2, so at least one step is always taken)
    return roots.bisect(below, lo, hi, iterations=rounds, rtol=rtol)


def _upper_mu(sigma, epochs):
    return 2.0 * math.sqrt(epochs) / sigma


def shuffle_upper_delta(sigma, epochs, epsilon, relation="substitution", *, batch_size=None,
                        dataset_size=None):
    """A proven UPPER bound on delta(epsilon) of ``epochs`` epochs of shuffled fixed-size
    batches with noise multiplier ``sigma``, under substitution or add/remove (which needs
    ``batch_size`` and ``dataset_size``: 1 when b divides n or n + 1, a neighbour's outputs
    then differing in length): the Gaussian mechanism with mu = 2 sqrt(epochs) / sigma
    (module docstring: no amplification is proven), Balle et al. 2018, Thm 4, rounded up.
    Vectorised."""
    from ...profiles.closed_forms import gaussian_log_profile
    sigma = V.positive("sigma", sigma)
    epochs = V.integer("epochs", epochs, low=1, high=10 ** 6)
    relation = as_relation(relation)
    eps = V.real_array("epsilon", epsilon)
    if (eps < 0).any() or np.isnan(eps).any():
        raise ValueError("epsilon must be >= 0")
    if relation is Relation.ADD_REMOVE or batch_size is not None or dataset_size is not None:
        b = V.integer("batch_size", batch_size, low=1)
        n = V.integer("dataset_size", dataset_size, low=b)
        if relation is Relation.ADD_REMOVE and _length_differs(b, n):
            return np.ones(eps.shape) if eps.ndim else 1.0
    out = np.minimum(np.exp(gaussian_log_profile(_upper_mu(sigma, epochs), eps, upper=True))
                     * (1 + 4 * _U), 1.0)
    return out if eps.ndim else float(out)


def shuffle_upper_epsilon(sigma, epochs, delta, relation="substitution", *, batch_size=None,
                          dataset_size=None):
    """A proven UPPER bound on epsilon(delta) for shuffled fixed-size batches (see
    :func:`shuffle_upper_delta`): bisection keeping the end whose upper delta is <= delta."""
    delta = V.delta(delta)
    f = lambda e: float(shuffle_upper_delta(sigma, epochs, np.array([e]), relation,
                                            batch_size=batch_size,
                                            dataset_size=dataset_size)[0])
    _, hi = _crossing(f, delta, cap=1e6, rtol=1e-9, rounds=200)
    return hi  # f(hi) <= delta: an epsilon the mechanism meets (inf beyond the cap)


def check_batches(scheme) -> None:
    """Under add/remove, a ValueError unless both neighbours of the ``dp.Shuffled`` scheme's
    dataset (n - 1 and n + 1 records) give its number of batches n // b."""
    from ...core.relations import ADD_REMOVE
    if scheme.relation is ADD_REMOVE and _length_differs(scheme.batch_size, scheme.dataset_size):
        b, n = scheme.batch_size, scheme.dataset_size
        raise ValueError(
            f"{scheme!r} under add/remove: with batch size {b} and {n} records, removing or "
            "adding a record changes the number of batches per epoch, which every output "
            "reveals, so no finite guarantee holds; state the plan under substitution "
            "(relation=dp.SUBSTITUTION: the dataset size is public), the usual relation for "
            "shuffled batches")


def dominating_step(base, scheme):
    """One run of a mechanism that dominates one epoch of ``base`` on shuffled fixed-size
    batches (``dp.Shuffled``), by the upper-bound argument of the module docstring: the
    differing record changes one step, by a substitution, so the epoch is at most one run of
    ``base`` on a pair of substitution neighbours (no amplification).

    * ``scheme.relation`` substitution: ``base`` itself (stated under substitution, its
      sensitivity is the substitution sensitivity: 2 for a clipped sum).
    * add/remove (when both neighbours give the same number of batches, i.e. b divides neither
      n nor n + 1): one substitution is one removal and one addition, so ``base`` with its
      sensitivity doubled (Gaussian, Laplace: triangle inequality) or, for a pure-DP base, 2 eps0
      (group privacy of two records). When b divides n or n + 1, removing or adding a record
      changes the number of steps, which the output reveals: no finite guarantee (a ValueError
      that says so).
    """
    import dataclasses as _dc

    from ...core.relations import ADD_REMOVE
    from ...mechanisms.randomized_response import PureDP
    if scheme.relation is not ADD_REMOVE:
        return base
    check_batches(scheme)
    # (base is a mechanism, never a class: the isinstance test only narrows is_dataclass's type)
    if _dc.is_dataclass(base) and not isinstance(base, type) and hasattr(base, "sensitivity"):
        return _dc.replace(base, sensitivity=2 * base.sensitivity)
    pure = base.pure_epsilon()
    if math.isfinite(pure):     # a pure eps-DP step is 2 eps-DP for a group of two
        from ...core.rounding import weighted_sum_up
        return PureDP(weighted_sum_up([(2, pure)]))
    raise NotImplementedError(f"{base!r} on shuffled batches under add/remove: only bases with "
                              "a sensitivity (Gaussian, Laplace, discrete Laplace) and pure-DP "
                              "bases have a substitution bound here; use the substitution "
                              "relation")
