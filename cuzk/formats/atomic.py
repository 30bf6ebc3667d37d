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
"""

from __future__ import annotations

import contextlib
import os
import stat

# (tempfile and dataclasses are not imported: ~2 and ~4 ms of the thin client's start, which
# writes its outputs here; `mkstemp` and Target below do what this module took from them)

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


def check_outputs(*paths) -> list[Target]:
    """The targets of `paths`, checked: OutputError (one line) when two name one file (also
    spelled two ways, or hard links), a directory is missing or not writable, or a device is
    not writable. Commands call it before their long work, and write_outputs again."""
    targets = [Target.of(p) for p in paths]
    for i, a in enumerate(targets):
        for b in targets[i + 1 :]:
            if _same(a, b):
                raise OutputError(
                    f"{a.path} and {b.path} are the same file: give each output its own path"
                )
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
        name = os.path.join(dir, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(17, "no free temporary name", dir)


@contextlib.contextmanager
def _temporary_file(real: str, mode: str, path: str):
    """(file, name) of a new temporary file next to `real`: on a clean exit it is flushed,
    fsynced and made 0644, and kept for the caller to rename; on any error it is removed.
    An error creating it names `path`, the file asked for, not the temporary one."""
    directory, name = os.path.split(real)
    try:
        fd, tmp = mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None
    try:
        with os.fdopen(fd, mode) as f:
            yield f, tmp
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        _unlink(tmp)
        raise


def _temporary(t: Target, data: bytes) -> str:
    """A complete, fsynced copy of `data` next to t.real; its name."""
    try:
        with _temporary_file(t.real, "wb", t.path) as (f, tmp):
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
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@contextlib.contextmanager
def atomic_writer(path: os.PathLike | str, mode: str = "wb"):
    """Open a temporary file next to the file `path` resolves to; on a clean exit, fsync it and
    rename it there. A device, pipe or the shell's file (see the module's docstring) is
    opened in place instead, for appending."""
    path = os.fspath(path)
    t = Target.of(path)
    if t.in_place:
        with open(path, mode.replace("w", "a")) as f:
            yield f
        return
    with _temporary_file(t.real, mode, path) as (f, tmp):
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
