"""Tree aggregation: one epoch of DP-FTRL (Kairouz, McMahan, Song, Thakkar, Thakurta & Xu 2021,
"Practical and private (deep) learning without sampling or shuffling", Sec. 4 and App. D).

The prefix sums of ``steps`` clipped gradient sums are released through the online binary tree
(Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011): every node is the sum over a
completed dyadic interval of steps, plus fresh N(0, z^2 C^2 I) noise (z the noise multiplier,
C the clipping norm), and the prefix sum at step s is the sum of the nodes of s's binary
decomposition, so only completed nodes are ever released. A record used at one step (each
record once in the epoch) enters the nodes of the intervals holding that step: one per level
h with 2^h <= steps, i.e. at most

    depth = floor(log2(steps)) + 1 = ceil(log2(steps + 1))  (``steps.bit_length()``)

nodes, each moved by at most C (add/remove) or 2C (substitution). The nodes are a Gaussian
mechanism on a vector query of L2 sensitivity c sqrt(depth), c = 1 or 2 (in units of C), so
the epoch is exactly the Gaussian mechanism with mu = c sqrt(depth) / z: the same pair
N(mu, 1) vs N(0, 1) for every representation (PLD, profile, RDP alpha mu^2 / 2), attained by
a record at a step that every level's node holds (step 1). This is dp-accounting's
``SingleEpochTreeAggregationDpEvent(z, steps)`` (its RDP accountant: alpha max_depth /
(2 z^2), max_depth = ceil(log2(steps + 1))). A tree that also released its unfinished nodes
(steps rounded up to a power of two) would reach ceil(log2 steps) + 1 nodes, one more unless
steps is a power of two: describe it with ``steps`` = that power of two.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.sampling import clip_sensitivity
from .base import Mechanism
from .gaussian import Gaussian

__all__ = ["TreeAggregation"]


@dataclasses.dataclass(frozen=True)
class TreeAggregation(Mechanism):
    """One epoch of tree aggregation (DP-FTRL) of ``steps`` steps with noise multiplier
    ``noise_multiplier`` z per tree node (noise std / clipping norm): the Gaussian mechanism
    with mu = c sqrt(depth) / z, depth = ``steps.bit_length()`` nodes a record reaches,
    c = 1 (add/remove) or 2 (substitution). Module docstring for the derivation."""

    noise_multiplier: float
    steps: int
    relation: Relation = ADD_REMOVE
    tight_rdp = True            # one pair of neighbours attains every order (a Gaussian)
    self_consistent_rdp = True  # Wang et al. 2019, Lemma 27

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier",
                           V.positive("noise_multiplier", self.noise_multiplier))
        object.__setattr__(self, "steps", V.integer("steps", self.steps, low=1))
        object.__setattr__(self, "relation", as_relation(self.relation))

    @property
    def depth(self) -> int:
        """Tree nodes a record reaches: floor(log2 steps) + 1 = ceil(log2(steps + 1))."""
        return int(self.steps).bit_length()

    @property
    def l2_sensitivity(self) -> float:
        """L2 sensitivity of the node vector in units of the clipping norm: c sqrt(depth).
        (Not named ``sensitivity``: the noise multiplier is per node, so the mechanism is not
        rescaled by changing it, as a Gaussian's sensitivity field would be.)"""
        return clip_sensitivity(self.relation) * math.sqrt(self.depth)

    @property
    def mu(self) -> float:
        return self.l2_sensitivity / self.noise_multiplier

    @property
    def rho(self) -> float:
        """zCDP rho = depth c^2 / (2 z^2) (as depth (c/z)^2 / 2: no sqrt rounding)."""
        r = clip_sensitivity(self.relation) / self.noise_multiplier
        return 0.5 * self.depth * r * r

    def gaussian(self) -> Gaussian:
        """The Gaussian mechanism it is: noise z on a query of sensitivity c sqrt(depth)."""
        return Gaussian(self.noise_multiplier, self.l2_sensitivity, relation=self.relation)

    def _rdp(self, alpha):
        with np.errstate(invalid="ignore"):
            out = alpha * self.rho
        return np.where(np.isinf(alpha), np.inf, out)
