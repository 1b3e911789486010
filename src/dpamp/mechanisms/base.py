"""The mechanism description type shared by every family.

A mechanism is an immutable value object: it describes what was run and knows its exact
representations (RDP curve, and where available privacy profile / privacy-loss distribution), but
never how it will be queried (DESIGN: data flows left to right). How a family yields each
representation is declared in :mod:`dpamp.mechanisms.family`; queries such as ``epsilon`` and
``delta`` reach the method registry (:mod:`dpamp.accounting.registry`) through the one door
:mod:`dpamp.core.door`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

import numpy as np

from ..core import door
from ..core import validate as V
from ..core.rounding import ulps_down
from ..core.relations import Relation

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..core.guarantee import Guarantee
    from ..accounting.risk import RiskBound, TradeOff
    from ..core.sampling import SamplingScheme


class Mechanism:
    """Base class: subclasses are frozen dataclasses with a ``relation`` field and ``_rdp``."""

    relation: Relation
    #: True when ``rdp`` is attained by one fixed pair of neighbouring inputs for all orders
    #: (Wang et al. 2019, Definition 18 "tight"); enables Wang et al. 2019, Thm 19 and the Prop. 20
    #: lower bound.
    tight_rdp: bool = False
    #: True when, in addition, one pair attains the maximal |chi|^j divergences too (Wang et al.
    #: 2019, Def. 18 "self-consistent"); enables the Thm 19 terms. Proven for the Gaussian (Wang et
    #: al. 2019, Lemma 27) and binary randomized response (a single pair of outputs up to swap); not
    #: assumed elsewhere.
    self_consistent_rdp: bool = False

    # --- representations -------------------------------------------------------------------
    def rdp(self, alpha: ArrayLike) -> float | np.ndarray:
        """Rényi-DP curve epsilon(alpha), vectorised over orders alpha in (1, inf]: a proven
        upper bound (never below 0, NaN read as inf; the families' curves are rounded up where
        they are evaluated, and the conversions to (epsilon, delta) pad them once more,
        :func:`dpamp.rdp.conversion.upper_curve`)."""
        a = V.orders(alpha)
        with np.errstate(invalid="ignore"):
            v = np.asarray(self._rdp(a.astype(float)), dtype=float)
        out = np.where(np.isnan(v), np.inf, np.maximum(v, 0.0))
        return out if out.ndim else float(out)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} has no Rényi-DP curve")

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """A proven lower bound on the best possible RDP curve, where one is known (else None)."""
        return None

    def witnesses(self) -> tuple[Mechanism, ...]:
        """*Witnesses*, where known (else ()): mechanisms whose single neighbouring pair has an
        exactly known privacy-loss distribution (``exact_loss()``) and is the output pair of
        this mechanism, as described, on some actual pair of neighbours. The epsilon(delta) of
        each is then a lower bound on this mechanism's true value; the accounting methods
        report the best as ``Guarantee.lower`` where they give none as good (see
        :func:`dpamp.accounting.registry.witness_lower`). ``rel_err`` on a witness bounds the
        relative rounding error of each of its atoms."""
        return ()

    def renyi(self, alpha: ArrayLike) -> RenyiBracket:
        """The Rényi-DP bracket at orders ``alpha`` (vectorised): ``upper`` = ``rdp(alpha)``, a
        proven upper bound, and ``lower`` = a proven lower bound on the best possible curve, or
        None where none is known. The lower curve is ``rdp_lower`` or, for a mechanism whose
        curve is attained (``tight_rdp``), the curve itself. A lower curve defined only at
        integer orders (Wang et al. 2019, Prop. 20) is NaN at the other orders."""
        a = V.orders(alpha)
        upper = np.asarray(self.rdp(a), dtype=float)
        low = _lower_curve(self, a)
        out = (lambda x: x if x.ndim else float(x))
        return RenyiBracket(out(a.astype(float)), out(upper),
                            None if low is None else out(np.asarray(low, dtype=float)))

    def has_rdp(self) -> bool:
        """Whether ``rdp`` is available (every part of a composition must have it): the family
        defines an RDP curve (its class overrides ``_rdp``). Families whose curve depends on
        their parameters or parts (subsampled, post-processed, compositions, (eps, delta)
        mechanisms) override this; nothing is evaluated to answer."""
        return type(self)._rdp is not Mechanism._rdp

    def pure_epsilon(self) -> float:
        """epsilon(inf): the pure-DP epsilon (inf if the mechanism is not pure DP)."""
        return float(self._rdp(np.array([np.inf]))[0])

    def parts(self) -> tuple[tuple["Mechanism", int], ...]:
        """The composition as (unique mechanism, count) pairs."""
        return ((self, 1),)

    def profile(self, epsilon: ArrayLike) -> float | np.ndarray:
        """Privacy profile delta(epsilon) (Balle et al. 2018, Sec. 2), vectorised; see
        :mod:`dpamp.profiles`."""
        return door.call("profile", self, epsilon)

    # --- queries -----------------------------------------------------------------------------
    def epsilon(self, delta: float, method: str = "auto", **options: Any) -> Guarantee:
        """Smallest epsilon such that the mechanism is (epsilon, delta)-DP, as a Guarantee."""
        return door.call("epsilon", self, delta, method=method, **options)

    def delta(self, epsilon: float, method: str = "auto", **options: Any) -> Guarantee:
        """Smallest delta such that the mechanism is (epsilon, delta)-DP, as a Guarantee."""
        return door.call("delta", self, epsilon, method=method, **options)

    # --- operational risk (dpamp.accounting.risk, docs/risk.md) --------------------------------
    def tradeoff(self, alpha: ArrayLike, method: str = "auto", **options: Any) -> TradeOff:
        """Proven bracket on the trade-off curve beta(alpha) (f-DP), vectorised over alpha."""
        return door.call("tradeoff", self, alpha, method=method, **options)

    def tpr_at_fpr(self, fpr: ArrayLike, method: str = "auto", **options: Any) -> RiskBound:
        """Bracket on any membership-inference attack's true-positive rate at ``fpr``."""
        return door.call("tpr_at_fpr", self, fpr, method=method, **options)

    def gdp_mu(self, fpr_range: tuple[float, float] = (0.0, 1.0), method: str = "auto",
               **options: Any) -> RiskBound:
        """Bracket on the smallest Gaussian-DP mu whose trade-off lies below this one."""
        return door.call("gdp_mu", self, fpr_range, method=method, **options)

    def advantage(self, method: str = "auto", **options: Any) -> RiskBound:
        """Bracket on the membership advantage max (TPR - FPR) = delta(0)."""
        return door.call("advantage", self, method=method, **options)

    # --- serialisation -----------------------------------------------------------------------
    def to_json(self, indent: int | None = None) -> str:
        """JSON text ``{"type": ClassName, ...constructor arguments}``, recursively; read it
        back with ``dp.from_json`` (see :mod:`dpamp.io.serialize`)."""
        return door.call("to_json", self, indent=indent)

    # --- transformations ---------------------------------------------------------------------
    def subsample(self, scheme: SamplingScheme) -> Mechanism:
        """Run the mechanism on a random subsample drawn by ``scheme`` (see dpamp.core.sampling):
        one step (:class:`~.subsampled.Subsampled`), or one epoch for a scheme that draws an
        epoch at once (``scheme.per_epoch``: :class:`~.allocated.Allocated`). The constructors
        check the scheme and the relation it needs."""
        if getattr(scheme, "per_epoch", False):
            from .allocated import Allocated
            return Allocated(self, scheme)
        from .subsampled import Subsampled
        return Subsampled(self, scheme)

    def post_process(self, kernel: Any) -> Mechanism:
        """Post-process the output with a randomised map (mixing, Bernoulli sampling, ...)."""
        return kernel.apply(self)

    def __mul__(self, times: int) -> Mechanism:
        from .composition import compose_counts
        times = V.integer("times", times, low=0)
        return compose_counts([(self, times)])

    __rmul__ = __mul__

    def compose(self, *others: Mechanism) -> Mechanism:
        from .composition import compose
        return compose(self, *others)

    def __add__(self, other: object) -> Mechanism:
        """``a + b``: the sequential composition of both (``dp.compose(a, b)``)."""
        if not isinstance(other, Mechanism):
            return NotImplemented
        from .composition import compose
        return compose(self, other)

    def __radd__(self, other: object) -> Mechanism:
        """``sum(mechanisms)`` starts from 0: 0 + m is m."""
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented


class PostProcessing(Mechanism):
    """A mechanism that runs ``base`` (a field of the subclass) and post-processes its output:
    the neighbouring relation is the base's, and it has an RDP curve exactly when the base has
    one (post-processing never increases a Rényi divergence)."""

    if TYPE_CHECKING:
        base: Mechanism

    @property
    def relation(self) -> Relation:  # type: ignore[override]
        return self.base.relation

    def has_rdp(self) -> bool:
        return self.base.has_rdp()


def check_mechanism(obj, name="mechanism") -> Mechanism:
    if not isinstance(obj, Mechanism):
        raise ValueError(f"{name} must be a dpamp mechanism (got {type(obj).__name__})")
    return obj


class RenyiBracket(NamedTuple):
    """Rényi-DP of a mechanism per order: ``upper`` (proven) and ``lower`` (proven, or None)."""

    alpha: np.ndarray | float
    upper: np.ndarray | float
    lower: np.ndarray | float | None


def _lower_curve(mech: "Mechanism", alpha: np.ndarray):
    """``mech.rdp_lower`` at ``alpha``, the curve itself when it is attained (``tight_rdp``),
    else None. A lower curve that exists only at integer orders is evaluated there and NaN
    elsewhere."""
    try:
        low = mech.rdp_lower(alpha)
    except ValueError:
        ints = (alpha == np.floor(alpha)) & (alpha >= 2) & np.isfinite(alpha)
        if not ints.any():
            return None
        part = mech.rdp_lower(alpha[ints])
        if part is None:
            return None
        low = np.full(alpha.shape, np.nan)
        low[ints] = np.asarray(part, dtype=float)
        return low
    if low is None and mech.tight_rdp:
        # the attained curve as computed, 8 ulps down (it is accurate to a few ulps, like the
        # upper curve, which is rounded up as much); a mechanism whose upper curve carries a
        # pad (Laplace, the diffusions) must give its own rdp_lower without it, or this would
        # report the pad as a lower bound
        with np.errstate(invalid="ignore"):
            low = np.maximum(np.asarray(mech._rdp(alpha.astype(float)), dtype=float), 0.0)
        low = ulps_down(low, 8)
    return low


def flatten(mechanisms: Iterable[tuple[Mechanism, int]]):
    """Merge (mechanism, count) pairs, expanding compositions, keeping first-seen order."""
    merged: dict[Mechanism, int] = {}
    for mech, count in mechanisms:
        for part, c in mech.parts():
            merged[part] = merged.get(part, 0) + c * count
    return tuple((m, c) for m, c in merged.items() if c > 0)
