import os
import sys

# Let the tests run from a checkout without installation too.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import mpmath  # noqa: E402  (after the path insertion above)
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _mpmath_precision():
    """Every test leaves mpmath's precision as it found it: tests that set ``mp.mp.dps`` would
    otherwise leak their precision into the tests run after them (the answer of an mpmath
    oracle would then depend on the order the tests ran in). A module's own precision fixture
    (set up before this one) is kept."""
    prec = mpmath.mp.prec
    try:
        yield
    finally:
        mpmath.mp.prec = prec
