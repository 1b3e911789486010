"""Composition of mechanisms: RDP curves add (Wang et al. 2019, Sec. 4, Steinke 2022, Lemma 33 item
2)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.rounding import weighted_sum_up
from ..core.relations import Relation
from .base import Mechanism, check_mechanism, flatten

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


@dataclasses.dataclass(frozen=True)
class Composition(Mechanism):
    """The adaptive composition of mechanisms, stored as unique (mechanism, count) pairs."""

    components: tuple[tuple[Mechanism, int], ...]

    def __post_init__(self):
        """The one validation path of every composition (``dp.compose``, ``mech * k``, plans,
        ``dp.from_json``): each component is a (mechanism, count) pair with a count an integer
        >= 0 (as ``mech * 0``, a part run zero times is dropped), all under one neighbouring
        relation. Stored canonically (:func:`flatten`: nested compositions expanded, repeated
        parts merged, first-seen order), so equal descriptions compare equal."""
        comps = self.components
        if not isinstance(comps, (tuple, list)):
            raise ValueError("components must be a sequence of (mechanism, count) pairs "
                             f"(got {type(comps).__name__})")
        pairs = []
        for i, pair in enumerate(comps):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"components[{i}] must be a (mechanism, count) pair "
                                 f"(got {pair!r})")
            mech = check_mechanism(pair[0], f"components[{i}] mechanism")
            pairs.append((mech, V.integer(f"components[{i}] count", pair[1], low=0)))
        relations = {m.relation for m, _ in pairs for m, _ in m.parts()}
        if len(relations) > 1:
            raise ValueError(
                "cannot compose mechanisms under different neighbouring relations "
                f"({', '.join(sorted(map(str, relations)))}): restate them under one relation, "
                "e.g. an add/remove mechanism with sensitivity s has substitution sensitivity "
                "2s (or use subsampling schemes that give the same relation)")
        merged = flatten(pairs)
        for m, c in merged:  # merged counts stay within what one count may be
            V.integer("count", c, low=0)
        object.__setattr__(self, "components", merged)

    @property
    def relation(self) -> Relation:  # type: ignore[override]
        return self.components[0][0].relation if self.components else Relation.ADD_REMOVE

    def parts(self) -> tuple[tuple[Mechanism, int], ...]:
        return self.components

    def has_rdp(self) -> bool:
        return all(m.has_rdp() for m, _ in self.components)

    def pure_epsilon(self) -> float:
        """sum of count x the parts' pure epsilons (Steinke 2022, Thm 18 at delta = 0), summed
        exactly and rounded up: delta = 0 is claimed only at or above the real sum."""
        return weighted_sum_up((c, float(m.pure_epsilon())) for m, c in self.components)

    def _rdp(self, alpha):
        total = np.zeros_like(alpha, dtype=float)
        for mech, count in self.components:
            total = total + count * mech._rdp(alpha)
        return total

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """count x the part's lower curve, for a composition of one mechanism with itself
        (its ``rdp_lower``, or its curve when attained, ``tight_rdp``); None otherwise.

        Why it is a lower bound: at each order, the part's lower bound L(alpha) is (up to an
        arbitrarily small margin) the Rényi divergence of the part's outputs on some pair of
        neighbouring datasets (of some mechanism the part's description allows). Running that
        same mechanism ``count`` times on that same pair is one of the compositions the
        guarantee must cover, and its outputs are independent, so their joint distributions
        are products and R_alpha adds: count x L(alpha). For *different* parts this needs one
        pair on which every part attains its bound at once, which nothing here proves (each
        part's worst pair may differ), so heterogeneous compositions report None."""
        if len(self.components) != 1:
            return None
        from .base import _lower_curve
        mech, count = self.components[0]
        a = V.orders(alpha)
        low = _lower_curve(mech, a)
        if low is None:
            return None
        out = count * np.asarray(low, dtype=float)
        return out if out.ndim else float(out)

    def witnesses(self) -> tuple[Mechanism, ...]:
        """count copies of each of the part's witnesses, for a composition of one mechanism
        with itself (the same pair of neighbours, run count times, gives the product pair); ()
        otherwise (different parts need not be attained on one pair of neighbours at once)."""
        if len(self.components) != 1:
            return ()
        mech, count = self.components[0]
        return tuple(w * count for w in mech.witnesses())

    def __repr__(self):
        inner = ", ".join(f"{m!r} * {c}" if c != 1 else repr(m) for m, c in self.components)
        return f"compose({inner})"


def compose_counts(pairs) -> Composition:
    """The composition of (mechanism, count) runs; the constructor checks counts and
    relations (one validation path shared with ``dp.from_json``)."""
    return Composition(tuple((check_mechanism(m), c) for m, c in pairs))


def compose_prefix(pairs, steps: int) -> Composition:
    """The composition of the first ``steps`` steps of the ordered (mechanism, count) runs
    ``pairs`` (a plan's stages, or a composition's parts)."""
    pairs = list(pairs)
    steps = V.integer("steps", steps, low=1, high=sum(c for _, c in pairs))
    taken, left = [], steps
    for m, c in pairs:
        take = min(left, c)
        if take:
            taken.append((m, take))
        left -= take
    return compose_counts(taken)


def compose(*mechanisms: Mechanism) -> Composition:
    """``dp.compose(m1, m2, ...)``: the sequential (adaptive) composition."""
    if len(mechanisms) == 1 and isinstance(mechanisms[0], (list, tuple)):
        mechanisms = tuple(mechanisms[0])
    if not mechanisms:
        raise ValueError("compose needs at least one mechanism")
    return compose_counts([(m, 1) for m in mechanisms])
