"""The matrix mechanism (correlated noise: DP-FTRL, banded MF, BLT, tree aggregation).

``dp.MatrixMechanism(C, noise_multiplier, participation=...)`` releases C G + Z (then any
post-processing B): G the n steps' sums of gradients clipped to norm 1, Z Gaussian noise of
standard deviation ``noise_multiplier`` z per entry (in units of the clipping norm). C is a
strategy (:mod:`.matrix_strategies`: dense, Toeplitz, banded Toeplitz, BLT, binary tree) or an
array; ``participation`` a schema (:mod:`.participation`).

How it is accounted (``route``):

- **gaussian** (single epoch, (k, b)-participation): the adversary picks the pattern, and the
  output pair of a record's presence is N(D, z^2 I) vs N(0, z^2 I) with |D| <= Delta, the
  sensitivity under the schema (:mod:`.matrix_sensitivity`), attained. So it is exactly the
  Gaussian mechanism with mu = c Delta / z (c = 1 add/remove, 2 substitution). Delta comes as
  a proven bracket [Delta_lo, Delta_hi] (exact structures: the ends differ by rounding only):
  upper bounds are those of mu_hi = c Delta_hi / z, lower bounds those of mu_lo (a pattern and
  gradients attaining Delta_lo are one pair of neighbours: its Gaussian pair is a witness, and
  the PLD's optimistic side, ``dpamp.pld.sources.Bracketed``).
- **cyclic-poisson** (:class:`.participation.CyclicPoisson` with p partitions and C lower
  triangular with at most p bands): a record of group j enters only steps j, j + p, ..., and
  the rows of C G its step t touches (t .. t + bands - 1) are disjoint from the next one's, so
  the release is an adaptive composition of ceil(n / p) Poisson-subsampled Gaussian mechanisms
  of sensitivity max_t |C[:, t]| (Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta &
  Xu, "(Amplified) banded matrix factorization: a unified approach to private training",
  NeurIPS 2023, Thm 4): DP-SGD with sampling rate q, noise multiplier z / max column norm and
  ceil(n / p) steps, as jax_privacy's ``amplified_bandmf_event`` (which takes C with max column
  norm 1). :meth:`MatrixMechanism.reduction` is that plan.
- **noise-split** (:mod:`.matrix_split`; Poisson, cyclic Poisson with more bands than
  partitions, balls in bins, fixed bins, b-min-separation sampling; any square
  lower-triangular C): the noise of each row shared among the record's possible steps in
  proportion to |C[t, s]| makes the release a post-processing of independent Gaussian steps
  at sensitivities Delta_s: DP-SGD at per-step noise, or random allocation. The route
  wherever its sum of Delta_s^2 is at most no-amplification's Delta^2 (then it is dominated
  by that Gaussian at every epsilon); an upper plan only (no lower end of its own), except
  on a diagonal C with one |C[s, s]| (``split_attained``).
- **no-amplification** (a sampled schema where the split is not dominated; a C that is not
  square lower triangular): every pattern the schema can draw lies in a (k, b) set
  (``Participation.worst_case``), the
  output is a mixture over patterns drawn independently of the data, and by joint convexity
  the mixture is no less private than its worst member: the Gaussian bound of that set is a
  proven upper bound, with no lower bound (amplification may make the truth smaller).
- **conditional-composition** (:mod:`dpamp.amplification.matrix`, Choquette-Choo, Ganesh,
  Steinke & Thakurta, ICLR 2024): an amplified upper bound for Poisson, cyclic Poisson and
  balls in bins with any square lower-triangular C, from :meth:`MatrixMechanism.matrix` and
  ``participation``; the accounting method ``conditional-composition`` (which ``auto`` takes
  for one such mechanism) answers with the smallest of it, the noise split and
  no-amplification's bound, naming the route, and, for (cyclic) Poisson sampling on a banded C, with a proven lower end
  (:mod:`dpamp.amplification.matrix.lower`: two witnesses, the note names the one used).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V
from ..core.relations import ADD_REMOVE, Relation, as_relation
from ..core.rounding import onto_levels, ulps_down, ulps_up
from ..core.sampling import Poisson, clip_sensitivity
from .base import Mechanism
from .gaussian import Gaussian
from .matrix_sensitivity import SensitivityBracket, sensitivity
from .matrix_separation import BlockPlan, separation_blocks
from .matrix_split import SplitPlan, split_plan
from .matrix_strategies import (BLT, BinaryTree, DenseStrategy, Strategy, Toeplitz,
                                 as_strategy)
from .participation import (BallsInBins, CyclicPoisson, FixedBins, MinSepSampling,
                            Participation, SingleEpoch, as_participation)
from .subsampled import Subsampled

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..core.sampling import SamplingScheme

__all__ = ["MatrixMechanism", "SensitivityWitness", "SampledWitness"]

GAUSSIAN, CYCLIC, NO_AMPLIFICATION = "gaussian", "cyclic-poisson", "no-amplification"
#: the amplified upper bound of Poisson sampling with any lower-triangular C
#: (:mod:`dpamp.amplification.matrix`; ``dpamp.families.matrix.amplified_epsilon`` takes the
#: smaller of it and no-amplification's)
CONDITIONAL = "conditional-composition"
#: Poisson, cyclic Poisson or balls in bins on any square lower-triangular C, by splitting the
#: noise among the steps (:mod:`.matrix_split`)
SPLIT = "noise-split"
#: b-min-separation sampling: the split's steps in blocks of the separation, each a
#: subsampled random allocation (:mod:`.matrix_separation`)
BLOCKS = "separation-blocks"


#: the range of the largest |entry| of C accepted: squares of entries (and their sums over n^2
#: terms) stay normal doubles there, so the relative rounding pads hold (below it, the squares
#: underflowed to 0: sensitivity 0 for a mechanism of any mu; scaling C and z by one factor
#: changes nothing, so the user can always move C into it)
_SCALE = (2.0 ** -250, 2.0 ** 250)

#: distinct step values the cyclic-Poisson route keeps per end (each is one PLD part)
MAX_LEVELS = 16


@dataclasses.dataclass(frozen=True)
class SensitivityWitness(Gaussian):
    """The Gaussian pair of one pattern and gradients attaining the lower sensitivity end: an
    actual pair of neighbours of the matrix mechanism (a witness, ``Mechanism.witnesses``)."""

    rel_err = 0.0
    source = "matrix mechanism: a participation pattern attaining the lower sensitivity"


@dataclasses.dataclass(frozen=True)
class SampledWitness(Subsampled):
    """One Poisson-subsampled step of the cyclic-Poisson reduction at the lower column norm."""

    rel_err = 0.0
    source = "matrix mechanism: the cyclic-Poisson reduction at the lower column norm"


@dataclasses.dataclass(frozen=True)
class MatrixMechanism(Mechanism):
    """C G + N(0, z^2) of a strategy ``strategy`` (an array C, or a :class:`Strategy`), noise
    multiplier ``noise_multiplier`` z, records entering steps by ``participation`` (default a
    single epoch). Module docstring for the routes."""

    strategy: Strategy
    noise_multiplier: float
    participation: Participation = SingleEpoch()
    relation: Relation = ADD_REMOVE

    def __post_init__(self):
        object.__setattr__(self, "strategy", as_strategy(self.strategy))
        object.__setattr__(self, "noise_multiplier",
                           V.positive("noise_multiplier", self.noise_multiplier))
        object.__setattr__(self, "participation", as_participation(self.participation))
        object.__setattr__(self, "relation", as_relation(self.relation))
        top = self._largest_entry
        if top != 0 and not _SCALE[0] <= top <= _SCALE[1]:
            raise ValueError(
                f"strategy: its largest |entry| is {top:g}, outside [2^-250, 2^250], where "
                "the sensitivities' squares and sums are computed without underflow or "
                "overflow; C G + Z scaled by one factor is the same mechanism, so scale C and "
                "noise_multiplier together")
        if self.participation.sampled and self.relation is not ADD_REMOVE:
            raise ValueError(f"participation {self.participation.describe()} is accounted under "
                             "add/remove neighbours (relation='add_remove')")

    @functools.cached_property
    def _largest_entry(self) -> float:
        """max |C[t, s]| (0 only for C = 0, which a DenseStrategy allows), read from the
        description; for a BLT the bound max(1, sum |omega_i|) (c_0 = 1, theta in [0, 1]),
        not its n computed coefficients."""
        s = self.strategy
        if isinstance(s, BinaryTree):
            return 1.0
        if isinstance(s, BLT):
            return max(1.0, math.fsum(abs(w) for w in s.output_scales))
        if isinstance(s, Toeplitz):
            return max(abs(v) for v in s.coeffs)
        c = s.toeplitz()
        return float(np.max(np.abs(s.dense() if c is None else c)))

    # --- what the accounting uses -------------------------------------------------------
    @property
    def n(self) -> int:
        """Steps (columns of C)."""
        return self.strategy.n

    @functools.cached_property
    def route(self) -> str:
        """gaussian (no sampling); cyclic-poisson (no row of C reads two steps of a group);
        noise-split where its steps' sum of squared sensitivities (before they are moved up
        onto a few levels) is at most the worst pattern's squared (every step is dominated
        by its Gaussian, so the split is dominated by the Gaussian at that sum, hence by
        no-amplification's, at every epsilon; the two sums are equal for C >= 0 in exact
        arithmetic, so a rounding margin of 1e-9 of it is allowed: the choice only decides
        tightness, both bounds are proven); else no-amplification (also for C = 0,
        which releases pure noise: its Gaussian at mu = 0, delta 0; the sampled routes
        would have no step)."""
        p = self.participation
        if not p.sampled:
            return GAUSSIAN
        if self._largest_entry == 0:
            return NO_AMPLIFICATION
        if self._rows_disjoint:
            return CYCLIC
        plan = self.split
        if plan is not None and plan.raw_sq <= self.sensitivity.upper ** 2 * (1 + 1e-9):
            return SPLIT
        return NO_AMPLIFICATION

    @property
    def _rows_disjoint(self) -> bool:
        """Cyclic Poisson on a lower-triangular C of at most p bands: no row reads two steps
        of a group (the cyclic-Poisson reduction is exact)."""
        p, s = self.participation, self.strategy
        return isinstance(p, CyclicPoisson) and s.square_lower and s.bands is not None \
            and s.bands <= p.partitions

    @functools.cached_property
    def split(self) -> SplitPlan | None:
        """The noise split's steps (:mod:`.matrix_split`) in clipping-norm units, where it
        applies (sampled participation, square lower-triangular C)."""
        if not self.participation.sampled:
            return None
        return split_plan(self.strategy, self.participation)

    @functools.cached_property
    def sensitivity(self) -> SensitivityBracket:
        """The L2 sensitivity bracket in clipping-norm units under add/remove (the relation's
        factor c is applied in ``mu``): for the cyclic-Poisson route, of one step (max column
        norm); otherwise of the worst-case (k, b) set of the schema (no-amplification's; the
        noise split reports its own steps, ``split``)."""
        if self._rows_disjoint:
            return sensitivity(self.strategy, 1, self.n)
        k, b = self.participation.worst_case(self.n)
        return sensitivity(self.strategy, k, b)

    @property
    def mu(self) -> tuple[float, float]:
        """(mu_lo, mu_hi) = c Delta / z at the sensitivity's ends, rounded outward."""
        c = clip_sensitivity(self.relation)
        z = self.noise_multiplier
        s = self.sensitivity
        return float(ulps_down(c * s.lower / z, 2)), float(ulps_up(c * s.upper / z, 2))

    @property
    def rounds(self) -> int:
        """Poisson-subsampled Gaussian steps of the cyclic-Poisson reduction (else 1)."""
        p = self.participation
        return p.rounds(self.n) if self.route == CYCLIC and isinstance(p, CyclicPoisson) else 1

    @functools.cached_property
    def group_mus(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The cyclic-Poisson route's steps as mu values, largest first: (upper, lower).
        Each group of records is exactly DP-SGD over its own steps at their column norms
        (Choquette-Choo et al. 2023: with b <= p bands the group's columns do not share
        rows). Upper: position by position the largest over the groups of the sorted norms,
        which dominates every group (each group's i-th largest step is dominated by the
        upper's, a step at a smaller shift being a post-processing of one at a larger).
        Lower: the steps of one actual group (the one of largest sum of squares), all
        attained. Where p divides n and the columns are equal the two coincide; where it
        does not, the square C cuts the busiest groups' last columns short, which both ends
        follow. Column norms are rounded outward by their summation error ((n + 8) ulps) and
        the strategy's coefficient error."""
        p = self.participation
        if self.route != CYCLIC or not isinstance(p, CyclicPoisson):
            return (self.mu[1],), (self.mu[0],)
        col_sq = np.asarray(self.strategy.column_norms_sq(), dtype=float)
        err = (self.n + 8) * 2.0 ** -52
        r = self.rounds
        grid = np.zeros(r * p.partitions)
        grid[:self.n] = col_sq
        # group g is the steps g, g + p, ...: row g after the transpose; largest first
        norms = -np.sort(-grid.reshape(r, p.partitions).T, axis=1)
        c = clip_sensitivity(self.relation) / self.noise_multiplier
        e = self.strategy.coeff_error        # computed coefficients: their l2 error
        up = ulps_up(c * (np.sqrt(norms.max(axis=0) * (1.0 + err)) + e), 4)
        low = np.sqrt(norms[int(np.argmax(norms.sum(axis=1)))] * (1.0 - err)) - e
        low = ulps_down(c * np.maximum(low, 0.0), 4)
        up = onto_levels(up[up > 0], MAX_LEVELS, True)
        low = onto_levels(low[low > 0], MAX_LEVELS, False)
        return tuple(float(v) for v in up), tuple(float(v) for v in low)

    def _steps(self, mus) -> Mechanism:
        """The composition of Poisson-subsampled Gaussians at ``mus``, equal ones counted."""
        return self._counted(mus, lambda mu: Subsampled(
            Gaussian(1.0, mu, relation=self.relation), Poisson(self._rate)))

    @staticmethod
    def _counted(mus, step) -> Mechanism:
        """``step(mu)`` for each distinct mu, composed as many times as it occurs."""
        from collections import Counter
        from .composition import compose
        parts = [step(mu) * k for mu, k in Counter(mus).items()]
        return parts[0] if len(parts) == 1 else compose(*parts)

    @property
    def _rate(self) -> float:
        p = self.participation
        if not isinstance(p, CyclicPoisson):
            raise ValueError(f"{p.describe()} has no sampling rate")
        return p.sampling_prob

    def _gaussian(self, upper: bool) -> Gaussian:
        """The Gaussian mechanism (noise 1, sensitivity mu) at the upper or lower end."""
        lo, hi = self.mu
        return Gaussian(1.0, hi if upper else lo, relation=self.relation)

    def reduction(self, upper: bool = True) -> Mechanism:
        """The plan this mechanism is accounted as, at the sensitivity's upper end (``upper``)
        or its lower end: the Gaussian mechanism (routes gaussian and no-amplification),
        ``rounds`` Poisson-subsampled Gaussian steps (DP-SGD; route cyclic-poisson), or the
        noise split's steps (route noise-split: an upper plan, except where it is attained;
        ``upper=False`` gives the attained plan, or the upper one, which bounds nothing from
        below)."""
        if self.route == SPLIT:
            return self.split_reduction(upper or self.split_attained is None)
        if self.route != CYCLIC:
            return self._gaussian(upper)
        up, low = self.group_mus
        return self._steps(up if upper else low)

    def split_steps(self, upper: bool = True) -> list[tuple[Mechanism, int]]:
        """The noise split's plan (:mod:`.matrix_split`) as (step, count): Poisson-subsampled
        Gaussians at mu_s = Delta_s / z, or random allocation (one of an epoch's steps, or of
        the fixed bins) of the Gaussian at the epoch's largest mu. ``upper=False``: the same
        steps at the attained mu (``split_attained``; ValueError where it is not attained).
        ValueError where the split does not apply."""
        from ..core.sampling import RandomAllocation
        plan = self.split
        if plan is None:
            raise ValueError(f"the noise split does not apply to {self!r}")
        z = self.noise_multiplier
        if not upper and self.split_attained is None:
            raise ValueError("the noise split of this C is an upper plan only (not attained)")
        out: list[tuple[Mechanism, int]] = []
        # (attained: a bin's n / bins steps of |C[s, s]| = d each under fixed bins, one step
        # of an epoch under balls in bins)
        steps = self.n // plan.parts[0][1] if isinstance(self.participation, FixedBins) else 1
        for d, epoch, count in plan.parts:
            mu = float(ulps_up(d / z, 2)) if upper else float(ulps_down(
                float(self.split_attained or 0.0) * math.sqrt(steps) / z, 4))
            g = Gaussian(1.0, mu, relation=self.relation)
            out.append((g.subsample(Poisson(plan.rate)) if epoch == 0 else
                        g.subsample(RandomAllocation(1, epoch)), count))
        return out

    @functools.cached_property
    def separation_blocks(self) -> BlockPlan | None:
        """b-min-separation sampling: the noise split's steps in blocks of the separation
        (:mod:`.matrix_separation`), where they apply; else None."""
        p = self.participation
        if not isinstance(p, MinSepSampling):
            return None
        return separation_blocks(self.strategy, p)

    def blocks_reduction(self) -> Mechanism:
        """The separation blocks' plan: per block, random allocation (1 of m) of the
        Poisson(gamma)-subsampled Gaussian at the block's largest mu (an upper plan only).
        ValueError where the blocks do not apply."""
        from ..core.sampling import RandomAllocation
        from .composition import compose
        plan = self.separation_blocks
        if plan is None:
            raise ValueError(f"the separation blocks do not apply to {self!r}")
        z, parts = self.noise_multiplier, []
        for d, m, gamma, count in plan.parts:
            g = Gaussian(1.0, float(ulps_up(d / z, 2)), relation=self.relation)
            step = g.subsample(Poisson(gamma))
            parts.append((step if m == 1 else step.subsample(RandomAllocation(1, m))) * count)
        return parts[0] if len(parts) == 1 else compose(*parts)

    def split_reduction(self, upper: bool = True) -> Mechanism:
        """The noise split's plan composed (:meth:`split_steps`)."""
        from .composition import compose
        parts = [step * count for step, count in self.split_steps(upper)]
        return parts[0] if len(parts) == 1 else compose(*parts)

    @functools.cached_property
    def split_attained(self) -> float | None:
        """d where the noise split is attained by an actual pair of neighbours (a record
        whose gradient is one fixed unit vector): C diagonal with |C[s, s]| = d on every step,
        so every block is its step's own output at full noise and the split's steps are the
        mechanism's (under fixed bins and balls in bins also ``bins`` dividing n: every bin of
        n / bins steps, no shorter last epoch, whose reading could differ); else None."""
        s, p = self.strategy, self.participation
        if self.split is None or s.bands != 1 or (
                isinstance(p, (FixedBins, BallsInBins)) and self.n % p.bins):
            return None
        c = s.toeplitz()
        diag = np.abs(np.diag(s.dense())) if c is None or isinstance(s, DenseStrategy) \
            else np.abs(np.asarray(c[:1], dtype=float))
        if s.coeff_error or not (diag == diag[0]).all() or not diag[0] > 0:
            return None
        return float(diag[0])

    def with_noise_multiplier(self, noise_multiplier: float) -> MatrixMechanism:
        """The same mechanism at another noise multiplier, keeping the sensitivity computed
        (it depends on C and the participation only): what calibration varies,
        ``dp.calibrate.sigma(eps, delta, family=lambda z, **_: m.with_noise_multiplier(z),
        steps=1)``."""
        new = dataclasses.replace(self, noise_multiplier=noise_multiplier)
        for key in ("sensitivity", "split", "route"):
            if key in self.__dict__:
                new.__dict__[key] = self.__dict__[key]
        return new

    def matrix(self) -> np.ndarray:
        """C as a dense array (rows x n): the input of the amplified bounds
        (:mod:`dpamp.amplification.matrix`), with ``participation`` and ``noise_multiplier``."""
        return self.strategy.dense()

    # --- representations (the family declaration adds PLD, profile, zCDP) ------------------
    def _rdp(self, alpha):
        return self.reduction(True)._rdp(alpha)

    def pure_epsilon(self) -> float:
        return math.inf

    def rdp_lower(self, alpha: ArrayLike) -> float | np.ndarray | None:
        if self.route in (NO_AMPLIFICATION, SPLIT):
            return None
        low = self.reduction(False)
        if self.route == GAUSSIAN:
            a = V.orders(alpha)
            with np.errstate(invalid="ignore"):
                v = np.where(np.isinf(a), np.inf, a * (0.5 * self.mu[0] ** 2))
            out = ulps_down(v, 8)
            return out if np.ndim(out) else float(out)
        return low.rdp_lower(alpha)

    def witnesses(self) -> tuple[Mechanism, ...]:
        if self.route in (NO_AMPLIFICATION, SPLIT):
            return ()
        lo, _ = self.mu
        w = SensitivityWitness(1.0, lo, relation=self.relation)
        if self.route == GAUSSIAN:
            return (w,)
        return (self._counted(self.group_mus[1], lambda mu: SampledWitness(
            SensitivityWitness(1.0, mu, relation=self.relation), Poisson(self._rate))),)

    def subsample(self, scheme: SamplingScheme) -> Mechanism:
        raise ValueError("a MatrixMechanism is sampled through its participation "
                         "(participation=dp.CyclicPoisson(q, partitions), dp.BallsInBins(b), "
                         "...), not by .subsample")

    def explain(self) -> list[str]:
        """Report lines: strategy, schema, sensitivity and route."""
        lo, hi = self.mu
        lines = [f"strategy: {self.strategy.describe()}",
                 f"participation: {self.participation.describe()}",
                 f"{self.sensitivity.describe()}",
                 f"noise multiplier {self.noise_multiplier:g}: mu in [{lo:.6g}, {hi:.6g}]"]
        if self.route == CYCLIC:
            lines.append(f"route: cyclic-Poisson reduction (Choquette-Choo et al. 2023): DP-SGD "
                         f"with rate {self._rate:g}, "
                         f"{self.rounds} steps, mu {hi:.6g} per step")
        elif self.route == GAUSSIAN:
            lines.append("route: Gaussian mechanism at the sensitivity (no sampling)")
        elif self.route == SPLIT:
            lines.append("route: noise split (an upper bound only): " + self.split_words())
        else:
            lines.append("route: no amplification (worst participation pattern; an upper bound "
                         "only)")
        blocks = self.separation_blocks
        if blocks is not None and blocks.parts:
            count = sum(k for *_, k in blocks.parts)
            shapes = ", ".join(sorted({f"1 of {m} at rate {g:.6g}"
                                       for _, m, g, _ in blocks.parts}))
            lines.append(f"also: the noise split in {count} blocks of {blocks.length} steps "
                         f"(separation blocks, an upper bound only), each a random allocation "
                         f"({shapes}); the answer takes the smallest route")
        return lines

    def split_words(self) -> str:
        """The noise split's steps in words (route noise-split)."""
        plan = self.split
        assert plan is not None
        z = self.noise_multiplier
        mus = [d / z for d, _, _ in plan.parts]
        span = f"mu {mus[0]:.6g}" if len(mus) == 1 else f"mu {min(mus):.6g} to {max(mus):.6g}"
        count = sum(k for _, _, k in plan.parts)
        if all(e == 0 for _, e, _ in plan.parts):
            what = f"{count} Poisson-sampled Gaussian steps (rate {plan.rate:g})"
        else:
            sizes = sorted({e for _, e, _ in plan.parts})
            what = (f"{count} epochs of random allocation (1 of "
                    f"{'/'.join(str(e) for e in sizes)} steps) of a Gaussian")
        return f"{what}, {span}; no-amplification's mu {self.mu[1]:.6g}"

    def __repr__(self):
        return (f"MatrixMechanism({self.strategy.describe()}, z={self.noise_multiplier:g}, "
                f"{self.participation!r})")
