"""The matrix mechanism's declaration (:mod:`dpamp.mechanisms.matrix`).

Its representations are those of the plan it reduces to (``MatrixMechanism.reduction``), at
the upper end of its sensitivity bracket for upper bounds and at the lower end for lower
bounds, so a bracket never leans on a sensitivity that is only an upper bound:

- the privacy-loss pair: the reduction's at mu_hi for the pessimistic discretisation and at
  mu_lo for the optimistic one (``pld.sources.Bracketed``); route no-amplification: mu_hi only,
  not attained (no lower end);
- the privacy profile (routes gaussian and no-amplification): the Gaussian closed form at mu_hi,
  and at mu_lo for the lower rows (route gaussian only: a pattern attaining Delta_lo is a pair
  of neighbours, and the Gaussian profile grows with mu);
- zCDP: rho = mu_hi^2 / 2 (not for the cyclic-Poisson route: a subsampled Gaussian has none).

Plan words (``mechanism = "matrix"``; docs/matrix-mechanisms.md): ``strategy`` (banded,
toeplitz, blt, tree, dense), ``bands``, ``coeffs``, ``buffer_decays``, ``output_scales``,
``matrix_file`` (a .npy file), ``noise_multiplier``, ``participation`` (single-epoch,
min-separation, poisson, cyclic-poisson, balls-in-bins, fixed-bins, min-sep-sampling),
``participations``, ``min_separation``, ``partitions``, ``sampling_prob``, ``bins``; the stage's ``steps`` are the matrix's n, and
the stage runs it once (``whole_run``).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Callable

import numpy as np

from ..core import validate as V
from ..core.errors import OutOfReach
from ..core.rounding import ulps_up
from ..mechanisms.family import Family, ProfileHooks, Rep, Support, declare
from ..mechanisms.matrix import (BLOCKS, CONDITIONAL, CYCLIC, GAUSSIAN, NO_AMPLIFICATION,
                                 SPLIT, MatrixMechanism)
from ..mechanisms.matrix_strategies import (BLT, BandedToeplitz, BinaryTree, DenseStrategy,
                                            Toeplitz)
from ..mechanisms.participation import (BallsInBins, CyclicPoisson, FixedBins,
                                        MinSeparation, MinSepSampling, SingleEpoch)


def _loss_parts(m: MatrixMechanism):
    """The reduction's pair at mu_hi (pessimistic) and at mu_lo (optimistic: a pattern
    attaining Delta_lo is an actual pair of neighbours); route no-amplification: mu_hi only,
    not attained."""
    from ..pld.loss import gaussian
    from ..pld.sources import Bracketed, NotAttained
    lo, hi = m.mu
    exact = lo >= hi * (1 - 1e-9)
    if m.route == CYCLIC:
        return _cyclic_parts(m)
    if m.route == SPLIT:
        return split_parts(m)
    if m.route == GAUSSIAN:
        return [(Bracketed(gaussian(hi), gaussian(lo), exact), 1)]
    return [(NotAttained(gaussian(hi)), 1)]


def split_parts(m: MatrixMechanism):
    """The noise split's steps (``MatrixMechanism.split_steps``): each only as an upper pair
    (``NotAttained``: the split dominates the mechanism, no actual pair attains it), or, where
    the split is attained (a diagonal C, ``split_attained``), bracketed with the same steps at
    the attained mu."""
    from ..pld.sources import Bracketed, NotAttained, parts_of
    ups = m.split_steps()
    if m.split_attained is None:
        return [(NotAttained(src), k * c) for step, k in ups for src, c in parts_of(step)]
    out = []
    for (up, k), (low, _) in zip(ups, m.split_steps(upper=False)):
        a, b = parts_of(up), parts_of(low)
        assert len(a) == len(b)
        out += [(Bracketed(sa, sb, False), k * ca) for (sa, ca), (sb, _) in zip(a, b)]
    return out


def _cyclic_parts(m: MatrixMechanism):
    """The cyclic-Poisson route position by position: the upper step at each position
    (``group_mus``) bracketed with the lower group's step there, or with the trivial pair
    (no loss) past the lower group's last step; equal pairs counted."""
    from ..pld.loss import eps_delta
    from ..pld.sources import Bracketed, loss_distribution
    from ..core.sampling import Poisson
    from ..mechanisms.gaussian import Gaussian
    from ..mechanisms.subsampled import Subsampled
    up, low = m.group_mus
    q = m.participation.sampling_prob  # type: ignore[attr-defined]
    counts = Counter((mu, low[i] if i < len(low) else 0.0) for i, mu in enumerate(up))

    def step(mu):
        return loss_distribution(Subsampled(Gaussian(1.0, mu, relation=m.relation), Poisson(q)))
    return [(Bracketed(step(a), step(b) if b > 0 else eps_delta(0.0, 0.0),
                       b > 0 and b >= a * (1 - 1e-9)), k) for (a, b), k in counts.items()]


def _profile_pair(m: MatrixMechanism, eps):
    """The Gaussian profile at mu_hi (routes gaussian, no-amplification). The cyclic-Poisson
    route is a composition of subsampled steps, with no closed form: NotImplementedError, so
    every caller (``has_profile``, the risk queries) takes its PLD instead."""
    if m.route in (CYCLIC, SPLIT):
        raise NotImplementedError(f"the {m.route} reduction has no closed-form profile; "
                                  "its PLD gives the profile")
    from ..profiles.closed_forms import gaussian_log_profile
    v = gaussian_log_profile(m.mu[1], eps, upper=True)
    return np.stack([v, v])


def _profile_lower(m: MatrixMechanism, eps):
    if m.route != GAUSSIAN:
        return None
    from ..profiles.closed_forms import gaussian_log_profile
    v = gaussian_log_profile(m.mu[0], eps, upper=False)
    return np.stack([v, v])


def _has(m: MatrixMechanism, rep: Rep) -> Support | None:
    if rep is Rep.PROFILE and m.route in (CYCLIC, SPLIT):
        return Support.no(f"the {m.route} reduction is a composition of subsampled steps: "
                          "its PLD gives the profile")
    if rep is Rep.ZCDP and m.route in (CYCLIC, SPLIT):
        return Support.no("a subsampled Gaussian has no zCDP rho; use RDP or PLD")
    if rep is Rep.LOSS and m.route == SPLIT:
        why = _split_out_of_range(m)
        return None if why is None else Support.no(why)
    # (x * x, not x ** 2: a Python float's ** raises OverflowError where * gives inf)
    if rep is Rep.LOSS and not math.isfinite(m.mu[1] * m.mu[1]):
        return Support.no(f"MatrixMechanism with mu = {m.mu[1]:g}: its privacy losses exceed "
                          "the double range of a PLD grid")
    return None


def _split_out_of_range(m: MatrixMechanism) -> str | None:
    """Why the noise split's steps leave a PLD grid's double range (its largest mu squared
    is not finite), or None."""
    top = m.split.parts[0][0] / m.noise_multiplier  # type: ignore[union-attr]
    if math.isfinite(top * top):
        return None
    return (f"MatrixMechanism with a split step of mu = {top:g}: its privacy losses exceed "
            "the double range of a PLD grid")


# --- plan words ------------------------------------------------------------------------------

def bsr_coefficients(bands: int) -> tuple[float, ...]:
    """The banded square root of the prefix-sum workload (Kalinin & Lampert 2024, "Banded
    square root matrix factorization for differentially private model training"): the first
    ``bands`` coefficients of (1 - x)^(-1/2), c_k = binom(2k, k) / 4^k. As floats these ARE the
    strategy (its sensitivity is computed from them), so their rounding costs no soundness."""
    c, out = 1.0, []
    for k in range(bands):
        if k:
            c *= (2 * k - 1) / (2 * k)
        out.append(c)
    return tuple(out)


def _reals(name, value) -> tuple[float, ...]:
    a = V.real_array(name, value).ravel()
    if a.size == 0 or not np.isfinite(a).all():
        raise ValueError(f"{name} must be a non-empty list of finite numbers")
    return tuple(float(x) for x in a)


def _text(name, value) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string (got {value!r})")
    return value


def _floats(words, key):
    return words.get(key, _reals)


def _strategy(words, n: int):
    """The strategy the words name, its inputs read (and their errors raised) first, then
    built (a constructor's error names ``strategy``)."""
    kind = words.get("strategy", _text, required=True)
    builders: dict[str, Callable] = {"banded": _banded, "toeplitz": _toeplitz, "blt": _blt,
                                     "tree": lambda words, n: (lambda: BinaryTree(n)),
                                     "dense": _dense}
    if kind not in builders:
        words.fail("strategy", f"must be one of banded, toeplitz, blt, tree, dense (got "
                               f"{kind!r})")
    make = builders[kind](words, n)
    try:
        return make()
    except (ValueError, OSError) as e:
        words.fail("strategy", str(e))


def _banded(words, n):
    bands = words.get("bands", V.integer, low=1)
    coeffs = _floats(words, "coeffs")
    if coeffs is None and bands is None:
        words.fail("bands", "missing: a banded strategy needs bands (or coeffs)")
    c = coeffs if coeffs is not None else bsr_coefficients(min(bands, n))
    if bands is not None and len(c) > bands:
        words.fail("coeffs", f"{len(c)} coefficients for {bands} bands")
    return lambda: BandedToeplitz(c, n)


def _toeplitz(words, n):
    if words.has("bands"):
        words.fail("bands", "not used with strategy 'toeplitz' (use strategy 'banded')")
    coeffs = _floats(words, "coeffs")
    return lambda: Toeplitz(coeffs if coeffs is not None else bsr_coefficients(n), n)


def _blt(words, n):
    th, om = _floats(words, "buffer_decays"), _floats(words, "output_scales")
    if th is None or om is None:
        words.fail("buffer_decays" if th is None else "output_scales",
                   "missing: a BLT strategy needs buffer_decays and output_scales")
    return lambda: BLT(th, om, n)


def _dense(words, n):
    path = words.get("matrix_file", _text, required=True)

    def make():
        c = np.load(path, allow_pickle=False)
        if c.ndim != 2 or c.shape[1] != n:
            raise ValueError(f"{path} must hold a matrix of {n} columns (the steps; got shape "
                             f"{c.shape})")
        return DenseStrategy(c)
    return make


def _participation(words):
    kind = words.get("participation", _text) or "single-epoch"
    if kind == "single-epoch":
        return SingleEpoch()
    if kind == "min-separation":
        k = words.get("participations", V.integer, low=1, required=True)
        b = words.get("min_separation", V.integer, low=1, required=True)
        return MinSeparation(k, b)
    if kind == "poisson":
        return CyclicPoisson(words.get("sampling_prob", V.probability, low_open=True,
                                       required=True), 1)
    if kind == "cyclic-poisson":
        q = words.get("sampling_prob", V.probability, low_open=True, required=True)
        return CyclicPoisson(q, words.get("partitions", V.integer, low=1) or 1)
    if kind == "balls-in-bins":
        return BallsInBins(words.get("bins", V.integer, low=1, required=True))
    if kind == "fixed-bins":
        return FixedBins(words.get("bins", V.integer, low=1, required=True))
    if kind == "min-sep-sampling":
        return MinSepSampling(
            words.get("sampling_prob", V.probability, low_open=True, required=True),
            words.get("min_separation", V.integer, low=1, required=True))
    words.fail("participation", "must be one of single-epoch, min-separation, poisson, "
                                "cyclic-poisson, balls-in-bins, fixed-bins, min-sep-sampling "
                                f"(got {kind!r})")


def _words(words, relation):
    for key in ("sampler", "sampling", "batch_size", "dataset_size", "sample_rate", "rate",
                "epochs"):
        if words.has(key):
            words.fail(key, "not used with mechanism 'matrix': give the steps and the "
                            "participation (e.g. participation = 'cyclic-poisson' with "
                            "sampling_prob and partitions)")
    n = words.get("steps", V.integer, low=1, required=True)
    z = words.get("noise_multiplier", V.positive, required=True)
    strategy = _strategy(words, n)
    part = _participation(words)
    _check_keys(words)
    try:
        m = MatrixMechanism(strategy, z, part, relation=relation)
    except ValueError as e:
        words.fail("strategy" if str(e).startswith("strategy:") else "participation", str(e))
    s = m.sensitivity
    return m, {"noise_multiplier": z, "strategy": strategy.describe(),
               "participation": part.describe(), "sensitivity": s.upper,
               "sensitivity_lower": s.lower, "sensitivity_route": s.route,
               "sensitivity_exact": s.exact, "route": m.route, "routes": _routes(m),
               "route_detail": m.split_words() if m.route == SPLIT else ""}


def _routes(m: MatrixMechanism) -> list[str]:
    """The routes an answer compares, the mechanism's own first (:func:`_candidates` runs
    the others; conditional composition is added there, only where its method is asked for)."""
    out = [m.route]
    if not amplifiable(m):
        return out
    if m.route == SPLIT:
        out.append(NO_AMPLIFICATION)
    if m.route == NO_AMPLIFICATION and m.split is not None and m.split.parts:
        out.append(SPLIT)
    if m.separation_blocks is not None and m.separation_blocks.parts:
        out.append(BLOCKS)
    return out


_STRATEGY_KEYS = {"banded": ("bands", "coeffs"), "toeplitz": ("coeffs",),
                  "blt": ("buffer_decays", "output_scales"), "tree": (),
                  "dense": ("matrix_file",)}
_PARTICIPATION_KEYS = {"single-epoch": (), "min-separation": ("participations",
                                                               "min_separation"),
                       "poisson": ("sampling_prob",),
                       "cyclic-poisson": ("sampling_prob", "partitions"),
                       "balls-in-bins": ("bins",), "fixed-bins": ("bins",),
                       "min-sep-sampling": ("sampling_prob", "min_separation")}


def _check_keys(words) -> None:
    """A key of another strategy or participation is an error, not ignored."""
    strategy = words.get("strategy", _text)
    part = words.get("participation", _text) or "single-epoch"
    if part not in _PARTICIPATION_KEYS:
        _participation(words)                     # names the choices
    own = set(_STRATEGY_KEYS[strategy]) | set(_PARTICIPATION_KEYS[part])
    for key in sum(_STRATEGY_KEYS.values(), ()):
        if words.has(key) and key not in own:
            words.fail(key, f"not used with strategy {strategy!r} (its keys: "
                            f"{', '.join(_STRATEGY_KEYS[strategy]) or 'none'})")
    for key in sum(_PARTICIPATION_KEYS.values(), ()):
        if words.has(key) and key not in own:
            words.fail(key, f"not used with participation {part!r} (its keys: "
                            f"{', '.join(_PARTICIPATION_KEYS[part]) or 'none'})")


def _to_event(m: MatrixMechanism):
    """dp-accounting's event of the plan the mechanism is accounted as, at the upper end of
    its sensitivity: ``GaussianDpEvent(1 / mu_hi)`` (routes gaussian, no-amplification), or
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(1 / mu_hi)), rounds)``,
    the plan of jax_privacy's ``amplified_bandmf_event`` (route cyclic-poisson); route
    noise-split under (cyclic) Poisson: its Poisson-sampled Gaussian steps composed (under balls
    in bins dp-accounting has no random-allocation event: no-amplification's Gaussian, a valid
    but looser plan)."""
    from dp_accounting import dp_event as E
    g = E.GaussianDpEvent(1.0 / m.mu[1]) if m.mu[1] > 0 else E.NoOpDpEvent()
    plan = m.split
    if m.route == SPLIT and plan is not None and all(e == 0 for _, e, _ in plan.parts):
        # (b-min-separation sampling too: its split is dominated by this Poisson plan)
        z = m.noise_multiplier
        return E.ComposedDpEvent([E.SelfComposedDpEvent(E.PoissonSampledDpEvent(
            plan.rate, E.GaussianDpEvent(z / d)), k) for d, _, k in plan.parts])
    if m.route != CYCLIC:
        return g
    q = m.participation.sampling_prob  # type: ignore[attr-defined]
    return E.SelfComposedDpEvent(E.PoissonSampledDpEvent(q, g), m.rounds)


def _describe(m: MatrixMechanism) -> str:
    s = m.sensitivity
    split = f" ({m.split_words()})" if m.route == SPLIT else ""
    return (f"matrix mechanism: {m.strategy.describe()}, noise multiplier "
            f"{m.noise_multiplier:g}, {m.participation.describe()}; sensitivity "
            f"{s.upper:.6g} ({'exact' if s.exact else 'upper bound'}, {s.route}); route "
            f"{m.route}{split}")


_KEYS = ("strategy", "bands", "coeffs", "buffer_decays", "output_scales", "matrix_file",
         "noise_multiplier", "participation", "participations", "min_separation",
         "partitions", "sampling_prob", "bins")

declare(MatrixMechanism, Family(
    "MatrixMechanism", loss_parts=_loss_parts,
    profile=ProfileHooks(pair=_profile_pair, lower=_profile_lower, symmetric=lambda m: True,
                         source=("Balle, Barthe & Gaboardi 2018, Thm 4 at the matrix mechanism's "
                                 "sensitivity")),
    zcdp=lambda m: None if m.route in (CYCLIC, SPLIT) else ulps_up(0.5 * m.mu[1] * m.mu[1],
                                                                    4),
    has=_has, word="matrix", keys=_KEYS, from_words=_words, whole_run=True,
    to_event=_to_event, describe=_describe, own_samplers=lambda: _own_samplers()))


def _own_samplers() -> dict[str, MatrixMechanism]:
    """Typical instances per participation schema (the capability matrix)."""
    from ..core.sampling import Poisson
    c = BandedToeplitz((1.0, 0.5), 8)
    return {label: MatrixMechanism(c, 1.0, participation=p)  # type: ignore[arg-type]
            for label, p in (
        ("single epoch", SingleEpoch()), ("(k, b)-participation", MinSeparation(2, 4)),
        ("cyclic Poisson", CyclicPoisson(0.1, 2)), ("balls in bins", BallsInBins(4)),
        ("fixed bins", FixedBins(4)), ("b-min-separation sampling", MinSepSampling(0.1, 2)),
        ("Poisson", Poisson(0.1)))}

# --- the amplified route (Poisson sampling, any lower-triangular C) ---------------------------

#: the most steps the amplified route takes: it works on C as a dense n x n array (8 n^2
#: bytes, 134 MB here), built only once this is checked
MAX_AMPLIFIED_STEPS = 4096
#: and for a Toeplitz C (banded, BLT), read entry by entry from its coefficients (memory ~n):
#: the bound's time grows about linearly in n (~1 s per 100 steps at 16 bands)
MAX_TOEPLITZ_STEPS = 1 << 16


def _is_toeplitz(m: MatrixMechanism) -> bool:
    from ..mechanisms.matrix_strategies import BLT, Toeplitz
    return isinstance(m.strategy, (Toeplitz, BLT))


def amplified_c(m: MatrixMechanism):
    """C as the amplified route reads it: a lazy |C| of a Toeplitz strategy
    (:class:`~dpamp.amplification.matrix.toeplitz_view.LowerToeplitzAbs`, the same entries
    without the n x n array), else the dense array."""
    if _is_toeplitz(m):
        from ..amplification.matrix.toeplitz_view import LowerToeplitzAbs
        return LowerToeplitzAbs(m.strategy.toeplitz(), m.n)
    return m.matrix()


def amplifiable(m: MatrixMechanism) -> bool:
    """Poisson, cyclic Poisson (more bands than groups, or a non-banded C) or balls in bins on
    a square lower-triangular C (routes noise-split and no-amplification): what the
    amplified routes bound (:func:`_amplified`). Decided from the description."""
    p = m.participation
    return m.route in (NO_AMPLIFICATION, SPLIT) and m.strategy.square_lower \
        and isinstance(p, (CyclicPoisson, BallsInBins, FixedBins, MinSepSampling))


def _conditional_applies(m: MatrixMechanism) -> bool:
    """Conditional composition's reach: at most MAX_AMPLIFIED_STEPS steps
    (MAX_TOEPLITZ_STEPS for a Toeplitz C), ``bins`` dividing n under balls in bins redrawn
    every epoch (not fixed bins: its analysis takes the epochs' draws independent; not
    b-min-separation sampling, whose steps are not independent)."""
    p = m.participation
    if isinstance(p, (FixedBins, MinSepSampling)) or \
            m.n > (MAX_TOEPLITZ_STEPS if _is_toeplitz(m) else MAX_AMPLIFIED_STEPS):
        return False
    return not isinstance(p, BallsInBins) or m.n % p.bins == 0


_SOURCES = {CONDITIONAL: "Choquette-Choo, Ganesh, Steinke & Thakurta 2024 (conditional "
                         "composition)",
            NO_AMPLIFICATION: "Balle, Barthe & Gaboardi 2018, Thm 4 at the worst pattern's "
                              "sensitivity",
            SPLIT: "dpamp's noise split (docs/matrix-mechanisms.md; Choquette-Choo et al. "
                   "2023, Thm 4, is its case of disjoint rows)",
            BLOCKS: "dpamp's noise split in separation blocks (docs/matrix-mechanisms.md; "
                    "Feldman & Shenfeld 2025 for each block's random allocation)"}


def _candidates(m: MatrixMechanism, field: str, x: float,
                conditional: bool = True) -> list[tuple[str, float, str]]:
    """(route, value, detail) of every route other than the mechanism's own that answers at
    ``x``: no-amplification's closed form or the noise split (whichever is not the route),
    conditional composition within its reach (where ``conditional``)."""
    out = []
    routes = _routes(m)[1:]
    if NO_AMPLIFICATION in routes:
        from ..mechanisms.gaussian import Gaussian
        g = getattr(Gaussian(1.0, m.mu[1]), field)(x, method="profile")
        out.append((NO_AMPLIFICATION, getattr(g, field), "the Gaussian at the worst pattern's "
                                                         "sensitivity"))
    if SPLIT in routes:
        why = _split_out_of_range(m)
        try:
            if why is not None:
                raise OutOfReach(why)
            g = getattr(m.split_reduction(), field)(x, method="pld")
        except OutOfReach as err:
            r = _split_rdp(m, field, x)
            out.append((SPLIT, math.inf, f"out of reach ({err})") if r is None else
                       (SPLIT, getattr(r, field), f"the split's steps by RDP (their PLD out "
                                                  f"of reach: {err})"))
        else:
            out.append((SPLIT, getattr(g, field), "the split's steps by the certified PLD"))
    if BLOCKS in routes:
        out.append(_blocks_candidate(m, field, x))
    if conditional and _conditional_applies(m):
        from ..amplification.matrix import query
        p = m.participation
        try:
            if isinstance(p, BallsInBins):
                amp = getattr(query, f"{field}_bins")(amplified_c(m), m.noise_multiplier,
                                                      p.bins, x)
            else:
                amp = getattr(query, field)(amplified_c(m), m.noise_multiplier,
                                            p.sampling_prob, x,  # type: ignore[attr-defined]
                                            partitions=p.partitions)  # type: ignore[attr-defined]
        except OutOfReach as err:
            # (the conditional mixtures' PLD cannot take them, e.g. losses beyond its range at
            # tiny noise): no value, and the note says why
            out.append((CONDITIONAL, math.inf, f"out of reach ({err})"))
        else:
            out.append((CONDITIONAL, getattr(amp, field),
                        f"delta = {amp.delta_pld:.6g} (PLD of the conditional mixtures) + "
                        f"{amp.slack:.6g} (histories whose posterior bound fails)"))
    return out


def _split_rdp(m: MatrixMechanism, field: str, x: float):
    """The noise split's plan by RDP (Poisson-subsampled Gaussians; Mironov, Talwar & Zhang
    2019), where its PLD is out of reach (tiny rates: a grid beyond its size), or None where
    RDP does not answer either (random allocation under balls in bins, overflow)."""
    try:
        g = getattr(m.split_reduction(), field)(x, method="rdp")
    except (OutOfReach, ValueError):
        return None
    return g if math.isfinite(getattr(g, field)) else None


def _blocks_candidate(m: MatrixMechanism, field: str, x: float) -> tuple[str, float, str]:
    """b-min-separation sampling: the separation blocks' plan by the certified PLD
    (``MatrixMechanism.blocks_reduction``), or an infinite value where it is out of reach."""
    plan = m.separation_blocks
    assert plan is not None
    why = _split_out_of_range(m)
    try:
        if why is not None:
            raise OutOfReach(why)
        g = getattr(m.blocks_reduction(), field)(x, method="pld")
    except OutOfReach as err:
        return BLOCKS, math.inf, f"out of reach ({err})"
    shapes = ", ".join(sorted({f"1 of {k} at rate {g_:.6g}" for _, k, g_, _ in plan.parts}))
    return BLOCKS, getattr(g, field), (f"blocks of {plan.length} steps, each a random "
                                       f"allocation ({shapes}), by the certified PLD")


def _lower_note(low, partitions: int, computed: bool = False) -> tuple[float | None, str]:
    """(the lower end, the words saying what it assumed) of a LowerEnd, or (None, "");
    ``computed``: C's coefficients are computed (a BLT), read lowered by their error bound."""
    if low is None:
        return None, ""
    rest = [f"{name} {v:.6g}" for name, v in low.values if name != low.witness.name]
    group = f", a record of group {low.witness.group}" if partitions > 1 else ""
    if computed:
        group += ", C's computed coefficients lowered by their error bound"
    gave = f" (the other witness{'es' if len(rest) > 1 else ''} gave {', '.join(rest)})"
    return low.value, f"; lower end: the {low.witness.describe()}{group}" + (gave if rest else "")


def lower_witnesses(m: MatrixMechanism, c=None):
    """The witnesses of the amplified route's lower end: (cyclic) Poisson sampling on a banded
    C (:mod:`dpamp.amplification.matrix.lower`; on C >= 0 also the windowed witnesses of
    :mod:`dpamp.amplification.matrix.lower_block`) and on any C >= 0 the whole run's matched
    filter (:mod:`dpamp.amplification.matrix.lower_run_rates`), balls in bins and fixed bins on C >= 0
    (:mod:`dpamp.amplification.matrix.lower_bins`: matched filters, row allocation for a
    Toeplitz C with bands dividing the bins, filter allocation and the windows of an epoch
    for a Toeplitz C); b-min-separation sampling on a banded C >= 0
    (:mod:`dpamp.amplification.matrix.lower_minsep`: the windows at the chain's least
    favourable entry state; and the whole run's matched filter); else [];
    ``c``: C as ``amplified_c`` reads it, if built."""
    p = m.participation
    bands = m.strategy.bands
    if isinstance(p, (FixedBins, BallsInBins)):
        from ..amplification.matrix import lower_bins as LB
        from ..amplification.matrix.lower_run import run_filter_witnesses
        if isinstance(p, FixedBins):
            ws = [LB.fixed_bins_witness(m.strategy, m.noise_multiplier, p.bins),
                  LB.fixed_filter_witness(m.strategy, m.noise_multiplier, p.bins),
                  *LB.window_witnesses(m.strategy, m.noise_multiplier, p.bins, fixed=True),
                  *run_filter_witnesses(m.strategy, m.noise_multiplier, p.bins, fixed=True)]
        else:
            ws = [LB.epoch_witness(m.strategy, m.noise_multiplier, p.bins),
                  LB.allocation_witness(m.strategy, m.noise_multiplier, p.bins),
                  LB.filter_allocation_witness(m.strategy, m.noise_multiplier, p.bins),
                  *LB.window_witnesses(m.strategy, m.noise_multiplier, p.bins),
                  *run_filter_witnesses(m.strategy, m.noise_multiplier, p.bins)]
        return [w for w in ws if w is not None]
    if isinstance(p, MinSepSampling):
        from ..amplification.matrix.lower_minsep import minsep_witnesses
        from ..amplification.matrix.lower_run_rates import minsep_filter_witnesses
        return minsep_witnesses(m.strategy, m.noise_multiplier, p.sampling_prob,
                                p.min_separation) + \
            minsep_filter_witnesses(m.strategy, m.noise_multiplier, p.sampling_prob,
                                    p.min_separation)
    if not isinstance(p, CyclicPoisson):
        return []
    from ..amplification.matrix.lower_run_rates import rate_filter_witnesses
    run = rate_filter_witnesses(m.strategy, m.noise_multiplier, p.sampling_prob, p.partitions)
    if bands is None:
        return run
    from ..amplification.matrix import lower as LW
    from ..amplification.matrix.lower_block import block_witnesses
    col_sq = m.strategy.column_norms_sq()
    blocks = block_witnesses(m.strategy, m.noise_multiplier, p.sampling_prob, p.partitions,
                             col_sq)
    if bands <= LW.MAX_BANDS and c is None and not blocks:
        c = amplified_c(m)
    return LW.witnesses(c, col_sq, bands, m.noise_multiplier, p.sampling_prob, p.partitions,
                        m.strategy.coeff_error, fixed=not blocks) + blocks + run


def _own(m: MatrixMechanism, field: str, x: float):
    """(answer, route) of the mechanism's own route at ``x``: no-amplification's closed-form
    profile, or the noise split by the PLD; where the split's PLD is out of reach (losses
    beyond its range at tiny noise, a grid beyond its size at tiny rates), the smaller of the
    split by RDP and no-amplification's profile (both proven), the route saying so."""
    if m.route != SPLIT:
        return getattr(m, field)(x, method="profile"), NO_AMPLIFICATION
    why = _split_out_of_range(m)
    if why is None:
        try:
            return getattr(m, field)(x, method="pld"), SPLIT
        except OutOfReach as err:
            why = str(err)
    from ..mechanisms.gaussian import Gaussian
    g = getattr(Gaussian(1.0, m.mu[1]), field)(x, method="profile")
    r = _split_rdp(m, field, x)
    if r is not None and getattr(r, field) < getattr(g, field):
        return r, f"{SPLIT} by RDP (its PLD out of reach: {why})"
    return g, f"{NO_AMPLIFICATION} (route {SPLIT} out of reach: {why})"


def _amplified(m: MatrixMechanism, field: str, x: float, conditional: bool = True):
    """The smallest proven upper bound at ``x`` (delta for field "epsilon", epsilon for
    "delta") over the mechanism's own route (noise-split by the PLD, or no-amplification's
    closed-form profile) and :func:`_candidates`, where ``amplifiable``; else the mechanism's
    own answer. The answer's ``method`` names the route that gave it and its note the others'
    values. The lower end, for (cyclic) Poisson sampling on a banded C: the larger of the
    witnesses of :mod:`dpamp.amplification.matrix.lower` (a record whose gradient is one
    fixed unit vector, output rows with disjoint read sets kept; a record whose gradient
    cycles over orthogonal unit vectors, DP-SGD at the column norms), the note saying which
    and what it assumed; for balls in bins on C >= 0, matched filters and row allocation
    (:mod:`dpamp.amplification.matrix.lower_bins`); an attained split's own lower end where
    larger."""
    if not amplifiable(m):
        return getattr(m, field)(x)
    import dataclasses as dc
    from ..amplification.matrix.lower import lower_end
    own, route = _own(m, field, x)
    lower, lnote = _lower_note(lower_end(lower_witnesses(m), field, x),
                               getattr(m.participation, "partitions", 1),
                               bool(m.strategy.coeff_error))
    if route == SPLIT and own.lower is not None and (lower is None or own.lower > lower):
        # an attained split (a diagonal C): its own lower end is the truth's
        lower, lnote = own.lower, "; lower end: the split's steps, attained (a diagonal C)"
    cands = _candidates(m, field, x, conditional)
    best = min(cands, key=lambda c: c[1], default=None)
    if best is None or not best[1] < getattr(own, field):
        others = "".join(f"; route {r} gave {v:.6g} ({d})" for r, v, d in cands)
        return dc.replace(own, lower=lower, method=SPLIT if route == SPLIT else own.method,
                          source=_SOURCES.get(route, own.source),
                          note=f"route {route}{others}{lnote}")
    name, value, detail = best
    others = "".join(f"; route {r} gave {v:.6g} ({d})" for r, v, d in cands if r != name)
    return dc.replace(own, **{field: value}, lower=lower, method=name, source=_SOURCES[name],
                      tol_met=None, tol_why="",
                      note=f"route {name}: {detail}; route {route} gave "
                           f"{getattr(own, field):.6g}{others}{lnote}")


def amplified_epsilon(m: MatrixMechanism, delta: float, conditional: bool = True):
    """epsilon at ``delta``: the smallest of the routes (:func:`_amplified`; conditional
    composition only where ``conditional``); the answer's ``method`` names the route that
    gave it."""
    return _amplified(m, "epsilon", delta, conditional)


def amplified_delta(m: MatrixMechanism, epsilon: float, conditional: bool = True):
    """delta at ``epsilon``: the smallest of the routes (:func:`_amplified`)."""
    return _amplified(m, "delta", epsilon, conditional)


__all__ = ["bsr_coefficients", "NO_AMPLIFICATION", "CONDITIONAL", "amplifiable",
           "amplified_epsilon", "amplified_delta"]
