"""Mechanisms described only by a privacy notion: zCDP and a user-supplied RDP curve."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..core import validate as V
from ..core.hull import lower_hull
from ..core.relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism


@dataclasses.dataclass(frozen=True)
class ZCDP(Mechanism):
    """A rho-zCDP mechanism: epsilon(alpha) = rho * alpha for all alpha > 1 (Steinke 2022, Def.
    11)."""

    rho: float
    relation: Relation = ADD_REMOVE

    def __post_init__(self):
        object.__setattr__(self, "rho", V.nonnegative("rho", self.rho))
        object.__setattr__(self, "relation", as_relation(self.relation))

    def _rdp(self, alpha):
        with np.errstate(invalid="ignore"):
            out = self.rho * alpha
        return np.where(np.isinf(alpha), np.inf if self.rho > 0 else 0.0, out)


#: orders at which a user curve is sampled to build its convex projection (Wang et al. 2019, Prop.
#: 24)
_PROJECTION_GRID = 1.0 + np.geomspace(1e-3, 1e4, 241)


def cgf_projection(lam: np.ndarray, cgf: np.ndarray):
    """Lower convex hull of the points (0, 0), (lam_i, cgf_i): the projection F of Wang et al. 2019,
    Prop. 24 restricted to the sample points. Any CGF K with K(0) = 0, convex, and K(lam_i) <= cgf_i
    lies below the hull on [0, max lam] (the hull is the largest convex minorant of the points), so
    the hull is still a valid upper bound (errata: K <= F[K_bar] <= K_bar).
    Returns the hull vertices (x, y)."""
    xs = np.concatenate([[0.0], lam])
    ys = np.concatenate([[0.0], cgf])
    keep = np.isfinite(ys)
    xs, ys = xs[keep], ys[keep]
    # a point within rounding of a hull edge may be dropped, lowering the hull by that much
    # (relative ~1e-15): the RDP methods' 1e-10 relative margin on every answer covers it
    hull = lower_hull(xs, ys)
    return xs[hull], ys[hull]


@dataclasses.dataclass(frozen=True, eq=False)
class RDPCurve(Mechanism):
    """A mechanism known only through a user-supplied RDP curve ``func(alpha)``.

    The curve is trusted as an upper bound and projected onto valid CGFs (Wang et al. 2019, Prop.
    24): the reported epsilon(alpha) is min(func(alpha), hull(alpha-1)/(alpha-1)), where hull is the
    lower convex hull of (0,0) and the samples of K(lambda) = lambda * func(lambda+1) on a fixed
    grid. ``pure_epsilon``: func(inf) if the callable accepts it, else inf."""

    func: Callable
    relation: Relation = ADD_REMOVE
    name: str = "rdp-curve"
    if TYPE_CHECKING:
        # the CGF projection's hull (x, y), set by __post_init__: not a field, which
        # serialisation and repr would read
        @property
        def _hull(self) -> tuple[np.ndarray, np.ndarray]: ...

    def __post_init__(self):
        if not callable(self.func):
            raise ValueError(f"func must be callable alpha -> epsilon(alpha) (got {self.func!r})")
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string (got {self.name!r})")
        object.__setattr__(self, "relation", as_relation(self.relation))
        lam = _PROJECTION_GRID - 1.0
        cgf = lam * self._call(_PROJECTION_GRID)
        object.__setattr__(self, "_hull", cgf_projection(lam, cgf))

    def _call(self, alpha: np.ndarray) -> np.ndarray:
        """func at the orders ``alpha``, checked: real numbers (no bools, complex numbers or
        strings, which a float conversion would silently accept or truncate), one per order,
        never NaN, >= 0 (+inf allowed). Called on the whole array first; a function that
        fails on arrays, or returns something of another shape (a constant), is called order
        by order."""
        try:
            raw, vectorised = self.func(alpha), True
        except (ValueError, TypeError, ArithmeticError):  # a function of one float only
            raw, vectorised = None, False
        out = V.real_array("func(alpha)", raw) if vectorised else None
        if out is None or out.shape != alpha.shape:
            vals = []
            for a in alpha.ravel().tolist():
                v = V.real_array("func(alpha)", self.func(a))
                if v.size != 1:
                    raise ValueError(f"func must return one RDP value per order (got an array "
                                     f"of shape {v.shape} at alpha = {a:g})")
                vals.append(float(v.ravel()[0]))
            out = np.array(vals, dtype=float).reshape(alpha.shape)
        bad = np.isnan(out) | (out < 0)
        if bad.any():
            i = np.flatnonzero(bad)[0]
            raise ValueError(f"func must return RDP values >= 0, never nan (got "
                             f"{float(out.ravel()[i])!r} at alpha = {alpha.ravel()[i]:g})")
        return out

    def _rdp(self, alpha):
        finite = np.isfinite(alpha)
        direct = np.full_like(alpha, np.inf, dtype=float)
        try:
            direct = self._call(alpha)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError):
            if finite.any():
                direct[finite] = self._call(alpha[finite])
        hx, hy = self._hull
        lam = np.where(finite, alpha - 1.0, 0.0)
        inside = finite & (lam <= hx[-1]) & (lam > 0)
        hull_val = np.full_like(direct, np.inf)
        hull_val[inside] = np.interp(lam[inside], hx, hy) / lam[inside]
        return np.minimum(direct, hull_val)
