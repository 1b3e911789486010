"""Review of chain_sum_law (dpamp.amplification.matrix.lower_minsep) in exact arithmetic: the
law D it returns must have survival P_D[S >= t] <= min_r P[S >= t | r] for every t > 0, r the
chain's entry state, every pattern of the window's steps enumerated with Fraction
probabilities and Fraction sums (the floats given are the exact shifts and the exact rate).
Also a non-vacuity figure: D's mean against the exact envelope's mean."""
from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest

from dpamp.amplification.matrix.lower_minsep import chain_sum_law

COUNTS = (3, 8, None)       # None: the default count


def exact_entry_laws(a, p, sep):
    """[{S: probability} for entry state r in 0..sep-1], all 2^L patterns from state r (the
    first r steps barred; an eligible step taken with probability p, then sep - 1 barred)."""
    fa = [Fraction(x) for x in a]
    fp = Fraction(p)
    fq = 1 - fp
    out = []
    for r in range(sep):
        law = {}
        for bits in itertools.product((0, 1), repeat=len(a)):
            taken = skipped = 0
            barred = r
            ok = True
            for bit in bits:
                if barred > 0:
                    if bit:
                        ok = False
                        break
                    barred -= 1
                elif bit:
                    taken += 1
                    barred = sep - 1
                else:
                    skipped += 1
            if not ok:
                continue
            prob = fp ** taken * fq ** skipped
            if prob == 0:
                continue
            s = sum((x for x, bit in zip(fa, bits) if bit), Fraction(0))
            law[s] = law.get(s, 0) + prob
        out.append(law)
    return out


def min_survival(laws):
    """t -> min_r P[S >= t | r] (exact)."""
    items = [sorted(law.items()) for law in laws]

    def f(t):
        return min(sum((q for s, q in it if s >= t), Fraction(0)) for it in items)
    return f


def check(a, p, sep, count):
    """(worst excess of D's survival over the exact minimum, 1 - mean(D)/mean(envelope),
    total mass of D minus 1): the excess must be <= 0."""
    vals, probs = (chain_sum_law(a, p, sep) if count is None
                   else chain_sum_law(a, p, sep, count))
    assert vals[0] == 0 and np.all(np.diff(vals) > 0) and np.all(probs >= 0)
    if count is not None:
        assert vals.size <= max(count, 1)
    fv = [Fraction(float(v)) for v in vals]
    fq = [Fraction(float(q)) for q in probs]
    laws = exact_entry_laws(a, p, sep)
    env = min_survival(laws)

    def d_surv(t):
        return sum((q for v, q in zip(fv, fq) if v >= t), Fraction(0))
    support = sorted({s for law in laws for s in law if s > 0})
    worst = None
    for t in set(fv[1:]) | set(support):
        gap = d_surv(t) - env(t)
        worst = gap if worst is None or gap > worst else worst
    env_mean = Fraction(0)
    prev = Fraction(0)
    for t in support:
        env_mean += (t - prev) * env(t)
        prev = t
    d_mean = sum((v * q for v, q in zip(fv, fq)), Fraction(0))
    rel = 1 - d_mean / env_mean if env_mean > 0 else Fraction(0)
    return (worst if worst is not None else Fraction(0)), rel, sum(fq) - 1


def random_case(rng: random.Random, max_len: int, lo_exp: float = -12):
    sep = rng.randint(1, 6)
    length = rng.randint(1, max_len)
    kind = rng.random()
    if kind < 0.25:
        p = rng.choice([1e-6, 1e-9, 1 - 1e-6, 1 - 1e-12, 0.999999999, 0.5])
    else:
        p = rng.uniform(1e-6, 1 - 1e-9)
    a = []
    for _ in range(length):
        r = rng.random()
        if r < 0.15:
            a.append(0.0)
        elif r < 0.3 and a:
            a.append(rng.choice(a))          # equal values
        else:
            a.append(10 ** rng.uniform(lo_exp, 3))
    if rng.random() < 0.1:
        a = [a[0]] * length if a and a[0] > 0 else [1.0] * length
    count = rng.choice(COUNTS)
    return a, p, sep, count


def run(seeds, max_len):
    worst_gap, worst_rel = None, Fraction(0)
    bad = []
    for seed in seeds:
        a, p, sep, count = random_case(random.Random(seed), max_len)
        gap, rel, _ = check(a, p, sep, count)
        if gap > 0:
            bad.append((seed, a, p, sep, count, float(gap)))
        worst_gap = gap if worst_gap is None or gap > worst_gap else worst_gap
        worst_rel = max(worst_rel, rel)
    return bad, worst_gap, worst_rel


def test_chain_law_below_exact_minimum_small():
    bad, _, _ = run(range(40), 8)
    assert not bad, bad


@pytest.mark.parametrize("a,p,sep,count", [
    ([1e3, 1e-12, 0.0, 1e3, 1e-12, 5.0], 1e-6, 2, None),
    ([1e-12] * 7, 1 - 1e-12, 3, 3),
    ([0.0, 0.0, 7.0, 7.0, 7.0], 0.5, 5, 8),
    ([1.0, 2.0, 3.0], 0.3, 4, None),          # shorter than the separation: point mass
    ([2.0 ** -k for k in range(8)], 0.999999, 1, None),
])
def test_chain_law_below_exact_minimum_edges(a, p, sep, count):
    gap, _, _ = check(a, p, sep, count)
    assert gap <= 0, float(gap)


@pytest.mark.slow
def test_chain_law_below_exact_minimum_many():
    bad, _, _ = run(range(1000, 1400), 12)
    assert not bad, bad


def test_the_checker_flags_a_law_above_the_minimum(monkeypatch):
    """Sensitivity: the exact entry-state-0 law (rounded to floats) is flagged."""
    import sys
    mod = sys.modules[__name__]

    def entry0(a, p, sep, count=None):
        law = exact_entry_laws(a, p, sep)[0]
        law.setdefault(Fraction(0), Fraction(0))
        ks = sorted(law)
        return (np.array([float(k) for k in ks]), np.array([float(law[k]) for k in ks]))
    monkeypatch.setattr(mod, "chain_sum_law", entry0)
    a, p, sep = [1.0, 2.0, 3.0, 4.0], 0.5, 2
    assert check(a, p, sep, None)[0] > 0
