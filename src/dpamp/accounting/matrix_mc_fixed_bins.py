"""The Monte Carlo check's sampler under balls in bins drawn once (``dp.FixedBins``): the pair,
its exact loss and the importance sampler's proposals.

The pair. Every record draws one of B bins once and enters every step of it (steps j,
j + B, ...; Choquette-Choo, Ganesh, Haque, Steinke & Thakurta, "Near exact privacy
amplification for matrix mechanisms", ICLR 2025; jax_privacy's ``BallsInBinsSampling``). With
x_j the indicator of bin j's steps, the fixed-direction pair is P = (1/B) sum_j N(C x_j, s^2 I)
against Q = N(0, s^2 I), and with u = C^T y / s^2, J = C^T C / s^2,

    L(y) = log dP/dQ = logmeanexp_j (sum_{t in j} u_t - x_j' J x_j / 2)

(:func:`.matrix_mc_loss.log_ratio_fixed_bins`): one C^T y per sample and B bin sums.

The proposals (a finite mixture of Gaussians, so every weight is exact):

    R_theta = (1/B) sum_j N(C m_j, s^2 I),   m_j = sum_k theta_k r_{j,k} (+ theta_e 1),

r_{j,k} the indicator of the bins j + k and j - k (mod B), "ring" k around bin j, k = 0..D: D
the farthest ring whose steps meet bin j's in C^T C (at most ``MAX_RINGS``), and 1 (every step)
only when the rings leave some bin out (else it is their sum). Ring 0 alone at theta_0 = 1 is
P, theta = 0 is Q. Then

    log dR_theta/dQ (y) = logmeanexp_j (sum_k theta_k s_{j,k} - theta' M_j theta / 2),
    s_{j,k} = <C r_{j,k}, y> / s^2 (sums of the bin sums of u),  M_j[k, l] = r_{j,k}' J r_{j,l}.

Why rings: at the remove direction's dominating point y* (the most likely y under bin j's
component with L(y) >= eps) the shift y* - C x_j is along grad L = C sum_k pi_k x_k / s^2, pi the
softmax of the bins' terms: where bins overlap in C^T C (banded C, neighbouring bins), the
neighbours carry weight, and a tilt along C x_j alone (theta_0 only) left the weights' effective
sample size at ~100 of 4000 on 4- and 8-banded C over 100 bins; the symmetric rings follow the
neighbours (the interior bins are symmetric under j + k <-> j - k for a Toeplitz C). For the
add direction (L <= -eps: every bin's sum low) theta_e, or the rings together, shift every step.

theta is tuned by the cross-entropy method (module :mod:`.montecarlo_matrix`): the weighted
maximum likelihood of (j, y) under R_theta is the weighted least squares of y on the regressors
C r_{j,k}: (sum_i v_i M_{j_i}) theta = sum_i v_i s_{j_i}(y_i), a (D + 2)-square system.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import scipy.sparse as sp

from .matrix_mc_loss import bin_sums, log_ratio_fixed_bins

__all__ = ["FixedBinsSampler", "MAX_RINGS"]

#: the most rings of neighbouring bins the proposal tilts (beyond, bins' overlap is ignored:
#: still a valid proposal, only less efficient)
MAX_RINGS = 8


@dataclasses.dataclass(frozen=True)
class FixedBinsSampler:
    """The sampler of the fixed-bins pair (module docstring): C sparse (m, n), J = C^T C / s^2
    sparse (n, n), s the noise multiplier, B = ``bins``. Proposals are tuples theta of floats
    (rings 0..D, then theta_e when the rings leave a bin out)."""

    c: Any
    j: Any
    sigma: float
    bins: int

    @property
    def steps(self) -> int:
        return self.j.shape[0]

    @functools.cached_property
    def _membership(self) -> sp.csr_matrix:
        """(n, B): X[t, j] = 1 when step t is in bin j."""
        n = self.steps
        return sp.csr_matrix((np.ones(n), (np.arange(n), np.arange(n) % self.bins)),
                             shape=(n, self.bins))

    @functools.cached_property
    def _bin_gram(self) -> sp.csr_matrix:
        """(B, B): K[p, q] = x_p' J x_q."""
        x = self._membership
        return sp.csr_matrix(x.T @ self.j @ x)

    @functools.cached_property
    def rings(self) -> int:
        """D: the farthest ring (j +- k mod B) with a nonzero entry of K, at most MAX_RINGS."""
        k = sp.coo_matrix(self._bin_gram)
        keep = k.data != 0
        d = (k.col[keep] - k.row[keep]) % self.bins
        far = int(np.max(np.minimum(d, self.bins - d))) if keep.any() else 0
        return min(far, MAX_RINGS, self.bins // 2)

    @property
    def with_all(self) -> bool:
        """Whether theta_e (every step) is a regressor: only when the rings miss a bin."""
        return 2 * self.rings + 1 < self.bins

    @property
    def size(self) -> int:
        return self.rings + 1 + int(self.with_all)

    def _ring(self, k: int) -> sp.csr_matrix:
        """(B, B): row j the indicator of the bins j + k and j - k (mod B), once each."""
        b = self.bins
        rows = np.arange(b)
        plus, minus = (rows + k) % b, (rows - k) % b
        two = minus != plus
        r = np.concatenate([rows, rows[two]])
        c = np.concatenate([plus, minus[two]])
        return sp.csr_matrix((np.ones(r.size), (r, c)), shape=(b, b))

    @functools.cached_property
    def _rings(self) -> list[sp.csr_matrix]:
        return [self._ring(k) for k in range(self.rings + 1)]

    @functools.cached_property
    def _gram_blocks(self) -> np.ndarray:
        """(B, p, p): M_j[k, l] = r_{j,k}' J r_{j,l} (the last index theta_e's when present)."""
        b, p, kk = self.bins, self.size, self._bin_gram
        m = np.zeros((b, p, p))
        rk = [r @ kk for r in self._rings]                      # (B, B) each: rows r_{j,k}' K
        for a, ra in enumerate(rk):
            for c, rc in enumerate(self._rings):
                m[:, a, c] = np.asarray(ra.multiply(rc).sum(axis=1)).ravel()
        if self.with_all:
            tot = np.asarray(kk.sum(axis=1)).ravel()            # K 1
            for a, r in enumerate(self._rings):
                m[:, a, -1] = m[:, -1, a] = r @ tot
            m[:, -1, -1] = float(tot.sum())
        return m

    def target(self, remove: bool) -> tuple:
        """P (ring 0 at 1) or Q (theta = 0)."""
        return tuple(float(remove and k == 0) for k in range(self.size))

    def start(self, remove: bool) -> tuple:
        """The cross-entropy method's first proposal: P, or bin j's steps reversed."""
        return tuple((1.0 if remove else -1.0) * (k == 0) for k in range(self.size))

    def _means(self, theta: tuple, pick: np.ndarray) -> np.ndarray:
        """(count, n): m_j for the picked bins j."""
        lab = np.arange(self.steps) % self.bins
        out = np.zeros((pick.size, self.steps))
        for k in range(self.rings + 1):
            if theta[k] != 0.0:
                hit = (lab[None, :] == ((pick + k) % self.bins)[:, None]) | \
                    (lab[None, :] == ((pick - k) % self.bins)[:, None])
                out += theta[k] * hit
        if self.with_all:
            out += theta[-1]
        return out

    def _scores(self, g: np.ndarray) -> list[np.ndarray]:
        """Per regressor, (S, B): s_{j,k} for every bin j (sums of the bin sums g)."""
        out = [np.asarray(r @ g.T).T for r in self._rings]
        if self.with_all:
            out.append(np.broadcast_to(g.sum(axis=1)[:, None], g.shape))
        return out

    def _terms(self, scores: list[np.ndarray], theta: tuple) -> np.ndarray:
        """(S, B): log of component j's density ratio, sum_k theta_k s_{j,k} - M_j(theta)/2."""
        t = np.asarray(theta)
        terms = -0.5 * np.einsum("jkl,k,l->j", self._gram_blocks, t, t)[None, :]
        for tk, sk in zip(t, scores):
            if tk != 0.0:
                terms = terms + tk * sk
        return terms

    def sample(self, comp: tuple, tuned: tuple, count: int, rng) -> tuple[tuple, np.ndarray]:
        """``count`` draws (j, y) of R_comp: the data log_ratio reads (u, the regressors'
        scores) and the EM statistics under the proposal being tuned (``tuned``): with
        rho_j(y) its posterior of the bin, sum_j rho_j s_{j,.}(y) and sum_j rho_j M_j."""
        pick = rng.integers(0, self.bins, count)
        cm = np.asarray(self.c @ self._means(comp, pick).T)        # (m, count)
        y = cm + self.sigma * rng.standard_normal(cm.shape)
        u, scores = data = self.observe(y)
        terms = self._terms(scores, tuned)
        rho = np.exp(terms - terms.max(axis=1)[:, None])
        rho /= rho.sum(axis=1)[:, None]
        p = self.size
        sbar = [np.sum(rho * sk, axis=1) for sk in scores]
        mbar = np.einsum("sj,jm->sm", rho, self._gram_blocks.reshape(self.bins, p * p))
        return data, np.column_stack(sbar + [mbar])

    def observe(self, y: np.ndarray) -> tuple:
        """What log_ratio reads of releases y (m, S): u = C^T y / s^2 (S, n) and the
        regressors' scores (bin sums of u summed over each ring)."""
        u = np.asarray(self.c.T @ y).T / (self.sigma ** 2)
        return u, self._scores(bin_sums(u, self.bins))

    def log_ratio(self, data: tuple, theta: tuple) -> np.ndarray:
        """log dR_theta/dQ at the samples: P's own (the loss) straight from the bins'
        interactions (:func:`.matrix_mc_loss.log_ratio_fixed_bins`), the others from the
        regressors' scores."""
        u, scores = data
        if theta == self.target(True):
            return log_ratio_fixed_bins(u - 0.5 * self.j.diagonal()[None, :], self.j, self.bins)
        if not any(theta):
            return np.zeros(u.shape[0])
        terms = self._terms(scores, theta)
        top = terms.max(axis=1)
        return top + np.log(np.exp(terms - top[:, None]).sum(axis=1)) - np.log(self.bins)

    def ce_update(self, stats: np.ndarray, v: np.ndarray, prop: tuple) -> tuple:
        """One EM step of the weighted maximum likelihood of y under R_theta (the bin
        latent; Kurtz & Song 2013 fit Gaussian-mixture proposals so): with the posteriors
        rho of the proposal that drew the samples, (sum_i v_i sum_j rho_ij M_j) theta =
        sum_i v_i sum_j rho_ij s_{j,.}(y_i). A ridge of 1e-9 of the largest diagonal entry
        keeps a regressor the weighted samples never excite (an empty bin's) near 0."""
        p = self.size
        rhs = np.einsum("i,ik->k", v, stats[:, :p])
        a = np.einsum("i,im->m", v, stats[:, p:]).reshape(p, p)
        top = float(np.max(np.diag(a)))
        if not top > 0:
            return prop
        theta = np.linalg.solve(a + 1e-9 * top * np.eye(p), rhs)
        return tuple(float(x) for x in theta)
