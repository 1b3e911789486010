"""The batched discretisation of many parts (dpamp.pld.batch, dpamp.pld.polygon) against
the part-by-part one it replaces: bit-for-bit equal PMFs (upper, lower, masses at +inf, slack),
on heterogeneous plans of Poisson-subsampled Gaussians (both directions, optimistic and
pessimistic-only), and on parts with atoms (subsampled Laplace, randomized response)."""
import numpy as np
import pytest

import dpamp as dp
from dpamp.pld import batch, engine, polygon, query
from dpamp.pld.cells import cells_many, cells_of
from dpamp.pld.discretize import _cancel_negatives, cancel_negatives_many, half_args


def _plan(n, seed=0):
    rng = np.random.default_rng(seed)
    sig = rng.uniform(0.8, 1.6, n).round(4)
    rates = rng.uniform(0.002, 0.02, n).round(5)
    return dp.compose(*[dp.Gaussian(float(s)).subsample(dp.Poisson(float(q))) * 10
                        for s, q in zip(sig, rates)])


def _same(a, b):
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.count == q.count
        assert p.d.jlo == q.d.jlo and p.d.h == q.d.h
        assert np.array_equal(p.d.upper, q.d.upper)
        assert np.array_equal(p.d.lower, q.d.lower)
        assert p.d.upper_inf == q.d.upper_inf and p.d.lower_inf == q.d.lower_inf
        assert p.d.lower_slack == q.d.lower_slack


@pytest.mark.parametrize("h", [0.004, 0.0113])
@pytest.mark.parametrize("optimistic", [True, False])
def test_batched_equals_per_part_gaussians(h, optimistic):
    dirs = query._directions(_plan(12))
    assert len(dirs) == 2
    for d in dirs:
        _same(batch.discretize_parts(d, h, 1e-11, optimistic),
              batch.discretize_parts(d, h, 1e-11, optimistic, batched=False))


def test_batched_equals_per_part_with_atoms():
    mech = dp.compose(dp.Laplace(1.0).subsample(dp.Poisson(0.1)) * 5,
                      dp.Laplace(2.5).subsample(dp.Poisson(0.03)) * 3,
                      dp.RandomizedResponse(0.7).subsample(dp.Poisson(0.2)) * 4,
                      dp.Gaussian(1.1).subsample(dp.Poisson(0.05)) * 6)
    for d in query._directions(mech):
        for h in (0.01, 0.0037):
            _same(batch.discretize_parts(d, h, 1e-12),
                  batch.discretize_parts(d, h, 1e-12, batched=False))


@pytest.mark.parametrize("rounds", [1, 2, 200])
def test_unsettled_rows_get_their_second_attempt_in_the_batch(monkeypatch, rounds):
    """A row the 2-D loop leaves unsettled (with 1 or 2 rounds: those with deficits left) gets
    its second attempt, on the hard floors where it got stuck, within the batch: every half
    still equals the half alone."""
    monkeypatch.setattr(polygon, "ROUNDS", rounds)
    args = []
    for src, _ in query._directions(_plan(4))[0]:
        c = cells_of(src, 0.01, -3, 250)
        fwd, rev, _, _ = half_args(c, 0.01, src.inf_mass, None, src.neg_inf_mass, True)
        args += [fwd, rev]
    settled = []
    real = polygon._lower_knots
    monkeypatch.setattr(polygon, "_lower_knots",
                        lambda *a: (lambda r: settled.append(r[1]) or r)(real(*a)))
    got = polygon.halves(args)
    assert (False in settled) == (rounds != 200)
    for a, g in zip(args, got):
        ref = polygon.half(a)
        for f in ("f", "m_up", "e", "m_lo"):
            assert np.array_equal(getattr(ref, f), getattr(g, f))


def test_end_chord_keeps_the_knots_below_and_convex():
    """polygon._end_chord lowers the knots before the last one onto the hull's last segment:
    every knot only goes down, and the kinks there become convex (non-negative masses)."""
    x = np.exp(0.01 * np.arange(8))
    f = np.array([1.0, 0.8, 0.62, 0.46, 0.32, 0.2, 0.1, 0.05])
    e = np.zeros(8)
    e[-1] = f[-1]                         # the last knot on F(inf) = 0: concave kink at 6
    rows = polygon._value_rows(f, 0.01, True, polygon.Floor(0.0, 0.0, 0.0), 0.0)
    assert np.array_equal(rows.x, x)
    out = polygon._end_chord(rows, e[None, :].copy())[0]
    assert np.all(out >= e)
    g = f - out
    slopes = np.diff(g) / np.diff(x)
    assert np.all(np.diff(slopes) >= -1e-12)


def test_cancel_negatives_matches_full_rescans():
    """_cancel_negatives looks only where mass was moved; the full rescan of every pass (its
    former loop) gives the same masses and slack."""
    rng = np.random.default_rng(3)

    def reference(m, passes=20):
        m = m.copy()
        for _ in range(passes):
            neg = np.nonzero(m < 0)[0]
            if neg.size == 0:
                return m, 0.0
            inner = neg[neg < m.size - 1]
            amount = -m[inner]
            m[inner] = 0.0
            np.add.at(m, inner + 1, -amount)
            if inner.size == neg.size:
                continue
            break
        return np.maximum(m, 0.0), float(-np.minimum(m, 0.0).sum())
    for _ in range(200):
        m = rng.normal(0.0, 1.0, rng.integers(1, 40)) * 10.0 ** rng.integers(-30, 0)
        a, sa = _cancel_negatives(m)
        b, sb = reference(m)
        assert np.array_equal(a, b) and sa == sb


def test_cancel_negatives_many_matches_one_by_one():
    rng = np.random.default_rng(5)
    for _ in range(50):
        ms = [rng.normal(0.3, 1.0, rng.integers(1, 30)) * 10.0 ** rng.integers(-30, 0)
              for _ in range(rng.integers(1, 8))]
        for (a, sa), m in zip(cancel_negatives_many(ms), ms):
            b, sb = _cancel_negatives(m)
            assert np.array_equal(a, b) and sa == sb


def test_spectra_wrap_by_slices():
    """The parts' PMFs are laid on the circle of N points by slices: the same array (hence the
    same rfft) as placing every point at (jlo + k) mod N."""
    from types import SimpleNamespace as NS

    from scipy import fft as sfft
    rng = np.random.default_rng(1)
    for N in (16, 17, 100):
        for _ in range(50):
            n = int(rng.integers(1, N + 1))
            jlo = int(rng.integers(-3 * N, 3 * N))
            w = rng.random(n)
            ref = np.zeros(N)
            ref[(jlo + np.arange(n)) % N] = w
            got = next(engine._spectra([NS(d=NS(jlo=jlo))], [w], [0.0], N))
            assert np.array_equal(got, sfft.rfft(ref))


def test_batched_moments_equal_the_per_part_quadrature():
    """pld.moments (all parts' sizing moments in one quadrature) against loss._mixture_moments
    part by part, and parts_of's sources against loss_distribution's."""
    from dpamp.pld import loss as L
    from dpamp.pld import moments, sources
    mus = [1 / 0.8, 1 / 1.6, 2.0, 10.0, 0.1, 1.0, 5.0]
    qs = [0.002, 0.02, 0.001, 0.3, 0.5, 0.9, 0.01]
    for mu, q, got in zip(mus, qs, moments.subsampled_gaussian_moments(mus, qs)):
        ref = L._mixture_moments(L.gaussian(mu), q)
        assert np.allclose([got[0], got[1], *got[2]], [ref[0], ref[1], *ref[2]],
                           rtol=1e-12, atol=0)
    mech = dp.compose(*[dp.Gaussian(1 / mu).subsample(dp.Poisson(q)) * 3
                        for mu, q in zip(mus, qs)], dp.Laplace(1.0) * 2)
    sources._PARTS.store.clear()
    got = sources.parts_of(mech)
    ref = [(sources.loss_distribution(p), c) for p, c in mech.parts()]
    assert len(got) == len(ref)
    for (a, ca), (b, cb) in zip(got, ref):
        assert ca == cb and a.name == b.name
        assert (a.swap_moments is None) == (b.swap_moments is None)
        extra = (lambda d: [*d.swap_moments] if d.swap_moments is not None else [])
        assert np.allclose([a.mean, a.var, *extra(a)], [b.mean, b.var, *extra(b)],
                           rtol=1e-12, atol=0)


def _families():
    from dpamp.pld.loss import eps_delta, gaussian, laplace
    out = []
    for mu, q in ((0.7, 0.013), (1.25, 0.002), (0.3, 0.2)):
        g = gaussian(mu)
        out += [g, g.poisson(q), g.poisson(q).swapped()]
    # parts of no family (evaluated by their own functions) and one without a continuous part
    return out + [laplace(0.5).poisson(0.1), eps_delta(1.0, 1e-3)]


@pytest.mark.parametrize("which", ["cdf", "sf"])
def test_evaluate_many_is_each_parts_own_function(which):
    """loss_batch repeats each family's operations on the parts' points laid end to end: the
    values are bit for bit those of every part's own cdf / sf (so the batched discretisation
    is that of the parts' own closures), in any order of the parts."""
    from dpamp.pld.loss_batch import evaluate_many
    srcs = _families()
    rng = np.random.default_rng(3)
    ts = [np.sort(rng.uniform(-3, 6, rng.integers(1, 400))) for _ in srcs]
    got = evaluate_many(srcs, ts, which)
    for src, t, v in zip(srcs, ts, got):
        fn = getattr(src, which)
        if fn is None:
            assert v is None
            continue
        with np.errstate(all="ignore"):
            want = fn(t)
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(v, want))
    perm = rng.permutation(len(srcs))
    again = evaluate_many([srcs[i] for i in perm], [ts[i] for i in perm], which)
    for i, v in zip(perm, again):
        if got[i] is not None:
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(v, got[i]))


def test_quantile_ranges_are_each_parts_own_scan():
    """The batched quantile scans give each part the range of its own scans (the reference
    scan, written out here: a grid of 64 points from the mean to the tail function's end,
    twice)."""
    from dpamp.pld.loss_batch import quantile_ranges
    srcs = [s for s in _families() if s.cdf is not None]
    tails = [10.0 ** -k for k in range(6, 6 + len(srcs))]

    def scan(src, tail, end, upper):
        near, fn = src.mean, (src.sf if upper else src.cdf)
        if (end <= near) if upper else (end >= near):
            return end
        for _ in range(2):
            t = np.linspace(near, end, 64)
            with np.errstate(all="ignore"):
                p, q = fn(t)
            ok = (p <= tail) & (q <= tail)
            if not ok.any():
                return end
            i = int(np.argmax(ok))
            if i == 0:
                return float(t[0])
            near, end = float(t[i - 1]), float(t[i])
        return end
    for src, tail, (lo, hi) in zip(srcs, tails, quantile_ranges(srcs, tails)):
        a = scan(src, tail, src.lower_tail(tail), False)
        b = scan(src, tail, src.upper_tail(tail), True)
        fin = np.isfinite(src.atom_loss) & (np.maximum(src.atom_p, src.atom_q) > tail * 1e-3)
        if fin.any():
            a, b = min(a, src.atom_loss[fin].min()), max(b, src.atom_loss[fin].max())
        assert (lo, hi) == (a, b)


@pytest.mark.parametrize("upper", [True, False])
def test_tail_points_many_are_each_parts_own(upper):
    """The batched tail functions give every part exactly its own tail function's value."""
    from dpamp.pld.loss_batch import tail_points_many
    srcs = _families()
    tails = [10.0 ** -k for k in range(3, 3 + len(srcs))]
    for src, t, v in zip(srcs, tails, tail_points_many(srcs, tails, upper)):
        fn = src.upper_tail if upper else src.lower_tail
        assert v == (fn(t) if fn is not None else None)


@pytest.mark.parametrize("optimistic", [True, False])
def test_cells_many_are_each_parts_own_cells(optimistic):
    """cells.cells_many (all parts' cells laid end to end: families, parts of their own
    functions, atoms) against cells_of part by part: every array of every cell dict, and the
    half cells, bit for bit."""
    srcs = _families()
    h = 0.0037
    grids = [(-(3 + i), 40 + 17 * i) for i in range(len(srcs))]
    got = cells_many(srcs, grids, h, optimistic)
    for src, (jlo, jhi), cells in zip(srcs, grids, got):
        ref = cells_of(src, h, jlo, jhi, optimistic)
        c, c_ref = cells.as_dict(), ref.as_dict()
        assert set(c) == set(c_ref)
        for key, v in c_ref.items():
            if isinstance(v, tuple):
                assert all(np.array_equal(a, b) and np.shape(a) == np.shape(b)
                           for a, b in zip(c[key], v)), key
            else:
                assert np.array_equal(c[key], v), key
        assert (cells.right.half_p is None) == (ref.right.half_p is None)
        if cells.right.half_p is not None:
            for side in ("left", "right"):
                mid, mid_ref = getattr(cells, side), getattr(ref, side)
                assert all(np.array_equal(a, b) for a, b in zip(
                    (mid.half_p, mid.half_q), (mid_ref.half_p, mid_ref.half_q)))


def test_one_pmf_cancels_its_negatives_as_among_many():
    """cancel_negatives_many of one PMF (its own path) gives the bits it gets among others:
    chains of rounding-level negatives moved up bin by bin, stopped at the top bin (slack)
    or by the passes running out, and PMFs without negatives."""
    from dpamp.pld.discretize import cancel_negatives_many
    rng = np.random.default_rng(11)
    for n in (1, 2, 5, 40, 300):
        for _ in range(20):
            m = rng.exponential(size=n) * 10.0 ** rng.uniform(-20, 0, n)
            neg = rng.random(n) < rng.uniform(0, 0.6)
            m[neg] = -rng.exponential(size=int(neg.sum())) * 10.0 ** rng.uniform(-18, 0)
            alone = cancel_negatives_many([m])[0]
            among = cancel_negatives_many([np.array([-1e-17, 2.0]), m, np.ones(3)])[1]
            assert np.array_equal(alone[0], among[0]) and alone[1] == among[1]
            assert np.array_equal(alone[0], cancel_negatives_many([m], passes=20)[0][0])
