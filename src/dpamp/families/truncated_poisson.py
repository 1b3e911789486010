"""How truncated Poisson sampling (``dp.TruncatedPoisson``) amplifies a Gaussian sum: the
declaration of :mod:`dpamp.amplification.truncation` (the pairs and why they bound it).

| method  | upper                                                   | lower                       |
|---------|---------------------------------------------------------|-----------------------------|
| PLD     | labelled mixture U x PG(mu, q) + T x PG(2 mu, p)        | PG(mu, q_eff), attained     |
| profile | U and T times the two Poisson pairs' rows (Balle et al. 2018, Thm 8)   | the membership pair at q_eff |
| RDP     | log(U e^{K_A} + T e^{K_C}), capped by the 2 mu Gaussian | PG(mu, q_eff) at integers   |

PG(mu, r) is the Poisson-subsampled Gaussian pair at rate r (add/remove). Bases: mechanisms of
a family that is a Gaussian pair (``gaussian_mu``: Gaussian noise on a query, whose substitution
sensitivity is at most twice its add/remove one). B >= n cuts nothing: the Poisson pair itself.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.rounding import ulps_down
from ..core.sampling import TruncatedPoisson
from ..mechanisms.family import Amplification, Support, declare_scheme, family_of


def _mu(sub) -> float:
    fam = family_of(sub.base)
    assert fam is not None and fam.gaussian_mu is not None      # checked when built (_check)
    return float(fam.gaussian_mu(sub.base))


def _check(sub) -> None:
    fam = family_of(sub.base)
    if fam is None or fam.gaussian_mu is None:
        raise ValueError(
            f"{sub.scheme!r} amplifies Gaussian noise on a sum (dp.Gaussian, "
            f"dp.TreeAggregation), not {type(sub.base).__name__}: a truncated batch replaces a "
            "record, and dpamp bounds that for a Gaussian pair only")


def _weights(sub):
    from ..amplification.truncation import truncation_weights
    s = sub.scheme
    return truncation_weights(s.rate, s.max_batch_size, s.dataset_size)


def _plain(sub):
    """The Poisson-subsampled base, where nothing is ever cut (B >= n)."""
    from ..core.sampling import Poisson
    return sub.base.subsample(Poisson(sub.scheme.rate))


def _log_moments(sub, orders):
    from ..amplification.truncation import log_moments
    orders = np.asarray(orders, dtype=float)
    if not sub.scheme.truncates:
        return (orders - 1.0) * np.asarray(_plain(sub).rdp(orders), dtype=float)
    return log_moments(_mu(sub), sub.scheme, orders)


def _extra_rdp(sub, a):
    a = np.asarray(a, dtype=float)
    out = np.full(a.shape, np.inf)
    fin = np.isfinite(a) & (a > 1.0)
    if fin.any():
        out[fin] = _log_moments(sub, a[fin]) / (a[fin] - 1.0)
    return out


def _rdp_lower(sub, alpha):
    """The attained pair PG(mu, q_eff) at integer orders: Steinke 2022, Thm 34's sum, exact for a
    Gaussian (Mironov, Talwar & Zhang 2019), as computed less 8 ulps; 0 above its largest
    order."""
    from ..rdp.poisson import MAX_EXACT_ORDER
    a = np.asarray(alpha, dtype=float)
    if (a != np.floor(a)).any() or (a < 2).any():
        raise ValueError("alpha must be integer orders >= 2 for the truncated-Poisson lower "
                         "curve")
    from ..core.sampling import Poisson
    from ..mechanisms.gaussian import Gaussian
    g = Gaussian(1.0, sensitivity=_mu(sub))
    rate = _weights(sub).rate_low
    m = g if rate >= 1.0 else g.subsample(Poisson(rate))
    out = np.zeros(a.shape)
    ok = a <= MAX_EXACT_ORDER
    if ok.any():
        out[ok] = ulps_down(np.asarray(m.rdp(a[ok]), dtype=float), 8)
    return out


def _rdp_cap(sub):
    """The Gaussian with twice the base's mu where a batch can be cut, else the base."""
    if not sub.scheme.truncates:
        return sub.base
    from ..mechanisms.gaussian import Gaussian
    return Gaussian(1.0, sensitivity=2.0 * _mu(sub))


def _loss(sub, base):
    from ..pld import loss as L
    if not isinstance(base, L.LossDistribution):
        return None
    if not sub.scheme.truncates:
        return base if sub.scheme.rate >= 1.0 else base.poisson(sub.scheme.rate)
    from ..amplification.truncation import lower_loss, upper_loss
    from ..pld.labelled import Bracketed
    mu = _mu(sub)
    return Bracketed(upper_loss(mu, sub.scheme), lower_loss(mu, sub.scheme))


def _pair(sub, eps):
    from ..amplification.truncation import profile_rows
    if not sub.scheme.truncates:
        from ..profiles.amplification import poisson_profile_pair
        return poisson_profile_pair(_plain(sub), eps)
    return profile_rows(_mu(sub), sub.scheme, eps)


def _member_gamma(scheme) -> float:
    """P[the differing record is in the batch] rounded down: q_eff (the lower pair's rate)."""
    from ..amplification.truncation import truncation_weights
    return truncation_weights(scheme.rate, scheme.max_batch_size, scheme.dataset_size).rate_low


def _source(sub) -> str:
    if not sub.scheme.truncates:
        return "Balle, Barthe & Gaboardi 2018, Thm 8 (B >= n: plain Poisson sampling)"
    return ("truncated Poisson: labelled mixture of Balle, Barthe & Gaboardi 2018, Thm 8 at "
            "rates q (sensitivity Δ) and p (2Δ), arXiv:2508.15089")


declare_scheme(TruncatedPoisson, Amplification(
    "TruncatedPoisson", has_rdp=lambda sub: Support.yes(), log_moments=_log_moments,
    pure_epsilon=lambda sub: math.inf, profile_pair=_pair,
    profile_symmetric=lambda sub: False, member_gamma=_member_gamma, extra_rdp=_extra_rdp,
    rdp_lower=_rdp_lower, loss=_loss, profile_source=_source, check=_check,
    rdp_cap=_rdp_cap))
