"""Registers the "conditional-composition" accounting method: one matrix mechanism whose records
are Poisson-sampled (or cyclic-Poisson with more bands than groups, balls in bins, fixed bins,
b-min-separation sampling), accounted by conditional composition (Choquette-Choo, Ganesh,
Steinke & Thakurta 2024; :mod:`dpamp.amplification.matrix`): per step a mixture of Gaussians
whose weights are bounded given the past outputs, composed by the certified PLD, plus the
probability that a posterior bound fails; and by the noise split
(:mod:`dpamp.mechanisms.matrix_split`: DP-SGD or random allocation at per-step
sensitivities). The answer is the smallest of those and the no-amplification one (the
Gaussian at the worst pattern's sensitivity); all are proven upper bounds and the answer's
``method`` names the route that gave it. The lower end: for (cyclic) Poisson sampling on a
banded C the larger of two witnesses' PLD lower bounds (:mod:`dpamp.amplification.matrix.lower`;
the note names it and what it assumed); for balls in bins on C >= 0, matched filters and row
allocation (:mod:`dpamp.amplification.matrix.lower_bins`). Rank 8: ``auto`` takes
"noise-split" (rank 7, the same without conditional composition) before it.
"""
from __future__ import annotations

from ...mechanisms.family import Support
from ...mechanisms.matrix import MatrixMechanism
from ..registry import Method, register


def _single(mechanism) -> MatrixMechanism | None:
    parts = [(p, c) for p, c in mechanism.parts() if c > 0]
    if len(parts) == 1 and parts[0][1] == 1 and isinstance(parts[0][0], MatrixMechanism):
        return parts[0][0]
    return None


def _supports(mechanism) -> Support:
    from ...families.matrix import amplifiable
    m = _single(mechanism)
    if m is None or not amplifiable(m):
        return Support.no("conditional-composition: applies to one matrix mechanism under "
                          "Poisson sampling, cyclic Poisson with more bands than groups, or "
                          "balls in bins, with a square lower-triangular C (conditional "
                          "composition itself up to 4096 steps, 65536 if Toeplitz; the noise "
                          "split at any n)")
    return Support.yes()


def _mechanism(mechanism) -> MatrixMechanism:
    m = _single(mechanism)
    if m is None or not _supports(mechanism):
        raise ValueError(f"conditional-composition does not apply to {mechanism!r}")
    return m


def _epsilon(mechanism, delta, **_):
    from ...families.matrix import amplified_epsilon
    return amplified_epsilon(_mechanism(mechanism), delta)


def _delta(mechanism, epsilon, **_):
    from ...families.matrix import amplified_delta
    return amplified_delta(_mechanism(mechanism), epsilon)


register(Method("conditional-composition", _epsilon, _delta, lambda m: bool(_supports(m)),
                rank=8, supports=_supports))
