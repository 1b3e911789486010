"""The discrete Gaussian mechanism's declaration (its description, RDP and truncation:
:mod:`dpamp.mechanisms.discrete_gaussian`).

Its pair has infinitely many atoms on a lattice of losses. The PLD is the truncated pair with
its tails charged (:func:`dpamp.pld.loss.truncated_atoms`): the outcomes of mass >= e^-700 as
atoms, a proven bound on the rest put at +inf (P) and -inf (Q), so the pessimistic side is an
upper bound and the optimistic one is charged that bound per step. The profile is the
hockey-stick curves of the same atoms (:func:`dpamp.profiles.divergence.sorted_pair_log_rows`):
the upper rows plus the tail bound (sum_{x not in S} (P(x) - e^eps Q(x))_+ <= P(S^c)), the lower
rows from the atoms alone (a restriction of the pair to S only lowers every hockey-stick term).
rho = Delta^2 / (2 sigma^2) (CKS20; derived in the mechanism's docstring)."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..core import validate as V
from ..core.rounding import ulps_up
from ..mechanisms.discrete_gaussian import DiscreteGaussian
from ..mechanisms.family import Family, ProfileHooks, Rep, Support, declare
from .base import sensitivity_group, shifted_group

#: outcomes of the truncated pair above which the PLD and the profile are refused (memory: a
#: few arrays of this length per query; sigma up to about 5e4)
MAX_ATOMS = 1 << 22


@functools.lru_cache(maxsize=64)          # (group profiles ask for many sensitivities)
def _pair(m: DiscreteGaussian):
    try:
        return m.lattice_pair(MAX_ATOMS)
    except ValueError as e:
        raise NotImplementedError(f"{e}; use the RDP or zCDP method") from None


def _has(m: DiscreteGaussian, rep: Rep) -> Support | None:
    if rep in (Rep.LOSS, Rep.PROFILE) and 75.0 * m.sigma + m.sensitivity > MAX_ATOMS:
        return Support.no(f"DiscreteGaussian with sigma = {m.sigma:g} has more than {MAX_ATOMS} "
                          "outcomes of mass above e^-700; use the RDP or zCDP method")
    return None


def _loss(m: DiscreteGaussian):
    from ..pld import loss as L
    _, loss, lp, lq, err, log_tail, step = _pair(m)
    tail = ulps_up(math.exp(log_tail), 2) + 5e-324
    # each mass to within its log error (up to ~1e-12 relative far out, where the exponent
    # nears 700), and each loss to a few ulps of it: the relative mass error charged
    rel = float(np.max(np.expm1(err) + 4 * 2.0 ** -52 * (np.abs(loss) + 1.0)))
    return L.truncated_atoms(loss, lp, lq, tail, tail, symmetric=True,
                             lattice=step, mass_rel_err=rel,
                             name=f"discrete_gaussian({m.sigma:g}, {m.sensitivity})")


def _rows(m: DiscreteGaussian, eps, upper: bool):
    from ..profiles.divergence import sorted_pair_log_rows
    from ..profiles.numerics import pad_up
    _, _, lp, lq, err, log_tail, _ = _pair(m)
    rows = sorted_pair_log_rows(lp, lq, err, eps, upper=upper)
    if upper:
        # the outcomes left out add at most their P-mass (Q-mass in the other order)
        rows = pad_up(np.logaddexp(rows, log_tail))
    return rows


def _words(words, relation):
    sigma = words.get("sigma", V.positive, required=True)
    d = words.get("sensitivity", V.integer, low=1) if words.has("sensitivity") else 1
    return DiscreteGaussian(sigma, d, relation=relation), {"sigma": sigma, "sensitivity": d}


def _from_event(event, relation, sensitivity):
    """dp-accounting's ``DiscreteGaussianDpEvent(sigma, sensitivity, dimension)`` (its main
    branch): univariate only (dimension 1); the multivariate discrete Gaussian is not a product
    of this one."""
    dim = getattr(event, "dimension", None)
    if dim != 1:
        raise ValueError(f"DiscreteGaussianDpEvent with dimension {dim}: dpamp's DiscreteGaussian "
                         "is univariate (dimension=1); a multivariate discrete Gaussian is not "
                         "accounted")
    sens = V.positive("sensitivity", event.sensitivity)
    if sens != int(sens):
        raise ValueError(f"DiscreteGaussianDpEvent sensitivity must be an integer (got {sens:g})")
    return DiscreteGaussian(V.positive("sigma", event.sigma), int(sens), relation=relation)


declare(DiscreteGaussian, Family(
    "DiscreteGaussian", loss=_loss, has=_has,
    profile=ProfileHooks(pair=lambda m, eps: _rows(m, eps, True),
                         lower=lambda m, eps: _rows(m, eps, False),
                         group=shifted_group(lambda m, eps: _rows(m, eps, True)),
                         symmetric=lambda m: True,
                         source="CKS20 (truncated pair, tails charged)"),
    zcdp=lambda m: ulps_up(m.rho, 4),
    group=sensitivity_group,
    word="discrete_gaussian", keys=("sigma", "sensitivity"), from_words=_words,
    event="DiscreteGaussianDpEvent", from_event=_from_event,
    example=lambda rel: DiscreteGaussian(2.0, relation=rel),
    describe=lambda m: f"discrete Gaussian, σ = {m.sigma:g}, integer sensitivity "
                       f"{m.sensitivity}"))
