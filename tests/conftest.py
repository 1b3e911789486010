import os
import sys

# Let the tests run from a checkout without installation too.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import mpmath  # noqa: E402  (after the path insertion above)
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _mpmath_precision():
    """Every test leaves mpmath's precision as it found it: tests that set ``mp.mp.dps`` would
    otherwise leak their precision into the tests run after them (the answer of an mpmath
    oracle would then depend on the order the tests ran in). A module's own precision fixture
    (set up before this one) is kept."""
    prec = mpmath.mp.prec
    try:
        yield
    finally:
        mpmath.mp.prec = prec


#: the heaviest default-run cases whose cheaper siblings (the same test at other parameters)
#: stay in the default run: slow (make test-all runs them), so that make test keeps to its
#: ten minutes on two cores (measured with --durations: 5-23 CPU s each)
HEAVY_SIBLINGS = frozenset(f"tests/{n}" for n in (
    "test_mixture_of_gaussians.py::test_two_steps[mix0-1.0]",
    "test_mixture_of_gaussians.py::test_rdp_bracket[mix3]",
    "test_mixture_of_gaussians.py::test_one_step_brackets[mix3]",
    "test_matrix_lower_run.py::test_below_the_exact_pair[coeffs1-2-4-False-0.9]",
    "test_bernoulli.py::test_exact_d_above_1_is_a_proven_bracket[2-2-3.0-0.3-2.0-8000]",
    "test_bernoulli.py::test_exact_d_above_1_is_a_proven_bracket[3-1-50.0-0.3-1.0-1000]",
    "test_heterogeneous.py::test_heterogeneous_gaussian_plan_brackets_the_oracle[1e-05]",
    "test_pld_atomic_review.py::test_epsilon_beyond_the_exponents_range[1e-06]",
    "test_allocation_pld.py::test_against_pld_accounting[2.0-100-1]",
    "test_skellam.py::test_epsilon_bracket[mu0.3-D1-T3]",
    "test_oracle_contour.py::test_one_step_mgf_matches_mpmath[1.9681-4.009e-05-(77+300j)]",
    "test_oracle_contour.py::test_one_step_mgf_matches_mpmath[1.0-1e-05-(-2000-5000j)]",
    "test_matrix_mechanism.py::test_cyclic_poisson_holds_dp_accounting[64-4-1.5-0.01]",
    "test_allocation_quadrature.py::test_k2_bracket_contains_the_exact_epsilon[0.7-0.001]",
    "test_matrix_lower_rowalloc_review.py::test_witness_and_reported_lower_end_below_exact_delta"
    "[coeffs0-2-1-1.1399131657151544]",
    "test_matrix_lower_rowalloc_review.py::test_witness_and_reported_lower_end_below_exact_delta"
    "[coeffs2-3-1-1.152784802685132]",
    "test_matrix_lower_run_rates.py::test_minsep_below_the_exact_pair[coeffs1-4-0.6-2-True-0.6]",
    "test_matrix_lower_filter.py::test_fixed_bins_filter_below_the_exact_delta[0.2]",
    "test_matrix_lower_bin_windows_review.py::test_extreme_values_below_a_crude_upper_bound"
    "[coeffs4-1.1113793747425387e-162]",
    "test_matrix_split_review.py::test_balls_in_bins_against_exact_delta[c5-5]",
    "test_matrix_lower_review.py::test_family_lower_end_is_below_actual_pairs[c3-1.0-0.5-2-0.2]",
))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in HEAVY_SIBLINGS:
            item.add_marker(pytest.mark.slow)
