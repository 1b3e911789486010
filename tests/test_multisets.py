"""count_vectors against itertools' enumeration (brute force), order included."""
import itertools

import numpy as np
import pytest

from dpamp.core.multisets import count_vectors


@pytest.mark.parametrize("m,c", [(1, 0), (1, 5), (2, 0), (2, 4), (3, 3), (4, 5), (5, 2)])
def test_every_count_vector_once_in_decreasing_order(m, c):
    brute = sorted((v for v in itertools.product(range(c + 1), repeat=m) if sum(v) == c),
                   reverse=True)
    assert np.array_equal(count_vectors(m, c), np.array(brute, dtype=np.int64).reshape(-1, m))


def test_no_kinds_is_an_error():
    with pytest.raises(ValueError, match="m must be"):
        count_vectors(0, 3)
