"""Markov kernels and their uniform mixing coefficients (Balle et al. 2019, Definition 1).

A Markov kernel K maps an input x to a distribution K(x). Balle et al. 2019, Definition 1 names four
uniform mixing conditions, each with a coefficient gamma in [0, 1]; the methods below return the
*smallest* gamma for which the condition holds (rounded up, so it is a proven value):

| condition                 | smallest gamma                                      | method              |
|---------------------------|-----------------------------------------------------|---------------------|
| gamma-Dobrushin           | sup_{x,x'} TV(K(x), K(x'))                          | ``dobrushin()``     |
| (gamma, eps)-Dobrushin    | sup_{x,x'} D_{e^eps}(K(x) || K(x'))                 | ``dobrushin(eps)``  |
| gamma-Doeblin             | 1 - integral of inf_x k(x, y) (omega = that inf, normalised) | ``doeblin()``  |
| gamma-ultra-mixing        | 1 - inf_{x,x',y} k(x, y) / k(x', y)                 | ``ultra_mixing()``  |

(Definition 1 with the errata's signs: Doeblin K(x) >= (1 - gamma) omega, ultra-mixing
dK(x)/dK(x') >= 1 - gamma.) A kernel that satisfies a condition for no gamma < 1 reports 1: the
corresponding case of Balle et al. 2019, Thm 1 then gives back the base guarantee (no
amplification), which is still true by post-processing. In particular a kernel whose rows have
different supports is not ultra-mixing, and the Gaussian kernel is never ultra-mixing (its density
ratios are unbounded).

Kernels:

* :class:`MarkovKernel` - a finite row-stochastic matrix (input i -> output j w.p. K[i, j]).
* :class:`GaussianKernel` - x -> N(psi(x), sigma^2) with psi L-Lipschitz, one-dimensional;
  on a bounded input interval [low, high] it has the closed-form coefficients below; unbounded
  it has no uniform mixing but gives the coupling bound of Balle et al. 2019, Thm 2 (Examples 1, 3).
* :class:`LaplaceKernel` - x -> Lap(psi(x), scale), likewise (Balle et al. 2019, Example 2).

Closed forms on [low, high] (derived here from Definition 1; the paper states none), with
D = L (high - low) the largest distance between the kernel's centres psi(x):

| kernel        | Dobrushin = Doeblin            | (gamma, eps)-Dobrushin                               | ultra-mixing   |
|---------------|--------------------------------|------------------------------------------------------|----------------|
| Gaussian(s)   | 2 Phi(D/(2s)) - 1              | Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) | 1 (none)       |
| Laplace(b)    | 1 - e^{-D/(2b)}                | [1 - e^{(eps - D/b)/2}]_+   (Balle et al. 2018, Thm 3)              | 1 - e^{-D/b}   |

Why: TV and hockey-stick divergences of a location family grow with the distance between the
centres, so the supremum is at distance D (the (gamma, eps) column is the Gaussian / Laplace
privacy profile, Balle et al. 2018, Thms 3-4). For Doeblin, inf_x k(x, y) over centres in an
interval is attained at the end farther from y, so its integral is 1 - TV at distance D. For Laplace
the density ratio e^{(|y - c'| - |y - c|)/b} is >= e^{-|c - c'|/b} >= e^{-D/b}.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ...core import validate as V

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...mechanisms.base import Mechanism

#: unit roundoff of float64
_U = 2.0 ** -53


def hockey_stick(p, q, epsilon=0.0):
    """Exact hockey-stick divergence of two distributions on a finite set (Balle et al. 2019, Sec.
    2):

        D_{e^eps}(p || q) = sup_E p(E) - e^eps q(E) = sum_y [p(y) - e^eps q(y)]_+,

    vectorised over ``epsilon`` (eps = inf gives p(supp(p) minus supp(q)), Balle et al. 2019,
    footnote 3). Not rounded: this is the reference computation the tests compare against."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    eps = np.asarray(epsilon, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(eps)[..., None]
        terms = np.where(q == 0, p, np.maximum(p - e * q, 0.0))
    out = terms.sum(axis=-1)
    return out if out.ndim else float(out)


class MixingKernel:
    """Base class of kernels usable with ``mechanism.post_process(kernel)``.

    Subclasses define the four coefficients of Balle et al. 2019, Definition 1. ``apply`` wraps a
    mechanism into :class:`~dpamp.amplification.mixing.post_processed.PostProcessed`, whose
    guarantees are amplified by Balle et al. 2019, Thm 1 (and, for the unbounded Gaussian / Laplace
    kernels, by Balle et al. 2019, Thm 2)."""

    #: whether every real number is a valid input (required after a mechanism with real outputs,
    #: such as the Gaussian or Laplace mechanism)
    accepts_real_line = False

    def _coupling_form(self):
        """("gaussian" | "laplace", noise scale, Lipschitz constant) for a noise kernel on the
        whole real line (used by the coupling bound of Balle et al. 2019, Thm 2), else None."""
        return None

    def dobrushin(self, epsilon: ArrayLike = 0.0) -> float | np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def doeblin(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def ultra_mixing(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def coefficients(self) -> dict:
        """The smallest gamma of each condition of Balle et al. 2019, Definition 1 (eps-Dobrushin at
        eps=0)."""
        return {"dobrushin": float(self.dobrushin()), "doeblin": self.doeblin(),
                "ultra-mixing": self.ultra_mixing()}

    def mixes(self) -> bool:
        """True when some uniform mixing coefficient is < 1 (Balle et al. 2019, Thm 1 can
        amplify)."""
        return float(self.dobrushin()) < 1.0

    def apply(self, mechanism: Mechanism) -> Mechanism:
        from ...mechanisms.base import check_mechanism
        from .post_processed import PostProcessed
        return PostProcessed(check_mechanism(mechanism), self)


def _eps_array(epsilon) -> np.ndarray:
    return V.reals("epsilon", epsilon, low=0.0, allow_inf=True)


def _out(a: np.ndarray):
    return a if a.ndim else float(a)


@dataclasses.dataclass(frozen=True, eq=False, init=False)
class MarkovKernel(MixingKernel):
    """A Markov kernel on finite sets: ``matrix[i, j]`` = P(output j | input i).

    Validated row-stochastic: entries finite and >= 0, every row sums to 1 within 1e-12.
    The base mechanism's outputs must be the row indices 0..n-1 (the caller's responsibility).
    Equality and hashing are by value (shape and entries)."""

    matrix: np.ndarray

    def __init__(self, matrix: ArrayLike) -> None:
        try:
            k = np.array(matrix, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("matrix must be a 2-D array of probabilities") from None
        if k.ndim != 2 or k.shape[0] < 1 or k.shape[1] < 1:
            raise ValueError(f"matrix must be a non-empty 2-D array (got shape {k.shape})")
        if not np.isfinite(k).all():
            raise ValueError("matrix entries must be finite probabilities in [0, 1]")
        if (k < 0).any():
            i, j = np.argwhere(k < 0)[0]
            raise ValueError(f"matrix entries must be >= 0 (got {k[i, j]:g} at row {i}, "
                             f"column {j})")
        sums = k.sum(axis=1)
        bad = np.abs(sums - 1.0) > 1e-12
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"every row of matrix must sum to 1 within 1e-12 (row {i} sums "
                             f"to {sums[i]!r}): a Markov kernel is row-stochastic")
        k.setflags(write=False)
        object.__setattr__(self, "matrix", k)

    def __eq__(self, other):
        return (isinstance(other, MarkovKernel) and self.matrix.shape == other.matrix.shape
                and bool((self.matrix == other.matrix).all()))

    def __hash__(self):
        return hash((self.matrix.shape, self.matrix.tobytes()))

    def __repr__(self):
        return f"MarkovKernel({self.matrix.tolist()!r})"

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def _margin(self) -> float:
        """Absolute rounding bound for a sum over one row (m terms) of simple expressions."""
        return (self.matrix.shape[1] + 8) * 4 * _U

    def dobrushin(self, epsilon: ArrayLike = 0.0) -> float | np.ndarray:
        """Smallest gamma with sup_{x,x'} D_{e^eps}(K(x) || K(x')) <= gamma (Balle et al. 2019, Def.
        1 (1)-(2)); eps = 0 (default) is the total variation, i.e. the Dobrushin coefficient.
        Vectorised over ``epsilon``; exact sum of positive parts over every ordered pair of rows,
        plus a rounding margin (m + 8) 4u (a term p - e^eps q that matters has p >= e^eps q, so its
        error is below 3u p; the rows sum to 1; plus the summation error)."""
        eps = _eps_array(epsilon)
        flat = eps.ravel()
        k = self.matrix
        n, m = k.shape
        out = np.empty(flat.shape)
        chunk = max(1, 4_000_000 // max(1, n * n * m))
        for s in range(0, flat.size, chunk):  # chunks only bound memory; each is vectorised
            e = flat[s:s + chunk]
            out[s:s + chunk] = hockey_stick(k[None, :, None, :], k[None, None, :, :],
                                            e[:, None, None]).reshape(e.size, -1).max(axis=1)
        # margin also where the computed sum is 0: a true term p - e^eps q below 3u p can round
        # to a non-positive value (only eps = inf is computed exactly: a support test)
        fin = np.isfinite(flat)
        out = np.minimum(1.0, np.where(fin, out + self._margin(), out))
        return _out(out.reshape(eps.shape))

    def _column_min(self) -> np.ndarray:
        return self.matrix.min(axis=0)

    def doeblin(self) -> float:
        """Smallest gamma such that K(x) >= (1 - gamma) omega for all x (Balle et al. 2019, Def. 1
        (3)): 1 - gamma = sum_y min_x K(x, y), attained by omega = column minima normalised (any
        valid (gamma, omega) has (1 - gamma) omega(y) <= min_x K(x, y); sum over y)."""
        s = float(self._column_min().sum())
        g = max(0.0, 1.0 - s)
        return min(1.0, g + self._margin()) if self.matrix.shape[0] > 1 else g

    @property
    def omega(self) -> np.ndarray | None:
        """The Doeblin minorising distribution omega (None when gamma = 1: no minorisation)."""
        c = self._column_min()
        s = c.sum()
        return c / s if s > 0 else None

    def ultra_mixing(self) -> float:
        """Smallest gamma with K(x) << K(x') and dK(x)/dK(x') >= 1 - gamma for all x, x'
        (Balle et al. 2019, Def. 1 (4)): 1 - min over y and pairs of rows of K(x, y) / K(x', y) = 1
        - min_y (column min / column max). 1 when two rows have different supports (never
        ultra-mixing)."""
        k = self.matrix
        if k.shape[0] == 1:
            return 0.0
        pos = k > 0
        if not (pos == pos[0]).all():
            return 1.0
        cols = pos[0]
        ratio = float((k[:, cols].min(axis=0) / k[:, cols].max(axis=0)).min())
        return min(1.0, 1.0 - ratio + 4 * _U)


class _NoiseKernel(MixingKernel):
    """Shared validation for the one-dimensional Gaussian / Laplace kernels (fields low, high,
    lipschitz are declared by the subclasses so that the noise scale comes first)."""

    low: float
    high: float
    lipschitz: float

    if TYPE_CHECKING:
        # each noise's: D over its scale, and its closed-form log privacy profile
        @property
        def _ratio(self) -> float: ...
        @staticmethod
        def _log_profile(mu, eps, upper): ...

    def _validate_domain(self):
        lo = V.real("low", self.low, allow_inf=True)
        hi = V.real("high", self.high, allow_inf=True)
        if not lo <= hi or lo == math.inf or hi == -math.inf:
            raise ValueError(f"low must be <= high, an interval of inputs (got [{lo:g}, {hi:g}])")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)
        object.__setattr__(self, "lipschitz", V.nonnegative("lipschitz", self.lipschitz))

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def accepts_real_line(self) -> bool:  # type: ignore[override]
        return math.isinf(self.low) and math.isinf(self.high)

    @property
    def diameter(self) -> float:
        """D = L (high - low): the largest distance between two centres psi(x), psi(x')."""
        if self.lipschitz == 0.0:
            return 0.0
        return self.lipschitz * (self.high - self.low)

    def dobrushin(self, epsilon: ArrayLike = 0.0) -> float | np.ndarray:
        """sup D_{e^eps} of the noise law at two centres at most D apart: the noise's closed
        form profile (the subclass's ``_log_profile``, rounded up) at D / scale; eps = 0 is the
        total variation."""
        from ...profiles.numerics import to_linear_upper
        eps = _eps_array(epsilon)
        ratio = self._ratio
        if math.isinf(ratio):
            return _out(np.where(np.isinf(eps), 0.0, 1.0))
        return _out(to_linear_upper(self._log_profile(ratio, eps, upper=True)))

    def doeblin(self) -> float:
        """Equal to the Dobrushin coefficient (module docstring)."""
        return float(self.dobrushin())


@dataclasses.dataclass(frozen=True)
class GaussianKernel(_NoiseKernel):
    """K(x) = N(psi(x), sigma^2) for x in [low, high], psi L-Lipschitz (psi = identity by
    default), on the real line.

    Bounded interval: closed-form uniform mixing coefficients (module table; Balle et al. 2019, Def.
    1, with D = L (high - low)). Unbounded (the default): no uniform mixing (all coefficients 1,
    Balle et al. 2019 Sec. 3 end), but post-processing a Gaussian / Laplace mechanism is amplified
    by the coupling bound of Balle et al. 2019, Thm 2 (Examples 1, 3;
    :func:`dpamp.shift_reduction_rdp`)."""

    sigma: float
    low: float = -math.inf
    high: float = math.inf
    lipschitz: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "sigma", V.positive("sigma", self.sigma))
        self._validate_domain()

    # dobrushin: the Gaussian profile at mu = D / sigma (Balle et al. 2018, Thm 4); doeblin equals
    # it, 2 Phi(D/(2 sigma)) - 1 (module docstring)
    @property
    def _ratio(self) -> float:
        return self.diameter / self.sigma

    @staticmethod
    def _log_profile(mu, eps, upper):
        from ...profiles.closed_forms import gaussian_log_profile
        return gaussian_log_profile(mu, eps, upper=upper)

    def ultra_mixing(self) -> float:
        """1 unless D = 0: Gaussian density ratios are unbounded, so never ultra-mixing."""
        return 0.0 if self.diameter == 0.0 else 1.0

    def _coupling_form(self):
        return ("gaussian", self.sigma, self.lipschitz) if self.accepts_real_line else None


@dataclasses.dataclass(frozen=True)
class LaplaceKernel(_NoiseKernel):
    """K(x) = Lap(psi(x), scale) for x in [low, high], psi L-Lipschitz (default identity), on
    the real line. Closed-form uniform mixing coefficients on a bounded interval (module table);
    unbounded: the coupling bound of Balle et al. 2019, Thm 2 / Example 2 for Laplace and Gaussian
    mechanisms."""

    scale: float
    low: float = -math.inf
    high: float = math.inf
    lipschitz: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "scale", V.positive("scale", self.scale))
        self._validate_domain()

    # dobrushin: [1 - e^{(eps - D/b)/2}]_+ (Balle et al. 2018, Thm 3), TV = 1 - e^{-D/(2b)} at eps =
    # 0; doeblin equals it (module docstring)
    @property
    def _ratio(self) -> float:
        return self.diameter / self.scale

    @staticmethod
    def _log_profile(t, eps, upper):
        from ...profiles.closed_forms import laplace_log_profile
        return laplace_log_profile(t, eps, upper=upper)

    def ultra_mixing(self) -> float:
        """1 - e^{-D/b}: the density ratio of Laplace laws with centres D apart is >= e^{-D/b}."""
        t = self._ratio
        if t == 0.0:
            return 0.0
        return min(1.0, -math.expm1(-t) * (1 + 8 * _U) + 4 * _U)

    def _coupling_form(self):
        return ("laplace", self.scale, self.lipschitz) if self.accepts_real_line else None
