"""Noise splitting: an amplified upper bound of a matrix mechanism under Poisson, cyclic
Poisson or balls-in-bins participation, for any square lower-triangular C, as a plan of
independent steps (DP-SGD, or random allocation, at per-step sensitivities).

The argument (dpamp's own; it contains the cyclic-Poisson reduction of Choquette-Choo,
Ganesh, McKenna, McMahan, Rush, Thakurta & Xu, NeurIPS 2023, Thm 4, as the case where no row
of C reads two of a record's steps). Output t is theta_t = m_t + sum_{s <= t} C[t, s] x_s g_s
+ Z_t, Z_t ~ N(0, sigma^2 I), x_s in {0, 1} the record's participation, g_s (|g_s| <= 1) and
m_t chosen adaptively from theta_{<s}, theta_{<t}. Let E be the steps the record may enter
(its group's under cyclic Poisson) and, for each row t, R_t = sum_{s in E} |C[t, s]|. Split
the noise: Z_t = sum_{s in E, C[t, s] != 0} Z_t^s with independent Z_t^s ~
N(0, sigma^2 w_{t,s} I), w_{t,s} = |C[t, s]| / R_t (rows with R_t = 0 carry no record term).
Release, at step s in E, the block B_s = (C[t, s] x_s g_s + Z_t^s)_{t >= s}. Then

- theta_t = m_t + sum_s (B_s)_t: the original release is a post-processing of the blocks;
- every B_{s'} with s' < s is released before step s, so theta_{<s} (hence g_s) is a function
  of what the split mechanism has released before B_s: it simulates every adaptive adversary
  of the original;
- B_s given the past is x_s times a shift of norm^2 sum_t C[t, s]^2 / (sigma^2 w_{t,s}) =
  sum_t |C[t, s]| R_t / sigma^2 =: (Delta_s / sigma)^2 in whitened units, plus fresh noise; a
  shift of norm at most mu_s = Delta_s / sigma in any dimension is a post-processing of the
  scalar y_s ~ N(x_s mu_s, 1) (scaled into the shift's direction, independent noise added to
  make up the variance), the kernel chosen from the past. So the whole release is a
  post-processing of the non-adaptive y = (y_s)_{s in E}, x drawn by the schema, in both
  orders of neighbours.

The schemas. Poisson sampling (x_s independent Bernoulli(q)): y is the composition of
Poisson-subsampled Gaussians at mu_s. Cyclic Poisson: the same over each group's steps.
Balls in bins redrawn every epoch: per epoch random allocation (1 of the epoch's steps;
Feldman & Shenfeld 2025) of the Gaussian at the epoch's largest mu_s, composed over epochs.
b-min-separation sampling: given y_{<s}, the record is taken at step s with probability
p P(not taken in the last b - 1 steps | y_{<s}) <= p, so each step's conditional pair is the
Poisson-subsampled one at a rate at most p, a post-processing of the one at p (keep the output
with probability pi / p, else draw fresh N(0, 1)), and the adaptive composition of dominating
pairs gives the Poisson plan at rate p.
Fixed bins (one bin j for the whole run): random allocation (1 of ``bins``) of the bins' vectors
(y_s)_{s = j mod bins}, each a Gaussian of norm sqrt(sum mu_s^2) over its steps, at the largest
over the bins. The weights minimise sum_s Delta_s^2 (Cauchy-Schwarz, row by row):
sum_s Delta_s^2 = sum_t R_t^2 = |(|C|) 1_E|^2, the no-amplification sensitivity^2 of C >= 0
with every step taken, so at q = 1 the split loses nothing there.

Where the record's steps never share a row (at most one s in E with C[t, s] != 0 per t),
Delta_s = |C[:, s]| and this is the cyclic-Poisson reduction exactly.

Computed here, in units of the clipping norm:

- Delta_s exactly per step from |C|: a Toeplitz C from its coefficients (two convolutions per
  group, O(p n L) for L coefficients), any other square lower-triangular C from the dense
  array (O(n^2)); under cyclic Poisson the position-by-position largest over the groups of
  their sorted values (it dominates every group, as ``MatrixMechanism.group_mus``); at most
  MAX_LEVELS distinct values (moved up: each is one PLD part);
- a Toeplitz C beyond MAX_TOEPLITZ_WORK: R_t <= S_{(t - g) mod p} with
  S_r = sum_j |c_{r + j p}| (p the groups, 1 for Poisson and balls in bins; g the group), so
  Delta_s^2 <= sum_k |c_k| S_{k mod p} = sum_r S_r^2 for every step: one value, O(n).

Rounding: sums of non-negative terms are padded by their gamma bound (Higham 2002, Sec. 3.1).
A BLT's computed coefficients c~ (l2 error e): Delta_s is not Lipschitz in the coefficients
with a constant of order sqrt(n) (its gradient carries R_{s+k} / Delta_s, large for a late
step with a small column reading heavy rows), so the squares are padded instead. With
B(x, y) = sum_k x_k R_{s+k}(y) (Delta_s^2 = B(|c|, |c|), bilinear and monotone on x, y >= 0)
and R_t(y) <= S_{(t - g) mod p}(y), B(x, y) <= <S(x), pi S(y)> <= |S(x)| |S(y)| (pi a cyclic
shift); |c| <= |c~| + |err| entrywise and |S(|err|)| <= sqrt(ceil(n / p)) e =: k, so
Delta_s^2 <= Delta~_s^2 + 2 U~ k + k^2, U~ = |S(|c~|)| the uniform bound of the computed
coefficients. For the uniform bound itself this is (U~ + k)^2: the triangle inequality.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.rounding import onto_levels, ulps_up
from .matrix_strategies import DenseStrategy, Strategy
from .participation import (BallsInBins, CyclicPoisson, FixedBins, MinSepSampling,
                            Participation)

__all__ = ["SplitPlan", "split_plan", "step_deltas", "MAX_LEVELS"]

_U = 2.0 ** -53
#: distinct per-step sensitivities kept (each is one PLD part)
MAX_LEVELS = 8


@dataclasses.dataclass(frozen=True)
class SplitPlan:
    """The split's steps: ``parts`` = ((Delta, epoch, count), ...), Delta a step's sensitivity
    in clipping-norm units; ``epoch`` 0 for a Poisson-sampled step (rate ``rate``), else the
    epoch's length under balls in bins (random allocation of one of its steps)."""

    parts: tuple[tuple[float, int, int], ...]
    rate: float = 1.0
    #: sum over steps (epochs) of Delta^2 before the values were moved up onto MAX_LEVELS
    #: levels (the split's own total, which the levels exceed by a little)
    raw_sq: float = math.inf

    @property
    def total_sq(self) -> float:
        """sum over steps (epochs) of Delta^2, rounded up: at most this, the plan is
        dominated by the Gaussian mechanism at sqrt(total_sq) (every step is)."""
        return float(ulps_up(math.fsum(d * d * k for d, _, k in self.parts), 4))


#: the most multiply-adds (groups x n x coefficients) of the exact per-step split of a
#: Toeplitz C; beyond, every step takes the uniform bound
MAX_TOEPLITZ_WORK = 1 << 27


def _coefficients(strategy: Strategy) -> np.ndarray:
    """|c_0| .. |c_L-1| of a Toeplitz C, trailing zeros dropped."""
    a = np.abs(np.asarray(strategy.toeplitz(), dtype=float))
    nz = np.flatnonzero(a)
    return a[:int(nz[-1]) + 1] if nz.size else a[:1]


def _pad(d: np.ndarray, terms: int, steps: int, coeff_error: float,
         top: float = 0.0, reads=True) -> np.ndarray:
    """sqrt of squared sensitivities ``d`` computed as sums of ``terms`` non-negative products
    of sums of as many, rounded up; a computed C's coefficient error (l2 ``coeff_error``)
    adds 2 top k + k^2 to each square, k = sqrt(steps) coeff_error and ``top`` >= the
    uniform bound |S(|c~|)| of the computed coefficients (module docstring). A product that
    underflows is off by up to 2^-1075 whatever its size, which no relative bound covers:
    every square of a step whose column is not 0 (``reads``) gains terms 2^-1074 first, so a
    step of entries far below the largest is never dropped as Delta_s = 0."""
    d = (d + np.where(reads, terms * 2.0 ** -1074, 0.0)) * (1 + (2 * terms + 8) * 2 * _U)
    if coeff_error > 0:
        k = math.sqrt(steps) * coeff_error * (1 + 1e-12)
        d = (d + (2 * top + k) * k * (1 + 4 * _U)) * (1 + 2 * _U)
    return np.asarray(ulps_up(np.sqrt(d) * (1 + 4 * _U), 4), dtype=float)


def _uniform_sq(a: np.ndarray, period: int) -> float:
    """sum_r S_r^2, S_r = sum_j a_{r + j p}, as computed (unpadded)."""
    m = -(-a.size // period)
    pad = np.zeros(m * period)
    pad[:a.size] = a
    s = pad.reshape(m, period).sum(axis=0)
    return float(np.sum(s * s))


def _toeplitz_uniform(strategy: Strategy, n: int, period: int) -> float:
    """sqrt(sum_r S_r^2), S_r = sum_j |c_{r + j p}|: a bound on every step's Delta."""
    c = _coefficients(strategy)
    u2 = _uniform_sq(c, period)
    top = float(_pad(np.array([u2]), c.size, 1, 0.0)[0])
    return float(_pad(np.array([u2]), c.size, -(-n // period), strategy.coeff_error, top)[0])


def _toeplitz_group(a: np.ndarray, n: int, steps: np.ndarray, coeff_error: float,
                    period: int, top: float) -> np.ndarray:
    """Delta_s of a Toeplitz C with coefficients ``a`` = |c| for one group's steps: R the
    group's row sums (a convolution), Delta_s^2 = sum_k a_k R_{s+k}; ``top`` >= the uniform
    bound of ``a`` (for the coefficient error's pad)."""
    e = np.zeros(n)
    e[steps] = 1.0
    r = np.convolve(a, e)[:n]
    d2 = np.convolve(r[::-1], a)[:n][::-1][steps]
    # step s's column holds a_0 .. a_{n-1-s}: not 0 where one of them is not
    reads = (n - steps) > int(np.flatnonzero(a)[0]) if a.any() else False
    return _pad(d2, a.size, -(-n // period), coeff_error, top, reads)


def _dense_group(c: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Delta_s for one group's steps: sqrt(sum_t |C[t, s]| R_t), rounded up."""
    a = np.abs(c[:, steps])
    r = a.sum(axis=1)
    return _pad((a * r[:, None]).sum(axis=0), c.shape[0], 1, 0.0, reads=a.any(axis=0))


def _per_group(strategy: Strategy, n: int, period: int) -> list[np.ndarray]:
    """Delta_s of each group's steps (steps g, g + p, ...; one group of every step for p 1):
    exact from |C| (a Toeplitz C from its coefficients while the work allows), else the
    uniform bound for every step."""
    idx = np.arange(n)
    groups = [idx[idx % period == g] for g in range(min(period, n))]
    if strategy.toeplitz() is not None and not isinstance(strategy, DenseStrategy):
        a = _coefficients(strategy)
        if len(groups) * n * a.size > MAX_TOEPLITZ_WORK:
            top = _toeplitz_uniform(strategy, n, period)
            return [np.full(g.size, top) for g in groups]
        top = float(_pad(np.array([_uniform_sq(a, period)]), a.size, 1, 0.0)[0])
        return [_toeplitz_group(a, n, g, strategy.coeff_error, period, top) for g in groups]
    c = strategy.dense()
    return [_dense_group(c, g) for g in groups]


def step_deltas(strategy: Strategy) -> np.ndarray:
    """Delta_s of every step in step order (every step a possible one), rounded up."""
    return _per_group(strategy, strategy.n, 1)[0]


def _group_deltas(strategy: Strategy, n: int, period: int) -> np.ndarray:
    """Largest first: at each position the largest over the groups of their sorted Delta_s,
    which dominates every group."""
    rows = np.zeros((min(period, n), -(-n // period)))
    for g, d in enumerate(_per_group(strategy, n, period)):
        rows[g, :d.size] = -np.sort(-d)
    return rows.max(axis=0)


def split_plan(strategy: Strategy, participation: Participation) -> SplitPlan | None:
    """The split of ``strategy`` under ``participation`` (module docstring), or None where it
    does not apply (no sampling, or C not square lower triangular)."""
    if not strategy.square_lower:
        return None
    n = strategy.n
    if isinstance(participation, (CyclicPoisson, MinSepSampling)):
        period = getattr(participation, "partitions", 1)
        raw = _group_deltas(strategy, n, period)
        deltas = onto_levels(raw, MAX_LEVELS, True)
        vals, counts = np.unique(deltas[deltas > 0], return_counts=True)
        return SplitPlan(tuple((float(v), 0, int(k)) for v, k in zip(vals[::-1], counts[::-1])),
                         participation.sampling_prob, _sum_sq(raw))
    if isinstance(participation, BallsInBins):
        return _bins_plan(strategy, n, participation.bins)
    if isinstance(participation, FixedBins):
        return _fixed_bins_plan(strategy, n, participation.bins)
    return None


def _fixed_bins_plan(strategy: Strategy, n: int, bins: int) -> SplitPlan:
    """One draw of a bin for the whole run: random allocation (1 of ``bins``) of the bins'
    blocks, bin j's a Gaussian of sensitivity sqrt(sum_{s = j mod bins} Delta_s^2) (its steps'
    blocks together), at the largest over the bins (every step a possible one: E is every
    step)."""
    per_step = _per_group(strategy, n, 1)[0]
    m = -(-n // bins)
    pad = np.zeros(m * bins)
    pad[:n] = per_step * per_step
    # (each square off by at most 2^-1075 where it underflows: m of them per bin)
    sums = (pad.reshape(m, bins).sum(axis=0) + m * 2.0 ** -1074) * (1 + (m + 2) * 2 * _U)
    top = float(ulps_up(math.sqrt(float(sums.max())) * (1 + 4 * _U), 4))
    return SplitPlan(((top, bins, 1),), raw_sq=float(ulps_up(top * top, 2)))


def _bins_plan(strategy: Strategy, n: int, bins: int) -> SplitPlan:
    """Epochs of ``bins`` steps (a shorter last one of its own steps), each at its largest
    Delta_s (every step a possible one: E is every step)."""
    per_step = _per_group(strategy, n, 1)[0]
    starts = np.arange(0, n, bins)
    raw = np.maximum.reduceat(per_step, starts)
    tops = onto_levels(raw, MAX_LEVELS, True)
    lengths = np.minimum(starts + bins, n) - starts
    out: dict[tuple[float, int], int] = {}
    for d, length in zip(tops.tolist(), lengths.tolist()):
        if d > 0:
            out[(d, length)] = out.get((d, length), 0) + 1
    return SplitPlan(tuple((d, length, k) for (d, length), k in
                           sorted(out.items(), key=lambda kv: (-kv[0][0], -kv[0][1]))),
                     raw_sq=_sum_sq(raw))


def _sum_sq(values: np.ndarray) -> float:
    return float(ulps_up(math.fsum(float(v) * float(v) for v in values), 4))
