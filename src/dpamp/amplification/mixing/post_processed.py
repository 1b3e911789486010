"""The post-processed mechanism K o M: a mechanism followed by a mixing kernel (Balle et al. 2019,
Thm 1).

There is no Rényi-DP version of Thm 1 in Balle et al. 2019. The post-processed mechanism therefore
keeps the base's RDP curve (data-processing inequality), improved only where a proven bound exists:
the pure epsilon of the ultra-mixing case (R_alpha <= R_inf <= eps' for every alpha when the base is
pure eps-DP) and, for unbounded Gaussian / Laplace kernels after a Gaussian / Laplace mechanism,
the coupling bound of Balle et al. 2019, Thm 2 (:mod:`dpamp.amplification.mixing.coupling`).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...mechanisms.base import Mechanism, PostProcessing
from .kernels import MixingKernel
from .uniform import _REL_EPS, _up, amplified_epsilon, amplified_profile


@dataclasses.dataclass(frozen=True)
class PostProcessed(PostProcessing):
    """``kernel`` applied to the output of ``base`` (``base.post_process(kernel)``).

    * ``profile(eps)``: the base's privacy profile amplified by Balle et al. 2019, Thm 1
      (:func:`amplified_profile`); ``epsilon`` / ``delta`` queries use it through the "mixing"
      accounting method.
    * ``rdp``: the base's curve (post-processing; Balle et al. 2019 has no RDP version of Thm 1),
    capped by the
      ultra-mixing pure epsilon and, for unbounded Gaussian / Laplace kernels after a Gaussian /
      Laplace mechanism, by the coupling bound of Balle et al. 2019, Thm 2.
    * ``relation``: the base's.

    The base's outputs must lie in the kernel's input space (row indices of a MarkovKernel, the
    interval [low, high] of a bounded Gaussian / Laplace kernel); dpamp cannot check this."""

    base: Mechanism
    kernel: MixingKernel

    def __post_init__(self):
        from ...mechanisms.base import check_mechanism
        from .coupling import mechanism_form
        check_mechanism(self.base, "base")
        if not isinstance(self.kernel, MixingKernel):
            raise ValueError(f"kernel must be a dpamp mixing kernel (got {self.kernel!r})")
        if mechanism_form(self.base) is not None and not self.kernel.accepts_real_line:
            raise ValueError(
                f"{self.base!r} has real-valued (unbounded) outputs but {self.kernel!r} does not "
                "accept every real input: use an unbounded dp.GaussianKernel / dp.LaplaceKernel "
                "(Balle, Barthe, Gaboardi & Geumlek 2019, Thm 2 coupling bound), or a base "
                "mechanism whose outputs lie in the kernel's input space")

    def _coupling(self, alpha):
        from .coupling import kernel_form, mechanism_form, shift_reduction_rdp
        if kernel_form(self.kernel) is None or mechanism_form(self.base) is None:
            return None
        return np.asarray(shift_reduction_rdp(alpha, self.base, self.kernel), dtype=float)

    def _ultra_pure(self) -> float:
        """Pure epsilon from Balle et al. 2019, Thm 1 (4) with delta = 0 (rounded up): log(1 + gamma
        (e^eps - 1)) for a pure eps-DP base and a gamma-ultra-mixing kernel; else the base's."""
        g = self.kernel.ultra_mixing()
        e = float(self.base.pure_epsilon())
        if g == 0.0:
            return 0.0
        if g >= 1.0 or math.isinf(e):
            return e
        return min(e, float(_up(amplified_epsilon(e, g), _REL_EPS)))

    def pure_epsilon(self) -> float:
        vals = [self.base.pure_epsilon(), self._ultra_pure()]
        if self.kernel.doeblin() == 0.0:  # output independent of the input
            vals.append(0.0)
        c = self._coupling(np.array([np.inf]))
        if c is not None:
            vals.append(float(c[0]))
        return float(min(vals))

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        if self.kernel.doeblin() == 0.0:
            return np.zeros_like(alpha)
        out = np.asarray(self.base._rdp(alpha), dtype=float)
        pure = self._ultra_pure()
        if math.isfinite(pure):
            out = np.minimum(out, pure)  # R_alpha <= R_inf (monotone in alpha)
        c = self._coupling(alpha)
        if c is not None:
            out = np.minimum(out, c)
        return out

    def profile(self, epsilon):
        """Amplified privacy profile (Balle et al. 2019, Thm 1 pointwise,
        :func:`amplified_profile`)."""
        return amplified_profile(self.base.profile, self.kernel, epsilon)

    def mixing_coefficients(self) -> dict:
        return self.kernel.coefficients()

    def __repr__(self):
        return f"{self.base!r}.post_process({self.kernel!r})"


def _register_profile():
    """Make the amplified profile visible to dpamp.profiles (and so to the PLD engine, which
    composes any mechanism with a profile). Balle et al. 2019, Thm 1 bounds the profile of the
    post-processed mechanism over all ordered pairs of neighbours, so the same curve serves both
    orders (the symmetric curve dominates each pair's). No lower bound is claimed."""
    from ...profiles import register

    def pair(mech, eps):
        eps = np.asarray(eps, dtype=float)
        with np.errstate(divide="ignore"):
            row = np.log(np.asarray(mech.profile(eps), dtype=float))
        return np.stack([row, row])
    register(PostProcessed, pair=pair, symmetric=True)


_register_profile()
