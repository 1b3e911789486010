"""An exact oracle for the discrete Laplace mechanism, independent of dpamp (mpmath only).

The noise: DLap(a), P[X = k] = c e^{-a|k|} on the integers, a > 0, with the normaliser
c = (1 - e^{-a}) / (1 + e^{-a}) = tanh(a/2) (sum_k e^{-a|k|} = (1 + e^{-a}) / (1 - e^{-a})).
This is the two-sided geometric distribution of Ghosh, Roughgarden & Sundararajan 2009, and the
discrete Laplace of Canonne, Kamath & Steinke 2020 (their scale t is 1/a). It is added to an
integer query of sensitivity D (a positive integer); the worst-case pair of neighbours is

    P = DLap(a) (centred at 0),   Q = DLap(a) centred at D.

The privacy loss L(k) = log P(k)/Q(k) = a(|k - D| - |k|) takes D + 1 values (derived here):

    k <= 0       : a D                        (one cell, a geometric tail)
    k = j, 0<j<D : a (D - 2j)                 (single integers)
    k >= D       : -a D                       (one cell, a geometric tail)

so on each of the D + 1 cells the likelihood ratio is constant, and the pair is exactly the
finite pair of cell masses (hockey-stick divergences and Renyi divergences are unchanged by
merging points with equal ratio). With r = e^{-a}:

    p_0 = c sum_{i>=0} r^i     = 1 / (1 + r)
    p_j = c r^j                  (0 < j < D)
    p_D = c r^D sum_{i>=0} r^i = r^D / (1 + r)
    q_j = p_j e^{-a (D - 2j)}    (q_j = p_{D-j}: the pair is symmetric under k -> D - k, so the
                                  add and the remove directions give the same curve)

delta(eps) = sum_j (p_j - e^eps q_j)_+ (the hockey-stick divergence; Balle & Wang 2018,
Meiser & Mohammadi 2018 for composing it through the privacy-loss distribution), RDP
D_alpha(P||Q) = log(sum_j p_j^alpha q_j^{1-alpha}) / (alpha - 1), and Poisson subsampling at
rate q under add/remove has the dominating pairs ((1-q) Q + q P, Q) (remove) and
(Q, (1-q) Q + q P) (add), the answer being the worse of the two (Zhu, Dong & Wang 2022); a
mixture of shifted DLaps still has a constant ratio on the cells above, so everything stays a
finite sum. A T-fold composition for one fixed pair of neighbours is the product pair (the
loss adds up: Meiser & Mohammadi 2018, Zhu, Dong & Wang 2022), enumerated here exactly.

Every number is an mpmath mpf at DPS digits; floats passed in (a, eps, delta, q) are read
exactly (mp.mpf of a float is exact).
"""
from __future__ import annotations

import functools
import itertools
import math
from collections import Counter

import mpmath as mp

DPS = 50


def _m(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


# --- the noise ---------------------------------------------------------------------------------

def normaliser(a):
    """c = tanh(a/2) = (1 - e^{-a}) / (1 + e^{-a})."""
    with mp.workdps(DPS):
        a = _m(a)
        return -mp.expm1(-a) / (1 + mp.exp(-a))


def pmf(a, k, shift=0):
    """P[DLap(a) + shift = k]."""
    with mp.workdps(DPS):
        return normaliser(a) * mp.exp(-_m(a) * abs(int(k) - int(shift)))


def tail_mass_outside(a, K):
    """P[|DLap(a)| > K] = 2 c r^{K+1} / (1 - r) = 2 r^{K+1} / (1 + r), r = e^{-a}."""
    with mp.workdps(DPS):
        r = mp.exp(-_m(a))
        return 2 * r ** (K + 1) / (1 + r)


# --- the single-step pair in closed form --------------------------------------------------------

def base_atoms(a, D):
    """The D + 1 cells of (P, Q) = (DLap(a), DLap(a) + D), j = 0..D, as (p_j, q_j, m_j) with the
    loss a m_j, m_j = D - 2j (formulas in the module docstring)."""
    D = int(D)
    with mp.workdps(DPS):
        a = _m(a)
        r = mp.exp(-a)
        c = normaliser(a)
        out = []
        for j in range(D + 1):
            if j == 0:
                p = 1 / (1 + r)
            elif j == D:
                p = r ** D / (1 + r)
            else:
                p = c * r ** j
            m = D - 2 * j
            out.append((p, p * mp.exp(-a * m), m))
        return out


def _geometric(x, n):
    """sum_{j=1}^{n} x^j (n >= 0), in closed form."""
    if n <= 0:
        return mp.mpf(0)
    if x == 1:
        return mp.mpf(n)
    return x * (1 - x ** n) / (1 - x)


def delta_closed(a, D, eps):
    """delta(eps) of the single step by geometric sums. The cells with loss a(D - 2j) > eps are
    j = 0..J-1 with J = min(D + 1, max(0, ceil((D - eps/a) / 2))); then
        delta = p_0 (1 - e^{eps - aD})
              + c sum_{j=1}^{n} r^j - c e^{eps - aD} sum_{j=1}^{n} r^{-j}   (n = min(J-1, D-1))
              + [J = D + 1] p_D (1 - e^{eps + aD}),
    since e^eps q_j = p_j e^{eps - a(D - 2j)} = c e^{eps - aD} r^{-j} for an interior j."""
    D = int(D)
    with mp.workdps(DPS):
        a, eps = _m(a), _m(eps)
        r = mp.exp(-a)
        c = normaliser(a)
        J = int(mp.ceil((D - eps / a) / 2))
        J = min(D + 1, max(0, J))
        # a cell exactly at the loss eps contributes 0 either way; keep J honest at the edge
        if J == 0:
            return mp.mpf(0)
        s = (1 - mp.exp(eps - a * D)) / (1 + r)
        n = min(J - 1, D - 1)
        s += c * _geometric(r, n) - c * mp.exp(eps - a * D) * _geometric(1 / r, n)
        if J == D + 1:
            s += r ** D / (1 + r) * (1 - mp.exp(eps + a * D))
        return s


@functools.lru_cache(maxsize=32)
def truncated_pmfs(a, D, K):
    """(P(k), Q(k)) for k = -K .. K + D straight from the pmf c e^{-a|k - shift|} (the powers
    of r = e^{-a} by repeated multiplication, independent of the cell formulas)."""
    with mp.workdps(DPS):
        c = normaliser(a)
        r = mp.exp(-_m(a))
        n = 2 * K + D + 1
        powers = [mp.mpf(1)]
        for _ in range(K + D + 1):
            powers.append(powers[-1] * r)
        P = [c * powers[abs(k)] for k in range(-K, K + D + 1)]
        Q = [c * powers[abs(k - D)] for k in range(-K, K + D + 1)]
        assert len(P) == n
        return tuple(P), tuple(Q)


def delta_truncated(a, D, eps, K):
    """sum_{k=-K}^{K+D} (P(k) - e^eps Q(k))_+ straight from the pmfs; the exact value lies in
    [this, this + P[|X| > K]] (each left-out term is at most P(k))."""
    P, Q = truncated_pmfs(a, int(D), int(K))
    with mp.workdps(DPS):
        x = mp.exp(_m(eps))
        s = mp.fsum(max(p - x * q, 0) for p, q in zip(P, Q))
        return s, tail_mass_outside(a, K)


# --- mixtures of shifted DLaps, cell by cell ----------------------------------------------------

def mixture_cells(a, mixtures):
    """Cell masses of several mixtures of shifted DLap(a)'s, each given as [(weight, shift)].
    With lo, hi the smallest and the largest shift, every component has ratio r^{-1} per step on
    k <= lo and r per step on k >= hi, so the cells k <= lo, each integer lo < k < hi, k >= hi
    have a constant ratio between any two of the mixtures. Masses: a component at s >= lo puts
    r^{s-lo} / (1 + r) on k <= lo; one at s <= hi puts r^{hi-s} / (1 + r) on k >= hi.
    Returns one list of cell masses per mixture (same cells, same order)."""
    shifts = [int(s) for mix in mixtures for _, s in mix]
    lo, hi = min(shifts), max(shifts)
    with mp.workdps(DPS):
        a = _m(a)
        r = mp.exp(-a)
        out = []
        for mix in mixtures:
            cells = []
            if lo == hi:
                out.append([mp.fsum(_m(w) for w, _ in mix)])
                continue
            cells.append(mp.fsum(_m(w) * r ** (int(s) - lo) / (1 + r) for w, s in mix))
            for k in range(lo + 1, hi):
                cells.append(mp.fsum(_m(w) * pmf(a, k, s) for w, s in mix))
            cells.append(mp.fsum(_m(w) * r ** (hi - int(s)) / (1 + r) for w, s in mix))
            out.append(cells)
        return out


def pair_atoms(a, mix_p, mix_q):
    """The finite pair [(p_i, q_i)] of two mixtures of shifted DLap(a)'s."""
    ps, qs = mixture_cells(a, [mix_p, mix_q])
    return list(zip(ps, qs))


def base_pair(a, D):
    """[(p_j, q_j)] of the closed form (the loss index dropped)."""
    return [(p, q) for p, q, _ in base_atoms(a, D)]


def poisson_pairs(a, D, rate):
    """The two add/remove directions of Poisson subsampling at ``rate`` (Zhu, Dong & Wang 2022):
    remove ((1-q) Q + q P, Q) and add (Q, (1-q) Q + q P), cell by cell from the closed form."""
    with mp.workdps(DPS):
        q = _m(rate)
        cells = base_pair(a, D)
        mix = [((1 - q) * qq + q * pp) for pp, qq in cells]
        remove = [(x, qq) for x, (_, qq) in zip(mix, cells)]
        add = [(qq, x) for x, (_, qq) in zip(mix, cells)]
        return remove, add


# --- hockey stick, inversion, Renyi ------------------------------------------------------------

def delta_of(pair, eps):
    """H_{e^eps}(P || Q) = sum_i (p_i - e^eps q_i)_+ of a finite pair."""
    with mp.workdps(DPS):
        x = mp.exp(_m(eps))
        return mp.fsum(max(p - x * q, 0) for p, q in pair)


def delta_max(pairs, eps):
    return max(delta_of(pr, eps) for pr in pairs)


def _levels(pair):
    """Atoms grouped by loss, largest loss first: [(loss, P-mass, Q-mass)] (q = 0: loss +inf)."""
    with mp.workdps(DPS):
        items = sorted(((mp.inf if q == 0 else mp.log(p / q), p, q) for p, q in pair if p > 0),
                       key=lambda t: t[0], reverse=True)
        return items


def epsilon_of(pair, delta):
    """The exact eps(delta) = inf{eps >= 0 : delta(eps) <= delta} of a finite pair. Between two
    consecutive losses l_{k+1} <= eps <= l_k, delta(eps) = A_k - e^eps B_k with A_k, B_k the P-
    and Q-masses of the atoms of loss >= l_k (plus the P-mass at loss +inf in A_k), so the
    crossing is eps = log((A_k - delta) / B_k) on the first segment (from the top) whose lower
    end has delta(l_{k+1}) >= delta; delta(eps) is continuous and strictly decreasing below the
    largest finite loss, and constant (the mass at +inf) above it."""
    with mp.workdps(DPS):
        delta = _m(delta)
        lv = _levels(pair)
        A = mp.fsum(p for l, p, _ in lv if l == mp.inf)
        B = mp.mpf(0)
        lv = [t for t in lv if t[0] != mp.inf]
        if A > delta:
            return mp.inf
        if not lv:
            return mp.mpf(0)
        if A == delta:
            return max(lv[0][0], mp.mpf(0))
        for k, (l, p, q) in enumerate(lv):
            A += p
            B += q
            at_next = A - mp.exp(lv[k + 1][0]) * B if k + 1 < len(lv) else A
            if at_next >= delta:
                return max(mp.log((A - delta) / B), mp.mpf(0))
        return mp.mpf(0)


def epsilon_max(pairs, delta):
    """eps(delta) of the worse of several pairs (each delta curve is non-increasing, so
    max_i delta_i(eps) <= delta iff eps >= max_i eps_i(delta))."""
    return max(epsilon_of(pr, delta) for pr in pairs)


def epsilon_bisect(pairs, delta, iters=200):
    """The same eps(delta) by bisection of max_i delta_i on [0, largest finite loss]."""
    with mp.workdps(DPS):
        delta = _m(delta)
        hi = max(max(l for l, _, _ in _levels(pr)) for pr in pairs)
        lo = mp.mpf(0)
        if delta_max(pairs, lo) <= delta:
            return lo
        for _ in range(iters):
            mid = (lo + hi) / 2
            if delta_max(pairs, mid) <= delta:
                hi = mid
            else:
                lo = mid
        return hi


def rdp_of(pair, alpha):
    """D_alpha(P || Q) = log(sum_i p_i^alpha q_i^{1-alpha}) / (alpha - 1)."""
    with mp.workdps(DPS):
        al = _m(alpha)
        s = mp.fsum(p ** al * q ** (1 - al) for p, q in pair if p > 0)
        return mp.log(s) / (al - 1)


def rdp_closed(a, D, alpha):
    """D_alpha of the single step by a geometric sum: with l = a D and t = alpha - 1,
        sum_j p_j e^{t a (D - 2j)} = (e^{t l} + r^D e^{-t l}) / (1 + r)
                                    + c e^{t l} sum_{j=1}^{D-1} (r e^{-2 t a})^j."""
    D = int(D)
    with mp.workdps(DPS):
        a, t = _m(a), _m(alpha) - 1
        r = mp.exp(-a)
        c = normaliser(a)
        l = a * D
        s = (mp.exp(t * l) + r ** D * mp.exp(-t * l)) / (1 + r)
        s += c * mp.exp(t * l) * _geometric(r * mp.exp(-2 * t * a), D - 1)
        return mp.log(s) / t


def rdp_truncated(a, D, alpha, K):
    """sum_{k=-K}^{K+D} P(k)^alpha Q(k)^{1-alpha}, straight from the pmfs (a lower estimate of
    the exact sum: every term is positive), as log(.)/(alpha-1)."""
    P, Q = truncated_pmfs(a, int(D), int(K))
    with mp.workdps(DPS):
        al = _m(alpha)
        s = mp.fsum(p ** al * q ** (1 - al) for p, q in zip(P, Q))
        return mp.log(s) / (al - 1)


# --- composition -------------------------------------------------------------------------------

def compose_lattice(a, D, T):
    """T-fold composition of the single step, exactly: the loss is a times an integer
    m = sum_t (D - 2 j_t), whose P-law is the T-th convolution power of (p_j at m = D - 2j);
    the Q-mass of the atom m is its P-mass times e^{-a m}. Returns [(p_m, q_m)]."""
    D, T = int(D), int(T)
    with mp.workdps(DPS):
        a = _m(a)
        step = [p for p, _, _ in base_atoms(a, D)]        # index j = 0..D, loss D - 2j
        law = [mp.mpf(1)]                                 # index J = sum j_t, loss T D - 2 J
        for _ in range(T):
            new = [mp.mpf(0)] * (len(law) + D)
            for i, x in enumerate(law):
                for j, y in enumerate(step):
                    new[i + j] += x * y
            law = new
        out = []
        for J, p in enumerate(law):
            m = T * D - 2 * J
            out.append((p, p * mp.exp(-a * m)))
        return out


def compose_product(pair, T):
    """T-fold product of a finite pair by enumerating multisets of its atoms (atoms of the
    product that are permutations of each other are merged with their multinomial count)."""
    T = int(T)
    with mp.workdps(DPS):
        out = []
        for combo in itertools.combinations_with_replacement(range(len(pair)), T):
            counts = Counter(combo)
            mult = math.factorial(T)
            for n in counts.values():
                mult //= math.factorial(n)
            p = mp.mpf(mult)
            q = mp.mpf(mult)
            for i in combo:
                p *= pair[i][0]
                q *= pair[i][1]
            out.append((p, q))
        return out


def compose_brute(pair, T):
    """The T-fold product atom by atom (no merging): (len(pair))^T atoms."""
    with mp.workdps(DPS):
        out = []
        for combo in itertools.product(pair, repeat=int(T)):
            p = mp.fprod(x for x, _ in combo)
            q = mp.fprod(y for _, y in combo)
            out.append((p, q))
        return out
