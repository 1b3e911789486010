"""dpamp: differential-privacy accounting with proven upper and lower bounds.

    import dpamp as dp
    step = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60_000))
    (step * 14_062).epsilon(delta=1e-5)
"""
from .guarantee import Guarantee
from .mechanisms import (Composition, Gaussian, Laplace, Mechanism, PureDP, RandomizedResponse,
                         RDPCurve, Subsampled, ZCDP, compose)
from .methods import available as available_methods
from .rdp.accountant import Accountant
from .relations import ADD_REMOVE, SUBSTITUTION, Relation
from .sampling import Poisson, WithoutReplacement, WithReplacement

__version__ = "0.1.0"

__all__ = ["Guarantee", "Composition", "Gaussian", "Laplace", "Mechanism", "PureDP",
           "RandomizedResponse", "RDPCurve", "Subsampled", "ZCDP", "compose", "Accountant",
           "ADD_REMOVE", "SUBSTITUTION", "Relation", "Poisson", "WithoutReplacement",
           "WithReplacement", "available_methods"]
# paper 004 composition theorems (dp.composition.kov_epsilon, ...), dp.compare, dp.EpsDelta
from . import composition  # noqa: E402
from .compare import compare  # noqa: E402
from .mechanisms.eps_delta import EpsDelta  # noqa: E402
__all__ += ["composition", "compare", "EpsDelta"]
# --- paper 002: amplification by mixing, iteration and diffusion (dpamp.mixing) ---------------
from . import mixing  # noqa: E402
from .mixing import (BrownianKernel, BrownianMotion, DoeblinWarning, GaussianKernel,  # noqa: E402
                     LaplaceKernel, MarkovKernel, NoisyProjectedSGD, OrnsteinUhlenbeck,
                     OrnsteinUhlenbeckKernel, amplification_by_iteration, amplify_by_mixing,
                     iteration_path_bound, shift_reduction_rdp)
__all__ += ["mixing", "MarkovKernel", "GaussianKernel", "LaplaceKernel", "amplify_by_mixing",
            "DoeblinWarning", "shift_reduction_rdp", "amplification_by_iteration",
            "iteration_path_bound", "NoisyProjectedSGD", "BrownianMotion", "OrnsteinUhlenbeck",
            "BrownianKernel", "OrnsteinUhlenbeckKernel"]
# --- issue 8: calibration, plans in a file, reports, JSON, interoperability (usability) --------
from . import calibrate  # noqa: E402  dp.calibrate.sigma / steps / epochs / rate / sweep
from .integrations import OpacusAccountant, from_dp_event  # noqa: E402
from .plan import Plan, PlanError, default_plan, load_plan  # noqa: E402
from .serialize import from_json, to_json  # noqa: E402
__all__ += ["calibrate", "from_dp_event", "OpacusAccountant", "Plan", "PlanError",
            "default_plan", "load_plan", "from_json", "to_json"]
# --- privacy profiles (paper 000): dp.profiles, dp.hockey_stick, dp.RandomizedMembership --------
from . import profiles  # noqa: E402
from .profiles import (RandomizedMembership, group_profile, hockey_stick,  # noqa: E402
                       privacy_profile, profile_pair, profile_pair_lower)
__all__ += ["profiles", "RandomizedMembership", "group_profile", "hockey_stick",
            "privacy_profile", "profile_pair", "profile_pair_lower"]
# paper 001: amplification by Bernoulli sampling from a private parameter
# (dp.bernoulli.lower_bound / upper_bound / exact / hoeffding_lower_bound, dp.BernoulliSampling)
from . import bernoulli  # noqa: E402
from .bernoulli import BernoulliSampled, BernoulliSampling  # noqa: E402
__all__ += ["bernoulli", "BernoulliSampling", "BernoulliSampled"]
