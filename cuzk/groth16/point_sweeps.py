"""The compiled sweeps of key validation (cuzk.groth16.validate), one source built per curve.

The sweep (first_bad) walks an (n, width) array of stored affine points (Montgomery limbs, NQ
per Fq element: 4 for BN254, 6 for BLS12-381) in parallel chunks of CHUNK rows and writes, per
chunk, the first row that fails the row test it is given, else -1: coordinates below q and on
the curve (G1) or the twist (G2), or (rows already on it) in the order-r subgroup. The point
arithmetic is the curve's build of cuzk.arith.curve and cuzk.arith.subgroup. Load a build with
``get_target("cpu").load("cuzk.groth16.point_sweeps", **build_params(curve))``; BN254's is this
module imported normally (see "Parametrized builds" in cuzk.arith.jit).
"""

import numpy as np
from numba import prange

from cuzk.arith.curves import DEFAULT, build_params, constants
from cuzk.arith.jit import building
from cuzk.groth16.row_tests import (  # noqa: F401 (the names the sweeps are called with)
    CHUNK,
    IN_SUBGROUP_G1,
    IN_SUBGROUP_G2,
    ON_CURVE_G1,
    ON_CURVE_G2,
)

T = building()
CURVE = T.param("curve", DEFAULT)
_C = constants(CURVE)
G = T.load("cuzk.arith.curve", **build_params(CURVE))
S = T.load("cuzk.arith.subgroup", **build_params(CURVE))

g1_load_affine, g1_is_on_curve_affine = G.g1_load_affine, G.g1_is_on_curve_affine
g2_load_affine, g2_is_on_curve_affine = G.g2_load_affine, G.g2_is_on_curve_affine
g1_in_subgroup, g2_in_subgroup = S.g1_in_subgroup, S.g2_in_subgroup

NQ = _C.FQ_LIMBS
Q = _C.FQ_MODULUS
G1_WIDTH, G2_WIDTH = 2 * NQ, 4 * NQ  # uint64 limbs of a stored G1 / G2 point
Q_LIMBS = np.array([(Q >> (64 * k)) & (2**64 - 1) for k in range(NQ)], dtype=np.uint64)


@T.njit()
def below_q(pts, i, col):
    """The Fq element in limbs col..col+NQ-1 of row i is below q (limbs little-endian)."""
    for k in range(NQ - 1, -1, -1):
        v = pts[i, col + k]
        if v < Q_LIMBS[k]:
            return True
        if v > Q_LIMBS[k]:
            return False
    return False  # equal to q


@T.njit()
def g1_row_ok(pts, i):
    """Row i: coordinates below q, on the curve (the all-zero infinity allowed)."""
    return (
        below_q(pts, i, 0) and below_q(pts, i, NQ) and g1_is_on_curve_affine(g1_load_affine(pts, i))
    )


@T.njit()
def g2_row_ok(pts, i):
    """Row i: the four coordinates below q, on the twist (the all-zero infinity allowed)."""
    return (
        below_q(pts, i, 0)
        and below_q(pts, i, NQ)
        and below_q(pts, i, 2 * NQ)
        and below_q(pts, i, 3 * NQ)
        and g2_is_on_curve_affine(g2_load_affine(pts, i))
    )


@T.njit()
def g1_row_in_subgroup(pts, i):
    """Row i (on the curve) lies in G1."""
    return g1_in_subgroup(g1_load_affine(pts, i))


@T.njit()
def g2_row_in_subgroup(pts, i):
    """Row i (on the twist) lies in G2."""
    return g2_in_subgroup(g2_load_affine(pts, i))


@T.njit()
def row_passes(pts, i, test):
    """Row i passes row test ``test`` (one of the four above)."""
    if test == ON_CURVE_G1:
        return g1_row_ok(pts, i)
    if test == ON_CURVE_G2:
        return g2_row_ok(pts, i)
    if test == IN_SUBGROUP_G1:
        return g1_row_in_subgroup(pts, i)
    return g2_row_in_subgroup(pts, i)


@T.njit(parallel=True)
def first_bad(pts, first, test):
    """first[c] = the first row of chunk c that fails row test ``test``, else -1."""
    n = pts.shape[0]
    for c in prange(first.shape[0]):
        first[c] = -1
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            if not row_passes(pts, i, test):
                first[c] = i
                break
