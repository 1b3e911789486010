"""Sampling schemes: which neighbouring relation each needs inside and gives outside.

| scheme                         | inner mechanism's relation | subsampled guarantee's relation |
|--------------------------------|----------------------------|---------------------------------|
| Poisson(rate)                  | add/remove                 | add/remove    (Steinke 2022, Thm 34, Balle et al. 2018, Thm 8)   |
| Poisson(rate, SUBSTITUTION, population=n) | substitution    | substitution  (Balle et al. 2018, Thm 14, profiles)    |
| WithoutReplacement(m, n)       | substitution               | substitution  (Wang et al. 2019, Thm 9/19, Balle et al. 2018, Thm 9) |
| WithReplacement(m, n)          | substitution               | substitution  (Balle et al. 2018, Thm 10, profiles)    |
| WithReplacement(m, n, outer=ADD_REMOVE) | substitution      | add/remove    (Balle et al. 2018, Thm 11, profiles)    |
| TruncatedPoisson(q, B, n)      | add/remove (Gaussian sum)  | add/remove    (dpamp.amplification.truncation) |
| RandomAllocation(k, t)         | add/remove                 | add/remove    (FS25a, FS25b: one epoch) |
| Shuffled(batch_size, dataset_size) | relation (default add/remove) | the same (one epoch)      |

Balle et al. 2018, Thm 14 depends on the dataset size n (datasets have equal sizes under
substitution): with ``population`` it applies; without it the dataset may hold one record, and the
profile is the worst case of that class, q delta(eps) (joint convexity; attained, so the bracket is
tight); Balle et al. 2018, Thm 11 bounds datasets of size n (either member of a pair) and needs none
of the inner mechanism's add/remove behaviour.

RandomAllocation and Shuffled describe one *epoch* of t steps, not one step: ``mech.subsample``
returns :class:`~dpamp.mechanisms.allocated.Allocated`, and ``* epochs`` composes epochs.
Random allocation (V. Feldman, M. Shenfeld, *Privacy amplification by random allocation*,
arXiv:2502.08202, "FS25a"; *Efficient privacy loss accounting for subsampling and random
allocation*, arXiv:2602.17284, "FS25b") compares the record present (in a uniformly random
k-subset of the t steps) with the record absent: the add/remove relation inside (each step's
mechanism sees a dataset with or without the record) and outside.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from . import validate as V
from .relations import ADD_REMOVE, SUBSTITUTION, Relation, as_relation

if TYPE_CHECKING:
    pass


def clip_sensitivity(relation: Relation) -> float:
    """Sensitivity of a sum of records clipped to norm 1 (DP-SGD's noise multiplier is
    relative to it): 1 under add/remove (one record more or less), 2 under substitution (one
    record replaced moves the sum by up to twice the clipping norm)."""
    return 1.0 if as_relation(relation) is ADD_REMOVE else 2.0


def relation_error(scheme, mechanism, needed: Relation) -> ValueError:
    if needed is SUBSTITUTION:
        how = ("restate the mechanism under substitution: an add/remove sensitivity s is at "
               "most 2s under substitution (e.g. Gaussian(sigma, sensitivity=2*s, "
               "relation=dp.SUBSTITUTION)), or use Poisson sampling, which works with add/remove")
    else:
        how = ("restate the mechanism under add/remove (for a sum or mean of clipped records "
               "the add/remove sensitivity equals the clipping norm), or use "
               "WithoutReplacement / Poisson(rate, relation=dp.SUBSTITUTION)")
    return ValueError(f"{scheme!r} needs a mechanism under the {needed} relation, "
                      f"but {mechanism!r} is under {mechanism.relation}: {how}")


class SamplingScheme:
    """A sampling scheme: the relation it ``needs`` of the mechanism it subsamples and the one
    it ``gives``, its ``rate``, and its words (``describe``). ``per_epoch``: it draws a whole
    epoch at once (random allocation, shuffling), so ``mechanism.subsample(scheme)`` is one
    epoch (:class:`~dpamp.mechanisms.allocated.Allocated`), not one step
    (:class:`~dpamp.mechanisms.subsampled.Subsampled`). How it amplifies each representation
    is declared in :mod:`dpamp.families.subsampling` (the representations live above this
    layer)."""

    if TYPE_CHECKING:
        # read-only in every scheme: a property, a class constant or a frozen field
        @property
        def needs(self) -> Relation: ...
        @property
        def gives(self) -> Relation: ...
        @property
        def rate(self) -> float: ...
    per_epoch = False

    def describe(self) -> str:
        return repr(self)


@dataclasses.dataclass(frozen=True)
class Poisson(SamplingScheme):
    """Each record enters the sample independently with probability ``rate``.

    Default relation add/remove (the inner and the outer relation are the same). Under
    substitution the amplified profile (Balle et al. 2018, Thm 14) depends on the dataset size: pass
    ``population=n`` to enable it (ignored under add/remove); without it the answer is the
    worst case over dataset sizes (one record: q delta(eps), no amplification of eps)."""

    rate: float
    relation: Relation = ADD_REMOVE
    population: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "rate", V.probability("rate", self.rate, low_open=True))
        object.__setattr__(self, "relation", as_relation(self.relation))
        if self.population is not None:
            object.__setattr__(self, "population",
                               V.integer("population", self.population, low=1))

    @property
    def needs(self) -> Relation:
        return self.relation

    @property
    def gives(self) -> Relation:
        return self.relation

    def describe(self) -> str:
        return f"Poisson sample, rate {self.rate:.6g}"


@dataclasses.dataclass(frozen=True)
class TruncatedPoisson(SamplingScheme):
    """Poisson sampling at ``rate`` q over a dataset of ``dataset_size`` n records, the batch
    then cut to at most ``max_batch_size`` B records (a uniformly random B-subset of the sample
    when it has more): fixed-memory DP-SGD, dp-accounting's
    ``TruncatedSubsampledGaussianDpEvent(n, q, B, noise_multiplier)``.

    Add/remove inside and outside. ``dataset_size`` is the size of the *larger* dataset of a
    neighbouring pair (the differing record and n - 1 others), as in dp-accounting: for a
    training set of N records the pairs that remove a record have n = N, those that add one
    n = N + 1. How it amplifies (a Gaussian sum only) and why:
    :mod:`dpamp.amplification.truncation`. B >= n is plain Poisson sampling."""

    rate: float
    max_batch_size: int
    dataset_size: int
    needs = ADD_REMOVE
    gives = ADD_REMOVE

    def __post_init__(self):
        object.__setattr__(self, "rate", V.probability("rate", self.rate, low_open=True))
        object.__setattr__(self, "max_batch_size",
                           V.integer("max_batch_size", self.max_batch_size, low=1))
        object.__setattr__(self, "dataset_size",
                           V.integer("dataset_size", self.dataset_size, low=1))

    @property
    def truncates(self) -> bool:
        """Whether a batch can exceed B (else this is plain Poisson sampling)."""
        return self.max_batch_size < self.dataset_size

    def describe(self) -> str:
        return (f"truncated Poisson sample, rate {self.rate:.6g}, at most "
                f"{self.max_batch_size} of {self.dataset_size} records")


@dataclasses.dataclass(frozen=True)
class WithoutReplacement(SamplingScheme):
    """A uniformly random subset of exactly ``batch`` of the ``population`` records.

    Substitution relation inside and outside; rate gamma = batch / population."""

    batch: int
    population: int
    needs = SUBSTITUTION
    gives = SUBSTITUTION

    def __post_init__(self):
        object.__setattr__(self, "population", V.integer("population", self.population, low=1))
        object.__setattr__(self, "batch",
                           V.integer("batch", self.batch, low=1, high=self.population))

    @property
    def rate(self) -> float:
        return self.batch / self.population

    def describe(self) -> str:
        return f"{self.batch} of {self.population} without replacement"


@dataclasses.dataclass(frozen=True)
class WithReplacement(SamplingScheme):
    """``batch`` records drawn independently and uniformly with replacement (a multiset).

    The inner mechanism is under substitution (on multisets of size ``batch``). The outer
    relation is substitution by default (Balle et al. 2018, Thm 10); ``outer=dp.ADD_REMOVE`` selects
    the hybrid of Balle et al. 2018, Thm 11: add/remove between datasets one of which has
    ``population`` records. Accounted through privacy profiles."""

    batch: int
    population: int
    outer: Relation = SUBSTITUTION
    needs = SUBSTITUTION

    def __post_init__(self):
        object.__setattr__(self, "population", V.integer("population", self.population, low=1))
        object.__setattr__(self, "batch", V.integer("batch", self.batch, low=1))
        try:
            object.__setattr__(self, "outer", as_relation(self.outer))
        except ValueError:
            raise ValueError("outer must be dp.ADD_REMOVE or dp.SUBSTITUTION, the relation of "
                             f"the subsampled guarantee (got {self.outer!r})") from None

    @property
    def gives(self) -> Relation:
        return self.outer

    @property
    def rate(self) -> float:
        return self.batch / self.population

    def describe(self) -> str:
        return f"{self.batch} of {self.population} with replacement"


@dataclasses.dataclass(frozen=True)
class RandomAllocation(SamplingScheme):
    """Random k-out-of-t allocation: each record takes part in exactly ``k`` of the ``t`` steps
    of an epoch, a uniformly random k-subset, independently of the other records (k = 1: the
    "balls-in-bins" sampler, each record in one uniformly random batch per epoch).

    Add/remove inside and outside (FS25a Sec. 2: the record present in its k steps vs absent).
    ``mech.subsample(RandomAllocation(k, t))`` is one epoch of t steps; rate k/t is the expected
    share of steps a record takes part in."""

    k: int
    t: int
    needs = ADD_REMOVE
    gives = ADD_REMOVE
    per_epoch = True

    def __post_init__(self):
        object.__setattr__(self, "t", V.integer("t", self.t, low=1))
        object.__setattr__(self, "k", V.integer("k", self.k, low=1, high=self.t))

    @property
    def rate(self) -> float:
        return self.k / self.t

    @property
    def steps(self) -> int:
        return self.t

    def describe(self) -> str:
        return f"random allocation, {self.k} of {self.t} steps per record"


@dataclasses.dataclass(frozen=True)
class Shuffled(SamplingScheme):
    """Fixed-size batches of a reshuffled dataset: each epoch permutes the ``dataset_size``
    records uniformly at random and cuts them into t = dataset_size // batch_size batches of
    ``batch_size`` (the remainder is dropped), so every record is used at most once per epoch
    (exactly once when batch_size divides dataset_size).

    ``relation`` (default add/remove) is the neighbouring relation the inner mechanism is stated
    under and the guarantee is given under; which bounds apply under which relation is decided
    by the accounting (dpamp.amplification.allocation.shuffle). One epoch of t steps."""

    batch_size: int
    dataset_size: int
    relation: Relation = ADD_REMOVE
    per_epoch = True

    def __post_init__(self):
        object.__setattr__(self, "dataset_size",
                           V.integer("dataset_size", self.dataset_size, low=1))
        object.__setattr__(self, "batch_size",
                           V.integer("batch_size", self.batch_size, low=1,
                                     high=self.dataset_size))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def needs(self) -> Relation:
        return self.relation

    @property
    def gives(self) -> Relation:
        return self.relation

    @property
    def rate(self) -> float:
        return self.batch_size / self.dataset_size

    @property
    def steps(self) -> int:
        return self.dataset_size // self.batch_size

    def describe(self) -> str:
        return f"shuffled batches of {self.batch_size} of {self.dataset_size}"

