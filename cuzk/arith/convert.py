"""Conversions between Python integers, bytes, py_ecc points and the limb arrays the kernels use,
plus Python-level calls into the CPU build.

Kernels see field elements as 4 little-endian uint64 limbs in Montgomery form (a*R mod p,
R = 2^256) and points in the zkey's layouts (see cuzk.arith.curve): G1 affine (n, 8) =
x || y, G2 affine (n, 16) = x.c0 || x.c1 || y.c0 || y.c1, the point at infinity all zero.
Everything here is numpy and Python integers except where a conversion is large enough to go
through the batch kernels (cuzk.arith.batch_ops, the CPU build).
"""

from __future__ import annotations

import functools

import numpy as np

from cuzk.arith.batch_api import rows
from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS, LIMBS, MONT_R, fq2_inv_int, fq2_mul_int
from cuzk.arith.radix import int_to_limb_tuple, ints_to_limbs, limbs_to_int, limbs_to_ints

# Above this many elements, Montgomery conversions of arrays run in the parallel CPU kernels.
BATCH_THRESHOLD = 4096

_R_INV_Q = pow(MONT_R, -1, FQ_MODULUS)
_R_INV_R = pow(MONT_R, -1, FR_MODULUS)


# ================================= integers and bytes =====================================


def int_to_bytes32(x: int) -> bytes:
    """x (0 <= x < 2^256) as 32 little-endian bytes."""
    return int(x).to_bytes(32, "little")


def bytes32_to_int(b: bytes) -> int:
    if len(b) != 32:
        raise ValueError(f"expected 32 bytes, got {len(b)}")
    return int.from_bytes(b, "little")


def bytes_to_limbs(buf, n: int | None = None) -> np.ndarray:
    """32-byte little-endian values, back to back, as an (n, 4) uint64 array (a copy)."""
    data = np.frombuffer(buf, dtype="<u8")
    if n is None:
        if data.size % LIMBS:
            raise ValueError(f"{data.size * 8} bytes is not a whole number of 32-byte values")
        n = data.size // LIMBS
    if data.size < n * LIMBS:
        raise ValueError(f"expected {n * 32} bytes, got {data.size * 8}")
    return data[: n * LIMBS].reshape(n, LIMBS).astype(np.uint64)


def limbs_to_bytes(arr) -> bytes:
    """An (n, k) uint64 array as little-endian bytes, row by row."""
    return np.ascontiguousarray(arr, dtype="<u8").tobytes()


# ================================== Montgomery form =======================================


def fq(x: int) -> tuple:
    """The Montgomery limbs (tuple of 4 np.uint64) of x mod q."""
    return int_to_limb_tuple(int(x) % FQ_MODULUS * MONT_R % FQ_MODULUS)


def fq_int(a) -> int:
    """The integer (in [0, q)) held by Montgomery limbs."""
    return limbs_to_int(a) * _R_INV_Q % FQ_MODULUS


def fr(x: int) -> tuple:
    """The Montgomery limbs of x mod r."""
    return int_to_limb_tuple(int(x) % FR_MODULUS * MONT_R % FR_MODULUS)


def fr_int(a) -> int:
    return limbs_to_int(a) * _R_INV_R % FR_MODULUS


def fq2(c) -> tuple:
    """(c0, c1) meaning c0 + c1 u, as a pair of Montgomery limb tuples."""
    return (fq(c[0]), fq(c[1]))


def fq2_int(a) -> tuple:
    return (fq_int(a[0]), fq_int(a[1]))


def _to_mont_array(xs, p: int, batch_name: str) -> np.ndarray:
    xs = [int(x) % p for x in xs]
    if len(xs) >= BATCH_THRESHOLD:
        from cuzk.arith import batch_ops

        return getattr(batch_ops, batch_name)(ints_to_limbs(xs))
    return ints_to_limbs([x * MONT_R % p for x in xs])


def _from_mont_array(arr, p: int, batch_name: str, r_inv: int) -> list:
    arr = rows(arr, LIMBS)
    if arr.shape[0] >= BATCH_THRESHOLD:
        from cuzk.arith import batch_ops

        return limbs_to_ints(getattr(batch_ops, batch_name)(arr))
    return [x * r_inv % p for x in limbs_to_ints(arr)]


def fq_array(xs) -> np.ndarray:
    """Python integers -> (n, 4) Montgomery Fq array."""
    return _to_mont_array(xs, FQ_MODULUS, "fq_to_mont")


def fq_array_to_ints(arr) -> list:
    """(n, 4) Montgomery Fq array -> Python integers."""
    return _from_mont_array(arr, FQ_MODULUS, "fq_from_mont", _R_INV_Q)


def fr_array(xs) -> np.ndarray:
    """Python integers -> (n, 4) Montgomery Fr array."""
    return _to_mont_array(xs, FR_MODULUS, "fr_to_mont")


def fr_array_to_ints(arr) -> list:
    """(n, 4) Montgomery Fr array -> Python integers."""
    return _from_mont_array(arr, FR_MODULUS, "fr_from_mont", _R_INV_R)


def fq2_array(xs) -> np.ndarray:
    """[(c0, c1), ...] -> (n, 8) Montgomery Fq2 array."""
    xs = list(xs)
    flat = fq_array([c for x in xs for c in (x[0], x[1])])
    return flat.reshape(len(xs), 2 * LIMBS)


def fq2_array_to_ints(arr) -> list:
    flat = fq_array_to_ints(rows(arr, 2 * LIMBS).reshape(-1, LIMBS))
    return list(zip(flat[0::2], flat[1::2], strict=True))


# ======================================= points ===========================================
# Integer form of an affine point: (x, y) for G1, ((x0, x1), (y0, y1)) for G2, None for the
# point at infinity.


def g1_from_ints(P) -> tuple:
    """(x, y) integers or None -> Montgomery affine (x, y); None -> (0, 0)."""
    if P is None:
        return (fq(0), fq(0))
    return (fq(P[0]), fq(P[1]))


def g1_to_ints(a):
    """Montgomery affine (x, y) -> integers, or None for (0, 0)."""
    x, y = fq_int(a[0]), fq_int(a[1])
    return None if x == 0 and y == 0 else (x, y)


def g2_from_ints(P) -> tuple:
    if P is None:
        return (fq2((0, 0)), fq2((0, 0)))
    return (fq2(P[0]), fq2(P[1]))


def g2_to_ints(a):
    x, y = fq2_int(a[0]), fq2_int(a[1])
    return None if x == (0, 0) and y == (0, 0) else (x, y)


def g1_array(points) -> np.ndarray:
    """Integer points (None for infinity) -> G1 affine array (n, 8)."""
    points = list(points)
    coords = [c for P in points for c in ((0, 0) if P is None else P)]
    return fq_array(coords).reshape(len(points), 8)


def g1_array_to_ints(arr) -> list:
    """G1 affine array (n, 8) -> integer points (None for all-zero rows)."""
    flat = fq_array_to_ints(rows(arr, 8).reshape(-1, LIMBS))
    pairs = zip(flat[0::2], flat[1::2], strict=True)
    return [None if x == 0 and y == 0 else (x, y) for x, y in pairs]


def g2_array(points) -> np.ndarray:
    """Integer points (None for infinity) -> G2 affine array (n, 16)."""
    points = list(points)
    coords = [c for P in points for xy in (((0, 0), (0, 0)) if P is None else P) for c in xy]
    return fq_array(coords).reshape(len(points), 16)


def g2_array_to_ints(arr) -> list:
    flat = fq_array_to_ints(rows(arr, 16).reshape(-1, LIMBS))
    out = []
    for i in range(0, len(flat), 4):
        x, y = (flat[i], flat[i + 1]), (flat[i + 2], flat[i + 3])
        out.append(None if x == (0, 0) and y == (0, 0) else (x, y))
    return out


def g1_jacobian_to_ints(arr) -> list:
    """G1 Jacobian array (n, 12) -> integer affine points (x = X/Z^2, y = Y/Z^3), by Python
    integer arithmetic (independent of the kernels: tests use it as a reference)."""
    flat = fq_array_to_ints(rows(arr, 12).reshape(-1, LIMBS))
    q = FQ_MODULUS
    out = []
    for X, Y, Z in zip(flat[0::3], flat[1::3], flat[2::3], strict=True):
        if Z == 0:
            out.append(None)
            continue
        zi = pow(Z, -1, q)
        out.append((X * zi * zi % q, Y * zi * zi * zi % q))
    return out


def g2_jacobian_to_ints(arr) -> list:
    """G2 Jacobian array (n, 24) -> integer affine points, by Python integer arithmetic."""
    flat = fq2_array_to_ints(rows(arr, 24).reshape(-1, 8))
    out = []
    for X, Y, Z in zip(flat[0::3], flat[1::3], flat[2::3], strict=True):
        if Z == (0, 0):
            out.append(None)
            continue
        zi = fq2_inv_int(Z)
        zi2 = fq2_mul_int(zi, zi)
        out.append((fq2_mul_int(X, zi2), fq2_mul_int(Y, fq2_mul_int(zi2, zi))))
    return out


# --- py_ecc points ---------------------------------------------------------------------------
# py_ecc.bn128 points are (x, y) or None; py_ecc.optimized_bn128 points are (x, y, z)
# (homogeneous projective, z = 0 at infinity). Both carry FQ / FQ2 values.


def _py_ecc_affine(P):
    if P is None:
        return None
    if len(P) == 3:
        from py_ecc import optimized_bn128

        if optimized_bn128.is_inf(P):
            return None
        P = optimized_bn128.normalize(P)
    return P


def g1_from_py_ecc(P) -> tuple:
    """A py_ecc G1 point (bn128 or optimized_bn128) -> Montgomery affine (x, y)."""
    P = _py_ecc_affine(P)
    return g1_from_ints(None if P is None else (int(P[0]), int(P[1])))


def g1_to_py_ecc(a):
    """Montgomery affine (x, y) -> a py_ecc.optimized_bn128 G1 point."""
    from py_ecc import optimized_bn128 as ob

    P = g1_to_ints(a)
    if P is None:
        return ob.Z1
    return (ob.FQ(P[0]), ob.FQ(P[1]), ob.FQ.one())


def g2_from_py_ecc(P) -> tuple:
    """A py_ecc G2 point (bn128 or optimized_bn128) -> Montgomery affine over Fq2."""
    P = _py_ecc_affine(P)
    if P is None:
        return g2_from_ints(None)
    return g2_from_ints(tuple((int(c.coeffs[0]), int(c.coeffs[1])) for c in P[:2]))


def g2_to_py_ecc(a):
    """Montgomery affine over Fq2 -> a py_ecc.optimized_bn128 G2 point."""
    from py_ecc import optimized_bn128 as ob

    P = g2_to_ints(a)
    if P is None:
        return ob.Z2
    return (ob.FQ2(list(P[0])), ob.FQ2(list(P[1])), ob.FQ2.one())


# ============================ Python-level calls into the CPU build =======================


def as_limbs(v):
    """Nested tuples/lists of integers -> the same nesting of tuples of np.uint64.

    Numba returns uint64 limbs to Python as plain ints; passed back in, small ones would be
    typed int64 (and int64 mixed with uint64 becomes float64), so every Python-level call
    normalises its arguments through here.
    """
    if isinstance(v, (tuple, list, np.ndarray)):
        return tuple(as_limbs(x) for x in v)
    return np.uint64(v)


def python_level(fn):
    """Wrap a CPU-build device function for calls from Python: limbs in and out as tuples of
    np.uint64; booleans stay booleans."""

    @functools.wraps(fn)
    def call(*args):
        out = fn(*(as_limbs(a) if isinstance(a, (tuple, list, np.ndarray)) else a for a in args))
        if isinstance(out, (bool, np.bool_)) or out is None:
            return bool(out) if out is not None else None
        return as_limbs(out)

    return call


def _nonzero(a, what: str):
    if all(int(limb) == 0 for limb in np.ravel(np.asarray(a, dtype=object))):
        raise ZeroDivisionError(f"{what}: inverse of 0")


def fq_inv(a) -> tuple:
    """1/a in Fq (Montgomery limbs in and out); ZeroDivisionError for 0."""
    from cuzk.arith import field

    _nonzero(a, "fq_inv")
    return as_limbs(field.fq_inv(as_limbs(a)))


def fr_inv(a) -> tuple:
    """1/a in Fr; ZeroDivisionError for 0."""
    from cuzk.arith import field

    _nonzero(a, "fr_inv")
    return as_limbs(field.fr_inv(as_limbs(a)))


def fq2_inv(a) -> tuple:
    """1/a in Fq2; ZeroDivisionError for 0."""
    from cuzk.arith import field

    _nonzero(a, "fq2_inv")
    return as_limbs(field.fq2_inv(as_limbs(a)))
