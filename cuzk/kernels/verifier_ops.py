"""The G2 subgroup test and the product of pairings on Python-int points, computed by the
native library's kernels: the Groth16 verifier's "native" backend
(cuzk.groth16.verifier.BACKENDS) and PLONK's pairing check (cuzk.plonk.stages.verify), so a
process that proves on the library (a `cuzk prove`, the daemon's devices) checks a proof in
a few milliseconds instead of ~15-20 ms of Python ints, without importing numba.

The kernels are the compiled verifier's (cuzk.arith.subgroup's g2_rows_in_subgroup,
cuzk.arith.pairing's pairing_product_is_one), looked up through ``cuzk.native.kernels``: the
library's where this process uses it, else Numba's build of the same source (the verdicts are
the same either way), and the public inputs' linear combination vk_x = IC_0 + sum s_i IC_i
by the MSM kernels (cuzk.kernels.msm_cpu, the library's where it serves): on Python ints a
public signal costs a scalar multiplication of ~0.3-1 ms, ~30-90 ms for a circuit with 96
public limbs (the bench's bigmul). The G1 subgroup test (BLS12-381) stays on Python ints, as
the "python" backend does it (cuzk.arith.pairing_int).
"""

from __future__ import annotations

import functools

import numpy as np


class NativeOps:
    """The backend's operations for one curve (cuzk.arith.curves name); any attribute it does
    not define is pairing_int's (g1_in_subgroup, g1_linear_combination, ...)."""

    def __init__(self, curve: str):
        from cuzk import native
        from cuzk.arith import pairing_int
        from cuzk.arith.curves import constants

        c = constants(curve)
        self.curve = curve
        self._int = pairing_int.for_curve(curve)
        self._q, self._mont_r, self._nq = c.FQ_MODULUS, c.FQ_MONT_R, c.FQ_LIMBS
        self._r = c.FR_MODULUS
        self._mont_r_inv = pow(c.FQ_MONT_R, -1, c.FQ_MODULUS)
        self._pairing = native.kernels("cuzk.arith.pairing", curve)
        self._subgroup = native.kernels("cuzk.arith.subgroup", curve)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._int, name)

    def _fq(self, x: int) -> bytes:
        """Plain x < q as the little-endian limbs of its Montgomery form x R mod q."""
        return (x * self._mont_r % self._q).to_bytes(8 * self._nq, "little")

    def _g1_rows(self, points) -> np.ndarray:
        """G1 points (affine ints; None = infinity, the rows' (0, 0)) as (n, 2, NQ) limbs."""
        zero = bytes(16 * self._nq)
        data = b"".join(zero if p is None else self._fq(p[0]) + self._fq(p[1]) for p in points)
        return np.frombuffer(data, np.uint64).reshape(len(points), 2, self._nq).copy()

    def _g2_rows(self, points) -> np.ndarray:
        """G2 points ((x.c0, x.c1), (y.c0, y.c1)) as (n, 2, 2, NQ) limbs (None: zeros)."""
        zero = bytes(32 * self._nq)
        data = b"".join(
            zero if p is None else b"".join(self._fq(v) for xy in p for v in xy) for p in points
        )
        return np.frombuffer(data, np.uint64).reshape(len(points), 2, 2, self._nq).copy()

    def g1_linear_combination(self, points, scalars):
        """sum_i k_i P_i for affine int points (None = infinity) and ints k_i >= 0, as an
        affine int point (None = infinity), by the MSM kernels."""
        from cuzk.kernels.msm_cpu import msm_g1

        if not points:
            return None
        nq = self._nq
        rows = self._g1_rows(points).reshape(len(points), 2 * nq)
        raw = b"".join((int(k) % self._r).to_bytes(32, "little") for k in scalars)
        ks = np.frombuffer(raw, np.uint64).reshape(len(points), 4).copy()
        out = msm_g1(rows, ks, curve=self.curve)
        if not out.any():
            return None
        x, y = (int.from_bytes(out[i * nq : (i + 1) * nq].tobytes(), "little") for i in (0, 1))
        return (x * self._mont_r_inv % self._q, y * self._mont_r_inv % self._q)

    def g2_in_subgroup(self, p) -> bool:
        """Whether an affine int point on the twist (None = infinity) lies in G2."""
        if p is None:
            return True
        out = np.zeros(1, np.uint8)
        self._subgroup.g2_rows_in_subgroup(self._g2_rows([p]).reshape(1, 4 * self._nq), out)
        return bool(out[0])

    def pairing_product_is_one(self, pairs) -> bool:
        """Whether prod e(P_i, Q_i) = 1 for (G1, G2) pairs of affine ints (None = infinity),
        the points checked before (curve and subgroup)."""
        ps = self._g1_rows([p for p, _ in pairs])
        qs = self._g2_rows([q for _, q in pairs])
        return bool(self._pairing.pairing_product_is_one(ps, qs))


@functools.cache
def for_curve(curve: str) -> NativeOps:
    return NativeOps(curve)
