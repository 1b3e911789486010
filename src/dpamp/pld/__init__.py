"""Discretised privacy-loss distributions (Steinke 2022, Sec. 3-4): certified tight (epsilon,
delta).

    x.epsilon(delta, method="pld", tol=...)   # Guarantee: epsilon = upper, lower = lower bound
    dpamp.pld.epsilon_bracket(x, delta, tol)  # the same as a Bracket
    dpamp.pld.pld_profile(x, eps_array)       # privacy profile of any composition (upper bound)
"""
from .loss import LossDistribution
from .profile import pld_profile, pld_profile_bounds
from .query import Bracket, delta_bracket, epsilon_bracket
from .sources import has_pld, loss_distribution

__all__ = ["LossDistribution", "Bracket", "delta_bracket", "epsilon_bracket", "pld_profile",
           "pld_profile_bounds", "has_pld", "loss_distribution"]
