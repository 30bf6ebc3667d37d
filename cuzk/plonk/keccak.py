"""Keccak-256: the Keccak-f[1600] sponge with rate 1088 bits and Keccak's original padding
(0x01 ... 0x80), as Ethereum and snarkjs's PLONK transcript (@noble/hashes keccak_256) use
it. Python's hashlib.sha3_256 is FIPS 202 SHA3-256, which pads with 0x06 instead and so
gives other digests.

The permutation follows the Keccak reference (Bertoni, Daemen, Peeters, Van Assche, "The
Keccak reference", 3.0, 2011): 24 rounds of theta, rho, pi, chi, iota over a 5 x 5 state
of 64-bit lanes, lane (x, y) at index x + 5 y, bytes read little-endian into lanes. Pure
Python (a transcript hashes a few hundred bytes per challenge: tens of microseconds a block).
"""

from __future__ import annotations

_M64 = (1 << 64) - 1
RATE = 136  # bytes: 1600 - 2 x 256 bits of capacity

# Round constants RC[i] (iota), from the degree-8 LFSR of the reference, section 1.2.
ROUND_CONSTANTS = (
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
)  # fmt: skip


def _rho_pi():
    """(source lane, destination lane, rotation) of rho and pi: rotation offsets
    r[x, y] = (t + 1)(t + 2)/2 along the walk (x, y) -> (y, 2x + 3y) from (1, 0), and pi
    moving lane (x, y) to (y, 2x + 3y)."""
    offsets = {(0, 0): 0}
    x, y = 1, 0
    for t in range(24):
        offsets[(x, y)] = ((t + 1) * (t + 2) // 2) % 64
        x, y = y, (2 * x + 3 * y) % 5
    return tuple(
        (x + 5 * y, y + 5 * ((2 * x + 3 * y) % 5), offsets[(x, y)])
        for x in range(5)
        for y in range(5)
    )


RHO_PI = _rho_pi()


def keccak_f1600(a: list[int]) -> None:
    """The permutation, in place on 25 lanes."""
    for rc in ROUND_CONSTANTS:
        # theta
        c = [a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] for x in range(5)]
        d = [
            c[(x - 1) % 5] ^ (((c[(x + 1) % 5] << 1) | (c[(x + 1) % 5] >> 63)) & _M64)
            for x in range(5)
        ]
        for i in range(25):
            a[i] ^= d[i % 5]
        # rho and pi
        b = [0] * 25
        for src, dst, rot in RHO_PI:
            v = a[src]
            b[dst] = ((v << rot) | (v >> (64 - rot))) & _M64 if rot else v
        # chi
        for y in range(0, 25, 5):
            row = b[y : y + 5]
            for x in range(5):
                a[y + x] = row[x] ^ (~row[(x + 1) % 5] & row[(x + 2) % 5])
        # iota
        a[0] ^= rc


def keccak_256(data: bytes) -> bytes:
    """The 32-byte Keccak-256 digest of `data`."""
    padded = bytearray(data)
    padded.append(0x01)
    padded.extend(bytes(-len(padded) % RATE))
    padded[-1] |= 0x80
    a = [0] * 25
    for off in range(0, len(padded), RATE):
        block = padded[off : off + RATE]
        for i in range(RATE // 8):
            a[i] ^= int.from_bytes(block[8 * i : 8 * i + 8], "little")
        keccak_f1600(a)
    return b"".join(a[i].to_bytes(8, "little") for i in range(4))
