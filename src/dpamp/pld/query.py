"""Error-controlled epsilon(delta) and delta(epsilon) from privacy-loss distributions.

The engine picks the grid itself: the bracket [lower, upper] from the optimistic and pessimistic
discretisations shrinks like h^2 (both are second-order constructions), so after a first grid
chosen from a rough model the step is refined by sqrt(tol / gap) until the bracket is within the
tolerance (default 1e-3 of the answer). Both directions of the composition are accounted (the
pair and its swap; one suffices when every part is symmetric); the answer is the worse one, and
the lower bound is that of the direction with the larger upper bound (any direction's lower bound
is a lower bound on the true, worst-direction value).
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..core import _validate as V
from ..core.errors import OutOfReach
from .cache import PLDCache, cache_key as _key
from .engine import MAX_N, PartPMF, compose, grid_log_mgf
from .sources import SymmetricCurve, discretize_source, parts_of

#: most grid refinements tried; then (or when the time budget or the largest grid is reached)
#: the best proven bracket so far is returned, saying that tol was not met
MAX_ROUNDS = 7
#: default time budget of one query, in seconds (the ``budget`` option)
BUDGET = 10.0
#: largest |loss| on a grid: the discretisation works with x = e^loss (e^709 overflows)
MAX_LOSS = 650.0
#: total P-mass (over all steps) allowed outside the parts' grids, relative to the target delta
TAIL_FRACTION = 1e-6


@dataclasses.dataclass
class Bracket:
    upper: float
    lower: float | None
    h: float
    rounds: int
    met: bool = True       # whether upper - lower is within the tolerance
    note: str = ""         # why not, where it is not


def _exact_parts(dirs) -> bool:
    """Whether every part is an exact loss distribution (the bracket then shrinks like h^2);
    profile-based parts have an intrinsic gap between their upper and lower profiles."""
    from .sources import ProfileSource
    return not any(isinstance(src, ProfileSource) for d in dirs for src, _ in d)


def _has_lower(dirs) -> bool:
    """Whether every part can be discretised optimistically (profile-only parts need a lower
    profile); otherwise the PLD gives an upper bound only."""
    return all(getattr(src, "has_lower", True) for d in dirs for src, _ in d)


def _directions(mechanism):
    parts = parts_of(mechanism)
    if all(getattr(src, "symmetric", False) for src, _ in parts):
        return [parts]
    return [parts, [(src.swapped(), c) for src, c in parts]]


def _discretize(parts, h, tail_total, optimistic=True):
    n = len(parts)
    out = []
    for src, c in parts:
        lo, hi = src.quantile_range(max(tail_total / (c * n), 1e-300))
        if max(-lo, hi) > MAX_LOSS:
            raise OutOfReach(f"the PLD works with e^loss in floating point and handles losses "
                             f"up to {MAX_LOSS:g}; one part reaches {max(-lo, hi):.4g} "
                             "(epsilon in the hundreds): use method='rdp'")
        jlo = min(-1, math.floor(lo / h) - 1)
        jhi = max(1, math.ceil(hi / h) + 1)
        if jhi - jlo > MAX_N:
            raise MemoryError(jhi - jlo)
        d = discretize_source(src, h, jlo, jhi, optimistic)
        # the optimistic PMF may drop any mass (that only lowers delta): drop its top tail of
        # mass <= the budget, which otherwise holds the tail rounded down onto the last knot and,
        # once tilted, widens the FFT window for nothing
        # (the last knot holds the P-mass above the grid, <= the tail budget by the choice of
        # jhi, rounded down onto it: it goes too)
        top = np.cumsum(d.lower[::-1])
        cut = max(1, int(np.searchsorted(top, tail_total / (c * n), side="right")))
        d.lower = d.lower.copy()
        d.lower[d.lower.size - cut:] = 0.0
        out.append(PartPMF(d, c))
    return out


_S = np.geomspace(1e-2, 1e3, 61)
#: fraction of the Chernoff saddle point used as the exponential tilt of the FFT: half the
#: saddle keeps the FFT's error far below the tolerance near the answer for the usual deltas
#: while the tilted measure's heavy tail (rare large losses) widens the window less; when the
#: error budget dominates the bracket (tiny deltas) the next round tilts at the full saddle
TILT = 0.5


def _log_mgf(pparts, upper=True, s=_S):
    """sum_j c_j log sum_t m_j(t) e^{s t} (exact, on the discretised PMFs), for each s."""
    K = np.zeros(s.size)
    for p in pparts:
        K += p.count * grid_log_mgf(p.mass(upper), p.d.h * p.d.jlo, p.d.h, s)
    return K


def _tilt_cap(pparts):
    """Largest useful tilt: 20 over the composed standard deviation. Beyond it the values that
    decide delta near the answer are tiny next to the tilted peak (bounded losses push the
    Chernoff saddle to infinity) and the FFT's relative accuracy there is lost."""
    var = 0.0
    for p in pparts:
        m = np.maximum(p.d.upper, 0.0)
        s = m.sum()
        if s <= 0:
            continue
        t = p.d.h * (p.d.jlo + np.arange(m.size))
        mu = float(np.sum(m * t) / s)
        var += p.count * float(np.sum(m * (t - mu) ** 2) / s)
    return 20.0 / math.sqrt(max(var, 1e-12))


def saddle_for_delta(pparts, delta):
    """Chernoff estimate of epsilon(delta) and its tilt: min_s (K(s) - log delta) / s."""
    K = _log_mgf(pparts)
    e = (K - math.log(delta)) / _S
    i = int(np.argmin(e))
    return float(e[i]), float(_S[i])


def saddle_for_epsilon(pparts, eps):
    """Tilt for delta(eps), and the Chernoff estimate log delta <= min_s K(s) - s eps."""
    K = _log_mgf(pparts)
    v = K - _S * eps
    i = int(np.argmin(v))
    return float(_S[i]), float(min(v[i], 0.0))


def _initial_h(direction_parts, tol_abs, z=4.0):
    """A first grid step from the model gap ~ 0.2 z h^2 (sum of counts) / sd (second-order
    discretisation errors add up in variance over the steps); refined by measurement."""
    counts = sum(c for _, c in direction_parts)
    var = sum(c * max(src.var, 0.0) for src, c in direction_parts)
    sd = math.sqrt(max(var, 1e-30))
    h = math.sqrt(0.8 * tol_abs * sd / (0.2 * max(z, 1.0) * counts))
    # never coarser than a fraction of the spread of a single step of any part
    for src, _ in direction_parts:
        h = min(h, max(math.sqrt(max(src.var, 0.0)), 1e-12) / 4.0)
    return _align(direction_parts, max(h, 1e-7))


def _align(direction_parts, h):
    """If every finite atom of every part is a multiple of one loss a (randomized response,
    Laplace, the worst-case (eps, delta) pair), use a step that divides a, so the atoms fall on
    the grid and cost nothing."""
    if not (math.isfinite(h) and h > 0):
        raise OutOfReach("the PLD cannot size a grid for this query (the spread of the "
                         "privacy losses is beyond the range of floating point)")
    # an anchor inside the first cell stays there (fitting h to it would shrink h to it)
    anchors = [a for a in _anchors(direction_parts) if a >= h]
    if 1 <= len(anchors) <= MAX_ANCHORS:
        return _near_common_divisor(anchors, h)
    return h


#: most distinct anchors a grid step is fitted to (beyond, the step is left alone)
MAX_ANCHORS = 4


def _anchors(direction_parts) -> list:
    """The magnitudes |loss| where the loss curve F has a kink or a near-kink: finite atoms,
    and finite ends of a continuous part's support (a Poisson-subsampled pair's losses pile
    up just above log(1 - q) when its base pair is far apart, i.e. small sigma). Off the grid,
    such a point costs the optimistic polygon a first-order lowering (its offset from the grid
    times its mass, per step; for a pile inside a cell whose far knot is on the curve's floor,
    up to the whole cell's curve), on a grid point nothing (an atom) or a defect of the
    pile's width times its mass (see polygon.FAR_KINK)."""
    found = []
    for src, _ in direction_parts:
        loss = getattr(src, "atom_loss", np.zeros(0))
        p = getattr(src, "atom_p", np.ones(loss.size))
        q = getattr(src, "atom_q", np.ones(loss.size))
        big = np.isfinite(loss) & (loss != 0) & (np.maximum(p, q) > 1e-9)
        found += [float(v) for v in np.abs(loss[big])]
        if getattr(src, "cdf", None) is not None:
            found += [abs(float(e)) for e in getattr(src, "support", ())
                      if math.isfinite(e) and e != 0]
    out = []                      # anchors equal up to rounding are one
    for a in sorted(found):
        if not out or a > out[-1] * (1 + 1e-12):
            out.append(a)
    return out


def _near_common_divisor(anchors, h: float) -> float:
    """A step h' <= h dividing the largest anchor a_0 that puts every other anchor nearest to
    a multiple of h' (n = a_0 / h' scanned over [a_0/h, 1.5 a_0/h]: a simultaneous
    Diophantine approximation; among M candidates the best misfit is ~ h'/M^(1/(k-1)))."""
    a0 = anchors[-1]
    n0 = max(1, math.ceil(a0 / h))
    if len(anchors) == 1:
        return a0 / n0
    n = np.arange(n0, n0 + max(8, min(20000, n0 // 2)))
    hs = a0 / n
    off = np.zeros(n.size)
    for a in anchors[:-1]:
        r = a / hs
        off = np.maximum(off, np.abs(r - np.rint(r)) * hs)
    return float(hs[int(np.argmin(off))])


_CACHE = PLDCache()


def _too_fine(tol, h):
    asked = f"tol={tol:g}" if tol is not None else "the default tol (1e-3 relative)"
    finer = f" (finer than h={h:.3g})" if h else ""
    return OutOfReach(f"{asked} needs a grid with more than {MAX_N} points{finer}; use a "
                      "larger tol or method='rdp'")


def epsilon_bracket(mechanism, delta: float, tol: float | None = None,
                    budget: float | None = None) -> Bracket:
    """Proven bounds lower <= epsilon(delta) <= upper with upper - lower <= tol (default
    1e-3 of upper) where the grid and the time budget (seconds, default BUDGET) allow; else the
    best proven bracket reached, with ``met`` False and a note."""
    delta = V.delta(delta)
    if tol is not None:
        tol = V.positive("tol", tol)
    budget = BUDGET if budget is None else V.positive("budget", budget)
    dirs = _directions(mechanism)
    tail_total = delta * TAIL_FRACTION
    if tail_total < 1e-300:
        # the tails the grids leave out must weigh << delta, and below 1e-300 they cannot
        raise OutOfReach(f"delta={delta:g} is below what the PLD grids resolve "
                         f"({1e-300 / TAIL_FRACTION:g}); use method='rdp'")
    # the pure epsilon caps the upper bound: it decides tiny deltas
    pure = _pure_epsilon(mechanism)
    return _proven(dirs, _refine(
        dirs, _key(mechanism), tol, budget, "epsilon",
        lambda h, tilt, grid_tol: _compute_for_eps(dirs, delta, grid_tol, h, tail_total, tilt),
        lambda state: _evaluate(state, tol, lambda pmf: min(pmf.epsilon(delta), pure),
                                at=lambda up: up, floor=1e-12)))


def _lower_proven(dirs) -> bool:
    """Whether the optimistic PMFs bound an actual pair's composition. A symmetrised curve
    (:class:`~.sources.SymmetricCurve`, sampling without replacement) bounds both orders of
    every pair from above: its own optimistic PMF is a lower bound on its composition, which
    for more than one step is not the composition of any actual pair (nor below it)."""
    return all(c == 1 or not isinstance(src, SymmetricCurve) for d in dirs for src, c in d)


def _proven(dirs, b: Bracket) -> Bracket:
    """``b`` with its lower end dropped where it is not proven (:func:`_lower_proven`); the
    refinement still measures the grid error with it, so the upper end is as tight as before."""
    return b if _lower_proven(dirs) else dataclasses.replace(b, lower=None)


def _refine(dirs, key, tol, budget, what, compute, evaluate) -> Bracket:
    """Reuse a cached state if it brackets this query; else compute on a grid, and refine it by
    sqrt(tol / gap) (the gap falls like h^2) until the bracket is within tol -- or tilt at the
    full saddle when the floating-point budget rather than the grid is the limit. Where tol
    cannot be met (profile-only parts, whose bracket the profiles limit; the largest grid; the
    time budget; MAX_ROUNDS) the tightest proven bracket of all rounds is returned, not met."""
    cached = _CACHE.get(key)
    if cached is not None:
        res = evaluate(cached)
        if res is not None:
            return res
    deadline = time.monotonic() + budget
    h, tilt, best, grid_tol = None, TILT, None, tol
    for rounds in range(1, MAX_ROUNDS + 1):
        try:
            state = compute(h, tilt, grid_tol)
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
            return _not_met(best, rounds, "some part is known only through its privacy "
                                          "profile, whose lower and upper bounds differ")
        if time.monotonic() > deadline:
            return _not_met(best, rounds, f"the time budget ({budget:g} s) was spent")
        if state["error_bound"] and tilt < 1.0:
            tilt, h = 1.0, state["h"]          # the FFT's error budget, not the grid, limits
            continue
        up, low = state["last"]
        target = tol if tol is not None else 1e-3 * max(up, 1e-300)
        gap = up - low
        shrink = math.sqrt(0.7 * target / max(gap, 1e-300)) if math.isfinite(gap) else 0.5
        h = _align(dirs[0], state["h"] * max(0.2, min(0.8, shrink)))
    return _not_met(best, MAX_ROUNDS, f"{MAX_ROUNDS} grid refinements did not reach tol")


def _tighter(best, state):
    """The tightest proven (upper, lower, h) over the rounds so far: the smallest upper bound
    and the largest lower bound (each is proven on its own, whichever grid gave it)."""
    up, low = state["last"]
    if best is None:
        return up, low, state["h"]
    b_up, b_low, b_h = best
    if low is not None and b_low is not None:
        low = max(low, b_low)
    return min(up, b_up), low, min(state["h"], b_h)


def _not_met(best, rounds, why) -> Bracket:
    up, low, h = best
    return Bracket(up, low, h, rounds, met=False, note=why)


def _gaussian_guess(direction_parts, delta):
    """epsilon(delta) of the Gaussian with the composition's mean and variance of the loss:
    only to size the first grid (the tolerance is relative to epsilon)."""
    M = sum(c * src.mean for src, c in direction_parts)
    V = sum(c * max(src.var, 0.0) for src, c in direction_parts)
    return max(M + math.sqrt(2.0 * V * math.log(1.0 / delta)), 1e-6)


def _direction(d, h, tail_total, tilt, saddle, log_delta_target, optimistic=True):
    pp = _discretize(d, h, tail_total, optimistic)
    e_est, lam, log_d = saddle(pp)
    lam = min(lam * tilt, _tilt_cap(pp))
    target = (e_est, log_d if log_d is not None else log_delta_target)
    pm = compose(pp, h, lam, kinds=(True,), target=target)
    return {"parts": pp, "lam": lam, "pmf": pm, "target": target, "h": h,
            "optimistic": optimistic}


#: the other directions are first accounted on a grid this many times coarser, pessimistically
#: only (an upper bound is an upper bound on any grid): usually that already shows them to be
#: the better ones (for Poisson-subsampled Gaussians the two directions' epsilons differ by
#: far more than the coarse grid's error), and they then cost a fraction of the first
COARSE = 8


def _compute_directions(dirs, h, tail_total, tilt, saddle, log_delta, query):
    """The first direction at step h; the others first at COARSE h, upper bound only: only if
    one could be the worse direction is it redone at h (with both bounds)."""
    out = [_direction(dirs[0], h, tail_total, tilt, saddle, log_delta)]
    best = query(out[0]["pmf"][True])
    for d in dirs[1:]:
        coarse = _direction(d, COARSE * h, tail_total, tilt, saddle, log_delta,
                            optimistic=False)
        if query(coarse["pmf"][True]) <= best:
            out.append(coarse)
        else:
            out.append(_direction(d, h, tail_total, tilt, saddle, log_delta))
    return out


def _compute_for_eps(dirs, delta, tol, h, tail_total, tilt=TILT):
    if h is None:
        e0 = max(_gaussian_guess(d, delta) for d in dirs)
        target = tol if tol is not None else 1e-3 * e0
        h = min(_initial_h(d, target, z=max(1.0, math.sqrt(2 * math.log(1 / delta))))
                for d in dirs)

    def saddle(pp):
        e_est, lam = saddle_for_delta(pp, delta)
        return e_est, lam, None
    out = {"h": h, "kind": "eps", "has_lower": _has_lower(dirs)}
    out["dirs"] = _compute_directions(dirs, h, tail_total, tilt, saddle, math.log(delta),
                                      lambda pmf: pmf.epsilon(delta))
    return out


def _evaluate(state, tol, bound, at, floor=0.0):
    """Bracket from a state, or None (with the bracket recorded in state) if it misses tol.

    ``bound(pmf)`` reads the queried quantity (epsilon(delta) or delta(epsilon)) off one PMF;
    ``at(up)`` is the epsilon where the error budget is compared with the gap. The dominant
    direction's lower PMF is composed here, on first need."""
    ups = [bound(d["pmf"][True]) for d in state["dirs"]]
    dom = int(np.argmax(ups))
    up = ups[dom]
    dd = state["dirs"][dom]
    if not state.get("has_lower", True):
        state["last"] = (up, None)
        state["error_bound"] = False
        return Bracket(up, None, state["h"], 0)
    if not dd.get("optimistic", True):
        # a cached state queried elsewhere: its coarse, pessimistic-only direction is now the
        # worse one, and composing its empty lower PMF would only prove 0; start afresh
        state["last"] = (up, 0.0)
        state["error_bound"] = False
        return None
    if False not in dd["pmf"]:
        dd["pmf"].update(compose(dd["parts"], dd["h"], dd["lam"], kinds=(False,),
                                 target=dd["target"]))
    low = bound(dd["pmf"][False])
    state["last"] = (up, low)
    state["error_bound"] = _error_dominated(dd["pmf"], at(up))
    if up == 0.0 or low == math.inf:
        # exact either way: no loss at all, or (for epsilon) the lower bound's mass at +inf
        # alone exceeds delta, so no finite epsilon exists
        return Bracket(up, low, state["h"], 0)
    target = tol if tol is not None else 1e-3 * max(up, floor)
    if math.isfinite(up) and up - low <= target:
        return Bracket(up, low, state["h"], 0)
    return None


def _error_dominated(pmf, eps) -> bool:
    """Whether the floating-point error budgets, rather than the grid, make the bracket wide
    at eps: their sum exceeds a third of the gap between the two bounds there."""
    if not math.isfinite(eps):
        return False
    e = np.array([eps])
    up, lo = pmf[True], pmf[False]
    ku = int(np.searchsorted(up.t, eps, side="right"))
    kl = int(np.searchsorted(lo.t, eps, side="right"))
    budget = float(up.err[ku] + lo.err[kl])
    gap = float(up.delta(e)[0] - lo.delta(e)[0])
    return budget > gap / 3.0


def _pure_epsilon(mechanism) -> float:
    """The composition's pure epsilon (an upper bound: summed exactly and rounded up)."""
    return float(mechanism.pure_epsilon())


def delta_bracket(mechanism, epsilon: float, tol: float | None = None,
                  budget: float | None = None) -> Bracket:
    """Proven bounds lower <= delta(epsilon) <= upper, upper - lower <= tol (default 1e-3 of
    upper) where the grid and the time budget allow; else the best proven bracket reached."""
    epsilon = V.real("epsilon", epsilon, low=0.0)
    if tol is not None:
        tol = V.positive("tol", tol)
    budget = BUDGET if budget is None else V.positive("budget", budget)
    if epsilon >= _pure_epsilon(mechanism):
        return Bracket(0.0, 0.0, 0.0, 0)          # pure DP: the loss never exceeds pure eps
    dirs = _directions(mechanism)
    return _proven(dirs, _refine(
        dirs, (_key(mechanism), "delta"), tol, budget, "delta",
        lambda h, tilt, grid_tol: _compute_for_delta(dirs, epsilon, grid_tol, h, tilt),
        lambda state: _evaluate(state, tol, lambda pmf: _delta_at(pmf, epsilon),
                                at=lambda up: epsilon)))


def _compute_for_delta(dirs, epsilon, tol, h, tilt=TILT):
    if h is None:
        h = min(_initial_h(d, 1e-3 * max(epsilon, 0.1)) for d in dirs)
    tail_total = 1e-15

    def saddle(pp):
        lam, log_d = saddle_for_epsilon(pp, epsilon)
        return epsilon, lam, log_d
    out = {"h": h, "kind": "delta", "has_lower": _has_lower(dirs)}
    out["dirs"] = _compute_directions(
        dirs, h, tail_total, tilt, saddle, None,
        lambda pmf: _delta_at(pmf, epsilon))
    return out


def _delta_at(pmf, epsilon):
    return float(pmf.delta(np.array([epsilon]))[0])


def pld_profile(mechanism, epsilon):
    """Privacy profile delta(eps) of any mechanism or composition with a PLD: proven upper bounds
    (vectorised; 004 Prop. 7 on the composed pessimistic PLD). Lower bounds: ``pld_profile_bounds``."""
    return pld_profile_bounds(mechanism, epsilon)[0]


def pld_profile_bounds(mechanism, epsilon):
    """(upper, lower) arrays of delta(eps) for every eps (each eps is accounted with the tilt
    of the median eps; every value is a valid bound, tightest near that eps)."""
    e = V.reals("epsilon", epsilon, low=0.0)
    flat = np.atleast_1d(e).ravel()
    fin = flat[np.isfinite(flat)]
    mid = float(np.median(fin)) if fin.size else 0.0
    pure = _pure_epsilon(mechanism)
    if pure == 0.0:
        zero = np.zeros(np.shape(e))
        return zero, zero                         # no privacy loss at all
    if mid >= pure:
        mid = 0.5 * pure if math.isfinite(pure) else mid   # (delta is 0 beyond pure anyway)
    delta_bracket(mechanism, mid)               # fills the cache with a good state
    state = _CACHE.get((_key(mechanism), "delta"))
    ups = np.max([d["pmf"][True].delta(flat) for d in state["dirs"]], axis=0)
    with_low = [d["pmf"][False].delta(flat) for d in state["dirs"] if False in d["pmf"]]
    proven = with_low and _lower_proven(_directions(mechanism))
    lows = np.max(with_low, axis=0) if proven else np.zeros(flat.shape)
    ups = np.where(np.isinf(flat), np.max([d["pmf"][True].inf for d in state["dirs"]]), ups)
    ups = np.where(flat >= pure, 0.0, ups)      # the loss never exceeds the pure epsilon
    lows = np.where(flat >= pure, 0.0, lows)
    return ups.reshape(np.shape(e)), lows.reshape(np.shape(e))
