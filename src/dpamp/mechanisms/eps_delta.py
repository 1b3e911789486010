"""The worst-case (epsilon, delta)-DP mechanism (Steinke 2022, Corollary 24, footnote 16)."""
from __future__ import annotations

import dataclasses
import math

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from .base import Mechanism
from .randomized_response import rr_rdp


@dataclasses.dataclass(frozen=True, init=False)
class EpsDelta(Mechanism):
    """Any (epsilon, delta)-DP mechanism, represented by the worst case of Steinke 2022, Cor. 24:
    every (epsilon, delta)-DP pair is a post-processing of the pair whose privacy loss is +inf with
    probability delta, +epsilon with probability (1-delta) e^eps/(1+e^eps) and -epsilon with
    probability (1-delta)/(1+e^eps) (Steinke 2022, footnote 16, with the tightness errata).

    Its k-fold composition is exactly what the KOV formula (Steinke 2022, Sec. 7) evaluates; mixed
    compositions are accounted by basic/advanced composition (Steinke 2022, Thms 1, 22) or the PLD.

    No Rényi-DP curve when delta > 0 (the loss is infinite with positive probability, so every
    D_alpha is infinite): ``_rdp`` raises NotImplementedError and the RDP methods do not apply.
    With delta = 0 it is epsilon-DP and has the randomized-response RDP curve.
    Fields are stored as ``epsilon_`` / ``delta_`` because ``epsilon()`` / ``delta()`` are the
    query methods."""

    epsilon_: float
    delta_: float
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __init__(self, epsilon: float, delta: float, relation: Relation = ADD_REMOVE):
        object.__setattr__(self, "epsilon_", V.nonnegative("epsilon", epsilon))
        object.__setattr__(self, "delta_", V.real("delta", delta, low=0.0, high=1.0,
                                                  high_open=True))
        object.__setattr__(self, "relation", as_relation(relation))

    @property
    def eps0(self) -> float:
        return self.epsilon_

    def _rdp(self, alpha):
        if self.delta_ > 0:
            raise NotImplementedError(
                f"EpsDelta(epsilon={self.epsilon_:g}, delta={self.delta_:g}) has no finite "
                "Rényi-DP curve (its privacy loss is infinite with probability delta); use the "
                "basic / advanced / kov methods or the PLD")
        return rr_rdp(self.epsilon_, alpha)

    def has_rdp(self) -> bool:
        return self.delta_ == 0

    def pure_epsilon(self) -> float:
        return self.epsilon_ if self.delta_ == 0 else math.inf

    def privacy_loss_atoms(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The exact privacy-loss distribution of the worst-case pair (Steinke 2022, footnote 16),
        the same in both directions: (losses, probabilities) = ([+eps, -eps, +inf],
        [(1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), delta]). For the PLD method."""
        e, d = self.epsilon_, self.delta_
        p_plus = (1.0 - d) / (1.0 + math.exp(-e))   # (1-d) e^e/(1+e^e), overflow-free
        p_minus = (1.0 - d) / (1.0 + math.exp(e)) if e < 700 else 0.0
        return (e, -e, math.inf), (p_plus, p_minus, d)

    def __repr__(self):
        return (f"EpsDelta(epsilon={self.epsilon_!r}, delta={self.delta_!r}, "
                f"relation={self.relation})")
