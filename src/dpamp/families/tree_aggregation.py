"""Tree aggregation's declaration (:mod:`dpamp.mechanisms.tree_aggregation`): the Gaussian
mechanism with mu = c sqrt(depth) / z, so every representation is the Gaussian's (pair
N(mu, 1) vs N(0, 1), closed-form profile, rho = mu^2 / 2) and its parts merge with other
Gaussians exactly (``gaussian_mu``). dp-accounting's ``SingleEpochTreeAggregationDpEvent``
both ways."""
from __future__ import annotations

import math

from ..core import validate as V
from ..core.rounding import ulps_up
from ..core.sampling import clip_sensitivity
from ..mechanisms.family import Family, Rep, Support, declare
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.tree_aggregation import TreeAggregation
from .base import closed_form_profile


def _loss(m: TreeAggregation):
    from ..pld import loss as L
    return L.gaussian(m.mu)


def _has(m: TreeAggregation, rep: Rep) -> Support | None:
    if rep is Rep.LOSS and not math.isfinite(m.mu * m.mu):
        return Support.no(f"TreeAggregation with mu = {m.mu:g}: its privacy losses exceed "
                          "the double range of a PLD grid; use the profile or RDP methods")
    return None


def _words(words, relation):
    z = words.get("noise_multiplier", V.positive, required=True)
    steps = words.get("steps_per_tree", V.integer, low=1, required=True)
    return TreeAggregation(z, steps, relation=relation), {"noise_multiplier": z,
                                                          "steps_per_tree": steps}


def _steps_of(step_counts) -> int:
    """The largest tree of the event (a record occurs at most once across all its trees)."""
    counts = [step_counts] if isinstance(step_counts, (int, float)) else list(step_counts)
    if not counts:
        raise ValueError("SingleEpochTreeAggregationDpEvent needs step_counts")
    return max(V.integer("step_counts", c, low=0) for c in counts)


def _from_event(event, relation, sensitivity):
    """dp-accounting's event: its noise multiplier is relative to the sensitivity under the
    relation in force (``sensitivity`` units of dpamp's clipping norm), dpamp's to the
    clipping norm (a record moves a node by c = 1 or 2 of it): z' = z c / sensitivity.
    None (no privacy cost) for trees of no steps."""
    z = float(event.noise_multiplier)
    if z <= 0:
        raise ValueError(f"SingleEpochTreeAggregationDpEvent with noise_multiplier {z:g} is "
                         "not private")
    steps = _steps_of(event.step_counts)
    if steps == 0:
        return None
    return TreeAggregation(z * clip_sensitivity(relation) / sensitivity, steps,
                           relation=relation)


def _to_event(m: TreeAggregation):
    from dp_accounting import dp_event
    return dp_event.SingleEpochTreeAggregationDpEvent(
        m.noise_multiplier / clip_sensitivity(m.relation), m.steps)


declare(TreeAggregation, Family(
    "TreeAggregation", loss=_loss, profile=closed_form_profile("gaussian", ("Balle, Barthe & "
                                                                            "Gaboardi 2018, Thm "
                                                                            "4")),
    zcdp=lambda m: ulps_up(m.rho, 4), gaussian_mu=lambda m: m.mu, has=_has,
    group=lambda m, k: Gaussian(m.noise_multiplier, k * m.l2_sensitivity,
                                        relation=m.relation),
    word="tree_aggregation", keys=("noise_multiplier", "steps_per_tree"), from_words=_words,
    event="SingleEpochTreeAggregationDpEvent", from_event=_from_event, to_event=_to_event,
    example=lambda rel: TreeAggregation(1.0, 1000, relation=rel),
    describe=lambda m: (f"tree aggregation (DP-FTRL), noise multiplier {m.noise_multiplier:g}, "
                        f"{m.steps} steps per tree ({m.depth} nodes per record)")))
