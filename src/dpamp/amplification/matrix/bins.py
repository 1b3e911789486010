"""Conditional composition for balls in bins (``dp.BallsInBins(bins)``: epochs of B steps, a
record joins exactly one uniformly drawn step of each epoch; Choquette-Choo, Ganesh, Haque,
Steinke & Thakurta, ICLR 2025, for the sampling scheme; the bound is the conditional composition
of :mod:`.conditional` with the posterior of :mod:`.tails` adapted here).

What changes from Poisson sampling:

- the current step i (position r of its epoch) is no longer independent of the past: it is
  taken with probability 1 / (B - r) if the record's step of the epoch has not passed, else
  never, and theta_{<i} depends on x_{<i} only, so
  Pr[x_A = 1 | theta_{<i}] <= Pr[x_{A - i} = 1 | theta_{<i}] / (B - r) for A containing i
  (no event). S_i's law is bounded through sets A of the window's steps and step i together;
  for past sets Pr[x_A = 1 | theta_{<i}] = pi_A R_A with pi_A = B^-|A| when A's steps lie in
  distinct epochs, 0 otherwise (no event, no budget);
- the pair (P_A, P_y) (the record at A's steps in the epochs A touches, against any other
  placement y in those epochs; the other epochs drawn alike on both sides, independent) is, for
  each y, an adaptive composition of Gaussian steps whose means differ at output t < i by at
  most sum_{j in A} (|C[t, j]| + max_{k in j's epoch, k < i, k != j} |C[t, k]|): the record
  leaves step j for some k of the same epoch, visible only if k < i. Its norm over t < i,
  divided by sigma, is mu_A (a bound for every y, elementwise), and the tail bound of
  :mod:`.tails` holds with q^|A| replaced by pi_A;
- steps older than the window count as taken part at their epoch's largest |C[i, k]| (one step
  per epoch).

n must be a multiple of B (a cut last epoch has no agreed law).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from ...core.rounding import ulps_up
from .conditional import WINDOW, StepMixtures, check_lower_triangular
from .steps import dominating_law, merge, set_budgets, subsets
from .tails import posterior_exponents

__all__ = ["dominating_steps_bins"]

_REL = 1e-12


def _older(row: np.ndarray, older: np.ndarray, bins: int) -> float:
    """sum over epochs of the largest |C[i, k]| of the epoch's older steps, rounded up."""
    if not older.size:
        return 0.0
    ep = older // bins
    tops = [float(row[older[ep == e]].max()) for e in np.unique(ep)]
    return float(ulps_up(math.fsum(tops), 4))


def _set_norms(a: np.ndarray, i: int, win: np.ndarray, bins: int,
               bits: np.ndarray) -> np.ndarray:
    """sigma mu_A for each pattern (row of ``bits``) of the window's steps: with c_k = |C[:i, k]|,
    a = sum_{j in A} c_j and y_e the record's other step of epoch e (or none before i),
    |a + sum_e c_{y_e}|^2 = |a|^2 + 2 sum_e <a, c_{y_e}> + sum_e |c_{y_e}|^2
    + 2 sum_{e < e'} <c_{y_e}, c_{y_e'}>, every term non-negative and bounded by its largest
    value over the candidates (steps k < i of epoch e other than A's), from the Gram matrix."""
    eps_of = win // bins
    cols = np.array(sorted({k for e in set(eps_of.tolist())
                            for k in range(e * bins, min((e + 1) * bins, i))}), dtype=int)
    pos = {int(k): t for t, k in enumerate(cols.tolist())}
    block = a[:i, cols]
    g = block.T @ block
    out = np.zeros(bits.shape[0])
    for m, b in enumerate(bits):
        if not b.any():
            continue
        ai = [pos[int(j)] for j in win[b > 0]]
        eps = [int(e) for e in eps_of[b > 0]]
        if len(set(eps)) < len(eps):          # two steps of one epoch: impossible, unused
            continue
        cand = [[pos[int(k)] for k in cols if int(k) // bins == e and pos[int(k)] != j]
                for e, j in zip(eps, ai)]
        total = g[np.ix_(ai, ai)].sum()
        for c in cand:
            if c:
                total += 2 * g[np.ix_(ai, c)].sum(axis=0).max() + g[c, c].max()
        for x in range(len(cand)):
            for y in range(x + 1, len(cand)):
                if cand[x] and cand[y]:
                    total += 2 * g[np.ix_(cand[x], cand[y])].max()
        out[m] = math.sqrt(total)
    return out * (1 + _REL)


def _step(a: np.ndarray, i: int, win: np.ndarray, older: float, bins: int, sigma: float,
          log_beta: float) -> tuple[np.ndarray, np.ndarray]:
    """One step's dominating law: sets of the window and the current step (the current one's
    factor 1 / (B - r) needs no event, module docstring)."""
    coords = np.concatenate([win, [i]]).astype(int)
    w = coords.size
    bits = subsets(w)
    ep = coords // bins
    same = (ep[:, None] == ep[None, :]) & ~np.eye(w, dtype=bool)
    feasible = np.array([not (same[np.ix_(b > 0, b > 0)]).any() for b in bits])
    s = (bits @ a[i, coords]) * (1 + _REL)
    past = bits[:, -1] == 0                        # sets without the current step
    norms = _set_norms(a, i, win, bins, bits[past, :-1]) / sigma
    k = bits[past].sum(axis=1)
    need = feasible[past] & (k > 0)
    p_past = np.zeros(int(past.sum()))
    p_past[0] = 1.0                                # the empty set
    if need.any():
        q = 1.0 / bins
        eps = posterior_exponents(norms[need], k[need], q, set_budgets(k[need], log_beta))
        with np.errstate(over="ignore"):
            p_past[need] = np.minimum(np.exp(k[need] * math.log(q) + eps) * (1 + _REL), 1.0)
    # bit w-1 is the current step: mask m + 2^(w-1) is m with it
    now = min(ulps_up(1.0 / (bins - i % bins), 2), 1.0)
    p_sets = np.concatenate([p_past, np.minimum(p_past * now * (1 + _REL), 1.0)])
    p_sets = np.where(feasible, p_sets, 0.0)
    p_sets[0] = 0.0
    v, mass = dominating_law(s, p_sets, w)
    return merge(v + older, mass) if older else (v, mass)


def dominating_steps_bins(c, sigma: float, bins: int, delta_p: float,
                          window: int = WINDOW) -> StepMixtures:
    """Each step's dominating mixture under balls in bins (module docstring), the budget
    ``delta_p`` split equally over the steps, then over their feasible sets (by size)."""
    a = check_lower_triangular(c)
    n = a.shape[0]
    if int(bins) != bins or bins < 1 or n % bins:
        raise ValueError(f"bins must be an integer >= 1 dividing the {n} steps (got {bins!r})")
    if not (delta_p > 0):
        raise ValueError(f"delta_p must be positive (got {delta_p!r})")
    log_beta = math.log(delta_p) - math.log(n)
    counts: dict[tuple, int] = {}
    cache: dict[bytes, tuple] = {}
    events = 0
    for i in range(n):
        past = np.flatnonzero(a[i, :i])
        win, old = (past[-window:], past[:-window]) if window > 0 else (past[:0], past)
        older = _older(a[i], old, bins)
        lo = min([(int(j) // bins) * bins for j in win] + [(i // bins) * bins])
        # lo is an epoch start: the step seen from lo is the same step (C is lower triangular,
        # so rows before lo vanish on columns from lo on); equal views share one computation
        key = hashlib.blake2b(b"|".join([
            a[lo:i + 1, lo:i + 1].tobytes(), np.int64(i - lo).tobytes(),
            np.float64(older).tobytes(), np.asarray(win - lo, dtype=np.int64).tobytes()]),
            digest_size=32).digest()
        if key not in cache:
            v, m = _step(a[lo:, lo:], i - lo, win - lo, older, bins, sigma, log_beta)
            cache[key] = (tuple(float(x) for x in v), tuple(float(x) for x in m))
        counts[cache[key]] = counts.get(cache[key], 0) + 1
        events += (1 << (win.size + 1)) - 1
    return StepMixtures(tuple(counts.items()), float(delta_p), events, float(sigma))
