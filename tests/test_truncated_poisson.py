"""Truncated Poisson sampling (dp.TruncatedPoisson; dpamp.amplification.truncation).

Truth: for a small dataset the output laws of the two neighbours are finite mixtures of 1-D
Gaussians (enumerating K ~ Bin(n-1, q) and whether the differing record is kept); their
hockey-stick divergence is integrated exactly between the roots of p - e^eps q (normal CDFs, 30
digits). Instances: the others contribute c (|c| <= 1) and the differing record +1."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import dpamp as dp
from dpamp.amplification.truncation import (binomial_tails, instance_loss, lower_loss,
                                             truncation_weights)


def _laws(q, b, n, c, v=1.0):
    """(P, Q): with the record (n records) and without it, as [(weight, mean)]."""
    P: dict = {}
    Q: dict = {}
    with mp.workdps(40):
        q = mp.mpf(q)
        for k in range(n):
            pk = mp.binomial(n - 1, k) * q ** k * (1 - q) ** (n - 1 - k)
            base = c * min(k, b)
            Q[base] = Q.get(base, 0) + pk
            P[base] = P.get(base, 0) + pk * (1 - q)
            if k + 1 <= b:
                P[c * k + v] = P.get(c * k + v, 0) + pk * q
            else:
                keep = mp.mpf(b) / (k + 1)
                P[c * (b - 1) + v] = P.get(c * (b - 1) + v, 0) + pk * q * keep
                P[c * b] = P.get(c * b, 0) + pk * q * (1 - keep)
    return [(w, m) for m, w in P.items()], [(w, m) for m, w in Q.items()]


def _hockey(P, Q, eps, sigma):
    """H_{e^eps}(P || Q) for mixtures of N(m, sigma^2) (module docstring)."""
    with mp.workdps(30):
        x, s = mp.exp(eps), mp.mpf(sigma)

        def f(t):
            return sum(w * mp.npdf(t, m, s) for w, m in P) - \
                x * sum(w * mp.npdf(t, m, s) for w, m in Q)
        ms = [float(m) for _, m in P + Q]
        grid = np.linspace(min(ms) - 12 * sigma, max(ms) + 12 * sigma, 700)
        vals = [f(mp.mpf(t)) > 0 for t in grid]
        roots = []
        for i in range(grid.size - 1):
            if vals[i] != vals[i + 1]:
                a, b = mp.mpf(grid[i]), mp.mpf(grid[i + 1])
                for _ in range(70):
                    mid = (a + b) / 2
                    if (f(mid) > 0) == vals[i]:
                        a = mid
                    else:
                        b = mid
                roots.append((a + b) / 2)
        pts = [mp.ninf] + roots + [mp.inf]
        total = mp.mpf(0)
        for a, b in zip(pts[:-1], pts[1:]):
            mid = 0 if (a == mp.ninf and b == mp.inf) else b - 1 if a == mp.ninf else \
                a + 1 if b == mp.inf else (a + b) / 2
            if f(mid) > 0:
                total += sum(w * (mp.ncdf(b, m, s) - mp.ncdf(a, m, s)) for w, m in P) - \
                    x * sum(w * (mp.ncdf(b, m, s) - mp.ncdf(a, m, s)) for w, m in Q)
        return float(total)


CASES = [(0.6, 1, 5, 1.0), (1.0, 2, 5, 1.0), pytest.param(0.5, 2, 8, 0.8, marks=pytest.mark.slow),
         pytest.param(0.3, 3, 10, 0.6, marks=pytest.mark.slow)]


@pytest.mark.parametrize("q,b,n,sigma", CASES)
def test_bracket_holds_the_exact_divergence(q, b, n, sigma):
    """Every instance's exact delta(eps), both orders, is below the PLD and profile upper
    bounds; the instance whose other records contribute 0 is the lower pair itself."""
    m = dp.Gaussian(sigma).subsample(dp.TruncatedPoisson(q, b, n))
    for eps in (0.0, 0.7):
        pld = m.delta(eps, method="pld")
        prof = m.delta(eps, method="profile")
        truths = {}
        for c in (0.0, -1.0):
            P, Q = _laws(q, b, n, c)
            truths[c] = max(_hockey(P, Q, eps, sigma), _hockey(Q, P, eps, sigma))
            assert truths[c] <= pld.delta * (1 + 1e-9) + 1e-12, (c, eps, truths[c], pld)
            assert truths[c] <= prof.delta * (1 + 1e-9) + 1e-12, (c, eps, truths[c], prof)
        # the PLD's lower pair is the instance it names, binned: below its truth, within the
        # binning's loss of it; the profile's is the c = 0 instance (the membership pair)
        chosen = -1.0 if lower_loss(1.0 / sigma, m.scheme).name.startswith("truncation") \
            else 0.0
        assert pld.lower <= truths[chosen] * (1 + 1e-9) + 1e-12
        assert pld.lower >= truths[chosen] - 3e-3
        assert prof.lower <= truths[0.0] * (1 + 1e-9) + 1e-12
        assert prof.lower >= truths[0.0] - 1e-9


def test_the_effective_rate_pair_does_not_dominate():
    """The Poisson pair at the record's inclusion probability q_eff (the c = 0 instance) is
    beaten by another dataset pair (others -1, record +1: a cut batch moves the sum by 2),
    which the upper bound covers, within 3% of it here."""
    q, b, n, sigma, eps = 0.6, 1, 5, 1.0, 0.5
    w = truncation_weights(q, b, n)
    eff = dp.Gaussian(sigma).subsample(dp.Poisson(w.rate_low)).delta(eps, method="profile")
    P, Q = _laws(q, b, n, -1.0)
    worse = _hockey(P, Q, eps, sigma)
    up = dp.Gaussian(sigma).subsample(dp.TruncatedPoisson(q, b, n)).delta(eps, method="pld")
    print(f"q_eff pair {eff.delta:.6f}, instance (-1, +1) {worse:.6f}, bracket "
          f"[{up.lower:.6f}, {up.delta:.6f}]")
    assert worse > 5 * eff.delta
    assert worse <= up.delta <= 1.03 * worse
    # the PLD's lower bound is that instance's (binned): within 1.5% of it
    assert 0.985 * worse <= up.lower <= worse


def _mp_tails(m, q, k):
    """(P[X < k], P[X >= k]), X ~ Bin(m, q), as a 60-digit mpmath regularised incomplete beta."""
    with mp.workdps(60):
        hi = mp.betainc(k, m - k + 1, 0, q, regularized=True) if k > 0 else mp.mpf(1)
        lo = mp.betainc(m - k + 1, k, 0, 1 - mp.mpf(q), regularized=True) if k > 0 else \
            mp.mpf(0)
        return lo, hi


def test_weights_against_mpmath():
    """scipy's tails (the runtime's) within the charged 1e-9 of 60-digit mpmath, deep tails
    included; p rounded up, q_eff down; q_eff = q E[min(1, B/(K+1))] by a direct sum."""
    from dpamp.amplification.truncation import WEIGHT_REL_ERR
    for m, q, k in [(59999, 0.004, 256), (9, 0.3, 3), (1000, 0.5, 499), (59999, 0.01, 300),
                    (59999, 0.01, 500), (99, 0.05, 40), (10 ** 6, 1e-3, 1)]:
        lo, hi = binomial_tails(m, q, k)
        rlo, rhi = _mp_tails(m, q, k)
        for got, ref in ((lo, rlo), (hi, rhi)):
            if ref < 1e-300:                      # below the doubles: 0, weighted as TINY
                assert got <= 1e-300
                continue
            assert abs(got - ref) <= WEIGHT_REL_ERR / 10 * ref, (m, q, k, got, ref)
    for q, b, n in [(0.004, 256, 60000), (0.3, 3, 10), (0.01, 500, 60000), (0.5, 1, 5),
                    (0.05, 4, 60)]:
        w = truncation_weights(q, b, n)
        rlo, rhi = _mp_tails(n - 1, q, b)
        _, over = _mp_tails(n, q, b + 1)
        with mp.workdps(60):
            pbar = b * over / (n * rhi)
            q_eff = q * rlo + b * over / n
        assert w.cut_rate >= pbar and w.cut_rate <= pbar * (1 + 1e-8)
        assert w.rate_low <= q_eff and w.rate_low >= q_eff * (1 - 1e-8)
        if n <= 100:
            with mp.workdps(40):
                direct = q * sum(mp.binomial(n - 1, k) * mp.mpf(q) ** k
                                 * (1 - mp.mpf(q)) ** (n - 1 - k) * min(1, mp.mpf(b) / (k + 1))
                                 for k in range(n))
            assert abs(q_eff - direct) < 1e-30


def test_no_cut_is_plain_poisson():
    """B >= n: nothing is ever cut, the same numbers as Poisson sampling (every method)."""
    t = dp.Gaussian(1.2).subsample(dp.TruncatedPoisson(0.05, 40, 40)) * 50
    p = dp.Gaussian(1.2).subsample(dp.Poisson(0.05)) * 50
    for method in ("pld", "rdp"):
        a, b = t.epsilon(1e-5, method=method), p.epsilon(1e-5, method=method)
        assert a.epsilon == b.epsilon and a.lower == b.lower
    assert np.array_equal(t.rdp([2.0, 8.5, 32.0]), p.rdp([2.0, 8.5, 32.0]))


def test_dp_accounting_agrees():
    """dp-accounting's PLD accountant on the event (its upper bound, with a looser
    replace-one part) lies above our lower bound, and our upper bound is at most it plus its
    discretisation; printed: by how much it is above ours."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant as P
    for q, b, n, z, steps in [(256 / 60000, 300, 60000, 1.1, 50), (0.3, 3, 10, 2.0, 10)]:
        ev = dpa.TruncatedSubsampledGaussianDpEvent(dataset_size=n, sampling_probability=q,
                                                     truncated_batch_size=b,
                                                     noise_multiplier=z)
        acc = P.PLDAccountant()
        acc.compose(ev, steps)
        theirs = acc.get_epsilon(1e-5)
        g = (dp.from_dp_event(ev) * steps).epsilon(1e-5, method="pld")
        print(f"q={q:.4g} B={b} n={n} z={z}: dpamp [{g.lower:.4f}, {g.epsilon:.4f}], "
              f"dp-accounting {theirs:.4f} ({theirs - g.epsilon:+.4f} above our upper)")
        assert g.lower <= theirs
        assert g.epsilon <= theirs * 1.01


def test_rdp_bracket():
    """Upper RDP above the attained lower curve, below the cap (the 2 mu Gaussian), and above
    the exact integer-order RDP of the c = 0 instance (004 Thm 34 at q_eff)."""
    s = dp.TruncatedPoisson(0.3, 2, 12)
    m = dp.Gaussian(1.0).subsample(s)
    a = np.array([2.0, 3.0, 5.0, 16.0])
    up, low = m.rdp(a), m.rdp_lower(a)
    assert np.all(low <= up) and np.all(low > 0)
    assert np.all(up <= a * 4.0 / 2.0 * (1 + 1e-12))
    eff = dp.Gaussian(1.0).subsample(dp.Poisson(truncation_weights(0.3, 2, 12).rate_low))
    assert np.all(eff.rdp(a) * (1 - 1e-12) <= up)
    # a Rényi divergence of the c = -1 instance at order 2, by direct quadrature, is below
    P, Q = _laws(0.3, 2, 12, -1.0)
    with mp.workdps(30):
        def pdf(D, t):
            return sum(w * mp.npdf(t, mm, 1) for w, mm in D)
        i2 = mp.quad(lambda t: pdf(P, t) ** 2 / pdf(Q, t), [-20, -2, 0, 2, 20])
    assert float(mp.log(i2)) <= up[0]


def test_plan_cli_and_event_words(tmp_path):
    from dpamp.cli.main import main
    from dpamp.io.plan import PlanError, parse_plan_text
    text = ('delta = 1e-5\n[[stage]]\nmechanism = "gaussian"\nnoise_multiplier = 1.1\n'
            'sampler = "truncated-poisson"\nbatch_size = 256\ndataset_size = 60000\n'
            'max_batch_size = 300\nsteps = 20\n')
    plan = parse_plan_text(text, origin="t.toml")
    st = plan.stages[0]
    assert st.step.scheme == dp.TruncatedPoisson(256 / 60000, 300, 60000)
    assert st.assumed["max_batch_size"] == 300
    g = dp.dpsgd(noise_multiplier=1.1, batch_size=256, dataset_size=60000, steps=20,
                 delta=1e-5, sampler="truncated-poisson", max_batch_size=300)
    h = (st.step * 20).epsilon(1e-5)
    assert (g.epsilon, g.lower) == (h.epsilon, h.lower)
    assert "cut to at most 300" in g.note
    # the event, both ways
    dpa = pytest.importorskip("dp_accounting")
    ev = dp.to_dp_event(st.step)
    assert isinstance(ev, dpa.TruncatedSubsampledGaussianDpEvent)
    assert (ev.dataset_size, ev.truncated_batch_size, ev.noise_multiplier) == (60000, 300, 1.1)
    assert dp.from_dp_event(ev) == st.step
    assert dp.to_json(st.step) and dp.from_json(dp.to_json(st.step)) == st.step
    # errors naming the key
    for bad, key in [("max_batch_size = 0\n", "max_batch_size"),
                     ("max_batch_size = 2.5\n", "max_batch_size"), ("", "max_batch_size")]:
        with pytest.raises(PlanError, match=f"key '{key}'"):
            parse_plan_text(text.replace("max_batch_size = 300\n", bad), origin="t.toml")
    with pytest.raises(PlanError, match="not used by sampler 'poisson'"):
        parse_plan_text(text.replace('"truncated-poisson"', '"poisson"'), origin="t.toml")
    # the command line
    args = ["epsilon", "--noise-multiplier", "1.1", "--batch-size", "256", "--dataset-size",
            "60000", "--sampler", "truncated-poisson", "--steps", "20", "--delta", "1e-5"]
    assert main(args + ["--max-batch-size", "300", "--json"]) == 0
    assert main(args) != 0


def test_scheme_validation():
    for kw, name in [(dict(rate=0.0), "rate"), (dict(rate=1.5), "rate"),
                     (dict(max_batch_size=0), "max_batch_size"),
                     (dict(max_batch_size=2.5), "max_batch_size"),
                     (dict(dataset_size=0), "dataset_size")]:
        args = dict(rate=0.1, max_batch_size=5, dataset_size=100) | kw
        with pytest.raises(ValueError, match=name):
            dp.TruncatedPoisson(**args)
    with pytest.raises(ValueError, match="Gaussian"):
        dp.Laplace(1.0).subsample(dp.TruncatedPoisson(0.1, 5, 100))
    with pytest.raises(ValueError, match="add/remove|add_remove"):
        dp.Gaussian(1.0, sensitivity=2.0, relation=dp.SUBSTITUTION).subsample(
            dp.TruncatedPoisson(0.1, 5, 100))
    assert math.isinf(dp.Gaussian(1.0).subsample(dp.TruncatedPoisson(0.1, 5, 100))
                      .pure_epsilon())


def test_instance_pair_is_a_post_processing():
    """The binned pair of the (-1, +1) instance: total masses 1, and its hockey-stick
    divergence (summed over its cells) below the instance's exact one and close to it."""
    q, b, n, sigma = 0.5, 2, 8, 0.8
    il = instance_loss(1.0 / sigma, dp.TruncatedPoisson(q, b, n))
    assert abs(il.atom_p.sum() - 1) < 1e-9 and abs(il.atom_q.sum() - 1) < 1e-9
    P, Q = _laws(q, b, n, -1.0)
    for eps in (0.0, 0.5, 1.5):
        binned = float(np.sum(np.maximum(il.atom_p - math.exp(eps) * il.atom_q, 0.0)))
        exact = _hockey(P, Q, eps, sigma)
        assert exact - 3e-3 <= binned <= exact * (1 + 1e-9)


def test_in_a_composition():
    """A truncated-Poisson part composed with a Gaussian and a Poisson part: a bracket, its
    lower end at least the part's own lower end (dropping parts is a post-processing), its
    upper end at least the part's own upper end less the grid's error."""
    t = dp.Gaussian(1.0).subsample(dp.TruncatedPoisson(0.05, 3, 60))
    alone = (t * 20).epsilon(1e-5, method="pld")
    plan = dp.compose(t * 20, dp.Gaussian(8.0) * 3,
                      dp.Gaussian(1.0).subsample(dp.Poisson(0.02)) * 10)
    g = plan.epsilon(1e-5, method="pld")
    assert g.lower is not None and 0 < g.lower <= g.epsilon
    assert g.lower >= alone.lower * (1 - 1e-9)
    assert g.epsilon >= alone.epsilon * (1 - 1e-3)
