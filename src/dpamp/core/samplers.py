"""Samplers by name, and how epochs become steps: the one table behind ``--sampler`` on the
command line, ``sampler =`` in a TOML plan and ``dp.dpsgd(sampler=...)``.

DP-SGD's vocabulary (opacus, dp-accounting, TF-Privacy) is a noise multiplier z, a batch size
B, a dataset size N, epochs and a sampler. Each step adds Gaussian noise of standard deviation
z·C to a sum of per-record gradients clipped to norm C; the sampler says how the step's batch is
drawn, and with it the neighbouring relation the guarantee is under and the sensitivity of the
clipped sum (C under add/remove: one record more or less; 2C under substitution: one record
replaced):

| name                  | each step                            | relation     | sensitivity | source |
|-----------------------|--------------------------------------|--------------|-------------|--------|
| "poisson" (default)   | every record independently, rate B/N | add/remove   | 1 (x C)     | Steinke 2022, Thm 34, Balle et al. 2018, Thm 8 |
| "without-replacement" | a uniform subset of exactly B of N   | substitution | 2 (x C)     | Wang et al. 2019, Thms 9, 19; Balle et al. 2018, Thm 9 |
| "with-replacement"    | B draws with replacement from N      | substitution | 2 (x C)     | Balle et al. 2018, Thm 10 |
| "allocation"          | one random batch of t = N//B per epoch | add/remove   | 1 (x C)     | FS25a, FS25b |
| "shuffle"             | reshuffle, t = N//B batches of B     | substitution | 2 (x C)     | CGKKMSZ24 (lower) |
| "truncated-poisson"   | Poisson at rate B/N, cut to at most max_batch_size | add/remove | 1 (x C) | arXiv 2508.15089 |

"truncated-poisson" takes one word more, ``max_batch_size`` (``--max-batch-size``): the batch
of a Poisson sample at rate B/N is cut to a uniformly random subset of at most that many records
(fixed-memory training; dp-accounting's ``TruncatedSubsampledGaussianDpEvent``, with N the
dataset size there). Its words are listed in ``Sampler.extra`` and passed to ``scheme`` by name.

(FS25a/b: Feldman & Shenfeld, arXiv 2502.08202 / 2602.17284; CGKKMSZ24: Chua et al., "How
Private are DP-SGD Implementations?", ICML 2024. The shuffle's upper bound is one substitution
per epoch, without amplification: no better proven bound is known, docs/papers/shuffling.md.)

The last two are *epoch* samplers: their scheme (``RandomAllocation(1, t)``, ``Shuffled(B, N)``)
describes a whole epoch of t steps, and a run is counted in epochs. With t = floor(N/B) the
expected batch of random allocation is N/t >= B: fewer, larger batches, never a smaller epsilon
than the t the run used (epsilon decreases in t). A partial last epoch counts as a whole one:
running the first s < t steps of an epoch is a post-processing of the whole epoch.

Poisson sampling at rate B/N is what opacus, dp-accounting and TF-Privacy account for; the
others are asked for by name. ``_`` and ``-`` are the same in a name ("without_replacement").
A sampler is one entry of :data:`SAMPLERS`: a name, the relation, and a function of (B, N)
that returns the per-step sampling scheme (a :class:`~dpamp.core.sampling.SamplingScheme`);
samplers defined by other schemes of ``core/sampling.py`` (random allocation, shuffling) are
entries of the same shape, and every caller (CLI, plans, ``dp.dpsgd``) offers them at once.

**Epochs to steps** (:func:`count`): one epoch is N/B steps (1/q for a rate q alone; one step
when nothing is sampled), and E epochs are ``ceil(E · N / B)`` steps, computed in exact rational
arithmetic: a fractional last epoch counts as whole steps, the partial one included (TF-Privacy's
``compute_dp_sgd_privacy`` counts the same way). Rounding up never under-counts the steps run,
so the guarantee stays an upper bound. A float stands for the simplest fraction that rounds to
it (:func:`exact`): 0.768 is 96/125, and the double nearest 256/60000 is 8/1875, so
``dp.Poisson(256 / 60000)`` and ``batch_size = 256, dataset_size = 60000`` give the same steps
(for every dataset size up to 2^26 the simplest fraction is B/N itself: two fractions with
denominators below 2^26 are more than an ulp apart).
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Callable

from . import validate as V
from .relations import ADD_REMOVE, SUBSTITUTION, Relation
from .sampling import Poisson, RandomAllocation, SamplingScheme, Shuffled, TruncatedPoisson, \
    WithReplacement, WithoutReplacement, clip_sensitivity

__all__ = ["Sampler", "SAMPLERS", "DEFAULT_SAMPLER", "sampler", "exact", "rate_of", "count",
           "steps_of_epochs", "epochs_of_steps"]


@dataclasses.dataclass(frozen=True)
class Sampler:
    """One way of drawing each step's batch.

    ``relation``: the neighbouring relation of the inner mechanism and of the guarantee;
    ``scheme(batch_size, dataset_size, **extra)``: the per-step sampling scheme; ``rate_alone``:
    whether a sampling rate alone (without B and N) describes it; ``extra``: the further words
    it needs (plan keys, passed to ``scheme`` by name); ``summary`` and ``source`` for people."""

    name: str
    relation: Relation
    scheme: Callable[..., SamplingScheme]
    summary: str
    source: str
    rate_alone: bool = False
    per_epoch: bool = False
    extra: tuple[str, ...] = ()

    @property
    def sensitivity(self) -> float:
        """Sensitivity of a sum of records clipped to norm 1 under this sampler's relation."""
        return clip_sensitivity(self.relation)


#: name -> Sampler; the first is the default
SAMPLERS: dict[str, Sampler] = {s.name: s for s in (
    Sampler("poisson", ADD_REMOVE, lambda b, n: Poisson(b / n),
            "each record independently with probability B/N (the rate)",
            "Steinke 2022, Thm 34 (RDP), Balle, Barthe & Gaboardi 2018, Thm 8 (profile)",
            rate_alone=True),
    Sampler("without-replacement", SUBSTITUTION, lambda b, n: WithoutReplacement(b, n),
            "a uniformly random subset of exactly B of the N records",
            "Wang, Balle & Kasiviswanathan 2019, Thms 9, 19 (RDP), Balle, Barthe & Gaboardi "
            "2018, Thm 9 (profile)"),
    Sampler("with-replacement", SUBSTITUTION, lambda b, n: WithReplacement(b, n),
            "B records drawn independently and uniformly, with replacement",
            "Balle, Barthe & Gaboardi 2018, Thm 10 (profile)"),
    Sampler("allocation", ADD_REMOVE, lambda b, n: RandomAllocation(1, max(1, n // b)),
            "each record in one uniformly random batch of the t = floor(N/B) batches of an "
            "epoch (random allocation, balls in bins)",
            "Feldman & Shenfeld 2025 (RDP: arXiv 2502.08202; PLD: arXiv 2602.17284)",
            per_epoch=True),
    Sampler("shuffle", SUBSTITUTION, lambda b, n: Shuffled(b, n, relation=SUBSTITUTION),
            "each epoch a fresh shuffle cut into t = floor(N/B) batches of exactly B (the "
            "remainder dropped)",
            "upper: no amplification (one substitution per epoch); lower: Chua et al. 2024",
            per_epoch=True),
    Sampler("truncated-poisson", ADD_REMOVE,
            lambda b, n, max_batch_size: TruncatedPoisson(b / n, max_batch_size, n),
            "each record independently with probability B/N, the batch then cut to a uniformly "
            "random subset of at most max_batch_size records",
            "a labelled mixture of Balle, Barthe & Gaboardi 2018, Thm 8 at two rates (arXiv "
            "2508.15089; dpamp.amplification.truncation)", extra=("max_batch_size",)),
)}
DEFAULT_SAMPLER = "poisson"


def sampler(name: str) -> Sampler:
    """The sampler called ``name`` (``_`` and ``-`` alike); an error lists the names."""
    key = str(name).strip().lower().replace("_", "-") if isinstance(name, str) else None
    if key not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(map(repr, SAMPLERS))} "
                         f"(got {name!r})")
    return SAMPLERS[key]


def _simplest_in(lo: Fraction, hi: Fraction) -> Fraction:
    """The fraction with the smallest denominator in [lo, hi], 0 <= lo <= hi (the
    Stern-Brocot descent, written on continued fractions)."""
    whole = math.floor(lo)
    if whole == lo or whole + 1 <= hi:
        return Fraction(whole if whole == lo else whole + 1)
    # lo, hi lie strictly inside (whole, whole + 1): recurse on the reciprocals of the parts
    return whole + 1 / _simplest_in(1 / (hi - whole), 1 / (lo - whole))


def exact(x) -> Fraction:
    """The exact rational a positive number stands for: an int or Fraction itself; a float the
    simplest fraction among the reals that round to it (0.1 -> 1/10, 256/60000 -> 8/1875)."""
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        return Fraction(x)
    x = V.positive("value", x)
    below = Fraction(math.nextafter(x, 0.0))
    above = Fraction(math.nextafter(x, math.inf))
    f = Fraction(x)
    return _simplest_in((below + f) / 2, (f + above) / 2)


def rate_of(scheme: SamplingScheme | None) -> Fraction:
    """The exact sampling rate of a scheme: B/N from its batch and population where it has
    them, else the simplest fraction its float rate stands for; 1 without sampling."""
    if scheme is None:
        return Fraction(1)
    batch, population = getattr(scheme, "batch", None), getattr(scheme, "population", None)
    if isinstance(batch, int) and isinstance(population, int):
        return Fraction(batch, population)
    return exact(float(scheme.rate))


def steps_per_run(scheme: SamplingScheme | None) -> int:
    """How many steps one run of a subsampled mechanism is: t for an epoch sampler
    (``RandomAllocation``, ``Shuffled``: the mechanism is a whole epoch), else 1."""
    return int(getattr(scheme, "steps")) if getattr(scheme, "per_epoch", False) else 1


def steps_of_epochs(epochs, rate) -> int:
    """ceil(epochs / rate) in exact arithmetic (>= 1 for epochs > 0); ``rate`` a scheme, a
    Fraction or a float. For an epoch sampler (a scheme whose mechanism is a whole epoch) the
    runs are epochs: ceil(epochs), a partial epoch counted whole (it is a post-processing of
    the whole one)."""
    e = exact(V.positive("epochs", epochs))
    if getattr(rate, "per_epoch", False):
        return max(1, math.ceil(e))
    q = rate if isinstance(rate, Fraction) else \
        exact(rate) if isinstance(rate, (int, float)) else rate_of(rate)
    return max(1, math.ceil(e / q))


def epochs_of_steps(steps: int, rate) -> float:
    """How many epochs ``steps`` steps are (steps x rate), as a float for reports."""
    q = rate if isinstance(rate, Fraction) else \
        exact(rate) if isinstance(rate, (int, float)) else rate_of(rate)
    return float(steps * q)


def count(steps=None, epochs=None, scheme: SamplingScheme | None = None, *,
          steps_name: str = "steps", epochs_name: str = "epochs") -> int:
    """The number of runs of ``mechanism.subsample(scheme)`` given ``steps``, ``epochs`` or
    both (then they must agree): steps for a per-step scheme, epochs for an epoch sampler
    (:func:`steps_per_run` steps each; the steps of a partial epoch count as a whole one).
    Neither is an error naming both (no silent single step). Used by the CLI, TOML plans,
    ``dp.dpsgd`` and ``dp.calibrate`` alike; ``*_name`` name the parameters in errors."""
    if steps is None and epochs is None:
        raise ValueError(f"give the length of the run: {steps_name} (number of steps) or "
                         f"{epochs_name} (passes over the dataset)")
    n = None if steps is None else V.integer(steps_name, steps, low=1)
    t = steps_per_run(scheme)
    if t > 1:
        # an epoch sampler: the count is of epochs, ceil(steps / t) for a number of steps
        runs = None if n is None else -(-n // t)
        m = runs if epochs is None else steps_of_epochs(V.positive(epochs_name, epochs), scheme)
        if runs is not None and runs != m:
            raise ValueError(f"{steps_name} {n} and {epochs_name} {epochs:g} disagree: "
                             f"{n} steps of {t} per epoch are {runs} epochs; give one of them")
        assert m is not None            # steps or epochs was given
        return _at_most_max(m, epochs_name, epochs, "epochs")
    if epochs is None:
        assert n is not None            # steps was given
        return n
    e = V.positive(epochs_name, epochs)
    m = steps_of_epochs(e, scheme)
    if n is not None and n != m:
        q = rate_of(scheme)
        raise ValueError(f"{steps_name} {n} and {epochs_name} {e:g} disagree: {e:g} epochs at "
                         f"rate {q} are ceil({e:g} x {1 / q}) = {m} steps; give one of them")
    return _at_most_max(m, epochs_name, e, "steps")


def _at_most_max(m: int, epochs_name: str, epochs, what: str) -> int:
    """The count ``m`` that ``epochs`` make, refused naming the epochs where it is above
    :data:`~dpamp.core.validate.MAX_INTEGER` (2^53: counts are used as exact floats downstream;
    the composition would refuse it later, naming no parameter the user wrote)."""
    if m > V.MAX_INTEGER:
        from .rounding import fmt, round_down
        shown = round_down(m, 4) if m < 10 ** 300 else f"a {len(str(m))}-digit number of"
        raise ValueError(f"{epochs_name} must make at most 2^53 = {V.MAX_INTEGER} {what} "
                         f"(got {fmt(float(epochs))} epochs: {shown} {what}); give fewer "
                         "epochs")
    return m
