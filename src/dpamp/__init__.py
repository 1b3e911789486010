"""dpamp: differential-privacy accounting with proven upper and lower bounds.

    import dpamp as dp
    step = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60_000))
    (step * 14_062).epsilon(delta=1e-5)

The public API, in the order of the flow describe -> represent -> compose -> query -> present
(docs/architecture.md maps the folders):
"""
# shared vocabulary: guarantees, neighbouring relations, sampling schemes
from .core.guarantee import Guarantee
from .core.relations import ADD_REMOVE, SUBSTITUTION, Relation
from .core.sampling import Poisson, WithoutReplacement, WithReplacement

# describe: mechanisms and their composition
from .mechanisms import (Composition, Gaussian, Laplace, Mechanism, PureDP, RandomizedResponse,
                         RDPCurve, Subsampled, ZCDP, compose)
from .mechanisms.eps_delta import EpsDelta

# represent: privacy profiles and tight amplification by subsampling (paper 000)
from . import profiles
from .profiles import (RandomizedMembership, group_profile, hockey_stick, privacy_profile,
                       profile_pair, profile_pair_lower)

# compose: the (epsilon, delta) composition theorems (paper 004), the RDP accountant (003 Sec. 4)
from .theorems import composition
from .rdp.accountant import Accountant

# amplification by mixing, iteration and diffusion (paper 002)
from .amplification import mixing
from .amplification.mixing import (BrownianKernel, BrownianMotion, DoeblinWarning, GaussianKernel,
                                   LaplaceKernel, MarkovKernel, NoisyProjectedSGD,
                                   OrnsteinUhlenbeck, OrnsteinUhlenbeckKernel,
                                   amplification_by_iteration, amplify_by_mixing,
                                   iteration_path_bound, shift_reduction_rdp)

# amplification by Bernoulli sampling from a private parameter (paper 001):
# dp.bernoulli.lower_bound / upper_bound / exact / hoeffding_lower_bound
from .amplification import bernoulli
from .amplification.bernoulli import BernoulliSampled, BernoulliSampling

# query: methods, comparison, calibration (dp.calibrate.sigma / steps / epochs / rate / sweep)
from .accounting.registry import available as available_methods
from .accounting.compare import compare
from .accounting import calibrate

# present: plans, JSON, other libraries' descriptions
from .io.plan import Plan, PlanError, default_plan, load_plan
from .io.serialize import from_json, to_json
from .io.dp_events import from_dp_event
from .io.opacus import OpacusAccountant

__version__ = "0.1.0"

__all__ = ["Guarantee", "ADD_REMOVE", "SUBSTITUTION", "Relation", "Poisson", "WithoutReplacement",
           "WithReplacement",
           "Composition", "Gaussian", "Laplace", "Mechanism", "PureDP", "RandomizedResponse",
           "RDPCurve", "Subsampled", "ZCDP", "compose", "EpsDelta",
           "profiles", "RandomizedMembership", "group_profile", "hockey_stick",
           "privacy_profile", "profile_pair", "profile_pair_lower",
           "composition", "Accountant",
           "mixing", "MarkovKernel", "GaussianKernel", "LaplaceKernel", "amplify_by_mixing",
           "DoeblinWarning", "shift_reduction_rdp", "amplification_by_iteration",
           "iteration_path_bound", "NoisyProjectedSGD", "BrownianMotion", "OrnsteinUhlenbeck",
           "BrownianKernel", "OrnsteinUhlenbeckKernel",
           "bernoulli", "BernoulliSampling", "BernoulliSampled",
           "available_methods", "compare", "calibrate",
           "Plan", "PlanError", "default_plan", "load_plan", "from_json", "to_json",
           "from_dp_event", "OpacusAccountant"]
