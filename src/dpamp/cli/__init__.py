"""The ``dpamp`` command line: one module per command, assembled by :mod:`dpamp.cli.main`."""
from .main import main

__all__ = ["main"]
