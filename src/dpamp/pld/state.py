"""Named types shared by the PLD modules: which bound a discretisation or a composition is."""
from __future__ import annotations

import enum


class Bound(enum.Enum):
    """Which side of the true privacy curve a PMF bounds (:mod:`.discretize`): UPPER, the
    pessimistic PMF (its delta(eps) is >= the truth everywhere, after any number of
    compositions), or LOWER, the optimistic one (<= the truth)."""
    UPPER = "upper"
    LOWER = "lower"


#: both bounds, upper first (the order in which :func:`.engine.compose` computes them)
BOTH = (Bound.UPPER, Bound.LOWER)
