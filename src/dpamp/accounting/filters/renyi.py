"""The Rényi-DP filter, tracking many orders at once (Feldman & Zrnic 2021; Lécuyer 2021).

**Theorem** (the filter implemented here). Let Lambda = {alpha_1, ..., alpha_K} be orders > 1
fixed in advance, epsilon > 0, 0 < delta < 1, and for each order

    B_alpha = epsilon - [log(K/delta) + (alpha - 1) log(1 - 1/alpha) - log alpha] / (alpha - 1).

Let the analyst choose step t's mechanism M_t after seeing the outputs of steps 1..t-1, with a
Rényi-DP curve rho_t (D_alpha(M_t(x) || M_t(x')) <= rho_t(alpha) for every neighbouring pair,
in both orders, given the past). If step t is run only when some order still fits,

    there is an alpha in Lambda with  rho_1(alpha) + ... + rho_t(alpha) <= B_alpha,

and is otherwise refused (not run; the analyst may stop or try another step), then the whole
interaction is (epsilon, delta)-DP.

*Proof.* Under x, let L_t be the privacy loss of the first t outputs and S_t(alpha) =
sum_{s<=t} rho_s(alpha). For each alpha, exp((alpha - 1)(L_t - S_t(alpha))) is a non-negative
supermartingale started at 1 (E[e^{(alpha-1) l_t} | past] = e^{(alpha-1) D_alpha} <=
e^{(alpha-1) rho_t(alpha)}; Feldman & Zrnic 2021, the proof of their Rényi filter), so at the
final time N, E[exp((alpha - 1)(L_N - S_N(alpha)))] <= 1. The hockey-stick divergence is
delta(epsilon) = E[(1 - e^{epsilon - L_N})_+], and (1 - e^{-z})_+ <= c_alpha e^{(alpha-1) z}
for every z with c_alpha = (1/alpha)(1 - 1/alpha)^{alpha-1} (the bound behind Steinke 2022, Lemma 33
item 8). At N some order is alive (S_N(alpha) <= B_alpha), so

    (1 - e^{epsilon - L_N})_+ <= sum over alive alpha of c_alpha e^{(alpha-1)(B_alpha - epsilon)}
                                  e^{(alpha-1)(L_N - S_N(alpha))},

and taking expectations gives delta(epsilon) <= sum_alpha c_alpha e^{(alpha-1)(B_alpha -
epsilon)} = K (delta / K) = delta. The same holds with x and x' swapped. []

With K = 1 this is the Rényi filter of Feldman & Zrnic (2021) followed by one RDP ->
(epsilon, delta) conversion (Lécuyer 2021 builds filters and odometers on the same Rényi
supermartingale); several orders cost the union bound,
log K nats beside log(1/delta): ``orders=[alpha]`` tracks one order chosen in advance.
Soundness in floating point: each step's curve is read outward-rounded
(:func:`dpamp.rdp.conversion.upper_curve`), the budgets are padded down.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...mechanisms.base import Mechanism
from .common import orders_of, renyi_budgets

__all__ = ["RenyiLedger", "ZCDPLedger", "step_rdp"]

THEOREM = ("Rényi filter at K orders: Feldman & Zrnic 2021 supermartingale at each "
           "order, Steinke 2022, Lemma 33 item 8 conversion at delta/K, union bound over "
           "the orders")


def step_rdp(mechanism: Mechanism, orders: np.ndarray) -> np.ndarray:
    """The step's RDP curve at the orders, outward-rounded; a ValueError (naming the method to
    use) where the mechanism has no RDP curve."""
    from ...rdp.conversion import upper_curve
    if not mechanism.has_rdp():
        raise ValueError(f"{type(mechanism).__name__} has no Rényi-DP curve, so the Rényi "
                         "filter cannot charge it: use method='advanced' (an (epsilon, delta) "
                         "statement of each step) or method='basic'")
    try:
        return np.asarray(upper_curve(mechanism._rdp)(orders), dtype=float)
    except NotImplementedError as e:
        raise ValueError(f"the Rényi filter cannot charge this step: {e}") from None


class RenyiLedger:
    """Sum of the accepted steps' RDP curves at K orders, against the budgets B_alpha (the
    module's theorem). ``cost(m)`` is the step's curve; ``fits(cost)`` whether some order stays
    within its budget with it added."""

    method = "rdp"
    theorem = THEOREM

    def __init__(self, epsilon: float, delta: float, orders: Any = None):
        self.orders = orders_of(orders)
        self.budgets = renyi_budgets(epsilon, delta, self.orders)
        if not np.isfinite(self.budgets).any():
            raise ValueError(f"epsilon={epsilon:g} is below what the conversion costs at "
                             f"delta={delta:g} at every order: no step can ever fit (raise "
                             "epsilon or delta, or pass larger orders)")
        self.spent = np.zeros_like(self.orders)

    def cost(self, mechanism: Mechanism) -> np.ndarray:
        return step_rdp(mechanism, self.orders)

    def fits(self, cost: np.ndarray) -> bool:
        return bool(np.any(self.spent + cost <= self.budgets))

    def add(self, cost: np.ndarray) -> None:
        self.spent = self.spent + cost

    def remaining(self) -> float:
        """max over the orders of 1 - spent / budget, clipped to [0, 1]: the fraction of the
        least-spent order's budget still free."""
        ok = np.isfinite(self.budgets)
        frac = 1.0 - self.spent[ok] / self.budgets[ok]
        return float(np.clip(frac.max(), 0.0, 1.0))


class ZCDPLedger:
    """The Rényi filter at every order at once for zCDP steps (rho_t-zCDP: rho_t(alpha) <=
    alpha rho_t for all alpha): a step runs only when rho_1 + ... + rho_t <= rho*, rho* the
    largest rho whose RDP curve alpha rho converts to (epsilon, delta) at its best order.

    *Why it is valid.* At each alpha the steps run satisfy sum rho_s(alpha) <= alpha rho*, so by
    Feldman & Zrnic's filter the interaction is (alpha, alpha rho*)-RDP at every alpha, i.e.
    rho*-zCDP; rho* is fixed in advance, so converting its curve at the best order (Steinke 2022,
    Lemma 33 item 8) is a conversion of a fixed curve. No union bound over orders (this is the zCDP
    filter OpenDP's fully adaptive composition offers); the price is that a step's whole curve
    is charged as its rho (pure epsilon-DP steps: epsilon^2 / 2, Bun & Steinke 2016)."""

    method = "zcdp"
    theorem = ("zCDP filter: Feldman & Zrnic 2021 at every order, sum rho_t <= rho* "
               "(rho*-zCDP), converted by Steinke 2022, Lemma 33 item 8")

    def __init__(self, epsilon: float, delta: float):
        from ...core.roots import bisect, expand
        from ...rdp.conversion import epsilon_from_rdp

        def over(rho: float) -> bool:
            return epsilon_from_rdp(lambda a: a * rho, delta)[0] > epsilon

        lo, hi = expand(over, 0.0, 0.1)
        lo, _ = bisect(over, lo, hi, iterations=100, rtol=1e-12)
        self.budget = lo * (1 - 1e-12)
        self.spent = 0.0

    def cost(self, mechanism: Mechanism) -> float:
        from ...theorems.zcdp import rho_of
        rho = rho_of(mechanism)
        if rho is None:
            raise ValueError(f"{type(mechanism).__name__} has no zCDP rho (neither a declared "
                             "rho nor a finite pure epsilon): use method='rdp'")
        return float(rho)

    def fits(self, cost: float) -> bool:
        from ...core.rounding import ulps_up
        return float(ulps_up(self.spent + cost, 2)) <= self.budget

    def add(self, cost: float) -> None:
        from ...core.rounding import ulps_up
        self.spent = float(ulps_up(self.spent + cost, 2))

    def remaining(self) -> float:
        return max(0.0, 1.0 - self.spent / self.budget)
