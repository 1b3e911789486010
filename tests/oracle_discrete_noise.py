"""Exact oracles (mpmath) for the discrete Gaussian, Skellam and mixture-of-Gaussians pairs,
written independently of dpamp's code.

Discrete Gaussian (Canonne, Kamath & Steinke 2020): P[Z = k] = e^{-k^2/(2 s^2)} / Theta, summed
directly at DPS digits over |k| <= 40 s + 40 (the rest is below e^{-800}). The pair (Z + D, Z)
has the loss (D / s^2)(x - D/2) = step * m with m = 2x - D an integer, so a T-fold composition
is the T-fold convolution of the law of Z (m = 2 sum z + T D under P); the Q-mass of an atom is
its P-mass times e^{-step m}. Every law here is truncated where its mass is below ~1e-45, and
the P-mass left out (``tail``, summed exactly) is carried: the exact delta lies in [delta of
the truncated pair, that + T tail] (each unit of P-mass moves delta by at most 1).

Skellam (Agarwal, Kairouz & Liu 2021): P[X = k] = e^{-2 mu} I_|k|(2 mu) (mpmath's besseli), the
pair (X + D, X), composed by enumerating multisets of atoms (the losses are not on a lattice).

Mixture of Gaussians (dp-accounting's MixtureOfGaussiansDpEvent): P = sum_i p_i N(c_i, s^2),
Q = N(0, s^2); in units of s, mu_i = c_i / s and the loss is g(z) = log sum_i p_i
e^{mu_i z - mu_i^2/2}, increasing. H_{e^eps}(P || Q) by 1-D quadrature of (P - e^eps Q)_+ split
at the root of g = eps, and in closed form sum_i p_i Phi(mu_i - z) - e^eps Phi(-z); the add
direction likewise; two steps by a quadrature of the one-step curve against the law of the loss
(delta_2(eps) = E_P[delta_1(eps - L)] with delta_1 extended below 0 by 1 - e^x + ...: exactly
E_P[(1 - e^{eps - L1 - L2})_+] by Fubini).
"""
from __future__ import annotations

import itertools
import math
from collections import Counter

import mpmath as mp

DPS = 40
#: truncation of every law: masses below this are left out (and carried as ``tail``)
CUT = mp.mpf(10) ** -45


def _m(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


# --- discrete Gaussian -----------------------------------------------------------------------

def dg_theta(sigma, c=0):
    """Theta(c) = sum_k e^{-(k - c)^2/(2 s^2)} by direct summation around c."""
    with mp.workdps(DPS):
        s, c = _m(sigma), _m(c)
        f = int(mp.floor(c))
        K = int(40 * float(sigma)) + 40
        return mp.fsum(mp.exp(-(k - c) ** 2 / (2 * s * s)) for k in range(f - K, f + K + 1))


def dg_law(sigma):
    """({k: P[Z = k]} for the k of mass >= CUT, exact P-mass of the rest)."""
    with mp.workdps(DPS):
        s = _m(sigma)
        th = dg_theta(sigma)
        law, k = {}, 0
        while True:
            v = mp.exp(-k * k / (2 * s * s)) / th
            if v < CUT:
                break
            law[k] = v
            law[-k] = v
            k += 1
        return law, _tail(lambda j: mp.exp(-j * j / (2 * s * s)) / th, k)


def dg_rdp(sigma, D, alpha):
    """The exact D_alpha: alpha D^2/(2 s^2) + log(Theta(alpha D)/Theta(0))/(alpha - 1)."""
    with mp.workdps(DPS):
        a, s = _m(alpha), _m(sigma)
        return a * D * D / (2 * s * s) + mp.log(dg_theta(sigma, a * D) / dg_theta(sigma)) / (a - 1)


def dg_rdp_direct(sigma, D, alpha):
    """The same D_alpha by summing P(x)^alpha Q(x)^(1-alpha) over the outcomes x within
    40 sigma + 40 of alpha D (where the tilted terms live; the rest is below e^-800)."""
    with mp.workdps(DPS):
        a, s = _m(alpha), _m(sigma)
        th = dg_theta(sigma)
        c = int(mp.floor(a * D))
        K = int(40 * float(sigma)) + 40
        terms = [mp.exp(-(a * (x - D) ** 2 + (1 - a) * x * x) / (2 * s * s)) / th
                 for x in range(c - K, c + K + 1)]
        return mp.log(mp.fsum(terms)) / (a - 1)


def dg_composed(sigma, D, T):
    """(pair [(p, q)], P-mass left out) of the T-fold composition, by convolution on the
    lattice (module docstring)."""
    law, tail = dg_law(sigma)
    with mp.workdps(DPS):
        s = _m(sigma)
        step = mp.mpf(D) / (2 * s * s)
        cur = {0: mp.mpf(1)}
        dropped = mp.mpf(0)
        for _ in range(int(T)):
            nxt: dict = {}
            for z1, v1 in cur.items():
                for z2, v2 in law.items():
                    nxt[z1 + z2] = nxt.get(z1 + z2, 0) + v1 * v2
            cur = {z: v for z, v in nxt.items() if v >= CUT ** 2}
            dropped += mp.fsum(v for v in nxt.values() if v < CUT ** 2)
        pair = [(p, p * mp.exp(-step * (2 * z + T * D))) for z, p in cur.items()]
        # each factor's law left out its tail; the convolution its atoms below CUT^2
        return pair, T * tail + dropped


def dg_outcomes(sigma, D, wide=False):
    """(pair [(P(x), Q(x))] over the outcomes x kept, P-mass left out) of (Z + D, Z). ``wide``:
    over 40 sigma + 40 more outcomes on either side, masses from the formula (for Renyi sums,
    whose tilted terms live where the masses are far below CUT)."""
    law, tail = dg_law(sigma)
    xs = sorted(set(law) | {k + D for k in law})
    if wide:
        with mp.workdps(DPS):
            s, th = _m(sigma), dg_theta(sigma)
            w = int(40 * float(sigma)) + 40

            def f(k):
                return mp.exp(-mp.mpf(k) ** 2 / (2 * s * s)) / th
            return [(f(x - D), f(x)) for x in range(xs[0] - w, xs[-1] + w + 1)], tail
    return _both_known(law, tail, D)


def _both_known(law, tail, D):
    """The pair (law shifted by D, law) over the outcomes where both masses are in ``law``,
    and a bound on what either measure leaves out: its tail, plus its mass at the outcomes
    where only it is known (keeping those with the other mass 0 would overstate delta)."""
    with mp.workdps(DPS):
        xs = sorted(set(law) | {k + D for k in law})
        pair, left_p, left_q = [], mp.mpf(0), mp.mpf(0)
        for x in xs:
            p, q = law.get(x - D), law.get(x)
            if p is not None and q is not None:
                pair.append((p, q))
            else:
                left_p += p or 0
                left_q += q or 0
        return pair, tail + max(left_p, left_q)


# --- Skellam ---------------------------------------------------------------------------------

def sk_law(mu):
    """({k: P[X = k]} for the k of mass >= CUT, exact mass of the rest), X = Pois(mu) -
    Pois(mu): e^{-2 mu} I_|k|(2 mu)."""
    with mp.workdps(DPS):
        m = _m(mu)
        law, k = {}, 0
        while True:
            v = mp.exp(-2 * m) * mp.besseli(k, 2 * m)
            if v < CUT:
                break
            law[k] = v
            law[-k] = v
            k += 1
        return law, _tail(lambda j: mp.exp(-2 * m) * mp.besseli(j, 2 * m), k)


def _tail(mass, k):
    """Twice the sum of mass(j) over j >= k (a symmetric law's two tails), summed until the
    terms fall below 1e-30 of the first; they fall faster than geometrically with ratio < 1/2
    there, so the rest is at most the last term: doubled."""
    with mp.workdps(DPS):
        first = mass(k)
        total, j = mp.mpf(0), k
        while True:
            t = mass(j)
            total += t
            if t < first * mp.mpf(10) ** -30:
                return 2 * (total + t)
            j += 1


def sk_outcomes(mu, D):
    """(pair [(P(x), Q(x))], mass left out) of (X + D, X)."""
    law, tail = sk_law(mu)
    return _both_known(law, tail, D)


def sk_rdp_bounds(mu, D, alpha):
    """[lower, upper] on the exact D_alpha: the sum over the kept outcomes, and that plus the
    largest the rest can add (the terms left out are P(x)^a Q(x)^(1-a) at outcomes where P or
    Q is below CUT: bounded here by summing them further out until they fall below 1e-60)."""
    with mp.workdps(DPS):
        a, m = _m(alpha), _m(mu)

        def f(k):
            return mp.exp(-2 * m) * mp.besseli(abs(k), 2 * m)
        law, _ = sk_law(mu)
        lo_x, hi_x = min(law), max(law) + D
        inside = mp.fsum(f(x - D) ** a * f(x) ** (1 - a) for x in range(lo_x, hi_x + 1))
        extra, x = mp.mpf(0), hi_x + 1
        while True:
            t = f(x - D) ** a * f(x) ** (1 - a)
            extra += t
            if t < mp.mpf(10) ** -60 * inside and x > hi_x + 10:
                break
            x += 1
        x = lo_x - 1
        while True:
            t = f(x - D) ** a * f(x) ** (1 - a)
            extra += t
            if t < mp.mpf(10) ** -60 * inside and x < lo_x - 10:
                break
            x -= 1
        # (beyond, the terms fall faster than geometrically: 1e-60 of the sum at most)
        tot = inside + extra
        return (mp.log(tot) / (a - 1), mp.log(tot * (1 + mp.mpf(10) ** -50)) / (a - 1))


# --- finite pairs: composition, hockey stick, inversion ----------------------------------------

def compose_product(pair, T):
    """T-fold product of a finite pair, multisets of atoms with their multinomial counts."""
    T = int(T)
    with mp.workdps(DPS):
        out = []
        for combo in itertools.combinations_with_replacement(range(len(pair)), T):
            mult = math.factorial(T)
            for n in Counter(combo).values():
                mult //= math.factorial(n)
            p, q = mp.mpf(mult), mp.mpf(mult)
            for i in combo:
                p *= pair[i][0]
                q *= pair[i][1]
            out.append((p, q))
        return out


def delta_of(pair, eps):
    """sum_i (p_i - e^eps q_i)_+."""
    with mp.workdps(DPS):
        x = mp.exp(_m(eps))
        return mp.fsum(max(p - x * q, 0) for p, q in pair)


def epsilon_of(pair, delta):
    """eps(delta) = inf{eps >= 0: delta(eps) <= delta} of a finite pair (q > 0 on every atom
    with p > 0), by the closed form on the segment between consecutive losses."""
    with mp.workdps(DPS):
        delta = _m(delta)
        lv = sorted(((mp.log(p / q), p, q) for p, q in pair if p > 0 and q > 0),
                    key=lambda t: t[0], reverse=True)
        A = mp.fsum(p for p, q in pair if p > 0 and q == 0)
        if A > delta:
            return mp.inf
        B = mp.mpf(0)
        for k, (l, p, q) in enumerate(lv):
            A += p
            B += q
            at_next = A - mp.exp(lv[k + 1][0]) * B if k + 1 < len(lv) else A
            if at_next >= delta:
                return max(mp.log((A - delta) / B), mp.mpf(0))
        return mp.mpf(0)


def epsilon_bracket(pairs_tails, delta):
    """[lower, upper] on the eps(delta) of the worse of several truncated pairs (pair, P-mass
    left out, in that order of the pair): the left-out mass moves delta by at most itself."""
    lo = max(epsilon_of(pr, delta) for pr, _ in pairs_tails)
    hi = max(epsilon_of(pr, _m(delta) - t) for pr, t in pairs_tails)
    return lo, hi


def rdp_of(pair, alpha):
    """D_alpha(P || Q) = log(sum_i p_i^alpha q_i^(1-alpha)) / (alpha - 1) of a finite pair, over
    the atoms where both masses are positive (of a truncated pair: a lower estimate)."""
    with mp.workdps(DPS):
        a = _m(alpha)
        return mp.log(mp.fsum(p ** a * q ** (1 - a) for p, q in pair if p > 0 and q > 0)) / (a - 1)


def poisson_pairs(pair, rate):
    """Remove ((1-q) Q + q P, Q) and add (Q, (1-q) Q + q P) of a finite pair."""
    with mp.workdps(DPS):
        q = _m(rate)
        mix = [(1 - q) * b + q * a for a, b in pair]
        return [(x, b) for x, (_, b) in zip(mix, pair)], [(b, x) for x, (_, b) in zip(mix, pair)]


# --- mixture of Gaussians ----------------------------------------------------------------------

def _mog(sens, probs, sigma):
    with mp.workdps(DPS):
        s = _m(sigma)
        ps = [_m(p) for p in probs]
        tot = mp.fsum(ps)
        return [_m(c) / s for c in sens], [p / tot for p in ps]


def mog_g(mus, ps, z):
    return mp.log(mp.fsum(p * mp.exp(m * z - m * m / 2) for m, p in zip(mus, ps)))


def mog_root(mus, ps, eps):
    """z with g(z) = eps (g increasing), or -inf where eps <= log p_0 (the floor of g)."""
    with mp.workdps(DPS):
        p0 = mp.fsum(p for m, p in zip(mus, ps) if m == 0)
        if p0 > 0 and _m(eps) <= mp.log(p0):
            return -mp.inf
        lo, hi = mp.mpf(-60), mp.mpf(60)
        while mog_g(mus, ps, lo) > eps:
            lo *= 2
        while mog_g(mus, ps, hi) < eps:
            hi *= 2
        for _ in range(mp.mp.prec + 20):      # bisection: g is increasing
            mid = (lo + hi) / 2
            if mog_g(mus, ps, mid) < eps:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2


def mog_delta(sens, probs, sigma, eps, direction="remove", quad=False):
    """H_{e^eps} of the remove pair (P, Q) or the add pair (Q, P) of the mixture, closed form
    at the root of g (quad=True: by mp.quad of the positive part instead)."""
    mus, ps = _mog(sens, probs, sigma)
    with mp.workdps(DPS):
        e = _m(eps)
        x = mp.exp(e)
        if direction == "remove":
            z = mog_root(mus, ps, e)           # (P - x Q)_+ lives on z > root
            if quad:
                f = lambda t: (mp.fsum(p * mp.npdf(t, m, 1) for m, p in zip(mus, ps))  # noqa: E731
                               - x * mp.npdf(t))
                return mp.quad(f, [z, z + 2, z + 8, mp.inf])
            return mp.fsum(p * mp.ncdf(m - z) for m, p in zip(mus, ps)) - x * mp.ncdf(-z)
        z = mog_root(mus, ps, -e)              # (Q - x P)_+ lives on z < root
        if z == -mp.inf:
            return mp.mpf(0)
        if quad:
            f = lambda t: (mp.npdf(t) - x * mp.fsum(p * mp.npdf(t, m, 1)  # noqa: E731
                                                      for m, p in zip(mus, ps)))
            return mp.quad(f, [-mp.inf, z - 8, z - 2, z])
        return mp.ncdf(z) - x * mp.fsum(p * mp.ncdf(z - m) for m, p in zip(mus, ps))


def mog_delta2(sens, probs, sigma, eps, direction="remove"):
    """Two steps: E_P[h(eps - L)] with h(y) = E_P[(1 - e^{y - L})_+] the one-step curve at any
    real y (for y < 0 by the same closed form), by quadrature over the first step's outcome."""
    mus, ps = _mog(sens, probs, sigma)
    sign = 1 if direction == "remove" else -1
    with mp.workdps(20):
        def one(y):
            return mog_delta(sens, probs, sigma, y, direction) if y >= 0 else \
                1 - mp.exp(y) + mp.exp(y) * _other(sens, probs, sigma, -y, direction)

        def integrand(t):
            l = sign * mog_g(mus, ps, t)
            dens = (mp.fsum(p * mp.npdf(t, m, 1) for m, p in zip(mus, ps)) if sign > 0
                    else mp.npdf(t))
            return dens * one(_m(eps) - l)
        pts = [-mp.inf, -8, -4, -2, 0, 2, 4, 8, max(mus) + 8, mp.inf]
        return mp.quad(integrand, pts)


def _other(sens, probs, sigma, eps, direction):
    """The other order's curve at eps >= 0 (the perspective: H_x(Q||P) = 1 - x + x H_{1/x}(P||Q)
    for probability measures)."""
    return mog_delta(sens, probs, sigma, eps, "add" if direction == "remove" else "remove")


def mog_rdp(sens, probs, sigma, alpha, direction="remove"):
    """D_alpha of the remove pair (E_Q[(P/Q)^alpha]) or the add pair (E_Q[(P/Q)^(1-alpha)]),
    by 1-D quadrature."""
    mus, ps = _mog(sens, probs, sigma)
    with mp.workdps(30):
        a = _m(alpha)
        k = a if direction == "remove" else 1 - a

        def f(t):
            return mp.exp(k * mog_g(mus, ps, t)) * mp.npdf(t)
        peak = float(k) * max(mus) if k > 0 else float(k) * max(mus)
        pts = sorted({-mp.inf, -10.0, 0.0, peak - 5, peak, peak + 5, 10.0 + max(peak, 0),
                      mp.inf})
        return mp.log(mp.quad(f, pts)) / (a - 1)
