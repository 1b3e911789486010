"""The privacy profile of a mixture of Gaussians against the centred one, exactly: both orders of
(P, Q) = (sum_i p_i N(mu_i, 1), N(0, 1)), mu_i >= 0 (:mod:`dpamp.mechanisms.mixture_of_gaussians`).

With g(z) = log sum_i p_i e^{l_i(z)}, l_i(z) = mu_i z - mu_i^2/2, increasing, the outcome z
where g(z) = eps splits (P - e^eps Q)_+ from its zero part, so
    H_{e^eps}(P || Q) = sum_i p_i [Phi(mu_i - z) - e^eps Phi(-z)]
                      = sum_i p_i [Phi(mu_i - z) - e^{l_i(z)} Phi(-z)]   (e^eps Q = sum p_i e^l_i Q)
and each bracket is int_z^inf phi(x)(e^{l_i(x)} - e^{l_i(z)}) dx >= 0: the Gaussian pair's own
curve H_{e^{l_i}}(N(mu_i, 1) || N(0, 1)) =: G(mu_i, l_i(z)) (Balle et al. 2018, Thm 4). Likewise at
g(z) = -eps,
    H_{e^eps}(Q || P) = Phi(z) - e^eps sum_i p_i Phi(z - mu_i) = e^eps sum_i p_i e^{l_i(z)}
                        G(mu_i, -l_i(z))
(the Gaussian pair is symmetric). G is evaluated by the closed form with its proven rounding
(:func:`dpamp.profiles.closed_forms.gaussian_log_profile`), below 0 through the perspective
G(mu, e) = 1 - e^e + e^e G(mu, -e). The identities hold at every z, each for the eps that z
gives: so z is moved to the side where that eps is at most (upper bound) or at least (lower
bound) the one asked, checked with g's rounding bound, and the l_i are moved by their rounding
the same way (G falls in its second argument).
"""
from __future__ import annotations

import numpy as np

from .closed_forms import gaussian_log_profile
from .numerics import ULP, log1mexp, pad_down, pad_up


def _g(mus, log_ps, z):
    """(g(z), its rounding bound, g'(z)), vectorised."""
    e = log_ps + mus * z[..., None] - mus * mus / 2.0
    top = e.max(axis=-1)
    with np.errstate(invalid="ignore"):
        w = np.exp(e - top[..., None])
        sw = w.sum(axis=-1)
        g = np.log(sw) + top
        slope = np.sum(w * mus, axis=-1) / sw
    size = np.max(np.abs(log_ps) + np.abs(mus * z[..., None]) + mus * mus, axis=-1)
    return g, 8 * ULP * (size + np.abs(g) + 1.0), slope


def _root_side(mus, log_ps, target, above: bool):
    """z with g(z) >= target (``above``) or <= target, proven with g's rounding bound, at most a
    few ulps of z from the root (-inf / +inf where no finite z does: target <= log p_0). A z
    that fails the check moves by what its miss and the bound need at its slope (g is convex:
    checked again, and doubled each time it still fails)."""
    from ..mechanisms.mixture_of_gaussians import loss_root
    z = loss_root(target, mus, np.exp(log_ps))
    idx = np.nonzero(np.isfinite(z))[0]
    for j in range(200):
        g, e, slope = _g(mus, log_ps, z[idx])
        t = target[idx]
        bad = (g - e < t) if above else (g + e > t)
        if not bad.any():
            break
        idx, g, e, slope, t = idx[bad], g[bad], e[bad], slope[bad], t[bad]
        need = (np.abs(g - t) + 2 * e) / np.maximum(slope, 1e-300)
        step = np.maximum(need, 2.0 ** -52 * (1.0 + np.abs(z[idx]))) * 2.0 ** j
        z[idx] = z[idx] + step if above else z[idx] - step
    return z


def _gauss(mu, e, upper: bool):
    """log G(mu, e) for any real e (upper or lower bound), e known exactly."""
    out = np.empty(np.broadcast(mu, e).shape)
    mu, e = np.broadcast_arrays(mu, e)
    pos = e >= 0
    out[pos] = gaussian_log_profile(mu[pos], e[pos], upper=upper)
    if (~pos).any():
        en = e[~pos]
        inner = gaussian_log_profile(mu[~pos], -en, upper=upper)
        v = np.logaddexp(log1mexp(en), en + inner)
        out[~pos] = pad_up(v) if upper else pad_down(v)
    return out


def mixture_log_rows(mus, ps, eps, upper: bool = True) -> np.ndarray:
    """log of both curves of the pair (row 0: H(P || Q), row 1: H(Q || P)) at eps >= 0
    (vectorised, inf allowed), as proven upper or lower bounds (module docstring)."""
    mus, log_ps = np.asarray(mus, dtype=float), np.log(np.asarray(ps, dtype=float))
    eps = np.asarray(eps, dtype=float)
    flat = eps.ravel()
    rows = np.full((2, flat.size), -np.inf)
    fin = np.isfinite(flat)
    if fin.any():
        rows[0, fin] = _remove_row(mus, log_ps, flat[fin], upper)
        rows[1, fin] = _add_row(mus, log_ps, flat[fin], upper)
    return rows.reshape((2,) + eps.shape)


def _terms(mus, log_ps, z, upper, sign):
    """(l_i moved by their rounding, rows of log p_i + log G(mu_i, sign * l_i)): the l_i
    rounded so that G's argument moves the pessimistic way for the bound asked."""
    l = mus * z[:, None] - mus * mus / 2.0
    dl = 4 * ULP * (np.abs(mus * z[:, None]) + mus * mus)
    # G falls in its argument: an upper bound takes the argument low, a lower bound high
    arg = sign * l - dl if upper else sign * l + dl
    pos = mus > 0
    t = np.full(l.shape, -np.inf)
    t[:, pos] = log_ps[pos] + _gauss(np.broadcast_to(mus[pos], l[:, pos].shape), arg[:, pos],
                                     upper)
    return l, dl, t


def _remove_row(mus, log_ps, eps, upper):
    z = _root_side(mus, log_ps, eps, above=not upper)     # g(z) <= eps for the upper bound
    _, _, t = _terms(mus, log_ps, z, upper, 1.0)
    v = np.logaddexp.reduce(t, axis=1)
    return pad_up(v, 8 * ULP * mus.size) if upper else pad_down(v, 8 * ULP * mus.size)


def _add_row(mus, log_ps, eps, upper):
    # the eps' = -g(z) of the z used is <= eps (upper) or >= eps (lower); e^eps' then bounds
    # by e^eps the way asked
    z = _root_side(mus, log_ps, -eps, above=upper)
    out = np.full(eps.shape, -np.inf)
    fin = np.isfinite(z)                 # -inf: eps >= -log p_0, where the curve is 0
    if fin.any():
        l, dl, t = _terms(mus, log_ps, z[fin], upper, -1.0)
        l_side = l + dl if upper else l - dl
        v = eps[fin] + np.logaddexp.reduce(t + l_side, axis=1)
        out[fin] = pad_up(v, 8 * ULP * mus.size) if upper else pad_down(v, 8 * ULP * mus.size)
    return out
