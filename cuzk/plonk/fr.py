"""Fr vectors for the PLONK prover: elementwise arithmetic, transforms and commitments on the
shared kernels, for one curve and one target.

A vector is a C-contiguous (m, 4) uint64 array of Montgomery-form elements (R = 2^256), as
the NTT kernels take them. `FrOps` puts together what the prover needs from the public
kernel APIs: elementwise operations from cuzk.arith.batch (one build per target and curve),
NTTs and the coset step from cuzk.kernels.ntt_cpu, G1 MSMs from cuzk.kernels.msm_cpu, the
prover's own steps (additions, grand product, quotient, Horner, division by X - x, scaled
sums) from cuzk.kernels.plonk_cpu_kernels, and conversions to and from Python ints. Only the
CPU target exists here; a CUDA `FrOps` would put the same methods on the CUDA builds of the
same sources (cuzk.kernels.plonk's device functions are shared), and the prover
(cuzk.plonk.prover) would not change. The kernels come through cuzk.native.kernels: the
native library's where a command enabled it, else Numba's builds.
"""

from __future__ import annotations

import numpy as np

from cuzk.arith.radix import ints_to_limbs, limbs_to_ints

MONT_R = 1 << 256  # Fr is 4 limbs on every curve cuzk knows


def _c(a) -> np.ndarray:
    """a as a C-contiguous (m, 4) uint64 array (key views are copied only when strided)."""
    return np.ascontiguousarray(a, dtype=np.uint64)


class FrOps:
    """Fr vectors of `curve` (a cuzk.formats.curve Curve) on the CPU kernels."""

    target = "cpu"

    def __init__(self, curve):
        from cuzk.arith.curves import constants

        self.curve = curve
        self.arith = curve.arith
        self.r = curve.r
        self.roots = constants(curve.arith).fr_roots_of_unity()
        self._r_inv = pow(MONT_R, -1, self.r)

    @property
    def batch(self):
        """cuzk.arith.batch's CPU build for this curve (add, sub, mul, inv; built on first
        use: the prover itself runs on `kernels`)."""
        from cuzk.arith import batch

        return batch("cpu", self.arith)

    # --- conversions ------------------------------------------------------------------------
    @property
    def kernels(self):
        """cuzk.kernels.plonk_cpu_kernels for this curve (native or Numba's)."""
        from cuzk.native import kernels

        return kernels("cuzk.kernels.plonk_cpu_kernels", self.arith)

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
        """Plain-form limbs (a witness) to Montgomery (a new array)."""
        out = np.array(a, dtype=np.uint64, order="C")
        self.kernels._to_mont(out, 0)
        return out

    def to_plain(self, a) -> np.ndarray:
        out = np.array(a, dtype=np.uint64, order="C")
        self.kernels._to_mont(out, 1)
        return out

    def shift(self, a, delta: int) -> np.ndarray:
        """a + delta for a few elements (Python ints: no kernel build for a handful)."""
        return self.from_ints([x + delta for x in self.to_ints(a)])

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
        """a k (a new array)."""
        out = np.array(a, dtype=np.uint64, order="C")
        self.kernels._scale(out, self.mont(k)[None])
        return out

    def add_scalar(self, a, k: int):
        return self.add(a, self.full(k, len(a)))

    def powers(self, base: int, m: int) -> np.ndarray:
        """base^0 .. base^(m-1)."""
        from cuzk.kernels.ntt_cpu import powers_table

        return powers_table(base % self.r, m, curve=self.arith)

    def evaluate(self, coefficients, x: int) -> int:
        """p(x) for the polynomial with these coefficients (Horner, one kernel)."""
        if len(coefficients) == 0:
            return 0
        out = np.zeros((1, 4), np.uint64)
        self.kernels._horner(_c(coefficients), self.mont(x)[None], out)
        return self.to_ints(out)[0]

    def divide_linear(self, coefficients, x: int):
        """(q, p(x)): the quotient of p(X) by X - x (synthetic division, one kernel)."""
        q = np.zeros((len(coefficients) - 1, 4), np.uint64)
        rem = np.zeros((1, 4), np.uint64)
        self.kernels._divide_linear(q, _c(coefficients), self.mont(x)[None], rem)
        return q, self.to_ints(rem)[0]

    def axpy(self, acc, x, k: int) -> None:
        """acc[:len(x)] += k x, in place."""
        self.kernels._axpy(acc, _c(x), self.mont(k)[None])

    def constants(self, **values) -> np.ndarray:
        """The constants array of cuzk.kernels.plonk (rows BETA, GAMMA, ... in Montgomery
        form) from plain ints: beta, gamma, k1, k2, alpha, zh_inv (four values)."""
        from cuzk.kernels import plonk_rows as P

        r = self.r
        rows = [0] * P.CONSTANTS
        beta = values.get("beta", 0)
        rows[P.BETA], rows[P.GAMMA] = beta, values.get("gamma", 0)
        rows[P.BETA_K1] = beta * values.get("k1", 0) % r
        rows[P.BETA_K2] = beta * values.get("k2", 0) % r
        alpha = values.get("alpha", 0)
        rows[P.ALPHA], rows[P.ALPHA2], rows[P.ONE] = alpha, alpha * alpha % r, 1
        for j, v in enumerate(values.get("zh_inv", [0] * 4)):
            rows[P.ZH_INV + j] = v
        return self.from_ints(rows)

    def additions(self, w, signal_a, signal_b, factor_a, factor_b, first: int) -> None:
        """w[first + i] = factor_a[i] w[signal_a[i]] + factor_b[i] w[signal_b[i]] in order
        (Montgomery form throughout), in place."""
        self.kernels._additions(
            w,
            np.ascontiguousarray(signal_a, np.int64),
            np.ascontiguousarray(signal_b, np.int64),
            _c(factor_a),
            _c(factor_b),
            first,
        )

    def gate_residuals(self, a, b, c, qm, ql, qr, qo, qc, pi) -> np.ndarray:
        """The indices of the gates qM a b + qL a + qR b + qO c + qC + PI != 0."""
        bad = np.zeros(len(a), np.uint8)
        self.kernels._gate_residuals(bad, a, b, c, *(_c(v) for v in (qm, ql, qr, qo, qc)), pi)
        return np.flatnonzero(bad)

    def grand_product(self, a, b, c, x, s1, s2, s3, k):
        """(z, last): the permutation product on the domain (z[0] = 1, z[i+1] = z[i] num_i /
        den_i with the identity and sigma factors at x[i]) and z[n-1] num / den, 1 when the
        copy constraints hold; None for z when a denominator is zero."""
        n = len(a)
        num = np.empty((n, 4), np.uint64)
        den = np.empty((n, 4), np.uint64)
        kern = self.kernels
        kern._copy_factors(num, den, a, b, c, x, _c(s1), _c(s2), _c(s3), k)
        z = np.empty((n, 4), np.uint64)
        last = np.zeros((1, 4), np.uint64)
        kern._grand_product(z, num, den, self.mont(1)[None], last)
        if not last.any():
            return None, 0
        return z, self.to_ints(last)[0]

    def quotient(self, out, a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k):
        """The quotient's values on the coset of 4n into out (which may be a)."""
        self.kernels._quotient(out, a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k)
        return out

    # --- transforms -------------------------------------------------------------------------
    def intt(self, evaluations) -> np.ndarray:
        """Coefficients of the polynomial with these values on the domain of their size."""
        from cuzk.kernels.ntt_cpu import ntt

        return ntt(
            np.array(evaluations, dtype=np.uint64, order="C"), inverse=True, curve=self.arith
        )

    def evaluations(self, coefficients, size: int) -> np.ndarray:
        """Values at w^j, j < size, of the polynomial with these (at most size) coefficients:
        w = w[log2 size] (snarkjs's roots)."""
        from cuzk.kernels.ntt_cpu import ntt

        x = np.zeros((size, 4), np.uint64)
        x[: len(coefficients)] = coefficients
        return ntt(x, curve=self.arith)

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
    def commit(self, coefficients, ptau, table=None):
        """[p(tau)]_1 = sum_i p_i [tau^i]_1 as affine ints (None for infinity). ``table``: a
        cuzk.kernels.msm_cpu.MsmTable of the first powers of tau (a resident key's,
        cuzk.plonk.tables), used when it covers the coefficients (their scalars padded with
        zeros to its length): the same point."""
        from cuzk.formats.stored import g1_from_limbs
        from cuzk.kernels.msm_cpu import msm_g1

        m = len(coefficients)
        if m > len(ptau):
            raise ValueError(f"a polynomial of {m} coefficients needs {m} powers of tau")
        if table is not None and m <= table.n:
            scalars = np.zeros((table.n, 4), np.uint64)
            scalars[:m] = coefficients
            self.kernels._to_mont(scalars, 1)  # (zeros stay zeros)
            row = msm_g1(table, scalars, curve=self.arith)
        else:
            row = msm_g1(ptau[:m], self.to_plain(coefficients), curve=self.arith)
        return g1_from_limbs(row, self.curve)
