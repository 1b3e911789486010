"""Participation schemas of a matrix mechanism: which steps a record may enter.

- :class:`SingleEpoch`: each record in at most one step (one pass, no sampling).
- :class:`MinSeparation`: "(k, b)-participation" (Choquette-Choo, McMahan, Rush & Thakurta,
  "Multi-epoch matrix factorization mechanisms for private machine learning", ICML 2023;
  b-min-separation of Choquette-Choo et al. NeurIPS 2023): at most k steps, any two at least
  b apart. Chosen by an adversary (no sampling): the worst pattern counts.
- :class:`CyclicPoisson`: the records split into ``partitions`` fixed groups, cycled (step t
  uses group t mod p), each step a Poisson sample of rate q of its group (Choquette-Choo,
  Ganesh, McKenna, McMahan, Rush, Thakurta & Xu, "(Amplified) banded matrix factorization: a
  unified approach to private training", NeurIPS 2023). ``dp.Poisson(q)`` as a participation is
  the one-group case (every step samples the whole data set).
- :class:`BallsInBins`: the steps split into epochs of ``bins`` steps, and in each epoch every
  record joins one step drawn uniformly, a fresh draw every epoch (random allocation of one
  step per epoch; Feldman & Shenfeld 2025).
- :class:`MinSepSampling`: b-min-separation sampling (Dong & Ganesh, arXiv 2602.09338;
  jax_privacy's ``BMinSepSampling``): at each step a record not taken in the previous b - 1
  steps is taken with probability p, independently.
- :class:`FixedBins`: every record draws one of ``bins`` bins once and enters every step of
  it (steps j, j + bins, ...): balls in bins as Choquette-Choo, Ganesh, Haque, Steinke &
  Thakurta, "Near exact privacy amplification for matrix mechanisms", ICLR 2025, and
  jax_privacy's ``BallsInBinsSampling(iterations, cycle_length)`` define it.

Each schema gives the worst-case (adversarial) pattern set it is contained in,
:meth:`worst_case` -> (k, b): the sensitivity of that set bounds the schema without
amplification (every sampled pattern is one of them; the mixture over patterns is bounded by
its worst member, joint convexity of the hockey-stick divergence).
"""
from __future__ import annotations

import dataclasses
import math

from ..core import validate as V

__all__ = ["Participation", "SingleEpoch", "MinSeparation", "CyclicPoisson", "BallsInBins",
           "FixedBins", "MinSepSampling"]


class Participation:
    """Base of the participation schemas; subclasses are frozen dataclasses."""

    #: the schema samples (amplification may apply)
    sampled: bool = False

    def worst_case(self, n: int) -> tuple[int, int]:  # pragma: no cover - abstract
        """(k, b): at most k participations, min separation b, containing every pattern the
        schema can draw in ``n`` steps."""
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class SingleEpoch(Participation):
    """Each record enters at most one step."""

    def worst_case(self, n: int) -> tuple[int, int]:
        return 1, max(int(n), 1)

    def describe(self) -> str:
        return "single epoch (each record in at most one step)"


@dataclasses.dataclass(frozen=True)
class MinSeparation(Participation):
    """(k, b)-participation: at most ``participations`` k steps per record, any two at least
    ``separation`` b steps apart (b = 1: any k steps)."""

    participations: int
    separation: int

    def __post_init__(self):
        object.__setattr__(self, "participations",
                           V.integer("participations", self.participations, low=1))
        object.__setattr__(self, "separation",
                           V.integer("separation", self.separation, low=1))

    def worst_case(self, n: int) -> tuple[int, int]:
        return min(self.participations, -(-int(n) // self.separation)), self.separation

    def describe(self) -> str:
        return (f"(k, b)-participation: at most {self.participations} steps per record, "
                f"at least {self.separation} apart")


@dataclasses.dataclass(frozen=True)
class CyclicPoisson(Participation):
    """``partitions`` fixed groups of records cycled over the steps, each step a Poisson sample
    of rate ``sampling_prob`` of its group."""

    sampling_prob: float
    partitions: int = 1
    sampled = True

    def __post_init__(self):
        object.__setattr__(self, "sampling_prob",
                           V.probability("sampling_prob", self.sampling_prob, low_open=True))
        object.__setattr__(self, "partitions", V.integer("partitions", self.partitions, low=1))

    def worst_case(self, n: int) -> tuple[int, int]:
        return -(-int(n) // self.partitions), self.partitions

    def rounds(self, n: int) -> int:
        """Steps of the busiest group: ceil(n / partitions)."""
        return -(-int(n) // self.partitions)

    def describe(self) -> str:
        groups = "the whole data set" if self.partitions == 1 else \
            f"{self.partitions} groups cycled"
        return f"cyclic Poisson: {groups}, each step samples at rate {self.sampling_prob:.6g}"


@dataclasses.dataclass(frozen=True)
class BallsInBins(Participation):
    """Epochs of ``bins`` steps; in each, every record joins one step drawn uniformly (a fresh
    draw every epoch; :class:`FixedBins` keeps one draw for the whole run)."""

    bins: int
    sampled = True

    def __post_init__(self):
        object.__setattr__(self, "bins", V.integer("bins", self.bins, low=1))

    def worst_case(self, n: int) -> tuple[int, int]:
        # one step per epoch: consecutive epochs' steps may be adjacent (separation 1)
        return math.ceil(int(n) / self.bins), 1

    def describe(self) -> str:
        return (f"balls in bins redrawn every epoch: each record in one uniformly drawn step "
                f"of each {self.bins}")


@dataclasses.dataclass(frozen=True)
class FixedBins(Participation):
    """Every record draws a bin j of ``bins`` uniformly once and enters steps j, j + bins, ...
    (jax_privacy's ``BallsInBinsSampling`` with ``cycle_length`` = bins)."""

    bins: int
    sampled = True

    def __post_init__(self):
        object.__setattr__(self, "bins", V.integer("bins", self.bins, low=1))

    def worst_case(self, n: int) -> tuple[int, int]:
        # the steps of one bin: exactly ``bins`` apart
        return math.ceil(int(n) / self.bins), self.bins

    def describe(self) -> str:
        return (f"balls in bins drawn once: each record in every step of one of {self.bins} "
                f"bins drawn uniformly (steps j, j + {self.bins}, ...)")


@dataclasses.dataclass(frozen=True)
class MinSepSampling(Participation):
    """b-min-separation sampling: at each step, a record not taken in the previous
    ``min_separation`` - 1 steps is taken with probability ``sampling_prob``, independently of
    the others; no batch truncation. ``warm_start``: each record's state at step 0 drawn from
    the process's stationary law (jax_privacy's ``warm_start``) instead of every record
    eligible; dpamp's bounds hold for any initial state, so they do not change."""

    sampling_prob: float
    min_separation: int
    warm_start: bool = False
    sampled = True

    def __post_init__(self):
        object.__setattr__(self, "sampling_prob",
                           V.probability("sampling_prob", self.sampling_prob, low_open=True))
        object.__setattr__(self, "min_separation",
                           V.integer("min_separation", self.min_separation, low=1))
        if not isinstance(self.warm_start, bool):
            raise ValueError(f"warm_start must be True or False (got {self.warm_start!r})")

    def worst_case(self, n: int) -> tuple[int, int]:
        return math.ceil(int(n) / self.min_separation), self.min_separation

    def describe(self) -> str:
        warm = ", warm start" if self.warm_start else ""
        return (f"{self.min_separation}-min-separation sampling: each step takes a record not "
                f"taken in the previous {self.min_separation - 1} with probability "
                f"{self.sampling_prob:.6g}{warm}")


def as_participation(p) -> Participation:
    """A schema as given; ``dp.Poisson(q)`` (add/remove) is :class:`CyclicPoisson` (q, 1)."""
    if isinstance(p, Participation):
        return p
    from ..core.sampling import Poisson
    if isinstance(p, Poisson):
        from ..core.relations import ADD_REMOVE
        if p.population is not None or p.relation is not ADD_REMOVE:
            raise ValueError("participation=dp.Poisson(q) is the add/remove Poisson sample "
                             "of every step: no population, no other relation")
        return CyclicPoisson(p.rate, 1)
    raise ValueError(f"participation must be dp.SingleEpoch(), dp.MinSeparation(k, b), "
                     f"dp.CyclicPoisson(q, partitions), dp.BallsInBins(bins), "
                     f"dp.FixedBins(bins), dp.MinSepSampling(q, b) or dp.Poisson(q) "
                     f"(got {p!r})")
