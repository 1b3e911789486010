"""The declaration of k-ary randomized response (its description, exact pair and RDP:
:mod:`dpamp.mechanisms.kary_randomized_response`).

Everything comes from its three-outcome pair P = (a, b, c), Q = (b, a, c), losses +eps, -eps, 0:
the PLD is those atoms (the loss eps rounded up, outward; the engine discretises them
pessimistically and optimistically, and fits its grid to eps), the profile the pair's
hockey-stick curve, (a + b) times the randomized-response curve of eps (exact up to rounding,
so also a lower bound: every pair of neighbours with different values attains it), a
group of records the same pair (the statistic still takes two values), and dp-accounting's
``RandomizedResponseDpEvent(p, k)`` both ways for k > 2 (k = 2 stays
:class:`~dpamp.mechanisms.randomized_response.RandomizedResponse`, as it was read before)."""
from __future__ import annotations

import math

import numpy as np

from ..core import validate as V
from ..mechanisms.family import Family, ProfileHooks, declare
from ..mechanisms.kary_randomized_response import KaryRandomizedResponse, kary_epsilon


def _loss(m: KaryRandomizedResponse):
    from ..pld import loss as L
    p, k = m.noise_parameter, float(m.k)
    eps = m.eps0
    if eps == 0.0:                       # p = 1: the output ignores the input
        return L.LossDistribution(np.zeros(1), np.ones(1), np.ones(1), symmetric=True,
                                  name=f"kary_rr({m.k}, {p:g})")
    a, b = (1.0 - p) + p / k, p / k
    loss, pm, qm = [eps, -eps], [a, b], [b, a]
    if m.k > 2:
        c = p * (k - 2.0) / k
        loss, pm, qm = loss + [0.0], pm + [c], qm + [c]
    la, lp, lq = np.array(loss), np.array(pm), np.array(qm)
    mean = float(np.sum(lp * la))
    var = float(np.sum(lp * (la - mean) ** 2))
    return L.LossDistribution(la, lp, lq, symmetric=True, mean=mean, var=var,
                              name=f"kary_rr({m.k}, {p:g})")


def _rows(m: KaryRandomizedResponse, eps, upper: bool):
    """H_{e^eps}(P || Q) = (a - e^eps b)_+ = (a + b) RR_eps0(eps) for eps >= 0 (the zero-loss
    mass c adds nothing, and b <= a): the randomized-response curve of eps0 (rounded up for the
    upper row, down for the lower one; the curve grows with eps0) times the mass a + b =
    (1 - p) + 2p/k off the zero-loss outcomes, a sum of two non-negative terms (2 ulps). Both
    orders are this curve (the pair is symmetric)."""
    from ..profiles.closed_forms import rr_log_profile
    from ..profiles.numerics import pad_down, pad_up
    p, k = m.noise_parameter, float(m.k)
    e0 = m.eps0 if upper else kary_epsilon(p, m.k, up=False)
    log_s = math.log((1.0 - p) + 2.0 * p / k)
    v = log_s + rr_log_profile(e0, np.asarray(eps, dtype=float), upper=upper)
    row = pad_up(v) if upper else pad_down(v)
    return np.stack([row, row])


def _group(m, k, eps):
    """k records change the statistic from one value to another as one does: the same pair."""
    row = _rows(m, np.asarray(eps, dtype=float), True)[0]
    return np.broadcast_to(row, np.broadcast_shapes(np.shape(k), np.shape(eps))).copy()


def _words(words, relation):
    k = words.get("k", V.integer, low=2, required=True)
    key = words.one_of("noise_parameter", "epsilon")
    if key == "noise_parameter":
        p = words.get("noise_parameter", V.probability, low_open=True)
        return KaryRandomizedResponse(k, p, relation=relation), {"k": k, "noise_parameter": p}
    e = words.get("epsilon", V.nonnegative)
    try:
        return KaryRandomizedResponse.from_epsilon(e, k, relation=relation), \
            {"k": k, "epsilon": e}
    except ValueError as err:
        words.fail("epsilon", str(err))


def _to_event(m: KaryRandomizedResponse):
    """RandomizedResponseDpEvent(noise_parameter = p, num_buckets = k), which dp-accounting
    accounts under REPLACE_ONE (read back as substitution)."""
    from dp_accounting import dp_event
    return dp_event.RandomizedResponseDpEvent(m.noise_parameter, m.k)


declare(KaryRandomizedResponse, Family(
    "KaryRandomizedResponse", loss=_loss,
    group=lambda m, k: m,
    profile=ProfileHooks(pair=lambda m, eps: _rows(m, eps, True),
                         lower=lambda m, eps: _rows(m, eps, False), group=_group,
                         symmetric=lambda m: True,
                         source="the exact three-outcome pair of k-ary randomized response "
                                "(Balle, Barthe & Gaboardi 2018, Sec. 2, privacy profile)"),
    word="kary_randomized_response", keys=("k", "noise_parameter", "epsilon"),
    from_words=_words, to_event=_to_event,
    example=lambda rel: KaryRandomizedResponse(5, 0.4, relation=rel),
    describe=lambda m: f"k-ary randomized response, k = {m.k}, noise parameter "
                       f"{m.noise_parameter:g}"))
