"""The post-processing kernel of Imola & Chaudhuri 2021 and the post-processed mechanism.

``BernoulliSampling(c, d, k)`` is the post-processing kernel: ``mech.post_process(kernel)``
returns a :class:`BernoulliSampled` mechanism whose RDP curve is the upper bound of Imola &
Chaudhuri 2021, Thm 5 applied order by order (Imola & Chaudhuri 2021, Thms 3, 5) and whose
``rdp_lower`` is the lower bound of eqs. 5/7.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ...core import validate as V
from ...mechanisms.base import Mechanism, PostProcessing, check_mechanism
from ._renyi import _check_params
from .bounds import _asymptote, lower_bound, upper_bound
from .exact_value import EXACT_MAX_K_D1, exact
from .witness import BernoulliWitness, _attained_tests

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["BernoulliSampling", "BernoulliSampled"]


@dataclasses.dataclass(frozen=True)
class BernoulliSampling:
    """Release k independent Bern(theta) samples instead of theta in [c, 1-c]^d (Imola & Chaudhuri
    2021).

    ``mech.post_process(BernoulliSampling(c, d, k))`` gives a :class:`BernoulliSampled`
    mechanism whose RDP curve maps the base curve order by order to the amplified one. The
    base mechanism must output theta in [c, 1-c]^d (e.g. project onto it; projection is
    post-processing, so the base RDP curve still applies). ``exact_search=True`` tightens the
    curve with the certified search of :func:`exact` (d = 1 only; slower)."""

    c: float
    d: int
    k: int = 1
    exact_search: bool = False

    def __post_init__(self):
        c, d, k = _check_params(self.c, self.d, self.k)
        object.__setattr__(self, "c", c)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "k", k)
        if not isinstance(self.exact_search, (bool, np.bool_)):
            raise ValueError(f"exact_search must be True or False (got {self.exact_search!r})")
        if self.exact_search and (d != 1 or k > EXACT_MAX_K_D1):
            raise ValueError("exact_search needs d = 1 and k <= "
                             f"{EXACT_MAX_K_D1} (got d={d}, k={k}); the default curve "
                             "(Imola & Chaudhuri 2021, Thm 5 bound) works for any d and k")

    def apply(self, mechanism: Mechanism) -> BernoulliSampled:
        check_mechanism(mechanism)
        return BernoulliSampled(mechanism, self)

    def upper(self, epsilon: ArrayLike, alpha: ArrayLike) -> float | np.ndarray:
        """Certified upper bound on Post at (epsilon, alpha) (see :func:`upper_bound`)."""
        return upper_bound(epsilon, alpha, self.c, self.d, self.k)

    def lower(self, epsilon: ArrayLike, alpha: ArrayLike) -> float | np.ndarray:
        """Certified lower bound on Post at (epsilon, alpha) (see :func:`lower_bound`)."""
        return lower_bound(epsilon, alpha, self.c, self.d, self.k)


@dataclasses.dataclass(frozen=True)
class BernoulliSampled(PostProcessing):
    """``base`` followed by Bernoulli sampling (Imola & Chaudhuri 2021): RDP epsilon'(alpha) = an
    upper bound on Post_{alpha,k}(epsilon_base(alpha)), order by order:

        epsilon'(alpha) = min(epsilon_base(alpha), d k r_alpha(c))          (Imola & Chaudhuri 2021,
        Thm 5)

    or, with ``kernel.exact_search``, the certified upper end of :func:`exact` (d = 1). At
    alpha = inf this is min(epsilon_base(inf), d k log((1-c)/c)): Bernoulli sampling turns any
    base mechanism into a pure-DP one. The relation is the base mechanism's."""

    base: Mechanism
    kernel: BernoulliSampling
    _cache: dict = dataclasses.field(default_factory=dict, compare=False, hash=False,
                                     repr=False)

    def __post_init__(self):
        # the checks of ``BernoulliSampling.apply``, here so that ``dp.from_json`` makes them too
        check_mechanism(self.base, "base")
        if not isinstance(self.kernel, BernoulliSampling):
            raise ValueError("kernel must be a dp.BernoulliSampling (got "
                             f"{type(self.kernel).__name__})")

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        kn = self.kernel
        eps = np.asarray(self.base._rdp(alpha), dtype=float)
        out = np.minimum(eps, _asymptote(alpha, kn.c, kn.d * kn.k))
        if kn.exact_search:
            fin = np.isfinite(alpha)
            if fin.any():
                key = (alpha[fin].tobytes(), eps[fin].tobytes())
                up = self._cache.get(key)
                if up is None:
                    up = np.asarray(exact(eps[fin], alpha[fin], kn.c, kn.d, kn.k).upper, float)
                    self._cache[key] = up
                out[fin] = np.minimum(out[fin], up)
        return out

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """lower_bound(epsilon_base(alpha)) (Imola & Chaudhuri 2021, eqs. 5/7): no bound derived
        from the base mechanism's RDP curve alone can be below it, since a [c, 1-c]^d-valued
        mechanism with that Rényi divergence attains it (Imola & Chaudhuri 2021, Thm 3 remark). Uses
        the base's own lower curve, or its curve when that is attained (``tight_rdp``); None
        otherwise."""
        a = V.orders(alpha)
        base_low = self.base.rdp_lower(a)
        if base_low is None:
            if not self.base.tight_rdp:
                return None
            base_low = self.base._rdp(a.astype(float))
        kn = self.kernel
        return lower_bound(np.asarray(base_low, float), a, kn.c, kn.d, kn.k)

    def witnesses(self) -> tuple[Mechanism, ...]:
        """Threshold witnesses (see :class:`BernoulliWitness`), one per threshold of
        :data:`~dpamp.amplification.bernoulli.witness.WITNESS_OFFSETS`, when the base
        mechanism is a Gaussian, Laplace or randomized response whose worst pair is attained
        (``tight_rdp``); else ()."""
        kn = self.kernel
        return tuple(BernoulliWitness(*test, kn.c, kn.d * kn.k, self.base.relation)
                     for test in _attained_tests(self.base))

    def __repr__(self):
        return f"{self.base!r}.post_process({self.kernel!r})"
