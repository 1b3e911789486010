"""The results file of a sweep: rows appended as they finish (JSON lines or CSV), read back to
resume or to plot.

JSON lines (``.jsonl``, ``.ndjson``, ``.json``): one object per row, the keys of
:data:`~dpamp.accounting.sweep_grid.COLUMNS`; infinite and undefined numbers are written as the
strings ``"inf"``, ``"-inf"``, ``"nan"`` (strict JSON) and read back as floats. CSV (``.csv``):
a header line with the columns, then one line per row; an empty field is a missing value.

Each row is written with one ``write`` call the moment it is done, so an interrupted or killed
sweep leaves complete lines (an incomplete last line, from a crash mid-write, is dropped when the
file is read and cut off before the next row is appended); the file is fsync'd when a row comes
a second or more after the last fsync, and when the sweep ends. A file lock keeps two sweeps
from appending to one file at once.
Rows with the same key (a row retried after an error) are resolved by :func:`latest_rows`.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import time

from ..accounting.sweep_grid import COLUMN_TYPES, COLUMNS

__all__ = ["FORMATS", "format_of", "ResultWriter", "read_results", "latest_rows"]

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv"}
FSYNC_SECONDS = 1.0


def format_of(path, format: str | None = None) -> str:
    """"jsonl" or "csv": ``format`` if given, else from the file's suffix."""
    if format is not None:
        if format not in ("jsonl", "csv"):
            raise ValueError(f"format must be 'jsonl' or 'csv' (got {format!r})")
        return format
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"cannot tell the format of {os.fspath(path)!r}: name it .jsonl or "
                         ".csv (or give the format)")
    return FORMATS[ext]


def _plain(v):
    """A JSON-safe value (numpy scalars as Python numbers, non-finite floats as strings)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if type(v) not in (int, float) and hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _typed(column: str, v):
    """A value read back: numbers of numeric columns as numbers, "" / None as None."""
    if v is None or v == "":
        return None
    kind = COLUMN_TYPES.get(column)
    if kind is None:
        return v
    if isinstance(v, str):
        x = float(v)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        x = v
    else:
        raise ValueError(f"column {column!r}: not a number ({v!r})")
    if kind == "integer" or (kind == "count" and math.isfinite(x) and float(x).is_integer()):
        return int(x)
    return float(x)


class ResultWriter:
    """Append rows to a results file, one complete line per row, as they come.

    ``append=False`` starts the file afresh (it is replaced); ``append=True`` continues it
    (a CSV file's header must be this version's)."""

    def __init__(self, path, format: str | None = None, append: bool = True):
        from .files import check_target
        self.path = check_target(path)
        self.format = format_of(path, format)
        self.file = open(self.path, "ab", buffering=0)
        try:
            _lock(self.file, self.path)
            if append:
                _cut_incomplete_line(self.path)
            else:
                self.file.truncate(0)
            exists = os.path.getsize(self.path) > 0
            if self.format == "csv":
                if exists:
                    _check_header(self.path)
                else:
                    self._put(_csv_line(COLUMNS))
        except BaseException:
            self.file.close()
            raise
        self.synced = time.monotonic()

    def _put(self, text: str) -> None:
        data = text.encode("utf-8")
        while data:  # one write call in practice; a short write is finished
            n = self.file.write(data)
            data = data[n:]

    def write(self, row: dict) -> None:
        values = [_plain(row.get(c)) for c in COLUMNS]
        if self.format == "csv":
            self._put(_csv_line(["" if v is None else v for v in values]))
        else:
            self._put(json.dumps(dict(zip(COLUMNS, values)), allow_nan=False) + "\n")
        if time.monotonic() - self.synced >= FSYNC_SECONDS:
            self.sync()

    def sync(self) -> None:
        os.fsync(self.file.fileno())
        self.synced = time.monotonic()

    def close(self) -> None:
        if not self.file.closed:
            try:
                self.sync()
            finally:
                self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _csv_line(values) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


def _lock(f, path) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise ValueError(f"{path}: another sweep is writing to this file") from None


def _cut_incomplete_line(path) -> None:
    """Drop a last line without its newline (a write cut short by a crash)."""
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        step, pos = 65536, size
        while pos > 0:
            start = max(0, pos - step)
            f.seek(start)
            block = f.read(pos - start)
            i = block.rfind(b"\n")
            if i >= 0:
                f.truncate(start + i + 1)
                return
            pos = start
        f.truncate(0)


def _check_header(path) -> None:
    with open(path, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f), None)
    if header != list(COLUMNS):
        raise ValueError(f"{path}: its CSV columns are not those of this version of dpamp's "
                         "sweeps; write the results to a new file")


def read_results(path, format: str | None = None, missing_ok: bool = False) -> list[dict]:
    """Every complete row of a results file, in file order (an incomplete last line is
    skipped); ``missing_ok``: a file that does not exist has no rows."""
    path = os.fspath(path)
    fmt = format_of(path, format)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except FileNotFoundError:
        if missing_ok:
            return []
        raise ValueError(f"{path}: no such results file") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read the results: {e.strerror or e}") from None
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    rows = []
    if fmt == "csv":
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        if header is None:
            return []
        for n, values in enumerate(reader, start=2):
            if len(values) != len(header):
                raise ValueError(f"{path}: line {n} has {len(values)} fields, the header "
                                 f"{len(header)}")
            rows.append(_row(dict(zip(header, values)), path, n))
        return rows
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {n} is not JSON ({e.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}: line {n} is not a JSON object")
        rows.append(_row(record, path, n))
    return rows


def _row(record: dict, path, n) -> dict:
    if not record.get("key"):
        raise ValueError(f"{path}: line {n} has no 'key': not a dpamp sweep's results")
    try:
        return {c: _typed(c, record.get(c)) for c in COLUMNS}
    except ValueError as e:
        raise ValueError(f"{path}: line {n}: {e}") from None


def latest_rows(rows: list[dict]) -> dict[str, dict]:
    """One row per key: the last one without an error, else the last one."""
    out: dict[str, dict] = {}
    for row in rows:
        old = out.get(row["key"])
        if old is None or not row.get("error") or old.get("error"):
            out[row["key"]] = row
    return out
