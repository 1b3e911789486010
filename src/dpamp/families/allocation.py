"""The epoch family (:class:`~dpamp.mechanisms.allocated.Allocated`) and how the two epoch
samplers account for one epoch: random allocation (k of t steps per record; FS25a for the RDP
of the Gaussian, FS25b for certified PLDs, dpamp.amplification.allocation) and shuffled
fixed-size batches (a dominating step, dpamp.amplification.allocation.shuffle)."""
from __future__ import annotations

import math

from ..core.rounding import weighted_sum_up
from ..core.sampling import RandomAllocation, Shuffled
from ..mechanisms.allocated import Allocated
from ..mechanisms.family import (EpochAmplification, Family, Rep, Support, amplification_of,
                                 declare, declare_scheme, describe, family_of,
                                 supports_rep)


def _allocation_rdp(alloc, alpha):
    from ..amplification.allocation.rdp import allocation_rdp
    return allocation_rdp(alloc.base, alloc.scheme.k, alloc.scheme.t, alpha)


def _allocation_pure(alloc) -> float:
    e0 = alloc.base.pure_epsilon()
    if math.isinf(e0):
        return math.inf
    return weighted_sum_up([(alloc.scheme.k, e0)])


def _allocation_parts(alloc):
    from ..amplification.allocation.pld import allocation_parts
    return allocation_parts(alloc.base, alloc.scheme.k, alloc.scheme.t)


def _allocation_has(alloc, rep: Rep) -> Support | None:
    if rep is Rep.RDP:
        fam = family_of(alloc.base)
        if fam is not None and fam.gaussian_mu is not None:
            return Support.yes()
        return Support.no("the RDP of random allocation is known for the Gaussian only "
                          "(Feldman & Shenfeld 2025); use the PLD method")
    if rep is Rep.LOSS:
        # each epoch's PLD is built from the base's own exact pair (its family's loss), not
        # from a PLD a profile gives (the selection mechanisms')
        fam = family_of(alloc.base)
        has = supports_rep(alloc.base, Rep.LOSS)
        if has and fam is not None and fam.loss is None and fam.loss_parts is None:
            return Support.no(f"random allocation needs its base's exact privacy-loss pair; "
                              f"{fam.name} has a PLD from its privacy profile only")
        return has
    if rep is Rep.PROFILE:
        return Support.no("random allocation has no privacy-profile pair in dpamp; its PLD "
                          "gives the profile")
    return None


def _dominating_step(alloc):
    from ..amplification.allocation.shuffle import dominating_step
    return dominating_step(alloc.base, alloc.scheme)


def _shuffled_parts(alloc):
    from ..pld.sources import NotAttained, loss_distribution
    return [(NotAttained(loss_distribution(_dominating_step(alloc))), 1)]


def _shuffled_has(alloc, rep: Rep) -> Support | None:
    from ..core.relations import ADD_REMOVE
    base = alloc.base
    if alloc.scheme.relation is ADD_REMOVE and rep in (Rep.LOSS, Rep.RDP) and \
            not hasattr(base, "sensitivity") and not math.isfinite(base.pure_epsilon()):
        return Support.no(f"{type(base).__name__} on shuffled batches under add/remove has no "
                          "dominating step (it needs a sensitivity or a pure epsilon); state "
                          "the plan under substitution")
    if rep in (Rep.LOSS, Rep.RDP):
        return supports_rep(alloc.base, rep)
    if rep is Rep.PROFILE:
        return Support.no("shuffled batches have no privacy-profile pair in dpamp; the PLD of "
                          "the dominating step gives the profile")
    return None


def _check_batches(scheme):
    from ..amplification.allocation.shuffle import check_batches
    check_batches(scheme)


declare_scheme(RandomAllocation, EpochAmplification(
    "RandomAllocation", rdp=_allocation_rdp, pure_epsilon=_allocation_pure,
    loss_parts=_allocation_parts, has=_allocation_has))
declare_scheme(Shuffled, EpochAmplification(
    "Shuffled", rdp=lambda alloc, alpha: _dominating_step(alloc).rdp(alpha),
    pure_epsilon=lambda alloc: _dominating_step(alloc).pure_epsilon(),
    loss_parts=_shuffled_parts, has=_shuffled_has, check=_check_batches,
    dominating_step=_dominating_step, reshuffles=True))


def _has(alloc, rep: Rep) -> Support | None:
    return amplification_of(alloc.scheme).has(alloc, rep)


declare(Allocated, Family(
    "Allocated", loss_parts=lambda alloc: amplification_of(alloc.scheme).loss_parts(alloc),
    has=_has, describe=lambda alloc: f"{describe(alloc.base)}, one epoch of "
                                     f"{alloc.scheme.describe()}"))
