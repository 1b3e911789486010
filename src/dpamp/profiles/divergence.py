"""The hockey-stick (alpha-) divergence (000 eq. (2)) and profiles from privacy-loss distributions.

    H_alpha(P || Q) = sup_E P(E) - alpha Q(E) = sum_z [P(z) - alpha Q(z)]_+ ,   alpha = e^eps.

For alpha < 1 (eps < 0) the same sum is used (000 Thm 14's proof applies it to non-negative
measures); for probability measures it satisfies H_alpha(P||Q) = 1 - alpha + alpha H_{1/alpha}(Q||P).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import _validate as V


def _measure(name, x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of masses (got shape {a.shape})")
    if np.isnan(a).any() or (a < 0).any() or np.isinf(a).any():
        raise ValueError(f"{name} must contain finite masses >= 0")
    return a


def hockey_stick(p, q, epsilon=None, *, alpha=None):
    """H_{e^eps}(P || Q) = sum_z [p_z - e^eps q_z]_+ for discrete non-negative measures p, q on
    the same points (000 eq. (2)), vectorised over epsilon (any real, +-inf allowed: eps < 0 is
    the extension to alpha < 1 used in 000 Thm 14) or over ``alpha`` >= 0 given directly.
    Mass of p where q = 0 counts at every alpha (the mass at infinity). Returns a float for a
    scalar argument. Numerical value (a sum of positive terms, no rounding margin)."""
    p = _measure("p", p)
    q = _measure("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length (got {p.size} and {q.size})")
    if (epsilon is None) == (alpha is None):
        raise ValueError("give exactly one of epsilon and alpha")
    if alpha is None:
        e = np.asarray(epsilon, dtype=float)
        if np.isnan(e).any():
            raise ValueError("epsilon must not contain nan")
        with np.errstate(over="ignore"):
            a = np.exp(e)
    else:
        a = V.reals("alpha", alpha, low=0.0)
    flat = a.ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        diff = p[None, :] - flat[:, None] * q[None, :]
    diff = np.where(q[None, :] == 0, p[None, :], diff)  # inf * 0: the atom only P charges
    out = np.maximum(diff, 0.0).sum(axis=1).reshape(a.shape)
    return out if out.ndim else float(out)


def hockey_stick_density(p_pdf, q_pdf, epsilon, *, support=(-math.inf, math.inf), points=None,
                         epsabs=1e-14, epsrel=1e-12):
    """H_{e^eps}(P || Q) = int [p(z) - e^eps q(z)]_+ dz for densities on (a subset of) the line,
    by adaptive quadrature (scipy.integrate.quad), vectorised over epsilon by a loop. A numerical
    value with quad's error estimate, not a certified bound: use it to check closed forms.
    ``points``: break points of the integrand (e.g. the crossing point, kinks)."""
    from scipy.integrate import quad
    e = np.asarray(epsilon, dtype=float)
    lo, hi = support
    out = np.empty(e.shape)
    for idx, eps in np.ndenumerate(e):
        a = math.exp(eps) if eps < 700 else math.inf

        def f(z, a=a):
            qz = q_pdf(z)
            if math.isinf(a):
                return p_pdf(z) if qz == 0 else 0.0
            return max(p_pdf(z) - a * qz, 0.0)
        if points is None:
            val, _ = quad(f, lo, hi, epsabs=epsabs, epsrel=epsrel, limit=500)
        else:
            cuts = sorted(x for x in points if lo < x < hi)
            edges = [lo, *cuts, hi]
            val = sum(quad(f, u, v, epsabs=epsabs, epsrel=epsrel, limit=500)[0]
                      for u, v in zip(edges[:-1], edges[1:]))
        out[idx] = val
    return out if out.ndim else float(out)


def profile_from_privacy_loss(losses, probabilities, epsilon):
    """The hockey-stick curve of a pair from its privacy-loss distribution (000 Thm 5;
    004 Prop. 7): for L = log dP/dQ under P (atoms ``losses`` with ``probabilities``, +inf
    allowed), H_{e^eps}(P || Q) = E[(1 - e^{eps - L})_+] = sum_{l > eps} p_l (1 - e^{eps - l}).
    Vectorised over epsilon (any real). The probabilities need not sum to one (a sub-PLD)."""
    ls = np.asarray(losses, dtype=float).ravel()
    ps = np.asarray(probabilities, dtype=float).ravel()
    if ls.shape != ps.shape or np.isnan(ls).any() or np.isnan(ps).any() or (ps < 0).any():
        raise ValueError("losses and probabilities must be arrays of one length, "
                         "probabilities >= 0, no nan")
    e = np.asarray(epsilon, dtype=float)
    if np.isnan(e).any():
        raise ValueError("epsilon must not contain nan")
    flat = e.ravel()
    with np.errstate(over="ignore", invalid="ignore"):
        gap = flat[:, None] - ls[None, :]
        w = np.where(ls[None, :] > flat[:, None], -np.expm1(np.minimum(gap, 0.0)), 0.0)
    w = np.where(np.isposinf(ls)[None, :], 1.0, w)  # the atom at +inf counts at every eps
    out = (w * ps[None, :]).sum(axis=1).reshape(e.shape)
    return out if out.ndim else float(out)
