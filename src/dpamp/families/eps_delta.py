"""Declaration of the worst-case (eps, delta)-DP mechanism: its privacy-loss pair (Steinke 2022,
Cor. 24) has an atom of mass delta at +inf and the randomized-response pair scaled by 1 - delta."""
from __future__ import annotations

from ..core import validate as V
from ..mechanisms.eps_delta import EpsDelta
from ..mechanisms.family import Family, declare
from .base import closed_form_profile


def _loss(m: EpsDelta):
    from ..pld import loss as L
    return L.eps_delta(m.epsilon_, m.delta_)


def _words(words, relation):
    e = words.get("epsilon", V.nonnegative, required=True)
    d = words.get("delta", V.real, low=0.0, high=1.0, high_open=True, required=True)
    return EpsDelta(e, d, relation=relation), {"epsilon": e, "delta": d}


declare(EpsDelta, Family(
    "EpsDelta", loss=_loss, eps_delta=lambda m: (m.epsilon_, m.delta_),
    profile=closed_form_profile("eps_delta", "Steinke 2022, Cor. 24 worst-case pair"),
    word="eps_delta", keys=("epsilon", "delta"), from_words=_words,
    example=lambda rel: EpsDelta(1.0, 1e-6, relation=rel),
    describe=lambda m: f"(ε, δ)-DP mechanism, ε = {m.epsilon_:g}, δ = {m.delta_:g}"))
