"""Declarations of randomized response of a bit and of a pure eps-DP mechanism.

Both have the two-point privacy-loss pair (e^eps0 / (1 + e^eps0), 1 / (1 + e^eps0)) and its
reverse, which dominates every eps0-DP mechanism (Kairouz, Oh & Viswanath 2015); randomized
response of a bit is in addition "binary" (Balle et al. 2018, Lemma 12: subsampling mixes its own
pair)."""
from __future__ import annotations

import math

from ..core import validate as V
from ..mechanisms.family import Family, declare
from ..mechanisms.randomized_response import PureDP, RandomizedResponse
from .base import closed_form_profile


def _loss(m):
    from ..pld import loss as L
    if math.isinf(m.eps0):
        raise NotImplementedError("no privacy-loss distribution for epsilon = inf")
    return L.eps_delta(m.eps0, 0.0)


def _rr_words(words, relation):
    key = words.one_of("p", "epsilon")
    if key == "p":
        p = words.get("p", V.probability, low_open=True, high_open=True)
        return RandomizedResponse(p, relation=relation), {"p": p}
    e = words.get("epsilon", V.nonnegative)
    try:
        return RandomizedResponse.from_epsilon(e, relation=relation), {"epsilon": e}
    except ValueError as err:
        words.fail("epsilon", str(err))


def _rr_event(event, relation, sensitivity):
    """dp-accounting's RandomizedResponseDpEvent(p, k): report the truth with probability
    1 - p, else a uniform bucket; k = 2 is randomized response with truth probability 1 - p/2,
    k > 2 is k-ary randomized response with its exact three-outcome pair (None: no privacy
    cost)."""
    from ..mechanisms.kary_randomized_response import KaryRandomizedResponse
    p = V.probability("noise_parameter", event.noise_parameter)
    k = V.integer("num_buckets", event.num_buckets, low=1)
    if k == 1 or p == 1:
        return None
    if p == 0:
        raise ValueError("RandomizedResponseDpEvent with noise_parameter 0 always reports "
                         "the truth: not private")
    if k == 2:
        return RandomizedResponse(1.0 - p / 2.0, relation=relation)
    return KaryRandomizedResponse(k, p, relation=relation)


def _rr_to_event(m: RandomizedResponse):
    """RandomizedResponseDpEvent(noise_parameter = 2 (1 - q), 2 buckets), q = max(p, 1 - p)
    the truth probability (dp-accounting reads it under replace-one)."""
    from dp_accounting import dp_event
    return dp_event.RandomizedResponseDpEvent(2.0 * (1.0 - max(m.p, 1.0 - m.p)), 2)


def _pure_words(words, relation):
    e = words.get("epsilon", V.nonnegative)
    return PureDP(e, relation=relation), {"epsilon": e}


declare(RandomizedResponse, Family(
    "RandomizedResponse", loss=_loss, profile=closed_form_profile(
        "randomized_response", "Balle, Barthe & Gaboardi 2018, Sec. 5 (phi_p)", binary=True),
    word="randomized_response", keys=("p", "epsilon"), from_words=_rr_words,
    event="RandomizedResponseDpEvent", from_event=_rr_event, to_event=_rr_to_event,
    example=lambda rel: RandomizedResponse(0.75, relation=rel),
    describe=lambda m: f"randomized response, p = {m.p:g}"))
declare(PureDP, Family(
    "PureDP", loss=_loss, profile=closed_form_profile(
        "pure_dp", "randomized-response profile (Steinke 2022, Sec. 5)"),
    word="pure_dp", keys=("epsilon",), from_words=_pure_words,
    example=lambda rel: PureDP(1.0, relation=rel),
    describe=lambda m: f"ε-DP mechanism, ε = {m.epsilon_:g}"))
