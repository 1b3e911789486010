"""Amplification from couplings: the shift-reduction bound of Balle et al. 2019, Thm 2 (Examples
1-3).

Balle et al. 2019, Thm 2: for any omega and coupling pi of (omega, mu),

    R_alpha(mu K || nu K) <= R_alpha(omega || nu) + sup_x R_alpha((H_pi K)(x) || K(x)).

For a mechanism M with neighbouring outputs mu = M(D) centred at u and nu = M(D') centred at v
(|u - v| <= Delta), and a noise kernel K(x) = Noise(psi(x)) with psi L-Lipschitz, the paper takes
omega = M's noise centred at w = theta u + (1 - theta) v and couples omega to mu by the
translation u - w. Both terms are then RDP curves of a noise family at a shift:

    R_alpha(mu K || nu K) <= min_{theta in [0, 1]}  A_alpha(theta Delta) + B_alpha(L (1 - theta)
    Delta)

with A the mechanism's and B the kernel's RDP as a function of the shift:

    Gaussian(s):  alpha x^2 / (2 s^2)
    Laplace(b):   1/(alpha - 1) log g_alpha(x / b),
                  g_alpha(z) = alpha/(2 alpha - 1) e^{(alpha-1) z} + (alpha-1)/(2 alpha - 1)
                  e^{-alpha z}

(Mironov's Laplace RDP, Balle et al. 2019, Example 2). Points off the segment [v, u] only increase
both distances, so theta in [0, 1] loses nothing. Cases:

| mechanism  | kernel      | bound                                                      | source        |
|------------|-------------|------------------------------------------------------------|---------------|
| Gaussian   | Gaussian    | alpha Delta^2 / (2 (s1^2 + s2^2 / L^2)), closed form        | Balle et al. 2019, Ex. 1, 3  |
| Laplace    | Laplace     | min over theta (numerical), order inf: Delta min(1/b1, L/b2) | Balle et al. 2019, Ex. 2, Lemma 3 |
| Gaussian   | Laplace     | min over theta (numerical)                                 | Balle et al. 2019, Thm 2     |
| Laplace    | Gaussian    | min over theta (numerical)                                 | Balle et al. 2019, Thm 2     |

Every theta gives a valid bound, so the numerical minimum over evaluated points is an upper bound
whatever the search does; the objective is convex in theta (both terms are convex functions of a
linear function of theta: log g_alpha is convex), so a grid with three zoom passes finds it.
Gaussian cases hold in R^d with L2 norms; Laplace cases are one-dimensional (in R^d the
Laplace-Laplace case holds with L1 norms; mixed cases need one norm for both terms).
Reported values carry a relative margin of 1e-12 for rounding.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core import validate as V

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...mechanisms.base import Mechanism
    from .kernels import MixingKernel

_REL = 1e-12


def gaussian_shift_rdp(shift, sigma, alpha):
    """R_alpha(N(x, s^2) || N(x', s^2)) at |x - x'| = shift: alpha shift^2 / (2 s^2); inf at
    alpha = inf unless shift = 0. Broadcasts."""
    shift = np.asarray(shift, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        val = alpha * shift ** 2 / (2.0 * sigma ** 2)
    return np.where(shift == 0, 0.0, np.where(np.isinf(alpha), np.inf, val))


def laplace_shift_rdp(shift, scale, alpha):
    """R_alpha(Lap(x, b) || Lap(x', b)) at |x - x'| = shift (Mironov 2017, Wang et al. 2019, Sec.
    2): the Laplace mechanism's curve at z = shift / b
    (:func:`dpamp.mechanisms.laplace.laplace_rdp`, a proven upper bound including rounding).
    Broadcasts."""
    from ...mechanisms.laplace import laplace_rdp
    return laplace_rdp(np.asarray(shift, dtype=float) / scale, alpha)


_SHIFT_RDP = {"gaussian": gaussian_shift_rdp, "laplace": laplace_shift_rdp}


def mechanism_form(mechanism):
    """("gaussian" | "laplace", noise scale, sensitivity) of a Gaussian-type or Laplace
    mechanism (Gaussian, Laplace, and the diffusion mechanisms, which are Gaussian with reduced
    sensitivity), else None."""
    from ...mechanisms.family import family_of
    fam = family_of(mechanism)
    if fam is not None and fam.additive_noise is not None:
        return fam.additive_noise(mechanism)
    return None


def kernel_form(kernel):
    """("gaussian" | "laplace", noise scale, Lipschitz constant) of a noise kernel defined on
    the whole real line, else None."""
    form = getattr(kernel, "_coupling_form", None)
    return form() if callable(form) else None


def minimise_shift(alpha: np.ndarray, mech_kind: str, mech_scale: float, delta: float,
                   kern_kind: str, kern_scale: float, lipschitz: float):
    """min over theta in [0, 1] of A(theta Delta) + B(L (1 - theta) Delta), vectorised over
    alpha (1-D). Returns (minimum over the evaluated points, its theta)."""
    A, B = _SHIFT_RDP[mech_kind], _SHIFT_RDP[kern_kind]
    alpha = np.asarray(alpha, dtype=float).reshape(-1, 1)

    def objective(theta):
        return (A(theta * delta, mech_scale, alpha)
                + B(lipschitz * (1.0 - theta) * delta, kern_scale, alpha))

    theta = np.broadcast_to(np.linspace(0.0, 1.0, 129), (alpha.shape[0], 129))
    vals = objective(theta)
    i = np.argmin(vals, axis=1)
    rows = np.arange(alpha.shape[0])
    best, best_t = vals[rows, i], theta[rows, i]
    step = 1.0 / 128
    for _ in range(3):  # zoom in around each order's best theta (convex objective)
        lo = np.clip(best_t - step, 0.0, 1.0)[:, None]
        hi = np.clip(best_t + step, 0.0, 1.0)[:, None]
        grid = lo + (hi - lo) * np.linspace(0.0, 1.0, 65)[None, :]
        v = objective(grid)
        j = np.argmin(v, axis=1)
        better = v[rows, j] < best
        best = np.where(better, v[rows, j], best)
        best_t = np.where(better, grid[rows, j], best_t)
        step = step / 32
    return best, best_t


def shift_reduction_rdp(alpha: ArrayLike, mechanism: Mechanism,
                        kernel: MixingKernel) -> float | np.ndarray:
    """RDP of ``kernel`` applied to the output of ``mechanism`` by Balle et al. 2019, Thm 2,
    minimised over the shift (module docstring): a Gaussian or Laplace mechanism (or a diffusion
    mechanism) followed by an unbounded :class:`GaussianKernel` / :class:`LaplaceKernel` with
    L-Lipschitz psi. Vectorised over alpha; never above the mechanism's own RDP (theta = 1).

    Gaussian -> Gaussian is the closed form alpha Delta^2 / (2 (s1^2 + s2^2 / L^2)) of Balle et al.
    2019 Example 3 (Example 1 when L = 1: exactly the RDP of N(f(D), (s1^2 + s2^2) I))."""
    a = V.orders(alpha)
    mform = mechanism_form(mechanism)
    if mform is None:
        raise ValueError(f"mechanism must be a Gaussian or Laplace mechanism (or a diffusion "
                         f"mechanism) for Balle, Barthe, Gaboardi & Geumlek 2019, Thm 2 "
                         f"(got {mechanism!r})")
    kform = kernel_form(kernel)
    if kform is None:
        raise ValueError(f"kernel must be an unbounded dp.GaussianKernel or dp.LaplaceKernel "
                         f"(its input is the mechanism's output, which is unbounded) (got "
                         f"{kernel!r})")
    mk, s1, delta = mform
    kk, s2, lip = kform
    flat = a.ravel().astype(float)
    if delta == 0.0:
        out = np.zeros_like(flat)
    elif lip == 0.0:  # psi constant: the output does not depend on the input at all
        out = np.zeros_like(flat)
    elif mk == "gaussian" and kk == "gaussian":
        # alpha Delta^2 / (2 (s1^2 + s2^2/L^2)) written as alpha (L Delta)^2 / (2 (L^2 s1^2 +
        # s2^2)) so that a tiny L cannot overflow
        coef = (lip * delta) ** 2 / (2.0 * ((lip * s1) ** 2 + s2 ** 2))
        with np.errstate(invalid="ignore"):
            out = np.where(np.isinf(flat), np.inf if coef > 0 else 0.0, flat * coef)
        out = out * (1 + _REL)
    else:
        out, _ = minimise_shift(flat, mk, s1, delta, kk, s2, lip)
        out = out * (1 + _REL)
        out = np.minimum(out, _SHIFT_RDP[mk](delta, s1, flat))  # theta = 1 exactly
    out = out.reshape(a.shape)
    return out if out.ndim else float(out)
