"""BN254 constants and conversions between stored limbs, Python ints and bytes.

A field element on disk is 32 bytes little-endian; in memory cuzk views it as four uint64
limbs, least significant first. The .zkey stores curve coordinates in Montgomery form
(x·R mod q, R = 2^256); the .wtns stores scalars in plain form; the .zkey's coefficients are
stored as coef·R² mod r (see zkey.py). These helpers are for headers, small circuits and
tests: Python ints, not kernels.
"""

from __future__ import annotations

import numpy as np

# Base field prime q of BN254 ("bn128" in snarkjs): curve coordinates live in F_q.
BN254_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
# Scalar field prime r of BN254 (the group order): witness values and exponents live in F_r.
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
N8 = 32  # bytes per field element for both primes
MONT_R = 1 << 256  # the Montgomery radix R
R_INV_Q = pow(MONT_R, -1, BN254_Q)  # R^-1 mod q
R_INV_R = pow(MONT_R, -1, BN254_R)  # R^-1 mod r

MASK64 = (1 << 64) - 1


def int_to_bytes(x: int, n8: int = N8) -> bytes:
    """x as n8 bytes little-endian."""
    return x.to_bytes(n8, "little")


def bytes_to_int(b) -> int:
    """Little-endian bytes as an unsigned int."""
    return int.from_bytes(bytes(b), "little")


def limbs_to_int(limbs) -> int:
    """Four (or any number of) little-endian uint64 limbs as an int."""
    x = 0
    for i, limb in enumerate(limbs):
        x |= int(limb) << (64 * i)
    return x


def int_to_limbs(x: int, n: int = 4) -> np.ndarray:
    """x as n uint64 limbs, least significant first."""
    return np.array([(x >> (64 * i)) & MASK64 for i in range(n)], dtype=np.uint64)


def ints_to_limbs(xs) -> np.ndarray:
    """A sequence of ints as an (len, 4) uint64 array."""
    raw = b"".join(int_to_bytes(int(x)) for x in xs)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 4).copy()


def limbs_to_ints(arr) -> list[int]:
    """An (n, 4) uint64 array (or view) as a list of ints."""
    raw = np.ascontiguousarray(arr, dtype="<u8").tobytes()
    return [int.from_bytes(raw[i : i + N8], "little") for i in range(0, len(raw), N8)]


def from_mont_q(limbs) -> int:
    """A Montgomery-form F_q element (4 limbs) as its plain value x = xR·R^-1 mod q."""
    return limbs_to_int(limbs) * R_INV_Q % BN254_Q


def to_mont_q(x: int) -> np.ndarray:
    """Plain x in F_q as 4 Montgomery-form limbs (x·R mod q)."""
    return int_to_limbs(x * MONT_R % BN254_Q)


def from_mont_r(limbs) -> int:
    """A Montgomery-form F_r element (4 limbs) as its plain value."""
    return limbs_to_int(limbs) * R_INV_R % BN254_R


def to_mont_r(x: int) -> np.ndarray:
    """Plain x in F_r as 4 Montgomery-form limbs (x·R mod r)."""
    return int_to_limbs(x * MONT_R % BN254_R)


def zkey_coef_to_int(limbs) -> int:
    """A .zkey coefficient (stored as coef·R² mod r) as its plain value coef."""
    return limbs_to_int(limbs) * R_INV_R * R_INV_R % BN254_R


def int_to_zkey_coef(coef: int) -> np.ndarray:
    """Plain coef in F_r as it is stored in a .zkey coefficient entry (coef·R² mod r)."""
    return int_to_limbs(coef * MONT_R * MONT_R % BN254_R)


# Points. G1 affine = (x, y) ints; G2 affine = ((x.c0, x.c1), (y.c0, y.c1)); None = infinity.
# Stored G1 = 8 limbs x||y, G2 = 16 limbs x.c0||x.c1||y.c0||y.c1, Montgomery form; the point
# at infinity is stored as all zeros.


def g1_from_limbs(limbs) -> tuple[int, int] | None:
    """A stored G1 point (8 Montgomery limbs) as affine (x, y) ints, None for infinity."""
    a = np.asarray(limbs, dtype=np.uint64)
    if not a.any():
        return None
    return from_mont_q(a[0:4]), from_mont_q(a[4:8])


def g1_to_limbs(p: tuple[int, int] | None) -> np.ndarray:
    """Affine (x, y) ints (or None) as a stored G1 point, 8 Montgomery limbs."""
    if p is None:
        return np.zeros(8, dtype=np.uint64)
    return np.concatenate([to_mont_q(p[0]), to_mont_q(p[1])])


def g2_from_limbs(limbs):
    """A stored G2 point (16 Montgomery limbs) as ((x.c0, x.c1), (y.c0, y.c1)), None = infinity."""
    a = np.asarray(limbs, dtype=np.uint64)
    if not a.any():
        return None
    c = [from_mont_q(a[4 * i : 4 * i + 4]) for i in range(4)]
    return (c[0], c[1]), (c[2], c[3])


def g2_to_limbs(p) -> np.ndarray:
    """((x.c0, x.c1), (y.c0, y.c1)) ints (or None) as a stored G2 point, 16 Montgomery limbs."""
    if p is None:
        return np.zeros(16, dtype=np.uint64)
    (x0, x1), (y0, y1) = p
    return np.concatenate([to_mont_q(v) for v in (x0, x1, y0, y1)])


def g1_array_to_points(arr) -> list:
    """An (n, 8) stored G1 array as a list of affine points (None for infinity)."""
    return [g1_from_limbs(row) for row in np.asarray(arr)]


def g2_array_to_points(arr) -> list:
    """An (n, 16) stored G2 array as a list of affine points (None for infinity)."""
    return [g2_from_limbs(row) for row in np.asarray(arr)]
