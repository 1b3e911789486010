"""The conditional-composition bound of Poisson-sampled matrix mechanisms
(dpamp.amplification.matrix) against independent truths: DP-SGD's exact PLD (diagonal C), the
exact profile of the dominating pair by quadrature over the 2^n participation patterns (n <= 3),
and the exact tail of a one-step posterior."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import log_ndtr, logsumexp

import dpamp as dp
from dpamp.amplification.matrix import query as Q
from dpamp.amplification.matrix.conditional import dominating_steps
from dpamp.amplification.matrix.tails import posterior_exponents, tail_log_bound

C3 = np.array([[1.0, 0.0, 0.0], [0.6, 1.0, 0.0], [0.3, 0.6, 1.0]])


def _patterns(n):
    return np.array([[(k >> j) & 1 for j in range(n)] for k in range(1 << n)], dtype=float)


def exact_delta(c, sigma, q, eps, nodes=64, pats=None, logw=None):
    """max over both orders of H_{e^eps} between sum_B q^|B| (1-q)^{n-|B|} N(C B, sigma^2 I)
    (or sum_B w_B N(C B, sigma^2 I) for given patterns and log-weights) and N(0, sigma^2 I):
    the last coordinate in closed form (the loss is non-decreasing in it, C >= 0), the others
    by Gauss-Hermite quadrature (a smooth integrand: 64 nodes agree with 120 to 1e-15 on
    C3), bisection for the root in log space."""
    c = np.asarray(c, float) / sigma
    n = c.shape[0]
    if pats is None:
        pats = _patterns(n)
        logw = pats.sum(1) * math.log(q) + (n - pats.sum(1)) * math.log1p(-q)
    means = pats @ c.T                                    # (patterns, n)
    x, wts = np.polynomial.hermite_e.hermegauss(nodes)
    wts = wts / wts.sum()
    grids = np.meshgrid(*([x] * (n - 1)), indexing="ij") if n > 1 else []
    outer = np.stack([g.ravel() for g in grids], 1) if n > 1 else np.zeros((1, 0))
    ow = np.ones(outer.shape[0])
    for d in range(n - 1):
        ow = ow * wts[np.searchsorted(x, outer[:, d])]
    # log-weight of each pattern at the outer point, and its slope in the last coordinate
    a = logw[None] + outer @ means[:, :n - 1].T - 0.5 * (means ** 2).sum(1)[None]
    b = means[:, n - 1]
    extra = 0.5 * b ** 2                                  # E[e^{b t}] factor
    out = []
    for lev, sgn in ((eps, 1), (-eps, -1)):               # remove: L > e^eps; add: L < e^-eps
        lo, hi = np.full(len(ow), -60.0), np.full(len(ow), 60.0)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            above = logsumexp(a + mid[:, None] * b[None], axis=1) > lev
            hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
        t = 0.5 * (lo + hi)
        if sgn == 1:   # E_Q[(L - e^eps)_+] = sum w e^{a+b^2/2} Phibar(t - b) - e^eps Phibar(t)
            v = np.exp(logsumexp(a + extra + log_ndtr(-(t[:, None] - b)), axis=1)) \
                - np.exp(eps + log_ndtr(-t))
        else:          # E_Q[(1 - e^eps L)_+] = Phi(t) - e^eps sum w e^{a+b^2/2} Phi(t - b)
            v = np.exp(log_ndtr(t)) - np.exp(eps + logsumexp(
                a + extra + log_ndtr(t[:, None] - b), axis=1))
        out.append(float(np.sum(ow * np.maximum(v, 0.0))))
    return max(out)


def test_exact_delta_matches_the_subsampled_gaussian():
    """n = 1: the helper against dpamp's Poisson-subsampled Gaussian (its exact profile)."""
    g = dp.Subsampled(dp.Gaussian(1.0, 1.0), dp.Poisson(0.3))
    for eps in (0.2, 1.0):
        want = g.delta(eps, method="profile").delta
        assert exact_delta([[1.0]], 1.0, 0.3, eps) == pytest.approx(want, rel=1e-6)


def test_one_step_tail_bound_is_above_the_exact_tail():
    """Step 2 of a 2-step C: the posterior ratio R = N(c, 1) / (q N(c, 1) + (1-q) N(0, 1)) of
    theta_1 is increasing in theta_1, so Pr_P[R > e^eps] is a Gaussian tail in closed form."""
    from scipy.stats import norm
    c, q = 0.8, 0.1
    for eps in (0.5, 1.0, 2.0):               # R <= 1/q: beyond e^eps = 1/q the tail is 0
        # R(t) = 1 / (q + (1-q) e^{-(c t - c^2/2)}) > e^eps  <=>  t > t*
        t = (c * c / 2 - math.log((math.exp(-eps) - q) / (1 - q))) / c \
            if math.exp(-eps) > q else math.inf
        exact = q * norm.sf(t - c) + (1 - q) * norm.sf(t)
        bound = math.exp(float(tail_log_bound(np.array([c]), np.log1p(-q), np.array([eps]))[0]))
        assert exact <= bound
        assert bound < 1e3 * exact + 1e-300          # and not vacuous
    e = posterior_exponents(np.array([c]), np.array([1.0]), q, math.log(1e-9))[0]
    assert float(tail_log_bound(np.array([c]), np.log1p(-q), np.array([e]))[0]) <= math.log(1e-9)


def test_diagonal_c_is_dpsgd():
    """b = 1: each step's mixture is the Poisson-subsampled Gaussian, no slack: at least DP-SGD's
    (exact) value and within its PLD bracket's width."""
    n, q, z = 50, 0.05, 1.2
    r = Q.epsilon(np.eye(n), z, q, 1e-6)
    ref = (dp.Subsampled(dp.Gaussian(1.0, 1.0 / z), dp.Poisson(q)) * n).epsilon(1e-6,
                                                                                  method="pld")
    assert r.slack == 0.0 and r.steps.events == 0
    assert r.epsilon >= ref.lower
    assert r.epsilon == pytest.approx(ref.epsilon, rel=1e-4)


@pytest.mark.parametrize("n", [2, 3])
def test_tiny_n_upper_bound_is_above_the_exact_dominating_pair(n):
    """The non-adaptive, fixed-direction instance: its exact delta(eps) (quadrature over the 2^n
    patterns) is at most our delta(eps), and our epsilon(delta) is at least its epsilon."""
    c, z, q = C3[:n, :n], 1.5, 0.2
    for eps in (0.5, 1.5):
        ours = Q.delta(c, z, q, eps)
        truth = exact_delta(c, z, q, eps)
        assert truth <= ours.delta, (eps, truth, ours)
    r = Q.epsilon(c, z, q, 1e-3)
    assert exact_delta(c, z, q, r.epsilon) <= 1e-3


def _plain(m):
    """No-amplification's plan: the Gaussian at the worst pattern's sensitivity."""
    return dp.Gaussian(1.0, m.mu[1])


def test_banded_beats_no_amplification_and_is_deterministic():
    from dpamp.families.matrix import bsr_coefficients
    co = np.array(bsr_coefficients(3))
    n = 40
    c = sum(np.diag(np.full(n - k, v), -k) for k, v in enumerate(co)) / np.linalg.norm(co)
    m = dp.MatrixMechanism(c, 3.0, participation=dp.Poisson(0.02))
    r1, r2 = Q.epsilon(c, 3.0, 0.02, 1e-6), Q.epsilon(c, 3.0, 0.02, 1e-6)
    assert r1 == r2
    assert r1.epsilon < _plain(m).epsilon(1e-6, method="profile").epsilon
    assert r1.slack < 1e-6 and len(r1.steps.parts) == 3   # Toeplitz: steps 1, 2, then equal


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="lower-triangular"):
        dominating_steps(np.ones((2, 2)), 1.0, 0.1, 1e-9)
    with pytest.raises(ValueError, match="square"):
        dominating_steps(np.ones((2, 3)), 1.0, 0.1, 1e-9)
    with pytest.raises(ValueError, match="sampling_prob"):
        dominating_steps(np.eye(2), 1.0, 0.0, 1e-9)


def test_the_family_takes_the_smaller_route_and_names_it():
    from dpamp.families.matrix import amplified_delta, amplified_epsilon
    n = 30
    c = np.eye(n) + 0.5 * np.eye(n, k=-1)
    m = dp.MatrixMechanism(c, 4.0, participation=dp.Poisson(0.01))
    g = amplified_epsilon(m, 1e-6)
    plain = _plain(m).epsilon(1e-6, method="profile")
    cond = Q.epsilon(c, 4.0, 0.01, 1e-6).epsilon
    assert m.route == "noise-split" and g.method == "noise-split"
    assert g.epsilon < min(plain.epsilon, cond)
    assert f"conditional-composition gave {cond:.6g}" in g.note and 0 < g.lower <= g.epsilon
    assert "lower end: the whole-run matched-filter witness" in g.note
    d = amplified_delta(m, 0.5)          # (its own bad-history budget: not the inverse of g)
    assert d.method == "noise-split" and d.delta < _plain(m).delta(0.5, method="profile").delta
    assert d.delta < Q.delta(c, 4.0, 0.01, 0.5).delta
    # tiny sampling noise, huge posterior tails: no-amplification may answer; either way the
    # route is named and the answer is the smaller proven bound
    m2 = dp.MatrixMechanism(np.ones((3, 3)) * np.tri(3), 0.3, participation=dp.Poisson(0.9))
    g2 = amplified_epsilon(m2, 1e-6)
    assert g2.epsilon <= _plain(m2).epsilon(1e-6, method="profile").epsilon
    assert "route" in g2.note
    # routes without sampling are left as they are
    m3 = dp.MatrixMechanism(c, 4.0)
    assert amplified_epsilon(m3, 1e-6) == m3.epsilon(1e-6)


def test_cyclic_poisson_is_above_the_exact_reduction():
    """b <= p groups: the cyclic-Poisson route is exact (Choquette-Choo et al. 2023: DP-SGD over
    the group's steps at the column norm); conditional composition over each group's steps must
    not go below its proven lower end."""
    n, z, q = 24, 1.5, 0.1
    c = np.eye(n) + 0.6 * np.eye(n, k=-1)
    m = dp.MatrixMechanism(c, z, participation=dp.CyclicPoisson(q, 2))
    assert m.route == "cyclic-poisson"
    exact = m.epsilon(1e-5)
    ours = Q.epsilon(c, z, q, 1e-5, partitions=2)
    assert ours.epsilon >= exact.lower
    d = Q.delta(c, z, q, exact.lower, partitions=2)
    assert d.delta >= m.delta(exact.lower).lower


def test_cyclic_poisson_with_more_bands_than_groups():
    from dpamp.families.matrix import amplified_epsilon
    n = 24
    c = np.eye(n) + 0.6 * np.eye(n, k=-1) + 0.3 * np.eye(n, k=-2)
    m = dp.MatrixMechanism(c, 3.0, participation=dp.CyclicPoisson(0.05, 2))
    assert m.route == "noise-split"
    g = amplified_epsilon(m, 1e-6)
    assert g.method == "noise-split" and g.epsilon < _plain(m).epsilon(1e-6, method="profile").epsilon
    # conditional composition: the worst group answers, no smaller than either group alone
    e0 = Q._best_epsilon(lambda d: dominating_steps(c, 3.0, 0.05, d, 10, np.arange(n) % 2 == 0),
                         1e-6, Q.ETA).epsilon
    cond = Q.epsilon(c, 3.0, 0.05, 1e-6, partitions=2).epsilon
    assert cond >= e0 and f"conditional-composition gave {cond:.6g}" in g.note


@pytest.mark.parametrize("n", [2, 3])
def test_balls_in_bins_one_epoch_is_above_the_exact_pair(n):
    """One epoch of n steps: the record joins one uniform step, P = (1/n) sum_j N(C e_j, .)
    against N(0, .); its exact delta (quadrature) is at most ours."""
    c, z = C3[:n, :n], 1.0
    pats, logw = np.eye(n), np.full(n, -math.log(n))
    for eps in (0.3, 1.0):
        ours = Q.delta_bins(c, z, n, eps)
        truth = exact_delta(c, z, None, eps, pats=pats, logw=logw)
        assert truth <= ours.delta, (eps, truth, ours)
    r = Q.epsilon_bins(c, z, n, 1e-3)
    assert exact_delta(c, z, None, r.epsilon, pats=pats, logw=logw) <= 1e-3


def test_balls_in_bins_of_one_step_is_the_gaussian():
    """bins = 1: every step is taken; the bound is the Gaussian of sensitivity |C 1| (every
    posterior bound is 1) at delta less the slack (a tenth of delta)."""
    c, z = C3, 2.0
    r = Q.epsilon_bins(c, z, 1, 1e-6)
    g = dp.Gaussian(1.0, float(np.linalg.norm(c.sum(1))) / z)
    assert r.epsilon >= g.epsilon(1e-6).lower
    assert r.epsilon <= g.epsilon(r.delta_pld).epsilon * (1 + 2e-3)   # the PLD grid


def test_balls_in_bins_banded_and_checked():
    from dpamp.amplification.matrix.bins import dominating_steps_bins
    n = 40
    c = np.eye(n) + 0.5 * np.eye(n, k=-1) + 0.25 * np.eye(n, k=-2)
    r = Q.epsilon_bins(c, 16.0, 10, 1e-6)
    m = dp.MatrixMechanism(c, 16.0, participation=dp.BallsInBins(10))
    assert r.epsilon < _plain(m).epsilon(1e-6, method="profile").epsilon   # (not at z = 4: docs)
    assert len(r.steps.parts) <= 12     # one mixture per epoch position (the first epoch's own)
    from dpamp.families.matrix import amplified_epsilon
    g = amplified_epsilon(m, 1e-6)
    assert g.method in ("conditional-composition", "noise-split") and g.epsilon <= r.epsilon
    assert f"conditional-composition gave {r.epsilon:.6g}" in g.note or g.epsilon == r.epsilon
    with pytest.raises(ValueError, match="bins"):
        dominating_steps_bins(c, 1.0, 7, 1e-9)


@pytest.mark.slow
def test_random_tiny_cases_stay_above_the_exact_pairs():
    """Drawn C >= 0 (n = 2, 3), noise, rates and epsilons: the exact delta of the fixed-
    direction pair (Poisson, and balls in bins over one epoch) never exceeds ours."""
    rng = np.random.default_rng(1)
    for _ in range(12):
        n = int(rng.integers(2, 4))
        c = np.tril(rng.uniform(0, 1.5, (n, n))) + 0.3 * np.eye(n)
        z = float(rng.choice([0.7, 1.0, 2.0, 4.0]))
        q = float(rng.choice([0.05, 0.2, 0.5, 0.9]))
        for eps in (0.1, 1.0, 3.0):
            assert exact_delta(c, z, q, eps) <= Q.delta(c, z, q, eps).delta
        pats, logw = np.eye(n), np.full(n, -math.log(n))
        for eps in (0.1, 1.0):
            assert exact_delta(c, z, None, eps, pats=pats, logw=logw) <= \
                Q.delta_bins(c, z, n, eps).delta


def test_auto_answers_by_the_noise_split_and_names_the_route():
    """The registered methods: auto takes "noise-split" (no conditional composition) for one
    amplifiable matrix mechanism, "conditional-composition" by name runs every route; a
    composition of one, or a route they do not bound, is refused with the reason."""
    c = np.eye(20) + 0.5 * np.eye(20, k=-1)
    m = dp.MatrixMechanism(c, 4.0, participation=dp.Poisson(0.02))
    g = m.epsilon(1e-6)
    assert g.method == "noise-split" and 0 < g.lower <= g.epsilon
    assert g.epsilon < _plain(m).epsilon(1e-6, method="profile").epsilon
    assert m.epsilon(1e-6, method="noise-split") == g
    assert "conditional-composition" not in g.note
    h = m.epsilon(1e-6, method="conditional-composition")
    assert h.epsilon == g.epsilon and "route conditional-composition gave" in h.note
    assert not dp.supports(m * 2, "conditional-composition")
    assert not dp.supports(m * 2, "noise-split")
    cyclic = dp.MatrixMechanism(np.eye(20), 4.0, participation=dp.CyclicPoisson(0.1, 2))
    assert cyclic.route == "cyclic-poisson"
    with pytest.raises(ValueError, match="does not apply"):
        cyclic.epsilon(1e-6, method="conditional-composition")
