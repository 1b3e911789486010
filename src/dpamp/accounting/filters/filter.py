"""``dp.Filter``: a budget (epsilon, delta) fixed in advance, and steps chosen one at a time.

    f = dp.Filter(epsilon=2.0, delta=1e-6)              # Rényi filter, 16 orders
    while f.try_spend(next_step):                       # charged only when it fits
        ...run next_step, look at its output, choose the next one...

Methods (each module states its theorem):

| method | steps it takes | theorem |
|---|---|---|
| ``"rdp"`` (default) | any mechanism with a Rényi-DP curve | Feldman & Zrnic 2021 at K orders, union bound (renyi.py) |
| ``"zcdp"`` | zCDP steps (Gaussian, pure DP: epsilon^2/2) | the same at every order, no union bound (renyi.py) |
| ``"gdp"`` | Gaussian mechanisms (declared ``gaussian_mu``) | Smith & Thakurta 2022 (gdp.py) |
| ``"advanced"`` | pure-DP, (epsilon, delta) or any with ``step_delta`` | Whitehouse, Ramdas, Rogers & Wu 2023 (advanced.py) |
| ``"rruv"`` | as "advanced" | Rogers, Roth, Ullman & Vadhan 2016, Thm 5.1 (the baseline) |
| ``"basic"`` | as "advanced" | sum of epsilon_t, sum of delta_t |

``method="pld"`` / ``"profile"`` are refused with the reason: the natural filter that composes
the exact PLDs of the steps run is not valid under full adaptivity (arXiv 2602.06756).
"""
from __future__ import annotations

from typing import Any

from ...core import validate as V
from ...core.relations import Relation
from .common import SUBSAMPLED_GDP_REFUSAL, check_step, refuse_invalid

__all__ = ["Filter", "METHODS"]

METHODS = ("rdp", "zcdp", "gdp", "advanced", "rruv", "basic")


def make_ledger(method: str, epsilon: float, delta: float, orders: Any,
                step_delta: float | None, delta_steps: float | None) -> Any:
    """The ledger of ``method`` (see the module's table)."""
    from .advanced import AdvancedLedger, BasicLedger, RRUVLedger
    from .gdp import GaussianLedger
    from .renyi import RenyiLedger, ZCDPLedger
    if method in ("subsampled-gdp", "gdp-subsampled", "clt"):
        raise NotImplementedError(SUBSAMPLED_GDP_REFUSAL)
    refuse_invalid(method)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} (got {method!r})")
    if orders is not None and method != "rdp":
        raise ValueError("orders= is an option of method='rdp' only")
    if method == "rdp":
        return RenyiLedger(epsilon, delta, orders)
    if method == "gdp":
        return GaussianLedger(epsilon, delta)
    if method == "zcdp":
        return ZCDPLedger(epsilon, delta)
    if method == "advanced":
        d2 = (delta / 2 if step_delta is not None else 0.0) if delta_steps is None \
            else V.nonnegative("delta_steps", delta_steps)
        return AdvancedLedger(epsilon, delta, step_delta, d2)
    if delta_steps is not None:
        raise ValueError("delta_steps= is an option of method='advanced' only")
    if method == "rruv":
        return RRUVLedger(epsilon, delta, step_delta)
    return BasicLedger(epsilon, delta, step_delta)


class Filter:
    """A privacy filter: a budget (epsilon, delta) fixed before the first step, steps chosen
    adaptively, each charged only when it fits; the whole interaction is (epsilon, delta)-DP
    whatever the analyst's strategy (the theorem of ``method``, see :attr:`theorem`).

    ``try_spend(mechanism)`` charges the step and returns True when it fits, else returns False
    and charges nothing (the step must then not be run). ``remaining`` is the fraction of the
    budget still free in the method's own currency (RDP at the least-spent order, the sum of
    mu^2, of epsilon^2, ...): 1 before any step, never increasing. Options: ``orders`` (method
    "rdp": the Rényi orders, default 16 from 1.5 to 256; one order means no union bound),
    ``step_delta`` (methods "advanced", "rruv", "basic": the delta_t of a step that is neither
    pure nor an (epsilon, delta) mechanism, charged its proven epsilon at that delta), and
    ``delta_steps`` (method "advanced": the part delta'' of delta for the steps' delta_t;
    default delta/2 with ``step_delta``, else 0). All steps must be under one relation."""

    def __init__(self, epsilon: float, delta: float, method: str = "rdp", *,
                 orders: Any = None, step_delta: float | None = None,
                 delta_steps: float | None = None):
        self.epsilon = V.positive("epsilon", epsilon)
        self.delta = V.delta(delta)
        if step_delta is not None:
            step_delta = V.delta(step_delta, "step_delta")
        if not isinstance(method, str):
            raise ValueError(f"method must be a string (got {type(method).__name__})")
        self.method = method
        self.ledger = make_ledger(method, self.epsilon, self.delta, orders, step_delta,
                                  delta_steps)
        self.relation: Relation | None = None
        self.steps = 0
        self.refused = 0

    @property
    def theorem(self) -> str:
        """The theorem that makes the filter valid (its module states it in full), by authors
        and year."""
        from ...core.citations import cite
        return cite(str(self.ledger.theorem))

    def can_spend(self, mechanism: Any) -> bool:
        """Whether ``mechanism`` would fit now (nothing is charged)."""
        m = check_step(mechanism, self.relation)
        return bool(self.ledger.fits(self.ledger.cost(m)))

    def try_spend(self, mechanism: Any) -> bool:
        """Charge ``mechanism`` and return True if it fits the budget; otherwise charge nothing
        and return False (the step must not be run; a cheaper one may still fit). A step the
        method cannot charge at all raises a ValueError that says which method can."""
        m = check_step(mechanism, self.relation)
        cost = self.ledger.cost(m)
        if not self.ledger.fits(cost):
            self.refused += 1
            return False
        self.ledger.add(cost)
        self.relation = m.relation
        self.steps += 1
        return True

    @property
    def remaining(self) -> float:
        """The fraction of the budget still free (1 before the first step; never increases)."""
        return float(self.ledger.remaining())

    def __repr__(self) -> str:
        return (f"Filter(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"method={self.method!r}: {self.steps} steps, {self.refused} refused, "
                f"remaining {self.remaining:.3g})")
