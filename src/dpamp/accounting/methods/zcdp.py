"""The "zcdp" accounting method: rho adds under composition (Steinke 2022, Thm 13), converted to
(epsilon, delta) at the end by the improved conversion (Steinke 2022, Prop. 14)."""
from __future__ import annotations

import math

from ...core.guarantee import Guarantee
from ...theorems.zcdp import delta_improved, epsilon_improved, rho_of
from ...mechanisms.family import Support
from ..registry import Method, register

_SOURCE = ("Steinke 2022, Thm 13 (rho adds), Lemma 12 / Prop. 16 (rho of parts), Prop. 14 "
           "(conversion)")


def _applies(mechanism) -> bool:
    return rho_of(mechanism) is not None


def _supports(mechanism) -> Support:
    """Every part has a rho (its family's, or eps0^2 / 2 from a finite pure epsilon): a
    formula of the parameters, nothing is built."""
    for part, count in mechanism.parts():
        if count > 0 and rho_of(part) is None:
            return Support.no(f"zcdp: {type(part).__name__} has no zCDP rho (neither a "
                              "declared one nor a finite pure epsilon)")
    return Support.yes()


def _epsilon(mechanism, delta, **_):
    rho = rho_of(mechanism)
    if rho is None:
        raise ValueError(f"zcdp does not apply to {mechanism!r}")
    if delta == 0.0:  # zCDP gives nothing at delta = 0 unless rho = 0
        return Guarantee(0.0 if rho == 0 else math.inf, 0.0, None, "zcdp", _SOURCE, "epsilon")
    eps = 0.0 if rho == 0 else epsilon_improved(rho, delta)
    return Guarantee(eps, delta, None, "zcdp", _SOURCE, "epsilon")


def _delta(mechanism, epsilon, **_):
    rho = rho_of(mechanism)
    if rho is None:
        raise ValueError(f"zcdp does not apply to {mechanism!r}")
    d = 0.0 if rho == 0 else delta_improved(rho, epsilon)
    return Guarantee(epsilon, d, None, "zcdp", _SOURCE, "delta")


register(Method("zcdp", _epsilon, _delta, _applies, rank=70, supports=_supports))
