"""Mechanism families (one file each) and the transformations applied to them."""
from .base import Mechanism
from .composition import Composition, compose
from .gaussian import Gaussian
from .generic import ZCDP, RDPCurve
from .laplace import Laplace
from .randomized_response import PureDP, RandomizedResponse
from .subsampled import Subsampled

__all__ = ["Mechanism", "Composition", "compose", "Gaussian", "ZCDP", "RDPCurve", "Laplace",
           "PureDP", "RandomizedResponse", "Subsampled"]
from .eps_delta import EpsDelta  # noqa: E402, F401  worst-case (eps, delta) mechanism (Steinke 2022, Cor. 24)
__all__.append("EpsDelta")
from .allocated import Allocated  # noqa: E402, F401  one epoch of random allocation / shuffling
__all__.append("Allocated")
