"""(epsilon, delta) filters by advanced composition: Whitehouse, Ramdas, Rogers & Wu (ICML 2023),
the baseline of Rogers, Roth, Ullman & Vadhan (NeurIPS 2016), and basic composition.

Each step is charged by an (epsilon_t, delta_t) statement, chosen adaptively: a pure-DP
mechanism's pure epsilon (delta_t = 0), an (epsilon, delta) mechanism's own pair (its family's
``eps_delta``), or, for anything else, the fixed-plan accountant's proven epsilon of that one
step at ``step_delta`` (``mechanism.epsilon(step_delta)``).

**Whitehouse et al. 2023 (their privacy filter for approximate DP).** Let epsilon > 0 and
delta = delta' + delta'' with delta' > 0, delta'' >= 0. If the analyst runs step t only when

    sqrt(2 log(1/delta') sum_{s<=t} epsilon_s^2) + (1/2) sum_{s<=t} epsilon_s^2 <= epsilon
    and  sum_{s<=t} delta_s <= delta'',

the interaction is (epsilon, delta)-DP. (An (epsilon_t, delta_t)-DP step is
(delta_t, epsilon_t^2 / 2)-approximately zCDP, Bun & Steinke 2016 Prop. 3.3; the zCDP parts
compose as a filter, and rho + 2 sqrt(rho log(1/delta')) with rho = sum epsilon_s^2 / 2 is the
left-hand side.) The condition is monotone in sum epsilon_s^2, so the filter keeps
sum epsilon_s^2 <= S* = (sqrt(2 log(1/delta') + 2 epsilon) - sqrt(2 log(1/delta')))^2, the
root of the left-hand side = epsilon. These are the constants of advanced composition for a
fixed plan (the leading sqrt(2 log(1/delta') sum epsilon^2)), now with adaptive parameters.

**Rogers, Roth, Ullman & Vadhan 2016, Thm 5.1 (the baseline).** For delta_g in (0, 1/e) and
epsilon_g > 0, with H = epsilon_g^2 / (28.04 log(1/delta_g)), step t runs only when
sum_{s<=t} delta_s <= delta_g / 2 and

    K_t = sum_{s<=t} epsilon_s (e^{epsilon_s} - 1) / 2
          + sqrt(2 (sum epsilon_s^2 + H) (1 + (1/2) log(sum epsilon_s^2 / H + 1)) log(2/delta_g))
        <= epsilon_g;

then the interaction is (epsilon_g, delta_g)-DP. (arXiv v2 of that paper writes
log(2/delta_g) in place of log(1/delta_g) inside H; both forms are evaluated and the larger K_t
is used, so the filter is valid under either statement.)

**Basic composition** (Rogers et al. 2016, Thm 3.6): sum epsilon_s <= epsilon and
sum delta_s <= delta.
"""
from __future__ import annotations

import math

from ...core.rounding import ulps_up
from ...mechanisms.base import Mechanism

__all__ = ["AdvancedLedger", "RRUVLedger", "BasicLedger", "step_eps_delta"]


def step_eps_delta(mechanism: Mechanism, step_delta: float | None) -> tuple[float, float]:
    """The (epsilon_t, delta_t) a step is charged: its family's (epsilon, delta) statement, its
    pure epsilon, or the proven epsilon of that one step at ``step_delta``."""
    from ...mechanisms.family import family_of
    fam = family_of(mechanism)
    if fam is not None and fam.eps_delta is not None:
        e, d = fam.eps_delta(mechanism)
        return float(e), float(d)
    try:
        pure = float(mechanism.pure_epsilon())
    except (NotImplementedError, ValueError):
        pure = math.inf
    if math.isfinite(pure):
        return pure, 0.0
    if step_delta is None:
        raise ValueError(f"{type(mechanism).__name__} is not pure DP and states no "
                         "(epsilon, delta): pass step_delta= (each such step is charged its "
                         "proven epsilon at that delta), or use method='rdp'")
    return float(mechanism.epsilon(step_delta).epsilon), float(step_delta)


class _EpsDeltaLedger:
    """Sums of epsilon_t, epsilon_t^2, epsilon_t (e^epsilon_t - 1) / 2 and delta_t."""

    def __init__(self, step_delta: float | None):
        self.step_delta = step_delta
        self.sums: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)

    def cost(self, mechanism: Mechanism) -> tuple[float, float, float, float]:
        e, d = step_eps_delta(mechanism, self.step_delta)
        return (e, float(ulps_up(e * e, 4)), float(ulps_up(e * math.expm1(e) / 2, 8)), d)

    def after(self, cost) -> tuple[float, ...]:
        return tuple(float(ulps_up(a + b, 2)) for a, b in zip(self.sums, cost))

    def add(self, cost) -> None:
        self.sums = self.after(cost)


class AdvancedLedger(_EpsDeltaLedger):
    """Whitehouse et al. 2023: sum epsilon_t^2 <= S*, sum delta_t <= delta''."""

    method = "advanced"
    theorem = ("Whitehouse, Ramdas, Rogers & Wu 2023 (ICML), approximate-DP filter: "
               "sqrt(2 log(1/delta') sum eps^2) + sum eps^2 / 2 <= eps, sum delta_t <= delta''")

    def __init__(self, epsilon: float, delta: float, step_delta: float | None,
                 delta_steps: float):
        super().__init__(step_delta)
        if not 0.0 <= delta_steps < delta:
            raise ValueError(f"delta_steps must be in [0, delta) = [0, {delta:g}) (the part of "
                             f"delta the steps' own delta_t may use; got {delta_steps:g})")
        self.delta_steps = delta_steps
        two_l = 2.0 * math.log(1.0 / (delta - delta_steps))
        # the root in a cancellation-free form: 2 eps / (sqrt(2L + 2 eps) + sqrt(2L))
        root = 2.0 * epsilon / (math.sqrt(two_l + 2.0 * epsilon) + math.sqrt(two_l))
        self.budget = root * root * (1 - 1e-12)

    def fits(self, cost) -> bool:
        _, e2, _, d = self.after(cost)
        return e2 <= self.budget and d <= self.delta_steps

    def remaining(self) -> float:
        return max(0.0, 1.0 - self.sums[1] / self.budget)


def rruv_k(sum_e2: float, sum_eexp: float, epsilon: float, delta: float) -> float:
    """K of Rogers et al. 2016 Thm 5.1, the larger of its two published forms of H."""
    out = 0.0
    for inside in (math.log(1.0 / delta), math.log(2.0 / delta)):
        h = epsilon * epsilon / (28.04 * inside)
        k = sum_eexp + math.sqrt(2.0 * (sum_e2 + h) * (1.0 + 0.5 * math.log1p(sum_e2 / h))
                                 * math.log(2.0 / delta))
        out = max(out, k)
    return float(ulps_up(out, 16))


class RRUVLedger(_EpsDeltaLedger):
    """Rogers, Roth, Ullman & Vadhan 2016, Thm 5.1 (valid for delta < 1/e)."""

    method = "rruv"
    theorem = "Rogers, Roth, Ullman & Vadhan 2016 (NeurIPS), Thm 5.1"

    def __init__(self, epsilon: float, delta: float, step_delta: float | None):
        super().__init__(step_delta)
        if delta >= math.exp(-1.0):
            raise ValueError(f"delta must be below 1/e for the filter of Rogers et al. 2016 "
                             f"(got {delta:g})")
        self.epsilon, self.delta = epsilon, delta
        self.base = rruv_k(0.0, 0.0, epsilon, delta)

    def fits(self, cost) -> bool:
        _, e2, ee, d = self.after(cost)
        return rruv_k(e2, ee, self.epsilon, self.delta) <= self.epsilon and \
            d <= self.delta / 2

    def remaining(self) -> float:
        k = rruv_k(self.sums[1], self.sums[2], self.epsilon, self.delta)
        span = self.epsilon - self.base
        return float(min(1.0, max(0.0, (self.epsilon - k) / span))) if span > 0 else 0.0


class BasicLedger(_EpsDeltaLedger):
    """Basic composition: sum epsilon_t <= epsilon, sum delta_t <= delta."""

    method = "basic"
    theorem = "basic composition with adaptive parameters (Rogers et al. 2016, Thm 3.6)"

    def __init__(self, epsilon: float, delta: float, step_delta: float | None):
        super().__init__(step_delta)
        self.epsilon, self.delta = epsilon, delta

    def fits(self, cost) -> bool:
        e, _, _, d = self.after(cost)
        return e <= self.epsilon and d <= self.delta

    def remaining(self) -> float:
        return max(0.0, 1.0 - self.sums[0] / self.epsilon)
