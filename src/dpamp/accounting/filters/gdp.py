"""The Gaussian-DP filter (Smith & Thakurta 2022, arXiv 2210.17520).

**Theorem** (Smith & Thakurta, "Fully Adaptive Composition for Gaussian Differential Privacy":
a filter for GDP with the parameters of non-adaptive composition). If the analyst chooses step
t's mechanism after seeing the outputs of steps 1..t-1, step t is mu_t-GDP given the past, and
the steps run satisfy mu_1^2 + ... + mu_n^2 <= mu^2 on every path, then the interaction is
mu-GDP: its trade-off curve is at least G_mu, i.e. it is (epsilon, delta_mu(epsilon))-DP for
every epsilon, delta_mu(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)
(Dong, Roth & Su 2022, Cor. 2.13).

The filter for a budget (epsilon, delta) takes the largest mu with delta_mu(epsilon) <= delta
(bisection on the outward-rounded closed form, rounded down) and accepts a step while the sum
of mu_t^2 stays <= mu^2. A Gaussian mechanism of L2 sensitivity Delta and noise sigma is
exactly mu-GDP with mu = Delta / sigma, so for Gaussian steps this filter is exact: the filtered
interaction is as private as the non-adaptive composition of the same mu's, which no Rényi
filter matches (tests/test_filters.py counts the steps each allows).

Which steps: those whose parts are all Gaussian mechanisms by their family declaration
(``dpamp.mechanisms.family.family_of(m).gaussian_mu``), or compositions of them (mu^2 adds).
Anything else is refused with a ValueError; a Poisson-subsampled Gaussian with a
NotImplementedError (the approximate filter of arXiv 2602.06756 is not a proven bound).
"""
from __future__ import annotations

import math

from ...core.rounding import ulps_up
from ...mechanisms.base import Mechanism
from .common import SUBSAMPLED_GDP_REFUSAL, gaussian_mu_of, gdp_mu_budget, \
    is_subsampled_gaussian

__all__ = ["GaussianLedger", "step_mu2"]

THEOREM = "Smith & Thakurta 2022 (arXiv 2210.17520): sum mu_t^2 <= mu^2 => mu-GDP"


def step_mu2(mechanism: Mechanism) -> float:
    """mu^2 of a Gaussian step (rounded up), or the error that says why the GDP filter does not
    take it."""
    mu = gaussian_mu_of(mechanism)
    if mu is None:
        if is_subsampled_gaussian(mechanism):
            raise NotImplementedError(SUBSAMPLED_GDP_REFUSAL)
        raise ValueError(f"the Gaussian-DP filter takes Gaussian mechanisms (a family that "
                         f"declares gaussian_mu); {type(mechanism).__name__} is not one: use "
                         "method='rdp'")
    return float(ulps_up(mu * mu, 4))


class GaussianLedger:
    """Sum of mu_t^2 against mu^2, mu the largest GDP parameter within (epsilon, delta)."""

    method = "gdp"
    theorem = THEOREM

    def __init__(self, epsilon: float, delta: float):
        self.mu = gdp_mu_budget(epsilon, delta)
        self.budget = self.mu * self.mu * (1 - 1e-12)
        self.spent = 0.0

    def cost(self, mechanism: Mechanism) -> float:
        return step_mu2(mechanism)

    def fits(self, cost: float) -> bool:
        return float(ulps_up(self.spent + cost, 2)) <= self.budget

    def add(self, cost: float) -> None:
        self.spent = float(ulps_up(self.spent + cost, 2))

    def remaining(self) -> float:
        """1 - (sum mu_t^2) / mu^2: the fraction of the mu^2 budget still free."""
        return max(0.0, 1.0 - self.spent / self.budget) if self.budget > 0 else 0.0

    def remaining_mu(self) -> float:
        """The mu of the largest Gaussian step that still fits."""
        return math.sqrt(max(0.0, self.budget - self.spent))
