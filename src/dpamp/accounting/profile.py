"""The privacy profile of any mechanism: the closed-form or amplified profile of one mechanism
(:mod:`dpamp.profiles`), else, for a composition, the PLD engine's (Steinke 2022, Prop. 7). This is
where ``m.profile(eps)`` and ``dp.privacy_profile`` lead; the profile layer itself never
calls the PLD engine (the two sit side by side, the PLD engine may use profiles)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..mechanisms.family import Rep, family_of, supports_rep
from ..profiles import core

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..mechanisms.base import Mechanism


def privacy_profile(mechanism: Mechanism, epsilon: ArrayLike) -> float | np.ndarray:
    """delta_M(eps), a proven upper bound, vectorised over epsilon >= 0 (a float for a scalar):
    :func:`dpamp.profiles.core.privacy_profile` where the mechanism (a composition of one part
    used once is that part) has a profile, else :func:`dpamp.pld.pld_profile`."""
    m = core.single(mechanism)
    if family_of(m) is None or supports_rep(m, Rep.PROFILE):
        try:
            return core.privacy_profile(m, epsilon)
        except NotImplementedError:
            if family_of(m) is not None:
                raise
    core.eps_array(epsilon)        # the same validation as the profile layer's
    from ..pld import pld_profile
    return pld_profile(mechanism, epsilon)
