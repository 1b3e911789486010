"""An exact oracle for T-fold hockey-stick divergences, with no loss grid (tests only).

For a neighbouring pair (P, Q) let L = log dP/dQ under P and M(z) = E_P[e^{zL}] (the part of P
where L is finite; the mass a = P[L = +inf] is kept apart). With S = L_1 + ... + L_T and
f(s) = (1 - e^{eps - s})_+,

    delta(eps) = E[f(S)] = 1 - (1 - a)^T + (1/pi) int_0^inf Re[ M(z)^T F(z) ] dt,  z = c + it,

for any c > 0 where M(c) < inf, with F(z) = int f(s) e^{-zs} ds = e^{-z eps} / (z (z + 1))
(bilateral Laplace transform, Re z > 0: int_eps^inf (e^{-zs} - e^{eps} e^{-(z+1)s}) ds
= e^{-z eps}/z - e^{-z eps}/(z+1)). Inverting F along Re z = c and exchanging the integrals
(|M(z)^T F(z)| <= M(c)^T e^{-c eps}/|z(z+1)| is integrable) gives E[f(S)]; the integrand at -t is
the conjugate of the one at t. Mass of L at -inf (Q > 0 = P) has P-probability 0 and drops out;
mass at +inf makes M infinite for Re z > 0, hence the separate term.

Numerics (numpy, double precision, everything in log space):
  * c minimises the integrand's modulus on the real axis, h(c) = T K(c) - c eps - log(c(c+1))
    with K = log M (h is convex on (0, inf)); then T K'(c) ~ eps: the saddle point, where the
    integral has no cancellation, and |integrand| decays like exp(-h''(c) t^2 / 2) near 0.
  * M^T = exp(T Log M): T is an integer, so the branch of Log M does not matter (exp(2 pi i k T)
    = 1); non-integer T are refused.
  * t-integral: adaptive composite 24-point Gauss-Legendre (panel vs its two halves), panels
    growing geometrically and capped by the local oscillation frequency, until the envelope
    |integrand(t)| * t (a 1/t^2 tail) is below the tolerance.
  * Atoms of L (Laplace, subsampled Laplace) make |M(c+it)| tend to a non-zero almost-periodic
    function, and the integrand decays only like 1/t^2. When their share is not negligible the
    purely atomic term A(z)^T of M^T (A = atomic part of M) is summed exactly (finite
    convolution), and only the remainder M^T - A^T = A^T expm1(T log1p(C/A)) is integrated.
  * Purely atomic pairs on a lattice (randomized response) use the periodised kernel
    G(tau) = sum_k e^{ik P A} F(w + ikP), P = 2 pi/h, which sums in closed form to
    h e^{-w eps}[e^{-w u0}/(1 - e^{-wh}) - e^{-(w+1) u0}/(1 - e^{-(w+1)h})],
    u0 = (A - eps) mod h, when S lies in A + hZ; then delta = (1/pi) int_0^{pi/h} Re[M^T G].
  * M of mixtures (subsampled pairs) by composite Gauss-Legendre over the output x, panels set
    by the magnitude of p(x) e^{cL(x)} and by the phase t L(x), so they resolve e^{itL(x)}.

  * Subsampled Gaussians pile up L near log(1-q) (remove; bottom of the range) or -log(1-q)
    (add; top): a log-normal-like near-atom whose characteristic function decays over decades
    of t. A smooth erfc partition of unity in L (class _Split) puts it in a part 0 with support
    below eps/T (its T-fold term contributes exactly 0) or above eps/T (exactly
    M_0(0)^T - e^eps M_0(-1)^T); every other term has a factor whose transform dies out by
    t ~ 200/|eps/T - edge|, and the remaining parts are cut where they are numerically 0.

Accuracy (measured, tests/test_mgf_oracle.py): closed forms to ~1e-14 (Gaussian, RR, Laplace
T = 1, subsampled Gaussian T = 1), delta to ~1e-9 relative in the hardest subsampled cases
(small q, delta ~ 1e-10: the integrand cancels 1e4-1e6 fold there), eps to ~1e-9.

Limits (they raise RuntimeError, never return a silent wrong value where detected): non-integer
T; eps within ~1e-4 of T * ess sup L for pairs with atoms (the saddle runs to c = inf); the add
direction of a subsampled Gaussian with eps/T within ~1e-3 of -log(1-q) (use chernoff_delta:
delta_max / epsilon_max do); small T (< ~100) for subsampled Laplace (the continuous part's
1/t tail makes the integral slow). T = 1 references: subsampled_*_delta_t1.

Public API: pair constructors (gaussian, laplace, subsampled_gaussian, subsampled_laplace,
finite_pair, randomized_response), delta, epsilon_for_delta, delta_max, epsilon_max, and the
independent references gaussian_delta_exact, laplace_delta_exact, finite_delta_exact,
subsampled_gaussian_delta_t1, subsampled_laplace_delta_t1, delta_mpmath.
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from scipy import optimize
from scipy.special import erfc, log_ndtr

__all__ = [
    "Pair", "gaussian", "laplace", "subsampled_gaussian", "subsampled_laplace", "finite_pair",
    "randomized_response", "delta", "epsilon_for_delta", "delta_max", "epsilon_max",
    "chernoff_delta",
    "gaussian_delta_exact", "gaussian_epsilon_exact", "laplace_delta_exact",
    "finite_delta_exact", "subsampled_gaussian_delta_t1", "subsampled_gaussian_epsilon_t1",
    "subsampled_laplace_delta_t1",
    "delta_mpmath",
]

_NG = 24                                   # Gauss-Legendre nodes per x-panel
_GX, _GW = np.polynomial.legendre.leggauss(_NG)
_NT = 16                                   # ... per t-panel (adaptive: panel vs halves)
_TX, _TW = np.polynomial.legendre.leggauss(_NT)
_INF = math.inf


# --- complex helpers --------------------------------------------------------------------------

def _clog1p(w):
    """log(1 + w) for complex w, accurate for small |w| (numpy's complex log1p is not)."""
    w = np.asarray(w, dtype=complex)
    x, y = w.real, w.imag
    with np.errstate(invalid="ignore", divide="ignore"):
        re = 0.5 * np.log1p(2.0 * x + x * x + y * y)
        im = np.arctan2(y, 1.0 + x)
    return re + 1j * im


def _cexpm1(w):
    w = np.asarray(w, dtype=complex)
    x, y = w.real, w.imag
    re = np.expm1(x) * np.cos(y) - 2.0 * np.sin(0.5 * y) ** 2
    im = np.exp(x) * np.sin(y)
    return re + 1j * im


def _clogaddexp(a, b):
    a = np.asarray(a, dtype=complex)
    b = np.asarray(b, dtype=complex)
    m = np.maximum(a.real, b.real)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ea = np.where(np.isfinite(a.real), np.exp(a - m), 0.0)
        eb = np.where(np.isfinite(b.real), np.exp(b - m), 0.0)
        return m + np.log(ea + eb)


def _clogsumexp(e, axis):
    m = np.max(e.real, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sum(np.where(np.isfinite(e.real), np.exp(e - m), 0.0), axis=axis)
        return np.squeeze(m, axis=axis) + np.log(s)


# --- pairs -------------------------------------------------------------------------------------

class Pair:
    """The law of L = log dP/dQ under P, through its moment generating function.

    M(z) = A(z) + C(z): A(z) = sum_k m_k e^{z l_k} over the atoms (finite losses), C(z) the rest
    (absolutely continuous part). ``l_max`` is ess sup L on the finite part, ``p_inf`` = P[L=inf].
    ``lattice`` = (offset, span) when L is purely atomic on offset + span Z."""

    name = "pair"
    l_max = _INF
    p_inf = 0.0
    lattice = None

    def __init__(self):
        self.atom_losses = np.empty(0)
        self.atom_logmass = np.empty(0)

    @property
    def has_cont(self) -> bool:
        return True

    # log C(c + it), complex; subclasses override
    def log_cont(self, c, t):
        return np.full(np.shape(t), -np.inf + 0j)

    def log_atoms(self, c, t):
        t = np.asarray(t, dtype=float)
        if self.atom_losses.size == 0:
            return np.full(t.shape, -np.inf + 0j)
        z = c + 1j * t
        e = self.atom_logmass[None, :] + z[:, None] * self.atom_losses[None, :]
        return _clogsumexp(e, axis=1)

    def log_mgf(self, c, t):
        t = np.asarray(t, dtype=float)
        if self.atom_losses.size == 0:
            return self.log_cont(c, t)
        if not self.has_cont:
            return self.log_atoms(c, t)
        return _clogaddexp(self.log_atoms(c, t), self.log_cont(c, t))

    def K(self, c: float) -> float:
        """log M(c) for real c."""
        return float(self.log_mgf(c, np.zeros(1)).real[0])

    def log_mgf_mp(self, z):
        """log M(z) in mpmath (closed-form pairs only)."""
        raise NotImplementedError

    def __repr__(self):
        return self.name


class _Gaussian(Pair):
    def __init__(self, sigma, sensitivity=1.0):
        super().__init__()
        self.mu = sensitivity / sigma
        self.name = f"Gaussian(sigma={sigma})"

    def log_cont(self, c, t):
        z = c + 1j * np.asarray(t, dtype=float)
        m2 = self.mu * self.mu
        return 0.5 * m2 * z * (z + 1.0)

    def log_mgf_mp(self, z):
        m2 = mp.mpf(self.mu) ** 2
        return m2 * z * (z + 1) / 2


def gaussian(sigma: float, sensitivity: float = 1.0) -> Pair:
    """N(sensitivity, sigma^2) vs N(0, sigma^2): L ~ N(mu^2/2, mu^2) under P, mu = sens/sigma."""
    return _Gaussian(sigma, sensitivity)


class _Laplace(Pair):
    """P = Lap(0, b), Q = Lap(s, b), eta = s/b. L = eta on x <= 0 (mass 1/2), -eta on x >= s
    (mass e^{-eta}/2), eta (1 - 2x/s) in between, so
    C(z) = int_0^s e^{z eta (1 - 2x/s)} e^{-x/b}/(2b) dx = (e^{z eta} - e^{-(z+1) eta})/(2(2z+1))."""

    def __init__(self, b, sensitivity=1.0):
        super().__init__()
        self.eta = sensitivity / b
        self.name = f"Laplace(b={b})"
        self.atom_losses = np.array([self.eta, -self.eta])
        self.atom_logmass = np.array([-math.log(2.0), -math.log(2.0) - self.eta])
        self.l_max = self.eta

    def log_cont(self, c, t):
        z = c + 1j * np.asarray(t, dtype=float)
        u = -(2.0 * z + 1.0) * self.eta
        return z * self.eta + np.log(-_cexpm1(u)) - math.log(2.0) - np.log(2.0 * z + 1.0)

    def log_mgf_mp(self, z):
        eta = mp.mpf(self.eta)
        m = (mp.exp(z * eta) + mp.exp(-eta) * mp.exp(-z * eta)) / 2 \
            + (mp.exp(z * eta) - mp.exp(-(z + 1) * eta)) / (2 * (2 * z + 1))
        return mp.log(m)


def laplace(b: float, sensitivity: float = 1.0) -> Pair:
    return _Laplace(b, sensitivity)


class _Finite(Pair):
    def __init__(self, p, q, lattice=None, name="finite"):
        super().__init__()
        p = [float(v) for v in p]
        q = [float(v) for v in q]
        self.p_mp = [mp.mpf(v) for v in p]
        self.q_mp = [mp.mpf(v) for v in q]
        self.p_inf = sum(pi for pi, qi in zip(p, q) if qi == 0 and pi > 0)
        losses = {}
        for pi, qi in zip(p, q):
            if pi > 0 and qi > 0:
                l = math.log(pi) - math.log(qi)
                losses[l] = losses.get(l, 0.0) + pi
        ls = sorted(losses)
        self.atom_losses = np.array(ls)
        self.atom_logmass = np.array([math.log(losses[l]) for l in ls])
        self.l_max = max(ls) if ls else -_INF
        self.lattice = lattice
        self.name = name

    @property
    def has_cont(self):
        return False

    def log_cont(self, c, t):
        return np.full(np.shape(t), -np.inf + 0j)

    def log_mgf_mp(self, z):
        s = mp.mpf(0)
        for pi, qi in zip(self.p_mp, self.q_mp):
            if pi > 0 and qi > 0:
                s += pi * mp.exp(z * mp.log(pi / qi))
        return mp.log(s)


def finite_pair(p, q, lattice=None) -> Pair:
    """P, Q probability vectors on one finite set. ``lattice=(offset, span)`` if every finite
    loss log(p/q) lies on offset + span Z (needed for the periodised contour)."""
    return _Finite(p, q, lattice)


def randomized_response(eps0: float) -> Pair:
    """Binary randomized response: P = (p, 1-p), Q = (1-p, p), p = e^eps0/(1+e^eps0)."""
    p = 1.0 / (1.0 + math.exp(-eps0))
    pr = _Finite([p, 1.0 - p], [1.0 - p, p], lattice=(-eps0, 2.0 * eps0),
                 name=f"RR(eps0={eps0})")
    pr.p_mp = [1 / (1 + mp.exp(-mp.mpf(eps0))), 1 / (1 + mp.exp(mp.mpf(eps0)))]
    pr.q_mp = pr.p_mp[::-1]
    pr.eps0 = eps0
    return pr


class _Split:
    """A smooth partition of unity in v = |L - edge| (edge = the near-atom's loss), built for
    one threshold v_lam = |eps/T - edge|:

        W_k(v) = erfc((v - beta_k)/s_k)/2, part 0 = W_0, part k = W_k - W_{k-1} (1 <= k <= K),
        part K+1 = 1 - W_K,

    W_0 falling over [0, D] (D = v_lam, s_0 = D/19.2: W_0 < 1e-41 for v >= D, and 1 - W_0 < 1e-41
    at v <= 0, so the near-atom does not leak into the other parts), W_k over
    [D R^{k-1}, D R^k] (R = 8) up to D R^K >= 4. Part k >= 1 is smooth on the scale s_{k-1}, so
    its characteristic function is negligible beyond t_k = 13/s_{k-1} (e^{-(t s)^2/4} < 1e-18;
    checked numerically when first used: below e^-32 M(c) at t_k and 1.5 t_k, where the
    double-precision floor of the sums is ~e^-35 M(c)). Part 0 holds the near-atom."""

    R = 8.0

    def __init__(self, side, edge, D):
        self.side, self.edge, self.D = side, float(edge), float(D)
        a = [0.0]
        b = [D]
        while b[-1] < 4.0:
            a.append(b[-1])
            b.append(b[-1] * self.R)
        self.beta = np.array([(x + y) / 2 for x, y in zip(a, b)])
        self.s = np.array([(y - x) / 19.2 for x, y in zip(a, b)])
        self.K = len(b) - 1
        self.t_cut = [np.inf] + [13.0 / self.s[k - 1] for k in range(1, self.K + 2)]
        self.key = (side, self.edge, self.D)

    def v(self, L):
        return L - self.edge if self.side == "bottom" else self.edge - L

    def weight(self, k, L):
        v = self.v(L)
        if k == 0:
            return 0.5 * erfc((v - self.beta[0]) / self.s[0])
        if k == self.K + 1:
            return 0.5 * erfc(-(v - self.beta[-1]) / self.s[-1])
        u1 = (v - self.beta[k]) / self.s[k]
        u0 = (v - self.beta[k - 1]) / self.s[k - 1]
        direct = 0.5 * erfc(u1) - 0.5 * erfc(u0)
        compl = 0.5 * erfc(-u0) - 0.5 * erfc(-u1)
        return np.where(u0 > 0, direct, compl)


class _OutputQuad(Pair):
    """Continuous part C(z) = int_D p(x) e^{z L(x)} dx by Gauss-Legendre over the output x.

    Subclasses give log p(x) (``_logp``), L(x) (``_loss``, monotone on D), the candidate range
    (``_range(c)``), the scale ``_hmag`` that p(x) e^{cL(x)} varies on (and below the distance
    to the nearest complex singularity of L), and the domain D = [_xa, _xb]."""

    _PHASE = 30.0     # radians of t*L per 24-node panel (GL24 error ~1e-18)
    _DROP = 70.0      # keep x where log p + cL (+ log part weight) >= max - _DROP

    def __init__(self):
        super().__init__()
        self._cache = {}
        self._checked = {}

    def _nodes(self, c, tb, split=None, k=None):
        key = (float(c), float(tb), None if split is None else split.key, k)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if len(self._cache) > 512:
            self._cache.clear()
        xa, xb = self._range(c)
        n = int(min(max((xb - xa) / (self._hmag / 4.0), 2001), 400001))
        xs = np.linspace(xa, xb, n)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            Ls = self._loss(xs)
            W = self._logp(xs) + c * Ls
            if split is not None:
                W = W + np.log(np.abs(split.weight(k, Ls)))
        W = np.where(np.isfinite(W), W, -np.inf)
        wmax = np.max(W)
        if not np.isfinite(wmax):
            hit = (0.0, np.zeros(0), np.zeros(0))
            self._cache[key] = hit
            return hit
        keep = np.nonzero(W >= wmax - self._DROP)[0]
        i0, i1 = max(keep[0] - 1, 0), min(keep[-1] + 1, n - 1)
        lo, hi = xs[i0], xs[i1]
        fine = np.linspace(lo, hi, 20001)
        Lf = self._loss(fine)
        cost = (fine - lo) / self._hmag + tb * np.abs(Lf - Lf[0]) / self._PHASE
        if split is not None:
            vf = split.v(Lf)
            for j in range(len(split.beta)):
                u = np.clip((vf - split.beta[j]) / split.s[j], -10.0, 10.0)
                cost = cost + np.abs(u - u[0]) / 2.0
        npan = int(math.ceil(cost[-1])) + 1
        edges = np.interp(np.linspace(0.0, cost[-1], npan + 1), cost, fine)
        edges[0], edges[-1] = lo, hi
        a, b = edges[:-1], edges[1:]
        mid, half = 0.5 * (a + b), 0.5 * (b - a)
        x = (mid[:, None] + half[:, None] * _GX[None, :]).ravel()
        lw = (np.log(half)[:, None] + np.log(_GW)[None, :]).ravel()
        L = self._loss(x)
        a_ = lw + self._logp(x) + c * L
        m = np.max(a_)
        v = np.exp(a_ - m)
        if split is not None:
            v = v * split.weight(k, L)
        hit = (m, v, L)
        self._cache[key] = hit
        return hit

    @staticmethod
    def _dft(t, m, v, L):
        out = np.empty(t.shape, dtype=complex)
        if L.size == 0:
            out[:] = -np.inf
            return out
        # phases t (L - L_ref): the rounding of t*L is t |L| 2^-53, so centre the losses
        lref = float(np.sum(v * L) / np.sum(v)) if np.sum(v) > 0 else 0.0
        dL = L - lref
        chunk = max(1, int(3e6 // L.size))
        for s0 in range(0, t.size, chunk):
            tt = t[s0:s0 + chunk]
            ph = np.outer(tt, dL)
            re = np.cos(ph) @ v
            im = np.sin(ph) @ v
            with np.errstate(divide="ignore"):
                out[s0:s0 + chunk] = m + 1j * tt * lref + np.log(re + 1j * im)
        return out

    def _eval(self, c, t, split=None, k=None):
        t = np.asarray(t, dtype=float).ravel()
        out = np.empty(t.shape, dtype=complex)
        at = np.abs(t)
        tb = np.where(at <= 1.0, 1.0, 2.0 ** np.ceil(np.log2(np.maximum(at, 1.0))))
        for b in np.unique(tb):
            idx = np.nonzero(tb == b)[0]
            out[idx] = self._dft(t[idx], *self._nodes(c, b, split, k))
        return out

    def log_parts(self, c, t, split):
        """(log M_0(c+it), log sum_{k>=1} M_k(c+it)) for the partition ``split``; part k is
        dropped for |t| > t_k (its characteristic function is negligible there)."""
        t = np.asarray(t, dtype=float).ravel()
        sel = self._eval(c, t, split, 0)
        rest = np.full(t.shape, -np.inf + 0j)
        tmax = float(np.max(np.abs(t))) if t.size else 0.0
        for k in range(1, split.K + 2):
            # the cut is >= the window's 13/s_{k-1}: below that, no need to find it
            tc = split.t_cut[k] if tmax <= split.t_cut[k] else self._t_cut(c, split, k)
            idx = np.nonzero(np.abs(t) <= tc)[0]
            if idx.size:
                rest[idx] = _clogaddexp(rest[idx], self._eval(c, t[idx], split, k))
        return sel, rest

    def _t_cut(self, c, split, k):
        """t beyond which part k is negligible: from 13/s_{k-1} (the window's scale), doubled
        until |M_k| is below e^-32 M(c) (or e^-30 of the part's absolute mass: the
        double-precision floor of these sums is ~e^-35 of either) at t_k and 1.5 t_k."""
        key = (float(c), split.key, k)
        hit = self._checked.get(key) if isinstance(self._checked, dict) else None
        if hit is not None:
            return hit
        if not isinstance(self._checked, dict):
            self._checked = {}
        tot = float(self.log_cont(c, np.zeros(1)).real[0])
        tc = split.t_cut[k]
        for _ in range(12):
            vals = self._eval(c, np.array([tc, 1.5 * tc]), split, k)
            m, v, _ = self._nodes(c, 2.0 ** math.ceil(math.log2(max(1.5 * tc, 1.0))), split, k)
            ab = m + math.log(max(np.sum(np.abs(v)), 1e-300))
            spread = float(np.max(np.abs(_ - np.mean(_)))) if _.size else 0.0
            floor = max(tot - 32.0, ab - 30.0, ab + math.log(max(4e-16 * 1.5 * tc * spread,
                                                                 1e-300)))
            if np.max(vals.real) <= floor:
                break
            tc *= 2.0
        else:
            raise RuntimeError(f"part {k} of the split does not die out (t = {tc:.3g}): "
                               f"log|M_k| - log M = {np.max(vals.real) - tot:.1f}")
        self._checked[key] = tc
        return tc

    def log_cont(self, c, t):
        return self._eval(c, t)


class _SubGauss(_OutputQuad):
    """Poisson-subsampled Gaussian, add/remove. r(x) = 1 - q + q e^{(2x-1)/(2 s^2)} = mix/N(0).
    remove: P = (1-q) N(0,s^2) + q N(1,s^2), Q = N(0,s^2): L = log r, p = phi r.
    add:    P = N(0,s^2), Q = mixture: L = -log r, p = phi."""

    def __init__(self, sigma, q, direction):
        super().__init__()
        assert direction in ("remove", "add")
        self.sigma, self.q, self.direction = float(sigma), float(q), direction
        self._sign = 1.0 if direction == "remove" else -1.0
        self._l1q = math.log1p(-q)
        self._lq = math.log(q)
        self._hmag = min(sigma, 2.0 * sigma * sigma)
        self.l_max = _INF if direction == "remove" else -self._l1q
        # x -> -inf: L -> log(1-q) (remove, bottom of the range) or -log(1-q) (add, top), with
        # a log-normal-like pile-up there, whose characteristic function decays very slowly
        self.near_atom = ("bottom", self._l1q) if direction == "remove" else ("top", -self._l1q)
        self.name = f"SubGaussian(sigma={sigma}, q={q}, {direction})"

    def _ell(self, x):
        s2 = self.sigma ** 2
        return np.logaddexp(self._l1q, self._lq + (2.0 * x - 1.0) / (2.0 * s2))

    def _logphi(self, x):
        s = self.sigma
        return -0.5 * (x / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)

    def _loss(self, x):
        return self._sign * self._ell(x)

    def _logp(self, x):
        lp = self._logphi(x)
        return lp + self._ell(x) if self.direction == "remove" else lp

    def _range(self, c):
        s = self.sigma
        w = 16.0 * s + 1.0
        return -abs(c) - w - 1.0, 1.0 + abs(c) + w


def subsampled_gaussian(sigma: float, q: float, direction: str) -> Pair:
    """direction 'remove': ((1-q)N(0,s^2) + qN(1,s^2), N(0,s^2)); 'add': the reverse order."""
    return _SubGauss(sigma, q, direction)


class _SubLaplaceCont(_OutputQuad):
    """Continuous part of the Poisson-subsampled Laplace on x in (0, 1)."""

    def __init__(self, owner):
        super().__init__()
        self.o = owner
        self._hmag = min(0.5, owner.b)

    def _ell(self, x):
        o = self.o
        return np.logaddexp(o._l1q, o._lq + (2.0 * x - 1.0) / o.b)

    def _loss(self, x):
        return self.o._sign * self._ell(x)

    def _logp(self, x):
        o = self.o
        lp = -np.abs(x) / o.b - math.log(2.0 * o.b)
        return lp + self._ell(x) if o.direction == "remove" else lp

    def _range(self, c):
        return 0.0, 1.0


class _SubLaplace(Pair):
    """Poisson-subsampled Laplace (sensitivity 1, scale b), add/remove.
    r(x) = 1 - q + q e^{(|x| - |x-1|)/b}; remove: P = (1-q)Lap(0) + qLap(1), Q = Lap(0), L = log r;
    add: P = Lap(0), Q = mixture, L = -log r. Atoms: r = r_- on x <= 0, r_+ on x >= 1."""

    def __init__(self, b, q, direction):
        super().__init__()
        assert direction in ("remove", "add")
        self.b, self.q, self.direction = float(b), float(q), direction
        self._sign = 1.0 if direction == "remove" else -1.0
        self._l1q = math.log1p(-q)
        self._lq = math.log(q)
        lm = float(np.logaddexp(self._l1q, self._lq - 1.0 / b))   # log r_-
        lp = float(np.logaddexp(self._l1q, self._lq + 1.0 / b))   # log r_+
        qlm, qlp = -math.log(2.0), -math.log(2.0) - 1.0 / b       # log Lap(0)(x<=0), (x>=1)
        if direction == "remove":
            self.atom_losses = np.array([lm, lp])
            self.atom_logmass = np.array([qlm + lm, qlp + lp])
            self.l_max = lp
        else:
            self.atom_losses = np.array([-lm, -lp])
            self.atom_logmass = np.array([qlm, qlp])
            self.l_max = -lm
        self._cont = _SubLaplaceCont(self)
        self.name = f"SubLaplace(b={b}, q={q}, {direction})"

    def log_cont(self, c, t):
        return self._cont.log_cont(c, t)


def subsampled_laplace(b: float, q: float, direction: str) -> Pair:
    return _SubLaplace(b, q, direction)


# --- composition spec --------------------------------------------------------------------------

def _comps(components, T=None):
    if isinstance(components, Pair):
        components = [(components, 1 if T is None else T)]
    elif T is not None:
        raise TypeError("T only goes with a single pair")
    out = []
    for pair, k in components:
        if int(k) != k or k < 0:
            raise ValueError("T must be a non-negative integer")
        if k:
            out.append((pair, int(k)))
    if not out:
        raise ValueError("empty composition")
    return out


def _atoms_share(comps, c):
    """log of (pure atomic part of M^T at c) / M^T(c)."""
    s = 0.0
    for p, k in comps:
        if p.atom_losses.size == 0:
            return -_INF
        la = float(p.log_atoms(c, np.zeros(1)).real[0])
        s += k * (la - p.K(c))
    return s


def _atom_distribution(comps):
    """The (sub-probability) law of the sum when every step takes an atom: (losses, log masses)."""
    dist_l, dist_m = np.zeros(1), np.zeros(1)
    for p, k in comps:
        ls, lm = p.atom_losses, p.atom_logmass
        if ls.size == 2:
            j = np.arange(k + 1)
            lg = (math.lgamma(k + 1) - np.array([math.lgamma(v + 1) for v in j])
                  - np.array([math.lgamma(k - v + 1) for v in j]))
            l2 = j * ls[0] + (k - j) * ls[1]
            m2 = lg + j * lm[0] + (k - j) * lm[1]
        else:
            l2, m2 = np.zeros(1), np.zeros(1)
            for _ in range(k):
                l2 = (l2[:, None] + ls[None, :]).ravel()
                m2 = (m2[:, None] + lm[None, :]).ravel()
                l2, m2 = _merge(l2, m2)
        dist_l = (dist_l[:, None] + l2[None, :]).ravel()
        dist_m = (dist_m[:, None] + m2[None, :]).ravel()
        dist_l, dist_m = _merge(dist_l, dist_m)
        if dist_l.size > 5_000_000:
            raise ValueError("atomic support too large")
    return dist_l, dist_m


def _merge(l, m):
    order = np.argsort(l)
    l, m = l[order], m[order]
    key = np.round(l / 1e-11).astype(np.int64) if l.size else l
    _, start = np.unique(key, return_index=True)
    out_l = l[start]
    out_m = np.logaddexp.reduceat(m, start) if m.size else m
    return out_l, out_m


def _discrete_delta(ls, lm, eps):
    sel = ls > eps
    if not np.any(sel):
        return 0.0
    return float(np.sum(np.exp(lm[sel]) * -np.expm1(eps - ls[sel])))


# --- the evaluator -----------------------------------------------------------------------------

class _Evaluator:
    """Fixes c and an adapted t-grid for one eps0; re-evaluates delta(eps) for eps near eps0
    from the stored M-values (only the kernel changes)."""

    def __init__(self, comps, eps0, rtol=1e-12, atoms=None, c=None, windows=True):
        self.comps = comps
        self.eps0 = float(eps0)
        self.rtol = rtol
        self.a_inf = 1.0 - math.exp(sum(k * math.log1p(-p.p_inf) for p, k in comps)) \
            if any(p.p_inf for p, _ in comps) else 0.0
        self.lattice = self._lattice()
        self.c = self._saddle() if c is None else float(c)
        self.subtract = False
        self.atom_dist = None
        self.win = None
        self.exact_sel = None
        if self.lattice is None and windows:
            self._setup_window()
        if self.lattice is None and self.win is None:
            share = _atoms_share(comps, self.c)
            if atoms is None:
                self.subtract = share > -45.0
            else:
                self.subtract = bool(atoms) and share > -_INF
            if self.subtract:
                self.atom_dist = _atom_distribution(comps)
        if c is None and (self.subtract or self.win is not None):
            # the saddle of what is integrated: the remainder M^T - M_0^T (or M^T - A^T)
            self.c = self._saddle(self._h_rem)
        if c is None and self.lattice is None and self.c >= 0.99 * math.exp(self._UMAX) \
                and not self._h_rem(self.c, self.eps0) <= math.log(
                    max(self._exact_part(self.eps0), 1e-300)) - 36.0:
            raise RuntimeError(f"no usable saddle (c reached {self.c:.3g}): the integrand "
                               "would cancel; this query is out of the oracle's reach")
        self._integrate()

    # -- geometry --
    def _lattice(self):
        if not all((not p.has_cont) and p.lattice is not None for p, _ in self.comps):
            return None
        spans = {round(p.lattice[1], 14) for p, _ in self.comps}
        if len(spans) != 1:
            return None
        h = self.comps[0][0].lattice[1]
        A = sum(k * p.lattice[0] for p, k in self.comps)
        return A, h

    def _logK(self, c, t, eps):
        """log of the kernel: F(z) = e^{-z eps}/(z(z+1)), or G(tau) on a lattice."""
        z = c + 1j * np.asarray(t, dtype=float)
        if self.lattice is None:
            return -z * eps - np.log(z) - np.log(z + 1.0)
        A, h = self.lattice
        u0 = (A - eps) % h
        # G = h e^{-z eps} sum_{j>=0} (e^{-z u_j} - e^{-(z+1) u_j}), u_j = u0 + jh, summed as
        # h e^{-z(eps+u0)} N / ((1 - e^{-zh})(1 - e^{-(z+1)h})) with no cancellation in
        # N = (1 - e^{-u0}) + e^{-zh-u0} (1 - e^{u0-h}).
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            N = -math.expm1(-u0) + np.exp(-z * h - u0) * -math.expm1(u0 - h)
            return (math.log(h) - z * (eps + u0) + np.log(N)
                    - np.log(-_cexpm1(-z * h)) - np.log(-_cexpm1(-(z + 1.0) * h)))

    def _logMT(self, c, t):
        s = 0
        for p, k in self.comps:
            s = s + k * p.log_mgf(c, t)
        return s

    def _h(self, c, eps):
        v = float(self._logMT(c, np.zeros(1)).real[0] + self._logK(c, np.zeros(1), eps).real[0])
        return v if math.isfinite(v) else _INF

    _UMAX = math.log(1e4)

    def _h_rem(self, c, eps):
        z = np.zeros(1)
        lm, fac = self._values(z, c)
        with np.errstate(divide="ignore"):
            v = float(lm.real[0] + np.log(np.abs(fac[0])) + self._logK(c, z, eps).real[0])
        ex = self._exact_part(eps)
        if ex > 0:
            # the integral is negligible next to the exact part once below 1e-18 of it: stop
            # there (larger c only costs accuracy)
            v = max(v, math.log(ex) - 41.0) if math.isfinite(v) else math.log(ex) - 41.0
        return v if math.isfinite(v) else _INF

    def _exact_part(self, eps):
        """The part of delta(eps) summed exactly (pure atoms, or the split's part 0)."""
        d = 0.0
        if self.subtract:
            d += _discrete_delta(self.atom_dist[0], self.atom_dist[1], eps)
        if self.exact_sel is not None:
            lk0, dk = self.exact_sel
            d += math.exp(lk0) * -math.expm1(eps + dk)
        return d

    def _saddle(self, hfun=None):
        eps = self.eps0
        hfun = self._h if hfun is None else hfun
        f = lambda u: hfun(math.exp(u), eps)  # noqa: E731
        u, fu = 0.0, f(0.0)
        # bracket the minimum of the convex function h(e^u)
        step = 1.0
        fl = f(u - step)
        if fl < fu:
            lo_dir = -1.0
        else:
            lo_dir = 1.0
        a, fa = u, fu
        b = u + lo_dir * step
        fb = f(b)
        while fb < fa:
            step *= 2.0
            a, fa = b, fb
            b = a + lo_dir * step
            if b < -40:
                return math.exp(-40)
            if b > self._UMAX:
                # h keeps decreasing (a top atom dominates, or a lattice): cap c
                b = self._UMAX
                fb = f(b)
                break
            fb = f(b)
        lo, hi = sorted((a - lo_dir * step, b))
        r = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded",
                                     options={"xatol": 1e-4})
        return math.exp(r.x)

    def _curv(self):
        c, eps = self.c, self.eps0
        d = 1e-3 * c
        h = self._h_rem if (self.subtract or self.win is not None) else self._h
        h0, hp, hm = h(c, eps), h(c + d, eps), h(c - d, eps)
        k2 = (hp - 2 * h0 + hm) / (d * d)
        return max(k2, 1e-300), h0

    def _setup_window(self):
        """Single pair with a near-atom (edge e): split P smoothly in L (class _Split) at
        lam = eps/T.

        bottom (e < lam): part 0 has weight < 1e-41 for L >= lam, so every T-sum of part-0
        draws is < eps and M_0^T contributes 0: integrate M^T - M_0^T.
        top (e > lam): part 0 lives on L > lam, its T-sums are > eps, so M_0^T contributes
        exactly M_0(0)^T - e^eps M_0(-1)^T; integrate M^T - M_0^T.
        Every remaining term has a factor M_rest = M - M_0, whose characteristic function
        decays fast (the slowly decaying pile-up at e is in part 0)."""
        if len(self.comps) != 1:
            return
        pair, T = self.comps[0]
        na = getattr(pair, "near_atom", None)
        if na is None:
            return
        side, edge = na
        lam = self.eps0 / T
        if side == "bottom" and not lam > edge:
            return
        if side == "top" and not lam < edge:
            return
        self.win = _Split(side, edge, abs(lam - edge))
        if side == "top":
            k0 = float(pair._eval(0.0, np.zeros(1), self.win, 0).real[0])
            k1 = float(pair._eval(-1.0, np.zeros(1), self.win, 0).real[0])
            self.exact_sel = (T * k0, T * (k1 - k0))

    @staticmethod
    def _diff_power(logS, logR, k):
        """(lm, fac) with exp(lm) * fac = (S + R)^k - S^k, from log S, log R."""
        with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
            rho = np.where(np.isfinite(logR.real), np.exp(logR - logS), 0.0)
            small = np.abs(rho) < 0.5
            D = np.where(small, k * _clog1p(np.where(small, rho, 0.0)),
                         k * (_clogaddexp(np.zeros_like(logS), logR - logS)))
            big = D.real > 0
            lm = np.where(big, k * logS + D, k * logS)
            fac = np.where(big, -_cexpm1(-np.where(big, D, 0.0)),
                           _cexpm1(np.where(big, 0.0, D)))
        return lm, fac

    # -- integrand pieces at nodes --
    def _values(self, t, c=None):
        """log of the M-part, and a complex factor, at the nodes t."""
        c = self.c if c is None else c
        if self.win is not None:
            pair, T = self.comps[0]
            ls, lr = pair.log_parts(c, t, self.win)
            return self._diff_power(ls, lr, T)
        if not self.subtract:
            return self._logMT(c, t), np.ones(t.shape, dtype=complex)
        # M^T - A^T with A = prod A_i^{k_i}: log A + expm1(sum k_i log1p(C_i/A_i))
        logA, D = 0, 0
        for p, k in self.comps:
            la = p.log_atoms(c, t)
            lc = p.log_cont(c, t)
            with np.errstate(over="ignore", invalid="ignore"):
                ratio = np.where(np.isfinite(lc.real), np.exp(lc - la), 0.0)
            logA = logA + k * la
            D = D + k * _clog1p(ratio)
        return logA, _cexpm1(D)

    def _f(self, lm, fac, t, eps):
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            return (fac * np.exp(lm + self._logK(self.c, t, eps))).real

    def _integrate(self):
        c, eps = self.c, self.eps0
        k2, h0 = self._curv()
        w = 1.0 / math.sqrt(k2)
        self.w = w
        if h0 > 700.0:
            raise RuntimeError(f"the integrand is e^{h0:.0f} at t = 0 (c = {c:.4g} far from "
                               "the saddle): it would cancel")
        est = math.exp(h0) * w / math.sqrt(2 * math.pi)   # saddle-point size of the integral
        t_end = math.pi / self.lattice[1] if self.lattice is not None else _INF
        atol = self.rtol * est / 16.0
        T_nodes, W_nodes, LM, FAC = [], [], [], []
        total = 0.0

        def gl(a, b):
            mid, half = 0.5 * (a + b), 0.5 * (b - a)
            t = (mid[:, None] + half[:, None] * _TX[None, :])
            wt = half[:, None] * _TW[None, :]
            return t, wt

        def eval_panels(a, b):
            """GL on the halves of each panel, GL on the whole; returns values and nodes."""
            m = 0.5 * (a + b)
            tl, wl = gl(a, m)
            tr, wr = gl(m, b)
            tf, wf = gl(a, b)
            tt = np.concatenate([tl, tr, tf], axis=1)
            lm, fac = self._values(tt.ravel())
            lm, fac = lm.reshape(tt.shape), fac.reshape(tt.shape)
            f = self._f(lm, fac, tt, eps)
            n = _NT
            halves = np.sum(f[:, :n] * wl, axis=1) + np.sum(f[:, n:2 * n] * wr, axis=1)
            full = np.sum(f[:, 2 * n:] * wf, axis=1)
            nodes_t = tt[:, :2 * n]
            nodes_w = np.concatenate([wl, wr], axis=1)
            env = np.max(np.abs(f[:, :2 * n]), axis=1)
            # local phase rate (for the next panel's width)
            ph = np.unwrap(np.angle(fac[:, :2 * n] * np.exp(1j * (lm[:, :2 * n].imag
                            + self._logK(c, tt[:, :2 * n], eps).imag))), axis=1)
            rate = np.abs(ph[:, -1] - ph[:, 0]) / np.maximum(b - a, 1e-300)
            return (halves, full, nodes_t, nodes_w, lm[:, :2 * n], fac[:, :2 * n], env, rate)

        def process(a, b, depth=0):
            """adaptive on a batch of panels; returns the integral over them; stores nodes."""
            res = 0.0
            pending = (np.asarray(a, float), np.asarray(b, float))
            env_last, rate_last = None, None
            for _ in range(60):
                a_, b_ = pending
                if a_.size == 0:
                    break
                halves, full, nt, nw, lm, fac, env, rate = eval_panels(a_, b_)
                ok = np.abs(halves - full) <= atol
                if env_last is None:
                    env_last, rate_last = env[-1], rate[-1]
                for i in np.nonzero(ok)[0]:
                    T_nodes.append(nt[i])
                    W_nodes.append(nw[i])
                    LM.append(lm[i])
                    FAC.append(fac[i])
                res += float(np.sum(halves[ok]))
                bad = ~ok
                if np.any(~np.isfinite(halves)) or np.count_nonzero(bad) > 20000:
                    raise RuntimeError("t-integration failed (non-finite values or too many "
                                       "panels)")
                m = 0.5 * (a_ + b_)
                pending = (np.concatenate([a_[bad], m[bad]]), np.concatenate([m[bad], b_[bad]]))
            else:
                raise RuntimeError("t-integration did not converge (panel splitting)")
            return res, env_last, rate_last

        edges = w * np.array([0, .25, .5, .75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8])
        if edges[-1] >= t_end:
            edges = np.linspace(0.0, t_end, 33)
        r, env, rate = process(edges[:-1], edges[1:])
        total += r
        tb = edges[-1]
        width = edges[-1] - edges[-2]
        quiet = 0
        n_batches = 0
        while tb < t_end:
            n_batches += 1
            if sum(x.size for x in T_nodes) > 300_000:
                raise RuntimeError(f"t-integration too long (t={tb:.3g}, slowly decaying "
                                   "integrand): out of the oracle's reach")
            if n_batches > 3000:
                raise RuntimeError(f"t-integration did not reach its tail (t={tb:.3g})")
            # next batch: 8 panels, widths growing 1.25x, capped by the oscillation rate
            ws = []
            wd = width
            for _ in range(16):
                wd = min(1.25 * wd, 40.0 / max(rate, 1e-300), max(tb, w))
                ws.append(wd)
            e = tb + np.concatenate([[0.0], np.cumsum(ws)])
            if e[-1] >= t_end:
                e = e[e < t_end]
                e = np.append(e, t_end)
            r, _, _ = process(e[:-1], e[1:])
            total += r
            # envelope on the last panel of the batch
            a_last, b_last = e[-2], e[-1]
            tl, _ = gl(np.array([a_last]), np.array([b_last]))
            lm, fac = self._values(tl.ravel())
            f = self._f(lm, fac, tl.ravel(), eps)
            env = float(np.max(np.abs(f)))
            ph = np.unwrap(np.angle(fac * np.exp(1j * (lm.imag
                                                       + self._logK(c, tl.ravel(), eps).imag))))
            rate = abs(ph[-1] - ph[0]) / (b_last - a_last)
            width = e[-1] - e[-2]
            tb = e[-1]
            # |int_tb^inf| for an integrand decaying at least like 1/t^2 and oscillating at the
            # local phase rate: ~ env * min(tb, 1/rate); a factor 8 of margin on the latter
            tail = env * min(tb, 8.0 / max(rate, 1e-300))
            if tail < 0.01 * self.rtol * max(abs(total), est * 1e-3):
                quiet += 1
                if quiet >= 2:
                    break
            else:
                quiet = 0
        self.t_max = tb
        self.nodes_t = np.concatenate(T_nodes)
        self.nodes_w = np.concatenate(W_nodes)
        self.lm = np.concatenate(LM)
        self.fac = np.concatenate(FAC)
        self.n_eval = self.nodes_t.size
        self.est = est

    # -- queries --
    def integral(self, eps):
        f = self._f(self.lm, self.fac, self.nodes_t, eps)
        return float(np.sum(f * self.nodes_w)) / math.pi

    def delta(self, eps):
        return self.a_inf + self.integral(eps) + self._exact_part(eps)


def _l_max(comps):
    return sum(k * p.l_max for p, k in comps)


def delta(components, eps: float, T: int | None = None, rtol: float = 1e-11, atoms=None,
          c: float | None = None, info: bool = False):
    """delta(eps) of the composition: ``components`` is a Pair (with ``T``) or a list of
    (pair, count). ``atoms``: None = subtract the purely atomic term when it matters, True /
    False to force. ``c``: the abscissa (default: the saddle point). ``info``: also return
    the evaluator (c, w, t_max, n_eval)."""
    comps = _comps(components, T)
    eps = float(eps)
    if eps >= _l_max(comps):
        a_inf = 1.0 - math.exp(sum(k * math.log1p(-p.p_inf) for p, k in comps))
        return (a_inf, None) if info else a_inf
    ev = _Evaluator(comps, eps, rtol=rtol, atoms=atoms, c=c)
    d = ev.delta(eps)
    return (d, ev) if info else d


def _saddle_epsilon(comps, target):
    """eps from the saddle-point approximation log delta ~ h(c) - 0.5 log(2 pi h''(c))."""
    def K(c):
        return sum(k * p.K(c) for p, k in comps)

    def approx(u):
        c = math.exp(u)
        d = 1e-4 * c
        k0, kp, km = K(c), K(c + d), K(c - d)
        k1 = (kp - km) / (2 * d)
        k2 = max((kp - 2 * k0 + km) / (d * d), 1e-300)
        eps = k1
        lg = k0 - c * eps - math.log(c * (c + 1)) - 0.5 * math.log(2 * math.pi * k2)
        return lg, eps

    lt = math.log(target)
    lo, hi = -20.0, 0.0
    while approx(hi)[0] > lt and hi < 12:
        hi += 1.0
    try:
        u = optimize.brentq(lambda u: approx(u)[0] - lt, lo, hi, xtol=1e-6)
    except ValueError:
        u = hi
    return max(approx(u)[1], 0.0)


def epsilon_for_delta(components, target: float, T: int | None = None, rtol: float = 1e-10,
                      eps0: float | None = None, info: bool = False):
    """The eps >= 0 with delta(eps) = target (delta is decreasing), to ~rtol relative."""
    comps = _comps(components, T)
    target = float(target)
    lmax = _l_max(comps)
    a_inf = 1.0 - math.exp(sum(k * math.log1p(-p.p_inf) for p, k in comps))
    if target <= a_inf:
        return _INF
    d0 = delta(comps, 0.0) if lmax > 0 else a_inf
    if d0 <= target:
        return 0.0
    eps = _saddle_epsilon(comps, target) if eps0 is None else float(eps0)
    if not (0.0 < eps < lmax):
        eps = min(max(eps, 1e-6), 0.5 * lmax) if math.isfinite(lmax) else max(eps, 1e-6)
    lt = math.log(target)
    history = []
    prev = None
    for it in range(8):
        for _ in range(12):
            try:
                ev = _Evaluator(comps, eps, rtol=1e-12)
                break
            except RuntimeError as exc:
                # a first guess too close to T l_max puts the saddle at c = inf: back off
                if "no usable saddle" not in str(exc) or not math.isfinite(lmax) or it:
                    raise
                eps = lmax - max(4.0 * (lmax - eps), 1e-4 * lmax)
        else:
            raise RuntimeError("epsilon_for_delta: no usable starting point")
        g = lambda e, ev=ev: math.log(max(ev.delta(e), 1e-320)) - lt  # noqa: E731
        g0 = g(eps)
        # d log delta / d eps ~ -c at the saddle: Newton, then secant on the frozen evaluator
        e1 = eps + g0 / max(ev.c, 1e-12)
        if math.isfinite(lmax):
            e1 = min(max(e1, 0.5 * eps), 0.5 * (eps + lmax))
        else:
            e1 = max(e1, 0.5 * eps)
        x0, x1, f0, f1 = eps, e1, g0, g(e1)
        for _ in range(40):
            if f1 == f0 or abs(x1 - x0) <= 1e-15 * max(abs(x1), 1e-300):
                break
            x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
            x0, f0, x1 = x1, f1, x2
            f1 = g(x1)
        new = x1 if (0 < x1 < lmax) else e1
        step = abs(new - eps)
        history.append((eps, g0, ev.c, new))
        if it >= 1 and step <= rtol * new:
            eps = new
            break
        # the evaluators' own noise (~1e-9 of delta in the hardest cases) limits how close
        # successive answers get: accept when the steps stop shrinking at that level
        if it >= 2 and step <= 1e-8 * new and prev is not None and step >= 0.3 * prev:
            eps = 0.5 * (eps + new)
            break
        prev = step
        eps = new
    else:
        raise RuntimeError(f"epsilon_for_delta did not converge: {history}")
    return (eps, history) if info else eps


def chernoff_delta(components, eps: float, T: int | None = None) -> float:
    """A rigorous upper bound: (1 - e^{-u})_+ <= e^{cu} / (c+1) (c/(c+1))^c for all u, so
    delta(eps) <= min_c M(c)^T e^{-c eps} (c/(c+1))^c / (c+1)."""
    comps = _comps(components, T)
    a_inf = 1.0 - math.exp(sum(k * math.log1p(-p.p_inf) for p, k in comps))
    if eps >= _l_max(comps):
        return a_inf

    def f(u):
        c = math.exp(u)
        v = sum(k * p.K(c) for p, k in comps) - c * eps - math.log1p(c) \
            + c * (math.log(c) - math.log1p(c))
        return v if math.isfinite(v) else _INF
    r = optimize.minimize_scalar(f, bounds=(-12.0, math.log(1e4)), method="bounded",
                                 options={"xatol": 1e-3})
    return a_inf + math.exp(min(r.fun, 0.0))


def delta_max(pairs, eps: float, T: int, **kw) -> float:
    """max over the pairs (e.g. the remove and add directions) of delta(eps). Pairs after the
    first are computed only when their Chernoff bound does not already put them below."""
    best = delta(pairs[0], eps, T=T, **kw)
    for p in pairs[1:]:
        if chernoff_delta(p, eps, T) <= best:
            continue
        best = max(best, delta(p, eps, T=T, **kw))
    return best


def epsilon_max(pairs, target: float, T: int, **kw) -> float:
    """max over the pairs of epsilon_for_delta; a later pair is solved only when its delta at
    the current answer (first by the Chernoff bound) exceeds the target."""
    best = epsilon_for_delta(pairs[0], target, T=T, **kw)
    for p in pairs[1:]:
        if chernoff_delta(p, best, T) <= target or delta(p, best, T=T) <= target:
            continue
        best = max(best, epsilon_for_delta(p, target, T=T, **kw))
    return best


# --- independent references (no contour) ---------------------------------------------------------

def gaussian_delta_exact(mu, eps, dps=50):
    """delta of N(mu,1) vs N(0,1): Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), mpmath."""
    with mp.workdps(dps):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def gaussian_epsilon_exact(mu, target):
    def f(e):
        a = log_ndtr(mu / 2 - e / mu)
        b = e + log_ndtr(-mu / 2 - e / mu)
        return a + np.log1p(-np.exp(b - a)) - math.log(target)
    if f(0.0) <= 0:
        return 0.0
    return optimize.brentq(f, 0.0, mu * mu + 60 * mu + 10, xtol=1e-15, rtol=1e-15)


def laplace_delta_exact(b, eps, sensitivity=1.0, dps=50):
    """Laplace T = 1: delta(eps) = 1 - e^{(eps - eta)/2} for eps < eta = s/b (derivation in
    the test module), else 0."""
    with mp.workdps(dps):
        eta, eps = mp.mpf(sensitivity) / b, mp.mpf(eps)
        return 1 - mp.exp((eps - eta) / 2) if eps < eta else mp.mpf(0)


def finite_delta_exact(pair, T, eps, dps=50):
    """Exact T-fold delta of a finite pair by multinomial convolution in mpmath (2 outcomes:
    a binomial sum)."""
    with mp.workdps(dps):
        p, q = pair.p_mp, pair.q_mp
        dist = {(): mp.mpf(1)}
        # convolution over outcome counts; losses are sums, finite ones only
        fin = [(pi, mp.log(pi / qi)) for pi, qi in zip(p, q) if pi > 0 and qi > 0]
        pinf = sum((pi for pi, qi in zip(p, q) if qi == 0 and pi > 0), mp.mpf(0))
        if len(fin) == 2:
            (p1, l1), (p2, l2) = fin
            tot = mp.mpf(0)
            for j in range(T + 1):
                s = j * l1 + (T - j) * l2
                if s > eps:
                    tot += mp.binomial(T, j) * p1 ** j * p2 ** (T - j) * (1 - mp.exp(eps - s))
        else:
            dist = {mp.mpf(0): mp.mpf(1)}
            for _ in range(T):
                new = {}
                for s, m in dist.items():
                    for pi, li in fin:
                        key = mp.nstr(s + li, 40)
                        v = new.get(key, (s + li, mp.mpf(0)))
                        new[key] = (v[0], v[1] + m * pi)
                dist = {v[0]: v[1] for v in new.values()}
            tot = sum(((1 - mp.exp(eps - s)) * m for s, m in dist.items() if s > eps), mp.mpf(0))
        return 1 - (1 - pinf) ** T + tot


def subsampled_gaussian_delta_t1(sigma, q, direction, eps, dps=50):
    """T = 1 by the likelihood-ratio threshold (L is monotone in x), Phi's in mpmath."""
    with mp.workdps(dps):
        s, q, eps = mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)
        if direction == "remove":
            # r(x) = e^eps at x_e; delta = P(X > x_e) - e^eps Q(X > x_e)
            x = mp.mpf(1) / 2 + s * s * mp.log((mp.expm1(eps) + q) / q)
            return (q * mp.ncdf(-(x - 1) / s) - (mp.expm1(eps) + q) * mp.ncdf(-x / s))
        # add: P = N(0), Q = mix; p/q = 1/r >= e^eps iff r <= e^-eps iff x <= x_e
        v = mp.expm1(-eps) + q
        if v <= 0:
            return mp.mpf(0)
        x = mp.mpf(1) / 2 + s * s * mp.log(v / q)
        return mp.ncdf(x / s) - mp.exp(eps) * ((1 - q) * mp.ncdf(x / s) + q * mp.ncdf((x - 1) / s))


def subsampled_gaussian_epsilon_t1(sigma, q, direction, target, dps=50):
    """T = 1: the eps >= 0 with subsampled_gaussian_delta_t1(eps) = target (bisection on
    log delta in mpmath)."""
    f = lambda e: subsampled_gaussian_delta_t1(sigma, q, direction, e, dps)  # noqa: E731
    if f(0.0) <= target:
        return 0.0
    lo, hi = 0.0, 1.0
    while f(hi) > target:
        lo, hi = hi, 2 * hi
    with mp.workdps(dps):
        lt = mp.log(target)
        for _ in range(200):
            mid = (lo + hi) / 2
            v = f(mid)
            if v > 0 and mp.log(v) > lt:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-15 * hi:
                break
    return 0.5 * (lo + hi)


def subsampled_laplace_delta_t1(b, q, direction, eps, dps=40):
    """T = 1: int (p - e^eps q)_+ dx with mpmath.quad, split at 0, 1 and the crossing."""
    with mp.workdps(dps):
        b, q, eps = mp.mpf(b), mp.mpf(q), mp.mpf(eps)
        lap = lambda x, m: mp.exp(-abs(x - m) / b) / (2 * b)  # noqa: E731
        mix = lambda x: (1 - q) * lap(x, 0) + q * lap(x, 1)  # noqa: E731
        if direction == "remove":
            P, Q = mix, (lambda x: lap(x, 0))
        else:
            P, Q = (lambda x: lap(x, 0)), mix
        g = lambda x: max(P(x) - mp.exp(eps) * Q(x), 0)  # noqa: E731
        # the crossing inside (0, 1), if any: r(x) = e^{+-eps}
        pts = [-mp.inf, 0, 1, mp.inf]
        target = mp.exp(eps) if direction == "remove" else mp.exp(-eps)
        v = (target - 1 + q) / q
        if v > 0:
            x = (b * mp.log(v) + 1) / 2
            if 0 < x < 1:
                pts = [-mp.inf, 0, x, 1, mp.inf]
        return mp.quad(g, pts)


def delta_mpmath(pair, T, eps, c=None, dps=30):
    """The same contour integral in mpmath (mpmath.quad) for closed-form pairs without atoms
    (Gaussian): an independent check of the double-precision integrator."""
    with mp.workdps(dps):
        eps = mp.mpf(eps)
        if c is None:
            ev = _Evaluator([(pair, T)], float(eps))
            c, w = ev.c, ev.w
        else:
            w = 1.0
        c = mp.mpf(c)

        def f(t):
            z = c + 1j * t
            return mp.re(mp.exp(T * pair.log_mgf_mp(z) - z * eps) / (z * (z + 1)))
        pts = [0] + [w * 2 ** k for k in range(-2, 8)] + [mp.inf]
        return mp.quad(f, pts) / mp.pi
