"""A Guarantee behaves like the number it answers; mechanisms compose with +; python -m dpamp."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import dpamp as dp

PLAN = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60_000)) * 14_062


def test_guarantee_is_a_number_where_it_should_be():
    g = PLAN.epsilon(1e-5)
    assert float(g) == g.epsilon and f"{g:.3f}" == f"{g.epsilon:.3f}"
    assert f"{g}" == str(g)                      # no spec: the outward-rounded statement
    d = PLAN.delta(2.0)
    assert float(d) == d.delta
    for h in (g, d, PLAN.epsilon(1e-5, method="rdp")):
        assert all(type(v) is float for v in (h.epsilon, h.delta) + (() if h.lower is None
                                                                      else (h.lower,)))
        assert "np.float64" not in repr(h)
    md = g._repr_markdown_()
    assert "-DP**" in md and "`pld`" in md


def test_mechanisms_compose_with_plus():
    a, b = dp.Gaussian(1.0), dp.Laplace(2.0)
    assert a + b == dp.compose(a, b)
    assert a + a == a * 2 and sum([a, b, a]) == dp.compose(a, b, a)
    with pytest.raises(TypeError):
        a + 1
    assert np.isclose((a + b).rdp(2.0), a.rdp(2.0) + b.rdp(2.0))


def test_python_dash_m_dpamp():
    out = subprocess.run([sys.executable, "-m", "dpamp", "methods"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "pld" in out.stdout


def test_version():
    out = subprocess.run([sys.executable, "-m", "dpamp", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"dpamp {dp.__version__}"
