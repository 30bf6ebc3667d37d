"""Giving memory back early: the pages of an array nobody will read again, where they live in a
shared mapping (a partition's buffers segment, /dev/shm: cuzk.engine.buffers).

A segment's pages stay allocated until the supervisor unlinks it and every process has unmapped
it, which for a partition's a, b, c is after the device's whole first stage (compute H, then
the four G1 MSMs). b and c are dead once H is computed (H takes a's storage), so the prover
hands their pages back then (``release``: MADV_REMOVE, which frees a shared mapping's backing
pages; a later read sees zeros): at 2^22 that is 256 MiB off the daemon's peak, during the MSMs.
A retry of the partition already synthesizes it again (its buffers are overwritten in place by
compute H), so nothing reads them after. On memory that is not a shared mapping (a one-shot
process's own arrays, freed by their owner) the call does nothing.

``large_blocks_to_the_system``: the daemon's processes allocate and free arrays of every size
from 1 to a few hundred MiB, proof after proof. glibc serves a block from its heap unless it is
above a threshold that it raises to the size of each mapped block freed (up to 32 MiB), and a
freed heap block stays with the process: at 2^22 the device process kept ~110 MiB that way,
the supervisor ~70. Fixing the threshold at LARGE_BLOCK (2 MiB) sends every larger block to
mmap, so a free gives it back (measured at 1 MiB: the daemon's peak 3,084 -> 2,901 MiB PSS at
2^22, the resident job 13.91 -> 13.99 s). Its cost is the blocks made afresh each proof (page
faults, and an unmap's TLB flush on every thread): at 1 MiB a 2^16 proof in one process took
357.7 / 358.8 -> 362.1 / 360.7 ms of CPU (+1%), the MSMs' 1 MiB chunk buffers
(msm_plan.CHUNK_BYTES) among the blocks; at 2 MiB those stay in the heap, reused proof after
proof. 16 jobs of 2^13 at once through the daemon took 1.26 / 1.29 s at 1 MiB and 1.30 s at
2 MiB, 1.21 s in one run without the setting: within what this machine moves between runs
(rapidsnark's 16 commands 2.05-2.20 s over the same runs), not settled.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

_PAGE = mmap.PAGESIZE
_MADV_REMOVE = getattr(mmap, "MADV_REMOVE", None)
_libc = None


def _madvise():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        _libc.madvise.restype = ctypes.c_int
    return _libc.madvise


def release(array) -> int:
    """Free the whole pages inside ``array``'s memory where it is a shared mapping (the pages at
    its ends, which may hold its neighbours' bytes, are kept); its contents are then lost.
    Returns the bytes freed (0 where nothing was: not a shared mapping, not Linux, fewer than a
    page). The caller holds no other use of the array."""
    if _MADV_REMOVE is None or not sys.platform.startswith("linux"):
        return 0
    try:
        start = int(array.__array_interface__["data"][0])
        size = int(array.nbytes)
    except (AttributeError, TypeError, KeyError):
        return 0
    if not getattr(array, "flags", None) or not array.flags.c_contiguous:
        return 0
    lo = -(-start // _PAGE) * _PAGE
    hi = (start + size) // _PAGE * _PAGE
    if hi <= lo:
        return 0
    if _madvise()(lo, hi - lo, _MADV_REMOVE) != 0:
        return 0  # EINVAL: private memory (its owner frees it), or a mapping without backing
    return hi - lo


# glibc's mallopt parameters; the block size from which arrays go to mmap (see the doc), and
# the free space the heap's top may keep before it is trimmed. Fixing the first stops glibc
# adjusting the second (it keeps twice the threshold it reached): left at its 128 KiB, the
# heap grew and shrank around every proof's small arrays, 1-2% of a 2^16 proof in page faults.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 2 << 20
TRIM_KEEP = 32 << 20


def large_blocks_to_the_system() -> bool:
    """Have this process's allocator take blocks of LARGE_BLOCK bytes and more straight from
    the system (mmap), so each goes back when freed. False where it cannot (not glibc)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.mallopt(ctypes.c_int(_M_MMAP_THRESHOLD), ctypes.c_int(LARGE_BLOCK))
        return bool(ok and libc.mallopt(ctypes.c_int(_M_TRIM_THRESHOLD), ctypes.c_int(TRIM_KEEP)))
    except (OSError, AttributeError):
        return False
