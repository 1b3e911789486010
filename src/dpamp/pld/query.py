"""Error-controlled epsilon(delta) and delta(epsilon) from privacy-loss distributions.

The engine picks the grid itself: the bracket [lower, upper] from the optimistic and pessimistic
discretisations shrinks like h^2 (both are second-order constructions), so after a first grid
chosen from a rough model the step is refined by sqrt(tol / gap) until the bracket is within the
tolerance (default 1e-3 of the answer). Both directions of the composition are accounted (the
pair and its swap; one suffices when every part is symmetric); the answer is the worse one, and
the lower bound is that of the direction with the larger upper bound (any direction's lower bound
is a lower bound on the true, worst-direction value).

Corners where a 1e-3 bracket is not reached by default, with the widths measured: docs/pld.md
(section "Corners"); the best proven bracket is returned there, with a note saying why.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import time

import numpy as np

from ..core import validate as V
from ..core.progress import progress
from ..core.threads import pooled, submit
from ..core.errors import OutOfReach
from .batch import MAX_LOSS, discretize_parts as _discretize  # noqa: F401 (MAX_LOSS: API)
from .cache import PLDCache, cache_key as _key
from .engine import MAX_N, Composed, PartPMF, compose, grid_log_mgf_many, mgf_layout  # noqa: F401
from .engine import sized as _sized, tilt_cap as _tilt_cap
from . import atomic
from .caps import atomic_caps
from .majorant import majorise
from .grid import align as _align, initial_h as _initial_h, tail_fraction
from .sources import ProfileSource, SymmetricCurve, parts_of
from .split import Split, SplitComposed, compose_split, plan as _split_plan
from .state import Bound

#: most grid refinements tried; then (or when the largest grid is reached) the best proven
#: bracket so far is returned, saying that tol was not met. Work is bounded by rounds and grid
#: points, never by the clock: the same query gives the same bits on any machine, under any load
MAX_ROUNDS = 7
#: no time budget unless one is asked for (the ``budget`` option, seconds: then the answer may
#: depend on the machine's speed, and the note says so when it stops a refinement)
BUDGET = None


@dataclasses.dataclass
class Bracket:
    upper: float
    lower: float | None
    h: float
    rounds: int
    met: bool = True       # whether upper - lower is within the tolerance
    note: str = ""         # why not, where it is not


@dataclasses.dataclass(slots=True)
class Direction:
    """One direction of a query's composition, as :func:`_direction` composed it: its parts
    on the grid of step h, the tilt lam and target it was composed with, and its PMFs. The lower
    PMF is filled in on first need (:func:`_evaluate`), from ``lower_job`` when another thread
    composed it meanwhile."""
    parts: list[PartPMF]
    lam: float
    pmf: Composed | SplitComposed
    target: tuple[float, float]
    h: float
    #: whether the parts were discretised optimistically too (False: a coarse direction,
    #: upper bound only, see :func:`_compute_directions`)
    optimistic: bool
    lower_job: concurrent.futures.Future | None = None
    #: the binomial expansion the PMFs are sums over (:mod:`.split`), if composed that way
    split: Split | None = None

    def compose_lower(self):
        """The lower PMF, composed here (when no other thread has)."""
        if self.split is not None:
            return compose_split(self.split, self.h, Bound.LOWER)
        return _lower_pmf(self.parts, self.h, self.lam, self.target)


@dataclasses.dataclass(slots=True)
class QueryState:
    """One round of a query (cached under the query's key, :func:`_query_key`): the grid step,
    the directions composed on it, and what :func:`_evaluate` last found there (updated on
    every evaluation, a cached state's too)."""
    h: float
    #: whether every part has a lower bound (otherwise the PLD gives an upper bound only)
    has_lower: bool
    dirs: list[Direction]
    #: the (upper, lower) bracket of the last evaluation (lower None: none proven)
    last: tuple[float, float | None] = (math.inf, None)
    #: whether the floating-point budgets rather than the grid made that bracket wide (decided
    #: where it missed tol: only a refinement reads it)
    error_bound: bool = False


def _exact_parts(dirs) -> bool:
    """Whether every part is an exact loss distribution (the bracket then shrinks like h^2);
    profile-based parts and sources with ``exact = False`` have an intrinsic gap."""
    return all(getattr(s, "exact", not isinstance(s, ProfileSource)) for d in dirs for s, _ in d)


def _has_lower(dirs) -> bool:
    """Whether every part can be discretised optimistically (profile-only parts need a lower
    profile); otherwise the PLD gives an upper bound only."""
    return all(getattr(src, "has_lower", True) for d in dirs for src, _ in d)


def _directions(mechanism):
    parts = parts_of(mechanism)
    if all(getattr(src, "symmetric", False) for src, _ in parts):
        return [parts]
    return [parts, [(src.swapped(), c) for src, c in parts]]


_S = np.geomspace(1e-2, 1e6, 97)
#: fraction of the Chernoff saddle point used as the exponential tilt of the FFT: half the
#: saddle keeps the FFT's error far below the tolerance near the answer for the usual deltas
#: while the tilted measure's heavy tail (rare large losses) widens the window less; when the
#: error budget dominates the bracket (tiny deltas) the next round tilts at the full saddle
TILT = 0.5


def _log_mgf(pparts, bound=Bound.UPPER, s=_S, layout=None):
    """sum_j c_j log sum_t m_j(t) e^{s t} (exact, on the discretised PMFs), for each s
    (``layout``: engine.mgf_layout of these masses, when the caller asks several times)."""
    if not pparts:
        return np.zeros(s.size)
    if layout is None:
        layout = mgf_layout([p.mass(bound) for p in pparts], [p.d.jlo for p in pparts])
    K = layout(pparts[0].d.h, s)
    return np.sum(np.array([float(p.count) for p in pparts])[:, None] * K, axis=0)


#: the saddle searches take every COARSE_S-th point of _S, then the neighbours of the best (a
#: Chernoff exponent is quasi-convex in s: the grid's minimum is next to the coarse one)
COARSE_S = 4


#: the points on either side of a guess that :func:`_grid_min` looks at first, and how many
#: times that window moves on towards the minimum before the search from scratch
NEAR_S = 3
NEAR_MOVES = 2


def _grid_min(pparts, score, near=None):
    """(index into _S, score) of the smallest score(K(s), s) over _S, from the coarse points
    and the neighbours of the best of them (K on the discretised PMFs, :func:`_log_mgf`).
    ``near``: a guess, one of _S (another direction's saddle): the NEAR_S points on either
    side of it first, and where their smallest score is inside them (the score is
    quasi-convex: then it is the grid's), that one, without the search."""
    lay = mgf_layout([p.d.upper for p in pparts], [p.d.jlo for p in pparts]) if pparts else None
    if near is not None and pparts:
        got = _near_min(pparts, score, int(np.searchsorted(_S, near)), lay)
        if got is not None:
            return got
    idx = np.arange(0, _S.size, COARSE_S)
    if idx[-1] != _S.size - 1:
        idx = np.append(idx, _S.size - 1)
    # the coarse points in two runs: those the MGF takes in blocks of 1024 points, then the
    # larger s (each block size another pass over the masses) only if the score is still
    # falling at the end of the first run (quasi-convex: once it rises it rises)
    h = pparts[0].d.h if pparts else 1.0
    first = idx[_S[idx] * h * 1024 <= 30.0]
    if 2 <= first.size < idx.size:
        v = score(_log_mgf(pparts, s=_S[first], layout=lay), _S[first])
        if v[-1] > np.min(v):
            idx = first
        else:
            rest = idx[first.size:]
            v = np.concatenate([v, score(_log_mgf(pparts, s=_S[rest], layout=lay), _S[rest])])
    else:
        v = score(_log_mgf(pparts, s=_S[idx], layout=lay), _S[idx])
    i0 = int(idx[int(np.argmin(v))])
    # (the indices around i0 not evaluated yet, in order: np.setdiff1d's, without its sorts)
    seen = set(idx.tolist())
    near = np.array([j for j in range(max(0, i0 - COARSE_S + 1), min(_S.size, i0 + COARSE_S))
                     if j not in seen], dtype=np.int64)
    if near.size:
        idx = np.concatenate([idx, near])
        v = np.concatenate([v, score(_log_mgf(pparts, s=_S[near], layout=lay), _S[near])])
    order = np.argsort(idx, kind="stable")          # ties: the smallest s, as argmin over _S
    idx, v = idx[order], v[order]
    k = int(np.argmin(v))
    return int(idx[k]), float(v[k])


def _near_min(pparts, score, i, lay):
    """(index, score) of the smallest score at the NEAR_S points on either side of _S[i] and
    itself, where it is inside them (or at an end of _S); where it is at an edge, the window
    moves that way (quasi-convex: the minimum is beyond it), NEAR_MOVES times at most; else
    None."""
    lo, hi = max(0, i - NEAR_S), min(_S.size, i + NEAR_S + 1)
    step = 2 * NEAR_S                         # (each move twice as far as the one before)
    seen_idx, seen_v = np.zeros(0, dtype=np.int64), np.zeros(0)
    for _ in range(NEAR_MOVES + 1):
        seen = set(seen_idx.tolist())
        new = np.array([j for j in range(lo, hi) if j not in seen],
                       dtype=np.int64)
        v = score(_log_mgf(pparts, s=_S[new], layout=lay), _S[new])
        if np.isnan(v).any():
            return None
        seen_idx, seen_v = np.concatenate([seen_idx, new]), np.concatenate([seen_v, v])
        inside = (seen_idx >= lo) & (seen_idx < hi)
        order = np.argsort(seen_idx[inside], kind="stable")
        idx, vals = seen_idx[inside][order], seen_v[inside][order]
        k = int(np.argmin(vals))              # (ties: the smallest s, as argmin over _S)
        if k == 0 and lo > 0:
            lo, hi = max(0, lo - step), lo + 1
        elif k == idx.size - 1 and hi < _S.size:
            lo, hi = hi - 1, min(_S.size, hi + step)
        else:
            return int(idx[k]), float(vals[k])
        step *= 2
    return None


def saddle_for_delta(pparts, delta, near=None):
    """Chernoff estimate of epsilon(delta) and its tilt: min_s (K(s) - log delta) / s
    (``near``: a guess of the tilt, :func:`_grid_min`)."""
    i, e = _grid_min(pparts, lambda K, s: (K - math.log(delta)) / s, near)
    return e, float(_S[i])


def saddle_for_epsilon(pparts, eps, near=None):
    """Tilt for delta(eps), and the Chernoff estimate log delta <= min_s K(s) - s eps
    (``near``: a guess of the tilt, :func:`_grid_min`)."""
    # (s eps overflows to inf for eps near the largest double: a score of -inf, no warning)
    with np.errstate(over="ignore"):
        i, v = _grid_min(pparts, lambda K, s: K - s * eps, near)
    return float(_S[i]), float(min(v, 0.0))


_CACHE = PLDCache()


def _too_fine(tol, h):
    asked = f"tol={tol:g}" if tol is not None else "the default tol (1e-3 relative)"
    finer = f" (finer than h={h:.3g})" if h else ""
    return OutOfReach(f"{asked} needs a grid with more than {MAX_N} points{finer}; use a "
                      "larger tol or method='rdp'")


def epsilon_bracket(mechanism, delta: float, tol: float | None = None,
                    budget: float | None = None, max_rounds: int | None = None) -> Bracket:
    """Proven bounds lower <= epsilon(delta) <= upper with upper - lower <= tol (default
    1e-3 of upper) where the grid and ``max_rounds`` refinements (default MAX_ROUNDS) allow,
    and a time budget (seconds) if one is given; else the best proven bracket reached, with
    ``met`` False and a note."""
    delta = V.delta(delta)
    if tol is not None:
        tol = V.positive("tol", tol)
    budget = BUDGET if budget is None else V.positive("budget", budget)
    max_rounds = _rounds(max_rounds)
    dirs = _directions(mechanism)
    tol_rel = None if tol is None else tol / max(_gaussian_guess(d, delta) for d in dirs)
    frac = tail_fraction(delta, tol_rel)
    tail_total = delta * frac
    if tail_total < 1e-300:
        # the tails the grids leave out must weigh << delta, and below 1e-300 they cannot
        raise OutOfReach(f"delta={delta:g} is below what the PLD grids resolve "
                         f"({1e-300 / frac:g}); use method='rdp'")
    # the pure epsilon and each direction's atomic cap bound its epsilon: they decide tiny
    # deltas, and delta at the mass at +inf of an (epsilon, delta) part
    pure = _pure_epsilon(mechanism)
    caps = [min(pure, c) for c in atomic_caps(dirs, delta)]
    return _proven(dirs, _refine(
        dirs, _query_key(mechanism, "epsilon", delta, tol, max_rounds, budget), tol,
        (budget, max_rounds), "epsilon",
        lambda h, tilt, grid_tol, prev: _compute_for_eps(dirs, delta, grid_tol, h, tail_total,
                                                         tilt, prev),
        _or_exact(lambda state: _evaluate(state, tol, lambda pmf, i: min(pmf.epsilon(delta),
                                                                         caps[i]),
                                          at=lambda up: up, floor=1e-12),
                  lambda last: _exact(dirs, last, tol, lambda: atomic.epsilon_bounds(dirs, delta),
                                      floor=1e-12))))


def _lower_proven(dirs) -> bool:
    """Whether the optimistic PMFs bound an actual pair's composition. A symmetrised curve
    (:class:`~.sources.SymmetricCurve`, sampling without replacement) bounds both orders of
    every pair from above: its own optimistic PMF is a lower bound on its composition, which
    for more than one step is not the composition of any actual pair (nor below it); nor
    does a part that dominates without being attained (:class:`~.sources.NotAttained`)."""
    return all((c == 1 or not isinstance(src, SymmetricCurve)) and getattr(src, "attained", True)
               for d in dirs for src, c in d)


def _proven(dirs, b: Bracket) -> Bracket:
    """``b`` with its lower end dropped where it is not proven (:func:`_lower_proven`); the
    refinement still measures the grid error with it, so the upper end is as tight as before."""
    return b if _lower_proven(dirs) else dataclasses.replace(b, lower=None)


def _query_key(mechanism, what: str, arg: float, tol, max_rounds: int, budget=None):
    """The cache key of one query: the mechanism and every input of the query, so that a state
    is reused only by the same question, which then gets the same bits as in a fresh process
    (a state composed for another delta would give another, equally proven, bracket). The
    time ``budget`` is part of it: a state a clock cut short is never handed to a query
    without one."""
    return (_key(mechanism), what, float(arg), tol, max_rounds, budget)


def _rounds(max_rounds) -> int:
    return MAX_ROUNDS if max_rounds is None else V.integer("max_rounds", max_rounds, low=1)


def _refine(dirs, key, tol, limits, what, compute, evaluate) -> Bracket:
    """Reuse a cached state if it brackets this query; else compute on a grid, and refine it by
    sqrt(tol / gap) (the gap falls like h^2) until the bracket is within tol -- or tilt at the
    full saddle when the floating-point budget rather than the grid is the limit. Where tol
    cannot be met (profile-only parts; two rounds that did not narrow the gap; the largest
    grid; the time budget; MAX_ROUNDS) the tightest proven bracket of all is returned, not met."""
    cached = _CACHE.get(key)
    if cached is not None:
        res = evaluate(cached)
        if res is not None:
            return res
    budget, max_rounds = limits
    deadline = math.inf if budget is None else time.monotonic() + budget
    h, tilt, best, grid_tol, stuck, split, prev_gap, flat = None, TILT, None, tol, None, None, None, 0
    # one tick per round, drawn on a terminal once the refinement has lasted a second
    for rounds in progress(iter(range(1, max_rounds + 1)), None, f"PLD {what}", unit="round",
                           delay=1.0):
        started = time.monotonic()
        try:
            state = compute(h, tilt, grid_tol, split)
            _CACHE.put(key, state)
            res = evaluate(state)
        except MemoryError:
            if best is None and h is None and grid_tol is not None:
                grid_tol = None        # a first grid sized for the default tol, then refine
                continue
            if best is None:
                raise _too_fine(tol, h) from None
            return _not_met(best, rounds - 1, f"the grid that tol needs exceeds {MAX_N} points")
        if res is not None:
            return dataclasses.replace(res, rounds=rounds)
        best = _tighter(best, state)
        if not _exact_parts(dirs) and rounds >= 2:
            return _not_met(best, rounds, "some part's lower and upper bounds differ by "
                            "construction (a privacy profile; random allocation, 1 < k < t; "
                            "truncated Poisson sampling)")
        if time.monotonic() > deadline:
            return _not_met(best, rounds, f"the time budget ({budget:g} s) was spent")
        up, low = state.last
        gap = up - low
        # (once split, each round splits around the latest estimate)
        split = state.last if split is not None and math.isfinite(up) else split
        if state.error_bound and tilt < 1.0:
            # the FFT's error budget, not the grid, limits: tilt at the full saddle, and split
            # the composition by how many steps draw a large loss (:mod:`.split`), where a
            # heavy tail of rare large losses keeps any one tilt from reaching the answer
            tilt, h, split = 1.0, state.h, state.last
        elif state.error_bound:
            # at the full saddle: a finer grid narrows the FFT's bins as much as it lengthens
            # the FFT, so one halving is tried, and refinement ends if the gap stays
            if stuck is not None and not gap < 0.5 * stuck:
                return _not_met(best, rounds, "the FFT's floating-point budget limits it here")
            stuck, h = gap, _align(dirs[0], state.h * 0.5)
        else:
            # the grid's gap falls like h^2 (by 0.64 at least a round): two rounds in a row that
            # do not narrow it mean the parts' own bounds decide it (a random-allocation
            # epoch's grid and tail charges at delta 1e-12 kept it at 1.2e-3 for 10 s); an
            # infinite gap (nothing proven yet: the grids must get finer) never counts
            flat = flat + 1 if (prev_gap is not None and math.isfinite(gap)
                                and not gap < 0.9 * prev_gap) else 0
            if flat >= 2:
                return _not_met(best, rounds, "refining the grid no longer narrows the bracket "
                                              "(the parts' own bounds decide it here)")
            prev_gap = gap
            target = tol if tol is not None else 1e-3 * max(up, 1e-300)
            shrink = math.sqrt(0.7 * target / max(gap, 1e-300)) if math.isfinite(gap) else 0.5
            h = _align(dirs[0], state.h * max(0.2, min(0.8, shrink)))
        # a round costs about its grid's size: one that cannot end within the budget is not
        # started (the budget is kept); the grid the rest affords is, if 10 % finer (random
        # allocation at small sigma stopped at [0.33, 31.5] after 2.3 of 10 s: grids clamped)
        now = time.monotonic()
        if budget is not None and now + (now - started) * state.h / h > deadline:
            h_fit = state.h * (now - started) / max(deadline - now, 1e-12)
            if state.error_bound or not h_fit < 0.9 * state.h:
                return _not_met(best, rounds, f"the time budget ({budget:g} s) would be spent "
                                              "before the next grid's round ends")
            h = _align(dirs[0], h_fit)
    if best is None:                  # every round ran out of memory
        raise _too_fine(tol, h)
    return _not_met(best, max_rounds, f"{max_rounds} grid refinements did not reach tol")


def _tighter(best: Bracket | None, state: QueryState) -> Bracket:
    """The tightest proven bracket over the rounds so far: the smallest upper bound and the
    largest lower bound (each is proven on its own, whichever grid gave it), and the finest h."""
    up, low = state.last
    if best is None:
        return Bracket(up, low, state.h, 0)
    if low is not None and best.lower is not None:
        low = max(low, best.lower)
    return Bracket(min(up, best.upper), low, min(state.h, best.h), 0)


def _not_met(best: Bracket, rounds, why) -> Bracket:
    return dataclasses.replace(best, rounds=rounds, met=False, note=why)


def _or_exact(evaluate, exact):
    """``evaluate`` of a state, and where its grid misses tol, ``exact(state.last)``: a
    bracket by another route, or None (go on refining). A query whose grid meets tol never
    asks, so its bits are the grid's."""
    def both(state):
        res = evaluate(state)
        return res if res is not None else exact(state.last)
    return both


def _exact(dirs, last, tol, ends, floor=0.0) -> Bracket | None:
    """Where every part is a short list of atoms (:mod:`.atomic`), the bracket of the exact
    composition ``ends()`` = (upper, lower), intersected with the grid's ``last`` (upper,
    lower) (both proven); else None. Where the grid was not aligned to the atoms (an enumerated
    epoch of random allocation, or more than grid.MAX_ANCHORS distinct losses) it smears each
    atom over a cell, so near a composed atom's loss (a kink of delta(eps), a jump of
    eps(delta)) no affordable grid narrows the bracket, and the refinement spent all its rounds
    (up to 40 s) where this answers in one pass over the outcomes. The masses' rounding is
    far below any grid's (REL_MARGIN), so no finer grid would narrow what this leaves."""
    if not atomic.applies(dirs):
        return None
    up, low = ends()
    up = min(up, last[0])
    if last[1] is not None:
        low = max(low, last[1])
    target = tol if tol is not None else 1e-3 * max(up, floor)
    if up == 0.0 or low == math.inf or (math.isfinite(up) and up - low <= target):
        return Bracket(up, low, 0.0, 1)
    return Bracket(up, low, 0.0, 1, False, "the exact composition of the atoms: the rounding "
                   "of their masses leaves this gap (the query sits at a kink or jump of the "
                   "curve)")


def _gaussian_guess(direction_parts, delta):
    """epsilon(delta) of the Gaussian with the composition's mean and variance of the loss:
    only to size the first grid (the tolerance is relative to epsilon)."""
    M = sum(c * src.mean for src, c in direction_parts)
    V = sum(c * max(src.var, 0.0) for src, c in direction_parts)
    return max(M + math.sqrt(2.0 * V * math.log(1.0 / delta)), 1e-6)


def _direction(d, h, tail_total, tilt, saddle, log_delta_target, optimistic=True,
               split_at=None, sized=None, eager=True, near=None) -> Direction:
    """One direction composed at step h: tilted at ``tilt`` times the query's saddle, or, with
    ``split_at`` = (eps0, delta scale, eps_tilt), expanded by how many steps draw a loss above
    CUT eps0, each term tilted for eps_tilt (:mod:`.split`; where no part has such losses, the
    plain composition at the full saddle). ``sized(n)`` is told the length of the upper
    composition's transforms before they run (inf for a split composition); ``eager`` False
    leaves the lower PMF to the first need (:func:`_evaluate`) even where it could be composed
    meanwhile on another thread. ``saddle(pp, near)``: (Chernoff estimate, saddle, log delta
    or None), ``near`` a guess of the saddle (:func:`_grid_min`); ``sized`` is told the saddle
    too, as its second argument."""
    # (upper PMFs majorised where the mass margin would compound: :mod:`.majorant`)
    pp = majorise(_discretize(d, h, tail_total, optimistic), h)
    sp = None if split_at is None else \
        _split_plan(pp, h, split_at[0], split_at[1], saddle_for_epsilon, split_at[2])
    if sp is not None:
        if sized is not None:
            sized(math.inf, None)
        lower = submit(compose_split, sp, h, Bound.LOWER) if optimistic and pooled() else None
        return Direction(pp, 0.0, SplitComposed(upper=compose_split(sp, h, Bound.UPPER)),
                         (split_at[0], math.log(split_at[1])), h, optimistic, lower, sp)
    e_est, at, log_d = saddle(pp, near)
    lam = min(at * tilt, _tilt_cap(pp))
    target = (e_est, log_d if log_d is not None else log_delta_target)
    upper = _sized(pp, h, lam, Bound.UPPER, target)
    if sized is not None:
        sized(upper.n, at)
    # the lower PMF is wanted if this direction turns out the worse one (:func:`_evaluate`): it
    # is composed meanwhile on another thread where the transforms are long enough to pay for
    # it (the result is the same either way)
    lower = submit(_lower_pmf, pp, h, lam, target) \
        if optimistic and eager and _parallel(upper.n) else None
    return Direction(pp, lam, Composed(upper=upper.finish()), target, h, optimistic, lower)


#: FFT length from which work is run beside a composition on another thread. numpy and the
#: FFT release the GIL only inside their larger loops, so two threads of the many small array
#: calls of a composition mostly hand the GIL back and forth (each handoff a wake-up of the
#: other thread); below this length that cost more CPU and wall than the overlap saved
#: (measured: W1's 25600 bins, 7.5 ms of CPU alone, 9-15 ms with a thread; W5's 233280
#: bins gained a tenth of the wall)
PARALLEL_N = 1 << 17


def _parallel(n: float) -> bool:
    """Whether work beside a composition of n bins goes to another thread."""
    return n >= PARALLEL_N and pooled()


def _lower_pmf(pp, h, lam, target):
    return compose(pp, h, lam, bounds=(Bound.LOWER,), target=target).lower


#: the other directions are first accounted on a grid this many times coarser, pessimistically
#: only (an upper bound is an upper bound on any grid): usually that already shows them to be
#: the better ones (for Poisson-subsampled Gaussians the two directions' epsilons differ by
#: far more than the coarse grid's error), and they then cost a fraction of the first
COARSE = 8


def _compute_directions(dirs, h, tail_total, tilt, saddle, log_delta, query, split_at=None):
    """The first direction at step h; the others first at COARSE h, upper bound only (on
    another thread meanwhile, where the first direction's transforms are long: :func:`_parallel`;
    else after it): only if one could be the worse direction is it redone at h (with both
    bounds; its lower PMF then composed only if it is the worse one). The coarse passes look
    for their saddle near the first direction's first (:func:`_grid_min`): any tilt composes
    into a proven bound, and their upper bounds only decide which directions are redone."""
    args = (COARSE * h, tail_total, tilt, saddle, log_delta)
    jobs: list[concurrent.futures.Future] = []
    near: list[float | None] = [None]

    def others(n, at):
        near[0] = at
        if _parallel(n):
            jobs.extend(submit(_direction, d, *args, optimistic=False, split_at=split_at,
                               near=at) for d in dirs[1:])
    try:
        out = [_direction(dirs[0], h, tail_total, tilt, saddle, log_delta, split_at=split_at,
                          sized=others)]
    finally:
        concurrent.futures.wait(jobs)
    coarse = [j.result() for j in jobs] if jobs else \
        [_direction(d, *args, optimistic=False, split_at=split_at, near=near[0])
         for d in dirs[1:]]
    best = query(out[0].pmf.upper)
    for d, c in zip(dirs[1:], coarse):
        if query(c.pmf.upper) <= best:
            out.append(c)
        else:
            out.append(_direction(d, h, tail_total, tilt, saddle, log_delta,
                                  split_at=split_at, eager=False))
    return out


def _compute_for_eps(dirs, delta, tol, h, tail_total, tilt=TILT, prev=None):
    """One round of an epsilon(delta) query at step h (None: the first grid, sized here);
    ``prev``, the (upper, lower) bracket of an earlier round, asks for the split composition
    (:mod:`.split`) around its epsilon."""
    if h is None:
        # the grid is sized for the direction that looks the worse (the others are first
        # accounted at COARSE h and redone only if they could be the worse one): the swap of
        # a small-sigma subsampled pair is a near-atom whose tiny spread would ask for a grid
        # thousands of times finer than the answer needs
        guesses = [_gaussian_guess(d, delta) for d in dirs]
        e0 = max(guesses)
        target = tol if tol is not None else 1e-3 * e0
        worst = dirs[int(np.argmax(guesses))]
        h = _initial_h(worst, target, z=max(1.0, math.sqrt(2 * math.log(1 / delta))))

    def saddle(pp, near=None):
        e_est, lam = saddle_for_delta(pp, delta, near)
        return e_est, lam, None
    split_at = None
    if prev is not None:
        up, low = prev
        # split at half the upper end, each term tilted for the lower end (its error budget
        # grows below the tilt's point)
        eps0 = up if math.isfinite(up) else (low or max(_gaussian_guess(d, delta) for d in dirs))
        split_at = (eps0, delta, low if low and 0.0 < low < eps0 else 0.5 * eps0)
    return QueryState(h, _has_lower(dirs), _compute_directions(
        dirs, h, tail_total, tilt, saddle, math.log(delta), lambda pmf: pmf.epsilon(delta),
        split_at))


def _evaluate(state, tol, bound, at, floor=0.0):
    """Bracket from a state, or None (with the bracket recorded in state) if it misses tol.

    ``bound(pmf, i)`` reads the queried quantity (epsilon(delta) or delta(epsilon)) off one PMF
    of direction i;
    ``at(up)`` is the epsilon where the error budget is compared with the gap. The dominant
    direction's lower PMF is composed here, on first need."""
    ups = [bound(d.pmf.upper, i) for i, d in enumerate(state.dirs)]
    dom = int(np.argmax(ups))
    up = ups[dom]
    dd = state.dirs[dom]
    if not state.has_lower:
        state.last, state.error_bound = (up, None), False
        return Bracket(up, None, state.h, 0)
    if not dd.optimistic:
        # a cached state queried elsewhere: its coarse, pessimistic-only direction is now the
        # worse one, and composing its empty lower PMF would only prove 0; start afresh
        state.last, state.error_bound = (up, 0.0), False
        return None
    if dd.pmf.lower is None:
        job, dd.lower_job = dd.lower_job, None
        lower = job.result() if job is not None else dd.compose_lower()
        dd.pmf = dataclasses.replace(dd.pmf, lower=lower)
    low = bound(dd.pmf.lower, dom)
    # (whether the budgets limit is read only by a refinement, after a miss: decided there)
    state.last, state.error_bound = (up, low), False
    if up == 0.0 or low == math.inf:
        # exact either way: no loss at all, or (for epsilon) the lower bound's mass at +inf
        # alone exceeds delta, so no finite epsilon exists
        return Bracket(up, low, state.h, 0)
    target = tol if tol is not None else 1e-3 * max(up, floor)
    if math.isfinite(up) and up - low <= target:
        return Bracket(up, low, state.h, 0)
    state.error_bound = _error_dominated(dd.pmf, at(up))
    return None


def _error_dominated(pmf: Composed | SplitComposed, eps) -> bool:
    """Whether the floating-point error budgets, rather than the grid, make the bracket wide
    at eps: their sum exceeds a third of the gap between the two bounds there."""
    if not math.isfinite(eps):
        return False
    up, lo = pmf.upper, pmf.lower
    assert up is not None and lo is not None          # both composed by now
    budget = up.budget(eps) + lo.budget(eps)
    gap = up.delta_at(eps) - lo.delta_at(eps)
    return budget > gap / 3.0


def _pure_epsilon(mechanism) -> float:
    """The composition's pure epsilon (an upper bound: summed exactly and rounded up)."""
    return float(mechanism.pure_epsilon())


def delta_bracket(mechanism, epsilon: float, tol: float | None = None,
                  budget: float | None = None, max_rounds: int | None = None) -> Bracket:
    """Proven bounds lower <= delta(epsilon) <= upper, upper - lower <= tol (default 1e-3 of
    upper) where the grid and the time budget allow; else the best proven bracket reached."""
    epsilon = V.real("epsilon", epsilon, low=0.0)
    if tol is not None:
        tol = V.positive("tol", tol)
    budget = BUDGET if budget is None else V.positive("budget", budget)
    max_rounds = _rounds(max_rounds)
    if epsilon >= _pure_epsilon(mechanism):
        return Bracket(0.0, 0.0, 0.0, 0)          # pure DP: the loss never exceeds pure eps
    dirs = _directions(mechanism)
    return _proven(dirs, _refine(
        dirs, _query_key(mechanism, "delta", epsilon, tol, max_rounds, budget), tol,
        (budget, max_rounds), "delta",
        lambda h, tilt, grid_tol, prev: _compute_for_delta(dirs, epsilon, grid_tol, h, tilt,
                                                           prev),
        _or_exact(lambda state: _evaluate(state, tol, lambda pmf, i: _delta_at(pmf, epsilon),
                                          at=lambda up: epsilon),
                  lambda last: _exact(dirs, last, tol,
                                      lambda: atomic.delta_bounds(dirs, epsilon)))))


def _compute_for_delta(dirs, epsilon, tol, h, tilt=TILT, prev=None):
    """One round of a delta(epsilon) query (as :func:`_compute_for_eps`; the split around
    epsilon itself, its remainder sized from ``prev``'s delta)."""
    if h is None:
        # sized for the direction that looks the worse, as for epsilon (_compute_for_eps)
        worst = max(dirs, key=lambda d: _gaussian_guess(d, 1e-6))
        # (the step sized as for eps <= 1000: a step of 1e-3 eps at eps = 1e308 overflows the
        # transforms, and the grid's losses end far below such eps anyway)
        h = _initial_h(worst, 1e-3 * min(max(epsilon, 0.1), 1e3))
    tail_total = _delta_tail(dirs, epsilon, h)

    def saddle(pp, near=None):
        lam, log_d = saddle_for_epsilon(pp, epsilon, near)
        return epsilon, lam, log_d
    split_at = None
    if prev is not None and epsilon > 0.0:
        up, low = prev
        split_at = (epsilon, max(low or 0.0, 1e-3 * min(up, 1.0), 1e-300), epsilon)
    return QueryState(h, _has_lower(dirs), _compute_directions(
        dirs, h, tail_total, tilt, saddle, None, lambda pmf: _delta_at(pmf, epsilon),
        split_at))


#: the grids of a delta query leave out P-mass <= this fraction of the (Chernoff) estimate of
#: the answer (the estimate can exceed the truth by a polynomial factor: hence far below 1e-3)
DELTA_TAIL_FRACTION = 1e-8
#: and never more than this (the tail of the query before the estimate)
DELTA_TAIL = 1e-15


def _delta_tail(dirs, epsilon, h) -> float:
    """The P-mass the grids of a delta(epsilon) query may leave out (it is charged to the upper
    bound): DELTA_TAIL_FRACTION of the Chernoff bound min_s K(s) - s eps of the composition,
    from coarse pessimistic PMFs of each direction (upper bounds on the masses, so the MGF and
    the estimate are too); so that a tiny delta (Gaussian sigma = 100 composed 1e4 times,
    delta(10) = 9.8e-23) gets a relative bracket rather than the tail as an absolute floor."""
    est = -math.inf
    for d in dirs:
        try:
            pp = _discretize(d, max(8 * h, 1e-3), DELTA_TAIL, optimistic=False)
        except (MemoryError, OutOfReach):
            return DELTA_TAIL
        est = max(est, saddle_for_epsilon(pp, epsilon)[1])
    if not math.isfinite(est):
        return DELTA_TAIL
    return min(DELTA_TAIL, max(1e-300, math.exp(est) * DELTA_TAIL_FRACTION))


def _delta_at(pmf, epsilon):
    return pmf.delta_at(epsilon)
