"""The discrete Laplace mechanism's declaration (its description and RDP:
:mod:`dpamp.mechanisms.discrete_laplace`).

Everything comes from its finite dominating pair (``DiscreteLaplace.log_atoms``): the PLD is
those Delta + 1 atoms (exact; the engine discretises them pessimistically and optimistically),
the profile is the pair's hockey-stick curves (:func:`dpamp.profiles.divergence.
finite_pair_log_rows`, exact up to rounding, so also a lower bound: the pair is attained), and
the sampling schemes amplify these like any other pair."""
from __future__ import annotations

import numpy as np

from ..core import validate as V
from ..mechanisms.discrete_laplace import DiscreteLaplace
from ..mechanisms.family import Family, ProfileHooks, declare
from .base import sensitivity_group

#: atoms of the pair above which the PLD and the profile are refused (memory: a few arrays
#: of this length per query)
MAX_ATOMS = 1 << 22


def _atoms(m: DiscreteLaplace):
    if m.sensitivity + 1 > MAX_ATOMS:
        raise NotImplementedError(f"DiscreteLaplace with sensitivity {m.sensitivity} has more "
                                  f"than {MAX_ATOMS} privacy-loss atoms; use the RDP method")
    return m.log_atoms()


def _loss(m: DiscreteLaplace):
    from ..pld import loss as L
    loss, lp, lq, _ = _atoms(m)
    # the masses directly, P_j = c r^j (P_0 = 1 / (1 + r), P_D = r^D / (1 + r)), c = (1 - r) /
    # (1 + r), r = e^-a: within (6 + a j) ulps, inside the margin the engine and the exact
    # atoms allow (e^(log c - a j) carried log c ~ log(a / 2)'s ulps as well, up to 3.7 times
    # that margin at a = 1e-14)
    a, d = m.a, m.sensitivity
    r = np.exp(-a * np.arange(d + 1, dtype=float))
    one_r = 1.0 + float(r[1]) if d >= 1 else 2.0
    p = (-np.expm1(-a) / one_r) * r
    p[0], p[-1] = 1.0 / one_r, float(r[-1]) / one_r
    if d == 0:  # pragma: no cover - sensitivity >= 1
        p[0] = 1.0
    p = np.where(np.isfinite(lp), p, 0.0)
    q = p[::-1].copy()
    mean = float(np.sum(p * loss))
    var = float(np.sum(p * (loss - mean) ** 2))
    return L.LossDistribution(loss, p, q, symmetric=True, mean=mean, var=var,
                              name=f"discrete_laplace({m.a:g}, {m.sensitivity})")


def _rows(m: DiscreteLaplace, eps, upper: bool):
    from ..profiles.divergence import finite_pair_log_rows
    _, lp, lq, err = _atoms(m)
    row = finite_pair_log_rows(lp, lq, err, eps, upper=upper)[0]
    return np.stack([row, row])     # the pair is symmetric: (Q, P) has the same curve


def _words(words, relation):
    a = words.get("a", V.positive, required=True)
    d = words.get("sensitivity", V.integer, low=1) if words.has("sensitivity") else 1
    return DiscreteLaplace(a, d, relation=relation), {"a": a, "sensitivity": d}


def _from_event(event, relation, sensitivity):
    return DiscreteLaplace(V.positive("noise_parameter", event.noise_parameter),
                           V.integer("sensitivity", event.sensitivity, low=1), relation=relation)


def _to_event(m: DiscreteLaplace):
    from dp_accounting import dp_event
    return dp_event.DiscreteLaplaceDpEvent(m.a, m.sensitivity)


declare(DiscreteLaplace, Family(
    "DiscreteLaplace", loss=_loss,
    group=sensitivity_group,
    profile=ProfileHooks(pair=lambda m, eps: _rows(m, eps, True),
                         lower=lambda m, eps: _rows(m, eps, False), symmetric=lambda m: True),
    word="discrete_laplace", keys=("a", "sensitivity"), from_words=_words,
    event="DiscreteLaplaceDpEvent", from_event=_from_event, to_event=_to_event,
    example=lambda rel: DiscreteLaplace(0.5, 2, relation=rel),
    describe=lambda m: f"discrete Laplace, a = {m.a:g}, integer sensitivity {m.sensitivity}"))
