"""Registers the "profile" accounting method: exact privacy profiles of single mechanisms (Balle et
al. 2018).

epsilon(delta): the smallest eps with delta_M(eps) <= delta, by bisection on the (monotone)
upper-bound profile, reporting the bracket end that satisfies the condition; the lower bound is
the bracket end of the lower profile on the other side. delta(epsilon): the profile itself.
Applies to one mechanism (not a composition of several, nor repeated) that has a profile; rank
10: for a single mechanism the exact profile beats every other method.
"""
from __future__ import annotations

from ...core.guarantee import Guarantee
from ...mechanisms.family import Rep, Support, family_of, supports_rep
from ..registry import Method, register
from ...profiles import core


def _source(mechanism) -> str:
    """The theorem behind the profile, as the family (and, subsampled, the scheme) declares."""
    from ...mechanisms.family import amplification_of, family_of
    m = core.single(mechanism)
    base, scheme = getattr(m, "base", None), getattr(m, "scheme", None)
    rule = None if scheme is None else amplification_of(scheme)
    if rule is None or not hasattr(rule, "profile_source"):
        fam = family_of(m)
        hooks = None if fam is None else fam.profile
        return ("Balle, Barthe & Gaboardi 2018, Sec. 2 (privacy profile)" if hooks is None
                else hooks.source)
    thm = ("Balle, Barthe & Gaboardi 2018, Lemma 12 (exact)" if core.is_binary(base)
           else rule.profile_source(m))
    return (f"{thm} on {_source(base)}; lower: Balle, Barthe & Gaboardi 2018, Lemma 12 membership "
            "pair")


def _applies(mechanism) -> bool:
    return bool(_supports(mechanism))


def _supports(mechanism) -> Support:
    """One mechanism (not a composition of several, nor repeated) whose family declares a
    privacy profile."""
    parts = mechanism.parts()
    if len(parts) != 1 or parts[0][1] != 1:
        return Support.no("profile: applies to one mechanism run once (a composition has no "
                          "closed-form profile; use pld)")
    part = parts[0][0]
    if family_of(part) is None:      # not declared yet: whether its profile builds
        return Support.yes() if core.has_profile(part) else Support.no(
            f"profile: {type(part).__name__} has no privacy profile")
    s = supports_rep(part, Rep.PROFILE)
    return s if s else Support.no(f"profile: {s.why}")


def _epsilon(mechanism, delta, **_):
    up, low = core.epsilon_for_delta(mechanism, delta)
    return Guarantee(up, delta, low, "profile", _source(mechanism), "epsilon")


def _delta(mechanism, epsilon, **_):
    m = core.single(mechanism)
    d = float(core.privacy_profile(m, epsilon))
    low = core.privacy_profile_lower(m, epsilon)
    low = None if low is None else float(min(low, d))
    return Guarantee(epsilon, d, low, "profile", _source(mechanism), "delta")


register(Method("profile", _epsilon, _delta, _applies, rank=10, supports=_supports))
