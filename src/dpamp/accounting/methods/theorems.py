"""Registers the (epsilon, delta) composition theorems as accounting methods.

    "basic"     Steinke 2022, Thm 1 (+ approximate-DP extension)            rank 90
    "advanced"  Steinke 2022, Thm 22 (Thm 18 when all parts are pure)       rank 85
    "kov"       optimal homogeneous composition, Steinke 2022, Sec. 7       rank 80

They apply to compositions whose every part has an (eps_j, delta_j) guarantee of its own: a pure
DP mechanism (PureDP, Laplace, RandomizedResponse, anything with a finite pure epsilon:
(pure_epsilon(), 0)) or an :class:`dpamp.EpsDelta`. Gaussian parts have no such guarantee without
choosing a per-part delta, so these methods do not apply to them (use zcdp, rdp or pld).

"kov" needs a homogeneous composition: all parts share one (eps0, delta0) (e.g. ``PureDP(e) * k``,
or a mix of Laplace(1/e) and PureDP(e) runs), k <= ``KOV_MAX_K`` (10^10; beyond, "kov" is out
of reach and "auto" moves on). Its delta is a proven upper bound (a windowed binomial sum with
rounding and tail margins, ``kov_delta``) and its epsilon the upper end of a bracketing search
on that bound (``kov_epsilon``). Optimal composition of heterogeneous guarantees is
#P-complete (Murtagh-Vadhan, Steinke 2022, Sec. 7); it is approximated with certified bounds by the
PLD of the worst-case mechanisms (method "pld" on EpsDelta parts), not here.
"""
from __future__ import annotations

import math

from ...theorems import composition as C
from ...core.errors import OutOfReach
from ...core.guarantee import Guarantee
from ..registry import Method, register


def eps_delta_of(mechanism) -> tuple[float, float] | None:
    """The (epsilon, delta) guarantee of a single (non-composed) mechanism, or None."""
    from ...mechanisms.family import family_of
    fam = family_of(mechanism)
    if fam is not None and fam.eps_delta is not None:
        return fam.eps_delta(mechanism)
    try:
        pure = float(mechanism.pure_epsilon())
    except (NotImplementedError, ValueError):
        return None
    return (pure, 0.0) if math.isfinite(pure) else None


def parts_table(mechanism):
    """[(eps_j, delta_j, count_j)] for every part, or None when some part has no guarantee."""
    rows = []
    for part, count in mechanism.parts():
        ed = eps_delta_of(part)
        if ed is None:
            return None
        rows.append((ed[0], ed[1], count))
    return rows


def _arrays(mechanism):
    rows = parts_table(mechanism)
    if rows is None:
        raise ValueError(f"every part of {mechanism!r} needs a pure or (epsilon, delta) "
                         "guarantee for the composition theorems")
    e, d, c = zip(*rows)
    return list(e), list(d), list(c)


def _applies(mechanism) -> bool:
    rows = parts_table(mechanism)
    return rows is not None and len(rows) > 0


def _homogeneous(mechanism):
    """(eps0, delta0, k) when all parts share one guarantee, else None."""
    rows = parts_table(mechanism)
    if not rows:
        return None
    keys = {(e, d) for e, d, c in rows if c > 0}
    if len(keys) != 1:
        return None
    (e, d), = keys
    return e, d, int(sum(c for _, _, c in rows))


# --- basic -------------------------------------------------------------------------------------

_BASIC = "Steinke 2022, Thm 1 (basic composition; approximate-DP extension of Sec. 2)"


def _basic_eps(mechanism, delta, **_):
    e, d, c = _arrays(mechanism)
    eps, spent = C.basic(e, d, c)
    if delta < spent:
        raise ValueError(f"delta must be >= sum of the parts' deltas = {spent:g} for basic "
                         f"composition (got {delta:g})")
    return Guarantee(eps, delta, None, "basic", _BASIC, "epsilon")


def _basic_delta(mechanism, epsilon, **_):
    e, d, c = _arrays(mechanism)
    eps, spent = C.basic(e, d, c)
    return Guarantee(epsilon, spent if epsilon >= eps else 1.0, None, "basic", _BASIC, "delta")


# --- advanced ----------------------------------------------------------------------------------

_ADV = "Steinke 2022, Thm 22 (advanced adaptive composition, min with basic; Thm 18 for pure parts)"


def _adv_eps(mechanism, delta, **_):
    e, d, c = _arrays(mechanism)
    basic_eps, spent = C.basic(e, d, c)
    try:
        eps = C.advanced(e, d, delta, c)
    except ValueError:  # delta' = delta - sum delta_j <= 0: only basic composition can help
        if delta >= spent:
            return Guarantee(basic_eps, delta, None, "advanced", _BASIC, "epsilon")
        raise
    return Guarantee(eps, delta, None, "advanced", _ADV, "epsilon")


def _adv_delta(mechanism, epsilon, **_):
    e, d, c = _arrays(mechanism)
    return Guarantee(epsilon, C.advanced_delta(e, d, epsilon, c), None, "advanced", _ADV,
                     "delta")


# --- kov -----------------------------------------------------------------------------------------

_KOV = ("Steinke 2022, Sec. 7 (optimal homogeneous composition, KOV15): binomial sum over a "
        "window, rounding and tail margins; epsilon: upper end of a bracketing search")


def _kov_applies(mechanism) -> bool:
    return _homogeneous(mechanism) is not None


def _kov_args(mechanism):
    """(eps0, delta0, k); k above the sum's limit is out of reach ("auto" moves on)."""
    h = _homogeneous(mechanism)
    if h is None:
        raise ValueError("kov needs a homogeneous composition (all parts with one (eps, delta)); "
                         "heterogeneous optimal composition is #P-hard: use method='pld'")
    if h[2] > C.KOV_MAX_K:
        raise OutOfReach(f"kov sums a window of about 37 sqrt(k) binomial terms and stops at "
                         f"k = {C.KOV_MAX_K} (got k = {h[2]}); use method='advanced' or 'pld'")
    return h


def _kov_eps(mechanism, delta, **_):
    e0, d0, k = _kov_args(mechanism)
    return Guarantee(C.kov_epsilon(e0, d0, k, delta), delta, None, "kov", _KOV, "epsilon")


def _kov_delta(mechanism, epsilon, **_):
    e0, d0, k = _kov_args(mechanism)
    return Guarantee(epsilon, C.kov_delta(e0, d0, k, epsilon), None, "kov", _KOV, "delta")


register(Method("kov", _kov_eps, _kov_delta, _kov_applies, rank=80))
register(Method("advanced", _adv_eps, _adv_delta, _applies, rank=85))
register(Method("basic", _basic_eps, _basic_delta, _applies, rank=90))
