"""Fr vectors for the PLONK prover: elementwise arithmetic, transforms and commitments on the
shared kernels, for one curve and one target.

A vector is a C-contiguous (m, 4) uint64 array of Montgomery-form elements (R = 2^256), as
the NTT kernels take them. `FrOps` puts together what the prover needs from the public
kernel APIs: elementwise operations from cuzk.arith.batch (one build per target and curve),
NTTs and the coset step from cuzk.kernels.ntt_cpu, G1 MSMs from cuzk.kernels.msm_cpu, and
conversions between vectors and Python ints for the prover's sequential steps. Only the CPU
target exists here; a CUDA `FrOps` would put the same methods on cuzk.arith.batch("cuda")
and the CUDA NTT and MSM, and the prover (cuzk.plonk.prover) would not change.
"""

from __future__ import annotations

import numpy as np

from cuzk.arith.radix import ints_to_limbs, limbs_to_ints

MONT_R = 1 << 256  # Fr is 4 limbs on every curve cuzk knows


class FrOps:
    """Fr vectors of `curve` (a cuzk.formats.curve Curve) on the CPU kernels."""

    target = "cpu"

    def __init__(self, curve):
        from cuzk.arith import batch
        from cuzk.arith.curves import constants

        self.curve = curve
        self.arith = curve.arith
        self.r = curve.r
        self.roots = constants(curve.arith).fr_roots_of_unity()
        self.batch = batch("cpu", curve.arith)
        self._r_inv = pow(MONT_R, -1, self.r)

    # --- conversions ------------------------------------------------------------------------
    def mont(self, x: int) -> np.ndarray:
        """One element (4,) in Montgomery form."""
        return ints_to_limbs([x % self.r * MONT_R % self.r])[0]

    def full(self, x: int, m: int) -> np.ndarray:
        """The vector of m copies of x."""
        return np.tile(self.mont(x), (m, 1))

    def from_ints(self, xs) -> np.ndarray:
        r = self.r
        return ints_to_limbs([x % r * MONT_R % r for x in xs])

    def to_ints(self, a) -> list[int]:
        r, k = self.r, self._r_inv
        return [x * k % r for x in limbs_to_ints(a)]

    def from_plain(self, a) -> np.ndarray:
        """Plain-form limbs (a witness) to Montgomery."""
        return self.batch.fr_to_mont(a)

    def to_plain(self, a) -> np.ndarray:
        return self.batch.fr_from_mont(a)

    # --- elementwise ------------------------------------------------------------------------
    def add(self, a, b):
        return self.batch.fr_add(a, b)

    def sub(self, a, b):
        return self.batch.fr_sub(a, b)

    def mul(self, a, b):
        return self.batch.fr_mul(a, b)

    def inv(self, a):
        return self.batch.fr_inv(a)

    def scale(self, a, k: int):
        return self.mul(a, self.full(k, len(a)))

    def add_scalar(self, a, k: int):
        return self.add(a, self.full(k, len(a)))

    def powers(self, base: int, m: int) -> np.ndarray:
        """base^0 .. base^(m-1)."""
        from cuzk.kernels.ntt_cpu import powers_table

        return powers_table(base % self.r, m, curve=self.arith)

    def evaluate(self, coefficients, x: int) -> int:
        """p(x) for the polynomial with these coefficients: the terms p_i x^i pointwise
        (powers of x from the parallel table), then summed pairwise, log2(m) passes."""
        terms = self.mul(coefficients, self.powers(x, len(coefficients)))
        while len(terms) > 1:
            if len(terms) % 2:
                terms = np.concatenate([terms, np.zeros((1, 4), np.uint64)])
            terms = self.add(terms[0::2], terms[1::2])
        return self.to_ints(terms)[0] if len(terms) else 0

    # --- transforms -------------------------------------------------------------------------
    def intt(self, evaluations) -> np.ndarray:
        """Coefficients of the polynomial with these values on the domain of their size."""
        from cuzk.kernels.ntt_cpu import ntt

        return ntt(
            np.array(evaluations, dtype=np.uint64, order="C"), inverse=True, curve=self.arith
        )

    def coset_evaluations(self, coefficients, size: int) -> np.ndarray:
        """Values at g w^j, j < size, of the polynomial with these (at most size)
        coefficients: w = w[log2 size], the coset g = w[log2 size + 1] (the kernels' coset
        step, snarkjs's roots)."""
        from cuzk.kernels.ntt_cpu import coset_shift, ntt

        log = size.bit_length() - 1
        x = np.zeros((size, 4), np.uint64)
        x[: len(coefficients)] = coefficients
        coset_shift(x, log, curve=self.arith)
        return ntt(x, curve=self.arith)

    def coset_coefficients(self, evaluations) -> np.ndarray:
        """The inverse of coset_evaluations (consumes `evaluations`)."""
        from cuzk.kernels.ntt_cpu import coset_shift, ntt

        log = len(evaluations).bit_length() - 1
        ntt(evaluations, inverse=True, curve=self.arith)
        return coset_shift(evaluations, log, inverse=True, curve=self.arith)

    def coset_generator(self, size: int) -> int:
        return self.roots[size.bit_length()]

    # --- commitments ------------------------------------------------------------------------
    def commit(self, coefficients, ptau):
        """[p(tau)]_1 = sum_i p_i [tau^i]_1 as affine ints (None for infinity)."""
        from cuzk.formats.stored import g1_from_limbs
        from cuzk.kernels.msm_cpu import msm_g1

        m = len(coefficients)
        if m > len(ptau):
            raise ValueError(f"a polynomial of {m} coefficients needs {m} powers of tau")
        row = msm_g1(ptau[:m], self.to_plain(coefficients), curve=self.arith)
        return g1_from_limbs(row, self.curve)
