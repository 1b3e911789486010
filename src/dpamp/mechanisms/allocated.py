"""One epoch of a mechanism under random allocation or shuffled fixed-size batches.

``Allocated(base, scheme)`` runs ``base`` at each of the t steps of an epoch on the batch that
``scheme`` (:class:`~dpamp.core.sampling.RandomAllocation` or
:class:`~dpamp.core.sampling.Shuffled`) assigns to it; ``Allocated * epochs`` composes epochs
(each epoch draws a fresh allocation, independently). Built by ``base.subsample(scheme)``.

Representations: the RDP curve of random allocation of the Gaussian
(:func:`dpamp.amplification.allocation.rdp.allocation_rdp`, FS25a) and certified privacy-loss
distributions for random allocation of any base with a PLD
(:mod:`dpamp.amplification.allocation.pld`, after FS25b).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.relations import Relation
from ..core.sampling import RandomAllocation, SamplingScheme, Shuffled
from .base import Mechanism


@dataclasses.dataclass(frozen=True)
class Allocated(Mechanism):
    """One epoch (t steps) of ``base`` under the sampling scheme ``scheme``."""

    base: Mechanism
    scheme: SamplingScheme

    def __post_init__(self):
        """The one validation path of ``base.subsample(scheme)`` and ``dp.from_json``."""
        from ..core.sampling import relation_error
        from .base import check_mechanism
        check_mechanism(self.base, "base")
        if not isinstance(self.scheme, (RandomAllocation, Shuffled)):
            raise ValueError("scheme must be dp.RandomAllocation or dp.Shuffled (an epoch "
                             f"sampler), got {type(self.scheme).__name__}")
        if self.base.relation is not self.scheme.needs:
            raise relation_error(self.scheme, self.base, self.scheme.needs)
        if isinstance(self.scheme, Shuffled):
            from ..amplification.allocation.shuffle import check_batches
            check_batches(self.scheme)

    @property
    def relation(self) -> Relation:  # type: ignore[override]
        return self.scheme.gives

    @property
    def steps(self) -> int:
        return self.scheme.steps

    @property
    def rate(self) -> float:
        return self.scheme.rate

    def _k_t(self):
        """(k, t) of the random allocation this epoch is (or is bounded by)."""
        if isinstance(self.scheme, RandomAllocation):
            return self.scheme.k, self.scheme.t
        raise NotImplementedError(
            f"{self!r}: shuffled batches are accounted by dpamp.amplification.allocation."
            "shuffle, not as a random allocation")

    def dominating_step(self) -> Mechanism:
        """Shuffled batches: one run of a mechanism that dominates the epoch (no amplification;
        :func:`dpamp.amplification.allocation.shuffle.dominating_step`)."""
        from ..amplification.allocation.shuffle import dominating_step
        return dominating_step(self.base, self.scheme)

    def _rdp(self, alpha):
        """RDP of one epoch: FS25a's exact integer-order remove-direction RDP and the add
        direction's bound, for the Gaussian (amplification.allocation.rdp), capped by the
        composition of the k steps a record takes part in. Shuffled batches: the RDP of the
        dominating step."""
        if isinstance(self.scheme, Shuffled):
            return self.dominating_step().rdp(alpha)
        k, t = self._k_t()
        from ..amplification.allocation.rdp import allocation_rdp
        return allocation_rdp(self.base, k, t, np.asarray(alpha, dtype=float))

    def pure_epsilon(self) -> float:
        """k times the base's pure epsilon (the record takes part in k steps; basic
        composition), rounded up; inf for shuffled batches under substitution is not claimed
        here either: a record is used at most once per epoch, so it is eps0 there."""
        if isinstance(self.scheme, Shuffled):
            return self.dominating_step().pure_epsilon()
        e0 = self.base.pure_epsilon()
        if math.isinf(e0):
            return math.inf
        if isinstance(self.scheme, RandomAllocation):
            from ..core.rounding import weighted_sum_up
            return weighted_sum_up([(self.scheme.k, e0)])
        return e0

    def pld_parts(self) -> list[tuple[object, int]]:
        """[(source, count)] for the PLD engine: see
        :func:`dpamp.amplification.allocation.pld.allocation_parts`; shuffled batches: the
        dominating step's."""
        if isinstance(self.scheme, Shuffled):
            from ..pld.sources import NotAttained, loss_distribution
            return [(NotAttained(loss_distribution(self.dominating_step())), 1)]
        k, t = self._k_t()
        from ..amplification.allocation.pld import allocation_parts
        return allocation_parts(self.base, k, t)

    def __repr__(self):
        s = self.scheme
        if isinstance(s, RandomAllocation):
            what = f"dp.RandomAllocation(k={s.k}, t={s.t})"
        else:
            what = f"dp.Shuffled(batch_size={s.batch_size}, dataset_size={s.dataset_size})"
        return f"{self.base!r}.subsample({what}) [one epoch, {self.relation}]"
