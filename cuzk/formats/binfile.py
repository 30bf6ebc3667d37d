"""The iden3 binary container shared by .zkey, .wtns and .r1cs, mapped read-only with mmap.

Layout (all integers little-endian):

    magic[4] | u32 version | u32 n_sections | n_sections x (u32 id | u64 size | payload[size])

Sections are looked up by id; their physical order is free (snarkjs writes zkey sections
as 1,2,4,3,9,8,5,6,7,10). `BinFile` maps the whole file and hands out numpy views into the
map, so large sections are never copied: pages are read from the page cache on first touch
and shared by every process that maps the same file.

Views may be unaligned (a section's payload starts wherever the previous one ended; e.g. a
coefficient section with an even entry count shifts every later zkey section by 4 bytes).
numpy handles such views; code that needs aligned memory (a device upload) copies anyway.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from cuzk.formats.errors import (
    BadMagic,
    BadVersion,
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


class BinFile:
    """A mapped iden3 container: validates magic, version and the section table.

    `kind` is the 4-byte magic as text ("zkey"); `versions` the versions accepted.
    Every failure raises a FormatError naming `path`.
    """

    def __init__(self, path: os.PathLike | str, kind: str, versions: tuple[int, ...], data=None):
        """Map the file at `path`; or, when `data` (bytes-like) is given, read that buffer
        instead and use `path` only as the name in messages (an uploaded file)."""
        self.path = os.fspath(path)
        self.kind = kind
        if data is not None:
            self.mm = memoryview(data).cast("B")
            self.file_size = self.mm.nbytes
        else:
            with open(self.path, "rb") as f:
                self.file_size = os.fstat(f.fileno()).st_size
                if self.file_size >= FILE_HEADER.size:
                    # The map outlives the file object: mmap keeps its own handle.
                    self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self.file_size < FILE_HEADER.size:
            raise Truncated(
                self.path,
                f"{self.file_size} bytes is too short for a .{kind} file "
                f"(the container header alone is {FILE_HEADER.size} bytes)",
            )
        magic, self.version, n_sections = FILE_HEADER.unpack_from(self.mm, 0)
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
            sid, size = SECTION_HEADER.unpack_from(self.mm, pos)
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

    def u32(self, offset: int) -> int:
        return struct.unpack_from("<I", self.mm, offset)[0]

    def u64(self, offset: int) -> int:
        return struct.unpack_from("<Q", self.mm, offset)[0]

    def bigint(self, offset: int, n8: int) -> int:
        """An n8-byte little-endian unsigned integer."""
        return int.from_bytes(bytes(self.mm[offset : offset + n8]), "little")

    def view(self, offset: int, dtype, count: int) -> np.ndarray:
        """A read-only numpy view of `count` items of `dtype` at `offset` (no copy)."""
        return np.frombuffer(self.mm, dtype=dtype, count=count, offset=offset)

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
