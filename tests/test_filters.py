"""Adaptive budgets (dpamp.accounting.filters): privacy filters and odometers are valid when each
step is chosen from the earlier outputs.

How it is shown:

* **Adaptive games, exact.** An adversary picks the next randomized response's epsilon (or the
  next Gaussian's sigma) from the last output, proposes it to the filter, falls back on a
  cheaper step when it is refused and stops when nothing fits. The privacy of the whole halted
  interaction is computed exactly: every transcript enumerated for randomized response; for
  Gaussians, the privacy loss of the interaction on a grid, rounded up (and down) step by step,
  which brackets the exact hockey-stick divergence (the bracket's width is the error bound).
  The filter's interaction stays within its budget.
* **The natural PLD filter is not valid.** On a two-step game (a randomized response, then,
  depending on its output, a second randomized response or a Gaussian), the filter that composes
  each path's exact PLD and runs a step when the path's composition fits (epsilon, delta)
  approves both paths, and the interaction's exact delta is above the budget: the phenomenon of
  arXiv 2602.06756 (our own instance of it, computed in closed form).
* **Non-adaptive sequences.** A filter never allows more steps than the fixed-plan accountant
  proves (the steps it allowed are (epsilon, delta)-DP by the PLD), and the Gaussian-DP filter
  allows more Gaussian steps than the Rényi filter.
* **Properties** (hypothesis): a refused step costs nothing, ``remaining`` never increases,
  validation errors name the parameter.
* **OpenDP** (skipped without it): the steps its fully adaptive zCDP filter allows at the same
  (epsilon, delta), beside dpamp's.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import ndtr

import dpamp as dp

# --- exact privacy of adaptive randomized-response games -------------------------------------


def rr(eps):
    return dp.RandomizedResponse.from_epsilon(eps)


class Ledgers:
    """The filter after na steps of mechanism A and nb of B (the order does not matter to any
    ledger: each is a sum), built incrementally."""

    def __init__(self, make_filter, mechs):
        self.mechs, self.memo = mechs, {(0, 0): make_filter()}

    def get(self, na, nb):
        if (na, nb) not in self.memo:
            prev, m = ((na - 1, nb), self.mechs[0]) if na else ((na, nb - 1), self.mechs[1])
            f = copy.deepcopy(self.get(*prev))
            assert f.try_spend(m)
            self.memo[(na, nb)] = f
        return self.memo[(na, nb)]


def play_rr(make_filter, eps_a, eps_b, max_steps=60):
    """Every transcript of the adversary that proposes RR(eps_a) first and after a 1 (evidence
    for the target bit), RR(eps_b) after a 0, falls back on the other when the filter refuses
    and stops when neither fits. Transcripts are grouped by what decides their probabilities
    and the filter's state: (steps of each kind, ones among them, last output), with their
    multiplicity. Returns [(multiplicity, P(path), Q(path))], P when the bit is 1, Q when 0."""
    eps = (eps_a, eps_b)
    acc = [1 / (1 + math.exp(-e)) for e in eps]       # Pr[report the true bit]
    cache = {}
    filters = Ledgers(make_filter, [rr(e) for e in eps])

    def fits(na, nb, w):
        if (na, nb, w) not in cache:
            cache[(na, nb, w)] = filters.get(na, nb).can_spend(rr(eps[w]))
        return cache[(na, nb, w)]

    states = {(0, 0, 0, 0, 1): 1}
    out = []
    while states:
        nxt = {}
        for (na, nb, ka, kb, last), mult in states.items():
            order = (0, 1) if last else (1, 0)
            w = next((w for w in order if na + nb < max_steps and fits(na, nb, w)), None)
            if w is None:
                p = acc[0] ** ka * (1 - acc[0]) ** (na - ka) * acc[1] ** kb * \
                    (1 - acc[1]) ** (nb - kb)
                q = (1 - acc[0]) ** ka * acc[0] ** (na - ka) * (1 - acc[1]) ** kb * \
                    acc[1] ** (nb - kb)
                out.append((mult, p, q))
                continue
            for bit in (0, 1):
                key = (na + (w == 0), nb + (w == 1), ka + (w == 0) * bit, kb + (w == 1) * bit,
                       bit)
                nxt[key] = nxt.get(key, 0) + mult
        states = nxt
    return out, max(na + nb for na, nb, _ in cache) + 1


def hockey(paths, eps):
    """max of the two directions of sum over transcripts of [P - e^eps Q]_+."""
    m = np.array([a for a, _, _ in paths], dtype=float)
    p = np.array([b for _, b, _ in paths])
    q = np.array([c for _, _, c in paths])
    return max((m * np.maximum(p - math.exp(eps) * q, 0)).sum(),
               (m * np.maximum(q - math.exp(eps) * p, 0)).sum())


@pytest.mark.parametrize("method, eps, delta, ea, eb", [
    ("rdp", 3.0, 1e-3, 0.1, 0.05), ("rdp", 4.0, 1e-6, 0.2, 0.1),
    ("advanced", 1.0, 1e-2, 0.1, 0.03), ("basic", 1.0, 1e-3, 0.25, 0.1),
    ("rruv", 2.0, 1e-1, 0.1, 0.05)])
def test_rr_game_stays_within_budget(method, eps, delta, ea, eb):
    paths, steps = play_rr(lambda: dp.Filter(eps, delta, method=method), ea, eb)
    total_p = sum(m * p for m, p, _ in paths)
    total_q = sum(m * q for m, _, q in paths)
    assert math.isclose(total_p, 1.0) and math.isclose(total_q, 1.0)
    truth = hockey(paths, eps)
    pure = max(len(paths), 1)
    print(f"{method} ({eps}, {delta}), RR {ea}/{eb}: up to {steps} adaptive steps, "
          f"{pure} transcript classes, exact delta({eps}) = {truth:.4e} <= {delta:g}")
    assert truth <= delta
    assert steps >= 6
    if method != "basic":
        assert truth > 0          # more than basic composition allows: delta is really used


def test_rr_game_rdp_one_order_is_the_feldman_zrnic_filter():
    paths, steps = play_rr(lambda: dp.Filter(3.0, 1e-3, orders=[8.0]), 0.1, 0.05)
    assert 0 < hockey(paths, 3.0) <= 1e-3 and steps >= 40


# --- the natural PLD filter is not valid: closed-form counterexample -----------------------


def rr_hockey(a, t):
    """H_{e^t}(RR_a): sum_y [P(y) - e^t Q(y)]_+ for P = (e^a, 1)/(1+e^a), Q swapped."""
    return (max(math.exp(a) - math.exp(t), 0) + max(1 - math.exp(t + a), 0)) / (1 + math.exp(a))


def gauss_hockey(mu, t):
    """H_{e^t}(N(mu, 1) || N(0, 1)), any real t (symmetric in the two orders)."""
    return float(ndtr(-t / mu + mu / 2) - math.exp(t) * ndtr(-t / mu - mu / 2))


def composed(e1, second, t):
    """delta(t) of RR(e1) followed by a mechanism whose hockey curve is ``second``, both
    orders: the first output's loss is +-e1 with P-probabilities p+, p-."""
    pp = 1 / (1 + math.exp(-e1))
    return pp * second(t - e1) + (1 - pp) * second(t + e1)


def test_natural_pld_filter_goes_over_budget():
    eps, delta, e1 = 1.0, 1e-3, 0.05
    from dpamp.core.roots import bisect
    # the largest RR(a) and the smallest-sigma Gaussian that each fit after RR(e1), exactly
    lo, _ = bisect(lambda a: composed(e1, lambda t: rr_hockey(a, t), eps) > delta, 0.0, 5.0,
                   iterations=100)
    a = lo
    lo, _ = bisect(lambda m: composed(e1, lambda t: gauss_hockey(m, t), eps) > delta, 1e-3,
                   5.0, iterations=100)
    mu = lo
    # the natural filter, run with dpamp's PLD (a proven upper bound of each path's delta),
    # approves both paths: RR(e1) + RR(a) and RR(e1) + Gaussian(1/mu) are (eps, delta)-DP
    path_rr = rr(e1) + rr(a * (1 - 1e-6))
    path_g = rr(e1) + dp.Gaussian(1 / (mu * (1 - 1e-6)))
    for path in (path_rr, path_g):
        assert path.delta(eps, method="pld").delta <= delta
    # the adaptive interaction: after a 1 (loss +e1) run RR(a), after a 0 run the Gaussian
    pp = 1 / (1 + math.exp(-e1))
    forward = pp * rr_hockey(a, eps - e1) + (1 - pp) * gauss_hockey(mu, eps + e1)
    backward = (1 - pp) * rr_hockey(a, eps + e1) + pp * gauss_hockey(mu, eps - e1)
    truth = max(forward, backward)
    print(f"natural PLD filter: each path delta <= {delta}, the interaction's exact delta "
          f"{truth:.5f} ({truth / delta:.3f} x budget); a = {a:.4f}, Gaussian mu = {mu:.4f}")
    assert truth > delta * 1.25
    # dpamp's valid filters refuse to be fooled: the Rényi filter's interaction stays within
    f = dp.Filter(eps, delta)
    assert f.try_spend(rr(e1))
    after_1, after_0 = f.can_spend(rr(a)), f.can_spend(dp.Gaussian(1 / mu))
    f_p = pp * (rr_hockey(a, eps - e1) if after_1 else float(eps - e1 < 0))
    f_p += (1 - pp) * (gauss_hockey(mu, eps + e1) if after_0 else 0.0)
    assert f_p <= delta
    with pytest.raises(ValueError, match="not valid under full adaptivity"):
        dp.Filter(eps, delta, method="pld")


# --- exact privacy of adaptive Gaussian games: the loss on a grid, rounded both ways -------


H = 0.004           # grid step of the privacy loss
C = 0.5             # the adversary's threshold on the last output


def step_kernel(sigma, measure, bit, up):
    """The loss l = (y - 1/2) / sigma^2 of one Gaussian step (P: y ~ N(1, sigma^2), Q: y ~
    N(0, sigma^2)) jointly with the bit [y > C], on the grid, rounded up (``up``) or down.
    Returns (first index, masses, mass at +inf, mass at -inf)."""
    mean = 1.0 if measure == "P" else 0.0
    lo_l, hi_l = (0.5 - 1 - 12 * sigma) / sigma ** 2, (0.5 + 12 * sigma) / sigma ** 2
    k0, k1 = math.floor(lo_l / H), math.ceil(hi_l / H)
    edges_l = np.arange(k0, k1 + 1) * H
    y = sigma ** 2 * edges_l + 0.5
    y = np.maximum(y, C) if bit else np.minimum(y, C)
    cdf = ndtr((y - mean) / sigma)
    cells = np.diff(cdf)                                 # mass of (e_k, e_k+1], k = k0..k1-1
    below, above = cdf[0], 1.0 - cdf[-1]
    if bit:
        below = 0.0 if C >= y[0] else below
    else:
        above = 0.0
    if up:   # cell k -> e_{k+1}; below -> e_k0; above -> +inf
        masses = np.concatenate([[below], cells])
        return k0, masses, above, 0.0
    masses = np.concatenate([cells, [above]])           # cell k -> e_k; above -> e_k1
    return k0, masses, 0.0, below                       # below -> -inf


class GaussGame:
    """The adversary proposes sigma_a after a 1 (y > C) and first, sigma_b after a 0, falling
    back on the other sigma when refused; ``fits(na, nb, which)`` asks a fresh filter."""

    def __init__(self, make_filter, sigma_a, sigma_b, max_steps=30):
        self.make, self.sig, self.max = make_filter, (sigma_a, sigma_b), max_steps
        self.cache = {}

    def fits(self, na, nb, which):
        key = (na, nb, which)
        if key not in self.cache:
            if not hasattr(self, "filters"):
                self.filters = Ledgers(self.make, [dp.Gaussian(s) for s in self.sig])
            self.cache[key] = self.filters.get(na, nb).can_spend(dp.Gaussian(self.sig[which]))
        return self.cache[key]

    def expect(self, g, measure, up):
        """E_measure[g(L)] over the halted interaction, L rounded up (``up``) or down."""
        from scipy.signal import fftconvolve
        states = {(0, 0, None): (0, np.array([1.0]))}
        total = 0.0
        g_inf = {1: g(math.inf), -1: g(-math.inf)}
        for _ in range(self.max + 1):
            nxt = {}
            for (na, nb, last), (off, pmf) in states.items():
                order = (0, 1) if last in (None, 1) else (1, 0)
                which = next((w for w in order if self.fits(na, nb, w)), None)
                if which is None or na + nb >= self.max:
                    total += float(np.dot(pmf, g((off + np.arange(pmf.size)) * H)))
                    continue
                for bit in (0, 1):
                    k0, ker, pinf, minf = step_kernel(self.sig[which], measure, bit, up)
                    mass = pmf.sum()
                    total += mass * (pinf * g_inf[1] + minf * g_inf[-1])
                    new = np.maximum(fftconvolve(pmf, ker), 0.0)
                    key = (na + (which == 0), nb + (which == 1), bit)
                    noff = off + k0
                    if key in nxt:
                        o2, p2 = nxt[key]
                        lo = min(o2, noff)
                        arr = np.zeros(max(o2 + p2.size, noff + new.size) - lo)
                        arr[o2 - lo:o2 - lo + p2.size] += p2
                        arr[noff - lo:noff - lo + new.size] += new
                        nxt[key] = (lo, arr)
                    else:
                        nxt[key] = (noff, new)
            states = nxt
            if not states:
                break
        assert not states
        return total

    def delta_bracket(self, eps):
        """(lower, upper) of the exact delta(eps) of the interaction, both orders."""
        fwd = lambda L: -np.expm1(np.minimum(eps - L, 700))     # (1 - e^{eps - L})_+
        bwd = lambda L: -np.expm1(np.minimum(eps + L, 700))
        pos = lambda f: (lambda L: np.maximum(f(L), 0.0))
        up = max(self.expect(pos(fwd), "P", True), self.expect(pos(bwd), "Q", False))
        lo = max(self.expect(pos(fwd), "P", False), self.expect(pos(bwd), "Q", True))
        return lo, up


def test_gaussian_game_gdp_filter_is_mu_gdp():
    eps, delta = 3.0, 0.05
    make = lambda: dp.Filter(eps, delta, method="gdp")
    mu = make().ledger.mu
    game = GaussGame(make, 1.0, 2.0)
    for e in (0.5, 1.5, 3.0, 4.5):
        lo, up = game.delta_bracket(e)
        bound = gauss_hockey(mu, e)
        print(f"GDP filter (mu = {mu:.4f}): exact delta({e}) in [{lo:.6e}, {up:.6e}] "
              f"<= G_mu's {bound:.6e}")
        assert lo <= up and up - lo < 5e-2 * bound
        assert up <= bound
    assert max(na + nb for na, nb, _ in game.cache) >= 4     # several adaptive steps ran


def test_gaussian_game_rdp_filter_within_budget():
    eps, delta = 3.0, 1e-3
    game = GaussGame(lambda: dp.Filter(eps, delta), 2.5, 5.0)
    lo, up = game.delta_bracket(eps)
    print(f"Rényi filter: exact delta({eps}) in [{lo:.4e}, {up:.4e}] <= {delta}")
    assert up <= delta
    assert max(na + nb for na, nb, _ in game.cache) >= 4


def test_gaussian_game_bracket_matches_closed_form():
    """Sanity of the oracle: a non-adaptive run (one sigma) is the Gaussian G_{sqrt(n)/sigma}."""
    game = GaussGame(lambda: dp.Filter(3.0, 0.05, method="gdp"), 1.5, 1.5)
    n = max(na for na, _, _ in game.cache) if game.cache else None
    lo, up = game.delta_bracket(1.0)
    n = max(na + nb for na, nb, _ in game.cache)
    truth = gauss_hockey(math.sqrt(n) / 1.5, 1.0)
    assert lo <= truth <= up


# --- non-adaptive sequences --------------------------------------------------------------------


def steps_allowed(f, m, limit=100_000):
    n = 0
    while n < limit and f.try_spend(m):
        n += 1
    return n


@pytest.mark.parametrize("method, m", [
    ("rdp", dp.Gaussian(10.0)), ("gdp", dp.Gaussian(10.0)), ("rdp", dp.Laplace(20.0)),
    ("advanced", dp.Laplace(20.0)), ("rruv", dp.Laplace(20.0)), ("basic", dp.Laplace(5.0)),
    ("rdp", dp.Gaussian(1.0).subsample(dp.Poisson(0.01))),
    ("advanced", dp.EpsDelta(0.05, 1e-9))])
def test_filter_never_beats_the_fixed_plan_accountant(method, m):
    eps, delta = 1.5, 1e-5
    kw = {"delta_steps": 5e-6} if method == "advanced" else {}
    n = steps_allowed(dp.Filter(eps, delta, method=method, **kw), m)
    assert n >= 1
    fixed = (m * n).epsilon(delta, method="pld")
    print(f"{method} {m}: {n} steps; fixed plan epsilon {fixed.epsilon:.4f} "
          f"(lower {fixed.lower}) <= {eps}")
    assert fixed.lower is None or fixed.lower <= eps


def one_order_steps(eps, delta, alpha, m):
    try:
        return steps_allowed(dp.Filter(eps, delta, orders=[alpha]), m)
    except ValueError:          # no budget at that order
        return 0


def test_gdp_filter_allows_more_gaussian_steps_than_rdp():
    """Smith & Thakurta's GDP filter is exact for Gaussians; a Rényi filter pays the RDP ->
    (epsilon, delta) conversion, even at the best single order chosen in hindsight."""
    for sigma, eps, delta in ((20.0, 1.0, 1e-5), (10.0, 2.0, 1e-6), (50.0, 0.5, 1e-5)):
        m = dp.Gaussian(sigma)
        n_gdp = steps_allowed(dp.Filter(eps, delta, method="gdp"), m)
        n_rdp = steps_allowed(dp.Filter(eps, delta), m)
        n_one = max(one_order_steps(eps, delta, a, m) for a in np.geomspace(1.5, 200, 40))
        print(f"sigma {sigma}, ({eps}, {delta}): GDP filter {n_gdp} steps, Rényi {n_rdp} "
              f"(16 orders), {n_one} (best single order in hindsight)")
        assert n_gdp > n_one >= n_rdp >= 1
        # the GDP filter is exact for Gaussians: one more step breaks the budget
        assert (m * (n_gdp + 1)).delta(eps).lower > delta


def test_advanced_filter_beats_rruv_and_basic_for_many_small_steps():
    m = dp.Laplace(200.0)                    # 0.005-DP
    counts = {meth: steps_allowed(dp.Filter(1.0, 1e-6, method=meth), m)
              for meth in ("advanced", "rruv", "basic")}
    print(counts)
    assert counts["advanced"] > counts["rruv"] and counts["advanced"] > counts["basic"]


# --- odometers -------------------------------------------------------------------------------


def test_rdp_odometer_bounds_the_fixed_plan_at_every_step():
    o = dp.Odometer(1e-5)
    g = dp.Gaussian(2.0)
    seen = []
    for n in range(1, 6):
        seen.append(o.spend(g))
        assert seen[-1] >= (g * n).epsilon(1e-5).lower
    assert seen == sorted(seen)
    o2 = dp.Odometer(1e-5)
    for _ in range(3):
        o2.spend(dp.Laplace(10.0))
    assert o2.epsilon() <= 0.3 + 1e-12          # capped by the pure epsilons


def test_gdp_odometer_time_uniform_monte_carlo():
    """The GDP odometer's bound holds over a whole adaptive run: simulate the exact privacy
    loss of Gaussian steps whose sigma follows the last output and count the runs in which it
    ever reaches the reported bound (at most about delta; checked at delta = 0.05)."""
    rng = np.random.default_rng(3)
    delta, runs, steps = 0.05, 4000, 40
    odo = dp.Odometer(delta, method="gdp", tune=4.0)
    bound = {}                       # (steps of sigma 2, steps of sigma 4) -> reported epsilon
    crossed = 0
    for _ in range(runs):
        L, na, nb, last = 0.0, 0, 0, 1
        for _t in range(steps):
            sigma = 2.0 if last else 4.0
            na, nb = na + (sigma == 2.0), nb + (sigma == 4.0)
            if (na, nb) not in bound:
                o = copy.deepcopy(odo)
                for s, k in ((2.0, na), (4.0, nb)):
                    for _ in range(k):
                        o.spend(dp.Gaussian(s))
                bound[(na, nb)] = o.epsilon()
            y = rng.normal(1.0, sigma)               # under P
            L += (y - 0.5) / sigma ** 2
            last = int(y > 0.5)
            if L >= bound[(na, nb)]:
                crossed += 1
                break
    rate = crossed / runs
    print(f"GDP odometer: {crossed}/{runs} adaptive runs ever reached the bound "
          f"(delta {delta})")
    assert rate <= delta + 3 * math.sqrt(delta * (1 - delta) / runs)


def test_odometer_refuses_pld():
    with pytest.raises(ValueError, match="not valid under full adaptivity"):
        dp.Odometer(1e-5, method="pld")


# --- individual filters ------------------------------------------------------------------


def test_individual_filter_charges_each_record_its_own_norm():
    n = 5
    f = dp.IndividualFilter(2.0, 1e-5, n, noise_multiplier=2.0, orders=[8.0])
    norms = np.array([1.0, 0.5, 0.25, 0.0, 1.0])
    steps = 0
    while f.active[0] or f.active[4]:
        mask = f.charge(norms)
        steps += 1
        assert steps < 1000
    # a record of norm C runs exactly as long as a one-order Rényi filter on Gaussian(z)
    solo = steps_allowed(dp.Filter(2.0, 1e-5, orders=[8.0]), dp.Gaussian(2.0))
    assert steps - 1 == solo
    assert mask[3] and mask[2] and mask[1]          # smaller norms are still in
    lived = {}
    for i, r in enumerate((0.5, 0.25)):
        g = dp.IndividualFilter(2.0, 1e-5, 1, noise_multiplier=2.0, orders=[8.0])
        k = 0
        while g.charge([r])[0]:
            k += 1
        lived[r] = k
    assert lived[0.5] == steps_allowed(dp.Filter(2.0, 1e-5, orders=[8.0]), dp.Gaussian(4.0))
    assert lived[0.25] > lived[0.5] > solo


def test_individual_filter_poisson_matches_subsampled_rdp():
    f = dp.IndividualFilter(1.0, 1e-5, 2, noise_multiplier=1.0, sample_rate=0.01)
    r = f.step_rdp([1.0, 0.5])
    m = dp.Gaussian(1.0).subsample(dp.Poisson(0.01))
    assert np.all(r[0] >= m.rdp(f.orders))
    assert np.all(r[0] <= m.rdp(f.orders) * (1 + 1e-9))
    half = dp.Gaussian(2.0).subsample(dp.Poisson(0.01)).rdp(f.orders)
    assert np.all(r[1] >= half)       # rounded up on the grid
    steps = 0
    while f.charge([1.0, 0.5])[0]:
        steps += 1
    assert steps == steps_allowed(dp.Filter(1.0, 1e-5), m)


def test_individual_filter_validation():
    f = dp.IndividualFilter(1.0, 1e-5, 3, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="norms"):
        f.charge([1.0, 2.0, 0.5])
    with pytest.raises(ValueError, match="norms"):
        f.charge([1.0, 0.5])
    with pytest.raises(ValueError, match="noise_multiplier"):
        dp.IndividualFilter(1.0, 1e-5, 3, noise_multiplier=0.0)


# --- what is refused, and why --------------------------------------------------------------


def test_refusals_say_why():
    with pytest.raises(ValueError, match="method='rdp'"):
        dp.Filter(1.0, 1e-5, method="profile")
    with pytest.raises(NotImplementedError, match="2602.06756"):
        dp.Filter(1.0, 1e-5, method="gdp").try_spend(dp.Gaussian(5.0).subsample(
            dp.Poisson(0.01)))
    with pytest.raises(NotImplementedError, match="not a proven bound"):
        dp.Filter(1.0, 1e-5, method="subsampled-gdp")
    with pytest.raises(ValueError, match="Gaussian mechanisms"):
        dp.Filter(1.0, 1e-5, method="gdp").try_spend(dp.Laplace(1.0))
    with pytest.raises(ValueError, match="step_delta"):
        dp.Filter(1.0, 1e-5, method="advanced").try_spend(dp.Gaussian(5.0))
    with pytest.raises(ValueError, match="relation"):
        f = dp.Filter(5.0, 1e-5)
        f.try_spend(dp.Gaussian(5.0))
        f.try_spend(dp.Gaussian(5.0, relation=dp.SUBSTITUTION))
    with pytest.raises(ValueError, match="Rényi"):
        dp.Filter(1.0, 1e-5).try_spend(dp.EpsDelta(0.1, 1e-9))


# --- properties ----------------------------------------------------------------------------

MECHS = st.one_of(
    st.floats(0.5, 20).map(dp.Gaussian),
    st.floats(0.5, 50).map(dp.Laplace),
    st.floats(0.01, 2.0).map(rr))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["rdp", "advanced", "rruv", "basic"]), st.lists(MECHS, max_size=12),
       st.floats(0.5, 5.0))
def test_refused_steps_cost_nothing_and_remaining_never_increases(method, steps, eps):
    f = dp.Filter(eps, 1e-4, method=method, step_delta=1e-6)
    last = f.remaining
    assert last == 1.0
    for m in steps:
        before = copy.deepcopy(f.ledger.__dict__)
        ok = f.try_spend(m)
        if not ok:
            after = f.ledger.__dict__
            for k, v in before.items():
                assert np.array_equal(np.asarray(v), np.asarray(after[k])), k
        assert f.remaining <= last
        last = f.remaining


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(1.0, 20.0), max_size=10), st.floats(0.5, 5.0))
def test_gdp_refused_costs_nothing(sigmas, eps):
    f = dp.Filter(eps, 1e-5, method="gdp")
    last = f.remaining
    for s in sigmas:
        spent = f.ledger.spent
        if not f.try_spend(dp.Gaussian(s)):
            assert f.ledger.spent == spent
        assert f.remaining <= last
        last = f.remaining


@pytest.mark.parametrize("kwargs, name", [
    ({"epsilon": 0.0, "delta": 1e-5}, "epsilon"), ({"epsilon": 1.0, "delta": 0.0}, "delta"),
    ({"epsilon": 1.0, "delta": 1e-5, "orders": [0.5]}, "orders"),
    ({"epsilon": 1.0, "delta": 1e-5, "step_delta": 2.0}, "step_delta"),
    ({"epsilon": 1.0, "delta": 1e-5, "method": "advanced", "delta_steps": 1e-4},
     "delta_steps"),
    ({"epsilon": 1.0, "delta": 0.5, "method": "rruv"}, "delta"),
    ({"epsilon": 1.0, "delta": 1e-5, "method": "nope"}, "method")])
def test_validation_errors_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        dp.Filter(**kwargs)


def test_odometer_validation():
    with pytest.raises(ValueError, match="delta"):
        dp.Odometer(0.0)
    with pytest.raises(ValueError, match="tune"):
        dp.Odometer(1e-5, method="gdp", tune=-1.0)


# --- OpenDP -----------------------------------------------------------------------------------


def opendp_zcdp_steps(sigma, eps, delta):
    """Steps of N(0, sigma^2) (sensitivity 1) that OpenDP's fully adaptive zCDP filter allows at
    the largest rho whose OpenDP conversion gives (eps, delta)."""
    odp = pytest.importorskip("opendp.prelude")
    odp.enable_features("contrib")
    dom, met = odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float)

    def eps_of_rho(rho):
        m = odp.m.make_gaussian(dom, met, scale=math.sqrt(1 / (2 * rho)))
        return odp.c.make_fix_delta(odp.c.make_zCDP_to_approxDP(m), delta).map(1.0)[0]

    lo, hi = 1e-6, 10.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if eps_of_rho(mid) <= eps else (lo, mid)
    od = odp.c.make_fully_adaptive_composition(dom, met, odp.zero_concentrated_divergence())
    qbl = odp.c.make_privacy_filter(od, d_in=1.0, d_out=lo)(1.0)
    g = odp.m.make_gaussian(dom, met, scale=sigma)
    n = 0
    while n < 100_000:
        try:
            qbl(g)
        except Exception:
            break
        n += 1
    return n


def test_against_opendp_zcdp_filter():
    pytest.importorskip("opendp")
    for sigma, eps, delta in ((20.0, 1.0, 1e-5), (20.0, 2.0, 1e-6)):
        n_odp = opendp_zcdp_steps(sigma, eps, delta)
        n_rdp = steps_allowed(dp.Filter(eps, delta), dp.Gaussian(sigma))
        n_zcdp = steps_allowed(dp.Filter(eps, delta, method="zcdp"), dp.Gaussian(sigma))
        n_gdp = steps_allowed(dp.Filter(eps, delta, method="gdp"), dp.Gaussian(sigma))
        print(f"sigma {sigma} ({eps}, {delta}): OpenDP zCDP filter {n_odp}, dpamp rdp "
              f"{n_rdp}, zcdp {n_zcdp}, gdp {n_gdp}")
        assert n_gdp >= n_odp and n_zcdp >= n_odp
        # every filter is sound: none allows more than the fixed plan proves
        assert (dp.Gaussian(sigma) * n_odp).epsilon(delta).lower <= eps


# --- where users meet it: opacus-style accountant, the command line --------------------------


def test_opacus_accountant_budget_refuses_a_step():
    acc = dp.OpacusAccountant(budget=(2.0, 1e-5))
    n = 0
    while acc.try_step(noise_multiplier=1.0, sample_rate=0.01):
        n += 1
        assert n < 100_000
    assert n > 100 and n == steps_allowed(dp.Filter(2.0, 1e-5), dp.Gaussian(1.0).subsample(
        dp.Poisson(0.01)))
    assert acc.history == [(1.0, 0.01, n)]
    with pytest.raises(dp.BudgetExhausted, match="does not fit"):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    assert acc.history == [(1.0, 0.01, n)]              # the refused step is not recorded
    assert acc.get_epsilon(1e-5) <= 2.0
    acc.step(noise_multiplier=50.0, sample_rate=0.01)   # a much cheaper step may still fit
    with pytest.raises(ValueError, match="per-step"):
        dp.OpacusAccountant(sampler="allocation", budget=(1.0, 1e-5))
    with pytest.raises(ValueError, match="budget"):
        dp.OpacusAccountant(budget=3.0)


@pytest.mark.slow   # (16 s: a whole training log replayed through the CLI)
def test_cli_filter_replays_a_log(tmp_path, capsys):
    from dpamp.cli.main import main
    log = tmp_path / "steps.jsonl"
    log.write_text('# adaptive: the noise was lowered after 500 steps\n'
                   '{"noise_multiplier": 1.2, "sample_rate": 0.004, "repeat": 500}\n'
                   '\n'
                   '{"noise_multiplier": 0.9, "sample_rate": 0.004, "repeat": 100000}\n'
                   + dp.Laplace(50.0).to_json() + "\n")
    assert main(["filter", str(log), "--epsilon", "2", "--delta", "1e-5", "--stop"]) == 0
    out = capsys.readouterr().out
    assert "the budget ran out at line 4" in out and "Feldman & Zrnic" in out
    assert main(["filter", str(log), "--epsilon", "2", "--delta", "1e-5", "--json"]) == 0
    import json
    d = json.loads(capsys.readouterr().out)
    f = dp.Filter(2.0, 1e-5)
    n = sum(f.try_spend(dp.Gaussian(1.2).subsample(dp.Poisson(0.004))) for _ in range(500))
    n += steps_allowed(f, dp.Gaussian(0.9).subsample(dp.Poisson(0.004)))
    assert d["first_refused"]["line"] == 4 and d["accepted"] == n
    assert main(["filter", str(log), "--epsilon", "2", "--delta", "1e-5",
                 "--method", "pld"]) == 2
    assert "not valid under full adaptivity" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"noise_multiplier": -1}\n')
    assert main(["filter", str(bad), "--epsilon", "2", "--delta", "1e-5"]) == 2
    assert "line 1" in capsys.readouterr().err
