"""Grid files: the TOML description of a sweep, read by ``dpamp sweep GRID.toml``.

    title = "DP-SGD on 60000 records"
    delta = 1e-5
    dataset_size = 60000
    batch_size = [256, 512]
    noise_multiplier = [0.8, 1.0, 1.2]
    epochs = [1, 2, 5, 10, 20, 50]

Keys take a value or a list of values; the rows are the Cartesian product (the last key varies
fastest). With ``[[grid]]`` tables, each table is one product and the top-level keys are shared
defaults. The whole file is read and validated before anything is computed; an error names the
file, the table and the key (``grid.toml: [[grid]] 2, key 'delta': missing: target 'sigma'
needs it``). The format is documented in docs/sweeps.md; the keys in
:mod:`dpamp.accounting.sweep_grid`.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import sys

from ..accounting.sweep_grid import KEYS, GridError, expand
from .files import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Grid", "GridError", "load_grid", "parse_grid", "parse_grid_text"]

_TOP_KEYS = ("title", "grid", *KEYS)


@dataclasses.dataclass(frozen=True)
class Grid:
    """A grid file: its rows (the inputs of each, grid order), title and origin."""

    rows: tuple[dict, ...]
    title: str = ""
    source: str = "<grid>"

    def __len__(self) -> int:
        return len(self.rows)


def load_grid(path) -> Grid:
    """Read and validate a TOML grid file (see docs/sweeps.md)."""
    path = os.fspath(path)
    try:
        text = read_text(path)
    except OSError as e:
        raise GridError(f"cannot read the grid: {e.strerror or e}", origin=path) from None
    return parse_grid_text(text, origin=path)


def parse_grid_text(text: str, origin: str = "<grid>") -> Grid:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise GridError(f"not valid TOML: {e}", origin=origin) from None
    return parse_grid(data, origin=origin)


def parse_grid(data: dict, origin: str = "<grid>") -> Grid:
    """Validate a grid given as a dict (the parsed TOML) and expand its rows."""
    for key in data:
        if key not in _TOP_KEYS:
            close = difflib.get_close_matches(key, _TOP_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise GridError(f"unknown key{hint}; grid keys are: {', '.join(_TOP_KEYS)}",
                            key, origin=origin)
    title = data.get("title", "")
    if not isinstance(title, str):
        raise GridError(f"must be a string (got {title!r})", "title", origin=origin)
    top = {k: v for k, v in data.items() if k in KEYS}
    tables = data.get("grid")
    try:
        if tables is None:
            rows = expand(top)
        else:
            if isinstance(tables, dict):
                tables = [tables]
            if not isinstance(tables, list) or not tables or \
                    not all(isinstance(t, dict) for t in tables):
                raise GridError("must be one or more [[grid]] tables", "grid")
            rows = expand(tables, defaults=top)
    except GridError as e:
        raise e.within(origin) from None
    return Grid(tuple(rows), title, origin)
