"""Conversions between Python ints, bytes and 64-bit limbs: the one place that splits an
integer into limbs and joins them back (no field, no prime: see cuzk.formats.stored for the
Montgomery forms).

A field element on disk is 32 bytes little-endian; in memory cuzk views it as four uint64
limbs, least significant first. Kernels take constants as tuples of np.uint64
(int_to_limb_tuple: Numba reads a global tuple as constants, and np.uint64 keeps the limbs
unsigned); arrays and files use uint64 arrays (int_to_limb_array, ints_to_limbs).
"""

from __future__ import annotations

import numpy as np

N8 = 32  # bytes per field element, for both BN254 primes
LIMBS = 4  # uint64 limbs per field element
MASK64 = (1 << 64) - 1


def int_to_limb_tuple(x: int, n: int = LIMBS) -> tuple:
    """x (0 <= x < 2^(64 n)) as a tuple of n np.uint64 limbs, least significant first."""
    return tuple(np.uint64((x >> (64 * i)) & MASK64) for i in range(n))


def int_to_limb_array(x: int, n: int = LIMBS) -> np.ndarray:
    """x as an (n,) uint64 array, least significant limb first."""
    return np.array([(x >> (64 * i)) & MASK64 for i in range(n)], dtype=np.uint64)


def limbs_to_int(limbs) -> int:
    """Little-endian 64-bit limbs (any sequence of integers, any length) as an int."""
    return sum(int(v) << (64 * i) for i, v in enumerate(limbs))


def int_to_bytes(x: int, n8: int = N8) -> bytes:
    """x as n8 bytes little-endian."""
    return int(x).to_bytes(n8, "little")


def bytes_to_int(b) -> int:
    """Little-endian bytes as an unsigned int."""
    return int.from_bytes(bytes(b), "little")


def ints_to_limbs(xs) -> np.ndarray:
    """Python ints (each 0 <= x < 2^256) as an (n, 4) uint64 array; ValueError out of range."""
    xs = list(xs)
    try:
        raw = b"".join(int(x).to_bytes(N8, "little") for x in xs)
    except OverflowError:
        raise ValueError("values must lie in [0, 2^256)") from None
    return np.frombuffer(raw, dtype="<u8").reshape(len(xs), LIMBS).astype(np.uint64)


def limbs_to_ints(arr) -> list[int]:
    """An (n, 4) uint64 array (or view, or one row of 4) as a list of ints."""
    raw = np.ascontiguousarray(arr, dtype="<u8").tobytes()
    if len(raw) % N8:
        raise ValueError(f"{len(raw)} bytes is not a whole number of {N8}-byte values")
    return [int.from_bytes(raw[i : i + N8], "little") for i in range(0, len(raw), N8)]
