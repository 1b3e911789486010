"""The lower end under b-min-separation sampling (dpamp.amplification.matrix.lower_minsep):
the window law against brute-force enumeration of the chain from every entry state, and the
answer's bracket against the exact delta of the fixed-direction pair (exact quadrature)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpamp as dp
from dpamp.amplification.matrix.lower_minsep import chain_sum_law, minsep_witnesses
from dpamp.families.matrix import bsr_coefficients
from oracles.pattern_mixture import mean_mixture_delta, min_sep_patterns, pattern_mixture_delta


def _entry_laws(a, p, sep):
    """{entry state r: [(S, probability)]} by enumerating the chain's patterns on len(a)
    steps from state r (the first r steps barred)."""
    out = {}
    for r in range(sep):
        terms = []
        for bits in itertools.product((0, 1), repeat=len(a)):
            prob, barred = 1.0, r
            for bit in bits:
                if barred > 0:
                    prob *= 1.0 if bit == 0 else 0.0
                    barred -= 1
                else:
                    prob *= p if bit else 1.0 - p
                    barred = sep - 1 if bit else 0
            if prob > 0:
                terms.append((math.fsum(x for x, bit in zip(a, bits) if bit), prob))
        out[r] = terms
    return out


def _survival(terms, t):
    return math.fsum(pr for s, pr in terms if s >= t)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.05, 0.3, 0.5, 1.0, 1.7]), min_size=1, max_size=7),
       st.floats(0.01, 0.95), st.integers(1, 4))
def test_chain_law_is_below_every_entry_state(a, p, sep):
    vals, probs = chain_sum_law(a, p, sep)
    assert vals[0] == 0 and np.all(np.diff(vals) > 0) and np.all(probs >= 0)
    assert abs(math.fsum(probs.tolist()) - 1.0) < 1e-12
    laws = _entry_laws(a, p, sep)
    for t in np.unique(np.concatenate([vals, [x for terms in laws.values()
                                              for x, _ in terms]])):
        d = math.fsum(probs[vals >= t].tolist())
        truth = min(_survival(terms, t) for terms in laws.values())
        assert d <= truth + 1e-15, (t, d, truth)
    # not vacuous: the mean is that of the envelope min_r P[S >= t | r] (the best law below
    # every entry state) up to the lattice's rounding (2^-12 of the total per step)
    mean = float(np.dot(vals, probs))
    pts = sorted({x for terms in laws.values() for x, _ in terms if x > 0})
    envelope = math.fsum((hi - lo) * min(_survival(terms, hi) for terms in laws.values())
                         for lo, hi in zip([0.0] + pts[:-1], pts))
    assert mean >= envelope - len(a) * sum(a) * 2.0 ** -11 - 1e-12


def test_chain_law_is_tight_where_one_state_is_worst():
    """Separation 1 is Poisson sampling: every entry state is the same law, which the
    lattice then gives to its rounding (every shift lowered by at most two lattice steps,
    2^-11 of the total here, three shifts summed)."""
    a = [0.5, 1.0, 0.25]
    vals, probs = chain_sum_law(a, 0.3, 1)
    exact = _entry_laws(a, 0.3, 1)[0]
    for t in (0.25, 0.5, 0.75, 1.0, 1.5, 1.75):
        assert math.fsum(probs[vals >= t - 3e-3].tolist()) == pytest.approx(
            _survival(exact, t), rel=1e-9)


def test_a_window_shorter_than_the_separation_is_barred_whole():
    """Entry state s - 1 bars every step of a window of length < s: the point mass at 0, at
    once (the chain would hold s^2 x lattice floats: 2 GB at s 2000)."""
    vals, probs = chain_sum_law([1.0] + [1e-6] * 127, 0.3, 2000, 32)
    assert vals.tolist() == [0.0] and probs.tolist() == [1.0]
    vals, probs = chain_sum_law([1.0, 0.5], 0.3, 2)        # length = s: state 1 leaves one
    assert vals.size > 1 and probs[1:].sum() > 0
    # shifts whose sum passes the doubles' range (math.fsum raised): the point mass too
    vals, probs = chain_sum_law([1e308, 1e308], 0.5, 1)
    assert vals.tolist() == [0.0] and probs.tolist() == [1.0]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.05, 0.3, 0.5, 1.0, 1.7]), min_size=4, max_size=7),
       st.floats(0.05, 0.95), st.integers(1, 3), st.integers(3, 6))
def test_merged_law_is_below_every_entry_state(a, p, sep, count):
    """Few kept values (the shifts rounded down and their masses merged): still below."""
    vals, probs = chain_sum_law(a, p, sep, count)
    assert vals.size <= count and vals[0] == 0
    laws = _entry_laws(a, p, sep)
    for t in vals[1:]:
        d = math.fsum(probs[vals >= t].tolist())
        assert d <= min(_survival(terms, t) for terms in laws.values()) + 1e-15


@pytest.mark.parametrize("p,z,warm,eps", [(0.3, 0.8, False, 0.5), (0.5, 1.0, True, 0.2),
                                          (0.2, 0.5, False, 1.5)])
def test_bracket_holds_the_exact_pair_banded(p, z, warm, eps):
    """C = [[1, 0], [0.5, 1]], separation 2: the fixed-direction pair (an actual pair of
    neighbours) has an exact delta between the answer's ends."""
    m = dp.MatrixMechanism(dp.BandedToeplitz((1.0, 0.5), 2), z,
                           participation=dp.MinSepSampling(p, 2, warm))
    c = np.array([[1.0, 0.0], [0.5, 1.0]])
    pats = min_sep_patterns(2, p, 2, warm)
    exact = mean_mixture_delta([c @ np.array(b) / z for b, _ in pats], [w for _, w in pats], eps)
    got = m.delta(eps)
    assert got.lower is not None and got.lower <= exact <= got.delta


@pytest.mark.parametrize("n,sep,p,z,warm,eps", [(3, 2, 0.3, 0.7, True, 1.0),
                                                (3, 3, 0.4, 0.8, False, 0.5)])
def test_bracket_holds_the_exact_pair_diagonal(n, sep, p, z, warm, eps):
    m = dp.MatrixMechanism(dp.BandedToeplitz((1.0,), n), z,
                           participation=dp.MinSepSampling(p, sep, warm))
    exact = pattern_mixture_delta(min_sep_patterns(n, p, sep, warm), 1.0 / z, eps)
    got = m.delta(eps)
    assert got.lower is not None and got.lower <= exact <= got.delta
    # not vacuous (three steps are the worst case of the windows: a window must be as long as
    # the separation, and its projection keeps 1 / sqrt(L) of one step's signal)
    assert got.lower >= 0.1 * exact


def test_family_states_the_lower_end():
    co = bsr_coefficients(4)
    norm = math.sqrt(sum(c * c for c in co))
    s = dp.BandedToeplitz([c / norm for c in co], 200)
    m = dp.MatrixMechanism(s, 3.0, participation=dp.MinSepSampling(0.1, 4, warm_start=True))
    got = m.epsilon(1e-5)
    assert got.lower is not None and 0 < got.lower < got.epsilon
    assert "lower end: the" in got.note and "witness" in got.note
    ws = minsep_witnesses(s, 3.0, 0.1, 4)
    assert {w.name for w in ws} == {"windowed", "alternating-windows"}
    assert all(w.window >= 4 for w in ws)
    # a C with a negative entry has no witness here
    neg = dp.BandedToeplitz((1.0, -0.5), 50)
    assert minsep_witnesses(neg, 3.0, 0.1, 2) == []


def test_a_large_separation_still_has_a_lower_end():
    """The lattice is scaled by the most a window can take (ceil(L / s) steps), not by the
    window's whole sum: at separation 120 the windows take one or two steps and the lower end
    stays positive (it vanished on the whole-sum lattice)."""
    co = bsr_coefficients(4)
    norm = math.sqrt(sum(c * c for c in co))
    s = dp.BandedToeplitz([c / norm for c in co], 150)
    got = dp.MatrixMechanism(s, 1.0, participation=dp.MinSepSampling(0.01, 120)).epsilon(1e-5)
    assert got.lower is not None and 0 < got.lower < got.epsilon
