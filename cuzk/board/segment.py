"""The shared-memory segment under a board: create, attach, unlink, discover, clean up.

Python < 3.13 registers every SharedMemory it opens (created *or* attached) with the
resource tracker, which unlinks it when that process exits, so a viewer that attached would
delete a live board on exit. We open with `track=False` where it exists (3.13+) and otherwise
unregister right after opening; unlinking is then always explicit: the creator at shutdown,
`cleanup_stale()` for a board whose creator died.

Writers of the control records (jobs, partitions, memory, counters, keys) serialise through an
advisory `flock` on the segment's file descriptor: the kernel drops it when the holder dies, so
a writer killed with -9 never wedges the others. Readers take no lock.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing import shared_memory

from cuzk.board.layout import HEADER, HEADER_SIZE, MAGIC, NAME_PREFIX, unpack_str

SHM_DIR = "/dev/shm"
_TRACK_PARAM = sys.version_info >= (3, 13)


def _open(name: str, create: bool, size: int = 0) -> shared_memory.SharedMemory:
    if _TRACK_PARAM:  # pragma: no cover - 3.13+
        return shared_memory.SharedMemory(name, create=create, size=size, track=False)
    shm = shared_memory.SharedMemory(name, create=create, size=size)
    # Undo the registration SharedMemory.__init__ just made (see module docstring).
    from multiprocessing import resource_tracker

    resource_tracker.unregister(shm._name, "shared_memory")
    return shm


def open_segment(name: str, create: bool = False, size: int = 0) -> shared_memory.SharedMemory:
    """Create (exclusive) or attach a segment without the resource tracker owning it."""
    return _open(name, create, size)


def unlink_segment(name: str) -> bool:
    """Remove a segment by name without involving the resource tracker; False if absent."""
    from multiprocessing.shared_memory import _posixshmem  # stdlib, present on every POSIX build

    try:
        _posixshmem.shm_unlink("/" + name.lstrip("/"))
        return True
    except FileNotFoundError:
        return False


def new_name(prefix: str = NAME_PREFIX) -> str:
    """A fresh, discoverable board name: cuzk-<pid>-<random>."""
    return f"{prefix}{os.getpid()}-{secrets.token_hex(4)}"


def process_create_time(pid: int) -> float:
    """Creation time of a process (seconds since the epoch), 0.0 if it does not exist."""
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:
        return 0.0


def pid_alive(pid: int, create_time: float) -> bool:
    """True if `pid` runs and is the same process (same creation time, so pid reuse is caught)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    t = process_create_time(pid)
    if t == 0.0:
        return False
    # A zombie still "exists"; treat it as dead.
    try:
        import psutil

        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return False
    except Exception:
        return False
    return create_time == 0.0 or abs(t - create_time) < 1.0


class ControlLock:
    """Mutual exclusion for control-record writers across threads and processes.

    flock() excludes other open file descriptions (other processes, other handles), a
    threading.Lock excludes other threads using this handle. The kernel releases the flock
    when its holder dies, so a writer killed with -9 inside cannot block anyone.
    """

    def __init__(self, fd: int):
        self._fd = fd
        self._tlock = threading.Lock()

    def __enter__(self):
        self._tlock.acquire()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._tlock.release()
            raise
        return self

    def __exit__(self, *exc):
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._tlock.release()


# One lock per (board name, process) serialises the threads of a process writing slot records;
# slot records have one writing process each, so no cross-process lock is needed for them.
# Re-entrant: handoff() holds it while claiming the finalizer and ending the device claim.
_slot_locks: dict[str, threading.RLock] = {}
_slot_locks_guard = threading.Lock()


def slot_lock(name: str) -> threading.RLock:
    with _slot_locks_guard:
        lock = _slot_locks.get(name)
        if lock is None:
            lock = _slot_locks[name] = threading.RLock()
        return lock


@dataclass(frozen=True)
class BoardInfo:
    """What `list_boards()` says about one board segment."""

    name: str
    instance: str
    pid: int
    started_at: float
    layout_version: int
    alive: bool
    size: int


def read_info(name: str) -> BoardInfo | None:
    """Header of a board segment, or None when it is not a (complete) cuzk board."""
    try:
        shm = open_segment(name)
    except (FileNotFoundError, PermissionError, OSError, ValueError):
        return None
    try:
        if shm.size < HEADER_SIZE:
            return None
        h = HEADER.unpack_from(shm.buf, 0)
        if h[0] != MAGIC:
            return None
        pid, started_at, ctime = h[4], h[5], h[6]
        return BoardInfo(
            name=name,
            instance=unpack_str(h[-1]),
            pid=pid,
            started_at=started_at,
            layout_version=h[1],
            alive=pid_alive(pid, ctime),
            size=shm.size,
        )
    finally:
        shm.close()


def _candidates(prefix: str) -> list[str]:
    try:
        names = os.listdir(SHM_DIR)
    except FileNotFoundError:  # pragma: no cover - not Linux
        return []
    return sorted(n for n in names if n.startswith(prefix))


def list_boards(prefix: str = NAME_PREFIX, *, include_dead: bool = False) -> list[BoardInfo]:
    """Boards in /dev/shm whose name starts with `prefix`, newest first; live ones only unless
    `include_dead`."""
    out = []
    for n in _candidates(prefix):
        info = read_info(n)
        if info is not None and (include_dead or info.alive):
            out.append(info)
    return sorted(out, key=lambda i: -i.started_at)


class NameInUse(RuntimeError):
    """A board name held by a live process, or by a segment that is not a cuzk board."""


def _is_stale(name: str, now: float, min_age: float) -> bool | None:
    """True: a board whose creator is gone (or an incomplete header older than `min_age`,
    from a creator that died while writing it); False: a live board, or one too young to
    judge; None: absent, or a foreign segment."""
    info = read_info(name)
    if info is not None:
        return not info.alive
    try:
        age = now - os.stat(os.path.join(SHM_DIR, name)).st_mtime
    except FileNotFoundError:
        return None
    try:
        shm = open_segment(name)
        ok = shm.size < HEADER_SIZE or bytes(shm.buf[:8]) in (MAGIC, bytes(8))
        shm.close()
    except (OSError, ValueError):
        return None
    if not ok:
        return None
    return age >= min_age


def cleanup_stale(prefix: str = NAME_PREFIX, *, min_age: float = 5.0) -> list[str]:
    """Unlink boards whose creator process is gone; returns their names.

    A segment that carries no complete header (its creator may still be writing it) is left
    alone until it is `min_age` seconds old.
    """
    removed = []
    now = time.time()
    for n in _candidates(prefix):
        if _is_stale(n, now, min_age) and unlink_segment(n):
            removed.append(n)
    return removed


def free_name(name: str, *, min_age: float = 5.0) -> bool:
    """Make a board name of any spelling (`--board relboard`) free for a new board.

    A board left by a daemon that is gone (its pid dead, or reused by another process) is
    unlinked: True. An absent name: False. A name held by a live board, or by a segment that
    is not a cuzk board, raises NameInUse with a one-line reason (nothing is removed)."""
    name = name.lstrip("/")
    if not os.path.exists(os.path.join(SHM_DIR, name)):
        return False
    stale = _is_stale(name, time.time(), min_age)
    if stale:
        return unlink_segment(name)
    info = read_info(name)
    if info is not None:
        raise NameInUse(
            f"board {name!r} is in use by a live process (pid {info.pid}, instance "
            f"{info.instance!r}); stop it or choose another --board name"
        )
    if stale is None:
        raise NameInUse(
            f"shared-memory name {name!r} exists and is not a cuzk board; "
            "choose another --board name"
        )
    raise NameInUse(
        f"board {name!r} is being created by another process; choose another --board name"
    )
