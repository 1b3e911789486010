"""dpamp: differential-privacy accounting with proven upper and lower bounds.

    import dpamp as dp
    step = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60_000))
    (step * 14_062).epsilon(delta=1e-5)

The public API, in the order of the flow describe -> represent -> compose -> query -> present
(docs/architecture.md maps the folders). ``import dpamp`` loads the vocabulary and the
common mechanisms (Gaussian, Laplace, randomized response, pure, zCDP and (eps, delta)
guarantees, subsampling, composition) only; everything else (the other families, the engines,
scipy) is imported on first use (PEP 562).
"""
from __future__ import annotations

import importlib

# shared vocabulary: guarantees, neighbouring relations, sampling schemes
from .core.guarantee import Guarantee
from .core.relations import ADD_REMOVE, SUBSTITUTION, Relation
from .core.sampling import (Poisson, RandomAllocation, Shuffled, TruncatedPoisson,
                            WithoutReplacement, WithReplacement)

# describe: mechanisms and their composition
from .mechanisms import (Allocated, Composition, Gaussian, Laplace, Mechanism, PureDP,
                         RandomizedResponse, RDPCurve, Subsampled, ZCDP, compose)
from .mechanisms.eps_delta import EpsDelta

__version__ = "0.1.0"

#: name -> (module, attribute; None for the module itself), imported on first access
_LAZY = {
    # describe: the other mechanism families, each loaded when first named (defining their
    # frozen dataclasses made ``import dpamp`` 1.7 x ``import numpy``; every family is
    # declared on the first lookup of any, dpamp.families, so nothing depends on the order)
    "DiscreteLaplace": ("dpamp.mechanisms.discrete_laplace", "DiscreteLaplace"),
    "KaryRandomizedResponse": ("dpamp.mechanisms.kary_randomized_response",
                               "KaryRandomizedResponse"),
    "UserLevelGaussian": ("dpamp.mechanisms.user_level", "UserLevelGaussian"),
    **{n: ("dpamp.mechanisms.selection", n) for n in ("ExponentialMechanism", "PermuteAndFlip",
                                                      "ReportNoisyMax")},
    "TreeAggregation": ("dpamp.mechanisms.tree_aggregation", "TreeAggregation"),
    "RepeatAndSelect": ("dpamp.mechanisms.repeat_select", "RepeatAndSelect"),
    "DiscreteGaussian": ("dpamp.mechanisms.discrete_gaussian", "DiscreteGaussian"),
    "Skellam": ("dpamp.mechanisms.skellam", "Skellam"),
    "MixtureOfGaussians": ("dpamp.mechanisms.mixture_of_gaussians", "MixtureOfGaussians"),
    "MatrixMechanism": ("dpamp.mechanisms.matrix", "MatrixMechanism"),
    **{n: ("dpamp.mechanisms.matrix_strategies", n) for n in ("BLT", "BandedToeplitz",
                                                              "BinaryTree", "DenseStrategy",
                                                              "Toeplitz")},
    **{n: ("dpamp.mechanisms.participation", n) for n in ("BallsInBins", "CyclicPoisson",
                                                          "FixedBins", "MinSepSampling",
                                                          "MinSeparation", "SingleEpoch")},
    # represent: privacy profiles and tight amplification by subsampling (Balle et al. 2018)
    "profiles": ("dpamp.profiles", None),
    **{n: ("dpamp.profiles", n) for n in ("RandomizedMembership", "group_profile",
                                          "hockey_stick", "profile_pair",
                                          "profile_pair_lower")},
    "privacy_profile": ("dpamp.accounting.profile", "privacy_profile"),
    # compose: the (epsilon, delta) composition theorems (Steinke 2022), the RDP accountant (Wang et
    # al. 2019, Sec. 4)
    "composition": ("dpamp.theorems.composition", None),
    "Accountant": ("dpamp.rdp.accountant", "Accountant"),
    # amplification by mixing, iteration and diffusion (Balle et al. 2019)
    "mixing": ("dpamp.amplification.mixing", None),
    **{n: ("dpamp.amplification.mixing", n) for n in (
        "BrownianKernel", "BrownianMotion", "DoeblinWarning", "GaussianKernel", "LaplaceKernel",
        "MarkovKernel", "NoisyProjectedSGD", "OrnsteinUhlenbeck", "OrnsteinUhlenbeckKernel",
        "amplification_by_iteration", "amplify_by_mixing", "iteration_path_bound",
        "shift_reduction_rdp")},
    # amplification by Bernoulli sampling from a private parameter (Imola & Chaudhuri 2021):
    # dp.bernoulli.lower_bound / upper_bound / exact / hoeffding_lower_bound
    "bernoulli": ("dpamp.amplification.bernoulli", None),
    "BernoulliSampled": ("dpamp.amplification.bernoulli", "BernoulliSampled"),
    "BernoulliSampling": ("dpamp.amplification.bernoulli", "BernoulliSampling"),
    # query: methods, comparison, calibration (dp.calibrate.sigma / steps / ...), sweeps
    "available_methods": ("dpamp.accounting.registry", "available"),
    "supports": ("dpamp.accounting.registry", "supports"),
    "capabilities": ("dpamp.accounting.capabilities", "capabilities"),
    "compare": ("dpamp.accounting.compare", "compare"),
    "calibrate": ("dpamp.accounting.calibrate", None),
    "sweep": ("dpamp.io.sweep", "sweep"),
    # adaptive budgets: privacy filters and odometers under full adaptivity (docs/filters.md)
    **{n: ("dpamp.accounting.filters", n) for n in ("Filter", "Odometer", "IndividualFilter",
                                                     "BudgetExhausted")},
    # present: plans, JSON, other libraries' descriptions
    **{n: ("dpamp.io.plan", n) for n in ("Plan", "PlanError", "default_plan", "load_plan")},
    "from_json": ("dpamp.io.serialize", "from_json"),
    "to_json": ("dpamp.io.serialize", "to_json"),
    "from_dp_event": ("dpamp.io.dp_events", "from_dp_event"),
    "to_dp_event": ("dpamp.io.dp_events", "to_dp_event"),
    "OpacusAccountant": ("dpamp.io.opacus", "OpacusAccountant"),
    # DP-SGD in one call, in its own words (noise multiplier, batch size, dataset size, epochs)
    "dpsgd": ("dpamp.io.dpsgd", "dpsgd"),
}

__all__ = ["Guarantee", "ADD_REMOVE", "SUBSTITUTION", "Relation", "Poisson", "WithoutReplacement",
           "WithReplacement", "RandomAllocation", "Shuffled", "TruncatedPoisson", "Allocated",
           "Composition", "Gaussian", "Laplace", "Mechanism", "PureDP", "RandomizedResponse",
           "RDPCurve", "Subsampled", "ZCDP", "compose", "EpsDelta", *_LAZY]


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'dpamp' has no attribute {name!r}") from None
    mod = importlib.import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value          # later accesses are plain attribute lookups
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def _load_all() -> None:
    """Import every lazily offered module (what defines every mechanism family: JSON decoding
    needs them all)."""
    for module, _ in set(_LAZY.values()):
        importlib.import_module(module)
