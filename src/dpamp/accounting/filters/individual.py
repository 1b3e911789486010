"""``dp.IndividualFilter``: per-record Rényi filters for noisy gradient descent (Feldman &
Zrnic 2021, "Individual Privacy Accounting via a Rényi Filter").

Each step adds N(0, (z C)^2 I) to the sum of the active records' gradients, each clipped to
norm C (z the noise multiplier). For one record i, the step with and without i differs by i's
clipped gradient g_i, of norm ||g_i|| <= C, so the step is a Gaussian mechanism of L2
sensitivity ||g_i|| and noise z C with respect to record i: its Rényi divergence at order
alpha is

    rho_i(alpha) = alpha (||g_i|| / (z C))^2 / 2          (add/remove, both orders).

||g_i|| is computed at the current model, i.e. from the earlier outputs and record i itself:
this is the *individual* privacy loss of Feldman & Zrnic, whose filter theorem lets each
record's charge depend on the past and on that record. Each record
keeps its own Rényi ledger at K orders and takes part in a step only while the renyi.py
condition holds for it (some order with sum rho_i(alpha) <= B_alpha); once a step would not fit,
the record drops out for good (its gradient is left out of this step and of every later one).
By the theorem of renyi.py applied to each record (Feldman & Zrnic's individual filter at each
order, the conversion at delta/K, the union bound), the run is (epsilon, delta)-DP with respect
to every record, i.e. (epsilon, delta)-DP under add/remove.

**Poisson subsampling** (``sample_rate`` q < 1: each record in each step's batch independently
with probability q). With respect to record i the step is then the Poisson-subsampled Gaussian
of sensitivity ||g_i|| (i is in the sum with probability q, its gradient norm known either way),
and rho_i is that mechanism's proven RDP curve (dpamp's subsampled Gaussian: Steinke 2022, Thm 34 /
the fractional series), which the same filter theorem takes, as it takes any adaptively chosen
mechanism with a Rényi curve. To stay vectorised over records, mu_i = ||g_i|| / (z C) is rounded
up to a grid of 64 steps of 1/(64 z) (the RDP grows with mu, so rounding up is sound) and
the curves of the grid are computed once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core import validate as V
from .common import orders_of, renyi_budgets

__all__ = ["IndividualFilter"]

_GRID = 64


class IndividualFilter:
    """Per-record Rényi filters for noisy (stochastic) gradient descent (Feldman & Zrnic 2021;
    module docstring: the derivation).

        f = dp.IndividualFilter(epsilon=3.0, delta=1e-5, n=len(data), noise_multiplier=1.0,
                                clip_norm=1.0)
        for step in range(steps):
            norms = per_record_clipped_gradient_norms()   # shape (n,), each <= clip_norm
            active = f.charge(norms)                      # who takes part in this step
            g = sum of the active records' clipped gradients + N(0, (z C)^2)

    ``charge(norms)`` returns the boolean mask of the records that take part in this step (and
    are charged for it); a record whose charge would not fit drops out for good. ``active`` is
    the current mask, ``remaining`` each record's fraction of budget left."""

    def __init__(self, epsilon: float, delta: float, n: int, *, noise_multiplier: float,
                 clip_norm: float = 1.0, sample_rate: float = 1.0, orders: Any = None):
        self.epsilon = V.positive("epsilon", epsilon)
        self.delta = V.delta(delta)
        self.n = V.integer("n", n, low=1)
        self.noise_multiplier = V.positive("noise_multiplier", noise_multiplier)
        self.clip_norm = V.positive("clip_norm", clip_norm)
        self.sample_rate = V.probability("sample_rate", sample_rate, low_open=True)
        self.orders = orders_of(orders)
        self.budgets = renyi_budgets(self.epsilon, self.delta, self.orders)
        if not np.isfinite(self.budgets).any():
            raise ValueError(f"epsilon={self.epsilon:g} is below what the conversion costs at "
                             f"delta={self.delta:g} at every order")
        self.spent = np.zeros((self.n, self.orders.size))
        self.active = np.ones(self.n, dtype=bool)
        self.steps = 0
        self._table = None if self.sample_rate == 1.0 else self._subsampled_table()

    def _subsampled_table(self) -> np.ndarray:
        """RDP curves of the Poisson-subsampled Gaussian at mu = j / (GRID z), j = 0..GRID,
        outward-rounded: shape (GRID + 1, K)."""
        from ...core.sampling import Poisson
        from ...mechanisms.gaussian import Gaussian
        from ...rdp.conversion import upper_curve
        rows = [np.zeros_like(self.orders)]
        for j in range(1, _GRID + 1):
            m = Gaussian(self.noise_multiplier, sensitivity=j / _GRID).subsample(
                Poisson(self.sample_rate))
            rows.append(np.asarray(upper_curve(m._rdp)(self.orders), dtype=float))
        return np.array(rows)

    def step_rdp(self, norms: Any) -> np.ndarray:
        """Each record's RDP curve for one step with these clipped gradient norms: (n, K)."""
        g = V.reals("norms", norms, low=0.0, allow_inf=False)
        if g.shape != (self.n,):
            raise ValueError(f"norms must have shape ({self.n},) (one norm per record; got "
                             f"{g.shape})")
        if (g > self.clip_norm * (1 + 1e-9)).any():
            raise ValueError(f"norms must be clipped to clip_norm = {self.clip_norm:g} (got "
                             f"{g.max():g}): clip each record's gradient first")
        ratio = np.minimum(g / self.clip_norm, 1.0)
        if self._table is None:
            mu2 = (ratio / self.noise_multiplier) ** 2
            return (0.5 * mu2)[:, None] * self.orders[None, :] * (1 + 2.0 ** -40)
        j = np.ceil(ratio * _GRID * (1 + 1e-12)).astype(int)
        return self._table[np.minimum(j, _GRID)]

    def charge(self, norms: Any) -> np.ndarray:
        """Charge one step: records still active whose charge fits take part (and are
        charged); the others drop out for good. Returns the mask of the records in the step."""
        cost = self.step_rdp(norms)
        after = self.spent + cost
        fits = np.any(after <= self.budgets[None, :], axis=1)
        take = self.active & fits
        self.spent[take] = after[take]
        self.active = take
        self.steps += 1
        return take.copy()

    @property
    def remaining(self) -> np.ndarray:
        """Each record's fraction of budget left (0 for records that dropped out)."""
        ok = np.isfinite(self.budgets)
        frac = 1.0 - self.spent[:, ok] / self.budgets[None, ok]
        return np.where(self.active, np.clip(frac.max(axis=1), 0.0, 1.0), 0.0)

    def __repr__(self) -> str:
        return (f"IndividualFilter(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"n={self.n}: {self.steps} steps, {int(self.active.sum())} records active)")
