"""Atomic file writes: write a temporary file in the target's directory, fsync, rename.

A reader (or a crash) sees either the old file or the complete new one, never a prefix;
on any error the temporary file is removed and the target is left untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_writer(path: os.PathLike | str, mode: str = "wb"):
    """Open a temporary file next to `path`; on a clean exit, fsync it and rename it to `path`."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    prefix = "." + os.path.basename(path) + "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    except OSError as e:  # name the file asked for, not the temporary one
        raise OSError(e.errno, e.strerror, path) from None
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: os.PathLike | str, data: bytes) -> None:
    with atomic_writer(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: os.PathLike | str, text: str) -> None:
    with atomic_writer(path, "w") as f:
        f.write(text)
