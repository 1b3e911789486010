"""Post_{alpha,k}(epsilon) itself (Imola & Chaudhuri 2021, Thms 1, 3; Algs 2, 3), as a certified
bracket.

:func:`exact` checks the sizes, starts from the closed-form bracket of
:mod:`dpamp.amplification.bernoulli.bounds` and, where that is wider than the tolerance, runs
the certified searches: for d = 1 the branch-and-bound of
:mod:`dpamp.amplification.bernoulli._d1_search`; for d = 2, 3 the same search on supports of
two corners (the d = 1 problem with d k samples), the local search of
:mod:`dpamp.amplification.bernoulli._local_search` for the lower end, and the searches over
supports of 3 and 4 corners of :mod:`dpamp.amplification.bernoulli._support_search`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import validate as V
from ...core.progress import ticks
from ._d1_search import certify_d1
from ._local_search import local_search
from ._moments import statistic_channel
from ._renyi import _check_eps_alpha, _check_params, _out
from ._support_search import MAX_E, SupportSearch, search_supports
from ._supports import support_orbits
from .bounds import _asymptote, _lower

__all__ = ["exact", "Certified", "EXACT_MAX_K_D1", "EXACT_MAX_D", "EXACT_MAX_OUTCOMES",
           "EXACT_DEFAULTS_D1", "EXACT_DEFAULTS_MULTI"]


class Certified(NamedTuple):
    """A certified bracket on Post_{alpha,k}(epsilon): ``value`` is attained by a proven-feasible
    pair (so value <= Post) and ``upper`` >= Post is proven; upper - value <= the tolerance
    unless the search budget ran out (then it is still a proven bracket, see ``certified``)."""

    value: np.ndarray | float
    upper: np.ndarray | float
    certified: np.ndarray | bool


#: sizes for which ``exact`` runs: d = 1 with k <= 2000 (certified 2-variable search); d = 2, 3
#: with (k+1)^d <= 64 outcomes of the sufficient statistic (certified search over supports of
#: at most 4 corners, :mod:`dpamp.amplification.bernoulli._support_search`; its cost per cell
#: grows with the outcomes)
EXACT_MAX_K_D1 = 2000
EXACT_MAX_D = 3
EXACT_MAX_OUTCOMES = 64
#: defaults of ``exact`` for d = 1 and for d = 2, 3 (rtol, max_cells per (epsilon, alpha)):
#: the d > 1 search is a 6-dimensional branch-and-bound, so its defaults aim at seconds
EXACT_DEFAULTS_D1 = (1e-6, 200_000)
EXACT_DEFAULTS_MULTI = (2e-2, 6000)


def exact(epsilon, alpha, c, d, k=1, *, rtol=None, atol=1e-12, max_cells=None, starts=8):
    """Post_{alpha,k}(epsilon) itself (Imola & Chaudhuri 2021, Thms 1, 3; Algs 2, 3), as a proven
    bracket.

    Returns ``Certified(value, upper, certified)``, vectorised over epsilon and alpha
    (broadcast): ``value`` = R_alpha(Bern_k(P), Bern_k(Q)) for a pair (P, Q) of corner
    distributions *proven* to satisfy R_alpha(P, Q), R_alpha(Q, P) <= epsilon, hence
    lower_bound <= value <= Post; ``upper`` >= Post is proven; ``certified`` marks where
    upper - value <= atol + rtol * value, i.e. where Post is known to that tolerance.

    * d = 1 (k <= 2000): certified branch-and-bound over the two masses (x, y) of Imola & Chaudhuri
    2021, Alg. 2
      (convex interpolation with tangent cuts and a dual LP bound on each cell, monotone
      constraint propagation; see :mod:`dpamp.amplification.bernoulli._d1_search`). Defaults
      rtol = 1e-6, max_cells = 200000.
    * d = 2, 3 with (k+1)^d <= 64: Post is the largest of three certified searches
      (:mod:`dpamp.amplification.bernoulli._support_search`): an optimal pair can be taken on
      at most 4 corners, with both Rényi constraints active on 4 and one on 3; pairs on 2
      corners are the d = 1 problem with d k samples (searched as above); supports of 3 and 4
      corners, one per symmetry orbit of the cube, by a branch-and-bound in 4 and 6 dimensions
      with LP-duality bounds on each cell. ``value`` is the best of the pair of eqs. 3-4, a
      multi-start local search (``starts`` random starts, every result re-verified) and the
      two-corner search. Defaults rtol = 2e-2, max_cells = 6000 (4-13 s per (epsilon, alpha);
      docs/bernoulli.md lists what they certify: mostly large epsilon; a larger max_cells
      shrinks the bracket further, e.g. 30000 certifies most d = 2 instances measured there,
      d = 3 needs ~10^5). Instances with (alpha-1) epsilon > 600 are not searched (their upper
      end is ``upper_bound``).

    ``max_cells`` caps the cells per (epsilon, alpha); when it runs out the bracket is still
    proven, only wider, and ``certified`` is False there. Larger sizes raise ValueError
    (``lower_bound`` and ``upper_bound`` bracket Post for every d and k). Orders must be
    finite."""
    c, d, k = _check_params(c, d, k)
    if d == 1 and k > EXACT_MAX_K_D1:
        raise ValueError(f"exact Post for d = 1 needs k <= {EXACT_MAX_K_D1} (got k={k}); "
                         "lower_bound and upper_bound give a certified bracket for any k")
    if d > 1 and (d > EXACT_MAX_D or (k + 1) ** d > EXACT_MAX_OUTCOMES):
        raise ValueError(
            f"exact Post for d > 1 is searched only for d <= {EXACT_MAX_D} and (k+1)^d <= "
            f"{EXACT_MAX_OUTCOMES} outcomes (d = 2: k <= 7; d = 3: k <= 3; got d={d}, k={k}); "
            "lower_bound and upper_bound give a certified bracket for any d and k")
    d_rtol, d_cells = EXACT_DEFAULTS_D1 if d == 1 else EXACT_DEFAULTS_MULTI
    rtol = d_rtol if rtol is None else V.real("rtol", rtol, low=1e-12, high=1.0)
    atol = V.real("atol", atol, low=0.0, high=1.0)
    max_cells = d_cells if max_cells is None else V.integer("max_cells", max_cells, low=1000)
    starts = V.integer("starts", starts, low=0)
    eps, a = _check_eps_alpha(epsilon, alpha)
    if np.isinf(a).any():
        raise ValueError("alpha must be finite for exact (got inf); lower_bound and "
                         "upper_bound accept alpha = inf")
    n = d * k
    low = np.array(_lower(eps, a, c, n), dtype=float)
    up = np.array(np.minimum(eps, _asymptote(a, c, n)), dtype=float)
    value, upper = low.copy(), up.copy()
    # search only where the closed-form bracket is wider than the tolerance
    todo = (c > 0.0) & np.isfinite(eps) & (eps > 0) & (up - low > atol + rtol * low)
    if todo.any():
        if d == 1:
            e, al = eps[todo], a[todo]
            scale = al - 1.0
            best0 = low[todo] * scale * (1.0 - 4e-16)
            cap = up[todo] * scale * (1.0 + 4e-16)
            best, top, _ = certify_d1(e, al, c, k, best0, cap, rtol, atol, max_cells)
            value[todo] = np.maximum(best / scale * (1.0 - 4e-16), low[todo])
            upper[todo] = np.minimum(top / scale * (1.0 + 4e-16), up[todo])
        else:
            # three searches per (epsilon, alpha), one tick each, shown after a second
            with ticks("Bernoulli exact", 3 * int(todo.sum()), unit="search", delay=1.0) as bar:
                for i in zip(*np.nonzero(todo)) if todo.ndim else [()]:
                    value[i], upper[i] = _exact_multi(float(eps[i]), float(a[i]), c, d, k,
                                                      float(low[i]), float(up[i]), rtol, atol,
                                                      max_cells, starts, bar.update)
    # (a little slack for the final roundings of the search's own stopping test)
    certified = upper - value <= (atol + rtol * value) * (1.0 + 1e-9) + 1e-15 * upper
    return Certified(_out(value), _out(upper), certified if certified.ndim else bool(certified))


def _exact_multi(eps, a, c, d, k, low, up, rtol, atol, max_cells, starts,
                 tick=lambda n=1: None):
    """(value, upper) of Post for d = 2, 3 at one (epsilon, alpha): see :func:`exact` and
    :mod:`dpamp.amplification.bernoulli._support_search` (module docstring (2) for why the three
    searches cover every candidate maximiser)."""
    scale = a - 1.0
    # lower end: proven-feasible pairs only
    best = max(low, local_search(eps, a, c, d, k, starts) / scale * (1.0 - 4e-16))
    tick()
    if scale * eps > MAX_E:
        tick(2)
        return best, up
    # supports of 2 corners: the d = 1 problem with d k samples (its own cell budget)
    e1, a1 = np.array([eps]), np.array([a])
    b1, t1, _ = certify_d1(e1, a1, c, d * k, np.array([best * scale * (1.0 - 4e-16)]),
                           np.array([up * scale * (1.0 + 4e-16)]), rtol, atol,
                           max(max_cells, 20_000))
    best = max(best, float(b1[0]) / scale * (1.0 - 4e-16))
    top = float(t1[0]) / scale * (1.0 + 4e-16)
    tick()
    # supports of 3 and 4 corners, one per symmetry orbit, under one shared budget
    logw = statistic_channel(c, d, k)
    searches = [SupportSearch(eps, a, logw[:, list(sub)], chain, best, rtol, atol, up)
                for m in (3, 4) for sub, chain in support_orbits(d, m)]
    search_supports(searches, max_cells)
    tick()
    top = max([top] + [s.upper for s in searches])
    return best, min(max(top, best), up)
