"""Privacy-loss distributions of dominating pairs (Steinke 2022, Sec. 3), before any discretisation.

A mechanism's worst case is described by one ordered dominating pair (P, Q); the privacy loss is
L = log dP/dQ, and a distribution of L under P determines every hockey-stick divergence
(Steinke 2022, Prop. 7): H_{e^eps}(P || Q) = E_P[(1 - e^{eps - L})_+] + P[L = +inf]. Under
add/remove the set of neighbouring ordered pairs is closed under swap, so the other direction is (Q,
P), whose loss is -L; ``swapped()`` builds it.

A :class:`LossDistribution` is a finite list of atoms (loss, P-mass, Q-mass; loss may be +-inf)
plus an optional absolutely continuous part given by its CDF and survival function under P and
under Q (evaluated separately so that both tails keep full relative precision). Everything the
discretiser needs is the mass of P and of Q in cells of a grid, which ``cell_masses`` returns.

| constructor                | pair (P, Q)                                     | source                 |
|----------------------------|-------------------------------------------------|------------------------|
| ``gaussian(mu)``           | N(mu, 1) vs N(0, 1): L ~ N(+-mu^2/2, mu^2)      | Steinke 2022, Prop. 3            |
| ``laplace(t)``             | Lap(t, 1) vs Lap(0, 1): atoms +-t, linear between | Balle et al. 2018, Thm 3 (its pair) |
| ``eps_delta(e, d)``        | atoms +-e, +inf                                  | Steinke 2022, footnote 16        |
| ``.poisson(q)``            | ((1-q)Q + qP, Q)                                 | Steinke 2022, Thm 34's pair; Zhu-Dong-Wang |
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from .cells import Cells, cells_many
from .loss_batch import (gaussian_pair, gaussian_tail, poisson_base_loss, poisson_loss,
                         poisson_mix, quantile_ranges)

Pair = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True)
class LossDistribution:
    """Distribution of the privacy loss L = log dP/dQ of one ordered pair (P, Q).

    ``atom_loss``/``atom_p``/``atom_q``: atoms (loss may be +-inf; P-mass 0 at -inf, Q-mass 0 at
    +inf). ``cdf(t)`` -> (P[L_c <= t], Q[L_c <= t]) and ``sf(t)`` -> (P[L_c > t], Q[L_c > t])
    for the continuous part L_c (sub-probability masses), or None when there is none.
    ``symmetric``: (P, Q) and (Q, P) have the same loss distribution (so one direction suffices).
    ``mean``/``var``: moments of the finite part of L under P (grid and window sizing only).
    """

    atom_loss: np.ndarray
    atom_p: np.ndarray
    atom_q: np.ndarray
    cdf: Pair | None = None
    sf: Pair | None = None
    support: tuple[float, float] = (-math.inf, math.inf)   # of the continuous part
    symmetric: bool = False
    mean: float = 0.0
    var: float = 0.0
    name: str = ""
    #: t with P[L_c > t] <= tail and Q[L_c > t] <= tail (resp. < t for ``lower``), continuous
    #: part only; None -> bisection on the CDF
    upper_tail: Callable[[float], float] | None = None
    lower_tail: Callable[[float], float] | None = None
    #: mu when this is the Gaussian pair N(mu, 1) vs N(0, 1) (compositions of those are one)
    gaussian_mu: float | None = None
    #: (mean, var) of the swapped pair's loss -L under Q, when known (sizing only; else
    #: ``swapped`` computes them by quadrature)
    swap_moments: tuple[float, float] | None = None
    #: how the continuous part was built, for evaluating many parts at once (:mod:`.loss_batch`):
    #: ("gaussian", mu), ("poisson", q, base's), ("swap", base's); None otherwise
    family: tuple | None = None
    #: how far this pair's curve may lie above the mechanism's own, in both orders and after
    #: Poisson subsampling: P- and Q-mass put at +inf / -inf to charge tails that are not held
    #: atom by atom (:func:`truncated_atoms`). The pessimistic discretisation is an upper bound
    #: as it stands; the optimistic one is a lower bound only less this much per step
    #: (``Discretized.lower_slack``, which the engine subtracts)
    lower_slack: float = 0.0
    #: a step s with every finite atom an integer multiple of s (a lattice of losses, e.g. the
    #: discrete Gaussian's), or None: the grid is fitted to it where it is coarser than the
    #: grid (:func:`.grid.align`), in place of the atoms one by one
    lattice: float | None = None
    #: a bound on the relative error of every mass (P and Q, so also of the losses they imply)
    #: beyond the few ulps of its own rounding, e.g. of a special function evaluated by a
    #: library: the engine's relative mass margin grows by it per step (:func:`.engine.
    #: mass_margin`)
    mass_rel_err: float = 0.0
    #: the atoms' losses and the mass at +inf are the mechanism's own numbers (an (epsilon,
    #: delta) pair's), not rounded transformations of them (a subsampled or swapped pair's
    #: are built anew, without it): the caps and the exact route of atoms take them as exact
    exact_labels: bool = False

    # --- masses --------------------------------------------------------------------------
    @property
    def inf_mass(self) -> float:
        """P[L = +inf] (delta at epsilon = inf)."""
        return float(np.sum(self.atom_p[self.atom_loss == np.inf]))

    @property
    def neg_inf_mass(self) -> float:
        """Q[L = -inf] (the swapped pair's mass at +inf)."""
        return float(np.sum(self.atom_q[self.atom_loss == -np.inf]))

    def cell_masses(self, jlo: int, jhi: int, h: float) -> dict:
        """:meth:`cells` in the form of a dict with keys below, left, zero, right, above, each
        a (P, Q) pair, plus left_cont / right_cont, left_beta / right_beta and left_end /
        right_end (:meth:`.cells.Cells.as_dict`)."""
        return self.cells(jlo, jhi, h).as_dict()

    def cells(self, jlo: int, jhi: int, h: float) -> Cells:
        """Masses of P and Q in the cells of the grid t_j = j h, jlo <= 0 <= jhi (the cells of
        :mod:`.cells`, with the atoms' shares of beta: :func:`.cells.cells_many`)."""
        return cells_many([self], [(jlo, jhi)], h, optimistic=False)[0]

    def quantile_range(self, tail: float) -> tuple[float, float]:
        """A range [a, b] of finite losses outside which both P and Q have mass <= tail on each
        side (atoms of mass > tail * 1e-3 always inside). Sizing only, never soundness: the
        discretisation accounts for whatever lies outside its grid. (The computation, shared
        with the batched one of many parts: :func:`.loss_batch.quantile_ranges`.)"""
        return quantile_ranges([self], [tail])[0]

    def _bisect_tail(self, tail: float, upper: bool) -> float:
        a, b = self.support
        sd = math.sqrt(max(self.var, 1e-30))
        a = max(a, self.mean - 60 * sd - 1.0)
        b = min(b, self.mean + 60 * sd + 1.0)
        if upper:
            sf = self.sf
            assert sf is not None                # called only with a continuous part
            f = lambda t: tail - max(float(v[0]) for v in sf(np.array([t])))  # noqa: E731
        else:
            cdf = self.cdf
            assert cdf is not None
            f = lambda t: max(float(v[0]) for v in cdf(np.array([t]))) - tail  # noqa: E731
        return _bisect(f, a, b)

    def exact_atoms(self, upper: bool):
        """(a, b, a_inf) of a purely atomic pair for :mod:`.atomic`, or None (a continuous part;
        a truncated pair, whose lower side is not exact): the finite atoms' P-masses ``a`` and
        Q-masses ``b`` and the P-mass at +inf (a Fraction), each moved outward (P up, Q down
        for the ``upper`` curve, the reverse otherwise) by twice the relative error the engine
        allows a given mass (8 ulps plus ``mass_rel_err``, :func:`.engine.mass_margin`) and 4
        ulps per unit of the largest |loss|: masses computed from a rounded loss, e.g.
        1 / (1 + e^eps0) of randomized response's eps0 (itself 2 ulps up), carry its absolute
        error as a relative one. An (eps, delta) pair's delta is its own number, exact (as
        :mod:`.caps` takes it)."""
        if self.cdf is not None or self.lower_slack > 0 or self.atom_loss.size == 0:
            return None
        loss, p, q = (np.asarray(v, dtype=float) for v in (self.atom_loss, self.atom_p,
                                                           self.atom_q))
        s = 1.0 if upper else -1.0
        fin = np.isfinite(loss) & (p > 0)
        big = float(np.max(np.abs(loss[fin]))) if fin.any() else 0.0
        # a finite loss with P-mass 0 is one that underflowed: kept (as 0), for
        # :func:`.atomic.direction_atoms` to charge it
        fin = np.isfinite(loss)
        rho = 2.0 * self.mass_rel_err + (16 + 4 * big) * 2.0 ** -53
        inf = sum((Fraction(float(v)) for v in p[loss == np.inf]), Fraction(0))
        if not self.exact_labels:
            inf = inf * (1 + int(s) * Fraction(rho))
            inf = inf if inf < 1 else Fraction(1)
        return p[fin] * (1 + s * rho), q[fin] * (1 - s * rho), inf

    # --- transformations -------------------------------------------------------------------
    def swapped(self) -> "LossDistribution":
        """The pair (Q, P): loss -L, masses swapped."""
        if self.symmetric:
            return self
        cdf, sf = self.cdf, self.sf
        new_cdf = new_sf = None
        if cdf is not None:
            # P'[L' <= t] = Q[L >= -t] = Q_sf(-t) (continuous part: >= is >)
            def new_cdf(t):
                assert sf is not None           # a continuous part has both cdf and sf
                p, q = sf(-t)
                return q, p

            def new_sf(t):
                p, q = cdf(-t)
                return q, p
        m2 = self.swap_moments if self.swap_moments is not None else self._q_moments()
        up, lo = self.upper_tail, self.lower_tail
        return LossDistribution(-self.atom_loss, self.atom_q.copy(), self.atom_p.copy(),
                                new_cdf, new_sf, (-self.support[1], -self.support[0]), False,
                                m2[0], m2[1], f"swap({self.name})",
                                (lambda tail: -lo(tail)) if lo else None,
                                (lambda tail: -up(tail)) if up else None,
                                swap_moments=(self.mean, self.var),
                                family=("swap", self.family) if self.family else None,
                                lower_slack=self.lower_slack, lattice=self.lattice,
                                mass_rel_err=self.mass_rel_err)

    def _q_moments(self):
        """Mean and variance of -L under Q (the swapped pair's loss under its P), from the
        atoms and a fine histogram of the continuous part (sizing only)."""
        fin = np.isfinite(self.atom_loss)
        zs = [-self.atom_loss[fin]]
        ws = [self.atom_q[fin]]
        if self.cdf is not None:
            lo, hi = self.quantile_range(1e-13)
            if hi > lo:
                t = np.linspace(lo, hi, 4001)
                _, cq = self.cdf(t)
                zs.append(-0.5 * (t[1:] + t[:-1]))
                ws.append(np.maximum(np.diff(cq), 0.0))
        z, w = np.concatenate(zs), np.concatenate(ws)
        if w.sum() <= 0:
            return 0.0, 0.0
        m = float(np.sum(w * z) / w.sum())
        return m, float(np.sum(w * (z - m) ** 2) / w.sum())

    def poisson(self, q: float, moments=None) -> "LossDistribution":
        """Poisson subsampling with rate q under add/remove (the pair of Steinke 2022, Thm 34):
        P' = (1-q) Q + q P, Q' = Q, so L' = log(1 - q + q e^L), an increasing function of L,
        and P'[L' <= t] = (1-q) Q[L <= g(t)] + q P[L <= g(t)], g(t) = log((e^t - 1 + q)/q).
        ``moments``: (mean, var, swap moments) as :func:`_mixture_moments` returns them, when the
        caller has them (sizing only; pld.sources computes many parts' at once).
        (Zhu, Dong and Wang show this pair and its swap dominate the subsampled mechanism.)"""
        if q >= 1.0:
            return self
        log1mq, logq = math.log1p(-q), math.log(q)
        fwd = lambda loss: poisson_loss(loss, q, 1 - q, log1mq, logq)  # noqa: E731 (L -> L')
        atoms_l = fwd(self.atom_loss)
        atoms_p = poisson_mix(self.atom_p, self.atom_q, q, 1 - q)[0]
        atoms_q = self.atom_q.copy()
        # an atom of the base at -inf (P-mass 0) becomes an atom at log(1-q)
        cdf = sf = None
        support = (math.inf, -math.inf)
        if self.cdf is not None:
            base_cdf, base_sf = self.cdf, self.sf

            def cdf(t):
                bp, bq = base_cdf(poisson_base_loss(np.asarray(t, dtype=float), q, logq))
                return poisson_mix(bp, bq, q, 1 - q)

            def sf(t):
                assert base_sf is not None      # a continuous part has both cdf and sf
                bp, bq = base_sf(poisson_base_loss(np.asarray(t, dtype=float), q, logq))
                return poisson_mix(bp, bq, q, 1 - q)
            s_lo, s_hi = (float(x) for x in fwd(np.array(self.support)))
            support = (s_lo, s_hi)
        mean, var, swap = _mixture_moments(self, q) if moments is None else moments
        # L' is increasing in L and P', Q' are mixtures of P, Q: the base's tail points map over
        up, lo = self.upper_tail, self.lower_tail
        fwd1 = lambda v: float(fwd(np.array([v]))[0])  # noqa: E731
        return LossDistribution(atoms_l, atoms_p, atoms_q, cdf, sf, support, False, mean, var,
                                f"poisson({self.name}, {q:g})",
                                (lambda tail: fwd1(up(tail))) if up else None,
                                (lambda tail: fwd1(lo(tail))) if lo else None,
                                swap_moments=swap,
                                family=("poisson", q, self.family) if self.family else None,
                                lower_slack=self.lower_slack, mass_rel_err=self.mass_rel_err)


def _bisect(f, a, b, iters=80):
    """Root of a monotone f on [a, b] (clamped to the ends)."""
    fa, fb = f(a), f(b)
    if fa >= 0:
        return a
    if fb <= 0:
        return b
    for _ in range(iters):
        m = 0.5 * (a + b)
        if f(m) < 0:
            a = m
        else:
            b = m
    return 0.5 * (a + b)


def _mixture_moments(base: LossDistribution, q: float):
    """Mean and variance of L' = log(1 - q + q e^L) under P' = (1-q)Q + qP, and (mean, var) of
    -L' under Q' = Q (the swapped pair's loss, from the same nodes), by a quadrature of the
    base (sizing only; never used for soundness): the midpoint rule on 512 cells and on every
    other node, combined by Richardson's extrapolation (the n^-2 errors cancel: relative error
    <= 1e-5 on subsampled Gaussians down to sigma 0.1, where the former 4000-cell midpoint rule
    was off by up to 3e-4, at an eighth of the CDF evaluations)."""
    lo, hi = base.quantile_range(1e-12)
    if base.cdf is None or not hi > lo:
        return _mixture_nodes(base, q, None, None, None)
    t = np.linspace(lo, hi, 513)
    cp, cq = base.cdf(t)
    fine = _mixture_nodes(base, q, t, cp, cq)
    coarse = _mixture_nodes(base, q, t[::2], cp[::2], cq[::2])
    out = []
    for f, c in ((fine[:2], coarse[:2]), (fine[2], coarse[2])):
        if f is None or c is None:
            out.append(f)
            continue
        r = tuple((4.0 * a - b) / 3.0 for a, b in zip(f, c))
        # an under-resolved quadrature (the extrapolation is then no better): the fine one
        ok = all(math.isfinite(v) for v in r) and r[1] > 0 and abs(r[1] / f[1] - 1) < 0.5
        out.append(r if ok else f)
    return out[0] + (out[1],)


def _mixture_nodes(base: LossDistribution, q: float, t, cp, cq):
    """(mean, var) under P' and the swap's (mean, var) (or None) by the midpoint rule on the
    cells of the nodes t (CDFs cp, cq there) plus the base's finite atoms."""
    if t is not None:
        wp, wq = np.diff(cp), np.diff(cq)
        mid = 0.5 * (t[1:] + t[:-1])
    else:
        wp = wq = mid = np.zeros(0)
    fin = np.isfinite(base.atom_loss)
    mid = np.concatenate([mid, base.atom_loss[fin]])
    wp = np.concatenate([wp, base.atom_p[fin]])
    wq = np.concatenate([wq, base.atom_q[fin]])
    w = (1 - q) * wq + q * wp
    with np.errstate(over="ignore"):
        z = np.where(mid > 0, mid + np.log(q + (1 - q) * np.exp(-np.minimum(mid, 700))),
                     np.logaddexp(math.log1p(-q), math.log(q) + mid))
    # a base atom at -inf (Q-mass only) is an atom of L' at log(1 - q): left to the swap's own
    # quadrature (``LossDistribution._q_moments``) then
    swap = _moments(wq, -z) if not np.any(base.atom_loss == -np.inf) else None
    return _moments(w, z) + (swap,)


def _moments(w, z):
    s = w.sum()
    if s <= 0:
        return 0.0, 0.0
    # (losses past 1e154, a Gaussian at sigma 1e-150, square to inf: an infinite variance,
    # which the grid sizing then refuses cleanly, rather than a warning)
    with np.errstate(over="ignore", invalid="ignore"):
        m = float(np.sum(w * z) / s)
        return m, float(np.sum(w * (z - m) ** 2) / s)


# --- base pairs --------------------------------------------------------------------------------

_EMPTY = np.zeros(0)


def gaussian(mu: float) -> LossDistribution:
    """N(mu, 1) vs N(0, 1) (Steinke 2022, Prop. 3): L = mu x - mu^2/2 ~ N(mu^2/2, mu^2) under P and
    N(-mu^2/2, mu^2) under Q. Symmetric. mu = sensitivity / sigma."""
    if mu == 0:
        return LossDistribution(np.array([0.0]), np.array([1.0]), np.array([1.0]),
                                symmetric=True, name="gaussian(0)")
    half = 0.5 * mu * mu
    cdf = lambda t: gaussian_pair(t, mu, half, "cdf")  # noqa: E731
    sf = lambda t: gaussian_pair(t, mu, half, "sf")  # noqa: E731
    upper = lambda tail: float(gaussian_tail(math.log(tail), mu, half, True))  # noqa: E731
    lower = lambda tail: float(gaussian_tail(math.log(tail), mu, half, False))  # noqa: E731
    return LossDistribution(_EMPTY, _EMPTY, _EMPTY, cdf, sf, (-math.inf, math.inf), True,
                            half, mu * mu, f"gaussian({mu:g})", upper, lower, mu,
                            family=("gaussian", mu))


def laplace(t0: float) -> LossDistribution:
    """Lap(t0, 1) vs Lap(0, 1) in units of the scale (t0 = sensitivity / scale): the loss is
    L(x) = |x| - |x - t0|, equal to -t0 for x <= 0, t0 for x >= t0, and 2x - t0 in between.
    Atoms: P[L = t0] = 1/2, P[L = -t0] = e^{-t0}/2, Q[L = t0] = e^{-t0}/2, Q[L = -t0] = 1/2.
    Continuous part on (-t0, t0): x = (l + t0)/2, P density e^{-|x - t0|}/2, Q e^{-x}/2, so
    P[-t0 < L <= l] = (e^{-(t0 - x)} - e^{-t0})/2 and Q[-t0 < L <= l] = (1 - e^{-x})/2.
    Symmetric (reflection x -> t0 - x swaps P and Q)."""
    if t0 == 0:
        return gaussian(0.0)
    e = math.exp(-t0)
    atoms_l = np.array([-t0, t0])
    atoms_p = np.array([e / 2, 0.5])
    atoms_q = np.array([0.5, e / 2])

    def cdf(t):
        x = np.clip((t + t0) / 2, 0.0, t0)
        # P: (e^{-(t0-x)} - e^{-t0})/2 = e^{-t0} expm1(x) / 2;  Q: (1 - e^{-x})/2 = -expm1(-x)/2
        # (for x >= 1 as e^{x - t0} - e^{-t0}: no cancellation there, and expm1(x) would
        # overflow for t0 beyond 709)
        p = np.where(x < 1.0, e * np.expm1(np.minimum(x, 1.0)), np.exp(x - t0) - e)
        return p / 2, -np.expm1(-x) / 2

    def sf(t):
        x = np.clip((t + t0) / 2, 0.0, t0)
        # P cont mass above: (1 - e^{-(t0-x)})/2 ; Q: (e^{-x} - e^{-t0})/2 = e^{-t0} expm1(t0-x)/2
        return -np.expm1(-(t0 - x)) / 2, e * np.expm1(t0 - x) / 2
    # moments under P by quadrature of the closed form (sizing only)
    grid = np.linspace(-t0, t0, 2001)
    cp, _ = cdf(grid)
    w = np.concatenate([np.diff(cp), atoms_p])
    z = np.concatenate([0.5 * (grid[1:] + grid[:-1]), atoms_l])
    m = float(np.sum(w * z))
    return LossDistribution(atoms_l, atoms_p, atoms_q, cdf, sf, (-t0, t0), True, m,
                            float(np.sum(w * (z - m) ** 2)), f"laplace({t0:g})",
                            lambda tail: t0, lambda tail: -t0)


def eps_delta(eps: float, delta: float = 0.0) -> LossDistribution:
    """The worst-case (eps, delta)-DP pair (Steinke 2022, footnote 16, with the errata): loss +inf
    with probability delta, +eps with (1-delta) e^eps/(1+e^eps), -eps with (1-delta)/(1+e^eps) under
    P; the swap has the same distribution, so it is symmetric. delta = 0 is randomized response
    (the dominating pair of every eps-DP mechanism)."""
    p_plus = (1.0 - delta) / (1.0 + math.exp(-eps))
    p_minus = (1.0 - delta) / (1.0 + math.exp(eps)) if eps < 700 else 0.0
    loss: Any = [eps, -eps]              # lists, then arrays
    pm: Any = [p_plus, p_minus]
    qm: Any = [p_minus, p_plus]
    if delta > 0:
        loss += [math.inf, -math.inf]
        pm += [delta, 0.0]
        qm += [0.0, delta]
    if eps == 0:
        loss, pm, qm = [0.0] + loss[2:], [1.0 - delta] + pm[2:], [1.0 - delta] + qm[2:]
    loss, pm, qm = np.array(loss), np.array(pm), np.array(qm)
    fin = np.isfinite(loss)
    w = pm[fin]
    m = float(np.sum(w * loss[fin]) / max(w.sum(), 1e-300))
    v = float(np.sum(w * (loss[fin] - m) ** 2) / max(w.sum(), 1e-300))
    return LossDistribution(loss, pm, qm, symmetric=True, mean=m, var=v,
                            name=f"eps_delta({eps:g}, {delta:g})", exact_labels=True)


#: log of the smallest normal double: a truncated pair keeps no atom with a mass below it
LOG_NORMAL = -708.0


def truncated_atoms(loss: np.ndarray, log_p: np.ndarray, log_q: np.ndarray, tail_p: float,
                    tail_q: float, *, symmetric: bool = False, lattice: float | None = None,
                    name: str = "", mass_rel_err: float = 0.0) -> LossDistribution:
    """A pair (P, Q) on infinitely many atoms, of which the finite list (``loss``, log P-mass
    ``log_p``, log Q-mass ``log_q``) on a set S of outcomes is given, and proven bounds
    ``tail_p`` >= P(S^c), ``tail_q`` >= Q(S^c) on what is left out (the discrete Gaussian and
    Skellam pairs). An outcome with a mass below e^LOG_NORMAL (whose double would lose its
    relative precision) is moved out of S: its masses join the tails, each bounded by
    max(mass, e^LOG_NORMAL).

    The distribution built is (P', Q') = (P on S + tail_p at loss +inf, Q on S + tail_q at
    loss -inf). It dominates (P, Q): by the kernel that is the identity on S and sends the +inf
    outcome to P restricted to S^c (normalised) and the -inf outcome to Q restricted to S^c,
    (P on S + P(S^c) at +inf, Q on S + Q(S^c) at -inf) is mapped onto (P, Q) exactly (Blackwell),
    and raising the mass at +inf (-inf) to tail_p (tail_q) only raises every hockey-stick
    divergence of either order. So its pessimistic discretisation is a proven upper bound, under
    any sampling scheme.

    Its curve is also at most the true one plus tail_p in the order (P, Q) and plus tail_q in
    the order (Q, P): H_x(P' || Q') = sum_S (p - x q)_+ + tail_p <= H_x(P || Q) + tail_p, and
    the same with the roles exchanged; after Poisson subsampling, ((1 - r) Q' + r P', Q') adds r
    tail_p at +inf and, at the loss log(1 - r), (1 - r - x)_+ tail_q <= tail_q, and its swap
    adds at most tail_q. So ``lower_slack`` = tail_p + tail_q bounds how far the optimistic
    discretisation may lie above the truth per step: the engine subtracts it from the lower
    bound (each unit of mass in one step moves delta by at most 1).

    ``mass_rel_err``: a bound on the relative error of the given masses (and, through them, of
    the losses: an atom whose loss is off by eta is the atom at the stated loss with its Q-mass
    off by a relative e^eta - 1), charged by the engine's relative mass margin."""
    loss = np.asarray(loss, dtype=float)
    log_p, log_q = np.asarray(log_p, dtype=float), np.asarray(log_q, dtype=float)
    keep = (log_p >= LOG_NORMAL) & (log_q >= LOG_NORMAL)
    if not keep.all():
        out_p = np.exp(np.maximum(log_p[~keep], LOG_NORMAL))
        out_q = np.exp(np.maximum(log_q[~keep], LOG_NORMAL))
        tail_p += float(out_p.sum()) * (1 + 8 * 2.0 ** -52)
        tail_q += float(out_q.sum()) * (1 + 8 * 2.0 ** -52)
        loss, log_p, log_q = loss[keep], log_p[keep], log_q[keep]
    p, q = np.exp(log_p), np.exp(log_q)
    w = p / max(float(p.sum()), 1e-300)
    mean = float(np.sum(w * loss))
    var = float(np.sum(w * (loss - mean) ** 2))
    extra = [(np.inf, tail_p, 0.0)] if tail_p > 0 else []
    extra += [(-np.inf, 0.0, tail_q)] if tail_q > 0 else []
    if extra:
        loss = np.concatenate([loss, [e[0] for e in extra]])
        p = np.concatenate([p, [e[1] for e in extra]])
        q = np.concatenate([q, [e[2] for e in extra]])
    return LossDistribution(loss, p, q, symmetric=symmetric, mean=mean, var=var, name=name,
                            lower_slack=float(tail_p + tail_q), lattice=lattice,
                            mass_rel_err=float(mass_rel_err))
