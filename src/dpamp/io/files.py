"""Writing output files all-or-nothing: a temporary file in the same directory, then an atomic
rename (``os.replace``), so an interrupted or failed run never leaves a half-written report or
figure behind (and never clobbers a previous good one)."""
from __future__ import annotations

import contextlib
import os
import tempfile


def check_target(path) -> str:
    """Refuse early (before any computation) an output whose directory does not exist."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError(f"cannot write {path}: directory {directory} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"cannot write {path}: it is a directory")
    return path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path`` (same suffix, so tools that infer the format from
    the name still work); on success rename it onto ``path``, on any error delete it."""
    path = check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    suffix = os.path.splitext(base)[1]
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp" + suffix, dir=directory)
    os.close(fd)
    umask = os.umask(0)  # mkstemp makes the file private; give it the usual permissions
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` all-or-nothing."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(raw)


def read_text(path) -> str:
    """A text file's contents (UTF-8; undecodable bytes replaced, so that the parser, not the
    decoder, reports where a file is wrong): plan and grid files."""
    with open(os.fspath(path), "rb") as f:
        return f.read().decode("utf-8", errors="replace")
