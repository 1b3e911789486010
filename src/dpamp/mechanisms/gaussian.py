"""The Gaussian mechanism N(f(x), sigma^2 I) with L2 sensitivity Delta."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism


@dataclasses.dataclass(frozen=True)
class Gaussian(Mechanism):
    """Gaussian mechanism; RDP epsilon(alpha) = alpha Delta^2 / (2 sigma^2) (Steinke 2022, Lemma 33
    item 4, Wang et al. 2019, Table/Sec. 2), i.e. rho-zCDP with rho = Delta^2 / (2 sigma^2); not
    pure DP.

    ``sigma`` is the noise standard deviation (the noise multiplier when sensitivity = 1)."""

    sigma: float
    sensitivity: float = 1.0
    relation: Relation = ADD_REMOVE
    tight_rdp = True  # one pair of neighbours attains every order: Wang et al. 2019, Def. 18 holds
    self_consistent_rdp = True  # Wang et al. 2019, Lemma 27

    def __post_init__(self):
        object.__setattr__(self, "sigma", V.real("sigma", self.sigma, low=0, low_open=True))
        object.__setattr__(self, "sensitivity",
                           V.nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def rho(self) -> float:
        """zCDP parameter Delta^2 / (2 sigma^2) (Steinke 2022, Lemma 12), as (Delta/sigma)^2 / 2 so
        that huge or tiny parameters lose nothing; a ratio above 1e154 gives inf (not private),
        never an OverflowError."""
        r = self.sensitivity / self.sigma
        return 0.5 * r * r

    @property
    def mu(self) -> float:
        """Standardised shift Delta / sigma: the pair is N(mu, 1) vs N(0, 1)."""
        return self.sensitivity / self.sigma

    def _rdp(self, alpha):
        with np.errstate(invalid="ignore"):
            out = alpha * self.rho
        # a positive sensitivity is never pure DP, even when rho underflows to 0
        return np.where(np.isinf(alpha), np.inf if self.sensitivity > 0 else 0.0, out)

