"""Certified privacy-loss distributions of one epoch of random allocation.

**The pair** (V. Feldman, M. Shenfeld, *Privacy amplification by random allocation*,
arXiv:2502.08202, "FS25a", Sec. 2; *Efficient privacy loss accounting for subsampling and random
allocation*, arXiv:2602.17284, "FS25b", Sec. 3): for a base mechanism with dominating pair
(P0, Q0) under add/remove, one epoch of 1-out-of-t allocation is dominated by

    P = (1/t) sum_i (P0 in coordinate i, Q0 elsewhere)   vs   Q = Q0^t      ("remove": (P, Q))

and its swap ("add": (Q, P)). With X_i = dP0/dQ0 of coordinate i (independent under Q),
dP/dQ = S/t, S = X_1 + ... + X_t, so H_x(P||Q) = E[(S/t - x)_+] + P0[l = inf] and
H_x(Q||P) = E[(1 - x S/t)_+]: the privacy loss log(S/t) is FS25b's log-sum-exp of t independent
per-step losses, and its law is a t-fold convolution in the exp-loss domain.

**Bounds** (our construction; :mod:`.grid` for the one-step discretisations):

1. X on the linear grid k dx, k <= K, up to b = a_K. Upper: the mean-preserving split (larger
   in convex order); lower: the lowered-knot polygon (smaller in increasing convex order), for
   remove; for add the same on Y = a_K - X (so that the add curve is an increasing convex
   function of sum Y). X > b: for remove, one large coordinate (N = 1) on the geometric grid
   of :mod:`.tail` with the (t-1)-fold body R (a second composition, of t-1 steps), two by
   convexity, three or more charged at +inf (b is chosen where that charge is about
   CUT_TAILS); for add the tail is put at b in the upper bound (X ^ b <= X and the curve
   decreases in S), and the lower one keeps one large coordinate as one merged atom. Bases
   whose X lives on [x_lo, x_hi] (atoms at both ends) have no tail: the grid spans [x_lo,
   x_hi]. Small noise (standard deviation of X above MAX_SD_X, Gaussian sigma < ~0.38: X's
   median is below any step the remove body can afford): the add direction gets its own grid
   on [0, t] (:mod:`.capped`: X ^ t gives the same add curve for x >= 1), and the remove
   direction's LOWER pair its own fine grid (the lowering of a coarse grid's first cell, dx
   Q0[cell] / 4 per step, compounds over t steps), with the tail of :mod:`.tail` above it.
2. The t-fold convolution on that grid by the PLD engine's tilted FFT
   (:func:`dpamp.pld.engine.compose`, with its proven floating-point budget E_k on every
   suffix, for weights in [0, 1]). Remove is computed under P (the masses of S tilted by S/t,
   i.e. one factor x mu(dx) and t - 1 factors mu, FS25b's "P differs in one coordinate"), so
   that the weights (1 - x t / s)_+ are in [0, 1]; add under Q with weights (1 - x s / t)_+.
3. Onto the engine's loss grid t_j = j h: the upper curve's values at x = e^{jh} (computed
   masses + E_k + mass above the window + the tail's terms, both halves) through the lower
   convex hull
   (:func:`dpamp.pld.discretize.discretize_profile`, chords of points above a convex curve lie
   above it); the lower one as the exact pair of atoms log(s/t) with the masses lowered by
   their per-bin budget E_k (and the N = 1 atoms of :func:`.tail.lower_atoms`), through the
   optimistic discretisation of :mod:`dpamp.pld`.

Epochs and other parts of a plan then compose in the engine (its upper and lower PMFs stay
bounds under any number of compositions). Every rounding goes outward: upper masses up, lower
masses down, curve values up, the cut tails to +inf (upper) or away (lower).

**k > 1** (the block argument of :mod:`.rdp`, here for hockey-stick divergences, which
are jointly convex too): k-out-of-t allocation is a mixture over a uniform relabelling of k
blocks of sizes floor(t/k), ceil(t/k), one step drawn per block; so both of its curves are at
most those of the product of the k blocks' 1-out-of-m allocations, which the engine composes.
This is an upper bound only; the lower bound for 1 < k < t is that of a post-processing of the
epoch's attained pair (the sum of the steps' likelihood-ratio cell indices, :mod:`.lower_k`),
joined to the blocks as one more part with a trivial upper (the blocks get a trivial lower);
k = t is the t-fold composition of the base (exact). Where the 2-D window is affordable
(:func:`.two_of_t_pld.applies`) the blocks take two draws each, k / 2 blocks of 2-out-of-2t/k
with their own curves from the joint law of (sum X_i, sum X_i^2) (:func:`.two_of_t_pld.
paired_parts`): for k = 2 that is the epoch itself, no block at all.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import capped as C
from . import grid as G
from . import tail as T
from ...core.once import OnceCache
from ...pld.state import BOTH, Bound
from .sums import EPOCH_KEEP, _compose, _lower_masses, _suffix, _var_x, held

_U = 2.0 ** -53
#: the body ends b tried, finest first: the charge of three or more coordinates above b
#: (:mod:`.tail`) about this; a coarser one where the finer would need more than MAX_K grid
#: points at the step asked for. (The old cuts of X, where P0 and Q0 have this mass above,
#: still size the windows: ``cuts``.) 1e-17 first: at delta 1e-12 a 1e-14 charge per epoch
#: kept sigma 1, t 1000 at [0.873739, 0.874914] (10 epochs: 8e-3 of eps, 9.5 s); with it,
#: [0.873744, 0.873825] in 0.6 s (10 epochs 2e-4, 0.2 s), and the delta 1e-6 table is as fast
CUT_TAILS = (1e-17, 1e-14, 1e-12, 1e-10)
CUT_TAIL = CUT_TAILS[0]
#: largest one-step grid (the epoch's FFT is a few times longer)
MAX_K = 1 << 17
#: largest standard deviation of X for one grid. Beyond it (Gaussian sigma < ~0.38) most of X's
#: mass lies far below any step the body's grid can afford (median e^{-1/(2 sigma^2)}), which
#: the add direction's small sums need: on one grid sigma 0.3 gave an add curve of ~0.6 at every
#: x. So the add direction and the remove lower pair get grids of their own (.capped)
MAX_SD_X = 30.0
#: the tail grid (:mod:`.tail`) reaches X where P0 and Q0 have mass about this above
Y_MAX_TAIL = 1e-18


def allocation_parts(base, k: int, t: int):
    """[(source, count)] of one epoch of k-out-of-t random allocation of ``base`` for the PLD
    engine (see the module docstring)."""
    from ...pld.loss import LossDistribution
    from ...pld.sources import loss_distribution
    src = loss_distribution(base)
    if not isinstance(src, LossDistribution):
        raise NotImplementedError(f"random allocation needs an exact privacy-loss distribution "
                                  f"of the base mechanism; {base!r} has only a profile")
    if (src.lower_slack > 0 or src.mass_rel_err > 0) and k < t:
        # a truncated pair (tails charged at +-inf: the discrete Gaussian, Skellam) dominates
        # the base, so every epoch source built from it bounds the epoch from above; their
        # optimistic sides do not carry its slack, so no lower end is claimed; an epoch of t
        # steps carries t times the base's relative mass error
        from ...pld.sources import NotAttained
        return [(NotAttained(s, t * src.mass_rel_err), c) for s, c in _parts(base, src, k, t)]
    return _parts(base, src, k, t)


def _parts(base, src, k: int, t: int):
    """:func:`allocation_parts` from the base's loss distribution ``src``."""
    if k == t:
        return [(src, t)]
    from .exact import epoch_parts      # a discrete base over few steps: enumerated exactly
    if (enumerated := epoch_parts(base, src, k, t)) is not None:
        return enumerated
    small, n_big = divmod(t, k)
    out = []
    for size, count in ((small + 1, n_big), (small, k - n_big)):
        if count == 0:
            continue
        if size == 1:
            out.append((src, count))
        else:
            out.append((_source(base, size, k == 1), count))
    if k > 1:
        # blocks of two draws where the 2-D route applies (.two_of_t_pld; for k = 2 no block)
        from .two_of_t_pld import paired_parts
        paired = paired_parts(base, src, k, t,
                              lambda size: src if size == 1 else _source(base, size, False),
                              lambda m: _two_grid(base, m))
        if paired is not None:
            return paired
        from .lower_k import allocation_parts_lower
        return allocation_parts_lower(base, k, t, out)
    return out


# (a plan uses one or two of each: at 16 and 64, 24 plans of k 2..10 grew one process to 2.8
# GB and on; at 4 and 8 it levels off at 1.8 GB from the 20th plan of 36)
@functools.lru_cache(maxsize=4)
def _two_grid(base, t: int):
    from ...pld.sources import loss_distribution
    from .two_of_t_pld import Grid
    return Grid(loss_distribution(base), t)


@functools.lru_cache(maxsize=8)
def _epoch(base, t: int) -> "_Epoch":
    from ...pld.sources import loss_distribution
    return _Epoch(loss_distribution(base), t)


def _source(base, t, lower):
    return AllocationSource(_epoch(base, t), remove=True, lower=lower)


class _Epoch:
    """The S-domain computations of one 1-out-of-t epoch, cached per grid step dx."""

    def __init__(self, loss, t: int):
        self.loss = loss
        self.t = t
        self.cuts = [math.exp(min(G.truncation_point(loss, c), 600.0)) for c in CUT_TAILS]
        self.a_cut = self.cuts[0]
        self.y_max = math.exp(min(G.truncation_point(loss, Y_MAX_TAIL), 600.0))
        # the body's ends b (.tail): the charge of three or more large coordinates about
        # CUT_TAILS
        self.splits = T.split_points(loss, t, CUT_TAILS, self.y_max)
        # (the two directions' threads share it: core.once)
        self._cache = OnceCache(keep=EPOCH_KEEP)
        # bases whose X lives in [x_lo, x_hi] with atoms at both ends (randomized response,
        # pure DP, Laplace): a grid offset to x_lo with a step dividing x_hi - x_lo puts the
        # atoms on knots, where they cost the lower bound nothing (off a knot an atom of mass q
        # would cost it dx q / 4: first order)
        self.span = None
        fin = np.isfinite(loss.atom_loss) & (np.maximum(loss.atom_p, loss.atom_q) > 0)
        if fin.any() and loss.neg_inf_mass == 0.0:
            xs = np.exp(loss.atom_loss[fin])
            lo_x, hi_x = float(xs.min()), float(xs.max())
            inside = loss.cdf is None or (math.exp(loss.support[0]) >= lo_x * (1 - 1e-12)
                                          and math.exp(loss.support[1]) <= hi_x * (1 + 1e-12))
            if inside and hi_x > lo_x:
                self.span = (lo_x, hi_x)
                self.a_cut = hi_x
        # moments of X (sizing only), from a coarse split (up to the cut, tail included)
        c = G.cells(loss, self.a_cut / 4096, 4096) if self.span is None \
            else self._cells(self.a_cut / 4096)
        m = G.split_masses(c)
        self.var_x = _var_x(loss, self.cuts[-1])
        self._coarse = (c.dx, m, c.o)

    def _cells(self, dx):
        if self.span is None:
            # the finest split that fits MAX_K points at this step (else the coarsest, coarser)
            fits = [a for a in self.splits if a / dx <= MAX_K]
            a_cut = fits[0] if fits else self.splits[-1]
            K = max(2, int(math.ceil(a_cut / max(dx, a_cut / MAX_K))))
            return G.cells(self.loss, a_cut / K, K)
        lo_x, hi_x = self.span
        K = max(2, int(math.ceil((hi_x - lo_x) / dx)))
        # the last knot o + K dx must not fall below hi_x in floating point
        step = (hi_x - lo_x) / K
        while lo_x + K * step < hi_x:
            step = math.nextafter(step, math.inf)
        return G.cells(self.loss, step, K, lo_x)

    def _cells_add(self, c, dx):
        """The add direction's cells: ``c`` itself, or for X too spread for it (.capped) its
        own grid on [0, t] at step dx (coarser if it would exceed MAX_K points)."""
        cap = C.cap_for(self.t, c.o + c.dx * c.K)
        if self.span is not None or cap >= c.o + c.dx * c.K \
                or not C.needs_own_grid(math.sqrt(self.var_x), MAX_SD_X):
            return c
        return G.cells(self.loss, *C.step_for(cap, dx, MAX_K))

    def _cells_fine(self, dx):
        """Cells at step dx (K <= MAX_K), up to the finest body end that fits, else as far as
        MAX_K points reach (the tail above: :mod:`.tail`)."""
        fits = [b for b in self.splits if b / dx <= MAX_K]
        b = fits[0] if fits else MAX_K * dx
        return G.cells(self.loss, *C.step_for(b, dx, MAX_K))

    def check_reach(self):
        """OutOfReach where the linear grid cannot resolve the body of X: a step of 1/20 of X's
        standard deviation (the split's noise then adds < 1/1000 to the loss variance) must
        cover X up to the coarsest body end b within MAX_K points (the tail above b is on
        :mod:`.tail`'s geometric grid). Beyond MAX_SD_X the add direction and the remove
        lower pair have grids of their own (.capped), so small noise is no reason to refuse."""
        if self.span is not None:
            return
        sd = math.sqrt(self.var_x)
        need = self.splits[-1] / (0.05 * sd)
        if need > MAX_K:
            from ...core.errors import OutOfReach
            raise OutOfReach(
                f"random allocation over {self.t} steps: the likelihood ratio of this base "
                f"mechanism has too long a tail for the PLD's linear grid ({need:.3g} points "
                f"> {MAX_K}); use method='rdp'")

    def dx_for(self, h: float) -> float:
        """The S-grid step for the engine's loss step h: the split adds variance <= dx^2/4 per
        step, so the loss log(S/t) moves by about dx / (2 sqrt(t)), comparable to h."""
        return h * math.sqrt(self.t) / 2.0

    # --- the convolutions -------------------------------------------------------------------
    def compute(self, dx: float) -> dict:
        """The compositions at step dx, or a coarser one where the FFT would not fit (as
        sound, wider); held against the process budget (other epochs release theirs)."""
        return self._cache.get(dx, lambda: held(self, self._compute_fitting(dx), self._cache))

    def _compute_fitting(self, dx: float) -> dict:
        step = dx
        for _ in range(16):
            try:
                return self._compute(step)
            except MemoryError:
                step *= 2.0
        raise MemoryError("random allocation: no grid fits")

    def _compute(self, dx: float) -> dict:
        from ...pld.discretize import Discretized
        from ...pld.engine import PartPMF
        c = self._cells(dx)
        t = self.t
        # add: X ^ a_K <= X, the whole Q0[X > a_K] at a_K (Y = 0) bounds the decreasing curve;
        # for small noise on its own grid up to a_K = t (.capped), and then the remove lower
        # pair has a fine grid of its own too: the coarse one composes the upper kind alone
        ca = self._cells_add(c, dx)
        out = self._remove_sums(c, (Bound.UPPER,) if ca is not c else BOTH)
        y = ca.reflected()
        yup, ylo = G.split_masses(y), G.lowered_masses(y)
        yup[0] += ca.q_tail * (1 + 4 * _U)
        t_aK = t * (ca.o + ca.dx * ca.K)
        add = _compose([PartPMF(Discretized(ca.dx, 0, yup, 0.0, ylo, 0.0), t)], ca.dx, t_aK - t)
        out.update({"add": add, "t_aK": t_aK, "step_add": ca.dx, "add_atom": None})
        if ca is not c:
            out["add_atom"] = C.merged_atom(ca.q_tail, ca.p_tail + ca.p_inf, t)
            # the remove direction's lower pair on a fine grid too (.capped): the lowering of
            # the coarse grid costs each of the t steps about dx Q0[cell 0] / 4
            out["lower"] = self._remove_sums(self._cells_fine(dx), (Bound.LOWER,))
        out["extra"]["add"] = 0.0
        return out

    def _remove_sums(self, c, bounds=BOTH) -> dict:
        """The remove direction's compositions on the cells ``c``: S under P (one factor x mu,
        t - 1 factors mu), and for X > a_K the tail of :mod:`.tail` with the (t-1)-fold R
        (``bounds``: upper, lower or both, as the engine's compose takes them)."""
        from ...pld.discretize import Discretized
        from ...pld.engine import PartPMF
        K, t, o = c.K, self.t, c.o
        step = c.dx
        a = o + step * np.arange(K + 1)                     # X at the knots
        up, lo = G.split_masses(c), G.lowered_masses(c)
        parts = []
        if t > 1:
            parts.append(PartPMF(Discretized(step, 0, up, 0.0, lo, 0.0), t - 1))
        tilt = PartPMF(Discretized(step, 0, a * up * (1 + 4 * _U), 0.0,
                                   a * lo * (1 - 4 * _U), 0.0), 1)
        rem = _compose([tilt] + parts, step, t * (1.0 - o), bounds)
        out = {"remove": rem, "K": K, "step": step, "t_o": t * o, "tail": None}
        if self.span is None and c.q_tail > 0:
            # X > a_K on a geometric grid (.tail): T_1 from the (t-1)-fold body R, T_2 by
            # convexity from the same sums, N >= 3 charged at +inf
            lb = float(np.log(o + step * np.arange(1, K + 1))[-1])    # as grid.cells has it
            # (knots no closer than the S-grid's step: C_R is resolved no finer)
            log_r = min(T.LOG_R_MAX, max(step / math.sqrt(t), step / float(a[-1]), T.LOG_R_MIN))
            tail = T.tail_cells(self.loss, lb, self.y_max, log_r, t)
            tail.pi_up = c.q_tail
            rest = [PartPMF(parts[0].d, t - 2)] if t > 2 else []
            rp = _compose([tilt] + rest, step, (t - 1) * (1.0 - o), bounds)
            out["tail"] = tail
            out["R"] = rp
            out["callR"] = T.CallR([rp.tilted.upper, rp.flat.upper], step, t, tail.pi_lo) \
                if Bound.UPPER in bounds else None
            rem_extra = c.p_inf + T.charge(c.p_tail, c.q_tail, t)
        else:
            # (the tail, if any, charged at +inf: at least one X_i > a_K)
            rem_extra = c.p_tail + c.p_inf + (t - 1) * c.q_tail
        rem_extra += c.excess
        out["extra"] = {"remove": min(rem_extra, 1.0) * (1 + 8 * _U)}
        return out

    # --- curves and atoms -------------------------------------------------------------------
    def upper_curve(self, dx: float, remove: bool, x: np.ndarray) -> np.ndarray:
        """Proven upper bounds on H_x of the remove (P, Q) or add (Q, P) pair at x >= 0: the
        smaller of the tilted and the untilted composition's."""
        r = self.compute(dx)
        both = r["remove" if remove else "add"]
        val = np.minimum(self._upper_curve(r, both.tilted.upper, remove, x),
                         self._upper_curve(r, both.flat.upper, remove, x))
        if remove and r["tail"] is not None:
            val = np.minimum((val + T.upper_tail(x, self.t, r["tail"], r["callR"]))
                             * (1 + 4 * _U), 1.0)
        elif not remove and (r["add_atom"] is not None or self.t <= C.FEW_STEPS) \
                and self.span is None:
            # small noise or few steps: also the bound from the largest coordinate
            # (.capped.max_bound), where the sums near t e^-eps are below the grid's step
            val = np.minimum(val, C.max_bound(self.loss, self.t, x))
        return val

    def _upper_curve(self, r, pmf, remove: bool, x: np.ndarray) -> np.ndarray:
        t = self.t
        n = pmf.mass.size
        idx = pmf.jlo + np.arange(n)
        pos = r["step" if remove else "step_add"] * idx
        m = np.maximum(pmf.mass, 0.0)
        if remove:
            s = r["t_o"] + pos
            with np.errstate(divide="ignore"):
                inv = np.where(s > 0, 1.0 / np.maximum(s, 1e-300), 0.0)
            A = _suffix(m)
            B = _suffix(m * inv)
            k = np.searchsorted(s, x * t, side="right")
            val = A[k] - x * t * B[k]
            rnd = (n + 8) * _U * (A[k] + x * t * B[k])
        else:
            s = np.maximum(r["t_aK"] - pos, 0.0)              # S = t a_K - S_Y
            A = _suffix(m)
            B = _suffix(m * s)
            with np.errstate(divide="ignore"):
                ystar = r["t_aK"] - np.where(x > 0, t / np.maximum(x, 1e-300), np.inf)
            k = np.searchsorted(pos, ystar, side="right")
            val = A[k] - (x / t) * B[k]
            # (S = t a_K - S_Y is known to 4 ulps of t a_K: each weight to x a_K 4 ulps)
            rnd = (n + 8) * _U * (A[k] + (x / t) * B[k]) + 8 * _U * x * (r["t_aK"] / t) * A[k]
        tot = np.maximum(val, 0.0) + rnd + pmf.err[k] + pmf.inf + r["extra"]["remove" if remove
                                                                         else "add"]
        return np.minimum(tot * (1 + 4 * _U), 1.0)

    def lower_pair(self, dx: float, remove: bool):
        """The lower pair as a LossDistribution of atoms (masses lowered by their budget)."""
        from ...pld.loss import LossDistribution
        r = self.compute(dx)
        if remove and "lower" in r:
            r = r["lower"]
        both = r["remove" if remove else "add"]
        t = self.t
        m, lo_idx = _lower_masses(both)
        n = m.size
        idx = lo_idx + np.arange(n)
        keep = m > 0
        m, idx = m[keep], idx[keep]
        if remove:
            s = r["t_o"] + r["step"] * idx
            ok = s > 0
            m, s = m[ok], s[ok]
            loss = np.log(s / t)
            p, q = m, m * (t / s)
        else:
            s = np.maximum(r["t_aK"] - r["step_add"] * idx, 0.0)
            with np.errstate(divide="ignore"):
                loss = np.where(s > 0, np.log(t / np.maximum(s, 1e-300)), np.inf)
            p, q = m, np.where(s > 0, m * s / t, 0.0)
        if remove and r["tail"] is not None:
            # T_1 (.tail): R's lower Q-masses (t-1) m'(s)/s from its lower P-tilted compositions
            ms, lo_r = _lower_masses(r["R"])
            s_r = r["step"] * (lo_r + np.arange(ms.size))
            with np.errstate(divide="ignore", invalid="ignore"):
                q_r = np.where(s_r > 0, (t - 1) * ms / np.maximum(s_r, 1e-300), 0.0)
            pos, qm = T.lower_atoms(s_r, q_r * (1 - 4 * _U), t, r["tail"], 2 * dx / math.sqrt(t))
            loss = np.concatenate([loss, np.log(pos / t)])
            p = np.concatenate([p, qm * pos / t * (1 - 4 * _U)])
            q = np.concatenate([q, qm])
        elif not remove and r["add_atom"] is not None:
            # add on its own grid (.capped): the event "some X_i > t" as one atom
            m1, p1 = r["add_atom"]
            if m1 > 0:
                loss = np.concatenate([loss, [math.log(m1 / p1)]])
                p, q = np.concatenate([p, [m1]]), np.concatenate([q, [p1]])
        elif r["tail"] is not None:
            # add: the event N = 1 merged into one atom (.tail.add_lower_atom), not left out
            # (left out, its mass ~ t pi per epoch would be missing from every composition)
            s1, m1 = T.add_lower_atom(r["tail"], r["callR"], t)
            if m1 > 0:
                loss = np.concatenate([loss, [math.log(t / s1)]])
                p = np.concatenate([p, [m1]])
                q = np.concatenate([q, [m1 * s1 / t * (1 + 4 * _U)]])
        if remove:
            # P0[l = +inf]: the record's step lands where Q0 has no mass (the statistic reports
            # +inf; the other atoms hold the finite part's P-mass, E_Q0[X] = 1 - P0[l = +inf])
            li = self.loss.atom_loss == np.inf
            p_inf = float(np.sum(self.loss.atom_p[li])) * (1 - (int(li.sum()) + 4) * _U)
            if p_inf > 0:
                loss = np.concatenate([loss, [np.inf]])
                p, q = np.concatenate([p, [p_inf]]), np.concatenate([q, [0.0]])
        # the atoms' labels log(s / t) and their Q-masses made consistent (a label lowered a
        # few ulps, its Q-mass raised to match: lower_k.atoms_pair)
        from .lower_k import atoms_pair
        pair = atoms_pair(p, q, f"allocation-lower({t})")
        if pair is not None:
            return pair
        order = np.argsort(loss)
        return LossDistribution(loss[order], p[order], q[order], name=f"allocation-lower({t})")

    # --- sizing -----------------------------------------------------------------------------
    def _log_mgfs(self):
        """(theta, log E_Q0 e^{s (X - o)}, log E_P0 e^{s (X - o)}) on the coarse split at
        s = theta and then s = -theta (computed once: every tail asks the same)."""
        hit = getattr(self, "_mgfs", None)
        if hit is None:
            dx, m, o = self._coarse
            a = o + dx * np.arange(m.size)             # X; the sums are of X - o
            th = np.geomspace(1e-3, 1e3, 90) / max(math.sqrt(self.t * self.var_x), 1e-12)
            both = np.concatenate([th, -th])
            hit = self._mgfs = (th, G.log_mgf(m, dx, both), G.log_mgf(a * m, dx, both))
        return hit

    def tails(self, tail: float, remove: bool):
        """A loss range [lo, hi] outside which the P- and Q-mass is at most about ``tail``
        (Chernoff bounds from the coarse split's moment generating function; sizing only)."""
        dx, m, o = self._coarse
        t = self.t
        th, Km, Kam = self._log_mgfs()
        n = th.size
        Kq, Kqn = t * Km[:n], t * Km[n:]
        Kp, Kpn = Kam[:n] + (t - 1) * Km[:n], Kam[n:] + (t - 1) * Km[n:]
        lt = math.log(max(tail, 1e-300))
        with np.errstate(invalid="ignore", over="ignore"):
            s_hi = float(np.nanmin((np.maximum(Kp, Kq) - lt) / th))
            s_lo = float(np.nanmax((lt - np.maximum(Kpn, Kqn)) / th))
        hi = math.log(max(s_hi + t * o, 1e-300) / t)
        lo = math.log(max(s_lo + t * o, 1e-12 * t) / t)
        if self.span is None:
            # a heavy tail (small sigma) is coarser than the split's cells: S/t exceeds
            # y/t + E X with P-mass about P0[X > y] + (t-1) Q0[X > y]; at most ~tail above y_q
            y_q = math.exp(min(G.truncation_point(self.loss, tail / t), 600.0))
            hi = max(hi, math.log(y_q / t + 1.0))
        return (lo, hi) if remove else (-hi, -lo)


class AllocationSource:
    """A PLD source of one 1-out-of-t epoch for :mod:`dpamp.pld` (remove direction, or add
    when ``remove`` is False; ``swapped`` gives the other)."""

    symmetric = False

    def __init__(self, epoch: _Epoch, remove: bool = True, lower: bool = True):
        self.epoch = epoch
        self.remove = remove
        self.has_lower = lower
        t = epoch.t
        # moments of log(S/t) by the delta method (sizing only), at most the base loss's
        # variance (for a heavy-tailed X the delta method is meaningless: sigma 0.2 gave loss
        # grids with steps beyond e^709)
        v = min(epoch.var_x * t / (t * t), max(epoch.loss.var, 1.0))
        self.var = max(v, 1e-12)
        self.mean = (0.5 if remove else -0.5) * v
        self.inf_mass = 0.0

    def swapped(self):
        return AllocationSource(self.epoch, not self.remove, self.has_lower)

    def quantile_range(self, tail):
        return self.epoch.tails(tail, self.remove)

    def discretize(self, h, jlo, jhi, optimistic: bool = True):
        from ...pld.discretize import Discretized, discretize, discretize_profile
        ep = self.epoch
        ep.check_reach()
        dx = ep.dx_for(h)
        xr = np.exp(h * np.arange(jhi + 1))
        xl = np.exp(h * np.arange(-jlo + 1))
        rows = (ep.upper_curve(dx, self.remove, xr), ep.upper_curve(dx, not self.remove, xl))
        up = discretize_profile(rows, None, 0.0, 0.0, h, jlo, jhi)
        if not (optimistic and self.has_lower):
            return up
        lo = discretize(ep.lower_pair(dx, self.remove), h, jlo, jhi, optimistic=True)
        return Discretized(h, jlo, up.upper, up.upper_inf, lo.lower, lo.lower_inf,
                           lo.lower_slack)
