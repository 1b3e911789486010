"""A Monte Carlo ESTIMATE of delta(eps) and eps(delta) of a sampled matrix mechanism's
fixed-direction pair, with a confidence interval: a check, never a guarantee.

The pair (:mod:`.matrix_mc_loss`): P = E_B N(C B, s^2 I) with the record (B its participation
pattern, drawn by the mechanism's schema), Q = N(0, s^2 I) without it, L = log dP/dQ. It is an
actual pair of neighbours (the record's gradient of norm 1 in one fixed direction in every step),
so its curve is a lower bound on the mechanism's; amplified analyses (Choquette-Choo, Ganesh,
Steinke & Thakurta, ICLR 2024; Choquette-Choo, Ganesh, Haque, Steinke & Thakurta, ICLR 2025)
argue it is the worst case. Under add/remove both orders count:

    remove  delta_{P||Q}(eps) = E_Q[(dP/dQ - e^eps)_+] = E_P[(1 - e^{eps - L})_+]
    add     delta_{Q||P}(eps) = E_P[(dQ/dP - e^eps)_+] = E_Q[(1 - e^{eps + L})_+]

and delta(eps) = max of the two (and, for cyclic Poisson, of the p groups a record may be in).
Under balls in bins drawn once (``dp.FixedBins``) B = x_j, the indicator of one uniformly drawn
bin's steps j, j + bins, ...: the pair and its sampler are in :mod:`.matrix_mc_fixed_bins`.

The estimator (importance sampling with a defensive mixture, Hesterberg 1995). Each direction
draws y from R = alpha T + (1 - alpha) R_{r,a,b}, T its target (P for remove, Q for add) and
R_{r,a,b} = E_B N(a C B + b C e, s^2 I), B at rate r on the schema's steps (balls in bins: the
schema's law; b-min-separation sampling: the same chain at rate r) and e the indicator of those
steps: the participations scaled by a (a few large
jumps) and every step shifted by b (many moderate ones). log dR_{r,a,b}/dQ is the same
recursion (module :mod:`.matrix_mc_loss`), so the weights d(target)/dR = 1 / (alpha + (1 -
alpha) dR_{r,a,b}/d(target)) are exact and at most 1 / alpha (finite variance). The mixture is
sampled stratified (a fixed share alpha from T), so the pooled standard error below is
conservative (it includes the between-strata spread). (r, a, b) are tuned by the multilevel
cross-entropy method (Rubinstein & Kroese 2004) on pilot samples that are then discarded: levels
rise along the (1 - rho) quantile of the loss towards the target (the given eps, or the eps at
which the pilot's delta estimate equals the asked delta), 12 rounds; once the level is the
target, the pilots of the last 3 such rounds are pooled (each weighted against its own
proposal) for each update; the update is the weighted maximum
likelihood of (B, y) under R_{r,a,b}, in closed form (r the weighted mean of B; under
min-separation the weighted participations over the weighted eligible steps, the chain's
likelihood given its first state; (a, b) the weighted least squares of y on (C B, C e)). (Fixed bins: R = (1/bins) sum_j N(C m_j, s^2 I),
m_j tilting bin j and the rings of bins around it, the update an EM step; the same method.)
The samplers (:class:`_Setup` for the rate schemas and balls in bins redrawn, the fixed-bins
one) share the methods target, start, sample, log_ratio and ce_update.

The interval. delta_hat +- z se with z = 4 (a central-limit interval, documented as such: it
is not a bound, and heavy-tailed weights can make se optimistic, so ``ess`` (the effective
sample size (sum w f)^2 / sum (w f)^2 of the decisive direction) and ``max_share`` (the largest
sample's share of its sum) are reported; distrust an estimate with ess below ~100 or max_share
above a few percent). eps(delta): estimate = the root of max delta_hat(eps) = delta; hi = the
largest eps with max delta_hi(eps) >= delta; lo = the smallest eps with max delta_lo(eps) <=
delta (on a grid of 2049 points over the reachable range, then bisection in the crossing cell):
if every pointwise interval at the true eps covers, eps lies in [lo, hi].

Same seed, same answer: the random streams come from ``numpy.random.SeedSequence(seed)`` with a
fixed spawn key per group, direction and stage, and no sum calls BLAS (scipy.sparse products,
einsum without optimize).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterator

import numpy as np
import scipy.sparse as sp

from ..core import validate as V
from ..mechanisms.matrix import MatrixMechanism
from ..mechanisms.participation import BallsInBins, CyclicPoisson, FixedBins, MinSepSampling
from .matrix_mc_fixed_bins import FixedBinsSampler
from .matrix_mc_loss import log_ratio_bins, log_ratio_minsep, log_ratio_rates

__all__ = ["MonteCarloEstimate", "estimate_delta", "estimate_epsilon"]

#: the share of each direction's samples drawn from its own target (defensive mixture)
DEFENSIVE = 0.1
#: the interval's half-width in standard errors
Z = 4.0
#: the cross-entropy method's elite share and most iterations
RHO, CE_ITERATIONS = 0.05, 12
#: pilot rounds pooled once the level reaches the goal
POOLED = 3
PILOT_MIN = 1000
_CHUNK = 2048
REMOVE, ADD = "remove", "add"


@dataclasses.dataclass(frozen=True)
class MonteCarloEstimate:
    """A Monte Carlo ESTIMATE of eps(delta) or delta(eps), not a guarantee: ``estimate`` with
    the central-limit interval [``lo``, ``hi``] (estimate -+ 4 standard errors of delta,
    module docstring). ``ess`` / ``max_share``: the decisive direction's effective sample
    size and largest single share; ``direction`` 'remove' or 'add', ``group`` the cyclic group
    that decided. Unpacks as ``estimate, lo, hi = result``."""

    estimate: float
    lo: float
    hi: float
    query: str
    samples: int
    seed: int
    ess: float
    max_share: float
    direction: str
    group: int
    label: str = "Monte Carlo estimate (not a guarantee)"

    def __post_init__(self):
        for name in ("estimate", "lo", "hi", "ess", "max_share"):
            object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def trusted(self) -> bool:
        """The diagnostics pass: ess >= 100 and max_share <= 0.05 (the central-limit interval
        is only as good as the sample of the tail; below these it is not to be relied on)."""
        return self.ess >= 100 and self.max_share <= 0.05

    def __iter__(self) -> Iterator[float]:
        return iter((self.estimate, self.lo, self.hi))


def _mv(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A matrix times a vector without BLAS (whose sums may depend on its threads)."""
    return np.einsum("ij,j->i", a, x)


def minsep_patterns(rate: float, separation: int, warm_start: bool, count: int, n: int,
                    rng) -> tuple[np.ndarray, np.ndarray]:
    """``count`` patterns (count, n) of b-min-separation sampling (b = ``separation``): a
    record whose last participation is at least b steps back (or never) is taken with
    probability ``rate``; the first state every record eligible, or (``warm_start``) the
    chain's stationary law on the steps d since the last participation (eligible with
    probability pi_E = 1 / (1 + (b - 1) rate), each d = 1 .. b - 1 with rate pi_E). Also
    returns each pattern's number of eligible steps (the chain's maximum likelihood of the
    rate is the participations over these). The uniforms of the steps are drawn first, in
    the Poisson sampler's order, so that b = 1 draws Poisson's patterns."""
    u = rng.random((count, n))
    since = np.full(count, separation)            # steps since the last participation
    if warm_start and separation > 1:
        pi_e = 1.0 / (1.0 + (separation - 1) * rate)
        v = rng.random(count)
        ineligible = v >= pi_e
        d = 1 + np.floor((v - pi_e) / (rate * pi_e)).astype(int)
        since[ineligible] = np.minimum(d[ineligible], separation - 1)
    b = np.zeros((count, n))
    chances = np.zeros(count)
    for t in range(n):
        eligible = since >= separation
        take = eligible & (u[:, t] < rate)
        b[:, t] = take
        chances += eligible
        since = np.where(take, 1, np.minimum(since + 1, separation))
    return b, chances


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What the sampler needs: sparse C, the Gram X / s^2, s, the target's pattern law."""

    c: Any                        # scipy.sparse CSR matrix (m, n)
    j: Any                        # scipy.sparse CSR matrix (n, n): C^T C / s^2
    sigma: float
    rates: np.ndarray | None      # rate schemas: the target rates (0 off the group)
    bins: int | None              # balls in bins (redrawn every epoch)
    minsep: MinSepSampling | None = None      # b-min-separation sampling (rates, bins None)

    @property
    def steps(self) -> int:
        return self.j.shape[0]

    @property
    def e(self) -> np.ndarray:
        """The shift direction's pattern: 1 on the steps the record may enter."""
        return np.ones(self.j.shape[0]) if self.rates is None else \
            (self.rates > 0).astype(float)

    def log_ratio(self, u: np.ndarray, prop: tuple) -> np.ndarray:
        """log dR/dQ at the samples u = C^T y / s^2 of R = E_B N(a C B + b C e, s^2 I),
        prop = (rate, a, b) (rate None: the target's law): b <e, u> - b^2 e'Je / 2 plus the
        recursion with h_t = a u_t - a b (J e)_t - a^2 J_tt / 2, interactions a^2 J."""
        rate, a, b = prop
        e = self.e
        je = self.j @ e
        out = b * _mv(u, e) - 0.5 * b * b * float(np.sum(e * je))
        if a == 0.0:
            return out
        h = a * u - a * b * je[None, :] - 0.5 * a * a * self.j.diagonal()[None, :]
        if self.bins is not None:
            return out + log_ratio_bins(h, a * a * self.j, self.bins)
        if self.minsep is not None:
            ms = self.minsep
            return out + log_ratio_minsep(h, a * a * self.j, ms.sampling_prob if rate is None
                                          else rate, ms.min_separation, ms.warm_start)
        assert self.rates is not None
        # only the steps the record may enter count (a cyclic group's steps, p apart): their
        # own bandwidth is what the recursion pays for (0 when p >= bands)
        act = np.flatnonzero(self.rates > 0)
        r = self.rates[act] if rate is None else np.full(act.size, rate)
        return out + log_ratio_rates(h[:, act], a * a * self.j[act][:, act], r)

    def patterns(self, rate: float | None, count: int, rng) -> tuple[np.ndarray, np.ndarray]:
        """``count`` patterns of the law (at ``rate``; None: the target's), and the rate's
        chances of each as a share of the steps: 1 under the rate schemas (the rate's
        update is then the weighted mean of the participation share), the eligible steps'
        share under min-separation sampling."""
        n = self.j.shape[0]
        if self.bins is not None:
            b = np.zeros((count, n))
            for a in range(0, n, self.bins):
                k = min(self.bins, n - a)
                b[np.arange(count), a + rng.integers(0, k, count)] = 1.0
            return b, np.ones(count)
        if self.minsep is not None:
            ms = self.minsep
            b, chances = minsep_patterns(ms.sampling_prob if rate is None else rate,
                                         ms.min_separation, ms.warm_start, count, n, rng)
            return b, chances / n
        assert self.rates is not None
        r = self.rates if rate is None else np.where(self.rates > 0, rate, 0.0)
        return (rng.random((count, n)) < r[None, :]).astype(float), np.ones(count)

    def target(self, remove: bool) -> tuple:
        """P (remove: a = 1 with the schema's law) or Q (add: a = 0)."""
        return (None, 1.0, 0.0) if remove else (None, 0.0, 0.0)

    def start(self, remove: bool) -> tuple:
        """The cross-entropy method's first proposal: P, or the participations reversed."""
        rate = None if self.rates is None else float(np.max(self.rates))
        if self.minsep is not None:
            rate = self.minsep.sampling_prob
        return (rate, 1.0, 0.0) if remove else (rate, -1.0, 0.0)

    def sample(self, comp: tuple, tuned: tuple, count: int,
               rng) -> tuple[np.ndarray, np.ndarray]:
        """``count`` draws (B, y) of R_comp: u = C^T y / s^2 (what log_ratio reads) and the
        cross-entropy statistics of the complete data (B, y) (``tuned`` unused), per sample:
        the mean of B over the active steps; <C B, y>, |C B|^2, <C B, C e>, <C e, y>, all over
        s^2; the rate's chances (:meth:`patterns`)."""
        ce = np.asarray(self.c @ self.e)                            # (m,)
        je = self.j @ self.e
        b, chances = self.patterns(comp[0], count, rng)
        cb = np.asarray(self.c @ b.T)                               # (m, k)
        y = comp[1] * cb + comp[2] * ce[:, None] + self.sigma * rng.standard_normal(cb.shape)
        u = np.asarray(self.c.T @ y).T / (self.sigma ** 2)          # (k, n)
        act = b[:, self.e > 0]
        stats = np.column_stack([act.mean(axis=1), np.sum(b * u, axis=1),
                                 np.sum(cb * cb, axis=0) / self.sigma ** 2, _mv(b, je),
                                 _mv(u, self.e), chances])
        return u, stats

    def ce_update(self, stats: np.ndarray, v: np.ndarray, prop: tuple) -> tuple:
        """The cross-entropy step: the v-weighted maximum likelihood of (B, y) under
        R = E_B N(a C B + b C e, s^2 I) with B at rate r: r = the weighted participations over
        the weighted chances (the rate schemas: the weighted mean of B on the active steps;
        min-separation sampling: over the eligible steps, the chain's maximum likelihood given
        its first state); (a, b) = the weighted least squares of y on (C B, C e), a 2 x 2
        system."""
        frac, by, bb, be, ey, chances = stats.T
        rate = prop[0]
        if rate is not None and np.sum(v * chances) > 0:
            rate = float(np.clip(np.sum(v * frac) / np.sum(v * chances), 1e-6, 1.0))
        eje = float(np.sum(self.e * (self.j @ self.e)))
        g = np.array([[np.sum(v * bb), np.sum(v * be)], [np.sum(v * be), np.sum(v) * eje]])
        rhs = np.array([np.sum(v * by), np.sum(v * ey)])
        if abs(np.linalg.det(g)) > 1e-12 * (abs(g[0, 0] * g[1, 1]) + 1e-300):
            a, b = np.linalg.solve(g, rhs)
        elif g[0, 0] > 0:                          # degenerate: scale alone
            a, b = rhs[0] / g[0, 0], 0.0
        else:
            a, b = prop[1], prop[2]
        return rate, float(a), float(b)


def _sparse(strategy) -> Any:
    """C as a scipy.sparse CSR matrix; a banded Toeplitz C straight from its coefficients
    (its dense form would take n^2 memory)."""
    co = strategy.toeplitz() if strategy.square_lower else None
    b, n = strategy.bands, strategy.n
    if co is not None and b is not None:
        return sp.diags([np.full(n - k, co[k]) for k in range(b)], [-k for k in range(b)],
                        shape=(n, n), format="csr")
    return sp.csr_matrix(strategy.dense())


def _setups(m: MatrixMechanism, group: int | None) -> list[tuple[int, Any]]:
    """One setup per cyclic group asked (all groups when ``group`` is None)."""
    p = m.participation
    csr = _sparse(m.strategy)
    n, s = csr.shape[1], m.noise_multiplier
    j = sp.csr_matrix(csr.T @ csr) / (s * s)
    if not isinstance(p, (CyclicPoisson, BallsInBins, FixedBins, MinSepSampling)):
        raise ValueError(f"the Monte Carlo check needs a sampled participation "
                         f"(dp.Poisson, dp.CyclicPoisson, dp.BallsInBins, dp.FixedBins, "
                         f"dp.MinSepSampling), got {p.describe()}")
    if not isinstance(p, CyclicPoisson):
        if group not in (None, 0):
            raise ValueError(f"group: only dp.CyclicPoisson has groups, got group={group!r} "
                             f"for {p.describe()}")
        if isinstance(p, FixedBins):
            return [(0, FixedBinsSampler(csr, j, s, p.bins))]
        if isinstance(p, MinSepSampling):
            return [(0, _Setup(csr, j, s, None, None, p))]
        return [(0, _Setup(csr, j, s, None, p.bins))]
    groups = range(min(p.partitions, n)) if group is None else \
        [V.integer("group", group, low=0, high=p.partitions - 1)]
    out = []
    for g in groups:
        r = np.zeros(n)
        r[g::p.partitions] = p.sampling_prob
        out.append((g, _Setup(csr, j, s, r, None)))
    return out


@dataclasses.dataclass
class _Draws:
    """Per sample: the target's loss L = log dP/dQ, log w = log d(target)/d(mixture), and the
    sampler's cross-entropy statistics (one row per sample)."""

    loss: np.ndarray
    logw: np.ndarray
    stats: np.ndarray


def _stack(parts: list[_Draws]) -> _Draws:
    """The samples of several draws, in order."""
    return _Draws(*(np.concatenate([getattr(d, f.name) for d in parts])
                    for f in dataclasses.fields(_Draws)))


def _draw_block(st, direction: str, comp: tuple, tuned: tuple, alpha: float, count: int,
                rng) -> _Draws:
    """``count`` samples of component ``comp``, weighted against the whole mixture alpha
    target + (1 - alpha) ``tuned``. ``st``: a sampler (:class:`_Setup` or
    :class:`.matrix_mc_fixed_bins.FixedBinsSampler`): target, sample, log_ratio."""
    parts = []
    remove = direction == REMOVE
    chunk = max(64, min(_CHUNK, 2 ** 22 // st.steps))       # ~32 MiB per (chunk, n) array
    for start in range(0, count, chunk):
        k = min(chunk, count - start)
        data, stats = st.sample(comp, tuned, k, rng)
        loss = st.log_ratio(data, st.target(True))
        log_t = loss if remove else np.zeros(k)
        log_r = st.log_ratio(data, tuned) if tuned != st.target(remove) else log_t
        log_mix = np.logaddexp(math.log(alpha) + log_t, math.log1p(-alpha) + log_r)
        parts.append(_Draws(loss, log_t - log_mix, stats))
    return _stack(parts)


def _draw(st, direction: str, tuned: tuple, count: int, rng) -> _Draws:
    """``count`` samples of the defensive mixture, stratified: n0 = ceil(alpha count) from
    the target, the rest from the tuned proposal, weighted against the mixture of the shares
    drawn (n0 / count), which keeps the stratified estimate unbiased."""
    n0 = math.ceil(DEFENSIVE * count)
    alpha = n0 / count
    d0 = _draw_block(st, direction, st.target(direction == REMOVE), tuned, alpha, n0, rng)
    d1 = _draw_block(st, direction, tuned, tuned, alpha, count - n0, rng)
    return _stack([d0, d1])


def _integrand(direction: str, loss: np.ndarray, eps) -> np.ndarray:
    """(S, G): (1 - e^{eps - L})_+ (remove) or (1 - e^{eps + L})_+ (add)."""
    sgn = -1.0 if direction == REMOVE else 1.0
    e = np.minimum(np.asarray(eps, float)[None, :] + sgn * loss[:, None], 0.0)
    return -np.expm1(e)


def _moments(d: _Draws, direction: str, eps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, standard error, values) of w f at each eps."""
    v = np.exp(d.logw)[:, None] * _integrand(direction, d.loss, np.atleast_1d(eps))
    s = v.shape[0]
    return v.mean(axis=0), v.std(axis=0, ddof=1) / math.sqrt(s), v


def _times_exp(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """x e^e for x >= 0, without forming e^e."""
    out = np.zeros(np.broadcast(x, e).shape)
    pos = np.broadcast_to(x > 0, out.shape)
    xs, es = np.broadcast_to(x, out.shape)[pos], np.broadcast_to(e, out.shape)[pos]
    out[pos] = np.exp(es + np.log(xs))
    return out


class _Curve:
    """delta_hat(eps) and its standard error at any eps >= 0 from one sort of the samples:
    with x = L (remove) or -L (add), the integrand is 1 - e^{eps - x} on x > eps, so the sums
    of w f and (w f)^2 over the samples are prefix sums of w, w e^-x, w^2, w^2 e^-x, w^2 e^-2x
    in decreasing x (only x > 0 enters: eps >= 0)."""

    def __init__(self, d: _Draws, direction: str):
        x = d.loss if direction == REMOVE else -d.loss
        keep = x > 0
        order = np.argsort(-x[keep], kind="stable")
        xs, w = x[keep][order], np.exp(d.logw[keep][order])
        ex = np.exp(-xs)
        z = np.zeros(1)
        self.neg_x = -xs
        self.sums = [np.concatenate([z, np.cumsum(v)]) for v in
                     (w, w * ex, w * w, w * w * ex, w * w * ex * ex)]
        self.count = d.loss.shape[0]

    def __call__(self, eps) -> tuple[np.ndarray, np.ndarray]:
        """(mean, standard error) of w f at each eps (an array)."""
        e = np.atleast_1d(np.asarray(eps, float))
        k = np.searchsorted(self.neg_x, -e, side="left")   # samples with x > eps
        a1, b1, a2, b2, c2 = (s[k] for s in self.sums)
        # e^eps b1 <= a1 (and so on): multiply in log space, e^eps alone may overflow
        s1 = np.maximum(a1 - _times_exp(b1, e), 0.0)
        s2 = np.maximum(a2 - 2.0 * _times_exp(b2, e) + _times_exp(c2, 2.0 * e), 0.0)
        n = self.count
        mean = s1 / n
        var = np.maximum(s2 - n * mean * mean, 0.0) / (n - 1)
        return mean, np.sqrt(var / n)


def _reach(d: _Draws, direction: str) -> float:
    """The eps beyond which every sample's integrand is 0."""
    return float(np.max(d.loss) if direction == REMOVE else np.max(-d.loss))


def _root(f, lo: float, hi: float) -> float:
    """Bisection for f decreasing through 0 on [lo, hi] (f(lo) > 0 >= f(hi))."""
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, abs(hi)):
            break
    return 0.5 * (lo + hi)


def _level(d: _Draws, direction: str, goal: tuple[str, float]) -> tuple[float, bool]:
    """The cross-entropy level: the goal's eps (given, or where the pilot's delta estimate
    equals the asked delta), capped at the (1 - rho) quantile of the loss; and whether the
    goal was reached."""
    x = d.loss if direction == REMOVE else -d.loss
    cap = float(np.quantile(x, 1.0 - RHO))
    if goal[0] == "epsilon":
        want = goal[1]
    else:
        delta, curve = goal[1], _Curve(d, direction)

        def f(e):
            return float(curve(e)[0][0]) - delta
        top = _reach(d, direction)
        want = 0.0 if f(0.0) <= 0 else (top if top <= 0 else _root(f, 0.0, top))
    return (want, True) if want <= cap else (cap, False)


def _tune(st, direction: str, goal, pilot: int, seq) -> tuple:
    """(rate, a, b) of the tuned proposal by the multilevel cross-entropy method, for
    ``CE_ITERATIONS`` rounds. Once the level reaches the goal, the update is taken from the
    pilots of the last ``POOLED`` such rounds together (each weighted against its own
    proposal, so the pooled weighted sums stay unbiased): one pilot alone leaves the
    parameters wandering by ~10 % round to round, which cost up to 5x in effective sample
    size. (The rate creeps up for several rounds after the level is reached, an EM-like fixed
    point: stopping early cost as much.)"""
    prop = st.start(direction == REMOVE)
    window: list[_Draws] = []
    for _ in range(CE_ITERATIONS):
        rng = np.random.default_rng(seq.spawn(1)[0])
        d = _draw(st, direction, prop, pilot, rng)
        level, reached = _level(d, direction, goal)
        if reached:
            window = (window + [d])[-POOLED:]
            d = _stack(window)
            level, _ = _level(d, direction, goal)
        v = np.exp(d.logw - d.logw.max()) * _integrand(direction, d.loss, [level])[:, 0]
        if not np.any(v > 0):
            break
        prop = st.ce_update(d.stats, v, prop)
    return prop


def _sources(m: MatrixMechanism, goal, samples: int, seed: int, group):
    """Per (group, direction): the final draws from the tuned proposal (fresh streams)."""
    if not isinstance(m, MatrixMechanism):
        raise ValueError(f"mechanism must be a dp.MatrixMechanism, got {type(m).__name__}")
    samples = V.integer("samples", samples, low=100)
    seed = V.integer("seed", seed, low=0)
    pilot = max(PILOT_MIN, samples // 5)
    out = []
    for g, st in _setups(m, group):
        for k, direction in enumerate((REMOVE, ADD)):
            seq = np.random.SeedSequence(seed, spawn_key=(g, k))
            tune_seq, final_seq = seq.spawn(2)
            tuned = _tune(st, direction, goal, pilot, tune_seq)
            d = _draw(st, direction, tuned, samples, np.random.default_rng(final_seq))
            out.append((g, direction, d))
    return out, samples, seed


def _diagnostics(v: np.ndarray) -> tuple[float, float]:
    total = float(v.sum())
    if total <= 0:
        return 0.0, 0.0
    return total * total / float(np.sum(v * v)), float(v.max()) / total


def estimate_delta(mechanism: MatrixMechanism, epsilon: float, samples: int = 20000,
                   seed: int = 0, group: int | None = None) -> MonteCarloEstimate:
    """Monte Carlo ESTIMATE of delta(eps) = max over directions (and cyclic groups; ``group``
    picks one) of the fixed-direction pair's hockey-stick divergence, with the 4-standard-error
    interval [lo, hi] (module docstring). Not a guarantee."""
    eps = V.real("epsilon", epsilon, low=0.0)
    srcs, samples, seed = _sources(mechanism, ("epsilon", eps), samples, seed, group)
    best = None
    lo = hi = 0.0
    for g, direction, d in srcs:
        mean, se, v = _moments(d, direction, eps)
        lo, hi = max(lo, float(mean[0] - Z * se[0])), max(hi, float(mean[0] + Z * se[0]))
        if best is None or mean[0] > best[0]:
            best = (float(mean[0]), g, direction, v[:, 0])
    assert best is not None
    ess, share = _diagnostics(best[3])
    return MonteCarloEstimate(best[0], max(lo, 0.0), hi, "delta", samples, seed, ess, share,
                              best[2], best[1])


def estimate_epsilon(mechanism: MatrixMechanism, delta: float, samples: int = 20000,
                     seed: int = 0, group: int | None = None) -> MonteCarloEstimate:
    """Monte Carlo ESTIMATE of eps(delta) of the fixed-direction pair (the smallest eps >= 0
    with delta(eps) <= delta), with the interval [lo, hi] from the 4-standard-error band of
    delta(eps) (module docstring). Not a guarantee."""
    dlt = V.delta(delta)
    srcs, samples, seed = _sources(mechanism, ("delta", dlt), samples, seed, group)

    curves = [_Curve(d, direction) for _, direction, d in srcs]

    def band(e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = [c(e) for c in curves]
        mean = np.max([r[0] for r in rows], axis=0)
        return (mean, np.max([r[0] - Z * r[1] for r in rows], axis=0),
                np.max([r[0] + Z * r[1] for r in rows], axis=0))

    top = max(0.0, max(_reach(d, direction) for _, direction, d in srcs)) + 1e-9

    def crossing(k: int, lo_e: float, hi_e: float) -> float:
        return _root(lambda e: float(band(np.array([e]))[k][0]) - dlt, lo_e, hi_e)

    grid = np.linspace(0.0, top, 2049)
    mean, dlo, dhi = band(grid)
    est = 0.0 if mean[0] <= dlt else crossing(0, 0.0, top)
    above = np.nonzero(dhi > dlt)[0]
    hi = 0.0 if above.size == 0 else crossing(2, grid[above[-1]], grid[above[-1] + 1])
    below = np.nonzero(dlo <= dlt)[0]
    lo = 0.0 if below[0] == 0 else crossing(1, grid[below[0] - 1], grid[below[0]])
    return _decided(srcs, est, min(lo, est), max(hi, est), samples, seed)


def _decided(srcs, est: float, lo: float, hi: float, samples: int,
             seed: int) -> MonteCarloEstimate:
    """The result with the diagnostics of the source with the largest delta at ``est``."""
    best = max(srcs, key=lambda s: float(_moments(s[2], s[1], est)[0][0]))
    ess, share = _diagnostics(_moments(best[2], best[1], est)[2][:, 0])
    return MonteCarloEstimate(est, lo, hi, "epsilon", samples, seed, ess, share, best[1],
                              best[0])
