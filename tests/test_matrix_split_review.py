"""An independent review of the noise split (dpamp.mechanisms.matrix_split): the per-step
sensitivities Delta_s = sqrt(sum_t |C[t, s]| R_t) against exact rational arithmetic (a BLT's
coefficients as the rationals its floats name), the structural identities the argument
rests on, and the split's delta against the exact delta of actual pairs of neighbours
(fixed-direction and adaptive-sign adversaries, n <= 3, by quadrature on a grid)."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import dpamp as dp
from dpamp.mechanisms import matrix_split as MS


# --- exact per-step sensitivities ---------------------------------------------------------------

def _exact_coeffs(s) -> list[Fraction]:
    """The Toeplitz coefficients a strategy names, exactly (a BLT's from its floats)."""
    if isinstance(s, dp.BLT):
        th = [Fraction(t) for t in s.buffer_decays]
        om = [Fraction(w) for w in s.output_scales]
        return [Fraction(1)] + [sum(w * t ** (k - 1) for w, t in zip(om, th))
                                for k in range(1, s.n)]
    return [Fraction(float(v)) for v in s.toeplitz()]


def _exact_matrix(s) -> list[list[Fraction]]:
    n = s.n
    c = s.toeplitz()
    if c is None:
        return [[Fraction(float(v)) for v in row] for row in s.dense()]
    a = _exact_coeffs(s)
    return [[a[t - u] if t >= u else Fraction(0) for u in range(n)] for t in range(n)]


def exact_delta_sq(c: list[list[Fraction]], steps) -> list[Fraction]:
    """Delta_s^2 = sum_t |C[t, s]| R_t, R_t = sum_{s' in steps} |C[t, s']|, exactly."""
    n = len(c)
    r = [sum(abs(c[t][u]) for u in steps) for t in range(n)]
    return [sum(abs(c[t][u]) * r[t] for t in range(n)) for u in steps]


def _groups(n, p):
    return [list(range(g, n, p)) for g in range(min(p, n))]


def _assert_up(computed, exact_sq, rel=1e-9):
    """Each computed Delta is >= the exact one (compared in rationals) and not far above."""
    assert len(computed) == len(exact_sq)
    for d, e in zip(computed, exact_sq):
        assert Fraction(float(d)) ** 2 >= e, (float(d), math.sqrt(e))
        assert float(d) <= math.sqrt(e) * (1 + rel) + 1e-300


#: a BLT whose computed c_1 = fl(fl(1000 + 5e-14) - 1000) = 0 while the exact c_1 is 5e-14,
#: and c_2 ~ 1000: Delta_1^2 = c_0 R_1 + c_1 R_2 gains c_1 (c_0 + c_1 + c_2) ~ 5e-11, far more
#: than sqrt(n) times the coefficients' l2 error bound (2.7e-12) can cover
_LEVER = ((1.0, 0.5, 0.0), (1000.0, 5e-14, -1000.0))


def test_blt_coefficient_error_is_covered_per_step():
    """Delta_s is not Lipschitz in the coefficients with constant sqrt(ceil(n / p)): its
    gradient carries R_{s+k} / Delta_s, large where a late step's column is small and the
    rows it reads are heavy. Every step's computed Delta must still be above the exact
    one."""
    s = dp.BLT(*_LEVER, 3)
    assert s.toeplitz()[1] == 0.0 and _exact_coeffs(s)[1] > 0
    c = _exact_matrix(s)
    for p in (1, 2):
        for g, d in zip(_groups(3, p), MS._per_group(s, 3, p)):
            _assert_up(d, exact_delta_sq(c, g), rel=1e-6)
