"""The G2 subgroup test and the product of pairings on Python-int points, computed by the
native library's kernels: the Groth16 verifier's "native" backend
(cuzk.groth16.verifier.BACKENDS) and PLONK's pairing check (cuzk.plonk.stages.verify), so a
process that proves on the library (a `cuzk prove`, the daemon's devices) checks a proof in
a few milliseconds instead of ~15-20 ms of Python ints, without importing numba.

The kernels are the compiled verifier's (cuzk.arith.subgroup's g2_rows_in_subgroup,
cuzk.arith.pairing's pairing_product_is_one), looked up through ``cuzk.native.kernels``: the
library's where this process uses it, else Numba's build of the same source (the verdicts
are the same either way), and the public inputs' linear combination vk_x = IC_0 + sum s_i
IC_i by the MSM kernels (g1_combination, which PLONK's verifier sums its points with too,
cuzk.plonk.verifier.kernel_combination): on Python ints a public signal costs a scalar
multiplication of ~0.3-1 ms, ~30-90 ms for a circuit with 96 public limbs (the bench's
bigmul). The G1 subgroup test (BLS12-381) stays on Python ints, as the "python" backend does
it (cuzk.arith.pairing_int).
"""

from __future__ import annotations

import functools

import numpy as np


def g1_combination(points, scalars, curve):
    """sum_i k_i P_i for affine int points (None = infinity) of ``curve`` (a
    cuzk.formats.curve Curve) and ints 0 <= k_i, as an affine int point (None = infinity), by
    the MSM kernels (cuzk.kernels.msm_cpu: the library's where this process uses it, else
    Numba's build)."""
    from cuzk.arith.radix import ints_to_limbs
    from cuzk.formats.stored import g1_from_limbs, g1_to_limbs
    from cuzk.kernels.msm_cpu import msm_g1

    if not points:
        return None
    rows = np.stack([g1_to_limbs(p, curve) for p in points])
    ks = ints_to_limbs(int(k) % curve.r for k in scalars)
    return g1_from_limbs(msm_g1(rows, ks, curve=curve.arith), curve)


class NativeOps:
    """The backend's operations for one curve (cuzk.arith.curves name); any attribute it does
    not define is pairing_int's (g1_in_subgroup, ...)."""

    def __init__(self, curve: str):
        from cuzk.arith import pairing_int
        from cuzk.formats import curve as curves

        self.curve = curve
        self._int = pairing_int.for_curve(curve)
        self._stored = curves.by_name(curves.SNARKJS_NAMES[curve])  # its points' limbs

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._int, name)

    def _kernels(self, module: str):
        from cuzk import native

        return native.kernels(module, self.curve)

    def _g1_rows(self, points) -> np.ndarray:
        """G1 points (affine ints; None = infinity, all-zero limbs) as (n, 2, NQ) limbs."""
        from cuzk.formats.stored import g1_to_limbs

        nq = self._stored.q_limbs
        rows = [g1_to_limbs(p, self._stored) for p in points]
        return np.stack(rows).reshape(len(points), 2, nq)

    def _g2_rows(self, points) -> np.ndarray:
        """G2 points ((x.c0, x.c1), (y.c0, y.c1)) as (n, 2, 2, NQ) limbs (None: zeros)."""
        from cuzk.formats.stored import g2_to_limbs

        nq = self._stored.q_limbs
        rows = [g2_to_limbs(p, self._stored) for p in points]
        return np.stack(rows).reshape(len(points), 2, 2, nq)

    def g1_linear_combination(self, points, scalars):
        """sum_i k_i P_i for affine int points (None = infinity) and ints k_i >= 0, as an
        affine int point (None = infinity), by the MSM kernels (g1_combination)."""
        return g1_combination(points, scalars, self._stored)

    def g2_in_subgroup(self, p) -> bool:
        """Whether an affine int point on the twist (None = infinity) lies in G2."""
        if p is None:
            return True
        out = np.zeros(1, np.uint8)
        rows = self._g2_rows([p]).reshape(1, -1)
        self._kernels("cuzk.arith.subgroup").g2_rows_in_subgroup(rows, out)
        return bool(out[0])

    def pairing_product_is_one(self, pairs) -> bool:
        """Whether prod e(P_i, Q_i) = 1 for (G1, G2) pairs of affine ints (None = infinity),
        the points checked before (curve and subgroup)."""
        ps = self._g1_rows([p for p, _ in pairs])
        qs = self._g2_rows([q for _, q in pairs])
        return bool(self._kernels("cuzk.arith.pairing").pairing_product_is_one(ps, qs))


@functools.cache
def for_curve(curve: str) -> NativeOps:
    return NativeOps(curve)
