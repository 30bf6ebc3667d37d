"""The compiled (Numba) half of the Groth16 verifier: the G2 subgroup check and the 4-pair
product on Montgomery arrays. A long-lived process (the daemon, `cuzk prove`'s self-check)
verifies with it in about 2 ms; a one-shot `cuzk verify` uses cuzk.arith.pairing_int instead
and loads none of this (see cuzk.groth16.verifier)."""

from __future__ import annotations

import numpy as np
from numba import njit

from cuzk.arith.constants import FR_MODULUS
from cuzk.arith.curve import (
    g1_add,
    g1_from_affine,
    g1_mul,
    g1_to_affine,
    g2_from_affine,
    g2_is_inf,
    g2_mul,
)
from cuzk.arith.pairing import g1_array, g2_array, pairing_product_is_one
from cuzk.arith.radix import int_to_limb_tuple

R_PLAIN = int_to_limb_tuple(FR_MODULUS)


@njit(cache=True, nogil=True)
def g2_in_subgroup_array(q):
    """[r]Q = O for an affine G2 point given as a (2, 2, 4) Montgomery array on the twist
    (the twist's group has order r * c2 with c2 > 1, so this is a real check)."""
    x = (
        (q[0, 0, 0], q[0, 0, 1], q[0, 0, 2], q[0, 0, 3]),
        (q[0, 1, 0], q[0, 1, 1], q[0, 1, 2], q[0, 1, 3]),
    )
    y = (
        (q[1, 0, 0], q[1, 0, 1], q[1, 0, 2], q[1, 0, 3]),
        (q[1, 1, 0], q[1, 1, 1], q[1, 1, 2], q[1, 1, 3]),
    )
    Qj = g2_from_affine((x, y))
    return g2_is_inf(g2_mul(Qj, R_PLAIN))


@njit(cache=True, nogil=True)
def groth16_product_is_one(neg_a, b, c, alpha1, vk_g2, ic, scalars):
    """e(-A, B) e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2) == 1 with
    vk_x = IC_0 + sum_i s_i IC_i. G1 inputs (2, 4), ic (n+1, 2, 4): affine Montgomery limbs;
    b (2, 2, 4); vk_g2 (3, 2, 2, 4) = beta2, gamma2, delta2; scalars (n, 4) plain limbs."""
    acc = g1_from_affine(
        (
            (ic[0, 0, 0], ic[0, 0, 1], ic[0, 0, 2], ic[0, 0, 3]),
            (ic[0, 1, 0], ic[0, 1, 1], ic[0, 1, 2], ic[0, 1, 3]),
        )
    )
    for i in range(scalars.shape[0]):
        p = g1_from_affine(
            (
                (ic[i + 1, 0, 0], ic[i + 1, 0, 1], ic[i + 1, 0, 2], ic[i + 1, 0, 3]),
                (ic[i + 1, 1, 0], ic[i + 1, 1, 1], ic[i + 1, 1, 2], ic[i + 1, 1, 3]),
            )
        )
        k = (scalars[i, 0], scalars[i, 1], scalars[i, 2], scalars[i, 3])
        acc = g1_add(acc, g1_mul(p, k))
    vk_x = g1_to_affine(acc)  # infinity becomes (0, 0), which the Miller loop skips
    ps = np.empty((4, 2, 4), dtype=np.uint64)
    qs = np.empty((4, 2, 2, 4), dtype=np.uint64)
    ps[0] = neg_a
    qs[0] = b
    ps[1] = alpha1
    qs[1] = vk_g2[0]
    for j in range(2):
        for k in range(4):
            ps[2, j, k] = vk_x[j][k]
    qs[2] = vk_g2[1]
    ps[3] = c
    qs[3] = vk_g2[2]
    return pairing_product_is_one(ps, qs)


def g2_in_subgroup(p) -> bool:
    """Whether an affine int G2 point (None = infinity) lies in the order-r subgroup."""
    return p is None or bool(g2_in_subgroup_array(g2_array([p])[0]))


class KeyArrays:
    """A verifying key's points as the Montgomery arrays groth16_product_is_one reads."""

    def __init__(self, vk):
        self.alpha1 = g1_array([vk.alpha1])[0]
        self.g2 = g2_array([vk.beta2, vk.gamma2, vk.delta2])
        self.ic = g1_array(vk.ic)


def product_is_one(arrays: KeyArrays, neg_a, b, c, signals) -> bool:
    """The Groth16 product for a key's arrays, affine int proof points (None = infinity) and
    the public signals as ints below r."""
    scalars = np.frombuffer(
        b"".join(s.to_bytes(32, "little") for s in signals), dtype=np.uint64
    ).reshape(len(signals), 4)
    return bool(
        groth16_product_is_one(
            g1_array([neg_a])[0],
            g2_array([b])[0],
            g1_array([c])[0],
            arrays.alpha1,
            arrays.g2,
            arrays.ic,
            scalars,
        )
    )
