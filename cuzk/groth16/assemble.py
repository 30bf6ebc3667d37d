"""Proof assembly: the Groth16 blinding step, as four tiny MSMs on the CPU.

    πA  = α1 + A + r·δ1
    πB  = β2 + B2 + s·δ2            (and B1' = β1 + B1 + s·δ1 in G1)
    πC  = C + H + s·πA + r·B1' − (r·s)·δ1

A, B1, C, H come from the device MSMs, B2 from the G2 MSM; r, s are fresh random scalars.
Points in and out are affine (8,) / (16,) uint64 Montgomery limb arrays as in the zkey.

Each line is a multi-scalar multiplication of three to five points, so it runs on the CPU
MSM kernel the proof has loaded already, in the very build the big MSMs use (read-only
C-contiguous arrays): a separate compiled assembly kernel cost a `cuzk prove` process ~10 ms
of CPU to load from Numba's cache for ~1 ms of work. For so few points that kernel takes the
binary method (cuzk.kernels.msm_cpu.window_bits gives c = 1), 0.1-0.2 ms a line; its bucket
method paid inversions in every window, ~1.5 ms a line (measured: the four lines 6.7 ms
before, 1.9 ms after, 2^12).
"""

from __future__ import annotations

import numpy as np

from cuzk.arith import curves
from cuzk.arith.radix import int_to_limb_array


def _frozen(rows, dtype=np.uint64) -> np.ndarray:
    a = np.ascontiguousarray(np.stack(rows), dtype=dtype)
    a.flags.writeable = False
    return a


def _scalars(ks, curve: str) -> np.ndarray:
    """Plain-form (not Montgomery) (n, 4) limbs, as the MSM kernels take them."""
    r = curves.constants(curve).FR_MODULUS
    return _frozen([int_to_limb_array(k % r) for k in ks])


def _g1_sum(points, ks, curve: str) -> np.ndarray:
    from cuzk.kernels import msm_cpu

    return msm_cpu.msm_g1(_frozen(points), _scalars(ks, curve), curve=curve)


def _g2_sum(points, ks, curve: str) -> np.ndarray:
    from cuzk.kernels import msm_cpu

    return msm_cpu.msm_g2(_frozen(points), _scalars(ks, curve), curve=curve)


def assemble(zkey, a, b1, c, h, b2, r: int, s: int, curve: str = curves.DEFAULT):
    """(πA, πB, πC) as affine limb arrays, from the MSM results and blinding scalars r, s, on
    `curve` (cuzk.arith.curves's name: the key's)."""
    pi_a = _g1_sum([zkey.alpha1, a, zkey.delta1], [1, 1, r], curve)
    pi_b = _g2_sum([zkey.beta2, b2, zkey.delta2], [1, 1, s], curve)
    b1s = _g1_sum([zkey.beta1, b1, zkey.delta1], [1, 1, s], curve)
    pi_c = _g1_sum([c, h, pi_a, b1s, zkey.delta1], [1, 1, s, r, -(r * s)], curve)
    return pi_a, pi_b, pi_c
