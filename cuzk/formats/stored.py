"""How .zkey and .wtns store field elements and points, as Python ints.

The .zkey stores curve coordinates in Montgomery form (x·R mod q, R = 2^256); the .wtns
stores scalars in plain form; the .zkey's coefficients are stored as coef·R² mod r (see
zkey.py). These helpers are for headers, small circuits and tests: Python ints, not kernels.
Limb splitting is cuzk.arith.radix; the primes are cuzk.arith.constants's.
"""

from __future__ import annotations

import numpy as np

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS, MONT_R
from cuzk.arith.radix import int_to_limb_array, limbs_to_int

# The primes under the names cuzk.formats has always exported (defined in cuzk.arith.constants).
BN254_Q, BN254_R = FQ_MODULUS, FR_MODULUS
R_INV_Q = pow(MONT_R, -1, FQ_MODULUS)  # R^-1 mod q
R_INV_R = pow(MONT_R, -1, FR_MODULUS)  # R^-1 mod r


def from_mont_q(limbs) -> int:
    """A Montgomery-form F_q element (4 limbs) as its plain value x = xR·R^-1 mod q."""
    return limbs_to_int(limbs) * R_INV_Q % FQ_MODULUS


def to_mont_q(x: int) -> np.ndarray:
    """Plain x in F_q as 4 Montgomery-form limbs (x·R mod q)."""
    return int_to_limb_array(x * MONT_R % FQ_MODULUS)


def from_mont_r(limbs) -> int:
    """A Montgomery-form F_r element (4 limbs) as its plain value."""
    return limbs_to_int(limbs) * R_INV_R % FR_MODULUS


def to_mont_r(x: int) -> np.ndarray:
    """Plain x in F_r as 4 Montgomery-form limbs (x·R mod r)."""
    return int_to_limb_array(x * MONT_R % FR_MODULUS)


def zkey_coef_to_int(limbs) -> int:
    """A .zkey coefficient (stored as coef·R² mod r) as its plain value coef."""
    return limbs_to_int(limbs) * R_INV_R * R_INV_R % FR_MODULUS


def int_to_zkey_coef(coef: int) -> np.ndarray:
    """Plain coef in F_r as it is stored in a .zkey coefficient entry (coef·R² mod r)."""
    return int_to_limb_array(coef * MONT_R * MONT_R % FR_MODULUS)


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
