"""The Skellam mechanism's declaration (its description, RDP and truncation:
:mod:`dpamp.mechanisms.skellam`).

As the discrete Gaussian's: the PLD is the truncated pair with its tails charged at +-inf
(:func:`dpamp.pld.loss.truncated_atoms`), its masses' assumed error (scipy's ``ive``) charged as a
relative mass error; the profile is the hockey-stick curves of the same atoms, the upper rows
plus the tail bound; the k-group is the pair shifted by k Delta. No zCDP rho is declared (the RDP
curve is used as it is); dp-accounting has no Skellam event."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..core import validate as V
from ..core.rounding import ulps_up
from ..mechanisms.family import Family, ProfileHooks, Rep, Support, declare
from ..mechanisms.skellam import Skellam
from .base import sensitivity_group, shifted_group

#: outcomes of the truncated pair above which the PLD and the profile are refused
MAX_ATOMS = 1 << 22


@functools.lru_cache(maxsize=64)          # (group profiles ask for many sensitivities)
def _pair(m: Skellam):
    try:
        return m.truncated_pair(MAX_ATOMS)
    except ValueError as e:
        raise NotImplementedError(f"{e}; use the RDP method") from None


def _has(m: Skellam, rep: Rep) -> Support | None:
    if rep in (Rep.LOSS, Rep.PROFILE) and 75.0 * math.sqrt(2.0 * m.mu) + m.sensitivity \
            > MAX_ATOMS:
        return Support.no(f"Skellam with mu = {m.mu:g} has more than {MAX_ATOMS} outcomes of "
                          "mass above e^-700; use the RDP method")
    return None


def _loss(m: Skellam):
    from ..pld import loss as L
    _, loss, lp, lq, err, log_tail, _ = _pair(m)
    tail = ulps_up(math.exp(log_tail), 2) + 5e-324
    keep = (lp >= L.LOG_NORMAL) & (lq >= L.LOG_NORMAL)
    # each mass to within e^err, each loss (a difference of two such logs) to within 2 err: the
    # pair at the stated losses with masses off by e^{3 err} - 1 at most
    e_max = float(np.max(err[keep])) if keep.any() else 0.0
    rel = math.expm1(3.0 * e_max) + 4 * 2.0 ** -52 * (float(np.max(np.abs(loss[keep]),
                                                             initial=0.0)) + 1.0)
    return L.truncated_atoms(loss, lp, lq, tail, tail, symmetric=True, mass_rel_err=rel,
                             name=f"skellam({m.mu:g}, {m.sensitivity})")


def _rows(m: Skellam, eps, upper: bool):
    from ..profiles.divergence import sorted_pair_log_rows
    from ..profiles.numerics import pad_up
    _, _, lp, lq, err, log_tail, _ = _pair(m)
    ok = np.isfinite(lp) & np.isfinite(lq)
    rows = sorted_pair_log_rows(lp[ok], lq[ok], err[ok], eps, upper=upper)
    if upper:
        # the outcomes left out (S^c, and those where one mass underflowed) add at most their
        # larger mass to either row
        extra = log_tail
        if not ok.all():
            extra = float(np.logaddexp(log_tail, np.logaddexp.reduce(np.maximum(lp, lq)[~ok])))
        rows = pad_up(np.logaddexp(rows, extra))
    return rows


def _words(words, relation):
    mu = words.get("mu", V.positive, required=True)
    d = words.get("sensitivity", V.integer, low=1) if words.has("sensitivity") else 1
    return Skellam(mu, d, relation=relation), {"mu": mu, "sensitivity": d}


declare(Skellam, Family(
    "Skellam", loss=_loss, has=_has,
    profile=ProfileHooks(pair=lambda m, eps: _rows(m, eps, True),
                         lower=lambda m, eps: _rows(m, eps, False),
                         group=shifted_group(lambda m, eps: _rows(m, eps, True)),
                         symmetric=lambda m: True,
                         source="AKL21 (truncated pair, tails charged)"),
    group=sensitivity_group,
    word="skellam", keys=("mu", "sensitivity"), from_words=_words,
    example=lambda rel: Skellam(2.0, relation=rel),
    describe=lambda m: f"Skellam, Poisson({m.mu:g}) - Poisson({m.mu:g}) (variance "
                       f"{2 * m.mu:g}), integer sensitivity {m.sensitivity}",
    why_not="Skellam declares no zCDP rho (its RDP curve is used as it is)"))
