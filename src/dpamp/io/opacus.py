"""opacus (Meta): its accountant interface on dpamp, without torch.

``OpacusAccountant`` has opacus' accountant interface (``step(noise_multiplier=,
sample_rate=)``, ``get_epsilon(delta)``, ``history``) and needs no torch: each step is a
Gaussian of std noise_multiplier (sensitivity 1, add/remove: opacus' DP-SGD with per-sample
clipping) on a Poisson sample of rate sample_rate.
"""
from __future__ import annotations

from ..core import _validate as V

__all__ = ["OpacusAccountant"]


class OpacusAccountant:
    """opacus' accountant interface on dpamp, without torch.

        acc = OpacusAccountant()
        for _ in range(steps):
            acc.step(noise_multiplier=1.1, sample_rate=256 / 60000)
        acc.get_epsilon(delta=1e-5)

    ``history`` is a list of (noise_multiplier, sample_rate, num_steps), consecutive equal steps
    merged, as in opacus. ``method``: the dpamp accounting method (default "auto": the tightest
    that applies)."""

    def __init__(self, method: str = "auto"):
        self.method = method
        self.history: list[tuple[float, float, int]] = []

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        z = V.positive("noise_multiplier", noise_multiplier)
        q = V.probability("sample_rate", sample_rate, low_open=True)
        if self.history and self.history[-1][:2] == (z, q):
            self.history[-1] = (z, q, self.history[-1][2] + 1)
        else:
            self.history.append((z, q, 1))

    def __len__(self) -> int:
        return len(self.history)

    def mechanism(self):
        """The dpamp composition of every step taken so far."""
        from ..mechanisms import Gaussian, compose
        from ..core.sampling import Poisson
        if not self.history:
            raise ValueError("no steps yet: call step(noise_multiplier=..., sample_rate=...)")
        parts = []
        for z, q, n in self.history:
            g = Gaussian(z)
            parts.append((g if q == 1.0 else g.subsample(Poisson(q))) * n)
        return compose(*parts)

    def get_guarantee(self, delta: float, method: str | None = None, **options):
        """The full :class:`dpamp.Guarantee` (epsilon, lower bound, method, theorem)."""
        return self.mechanism().epsilon(delta, method=method or self.method, **options)

    def get_epsilon(self, delta: float, method: str | None = None, **options) -> float:
        """epsilon(delta) of the steps so far (0 before the first step, as in opacus)."""
        V.delta(delta)
        if not self.history:
            return 0.0
        return float(self.get_guarantee(delta, method, **options).epsilon)

    def state_dict(self) -> dict:
        return {"history": list(self.history), "method": self.method}

    def load_state_dict(self, state: dict) -> None:
        self.history = [(float(z), float(q), int(n)) for z, q, n in state["history"]]
        self.method = state.get("method", self.method)
