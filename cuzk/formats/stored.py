"""How .zkey and .wtns store field elements and points, as Python ints.

The .zkey stores curve coordinates in Montgomery form (x·R mod q, R = 2^(64 x limbs): 2^256
on BN254, 2^384 for BLS12-381's Fq); the .wtns
stores scalars in plain form; the .zkey's coefficients are stored as coef·R² mod r (see
zkey.py). These helpers are for headers, small circuits and tests: Python ints, not kernels.
Limb splitting is cuzk.arith.radix; the primes are cuzk.arith.constants's.

Every function takes an optional `curve` (a cuzk.formats.curve.Curve or its name, "bn128"
or "bls12381"); BN254 when not given.
"""

from __future__ import annotations

import numpy as np

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS, MONT_R
from cuzk.arith.radix import int_to_limb_array, limbs_to_int
from cuzk.formats import curve as curves

# The primes under the names cuzk.formats has always exported (defined in cuzk.arith.constants).
BN254_Q, BN254_R = FQ_MODULUS, FR_MODULUS
R_INV_Q = pow(MONT_R, -1, FQ_MODULUS)  # R^-1 mod q
R_INV_R = pow(MONT_R, -1, FR_MODULUS)  # R^-1 mod r


def _curve(curve):
    return curves.BN254 if curve is None else curves.by_name(curve)


def from_mont_q(limbs, curve=None) -> int:
    """A Montgomery-form F_q element (the curve's q-limbs) as its plain value xR·R^-1 mod q."""
    c = _curve(curve)
    r_inv = R_INV_Q if c is curves.BN254 else pow(1 << (64 * c.q_limbs), -1, c.q)
    return limbs_to_int(limbs) * r_inv % c.q


def to_mont_q(x: int, curve=None) -> np.ndarray:
    """Plain x in F_q as the curve's q-limbs in Montgomery form (x·R mod q)."""
    c = _curve(curve)
    return int_to_limb_array((x << (64 * c.q_limbs)) % c.q, c.q_limbs)


def from_mont_r(limbs, curve=None) -> int:
    """A Montgomery-form F_r element (4 limbs) as its plain value."""
    c = _curve(curve)
    return limbs_to_int(limbs) * pow(MONT_R, -1, c.r) % c.r


def to_mont_r(x: int, curve=None) -> np.ndarray:
    """Plain x in F_r as 4 Montgomery-form limbs (x·R mod r)."""
    c = _curve(curve)
    return int_to_limb_array(x * MONT_R % c.r)


def zkey_coef_to_int(limbs, curve=None) -> int:
    """A .zkey coefficient (stored as coef·R² mod r) as its plain value coef."""
    c = _curve(curve)
    r_inv = pow(MONT_R, -1, c.r)
    return limbs_to_int(limbs) * r_inv * r_inv % c.r


def int_to_zkey_coef(coef: int, curve=None) -> np.ndarray:
    """Plain coef in F_r as it is stored in a .zkey coefficient entry (coef·R² mod r)."""
    c = _curve(curve)
    return int_to_limb_array(coef * MONT_R * MONT_R % c.r)


# Points. G1 affine = (x, y) ints; G2 affine = ((x.c0, x.c1), (y.c0, y.c1)); None = infinity.
# Stored G1 = x||y, G2 = x.c0||x.c1||y.c0||y.c1, each coordinate the curve's q-limbs (4 on
# BN254: 8 and 16 limbs; 6 on BLS12-381: 12 and 24), Montgomery form; the point at infinity
# is stored as all zeros.


def _coords(limbs, curve, count: int):
    c = _curve(curve)
    a = np.asarray(limbs, dtype=np.uint64)
    if a.shape != (count * c.q_limbs,):
        raise ValueError(f"a stored point on {c.name} has {count * c.q_limbs} limbs, not {a.shape}")
    if not a.any():
        return None
    n = c.q_limbs
    return [from_mont_q(a[n * i : n * i + n], c) for i in range(count)]


def g1_from_limbs(limbs, curve=None) -> tuple[int, int] | None:
    """A stored G1 point (Montgomery limbs x||y) as affine (x, y) ints, None for infinity."""
    xy = _coords(limbs, curve, 2)
    return None if xy is None else (xy[0], xy[1])


def g1_to_limbs(p: tuple[int, int] | None, curve=None) -> np.ndarray:
    """Affine (x, y) ints (or None) as a stored G1 point, Montgomery limbs x||y."""
    c = _curve(curve)
    if p is None:
        return np.zeros(c.g1_limbs, dtype=np.uint64)
    return np.concatenate([to_mont_q(p[0], c), to_mont_q(p[1], c)])


def g2_from_limbs(limbs, curve=None):
    """A stored G2 point (Montgomery limbs) as ((x.c0, x.c1), (y.c0, y.c1)), None = infinity."""
    v = _coords(limbs, curve, 4)
    return None if v is None else ((v[0], v[1]), (v[2], v[3]))


def g2_to_limbs(p, curve=None) -> np.ndarray:
    """((x.c0, x.c1), (y.c0, y.c1)) ints (or None) as a stored G2 point, Montgomery limbs."""
    c = _curve(curve)
    if p is None:
        return np.zeros(c.g2_limbs, dtype=np.uint64)
    (x0, x1), (y0, y1) = p
    return np.concatenate([to_mont_q(v, c) for v in (x0, x1, y0, y1)])


def g1_array_to_points(arr, curve=None) -> list:
    """An (n, G1 limbs) stored G1 array as a list of affine points (None for infinity)."""
    return [g1_from_limbs(row, curve) for row in np.asarray(arr)]


def g2_array_to_points(arr, curve=None) -> list:
    """An (n, G2 limbs) stored G2 array as a list of affine points (None for infinity)."""
    return [g2_from_limbs(row, curve) for row in np.asarray(arr)]
