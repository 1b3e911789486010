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
# paper 001: amplification by Bernoulli sampling from a private parameter
# (dp.bernoulli.lower_bound / upper_bound / exact / hoeffding_lower_bound, dp.BernoulliSampling)
from . import bernoulli  # noqa: E402
from .bernoulli import BernoulliSampled, BernoulliSampling  # noqa: E402
__all__ += ["bernoulli", "BernoulliSampling", "BernoulliSampled"]
