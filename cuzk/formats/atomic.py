"""Atomic file writes: a temporary file in the target's directory, fsync, rename; for several
files (proof.json and public.json) all of them or none.

A reader (or a crash) sees either the old file or the complete new one, never a prefix; on
any error the temporary files are removed and the targets are left untouched.

The rename goes to the file a path resolves to (a symbolic link stays a link). A path that
is not a regular file (a character device such as /dev/full or /dev/null, a FIFO, a
terminal) or that reaches an open file of this process through /proc (/dev/stdout,
/dev/fd/N: the shell's redirection) is written in place, opened for appending: replacing it
would put a regular file where the device or the shell's file was. What went into a device
or a pipe cannot be taken back.

No output may be one of the command's inputs (`check_apart`): `cuzk prove k.zkey w.wtns
proof.json k.zkey` would replace the key with the public signals.

Temporary files are named `.<name>.<pid>-XXXXXXXX.tmp` beside the target. One outlives its
command only when the process dies without running Python's clean-up: on SIGINT (and on
SIGTERM while a write is under way, `terminate_cleanly`) it is removed; after a SIGKILL it is
removed by the next write to the same target, which deletes the temporaries of that target
whose pid is no longer running and that belong to this user (a live pid's, another user's or
a name not of this pattern are left alone).
"""

from __future__ import annotations

import os
import stat

# (tempfile and dataclasses are not imported: ~2 and ~4 ms of the thin client's start, which
# writes its outputs here; `mkstemp` and Target below do what this module took from them;
# nor contextlib, ~3 ms with functools and collections: the context managers the thin client
# goes through are classes, atomic_writer's generator is wrapped at its first call)

MAX_LINKS = 40  # symbolic links followed when looking for /proc, as the kernel's ELOOP bound


class OutputError(OSError):
    """An output file that cannot be written (or two outputs that are one file); str() is one
    line that names it."""


class Target:
    """Where one output goes: `path` as given, `real` the file it resolves to (the rename's
    target), `st` its stat (None: absent), `in_place` written where it is, not replaced."""

    __slots__ = ("path", "real", "st", "in_place")

    def __init__(self, path: str, real: str, st: os.stat_result | None, in_place: bool):
        self.path, self.real, self.st, self.in_place = path, real, st, in_place

    @classmethod
    def of(cls, path: os.PathLike | str) -> Target:
        path = os.fspath(path)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as e:  # ENOTDIR, ELOOP, EACCES on a directory above it
            raise OutputError(f"{path}: {e.strerror or e}") from None
        in_place = st is not None and (not stat.S_ISREG(st.st_mode) or _through_proc(path))
        return cls(path, os.path.realpath(path), st, in_place)

    def check(self) -> None:
        """Raise OutputError unless this output could be written now."""
        if self.st is not None and stat.S_ISDIR(self.st.st_mode):
            raise OutputError(f"{self.path}: is a directory")
        if self.in_place:
            if not os.access(self.path, os.W_OK):
                raise OutputError(f"{self.path}: not writable")
            return
        directory = os.path.dirname(self.real)
        if not os.path.isdir(directory):
            raise OutputError(f"{self.path}: no such directory {directory}")
        if not os.access(directory, os.W_OK | os.X_OK):
            raise OutputError(f"{self.path}: the directory {directory} is not writable")


def _through_proc(path: str) -> bool:
    """True when `path` or a symbolic link on the way to its file lies in /proc (/dev/stdout
    -> /proc/self/fd/1, /dev/fd -> /proc/self/fd): an open file of this process."""
    p = os.path.abspath(path)
    for _ in range(MAX_LINKS):
        d = os.path.realpath(os.path.dirname(p))
        if d == "/proc" or d.startswith("/proc/"):
            return True
        p = os.path.join(d, os.path.basename(p))
        if not os.path.islink(p):
            return False
        p = os.path.join(d, os.readlink(p))
    return False


def _same(a: Target, b: Target) -> bool:
    if a.real == b.real:
        return True
    return (
        a.st is not None
        and b.st is not None
        and (a.st.st_dev, a.st.st_ino) == (b.st.st_dev, b.st.st_ino)
    )


def _collides(out: Target, path: str) -> bool:
    """True when writing `out` would replace or write into the file the input `path` names
    (the same path, also spelled another way, or a hard link to it). A device or pipe given
    for both (/dev/stdin and /dev/stdout on one terminal) is not a collision: nothing is
    replaced there. An input that is not there is not one: reading it fails first."""
    try:
        st = os.stat(path)
    except OSError:  # no input there: reading it fails first, and destroys nothing
        return False
    if not out.in_place and out.real == os.path.realpath(path):
        return True  # (the output's file may be gone since Target.of looked)
    return (
        out.st is not None
        and stat.S_ISREG(out.st.st_mode)
        and (out.st.st_dev, out.st.st_ino) == (st.st_dev, st.st_ino)
    )


def check_apart(outputs, inputs=()) -> list[Target]:
    """The targets of `outputs`: OutputError (one line) when two of them are one file, or
    one of them is one of the `inputs` (None entries are skipped). Commands call it first,
    before reading anything: an output over an input would destroy it."""
    targets = [Target.of(p) for p in outputs]
    for i, a in enumerate(targets):
        for b in targets[i + 1 :]:
            if _same(a, b):
                raise OutputError(
                    f"{a.path} and {b.path} are the same file: give each output its own path"
                )
    for t in targets:
        for p in inputs:
            if p is not None and _collides(t, os.fspath(p)):
                raise OutputError(
                    f"{t.path} is the input {os.fspath(p)}: writing it would destroy the "
                    "input; give the output its own path"
                )
    return targets


def check_outputs(*paths) -> list[Target]:
    """The targets of `paths`, checked: OutputError (one line) when two name one file (also
    spelled two ways, or hard links), a directory is missing or not writable, or a device is
    not writable. Commands call it before their long work, and write_outputs again."""
    targets = check_apart(paths)
    for t in targets:
        t.check()
    return targets


def _write_in_place(t: Target, data: bytes) -> None:
    """Write into a device, pipe or the shell's file as it is (appending, no rename)."""
    try:
        fd = os.open(t.path, os.O_WRONLY | os.O_APPEND)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise OutputError(f"{t.path}: {e.strerror or e}") from None


def mkstemp(prefix: str, suffix: str, dir: str) -> tuple[int, str]:
    """(descriptor, name) of a new file ``dir/prefix<random>suffix``, created exclusively
    with mode 0600 (as tempfile.mkstemp)."""
    for _ in range(100):
        name = os.path.join(dir, f"{prefix}{os.urandom(4).hex()}{suffix}")  # 8 characters
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(17, "no free temporary name", dir)


class _TerminateCleanly:
    """terminate_cleanly's context manager."""

    __slots__ = ("held",)

    def __enter__(self):
        # _signal: the signal module's import (enum) and threading's are ~3 ms of the thin
        # client's start, which writes its outputs here; signal.signal is _signal.signal on ints
        import _signal

        self.held = _signal.getsignal(_signal.SIGTERM) == _signal.SIG_DFL
        if self.held:
            try:
                _signal.signal(_signal.SIGTERM, _terminated)
            except ValueError:  # not the main thread (of the main interpreter)
                self.held = False
        return None

    def __exit__(self, *exc) -> None:
        if self.held:
            import _signal

            _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def terminate_cleanly() -> _TerminateCleanly:
    """While this holds, SIGTERM raises SystemExit(143) in the main thread, so that `finally`
    clauses and `except BaseException` remove temporary files as they do on SIGINT; then the
    process exits with the status of a SIGTERM death. Only where SIGTERM would kill the
    process anyway (its handler is the default, so never in `cuzk serve`, which drains on
    it) and in the main thread (the only one Python delivers signals to)."""
    return _TerminateCleanly()


_TOKEN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def temporary_pid(entry: str, name: str) -> int | None:
    """The pid of the process that made `entry` when it is one of this module's temporary
    files (or their `.old` links) for the target `name`, else None: the names
    ``.<name>.<pid>-XXXXXXXX.tmp[.old]`` (pid in ASCII digits, X in [a-z0-9_]); string tests,
    not `re` (its import is ~5 ms of the thin client's start)."""
    prefix = f".{name}."
    if not entry.startswith(prefix):
        return None
    rest = entry[len(prefix) :].removesuffix(".old")
    if not rest.endswith(".tmp"):
        return None
    pid, dash, token = rest[:-4].partition("-")
    if not (dash and pid.isascii() and pid.isdigit() and len(token) == 8 and _TOKEN >= set(token)):
        return None
    return int(pid)


PID_MAX = 1 << 22  # Linux's PID_MAX_LIMIT: above it, no process of ours made the name


def _running(pid: int) -> bool:
    if not 0 < pid <= PID_MAX:
        return True  # not a pid a process of ours can have had: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def sweep_stale(real: str) -> list[str]:
    """Remove the temporary files of the target `real` left by a killed process (SIGKILL, a
    power cut): our naming pattern, a regular file of this user, its pid not running. Returns
    the paths removed. A pid reused since by a live process keeps its file (the next write
    after that process ends removes it). A folder shared with another pid namespace (a
    container) may hold a live writer's temporary whose pid is not running here: removed, it
    makes that writer's rename fail with a one-line error, its target untouched."""
    directory, name = os.path.split(real)
    removed = []
    try:
        entries = os.scandir(directory or ".")
    except OSError:
        return removed
    with entries:
        for e in entries:
            pid = temporary_pid(e.name, name)
            if pid is None or pid == os.getpid() or _running(pid):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                _unlink(e.path)
                removed.append(e.path)
    return removed


def _new_temporary(real: str, path: str) -> tuple[int, str]:
    """(descriptor, name) of a new temporary file next to `real`, after removing the stale
    ones of that target. An error creating it names `path`, the file asked for, not the
    temporary one."""
    directory, name = os.path.split(real)
    sweep_stale(real)
    try:
        return mkstemp(prefix=f".{name}.{os.getpid()}-", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None


class _TemporaryFile:
    """``with _TemporaryFile(real, mode, path) as (file, name)``: a new temporary file next to
    `real`; on a clean exit it is flushed, fsynced, closed and made 0644, and kept for the
    caller to rename; on any error (in the block or here) it is removed. A class, not a
    contextlib generator: the thin client writes its outputs through it."""

    __slots__ = ("real", "mode", "path", "file", "name")

    def __init__(self, real: str, mode: str, path: str):
        self.real, self.mode, self.path = real, mode, path

    def __enter__(self):
        fd, self.name = _new_temporary(self.real, self.path)
        try:
            self.file = os.fdopen(fd, self.mode)
        except BaseException:
            os.close(fd)
            _unlink(self.name)
            raise
        return self.file, self.name

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            with self.file as f:
                if exc_type is None:
                    f.flush()
                    os.fsync(f.fileno())
            if exc_type is None:
                os.chmod(self.name, 0o644)
        except BaseException:
            _unlink(self.name)
            raise
        if exc_type is not None:
            _unlink(self.name)
        return False


def _temporary(t: Target, data: bytes) -> str:
    """A complete, fsynced copy of `data` next to t.real; its name."""
    try:
        with _TemporaryFile(t.real, "wb", t.path) as (f, tmp):
            f.write(data)
    except OSError as e:
        raise OutputError(f"{t.path}: {e.strerror or e}") from None
    return tmp


def write_outputs(files: list[tuple[os.PathLike | str, bytes | str]]) -> None:
    """Write every (path, data) or none (OutputError, one line naming the file).

    Each regular file is first written to a temporary file in its directory; then devices and
    pipes are written in place; then the temporary files are renamed over their targets. If a
    rename fails, the targets renamed before it get their old files back (kept as hard links
    until the end) or are removed if they had none."""
    targets = check_outputs(*(p for p, _ in files))
    blobs = [d.encode() if isinstance(d, str) else bytes(d) for _, d in files]
    temps: dict[int, str] = {}
    with terminate_cleanly():
        _write_all(targets, blobs, temps)


def _write_all(targets: list[Target], blobs: list[bytes], temps: dict[int, str]) -> None:
    try:
        for i, (t, data) in enumerate(zip(targets, blobs, strict=True)):
            if not t.in_place:
                temps[i] = _temporary(t, data)
        for t, data in zip(targets, blobs, strict=True):
            if t.in_place:
                _write_in_place(t, data)
        _rename_all([(targets[i], tmp) for i, tmp in temps.items()])
    finally:
        for tmp in temps.values():
            _unlink(tmp)


def _rename_all(moves: list[tuple[Target, str]]) -> None:
    done: list[tuple[Target, str | None]] = []  # (target, hard link to its old file)
    try:
        for k, (t, tmp) in enumerate(moves):
            old = None
            if k < len(moves) - 1 and os.path.lexists(t.real):
                old = tmp + ".old"
                try:
                    os.link(t.real, old)
                except OSError:  # no hard links here: a failure then removes it
                    old = None
            try:
                os.replace(tmp, t.real)
            except OSError as e:
                if old is not None:
                    _unlink(old)
                raise OutputError(f"{t.path}: {e.strerror or e}") from None
            done.append((t, old))
    except BaseException:
        for t, old in reversed(done):
            if old is not None:
                os.replace(old, t.real)
            else:
                _unlink(t.real)
        raise
    for _, old in done:
        if old is not None:
            _unlink(old)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def atomic_writer(path: os.PathLike | str, mode: str = "wb"):
    """Open a temporary file next to the file `path` resolves to; on a clean exit, fsync it and
    rename it there. A device, pipe or the shell's file (see the module's docstring) is
    opened in place instead, for appending. A context manager (`with atomic_writer(p) as f`)."""
    import contextlib

    return contextlib.contextmanager(_atomic_writer)(path, mode)


def _atomic_writer(path: os.PathLike | str, mode: str):
    path = os.fspath(path)
    t = Target.of(path)
    if t.in_place:
        with open(path, mode.replace("w", "a")) as f:
            yield f
        return
    with terminate_cleanly():
        with _TemporaryFile(t.real, mode, path) as (f, tmp):
            yield f
        try:
            os.replace(tmp, t.real)
        except BaseException:
            _unlink(tmp)
            raise


def atomic_write_bytes(path: os.PathLike | str, data: bytes) -> None:
    with atomic_writer(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: os.PathLike | str, text: str) -> None:
    with atomic_writer(path, "w") as f:
        f.write(text)
