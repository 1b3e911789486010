"""Calibration: the inverse problems of accounting (DESIGN "calibrate σ, T, q").

    dp.calibrate.sigma(epsilon=3.0, delta=1e-5, sampling=dp.Poisson(0.01), steps=10_000)
    dp.calibrate.steps(...), dp.calibrate.epochs(...), dp.calibrate.rate(...)

Each returns a :class:`Calibration`: the value, and the :class:`~dpamp.Guarantee` of the plan at
that value under the chosen method. The answer is **certified**: the returned value was itself
evaluated, and its upper bound epsilon is <= the target. It is also (nearly) optimal, by
monotonicity of the accounted epsilon:

| parameter          | epsilon is ...          | search                                          |
|--------------------|-------------------------|-------------------------------------------------|
| noise σ            | decreasing in σ         | bracket by doubling/halving, geometric bisection to relative ``rtol`` (1e-4); returns the upper end |
| steps T            | increasing in T         | bracket by doubling, integer bisection: the largest T |
| epochs E           | increasing in E         | as steps, with T = ceil(E / rate) (core/samplers.py) |
| Poisson rate q     | increasing in q         | bracket by halving from 1, geometric bisection; returns the lower end |
| batch size m       | increasing in m         | integer bisection on [1, population]            |

The monotonicity holds for the true epsilon and for the bounds computed here (larger noise,
fewer steps or a smaller rate is a post-processing / sub-composition); the final evaluation
certifies the returned value whatever happens. With an expensive method (e.g. "pld") the
bracket starts from the "rdp" answer, so only a handful of expensive evaluations are made
(about 2 + log2(log(1.25)/rtol) ~ 14 for sigma). Where the PLD cannot reach its default tol
near the target, evaluations are first made to 5 % of the target (``_Oracle._coarse``). Where the
evaluated brackets are themselves wider than 1e-3 (tiny rates at tiny deltas, docs/pld.md
"Corners"), the search stops at an eighth of their relative width rather than at ``rtol``:
below it the upper bound is not monotone, and narrowing further would follow its noise.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..core import validate as V
from ..core import samplers as _samplers
from ..core.progress import open_bar
from ..core.guarantee import Guarantee
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ._search import geometric_search, largest_int
from .calibration import Calibration

if TYPE_CHECKING:
    from ..core.sampling import SamplingScheme
    from ..mechanisms.base import Mechanism

__all__ = ["Calibration", "sigma", "steps", "epochs", "rate", "sweep"]

_SIGMA_RANGE = (1e-8, 1e8)
_MIN_RATE = 1e-15


# --- the accounting oracle ----------------------------------------------------------------

#: grid refinements each evaluated plan may take (the PLD's "max_rounds"): work, not seconds,
#: so that a calibration returns the same value on any machine
EVALUATION_ROUNDS = 3
#: refinements of a bracket that straddles the target (_Oracle.ok), each to a quarter of its width
REFINE_STRADDLING = 4
#: the refinements each of them may take (the PLD's own default)
REFINE_ROUNDS = 7
#: the tolerance (relative to the target epsilon) of a first, deciding evaluation (_Oracle)
COARSE_TOL = 0.05


class _Oracle:
    """epsilon(delta) of a family of plans, memoised, counting evaluations."""

    def __init__(self, build: Callable, eps_target: float, delta: float, method: str,
                 options: dict, refine: bool = False):
        self.build, self.eps, self.delta = build, eps_target, delta
        # counts (steps, epochs): a bracket that straddles the target is refined (ok); a
        # continuous search (sigma, rate) stops within its resolution instead, and its answer
        # stays reproducible by the default query
        self.refine = refine
        # each evaluation gets a bounded number of refinements (the PLD then keeps the best
        # proven bracket it reached), so that a search over hard plans cannot run long; the
        # user's options win
        self.method, self.options = method, {"max_rounds": EVALUATION_ROUNDS, **options}
        self.seen: dict = {}
        self.used: dict = {}        # the options each kept guarantee was computed with
        self.evaluations = 0
        # one tick per evaluated plan, on a terminal once the search has lasted a second
        self.bar = open_bar("calibrate", unit="plan", delay=1.0)

    def guarantee(self, x) -> Guarantee:
        if x not in self.seen:
            self.evaluations += 1
            mech = self.build(x)
            g = self._coarse(x, mech)
            if g is None:
                g = mech.epsilon(self.delta, method=self.method, **self.options)
                self.used[x] = dict(self.options)
            self.seen[x] = (g, mech)
            self.bar.update()
        return self.seen[x][0]

    def _coarse(self, x, mech):
        """A bracket to COARSE_TOL of the target first, once a plan seen within 50 targets did
        not reach the default tol (a corner where the PLD's limits, not its grid, set the
        width: tiny rates at tiny deltas): kept where it decides x (upper <= target, or lower
        > target: the default bracket would decide the same way) or where the PLD could not
        reach it either (nor then the default tol), else None (x is then evaluated at the
        default tol). Only for "pld" / "auto" without a tol of the caller's. Elsewhere the
        coarse values would only bias the interpolation of the search (measured: more
        evaluations for steps and sigma)."""
        if "tol" in self.options or self.method not in ("auto", "pld"):
            return None
        if not any(g.tol_met is False and g.epsilon < 50 * self.eps
                   for g, _ in self.seen.values()):
            return None
        # (auto gives each method only the options it takes: tol goes to the PLD alone)
        self.used[x] = {**self.options, "tol": COARSE_TOL * self.eps}
        g = mech.epsilon(self.delta, method=self.method, **self.used[x])
        if g.epsilon <= self.eps or (g.lower is not None and g.lower > self.eps):
            return g
        # not met: a limit of the PLD (its time budget, its FFT's floating-point budget, the
        # largest grid) ended the refinement, and would end the default tol's the same way
        return g if g.tol_met is False else None

    def ok(self, x) -> bool:
        """Whether x meets the target. For counts (``refine``), a bracket that straddles it
        (lower <= target < upper) is refined, a quarter of its width at a time, until it
        decides x or stops narrowing: otherwise the search would stop one short of the extreme
        count whose true epsilon meets the target but whose default bracket reaches over it
        (Calibration.options then holds the finer tol). Undecided: not met (a calibration
        only claims what its upper bound proves)."""
        g = self.guarantee(x)
        for _ in range(REFINE_STRADDLING):
            if not self.refine or g.epsilon <= self.eps or g.lower is None \
                    or g.lower > self.eps or "tol" in self.options \
                    or self.method not in ("auto", "pld"):
                break
            opts = {**self.options, "tol": 0.25 * (g.epsilon - g.lower),
                    "max_rounds": REFINE_ROUNDS}
            h = self.seen[x][1].epsilon(self.delta, method=self.method, **opts)
            if not h.epsilon < g.epsilon:
                break
            g = h
            self.seen[x], self.used[x] = (g, self.seen[x][1]), opts
        return g.epsilon <= self.eps

    def value(self, x) -> float:
        """log(epsilon(x) / target): where the search interpolates (``_search``)."""
        e = self.guarantee(x).epsilon
        return math.log(e / self.eps) if 0.0 < e < math.inf else math.nan

    def slack(self, *xs) -> float:
        """An eighth of the largest relative width (upper - lower) / upper of the brackets
        evaluated at xs: the resolution below which the search stops (``_search._narrow``);
        0 where no lower bound is known. Within 1e-3 brackets this is below the usual rtol.
        A lower end from a witness (``Guarantee.lower_assumes``: another pair's, as the
        amplified matrix mechanism's) says nothing of how finely the upper bound resolves, and
        is left out: the search then narrows on the upper bound to rtol."""
        w = 0.0
        for x in xs:
            g = self.seen[x][0] if x in self.seen else None
            if g is not None and g.lower is not None and not g.lower_assumes \
                    and 0.0 < g.epsilon < math.inf:
                w = max(w, (g.epsilon - max(g.lower, 0.0)) / g.epsilon)
        return 0.125 * w

    def result(self, parameter, x, steps=None, other=None, rtol=None) -> Calibration:
        g = self.guarantee(x)
        self.bar.close()
        if not g.epsilon <= self.eps:  # the certificate: the returned value was evaluated
            raise RuntimeError(f"calibration bug: {x!r} does not meet the target "
                               f"({g.epsilon!r} > {self.eps!r})")  # pragma: no cover
        return Calibration(parameter, x, g, self.eps, self.delta, self.seen[x][1],
                           self.evaluations, steps, None if other is None else (x, other),
                           rtol, dict(self.used.get(x, self.options)))


def _log_slope(oracle: _Oracle, x0: float) -> float | None:
    """d log epsilon / d log x at x0 from the two evaluations of ``oracle`` nearest to x0 (in
    log x) with finite positive epsilons (a warm start's search ends with two close ones): an
    estimate that places the next method's first step (``geometric_search``'s ``slope``); None
    without two such points."""
    pts = sorted((abs(math.log(x / x0)), x, g.epsilon) for x, (g, _) in oracle.seen.items()
                 if x > 0 and 0.0 < g.epsilon < math.inf)
    if len(pts) < 2 or pts[0][1] == pts[1][1]:
        return None
    (_, x1, e1), (_, x2, e2) = pts[:2]
    s = math.log(e1 / e2) / math.log(x1 / x2)
    return s if math.isfinite(s) and s != 0.0 else None


def _resolve(build, x0, method: str) -> str:
    """The method to evaluate every plan with, checked on the first one. "auto" stays "auto":
    each evaluated plan gets its own best method (the one-step plan may have an exact profile
    that a composition has not, or a composition the PLD cannot reach); every evaluation is
    an upper bound whichever method gave it, so the certificate of the result holds."""
    from . import registry as M
    mech = build(x0)
    if method == "auto":
        if not M.available(mech):
            raise ValueError(f"no accounting method applies to {mech!r}")
        return method
    M._pick(mech, method)  # raises a clear error when the method does not apply
    return method


def _warm_start(build, x0, method, solve):
    """Solve with the cheap "rdp" method first when another method was asked for and rdp
    applies: its answer is a good starting point for the bracket (only a starting point: the
    bracket is verified with the asked method)."""
    from . import registry as M
    if method == "rdp" or "rdp" not in M.available(build(x0)):
        return None
    try:
        return solve("rdp")
    except ValueError:
        return None


# --- plan construction --------------------------------------------------------------------

def _check_targets(epsilon, delta):
    return V.positive("epsilon", epsilon), V.delta(delta)


def _family(family):
    if family is None:
        from ..mechanisms import Gaussian
        return Gaussian
    if not callable(family):
        raise ValueError(f"family must be a mechanism class or callable "
                         f"noise -> mechanism (got {family!r})")
    return family


def _relation(relation, sampling):
    if relation is not None:
        return as_relation(relation)
    return sampling.needs if sampling is not None else ADD_REMOVE


def _check_sampling(sampling):
    if sampling is None:
        return None
    from ..core.sampling import SamplingScheme
    if not isinstance(sampling, SamplingScheme):
        raise ValueError(f"sampling must be a dpamp sampling scheme such as dp.Poisson(rate) "
                         f"or None (got {sampling!r})")
    return sampling


def _steps_of_epochs(e, sampling) -> int:
    # ceil(E / rate) exactly: the one count of the CLI, plans and dp.dpsgd (core/samplers.py)
    return _samplers.steps_of_epochs(e, sampling)


def _count(steps, epochs, sampling) -> int:
    return _samplers.count(steps, epochs, sampling)


def _sensitivity(sensitivity, relation):
    """The sensitivity given, or by default that of a sum of records clipped to norm 1 under
    ``relation`` (1 add/remove, 2 substitution), as ``--sampler`` reads it."""
    if sensitivity is None:
        from ..core.sampling import clip_sensitivity
        return clip_sensitivity(relation)
    return V.positive("sensitivity", sensitivity)


def _build_step(family, noise, sensitivity, relation, sampling):
    base = family(noise, sensitivity=sensitivity, relation=relation)
    return base if sampling is None else base.subsample(sampling)


# --- public functions ---------------------------------------------------------------------

def sigma(epsilon: float, delta: float, sampling: SamplingScheme | None = None,
          steps: int | None = None, epochs: float | None = None, method: str = "auto",
          sensitivity: float | None = None, relation: Relation | str | None = None,
          family: type[Mechanism] | None = None, rtol: float = 1e-4,
          **options: Any) -> Calibration:
    """The smallest noise ``sigma`` such that ``steps`` runs of
    ``family(sigma, sensitivity=sensitivity, relation=relation)`` on samples drawn by
    ``sampling`` are (epsilon, delta)-DP under ``method``'s upper bound.

    ``family`` defaults to :class:`dpamp.Gaussian` (sigma = noise std in units of the
    clipping norm, i.e. the noise multiplier); ``dp.Laplace`` calibrates its scale.
    ``sensitivity`` refers to the relation the sampling scheme needs (add/remove for Poisson,
    substitution for sampling without replacement); by default it is that of a sum of records
    clipped to norm 1: 1 under add/remove, 2 under substitution (one record replaced moves the
    sum by up to twice the clipping norm), as ``--sampler`` on the command line reads it. ``epochs``
    instead of ``steps``: steps = ceil(epochs / rate). ``rtol``: the returned sigma is at most
    (1 + rtol) times the smallest one that meets the target under the method (monotone
    bisection); it is certified: its own epsilon was evaluated and is <= ``epsilon``.
    ``options`` go to the accounting method (e.g. ``tol`` for "pld")."""
    eps_t, d = _check_targets(epsilon, delta)
    sampling = _check_sampling(sampling)
    T = _count(steps, epochs, sampling)
    rel = _relation(relation, sampling)
    sens = _sensitivity(sensitivity, rel)
    fam = _family(family)
    rtol = V.real("rtol", rtol, low=1e-12, high=1.0)

    def build(s):
        return _build_step(fam, s, sens, rel, sampling) * T

    name = _resolve(build, sens, method)

    oracles = {}

    def solve(m, x0=sens, factor=2.0, slope=None):
        oracle = oracles[m] = _Oracle(build, eps_t, d, m, options)
        lo, hi = geometric_search(oracle.ok, x0, *_SIGMA_RANGE, rtol=rtol, factor=factor,
                                  ok_when_large=True, value=oracle.value,
                                  slack=oracle.slack, slope=slope)
        if hi is None:
            g = oracle.guarantee(_SIGMA_RANGE[1])
            raise ValueError(f"no sigma <= {_SIGMA_RANGE[1]:g} meets epsilon <= {eps_t:g} at "
                             f"delta {d:g} by {m} (at sigma = {_SIGMA_RANGE[1]:g}: epsilon "
                             f"{g.epsilon:.6g})")
        if lo is None:
            raise ValueError(f"every sigma >= {_SIGMA_RANGE[0]:g} meets epsilon <= {eps_t:g} "
                             f"at delta {d:g} by {m}: the target is not binding")
        return oracle.result("sigma", hi, T * _samplers.steps_per_run(sampling), lo, rtol)

    warm = _warm_start(build, sens, name, solve)
    if warm is None:
        return solve(name)
    return solve(name, x0=warm.value, factor=1.25, slope=_log_slope(oracles["rdp"], warm.value))


def steps(epsilon: float, delta: float, sigma: float | None = None,
          sampling: SamplingScheme | None = None, mechanism: Mechanism | None = None,
          method: str = "auto", sensitivity: float | None = None,
          relation: Relation | str | None = None, family: type[Mechanism] | None = None,
          **options: Any) -> Calibration:
    """The largest number of steps T >= 1 such that T runs of one step are (epsilon, delta)-DP
    under ``method``'s upper bound. One step is ``family(sigma, ...)`` on samples drawn by
    ``sampling`` (see :func:`sigma`), or any ``mechanism`` given instead. Exact: T meets the
    target (evaluated) and T + 1 does not (evaluated), unless T hits 2**50. Under an epoch
    sampler (random allocation, shuffling) the runs are whole epochs of t steps, so T is a
    multiple of t (T + 1 steps would start another epoch)."""
    eps_t, d = _check_targets(epsilon, delta)
    step = _one_step(sigma, sampling, mechanism, sensitivity, relation, family)
    per = _samplers.steps_per_run(sampling if mechanism is None else
                                  getattr(mechanism, "scheme", None))
    c = _largest_count("step", lambda n: step * n, lambda n: n * per, eps_t, d, method,
                       options)
    return c if per == 1 else dataclasses.replace(c, value=c.value * per)


def epochs(epsilon: float, delta: float, sigma: float | None = None,
           sampling: SamplingScheme | None = None, mechanism: Mechanism | None = None,
           method: str = "auto", sensitivity: float | None = None,
           relation: Relation | str | None = None, family: type[Mechanism] | None = None,
           **options: Any) -> Calibration:
    """The largest whole number of epochs E >= 1 (E epochs = ceil(E / rate) steps of the
    sampled mechanism) that meets (epsilon, delta) under ``method``'s upper bound; see
    :func:`steps`. ``result.steps`` is the number of steps."""
    eps_t, d = _check_targets(epsilon, delta)
    step = _one_step(sigma, sampling, mechanism, sensitivity, relation, family)
    scheme = sampling if mechanism is None else getattr(mechanism, "scheme", None)
    if scheme is None:
        raise ValueError("epochs needs a sampling scheme (one epoch = 1/rate steps)")

    # (a rate <= 1 makes one epoch at least one step)
    per = _samplers.steps_per_run(scheme)      # an epoch sampler's runs are epochs
    return _largest_count("epoch", lambda e: step * _steps_of_epochs(e, scheme),
                          lambda e: _steps_of_epochs(e, scheme) * per, eps_t, d, method,
                          options)


def _largest_count(unit, build, steps_of, eps_t, d, method, options) -> Calibration:
    """The largest n >= 1 with build(n) within (eps_t, d) under ``method`` (warm-started by a
    cheaper method when ``auto``); ``steps_of(n)`` is the number of steps reported."""
    name = _resolve(build, 1, method)

    def solve(m, start=1):
        oracle = _Oracle(build, eps_t, d, m, options, refine=True)
        n = largest_int(oracle.ok, start, value=oracle.value)
        if n is None:
            g = oracle.guarantee(1)
            raise ValueError(f"even one {unit} exceeds the target: epsilon {g.epsilon:.6g} > "
                             f"{eps_t:g} at delta {d:g} by {m}")
        return oracle.result(unit + "s", n, steps_of(n))

    warm = _warm_start(build, 1, name, solve)
    return solve(name) if warm is None else solve(name, start=warm.value)


def rate(epsilon: float, delta: float, sigma: float, steps: int, population: int | None = None,
         scheme: str = "poisson", method: str = "auto", sensitivity: float | None = None,
         relation: Relation | str | None = None, family: type[Mechanism] | None = None,
         rtol: float = 1e-4, **options: Any) -> Calibration:
    """The largest sampling rate (or batch size) such that ``steps`` runs of
    ``family(sigma, ...)`` on the samples meet (epsilon, delta) under ``method``'s upper bound.

    ``scheme="poisson"`` without ``population``: the largest Poisson rate q in (0, 1], to
    relative ``rtol`` (the returned q is certified; q (1 + rtol) may or may not meet the
    target). With ``population`` n: the largest integer expected batch size m (rate m / n).
    ``scheme="without_replacement"`` (needs ``population``): the largest batch size m for
    sampling m of n without replacement (substitution relation; see :func:`sigma` for the
    sensitivity). Integer answers are exact: m meets the target and m + 1 does not."""
    from ..core.sampling import Poisson, WithoutReplacement
    eps_t, d = _check_targets(epsilon, delta)
    s = V.positive("sigma", sigma)
    T = V.integer("steps", steps, low=1)
    fam = _family(family)
    rtol = V.real("rtol", rtol, low=1e-12, high=1.0)
    if scheme not in ("poisson", "without_replacement"):
        raise ValueError(f"scheme must be 'poisson' or 'without_replacement' (got {scheme!r})")
    n = None if population is None else V.integer("population", population, low=1)
    if scheme == "without_replacement" and n is None:
        raise ValueError("scheme 'without_replacement' needs the population (dataset size)")

    if scheme == "poisson":
        rel = as_relation(relation) if relation is not None else ADD_REMOVE

        def make(q):
            return Poisson(q, relation=rel)
    else:
        assert n is not None            # checked above: without_replacement needs the population

        def make(m):
            return WithoutReplacement(m, n)
        rel = as_relation(relation) if relation is not None else WithoutReplacement.needs
    sens = _sensitivity(sensitivity, rel)

    if n is None:
        def build(q):
            return _build_step(fam, s, sens, rel, make(q)) * T
    else:
        def build(m):
            return _build_step(fam, s, sens, rel, make(m / n if scheme == "poisson" else m)) * T

    x0 = 1.0 if n is None else n
    name = _resolve(build, x0, method)
    param = "rate" if n is None else "batch"

    def solve(m, start=None):
        oracle = _Oracle(build, eps_t, d, m, options)
        if n is None:
            if oracle.ok(1.0):
                return oracle.result(param, 1.0, T)
            x0 = 0.5 if start is None else min(start, 0.5)
            lo, hi = geometric_search(oracle.ok, x0, _MIN_RATE, 1.0, rtol=rtol,
                                       factor=2.0 if start is None else 1.25,
                                       ok_when_large=False, value=oracle.value,
                                       slack=oracle.slack)
            if lo is None or not oracle.ok(lo):
                raise ValueError(f"no rate >= {_MIN_RATE:g} meets epsilon <= {eps_t:g} at "
                                 f"delta {d:g} by {m}")
            return oracle.result(param, lo, T, hi, rtol)
        best = largest_int(oracle.ok, n if start is None else start, high=n)
        if best is None:
            g = oracle.guarantee(1)
            raise ValueError(f"even a batch of 1 exceeds the target: epsilon {g.epsilon:.6g} "
                             f"> {eps_t:g} at delta {d:g} by {m}")
        return oracle.result(param, best, T)

    # no warm start for a Poisson rate: rdp's answer at small deltas can be orders of magnitude
    # below the PLD's (its conversion's floor), and the PLD's evaluations at tiny rates are
    # its slowest; from 0.5 downwards the search stays where they are cheap
    warm = None if n is None and name != "rdp" else _warm_start(build, x0, name, solve)
    return solve(name) if warm is None else solve(name, start=warm.value)


def _one_step(sigma, sampling, mechanism, sensitivity, relation, family):
    sampling = _check_sampling(sampling)
    if mechanism is not None:
        from ..mechanisms.base import check_mechanism
        if sigma is not None or family is not None:
            raise ValueError("give either a mechanism or sigma (with sampling), not both")
        step = check_mechanism(mechanism)
        return step if sampling is None else step.subsample(sampling)
    if sigma is None:
        raise ValueError("give sigma (the noise of one step) or a mechanism")
    s = V.positive("sigma", sigma)
    rel = _relation(relation, sampling)
    return _build_step(_family(family), s, _sensitivity(sensitivity, rel), rel, sampling)


def sweep(function: Callable[..., Calibration], over: str, values: Iterable[Any],
          **kwargs: Any) -> list[Calibration]:
    """Run a calibration for each value of one argument, with a progress bar on a terminal:
    ``sweep(dp.calibrate.sigma, "epsilon", [1, 2, 4, 8], delta=1e-5, sampling=..., steps=...)``.
    Returns the list of :class:`Calibration` results in order."""
    from ..core.progress import progress
    values = list(values)
    if not values:
        raise ValueError(f"{over} needs at least one value to sweep over")
    name = getattr(function, "__name__", "calibrate")
    return [function(**{over: v}, **kwargs)
            for v in progress(values, total=len(values), label=f"calibrate {name}")]
