"""Shared-memory buffers for the handoff between processes (the witness, the arrays the
prover declares), never pickled.

A segment is a POSIX shared-memory object (/dev/shm/NAME) mapped with mmap. The supervisor
creates and unlinks every segment; workers only attach by name and close their mapping. We do
not use multiprocessing.shared_memory.SharedMemory: on Python < 3.13 it registers every attach
with the resource tracker, which then unlinks (or warns about) segments it does not own when a
worker exits. Names carry the supervisor's pid (`cuzkbuf.<pid>.<tag>`), so segments left by a
supervisor that was killed are found and removed by the next engine that starts
(`sweep_stale`).

What goes in a partition's segments is the prover's to say (cuzk.engine.contract: the key's
witness_buffer() and buffers()); `Layout` packs the declared arrays into one segment and maps
them back by name, knowing only their shapes and dtypes.
"""

from __future__ import annotations

import _posixshmem
import math
import mmap
import os

import numpy as np

PREFIX = "cuzkbuf"
SHM_DIR = "/dev/shm"


ALIGN = 64  # each array of a Layout starts on a cache line
# What WorkRecord.segs and the memory budget call a partition's buffers segment: "abc", its
# name from when the engine knew only Groth16's a, b, c, kept because the budget's uses are
# labels in GET /metrics and /status.
BUFFERS_USE = "abc"


def nbytes(shape, dtype) -> int:
    """Bytes of an array of this shape and numpy dtype."""
    return np.dtype(dtype).itemsize * math.prod(int(n) for n in shape)


class Layout:
    """Named arrays packed into one segment: {name: (shape, dtype)} as a prover's key declares
    them (ProvingKey.buffers()), each at an offset aligned to ALIGN bytes, in declaration
    order. The supervisor sizes the segment with `nbytes`; each child maps it with `views`."""

    def __init__(self, spec: dict):
        self.arrays: dict[str, tuple] = {}  # name -> (shape, dtype, offset)
        end = 0
        for name, (shape, dtype) in spec.items():
            shape = tuple(int(n) for n in shape)
            if any(n < 0 for n in shape):
                raise ValueError(f"buffer {name!r}: negative shape {shape}")
            offset = -(-end // ALIGN) * ALIGN
            self.arrays[name] = (shape, np.dtype(dtype), offset)
            end = offset + nbytes(shape, dtype)
        self.nbytes = end

    def views(self, seg: Segment) -> dict:
        """{name: numpy view} over the segment (no copy)."""
        return {name: seg.array(s, dt, off) for name, (s, dt, off) in self.arrays.items()}


def segment_name(tag: str, pid: int | None = None) -> str:
    return f"{PREFIX}.{os.getpid() if pid is None else pid}.{tag}"


class Segment:
    """One mapped shared-memory segment. `create` makes a new one (fails if the name exists);
    `attach` maps an existing one. `close` unmaps (views must be dropped first); `unlink`
    removes the name (mappings stay valid until closed)."""

    def __init__(self, name: str, fd: int, size: int):
        self.name = name
        self.size = size
        try:
            self._mmap = mmap.mmap(fd, max(size, 1))
        finally:
            os.close(fd)
        self.buf = memoryview(self._mmap)

    @classmethod
    def create(cls, name: str, size: int) -> Segment:
        fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        try:
            os.ftruncate(fd, max(int(size), 1))
        except BaseException:
            os.close(fd)
            _posixshmem.shm_unlink("/" + name)
            raise
        return cls(name, fd, int(size))

    @classmethod
    def attach(cls, name: str) -> Segment:
        fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
        return cls(name, fd, os.fstat(fd).st_size)

    def array(self, shape, dtype=np.uint64, offset: int = 0) -> np.ndarray:
        """A numpy view over part of the segment (no copy)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape))
        return np.frombuffer(self.buf, dtype=dtype, count=count, offset=offset).reshape(shape)

    def close(self) -> None:
        """Unmap. Views still alive keep the mapping; then it is unmapped when they die."""
        if self.buf is None:
            return
        try:
            self.buf.release()
            self._mmap.close()
        except BufferError:
            pass  # a numpy view is still alive; the mmap is freed with it
        self.buf = None

    def unlink(self) -> None:
        unlink(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def unlink(name: str) -> bool:
    """Remove a segment name; False when it was already gone."""
    try:
        _posixshmem.shm_unlink("/" + name)
        return True
    except FileNotFoundError:
        return False


def list_segments(pid: int | None = None) -> list[str]:
    """Names of our buffer segments in /dev/shm (of one supervisor pid, or all)."""
    want = f"{PREFIX}." if pid is None else f"{PREFIX}.{pid}."
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(want))
    except FileNotFoundError:  # no /dev/shm: nothing to list
        return []


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Unlink buffer segments whose supervisor pid is no longer alive; returns their names."""
    removed = []
    for name in list_segments():
        try:
            pid = int(name.split(".")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not _pid_alive(pid) and unlink(name):
            removed.append(name)
    return removed
