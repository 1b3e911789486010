"""002 Definition 1 (mixing coefficients) and Thm 1 (amplification by uniform mixing).

Independent references: the exact discrete hockey-stick divergence (sum of positive parts,
checked against the max over all subsets), brute-force coefficients, mpmath quadrature for the
closed-form Gaussian / Laplace kernels, discretised kernels (data processing), and thousands of
random finite (mu, nu, K) instances for Thm 1.
"""
import dataclasses
import itertools
import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dpamp as dp
from dpamp.mechanisms.base import Mechanism
from dpamp.amplification.mixing import hockey_stick
from dpamp.amplification.mixing.post_processed import PostProcessed
from dpamp.amplification.mixing.uniform import amplified_profile, base_epsilon_for
from dpamp.core.relations import ADD_REMOVE, Relation


@pytest.fixture(autouse=True)
def _local_mpmath_precision():
    """Tests set mp.mp.dps; restore it afterwards so other test modules are unaffected."""
    with mp.workdps(mp.mp.dps):
        yield


CONDITIONS = ["dobrushin", "dobrushin-eps", "doeblin", "ultra-mixing"]


def exact_hs(p, q, eps):
    """Reference: max over all subsets E of p(E) - e^eps q(E) (2^n subsets)."""
    p, q = np.asarray(p), np.asarray(q)
    best = 0.0
    for r in range(len(p) + 1):
        for E in itertools.combinations(range(len(p)), r):
            E = list(E)
            best = max(best, p[E].sum() - math.exp(eps) * q[E].sum())
    return best


def pair_delta(p, q, eps):
    return np.maximum(hockey_stick(p, q, eps), hockey_stick(q, p, eps))


@dataclasses.dataclass(frozen=True)
class DiscretePair(Mechanism):
    """Test-local mechanism with outputs 0..n-1 and one pair of neighbouring output laws (P, Q):
    its exact privacy profile is max(D_e^eps(P||Q), D_e^eps(Q||P)), computed by hand."""

    P: tuple
    Q: tuple
    relation: Relation = ADD_REMOVE

    def profile(self, epsilon):
        e = np.asarray(epsilon, dtype=float)
        p, q = np.array(self.P), np.array(self.Q)
        out = np.maximum(hockey_stick(p, q, e), hockey_stick(q, p, e))
        return out if np.ndim(out) else float(out)

    def _rdp(self, alpha):
        raise NotImplementedError("test mechanism: profile only")

    def has_rdp(self):
        return False

    def pure_epsilon(self):
        p, q = np.array(self.P), np.array(self.Q)
        if ((p > 0) != (q > 0)).any():
            return math.inf
        s = p > 0
        return float(np.abs(np.log(p[s] / q[s])).max())


def worst_case_pair(eps, delta):
    """The (eps, delta) worst-case pair (004 footnote 16) on 4 outputs."""
    a = (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    b = (1 - delta) / (1 + math.exp(eps))
    return (delta, a, b, 0.0), (0.0, b, a, delta)


def rr_pair(eps):
    p = math.exp(eps) / (1 + math.exp(eps))
    return (p, 1 - p), (1 - p, p)


# --- the reference hockey-stick ------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0, 1), min_size=n, max_size=n),
    st.lists(st.floats(0, 1), min_size=n, max_size=n))),
    st.floats(0, 5))
def test_hockey_stick_is_max_over_subsets(pq, eps):
    p, q = (np.array(v) + 1e-3 for v in pq)
    p, q = p / p.sum(), q / q.sum()
    assert hockey_stick(p, q, eps) == pytest.approx(exact_hs(p, q, eps), abs=1e-14)


def test_hockey_stick_at_infinity_is_mass_outside_support():
    assert hockey_stick([0.5, 0.3, 0.2], [0.5, 0.5, 0.0], math.inf) == pytest.approx(0.2)
    assert hockey_stick([0.5, 0.5], [0.5, 0.5], 0.0) == 0.0


# --- Markov kernels: validation and coefficients ------------------------------------------------

@pytest.mark.parametrize("bad, word", [
    ([[0.7, 0.3], [0.2, 0.7]], "sum to 1"),
    ([[1.2, -0.2], [0.5, 0.5]], ">= 0"),
    ([[0.5, 0.5 + 1e-9]], "sum to 1"),
    ([[np.nan, 1.0]], "finite"),
    ([0.5, 0.5], "2-D"),
    ([[]], "2-D"),
    ("abc", "2-D"),
])
def test_kernel_validation(bad, word):
    with pytest.raises(ValueError, match=word):
        dp.MarkovKernel(bad)


def test_kernel_rows_within_tolerance_and_immutable():
    K = dp.MarkovKernel([[0.1, 0.2, 0.7 + 5e-13], [1, 0, 0]])
    with pytest.raises(ValueError):
        K.matrix[0, 0] = 0.5
    assert K == dp.MarkovKernel([[0.1, 0.2, 0.7 + 5e-13], [1, 0, 0]])
    assert hash(K) == hash(dp.MarkovKernel([[0.1, 0.2, 0.7 + 5e-13], [1, 0, 0]]))


def test_issue_example_kernel_by_hand():
    K = dp.MarkovKernel([[0.7, 0.3], [0.2, 0.8]])
    assert K.dobrushin() == pytest.approx(0.5, abs=1e-13)          # TV of the two rows
    assert K.dobrushin() >= 0.5
    # D_{e^0.5}: max(0.7 - e^.5 0.2, 0.8 - e^.5 0.3) positive parts
    e = math.exp(0.5)
    assert K.dobrushin(epsilon=0.5) == pytest.approx(max(0.7 - e * 0.2, 0) + max(0.3 - e * 0.8, 0)
                                                     if 0.7 - e * 0.2 > 0.8 - e * 0.3
                                                     else 0.8 - e * 0.3, abs=1e-13)
    assert K.doeblin() == pytest.approx(1 - (0.2 + 0.3), abs=1e-13)
    assert np.allclose(K.omega, [0.4, 0.6])
    assert K.ultra_mixing() == pytest.approx(1 - min(0.2 / 0.7, 0.3 / 0.8), abs=1e-13)
    assert K.ultra_mixing() >= 1 - min(0.2 / 0.7, 0.3 / 0.8)


def brute_coefficients(K, eps):
    n = K.shape[0]
    dob = max(exact_hs(K[i], K[j], eps) for i in range(n) for j in range(n))
    doe = 1 - sum(min(K[i, y] for i in range(n)) for y in range(K.shape[1]))
    ratios = []
    for i, j in itertools.product(range(n), repeat=2):
        for y in range(K.shape[1]):
            if K[j, y] > 0:
                ratios.append(K[i, y] / K[j, y])
            elif K[i, y] > 0:
                ratios.append(0.0)  # K(x) not << K(x'): never ultra-mixing
    return dob, doe, 1 - min(ratios)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**32 - 1), st.floats(0, 3))
def test_coefficients_match_brute_force(n, m, seed, eps):
    rng = np.random.default_rng(seed)
    K = rng.dirichlet(np.ones(m) * 0.5, size=n)
    K[rng.random((n, m)) < 0.15] = 0.0
    K[:, 0] += 1e-12
    K = K / K.sum(axis=1, keepdims=True)
    ker = dp.MarkovKernel(K)
    dob, doe, ultra = brute_coefficients(K, eps)
    tol = 1e-13
    assert dob <= ker.dobrushin(epsilon=eps) <= dob + tol
    assert doe - 1e-15 <= ker.doeblin() <= doe + tol
    assert ultra - 1e-15 <= ker.ultra_mixing() <= ultra + tol
    # Figure 1 (Lemma 9): ultra-mixing => Doeblin => Dobrushin (same gamma)
    assert ker.dobrushin() <= ker.doeblin() + 1e-13 <= ker.ultra_mixing() + 2e-13
    # omega is a distribution and minorises every row
    if ker.omega is not None:
        assert ker.omega.sum() == pytest.approx(1.0)
        assert (K >= (1 - ker.doeblin()) * ker.omega[None, :] - 1e-15).all()


def test_coefficients_vectorised_and_monotone_in_epsilon():
    K = dp.MarkovKernel([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]])
    eps = np.array([0.0, 0.1, 0.5, 1.0, 2.0, np.inf])
    v = K.dobrushin(epsilon=eps)
    assert v.shape == eps.shape
    assert np.all(np.diff(v) <= 0) and v[-1] == 0.0
    assert [K.dobrushin(epsilon=e) for e in eps] == pytest.approx(list(v))
    with pytest.raises(ValueError, match="epsilon"):
        K.dobrushin(epsilon=-1.0)


def test_kernel_special_cases():
    same = dp.MarkovKernel([[0.2, 0.8], [0.2, 0.8]])
    assert same.doeblin() < 1e-14 and same.ultra_mixing() < 1e-14
    disjoint = dp.MarkovKernel([[1.0, 0.0], [0.0, 1.0]])
    assert disjoint.dobrushin() == 1.0 and disjoint.doeblin() == 1.0
    assert disjoint.ultra_mixing() == 1.0 and disjoint.omega is None
    support = dp.MarkovKernel([[0.5, 0.5, 0.0], [0.4, 0.4, 0.2]])
    assert support.ultra_mixing() == 1.0  # supports differ: not ultra-mixing
    assert support.doeblin() < 1.0


# --- closed-form Gaussian and Laplace kernels on an interval ------------------------------------

def mp_gauss_pdf(x, c, s):
    return mp.npdf(x, c, s)


def mp_lap_pdf(x, c, b):
    return mp.exp(-abs(x - c) / b) / (2 * b)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
@pytest.mark.parametrize("scale, low, high, lip", [(1.0, 0.0, 1.0, 1.0), (0.3, -1.0, 2.0, 0.5),
                                                   (2.5, 0.0, 4.0, 1.0)])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.5])
def test_closed_forms_against_mpmath(kind, scale, low, high, lip, eps):
    mp.mp.dps = 20
    D = lip * (high - low)
    pdf = mp_gauss_pdf if kind == "gaussian" else mp_lap_pdf
    ker = (dp.GaussianKernel(scale, low, high, lip) if kind == "gaussian"
           else dp.LaplaceKernel(scale, low, high, lip))
    # sup over centre pairs at distance D (checked below on a grid of distances)
    f = lambda y: max(pdf(y, D, scale) - mp.e ** eps * pdf(y, 0, scale), 0)
    # split at the kink where the two densities cross
    cross = D / 2 + eps * scale ** 2 / D if kind == "gaussian" else min(D, (D + eps * scale) / 2)
    ref = float(mp.quad(f, sorted({-mp.inf, 0, D / 2, cross, D, mp.inf})))
    got = ker.dobrushin(epsilon=eps)
    assert ref <= got <= ref + 1e-12
    for frac in [0.1, 0.5, 0.9]:  # smaller distances give smaller divergences
        d = frac * D
        g = lambda y: max(pdf(y, d, scale) - mp.e ** eps * pdf(y, 0, scale), 0)
        c = d / 2 + eps * scale ** 2 / d if kind == "gaussian" else min(d, (d + eps * scale) / 2)
        assert float(mp.quad(g, sorted({-mp.inf, 0, d / 2, c, d, mp.inf}))) <= got
    if eps == 0.0:
        # Doeblin: 1 - integral of the minimum over all centres in [0, D] (grid of 21 centres)
        cs = [mp.mpf(D) * k / 20 for k in range(21)]
        h = lambda y: min(pdf(y, c, scale) for c in cs)
        ref_doe = 1 - float(mp.quad(h, [-mp.inf, 0, D / 2, D, mp.inf]))
        assert ref_doe == pytest.approx(ker.doeblin(), abs=1e-9)
        assert ker.doeblin() >= ref_doe - 1e-15
    if kind == "laplace":
        assert ker.ultra_mixing() == pytest.approx(1 - math.exp(-D / scale), abs=1e-14)
    else:
        assert ker.ultra_mixing() == 1.0


@pytest.mark.parametrize("kernel", [dp.GaussianKernel(0.7, 0.0, 1.0), dp.LaplaceKernel(0.5, 0, 1)])
def test_discretised_kernel_coefficients_are_below_closed_form(kernel):
    """Restricting inputs to a grid and binning outputs is post-processing, so the finite
    kernel's coefficients are <= the closed forms (and close for a fine discretisation)."""
    xs = np.linspace(kernel.low, kernel.high, 7)
    edges = np.concatenate([[-np.inf], np.linspace(-6, 7, 400), [np.inf]])
    if isinstance(kernel, dp.GaussianKernel):
        from scipy.stats import norm
        cdf = norm.cdf((edges[None, :] - xs[:, None]) / kernel.sigma)
    else:
        from scipy.stats import laplace
        cdf = laplace.cdf(edges[None, :], loc=xs[:, None], scale=kernel.scale)
    K = np.diff(cdf, axis=1)
    K = K / K.sum(axis=1, keepdims=True)
    fin = dp.MarkovKernel(K)
    for eps in [0.0, 0.5, 1.0]:
        assert fin.dobrushin(epsilon=eps) <= kernel.dobrushin(epsilon=eps) + 1e-12
        assert fin.dobrushin(epsilon=eps) == pytest.approx(kernel.dobrushin(epsilon=eps), abs=0.02)
    assert fin.doeblin() <= kernel.doeblin() + 1e-12
    assert fin.doeblin() == pytest.approx(kernel.doeblin(), abs=0.02)
    # bins in the far tails are CDF differences with ~1e-9 relative rounding error
    assert fin.ultra_mixing() <= kernel.ultra_mixing() + 1e-8


def test_noise_kernel_validation_and_unbounded():
    with pytest.raises(ValueError, match="sigma"):
        dp.GaussianKernel(0.0, 0, 1)
    with pytest.raises(ValueError, match="scale"):
        dp.LaplaceKernel(-1.0, 0, 1)
    with pytest.raises(ValueError, match="low must be <= high"):
        dp.GaussianKernel(1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="lipschitz"):
        dp.LaplaceKernel(1.0, 0, 1, lipschitz=-1)
    g = dp.GaussianKernel(1.0)
    assert g.coefficients() == {"dobrushin": 1.0, "doeblin": 1.0, "ultra-mixing": 1.0}
    assert not g.mixes() and g.accepts_real_line
    assert dp.GaussianKernel(1.0, 0, 1, lipschitz=0.0).coefficients()["dobrushin"] == 0.0
    assert dp.LaplaceKernel(1.0, 0, 1, lipschitz=0.0).ultra_mixing() == 0.0


# --- Thm 1 on random finite instances -------------------------------------------------------------

def _instance(seed, n, m, conc, zero_frac):
    rng = np.random.default_rng(seed)
    mu = rng.dirichlet(np.ones(n) * conc)
    nu = rng.dirichlet(np.ones(n) * conc)
    K = rng.dirichlet(np.ones(m) * conc, size=n)
    K[rng.random((n, m)) < zero_frac] = 0.0
    K[:, rng.integers(m)] += 1e-9  # keep every row non-empty
    K = K / K.sum(axis=1, keepdims=True)
    return mu, nu, K, rng


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 5), m=st.integers(2, 5),
       conc=st.sampled_from([0.2, 1.0, 5.0]), zero_frac=st.sampled_from([0.0, 0.3]),
       eps=st.one_of(st.just(0.0), st.floats(0.0, 4.0)))
def test_thm1_holds_on_random_instances(seed, n, m, conc, zero_frac, eps):
    """For M with outputs mu = M(D), nu = M(D') and its exact (eps, delta) (both directions),
    K o M meets every case of 002 Thm 1 with the kernel's computed gamma, checked with the
    exact hockey-stick divergence of (mu K, nu K)."""
    mu, nu, K, _ = _instance(seed, n, m, conc, zero_frac)
    ker = dp.MarkovKernel(K)
    delta = pair_delta(mu, nu, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DoeblinWarning)
        for cond in CONDITIONS:
            e2, d2 = dp.amplify_by_mixing(eps, delta, ker, cond)
            true = pair_delta(mu @ K, nu @ K, e2)
            assert true <= d2 + 1e-14, (cond, eps, delta, e2, d2, true)
            assert e2 <= eps + 1e-12


def test_thm1_bounds_are_nearly_attained_somewhere():
    """The soundness test above could not catch a bound that is too large; this one shows each
    case is nearly tight on some random instance (so a wrong, smaller formula would fail)."""
    best = dict.fromkeys(CONDITIONS, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DoeblinWarning)
        for seed in range(1500):
            mu, nu, K, rng = _instance(seed, 3, 3, 0.3, 0.0)
            ker = dp.MarkovKernel(K)
            eps = float(rng.exponential(1.0))
            delta = pair_delta(mu, nu, eps)
            for cond in CONDITIONS:
                e2, d2 = dp.amplify_by_mixing(eps, delta, ker, cond)
                if d2 > 1e-9:
                    best[cond] = max(best[cond], pair_delta(mu @ K, nu @ K, e2) / d2)
    assert min(best.values()) > 0.9, best


# --- amplify_by_mixing: formulas, rounding, warnings, errors -----------------------------------

@pytest.mark.parametrize("eps, delta, gamma", [(1.0, 1e-5, 0.3), (0.1, 1e-3, 0.9),
                                               (5.0, 0.0, 0.5), (0.0, 0.2, 0.7),
                                               (40.0, 1e-8, 0.01), (2.0, 0.5, 1.0)])
def test_amplify_by_mixing_formulas_mpmath(eps, delta, gamma):
    mp.mp.dps = 50
    e, d, g = mp.mpf(eps), mp.mpf(delta), mp.mpf(gamma)
    ep = mp.log(1 + g * (mp.e ** e - 1))
    ref = {"dobrushin": (e, g * d), "dobrushin-eps": (e, g * d),
           "doeblin": (ep, g * (1 - mp.e ** (ep - e) * (1 - d))),
           "ultra-mixing": (ep, g * d * mp.e ** (ep - e))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DoeblinWarning)
        for cond, (re, rd) in ref.items():
            e2, d2 = dp.amplify_by_mixing(eps, delta, gamma, cond)
            assert e2 >= float(re) and e2 == pytest.approx(float(re), rel=1e-13, abs=1e-300)
            assert d2 >= float(rd) and d2 == pytest.approx(float(rd), rel=1e-11, abs=1e-300)


def test_doeblin_warning_threshold():
    eps, delta = 1.0, 1e-3
    thr = delta * math.e / ((1 - delta) * (math.e - 1))
    assert dp.mixing.doeblin_threshold(eps, delta) == pytest.approx(thr, rel=1e-14)
    with pytest.warns(dp.DoeblinWarning, match="gamma <= delta e\\^eps"):
        _, d2 = dp.amplify_by_mixing(eps, delta, 2 * thr, "doeblin")
    assert d2 > delta
    assert issubclass(dp.DoeblinWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.DoeblinWarning)
        _, d3 = dp.amplify_by_mixing(eps, delta, 0.5 * thr, "doeblin")
        assert d3 <= delta
        dp.amplify_by_mixing(eps, delta, 1.0, "doeblin")  # gamma = 1: delta' = delta exactly
    with pytest.warns(dp.DoeblinWarning):  # delta = 0: any 0 < gamma < 1 gives delta' > 0
        _, d4 = dp.amplify_by_mixing(1.0, 0.0, 0.1, "doeblin")
    assert d4 > 0


def test_amplify_by_mixing_bad_input():
    with pytest.raises(ValueError, match="condition"):
        dp.amplify_by_mixing(1.0, 1e-5, 0.5, "dobrushin2")
    with pytest.raises(ValueError, match="gamma"):
        dp.amplify_by_mixing(1.0, 1e-5, 1.5)
    with pytest.raises(ValueError, match="delta"):
        dp.amplify_by_mixing(1.0, -1e-5, 0.5)
    with pytest.raises(ValueError, match="epsilon"):
        dp.amplify_by_mixing(float("nan"), 1e-5, 0.5)


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 20), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_amplification_monotone_in_gamma_and_never_worse_in_epsilon(eps, delta, g1, g2):
    lo, hi = sorted([g1, g2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DoeblinWarning)
        for cond in ["dobrushin", "doeblin", "ultra-mixing"]:
            a = dp.amplify_by_mixing(eps, delta, lo, cond)
            b = dp.amplify_by_mixing(eps, delta, hi, cond)
            assert a[0] <= b[0] and b[0] <= eps
            if cond != "doeblin":  # Doeblin's delta' is quadratic in gamma, not monotone
                assert a[1] <= b[1] + 1e-15
    # ultra-mixing never worse than the base in delta either
    assert dp.amplify_by_mixing(eps, delta, hi, "ultra-mixing")[1] <= delta


def test_kernel_as_gamma_uses_the_right_coefficient():
    K = dp.MarkovKernel([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]])
    eps, delta = 0.5, 0.01
    et = dp.mixing.dobrushin_epsilon(eps, delta)
    assert et == pytest.approx(math.log(1 + (math.e ** eps - 1) / delta), rel=1e-14)
    assert dp.amplify_by_mixing(eps, delta, K, "dobrushin-eps") == \
        dp.amplify_by_mixing(eps, delta, float(K.dobrushin(epsilon=et)), "dobrushin")
    assert dp.amplify_by_mixing(eps, delta, K, "ultra-mixing") == \
        dp.amplify_by_mixing(eps, delta, K.ultra_mixing(), "ultra-mixing")


# --- the post-processed mechanism and the "mixing" method ----------------------------------------

PAIRS = [rr_pair(1.0), worst_case_pair(1.0, 1e-3), worst_case_pair(0.3, 0.05),
         ((0.5, 0.3, 0.2, 0.0), (0.2, 0.3, 0.3, 0.2))]


def kernel_for(n, seed):
    rng = np.random.default_rng(seed)
    return dp.MarkovKernel(rng.dirichlet(np.ones(3), size=n))


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_post_processed_profile_is_sound_and_amplifies(pair, seed):
    P, Q = pair
    base = DiscretePair(P, Q)
    K = kernel_for(len(P), seed)
    mech = base.post_process(K)
    assert isinstance(mech, PostProcessed) and mech.relation is base.relation
    eps = np.linspace(0, 3, 61)
    prof = mech.profile(eps)
    exact = pair_delta(np.array(P) @ K.matrix, np.array(Q) @ K.matrix, eps)
    assert np.all(exact <= prof + 1e-14)
    assert np.all(prof <= base.profile(eps) + 1e-15)
    assert np.all(prof <= K.dobrushin() * base.profile(eps) * (1 + 1e-11) + 1e-300)
    assert np.all(np.diff(prof) <= 1e-15)  # a profile is non-increasing
    # the mixing method: delta is the profile, epsilon inverts it (auto picks mixing)
    assert "mixing" in dp.available_methods(mech)
    g = mech.delta(0.7)
    assert g.method == "mixing" and g.delta == pytest.approx(mech.profile(0.7))
    for target in [1e-1, 1e-2, 1e-4]:
        ge = mech.epsilon(target)
        assert ge.method == "mixing"
        assert pair_delta(np.array(P) @ K.matrix, np.array(Q) @ K.matrix, ge.epsilon) <= target
        assert mech.profile(ge.epsilon) <= target
        if ge.epsilon > 0:
            assert mech.profile(ge.epsilon * (1 - 1e-6)) > target * (1 - 1e-9)


class OnlyCondition(dp.mixing.MixingKernel):
    """Test-local kernel exposing a single condition of 002 Def. 1 (the others report 1), so
    each branch of the amplified profile can be checked on its own."""

    def __init__(self, kernel, condition):
        self.kernel, self.condition = kernel, condition

    def dobrushin(self, epsilon=0.0):
        e = np.asarray(epsilon, dtype=float)
        if self.condition == "dobrushin" and np.all(e == 0):
            return self.kernel.dobrushin()
        if self.condition == "dobrushin-eps":
            return self.kernel.dobrushin(epsilon)
        return np.ones(e.shape) if e.ndim else 1.0

    def doeblin(self):
        return self.kernel.doeblin() if self.condition == "doeblin" else 1.0

    def ultra_mixing(self):
        return self.kernel.ultra_mixing() if self.condition == "ultra-mixing" else 1.0


@pytest.mark.parametrize("cond", CONDITIONS)
def test_profile_takes_the_best_base_epsilon(cond):
    """Each branch of the amplified profile equals a brute-force minimum over base epsilons of
    amplify_by_mixing (same rounding), and all are above the exact profile of K o M."""
    base = DiscretePair(*worst_case_pair(1.5, 1e-3))
    K = dp.MarkovKernel([[0.5, 0.3, 0.2], [0.3, 0.4, 0.3], [0.25, 0.25, 0.5], [0.4, 0.4, 0.2]])
    only = OnlyCondition(K, cond)
    for target in [0.0, 0.2, 0.6, 1.0, 2.0]:
        brute = base.profile(target)
        gam = {"dobrushin": K.dobrushin(), "dobrushin-eps": K, "doeblin": K.doeblin(),
               "ultra-mixing": K.ultra_mixing()}[cond]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dp.DoeblinWarning)
            if cond in ("doeblin", "ultra-mixing"):
                top = base_epsilon_for(target, gam)
                for e in np.linspace(0, top, 2001):
                    e2, d2 = dp.amplify_by_mixing(e, base.profile(e), gam, cond)
                    assert e2 <= target * (1 + 1e-12)
                    brute = min(brute, d2)
            else:
                brute = min(brute, dp.amplify_by_mixing(target, base.profile(target), gam, cond)[1])
        got = amplified_profile(base.profile, only, target)
        assert got <= brute * (1 + 1e-3) + 1e-15
        assert got >= brute * (1 - 1e-2)  # it is this branch's bound, not something smaller
        exact = pair_delta(np.array(base.P) @ K.matrix, np.array(base.Q) @ K.matrix, target)
        assert exact <= got + 1e-15
        assert base.post_process(K).profile(target) <= got


def test_ultra_mixing_amplifies_pure_dp_and_rdp():
    K = dp.MarkovKernel([[0.6, 0.4], [0.3, 0.7]])
    base = dp.RandomizedResponse.from_epsilon(2.0)
    mech = base.post_process(K)
    g = K.ultra_mixing()
    expect = math.log(1 + g * (math.e ** 2 - 1))
    assert mech.pure_epsilon() == pytest.approx(expect, rel=1e-12)
    # the exact pure epsilon of K o RR is below it
    p = np.array([math.e ** 2, 1]) / (1 + math.e ** 2)
    a, b = p @ K.matrix, p[::-1] @ K.matrix
    assert np.abs(np.log(a / b)).max() <= mech.pure_epsilon()
    alphas = np.array([1.5, 2, 10, 100, np.inf])
    r = mech.rdp(alphas)
    assert np.all(r <= base.rdp(alphas) + 1e-15) and np.all(r <= mech.pure_epsilon())
    # composes and converts like any mechanism (RDP of K o M is the base's, capped)
    total = mech * 3
    assert total.epsilon(1e-5).epsilon <= (base * 3).epsilon(1e-5).epsilon
    assert dp.compose(mech, base).has_rdp()


def test_post_process_domain_mismatch_is_refused():
    with pytest.raises(ValueError, match="unbounded"):
        dp.Gaussian(1.0).post_process(dp.GaussianKernel(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="unbounded"):
        dp.Laplace(1.0).post_process(dp.MarkovKernel([[1.0]]))
    with pytest.raises(ValueError, match="mixing kernel"):
        PostProcessed(dp.Gaussian(1.0), "not a kernel")


def test_mixing_method_not_applicable_without_profile_or_mixing():
    K = dp.MarkovKernel([[0.6, 0.4], [0.3, 0.7]])
    base = dp.Composition(((dp.RandomizedResponse(0.7), 2),))

    class NoProfile(DiscretePair):
        def profile(self, epsilon):
            raise NotImplementedError

    assert "mixing" not in dp.available_methods(NoProfile((0.5, 0.5), (0.4, 0.6)).post_process(K))
    ident = dp.MarkovKernel([[1.0, 0.0], [0.0, 1.0]])
    assert "mixing" not in dp.available_methods(DiscretePair((0.5, 0.5), (0.4, 0.6))
                                                .post_process(ident))
    assert "mixing" not in dp.available_methods(base)


def test_amplified_profile_constant_kernel_is_zero():
    K = dp.MarkovKernel([[0.3, 0.7], [0.3, 0.7]])
    base = DiscretePair(*rr_pair(2.0))
    prof = amplified_profile(base.profile, K, np.array([0.0, 0.5, 1.0]))
    assert np.all(prof <= 1e-13)
    assert base.post_process(K).epsilon(1e-6).epsilon == 0.0


def test_profile_at_infinity_keeps_the_mass_at_infinite_loss():
    """delta(inf) of an (eps, delta) worst-case pair is delta (loss +inf w.p. delta); after a
    kernel that keeps supports apart it must stay positive (no branch may claim 0)."""
    base = DiscretePair(*worst_case_pair(1.0, 0.01))
    K = dp.MarkovKernel([[0.8, 0.2, 0.0], [0.0, 0.5, 0.5], [0.0, 0.3, 0.7], [0.0, 0.2, 0.8]])
    exact = pair_delta(np.array(base.P) @ K.matrix, np.array(base.Q) @ K.matrix, np.inf)
    assert exact > 0
    assert base.post_process(K).profile(np.inf) >= exact
    # a Doeblin kernel with gamma = 0.9 after a pair with disjoint supports: D_inf = 0.9
    K = dp.MarkovKernel([[0.1, 0.9, 0.0], [0.1, 0.0, 0.9]])
    base = DiscretePair((1.0, 0.0), (0.0, 1.0))
    assert base.post_process(K).profile(np.inf) >= 0.9
    assert base.post_process(K).profile(50.0) >= 0.9
