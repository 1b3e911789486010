"""The S-domain sums of an allocation epoch (:mod:`.pld`): the PLD engine's tilted and
untilted compositions of the one-step grids, per-bin lower masses, suffix sums, and the
sizing moments of X. The bounds and their proofs are in :mod:`.pld` and :mod:`.grid`; this
module only runs the engine (:func:`dpamp.pld.engine.compose`, whose per-bin floating-point
budget every caller adds)."""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ...pld.state import BOTH

if TYPE_CHECKING:
    from ...pld.engine import Composed

#: delta the tilt of the S-domain FFT is aimed at (any tilt is sound; this one keeps the budget
#: small for deltas between about 1e-3 and 1e-12)
DELTA_REF = 1e-8
_U = 2.0 ** -53
#: what an epoch holds per bin of its S-domain windows (core.memory's budget): about 8 arrays
#: of doubles per composition, up to 12 compositions per grid step (remove tilted and flat,
#: the tail's R, add, the fine lower grid; each upper and lower), EPOCH_KEEP steps remembered
BYTES_PER_BIN = 8 * 8 * 12
EPOCH_KEEP = 3


def held(epoch, result: dict, cache) -> dict:
    """``result``, recorded as held by ``epoch`` (EPOCH_KEEP such results in its ``cache``)
    against the process's memory budget."""
    from ...core.memory import hold, nbytes
    hold(epoch, EPOCH_KEEP * nbytes(result), cache.clear)
    return result


def max_bins() -> int:
    """The largest S-domain window the memory budget allows (MemoryError beyond it: the epoch
    then takes a coarser step, as sound and wider)."""
    from ...core.memory import memory_limit
    return max(1 << 12, memory_limit() // (BYTES_PER_BIN * EPOCH_KEEP))


def _var_x(loss, a_cut: float) -> float:
    """Var_Q0(X) = E_P0[X] - E_Q0[X]^2 for X <= a_cut (sizing only): a fine quadrature of the
    loss's cdf on a log grid, plus its atoms."""
    lo, _ = loss.quantile_range(1e-14)
    hi = math.log(a_cut)
    e_px, e_qx = 0.0, 0.0
    if loss.cdf is not None and hi > lo:
        lk = np.linspace(lo, hi, 20001)
        cp, cq = loss.cdf(lk)
        mid = np.exp(0.5 * (lk[1:] + lk[:-1]))
        e_px += float(np.sum(np.diff(cp) * mid))
        e_qx += float(np.sum(np.diff(cp)))
    fin = np.isfinite(loss.atom_loss) & (loss.atom_loss <= hi)
    e_px += float(np.sum(loss.atom_p[fin] * np.exp(loss.atom_loss[fin])))
    e_qx += float(np.sum(loss.atom_p[fin]))
    return max(e_px - e_qx ** 2, 1e-12)


@dataclasses.dataclass(slots=True, frozen=True)
class TwoTilts:
    """One composition twice (:func:`_compose`): tilted towards DELTA_REF's tail, and untilted
    (``flat``)."""
    tilted: Composed
    flat: Composed


def _lower_masses(both: TwoTilts):
    """Per bin the larger of the tilted and the untilted lower composition's masses, each
    lowered by its per-bin budget (dpamp.pld.engine; not the suffix one: the masses go one by
    one), and the index of the first bin."""
    pmf, flat = both.tilted.lower, both.flat.lower
    assert pmf is not None and flat is not None     # both lower compositions asked for
    lo_idx = min(pmf.jlo, flat.jlo)
    hi_idx = max(pmf.jlo + pmf.mass.size, flat.jlo + flat.mass.size)
    m = np.zeros(hi_idx - lo_idx)
    for g in (pmf, flat):
        k = g.jlo - lo_idx
        assert g.bin_err is not None                # compose sets it on every PMF it returns
        seg = np.maximum(g.mass - g.bin_err, 0.0)
        m[k:k + seg.size] = np.maximum(m[k:k + seg.size], seg)
    return m * (1 - 4 * _U), lo_idx


def _suffix(x: np.ndarray) -> np.ndarray:
    return np.concatenate([np.cumsum(x[::-1])[::-1], [0.0]])


def composed_moments(parts, dx: float):
    """(mean, sd) of the composition of grid parts (upper masses at dx * index; sizing only)."""
    mean = var = 0.0
    for p in parts:
        m = p.d.upper
        z = dx * np.arange(m.size)
        tot = max(float(np.sum(m)), 1e-300)
        m1 = float(np.sum(m * z)) / tot
        mean += p.count * m1
        var += p.count * float(np.sum(m * (z - m1) ** 2)) / tot
    return mean, math.sqrt(max(var, 1e-300))


def _compose(parts, dx, center, bounds=BOTH) -> TwoTilts:
    """The composition (``bounds``: upper, lower or both), tilted at half the Chernoff saddle
    for DELTA_REF, and untilted."""
    from ...pld.engine import compose, grid_log_mgf
    mean, sd = composed_moments(parts, dx)
    th = np.geomspace(1e-2, 1e2, 120) * math.sqrt(2 * math.log(1 / DELTA_REF)) / sd
    Kt = np.zeros(th.size)
    for p in parts:
        Kt += p.count * grid_log_mgf(p.d.upper, 0.0, dx, th)
    s_star = (Kt - math.log(DELTA_REF)) / th
    i = int(np.nanargmin(s_star))
    # (at most 20 over the standard deviation, as the engine's own tilt cap: beyond it the
    # values that matter are tiny next to the tilted peak, e.g. when the support ends first)
    # and at most 25 over the distance from x = 1 (``center``, where S = t) to the target, so
    # that the budget stays small on the whole half-line x >= 1 whose values are used
    lam = min(0.5 * float(th[i]), 20.0 / sd, 25.0 / max(float(s_star[i]) - center, sd))
    target = (max(float(s_star[i]), mean), math.log(DELTA_REF))
    tilted = compose(parts, dx, lam, bounds=bounds, target=target, max_n=max_bins())
    # the tilted FFT is accurate near the tail it aims at and loose far left of it (its budget
    # grows like e^{-lam s}); an untilted one is accurate in the bulk. Both are bounds: the
    # curves take the smaller upper value and the atoms the larger lower mass, bin by bin.
    # (Its window is sized for DELTA_REF: the lower masses are charged, bin by bin, all
    # the mass that may wrap around, e^-20 per bin at the engine's default, ~1e-4 over 1e5 bins)
    flat = compose(parts, dx, 0.0, bounds=bounds, target=(mean, math.log(DELTA_REF)),
                   max_n=max_bins())
    return TwoTilts(tilted, flat)
