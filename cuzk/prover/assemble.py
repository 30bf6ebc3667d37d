"""Proof assembly: the Groth16 blinding step on a handful of curve points (CPU, Numba).

    πA  = α1 + A + r·δ1
    πB  = β2 + B2 + s·δ2            (and B1' = β1 + B1 + s·δ1 in G1)
    πC  = C + H + s·πA + r·B1' − (r·s)·δ1

A, B1, C, H come from the device MSMs, B2 from the G2 MSM; r, s are fresh random scalars.
Points in and out are affine (8,) / (16,) uint64 Montgomery limb arrays as in the zkey.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cuzk.bn254 import curve as C


@njit(cache=True, nogil=True)
def _g1(a):
    return C.g1_from_affine(((a[0], a[1], a[2], a[3]), (a[4], a[5], a[6], a[7])))


@njit(cache=True, nogil=True)
def _g2(a):
    return C.g2_from_affine((((a[0], a[1], a[2], a[3]), (a[4], a[5], a[6], a[7])),
                             ((a[8], a[9], a[10], a[11]), (a[12], a[13], a[14], a[15]))))


@njit(cache=True, nogil=True)
def _limbs(k):
    return (k[0], k[1], k[2], k[3])


@njit(cache=True, nogil=True)
def _store_g1(out, p):
    x, y = C.g1_to_affine(p)
    for i in range(4):
        out[i] = x[i]
        out[4 + i] = y[i]


@njit(cache=True, nogil=True)
def _store_g2(out, p):
    x, y = C.g2_to_affine(p)
    for i in range(4):
        out[i] = x[0][i]
        out[4 + i] = x[1][i]
        out[8 + i] = y[0][i]
        out[12 + i] = y[1][i]


@njit(cache=True, nogil=True)
def _assemble(alpha1, beta1, delta1, beta2, delta2, a, b1, c, h, b2, r, s, rs,
              out_a, out_b, out_c):
    pi_a = C.g1_add(C.g1_add(_g1(alpha1), _g1(a)), C.g1_mul(_g1(delta1), _limbs(r)))
    pi_b = C.g2_add(C.g2_add(_g2(beta2), _g2(b2)), C.g2_mul(_g2(delta2), _limbs(s)))
    b1s = C.g1_add(C.g1_add(_g1(beta1), _g1(b1)), C.g1_mul(_g1(delta1), _limbs(s)))
    pi_c = C.g1_add(_g1(c), _g1(h))
    pi_c = C.g1_add(pi_c, C.g1_mul(pi_a, _limbs(s)))
    pi_c = C.g1_add(pi_c, C.g1_mul(b1s, _limbs(r)))
    pi_c = C.g1_add(pi_c, C.g1_neg(C.g1_mul(_g1(delta1), _limbs(rs))))
    _store_g1(out_a, pi_a)
    _store_g2(out_b, pi_b)
    _store_g1(out_c, pi_c)


def assemble(zkey, a, b1, c, h, b2, r: int, s: int):
    """(πA, πB, πC) as affine limb arrays, from the MSM results and blinding scalars r, s."""
    from cuzk.bn254.constants import FR_MODULUS, int_to_limbs

    def k(x):
        return np.array(int_to_limbs(x % FR_MODULUS), dtype=np.uint64)

    out_a = np.zeros(8, np.uint64)
    out_b = np.zeros(16, np.uint64)
    out_c = np.zeros(8, np.uint64)
    _assemble(np.ascontiguousarray(zkey.alpha1), np.ascontiguousarray(zkey.beta1),
              np.ascontiguousarray(zkey.delta1), np.ascontiguousarray(zkey.beta2),
              np.ascontiguousarray(zkey.delta2), a, b1, c, h, b2, k(r), k(s), k(r * s),
              out_a, out_b, out_c)
    return out_a, out_b, out_c
