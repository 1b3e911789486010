"""What every filter and odometer shares: the checks of a step, the orders of the Rényi
ledgers, the Gaussian-DP budget, and the refusal of the filters that are not valid under full
adaptivity.

A *step* is one dpamp mechanism run on the data, chosen by the analyst after seeing every
earlier output (full adaptivity: the mechanism, its parameters and whether to go on at all may
depend on the past). Each filter keeps a *ledger* of what the accepted steps cost in its own
currency (Rényi divergences at a few orders, the sum of mu^2, the sum of epsilon^2, ...) and
accepts a step only when the ledger with that step added still fits the budget; a refused step
is not run and costs nothing (it is the no-op mechanism, whose cost is 0 in every currency, so
the theorems cover "refuse and go on with a cheaper step" as well as "halt").
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core import validate as V
from ...core.relations import Relation
from ...mechanisms.base import Mechanism, check_mechanism

__all__ = ["BudgetExhausted", "DEFAULT_ORDERS", "INVALID_UNDER_ADAPTIVITY", "check_step",
           "orders_of", "renyi_budgets", "gdp_mu_budget", "gaussian_mu_of", "refuse_invalid",
           "SUBSAMPLED_GDP_REFUSAL"]


class BudgetExhausted(ValueError):
    """A step that does not fit the budget (raised where refusing is signalled by an error,
    e.g. :class:`dpamp.OpacusAccountant` with a budget; the step is not recorded)."""


#: the default Rényi orders of the filters and odometers: 16 orders from 1.5 to 256 (the
#: union bound over them costs log 16 = 2.8 nats beside log(1/delta), see renyi.py); pass
#: ``orders=[a]`` to track one order chosen in advance (no union bound)
DEFAULT_ORDERS = (1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 24.0, 32.0,
                  64.0, 256.0)

#: the methods that compose the steps' exact PLDs or privacy profiles: the natural filter they
#: give is not valid under full adaptivity
INVALID_UNDER_ADAPTIVITY = ("pld", "profile", "auto", "tradeoff", "fdp")

SUBSAMPLED_GDP_REFUSAL = (
    "the approximate Gaussian-DP filter for Poisson-subsampled Gaussians of Tran, Koskela, "
    "Räisä & Honkela (arXiv 2602.06756) rests on a fully adaptive central limit theorem: it is "
    "an approximation (its authors note CLT approximations are optimistic at realistic "
    "sampling rates), not a proven bound, and its exact finite-sample statement could not be "
    "established here, so dpamp does not implement it. A subsampled Gaussian is not mu-GDP "
    "with the Gaussian's mu either. Use method='rdp' (the Rényi filter takes the subsampled "
    "Gaussian's proven RDP curve)")


def refuse_invalid(method: str, what: str = "filter") -> None:
    """Raise the ValueError that says why a PLD- or profile-based filter is not valid."""
    if method in INVALID_UNDER_ADAPTIVITY:
        raise ValueError(
            f"method={method!r}: a {what} that composes the exact privacy-loss distributions "
            "(or privacy profiles, f-DP curves) of the steps run so far and stops when epsilon "
            "would exceed the budget is not valid under full adaptivity: when each step is "
            "chosen from the earlier outputs, the interaction can exceed the budget although "
            "every path's own composition fits it (Tran, Koskela, Räisä & Honkela 2026, "
            "arXiv 2602.06756; Regehr et al. 2026, arXiv 2602.15815; tests/test_filters.py "
            "reproduces such a counterexample). Use method='rdp' (any mechanism with a Rényi-DP "
            "curve) or method='gdp' (Gaussian mechanisms: exact for them)")


def check_step(mechanism: Any, relation: Relation | None) -> Mechanism:
    """The step as a dpamp mechanism, under the relation of the earlier steps (a budget is a
    statement about one neighbouring relation; mixing relations would state nothing)."""
    m = check_mechanism(mechanism)
    if relation is not None and m.relation != relation:
        raise ValueError(f"mechanism is under the {m.relation.words} relation but the earlier "
                         f"steps were under {relation.words}: one budget holds for one "
                         "neighbouring relation")
    return m


def orders_of(orders: Any) -> np.ndarray:
    """The Rényi orders of a ledger: finite, > 1, sorted, without repeats."""
    a = V.orders(DEFAULT_ORDERS if orders is None else orders, "orders")
    a = np.unique(a.ravel())
    if not np.isfinite(a).all():
        raise ValueError("orders must be finite (the pure epsilon is not tracked as an order)")
    return a


def renyi_budgets(epsilon: float, delta: float, orders: np.ndarray) -> np.ndarray:
    """B_alpha = epsilon - [log(K/delta) + (alpha-1) log(1 - 1/alpha) - log alpha] / (alpha-1)
    at each of the K orders (the conversion of Canonne, Kamath & Steinke 2020, Steinke 2022, Lemma
    33 item 8, at delta/K), padded down by its rounding error; -inf where it is not positive."""
    from ...rdp.conversion import eps_at_orders
    k = orders.size
    conv = eps_at_orders(orders, np.zeros_like(orders), math.log(k) - math.log(delta),
                         improved=True)
    b = epsilon - conv
    b = b - 2.0 ** -45 * (abs(epsilon) + np.abs(conv))
    return np.where(b > 0, b, -np.inf)


def gdp_mu_budget(epsilon: float, delta: float) -> float:
    """The largest mu (rounded down) whose Gaussian-DP curve G_mu is (epsilon, delta)-DP:
    delta_mu(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2) <= delta
    (Dong, Roth & Su 2022, Cor. 2.13; Balle et al. 2018, Thm 4), by bisection on the outward-rounded
    closed form (delta_mu(epsilon) grows with mu)."""
    from ...core.roots import bisect, expand
    from ...profiles.closed_forms import gaussian_log_profile
    log_d = math.log(delta)

    def over(mu: float) -> bool:
        return bool(gaussian_log_profile(mu, epsilon, upper=True) > log_d)

    lo, hi = expand(over, 0.0, 1.0)
    lo, _ = bisect(over, lo, hi, iterations=200, rtol=1e-14)
    return lo * (1 - 1e-12)


def gaussian_mu_of(mechanism: Mechanism) -> float | None:
    """mu = sqrt(sum c mu_i^2) when every part of ``mechanism`` is a Gaussian mechanism by its
    family's declaration (``gaussian_mu``: the pair N(mu, 1) vs N(0, 1)), else None. Never an
    isinstance test: the declared protocol is the one way in (docs/architecture.md)."""
    from ...mechanisms.family import family_of
    total = 0.0
    for m, count in mechanism.parts():
        fam = family_of(m)
        if fam is None or fam.gaussian_mu is None:
            return None
        mu = float(fam.gaussian_mu(m))
        if not math.isfinite(mu):
            return None
        total += count * mu * mu
    return math.sqrt(total)


def is_subsampled_gaussian(mechanism: Mechanism) -> bool:
    """Whether some part is a Gaussian under Poisson sampling (its family's
    ``poisson_gaussian``), the case arXiv 2602.06756's approximate filter is about."""
    from ...mechanisms.family import family_of
    for m, _ in mechanism.parts():
        fam = family_of(m)
        if fam is not None and fam.poisson_gaussian is not None and fam.poisson_gaussian(m):
            return True
    return False
