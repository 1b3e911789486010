"""Privacy profiles and hockey-stick divergences; tight amplification by subsampling (Balle et al.
2018).

    import dpamp as dp
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01))
    m.profile([0.5, 1.0])                   # delta_M(eps), proven upper bound
    dp.profiles.profile_pair(m, 1.0)        # both orders: H(P||Q), H(Q||P) of the dominating pair
    dp.profiles.profile_pair_lower(m, 1.0)  # one actual pair, rounded down (or None)

See docs/profiles.md for the table of sampling scheme x relation -> theorem -> tight.
"""
from .core import (PrivacyProfile, epsilon_for_delta, has_profile, privacy_profile,
                   privacy_profile_lower, profile_pair, profile_pair_lower, register)
from .amplification import advanced_joint_convexity, ajc_parameters, member_gamma, wr_gamma
from .closed_forms import gaussian_log_profile, laplace_log_profile, rr_log_profile  # noqa: E402
from .divergence import hockey_stick, hockey_stick_density, profile_from_privacy_loss
from .group import group_profile, group_profile_blackbox  # noqa: E402
from .membership import RandomizedMembership, membership_profile, phi  # noqa: E402
from .rdp_bridge import log_mgf_from_profile, profile_rdp, rdp_from_profile  # noqa: E402

__all__ = ["PrivacyProfile", "privacy_profile", "privacy_profile_lower", "profile_pair",
           "profile_pair_lower", "epsilon_for_delta", "has_profile", "register", "advanced_joint_convexity",
           "ajc_parameters", "member_gamma", "wr_gamma", "gaussian_log_profile",
           "laplace_log_profile", "rr_log_profile", "hockey_stick", "hockey_stick_density",
           "profile_from_privacy_loss", "group_profile", "group_profile_blackbox",
           "RandomizedMembership", "membership_profile", "phi", "log_mgf_from_profile",
           "profile_rdp", "rdp_from_profile"]
