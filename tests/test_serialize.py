"""JSON serialisation: the round trip is the identity; errors are clear."""
import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dpamp as dp
from dpamp.mechanisms.base import Mechanism
from dpamp.io.serialize import from_dict, registry, to_dict

pos = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)
prob = st.floats(min_value=0.01, max_value=0.99)


def base_mechanisms(rel):
    return st.one_of(
        st.builds(dp.Gaussian, pos, pos, st.just(rel)),
        st.builds(dp.Laplace, pos, pos, st.just(rel)),
        st.builds(dp.RandomizedResponse, prob, st.just(rel)),
        st.builds(dp.PureDP, st.floats(0, 30), st.just(rel)),
        st.builds(dp.ZCDP, st.floats(0, 10), st.just(rel)),
        st.builds(dp.EpsDelta, st.floats(0, 10), st.floats(0, 0.5), st.just(rel)),
    )


def schemes(rel):
    if rel is dp.ADD_REMOVE:
        return st.builds(dp.Poisson, st.floats(1e-6, 1.0), st.just(rel))
    sizes = st.integers(1, 10_000).flatmap(
        lambda n: st.tuples(st.integers(1, n), st.just(n)))
    return st.one_of(
        st.builds(dp.Poisson, st.floats(1e-6, 1.0), st.just(rel)),
        sizes.map(lambda mn: dp.WithoutReplacement(*mn)),
        sizes.map(lambda mn: dp.WithReplacement(*mn)),
    )


@st.composite
def compositions(draw):
    rel = draw(st.sampled_from([dp.ADD_REMOVE, dp.SUBSTITUTION]))
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        m = draw(base_mechanisms(rel))
        if draw(st.booleans()):
            m = m.subsample(draw(schemes(rel)))
        parts.append(m * draw(st.integers(1, 100_000)))
    return dp.compose(*parts)


@settings(max_examples=150, deadline=None)
@given(compositions())
def test_round_trip_is_identity(x):
    text = x.to_json()
    y = dp.from_json(text)
    assert y == x and type(y) is type(x)
    assert y.to_json() == text  # and the text is a fixed point
    json.loads(text)  # strict JSON: no NaN / Infinity tokens
    assert "Infinity" not in text and "NaN" not in text


def test_round_trip_keeps_accounting():
    x = dp.compose(dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062,
                   dp.Laplace(5.0) * 3)
    y = dp.from_json(x.to_json(indent=2))
    a = [2, 4.5, 32]
    np.testing.assert_array_equal(x.rdp(a), y.rdp(a))
    assert x.epsilon(1e-5, method="rdp") == y.epsilon(1e-5, method="rdp")


def test_readable_document():
    d = to_dict(dp.PureDP(0.5).subsample(dp.Poisson(0.1)))
    assert d == {"type": "Subsampled",
                 "base": {"type": "PureDP", "epsilon": 0.5,
                          "relation": {"enum": "Relation", "value": "add_remove"}},
                 "scheme": {"type": "Poisson", "rate": 0.1,
                            "relation": {"enum": "Relation", "value": "add_remove"}}}
    assert dp.to_json(dp.WithoutReplacement(3, 10)) == \
        '{"type": "WithoutReplacement", "batch": 3, "population": 10}'


@dataclasses.dataclass(frozen=True)
class _TestOnlyCapped(Mechanism):
    """A mechanism family the serialiser has never heard of: inf, tuples, arrays, enums."""

    cap: float
    orders: tuple
    weights: np.ndarray = dataclasses.field(compare=False)
    relation: dp.Relation = dp.ADD_REMOVE
    _scratch: dict = dataclasses.field(default_factory=dict, compare=False)

    def _rdp(self, alpha):
        return np.minimum(alpha * 0.1, self.cap)


def test_new_classes_serialise_without_registration():
    x = _TestOnlyCapped(math.inf, (1, 2.5, -math.inf), np.array([[0.5, 1.0]]))
    text = x.to_json()
    assert '{"float": "inf"}' in text and '{"float": "-inf"}' in text
    y = dp.from_json(text)
    assert y == x and y.orders == (1, 2.5, -math.inf)
    np.testing.assert_array_equal(y.weights, x.weights)
    assert y.weights.dtype == x.weights.dtype and y.weights.shape == (1, 2)
    assert "_TestOnlyCapped" in registry()
    # inside a composition too
    c = dp.compose(x * 3, dp.Gaussian(2.0))
    assert dp.from_json(c.to_json()) == c


def test_callable_is_refused_clearly():
    with pytest.raises(ValueError, match=r"RDPCurve\.func.*callable"):
        dp.RDPCurve(lambda a: 0.1 * a).to_json()
    with pytest.raises(ValueError, match="callable"):
        dp.compose(dp.Gaussian(1.0), dp.RDPCurve(lambda a: 0.1 * a)).to_json()


@pytest.mark.parametrize("doc, msg", [
    ('{"type": "Nope"}', "unknown type 'Nope'"),
    ('{"type": "Gaussian", "sigma": 1, "sgima": 2}', r"unknown key\(s\) \['sgima'\]"),
    ('{"type": "Gaussian", "sigma": -1}', r"sigma must be in \(0, inf\)"),
    ('{"type": "Gaussian"}', "cannot build Gaussian"),
    ('{"sigma": 1}', "'type'"),
    ('[1, 2]', "'type'"),
    ('{"type": "Gaussian", "sigma": {"float": "nan"}}', "'float' must be"),
    ('{"type": "Gaussian", "sigma": 1, "relation": {"enum": "Relation", "value": "x"}}',
     "not a Relation"),
    ('{"type": "Gaussian", "sigma": 1, "relation": {"enum": "Color", "value": "x"}}',
     "unknown enum"),
    ('{"type": "Gaussian", "sigma": {"what": 1}}', "needs a 'type'"),
    ("{not json", "not valid JSON"),
])
def test_bad_documents(doc, msg):
    with pytest.raises(ValueError, match=msg):
        dp.from_json(doc)


def test_non_mechanisms_are_refused():
    with pytest.raises(ValueError, match="only dpamp mechanisms"):
        dp.to_json({"a": 1})
    with pytest.raises(ValueError, match="'type'"):
        from_dict("Gaussian")
