"""Interoperability with dp-accounting (Google): its ``DpEvent`` descriptions as dpamp mechanisms.

``from_dp_event(event)`` reads a dp-accounting ``DpEvent`` into a dpamp mechanism (dp-accounting
is imported only when called; it is a test extra, not a dependency).

| DpEvent                                   | dpamp                                                |
|-------------------------------------------|------------------------------------------------------|
| GaussianDpEvent(z)                        | Gaussian(sigma=z, sensitivity=1 [*])                 |
| LaplaceDpEvent(z)                         | Laplace(scale=z, sensitivity=1 [*])                  |
| RandomizedResponseDpEvent(p, k=2)         | RandomizedResponse(1 - p/2), substitution            |
| RandomizedResponseDpEvent(p, k>2)         | KaryRandomizedResponse(k, p), substitution [**]      |
| ZCDpEvent(rho, xi=0)                      | ZCDP(rho)                                            |
| DiscreteLaplaceDpEvent(a, Delta)          | DiscreteLaplace(a, sensitivity=Delta)                |
| MixtureOfGaussiansDpEvent(s, c, p)        | MixtureOfGaussians(s, c, p), add/remove              |
| DiscreteGaussianDpEvent(s, Delta, 1) [***] | DiscreteGaussian(s, Delta) (read only)              |
| PoissonSampledDpEvent(q, e)               | from_dp_event(e).subsample(Poisson(q)), add/remove   |
| SampledWithoutReplacementDpEvent(n, m, e) | ... .subsample(WithoutReplacement(m, n)), substitution |
| SampledWithReplacementDpEvent(n, m, e)    | ... .subsample(WithReplacement(m, n)), substitution  |
| TruncatedSubsampledGaussianDpEvent(n, q, B, z) | Gaussian(z).subsample(TruncatedPoisson(q, B, n)), add/remove |
| ComposedDpEvent([e1, ...])                | dp.compose(...)                                      |
| SelfComposedDpEvent(e, c)                 | from_dp_event(e) * c                                 |
| SingleEpochTreeAggregationDpEvent(z, n)   | TreeAggregation(z, max(n))                           |
| RepeatAndSelectDpEvent(e, mean, shape)    | RepeatAndSelect(from_dp_event(e), mean, ...)         |
| NoOpDpEvent, count 0, rate 0, k = 1, p = 1 | no privacy cost (dropped from the composition)      |
| NonPrivateDpEvent, UnsupportedDpEvent, others | ValueError naming the event class               |

``to_dp_event(m)`` writes the other way, wherever dp-accounting has the event: each family's
declared ``to_event`` (Gaussian, Laplace, discrete Laplace, randomized response of a bit,
k-ary randomized response, zCDP, tree aggregation, mixture of Gaussians under add/remove; a
wrapper family, subsampled or repeat-and-select, around its base's event), a composition as ComposedDpEvent of
SelfComposedDpEvent(part, count), a 0-DP mechanism (what NoOpDpEvent reads as) as NoOpDpEvent.
Families with no dp-accounting event (PureDP, EpsDelta, the selection mechanisms, random
allocation, ...) raise ValueError naming the part. The neighbouring relation is dp-accounting's *accountant*'s: give it
the relation of ``m`` (``m.relation``; REPLACE_ONE for substitution).

Semantics, as dp-accounting's own accountants use them:

* The neighbouring relation is a property of dp-accounting's *accountant*, not of the event:
  PoissonSampledDpEvent needs ADD_OR_REMOVE_ONE, SampledWithoutReplacementDpEvent and
  RandomizedResponseDpEvent need REPLACE_ONE (substitution). ``relation=None`` infers it from
  the events (a tree mixing both kinds is refused); pass ``relation`` to force one.
* [*] ``noise_multiplier`` z is the ratio of the noise scale to the sensitivity *under the
  relation in force*: dp-accounting's RdpAccountant gives a Gaussian inside
  SampledWithoutReplacementDpEvent the RDP alpha / (2 z^2), i.e. replace-one sensitivity 1, and
  its PLD accountant shifts the Gaussian by 1 under REPLACE_ONE. (The GaussianDpEvent docstring
  defines z = s / C for records of norm <= C, for which replacing a record moves a sum by 2C;
  if your z was computed that way, pass ``replace_one_sensitivity=2`` to be safe.)
* A subsampled composition of Gaussians is one Gaussian with z = (sum z_i^-2)^-1/2 (dp-accounting
  does the same: the queries run on one sample; Mironov et al. 2019 Sec. 3).
* [***] on dp-accounting's main branch, not in 0.6.0 (whose event classes are all read or
  refused by name: tests/test_dp_event_interop.py).
* [**] k-ary randomized response (k > 2) is read as itself, with its exact three-outcome pair
  P = (1 - p + p/k, p/k, (k-2) p/k) vs Q = (p/k, 1 - p + p/k, (k-2) p/k)
  (:mod:`dpamp.mechanisms.kary_randomized_response`); pure DP with the same epsilon would be
  sound for the upper bound but its lower bound is that of a worse mechanism, not this one's.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..core import validate as V
from ..core.relations import ADD_REMOVE, SUBSTITUTION, Relation, as_relation
from ..mechanisms.family import families, family_of

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism

__all__ = ["from_dp_event", "to_dp_event"]


def _dp_event_module():
    try:
        from dp_accounting import dp_event
    except ImportError:  # pragma: no cover - dp-accounting is a test extra
        raise ValueError("reading DpEvents needs dp-accounting: pip install dp-accounting") \
            from None
    return dp_event


def _relation_of(value):
    if value is None or isinstance(value, Relation):
        return value
    name = getattr(value, "name", None)  # dp_accounting.NeighboringRelation
    if name == "ADD_OR_REMOVE_ONE":
        return ADD_REMOVE
    if name == "REPLACE_ONE":
        return SUBSTITUTION
    if name == "REPLACE_SPECIAL":
        raise ValueError("the REPLACE_SPECIAL relation (replace a record by a special zero "
                         "record) is not supported; for Gaussian and Laplace noise it gives the "
                         "same numbers as ADD_OR_REMOVE_ONE")
    return as_relation(value)


def _needed_relations(event, E) -> set:
    """The relations the events of the tree require (see the module docstring)."""
    if isinstance(event, E.PoissonSampledDpEvent):
        return {ADD_REMOVE} | _needed_relations(event.event, E)
    if type(event).__name__ == "TruncatedSubsampledGaussianDpEvent":
        return {ADD_REMOVE}
    if isinstance(event, (E.SampledWithoutReplacementDpEvent, E.SampledWithReplacementDpEvent)):
        return {SUBSTITUTION} | _needed_relations(event.event, E)
    if isinstance(event, E.RandomizedResponseDpEvent):
        return {SUBSTITUTION}
    if isinstance(event, E.ComposedDpEvent):
        return set().union(*[_needed_relations(e, E) for e in event.events]) if event.events \
            else set()
    inner = getattr(event, "event", None)          # self-composed, repeat-and-select, ...
    if isinstance(inner, E.DpEvent):
        return _needed_relations(inner, E)
    return set()


def _gaussian_z(event, E):
    """Effective noise multiplier of a tree of Gaussians (None if something else is inside)."""
    if isinstance(event, E.GaussianDpEvent):
        return float(event.noise_multiplier)
    if isinstance(event, E.SelfComposedDpEvent):
        z = _gaussian_z(event.event, E)
        if z is None or event.count == 0:
            return None
        return z / math.sqrt(event.count)
    if isinstance(event, E.ComposedDpEvent) and event.events:
        zs = [_gaussian_z(e, E) for e in event.events]
        if any(z is None for z in zs):
            return None
        if any(z == 0 for z in zs):
            return 0.0
        return sum(z ** -2 for z in zs) ** -0.5
    return None


def from_dp_event(event: Any, relation: Relation | str | None = None,
                  replace_one_sensitivity: float = 1.0) -> Mechanism:
    """A dpamp mechanism equivalent to a dp-accounting ``DpEvent`` (see the module docstring
    for the table and the semantics). ``relation``: None (infer from the events), dp.ADD_REMOVE
    / dp.SUBSTITUTION, or a dp_accounting ``NeighboringRelation``. ``replace_one_sensitivity``:
    the L2 (Gaussian) / L1 (Laplace) sensitivity in units of the noise multiplier under
    substitution (1 as in dp-accounting's accountants)."""
    from ..mechanisms import PureDP
    E = _dp_event_module()
    if not isinstance(event, E.DpEvent):
        raise ValueError(f"event must be a dp_accounting DpEvent (got {type(event).__name__})")
    rel = _relation_of(relation)
    needed = _needed_relations(event, E)
    if len(needed) > 1:
        raise ValueError("the event mixes Poisson sampling (add/remove relation) with sampling "
                         "without replacement or randomized response (replace-one relation); "
                         "no single neighbouring relation covers both")
    if rel is None:
        rel = next(iter(needed)) if needed else ADD_REMOVE
    elif needed and rel not in needed:
        raise ValueError(f"the event needs the {next(iter(needed))} relation but relation="
                         f"{rel} was given")
    sens = 1.0 if rel is ADD_REMOVE else V.positive("replace_one_sensitivity",
                                                     replace_one_sensitivity)
    mech = _convert(event, E, rel, sens)
    return PureDP(0.0, relation=rel) if mech is None else mech


def _convert(event, E, rel, sens):
    """The mechanism, or None for an event with no privacy cost."""
    from .. import mechanisms as M
    from ..core import sampling as S
    name = type(event).__name__
    if isinstance(event, E.NoOpDpEvent):
        return None
    if isinstance(event, E.NonPrivateDpEvent):
        raise ValueError("NonPrivateDpEvent: the computation is not differentially private "
                         "(epsilon is infinite)")
    fam = _family_of_event(name)
    if fam is not None:
        inner = getattr(event, "event", None)
        if isinstance(inner, E.DpEvent):           # a wrapper family: its event first
            return fam.from_event(event, rel, sens, _convert(inner, E, rel, sens))
        return fam.from_event(event, rel, sens)
    if isinstance(event, E.SelfComposedDpEvent):
        count = V.integer("count", event.count, low=0)
        inner = _convert(event.event, E, rel, sens)
        return None if inner is None or count == 0 else inner * count
    if isinstance(event, E.ComposedDpEvent):
        parts = [m for m in (_convert(e, E, rel, sens) for e in event.events) if m is not None]
        return M.compose(*parts) if parts else None
    if name == "TruncatedSubsampledGaussianDpEvent":
        return _truncated(event, rel)
    if isinstance(event, E.PoissonSampledDpEvent):
        q = V.probability("sampling_probability", event.sampling_probability)
        inner = _sampled_inner(event.event, E, rel, sens)
        if q == 0 or inner is None:
            return None
        return inner.subsample(S.Poisson(q, relation=rel))
    if isinstance(event, (E.SampledWithoutReplacementDpEvent, E.SampledWithReplacementDpEvent)):
        n = V.integer("source_dataset_size", event.source_dataset_size, low=1)
        m = V.integer("sample_size", event.sample_size, low=0)
        inner = _sampled_inner(event.event, E, rel, sens)
        if m == 0 or inner is None:
            return None
        cls = S.WithoutReplacement if isinstance(event, E.SampledWithoutReplacementDpEvent) \
            else S.WithReplacement
        return inner.subsample(cls(m, n))
    listed = sorted(f.event for _, f in families() if f.event) + [
        "PoissonSampledDpEvent", "SampledWithoutReplacementDpEvent",
        "SampledWithReplacementDpEvent", "TruncatedSubsampledGaussianDpEvent", "ComposedDpEvent",
        "SelfComposedDpEvent", "NoOpDpEvent"]
    raise ValueError(f"{name} is not supported by dpamp; supported: {', '.join(listed)}")


def _truncated(event, rel):
    """dp-accounting's TruncatedSubsampledGaussianDpEvent(dataset_size, sampling_probability,
    truncated_batch_size, noise_multiplier): a Gaussian of sensitivity 1 on a truncated Poisson
    sample (add/remove, the relation dp-accounting's PLD accountant analyses it under by
    default); rate 0, batch 0 or dataset 0 cost nothing, as there."""
    from .. import mechanisms as M
    from ..core import sampling as S
    if rel is not ADD_REMOVE:
        raise ValueError("TruncatedSubsampledGaussianDpEvent is accounted under add/remove "
                         "only in dpamp (a cut batch replaces a record; no substitution "
                         "analysis is implemented)")
    n = V.integer("dataset_size", event.dataset_size, low=0)
    q = V.probability("sampling_probability", event.sampling_probability)
    b = V.integer("truncated_batch_size", event.truncated_batch_size, low=0)
    z = V.nonnegative("noise_multiplier", event.noise_multiplier)
    if q == 0 or b == 0 or n == 0:
        return None
    if z == 0:
        raise ValueError("a TruncatedSubsampledGaussianDpEvent with noise_multiplier 0 is not "
                         "private")
    return M.Gaussian(z, relation=rel).subsample(S.TruncatedPoisson(q, b, n))


def _family_of_event(name: str):
    """The family that reads dp-accounting's event class ``name`` (its declared ``event``)."""
    for _, fam in families():
        if fam.event == name and fam.from_event is not None:
            return fam
    return None


def _sampled_inner(event, E, rel, sens):
    from .. import mechanisms as M
    z = _gaussian_z(event, E)
    if z is not None:
        if z <= 0:
            raise ValueError("a GaussianDpEvent with noise_multiplier 0 is not private")
        return M.Gaussian(z, sensitivity=sens, relation=rel)
    return _convert(event, E, rel, sens)


def to_dp_event(mechanism: Mechanism) -> Any:
    """dp-accounting's ``DpEvent`` for a dpamp mechanism, wherever dp-accounting has the event
    (module docstring): the families' declared ``to_event`` (a wrapper family given its base's
    event), compositions as ComposedDpEvent of SelfComposedDpEvent. ValueError naming the part
    that has none."""
    E = _dp_event_module()
    parts = [(m, c) for m, c in mechanism.parts() if c > 0]
    if len(parts) == 1 and parts[0] == (mechanism, 1):
        return _event_of(mechanism)
    if not parts:
        return E.NoOpDpEvent()
    events = [_event_of(m) if c == 1 else E.SelfComposedDpEvent(_event_of(m), c)
              for m, c in parts]
    return events[0] if len(events) == 1 else E.ComposedDpEvent(events)


def _event_of(mechanism) -> Any:
    fam = family_of(mechanism)
    if fam is None or fam.to_event is None:
        if _costs_nothing(mechanism, fam):           # PureDP(0), what NoOpDpEvent reads as
            return _dp_event_module().NoOpDpEvent()
        name = type(mechanism).__name__ if fam is None else fam.name
        raise ValueError(f"{name} has no dp-accounting event (to_dp_event writes: "
                         f"{', '.join(sorted(f.name for _, f in families() if f.to_event))}, "
                         "compositions of them)")
    base = getattr(mechanism, "base", None)
    if base is not None:                             # a wrapper family: its base's event
        return fam.to_event(mechanism, to_dp_event(base))
    return fam.to_event(mechanism)


def _costs_nothing(mechanism, fam) -> bool:
    """Whether the mechanism is stated as 0-DP (then NoOpDpEvent describes it exactly): by its
    declared (epsilon, delta) statement, or the pure epsilon ``eps0`` of a pure-DP description
    (a parameter: nothing is computed)."""
    if fam is not None and fam.eps_delta is not None:
        return tuple(fam.eps_delta(mechanism)) == (0.0, 0.0)
    return getattr(mechanism, "eps0", None) == 0.0
