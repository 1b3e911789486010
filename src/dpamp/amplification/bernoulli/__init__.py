"""Amplification by Bernoulli sampling from a private parameter (Imola & Chaudhuri 2021, Imola &
Chaudhuri).

A mechanism A releases theta in [c, 1-c]^d with Rényi-DP epsilon at order alpha; instead of theta
one releases k independent samples v_1..v_k of Bern(theta) (each v_i in {0,1}^d). The best RDP
guarantee of the samples that holds for *every* such A is

    Post_{alpha,k}(epsilon) = sup_{P,Q on {c,1-c}^d, R_a(P,Q), R_a(Q,P) <= epsilon}
                              R_a(Bern_k(P), Bern_k(Q))                     (Imola & Chaudhuri 2021,
                              Thms 1, 3)

and this package brackets it:

* ``upper_bound``: min(epsilon, d k r_alpha(c)), post-processing and Imola & Chaudhuri 2021, Thm 5
(eqs. 2, 6);
* ``lower_bound``: the two-point pair of eqs. 3-4 with r_alpha(p) = epsilon, evaluated in O(dk)
  by Imola & Chaudhuri 2021, Thm 4 (eqs. 5, 7); the paper conjectures it equals Post;
* ``hoeffding_lower_bound``: Imola & Chaudhuri 2021, Thm 2, r_alpha(p + K), K = exp(-2 (1/2 - c)^2 d
k);
* ``exact``: Post itself, by a certified branch-and-bound (see
  :mod:`dpamp.amplification.bernoulli.exact_value`).

Here r_alpha(p) = 1/(alpha-1) log(p^a (1-p)^(1-a) + (1-p)^a p^(1-a)) is the Rényi divergence of
Bern(p) from Bern(1-p) (Imola & Chaudhuri 2021, Def. 2). Everything is evaluated in log space
through the log-odds t = log((1-p)/p), which keeps c = 0.01, d k = 60, alpha = 500 finite.

``BernoulliSampling(c, d, k)`` is the post-processing kernel: ``mech.post_process(kernel)``
returns a :class:`BernoulliSampled` mechanism whose RDP curve is the upper bound above applied
order by order (Imola & Chaudhuri 2021, Thms 3, 5) and whose ``rdp_lower`` is the lower bound.

Modules: ``bounds`` (closed forms), ``exact_value`` (``exact`` and its limits), ``figure1``,
``mechanism`` (``BernoulliSampling``, ``BernoulliSampled``) and ``witness``
(``BernoulliWitness``); the private modules hold the shared numerics (``_renyi``, ``_moments``)
and the certified searches (d = 1: ``_d1_search``, ``_d1_boxes``; d = 2, 3: ``_local_search``,
``_supports``, ``_cells``, ``_cell_bounds``, ``_support_search``).
"""
from ._renyi import r_alpha
from .bounds import asymptote, hoeffding_lower_bound, lower_bound, upper_bound
from .exact_value import (EXACT_DEFAULTS_D1, EXACT_DEFAULTS_MULTI, EXACT_MAX_D, EXACT_MAX_K_D1,
                          EXACT_MAX_OUTCOMES, Certified, exact)
from .figure1 import Figure1Data, figure1_data, plot_figure1
from .mechanism import BernoulliSampled, BernoulliSampling
from .witness import WITNESS_OFFSETS, BernoulliWitness

__all__ = ["r_alpha", "asymptote", "upper_bound", "lower_bound", "hoeffding_lower_bound",
           "exact", "Certified", "EXACT_MAX_K_D1", "EXACT_MAX_D", "EXACT_MAX_OUTCOMES",
           "EXACT_DEFAULTS_D1", "EXACT_DEFAULTS_MULTI",
           "figure1_data", "Figure1Data", "plot_figure1",
           "BernoulliSampling", "BernoulliSampled", "BernoulliWitness", "WITNESS_OFFSETS"]
