"""Lower bounds that come from a sampler rather than from the accounting method: shuffled
fixed-size batches (``dp.Shuffled``), whose upper bound is the no-amplification bound of one
substitution per epoch and whose lower bound is the construction of L. Chua et al., *How
Private are DP-SGD Implementations?*, ICML 2024 (arXiv:2403.17673), computed with proven
rounding in :mod:`dpamp.amplification.allocation.shuffle`.

A plan is at least as private-costly as any of its parts: the output of a composition contains
the part's output (dropping the rest is a post-processing), and the construction's linear
queries are among those the composed mechanism answers, so the part's lower bound is one for
the plan. The best over the plan's parts is kept.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from ..core.guarantee import Guarantee

__all__ = ["sampler_lower"]


def _shuffled_parts(mechanism):
    """(noise multiplier, Shuffled scheme, epochs) of each Gaussian part on shuffled batches."""
    from ..core.sampling import clip_sensitivity
    from ..mechanisms.family import amplification_of, family_of
    for part, count in mechanism.parts():
        base, scheme = getattr(part, "base", None), getattr(part, "scheme", None)
        fam = family_of(base)
        if getattr(amplification_of(scheme), "reshuffles", False) and fam is not None and \
                fam.gaussian_mu is not None and count >= 1:
            # the construction's contributions are clipped to norm C = sensitivity / (the
            # clipped sum's sensitivity under the relation): noise multiplier sigma / C
            clip = part.base.sensitivity / clip_sensitivity(part.scheme.relation)
            yield part.base.sigma / clip, part.scheme, int(count)


@functools.lru_cache(maxsize=64)
def _lower(query: str, z: float, scheme, epochs: int, at: float) -> float:
    """The shuffled-batches lower bound of one part (about a second of mpmath cells), kept:
    a report asks it for the plan and again for its samplers section, calibrations repeat it."""
    from ..amplification.allocation import shuffle as S
    kw = dict(relation=scheme.relation, batch_size=scheme.batch_size,
              dataset_size=scheme.dataset_size)
    if query == "epsilon":
        return float(S.shuffle_lower_epsilon(z, scheme.steps, epochs, at, **kw))
    return float(S.shuffle_lower_delta(z, scheme.steps, epochs, at, **kw))


def sampler_lower(mechanism, g: Guarantee) -> Guarantee:
    """``g`` with ``lower`` raised to the shuffled-batches lower bound of a part of the plan,
    where that is more (module docstring); ``g`` itself when the plan has no such part."""
    best, why = g.lower, None
    for z, scheme, epochs in _shuffled_parts(mechanism):
        at, top = (g.delta, g.epsilon) if g.query == "epsilon" else (g.epsilon, g.delta)
        try:
            low = min(_lower(g.query, z, scheme, epochs, at), top)
        except (ValueError, NotImplementedError):
            continue
        if not math.isnan(low) and (best is None or low > best):
            best, why = low, "Chua et al. 2024 (shuffled batches, ICML)"
    if why is None:
        return g
    note = ("shuffled batches: the upper bound is one substitution per epoch without "
            "amplification (no better bound is proven); the lower bound is Chua et al.'s "
            "construction")
    return dataclasses.replace(g, lower=best, source=f"{g.source}; lower bound: {why}",
                               note="; ".join(x for x in (g.note, note) if x))
