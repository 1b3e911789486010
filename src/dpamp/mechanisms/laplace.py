"""The Laplace mechanism f(x) + Lap(scale) with L1 sensitivity Delta."""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import _validate as V
from ..relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism


@dataclasses.dataclass(frozen=True)
class Laplace(Mechanism):
    """Laplace mechanism, pure (Delta/scale)-DP.

    RDP (003 Sec. 2 table, with the scale b written lambda there; Mironov 2017), t = Delta / b:
        epsilon(alpha) = 1/(alpha-1) log( alpha/(2alpha-1) e^{(alpha-1)t}
                                          + (alpha-1)/(2alpha-1) e^{-alpha t} ),
    evaluated as t + [log(alpha/(2alpha-1)) + log1p((alpha-1)/alpha e^{-(2alpha-1)t})]/(alpha-1)
    so that nothing overflows for large alpha t."""

    scale: float
    sensitivity: float = 1.0
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __post_init__(self):
        object.__setattr__(self, "scale", V.positive("scale", self.scale))
        object.__setattr__(self, "sensitivity",
                           V.nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def eps0(self) -> float:
        """Pure-DP epsilon Delta / scale."""
        return self.sensitivity / self.scale

    def _rdp(self, alpha):
        t = self.eps0
        a = np.where(np.isinf(alpha), 2.0, alpha)  # placeholder, replaced below
        with np.errstate(over="ignore", under="ignore"):
            body = (np.log(a / (2 * a - 1))
                    + np.log1p((a - 1) / a * np.exp(-(2 * a - 1) * t))) / (a - 1)
        return np.where(np.isinf(alpha), t, t + body)
