"""Soundness battery: every answer dpamp reports must be a proven upper bound of the TRUE value
(and its ``lower``, where not None, a proven lower bound), checked against exact computations
written independently in this file. Nothing here asks dpamp for the truth; only the public API
(``import dpamp as dp``) is used.

Oracles (each validated against a closed form or a brute force in the ``test_oracle_*`` tests):

* ``PLD`` / ``tfold`` / ``Composed``: privacy-loss distributions of discrete pairs as finite atom
  lists, T-fold composition by exact multinomial enumeration, products of different parts by
  convolution, delta(eps) = P[L = +inf] + sum_{l > eps} (P_l - e^eps Q_l) and eps(delta) by
  Newton's method on the piecewise-linear convex curve x = e^eps -> delta (exact: it stops on
  the piece that contains the root and solves the piece's linear equation), all in 60-digit
  mpmath arithmetic.
* ``Binomial``: the T-fold composition of a two-atom pair for huge T (10^6, 7 x 10^6): the same
  sums over the binomial terms that matter (log-concave pmf: summation outwards from the mode or
  from the threshold until the terms are below 1e-80 of the largest one).
* closed forms for the Gaussian and Laplace pairs (checked against mpmath quadrature);
  Rényi divergences of discrete pairs (direct sums, unbounded exponent range in mpmath).
* brute force over tiny populations (n <= 6) for sampling without / with replacement and
  Poisson sampling: every dataset over the alphabet {0, 1}, every neighbour under the relation
  the docs state, a concrete member of the mechanism class (the pair mechanism: output P if
  f(sample) = 1 else Q, for every Boolean f of the sample; it is (eps, delta)-DP under any
  relation whenever the pair (P, Q) is, in both orders). A concrete member's delta is a LOWER
  bound on the class's worst case, so dpamp's upper bound must be >= it.

Tolerances. dpamp claims proven bounds, so comparisons are made with zero tolerance, except for
the oracle's own rounding: every delta the oracle computes carries an absolute error bound of
1e-45 x (the sum of the magnitudes of the terms it added), far below anything a double can
resolve (60 significant digits are carried); comparisons allow exactly that much.
Epsilons are checked in delta-space (an upper bound eps_up is sound iff delta_true(eps_up) <=
delta; a lower bound eps_lo iff delta_true(eps_lo) >= delta), so no tolerance on eps is needed.

Hypothesis runs without its shrinking phase (``phases``): many properties fail on the current
code, and shrinking a failure re-runs the oracle and dpamp hundreds of times; the falsifying
example is still printed and reproducible (``derandomize=True``).
"""
from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import re
from fractions import Fraction

import mpmath as mp
import pytest
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import strategies as st

import dpamp as dp

DPS = 60
SLACK = mp.mpf(10) ** -45  # relative rounding budget of the oracle (see the module docstring)


def M(x):
    """A double (or int / Fraction) as an exact mpmath number at the oracle's precision."""
    if isinstance(x, Fraction):
        return mp.mpf(x.numerator) / x.denominator
    return mp.mpf(x)


# ------------------------------------------------------------------------------------------
# Pairs of output distributions (lists of atoms (P_i, Q_i)); the remove order: P = M(x ∪ {v}).
# ------------------------------------------------------------------------------------------

def rr_pair(p):
    """Binary randomized response RR(p) (report the bit with probability p): with
    q = max(p, 1 - p) the pair ((q, 1 - q), (1 - q, q)); p < 1/2 is the same mechanism
    relabelled (dp.RandomizedResponse docstring)."""
    with mp.workdps(DPS):
        q = max(M(p), 1 - M(p))
        return [(q, 1 - q), (1 - q, q)]


def pure_pair(eps):
    """The worst pair of pure eps-DP: binary RR with p = e^eps / (1 + e^eps)."""
    with mp.workdps(DPS):
        a = 1 / (1 + mp.exp(-M(eps)))
        return [(a, 1 - a), (1 - a, a)]


def eps_delta_pair(eps, delta):
    """The worst pair of (eps, delta)-DP (Kairouz et al.; 004 footnote 16): P = (delta,
    (1-delta) a, (1-delta)(1-a), 0), Q = (0, (1-delta)(1-a), (1-delta) a, delta),
    a = e^eps / (1 + e^eps)."""
    with mp.workdps(DPS):
        a, d = 1 / (1 + mp.exp(-M(eps))), M(delta)
        return [(d, mp.mpf(0)), ((1 - d) * a, (1 - d) * (1 - a)),
                ((1 - d) * (1 - a), (1 - d) * a), (mp.mpf(0), d)]


def poisson_remove(pair, q):
    """Poisson subsampling with rate q, remove order: (q P + (1 - q) Q, Q)."""
    with mp.workdps(DPS):
        q = M(q)
        return [(q * P + (1 - q) * Q, Q) for P, Q in pair]


def swap(pair):
    return [(Q, P) for P, Q in pair]


def hockey_stick(pair, eps):
    """H_{e^eps}(P || Q) = sum_i (P_i - e^eps Q_i)_+ of one pair (eps may be negative)."""
    with mp.workdps(DPS):
        x = mp.exp(M(eps))
        return mp.fsum(max(P - x * Q, 0) for P, Q in pair)


def renyi(pair, alpha):
    """D_alpha(P || Q) = log(sum_i P_i^alpha Q_i^(1 - alpha)) / (alpha - 1), alpha > 1 (exact
    for the order given as a double; mpmath's exponent range is unbounded, so alpha = 1e19 is
    fine). Returns +inf if some Q_i = 0 < P_i."""
    with mp.workdps(DPS + 40):
        a = M(alpha)
        if any(Q == 0 and P > 0 for P, Q in pair):
            return mp.inf
        s = mp.fsum(mp.exp(a * mp.log(P) + (1 - a) * mp.log(Q)) for P, Q in pair if P > 0)
        return mp.log(s) / (a - 1)


# ------------------------------------------------------------------------------------------
# Privacy-loss distributions, T-fold composition, products, delta(eps) and eps(delta).
# ------------------------------------------------------------------------------------------

class PLD:
    """The privacy-loss distribution of a pair: ``p_inf`` = P[L = +inf] (atoms with Q = 0),
    ``atoms`` = sorted list of (loss, P, Q) with P, Q > 0. Atoms with P = 0 (loss -inf) never
    contribute to delta(eps) for eps >= 0 and are dropped."""

    def __init__(self, p_inf, atoms):
        self.p_inf = p_inf
        self.atoms = sorted(atoms, key=lambda a: a[0])
        self.p_fin = mp.fsum(a[1] for a in self.atoms)

    def __len__(self):
        return len(self.atoms)


def _compositions(total, k):
    """All (n_1, ..., n_k) of non-negative integers with sum ``total``."""
    if k == 1:
        yield (total,)
        return
    for n in range(total + 1):
        for rest in _compositions(total - n, k - 1):
            yield (n,) + rest


def tfold(pair, T):
    """The PLD of the T-fold product of ``pair``: the finite atoms indexed by count vectors
    (n_1..n_k) of the pair's finite atoms, with multinomial probabilities; P[L = +inf] is the
    P-mass of the paths that hit an atom with Q = 0."""
    with mp.workdps(DPS):
        fin = [(P, Q) for P, Q in pair if P > 0 and Q > 0]
        s_inf = mp.fsum(P for P, Q in pair if P > 0 and Q == 0)
        s_fin = mp.fsum(P for P, _ in fin)
        logs = [(mp.log(P), mp.log(Q)) for P, Q in fin]
        lgT = mp.loggamma(T + 1)
        atoms = []
        for ns in _compositions(T, len(fin)):
            lm = lgT - mp.fsum(mp.loggamma(n + 1) for n in ns)
            lp = lm + mp.fsum(n * lP for n, (lP, _) in zip(ns, logs))
            lq = lm + mp.fsum(n * lQ for n, (_, lQ) in zip(ns, logs))
            atoms.append((mp.fsum(n * (lP - lQ) for n, (lP, lQ) in zip(ns, logs)),
                          mp.exp(lp), mp.exp(lq)))
        p_inf = (s_fin + s_inf) ** T - s_fin ** T
        return PLD(p_inf, atoms)


def product(a, b):
    """The PLD of the product of two independent pairs (losses add)."""
    with mp.workdps(DPS):
        atoms = [(la + lb, Pa * Pb, Qa * Qb) for la, Pa, Qa in a.atoms for lb, Pb, Qb in b.atoms]
        p_inf = (a.p_fin + a.p_inf) * (b.p_fin + b.p_inf) - a.p_fin * b.p_fin
        return PLD(p_inf, atoms)


class Composed:
    """The composition of several PLDs. All parts but the largest are multiplied out ("outer");
    the largest ("inner") is kept with suffix sums, so that
    delta(eps) = P[L = inf] + sum_a P_a [SP_inner(eps - l_a) - e^(eps - l_a) SQ_inner(eps - l_a)]
    with SP, SQ the inner masses above a loss: = A(eps) - e^eps B(eps) on each piece."""

    def __init__(self, plds):
        with mp.workdps(DPS):
            plds = sorted(plds, key=len)
            inner = plds[-1]
            outer = PLD(mp.mpf(0), [(mp.mpf(0), mp.mpf(1), mp.mpf(1))])
            for p in plds[:-1]:
                outer = product(outer, p)
            self.outer = outer
            self.losses = [a[0] for a in inner.atoms]
            n = len(inner.atoms)
            sp, sq = [mp.mpf(0)] * (n + 1), [mp.mpf(0)] * (n + 1)
            for i in range(n - 1, -1, -1):
                sp[i] = sp[i + 1] + inner.atoms[i][1]
                sq[i] = sq[i + 1] + inner.atoms[i][2]
            self.sp, self.sq = sp, sq
            self.p_inf = ((outer.p_fin + outer.p_inf) * (inner.p_fin + inner.p_inf)
                          - outer.p_fin * inner.p_fin)
            self.max_loss = (outer.atoms[-1][0] + self.losses[-1]) if n else -mp.inf

    def AB(self, eps):
        """(A, B) with delta = A - e^eps B on the piece that contains eps (losses > eps)."""
        with mp.workdps(DPS):
            eps = M(eps)
            A, B = self.p_inf, mp.mpf(0)
            for la, Pa, Qa in self.outer.atoms:
                j = bisect.bisect_right(self.losses, eps - la)
                A += Pa * self.sp[j]
                B += Qa * self.sq[j]
            return A, B

    def delta(self, eps):
        """(delta_true(eps), absolute error bound of the oracle's rounding); memoised."""
        memo = self.__dict__.setdefault("_memo", {})
        key = M(eps) if eps != math.inf else mp.inf
        if key not in memo:
            with mp.workdps(DPS):
                if eps == math.inf:
                    memo[key] = (self.p_inf, self.p_inf * SLACK)
                else:
                    A, B = self.AB(eps)
                    xB = mp.exp(M(eps)) * B
                    memo[key] = (max(A - xB, mp.mpf(0)), (A + xB + 1e-300) * SLACK)
        return memo[key]

    def epsilon(self, delta, start=0):
        """eps_true(delta) = min{eps >= 0 : delta_true(eps) <= delta} by Newton's method in
        x = e^eps: delta is convex and piecewise linear in x, so the line of the current piece
        (a supporting line) meets delta below the root; the iterates increase to the root and
        stop on its piece, where the piece's equation is solved exactly. ``start`` may be any
        point left of the root (it is checked: if delta(start) <= delta, 0 is used)."""
        with mp.workdps(DPS):
            d = M(delta)
            eps = M(start)
            if eps > 0 and self.delta(eps)[0] <= d:
                eps = mp.mpf(0)
            for _ in range(10_000):
                A, B = self.AB(eps)
                if A - mp.exp(eps) * B <= d:
                    return eps
                if B == 0:  # only the mass at +inf is left above eps: delta stays A > d
                    return mp.inf
                new = mp.log((A - d) / B)
                if new <= eps * (1 + mp.mpf(10) ** -50) + mp.mpf(10) ** -55:
                    return max(eps, new)
                eps = new
            raise RuntimeError("Newton did not converge")


class Binomial:
    """The T-fold composition of a two-atom pair ((P1, P2), (Q1, Q2)), P1/Q1 > P2/Q2, for huge
    T: path k (k copies of atom 1) has loss T l2 + k (l1 - l2) and probabilities
    C(T, k) P1^k P2^(T-k), C(T, k) Q1^k Q2^(T-k). Sums over k > k0 of log-concave terms are
    taken outwards from the larger of k0 + 1 and the mode, and stop when the terms fall below
    1e-80 of the largest one summed (the rest is a geometric tail, negligible at 60 digits)."""

    def __init__(self, pair, T):
        with mp.workdps(DPS):
            (P1, Q1), (P2, Q2) = pair
            if P1 * Q2 < P2 * Q1:
                (P1, Q1), (P2, Q2) = (P2, Q2), (P1, Q1)
            self.T = T
            self.P, self.Q = (P1, P2), (Q1, Q2)
            self.l1, self.l2 = mp.log(P1 / Q1), mp.log(P2 / Q2)

    def _tail(self, w1, w2, k_start):
        """sum_{k >= k_start} C(T, k) w1^k w2^(T - k)."""
        T = self.T
        if k_start > T:
            return mp.mpf(0)
        k_start = max(k_start, 0)
        mode = min(max(int(mp.floor((T + 1) * w1 / (w1 + w2))), 0), T)
        lw1, lw2, lgT = mp.log(w1), mp.log(w2), mp.loggamma(T + 1)

        def logterm(k):
            return lgT - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lw1 + (T - k) * lw2

        r = w1 / w2
        top = max(k_start, mode)
        t0 = mp.exp(logterm(top))
        total, t, k = t0, t0, top
        while k < T:  # upwards from the top (terms decrease)
            t = t * (T - k) / (k + 1) * r
            k += 1
            total += t
            if t < t0 * mp.mpf(10) ** -80:
                break
        t, k = t0, top
        while k > k_start:  # downwards to k_start (terms decrease below the mode)
            t = t * k / (T - k + 1) / r
            k -= 1
            total += t
            if t < t0 * mp.mpf(10) ** -80:
                break
        return total

    def AB(self, eps):
        with mp.workdps(DPS):
            eps = M(eps)
            k0 = mp.floor((eps - self.T * self.l2) / (self.l1 - self.l2))
            k = int(k0) + 1
            if self.T * self.l2 + (k - 1) * (self.l1 - self.l2) > eps:
                k -= 1  # rounding: include every path whose loss exceeds eps
            return self._tail(*self.P, k), self._tail(*self.Q, k)

    def start(self, delta):
        """A point a little left of eps(delta), from a float64 bisection over all T + 1 paths
        (only to save Newton steps; ``epsilon`` checks that it is left of the root)."""
        import numpy as np
        from scipy.special import gammaln
        k = np.arange(self.T + 1, dtype=float)
        lc = gammaln(self.T + 1) - gammaln(k + 1) - gammaln(self.T - k + 1)
        lP = lc + k * float(mp.log(self.P[0])) + (self.T - k) * float(mp.log(self.P[1]))
        lQ = lc + k * float(mp.log(self.Q[0])) + (self.T - k) * float(mp.log(self.Q[1]))
        loss = lP - lQ

        def d(e):
            m = loss > e
            return np.sum(np.exp(lP[m]) - np.exp(e + lQ[m]))

        lo, hi = 0.0, float(loss.max())
        if d(lo) <= delta:
            return 0.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
        return lo * (1 - 1e-6)

    def epsilon(self, delta):
        return Composed.epsilon(self, delta, start=self.start(delta))

    delta = Composed.delta
    p_inf = mp.mpf(0)


@functools.cache
def truth_of_plan(plan):
    """The exact oracle of a plan: tuple of parts (kind, params, poisson rate or None, count).
    Returns the list of ``Composed`` for each direction to consider (remove; and add, when
    some part is Poisson-subsampled, since the other pairs are symmetric under swap)."""
    remove, add = [], []
    for kind, params, q, count in plan:
        pair = {"rr": rr_pair, "pure": pure_pair, "epsdelta": eps_delta_pair}[kind](*params)
        if q is not None:
            pair = poisson_remove(pair, q)
        remove.append(tfold(pair, count))
        if any(p[2] is not None for p in plan):
            add.append(tfold(swap(pair), count))
    return [Composed(remove)] + ([Composed(add)] if add else [])


def max_delta(dirs, eps):
    """(max over directions of delta_true(eps), its error bound)."""
    vals = [c.delta(eps) for c in dirs]
    return max(v for v, _ in vals), max(e for _, e in vals)


def max_epsilon(dirs, delta):
    return max(c.epsilon(delta) for c in dirs)


# ------------------------------------------------------------------------------------------
# Continuous closed forms.
# ------------------------------------------------------------------------------------------

def erfc(x):
    """erfc in mpmath, also for |x| beyond what mp.erfc accepts (it fails near 1e154): for
    |x| >= 1e6 the asymptotic series exp(-x^2)/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4)
    - 15/(8x^6)), whose error is below 105/(16 x^8) relative (< 1e-47)."""
    if abs(x) < 10**6:
        return mp.erfc(x)
    y = abs(x)
    u = 1 / (2 * y * y)
    tail = mp.exp(-y * y) / (y * mp.sqrt(mp.pi)) * (1 - u + 3 * u**2 - 15 * u**3)
    return tail if x > 0 else 2 - tail


def gaussian_delta(mu, eps):
    """delta(eps) of N(mu, 1) vs N(0, 1) (either order): Phi(mu/2 - eps/mu) - e^eps
    Phi(-mu/2 - eps/mu), in 60-digit mpmath with erfc (no cancellation in the tails beyond the
    working precision for the arguments used here; mpmath's exponents are unbounded)."""
    with mp.workdps(DPS):
        mu, eps = M(mu), M(eps)
        a = erfc(-(mu / 2 - eps / mu) / mp.sqrt(2)) / 2
        b = mp.exp(eps) * erfc((mu / 2 + eps / mu) / mp.sqrt(2)) / 2
        return a - b


def gaussian_epsilon(mu, delta):
    """eps(delta) of the Gaussian pair by bisection on the closed form (60 digits)."""
    with mp.workdps(DPS):
        d = M(delta)
        if gaussian_delta(mu, 0) <= d:
            return mp.mpf(0)
        lo, hi = mp.mpf(0), mp.mpf(1)
        while gaussian_delta(mu, hi) > d:
            lo, hi = hi, hi * 2
        for _ in range(400):
            mid = (lo + hi) / 2
            if gaussian_delta(mu, mid) > d:
                lo = mid
            else:
                hi = mid
        return hi


def laplace_delta(eta, eps):
    """delta(eps) of Lap(eta, 1) vs Lap(0, 1): [1 - exp((eps - eta)/2)]_+ (derived from the loss
    |x| - |x - eta|, which is eta for x >= eta, 2x - eta between, -eta below)."""
    with mp.workdps(DPS):
        return max(-mp.expm1((M(eps) - M(eta)) / 2), 0)


def subsampled_gaussian_delta(mu, q, eps):
    """max over both orders of H_{e^eps} for Poisson(q)-subsampled N(mu, 1) vs N(0, 1), by the
    identities (q P + (1-q) Q - x Q)_+ = q (P - x' Q)_+ with x' = 1 + (x - 1)/q, and
    (Q - x (q P + (1-q) Q))_+ = c (Q - x'' P)_+ with c = 1 - x (1-q), x'' = x q / c (0 when
    c <= 0); the Gaussian curve holds for any x' > 0 (negative eps too) and is symmetric."""
    with mp.workdps(DPS):
        x, q = mp.exp(M(eps)), M(q)
        remove = q * gaussian_delta(mu, mp.log(1 + (x - 1) / q))
        c = 1 - x * (1 - q)
        add = c * gaussian_delta(mu, mp.log(x * q / c)) if c > 0 else mp.mpf(0)
        return max(remove, add)


# ------------------------------------------------------------------------------------------
# Brute force over tiny populations: concrete members of subsampled mechanism classes.
# ------------------------------------------------------------------------------------------

def sample_law(scheme, data):
    """{(ones, zeros) of the sample: probability} for a dataset ``data`` (tuple of bits), by
    enumerating every sample: ("wor", m) all m-subsets of the indices, ("wr", m) all m-tuples of
    indices (draws with replacement), ("poisson", q) every subset with q^|S| (1-q)^(n-|S|)."""
    kind, par = scheme
    n = len(data)
    law = {}

    def add(idx, w):
        ones = sum(data[i] for i in idx)
        key = (ones, len(idx) - ones)
        law[key] = law.get(key, 0) + w

    if kind == "wor":
        subsets = list(itertools.combinations(range(n), par))
        for s in subsets:
            add(s, Fraction(1, len(subsets)))
    elif kind == "wr":
        for s in itertools.product(range(n), repeat=par):
            add(s, Fraction(1, n ** par))
    elif kind == "poisson":
        q = Fraction(par)
        for bits in itertools.product((0, 1), repeat=n):
            s = [i for i in range(n) if bits[i]]
            add(s, q ** len(s) * (1 - q) ** (n - len(s)))
    return law


def neighbours(relation, n):
    """Ordered pairs (x, x') of datasets over {0, 1}: substitution = equal size n, one record
    changed; add/remove with ``n`` = the hybrid of 000 Thm 11 (one of the two has n records:
    (n, n-1) and (n+1, n), both orders); "addremove_any" = every size <= n, both orders."""
    out = []
    if relation == "substitution":
        for x in itertools.product((0, 1), repeat=n):
            for i in range(n):
                out.append((x, x[:i] + (1 - x[i],) + x[i + 1:]))
    else:
        sizes = [n, n + 1] if relation == "addremove" else range(1, n + 1)
        for size in sizes:
            for x in itertools.product((0, 1), repeat=size):
                for i in range(size):
                    y = x[:i] + x[i + 1:]
                    if len(y) == 0:
                        continue
                    out.append((x, y))
                    out.append((y, x))
    return out


def concrete_weights(scheme, relation, n, max_keys=12):
    """Every distinct (w, w') = (Pr[f(S(x)) = 1], Pr[f(S(x')) = 1]) over neighbours (x, x')
    and Boolean functions f of the sample's multiset of values. The pair mechanism "P if f = 1
    else Q" then outputs (w P + (1-w) Q, w' P + (1-w') Q) on (x, x')."""
    ws = set()
    for x, y in neighbours(relation, n):
        lx, ly = sample_law(scheme, x), sample_law(scheme, y)
        keys = sorted(set(lx) | set(ly))
        assert len(keys) <= max_keys
        for bits in itertools.product((0, 1), repeat=len(keys)):
            w = sum(lx.get(k, 0) for k, b in zip(keys, bits) if b)
            v = sum(ly.get(k, 0) for k, b in zip(keys, bits) if b)
            if w != v:  # (1-w, 1-v) is the same pair relabelled (P, Q swap-symmetric here)
                ws.add(min((w, v), (1 - w, 1 - v)))
    return ws


def mixture_pair(pair, w, v):
    """(w P + (1-w) Q, v P + (1-v) Q)."""
    with mp.workdps(DPS):
        w, v = M(w), M(v)
        return [(w * P + (1 - w) * Q, v * P + (1 - v) * Q) for P, Q in pair]


@functools.cache
def concrete_members(scheme, relation, n, inner, T):
    """The T-fold PLDs (``Composed``) of every concrete member found by brute force."""
    pair = {"rr": rr_pair, "pure": pure_pair, "epsdelta": eps_delta_pair}[inner[0]](*inner[1])
    return [Composed([tfold(mixture_pair(pair, w, v), T)])
            for w, v in sorted(concrete_weights(scheme, relation, n))]


# ------------------------------------------------------------------------------------------
# Checking dpamp's answers.
# ------------------------------------------------------------------------------------------

def _num(x):
    return mp.inf if x == math.inf else M(x)


def is_documented_refusal(method, exc):
    """Refusals the docs describe for a valid plan: ``OutOfReach`` (docs/pld.md: a ValueError
    naming the numerical limit; ``auto`` falls back), and basic / advanced composition when
    delta is below the sum of the parts' deltas (the theorems' hypothesis; 004 Thms 1, 22)."""
    if not isinstance(exc, ValueError) or "nan" in str(exc).lower():
        return False
    if type(exc).__name__ == "OutOfReach":
        return True
    return method in ("basic", "advanced") and "sum of the parts' deltas" in str(exc)


def check_epsilon_answer(g, delta_q, delta_of, what, truth=None, eps_true=None):
    """``g`` answers eps(delta_q). delta_of(eps) -> (delta_true, err). Checks, in delta space:
    the claim (g.epsilon, g.delta) holds; g.delta <= delta_q; g.lower <= the true eps.
    ``truth()``, if given, is the true eps, computed for the failure message only.
    ``eps_true``, if given (an exact value), short-cuts the evaluations of delta_true that
    monotonicity already decides: eps_up clearly above it is sound, and so is eps_lo clearly
    below it (delta_true is non-increasing); values within 1e-30 of it are checked as usual."""
    if truth is not None:
        what = _Lazy(lambda w=what: f"{w} [true eps {mp.nstr(truth(), 12)}]")
    if eps_true is not None and g.delta == delta_q:
        with mp.workdps(DPS):
            up_ok = M(g.epsilon) > eps_true * (1 + mp.mpf(10) ** -30) if g.epsilon < math.inf \
                else True
            low_ok = g.lower is None or (not math.isnan(g.lower)
                                         and M(g.lower) < eps_true * (1 - mp.mpf(10) ** -30))
        if up_ok and low_ok and g.epsilon >= 0 and isinstance(g.epsilon, float):
            return
    assert isinstance(g.epsilon, float) and not math.isnan(g.epsilon), f"{what}: {g}"
    assert g.epsilon >= 0, f"{what}: negative epsilon {g}"
    assert g.delta <= delta_q, f"{what}: answered for delta {g.delta} > {delta_q}"
    d, err = delta_of(g.epsilon)
    assert g.epsilon == math.inf or d - err <= _num(g.delta), (
        f"{what}: UNSOUND upper: claims ({g.epsilon!r}, {g.delta!r})-DP but the true "
        f"delta({g.epsilon!r}) = {mp.nstr(d, 12)}")
    if g.lower is not None:
        assert not math.isnan(g.lower), f"{what}: lower is nan"
        if g.lower > 0:
            d, err = delta_of(g.lower)
            assert d + err >= M(delta_q), (
                f"{what}: UNSOUND lower {g.lower!r}: true delta({g.lower!r}) = "
                f"{mp.nstr(d, 12)} <= {delta_q!r}, so the true eps is below it")


class _Lazy:
    """A string computed when it is first formatted (assert messages are formatted only on
    failure)."""

    def __init__(self, make):
        self.make = make

    def __format__(self, spec):
        return format(self.make(), spec)

    __str__ = __repr__ = lambda self: self.make()


def check_delta_answer(g, eps_q, delta_of, what):
    """``g`` answers delta(eps_q): g.delta >= delta_true(eps_q) (and the claim holds at
    g.epsilon); g.lower <= delta_true(eps_q)."""
    assert isinstance(g.delta, float) and not math.isnan(g.delta), f"{what}: {g}"
    d, err = delta_of(eps_q)
    assert d - err <= _num(g.delta), (
        f"{what}: UNSOUND upper: delta({eps_q!r}) reported {g.delta!r}, true {mp.nstr(d, 12)}")
    if g.epsilon != eps_q and g.epsilon != math.inf:
        d2, err2 = delta_of(g.epsilon)
        assert d2 - err2 <= _num(g.delta), f"{what}: claim at eps {g.epsilon!r} unsound"
    if g.lower is not None:
        assert not math.isnan(g.lower), f"{what}: lower is nan"
        assert _num(g.lower) <= d + err, (
            f"{what}: UNSOUND lower: {g.lower!r} > true delta {mp.nstr(d, 12)}")


def run_method(x, method, query, arg):
    """x.epsilon / x.delta by ``method``; returns the Guarantee, or None for a documented
    refusal; any other exception propagates (a failure)."""
    fn = x.epsilon if query == "epsilon" else x.delta
    try:
        return fn(arg, method=method)
    except ValueError as e:
        if is_documented_refusal(method, e):
            return None
        raise


class Failures:
    """Collects every failing check of a test (so that one run reports every unsound method,
    not only the first), then fails once with all of them."""

    def __init__(self):
        self.items = []

    def run(self, label, fn):
        try:
            fn()
        except AssertionError as e:
            self.items.append(f"{label}: {str(e).splitlines()[0]}")
        except Exception as e:  # noqa: BLE001 - every crash is a finding
            self.items.append(f"{label}: {type(e).__name__}: {str(e)[:200]}")

    def check(self):
        assert not self.items, "\n".join([f"{len(self.items)} failure(s):"] + self.items)


def check_all_methods(x, delta_of, deltas=(), epsilons=(), methods=None, what="",
                      eps_true=None):
    """Every applicable method (and "auto") on every query, against the truth ``delta_of``;
    all failures are reported together. ``eps_true``: optional {delta: exact true eps}."""
    names = (dp.available_methods(x) + ["auto"]) if methods is None else methods
    fails = Failures()
    for name in names:
        for dq in deltas:
            def one(name=name, dq=dq):
                g = run_method(x, name, "epsilon", dq)
                if g is not None:
                    check_epsilon_answer(g, dq, delta_of, f"{what} {name} epsilon({dq!r})",
                                         eps_true=(eps_true or {}).get(dq))
            fails.run(f"{name} epsilon({dq!r})", one)
        for eq in epsilons:
            def one(name=name, eq=eq):
                g = run_method(x, name, "delta", eq)
                if g is not None:
                    check_delta_answer(g, eq, delta_of, f"{what} {name} delta({eq!r})")
            fails.run(f"{name} delta({eq!r})", one)
    fails.check()


# ------------------------------------------------------------------------------------------
# 1. The oracles, validated against closed forms and against each other (these must pass).
# ------------------------------------------------------------------------------------------

def test_oracle_tfold_matches_kov_formula():
    """T-fold binary RR = Kairouz-Oh-Viswanath's closed form for k-fold eps-DP at its grid
    points eps_i = (k - 2i) eps: delta_i = sum_{l<i} C(k,l)(e^{(k-l)eps} - e^{(k-2i+l)eps})
    / (1 + e^eps)^k."""
    with mp.workdps(DPS):
        for eps0, k in [(0.3, 12), (1.0, 7), (0.05, 40)]:
            c = Composed([tfold(pure_pair(eps0), k)])
            e0 = M(eps0)
            for i in range(k // 2 + 1):
                kov = mp.fsum(mp.binomial(k, l) * (mp.exp((k - l) * e0) - mp.exp((k - 2 * i + l) * e0))
                              for l in range(i)) / (1 + mp.exp(e0)) ** k
                got, err = c.delta((k - 2 * i) * e0)
                assert abs(got - kov) <= err + mp.mpf(10) ** -50


def test_oracle_products_match_direct_enumeration():
    """Composed(tfold, product, p_inf bookkeeping) = the hockey-stick of the product measure
    enumerated path by path, for a mixed plan with infinite losses in both directions."""
    parts = [(poisson_remove(eps_delta_pair(0.7, 0.05), 0.3), 2), (rr_pair(0.8), 2),
             (poisson_remove(pure_pair(1.5), 0.6), 1), (eps_delta_pair(0.2, 0.1), 1)]
    for direction in (lambda p: p, swap):
        c = Composed([tfold(direction(p), t) for p, t in parts])
        steps = [direction(p) for p, t in parts for _ in range(t)]
        path_pair = []
        with mp.workdps(DPS):
            for path in itertools.product(*steps):
                P, Q = mp.mpf(1), mp.mpf(1)
                for a, b in path:
                    P, Q = P * a, Q * b
                path_pair.append((P, Q))
        for eps in [0, 0.1, 0.9, 2.5, 4.0]:
            got, err = c.delta(eps)
            assert abs(got - hockey_stick(path_pair, eps)) <= err + mp.mpf(10) ** -50


def test_oracle_epsilon_inverts_delta():
    plan = (("pure", (0.4,), None, 7), ("epsdelta", (0.9, 1e-4), 0.2, 5), ("rr", (0.3,), 0.5, 9))
    dirs = truth_of_plan(plan)
    assert dirs[0].p_inf > M(1e-6) and max_epsilon(dirs, 1e-6) == mp.inf  # delta < P[L = inf]
    with mp.workdps(DPS):
        for c in dirs:
            for dq in [0.3, 1e-3, 2e-4, 1e-7]:
                e = c.epsilon(dq)
                if e == mp.inf:
                    assert c.p_inf > M(dq)
                    continue
                assert abs(c.delta(e)[0] - M(dq)) <= mp.mpf(10) ** -40
                assert c.delta(e * (1 - mp.mpf(10) ** -30))[0] > M(dq)


def test_oracle_binomial_matches_convolution():
    for pair, T in [(poisson_remove(pure_pair(1.0), 0.01), 300), (pure_pair(0.05), 200),
                    (swap(poisson_remove(rr_pair(0.9), 0.2)), 150)]:
        b, c = Binomial(pair, T), Composed([tfold(pair, T)])
        for eps in [0, 0.1, 0.5, 1.3]:
            assert abs(b.delta(eps)[0] - c.delta(eps)[0]) <= mp.mpf(10) ** -45
        for dq in [1e-3, 1e-6, 1e-10]:
            assert abs(b.epsilon(dq) - c.epsilon(dq)) <= mp.mpf(10) ** -40


def test_oracle_gaussian_closed_form_vs_quadrature():
    """delta(eps) = int (p - e^eps q)_+ for N(mu, 1) vs N(0, 1), by quadrature over
    x > eps/mu + mu/2 (where the loss mu x - mu^2/2 exceeds eps)."""
    with mp.workdps(30):
        for mu, eps in [(1.0, 0.0), (1.0, 1.0), (0.5, 0.3), (3.0, 5.0), (2.0, -0.5)]:
            mu_, e = mp.mpf(mu), mp.mpf(eps)
            x0 = e / mu_ + mu_ / 2
            quad = mp.quad(lambda x: mp.npdf(x, mu_, 1) - mp.exp(e) * mp.npdf(x, 0, 1), [x0, mp.inf])
            assert abs(gaussian_delta(mu, eps) - quad) < mp.mpf(10) ** -20
            assert abs(gaussian_delta(mu, gaussian_epsilon(mu, 1e-3)) - M(1e-3)) < 1e-25 or eps < 0


def test_oracle_erfc_asymptotic_branch():
    """The series branch of ``erfc`` against mpmath's erfc where both work."""
    with mp.workdps(DPS):
        for x in [10**6, 3 * 10**7, 10**12]:
            y = mp.mpf(x)
            u = 1 / (2 * y * y)
            series = mp.exp(-y * y) / (y * mp.sqrt(mp.pi)) * (1 - u + 3 * u**2 - 15 * u**3)
            assert abs(series / mp.erfc(y) - 1) < mp.mpf(10) ** -45
            assert erfc(-y) == 2 - series
        assert abs(erfc(mp.mpf(999_999)) - mp.erfc(999_999)) == 0
        assert erfc(mp.mpf(10) ** 300) > 0 and erfc(-mp.mpf(10) ** 300) == 2


def test_oracle_laplace_closed_form_vs_quadrature():
    with mp.workdps(30):
        for eta, eps in [(1.0, 0.0), (1.0, 0.5), (1 / 3, 0.1), (2.0, 1.999)]:
            e, h = mp.mpf(eps), mp.mpf(eta)
            p = lambda x: mp.exp(-abs(x - h)) / 2
            q = lambda x: mp.exp(-abs(x)) / 2
            quad = mp.quad(lambda x: max(p(x) - mp.exp(e) * q(x), 0),
                           sorted([-mp.inf, 0, h, (e + h) / 2, mp.inf]))
            assert abs(laplace_delta(eta, eps) - quad) < mp.mpf(10) ** -20


def test_oracle_subsampled_gaussian_identity_vs_quadrature():
    with mp.workdps(30):
        mu, q = mp.mpf(1), mp.mpf("0.3")
        for eps in [0.05, 0.4, 1.5]:
            x = mp.exp(eps)
            mix = lambda t: q * mp.npdf(t, mu, 1) + (1 - q) * mp.npdf(t, 0, 1)
            # the integrands' kinks: mix = x N(0,1) at t_r, N(0,1) = x mix at t_a
            t_r = mp.log((x - 1 + q) / q) / mu + mu / 2
            rem = mp.quad(lambda t: max(mix(t) - x * mp.npdf(t, 0, 1), 0), [t_r, mp.inf])
            add = mp.mpf(0)  # N(0,1) > x mix only where 1/x > 1 - q, for t < t_a
            if 1 / x > 1 - q:
                t_a = mp.log((1 / x - (1 - q)) / q) / mu + mu / 2
                add = mp.quad(lambda t: max(mp.npdf(t, 0, 1) - x * mix(t), 0), [-mp.inf, t_a])
            assert abs(subsampled_gaussian_delta(1.0, 0.3, eps) - max(rem, add)) < 1e-12


def test_oracle_renyi_limits():
    """D_alpha of binary RR: direct float formula at alpha = 2, the KL limit near 1 and the
    pure-eps limit at large alpha; and D_alpha nondecreasing."""
    p = 0.75
    pair = rr_pair(p)
    assert abs(float(renyi(pair, 2)) - math.log(p * p / (1 - p) + (1 - p) ** 2 / p)) < 1e-14
    kl = (2 * p - 1) * math.log(p / (1 - p))
    assert abs(float(renyi(pair, 1 + 1e-12)) - kl) < 1e-11
    assert abs(float(renyi(pair, 1e19)) - math.log(3)) < 1e-17
    vals = [renyi(pair, a) for a in [1 + 1e-12, 1.5, 2, 10, 1e6, 1e19]]
    assert vals == sorted(vals)


def test_oracle_bruteforce_poisson_equals_subsampled_pair():
    """Brute force over datasets of size <= 3 under add/remove, Poisson(q), every f: the best
    concrete member is exactly the subsampled worst pair, in both orders (validates the
    enumeration and the subsampled pairs of the exact oracle)."""
    q, eps0 = 0.3, 0.8
    members = concrete_members(("poisson", q), "addremove_any", 3, ("pure", (eps0,)), 1)
    pair = poisson_remove(pure_pair(eps0), q)
    for eps in [0.0, 0.1, 0.3]:
        best = max(c.delta(eps)[0] for c in members)
        exact = max(hockey_stick(pair, eps), hockey_stick(swap(pair), eps))
        assert abs(best - exact) < mp.mpf(10) ** -40


def test_oracle_bruteforce_without_replacement_is_gamma_times_pair():
    """Brute force for WOR(m, n) under substitution: the best concrete member has delta
    (m/n) H(P || Q) (000 Lemma 12: gamma phi for randomized response; tight, Thm 13)."""
    for m, n in [(1, 3), (2, 4), (2, 5)]:
        members = concrete_members(("wor", m), "substitution", n, ("rr", (0.8,)), 1)
        for eps in [0.0, 0.2, 1.0]:
            best = max(c.delta(eps)[0] for c in members)
            with mp.workdps(DPS):
                gam = mp.mpf(m) / n
                want = hockey_stick([(gam * P + (1 - gam) * Q, Q) for P, Q in rr_pair(0.8)], eps)
            assert abs(best - want) < mp.mpf(10) ** -40


# ------------------------------------------------------------------------------------------
# 2. Property: random plans of discrete mechanisms, every method, against the exact oracle.
# ------------------------------------------------------------------------------------------

def build(plan):
    """The dpamp composition of a plan (tuple of (kind, params, poisson rate or None, count))."""
    mechs = []
    for kind, params, q, count in plan:
        m = {"rr": dp.RandomizedResponse, "pure": dp.PureDP, "epsdelta": dp.EpsDelta}[kind](*params)
        if q is not None:
            m = m.subsample(dp.Poisson(q))
        mechs.append(m * count)
    return dp.compose(*mechs)


_rate = st.one_of(st.none(), st.floats(1e-3, 1.0), st.sampled_from([1e-6, 1e-3, 0.01, 0.5, 1.0]))
_eps0 = st.one_of(st.floats(0.01, 3.0), st.sampled_from([1e-6, 1e-3, 0.1, 0.5, 0.7, 1.0, 2.0]))
_base = st.one_of(
    st.tuples(st.just("rr"), st.tuples(st.floats(0.01, 0.99).filter(lambda p: p != 0.5))),
    st.tuples(st.just("pure"), st.tuples(_eps0)),
    st.tuples(st.just("epsdelta"), st.tuples(_eps0, st.floats(1e-8, 0.05))))


@st.composite
def plans(draw):
    """1-3 distinct parts, counts 1-50. A Poisson-subsampled (eps, delta) part has three
    finite atoms (its T-fold has ~T^2/2): its count is capped at 8 next to other parts, so
    that the exact oracle stays fast."""
    n = draw(st.integers(1, 3))
    parts = []
    for _ in range(n):
        base, q = draw(_base), draw(_rate)
        cap = 8 if (base[0] == "epsdelta" and q is not None and n > 1) else 50
        parts.append((base[0], base[1], q, draw(st.integers(1, cap))))
    keys = {(k, p, q) for k, p, q, _ in parts}
    if len(keys) < len(parts):  # keep the parts distinct
        parts = list({(k, p, q): (k, p, q, c) for k, p, q, c in parts}.values())
    # Parts whose loss scales differ by more than 300x make the PLD's default grid take tens of
    # seconds (before it answers or refuses with OutOfReach): kept to single-part plans, which
    # still reach the extreme parameters.
    scales = [loss_scale(p) for p in parts]
    assume(len(parts) == 1 or max(scales) <= 300 * min(scales))
    return tuple(parts)


def loss_scale(part):
    """The largest finite privacy loss of one step of a part (a rough scale for its grid)."""
    kind, params, q, _ = part
    if kind == "rr":
        p = max(params[0], 1 - params[0])
        s = math.log(p / (1 - p))
    else:
        s = params[0]
    return s if q is None else math.log1p(q * math.expm1(s))


_delta_q = st.one_of(st.floats(-10, -0.5).map(lambda e: 10.0 ** e),
                     st.sampled_from([1e-5, 1e-9, 0.1]))
# "edge": the float sum of count x eps0 over the pure parts, the largest loss of their
# composition up to rounding (where delta jumps from a tiny positive value to 0).
_eps_q = st.one_of(st.floats(0.0, 8.0), st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.just("edge"))


def edge_epsilon(plan):
    total = 0.0
    for kind, params, q, count in plan:
        if q is None and kind == "pure":
            total += count * params[0]
        elif q is None and kind == "rr":
            p = max(params[0], 1 - params[0])
            total += count * math.log(p / (1 - p))
    return total

METHODS = ["auto", "profile", "pld", "rdp", "rdp-classic", "zcdp", "kov", "advanced", "basic"]


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(plan=plans(), delta_q=_delta_q, eps_q=_eps_q)
# Always-run cases that random generation found on the way (a query at the float sum of the
# losses; a tiny subsampled loss; the rounded-down log of randomized response):
@example(plan=(("pure", (0.1,), None, 30),), delta_q=1e-9, eps_q="edge")
@example(plan=(("pure", (2.0706916379713856,), None, 30),), delta_q=1e-9, eps_q="edge")
@example(plan=(("rr", (0.7472516648615972,), None, 15),), delta_q=1e-5, eps_q="edge")
@example(plan=(("rr", (0.010000000000000002,), None, 23), ("rr", (0.01,), None, 1)),
         delta_q=1e-10, eps_q="edge")
@example(plan=(("pure", (1e-06,), 0.01, 18),), delta_q=1e-10, eps_q=0.0)
@example(plan=(("pure", (1e-06,), None, 100),), delta_q=1e-9, eps_q=1e-4)
def test_property_discrete_plans_are_sound(method, plan, delta_q, eps_q):
    """Every applicable method's eps(delta) and delta(eps) (upper and lower) against the exact
    worst case: the composition of the parts' worst pairs (RR, the (eps, delta) pair, their
    Poisson-subsampled mixtures), max over remove / add."""
    x = build(plan)
    if method != "auto" and method not in dp.available_methods(x):
        return
    dirs = truth_of_plan(plan)
    if eps_q == "edge":
        eps_q = edge_epsilon(plan)

    def delta_of(e):
        return max_delta(dirs, e)

    g = run_method(x, method, "epsilon", delta_q)
    if g is not None:
        check_epsilon_answer(g, delta_q, delta_of, f"{method} eps({delta_q!r})",
                             truth=lambda: max_epsilon(dirs, delta_q))
    g = run_method(x, method, "delta", eps_q)
    if g is not None:
        check_delta_answer(g, eps_q, delta_of, f"{method} delta({eps_q!r})")


# ------------------------------------------------------------------------------------------
# 3. Brute force: sampling without / with replacement, Poisson under substitution.
# ------------------------------------------------------------------------------------------

def inner_mechanism(inner):
    kind, params = inner
    cls = {"rr": dp.RandomizedResponse, "pure": dp.PureDP, "epsdelta": dp.EpsDelta}[kind]
    return cls(*params, relation=dp.SUBSTITUTION)


def scheme_object(scheme, n, outer):
    kind, par = scheme
    if kind == "wor":
        return dp.WithoutReplacement(par, n)
    if kind == "wr":
        return dp.WithReplacement(par, n, outer=outer)
    return dp.Poisson(par, relation=dp.SUBSTITUTION, population=n)


PURE, RR, ED = ("pure", (0.6269730123602066,)), ("rr", (0.8,)), ("epsdelta", (0.5, 0.01))
BRUTE = [  # (scheme, relation of the neighbours, population n, inner mechanism, T); a selection
    # that keeps the file under a minute (the profile-based PLD takes ~0.3-1 s per query)
    (("wor", 1), "substitution", 3, PURE, 1), (("wor", 1), "substitution", 3, RR, 2),
    (("wor", 1), "substitution", 3, ED, 2), (("wor", 3), "substitution", 6, PURE, 2),
    (("wor", 2), "substitution", 4, ED, 1), (("wor", 3), "substitution", 6, RR, 2),
    (("wr", 1), "substitution", 2, PURE, 2), (("wr", 2), "substitution", 3, ED, 1),
    (("wr", 3), "substitution", 4, RR, 1),
    (("wr", 1), "addremove", 2, PURE, 2), (("wr", 1), "addremove", 2, ED, 1),
    (("wr", 2), "addremove", 3, RR, 2), (("wr", 2), "addremove", 3, PURE, 1),
    (("poisson", 0.3), "substitution", 3, PURE, 1), (("poisson", 0.7), "substitution", 2, RR, 2),
    (("poisson", 0.3), "substitution", 3, ED, 2),
]


@pytest.mark.parametrize("scheme,relation,n,inner,T", BRUTE,
                         ids=[f"{s[0]}{s[1]}-{r}-n{n}-{i[0]}-T{t}" for s, r, n, i, t in BRUTE])
def test_bruteforce_subsampling_is_sound(scheme, relation, n, inner, T):
    """dpamp's upper bounds for a T-fold subsampled mechanism class >= the delta of every
    concrete member found by enumerating datasets, neighbours, samples and Boolean functions
    of the sample (a concrete member's delta is a lower bound on the class's worst case).
    Lower bounds are not checked here: the concrete members need not be the worst case.
    ("auto" is the first applicable method, already checked by name.)"""
    outer = dp.ADD_REMOVE if relation == "addremove" else dp.SUBSTITUTION
    x = inner_mechanism(inner).subsample(scheme_object(scheme, n, outer)) * T
    members = concrete_members(scheme, relation, n, inner, T)

    def delta_of(e):
        vals = [c.delta(e) for c in members]
        return max(v for v, _ in vals), max(err for _, err in vals)

    fails = Failures()
    for name in dp.available_methods(x):
        def eps_query(name=name):
            g = run_method(x, name, "epsilon", 1e-3)
            if g is not None:
                check_epsilon_answer(dataclass_without_lower(g), 1e-3, delta_of,
                                     f"{name} eps(1e-3)")

        def delta_query(name=name):
            g = run_method(x, name, "delta", 0.05)
            if g is not None:
                check_delta_answer(dataclass_without_lower(g), 0.05, delta_of,
                                   f"{name} delta(0.05)")
        fails.run(f"{name} epsilon(1e-3)", eps_query)
        fails.run(f"{name} delta(0.05)", delta_query)
    fails.check()


def dataclass_without_lower(g):
    """The Guarantee with its lower bound dropped (a concrete member cannot refute it)."""
    import dataclasses
    return dataclasses.replace(g, lower=None)


# ------------------------------------------------------------------------------------------
# 4. Regressions from the independent review (each against this file's truth).
# ------------------------------------------------------------------------------------------

def pure_plan_truth(eps0, T):
    return truth_of_plan((("pure", (eps0,), None, T),))


def test_regression_tiny_pure_epsilon_100_fold():
    """(PureDP(1e-6) * 100).epsilon(1e-9) answered 0.0 (truth 3.3364e-5)."""
    dirs = pure_plan_truth(1e-6, 100)
    eps_true = max_epsilon(dirs, 1e-9)
    assert abs(eps_true - mp.mpf("3.33644619e-5")) < 1e-12  # the reference
    check_all_methods(dp.PureDP(1e-6) * 100, lambda e: max_delta(dirs, e), deltas=[1e-9],
                      what="(PureDP(1e-6)*100)", eps_true={1e-9: eps_true})


@functools.cache
def million_fold_truth():
    pair = poisson_remove(pure_pair(1.0), 1e-6)
    return [Binomial(pair, 10**6), Binomial(swap(pair), 10**6)]


def test_regression_tiny_poisson_rate_million_fold():
    """(PureDP(1.0).subsample(Poisson(1e-6)) * 10**6).epsilon(1e-9) answered 0.0 (truth
    0.0046247, the remove order; binomial oracle)."""
    dirs = million_fold_truth()
    eps_true = max_epsilon(dirs, 1e-9)
    assert abs(eps_true - mp.mpf("0.0046247148639")) < 1e-12
    x = dp.PureDP(1.0).subsample(dp.Poisson(1e-6)) * 10**6
    check_all_methods(x, lambda e: max_delta(dirs, e), deltas=[1e-9], what="10^6-fold",
                      eps_true={1e-9: eps_true})


RDP_ORDERS = [1 + 1e-12, 1 + 1e-9, 1 + 1e-6, 1.5, 2.0, 1e6, 1e12, 1e19]
RDP_MECHS = {  # name: (mechanism, the pairs whose Rényi divergences it must bound)
    "PureDP(1e-6)": (lambda: dp.PureDP(1e-6), lambda: [pure_pair(1e-6)]),
    "PureDP(1)": (lambda: dp.PureDP(1.0), lambda: [pure_pair(1.0)]),
    "RR(0.75)": (lambda: dp.RandomizedResponse(0.75), lambda: [rr_pair(0.75)]),
    "PureDP(1)+Poisson(0.01)": (lambda: dp.PureDP(1.0).subsample(dp.Poisson(0.01)),
                                lambda: [poisson_remove(pure_pair(1.0), 0.01),
                                         swap(poisson_remove(pure_pair(1.0), 0.01))]),
}


@pytest.mark.parametrize("alpha", RDP_ORDERS, ids=[f"{a!r}" for a in RDP_ORDERS])
@pytest.mark.parametrize("name", list(RDP_MECHS))
def test_regression_rdp_tiny_and_huge_orders(name, alpha):
    """rdp(alpha) >= 0 and >= the exact Rényi divergence (both orders of the pair; 100-digit
    mpmath), and renyi(alpha).lower <= it. PureDP(1e-6).rdp(1 + 1e-6) was -8.9e-11; orders
    1e12 raised MemoryError; the subsampled PureDP at 1e19 was 0.0 (truth 0.0170)."""
    mech, pairs = RDP_MECHS[name]
    x = mech()
    truth = max(renyi(p, alpha) for p in pairs())
    r = float(x.rdp(alpha))
    assert not math.isnan(r) and r >= 0, f"rdp({alpha!r}) = {r!r}"
    assert M(r) >= truth, f"UNSOUND rdp({alpha!r}) = {r!r} < true {mp.nstr(truth, 15)}"
    low = x.renyi([alpha]).lower
    if low is not None and not math.isnan(float(low[0])):
        assert M(float(low[0])) <= truth, (
            f"UNSOUND renyi lower({alpha!r}) = {float(low[0])!r} > true {mp.nstr(truth, 15)}")


@pytest.mark.parametrize("alpha", [1e3, 1e6, 1e12, 1e19])
def test_regression_subsampled_gaussian_rdp_huge_orders(alpha):
    """Gaussian(1).subsample(Poisson(0.01)).rdp(alpha): 1e19 gave 0.0, 1e12 MemoryError. The
    truth is >= (alpha log q + alpha (alpha - 1)/2)/(alpha - 1), the term of ((1-q) + q L)^alpha
    >= (q L)^alpha alone (E_Q[L^alpha] = e^{alpha(alpha-1)/2} for L the N(1,1)/N(0,1) ratio)."""
    with mp.workdps(DPS):
        a, q = M(alpha), M(0.01)
        bound = (a * mp.log(q) + a * (a - 1) / 2) / (a - 1)
    r = float(dp.Gaussian(1.0).subsample(dp.Poisson(0.01)).rdp(alpha))
    assert not math.isnan(r) and M(r) >= bound, f"rdp({alpha!r}) = {r!r} < {mp.nstr(bound, 10)}"


def test_regression_with_replacement_add_remove_brute_force():
    """(PureDP(0.6269730123602066, SUBSTITUTION).subsample(WithReplacement(1, 2,
    outer=ADD_REMOVE)) * 2).delta(0.05) gave 0.145358 (the remove order's value); a concrete
    member (population 1 vs 2, one draw with replacement, RR on the drawn record, 2 runs, the
    add order) has 0.162029."""
    members = concrete_members(("wr", 1), "addremove", 2, PURE, 2)
    best = max(c.delta(0.05)[0] for c in members)
    assert abs(best - mp.mpf("0.162029097093")) < 1e-11
    # the member: x = {0}, x' = {0, 1} (add order), f = the drawn bit: w = 0 vs w' = 1/2,
    # i.e. the pair (Q, (P + Q)/2), twice
    direct = Composed([tfold(mixture_pair(pure_pair(PURE[1][0]), 0, Fraction(1, 2)), 2)])
    assert abs(direct.delta(0.05)[0] - best) < mp.mpf(10) ** -40
    x = (dp.PureDP(PURE[1][0], relation=dp.SUBSTITUTION)
         .subsample(dp.WithReplacement(1, 2, outer=dp.ADD_REMOVE)) * 2)
    for name in dp.available_methods(x) + ["auto"]:
        g = run_method(x, name, "delta", 0.05)
        if g is not None:
            assert M(g.delta) >= best, f"UNSOUND {name}: {g.delta!r} < concrete {mp.nstr(best, 12)}"


def test_regression_pure_composition_at_float_sum():
    """(PureDP(0.7) * 3).delta(3 * 0.7) gave 0 by rdp, basic, advanced: 3 * 0.7 rounds below
    3 x 0.7 (the double 0.7, exactly), so the true delta is > 0 (6.6242e-17)."""
    assert Fraction(3 * 0.7) < 3 * Fraction(0.7)
    dirs = pure_plan_truth(0.7, 3)
    d, _ = max_delta(dirs, 3 * 0.7)
    assert abs(d - mp.mpf("6.6242360043562782e-17")) < mp.mpf("1e-32")
    check_all_methods(dp.PureDP(0.7) * 3, lambda e: max_delta(dirs, e), epsilons=[3 * 0.7],
                      what="(PureDP(0.7)*3)")


def test_regression_composition_pure_epsilon_rounds_up():
    """(PureDP(0.7) * 3).pure_epsilon() must be >= 3 x 0.7 exactly (the float sum is below)."""
    assert Fraction((dp.PureDP(0.7) * 3).pure_epsilon()) >= 3 * Fraction(0.7)


def test_regression_laplace_at_its_own_epsilon():
    """dp.Laplace(3.0).delta(1/3) gave 0: eta = 1/3 (real), the double 1/3 is below it, so the
    true delta is 1 - exp((1/3 - eta)/2) = 9.25e-18."""
    eta = Fraction(1, 3)
    assert Fraction(1 / 3) < eta

    def delta_of(e):
        v = laplace_delta(eta, e)
        return v, v * SLACK

    assert abs(delta_of(1 / 3)[0] - mp.mpf("9.2519e-18")) < mp.mpf("1e-21")
    check_all_methods(dp.Laplace(3.0), delta_of, deltas=[1e-5], epsilons=[1 / 3],
                      what="Laplace(3)")


@pytest.mark.parametrize("p", [0.75, 0.9, 0.6])
def test_regression_rr_pure_epsilon_rounds_up(p):
    """RandomizedResponse(0.75).pure_epsilon() was below log 3."""
    with mp.workdps(DPS):
        truth = mp.log(M(p) / (1 - M(p)))
    got = dp.RandomizedResponse(p).pure_epsilon()
    assert M(got) >= truth, f"pure_epsilon {got!r} < log(p/(1-p)) = {mp.nstr(truth, 20)}"


def test_regression_delta_below_double_range():
    """Gaussian(10) at eps = 4.134: the true delta is 1.7e-375 (below the doubles); an upper
    bound of 0 is unsound (rdp, rdp-classic, zcdp reported 0); a positive lower bound is too."""
    eps = 4.134
    d = gaussian_delta(0.1, eps)
    assert mp.mpf("1e-376") < d < mp.mpf("1e-374")

    def delta_of(e):
        v = gaussian_delta(0.1, e)
        return v, v * SLACK

    check_all_methods(dp.Gaussian(10.0), delta_of, epsilons=[eps], what="Gaussian(10)")


@functools.cache
def kov_truth():
    return Binomial(pure_pair(0.001), 7_000_000)


def test_regression_kov_seven_million_fold():
    """(PureDP(0.001) * 7_000_000).delta(14.19122394100647, method="kov") gave
    9.99999999989e-6, truth 1.00000000289e-5 (binomial sum, 60 digits)."""
    eps = 14.19122394100647
    b = kov_truth()
    d, _ = b.delta(eps)
    assert abs(d - mp.mpf("1.00000000289e-5")) < mp.mpf("1e-16")
    x = dp.PureDP(0.001) * 7_000_000
    check_all_methods(x, b.delta, epsilons=[eps],
                      methods=["kov", "pld", "rdp", "rdp-classic", "zcdp", "advanced", "basic"],
                      what="7e6-fold")


# ------------------------------------------------------------------------------------------
# 5. Crashes that must become answers (sound ones) or clean ValueErrors.
# ------------------------------------------------------------------------------------------

def assert_clean_refusal(exc):
    """A ValueError that says what is wrong, not a leaked numerical accident."""
    msg = str(exc).lower()
    assert isinstance(exc, ValueError), f"{type(exc).__name__}: {exc}"
    for leak in ("nan", "cannot convert float", "could not convert", "overflow", "recursion"):
        assert leak not in msg, f"not a clean refusal: {type(exc).__name__}: {exc}"


def answer_or_refusal(fn):
    """fn()'s Guarantee, or None after checking that a ValueError is a clean refusal (any other
    exception - MemoryError, OverflowError, RecursionError, ... - fails the test)."""
    try:
        return fn()
    except ValueError as e:
        assert_clean_refusal(e)
        return None


def each_method(x):
    return dp.available_methods(x) + ["auto"]


def test_crash_laplace_tiny_scale_two_fold():
    """(Laplace(0.001) * 2).epsilon(1e-5) raised 'cannot convert float NaN to integer'. The
    truth is at least the single Laplace's (a composition's delta(eps) is at least each part's),
    which is what the answers are checked against (upper side only)."""
    x = dp.Laplace(0.001) * 2

    def delta_of(e):
        v = laplace_delta(1000.0, e)
        return v, v * SLACK

    fails = Failures()
    for name in each_method(x):
        def one(name=name):
            g = answer_or_refusal(lambda: x.epsilon(1e-5, method=name))
            if g is not None:
                check_epsilon_answer(dataclass_without_lower(g), 1e-5, delta_of, name)
        fails.run(f"{name} epsilon(1e-5)", one)
    fails.check()


def test_crash_subsampled_gaussian_delta_at_huge_epsilon():
    """(Gaussian(1).subsample(Poisson(0.01)) * 100).delta(1e308) raised a NaN ValueError. The
    loss is unbounded, so the true delta is > 0: the answer must be a positive double."""
    x = dp.Gaussian(1.0).subsample(dp.Poisson(0.01)) * 100
    fails = Failures()
    for name in each_method(x):
        def one(name=name):
            g = answer_or_refusal(lambda: x.delta(1e308, method=name))
            if g is not None:
                assert not math.isnan(g.delta) and g.delta > 0, f"UNSOUND: {g}"
                assert g.lower is None or g.lower <= 5e-324, f"lower {g.lower!r}"
        fails.run(f"{name} delta(1e308)", one)
    fails.check()


def test_crash_subsampled_gaussian_billion_fold():
    """(Gaussian(1).subsample(Poisson(1e-9)) * 10**9).epsilon(1e-5) raised MemoryError. Checked
    against one step's delta (a lower bound on the composition's)."""
    x = dp.Gaussian(1.0).subsample(dp.Poisson(1e-9)) * 10**9

    def delta_of(e):
        v = subsampled_gaussian_delta(1.0, 1e-9, e)
        return v, v * SLACK

    fails = Failures()
    for name in each_method(x):
        def one(name=name):
            g = answer_or_refusal(lambda: x.epsilon(1e-5, method=name))
            if g is not None:
                check_epsilon_answer(dataclass_without_lower(g), 1e-5, delta_of, name)
        fails.run(f"{name} epsilon(1e-5)", one)
    fails.check()


TINY = [  # (label, mechanism, delta_true(eps))
    ("Gaussian(1e-300)", lambda: dp.Gaussian(1e-300), lambda e: gaussian_delta(1e300, e)),
    ("Gaussian(1e-300)*2", lambda: dp.Gaussian(1e-300) * 2,
     lambda e: gaussian_delta(mp.sqrt(2) * mp.mpf(10) ** 300, e)),
    ("Gaussian(1e-300)+Poisson(0.5)", lambda: dp.Gaussian(1e-300).subsample(dp.Poisson(0.5)),
     lambda e: subsampled_gaussian_delta(1e300, 0.5, e)),
]


@pytest.mark.parametrize("label,mech,truth", TINY, ids=[t[0] for t in TINY])
def test_crash_gaussian_tiny_sigma(label, mech, truth):
    """Gaussian(1e-300) plans (mu = 1e300): answers must be sound (eps(1e-5) is beyond every
    double, so only +inf is sound) or clean refusals; Gaussian(1e-300).epsilon(1e-5) answered
    5.00001e+299."""
    x = mech()

    def delta_of(e):
        with mp.workdps(DPS):
            v = truth(e)
        return v, v * SLACK

    fails = Failures()
    for name in each_method(x):
        def eps_query(name=name):
            g = answer_or_refusal(lambda: x.epsilon(1e-5, method=name))
            if g is not None:
                check_epsilon_answer(g, 1e-5, delta_of, f"{label} {name} eps(1e-5)")

        def delta_query(name=name):
            g = answer_or_refusal(lambda: x.delta(1.0, method=name))
            if g is not None:
                check_delta_answer(g, 1.0, delta_of, f"{label} {name} delta(1)")
        fails.run(f"{name} epsilon(1e-5)", eps_query)
        fails.run(f"{name} delta(1)", delta_query)

    def rdp2():
        r = answer_or_refusal(lambda: x.rdp(2.0))
        if r is not None:  # D_2 >= 1e600 (Gaussian: alpha mu^2 / 2): only +inf is sound
            assert float(r) == math.inf, f"UNSOUND rdp(2) = {r!r}"
    fails.run("rdp(2)", rdp2)
    fails.check()


_AR = {"enum": "Relation", "value": "add_remove"}
_SUB = {"enum": "Relation", "value": "substitution"}


def _pure_json(eps, rel=_AR):
    return {"type": "PureDP", "epsilon": eps, "relation": rel}


def _composition_json(*components):
    return json.dumps({"type": "Composition", "components": [[m, c] for m, c in components]})


def test_json_format_assumed_here():
    """The shapes the malformed documents below are built from."""
    x = dp.compose(dp.PureDP(1.0) * 10, dp.PureDP(2.0))
    assert json.loads(x.to_json()) == json.loads(_composition_json((_pure_json(1.0), 10),
                                                                   (_pure_json(2.0), 1)))
    assert dp.from_json(_composition_json((_pure_json(1.0), 10), (_pure_json(2.0), 1))) == x


@pytest.mark.parametrize("scheme", [
    {"type": "WithoutReplacement", "batch": 1, "population": 10},
    {"type": "WithReplacement", "batch": 1, "population": 10, "outer": _AR}],
    ids=["without-replacement", "with-replacement"])
def test_json_refuses_what_the_constructor_refuses(scheme):
    """A Gaussian under add/remove subsampled without / with replacement (which need
    substitution) is refused by .subsample; from_json must refuse it too."""
    gauss = {"type": "Gaussian", "sigma": 1.0, "sensitivity": 1.0, "relation": _AR}
    with pytest.raises(ValueError):
        dp.Gaussian(1.0).subsample(dp.from_json(json.dumps(scheme)))
    with pytest.raises(ValueError):
        dp.from_json(json.dumps({"type": "Subsampled", "base": gauss, "scheme": scheme}))


@pytest.mark.parametrize("doc", [
    _composition_json((_pure_json(1.0), 10), (_pure_json(2.0), -9)),
    _composition_json((_pure_json(1.0), -1)),
    _composition_json((_pure_json(1.0), 2.5)),
    _composition_json((_pure_json(1.0), 1), (_pure_json(1.0, _SUB), 1)),
], ids=["10-and-minus-9", "negative", "float-2.5", "mixed-relations"])
def test_json_refuses_bad_compositions(doc):
    """Counts 10 and -9 were accepted (and answered epsilon = -8); negative and fractional
    counts and mixed relations (which dp.compose refuses) were accepted too."""
    with pytest.raises(ValueError) as info:
        dp.from_json(doc)
    assert_clean_refusal(info.value)


def test_json_zero_count_means_what_the_api_means():
    """Count 0 is what ``mech * 0`` builds (a part that never runs: no privacy cost), so the
    JSON of it reads back as the same object rather than being refused."""
    x = dp.from_json(_composition_json((_pure_json(1.0), 0)))
    assert x == dp.PureDP(1.0) * 0
    assert x.delta(0.0).delta == 0.0


def test_json_integral_float_count_is_an_int():
    """A count 2.0 is either refused or read as the integer 2 (as the library's integer
    validation does elsewhere), never kept as a float."""
    try:
        x = dp.from_json(_composition_json((_pure_json(1.0), 2.0)))
    except ValueError as e:
        assert_clean_refusal(e)
        return
    assert x == dp.PureDP(1.0) * 2
    counts = [c for _, c in x.parts()]
    assert all(type(c) is int for c in counts), f"counts kept as {counts!r}"


def test_json_deeply_nested_is_a_value_error():
    """Deep nesting raised RecursionError (from the JSON parser or the decoder)."""
    doc = json.dumps(_pure_json(1.0))
    for _ in range(3000):
        doc = ('{"type": "Subsampled", "base": ' + doc + ', "scheme": {"type": "Poisson", '
               '"rate": 0.5, "relation": {"enum": "Relation", "value": "add_remove"}}}')
    for text in ["[" * 100_000 + "]" * 100_000, '{"a": ' * 100_000 + "1" + "}" * 100_000, doc]:
        with pytest.raises(ValueError):
            dp.from_json(text)


HUGE = 10**400
HUGE_CASES = [  # (label, call, names one of which the message must contain)
    ("Gaussian sigma", lambda: dp.Gaussian(HUGE), ["sigma"]),
    ("Gaussian sensitivity", lambda: dp.Gaussian(1.0, sensitivity=HUGE), ["sensitivity"]),
    ("Laplace scale", lambda: dp.Laplace(HUGE), ["scale"]),
    ("PureDP epsilon", lambda: dp.PureDP(HUGE), ["epsilon"]),
    ("RandomizedResponse p", lambda: dp.RandomizedResponse(HUGE), ["p"]),
    ("EpsDelta epsilon", lambda: dp.EpsDelta(HUGE, 0.1), ["epsilon"]),
    ("EpsDelta delta", lambda: dp.EpsDelta(1.0, HUGE), ["delta"]),
    ("ZCDP rho", lambda: dp.ZCDP(HUGE), ["rho"]),
    ("Poisson rate", lambda: dp.Poisson(HUGE), ["rate"]),
    ("Poisson population",
     lambda: dp.Poisson(0.1, relation=dp.SUBSTITUTION, population=HUGE), ["population"]),
    ("WithoutReplacement population", lambda: dp.WithoutReplacement(1, HUGE), ["population"]),
    ("WithReplacement batch", lambda: dp.WithReplacement(HUGE, 10), ["batch"]),
    ("times", lambda: dp.PureDP(1.0) * HUGE, ["times", "count"]),
    ("Accountant times", lambda: dp.Accountant().compose(dp.PureDP(1.0), times=HUGE),
     ["times", "count"]),
    ("epsilon(delta)", lambda: dp.PureDP(1.0).epsilon(HUGE), ["delta"]),
    ("delta(epsilon)", lambda: dp.PureDP(1.0).delta(HUGE), ["epsilon"]),
    ("rdp(alpha)", lambda: dp.PureDP(1.0).rdp(HUGE), ["alpha", "order"]),
    ("profile(epsilon)", lambda: dp.PureDP(1.0).profile(HUGE), ["epsilon"]),
    ("profile_pair", lambda: dp.profile_pair(dp.PureDP(1.0), HUGE), ["epsilon"]),
    ("hockey_stick", lambda: dp.hockey_stick([0.5, 0.5], [0.5, 0.5], HUGE), ["epsilon", "eps"]),
    ("from_json sigma",
     lambda: dp.from_json('{"type": "Gaussian", "sigma": 1%s, "sensitivity": 1.0}' % ("0" * 400)),
     ["sigma"]),
    ("from_json count", lambda: dp.from_json(_composition_json((_pure_json(1.0), HUGE))),
     ["count", "times"]),
]


@pytest.mark.parametrize("label,call,names", HUGE_CASES, ids=[c[0] for c in HUGE_CASES])
def test_huge_integer_parameter_is_a_value_error_naming_it(label, call, names):
    """10**400 (an int beyond every double) as a parameter: a ValueError naming the parameter
    (it raised OverflowError, or was accepted and broke later)."""
    with pytest.raises(ValueError) as info:
        call()
    assert_clean_refusal(info.value)
    assert any(re.search(rf"\b{re.escape(n)}\b", str(info.value)) for n in names), str(info.value)


def test_hockey_stick_refuses_non_distributions():
    """dp.hockey_stick([1, 2], [.5, .5], 0) answered 2.0: p is not a probability distribution."""
    with pytest.raises(ValueError):
        dp.hockey_stick([1, 2], [0.5, 0.5], 0)


STRING_CASES = [  # (id, call, the parameter the message must name)
    ("pair-str-mech", lambda: dp.profile_pair("Gaussian", 1.0), "mechanism"),
    ("profile-str-mech", lambda: dp.privacy_profile("Gaussian", 1.0), "mechanism"),
    ("lower-str-mech", lambda: dp.profile_pair_lower("Gaussian", 1.0), "mechanism"),
    ("pair-str-eps", lambda: dp.profile_pair(dp.Gaussian(1.0), "1.0"), "epsilon"),
    ("profile-str-eps", lambda: dp.privacy_profile(dp.Gaussian(1.0), "1.0"), "epsilon"),
    ("profile-str-junk", lambda: dp.privacy_profile(dp.Gaussian(1.0), "abc"), "epsilon"),
]


@pytest.mark.parametrize("call,name", [c[1:] for c in STRING_CASES],
                         ids=[c[0] for c in STRING_CASES])
def test_profiles_refuse_strings(call, name):
    """Strings are refused with a ValueError naming the parameter, as everywhere else at the
    library boundary (``x.delta("1.0")`` is refused so; _validate's stated invariant): a string
    mechanism raised AttributeError, a string epsilon was silently converted by numpy (or
    refused with numpy's "could not convert string to float")."""
    with pytest.raises(ValueError) as info:
        call()
    assert name in str(info.value), str(info.value)
