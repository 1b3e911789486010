"""Hyper-parameter tuning: run a mechanism a random number K of times and release the best run
(Papernot & Steinke 2022, "Hyperparameter tuning with Rényi differential privacy", ICLR;
dp-accounting's ``RepeatAndSelectDpEvent(event, mean, shape)``).

K is drawn, independently of the data, from one of

| ``distribution``                | P[K = k]                                              | shape eta |
|---------------------------------|-------------------------------------------------------|-----------|
| "poisson"                       | e^{-mu} mu^k / k!, k >= 0 (K = 0 releases nothing)    | inf       |
| "truncated_negative_binomial"   | (1-g)^k / (g^{-eta} - 1) prod_{l<k} (l + eta)/(l + 1), k >= 1 | eta in (-1, inf) \\ {0} |
| "geometric"                     | g (1-g)^{k-1}, k >= 1 (the case eta = 1)              | 1         |
| "logarithmic"                   | (1-g)^k / (k log(1/g)), k >= 1 (the limit eta = 0)    | 0         |

with the mean ``mean`` = E[K] given (the parameter g in (0, 1] of the truncated negative
binomial follows from it: E[K] = eta (1 - g) / (g (1 - g^eta)), (1/g - 1)/log(1/g) at eta = 0).
Whatever the runs do to choose "the best", only RDP bounds are proven, from the base's RDP
curve eps(.):

* **Theorem 2** (truncated negative binomial, hence geometric and logarithmic): for
  lambda > 1 and every lambda^ >= 1, the selection is (lambda, eps')-RDP with
      eps' = eps(lambda) + (1 + eta)(1 - 1/lambda^) eps(lambda^) + (1 + eta) log(1/g)/lambda^
             + log(E[K]) / (lambda - 1).
  dpamp takes the best lambda^ of a fixed grid (any lambda^ is valid; lambda^ = 1 gives
  (1 + eta) log(1/g)), and a lower bound of g (so log(1/g) is an upper bound): the largest
  g found whose mean, computed with its rounding bound, still proves E[K] above the given one.
  At lambda = inf: (2 + eta) eps(inf) (Corollary 3 for pure DP).
* **Theorem 6** (Poisson): if the base is (lambda, eps(lambda))-RDP and (eps^, delta^)-DP with
  e^{eps^} <= 1 + 1/(lambda - 1), the selection is (lambda, eps')-RDP with
      eps' = eps(lambda) + mu delta^ + log(mu) / (lambda - 1).
  dpamp takes eps^ = log(1 + 1/(lambda - 1)) and delta^ from the base's RDP curve by the
  conversion delta <= min_a e^{(a-1)(eps(a) - eps^ + log(1 - 1/a))} / a (Canonne, Kamath &
  Steinke 2020, Prop. 12; Steinke 2022, Prop. 14), the total-variation bound delta^ <= delta(0) <=
  sqrt(1 - e^{-KL}), and for a pure eps0 = eps(inf) the profile of randomized response,
  (1 - e^{eps^ - eps0})_+ / (1 + e^{-eps0}), which dominates every eps0-DP mechanism.

RDP is non-decreasing in the order, so each value is also lowered to the smallest value at a
higher order (as dp-accounting does). These are the same theorems as dp-accounting's RDP
accountant (``_compute_rdp_repeat_and_select``). No privacy-loss distribution or profile is
proven here (Koskela, Redberg & Wang 2024 bound the profile; not implemented), and no lower
bound.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import validate as V
from ..core.relations import Relation
from .base import Mechanism, check_mechanism

__all__ = ["RepeatAndSelect", "DISTRIBUTIONS", "tnb_mean", "tnb_gamma"]

_U = 2.0 ** -52
DISTRIBUTIONS = ("poisson", "truncated_negative_binomial", "geometric", "logarithmic")
#: the orders lambda^ of Theorem 2 and a of the conversion tried (1 and inf separately)
_HAT = 1.0 + np.geomspace(1e-3, 1e4, 400)
#: a relative bound of the rounding of :func:`tnb_mean` (a few expm1, log and divisions)
_MEAN_REL = 64 * _U


def tnb_mean(gamma: float, eta: float) -> float:
    """E[K] of the truncated negative binomial (eta > -1; eta = 0 logarithmic, 1 geometric),
    to a relative :data:`_MEAN_REL`: eta expm1(log g) / (g expm1(eta log g)) and
    expm1(log g) / (g log g) at eta = 0 (both ratios of numbers of one sign)."""
    if gamma >= 1.0:
        return 1.0
    lg = math.log(gamma)
    if eta == 0.0:
        return math.expm1(lg) / (gamma * lg)
    return eta * math.expm1(lg) / (gamma * math.expm1(eta * lg))


def tnb_gamma(mean: float, eta: float) -> float:
    """A lower bound of the g in (0, 1] with E[K] = ``mean``: bisection keeping a g whose
    computed mean, less its rounding bound, is still >= ``mean`` (the mean decreases in g),
    so the true g lies above it. 1 for mean 1."""
    if mean <= 1.0:
        return 1.0
    if eta == 1.0:
        return (1.0 / mean) * (1 - 4 * _U)
    ok = lambda g: tnb_mean(g, eta) * (1 - _MEAN_REL) >= mean  # noqa: E731
    lo, hi = 0.5 / mean, 1.0
    while not ok(lo):
        lo *= 0.5
        if lo < 1e-300:
            raise ValueError(f"mean {mean:g} is too large for shape {eta:g}")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return lo


@dataclasses.dataclass(frozen=True)
class RepeatAndSelect(Mechanism):
    """Run ``base`` a random number of times, K with mean ``mean`` drawn from ``distribution``
    ("poisson", "truncated_negative_binomial" with ``shape`` eta > -1, "geometric",
    "logarithmic"), and release only the best run (Papernot & Steinke 2022). RDP only, by
    Theorems 2 and 6 (module docstring); ``base`` may be any mechanism with an RDP curve, a
    whole training run (a composition) included."""

    base: Mechanism
    mean: float
    distribution: str = "poisson"
    shape: float | None = None

    def __post_init__(self):
        check_mechanism(self.base, "base")
        object.__setattr__(self, "mean", V.real("mean", self.mean, low=1.0))
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {', '.join(map(repr, DISTRIBUTIONS))}"
                             f" (got {self.distribution!r})")
        if self.distribution == "truncated_negative_binomial":
            if self.shape is None:
                raise ValueError("shape: the truncated negative binomial needs its shape "
                                 "eta > -1 (0: logarithmic, 1: geometric)")
            object.__setattr__(self, "shape", V.real("shape", self.shape, low=-1.0,
                                                     low_open=True))
        elif self.shape is not None:
            raise ValueError(f"shape: not used with distribution {self.distribution!r} (its "
                             "shape is fixed: Poisson inf, geometric 1, logarithmic 0)")
        object.__setattr__(self, "_hat", {})

    @property
    def relation(self) -> Relation:  # type: ignore[override]
        return self.base.relation

    @property
    def eta(self) -> float:
        """The shape: inf (Poisson), 1 (geometric), 0 (logarithmic) or the one given."""
        return {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0}.get(
            self.distribution, self.shape)  # type: ignore[return-value]

    @property
    def gamma(self) -> float:
        """A lower bound of the truncated negative binomial's g (:func:`tnb_gamma`)."""
        return tnb_gamma(self.mean, self.eta)

    def has_rdp(self) -> bool:
        return self.base.has_rdp()

    def _base(self, orders: np.ndarray) -> np.ndarray:
        return np.asarray(self.base.rdp(orders), dtype=float)

    def _hat_terms(self) -> np.ndarray:
        """The base curve at the fixed orders of the theorems (computed once)."""
        cache = self.__dict__["_hat"]
        if "v" not in cache:
            cache["v"] = self._base(np.append(_HAT, math.inf))
        return cache["v"]

    def _raw(self, lam: np.ndarray) -> np.ndarray:
        """Theorem 2 / 6 at orders lam > 1 (inf allowed), before the monotone envelope."""
        own = self._base(lam)
        fin = np.isfinite(lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = np.where(fin, math.log(self.mean) / (lam - 1.0), 0.0)
        if self.distribution == "poisson":
            extra = self.mean * np.exp(self._log_delta_hat(lam))
        else:
            extra = np.full(lam.shape, (1.0 + self.eta) * self._tnb_min())
        out = own + extra + tail
        return np.where(np.isnan(out), np.inf, out * (1 + 16 * _U))

    def _tnb_min(self) -> float:
        """min over lambda^ of (1 - 1/lambda^) eps(lambda^) + log(1/g)/lambda^ (lambda^ = 1:
        log(1/g); inf: eps(inf)): the fixed grid, then 64 orders around its best; rounded
        up. (Any lambda^ gives a valid bound: the search only makes it tighter.)"""
        cache = self.__dict__["_hat"]
        if "tnb" not in cache:
            lg = -math.log(self.gamma)
            hat = np.append(_HAT, math.inf)
            terms = self._tnb_terms(hat, self._hat_terms(), lg)
            i = int(np.argmin(terms))
            best = min(lg, float(terms[i]))
            if 0 < i < _HAT.size - 1:
                near = np.geomspace(_HAT[i - 1], _HAT[i + 1], 64)
                best = min(best, float(np.min(self._tnb_terms(near, self._base(near), lg))))
            cache["tnb"] = best * (1 + 16 * _U)
        return cache["tnb"]

    @staticmethod
    def _tnb_terms(hat: np.ndarray, v: np.ndarray, lg: float) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            t = np.where(np.isinf(hat), v, (1.0 - 1.0 / hat) * v + lg / hat)
        return np.where(np.isnan(t), np.inf, t)

    def _log_delta_hat(self, lam: np.ndarray) -> np.ndarray:
        """log delta^ of the base at eps^ = log1p(1/(lam - 1)) (Theorem 6's condition), from its
        RDP curve (module docstring), an upper bound."""
        v = self._hat_terms()
        a = _HAT[:, None]
        e_hat = np.where(np.isfinite(lam), np.log1p(1.0 / (lam - 1.0)), 0.0)[None, :]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            t = (a - 1.0) * (v[:-1, None] - e_hat + np.log1p(-1.0 / a)) - np.log(a)
            t = t + 2.0 ** -48 * (np.abs((a - 1.0) * (v[:-1, None] + e_hat)) + np.log(a) + 1)
        t = np.where(np.isnan(t), np.inf, t)
        kl = float(v[0])                                   # KL <= eps(1.001)
        out = np.minimum(np.min(t, axis=0),
                         0.5 * math.log1p(-math.exp(-kl)) if kl > 0 else -math.inf)
        pure = float(v[-1])
        if math.isfinite(pure):                            # randomized response dominates
            with np.errstate(divide="ignore"):
                rr = np.log(np.maximum(-np.expm1(e_hat[0] - pure), 0.0)) \
                    - math.log1p(math.exp(-pure))
            out = np.minimum(out, rr)
        return np.minimum(out + 1e-12, 0.0)

    def _rdp(self, alpha):
        a = np.asarray(alpha, dtype=float)
        flat = a.ravel()
        up = np.unique(np.concatenate([flat, _HAT, [math.inf], self._valley()]))
        raw = self._raw(up)
        env = np.minimum.accumulate(raw[::-1])[::-1]      # RDP grows with the order
        return env[np.searchsorted(up, flat)].reshape(a.shape)

    def _valley(self) -> np.ndarray:
        """64 orders around the fixed grid's lowest value (computed once): the envelope below
        it is that value, found more finely."""
        cache = self.__dict__["_hat"]
        if "valley" not in cache:
            raw = self._raw(_HAT)
            i = int(np.argmin(raw))
            lo, hi = _HAT[max(i - 1, 0)], _HAT[min(i + 1, _HAT.size - 1)]
            cache["valley"] = np.geomspace(lo, hi, 64)
        return cache["valley"]

    def pure_epsilon(self) -> float:
        return float(self._rdp(np.array([math.inf]))[0])
