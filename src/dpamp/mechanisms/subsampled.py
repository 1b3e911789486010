"""A mechanism run on a random subsample: RDP by Steinke 2022, Thm 34 (Poisson) or Wang et al. 2019,
Thm 9/19 (WOR)."""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core.logspace import log_expm1
from ..core.rounding import TINY, ulps_up
from ..core.relations import Relation
from ..core.sampling import SamplingScheme
from .base import Mechanism
from .family import amplification_of
from .randomized_response import rr_rdp

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def amplified_pure_epsilon(eps: float, rate: float) -> float:
    """log(1 + rate (e^eps - 1)): amplification of pure eps-DP by Poisson sampling under
    add/remove and by sampling without replacement under substitution (Balle et al. 2018, Thms 8, 9
    with delta = 0; Wang et al. 2019, Lemma 3), rounded up.

    Evaluated as softplus(L), L = log(rate) + log(e^eps - 1): no cancellation and no overflow
    for any eps and rate (the direct eps + log(rate + (1 - rate) e^{-eps}) cancels when rate is
    tiny). L carries an absolute error of a few ulps of |L| and softplus has a relative
    condition number <= 1 in L, so (8 + |L|) ulps up is an upper bound (two ulps more where
    the result is subnormal and its relative precision is lost)."""
    if math.isinf(eps):
        return math.inf
    if eps == 0.0:
        return 0.0
    if rate >= 1.0:
        return eps
    big = float(math.log(rate) + log_expm1(eps))
    val = float(np.logaddexp(0.0, big))
    return max(ulps_up(val * (1.0 + (8.0 + abs(big)) * 2.0 ** -52), 2), TINY)


#: the largest order whose CGF the exact sums compute (Steinke 2022, Thm 34 up to 4096, Wang et al.
#: 2019, Thm 9 up to 512; rdp.poisson / rdp.without_replacement); orders above it are bounded by the
#: caps only
_MAX_INTERPOLATED_ORDER = 4097.0


def interpolate_cgf(alpha: np.ndarray, cgf_at) -> np.ndarray:
    """RDP at real orders from the CGF K(lambda) = lambda eps(lambda+1) at integers (Wang et al.
    2019, Cor. 10): K is convex, so K(lambda) <= (1-v) K(floor lambda) + v K(ceil lambda), v =
    lambda - floor. ``cgf_at(int array of orders >= 2)`` returns K at lambda = order - 1; K(0) =
    0."""
    lam = alpha - 1.0
    lo = np.floor(lam)
    hi = np.ceil(lam)
    both = np.concatenate([lo.ravel(), hi.ravel()]).astype(np.int64)
    k = np.zeros(both.shape)
    pos = both >= 1
    if pos.any():
        k[pos] = cgf_at(both[pos] + 1)
    k_lo, k_hi = k[: lo.size].reshape(lam.shape), k[lo.size:].reshape(lam.shape)
    v = lam - lo
    with np.errstate(invalid="ignore"):
        k = np.where(v == 0, k_lo, (1 - v) * k_lo + v * k_hi)
    return k / lam


@dataclasses.dataclass(frozen=True)
class Subsampled(Mechanism):
    """``base`` applied to a subsample drawn by ``scheme``.

    RDP: Poisson + add/remove by Steinke 2022, Thm 34 (tight for any inner mechanism); without
    replacement + substitution by Wang et al. 2019, Thm 9, with the per-term minimum against Thm 19
    when the inner RDP is tight and self-consistent (Gaussian, Laplace, randomized response); real
    orders by Wang et al. 2019, Cor. 10, and for the Poisson-subsampled Gaussian by the exact series
    of Mironov, Talwar & Zhang 2019 (rdp.fractional), with a second-order bound on (1, 2) for every
    Poisson-subsampled base. Never above the inner mechanism's curve, nor above the RDP of the
    amplified pure epsilon."""

    base: Mechanism
    scheme: SamplingScheme
    _cache: dict = dataclasses.field(default_factory=dict, compare=False, hash=False,
                                     repr=False)

    def __post_init__(self):
        """The one validation path of ``mech.subsample(scheme)`` and ``dp.from_json``: the base
        is a mechanism, the scheme a sampling scheme, and the base is under the relation the
        scheme needs inside (core.sampling's table: e.g. sampling without replacement needs
        substitution, since its theorems compare subsets of equal size)."""
        from ..core.sampling import relation_error
        from .base import check_mechanism
        check_mechanism(self.base, "base")
        if not isinstance(self.scheme, SamplingScheme):
            raise ValueError("scheme must be a dpamp sampling scheme (dp.Poisson, "
                             "dp.WithoutReplacement, dp.WithReplacement), got "
                             f"{type(self.scheme).__name__}")
        if self.base.relation is not self.scheme.needs:
            raise relation_error(self.scheme, self.base, self.scheme.needs)
        rule = amplification_of(self.scheme)
        if rule is not None and getattr(rule, "check", None) is not None:
            rule.check(self)

    @property
    def relation(self) -> Relation:  # type: ignore[override]
        return self.scheme.gives

    @property
    def rate(self) -> float:
        return self.scheme.rate

    def _base_eps(self, kmax: int) -> np.ndarray:
        """Inner RDP at orders 2..kmax (cached, grown by doubling)."""
        have = self._cache.get("base_eps")
        if have is None or have.size < kmax - 1:
            n = max(kmax, 2 * (have.size + 1) if have is not None else 64)
            have = np.asarray(self.base._rdp(np.arange(2, n + 1, dtype=float)), dtype=float)
            self._cache["base_eps"] = have
        return have

    def _integer_cgf(self, orders: np.ndarray) -> np.ndarray:
        """K(alpha - 1) = (alpha-1) eps'(alpha) at integer orders >= 2, cached per order in an
        array indexed by the order (NaN = not computed yet)."""
        table = self._cache.get("cgf")
        top = int(orders.max())
        if table is None or table.size <= top:
            grown = np.full(max(top + 1, 2 * (table.size if table is not None else 128)), np.nan)
            if table is not None:
                grown[: table.size] = table
            table = self._cache["cgf"] = grown
        vals = table[orders]
        missing = np.isnan(vals)
        if missing.any():
            need = np.unique(orders[missing])
            table[need] = self._compute_cgf(need)
            vals = table[orders]
        return vals

    def _amplification(self):
        rule = amplification_of(self.scheme)
        if rule is None:
            raise NotImplementedError(f"{type(self.scheme).__name__} declares no amplification "
                                      "(dpamp.mechanisms.family.declare_scheme)")
        return rule

    def _compute_cgf(self, orders: np.ndarray) -> np.ndarray:
        # one order more than asked: Wang et al. 2019, Thm 19 uses B(2 ceil(j/2)), up to order alpha
        # + 1
        return self._amplification().log_moments(self, orders)

    def has_rdp(self) -> bool:
        """Whether the scheme's RDP amplification is sound for this base (its declaration's
        ``has_rdp``; e.g. sampling with replacement of batch > 1 needs the group curve)."""
        rule = amplification_of(self.scheme)
        return bool(rule is not None and self.base.has_rdp() and rule.has_rdp(self))

    def pure_epsilon(self) -> float:
        """Pure epsilon of the subsampled mechanism, per scheme (its declaration): e.g.
        Poisson + add/remove and without replacement + substitution give
        log(1 + rate(e^eps0 - 1)) (Balle et al. 2018, Thms 8, 9 at delta = 0)."""
        return self._amplification().pure_epsilon(self)

    def _rdp(self, alpha):
        if not self.has_rdp():
            # the caps below (the inner curve, the amplified pure epsilon) are unsound here;
            # refusing in _rdp keeps rdp(), renyi() and every method from using them
            raise NotImplementedError(
                f"{self!r} has no Rényi-DP curve in dpamp: sampling with replacement of "
                "batch > 1 needs the group curve, Poisson under substitution a base without "
                "a pure epsilon; use the profile or PLD methods")
        alpha = np.asarray(alpha, dtype=float)
        out = np.empty_like(alpha)
        inf = np.isinf(alpha)
        eps_pure = self.pure_epsilon()
        out[inf] = eps_pure
        fin = ~inf
        if fin.any():
            a = alpha[fin]
            cap_of = self._amplification().rdp_cap
            cap = self.base if cap_of is None else cap_of(self)
            if self.rate >= 1.0 and cap is self.base:
                val = self.base._rdp(a)
            else:
                # above the exact sums' largest order only the caps below apply (their integer
                # CGF is inf there): no table of 10^12 orders, no int64 overflow at 10^19
                val = np.full(a.shape, np.inf)
                small = a <= _MAX_INTERPOLATED_ORDER
                if small.any():
                    val[small] = interpolate_cgf(a[small], self._integer_cgf)
                val = np.minimum(val, self._extra_rdp(a))
                val = np.minimum(val, cap._rdp(a))
                if math.isfinite(eps_pure):
                    val = np.minimum(val, rr_rdp(eps_pure, a))
            out[fin] = val
        return out

    def _extra_rdp(self, a: np.ndarray) -> np.ndarray:
        """Further upper curves the scheme knows at real orders (inf where none)."""
        extra = self._amplification().extra_rdp
        return np.full(a.shape, np.inf) if extra is None else extra(self, a)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The scheme's proven lower curve where it has one (Wang et al. 2019, Prop. 20 for sampling
        without replacement of a tight base), else None."""
        low = self._amplification().rdp_lower
        return None if low is None else low(self, alpha)

    def __repr__(self):
        return f"{self.base!r}.subsample({self.scheme!r})"
