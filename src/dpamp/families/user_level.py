"""The user-level DP-SGD step's declaration (its description and the pairs that bound it:
:mod:`dpamp.mechanisms.user_level`).

Every representation comes from the step's bracket (upper, lower) of existing mechanisms: the
binomial mixture of Gaussians (Ganesh 2024, Thm 3.1; Schuchardt et al. 2024), or the
Poisson-subsampled / plain Gaussian. PLD: the upper mechanism's pair, pessimistically
discretised, and the lower one's, optimistically (one pair where they are the same mechanism);
profile: the upper rows and the lower mechanism's attained rows; RDP: the class delegates the
same way. No plan word of its own: a plan says ``records_per_user`` on a Gaussian stage
(:mod:`dpamp.io.plan`)."""
from __future__ import annotations

from typing import Any

from ..mechanisms.family import Family, ProfileHooks, Rep, Support, declare, family_of, \
    supports_rep
from ..mechanisms.user_level import UserLevelGaussian



def _loss(u: UserLevelGaussian):
    from ..pld.sources import loss_distribution
    up, low = u.bracket()
    if up is low:
        return loss_distribution(up)
    from ..pld.labelled import Bracketed
    return Bracketed(loss_distribution(up), loss_distribution(low))


def _has(u: UserLevelGaussian, rep: Rep) -> Support:
    up, low = u.bracket()
    a = supports_rep(up, rep)
    return a if not a or up is low else supports_rep(low, rep)


def _pair(u: UserLevelGaussian, eps):
    from ..profiles.core import log_pair
    return log_pair(u.bracket()[0], eps)


def _lower(u: UserLevelGaussian, eps):
    from ..profiles.core import log_pair_lower
    return log_pair_lower(u.bracket()[1], eps)


def _delegate(hook: str):
    """The upper mechanism's own hook where the bracket is one mechanism (the Gaussian and
    Poisson-Gaussian cases: their exact merges and series apply unchanged), else None."""
    def get(u: UserLevelGaussian):
        up, low = u.bracket()
        fam = family_of(up)
        f = None if (up is not low or fam is None) else getattr(fam, hook)
        return None if f is None else f(up)
    return get


def _to_event(u: UserLevelGaussian):
    """dp-accounting's event of the upper mechanism: ``MixtureOfGaussiansDpEvent`` with the
    (outward-rounded) binomial weights, or the (Poisson-sampled) Gaussian event."""
    from dp_accounting import dp_event
    up: Any = u.bracket()[0]
    if u.is_mixture:
        return dp_event.MixtureOfGaussiansDpEvent(up.sigma, list(up.sensitivities),
                                                  list(up.probabilities))
    base = getattr(up, "base", up)
    ev = dp_event.GaussianDpEvent(base.sigma / base.sensitivity)
    return ev if up is base else dp_event.PoissonSampledDpEvent(up.scheme.rate, ev)


def describe(u: UserLevelGaussian) -> str:
    """One line: the unit, the sampler and the clipping (what the bound assumed)."""
    m = u.records_per_user
    if u.sample_rate is None:
        how = "no sampling (every record in every step)"
    else:
        who = "users" if u.user_sampling else "records"
        how = f"Poisson sampling of {who} at rate {u.sample_rate:g}"
    clip = "each user's sum clipped" if u.user_clipping else "per-record clipping"
    return (f"user-level DP-SGD step (add/remove one user of at most {m} record"
            f"{'s' if m != 1 else ''}), noise multiplier {u.noise_multiplier:g}, {how}, {clip}")


declare(UserLevelGaussian, Family(
    "UserLevelGaussian", loss=_loss, has=_has,
    profile=ProfileHooks(pair=_pair, lower=_lower,
                         source="the user-level pair (Ganesh 2024 Thm 3.1; Schuchardt et al. "
                                "2024): a binomial mixture of Gaussians or Balle, Barthe & "
                                "Gaboardi 2018, Thm 8"),
    zcdp=_delegate("zcdp"), gaussian_mu=None, poisson_gaussian=_delegate("poisson_gaussian"),
    to_event=_to_event, describe=describe, own_samplers=lambda: {
        "records, Poisson": UserLevelGaussian(1.0, 4, 0.01),
        "records, Poisson, user clipping": UserLevelGaussian(1.0, 4, 0.01, user_clipping=True),
        "users, Poisson": UserLevelGaussian(1.0, 4, 0.01, user_sampling=True),
        "none": UserLevelGaussian(1.0, 4)}))
