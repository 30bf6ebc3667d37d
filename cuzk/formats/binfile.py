"""The iden3 binary container shared by .zkey, .wtns and .r1cs: mapped read-only with mmap,
or read into this process's own memory (`private`).

Layout (all integers little-endian):

    magic[4] | u32 version | u32 n_sections | n_sections x (u32 id | u64 size | payload[size])

Sections are looked up by id; their physical order is free (snarkjs writes zkey sections
as 1,2,4,3,9,8,5,6,7,10). `BinFile` maps the whole file and hands out numpy views into the
map, so large sections are never copied: pages are read from the page cache on first touch
and shared by every process that maps the same file.

Views may be unaligned (a section's payload starts wherever the previous one ended; e.g. a
coefficient section with an even entry count shifts every later zkey section by 4 bytes).
numpy handles such views; code that needs aligned memory (a device upload) copies anyway.

A map is only as sound as the file under it: a file truncated in place (an operator copying a
new key over the old one with `cp`, a tool rewriting it) while it is mapped makes the next
touch of a page past the new end kill the process with SIGBUS, which Python cannot catch
(issue 38). A process that keeps a file open for long, or must outlive such a change (the
daemon's processes), opens it `private`: the section table is read at once, and each section
read into memory of its own when first asked for (`view`), after checking that the file is
still the one opened (`stamp`: device, inode, size, mtime); a file changed or shortened
meanwhile raises Changed or Truncated, naming it, instead of killing the process. Nothing of
a private BinFile is mapped, so nothing a file does can fault it.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import struct
from dataclasses import dataclass

import numpy as np

from cuzk.formats.errors import (
    BadMagic,
    BadVersion,
    Changed,
    DuplicateSection,
    MissingSection,
    Truncated,
)

FILE_HEADER = struct.Struct("<4sII")  # magic, version, n_sections
SECTION_HEADER = struct.Struct("<IQ")  # id, size


@dataclass(frozen=True)
class Section:
    """One section of a container: `offset` is where its payload starts in the file."""

    id: int
    offset: int
    size: int


def file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What identifies a file's contents cheaply: (device, inode, size, mtime in ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class BinFile:
    """An iden3 container: validates magic, version and the section table.

    `kind` is the 4-byte magic as text ("zkey"); `versions` the versions accepted.
    Every failure raises a FormatError naming `path`.
    """

    def __init__(
        self,
        path: os.PathLike | str,
        kind: str,
        versions: tuple[int, ...],
        data=None,
        private: bool = True,
    ):
        """Read the file at `path` (`private`, the default: section by section, as asked
        for; see the module's docstring), or with private=False map it; or, when `data`
        (bytes-like) is given, read that buffer and use `path` only as the name in messages
        (an uploaded file). `mm` is the whole map or buffer, or (private) the file's first
        64 KiB only: read the rest with read_bytes() or view()."""
        self.path = os.fspath(path)
        self.kind = kind
        self.mm = None
        self.stamp = None  # file_stamp() of the file opened (None for `data`)
        self._fd = None
        if data is not None:
            self.mm = memoryview(data).cast("B")
            self.file_size = self.mm.nbytes
        elif private:
            # O_NONBLOCK: a FIFO given as a key is refused below, not waited on
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                st = os.fstat(fd)
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.path)
                if not stat.S_ISREG(st.st_mode):
                    raise Truncated(self.path, f"not a regular file: a .{kind} file must be one")
                self.stamp, self.file_size = file_stamp(st), st.st_size
                head = min(self.file_size, 1 << 16)
                # the first 64 KiB at once: the header, and the section table of a small file
                self.mm = memoryview(self._pread(fd, 0, head)).toreadonly()
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        else:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                self.stamp, self.file_size = file_stamp(st), st.st_size
                if self.file_size >= FILE_HEADER.size:
                    # The map outlives the file object: mmap keeps its own handle.
                    self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self.file_size < FILE_HEADER.size:
            raise Truncated(
                self.path,
                f"{self.file_size} bytes is too short for a .{kind} file "
                f"(the container header alone is {FILE_HEADER.size} bytes)",
            )
        magic, self.version, n_sections = FILE_HEADER.unpack(self._bytes(0, FILE_HEADER.size))
        if magic != kind.encode():
            raise BadMagic(
                self.path, f"not a .{kind} file (magic {magic!r}, expected {kind.encode()!r})"
            )
        if self.version not in versions:
            raise BadVersion(
                self.path,
                f".{kind} version {self.version} is not supported (cuzk reads version "
                f"{' or '.join(map(str, versions))})",
            )
        self.sections: dict[int, list[Section]] = {}
        pos = FILE_HEADER.size
        for i in range(n_sections):
            if pos + SECTION_HEADER.size > self.file_size:
                raise Truncated(
                    self.path,
                    f"file ends at byte {self.file_size} inside the header of section "
                    f"{i + 1} of {n_sections} (at offset {pos})",
                )
            sid, size = SECTION_HEADER.unpack(self._bytes(pos, SECTION_HEADER.size))
            pos += SECTION_HEADER.size
            if pos + size > self.file_size:
                raise Truncated(
                    self.path,
                    f"section {sid} declares {size} bytes at offset {pos} but the file ends "
                    f"at byte {self.file_size} ({pos + size - self.file_size} bytes missing)",
                )
            self.sections.setdefault(sid, []).append(Section(sid, pos, size))
            pos += size

    def section(self, sid: int, name: str) -> Section:
        """The one section with id `sid` (`name` is for messages); raises if absent or repeated."""
        found = self.sections.get(sid)
        if not found:
            raise MissingSection(self.path, f"section {sid} ({name}) is missing")
        if len(found) > 1:
            raise DuplicateSection(self.path, f"section {sid} ({name}) appears {len(found)} times")
        return found[0]

    def has(self, sid: int) -> bool:
        return sid in self.sections

    # ------------------------------------------------------------------ reading
    @property
    def private(self) -> bool:
        return self._fd is not None

    def _pread(self, fd: int, offset: int, n: int, out=None):
        """`n` bytes at `offset` (into `out`, a writable buffer, when given), all of them or
        Truncated: the file is shorter now than when it was opened."""
        buf = memoryview(bytearray(n) if out is None else out).cast("B")
        got = 0
        while got < n:
            k = os.preadv(fd, [buf[got : got + (1 << 30)]], offset + got)
            if k == 0:
                now = os.fstat(fd).st_size
                raise Truncated(
                    self.path,
                    f"the file ends at byte {now} but was {self.file_size} bytes when opened: "
                    f"it was truncated or rewritten in place while in use (byte {offset + got} "
                    f"of the {n} at offset {offset} could not be read)",
                )
            got += k
        return buf.obj if out is None else out

    def check_unchanged(self) -> None:
        """Raise Changed when the file at `path` is no longer the one opened (another inode:
        replaced; another size or mtime: rewritten in place). Nothing for `data`. (A private
        file's sections are read through the handle opened, so a file renamed over `path`
        does not stop them: that check is on the handle's own file, in view().)"""
        if self.stamp is None:
            return
        try:
            now = file_stamp(os.stat(self.path))
        except OSError as e:
            raise Changed(self.path, f"changed since it was opened: {e.strerror or e}") from None
        if now != self.stamp:
            was = self.stamp
            what = "replaced (another file)" if now[:2] != was[:2] else "rewritten in place"
            raise Changed(
                self.path,
                f"changed since it was opened: {what}, {was[2]} -> {now[2]} bytes, "
                f"modified {(now[3] - was[3]) / 1e9:+.3f} s later",
            )

    def _bytes(self, offset: int, n: int):
        """`n` bytes at `offset` (a buffer)."""
        if self._fd is not None and offset + n > len(self.mm):
            return self._pread(self._fd, offset, n)
        return self.mm[offset : offset + n]

    def read_bytes(self, offset: int, n: int) -> bytes:
        return bytes(self._bytes(offset, n))

    def u32(self, offset: int) -> int:
        return struct.unpack("<I", self._bytes(offset, 4))[0]

    def u64(self, offset: int) -> int:
        return struct.unpack("<Q", self._bytes(offset, 8))[0]

    def bigint(self, offset: int, n8: int) -> int:
        """An n8-byte little-endian unsigned integer."""
        return int.from_bytes(bytes(self._bytes(offset, n8)), "little")

    def view(self, offset: int, dtype, count: int) -> np.ndarray:
        """A read-only numpy array of `count` items of `dtype` at `offset`: a view of the map
        (no copy), or, private, read now into memory of its own after check_unchanged()."""
        dtype = np.dtype(dtype)
        if self._fd is None or offset + dtype.itemsize * count <= len(self.mm):
            return np.frombuffer(self.mm, dtype=dtype, count=count, offset=offset)
        now = file_stamp(os.fstat(self._fd))
        if now != self.stamp:  # this inode rewritten in place (one renamed over the path is
            # not this file: what the handle reads is still what was opened)
            raise Changed(
                self.path,
                f"rewritten in place since it was opened ({self.stamp[2]} -> {now[2]} bytes, "
                f"modified {(now[3] - self.stamp[3]) / 1e9:+.3f} s later); open it again",
            )
        out = np.empty(count, dtype)
        self._pread(self._fd, offset, out.nbytes, out)
        out.flags.writeable = False
        return out

    def __del__(self):
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def release(self, view: np.ndarray) -> None:
        """Drop this process's pages of `view` (a view into the map): they leave its resident
        set and stay in the page cache, so a later read faults them back in from there
        (MADV_DONTNEED on a shared read-only map). For a process that reads a section once
        (a one-shot prover); does nothing for a buffer that is not a map, or where the
        platform has no madvise. The pages at the view's ends may hold neighbouring data:
        dropping those costs a fault at most, never their contents."""
        if not isinstance(self.mm, mmap.mmap) or not hasattr(self.mm, "madvise"):
            return
        if view.size == 0:
            return
        base = np.frombuffer(self.mm, np.uint8, count=1).ctypes.data
        start = view.ctypes.data - base
        end = start + view.nbytes
        if start < 0 or end > self.file_size:
            raise ValueError(f"{self.path}: view is not inside the map")
        page = mmap.PAGESIZE
        start -= start % page
        self.mm.madvise(mmap.MADV_DONTNEED, start, min(end, self.file_size) - start)

    def limbs(self, offset: int, rows: int, limbs_per_row: int) -> np.ndarray:
        """A (rows, limbs_per_row) read-only uint64 view at `offset` (no copy)."""
        return self.view(offset, np.dtype("<u8"), rows * limbs_per_row).reshape(rows, limbs_per_row)


def write_container(f, kind: str, version: int, sections) -> None:
    """Write a container to the binary file object `f`.

    `sections` is a list of (id, chunks) in physical order; each chunk is bytes or anything
    with the buffer protocol (a C-contiguous numpy array is written without a copy).
    """
    f.write(FILE_HEADER.pack(kind.encode(), version, len(sections)))
    for sid, chunks in sections:
        views = [memoryview(c).cast("B") for c in chunks]
        f.write(SECTION_HEADER.pack(sid, sum(v.nbytes for v in views)))
        for v in views:
            f.write(v)
