"""Declarations of the selection mechanisms (:mod:`dpamp.mechanisms.selection`).

* ExponentialMechanism and ReportNoisyMax with Gumbel noise: eps-bounded-range. Profile of one
  run exact (the supremum over the generalized randomized-response pairs, closed form); its
  lower rows are those of one actual pair, t = eps/2 (two candidates whose utilities swap:
  randomized response with eps/2), so the PLD built from the profile (Balle et al. 2018) brackets
  any composition; rho = eps^2 / 8 (Cesar & Rogers 2021, Lemmas 3.2 and 3.4); declared
  ``bounded_range`` = eps, so the ``bounded-range`` method composes them optimally.
* PermuteAndFlip and ReportNoisyMax with exponential noise: eps-DP, accounted with the
  randomized-response pair of eps (which dominates every eps-DP mechanism); lower rows those
  of the randomized-response pair with eps_PF = log(2 e^{eps/2} - 1) that permute-and-flip
  attains (two candidates whose utilities swap); rho = eps^2 / 2 from the pure epsilon.

dp-accounting 0.6 has no event for these mechanisms (``event`` is None).
"""
from __future__ import annotations

import numpy as np

from ..core import validate as V
from ..core.rounding import ulps_up, weighted_sum_up
from ..mechanisms.family import Family, ProfileHooks, Rep, Support, declare
from ..mechanisms.selection import (NOISES, ExponentialMechanism, PermuteAndFlip,
                                    ReportNoisyMax, pf_pair_epsilon)

_BR_SOURCE = ("Dong, Durfee & Rogers 2020, Sec. 4 (bounded range: sup over the generalized "
              "randomized-response pairs); lower: the pair t = eps/2")
_PF_SOURCE = ("eps-DP (McKenna & Sheldon 2020, Thm 1): randomized response with eps; lower: "
              "the pair permute-and-flip attains, randomized response with log(2e^{eps/2} - 1)")


def _bounded(m) -> bool:
    """Whether the instance is eps-bounded-range (its own declaration, ``bounded_range``)."""
    return getattr(m, "bounded_range", None) is not None


def _rows(v):
    return np.stack([v, v])


def _pair(m, eps):
    from ..profiles.closed_forms import rr_log_profile
    from ..theorems.bounded_range import envelope_log_profile
    if _bounded(m):
        return _rows(envelope_log_profile(m.eps0, eps, upper=True))
    return _rows(rr_log_profile(m.eps0, eps, upper=True))


def _lower(m, eps):
    from ..profiles.closed_forms import rr_log_profile
    e0 = 0.5 * m.eps0 if _bounded(m) else pf_pair_epsilon(m.eps0)
    return _rows(rr_log_profile(e0, eps, upper=False))


def _group(m, k, eps):
    """k records move every utility by at most k Delta: the same mechanism with k eps."""
    from ..profiles.closed_forms import rr_log_profile
    from ..theorems.bounded_range import envelope_log_profile
    k = np.asarray(k, dtype=float)
    e0 = ulps_up(k * m.eps0, 1)
    if _bounded(m):
        return np.vectorize(lambda e, x: float(envelope_log_profile(e, x)))(e0, eps)
    return rr_log_profile(e0, eps, upper=True)


def _has(m, rep: Rep) -> Support | None:
    """The PLD is that of the privacy profile (Balle et al. 2018), whose lower rows are an actual
    pair."""
    return Support.yes() if rep is Rep.LOSS else None


_HOOKS = ProfileHooks(pair=_pair, lower=_lower, group=_group, symmetric=lambda m: True,
                      source=_BR_SOURCE)
_PF_HOOKS = ProfileHooks(pair=_pair, lower=_lower, group=_group, symmetric=lambda m: True,
                         source=_PF_SOURCE)


def _br_rho(m) -> float | None:
    """Cesar & Rogers 2021: eps-BR implies eps^2/8-zCDP (None: derived from the pure eps)."""
    return ulps_up(m.eps0 * m.eps0 / 8.0, 2) if _bounded(m) else None


def _epsilon_words(cls):
    def read(words, relation):
        e = words.get("epsilon", V.positive, required=True)
        return cls(e, relation=relation), {"epsilon": e}
    return read


def _noise(name, value):
    if value not in NOISES:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, NOISES))} "
                         f"(got {value!r})")
    return value


def _rnm_words(words, relation):
    e = words.get("epsilon", V.positive, required=True)
    noise = words.get("noise", _noise) if words.has("noise") else "gumbel"
    return ReportNoisyMax(e, noise, relation=relation), {"epsilon": e, "noise": noise}


def _group_mech(m, k: int):
    return m.with_epsilon(weighted_sum_up([(k, m.eps0)]))


declare(ExponentialMechanism, Family(
    "ExponentialMechanism", profile=_HOOKS, has=_has, zcdp=_br_rho, group=_group_mech,
    bounded_range=lambda m: m.bounded_range,
    word="exponential_mechanism", keys=("epsilon",),
    from_words=_epsilon_words(ExponentialMechanism),
    example=lambda rel: ExponentialMechanism(1.0, relation=rel),
    describe=lambda m: f"exponential mechanism, ε = {m.eps0:g} (ε-bounded range)"))
declare(ReportNoisyMax, Family(
    "ReportNoisyMax", profile=ProfileHooks(
        pair=_pair, lower=_lower, group=_group, symmetric=lambda m: True,
        source=f"Gumbel noise: {_BR_SOURCE}; exponential noise: {_PF_SOURCE}"),
    has=_has, zcdp=_br_rho, group=_group_mech, bounded_range=lambda m: m.bounded_range,
    word="report_noisy_max", keys=("epsilon", "noise"), from_words=_rnm_words,
    example=lambda rel: ReportNoisyMax(1.0, relation=rel),
    describe=lambda m: f"report-noisy-max, {m.noise} noise, ε = {m.eps0:g}" + (
        " (ε-bounded range)" if _bounded(m) else "")))
declare(PermuteAndFlip, Family(
    "PermuteAndFlip", profile=_PF_HOOKS, has=_has, group=_group_mech,
    word="permute_and_flip", keys=("epsilon",), from_words=_epsilon_words(PermuteAndFlip),
    example=lambda rel: PermuteAndFlip(1.0, relation=rel),
    describe=lambda m: f"permute-and-flip, ε = {m.eps0:g} (ε-DP)"))
