"""Registers the "noise-split" accounting method: one matrix mechanism under Poisson, cyclic
Poisson (more bands than groups), balls in bins, fixed bins or b-min-separation sampling on a
square lower-triangular C, answered by the smaller of the noise split
(:mod:`dpamp.mechanisms.matrix_split`: DP-SGD or random allocation at per-step sensitivities,
by the certified PLD) and no-amplification's Gaussian, with the witnesses' proven lower end
(:mod:`dpamp.amplification.matrix.lower`, :mod:`dpamp.amplification.matrix.lower_bins`).
The same answer as "conditional-composition" without its conditional composition, which never
beat the split in the benchmarks (``benchmarks/bench_matrix_mc.py``, z 1 to 16) and costs
0.2 to 30 s a query: rank 7, so ``auto`` takes it; "conditional-composition" by name still
runs every route.
"""
from __future__ import annotations

from ..registry import Method, register
from .conditional import _mechanism, _supports


def _epsilon(mechanism, delta, **_):
    from ...families.matrix import amplified_epsilon
    return amplified_epsilon(_mechanism(mechanism), delta, conditional=False)


def _delta(mechanism, epsilon, **_):
    from ...families.matrix import amplified_delta
    return amplified_delta(_mechanism(mechanism), epsilon, conditional=False)


register(Method("noise-split", _epsilon, _delta, lambda m: bool(_supports(m)), rank=7,
                supports=_supports))
