"""Registers the Rényi-DP methods: "rdp" (improved conversion) and "rdp-classic"."""
from __future__ import annotations

import math

from ...core.guarantee import Guarantee
from ..registry import Method, register
from ...rdp.conversion import delta_from_rdp, epsilon_from_rdp

_SOURCES = {True: "004 Lemma 33 item 8 (RDP -> (eps, delta)); 003 Alg. 5 order search",
            False: "003 Lemma 6 / eq. (2.2) (RDP -> (eps, delta)); 003 Alg. 5 order search"}


def has_rdp(mechanism) -> bool:
    """True when every part of the composition has an RDP curve."""
    return mechanism.has_rdp()


#: Relative + absolute margin added to every reported bound: covers float rounding in the RDP
#: sums (measured below 1e-10 relative against 50-digit mpmath), so the number we print is
#: still a proven upper bound.
_REL_MARGIN, _ABS_MARGIN = 1e-10, 1e-15


def _pessimistic(x: float) -> float:
    return x * (1 + _REL_MARGIN) + _ABS_MARGIN if math.isfinite(x) and x > 0 else x


def _eps(improved):
    def run(mechanism, delta, **_):
        name = "rdp" if improved else "rdp-classic"
        pure = mechanism.pure_epsilon()
        if delta == 0.0:
            return Guarantee(pure, 0.0, None, name, "pure DP: RDP at alpha = inf", "epsilon")
        eps, _alpha = epsilon_from_rdp(mechanism._rdp, delta, improved, pure)
        return Guarantee(_pessimistic(eps), delta, None, name, _SOURCES[improved], "epsilon")
    return run


def _delta(improved):
    def run(mechanism, epsilon, **_):
        name = "rdp" if improved else "rdp-classic"
        d, _alpha = delta_from_rdp(mechanism._rdp, epsilon, improved, mechanism.pure_epsilon())
        return Guarantee(epsilon, min(1.0, _pessimistic(d)), None, name, _SOURCES[improved], "delta")
    return run


register(Method("rdp", _eps(True), _delta(True), has_rdp, rank=50,
                summary="Rényi DP, improved conversion (004 Lemma 33.8)"))
register(Method("rdp-classic", _eps(False), _delta(False), has_rdp, rank=60,
                summary="Rényi DP, classic conversion (003 Lemma 6)"))
