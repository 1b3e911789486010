"""The Laplace mechanism f(x) + Lap(scale) with L1 sensitivity Delta."""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


@dataclasses.dataclass(frozen=True)
class Laplace(Mechanism):
    """Laplace mechanism, pure (Delta/scale)-DP.

    RDP (Wang et al. 2019, Sec. 2 table, with the scale b written lambda there; Mironov 2017), t =
    Delta / b:
        epsilon(alpha) = 1/(alpha-1) log( alpha/(2alpha-1) e^{(alpha-1)t}
                                          + (alpha-1)/(2alpha-1) e^{-alpha t} ),
    evaluated by :func:`laplace_rdp` (no overflow for large alpha t, a proven upper bound where
    the value is tiny)."""

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

    def pure_epsilon(self) -> float:
        """Delta / scale rounded up (the division is correctly rounded, so the next float up is
        an upper bound; an exact quotient stays): delta = 0 is claimed only at or above the real
        pure epsilon."""
        q = self.eps0
        exact = Fraction(self.sensitivity) / Fraction(self.scale)
        return q if Fraction(q) >= exact else math.nextafter(q, math.inf)

    def _rdp(self, alpha):
        return laplace_rdp(self.eps0, alpha)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained curve (one pair of neighbours, Wang et al. 2019, Def. 18) rounded down:
        laplace_rdp less its pad 16u z and its error bound 8u z (u = 2^-53), and a few ulps more."""
        a = V.orders(alpha).astype(float)
        z = self.eps0
        low = np.maximum(np.asarray(laplace_rdp(z, a), dtype=float) * (1.0 - 8 * 2.0 ** -53)
                         - 32 * 2.0 ** -53 * z, 0.0)
        return low if low.ndim else float(low)


def laplace_rdp(z, alpha):
    """RDP of Lap(z) vs Lap(0) in units of the scale (z = Delta / b; Mironov 2017, Wang et al. 2019,
    Sec. 2): 1/(alpha-1) log g_alpha(z) with g_alpha(z) = e^{(alpha-1) z} (1 - c m),
    c = (alpha-1)/(2alpha-1), m = -expm1(-(2alpha-1) z), evaluated as
    z + log1p(-c m) / (alpha - 1). Here c m < 1/2, so the log1p term is accurate to a few ulps,
    but for small z the two terms cancel (the value is ~ alpha z^2 / 2): their absolute error is
    below 8u z (u = 2^-53), and 16u z is added so that the result stays a proven upper bound
    even where it is tiny. z at alpha = inf. Broadcasts; never overflows."""
    z = np.asarray(z, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    a = np.where(np.isinf(alpha), 2.0, alpha)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        c = (a - 1) / (2 * a - 1)
        m = -np.expm1(-(2 * a - 1) * z)
        val = z + np.log1p(-c * m) / (a - 1) + 16 * 2.0 ** -53 * z
        val = np.maximum(val, 0.0)
    return np.where(np.isinf(alpha), z, np.where(z == 0, 0.0, val))
