"""``dp.Odometer``: a bound on the privacy spent so far that holds at every time at once.

An odometer reports, after each step, a number epsilon_n such that, for every pair of
neighbours x, x' and whatever the analyst's adaptive strategy,

    Pr_x[ there is a time n with L_n >= epsilon_n ] <= delta,

L_n the privacy loss of the first n outputs (Rogers, Roth, Ullman & Vadhan 2016; Whitehouse,
Ramdas, Rogers & Wu 2023 define odometers this way). So the privacy loss stays below the
reported value at all times at once, in particular at any data-dependent stopping time, and an
analyst who stops before epsilon_n exceeds a budget epsilon is (epsilon, delta)-DP.

**Rényi odometer** (method "rdp"). For each of K orders fixed in advance, exp((alpha - 1)(L_n -
S_n(alpha))) is a non-negative supermartingale started at 1 (S_n(alpha) the sum of the steps'
RDP curves, as in renyi.py), so Ville's inequality gives Pr[exists n: L_n >= S_n(alpha) +
log(K/delta) / (alpha - 1)] <= delta/K; a union bound over the orders:

    epsilon_n = min over alpha of  S_n(alpha) + log(K/delta) / (alpha - 1),

and, when every step is pure DP, also at most the sum of the pure epsilons (then L_n <= that
sum surely).

**Gaussian-DP odometer** (method "gdp"; Gaussian steps, mu_t = Delta_t / sigma_t, or any
mu_t-GDP step). A mu-GDP step has E[e^{lambda l}] <= e^{lambda mu^2 / 2 + lambda^2 mu^2 / 2} for
lambda >= 0 (its Rényi divergence of order 1 + lambda is at most (1 + lambda) mu^2 / 2), so
exp(lambda (L_n - V_n / 2) - lambda^2 V_n / 2), V_n = sum mu_t^2, is a supermartingale for
every lambda >= 0. Mixing over lambda with the half-normal density of precision rho gives the
supermartingale

    m_n = 2 sqrt(rho / (V_n + rho)) exp(s^2 / (2 (V_n + rho))) Phi(s / sqrt(V_n + rho)),
    s = L_n - V_n / 2

(the one-sided normal mixture of Howard, Ramdas, McAuliffe & Sekhon 2021, the boundary of
Whitehouse et al.'s mixture odometers), and Ville's inequality gives Pr[exists n: m_n >= 1/delta]
<= delta. m is increasing in s, so epsilon_n = V_n / 2 + b(V_n), b(V) the s at which m = 1/delta,
solved by bisection here (the closed forms in the papers are upper bounds of it). rho is chosen
so that the bound is tightest at V = ``tune`` (default 1: a total mu of 1).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core import validate as V
from ...core.relations import Relation
from .common import check_step, orders_of, refuse_invalid

__all__ = ["Odometer", "mixture_boundary"]


def _log_mixture(s: float, v: float, rho: float) -> float:
    from scipy.special import log_ndtr
    a = v + rho
    return math.log(2.0) + 0.5 * math.log(rho / a) + s * s / (2.0 * a) + \
        float(log_ndtr(s / math.sqrt(a)))


def mixture_boundary(v: float, delta: float, rho: float) -> float:
    """b(V): the s >= 0 at which the one-sided normal mixture reaches 1/delta (rounded up)."""
    from ...core.roots import bisect, expand
    target = -math.log(delta)

    def over(s: float) -> bool:
        return _log_mixture(s, v, rho) >= target

    lo, hi = expand(over, 0.0, 1.0)
    _, hi = bisect(over, lo, hi, iterations=200, rtol=1e-13)
    return hi * (1 + 1e-12)


def _tuned_rho(tune: float, delta: float) -> float:
    """The rho in a geometric grid that makes b(tune) smallest."""
    grid = tune * np.geomspace(1e-3, 10.0, 81)
    return float(min(grid, key=lambda r: mixture_boundary(tune, delta, float(r))))


class Odometer:
    """A privacy odometer: ``spend(mechanism)`` records a step (no budget: every step is
    taken), ``epsilon()`` is a bound on the privacy loss so far that holds at every time at
    once with probability 1 - delta (module docstring: the theorems). ``method``: "rdp"
    (any mechanism with a Rényi-DP curve; ``orders`` as in :class:`dpamp.Filter`) or "gdp"
    (Gaussian mechanisms; ``tune`` the sum of mu^2 at which the bound is tightest)."""

    def __init__(self, delta: float, method: str = "rdp", *, orders: Any = None,
                 tune: float = 1.0):
        self.delta = V.delta(delta)
        if not isinstance(method, str):
            raise ValueError(f"method must be a string (got {type(method).__name__})")
        refuse_invalid(method, "odometer")
        if method not in ("rdp", "gdp"):
            raise ValueError(f"method must be 'rdp' or 'gdp' (got {method!r})")
        self.method = method
        self.relation: Relation | None = None
        self.steps = 0
        if method == "rdp":
            self.orders = orders_of(orders)
            self.spent = np.zeros_like(self.orders)
            self.pure = 0.0
        else:
            if orders is not None:
                raise ValueError("orders= is an option of method='rdp' only")
            self.rho = _tuned_rho(V.positive("tune", tune), self.delta)
            self.mu2 = 0.0

    def spend(self, mechanism: Any) -> float:
        """Record one step; returns :meth:`epsilon` after it."""
        from ...core.rounding import ulps_up
        m = check_step(mechanism, self.relation)
        if self.method == "rdp":
            from .renyi import step_rdp
            cost = step_rdp(m, self.orders)
            try:
                pure = float(m.pure_epsilon())
            except (NotImplementedError, ValueError):
                pure = math.inf
            self.spent = self.spent + cost
            self.pure = float(ulps_up(self.pure + pure, 2))
        else:
            from .gdp import step_mu2
            self.mu2 = float(ulps_up(self.mu2 + step_mu2(m), 2))
        self.relation = m.relation
        self.steps += 1
        return self.epsilon()

    def epsilon(self) -> float:
        """The bound now: Pr[the privacy loss ever reaches the reported value] <= delta."""
        from ...core.rounding import ulps_up
        if self.steps == 0:
            return 0.0
        if self.method == "gdp":
            v = self.mu2
            return float(ulps_up(v / 2 + mixture_boundary(v, self.delta, self.rho), 8))
        lam = self.orders - 1.0
        k = self.orders.size
        vals = self.spent + (math.log(k) - math.log(self.delta)) / lam
        best = float(np.min(vals)) * (1 + 2.0 ** -40)
        return float(min(best, self.pure))

    def __repr__(self) -> str:
        return (f"Odometer(delta={self.delta:g}, method={self.method!r}: {self.steps} steps, "
                f"epsilon {self.epsilon():.6g})")
