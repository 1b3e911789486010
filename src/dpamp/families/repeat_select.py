"""Repeat-and-select's declaration (:mod:`dpamp.mechanisms.repeat_select`): an RDP curve only
(Papernot & Steinke 2022, Theorems 2 and 6), no privacy-loss pair or profile, so the capability
matrix shows the PLD and profile methods as "no" with the reason. dp-accounting's
``RepeatAndSelectDpEvent(event, mean, shape)`` both ways (shape inf: Poisson, 1: geometric,
0: logarithmic, else the truncated negative binomial). In a plan it is a stage's
``repeat_and_select`` table (:mod:`dpamp.io.plan`), not a mechanism word: it wraps a whole
stage."""
from __future__ import annotations

import math

from ..mechanisms.family import Family, declare, describe
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.repeat_select import RepeatAndSelect

_WHY = ("RepeatAndSelect: Papernot & Steinke 2022 prove Rényi-DP bounds only; dpamp has no "
        "privacy-loss pair or privacy profile for it (Koskela, Redberg & Wang 2024 bound its "
        "profile; not implemented); use the RDP method")


def _from_event(event, relation, sensitivity, inner=None):
    """RepeatAndSelectDpEvent(event, mean, shape) around the mechanism ``inner`` of its event
    (None: the inner event has no privacy cost, and neither has the selection)."""
    if inner is None:
        return None
    shape = float(event.shape)
    if math.isinf(shape) and shape > 0:
        return RepeatAndSelect(inner, float(event.mean), "poisson")
    if shape == 1.0:
        return RepeatAndSelect(inner, float(event.mean), "geometric")
    if shape == 0.0:
        return RepeatAndSelect(inner, float(event.mean), "logarithmic")
    return RepeatAndSelect(inner, float(event.mean), "truncated_negative_binomial", shape)


def _to_event(m: RepeatAndSelect, inner):
    from dp_accounting import dp_event
    return dp_event.RepeatAndSelectDpEvent(inner, m.mean, m.eta)


def _describe(m: RepeatAndSelect) -> str:
    dist = m.distribution.replace("_", " ") + (f" (shape {m.shape:g})" if m.shape is not None
                                               else "")
    return f"the best of a {dist} number of runs, mean {m.mean:g}, of: {describe(m.base)}"


declare(RepeatAndSelect, Family(
    "RepeatAndSelect", keys=("mean", "distribution", "shape"),
    event="RepeatAndSelectDpEvent", from_event=_from_event, to_event=_to_event,
    describe=_describe, why_not=_WHY,
    example=lambda rel: RepeatAndSelect(Gaussian(2.0, relation=rel), 10.0)))
