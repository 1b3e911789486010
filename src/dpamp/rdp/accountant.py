"""The analytical moments accountant (Wang et al. 2019, Sec. 4, Algorithms 1-5)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import validate as V
from ..mechanisms.base import Mechanism, check_mechanism
from ..mechanisms.composition import compose_counts

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..core.guarantee import Guarantee


class Accountant:
    """Keeps the unique mechanisms of a (possibly adaptive) sequence with their counts, so that
    ``compose`` is O(1) and the composed CGF is evaluated symbolically on demand (Wang et al. 2019,
    Sec. 4: "tracks K = K_1 + ... + K_k in symbolic form").

    >>> acc = Accountant(); acc.compose(step, times=1000); acc.epsilon(1e-5)
    """

    def __init__(self, method: str = "auto"):
        self._counts: dict[Mechanism, int] = {}
        self.method = method

    def compose(self, mechanism: Mechanism, times: int = 1) -> "Accountant":
        check_mechanism(mechanism)
        times = V.integer("times", times, low=0)
        if self._counts:
            rel = next(iter(self._counts)).relation
            if mechanism.relation is not rel:
                compose_counts([(next(iter(self._counts)), 1), (mechanism, 1)])  # raises
        for part, c in mechanism.parts():
            self._counts[part] = self._counts.get(part, 0) + c * times
        return self

    @property
    def composition(self) -> Mechanism:
        if not self._counts:
            raise ValueError("the accountant is empty: compose a mechanism first")
        return compose_counts(list(self._counts.items()))

    @property
    def steps(self) -> int:
        return sum(self._counts.values())

    def rdp(self, alpha: ArrayLike) -> float | np.ndarray:
        if not self._counts:
            return np.zeros_like(np.asarray(V.orders(alpha), dtype=float))
        return self.composition.rdp(alpha)

    def epsilon(self, delta: float, method: str | None = None, **options: Any) -> Guarantee:
        return self.composition.epsilon(delta, method=method or self.method, **options)

    def delta(self, epsilon: float, method: str | None = None, **options: Any) -> Guarantee:
        return self.composition.delta(epsilon, method=method or self.method, **options)

    def __repr__(self):
        inner = ", ".join(f"{m!r} x{c}" for m, c in self._counts.items())
        return f"Accountant({inner})"
