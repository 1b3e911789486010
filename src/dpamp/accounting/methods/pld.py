"""Registers the "pld" accounting method (privacy-loss distributions, 004 Sec. 3-4)."""
from __future__ import annotations

from ...core.guarantee import Guarantee
from ..registry import Method, register
from ...pld.query import delta_bracket, epsilon_bracket
from ...pld.sources import has_pld

SOURCE = ("004 Prop. 7 (PLD -> delta), Thm 9 (composition = convolution); dominating / "
          "dominated grid discretisations, tilted FFT with a proven error budget")


def _epsilon(mechanism, delta, tol=None, **_):
    if delta == 0.0:
        pure = mechanism.pure_epsilon()
        return Guarantee(pure, 0.0, None, "pld", "pure DP: sum of the parts' pure epsilons",
                         "epsilon")
    b = epsilon_bracket(mechanism, delta, tol)
    return Guarantee(b.upper, delta, b.lower, "pld", SOURCE, "epsilon")


def _delta(mechanism, epsilon, tol=None, **_):
    b = delta_bracket(mechanism, epsilon, tol)
    return Guarantee(epsilon, b.upper, b.lower, "pld", SOURCE, "delta")


register(Method("pld", _epsilon, _delta, has_pld, rank=20,
                summary="privacy-loss distributions: certified tight bracket (004 Sec. 3-4)"))
