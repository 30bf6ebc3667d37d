"""Write a .wtns (version 2) from the witness bytes, without numpy (fast start-up).

The same bytes as cuzk.formats.wtns.write_wtns and as snarkjs's calculateWTNSBin: "wtns",
u32 version 2, u32 2 sections; section 1 (u64 size 40): u32 n8 = 32, the prime (the circuit's:
r of BN254 or of BLS12-381, 32 bytes little-endian), u32 count; section 2 (u64 size 32·count):
the values. Tests compare both.
"""

from __future__ import annotations

import struct

from cuzk.formats.atomic import atomic_writer

N8 = 32  # snarkjs's n8 for a prime below 2^256: 8 bytes per 64 bits started


def wtns_header(count: int, prime: int) -> bytes:
    """Everything of a .wtns before its values (`prime`: the circuit's, below 2^256)."""
    return (
        b"wtns"
        + struct.pack("<II", 2, 2)
        + struct.pack("<IQI", 1, 4 + N8 + 4, N8)
        + prime.to_bytes(N8, "little")
        + struct.pack("<I", count)
        + struct.pack("<IQ", 2, N8 * count)
    )


def write_wtns_bytes(path, values, prime: int) -> None:
    """Write a .wtns atomically from `values` (bytes-like: count x 32 bytes, plain form, each
    below `prime`, the circuit's: Circuit.prime)."""
    if len(values) % N8:
        raise ValueError(f"{len(values)} bytes is not a whole number of 32-byte values")
    with atomic_writer(path) as f:
        f.write(wtns_header(len(values) // N8, prime))
        f.write(values)
