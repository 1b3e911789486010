"""Noisy projected SGD, last iterate (Balle et al. 2019, Algorithm 1, Thm 5).

One pass over D = (z_1, ..., z_n): x_i = Pi_K(x_{i-1} - eta (grad l(x_{i-1}, z_i) + Z)),
Z ~ N(0, sigma^2 I); release x_n only. The loss l(., z) is C-Lipschitz, beta-smooth and
rho-strongly convex (rho = 0: merely convex) and the step size satisfies eta <= 2/(beta + rho).

Neighbouring relation: **substitution**. Balle et al. 2019 (following Feldman et al.) states RDP "at
index i": D and D' of the same size differing in the i-th record. Replacing z_i moves the i-th
gradient step by at most eta ||grad l(x, z_i) - grad l(x, z_i')|| <= 2 eta C, which is where the
constant 2C comes from; adding or removing a record would shift every later index and is not
covered.

RDP at index i (order alpha): alpha eps_i with (Balle et al. 2019, Thm 5, ``bound="paper"``)

    eps_n = 2 C^2 / sigma^2,
    eps_i = 2 C^2 / ((n - i) sigma^2) (1 - 2 eta beta rho / (beta + rho))^{(n-i+1)/2},  i < n.

Derivation (used for ``bound="optimal"``, the default): after step i the two runs' iterates are
at W_inf distance <= 2 eta C; each later step is a noisy L-Lipschitz map with noise eta sigma and
L = sqrt(1 - 2 eta beta rho / (beta + rho)) (gradient steps on a smooth strongly convex function
contract when eta <= 2/(beta + rho)); Balle et al. 2019, Thm 4 with r = n - i steps. Thm 5 uses
bound (3), giving the formula above; the optimal path in Thm 4 (2) (:mod:`.iteration`) gives

    eps_i = 2 C^2 L^2 / (sigma^2 S_{n-i}),   S_r = sum_{j=0}^{r-1} L^{-2j},

never larger (AM-GM), equal when rho = 0 (L = 1, eps_i = 2 C^2 / ((n - i) sigma^2)).
The worst index is i = n (every eps_i <= eps_n): the plain RDP curve of the mechanism uses it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ...core import validate as V
from ...mechanisms.base import Mechanism
from ...core.relations import SUBSTITUTION, Relation, as_relation
from .iteration import linear_rdp, optimal_coefficient, paper_coefficient

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_REL = 1e-12


@dataclasses.dataclass(frozen=True)
class NoisyProjectedSGD(Mechanism):
    """Last iterate of one pass of noisy projected SGD over n records (Balle et al. 2019, Alg. 1,
    Thm 5).

    ``lipschitz`` C, ``smoothness`` beta, ``strong_convexity`` rho (0 allowed, <= beta),
    ``step_size`` eta <= 2/(beta + rho), ``sigma`` the gradient-noise standard deviation.
    ``index``: the record whose privacy is accounted (1..n); None = the worst index (n).
    ``bound``: "optimal" (Thm 4 (2), best path; default) or "paper" (Thm 5 as printed).
    Relation: substitution (module docstring)."""

    n: int
    lipschitz: float
    smoothness: float
    strong_convexity: float
    step_size: float
    sigma: float
    index: int | None = None
    bound: str = "optimal"
    relation: Relation = SUBSTITUTION

    def __post_init__(self):
        n = V.integer("n", self.n, low=1)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "lipschitz", V.nonnegative("lipschitz", self.lipschitz))
        beta = V.positive("smoothness", self.smoothness)
        object.__setattr__(self, "smoothness", beta)
        rho = V.real("strong_convexity", self.strong_convexity, low=0.0, high=beta)
        object.__setattr__(self, "strong_convexity", rho)
        eta = V.positive("step_size", self.step_size)
        limit = 2.0 / (beta + rho)
        if eta > limit:
            raise ValueError(f"step_size must be in (0, 2/(smoothness + strong_convexity)] = "
                             f"(0, {limit:g}] for Balle, Barthe, Gaboardi & Geumlek 2019, "
                             f"Thm 5 (got {eta:g}): larger steps do not contract")
        object.__setattr__(self, "step_size", eta)
        object.__setattr__(self, "sigma", V.positive("sigma", self.sigma))
        if self.index is not None:
            object.__setattr__(self, "index", V.integer("index", self.index, low=1, high=n))
        if self.bound not in ("optimal", "paper"):
            raise ValueError(f"bound must be 'optimal' or 'paper' (got {self.bound!r})")
        rel = as_relation(self.relation)
        if rel is not SUBSTITUTION:
            raise ValueError("relation must be dp.SUBSTITUTION for NoisyProjectedSGD: Balle, "
                             "Barthe, Gaboardi & Geumlek 2019, Thm 5 compares datasets of equal "
                             "size differing in the i-th record")
        object.__setattr__(self, "relation", rel)

    @property
    def contraction(self) -> float:
        """L = sqrt(1 - 2 eta beta rho / (beta + rho)): Lipschitz constant of a gradient step."""
        b, r, e = self.smoothness, self.strong_convexity, self.step_size
        return math.sqrt(max(0.0, 1.0 - 2.0 * e * b * r / (b + r)))

    def epsilons(self, index: int | None = None) -> float | np.ndarray:
        """eps_i (RDP divided by alpha) at the given indices (default: all of 1..n), rounded up
        by a relative 1e-12. Vectorised over ``index``."""
        i = np.arange(1, self.n + 1) if index is None else np.asarray(index)
        if i.dtype.kind not in "iu" and not np.all(np.mod(i, 1) == 0):
            raise ValueError(f"index must be integers in [1, {self.n}]")
        i = i.astype(np.int64)
        if (i < 1).any() or (i > self.n).any():
            bad = i[(i < 1) | (i > self.n)].ravel()[0]
            raise ValueError(f"index must be in [1, {self.n}] (got {bad})")
        r = self.n - i
        base = 2.0 * self.lipschitz ** 2 / self.sigma ** 2
        L = self.contraction
        coef_fn = optimal_coefficient if self.bound == "optimal" else paper_coefficient
        rr = np.maximum(r, 1)
        f = np.where(r == 0, 1.0, np.asarray(coef_fn(L, rr), dtype=float))
        out = base * f * (1 + _REL)
        return out if out.ndim else float(out)

    def epsilon_at(self, index: int) -> float:
        """eps_i for one index i in 1..n."""
        return float(self.epsilons(V.integer("index", index, low=1, high=self.n)))

    def at_index(self, index: int) -> "NoisyProjectedSGD":
        """The same run, accounted for the record at ``index`` (composes and converts)."""
        return dataclasses.replace(self, index=index)

    def rdp(self, alpha: ArrayLike, index: int | None = None) -> float | np.ndarray:
        """RDP of the last iterate w.r.t. a change of the ``index``-th record (Balle et al. 2019,
        Thm 5): alpha eps_i. Default: this object's index, else the worst index n."""
        if index is None:
            return super().rdp(alpha)
        return self.at_index(index).rdp(alpha)

    def _rdp(self, alpha):
        i = self.index if self.index is not None else self.n
        # the true eps_i is > 0 unless C = 0, or L = 0 and a later step forgets record i
        positive = self.lipschitz > 0 and (i == self.n or self.contraction > 0)
        return linear_rdp(alpha, self.epsilon_at(i), positive)
