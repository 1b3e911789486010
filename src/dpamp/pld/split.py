"""Composition split by how many steps draw a large loss: the binomial expansion of a power.

At tiny sampling rates and tiny delta (q ~ 1e-5, delta ~ 1e-12) delta(eps) comes from the rare
step whose loss alone is a sizeable share of eps, while almost all of the mass sits within q of
0. One exponential tilt cannot make both the bulk and that tail the largest values of the FFT
(the tail of a subsampled loss is heavier than any exponential over the range that matters: the
Chernoff bound there is loose by orders of magnitude), so the FFT's absolute error swamps delta.

Split the most repeated part's discretised measure W (either bound's) at a loss a into its bins
below a, B, and the rest, R (bins at or above a, and the mass at +inf): W = B + R. Convolution
is commutative, so for c steps the binomial theorem gives the exact identity

    W^{*c} = sum_{k=0}^{c} C(c, k) B^{*(c-k)} * R^{*k},

and delta(eps) of a measure, sum_j m_j (1 - e^{eps - t_j})_+ + m_inf (Steinke 2022, Prop. 7),
is linear in it. Each term k is a composition of two parts, computed by the engine with its
own tilt and window (its bulk is light, its tail conditioned on k large losses), so each term's
error budget is relative to its own size rather than to the whole measure's. The terms k > K
weigh at most C(c, K+1) |R|^{K+1} (|B| + |R|)^{c-K-1} (the K+1 first large-loss steps chosen
first over-counts every outcome with more), added to the upper bound and dropped from the
lower (every term is non-negative). Nothing else changes: the discretisations stay those of
:mod:`.discretize`, proven for any number of compositions, and the split is exact on them.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .discretize import Discretized
from .engine import PartPMF, compose, mass_margin, tilt_cap
from .pmf import GridPMF, remembered
from .state import Bound

#: the losses are split at this fraction of the answer's epsilon: a single step below it
#: cannot reach the answer alone, and one above it is rare enough that few terms suffice
CUT = 0.5
#: the terms left out weigh at most this fraction of delta (charged to the upper bound)
REMAINDER = 1e-6
#: at most this many large-loss steps are expanded (K); beyond, the remainder is charged as is
MAX_K = 8
_U = 2.0 ** -53


@dataclasses.dataclass(frozen=True)
class Term:
    """C(c, k) B^{*(c-k)} * R^{*k} composed with the other parts: its weight C(c, k), its
    parts, and the tilt and target its composition is sized for."""
    weight: float
    parts: list[PartPMF]
    lam: float
    target: tuple[float, float]


@dataclasses.dataclass(frozen=True)
class Split:
    """The expansion of one direction: its terms k = 0..K and a bound on those left out."""
    terms: list[Term]
    remainder: float
    cut: float
    #: what the parts' lower slack costs the whole sum (subtracted from the lower bound once)
    lower_slack: float = 0.0


def _halves(d: Discretized, i: int) -> tuple[Discretized, Discretized]:
    """(B, R): d's bins below position i, and the bins from i on with the masses at +inf,
    without d's lower slack (charged once to the whole sum, :func:`plan`)."""
    def part(lo, hi, with_inf):
        up, low = np.zeros_like(d.upper), np.zeros_like(d.lower)
        up[lo:hi], low[lo:hi] = d.upper[lo:hi], d.lower[lo:hi]
        return dataclasses.replace(d, upper=up, lower=low, lower_slack=0.0,
                                   upper_inf=d.upper_inf if with_inf else 0.0,
                                   lower_inf=d.lower_inf if with_inf else 0.0)
    return part(0, i, False), part(i, d.upper.size, True)


def _log_mass(d: Discretized) -> float:
    """log of an upper bound on the upper measure's total mass (its sum rounded up)."""
    s = (float(np.sum(np.maximum(d.upper, 0.0))) + d.upper_inf) * (1 + (d.upper.size + 4) * _U)
    return math.log(s) if s > 0 else -math.inf


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def plan(pparts: list[PartPMF], h: float, eps0: float, delta_scale: float,
         saddle_at, eps_tilt: float | None = None) -> Split | None:
    """The expansion of the most repeated part (count >= 2) at the loss CUT eps0, with as many
    terms as bring the remainder below REMAINDER delta_scale (at most MAX_K + 1); None where that
    part has no finite mass at or above the cut (the plain composition is then the same), or
    either half has none in either bound (the plain composition is then used).
    ``saddle_at(parts, eps)`` gives each term's tilt and Chernoff estimate of its delta at
    ``eps_tilt`` (default eps0): a term's error budget grows like e^{lam (eps_tilt - eps)} below
    it, so a query tilts at the low end of where it expects its answer."""
    eps_tilt = eps0 if eps_tilt is None else eps_tilt
    counts = [p.count for p in pparts]
    j = int(np.argmax(counts))
    c = counts[j]
    d = pparts[j].d
    x = CUT * eps0 / h
    if not math.isfinite(x) or x >= d.jlo + d.upper.size:
        return None                       # (the cut beyond the grid: nothing to split off)
    i = int(math.floor(x)) - d.jlo
    # (each half needs positive finite mass in both bounds: a factor without any makes the
    # engine's window undefined; the optimistic PMF's top tail may have been dropped)
    if c < 2 or not 1 <= i < d.upper.size or not all(
            np.any(m > 0) for m in (d.upper[:i], d.upper[i:], d.lower[:i], d.lower[i:])):
        return None
    B, R = _halves(d, i)
    others = pparts[:j] + pparts[j + 1:]
    lb, lr = _log_mass(B), _log_mass(R)
    l_all = float(np.logaddexp(lb, lr))
    l_others = sum(p.count * _log_mass(p.d) for p in others)
    # (the remainder bounds the upper end only)
    margin = math.log1p(mass_margin(pparts, h, Bound.UPPER)) + 1e-9

    def log_rest(K):   # log of the bound on the terms k > K
        if K + 1 > c:
            return -math.inf
        return (_log_choose(c, K + 1) + (K + 1) * lr + (c - K - 1) * l_all + l_others
                + margin + 1e-12 * c)
    K = 0
    while K < min(MAX_K, c) and log_rest(K) > math.log(REMAINDER * delta_scale):
        K += 1
    bare = [PartPMF(dataclasses.replace(p.d, lower_slack=0.0), p.count) for p in others]
    terms = []
    for k in range(K + 1):
        parts = bare + [PartPMF(B, c - k)] * (c > k) + [PartPMF(R, k)] * (k > 0)
        lam, log_d = saddle_at(parts, eps_tilt)
        terms.append(Term(float(math.comb(c, k)), parts, min(lam, tilt_cap(parts)),
                          (eps_tilt, log_d)))
    rest = log_rest(K)
    return Split(terms, math.exp(rest) if rest < 0.0 else 1.0, (d.jlo + i) * h,
                 _slack_charge(pparts))


def _slack_charge(pparts: list[PartPMF]) -> float:
    """The engine's charge for the parts' lower slack on their whole composition, sum_j c_j s_j
    times max(1, its total lower mass) (docs/pld-internals.md, section 1: a factor whose curve
    is raised by at most s raises the composition's by at most s times the other factors' total
    mass). The expansion is an identity on the measures, so the weighted sum of the terms,
    composed without slack, is that composition: charged once, not per term (per term it
    depended on how the clipped mass falls across the cut, which is not known)."""
    s = sum(p.count * p.d.lower_slack for p in pparts)
    if s <= 0.0:
        return 0.0
    tot = 0.0
    for p in pparts:
        m = (float(np.sum(np.abs(p.d.lower))) + p.d.lower_inf) * (1 + (p.d.lower.size + 4) * _U)
        tot += p.count * math.log(m) if m > 0 else -math.inf
    return s * math.exp(min(max(tot + 1e-12 * sum(p.count for p in pparts), 0.0), 700.0)) \
        * (1 + 1e-9)


def compose_split(split: Split, h: float, bound: Bound) -> SplitPMF:
    """Each term composed by the engine for ``bound``, weighted (a MemoryError where a term's
    window exceeds the engine's largest FFT, as for a plain composition)."""
    pmfs = []
    for t in split.terms:
        pmf = compose(t.parts, h, t.lam, bounds=(bound,), target=t.target).of(bound)
        assert pmf is not None                      # composed for this bound just now
        pmfs.append(pmf)
    upper = bound is Bound.UPPER
    return SplitPMF([t.weight for t in split.terms], pmfs, split.remainder if upper else 0.0,
                    upper, 0.0 if upper else split.lower_slack)


#: relative margin on the weighted sums of the terms (the weights' rounding, u each, and the
#: sum's, (K + 1) u: far below it)
_SUM_MARGIN = 1e-12


@dataclasses.dataclass
class SplitPMF:
    """sum_k w_k delta_k(eps) (+ the remainder, for the upper bound): the same queries as a
    :class:`~.pmf.GridPMF`, read off the terms' PMFs."""
    weights: list[float]
    pmfs: list[GridPMF]
    remainder: float
    upper: bool
    #: subtracted from the lower bound (:func:`_slack_charge`)
    slack: float = 0.0
    #: epsilon(delta) by delta (a query reads it more than once; the sum never changes)
    _eps_memo: dict[float, float] = dataclasses.field(default_factory=dict, repr=False,
                                                      compare=False)

    def _sum(self, vals) -> np.ndarray:
        s = np.sum([w * np.asarray(v, dtype=float) for w, v in zip(self.weights, vals)], axis=0)
        if self.upper:
            return np.minimum(s * (1 + _SUM_MARGIN) + self.remainder, 1.0)
        return np.maximum(s * (1 - _SUM_MARGIN) - self.slack, 0.0)

    @property
    def inf(self) -> float:
        return float(self._sum([p.inf for p in self.pmfs]))

    def delta(self, epsilon) -> np.ndarray:
        e = np.asarray(epsilon, dtype=float)
        return self._sum([p.delta(e) for p in self.pmfs])

    def delta_at(self, eps: float) -> float:
        """float(self.delta(np.array([eps]))[0]): the bound at one eps."""
        return float(self.delta(np.array([eps]))[0])

    def budget(self, eps: float) -> float:
        """The floating-point budget of the sum at eps (the terms' budgets, weighted)."""
        return float(sum(w * p.budget(eps) for w, p in zip(self.weights, self.pmfs))) \
            + self.slack

    def epsilon(self, delta: float) -> float:
        """For an upper bound: an eps at which the bound is <= delta (checked), the smallest
        up to bisection; for a lower bound: an eps at which it is > delta (checked; the true
        delta(eps) is non-increasing, so epsilon(delta) is at least it), or 0. inf where the
        bound stays above delta at the end of every term's grid."""
        return remembered(self._eps_memo, float(delta), self._epsilon)

    def _epsilon(self, delta: float) -> float:
        f = lambda v: float(self.delta(np.array([v]))[0])  # noqa: E731
        if f(0.0) <= delta:
            return 0.0
        hi = max(float(p.t[-1]) + p.h for p in self.pmfs if p.mass.size) \
            if any(p.mass.size for p in self.pmfs) else 0.0
        if not f(hi) <= delta:
            return math.inf
        lo = 0.0
        for _ in range(200):           # f(lo) > delta >= f(hi) throughout
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi or hi - lo <= 1e-14 * hi:
                break
            if f(mid) <= delta:
                hi = mid
            else:
                lo = mid
        return hi if self.upper else lo


@dataclasses.dataclass(frozen=True)
class SplitComposed:
    """A direction composed as a split (the counterpart of :class:`~.engine.Composed`): its
    upper and lower sums, each None where not composed yet."""
    upper: SplitPMF | None = None
    lower: SplitPMF | None = None
