"""Declarations of the mechanisms known only by a privacy notion: rho-zCDP and a user's RDP
curve. Neither has a privacy-loss pair or a profile (a zCDP or RDP guarantee does not fix one)."""
from __future__ import annotations

from ..core import validate as V
from ..mechanisms.family import Family, declare
from ..mechanisms.generic import ZCDP, RDPCurve

_WHY = ("{} states only a {} guarantee, which fixes no privacy-loss pair or privacy profile; "
        "use the RDP or zCDP methods")


def _zcdp_words(words, relation):
    rho = words.get("rho", V.nonnegative, required=True)
    return ZCDP(rho, relation=relation), {"rho": rho}


def _zcdp_event(event, relation, sensitivity):
    if event.xi != 0:
        raise ValueError(f"ZCDpEvent with xi = {event.xi:g} (approximate zCDP) is not "
                         "supported; only xi = 0")
    return ZCDP(float(event.rho), relation=relation)


def _zcdp_to_event(m):
    from dp_accounting import dp_event
    return dp_event.ZCDpEvent(m.rho)


declare(ZCDP, Family(
    "ZCDP", zcdp=lambda m: m.rho, word="zcdp", keys=("rho",), from_words=_zcdp_words,
    event="ZCDpEvent", from_event=_zcdp_event, to_event=_zcdp_to_event, example=lambda rel: ZCDP(0.1, relation=rel),
    describe=lambda m: f"ρ-zCDP mechanism, ρ = {m.rho:g}", why_not=_WHY.format("ZCDP", "zCDP")))
declare(RDPCurve, Family(
    "RDPCurve", describe=lambda m: f"RDP curve {m.name!r}",
    example=lambda rel: RDPCurve(lambda a: 0.1 * a, relation=rel),
    why_not=_WHY.format("RDPCurve", "Rényi-DP")))
