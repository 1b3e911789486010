"""A mechanism run on a random subsample: RDP by 004 Thm 34 (Poisson) or 003 Thm 9/19 (WOR)."""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core.logspace import log_expm1
from ..core.rounding import TINY, ulps_up
from ..core.relations import Relation
from ..core.sampling import Poisson, SamplingScheme, WithoutReplacement
from .base import Mechanism
from .randomized_response import rr_rdp

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def amplified_pure_epsilon(eps: float, rate: float) -> float:
    """log(1 + rate (e^eps - 1)): amplification of pure eps-DP by Poisson sampling under
    add/remove and by sampling without replacement under substitution (000 Thms 8, 9 with
    delta = 0; 003 Lemma 3), rounded up.

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


#: the largest order whose CGF the exact sums compute (004 Thm 34 up to 4096, 003 Thm 9 up to
#: 512; rdp.poisson / rdp.without_replacement); orders above it are bounded by the caps only
_MAX_INTERPOLATED_ORDER = 4097.0


def interpolate_cgf(alpha: np.ndarray, cgf_at) -> np.ndarray:
    """RDP at real orders from the CGF K(lambda) = lambda eps(lambda+1) at integers (003 Cor. 10):
    K is convex, so K(lambda) <= (1-v) K(floor lambda) + v K(ceil lambda), v = lambda - floor.
    ``cgf_at(int array of orders >= 2)`` returns K at lambda = order - 1; K(0) = 0."""
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

    RDP: Poisson + add/remove by 004 Thm 34 (tight for any inner mechanism); without replacement
    + substitution by 003 Thm 9, with the per-term minimum against Thm 19 when the inner RDP is
    tight and self-consistent (Gaussian, Laplace, randomized response); real orders by 003 Cor. 10,
    and for the Poisson-subsampled Gaussian by the exact series of Mironov, Talwar & Zhang 2019
    (rdp.fractional), with a second-order bound on (1, 2) for every Poisson-subsampled base.
    Never above the inner mechanism's curve, nor above the RDP of the amplified pure epsilon."""

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

    def _compute_cgf(self, orders: np.ndarray) -> np.ndarray:
        # one order more than asked: 003 Thm 19 uses B(2 ceil(j/2)), up to order alpha + 1
        from ..rdp.poisson import MAX_EXACT_ORDER
        base_eps = self._base_eps(min(int(orders.max()), MAX_EXACT_ORDER) + 1)
        if isinstance(self.scheme, Poisson) and self.scheme.relation is Relation.ADD_REMOVE:
            from ..rdp.poisson import poisson_log_moments
            # the exact sum is O(alpha) per order: above the threshold only the caps in _rdp
            # (inner curve, amplified pure epsilon) apply, as 003 Sec. 4 suggests
            out = np.full(orders.shape, np.inf)
            ok = orders <= MAX_EXACT_ORDER
            if ok.any():
                out[ok] = poisson_log_moments(base_eps, self.rate, orders[ok])
            return out
        if isinstance(self.scheme, WithoutReplacement):
            from ..rdp.without_replacement import wor_log_moments
            return wor_log_moments(base_eps, self.base.pure_epsilon(), self.rate, orders,
                                   self_consistent=self.base.self_consistent_rdp)
        # with replacement / Poisson under substitution: crude joint-convexity bound and
        # 000 Thm 6 on the amplified privacy profile (dpamp.profiles.rdp_bridge)
        from ..profiles.rdp_bridge import subsampled_log_moments
        return subsampled_log_moments(self, orders)

    def has_rdp(self) -> bool:
        if not self.base.has_rdp():
            return False
        if isinstance(self.scheme, WithoutReplacement) or (
                isinstance(self.scheme, Poisson) and self.scheme.relation is Relation.ADD_REMOVE):
            return True
        # Profile-based RDP (000 Thm 6). Only where the caps applied in _rdp are sound: they
        # use the inner RDP curve and amplified_pure_epsilon(eps0, rate), which hold for Poisson
        # under substitution only when eps0 = inf (a pure inner mechanism is not amplified
        # there in the worst case) and for sampling with replacement only when batch = 1
        # (k copies of a record need the k-group curve) -- and for randomized response of a
        # bit under any scheme (000 Lemma 12: a gamma-mixture of its own pair).
        from ..profiles.core import is_binary
        if is_binary(self.base):
            return True
        if isinstance(self.scheme, Poisson):
            return math.isinf(self.base.pure_epsilon())
        return getattr(self.scheme, "batch", 0) == 1

    def pure_epsilon(self) -> float:
        """Pure epsilon of the subsampled mechanism, per scheme:
        Poisson + add/remove and without replacement + substitution: log(1 + rate(e^eps0 - 1))
        (000 Thms 8, 9 at delta = 0); with replacement: up to m copies of the changed record, so
        log(1 + gamma (e^{m eps0} - 1)) with gamma = 1 - (1 - 1/n)^m (group privacy); Poisson
        under substitution: eps0, since a pure inner mechanism is not amplified there in the worst
        case. Randomized response of one bit is a gamma-mixture of its own pair under every
        scheme (000 Lemma 12), so it keeps log(1 + gamma (e^eps0 - 1))."""
        from ..core.sampling import WithReplacement
        e0 = self.base.pure_epsilon()
        s = self.scheme
        if isinstance(s, WithoutReplacement) or (
                isinstance(s, Poisson) and s.relation is Relation.ADD_REMOVE):
            return amplified_pure_epsilon(e0, self.rate)
        from ..profiles.core import is_binary
        binary = is_binary(self.base)
        if isinstance(s, WithReplacement):
            gamma = -math.expm1(s.batch * math.log1p(-1.0 / s.population)) \
                if s.population > 1 else 1.0
            return amplified_pure_epsilon(e0 if binary else s.batch * e0, gamma)
        return amplified_pure_epsilon(e0, self.rate) if binary else e0

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
            if self.rate >= 1.0:
                val = self.base._rdp(a)
            else:
                # above the exact sums' largest order only the caps below apply (their integer
                # CGF is inf there): no table of 10^12 orders, no int64 overflow at 10^19
                val = np.full(a.shape, np.inf)
                small = a <= _MAX_INTERPOLATED_ORDER
                if small.any():
                    val[small] = interpolate_cgf(a[small], self._integer_cgf)
                val = np.minimum(val, self._fractional_rdp(a))
                val = np.minimum(val, self._second_order_rdp(a))
                val = np.minimum(val, self.base._rdp(a))
                if math.isfinite(eps_pure):
                    val = np.minimum(val, rr_rdp(eps_pure, a))
            out[fin] = val
        return out

    def _fractional_rdp(self, a: np.ndarray) -> np.ndarray:
        """RDP at non-integer orders where an exact series is known, inf elsewhere: a Gaussian
        under Poisson sampling with add/remove, MTZ 2019 Sec. 3.3 and Thms 4-5
        (rdp.fractional), up to order 512 (above it 003 Cor. 10 is within 1e-6 of exact),
        cached per order. At integer orders 004 Thm 34 is already exact."""
        from .gaussian import Gaussian
        out = np.full(a.shape, np.inf)
        if not (isinstance(self.base, Gaussian) and isinstance(self.scheme, Poisson)
                and self.scheme.relation is Relation.ADD_REMOVE and self.base.sensitivity > 0):
            return out
        from ..rdp.fractional import ACCOUNTING_MAX_ORDER, poisson_gaussian_rdp
        want = (a > 1.0) & (a <= ACCOUNTING_MAX_ORDER) & (a != np.floor(a))
        if not want.any():
            return out
        cache = self._cache.setdefault("fractional", {})
        orders = a[want].tolist()
        missing = sorted({o for o in orders if o not in cache})
        if missing:
            vals = poisson_gaussian_rdp(self.base.mu, self.rate, np.array(missing))
            cache.update(zip(missing, vals.tolist()))
        out[want] = [cache[o] for o in orders]
        return out

    def _second_order_rdp(self, a: np.ndarray) -> np.ndarray:
        """RDP at orders in (1, 2) under Poisson sampling with add/remove, for any base: inf
        elsewhere. After the reduction to one pair (P, Q) of the base in the proof of 004 Thm 34
        (joint convexity of the moments), with L = dP/dQ and X = q(L - 1) >= -q, the moments of
        both orders are 1 + E_Q[h_p(X)], h_p(x) = (1+x)^p - 1 - p x, with p = a (remove) and
        p = 1 - a (add), since E_Q[X] = 0. For p in (1, 2) or (-1, 0), h_p'' is decreasing, so
        h_p(x)/x^2 = int_0^1 (1-t) h_p''(tx) dt is too and is largest at x = -q: E_Q[h_p(X)] <=
        h_p(-q)/q^2 E_Q[X^2] = h_p(-q) (e^{D_2(P||Q)} - 1) <= h_p(-q) (e^{eps(2)} - 1). Near
        a = 2 this is the order-2 term of Thm 34; towards a = 1 it falls where 003 Cor. 10 stays
        flat at eps'(2)."""
        out = np.full(a.shape, np.inf)
        want = (a > 1.0) & (a < 2.0)
        if not (want.any() and isinstance(self.scheme, Poisson)
                and self.scheme.relation is Relation.ADD_REMOVE):
            return out
        eps2 = float(self.base._rdp(np.array([2.0]))[0])
        if not math.isfinite(eps2) or eps2 <= 0.0:
            return out
        o = a[want]
        h = np.maximum(self._taylor_gap(o, self.rate), self._taylor_gap(1.0 - o, self.rate))
        le = float(log_expm1(eps2))
        with np.errstate(divide="ignore"):
            log_h = np.log(h)
        # log h within 4 ulps of its size; eps2 read as rounded up by 2^-40 (the curves' pad)
        slack = 2.0 ** -50 * (np.abs(log_h) + abs(le) + 2.0) \
            + 2.0 ** -40 * eps2 * math.exp(eps2 - le)
        vals = np.log1p(np.exp(log_h + le + slack)) / (o - 1.0)
        out[want] = ulps_up(vals, 8)
        return out

    @staticmethod
    def _taylor_gap(p: np.ndarray, q: float) -> np.ndarray:
        """Upper bound on (1-q)^p - 1 + p q for p in (1, 2) or (-1, 0) and 0 < q < 1 (vectorised
        over p). For q <= 1/2 by the series sum_{k>=2} C(p,k) (-q)^k, whose terms are all positive
        for such p and fall by a factor (k-p)/(k+1) q <= q: 64 terms and the geometric tail bound;
        above 1/2 directly, with the rounding of the cancelling difference added."""
        p = np.asarray(p, dtype=float)
        if q <= 0.5:
            k = np.arange(2, 65, dtype=float)
            ratios = (k[None, :-1] - p[:, None]) / (k[None, :-1] + 1.0) * q
            terms = 0.5 * p[:, None] * (p[:, None] - 1.0) * q * q * np.concatenate(
                [np.ones((p.size, 1)), np.cumprod(ratios, axis=1)], axis=1)
            total = terms.sum(axis=1) + terms[:, -1] * q / (1.0 - q)
            return total * (1.0 + 256 * 2.0 ** -52)
        lb = math.log1p(-q)
        e = np.expm1(p * lb)
        slack = np.abs(e) + np.abs(p * q) + np.abs(p * lb) * (1.0 + e)
        return e + p * q + 16 * 2.0 ** -52 * slack

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """003 Prop. 20 lower bound at integer orders (WOR, tight inner mechanisms only)."""
        if not (isinstance(self.scheme, WithoutReplacement) and self.base.tight_rdp):
            return None
        from ..rdp.without_replacement import wor_lower_log_moments
        a = np.asarray(alpha)
        orders = a.astype(np.int64)
        if (orders != a).any() or (orders < 2).any():
            raise ValueError("alpha must be integer orders >= 2 for the Prop. 20 lower bound")
        base_eps = self._base_eps(int(orders.max()))
        return wor_lower_log_moments(base_eps, self.rate, orders.ravel()).reshape(a.shape) / (a - 1)

    def __repr__(self):
        return f"{self.base!r}.subsample({self.scheme!r})"
