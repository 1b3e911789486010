"""Registers the "pld" accounting method (privacy-loss distributions, Steinke 2022, Sec. 3-4)."""
from __future__ import annotations

from ...core.guarantee import Guarantee
from ...mechanisms.family import Rep
from ..registry import Method, parts_support, register
from ...pld.query import delta_bracket, epsilon_bracket
from ...pld.sources import has_pld

SOURCE = ("Steinke 2022, Prop. 7 (PLD -> delta), Thm 9 (composition = convolution); dominating / "
          "dominated grid discretisations, tilted FFT with a proven error budget")


def _note(b) -> str:
    """Where the bracket misses tol: why, and how wide it is (the best proven one reached)."""
    if b.met:
        return ""
    width = "" if b.lower is None else f"; proven bracket [{b.lower:.6g}, {b.upper:.6g}]"
    return f"pld did not reach tol: {b.note}{width}"


def _status(b) -> dict:
    """The typed tolerance status of a bracket (Guarantee.tol_met, tol_why)."""
    return {"tol_met": bool(b.met), "tol_why": "" if b.met else f"pld: {b.note}"}


def _epsilon(mechanism, delta, tol=None, budget=None, max_rounds=None):
    if delta == 0.0:
        pure = mechanism.pure_epsilon()
        return Guarantee(pure, 0.0, None, "pld", "pure DP: sum of the parts' pure epsilons",
                         "epsilon")
    b = epsilon_bracket(mechanism, delta, tol, budget, max_rounds)
    return Guarantee(b.upper, delta, b.lower, "pld", SOURCE, "epsilon", _note(b), **_status(b))


def _delta(mechanism, epsilon, tol=None, budget=None, max_rounds=None):
    b = delta_bracket(mechanism, epsilon, tol, budget, max_rounds)
    return Guarantee(epsilon, b.upper, b.lower, "pld", SOURCE, "delta", _note(b), **_status(b))


register(Method("pld", _epsilon, _delta, has_pld, rank=20,
                supports=lambda m: parts_support(m, Rep.LOSS, "pld"),
                options=("tol", "budget", "max_rounds")))
