"""The package ships its PEP 561 marker (py.typed) and its data: the imported package has them,
and setuptools' build_py (what a wheel is made of) copies them from a copy of the source tree."""
from __future__ import annotations

import importlib.resources
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dpamp

ROOT = Path(__file__).resolve().parents[1]


def test_imported_package_is_typed():
    root = importlib.resources.files("dpamp")
    assert root.joinpath("py.typed").is_file()
    assert root.joinpath("data", "default_plan.toml").is_file()
    assert Path(dpamp.__file__).with_name("py.typed").is_file()


def test_built_package_ships_py_typed(tmp_path):
    # a copy, so that build_py's egg-info does not land in the work tree
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "src" / "dpamp", tmp_path / "src" / "dpamp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q",
                    "build_py", "--build-lib", "out"], cwd=tmp_path, check=True,
                   capture_output=True)
    built = tmp_path / "out" / "dpamp"
    assert (built / "py.typed").is_file()
    assert (built / "data" / "default_plan.toml").is_file()
    assert (built / "core" / "progress.py").is_file()


def test_import_dpamp_loads_the_vocabulary_only():
    """``import dpamp`` loads neither scipy nor the engines (PEP 562: they come on first use),
    which keeps a command-line answer fast; a module-level ``from scipy...`` anywhere under
    the mechanisms or core brings 0.3 s back."""
    code = ("import sys, dpamp; print(sorted({m.split('.')[0] + ('.' + m.split('.')[1] if "
            "m.startswith('dpamp.') else '') for m in sys.modules if m.startswith(('scipy', "
            "'dpamp.pld', 'dpamp.rdp', 'dpamp.accounting', 'dpamp.profiles'))}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_the_wheel_installs_with_numpy_and_scipy_only(tmp_path):
    """A wheel built from the tree installs into a clean venv that has nothing but numpy and
    scipy (its runtime dependencies), and answers a query there."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    wheel = next(wheels.glob("dpamp-*.whl"))
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True)
    names = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze"], check=True,
                           capture_output=True, text=True).stdout
    installed = {line.split("==")[0].lower() for line in names.split()}
    assert installed - {"pip", "setuptools"} == {"dpamp", "numpy", "scipy"}
    out = subprocess.run([str(py), "-c", "import dpamp as dp; print(dp.Gaussian(1.0).epsilon(1e-5).epsilon)"],
                         check=True, capture_output=True, text=True).stdout
    assert float(out) > 0
