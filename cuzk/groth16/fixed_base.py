"""Fixed-base scalar multiplication k·G for many scalars k and one generator G, written once
for both groups and both curves: built per group and curve (CPU target), ``get_target("cpu").load(
"cuzk.groth16.fixed_base", group="g1")``, adding ``curve="bls12_381"`` for BLS12-381
(cuzk.arith.curves.build_params). Used by the development setup (cuzk.groth16.setup).

The table holds d·2^(8w)·G for every window w < 32 and byte d < 256 (Jacobian rows, row
w·256 + d), so k·G is at most 32 additions: one per nonzero byte of k. Scalars are plain Fr
elements on 4 limbs (both curves' r are below 2^256); points are the group build's rows
(G1 affine 2·NQ limbs, G2 4·NQ: 8 and 16 on BN254, 12 and 24 on BLS12-381).
"""

import numpy as np
from numba import prange

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building

T = building()
G = T.load("cuzk.arith.group", group=T.param("group"), **build_params(T.param("curve", DEFAULT)))
if G.SCALAR_LIMBS != 4:
    raise NotImplementedError("fixed-base tables take 4-limb scalars")

WINDOWS = 32  # 32 windows of 8 bits cover 256-bit scalars
WINDOW_BITS = 8
WINDOW_SIZE = 1 << WINDOW_BITS
JACOBIAN_WIDTH = G.JACOBIAN_WIDTH
AFFINE_WIDTH = G.AFFINE_WIDTH


@T.njit()
def table(g):
    """Row w·256 + d = d·2^(8w)·g for the affine generator g (Jacobian rows)."""
    t = np.zeros((WINDOWS * WINDOW_SIZE, JACOBIAN_WIDTH), dtype=np.uint64)
    base = G.from_affine(g)
    for w in range(WINDOWS):
        acc = G.inf()
        for d in range(WINDOW_SIZE):
            G.store(t, w * WINDOW_SIZE + d, acc)
            acc = G.add(acc, base)
        base = acc  # 256·base
    return t


@T.njit(parallel=True)
def multiply(t, k, out):
    """out[i] = affine(k[i]·g) for plain scalars k (n, 4) and g's table t; zeros for
    infinity."""
    for i in prange(k.shape[0]):
        acc = G.inf()
        for w in range(WINDOWS):
            d = (k[i, w // 8] >> np.uint64(8 * (w % 8))) & np.uint64(0xFF)
            if d != 0:
                acc = G.add(acc, G.load(t, w * WINDOW_SIZE + np.int64(d)))
        G.store_affine(out, i, G.to_affine(acc))
