"""The exact privacy loss of a sampled matrix mechanism's fixed-direction pair, by forward
recursions over the participation patterns (the Monte Carlo check's inner loop).

The pair. A record whose clipped gradient has norm 1 in one fixed direction, in every step it
enters, moves C G by C B (B in {0, 1}^n its participation pattern; the other directions of
the noise do not depend on the record and drop out). With the record, the release has law
P = E_B N(C B, s^2 I); without it, Q = N(0, s^2 I) (s the noise multiplier). This is an actual
pair of add/remove neighbours (non-adaptive gradients), the pair the amplified matrix
mechanism analyses bound (Choquette-Choo, Ganesh, Steinke & Thakurta, "Privacy amplification
for matrix mechanisms", ICLR 2024; Choquette-Choo, Ganesh, Haque, Steinke & Thakurta, "Near
exact privacy amplification for matrix mechanisms", ICLR 2025).

More generally, for a scale a and a pattern law (rates r or balls in bins), the proposals of
the importance sampler R_a = E_B N(a C B, s^2 I) have

    Lambda(y) = log dR_a/dQ(y) = log E_B exp(sum_t B_t h_t - sum_{u<t} B_u B_t J[u, t]),
    h_t = a (C^T y)_t / s^2 - a^2 X[t, t] / (2 s^2),   J = a^2 X / s^2,   X = C^T C,

(P is a = 1 with the mechanism's law). When X[u, t] = 0 for |u - t| > w (C with w + 1 bands
gives w), the sum over 2^n patterns is a hidden-Markov forward recursion:

- independent rates r_t (Poisson, cyclic Poisson): the state is the last w bits, 2^w states,
  O(n 2^w) per sample (w = 0: Lambda = sum_t log(1 - r_t + r_t e^{h_t}));
- balls in bins (one step per epoch, uniform in the epoch): the state is the drawn steps of
  the last m = ceil(w / bins) epochs (a step interacts with no earlier one), bins^m states,
  O(n bins^m) per sample (m = 1 when w <= bins);
- b-min-separation sampling (B_t = 1 with probability p when B_{t-1} = ... = B_{t-b+1} = 0,
  else 0; a Markov chain, its first state cold or stationary): the state is the last
  W = max(w, b - 1) bits, only the patterns with ones b apart (b states when b >= w + 1,
  where no two participations interact);
- fixed bins (one bin j of ``bins`` drawn once, B = x_j the indicator of steps j, j + bins,
  ...): a finite mixture, no recursion and no bandwidth limit,
  Lambda = log (1/bins) sum_j exp(sum_{t in j} h_t - sum_{u<t in j} J[u, t]); the in-bin
  interactions once from J, the bins' sums of h in O(n) per sample.

The recursions run in linear scale with a per-sample log offset, renormalised every step (exact up to
rounding: each step's factors are shifted so the largest is 1, and entries below 2^-1022 of the
largest state are negligible at double precision). Under min-separation they are not always:
a state that cannot take the next step (it just took one) may outweigh by e^700 one that can,
and a large h_{t+1} reverses that; there the samples where a reachable state nears underflow
are redone in log space. Vectorised over samples (rows of H).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

__all__ = ["gram_bandwidth", "log_ratio_rates", "log_ratio_bins", "log_ratio_fixed_bins",
           "bin_sums", "in_bin_interactions", "epochs_of", "log_ratio_minsep",
           "MAX_STATE_BITS"]

#: the largest w the rate recursion takes (2^w states per sample)
MAX_STATE_BITS = 12
#: the largest spread of one step's interaction exponents the linear-scale recursion takes
#: (e^-600 > 2^-1022: the best state's contribution never underflows)
_MAX_SPREAD = 600.0


def _off_diagonal(j) -> sp.csr_matrix:
    """J without its diagonal, sparse, explicit zeros dropped (dense or sparse input)."""
    jo = sp.csr_matrix(j, dtype=float, copy=True)
    jo.setdiag(0.0)
    jo.eliminate_zeros()
    return jo


def gram_bandwidth(x) -> int:
    """w = max |u - t| with X[u, t] != 0 (0 for a diagonal X); X dense or sparse."""
    c = sp.coo_matrix(x)
    keep = c.data != 0
    return int(np.max(np.abs(c.row[keep] - c.col[keep]))) if keep.any() else 0


def _bits(w: int) -> np.ndarray:
    """(2^w, w): bit j - 1 of state s is B_{t-j}, the pattern j steps back."""
    s = np.arange(1 << w)[:, None]
    return ((s >> np.arange(w)[None, :]) & 1).astype(float)


def _interactions(j: sp.csr_matrix, w: int) -> np.ndarray:
    """(n, 2^w): for each step t and state s, sum_{j=1..w} B_{t-j} J[t-j, t]."""
    n = j.shape[0]
    lag = np.zeros((n, w))
    for k in range(1, min(w, n - 1) + 1):
        lag[k:, k - 1] = j.diagonal(k)
    return np.einsum("tk,sk->ts", lag, _bits(w))      # no BLAS: thread-independent sums


def _log_rates(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log r, log(1 - r)) with -inf where r is 0 or 1."""
    lr = np.full(r.shape, -np.inf)
    l1 = np.full(r.shape, -np.inf)
    lr[r > 0] = np.log(r[r > 0])
    l1[r < 1] = np.log1p(-r[r < 1])
    return lr, l1


def log_ratio_rates(h: np.ndarray, j, rates: np.ndarray) -> np.ndarray:
    """log E_B exp(sum_t B_t h_t - sum_{u<t} B_u B_t J[u, t]), B_t ~ Bernoulli(rates_t)
    independent; h (S, n), J (n, n) symmetric, dense or sparse, with the interactions (its
    diagonal unused). Exact forward recursion over the last w = bandwidth(J) bits (module
    docstring)."""
    jo = _off_diagonal(j)
    w = gram_bandwidth(jo)
    lr, l1 = _log_rates(np.asarray(rates, float))
    if w == 0:
        return np.sum(np.logaddexp(l1[None, :], lr[None, :] + h), axis=1)
    if w > MAX_STATE_BITS:
        raise ValueError(f"the Gram matrix C^T C has bandwidth {w} > {MAX_STATE_BITS}: the "
                         "exact recursion over 2^bandwidth states is out of reach")
    inter = _interactions(jo, w)
    wmin = inter.min(axis=1)
    spread = inter - wmin[:, None]
    if np.max(spread) > _MAX_SPREAD:
        raise ValueError("noise_multiplier too small for C: interaction exponents spread over "
                         f"{np.max(spread):.4g} (> {_MAX_SPREAD:g})")
    decay = np.exp(-spread)                       # (n, 2^w), in (0, 1]
    s, half = h.shape[0], 1 << (w - 1)
    f = np.zeros((s, 1 << w))
    f[:, 0] = 1.0
    logscale = np.zeros(s)
    drift = 0.0
    for t in range(h.shape[1]):
        a1 = lr[t] + h[:, t] - wmin[t]            # log weight of B_t = 1 before the decay
        m = np.maximum(l1[t], a1)
        c0, c1 = np.exp(l1[t] - m), np.exp(a1 - m)
        g = np.empty((s, half, 2))                # state = top * half + rest
        np.add(f[:, :half], f[:, half:], out=g[:, :, 0])
        g[:, :, 0] *= c0[:, None]
        np.multiply(f[:, :half], decay[t, :half], out=g[:, :, 1])
        g[:, :, 1] += f[:, half:] * decay[t, half:]
        g[:, :, 1] *= c1[:, None]
        f = g.reshape(s, 1 << w)                  # new state = rest * 2 + B_t
        logscale += m
        # the largest state changes by a factor in [e^-spread_t, 2] per step: renormalise
        # before 2^k or e^-(sum of spreads) could leave the doubles' range
        drift += float(np.max(spread[t])) + 0.7
        if drift > 300.0 or t == h.shape[1] - 1:
            mx = f.max(axis=1)
            f /= mx[:, None]
            logscale += np.log(mx)
            drift = 0.0
    return logscale + np.log(f.sum(axis=1))


def epochs_of(n: int, bins: int) -> list[tuple[int, int]]:
    """Balls in bins: epochs [start, stop) of ``bins`` steps (the last one may be shorter)."""
    return [(e, min(e + bins, n)) for e in range(0, n, bins)]


#: the most states (positions of the epochs that still interact) the balls-in-bins recursion
#: keeps per sample
MAX_BINS_STATES = 1 << MAX_STATE_BITS
#: doubles of one chunk of samples' transition (samples x states x new epoch's steps)
_CHUNK = 1 << 22


def _epoch_memory(w: int, bins: int) -> int:
    """m: how many earlier epochs a step can interact with (bandwidth w, epochs of ``bins``):
    step t of epoch e reads u >= t - w, whose epoch is at least e - ceil(w / bins)."""
    return max(1, -(-w // bins))


def log_ratio_bins(h: np.ndarray, j, bins: int) -> np.ndarray:
    """log E_B exp(sum_t B_t h_t - sum_{u<t} B_u B_t J[u, t]) with B one uniformly drawn step
    in each epoch of ``bins`` steps (independent epochs). A forward recursion whose state is
    the drawn steps of the last m = ceil(bandwidth(J) / bins) epochs (the only ones a new
    epoch's steps interact with): bins^m states, refused beyond MAX_BINS_STATES. J dense or
    sparse."""
    jo = _off_diagonal(j)
    w = gram_bandwidth(jo)
    m = _epoch_memory(w, bins)
    eps = epochs_of(h.shape[1], bins)
    if min(bins, h.shape[1]) ** min(m, len(eps)) > MAX_BINS_STATES:
        raise ValueError(f"balls in bins: the Gram matrix C^T C has bandwidth {w}, so a step "
                         f"interacts with the {m} epochs of {bins} bins before it: "
                         f"{bins}^{m} states exceed the exact recursion's "
                         f"{MAX_BINS_STATES}")
    blocks = _bins_blocks(jo, eps, m)
    s = h.shape[0]
    per = max(1, _CHUNK // max(1, min(bins, h.shape[1]) ** min(m + 1, len(eps) + 1)))
    return np.concatenate([_bins_forward(h[i:i + per], eps, m, blocks)
                           for i in range(0, s, per)]) if s else np.zeros(0)


def _bins_blocks(jo: sp.csr_matrix, eps: list[tuple[int, int]], m: int) -> list:
    """For each epoch e >= 1: (decay, shift) with decay (K, k_e) = exp(-(M - shift)), M the
    interactions sum_i J[p_i, p] of the state (p_i, the drawn steps of the up to m epochs
    before, flattened in order) with each step p of epoch e, shift = min M."""
    out = []
    for e in range(1, len(eps)):
        a, b = eps[e]
        tot = np.zeros((1, b - a))
        for pa, pb in eps[max(0, e - m):e]:
            blk = jo[pa:pb, a:b].toarray()
            tot = (tot[:, None, :] + blk[None, :, :]).reshape(-1, b - a)
        shift = float(tot.min())
        if tot.max() - shift > _MAX_SPREAD:
            raise ValueError("noise_multiplier too small for C: interaction exponents spread "
                             f"over {tot.max() - shift:.4g} (> {_MAX_SPREAD:g})")
        out.append((np.exp(-(tot - shift)), shift))
    return out


def _bins_forward(h: np.ndarray, eps: list[tuple[int, int]], m: int,
                  blocks: list) -> np.ndarray:
    """The balls-in-bins recursion on the samples h (rows), linear scale with a per-sample
    log offset renormalised every epoch."""
    s = h.shape[0]
    a, b = eps[0]
    alpha = h[:, a:b] - np.log(b - a)
    top = alpha.max(axis=1)
    f = np.exp(alpha - top[:, None])              # (S, K): K the state's size
    logscale = top
    held = [b - a]                                # sizes of the epochs in the state
    for (a, b), (decay, shift) in zip(eps[1:], blocks):
        k = b - a
        if len(held) == m:                        # the oldest epoch leaves the state
            first = held.pop(0)
            rest = f.shape[1] // first
            # np.einsum without optimize does not call BLAS: the same sums whatever the threads
            g = np.einsum("sar,arl->srl", f.reshape(s, first, rest),
                          decay.reshape(first, rest, k))
        else:
            g = f[:, :, None] * decay[None, :, :]
        held.append(k)
        alpha = h[:, a:b] - shift - np.log(k)
        top = alpha.max(axis=1)
        g *= np.exp(alpha - top[:, None])[:, None, :]
        g = g.reshape(s, -1)
        mx = g.max(axis=1)
        f = g / mx[:, None]
        logscale = logscale + top + np.log(mx)
    return logscale + np.log(f.sum(axis=1))


def bin_sums(h: np.ndarray, bins: int) -> np.ndarray:
    """(S, bins): the sums of the rows of h (S, n) over each bin's steps j, j + bins, ...
    (0 for a bin with no step, bins > n). A reshape and one sum, no BLAS."""
    s, n = h.shape
    cycles = -(-n // bins)
    pad = np.zeros((s, cycles * bins))
    pad[:, :n] = h
    return pad.reshape(s, cycles, bins).sum(axis=1)


def in_bin_interactions(j, bins: int) -> np.ndarray:
    """(bins,): sum_{u<t, u = t mod bins} J[u, t], from J's upper triangle (J dense or
    sparse, symmetric)."""
    c = sp.coo_matrix(j)
    keep = (c.row < c.col) & (c.row % bins == c.col % bins)
    return np.bincount(c.row[keep] % bins, weights=c.data[keep], minlength=bins)[:bins]


def log_ratio_fixed_bins(h: np.ndarray, j, bins: int) -> np.ndarray:
    """log E_B exp(sum_t B_t h_t - sum_{u<t} B_u B_t J[u, t]) with B = x_j, j uniform among
    ``bins`` bins drawn once, x_j the indicator of steps j, j + bins, ... (a bin beyond the
    last step is empty: its term is e^0). A mean of ``bins`` exponentials, in log space."""
    terms = bin_sums(h, bins) - in_bin_interactions(j, bins)[None, :]
    top = terms.max(axis=1)
    return top + np.log(np.exp(terms - top[:, None]).sum(axis=1)) - np.log(bins)


def _separated_states(width: int, separation: int) -> np.ndarray:
    """The states of the min-separation recursion: the masks of ``width`` bits (bit k - 1 =
    B_{t-k}) whose ones are at least ``separation`` apart, sorted by (bit 0, mask). Built
    position by position, refused beyond 2^MAX_STATE_BITS before it grows further."""
    states = [(0, -separation)]                   # (mask, position of its highest one)
    for i in range(width):
        states += [(m | (1 << i), i) for m, top in states if i - top >= separation]
        if len(states) > 1 << MAX_STATE_BITS:
            raise ValueError(f"min-separation sampling: more than 2^{MAX_STATE_BITS} "
                             f"patterns of the last {width} steps with ones {separation} "
                             "apart (the Gram matrix C^T C's bandwidth is too large for the "
                             "exact recursion)")
    masks = np.array(sorted(m for m, _ in states), dtype=np.int64)
    return masks[np.argsort(masks & 1, kind="stable")]


def _minsep_tables(masks: np.ndarray, width: int, separation: int):
    """For the states ``masks`` (zeros of bit 0 first, then ones): eligible (the last
    separation - 1 bits 0), and for each new state k its (at most 2) predecessors s with
    (s << 1 | B_t) & mask = k, B_t = bit 0 of k, as indices into the states (the state count
    where there is none: a zero column). Returns (eligible, zeros, pred_a, pred_b)."""
    index = {int(m): i for i, m in enumerate(masks)}
    none = len(masks)
    eligible = (masks & ((1 << (separation - 1)) - 1)) == 0
    pred = np.full((len(masks), 2), none)
    for k, m in enumerate(masks):
        for slot, s in enumerate((int(m) >> 1, (int(m) >> 1) | (1 << (width - 1)))):
            if s in index and (m & 1 == 0 or eligible[index[s]]):
                pred[k, slot] = index[s]
    zeros = int(np.sum((masks & 1) == 0))
    return eligible, zeros, pred[:, 0], pred[:, 1]


def _minsep_start(masks: np.ndarray, rate: float, separation: int,
                  warm_start: bool) -> tuple[np.ndarray, float]:
    """The law of the state before step 0, as (weights with largest 1, log of that largest):
    every record eligible (cold), or the chain's stationary law on the steps d since the last
    participation (warm): eligible with pi_E = 1 / (1 + (separation - 1) rate), d = 1 ..
    separation - 1 (the one bit d - 1) with rate pi_E each. The pre-run ones carry no
    interaction (there is no row of C before step 0), only their eligibility effect."""
    f = (masks == 0).astype(float)
    if not warm_start or separation == 1:
        return f, 0.0
    for d in range(1, separation):
        f[masks == 1 << (d - 1)] = rate
    return f, -math.log1p((separation - 1) * rate)


@dataclasses.dataclass(frozen=True)
class _MinSepChain:
    """The min-separation recursion's tables (:func:`_minsep_chain`): the states' order
    (``zeros`` states with bit 0 clear, then those with it set), each new state's two
    predecessors (``pa``, ``pb``; the state count: none), the factors of B_t = 0 (``stay``)
    and, per step, of B_t = 1 before rate e^{h_t - wmin_t} (``take``: e^{-spread}, 0 from an
    ineligible state; ``log_take`` its log), the first state's law and the floor below which
    a state's linear-scale value may have lost digits."""

    zeros: int
    pa: np.ndarray
    pb: np.ndarray
    stay: np.ndarray
    take: np.ndarray
    log_take: np.ndarray
    wmin: np.ndarray
    f0: np.ndarray
    logscale0: float
    log_rate: float
    floor: float


def _minsep_chain(j, n: int, rate: float, separation: int, warm_start: bool) -> _MinSepChain:
    """The tables of :func:`log_ratio_minsep` for J (dense or sparse) over n steps."""
    jo = _off_diagonal(j)
    width = max(gram_bandwidth(jo), separation - 1, 1)
    masks = _separated_states(width, separation)
    eligible, zeros, pa, pb = _minsep_tables(masks, width, separation)
    bits = ((masks[:, None] >> np.arange(width)[None, :]) & 1).astype(float)
    lag = np.zeros((n, width))
    for k in range(1, min(width, n - 1) + 1):
        lag[k:, k - 1] = jo.diagonal(k)
    inter = np.einsum("tk,sk->ts", lag, bits)[:, eligible]     # no BLAS
    wmin = inter.min(axis=1) if n else np.zeros(0)
    spread = inter - wmin[:, None]
    top = float(np.max(spread)) if n else 0.0
    if top > _MAX_SPREAD:
        raise ValueError("noise_multiplier too small for C: interaction exponents spread over "
                         f"{top:.4g} (> {_MAX_SPREAD:g})")
    log_take = np.full((n, len(masks)), -np.inf)
    log_take[:, eligible] = -spread
    f0, logscale0 = _minsep_start(masks, rate, separation, warm_start)
    # a value above floor times the largest keeps its B_t = 1 term (times e^-spread, then
    # halved) and its B_t = 0 term (times 1 - rate >= 2^-53) normal: 60 bits of margin
    floor = math.exp((60 - 1022) * math.log(2.0) + top)
    return _MinSepChain(zeros, pa, pb, np.where(eligible, 1.0 - rate, 1.0), np.exp(log_take),
                        log_take, wmin, f0, logscale0, math.log(rate), floor)


def _rescaled(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x / max, log max) per row, rows of zeros left as they are (log max = -inf)."""
    mx = x.max(axis=1)
    pos = mx > 0
    logmx = np.full(mx.shape, -np.inf)
    logmx[pos] = np.log(mx[pos])
    return x / np.where(pos, mx, 1.0)[:, None], logmx


def _minsep_linear(h: np.ndarray, ch: _MinSepChain) -> tuple[np.ndarray, np.ndarray]:
    """The recursion in linear scale with a per-sample log offset: each step the two kinds
    of new state (B_t = 0, B_t = 1) are each scaled to largest 1, then weighted by their
    largest's log against the larger of the two, so the largest state is exactly 1. Also
    returns the samples where a reachable state fell below the floor: there a state may
    have been lost to underflow, and under min-separation a state that is negligible now
    can dominate later (an eligible state outweighed by one that just took a large step
    can take the next one, which the other cannot), so those samples are redone in log
    space."""
    s, z = h.shape[0], ch.zeros
    f = np.tile(ch.f0, (s, 1))
    logscale = np.full(s, ch.logscale0)
    alive = np.append(ch.f0 > 0, False)           # reachable states, whatever h
    flagged = np.zeros(s, dtype=bool)
    pad = np.zeros((s, 1))
    for t in range(h.shape[1]):
        g0 = np.concatenate([f * ch.stay, pad], axis=1)
        g1 = np.concatenate([f * ch.take[t], pad], axis=1)
        new0, l0 = _rescaled(g0[:, ch.pa[:z]] + g0[:, ch.pb[:z]])
        new1, l1 = _rescaled(g1[:, ch.pa[z:]] + g1[:, ch.pb[z:]])
        l1 = l1 + (ch.log_rate + h[:, t] - ch.wmin[t])
        m = np.maximum(l0, l1)                     # finite: the largest state goes somewhere
        f = np.concatenate([new0 * np.exp(l0 - m)[:, None], new1 * np.exp(l1 - m)[:, None]],
                           axis=1)
        logscale += m
        a0, a1 = alive & np.append(ch.stay > 0, False), alive & np.append(ch.take[t] > 0, False)
        alive = np.append(np.concatenate([a0[ch.pa[:z]] | a0[ch.pb[:z]],
                                          a1[ch.pa[z:]] | a1[ch.pb[z:]]]), False)
        flagged |= np.any(f[:, alive[:-1]] < ch.floor, axis=1)
    return logscale + np.log(f.sum(axis=1)), flagged


def _minsep_log(h: np.ndarray, ch: _MinSepChain) -> np.ndarray:
    """The same recursion in log space (np.logaddexp): slower, nothing underflows."""
    z = ch.zeros
    with np.errstate(divide="ignore"):
        lf = np.tile(np.log(ch.f0) + ch.logscale0, (h.shape[0], 1))
        log_stay = np.log(ch.stay)
    pad = np.full((h.shape[0], 1), -np.inf)
    for t in range(h.shape[1]):
        g0 = np.concatenate([lf + log_stay, pad], axis=1)
        g1 = np.concatenate([lf + ch.log_take[t], pad], axis=1) + \
            (ch.log_rate + h[:, t] - ch.wmin[t])[:, None]
        lf = np.concatenate([np.logaddexp(g0[:, ch.pa[:z]], g0[:, ch.pb[:z]]),
                             np.logaddexp(g1[:, ch.pa[z:]], g1[:, ch.pb[z:]])], axis=1)
    top = lf.max(axis=1)
    return top + np.log(np.exp(lf - top[:, None]).sum(axis=1))


def log_ratio_minsep(h: np.ndarray, j, rate: float, separation: int,
                     warm_start: bool = False) -> np.ndarray:
    """log E_B exp(sum_t B_t h_t - sum_{u<t} B_u B_t J[u, t]) with B b-min-separation sampled
    (b = ``separation``): B_t = 1 with probability ``rate`` when B_{t-1} = ... = B_{t-b+1} = 0,
    else B_t = 0; the first state cold (all eligible) or warm (stationary,
    :func:`_minsep_start`). h (S, n), J (n, n) symmetric, dense or sparse (diagonal unused).

    Exact forward recursion over the last W = max(w, b - 1) bits (w = bandwidth(J)), only
    over the patterns with ones b apart (:func:`_separated_states`; b >= w + 1 leaves no
    interaction and b states): in linear scale (:func:`_minsep_linear`), the samples where a
    reachable state fell to within 60 bits of underflow redone in log space
    (:func:`_minsep_log`). Exact up to rounding either way."""
    separation = int(separation)
    if not (0.0 < rate <= 1.0) or separation < 1:
        raise ValueError(f"min-separation sampling: rate in (0, 1] and separation >= 1, got "
                         f"rate={rate!r}, separation={separation!r}")
    ch = _minsep_chain(j, h.shape[1], float(rate), separation, bool(warm_start))
    out, flagged = _minsep_linear(h, ch)
    if flagged.any():
        out[flagged] = _minsep_log(h[flagged], ch)
    return out
