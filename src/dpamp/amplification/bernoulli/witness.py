"""Threshold witnesses of Bernoulli sampling (Imola & Chaudhuri 2021, Thm 3 remark): pairs of
outputs that ``base.post_process(BernoulliSampling(c, d, k))`` attains, known exactly, so that their
epsilon(delta) lower-bounds the true value (``Mechanism.witnesses``).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import gammaln

from ...core.relations import Relation
from ...mechanisms.base import Mechanism
from ...mechanisms.family import Family, declare

__all__ = ["BernoulliWitness", "WITNESS_OFFSETS"]

#: thresholds of the witnesses: the midpoint of the attained pair plus these multiples of the
#: base's noise scale (the other side gives the same epsilon(delta) with the orders swapped).
#: The best depends on the query; measured (NOTES.md): 0.5 was best for most plans, the
#: midpoint for a 10000-step one, 1-1.5 for single steps. Each costs one PLD run of the
#: witness (2-500 ms), so only two are tried
WITNESS_OFFSETS = (0.0, 0.5)


def _attained_tests(base) -> tuple[tuple[float, float, float, float], ...]:
    """For each threshold t (``WITNESS_OFFSETS``), the logs (P[S], P[not S], Q[S], Q[not S])
    of S = {output > t} on the attained worst pair (P, Q) of a tight base mechanism:

    * Gaussian, P = N(Delta, sigma^2), Q = N(0, sigma^2), t = Delta/2 + u sigma:
      P[S] = Phi((Delta - t)/sigma), Q[S] = Phi(-t/sigma) (log_ndtr, both tails accurate);
    * Laplace, P = Lap(Delta, b), Q = Lap(0, b), t = Delta/2 + u b: with the tail
      T(x) = e^{-x/b}/2 for x >= 0, P[S] = 1 - T(t - Delta) if t < Delta else T(t - Delta),
      Q[S] = T(t);
    * randomized response: S = {the reported bit is 1}, P[S] = e^eps0/(1+e^eps0) = Q[not S]
      (one test only);

    () for other mechanisms."""
    from scipy.special import log_ndtr
    from ...mechanisms.family import family_of, is_binary
    if not getattr(base, "tight_rdp", False):
        return ()
    out = []
    fam = family_of(base)
    noise = None if fam is None or fam.additive_noise is None else fam.additive_noise(base)
    if noise is not None and noise[0] == "gaussian":
        mu = noise[2] / noise[1]
        for u in WITNESS_OFFSETS:
            t = mu / 2 + u                                  # in units of sigma
            out.append((float(log_ndtr(mu - t)), float(log_ndtr(t - mu)),
                        float(log_ndtr(-t)), float(log_ndtr(t))))
    elif noise is not None and noise[0] == "laplace":
        e0 = noise[2] / noise[1]                            # Delta / b
        half = math.log(0.5)

        def log_sf(x):       # log P[Lap(0, 1) > x], log P[Lap(0, 1) <= x]
            if x >= 0:
                lt = half - x
                return lt, math.log1p(-math.exp(lt))
            lt = half + x
            return math.log1p(-math.exp(lt)), lt

        for u in WITNESS_OFFSETS:
            t = e0 / 2 + u                                  # in units of b
            out.append(log_sf(t - e0) + log_sf(t))
    elif is_binary(base):                                   # randomized response of a bit
        e0 = base.pure_epsilon()
        l1 = -math.log1p(math.exp(-e0))
        l0 = -e0 - math.log1p(math.exp(-e0))
        out.append((l1, l0, l0, l1))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class BernoulliWitness(Mechanism):
    """One pair of outputs that ``base.post_process(BernoulliSampling(c, d, k))`` attains, known
    exactly (a *witness*, ``Mechanism.witnesses``): the post-processing that maps the base's
    output to the corner (1-c, ..., 1-c) when it lies beyond a threshold and to (c, ..., c)
    otherwise is one of those the guarantee covers, so its epsilon(delta) lower-bounds the true
    value. On the two neighbours the corner (1-c)^d has probability p = e^lp and q = e^lq (and
    the other corner e^lp_c = 1 - p, e^lq_c = 1 - q, each computed without cancellation); the
    n = d k samples' number of ones j is a sufficient statistic (both corners are constant
    across coordinates):

        A_j = C(n, j) [p (1-c)^j c^(n-j) + (1-p) c^j (1-c)^(n-j)],
        B_j = C(n, j) [q (1-c)^j c^(n-j) + (1-q) c^j (1-c)^(n-j)],

    a pair of n + 1 atoms (losses log A_j / B_j, in log space); symmetric (B_j = A_(n-j)) when
    q = 1 - p."""

    lp: float
    lp_c: float
    lq: float
    lq_c: float
    c: float
    n: int
    relation: Relation
    source = "Imola & Chaudhuri 2021, Thm 3 remark: a threshold post-processing attained (witness)"

    def _rdp(self, alpha):
        """The pair's own Rényi divergence, the larger of both orders:
        (1/(alpha-1)) log sum_j A_j^alpha B_j^(1-alpha), max_j |log A_j / B_j| at alpha = inf."""
        from scipy.special import logsumexp
        la, lb = self._log_masses()
        a = np.asarray(alpha, dtype=float)
        fin = np.isfinite(a)
        af = np.where(fin, a, 2.0)[..., None]
        with np.errstate(over="ignore"):
            out = np.maximum(logsumexp(af * la + (1.0 - af) * lb, axis=-1),
                             logsumexp(af * lb + (1.0 - af) * la, axis=-1)) / (af[..., 0] - 1.0)
        return np.where(fin, np.maximum(out, 0.0), float(np.max(np.abs(la - lb))))

    def _log_masses(self):
        """log A_j and log B_j, j = 0..n (see the class docstring)."""
        n, c = self.n, self.c
        j = np.arange(n + 1, dtype=float)
        lcomb = gammaln(n + 1.0) - gammaln(j + 1.0) - gammaln(n - j + 1.0)
        hi = j * math.log1p(-c) + (n - j) * math.log(c)     # log (1-c)^j c^(n-j)
        lo = j * math.log(c) + (n - j) * math.log1p(-c)
        return (lcomb + np.logaddexp(self.lp + hi, self.lp_c + lo),
                lcomb + np.logaddexp(self.lq + hi, self.lq_c + lo))

    @property
    def rel_err(self) -> float:
        """Bound on the relative rounding error of each atom's mass: a few roundings (each a
        relative error of the log's magnitude) of logs that reach n |log c| + the largest
        |log| of the four threshold probabilities."""
        big = (self.n * (abs(math.log(self.c)) + abs(math.log1p(-self.c)))
               + max(abs(self.lp), abs(self.lp_c), abs(self.lq), abs(self.lq_c)) + 10.0)
        return 64 * 2.3e-16 * big

    def exact_loss(self):
        from ...pld import loss as L
        la, lb = self._log_masses()
        loss = la - lb
        pa, pb = np.exp(la), np.exp(lb)
        mean = float(np.sum(pa * loss))
        var = float(np.sum(pa * (loss - mean) ** 2))
        sym = self.lq == self.lp_c and self.lq_c == self.lp
        return L.LossDistribution(loss, pa, pb, symmetric=sym, mean=mean, var=var,
                                  name=f"bernoulli_witness(n={self.n}, c={self.c:g})",
                                  mass_rel_err=self.rel_err)


declare(BernoulliWitness, Family("BernoulliWitness", loss=lambda m: m.exact_loss()))
