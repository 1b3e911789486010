"""Brute force on tiny datasets (000 Thms 8-11, 13, 14; Lemma 12): every subset / multiset of a
population of at most 8 records is enumerated, the subsampled output distribution of a discrete
mechanism is built exactly, and the hockey-stick divergence of every neighbouring pair is
compared with the profile bounds: upper >= exact always, lower <= exact on the membership pair,
and equality where the paper says the bound is tight."""
import dataclasses
import itertools
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

import dpamp as dp
from dpamp.mechanisms.base import Mechanism
from dpamp.profiles import core
from dpamp.profiles.numerics import pad_down, pad_up

EPS = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 1.7, 3.0])


def hs(p, q, eps):
    """Independent hockey-stick sum_z max(p_z - e^eps q_z, 0) (000 eq. (2)) of exact rational
    distributions, at 40 digits: the brute-force values carry no rounding of their own."""
    n = max(len(p), len(q))
    p = list(p) + [Fraction(0)] * (n - len(p))
    q = list(q) + [Fraction(0)] * (n - len(q))
    with mp.workdps(40):
        out = []
        for e in eps:
            a = mp.exp(mp.mpf(float(e)))
            out.append(mp.fsum(max(mp.mpf(x.numerator) / x.denominator
                                   - a * mp.mpf(y.numerator) / y.denominator, 0)
                               for x, y in zip(p, q)))
        return np.array(out, dtype=object)


# --- a discrete output-perturbation mechanism registered through the public extension API ----

@dataclasses.dataclass(frozen=True)
class ShiftNoise(Mechanism):
    """f(y) + Z with Z ~ pmf on {0..L-1} and f integer-valued of sensitivity 1: the dominating
    pair is (pmf shifted by 1, pmf); k changes shift by up to k. Asymmetric for skewed pmfs."""
    pmf: tuple
    relation: dp.Relation = dp.ADD_REMOVE

    def shifted(self, k):
        return np.concatenate([np.zeros(k), np.asarray(self.pmf)])

    def _rdp(self, alpha):
        raise NotImplementedError


def _shift_curves(m, k, eps):
    p, q = m.shifted(k), m.shifted(0)
    n = len(p)
    q = np.pad(q, (0, n - len(q)))
    e = np.asarray(eps, dtype=float)
    flat = e.ravel()
    r0 = np.array([dp.hockey_stick(p, q, x) for x in flat]).reshape(e.shape)
    r1 = np.array([dp.hockey_stick(q, p, x) for x in flat]).reshape(e.shape)
    with np.errstate(divide="ignore"):
        return np.log(r0), np.log(r1)


def _sn_pair(m, eps):
    return pad_up(np.stack(_shift_curves(m, 1, eps)), 1e-12)


def _sn_lower(m, eps):
    return pad_down(np.stack(_shift_curves(m, 1, eps)), 1e-12)


def _sn_group(m, k, eps):
    k, eps = np.broadcast_arrays(np.asarray(k), np.asarray(eps, dtype=float))
    out = np.empty(k.shape)
    for idx in np.ndindex(k.shape):
        a, b = _shift_curves(m, int(k[idx]), np.array([eps[idx]]))
        out[idx] = max(a[0], b[0])
    return pad_up(out, 1e-12)


core.register(ShiftNoise, pair=_sn_pair, lower=_sn_lower, group=_sn_group)

SKEWED = (0.55, 0.25, 0.12, 0.08)       # asymmetric: H(P||Q) != H(Q||P)
BUMP = (0.1, 0.2, 0.4, 0.2, 0.1)


# --- exact subsampled output distributions ----------------------------------------------------

def out_dist(bits, samples, stat, noise):
    """sum over (weight, sample) of weight * (stat(sample) + noise), in exact rationals (the
    float parameters are converted exactly)."""
    noise = [Fraction(x) for x in noise]
    vals = [(w, stat([bits[i] for i in s])) for w, s in samples(len(bits))]
    out = [Fraction(0)] * (max(v for _, v in vals) + len(noise))
    for w, v in vals:
        for j, z in enumerate(noise):
            out[v + j] += w * z
    return out


def rr_dist(bits, samples, stat, p):
    """Randomized response of a bit statistic: output distribution on {0, 1}."""
    p = Fraction(p)
    one = sum(w * (p if stat([bits[i] for i in s]) else 1 - p) for w, s in samples(len(bits)))
    return [1 - one, one]


def poisson(q):
    q = Fraction(q)

    def gen(n):
        for r in range(n + 1):
            for s in itertools.combinations(range(n), r):
                yield q ** r * (1 - q) ** (n - r), s
    return gen


def wor(m):
    def gen(n):
        subs = list(itertools.combinations(range(n), m))
        for s in subs:
            yield Fraction(1, len(subs)), s
    return gen


def wr(m):
    def gen(n):
        for s in itertools.product(range(n), repeat=m):
            yield Fraction(1, n ** m), s
    return gen


def datasets(n):
    """Up to exchangeability a dataset of n records is its number c of ones."""
    return [tuple([1] * c + [0] * (n - c)) for c in range(n + 1)]


def substitution_pairs(n):
    for x in datasets(n):
        for i in range(n):
            y = list(x)
            y[i] = 1 - y[i]
            yield x, tuple(y)


def remove_pairs(n):
    """(larger, smaller): the remove order of add/remove."""
    for x in datasets(n):
        for i in range(n):
            yield x, x[:i] + x[i + 1:]


COUNT = sum


def exact_max(pairs, dist):
    best = np.array([mp.mpf(0)] * len(EPS), dtype=object)
    cache = {}
    for x, y in pairs:
        for z in (x, y):
            if z not in cache:
                cache[z] = dist(z)
        best = np.maximum(best, hs(cache[x], cache[y], EPS))
    return best


def membership_pair(n, dist, remove=False):
    """x = (1, 0, ..., 0) against x' with the 1 flipped (or removed): the Lemma 12 pair."""
    x = (1,) + (0,) * (n - 1)
    y = x[1:] if remove else (0,) * n
    return hs(dist(x), dist(y), EPS), hs(dist(y), dist(x), EPS)


def check(upper, exact):
    """A proven upper bound: never below the exact (40-digit) value."""
    assert all(u >= e for u, e in zip(upper, exact)), (upper, exact.astype(float))


def check_lower(lower, exact):
    assert all(u <= e for u, e in zip(lower, exact)), (lower, exact.astype(float))


def close(a, b, rel=1e-9):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=rel, atol=1e-15)


# --- Poisson + add/remove (000 Thm 8): both orders exact ---------------------------------------

@pytest.mark.parametrize("pmf", [SKEWED, BUMP])
@pytest.mark.parametrize("q,n", [(0.3, 6), (0.05, 8), (1.0, 4)])
def test_thm8_both_orders_bruteforce(pmf, q, n):
    base = ShiftNoise(pmf)
    m = base.subsample(dp.Poisson(q))
    up = dp.profile_pair(m, EPS)
    low = dp.profile_pair_lower(m, EPS)
    dist = lambda x: out_dist(x, poisson(q), COUNT, pmf)  # noqa: E731
    pairs = list(remove_pairs(n))
    rem = exact_max(pairs, dist)
    add = exact_max([(y, x) for x, y in pairs], dist)
    check(up[0], rem)
    check(up[1], add)
    # tight: the membership pair attains both rows (remove order and add order)
    r0, r1 = membership_pair(n, dist, remove=True)
    close(up[0], r0)
    close(up[1], r1)
    check_lower(low[0], r0)
    check_lower(low[1], r1)
    close(low[0], r0)
    close(low[1], r1)


# --- without replacement + substitution (000 Thm 9) ----------------------------------------------

@pytest.mark.parametrize("pmf", [SKEWED, BUMP])
@pytest.mark.parametrize("mb,n", [(2, 6), (3, 8), (1, 5), (4, 4)])
def test_thm9_bruteforce_tight(pmf, mb, n):
    base = ShiftNoise(pmf, relation=dp.SUBSTITUTION)
    m = base.subsample(dp.WithoutReplacement(mb, n))
    up = dp.profile_pair(m, EPS)
    dist = lambda x: out_dist(x, wor(mb), COUNT, pmf)  # noqa: E731
    ex = exact_max(substitution_pairs(n), dist)
    check(up[0], ex)
    np.testing.assert_array_equal(up[0], up[1])   # symmetric relation: one curve
    close(up[0], ex)                                # 000 Thm 13: attained
    r0, r1 = membership_pair(n, dist)
    low = dp.profile_pair_lower(m, EPS)
    check_lower(low[0], r0)
    check_lower(low[1], r1)
    close(low[0], r0)


# --- with replacement + substitution (000 Thm 10) -----------------------------------------------

@pytest.mark.parametrize("pmf", [SKEWED, BUMP])
@pytest.mark.parametrize("mb,n", [(2, 4), (3, 5), (2, 2), (3, 3)])
def test_thm10_bruteforce(pmf, mb, n):
    base = ShiftNoise(pmf, relation=dp.SUBSTITUTION)
    m = base.subsample(dp.WithReplacement(mb, n))
    up = dp.profile_pair(m, EPS)
    dist = lambda x: out_dist(x, wr(mb), COUNT, pmf)  # noqa: E731
    check(up[0], exact_max(substitution_pairs(n), dist))
    r0, r1 = membership_pair(n, lambda x: out_dist(x, wr(mb), lambda s: int(any(s)), pmf))
    low = dp.profile_pair_lower(m, EPS)
    check_lower(low[0], r0)
    check_lower(low[1], r1)


# --- with replacement, outer add/remove (000 Thm 11) ---------------------------------------------

@pytest.mark.parametrize("pmf", [SKEWED, BUMP])
@pytest.mark.parametrize("mb,n", [(2, 4), (3, 3), (1, 5)])
def test_thm11_bruteforce(pmf, mb, n):
    base = ShiftNoise(pmf, relation=dp.SUBSTITUTION)
    m = base.subsample(dp.WithReplacement(mb, n, outer=dp.ADD_REMOVE))
    assert m.relation is dp.ADD_REMOVE
    up = dp.profile_pair(m, EPS)
    dist = lambda x: out_dist(x, wr(mb), COUNT, pmf)  # noqa: E731
    # pairs with one dataset of size n: (n, n-1) and (n+1, n), both orders
    pairs = list(remove_pairs(n)) + list(remove_pairs(n + 1))
    check(up[0], exact_max(pairs, dist))
    check(up[1], exact_max([(y, x) for x, y in pairs], dist))


# --- Poisson + substitution (000 Thm 14, tighter proof form) --------------------------------------

@pytest.mark.parametrize("pmf", [SKEWED, BUMP])
@pytest.mark.parametrize("q,n", [(0.3, 5), (0.6, 4), (0.1, 7), (0.5, 1), (0.5, 2)])
@pytest.mark.parametrize("size_shift", [0, 3])
def test_thm14_bruteforce(pmf, q, n, size_shift):
    """size_shift: f(y) = ones(y) + size_shift * |y| has substitution sensitivity 1 but moves
    with the sample size, the case Thm 14 has to pay for (no d-compatible coupling)."""
    base = ShiftNoise(pmf, relation=dp.SUBSTITUTION)
    m = base.subsample(dp.Poisson(q, relation=dp.SUBSTITUTION, population=n))
    up = dp.profile_pair(m, EPS)
    stat = lambda s: sum(s) + size_shift * len(s)  # noqa: E731
    dist = lambda x: out_dist(x, poisson(q), stat, pmf)  # noqa: E731
    ex = exact_max(substitution_pairs(n), dist)
    check(up[0], ex)
    # the bound is not tight: it lies above the membership lower bound
    low = dp.profile_pair_lower(m, EPS)
    assert (low[0] <= up[0]).all()


def test_poisson_substitution_without_population_is_the_one_record_worst_case():
    """With the dataset size unknown, datasets of one record are in the class: the sample is
    empty (the same law under both) with probability 1 - q, and a base far from its empty
    output attains q H(B || C). Upper and lower rows are both that curve; T steps compose to
    the binomial mixture of Gaussians sum_k C(T, k) q^k (1-q)^(T-k) delta_G(mu sqrt(k); eps),
    evaluated here in mpmath."""
    import mpmath as mp
    q, mu, T = 0.1, 1.0, 10
    g = dp.Gaussian(1.0, sensitivity=mu, relation=dp.SUBSTITUTION)
    m = g.subsample(dp.Poisson(q, relation=dp.SUBSTITUTION))
    up, low = dp.profile_pair(m, EPS), dp.profile_pair_lower(m, EPS)
    want = q * np.asarray(g.profile(EPS))
    assert (low <= want * (1 + 1e-12)).all() and (up >= want * (1 - 1e-12)).all()
    np.testing.assert_allclose(up[0], want, rtol=1e-9)
    np.testing.assert_allclose(low[0], want, rtol=1e-9)

    mp.mp.dps = 40

    def delta_g(m_, e):          # Balle & Wang 2018, Thm 8
        if m_ == 0:
            return mp.mpf(0)
        return mp.ncdf(m_ / 2 - e / m_) - mp.e ** e * mp.ncdf(-m_ / 2 - e / m_)

    def truth(e):
        e = mp.mpf(e)
        return sum(mp.binomial(T, k) * mp.mpf(q) ** k * (1 - mp.mpf(q)) ** (T - k)
                   * delta_g(mu * mp.sqrt(k), e) for k in range(T + 1))

    r = (m * T).delta(3.0)
    assert r.lower <= float(truth(3.0)) <= r.delta
    e = (m * T).epsilon(1e-5)
    assert float(truth(e.lower)) >= 1e-5 >= float(truth(e.epsilon))
    assert e.epsilon - e.lower <= 1e-3 * e.epsilon


# --- randomized response / membership inside: 000 Lemma 12 / Thm 13, exact everywhere ------------

SCHEMES = [  # (scheme, sampler, n, relation, outer add/remove?)
    (dp.Poisson(0.3), poisson(0.3), 6, dp.ADD_REMOVE, True),
    (dp.WithoutReplacement(3, 7), wor(3), 7, dp.SUBSTITUTION, False),
    (dp.WithReplacement(2, 4), wr(2), 4, dp.SUBSTITUTION, False),
    (dp.WithReplacement(3, 4, outer=dp.ADD_REMOVE), wr(3), 4, dp.SUBSTITUTION, True),
    (dp.Poisson(0.4, relation=dp.SUBSTITUTION, population=5), poisson(0.4), 5, dp.SUBSTITUTION,
     False),
]


@pytest.mark.parametrize("scheme,sampler,n,rel,outer_ar", SCHEMES)
@pytest.mark.parametrize("p", [0.8, 0.6, 0.97])
@pytest.mark.parametrize("cls", [dp.RandomizedMembership, dp.RandomizedResponse])
def test_lemma12_thm13_exact(scheme, sampler, n, rel, outer_ar, p, cls):
    base = cls(p, relation=rel)
    m = base.subsample(scheme)
    up = dp.profile_pair(m, EPS)
    low = dp.profile_pair_lower(m, EPS)
    # randomized response of the OR of the bits (a bit statistic); randomized membership of
    # record 0 is the same thing on the membership datasets
    dist = lambda x: rr_dist(x, sampler, lambda s: int(any(s)), p)  # noqa: E731
    if outer_ar:
        pairs = list(remove_pairs(n)) + list(remove_pairs(n + 1))
        check(up[0], exact_max(pairs, dist))
        check(up[1], exact_max([(y, x) for x, y in pairs], dist))
    else:
        check(up[0], exact_max(substitution_pairs(n), dist))
    r0, r1 = membership_pair(n, dist, remove=outer_ar)
    close(up[0], r0)                     # Thm 13: the upper bound is attained
    close(low[0], r0)
    check_lower(low[0], r0)
    check_lower(low[1], r1)
    g = dp.profiles.member_gamma(scheme)
    close(up[0], dp.profiles.membership_profile(p, g, EPS))


def test_nested_poisson_is_poisson_of_product_rate():
    base = ShiftNoise(SKEWED)
    nested = base.subsample(dp.Poisson(0.5)).subsample(dp.Poisson(0.2))
    flat = base.subsample(dp.Poisson(0.1))
    close(dp.profile_pair(nested, EPS), dp.profile_pair(flat, EPS), rel=1e-11)
    close(dp.profile_pair_lower(nested, EPS), dp.profile_pair_lower(flat, EPS), rel=1e-11)


def test_nested_wor_bruteforce():
    """WOR(2 of 4) inside WOR(4 of 6) is WOR(2 of 6) on the data: the recursive bound is exact."""
    base = ShiftNoise(BUMP, relation=dp.SUBSTITUTION)
    nested = base.subsample(dp.WithoutReplacement(2, 4)).subsample(dp.WithoutReplacement(4, 6))
    dist = lambda x: out_dist(x, wor(2), COUNT, BUMP)  # noqa: E731
    ex = exact_max(substitution_pairs(6), dist)
    up = dp.profile_pair(nested, EPS)
    check(up[0], ex)
    close(up[0], ex)


# --- 000 Thm 14 against an independent 50-digit evaluation of the errata form --------------------

def mp_thm14(delta, q, n, eps_p, printed=False):
    """gamma[beta d(alpha) + (1-beta)(sum_{k<n} g~_k d(alpha_k) + g~_n)] (errata), or the printed
    statement gamma d(alpha) + sum_{k<n} g~_k d(alpha_k) + g~_n; d(a) for a < 1 by the reverse."""
    with mp.workdps(50):
        g = mp.mpf(q)
        ap = mp.exp(mp.mpf(eps_p))
        a = 1 + (ap - 1) / g
        beta = ap / a

        def d(x):
            return delta(mp.log(x)) if x >= 1 else 1 - x + x * delta(-mp.log(x))
        s = mp.fsum(mp.binomial(n - 1, k - 1) * g ** (k - 1) * (1 - g) ** (n - k)
                    * d(a * g / (1 - g) * (mp.mpf(n) / k - 1)) for k in range(1, n))
        last = g ** (n - 1)
        if printed:
            return g * d(a) + s + last
        return g * (beta * d(a) + (1 - beta) * (s + last))


@pytest.mark.parametrize("q,n", [(0.1, 30), (0.02, 400), (0.3, 12)])
def test_thm14_matches_50_digit_reference(q, n):
    sigma = 0.8

    def delta(e):  # 000 Thm 4 at 50 digits, mu = 1/sigma
        mu = 1 / mp.mpf(sigma)
        Phi = lambda x: mp.erfc(-x / mp.sqrt(2)) / 2  # noqa: E731
        return Phi(mu / 2 - e / mu) - mp.exp(e) * Phi(-mu / 2 - e / mu)
    from dpamp.profiles.amplification import thm14_log_profile
    base = dp.Gaussian(sigma, relation=dp.SUBSTITUTION)
    eps = np.array([0.0, 0.05, 0.3, 1.0, 2.5])
    ours = np.exp(thm14_log_profile(lambda e: core.log_symmetric(base, e), q, n, eps))
    for e, v in zip(eps, ours):
        ref = mp_thm14(delta, q, n, e)
        assert v >= ref
        assert v <= ref * (1 + 1e-9)
        assert mp_thm14(delta, q, n, e, printed=True) >= ref  # the errata form is tighter


def test_poisson_substitution_is_not_amplified_like_thm8():
    """With a statistic that moves with the sample size, Poisson sampling under substitution is
    worse than gamma delta(alpha): Thm 14's extra terms are needed (000 Sec. 4)."""
    pmf, q, n = SKEWED, 0.3, 5
    stat = lambda s: sum(s) + 3 * len(s)  # noqa: E731
    ex = exact_max(substitution_pairs(n), lambda x: out_dist(x, poisson(q), stat, pmf))
    mix = dp.profile_pair(ShiftNoise(pmf).subsample(dp.Poisson(q)), EPS)
    assert any(e > max(a, b) for e, a, b in zip(ex, mix[0], mix[1]))


def test_nested_wr_of_wor_bruteforce():
    """WithReplacement(2 of 4) around WithoutReplacement(1 of 2): the inner mechanism's group
    profile comes from the black-box bound (000 Sec. 3) on its amplified profile; the bound
    holds against the enumeration of all draws."""
    pmf, n = BUMP, 4
    base = ShiftNoise(pmf, relation=dp.SUBSTITUTION)
    nested = base.subsample(dp.WithoutReplacement(1, 2)).subsample(dp.WithReplacement(2, n))

    def draws(k):
        for s in itertools.product(range(k), repeat=2):
            for j in range(2):  # the inner sample of size 1 out of the 2 drawn records
                yield Fraction(1, 2 * k * k), (s[j],)
    dist = lambda x: out_dist(x, draws, COUNT, pmf)  # noqa: E731
    check(dp.profile_pair(nested, EPS)[0], exact_max(substitution_pairs(n), dist))
