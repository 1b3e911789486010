"""Adaptive budgets: privacy filters and odometers that stay valid when each step is chosen
after seeing the earlier outputs (docs/filters.md).

- :class:`Filter` (filter.py): a budget (epsilon, delta) fixed in advance; ``try_spend`` runs a
  step only when it fits. Rényi (renyi.py), Gaussian-DP (gdp.py), advanced composition
  (advanced.py).
- :class:`Odometer` (odometer.py): a bound on the privacy spent so far, valid at every time at
  once.
- :class:`IndividualFilter` (individual.py): per-record Rényi filters for noisy gradient
  descent.
"""
from __future__ import annotations

from .common import BudgetExhausted
from .filter import Filter
from .individual import IndividualFilter
from .odometer import Odometer

__all__ = ["Filter", "Odometer", "IndividualFilter", "BudgetExhausted"]
