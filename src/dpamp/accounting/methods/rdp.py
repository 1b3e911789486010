"""Registers the Rényi-DP methods: "rdp" (improved conversion) and "rdp-classic"."""
from __future__ import annotations

import math

from ...core.guarantee import Guarantee
from ...mechanisms.family import Rep
from ..registry import Method, parts_support, register
from ...rdp.conversion import delta_from_rdp, epsilon_from_rdp

_SOURCES = {True: ("Steinke 2022, Lemma 33 item 8 (RDP -> (eps, delta)); Wang, Balle & "
                   "Kasiviswanathan 2019, Alg. 5 order search"),
            False: ("Wang, Balle & Kasiviswanathan 2019, Lemma 6 / eq. (2.2) (RDP -> (eps, "
                    "delta)); Wang, Balle & Kasiviswanathan 2019, Alg. 5 order search")}


def has_rdp(mechanism) -> bool:
    """True when every part of the composition has an RDP curve."""
    return mechanism.has_rdp()


#: Margin added to every reported bound, on top of the conversions' own rounding terms
#: (rdp.conversion: outward curve, padded objectives): relative 1e-10 (and 1e-15 absolute on
#: epsilon), covering the RDP curves' own evaluation error (measured below 1e-10 relative
#: against 50-digit mpmath). delta gets no absolute margin: it would floor a delta of 1e-23
#: at 1e-15.
_REL_MARGIN, _ABS_MARGIN = 1e-10, 1e-15


def pessimistic(x: float, absolute: float = _ABS_MARGIN) -> float:
    return x * (1 + _REL_MARGIN) + absolute if math.isfinite(x) and x > 0 else x


def _eps(improved):
    def run(mechanism, delta, **_):
        name = "rdp" if improved else "rdp-classic"
        pure = mechanism.pure_epsilon()
        if delta == 0.0:
            return Guarantee(pure, 0.0, None, name, "pure DP: RDP at alpha = inf", "epsilon")
        eps, _alpha = epsilon_from_rdp(mechanism._rdp, delta, improved, pure)
        return Guarantee(pessimistic(eps), delta, None, name, _SOURCES[improved], "epsilon")
    return run


def _delta(improved):
    def run(mechanism, epsilon, **_):
        name = "rdp" if improved else "rdp-classic"
        d, _alpha = delta_from_rdp(mechanism._rdp, epsilon, improved, mechanism.pure_epsilon())
        return Guarantee(epsilon, min(1.0, pessimistic(d, 0.0)), None, name, _SOURCES[improved],
                         "delta")
    return run


register(Method("rdp", _eps(True), _delta(True), has_rdp, rank=50,
                supports=lambda m: parts_support(m, Rep.RDP, "rdp")))
register(Method("rdp-classic", _eps(False), _delta(False), has_rdp, rank=60,
                supports=lambda m: parts_support(m, Rep.RDP, "rdp-classic")))
