"""Interop audit with dp-accounting's ``DpEvent``s: every event class of the installed
dp_accounting.dp_event module is either read by ``dp.from_dp_event`` (and written back by
``dp.to_dp_event`` where dp-accounting has the event), or refused with a message naming it;
a new event class in a later dp-accounting fails ``test_every_event_class_is_audited`` until
it is placed here."""
import inspect
import math

import pytest

E = pytest.importorskip("dp_accounting.dp_event")
from dp_accounting import NeighboringRelation as NR  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as PLDA  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as RDPA  # noqa: E402

import dpamp as dp  # noqa: E402

A, S = dp.ADD_REMOVE, dp.SUBSTITUTION

# event class -> examples (canonical events: to_dp_event(from_dp_event(e)) == e)
READ = {
    "GaussianDpEvent": [E.GaussianDpEvent(1.5)],
    "LaplaceDpEvent": [E.LaplaceDpEvent(2.0)],
    "DiscreteLaplaceDpEvent": [E.DiscreteLaplaceDpEvent(0.5, 2)],
    "MixtureOfGaussiansDpEvent": [E.MixtureOfGaussiansDpEvent(1.5, [0.0, 1.0], [0.75, 0.25]),
                                  E.MixtureOfGaussiansDpEvent(2.0, [1.0, 3.0], [0.5, 0.5])],
    "RandomizedResponseDpEvent": [E.RandomizedResponseDpEvent(0.5, 2),
                                  E.RandomizedResponseDpEvent(0.4, 5)],
    "ZCDpEvent": [E.ZCDpEvent(0.1)],
    "PoissonSampledDpEvent": [E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.1)),
                              E.PoissonSampledDpEvent(0.05, E.LaplaceDpEvent(2.0))],
    "SampledWithoutReplacementDpEvent": [
        E.SampledWithoutReplacementDpEvent(1000, 10, E.GaussianDpEvent(1.5))],
    "SampledWithReplacementDpEvent": [
        E.SampledWithReplacementDpEvent(100, 5, E.LaplaceDpEvent(3.0))],
    "SelfComposedDpEvent": [E.SelfComposedDpEvent(E.GaussianDpEvent(2.0), 5)],
    "ComposedDpEvent": [E.ComposedDpEvent([
        E.GaussianDpEvent(3.0), E.LaplaceDpEvent(10.0),
        E.SelfComposedDpEvent(E.ZCDpEvent(0.01), 3)])],
    "SingleEpochTreeAggregationDpEvent": [E.SingleEpochTreeAggregationDpEvent(1.5, 100)],
    "RepeatAndSelectDpEvent": [
        E.RepeatAndSelectDpEvent(E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)), 5.0,
                                 math.inf),
        E.RepeatAndSelectDpEvent(E.GaussianDpEvent(2.0), 3.0, 1.0)],
    "NoOpDpEvent": [E.NoOpDpEvent()],
}
# event class -> what the refusal says
REFUSED = {
    "NonPrivateDpEvent": "NonPrivateDpEvent: the computation is not differentially private",
    "UnsupportedDpEvent": "UnsupportedDpEvent is not supported",
}
EXAMPLES = [e for evs in READ.values() for e in evs]


def _event_classes():
    return {name for name, cls in inspect.getmembers(E, inspect.isclass)
            if issubclass(cls, E.DpEvent) and cls is not E.DpEvent}


def test_every_event_class_is_audited():
    unaudited = _event_classes() - set(READ) - set(REFUSED) - {"TruncatedSubsampledGaussianDpEvent"}
    assert not unaudited, f"dp-accounting event classes not audited here: {sorted(unaudited)}"


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_from_to_from_is_the_same_description(event):
    m = dp.from_dp_event(event)
    back = dp.from_dp_event(dp.to_dp_event(m), relation=m.relation)
    assert back == m


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_canonical_events_are_written_back_as_they_were(event):
    assert dp.to_dp_event(dp.from_dp_event(event)) == event


def _their_epsilon(event, relation, delta=1e-5):
    """dp-accounting's own epsilon for the event (PLD where it accounts it, else RDP; its
    tree aggregation only under REPLACE_SPECIAL, a record replaced by a zero one, which moves
    the nodes as much as adding or removing it)."""
    accs = [PLDA.PLDAccountant(relation, value_discretization_interval=1e-2),
            RDPA.RdpAccountant(neighboring_relation=relation)]
    if relation is NR.ADD_OR_REMOVE_ONE:
        accs.append(RDPA.RdpAccountant(neighboring_relation=NR.REPLACE_SPECIAL))
    for acc in accs:
        if acc.supports(event):
            acc.compose(event)
            return acc.get_epsilon(delta)
    return None


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_written_events_mean_the_same_to_dp_accounting(event):
    """Not just equal descriptions in dpamp: dp-accounting accounts the event dpamp writes
    as it accounts the original (this catches a noise multiplier written in the wrong units)."""
    m = dp.from_dp_event(event)
    nr = NR.REPLACE_ONE if m.relation is S else NR.ADD_OR_REMOVE_ONE
    theirs = _their_epsilon(event, nr)
    if theirs is None:
        pytest.skip(f"dp-accounting accounts {type(event).__name__} under neither accountant")
    assert _their_epsilon(dp.to_dp_event(m), nr) == pytest.approx(theirs, rel=1e-12)


# one instance of every family dpamp writes, under each relation dp-accounting accounts it
WRITTEN = [
    dp.Gaussian(1.5), dp.Gaussian(1.5, 1.0, S), dp.Laplace(2.0), dp.Laplace(2.0, 1.0, S),
    dp.DiscreteLaplace(0.5, 2), dp.RandomizedResponse(0.75, S), dp.ZCDP(0.1),
    dp.KaryRandomizedResponse(3, 0.5, S), dp.KaryRandomizedResponse(7, 0.05, S) * 4,
    dp.MixtureOfGaussians(1.0, (0.0, 1.0, 2.0), (0.8, 0.15, 0.05)),
    dp.TreeAggregation(2.0, 1000), dp.TreeAggregation(2.0, 1000, relation=S),
    dp.RepeatAndSelect(dp.Gaussian(2.0), 10.0, "geometric"),
    dp.Gaussian(1.1).subsample(dp.Poisson(0.01)) * 100,
    dp.Laplace(2.0).subsample(dp.Poisson(0.05)),
    dp.Gaussian(1.5, 1.0, S).subsample(dp.WithoutReplacement(10, 1000)) * 7,
    dp.Laplace(3.0, 1.0, S).subsample(dp.WithReplacement(5, 100)),
    dp.compose(dp.Gaussian(3.0) * 2, dp.Laplace(10.0), dp.ZCDP(0.01) * 3,
               dp.DiscreteLaplace(0.3).subsample(dp.Poisson(0.1)) * 4),
    dp.PureDP(0.0),
]


@pytest.mark.parametrize("m", WRITTEN, ids=lambda m: type(m).__name__)
def test_to_from_is_the_same_description(m):
    assert dp.from_dp_event(dp.to_dp_event(m), relation=m.relation) == m


def test_no_privacy_cost_is_written_as_noop():
    assert dp.to_dp_event(dp.PureDP(0.0)) == E.NoOpDpEvent()
    assert dp.to_dp_event(dp.EpsDelta(0.0, 0.0)) == E.NoOpDpEvent()
    assert dp.to_dp_event(dp.Gaussian(1.0) * 0) == E.NoOpDpEvent()


@pytest.mark.parametrize("m, name", [
    (dp.PureDP(1.0), "PureDP"), (dp.ExponentialMechanism(1.0), "ExponentialMechanism"),
    (dp.Skellam(10.0), "Skellam"), (dp.DiscreteGaussian(2.0), "DiscreteGaussian"),
    (dp.compose(dp.Gaussian(1.0), dp.PermuteAndFlip(0.5)), "PermuteAndFlip"),
    (dp.MixtureOfGaussians(1.0, (1.0,), (1.0,), relation=S), "MixtureOfGaussiansDpEvent"),
    (dp.Gaussian(1.0, relation=S).subsample(dp.Poisson(0.1, relation=S, population=100)),
     "PoissonSampledDpEvent"),
])
def test_no_event_is_a_clear_error_naming_the_part(m, name):
    with pytest.raises(ValueError, match=name):
        dp.to_dp_event(m)


def test_k_ary_randomized_response_is_read_as_itself_and_written_back():
    """k > 2 buckets is k-ary randomized response with its exact three-outcome pair (it was
    read as pure DP of the same epsilon: a sound upper bound, but the lower bound of a worse
    mechanism); k = 2 stays binary randomized response."""
    m = dp.from_dp_event(E.RandomizedResponseDpEvent(0.4, 5))
    assert m == dp.KaryRandomizedResponse(5, 0.4, S)
    assert m.pure_epsilon() == pytest.approx(math.log1p(5 * 0.6 / 0.4), rel=1e-14)
    assert dp.to_dp_event(m) == E.RandomizedResponseDpEvent(0.4, 5)
    assert dp.from_dp_event(E.RandomizedResponseDpEvent(0.5, 2)) == dp.RandomizedResponse(0.75, S)


class MadeUpDpEvent(E.DpEvent):
    """An event class dpamp cannot know."""


@pytest.mark.parametrize("name, msg", list(REFUSED.items()) + [("MadeUpDpEvent",
                                                                 "MadeUpDpEvent is not supported")])
def test_refused_events_name_themselves_alone_and_nested(name, msg):
    ev = MadeUpDpEvent() if name == "MadeUpDpEvent" else getattr(E, name)()
    for wrapped in (ev, E.SelfComposedDpEvent(ev, 3), E.ComposedDpEvent([E.GaussianDpEvent(1.0),
                                                                         ev]),
                    E.PoissonSampledDpEvent(0.1, ev),
                    E.SampledWithoutReplacementDpEvent(100, 10, ev),
                    E.RepeatAndSelectDpEvent(ev, 2.0, 1.0)):
        with pytest.raises(ValueError, match=msg):
            dp.from_dp_event(wrapped)


def _pending_event():
    return E.TruncatedSubsampledGaussianDpEvent(
        dataset_size=10_000, sampling_probability=0.01, truncated_batch_size=120,
        noise_multiplier=1.0)


def test_truncated_subsampled_gaussian_round_trip():
    ev = _pending_event()
    m = dp.from_dp_event(ev)
    assert isinstance(m.scheme, dp.TruncatedPoisson)
    assert dp.from_dp_event(dp.to_dp_event(m), relation=m.relation) == m
    assert dp.to_dp_event(m) == ev
