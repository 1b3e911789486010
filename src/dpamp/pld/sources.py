"""Which privacy-loss distribution each mechanism has (the "represent" column of DESIGN).

``loss_distribution(mechanism)`` returns the :class:`~.loss.LossDistribution` of the mechanism's
dominating pair (P, Q) (the other order is its swap), or raises NotImplementedError:

| mechanism                                   | pair                                   | source |
|---------------------------------------------|----------------------------------------|--------|
| Gaussian(sigma, Delta)                      | N(Delta/sigma, 1) vs N(0, 1)            | Steinke 2022, Prop. 3 |
| Laplace(b, Delta)                           | Lap(Delta/b, 1) vs Lap(0, 1)            | Balle et al. 2018, Thm 3's pair |
| RandomizedResponse, PureDP(eps)             | randomized response (dominates eps-DP) | Steinke 2022, fn. 16 |
| KaryRandomizedResponse(k, p)                | its three atoms +-eps, 0 (exact)       | Kairouz, Bonawitz & Ramage 2016 |
| EpsDelta(eps, delta)                        | the worst-case (eps, delta) pair       | Steinke 2022, fn. 16 |
| base.subsample(Poisson(q)) (add/remove)     | ((1-q) Q + q P, Q) and its swap         | Steinke 2022, Thm 34's pair |
| base.subsample(WithoutReplacement(m, n))    | symmetrised curve of Balle et al. 2018, Thm 9          | Balle et al. 2018, Thm 9  |

Sampling without replacement under substitution: Balle et al. 2018, Thm 9's profile, gamma
delta(eps'), is the curve of ((1-gamma) Q + gamma P, Q) for eps >= 0, but it bounds *both* orders of
every pair of neighbours (the relation is symmetric), while that pair's swap is smaller. Every
ordered pair's curve is therefore below the symmetric curve F(x) for x >= 1, 1 - x + x F(1/x) for x
< 1, which is what :class:`SymmetricCurve` discretises (it needs a symmetric base pair, which all
built-in mechanisms have).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol

import numpy as np

from ..core.roots import bisect, expand
from ..mechanisms.family import family_of
from . import loss as L
from .cache import ByIdentity, PLDCache
from .discretize import Discretized, discretize, discretize_cells


class Source(Protocol):
    """A part of the PLD engine as the wrappers below hold it: a :class:`~.loss.
    LossDistribution` or any object read the same way (:func:`discretize_source`); the
    wrappers call ``swapped`` themselves and pass every other attribute through."""

    def swapped(self) -> Any: ...


@dataclasses.dataclass(frozen=True)
class SymmetricCurve:
    """The symmetric curve whose eps >= 0 half is that of the pair ``half`` (see module doc)."""

    half: L.LossDistribution
    symmetric = True

    @property
    def mean(self):
        return self.half.mean

    @property
    def var(self):
        return max(self.half.var, self.half.swapped().var)

    @property
    def inf_mass(self):
        return self.half.inf_mass

    def quantile_range(self, tail):
        lo, hi = self.half.quantile_range(tail)
        r = max(abs(lo), abs(hi))
        return -r, r

    def swapped(self):
        return self

    def discretize(self, h, jlo, jhi) -> Discretized:
        k = max(-jlo, jhi)
        c = self.half.cell_masses(-k, k, h)
        rp, rq = c["right"]
        ap, aq = c["above"]
        rcp, rcq = c["right_cont"]
        mirrored = {"below": (aq, ap), "left": (rq[::-1].copy(), rp[::-1].copy()),
                    "zero": (0.0, 0.0), "right": (rp, rq), "above": (ap, aq),
                    "right_cont": (rcp, rcq), "right_beta": c["right_beta"],
                    "left_cont": (rcq[::-1].copy(), rcp[::-1].copy()),
                    "left_beta": c["right_beta"][::-1].copy(), "right_end": c["right_end"],
                    "left_end": c["right_end"][::-1].copy()}
        # mirrored: the swapped pair's mass at +inf is the half's
        d = discretize_cells(mirrored, h, -k, k, self.half.inf_mass, totals=(1.0, 1.0),
                             q_ninf=self.half.inf_mass)
        # a truncated pair's mass at +-inf lifts both halves by at most its slack
        d.lower_slack += self.half.lower_slack
        d.rel_err = self.half.mass_rel_err
        return d


@dataclasses.dataclass(frozen=True)
class NotAttained:
    """A loss distribution that dominates a mechanism's pairs without being attained by any
    of them (the no-amplification bound of an epoch of shuffled batches): its pessimistic
    discretisation bounds the mechanism from above, its optimistic one bounds nothing from
    below, so the engine reports no lower end for a plan with such a part
    (``query._lower_proven``). It is never merged with exact Gaussian parts."""

    inner: Source
    #: a relative mass error of the inner source's own inputs that its discretisation does not
    #: carry (an epoch built from a base with ``mass_rel_err``): added to the margin
    rel_err: float = 0.0
    attained = False
    gaussian_mu = None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def swapped(self):
        return NotAttained(self.inner.swapped(), self.rel_err)

    def discretize(self, h, jlo, jhi, optimistic=True) -> Discretized:
        d = discretize_source(self.inner, h, jlo, jhi, optimistic)
        d.rel_err = max(d.rel_err, self.rel_err)
        return d


@dataclasses.dataclass(frozen=True)
class Bracketed:
    """A part known to lie between two pairs: ``upper`` dominates every pair of the mechanism
    and ``lower`` is dominated by one of its actual pairs (a matrix mechanism whose sensitivity
    is a bracket [Delta_lo, Delta_hi]: the Gaussian pairs at both ends). The pessimistic
    discretisation is the upper pair's, the optimistic one the lower pair's, on the same grid;
    sizing (ranges, moments) follows the upper pair. ``exact``: the two pairs coincide up to
    rounding (the bracket then shrinks with the grid). Never merged with exact Gaussian parts."""

    upper: Source
    lower: Source
    exact: bool = True
    attained = True
    gaussian_mu = None
    family = None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.upper, name)

    @property
    def symmetric(self) -> bool:
        return bool(getattr(self.upper, "symmetric", False)
                    and getattr(self.lower, "symmetric", False))

    def swapped(self):
        return Bracketed(self.upper.swapped(), self.lower.swapped(), self.exact)

    def discretize(self, h, jlo, jhi, optimistic=True) -> Discretized:
        up = discretize_source(self.upper, h, jlo, jhi, False)
        if not optimistic:
            return up
        low = discretize_source(self.lower, h, jlo, jhi, True)
        return dataclasses.replace(up, lower=low.lower, lower_inf=low.lower_inf,
                                   lower_slack=low.lower_slack,
                                   rel_err=max(up.rel_err, low.rel_err))


class ProfileSource:
    """A mechanism known to the PLD engine only through its privacy profile (dpamp.profiles):
    sampling with replacement, Poisson sampling under substitution, post-processed mechanisms,
    and anything else with a profile. See :func:`~.discretize.discretize_profile`."""

    def __init__(self, mechanism, swapped: bool = False):
        from ..profiles import profile_pair, profile_pair_lower
        self.mechanism = mechanism
        self._swap = swapped
        self._pair = profile_pair
        self._pair_lower = profile_pair_lower
        from ..profiles.core import symmetric_pair
        # one direction only where the profile handler returns one curve for both orders by
        # construction; otherwise the PLD composes both directions (the worse one is reported)
        self.symmetric = bool(symmetric_pair(mechanism))
        self.inf_mass = float(self._rows(np.array([np.inf]))[0][0])
        self._moments: tuple[float, float] | None = None     # (mean, var), on first use

    def _rows(self, eps, lower=False):
        f = self._pair_lower if lower else self._pair
        r = f(self.mechanism, eps)
        if r is None:
            return None
        r = np.asarray(r, dtype=float)
        return (r[1], r[0]) if self._swap else (r[0], r[1])

    def swapped(self):
        return self if self.symmetric else ProfileSource(self.mechanism, not self._swap)

    def quantile_range(self, tail):
        """Where each curve drops below ``tail`` (bisection on the non-increasing profile)."""
        out = []
        for row in (0, 1):
            # above the curve's limit (the mass at +inf, e.g. delta of an (eps, delta) base),
            # which it never drops below; losses past 512 are capped (e^512 nears overflow)
            floor = float(self._rows(np.array([np.inf]))[row][0])
            floor = floor if 0.0 <= floor <= 1.0 else 0.0       # (a profile without a limit)
            def below(e, row=row, floor=floor):
                return float(self._rows(np.array([e]))[row][0]) - floor <= tail
            lo, hi = expand(below, 0.0, 1.0, limit=256.0)
            out.append(bisect(below, lo, hi, iterations=50)[1])
        return -out[1], out[0]

    def _moment_estimate(self):
        if self._moments is None:
            lo, hi = self.quantile_range(1e-12)
            h = max(hi - lo, 1e-6) / 4000
            d = self.discretize(h, min(-1, int(lo / h) - 1), max(1, int(hi / h) + 1))
            t = h * (d.jlo + np.arange(d.upper.size))
            w = d.upper / max(d.upper.sum(), 1e-300)
            m = float(np.sum(w * t))
            self._moments = (m, float(np.sum(w * (t - m) ** 2)))
        return self._moments

    @property
    def mean(self):
        return self._moment_estimate()[0]

    @property
    def var(self):
        return self._moment_estimate()[1]

    @property
    def has_lower(self) -> bool:
        return self._rows(np.array([0.0]), lower=True) is not None

    def discretize(self, h, jlo, jhi) -> Discretized:
        from .discretize import discretize_profile
        e_right = h * np.arange(jhi + 1)
        e_left = h * np.arange(-jlo + 1)
        up = (self._rows(e_right)[0], self._rows(e_left)[1])
        low_r = self._rows(e_right, lower=True)
        low = None if low_r is None else (low_r[0], self._rows(e_left, lower=True)[1])
        inf_low = 0.0 if low is None else float(self._rows(np.array([np.inf]), True)[0][0])
        return discretize_profile(up, low, self.inf_mass, inf_low, h, jlo, jhi)


def discretize_source(src, h: float, jlo: int, jhi: int, optimistic: bool = True) -> Discretized:
    """Both discretisations of a part on t_j = j h (optimistic=False: the pessimistic one only
    where that saves time; ``lower`` is then zeros)."""
    if isinstance(src, (SymmetricCurve, ProfileSource)):
        return src.discretize(h, jlo, jhi)
    if not isinstance(src, L.LossDistribution):
        # a source that discretises itself (random allocation, dpamp.amplification.allocation)
        return src.discretize(h, jlo, jhi, optimistic)
    return discretize(src, h, jlo, jhi, optimistic)


def loss_distribution(mechanism):
    """The loss distribution (or SymmetricCurve) of a single mechanism's dominating pair: its
    family's declared pair (:mod:`dpamp.mechanisms.family`), else the PLD of its privacy
    profile (Balle et al. 2018), where it has one."""
    fam = family_of(mechanism)
    if fam is not None and fam.loss is not None:
        src = fam.loss(mechanism)
        if src is not None:
            return src
    return _profile_or_raise(mechanism)


def _profile_or_raise(mechanism):
    from ..profiles import has_profile
    if has_profile(mechanism):
        return ProfileSource(mechanism)
    raise NotImplementedError(f"no privacy-loss distribution or profile for {mechanism!r}")


#: largest mu of one merged Gaussian part (its losses reach mu^2/2 + 37 mu at tail 1e-300)
GAUSSIAN_MU_CAP = 10.0


#: the parts of the last few mechanisms, by identity: a query asks has_pld (the registry)
#: and then parts_of for the same object, and each part's loss distribution costs a
#: quadrature for its moments (a hundred parts: ~50 ms)
_PARTS = PLDCache(8)


def parts_of(mechanism):
    """[(source, count)] for every part of a composition (NotImplementedError if any part has
    no privacy-loss distribution)."""
    key = ByIdentity(mechanism)
    hit = _PARTS.get(key)
    if hit is None:
        hit = _parts_of(mechanism)
        _PARTS.put(key, hit)
    return list(hit)


def _subsampled_gaussians(parts) -> dict:
    """{index: loss distribution} of the plain Poisson-subsampled Gaussians among the parts
    (add/remove, 0 < q < 1), built with their sizing moments computed together
    (:mod:`.moments`) rather than one quadrature each; loss_distribution gives the same pairs."""
    from .moments import subsampled_gaussian_moments
    found = {}
    for i, (part, count) in enumerate(parts):
        mu, q = _poisson_gaussian(part)
        if count > 0 and 0.0 < q < 1.0 and 0.0 < mu < math.inf:
            found[i] = (mu, q)
    if len(found) < 2:
        return {}
    keys = list(found)
    ms = subsampled_gaussian_moments([found[k][0] for k in keys], [found[k][1] for k in keys])
    return {k: L.gaussian(found[k][0]).poisson(found[k][1], moments=m)
            for k, m in zip(keys, ms)}


def _poisson_gaussian(part) -> tuple[float, float]:
    """(mu, q) of a Gaussian mechanism under Poisson sampling with add/remove (its family's
    ``poisson_gaussian``: its loss is then ``gaussian(mu).poisson(q)``), else (0, 0)."""
    fam = family_of(part)
    if fam is None or fam.poisson_gaussian is None:
        return 0.0, 0.0
    return fam.poisson_gaussian(part) or (0.0, 0.0)


def _parts_of(mechanism):
    out = []
    mu2 = 0.0
    parts = list(mechanism.parts())
    ready = _subsampled_gaussians(parts)
    for i, (part, count) in enumerate(parts):
        if count <= 0:
            continue
        # a mechanism that is a product of parts of its own (an epoch of random allocation:
        # mechanisms.allocated) lists them; every other one is one source
        fam = family_of(part)
        if fam is not None and fam.loss_parts is not None:
            listed = fam.loss_parts(part)
        else:
            listed = [(ready[i] if i in ready else loss_distribution(part), 1)]
        for src, c in listed:
            if getattr(src, "gaussian_mu", None) is not None:
                mu2 += int(count) * int(c) * src.gaussian_mu ** 2
            else:
                out.append((src, int(count) * int(c)))
    if mu2 > 0:
        # Gaussian pairs compose exactly into one: N(mu_j, 1) vs N(0, 1) for every j is
        # N((mu_j), I) vs N(0, I), whose loss is that of N(|mu|, 1) vs N(0, 1) (Steinke 2022, Cor.
        # 8); as k equal parts of mu/sqrt(k) <= GAUSSIAN_MU_CAP, so that one part's losses stay
        # in the range a grid handles
        k = max(1, math.ceil(mu2 / GAUSSIAN_MU_CAP ** 2))
        out.insert(0, (L.gaussian(math.sqrt(mu2 / k)), k))
    if not out:
        raise NotImplementedError("empty composition")
    return out


def has_pld(mechanism) -> bool:
    try:
        parts_of(mechanism)
    except (NotImplementedError, ValueError):
        return False
    return True

