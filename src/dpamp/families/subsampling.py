"""The subsampled family and how each sampling scheme amplifies a mechanism's representations.

One :class:`~dpamp.mechanisms.family.Amplification` record per scheme (Poisson, sampling without
replacement, sampling with replacement): its RDP moments, its amplified pure epsilon, its PLD
and its privacy-profile pair. :class:`~dpamp.mechanisms.subsampled.Subsampled` and the layers
that compute read these records; none of them switches on the scheme's class. A new sampler
adds its class to :mod:`dpamp.core.sampling` and its record here (docs/adding-a-sampler.md).
"""
from __future__ import annotations

import math

import numpy as np

from ..core.logspace import log_expm1
from ..core.relations import ADD_REMOVE, Relation
from ..core.rounding import ulps_up
from ..core.sampling import Poisson, WithoutReplacement, WithReplacement
from ..mechanisms.family import (Amplification, Family, Rep, Support, amplification_of,
                                 declare, declare_scheme, describe, family_of,
                                 is_binary)
from ..mechanisms.subsampled import Subsampled, amplified_pure_epsilon

# --- Poisson sampling -------------------------------------------------------------------------


def _poisson_add_remove(sub) -> bool:
    return sub.scheme.relation is Relation.ADD_REMOVE


def _poisson_has_rdp(sub) -> Support:
    # under substitution the caps of Subsampled._rdp (the inner curve, the amplified pure
    # epsilon) hold only when the inner mechanism is not pure (a pure one is not amplified
    # there in the worst case); randomized response of a bit is a gamma-mixture of its own
    # pair under every scheme (Balle et al. 2018, Lemma 12)
    if _poisson_add_remove(sub) or is_binary(sub.base) or \
            math.isinf(sub.base.pure_epsilon()):
        return Support.yes()
    return Support.no("Poisson sampling under substitution of a pure-DP base has no sound RDP "
                      "curve in dpamp (the amplified pure epsilon does not hold there); use "
                      "the profile or PLD methods")


def _poisson_log_moments(sub, orders):
    from ..rdp.poisson import MAX_EXACT_ORDER, poisson_log_moments
    if not _poisson_add_remove(sub):
        return _profile_log_moments(sub, orders)
    base_eps = sub._base_eps(min(int(orders.max()), MAX_EXACT_ORDER) + 1)
    # the exact sum is O(alpha) per order: above the threshold only the caps in _rdp (inner
    # curve, amplified pure epsilon) apply, as Wang et al. 2019, Sec. 4 suggests
    out = np.full(orders.shape, np.inf)
    ok = orders <= MAX_EXACT_ORDER
    if ok.any():
        out[ok] = poisson_log_moments(base_eps, sub.rate, orders[ok])
    return out


def _poisson_pure(sub) -> float:
    e0 = sub.base.pure_epsilon()
    if _poisson_add_remove(sub) or is_binary(sub.base):
        return amplified_pure_epsilon(e0, sub.rate)
    return e0   # a pure inner mechanism is not amplified under substitution in the worst case


def _poisson_extra_rdp(sub, a):
    """The exact fractional-order series of a Poisson-subsampled Gaussian and the second-order
    bound on (1, 2) (:func:`poisson_second_order_rdp`), add/remove only."""
    out = np.full(a.shape, np.inf)
    if not _poisson_add_remove(sub):
        return out
    fam = family_of(sub.base)
    if fam is not None and fam.gaussian_mu is not None and fam.gaussian_mu(sub.base) > 0:
        out = np.minimum(out, _fractional_rdp(sub, a, fam.gaussian_mu(sub.base)))
    return np.minimum(out, poisson_second_order_rdp(sub, a))


def _fractional_rdp(sub, a, mu):
    """RDP at non-integer orders of a Gaussian under Poisson sampling with add/remove, by the
    exact series of Mironov, Talwar & Zhang 2019 (Sec. 3.3, Thms 4-5; rdp.fractional), up to
    order 512 (above it Wang et al. 2019, Cor. 10 is within 1e-6 of exact), cached per order. At
    integer orders Steinke 2022, Thm 34 is already exact."""
    from ..rdp.fractional import ACCOUNTING_MAX_ORDER, poisson_gaussian_rdp
    out = np.full(a.shape, np.inf)
    want = (a > 1.0) & (a <= ACCOUNTING_MAX_ORDER) & (a != np.floor(a))
    if not want.any():
        return out
    cache = sub._cache.setdefault("fractional", {})
    orders = a[want].tolist()
    missing = sorted({o for o in orders if o not in cache})
    if missing:
        vals = poisson_gaussian_rdp(mu, sub.rate, np.array(missing))
        cache.update(zip(missing, vals.tolist()))
    out[want] = [cache[o] for o in orders]
    return out


def poisson_second_order_rdp(sub, a):
    """RDP at orders in (1, 2) under Poisson sampling with add/remove, for any base: inf
    elsewhere. After the reduction to one pair (P, Q) of the base in the proof of Steinke 2022, Thm
    34 (joint convexity of the moments), with L = dP/dQ and X = q(L - 1) >= -q, the moments of
    both orders are 1 + E_Q[h_p(X)], h_p(x) = (1+x)^p - 1 - p x, with p = a (remove) and
    p = 1 - a (add), since E_Q[X] = 0. For p in (1, 2) or (-1, 0), h_p'' is decreasing, so
    h_p(x)/x^2 = int_0^1 (1-t) h_p''(tx) dt is too and is largest at x = -q: E_Q[h_p(X)] <=
    h_p(-q)/q^2 E_Q[X^2] = h_p(-q) (e^{D_2(P||Q)} - 1) <= h_p(-q) (e^{eps(2)} - 1). Near
    a = 2 this is the order-2 term of Thm 34; towards a = 1 it falls where Wang et al. 2019, Cor. 10
    stays flat at eps'(2)."""
    out = np.full(a.shape, np.inf)
    want = (a > 1.0) & (a < 2.0)
    if not want.any():
        return out
    eps2 = float(sub.base._rdp(np.array([2.0]))[0])
    if not math.isfinite(eps2) or eps2 <= 0.0:
        return out
    o = a[want]
    h = np.maximum(taylor_gap(o, sub.rate), taylor_gap(1.0 - o, sub.rate))
    le = float(log_expm1(eps2))
    with np.errstate(divide="ignore"):
        log_h = np.log(h)
    # log h within 4 ulps of its size; eps2 read as rounded up by 2^-40 (the curves' pad)
    slack = 2.0 ** -50 * (np.abs(log_h) + abs(le) + 2.0) \
        + 2.0 ** -40 * eps2 * math.exp(eps2 - le)
    vals = np.log1p(np.exp(log_h + le + slack)) / (o - 1.0)
    out[want] = ulps_up(vals, 8)
    return out


def taylor_gap(p: np.ndarray, q: float) -> np.ndarray:
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


def _poisson_loss(sub, base):
    from ..pld import loss as L
    if not _poisson_add_remove(sub) or not isinstance(base, L.LossDistribution):
        return None          # the profile (Balle et al. 2018, Thm 14) where there is one
    return base.poisson(sub.scheme.rate)


def _poisson_profile_source(sub) -> str:
    if sub.scheme.relation is ADD_REMOVE:
        return "Balle, Barthe & Gaboardi 2018, Thm 8 (Thm 2, both orders)"
    if sub.scheme.population is None:
        return ("Balle, Barthe & Gaboardi 2018, Thm 2 (joint convexity; the one-record worst "
                "case, no population given)")
    return "Balle, Barthe & Gaboardi 2018, Thm 14 (tighter proof form)"


def _poisson_pair(sub, eps):
    from ..profiles.amplification import poisson_profile_pair
    return poisson_profile_pair(sub, eps)


# --- sampling without replacement (substitution) -------------------------------------------


def _wor_log_moments(sub, orders):
    from ..rdp.poisson import MAX_EXACT_ORDER
    from ..rdp.without_replacement import wor_log_moments
    base_eps = sub._base_eps(min(int(orders.max()), MAX_EXACT_ORDER) + 1)
    return wor_log_moments(base_eps, sub.base.pure_epsilon(), sub.rate, orders,
                           self_consistent=sub.base.self_consistent_rdp)


def _wor_rdp_lower(sub, alpha):
    """Wang et al. 2019, Prop. 20 lower bound at integer orders (tight inner mechanisms only)."""
    if not sub.base.tight_rdp:
        return None
    from ..rdp.without_replacement import wor_lower_log_moments
    a = np.asarray(alpha)
    orders = a.astype(np.int64)
    if (orders != a).any() or (orders < 2).any():
        raise ValueError("alpha must be integer orders >= 2 for the Prop. 20 lower bound")
    base_eps = sub._base_eps(int(orders.max()))
    return wor_lower_log_moments(base_eps, sub.rate, orders.ravel()).reshape(a.shape) / (a - 1)


def _wor_loss(sub, base):
    from ..pld import loss as L
    from ..pld.sources import SymmetricCurve
    if not isinstance(base, L.LossDistribution) or not base.symmetric:
        return None
    if sub.scheme.rate >= 1.0:
        return base
    return SymmetricCurve(base.poisson(sub.scheme.rate))


def _wor_pair(sub, eps):
    from ..profiles.amplification import wor_profile_pair
    return wor_profile_pair(sub, eps)


# --- sampling with replacement --------------------------------------------------------------


def _wr_has_rdp(sub) -> Support:
    # k copies of a record need the k-group curve: only a batch of one, or randomized
    # response of a bit (Balle et al. 2018, Lemma 12), keeps the caps of Subsampled._rdp sound
    if sub.scheme.batch == 1 or is_binary(sub.base):
        return Support.yes()
    return Support.no("sampling with replacement of batch > 1 has no RDP curve in dpamp (it "
                      "needs the group curve); use the profile or PLD methods")


def _wr_pure(sub) -> float:
    """Up to m copies of the changed record: log(1 + gamma (e^{m eps0} - 1)) with
    gamma = 1 - (1 - 1/n)^m (group privacy); randomized response of a bit keeps eps0."""
    s, e0 = sub.scheme, sub.base.pure_epsilon()
    gamma = -math.expm1(s.batch * math.log1p(-1.0 / s.population)) if s.population > 1 else 1.0
    return amplified_pure_epsilon(e0 if is_binary(sub.base) else s.batch * e0, gamma)


def _wr_pair(sub, eps):
    from ..profiles.amplification import wr_profile_pair
    return wr_profile_pair(sub, eps)


def _wr_symmetric(sub) -> bool:
    return sub.scheme.gives is not ADD_REMOVE


def _profile_log_moments(sub, orders):
    """Crude joint-convexity bound and Balle et al. 2018, Thm 6 on the amplified privacy profile
    (dpamp.profiles.rdp_bridge): with replacement and Poisson under substitution."""
    from ..profiles.rdp_bridge import subsampled_log_moments
    return subsampled_log_moments(sub, orders)


def _bridge():
    from ..profiles import rdp_bridge
    return rdp_bridge


def _wr_member_gamma(scheme) -> float:
    """P[v in S(x)] for a sample of ``batch`` draws with replacement from n records; under
    add/remove the pair ({v}, {}) of one record cannot be sampled from, so ({v', v}, {v'})
    is used instead (n = 2)."""
    from ..profiles.amplification import wr_gamma
    n = scheme.population
    if scheme.gives is ADD_REMOVE and n < 2:
        n = 2
    return wr_gamma(scheme.batch, n)


declare_scheme(Poisson, Amplification(
    "Poisson", has_rdp=_poisson_has_rdp, log_moments=_poisson_log_moments,
    pure_epsilon=_poisson_pure, profile_pair=_poisson_pair,
    profile_symmetric=lambda sub: sub.scheme.relation is not ADD_REMOVE,
    member_gamma=lambda scheme: scheme.rate, extra_rdp=_poisson_extra_rdp,
    loss=_poisson_loss,
    profile_source=_poisson_profile_source,
    crude_log_mgf=lambda sub, t: _bridge().poisson_substitution_log_mgf(sub, t),
    u_minus_i=True))
declare_scheme(WithoutReplacement, Amplification(
    "WithoutReplacement", has_rdp=lambda sub: Support.yes(), log_moments=_wor_log_moments,
    pure_epsilon=lambda sub: amplified_pure_epsilon(sub.base.pure_epsilon(), sub.rate),
    profile_pair=_wor_pair, profile_symmetric=lambda sub: True,
    member_gamma=lambda scheme: scheme.batch / scheme.population, rdp_lower=_wor_rdp_lower,
    loss=_wor_loss, profile_source=lambda sub: "Balle, Barthe & Gaboardi 2018, Thm 9",
    u_minus_i=True))
declare_scheme(WithReplacement, Amplification(
    "WithReplacement", has_rdp=_wr_has_rdp, log_moments=_profile_log_moments,
    pure_epsilon=_wr_pure, profile_pair=_wr_pair, profile_symmetric=_wr_symmetric,
    member_gamma=_wr_member_gamma,
    profile_source=lambda sub: "Balle, Barthe & Gaboardi 2018, " + (
        "Thm 11" if sub.scheme.gives is ADD_REMOVE else "Thm 10"),
    crude_log_mgf=lambda sub, t: _bridge().with_replacement_log_mgf(sub, t)))


# --- the subsampled family ------------------------------------------------------------------


def _loss(sub):
    rule = amplification_of(sub.scheme)
    if rule is None or rule.loss is None:
        return None
    from ..pld.sources import loss_distribution
    return rule.loss(sub, loss_distribution(sub.base))


def _has(sub, rep: Rep) -> Support | None:
    """A subsampled mechanism has a representation when its scheme amplifies it and its base
    has what that needs."""
    from ..mechanisms.family import supports_rep
    rule = amplification_of(sub.scheme)
    if rule is None:
        return Support.no(f"{type(sub.scheme).__name__} declares no amplification")
    if rep is Rep.RDP:
        base = supports_rep(sub.base, Rep.RDP)
        return rule.has_rdp(sub) if base else base
    if rep is Rep.PROFILE:
        return supports_rep(sub.base, Rep.PROFILE)
    if rep is Rep.LOSS:
        # the scheme's own PLD when its base has one, else the PLD of the amplified profile
        if rule.loss is not None and supports_rep(sub.base, Rep.LOSS):
            return Support.yes()
        return supports_rep(sub.base, Rep.PROFILE)
    return None


def _describe(sub) -> str:
    return f"{describe(sub.base)}, on a {sub.scheme.describe()}"


def _profile_hooks():
    from ..mechanisms.family import ProfileHooks

    def pair(m, eps):
        from ..profiles.amplification import subsampled_pair
        return subsampled_pair(m, eps)

    def lower(m, eps):
        from ..profiles.amplification import subsampled_lower
        return subsampled_lower(m, eps)

    def symmetric(m):
        return (m.scheme.gives is not ADD_REMOVE) if is_binary(m.base) else \
            amplification_of(m.scheme).profile_symmetric(m)
    return ProfileHooks(pair=pair, lower=lower, symmetric=symmetric)


def _poisson_gaussian(sub):
    """(mu, q) for a Gaussian base (its family's ``gaussian_mu``) under Poisson sampling with
    add/remove, whose declared loss is ``gaussian(mu).poisson(q)``; else None."""
    fam = family_of(sub.base)
    rule = amplification_of(sub.scheme)
    if fam is None or fam.gaussian_mu is None or rule is None or rule.loss is not _poisson_loss \
            or sub.scheme.relation is not ADD_REMOVE:
        return None
    return fam.gaussian_mu(sub.base), float(sub.scheme.rate)


def _to_event(sub, inner):
    """dp-accounting's sampled event around the base's: Poisson (add/remove: dp-accounting
    accounts it under that relation only), without and with replacement (n, m), truncated
    Poisson (TruncatedSubsampledGaussianDpEvent, a Gaussian base)."""
    from dp_accounting import dp_event as E
    name, s = amplification_of(sub.scheme).name, sub.scheme
    if name == "Poisson":
        if s.relation is not Relation.ADD_REMOVE:
            raise ValueError("dp-accounting accounts PoissonSampledDpEvent under "
                             "ADD_OR_REMOVE_ONE only; this Poisson sampling is stated under "
                             "substitution")
        return E.PoissonSampledDpEvent(s.rate, inner)
    if name == "WithoutReplacement":
        return E.SampledWithoutReplacementDpEvent(s.population, s.batch, inner)
    if name == "WithReplacement":
        return E.SampledWithReplacementDpEvent(s.population, s.batch, inner)
    if name == "TruncatedPoisson":
        if not isinstance(inner, E.GaussianDpEvent):
            raise ValueError("dp-accounting's TruncatedSubsampledGaussianDpEvent holds a "
                             "Gaussian only")
        return E.TruncatedSubsampledGaussianDpEvent(s.dataset_size, s.rate, s.max_batch_size,
                                                    inner.noise_multiplier)
    raise ValueError(f"dp-accounting has no event for {name} sampling")


declare(Subsampled, Family("Subsampled", loss=_loss, profile=_profile_hooks(), has=_has,
                           describe=_describe, poisson_gaussian=_poisson_gaussian,
                           to_event=_to_event))
