"""Diffusion mechanisms (Balle et al. 2019, Sec. 5): Brownian motion and the Ornstein-Uhlenbeck
mechanism.

A Markov semigroup (P_t) gives mechanisms M_t(D) = P_t(f(D)) closed under post-processing by
the semigroup: P_s o M_t = M_{t+s} (``advance(s)`` / ``post_process(<semigroup kernel>(s))``).
Balle et al. 2019, Thm 6: M_t is (alpha, alpha Lambda(t))-RDP with the intrinsic sensitivity
Lambda(t).

| mechanism               | M_t(D)                                                  | Lambda(t)                              | source        |
|-------------------------|---------------------------------------------------------|----------------------------------------|---------------|
| BrownianMotion(t)       | f(D) + N(0, 2t I)                                       | Delta^2 / (4t)                         | Balle et al. 2019, Ex. 4, 5  |
| OrnsteinUhlenbeck(theta, rho, t) | e^{-theta t} f(D) + N(0, rho^2/theta (1 - e^{-2 theta t}) I) | theta Delta^2 / (2 rho^2 (e^{2 theta t} - 1)) | Balle et al. 2019, Cor. 7 |

Both are Gaussian mechanisms (``gaussian_form()``): Brownian with sigma^2 = 2t, OU with
sensitivity e^{-theta t} Delta and variance rho^2/theta (1 - e^{-2 theta t}); the Gaussian RDP of
those equals alpha Lambda(t) (a test checks it).

Utility of the OU mechanism (Balle et al. 2019, Sec. 5.1, errata: R^2 in the PGM error):

    E_OU  = (1 - e^{-theta t})^2 ||f(D)||^2 + d rho^2/theta (1 - e^{-2 theta t})          (eq. 4)
    E_GM  = d sigma~^2,   sigma~^2 = rho^2 (e^{2 theta t} - 1) / theta   (Gaussian mechanism with
                                                                  the same RDP, sensitivity Delta)
    E_PGM = E_GM (1 + d sigma~^2 / R^2)^{-1} = R^2 d sigma~^2 / (R^2 + d sigma~^2)
            (beta (f(D) + N(0, sigma~^2 I)) with the MSE-optimal beta = R^2 / (R^2 + d sigma~^2)
            for ||f(D)|| <= R; worst case over the ball)

Balle et al. 2019, Thm 8: if theta R^2 <= 4 d rho^2 then E_OU / E_GM <= 1 for every t (and -> 0 as t
-> inf); with theta = log(1 + d Delta^2 / (2 eps R^2)) and rho^2 = theta Delta^2 / (2 eps (e^{2
theta} - 1)) the mechanism at t = 1 is (alpha, alpha eps)-RDP and E_OU / E_GM <= (1 + d Delta^2/(2
eps R^2))^{-1} (``OrnsteinUhlenbeck.calibrate``); then E_OU(R) = E_PGM exactly.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ...core import validate as V
from ...mechanisms.base import Mechanism
from ...mechanisms.family import Family, declare
from ...mechanisms.gaussian import Gaussian
from ...core.relations import ADD_REMOVE, Relation, as_relation
from .iteration import linear_rdp
from .kernels import GaussianKernel, MixingKernel

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def _rng(rng):
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


class _Diffusion(Mechanism):
    """M_t = P_t o f for a Markov semigroup (P_t): (alpha, alpha Lambda(t))-RDP (Balle et al. 2019,
    Thm 6), with the subclass's ``intrinsic_sensitivity`` Lambda(t) and fields ``t``,
    ``sensitivity``."""

    if TYPE_CHECKING:
        t: float
        sensitivity: float

        @property
        def intrinsic_sensitivity(self) -> float: ...

    def _rdp(self, alpha):
        return linear_rdp(alpha, self.intrinsic_sensitivity, self.sensitivity > 0)

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The attained curve alpha Lambda (one pair of neighbours), without linear_rdp's
        relative pad, rounded down past its few ulps."""
        a = V.orders(alpha).astype(float)
        if not self.sensitivity > 0:
            low = np.zeros(a.shape)
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                low = np.where(np.isinf(a), np.inf,
                               a * self.intrinsic_sensitivity * (1.0 - 16 * 2.0 ** -53))
        return low if low.ndim else float(low)

    def advance(self, s: float):
        """P_s o M_t = M_{t+s}: post-processing by the semigroup adds time."""
        return dataclasses.replace(self, t=self.t + V.positive("s", s))  # type: ignore[type-var]  # subclasses are dataclasses


@dataclasses.dataclass(frozen=True)
class BrownianMotion(_Diffusion):
    """M_t(D) = f(D) + N(0, 2t I): the Brownian-motion diffusion mechanism (Balle et al. 2019, Ex.
    4, 5), (alpha, alpha Delta^2 / (4t))-RDP (Balle et al. 2019, Thm 6). ``sensitivity``: global L2
    sensitivity."""

    t: float
    sensitivity: float = 1.0
    relation: Relation = ADD_REMOVE
    tight_rdp = True
    self_consistent_rdp = True  # it is a Gaussian mechanism (Wang et al. 2019, Lemma 27)

    def __post_init__(self):
        object.__setattr__(self, "t", V.positive("t", self.t))
        object.__setattr__(self, "sensitivity", V.nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def intrinsic_sensitivity(self) -> float:
        """Lambda(t) = Delta^2 / (4t) (Balle et al. 2019, Ex. 5)."""
        return self.sensitivity ** 2 / (4.0 * self.t)

    def gaussian_form(self) -> Gaussian:
        """The same mechanism as dp.Gaussian(sqrt(2t), Delta)."""
        return Gaussian(math.sqrt(2.0 * self.t), self.sensitivity, self.relation)


    def sample(self, f_value: ArrayLike,
               rng: np.random.Generator | int | None = None) -> np.ndarray:
        """One release f(D) + N(0, 2t I) for the query value ``f_value`` (array-like)."""
        f = np.asarray(f_value, dtype=float)
        return f + math.sqrt(2.0 * self.t) * _rng(rng).standard_normal(f.shape)

    def mse(self, dimension: int = 1) -> float:
        """E ||M_t(D) - f(D)||^2 = 2 t d."""
        return 2.0 * self.t * V.integer("dimension", dimension, low=1)


@dataclasses.dataclass(frozen=True)
class OrnsteinUhlenbeck(_Diffusion):
    """The Ornstein-Uhlenbeck mechanism (Balle et al. 2019, Sec. 5.1): SDE dX = -theta X dt +
    sqrt(2) rho dW started at f(D), released at time t:

        M_t(D) = e^{-theta t} f(D) + N(0, rho^2/theta (1 - e^{-2 theta t}) I),

    (alpha, alpha Lambda(t))-RDP with Lambda(t) = theta Delta^2 / (2 rho^2 (e^{2 theta t} - 1))
    (Balle et al. 2019, Cor. 7). ``sensitivity``: global L2 sensitivity Delta of f."""

    theta: float
    rho: float
    t: float
    sensitivity: float = 1.0
    relation: Relation = ADD_REMOVE
    tight_rdp = True
    self_consistent_rdp = True  # a Gaussian mechanism (Wang et al. 2019, Lemma 27)

    def __post_init__(self):
        object.__setattr__(self, "theta", V.positive("theta", self.theta))
        object.__setattr__(self, "rho", V.positive("rho", self.rho))
        object.__setattr__(self, "t", V.positive("t", self.t))
        object.__setattr__(self, "sensitivity", V.nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "relation", as_relation(self.relation))

    # --- privacy -----------------------------------------------------------------------------
    @property
    def intrinsic_sensitivity(self) -> float:
        """Lambda(t) = theta Delta^2 / (2 rho^2 (e^{2 theta t} - 1)) (Balle et al. 2019, Cor. 7),
        via expm1."""
        x = 2.0 * self.theta * self.t
        if x > 700:  # e^{2 theta t} - 1 overflows: Lambda underflows to ~0
            return math.exp(math.log(self.theta * self.sensitivity ** 2 / (2 * self.rho ** 2))
                            - x) if self.sensitivity > 0 else 0.0
        return self.theta * self.sensitivity ** 2 / (2.0 * self.rho ** 2 * math.expm1(x))

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance rho^2/theta (1 - e^{-2 theta t})."""
        return self.rho ** 2 / self.theta * -math.expm1(-2.0 * self.theta * self.t)

    @property
    def shrinkage(self) -> float:
        """e^{-theta t}: the factor applied to f(D) (bias towards the origin)."""
        return math.exp(-self.theta * self.t)

    def gaussian_form(self) -> Gaussian:
        """The same mechanism as a Gaussian mechanism on e^{-theta t} f: sigma^2 = variance,
        sensitivity e^{-theta t} Delta (Balle et al. 2019, Sec. 5.1: OU reduces the sensitivity)."""
        return Gaussian(math.sqrt(self.variance), self.shrinkage * self.sensitivity,
                        self.relation)


    def sample(self, f_value: ArrayLike,
               rng: np.random.Generator | int | None = None) -> np.ndarray:
        """One release e^{-theta t} f(D) + N(0, variance I) for the query value ``f_value``."""
        f = np.asarray(f_value, dtype=float)
        return self.shrinkage * f + math.sqrt(self.variance) * _rng(rng).standard_normal(f.shape)

    # --- utility -----------------------------------------------------------------------------
    def mse(self, f_norm: ArrayLike, dimension: int = 1) -> float | np.ndarray:
        """E_OU = (1 - e^{-theta t})^2 ||f(D)||^2 + d rho^2/theta (1 - e^{-2 theta t}) (Balle et al.
        2019, eq. 4). Vectorised over ``f_norm`` = ||f(D)||."""
        d = V.integer("dimension", dimension, low=1)
        fn = V.reals("f_norm", f_norm, low=0.0, allow_inf=False)
        out = (-math.expm1(-self.theta * self.t)) ** 2 * fn ** 2 + d * self.variance
        return out if out.ndim else float(out)

    @property
    def gaussian_sigma(self) -> float:
        """sigma~ = sqrt(rho^2 (e^{2 theta t} - 1)/theta): the unbiased Gaussian mechanism with
        sensitivity Delta and the same RDP as M_t."""
        return math.sqrt(self.rho ** 2 * math.expm1(2.0 * self.theta * self.t) / self.theta)

    def gaussian_mse(self, dimension: int = 1) -> float:
        """E_GM = d sigma~^2 (Balle et al. 2019, Sec. 5.1)."""
        return V.integer("dimension", dimension, low=1) * self.gaussian_sigma ** 2

    def pgm_mse(self, radius: float, dimension: int = 1) -> float:
        """E_PGM = E_GM (1 + d sigma~^2 / R^2)^{-1} = R^2 d sigma~^2 / (R^2 + d sigma~^2): the
        worst-case MSE over ||f(D)|| <= R of beta (f(D) + N(0, sigma~^2 I)) with the optimal
        beta = R^2 / (R^2 + d sigma~^2) (Balle et al. 2019, Sec. 5.1, errata: R^2)."""
        R = V.positive("radius", radius)
        v = self.gaussian_mse(dimension)
        return R ** 2 * v / (R ** 2 + v)

    def mse_ratio(self, radius: float, dimension: int = 1) -> float:
        """max over ||f(D)|| <= R of E_OU / E_GM = E_OU(R) / E_GM (E_OU grows with ||f||)."""
        R = V.nonnegative("radius", radius)
        return float(self.mse(R, dimension)) / self.gaussian_mse(dimension)

    def dominates_gaussian(self, radius: float, dimension: int = 1) -> bool:
        """Balle et al. 2019, Thm 8 (1): theta R^2 <= 4 d rho^2 guarantees E_OU / E_GM <= 1 at every
        t."""
        R = V.nonnegative("radius", radius)
        d = V.integer("dimension", dimension, low=1)
        return self.theta * R ** 2 <= 4.0 * d * self.rho ** 2

    @classmethod
    def calibrate(cls, epsilon: float, radius: float, dimension: int = 1,
                  sensitivity: float = 1.0, relation: Relation = ADD_REMOVE):
        """Balle et al. 2019, Thm 8 (2): theta = log(1 + d Delta^2 / (2 eps R^2)), rho^2 = theta
        Delta^2 / (2 eps (e^{2 theta} - 1)), t = 1. The result is (alpha, alpha eps)-RDP and its
        error is E_GM (1 + d Delta^2/(2 eps R^2))^{-1} = E_PGM, with E_GM = d Delta^2 / (2 eps)."""
        eps = V.positive("epsilon", epsilon)
        R = V.positive("radius", radius)
        d = V.integer("dimension", dimension, low=1)
        delta = V.positive("sensitivity", sensitivity)
        theta = math.log1p(d * delta ** 2 / (2.0 * eps * R ** 2))
        rho = math.sqrt(theta * delta ** 2 / (2.0 * eps * math.expm1(2.0 * theta)))
        return cls(theta, rho, 1.0, delta, relation)


# --- the semigroups as kernels: post-processing adds time -------------------------------------

class _SemigroupKernel(MixingKernel):
    """A diffusion semigroup's transition kernel is a (Lipschitz-mapped) Gaussian kernel: its
    coupling form and Dobrushin coefficient are that kernel's; on the real line it has no
    uniform (Doeblin / ultra) mixing."""

    accepts_real_line = True

    def as_gaussian_kernel(self) -> GaussianKernel:  # pragma: no cover - abstract
        raise NotImplementedError

    def _coupling_form(self):
        return self.as_gaussian_kernel()._coupling_form()

    def dobrushin(self, epsilon: ArrayLike = 0.0) -> float | np.ndarray:
        return self.as_gaussian_kernel().dobrushin(epsilon)

    def doeblin(self) -> float:
        return 1.0

    def ultra_mixing(self) -> float:
        return 1.0


@dataclasses.dataclass(frozen=True)
class BrownianKernel(_SemigroupKernel):
    """P_s(x) = N(x, 2s I), the Brownian semigroup (Balle et al. 2019, Ex. 4). Applied to
    BrownianMotion(t) it gives BrownianMotion(t + s); applied to a Gaussian / Laplace mechanism, the
    coupling bound of Balle et al. 2019, Thm 2 (a Gaussian kernel with sigma^2 = 2s). No uniform
    mixing."""

    s: float

    def __post_init__(self):
        object.__setattr__(self, "s", V.positive("s", self.s))

    def as_gaussian_kernel(self) -> GaussianKernel:
        return GaussianKernel(math.sqrt(2.0 * self.s))

    def apply(self, mechanism: Mechanism) -> Mechanism:
        if isinstance(mechanism, BrownianMotion):
            return mechanism.advance(self.s)
        return super().apply(mechanism)


@dataclasses.dataclass(frozen=True)
class OrnsteinUhlenbeckKernel(_SemigroupKernel):
    """P_s(x) = N(e^{-theta s} x, rho^2/theta (1 - e^{-2 theta s}) I), the OU semigroup
    (Balle et al. 2019, Sec. 5.1). Applied to OrnsteinUhlenbeck(theta, rho, t) (same theta, rho) it
    gives the mechanism at time t + s; applied to a Gaussian / Laplace mechanism, the coupling bound
    of Balle et al. 2019, Thm 2 with a Gaussian kernel whose map x -> e^{-theta s} x is e^{-theta
    s}-Lipschitz (Balle et al. 2019, Example 3). No uniform mixing."""

    theta: float
    rho: float
    s: float

    def __post_init__(self):
        object.__setattr__(self, "theta", V.positive("theta", self.theta))
        object.__setattr__(self, "rho", V.positive("rho", self.rho))
        object.__setattr__(self, "s", V.positive("s", self.s))

    def as_gaussian_kernel(self) -> GaussianKernel:
        var = self.rho ** 2 / self.theta * -math.expm1(-2.0 * self.theta * self.s)
        return GaussianKernel(math.sqrt(var), lipschitz=math.exp(-self.theta * self.s))

    def apply(self, mechanism: Mechanism) -> Mechanism:
        if (isinstance(mechanism, OrnsteinUhlenbeck) and mechanism.theta == self.theta
                and mechanism.rho == self.rho):
            return mechanism.advance(self.s)
        return super().apply(mechanism)


def _gaussian_loss(m):
    """A diffusion's privacy-loss pair is its Gaussian form's (None where it has none)."""
    try:
        g = m.gaussian_form()
    except (NotImplementedError, ValueError):
        return None
    from ...pld.sources import loss_distribution
    return loss_distribution(g)


def _noise(m):
    g = m.gaussian_form()
    return ("gaussian", g.sigma, g.sensitivity)


for _cls in (BrownianMotion, OrnsteinUhlenbeck):
    declare(_cls, Family(_cls.__name__, loss=_gaussian_loss, additive_noise=_noise))
