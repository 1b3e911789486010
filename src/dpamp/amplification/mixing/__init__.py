"""Privacy amplification by mixing, iteration and diffusion (Balle et al. 2019).

| module        | what                                                                  | Balle et al. 2019        |
|---------------|-----------------------------------------------------------------------|------------|
| ``kernels``   | MarkovKernel, GaussianKernel, LaplaceKernel; mixing coefficients       | Def. 1     |
| ``uniform``   | amplify_by_mixing, amplified_profile                                  | Thm 1      |
| ``post_processed`` | PostProcessed (K o M): profile by Thm 1, RDP by Thm 2       | Thm 1, 2   |
| ``coupling``  | shift_reduction_rdp (Gaussian / Laplace mechanism + kernel)           | Thm 2, Ex. 1-3 |
| ``iteration`` | amplification_by_iteration (paper's bound (3), optimal path of (2))   | Thm 4      |
| ``noisy_sgd`` | NoisyProjectedSGD (last iterate, per-index RDP)                       | Alg. 1, Thm 5 |
| ``diffusion`` | BrownianMotion, OrnsteinUhlenbeck and their semigroup kernels         | Sec. 5, Cor. 7, Thm 8 |
"""
from .coupling import shift_reduction_rdp
from .diffusion import BrownianKernel, BrownianMotion, OrnsteinUhlenbeck, OrnsteinUhlenbeckKernel
from .iteration import amplification_by_iteration, iteration_path_bound
from .kernels import GaussianKernel, LaplaceKernel, MarkovKernel, MixingKernel, hockey_stick
from .noisy_sgd import NoisyProjectedSGD
from .post_processed import PostProcessed
from .uniform import (DoeblinWarning, amplified_profile, amplify_by_mixing, dobrushin_epsilon,
                      doeblin_threshold)

__all__ = ["MarkovKernel", "GaussianKernel", "LaplaceKernel", "MixingKernel", "hockey_stick",
           "amplify_by_mixing", "amplified_profile", "dobrushin_epsilon", "doeblin_threshold",
           "DoeblinWarning", "PostProcessed", "shift_reduction_rdp", "amplification_by_iteration",
           "iteration_path_bound", "NoisyProjectedSGD", "BrownianMotion", "OrnsteinUhlenbeck",
           "BrownianKernel", "OrnsteinUhlenbeckKernel"]
