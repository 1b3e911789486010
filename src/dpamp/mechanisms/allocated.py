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

import numpy as np

from ..core.relations import Relation
from ..core.sampling import SamplingScheme
from .base import Mechanism
from .family import Rep, amplification_of


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
        epoch = amplification_of(self.scheme)
        if not getattr(self.scheme, "per_epoch", False) or epoch is None:
            raise ValueError("scheme must be dp.RandomAllocation or dp.Shuffled (an epoch "
                             f"sampler), got {type(self.scheme).__name__}")
        if self.base.relation is not self.scheme.needs:
            raise relation_error(self.scheme, self.base, self.scheme.needs)
        if epoch.check is not None:
            epoch.check(self.scheme)

    @property
    def relation(self) -> Relation:  # type: ignore[override]  # a property over a field of Mechanism
        return self.scheme.gives

    @property
    def steps(self) -> int:
        return self.scheme.steps  # type: ignore[attr-defined]  # an epoch sampler (__post_init__)

    @property
    def rate(self) -> float:
        return self.scheme.rate

    def _epoch(self):
        return amplification_of(self.scheme)

    def dominating_step(self) -> Mechanism:
        """Shuffled batches: one run of a mechanism that dominates the epoch (no amplification;
        :func:`dpamp.amplification.allocation.shuffle.dominating_step`)."""
        step = self._epoch().dominating_step
        if step is None:
            raise NotImplementedError(f"{self!r}: only shuffled batches are accounted by a "
                                      "dominating step")
        return step(self)

    def has_rdp(self) -> bool:
        """As the scheme declares (random allocation: a Gaussian base; shuffled batches: the
        dominating step's)."""
        return bool(self._epoch().has(self, Rep.RDP))

    def _rdp(self, alpha):
        """RDP of one epoch, as the scheme declares it (dpamp.families.allocation): for random
        allocation of the Gaussian FS25a's exact integer-order remove-direction RDP and the add
        direction's bound, capped by the composition of the k steps a record takes part in;
        shuffled batches: the RDP of the dominating step."""
        return self._epoch().rdp(self, np.asarray(alpha, dtype=float))

    def pure_epsilon(self) -> float:
        """k times the base's pure epsilon (the record takes part in k steps; basic
        composition), rounded up; shuffled batches: a record is used at most once per epoch,
        so the dominating step's."""
        return self._epoch().pure_epsilon(self)

    def __repr__(self):
        s = self.scheme
        assert dataclasses.is_dataclass(s)      # every sampling scheme is a frozen dataclass
        args = ", ".join(f"{f.name}={getattr(s, f.name)!r}" for f in dataclasses.fields(s)
                         if f.name != "relation")
        return f"{self.base!r}.subsample(dp.{type(s).__name__}({args})) " \
            f"[one epoch, {self.relation}]"
