"""The mixture-of-Gaussians mechanism: on one dataset the output is N(0, sigma^2), on its
neighbour sum_i p_i N(c_i, sigma^2) (dp-accounting's ``MixtureOfGaussiansDpEvent(sigma,
sensitivities c, sampling_probs p)``; Choquette-Choo, Ganesh, Steinke & Thakurta, "Privacy
Amplification for Matrix Mechanisms", ICLR 2024, arXiv:2310.15526, where a vector-valued mixture
is dominated by the scalar one with each shift replaced by its norm, their Cor. 4.7).

In units of sigma, mu_i = c_i / sigma. The pair "remove" is (P, Q) = (sum_i p_i N(mu_i, 1),
N(0, 1)), "add" its swap; add/remove neighbours give both orders. Its privacy loss is
    g(z) = log sum_i p_i exp(mu_i z - mu_i^2 / 2),
a log-sum-exp of lines, hence convex, with slope the weighted mean of the mu_i: non-decreasing
when every c_i >= 0 (strictly increasing as soon as one is positive), and not monotone when the
shifts have both signs. dpamp, like dp-accounting, takes non-negative shifts only (then the
loss's CDF under P and Q is a pair of Gaussian CDFs at one root of g; with shifts of both signs
the level sets of the loss are intervals, which no representation of dpamp's handles yet).
Probabilities must sum to 1 within 1e-9 (dp-accounting's tolerance) and are then normalised;
those equal to 0 are dropped. A mixture of one shift is the Gaussian mechanism; one of a zero
shift and a shift c is the Poisson-subsampled Gaussian.

Rényi divergence, by quadrature with proven bounds (:func:`rdp_bounds`): with R = e^g,
    remove: E_{N(0,1)}[R^alpha] - 1 = int (R^alpha - R) phi,   add: int (R^(1-alpha) - 1) phi,
each cell of a grid holds the exact integral of R phi (sum_i p_i (Phi(b - mu_i) - Phi(a - mu_i)))
and a bracket on that of R^k phi (k = alpha or 1 - alpha): k g is convex (k > 0) or concave
(k < 0), so on a cell it lies between its chord and its tangent at the midpoint, and
int_a^b e^{A + B z} phi(z) dz = e^{A + B^2/2} (Phi(b - B) - Phi(a - B)) in closed form (second-
order in the cell width). Outside the grid: g is increasing with slope at most mu_max and convex,
which bounds the tails in the same closed form. Every cell carries its rounding bound (log_ndtr
to 64 ulps of its value, as :mod:`dpamp.profiles.closed_forms` measured). The upper curve is also
capped by joint convexity: E_Q[(sum p_i P_i/Q)^alpha] <= sum p_i E_Q[(P_i/Q)^alpha] and
E_Q[(Q/sum p_i P_i)^(alpha-1)] <= sum p_i E_Q[(Q/P_i)^(alpha-1)] give both orders
    eps(alpha) <= log(sum_i p_i e^{alpha (alpha - 1) mu_i^2 / 2}) / (alpha - 1).
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.rounding import ulps_up
from .base import Mechanism

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_U = 2.0 ** -52
#: log_ndtr's error allowance, relative to |log Phi| + 1 (closed_forms measured ~18 ulps)
_C = 64 * _U
#: cells of the quadrature at most (beyond, only the joint-convexity cap is used)
MAX_CELLS = 200_000
#: orders above this use the joint-convexity cap alone (and no lower curve): the subsampled
#: RDP asks the base for every integer order up to 4096
MAX_QUADRATURE_ORDER = 1024.0


@dataclasses.dataclass(frozen=True)
class MixtureOfGaussians(Mechanism):
    """Mixture of Gaussians (module docstring): N(0, sigma^2) against sum_i p_i N(c_i, sigma^2),
    ``sensitivities`` c_i >= 0 with ``probabilities`` p_i (summing to 1 within 1e-9), both
    orders. RDP by quadrature with proven bounds, capped by joint convexity; not pure DP unless
    every shift with positive probability is 0 (then it is 0-DP)."""

    sigma: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]
    relation: Relation = ADD_REMOVE
    tight_rdp = True

    def __post_init__(self):
        object.__setattr__(self, "sigma", V.positive("sigma", self.sigma))
        c = V.reals("sensitivities", self.sensitivities, allow_inf=False)
        p = V.reals("probabilities", self.probabilities, allow_inf=False)
        if c.ndim != 1 or p.ndim != 1 or c.size == 0 or c.size != p.size:
            raise ValueError(f"sensitivities and probabilities must be non-empty lists of the "
                             f"same length (got {c.size} and {p.size})")
        if (c < 0).any():
            raise ValueError("sensitivities must be >= 0: with shifts of both signs the privacy "
                             "loss is not monotone in the output, which dpamp does not "
                             f"represent (got {float(c.min()):g})")
        if (p < 0).any() or (p > 1).any():
            raise ValueError("probabilities must be in [0, 1]")
        if abs(float(p.sum()) - 1.0) > 1e-9:
            raise ValueError(f"probabilities must sum to 1 (got {float(p.sum()):.12g})")
        object.__setattr__(self, "sensitivities", tuple(float(v) for v in c))
        object.__setattr__(self, "probabilities", tuple(float(v) for v in p))
        object.__setattr__(self, "relation", as_relation(self.relation))

    def components(self) -> tuple[np.ndarray, np.ndarray]:
        """(mu_i = c_i / sigma, p_i normalised) over the components of positive probability."""
        c, p = np.array(self.sensitivities), np.array(self.probabilities)
        keep = p > 0
        return c[keep] / self.sigma, p[keep] / float(p[keep].sum())

    def pure_epsilon(self) -> float:
        mus, _ = self.components()
        return 0.0 if (mus == 0).all() else math.inf

    def _cap(self, alpha: np.ndarray) -> np.ndarray:
        """The joint-convexity bound of the module docstring (both orders), rounded up."""
        mus, ps = self.components()
        a = alpha[:, None]
        with np.errstate(over="ignore"):
            t = np.log(ps) + a * (a - 1.0) * mus * mus / 2.0
        v = np.logaddexp.reduce(t, axis=1) / (alpha - 1.0)
        return ulps_up(v * (1 + 16 * _U) + 16 * _U * np.max(np.abs(t), axis=1) / (alpha - 1.0),
                       4)

    def _curve(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mus, ps = self.components()
        if (mus == 0).all():
            return np.zeros(alpha.shape), np.zeros(alpha.shape)
        up, lo = np.empty(alpha.shape), np.zeros(alpha.shape)
        cap = self._cap(alpha)
        p0 = float(ps[mus == 0].sum())
        # the add order is pure DP when a zero shift has probability p_0: Q/P <= 1/p_0
        add_pure = ulps_up(-math.log(p0), 4) if p0 > 0 else math.inf
        for i, a in enumerate(alpha):
            if a > MAX_QUADRATURE_ORDER:
                up[i] = max(cap[i], 0.0)
                continue
            u_r, l_r = rdp_bounds(mus, ps, float(a), remove=True)
            if l_r >= add_pure:
                u_a, l_a = add_pure, 0.0
            else:
                u_a, l_a = rdp_bounds(mus, ps, float(a), remove=False)
                u_a = min(u_a, add_pure)
            up[i] = min(max(u_r, u_a), cap[i])
            lo[i] = max(l_r, l_a, 0.0)
        return up, np.minimum(lo, up)

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        out = np.full(alpha.shape, self.pure_epsilon())
        fin = np.isfinite(alpha)
        if fin.any():
            out[fin] = _cached(self, tuple(alpha[fin].ravel()))[0].reshape(alpha[fin].shape)
        return out

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        """The quadrature's lower bound, the larger order (both pairs are attained)."""
        a = V.orders(alpha).astype(float)
        out = np.full(a.shape, self.pure_epsilon())
        fin = np.isfinite(a)
        if fin.any():
            out[fin] = _cached(self, tuple(a[fin].ravel()))[1].reshape(a[fin].shape)
        return out if out.ndim else float(out)


_CACHE: dict = {}


def _cached(m: MixtureOfGaussians, alphas: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The curve at the orders ``alphas``, each order computed once per mechanism (the RDP
    conversions ask the same orders many times)."""
    todo = np.array([a for a in alphas if (m, a) not in _CACHE], dtype=float)
    if todo.size:
        if len(_CACHE) > 20_000:
            _CACHE.clear()
        up, lo = m._curve(todo)
        for a, u, lw in zip(todo, up, lo):
            _CACHE[(m, float(a))] = (float(u), float(lw))
    vals = [_CACHE[(m, a)] for a in alphas]
    return np.array([v[0] for v in vals]), np.array([v[1] for v in vals])


# --- the loss and its inverse -----------------------------------------------------------------

def loss_root(t, mus, ps) -> np.ndarray:
    """The outcome z(t) where the loss g(z) = log sum_i p_i e^{mu_i z - mu_i^2/2} equals t
    (vectorised; -inf where t <= log p_0, p_0 the probability of the zero shifts, and at
    t = -inf; +inf at t = +inf). g = t iff h(z) = log sum_{mu_i > 0} p_i e^{mu_i z - mu_i^2/2}
    = s, s = log(e^t - p_0) = t + log(-expm1(log p_0 - t)); h is convex and increasing with
    slope in [min mu_i, max mu_i], and Newton's method from z_0 = min_i (s - log p_i +
    mu_i^2/2)/mu_i, right of the root (h is above each of its lines), decreases monotonically
    onto it."""
    mus, ps = np.asarray(mus, dtype=float), np.asarray(ps, dtype=float)
    zero = mus == 0
    p0 = float(ps[zero].sum())
    log_p0 = math.log(p0) if p0 > 0 else -math.inf
    return _root_pos(t, log_p0, np.log(ps[~zero]), mus[~zero])


def _root_pos(t, log_p0, log_ps, mus):
    """z(t) of the module docstring, vectorised (-inf at t <= log p_0, +inf at t = +inf)."""
    t = np.asarray(t, dtype=float)
    out = np.where(t == np.inf, np.inf, -np.inf)
    live = np.isfinite(t) & (t > log_p0)
    if not live.any():
        return out
    tt = t[live]
    with np.errstate(divide="ignore"):
        s = tt if log_p0 == -np.inf else tt + np.log(-np.expm1(log_p0 - tt))
    z = np.min((s[:, None] - log_ps + mus * mus / 2.0) / mus, axis=1)
    act = np.arange(z.size)
    prev = np.full(z.size, np.inf)
    for _ in range(100):
        e = log_ps + mus * z[act, None] - mus * mus / 2.0
        top = e.max(axis=1)
        w = np.exp(e - top[:, None])
        sw = w.sum(axis=1)
        h = np.log(sw) + top
        step = (h - s[act]) / (np.sum(w * mus, axis=1) / sw)
        z[act] = z[act] - step
        # done where the step is at rounding level, or, once small, no longer shrinks (the
        # rounding noise of h; far from the root Newton may shrink slowly, never stalls)
        a = np.abs(step)
        mag = 1.0 + np.abs(z[act])
        go = (a > 4e-16 * mag) & ((a < 0.5 * prev[act]) | (a > 1e-10 * mag))
        prev[act] = a
        act = act[go]
        if act.size == 0:
            break
    out[live] = z
    return out


# --- the quadrature --------------------------------------------------------------------------

def _g(mus, ps, z):
    """(g(z), g'(z), |terms| for the rounding bound), vectorised over z."""
    t = np.log(ps) + mus * z[..., None] - mus * mus / 2.0
    top = np.max(t, axis=-1, keepdims=True)
    w = np.exp(t - top)
    s = w.sum(axis=-1)
    g = np.log(s) + top[..., 0]
    slope = np.sum(w * mus, axis=-1) / s
    size = np.max(np.abs(np.log(ps)) + np.abs(mus * z[..., None]) + mus * mus, axis=-1)
    return g, slope, size + np.abs(g)


def _log_dphi(x, y):
    """(log(Phi(y) - Phi(x)), its absolute error bound) for x < y, elementwise, computed on the
    side where the CDF values are small (no cancellation beyond the difference itself)."""
    from scipy.special import log_ndtr
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    left = y <= 0                          # Phi(y) - Phi(x), both below 1/2
    right = x >= 0                         # Phi(-x) - Phi(-y)
    hi = np.where(left, log_ndtr(y), np.where(right, log_ndtr(-x), 0.0))
    lo = np.where(left, log_ndtr(x), np.where(right, log_ndtr(-y), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = lo - hi                        # <= 0
        out = hi + np.log(-np.expm1(d))
        ed = _C * (np.abs(lo) + np.abs(hi) + 2.0)
        err = ed + ed * np.exp(d) / -np.expm1(d) + 4 * _U * np.abs(out)
        mid = ~left & ~right               # x < 0 < y: 1 - Phi(x) - Phi(-y), at least 0 ...
        if mid.any():
            from scipy.special import ndtr
            tails = ndtr(x[mid]) + ndtr(-y[mid])
            out[mid] = np.log1p(-tails)
            err[mid] = 8 * _U * (1.0 + tails / (1.0 - tails))
    return out, err


def _window(mus, ps, k: float):
    """[a, b] holding the integrand e^{k g(z) - z^2/2} down to e^-60 of its largest value
    (a coarse scan), or None when it needs more than MAX_CELLS cells."""
    mmax = float(mus.max())
    lo, hi = (-40.0, k * mmax + 40.0) if k > 0 else (k * mmax - 40.0, 40.0)
    z = np.arange(lo, hi + 0.25, 0.25)
    if z.size > MAX_CELLS:
        return None
    f = k * _g(mus, ps, z)[0] - z * z / 2
    ok = np.nonzero(f >= f.max() - 60.0)[0]
    a, b = float(z[max(ok[0] - 1, 0)]), float(z[min(ok[-1] + 1, z.size - 1)])
    # the tail bounds use lines of slope k mu_max or less: past their peak (z = slope) they
    # fall like phi, so the window reaches 10 beyond it on the side the bound is used
    if k > 0:
        b = max(b, min(k * mmax + 10.0, hi))
    else:
        # (here the line's slope is k g'(a), g' falling to the left: a few steps settle it)
        for _ in range(8):
            target = k * float(_g(mus, ps, np.array([a]))[1][0]) * (1 + 1e-9) - 10.0
            if a <= target:
                break
            a = max(target, lo)
    return a, b


def rdp_bounds(mus: np.ndarray, ps: np.ndarray, alpha: float, remove: bool) -> tuple[float, float]:
    """Proven (upper, lower) bounds on the order-alpha Rényi divergence of the remove pair (P, Q)
    or of the add pair (Q, P) (module docstring); (inf, 0) where the quadrature is out of
    reach."""
    k = alpha if remove else 1.0 - alpha
    win = _window(mus, ps, k)
    if win is None:
        return math.inf, 0.0
    a, b = win
    curv = abs(k) * float(mus.max()) ** 2 / 4.0          # |k g''| <= |k| mu_max^2 / 4
    # the cells' chord-tangent gap is ~ curv h^2 / 4 of S; S - 1 shrinks like alpha - 1
    h = min(0.02, 0.05 / math.sqrt(1.0 + curv)) * min(1.0, 3.0 * math.sqrt(alpha - 1.0))
    tails = _tails(mus, ps, k, a, b, remove)
    best = (math.inf, 0.0)
    for _ in range(3):
        n = int(math.ceil((b - a) / h))
        if n > MAX_CELLS:
            break
        up, lo = _finish(_cells(mus, ps, k, np.linspace(a, b, n + 1), remove), tails, alpha)
        best = (min(best[0], up), max(best[1], lo))
        # the gap falls like h^2 (a mixture far from 1 needs finer cells: small weights)
        if best[0] - best[1] <= 1e-4 * best[0]:
            break
        h /= 4.0
    return best


def _cells(mus, ps, k, edges, remove):
    """Per cell: log upper and lower bounds of int e^{k g} phi, the exact int (R or 1) phi,
    and the absolute error of each (as a bound on the linear values' error, relative)."""
    a, b = edges[:-1], edges[1:]
    ga, sa, za = _g(mus, ps, a)
    gb, sb, zb = _g(mus, ps, b)
    m = 0.5 * (a + b)
    gm, slm, zm = _g(mus, ps, m)
    chord_B = k * (gb - ga) / (b - a)
    chord_A = k * ga - chord_B * a
    tan_B = k * slm
    tan_A = k * gm - tan_B * m
    # k g convex (k > 0): chord above, tangent below; concave (k < 0): the other way round
    (uA, uB), (lA, lB) = ((chord_A, chord_B), (tan_A, tan_B)) if k > 0 else \
        ((tan_A, tan_B), (chord_A, chord_B))
    lu, eu = _line_integral(uA, uB, a, b)
    ll, el = _line_integral(lA, lB, a, b)
    # rounding of the lines: k g to 8 ulps of its terms at the points used
    line_err = 8 * _U * abs(k) * (np.maximum(np.maximum(za, zb), zm) + np.abs(a) + np.abs(b))
    if remove:
        le, ee = _mixture_cells(mus, ps, a, b)
    else:
        le, ee = _log_dphi(a, b)
    return lu, ll, le, (eu + line_err, el + line_err, ee)


def _line_integral(A, B, a, b):
    """log int_a^b e^{A + B z} phi(z) dz = A + B^2/2 + log(Phi(b - B) - Phi(a - B)), and its
    absolute error bound."""
    d, e = _log_dphi(a - B, b - B)
    v = A + B * B / 2.0 + d
    return v, e + 4 * _U * (np.abs(A) + B * B + np.abs(v))


def _mixture_cells(mus, ps, a, b):
    """log sum_i p_i (Phi(b - mu_i) - Phi(a - mu_i)) per cell and its error bound."""
    d, e = _log_dphi(a[:, None] - mus, b[:, None] - mus)
    t = np.log(ps) + d
    top = np.max(t, axis=1, keepdims=True)
    w = np.exp(t - top)
    s = w.sum(axis=1)
    return np.log(s) + top[:, 0], np.sum(w * e, axis=1) / s + (mus.size + 2) * _U


def _tails(mus, ps, k, a, b, remove):
    """Outside [a, b]: log of an upper bound on int e^{k g} phi (module docstring), log of the
    exact int (R or 1) phi there, and the error bounds of both."""
    from scipy.special import log_ndtr
    ga, sa, za = _g(mus, ps, np.array([a]))
    gb, _, zb = _g(mus, ps, np.array([b]))
    ga_, sa_, gb_ = float(ga[0]), float(sa[0]), float(gb[0])
    eg = 8 * _U * float(max(za[0], zb[0]))
    if k > 0:
        # right: g(z) <= g(b) + mu_max (z - b); left: g(z) <= g(min(a, 0)) below 0 and, on
        # [0, a], below its chord (g convex)
        B = k * float(mus.max())
        right = k * (gb_ + eg) - B * b + B * B / 2 + log_ndtr(B - b)
        a0 = min(a, 0.0)
        g0 = float(_g(mus, ps, np.array([a0]))[0][0])
        left = k * (g0 + eg) + log_ndtr(a0)
        if a > 0:
            cb = k * (ga_ - g0) / a
            v, e = _line_integral(np.array([k * (g0 + eg)]), np.array([cb]), np.array([0.0]),
                                  np.array([a]))
            left = float(np.logaddexp(left, v[0] + e[0]))
        ex = np.concatenate([np.log(ps) + log_ndtr(a - mus), np.log(ps) + log_ndtr(mus - b)])
    else:
        # right: k g(z) <= k g(b); left: g above its tangent at a (slope rounded up, g down)
        right = k * (gb_ - eg) + log_ndtr(-b)
        s = sa_ * (1 + 16 * _U) + 1e-300
        B = k * s
        left = k * (ga_ - eg) - B * a + B * B / 2 + log_ndtr(a - B)
        ex = np.array([log_ndtr(a), log_ndtr(-b)])
    up = float(np.logaddexp(right, left))
    e_up = 64 * _U * (abs(up) + k * k * float(mus.max()) ** 2 + abs(k) * (abs(a) + abs(b)) + 8)
    lex = float(np.logaddexp.reduce(ex))
    return up, -math.inf, lex, (e_up, 0.0, _C * (abs(lex) + 2.0))


def _finish(cells, tails, alpha):
    """(upper, lower) on log(S)/(alpha - 1), S = int e^{k g} phi, from the cells and tails:
    S - 1 = sum of (cell bound - exact cell) plus the tails' (precise when S is near 1)."""
    lu, ll, le, (eu, el, ee) = cells
    t_up, _, t_ex, t_err = tails
    lam = alpha - 1.0
    log_up = float(np.logaddexp.reduce(np.append(lu, t_up)))
    if log_up > 1.0:
        # S far above 1: its log directly (weighted relative errors)
        w = np.exp(lu - log_up)
        r = float(np.sum(w * eu)) + math.exp(t_up - log_up) * t_err[0] + (lu.size + 4) * _U
        upper = (log_up + r) / lam
        log_lo = float(np.logaddexp.reduce(ll))
        wl = np.exp(ll - log_lo)
        lower = (log_lo - float(np.sum(wl * el)) - (ll.size + 4) * _U) / lam
    else:
        U, L, E = np.exp(lu), np.exp(ll), np.exp(le)
        tu, te = math.exp(t_up), math.exp(t_ex)
        scale = float(np.sum(U) + np.sum(L) + 2 * np.sum(E)) + tu + 2 * te
        e_round = (lu.size + 8) * _U * scale
        s_up = float(np.sum(U - E)) + tu - te
        s_up += float(np.sum(U * eu + E * ee)) + tu * t_err[0] + te * t_err[2] + e_round
        s_lo = float(np.sum(L - E)) - te
        s_lo -= float(np.sum(L * el + E * ee)) + te * t_err[2] + e_round
        upper = math.log1p(max(s_up, 0.0)) / lam
        lower = math.log1p(max(s_lo, 0.0)) / lam
    return float(ulps_up(upper * (1 + 8 * _U), 2)), max(lower * (1 - 8 * _U), 0.0)
