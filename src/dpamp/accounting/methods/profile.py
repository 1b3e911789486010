"""Registers the "profile" accounting method: exact privacy profiles of single mechanisms (000).

epsilon(delta): the smallest eps with delta_M(eps) <= delta, by bisection on the (monotone)
upper-bound profile, reporting the bracket end that satisfies the condition; the lower bound is
the bracket end of the lower profile on the other side. delta(epsilon): the profile itself.
Applies to one mechanism (not a composition of several, nor repeated) that has a profile; rank
10: for a single mechanism the exact profile beats every other method.
"""
from __future__ import annotations

from ...core.guarantee import Guarantee
from ..registry import Method, register
from ...profiles import core


def _source(mechanism) -> str:
    from ...mechanisms.subsampled import Subsampled
    from ...core.relations import ADD_REMOVE
    from ...core.sampling import Poisson, WithoutReplacement, WithReplacement
    m = core.single(mechanism)
    names = {"Gaussian": "000 Thm 4", "Laplace": "000 Thm 3",
             "RandomizedResponse": "000 Sec. 5 (phi_p)", "RandomizedMembership": "000 Sec. 5",
             "PureDP": "randomized-response profile (004 Sec. 5)",
             "EpsDelta": "004 Cor. 24 worst-case pair"}
    if not isinstance(m, Subsampled):
        return names.get(type(m).__name__, "000 Sec. 2") + " (privacy profile)"
    s = m.scheme
    if core.is_binary(m.base):
        thm = "000 Lemma 12 (exact)"
    elif isinstance(s, Poisson):
        thm = "000 Thm 8 (Thm 2, both orders)" if s.relation is ADD_REMOVE else \
            "000 Thm 14 (tighter proof form)"
    elif isinstance(s, WithoutReplacement):
        thm = "000 Thm 9"
    elif isinstance(s, WithReplacement):
        thm = "000 Thm 11" if s.gives is ADD_REMOVE else "000 Thm 10"
    else:
        thm = "000"
    return f"{thm} on {_source(m.base)}; lower: 000 Lemma 12 membership pair"


def _applies(mechanism) -> bool:
    parts = mechanism.parts()
    if len(parts) != 1 or parts[0][1] != 1:
        return False
    return core.has_profile(parts[0][0])


def _epsilon(mechanism, delta, **_):
    up, low = core.epsilon_for_delta(mechanism, delta)
    return Guarantee(up, delta, low, "profile", _source(mechanism), "epsilon")


def _delta(mechanism, epsilon, **_):
    m = core.single(mechanism)
    d = float(core.privacy_profile(m, epsilon))
    low = core.privacy_profile_lower(m, epsilon)
    low = None if low is None else float(min(low, d))
    return Guarantee(epsilon, d, low, "profile", _source(mechanism), "delta")


register(Method("profile", _epsilon, _delta, _applies, rank=10,
                summary="exact privacy profile of one mechanism (000 Thms 3-4, 8-14)"))
