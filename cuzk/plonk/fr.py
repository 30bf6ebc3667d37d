"""Fr vectors for the PLONK prover: elementwise arithmetic, transforms and commitments on the
shared kernels, for one curve and one target.

A vector is a C-contiguous (m, 4) uint64 array of Montgomery-form elements (R = 2^256), as
the NTT kernels take them. `FrOps` puts together what the prover needs from the public
kernel APIs: elementwise operations from cuzk.arith.batch (one build per target and curve),
NTTs and the coset step from cuzk.kernels.ntt_cpu, G1 MSMs from cuzk.kernels.msm_cpu, the
prover's own steps (additions, grand product, quotient, Horner, division by X - x, scaled
sums) from cuzk.kernels.plonk_cpu_kernels, and conversions to and from Python ints. The
kernels come through cuzk.native.kernels: the native library's where a command enabled it,
else Numba's builds.

`CudaFrOps` is the same methods on one CUDA GPU, from the CUDA builds of the same sources:
the transforms on cuzk.kernels.ntt_cuda, the commitments on cuzk.kernels.msm_cuda's G1 MSM
(the Groth16 CUDA device's), the elementwise steps of the extended domain (the permutation
factors, the quotient's numerator on the domain of 4n, the scaled sums of qC + PI there) on
cuzk.kernels.plonk_cuda, whose kernels run cuzk.kernels.plonk's device functions, the ones
plonk_cpu_kernels runs on the CPU. The prover (cuzk.plonk.prover) is the same for both.
"""

from __future__ import annotations

import threading

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

    def copy(self, a):
        """A copy of a (where a is: CudaFrOps keeps a device array on its device)."""
        return np.array(a)

    def roll(self, a, shift: int):
        """out[i] = a[(i - shift) mod len(a)] (np.roll's), a new vector where a is."""
        return np.roll(a, shift, axis=0)

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
        """The quotient's numerator at the points x (the domain of 4n) into out (which may
        be a); zh_inv in k divides it there by Z_H (ones: undivided, as the prover asks)."""
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


def on_device(a) -> bool:
    """a is a numba device array (on a GPU or in the simulator, whose arrays lack
    cuda.is_cuda_array)."""
    return hasattr(a, "copy_to_host") and not isinstance(a, np.ndarray)


class CudaFrOps(FrOps):
    """Fr vectors of `curve` on CUDA GPU `ordinal`: FrOps's methods, the work of the extended
    domain on the device.

    Where each step runs:
      GPU   intt, evaluations, coset_evaluations, coset_coefficients
            (cuzk.kernels.ntt_cuda); commit
            (cuzk.kernels.msm_cuda.msm_g1 over the powers of tau, the coefficients taken
            out of Montgomery form on the device); the permutation factors of
            grand_product, quotient, scale, copy, roll, and axpy into a device vector
            (cuzk.kernels.plonk_cuda); add, sub, mul, inv (cuzk.arith.batch's CUDA build).
      CPU   the inherently sequential steps, on this machine's CPU kernels
            (cuzk.kernels.plonk_cpu_kernels): the additions, grand_product's running
            product (n products and one inversion over the factors the GPU made), evaluate
            (Horner), divide_linear (synthetic division); and the O(n) steps on host data
            the prover reads back at once: gate_residuals (the gate check), axpy into a
            host vector (round 5's linearisation over n + 6 coefficients), the conversions.

    Where vectors live: every method takes host (numpy) or device arrays. The values on
    the domain of 4n stay on the device: evaluations, coset_evaluations, scale, copy and
    roll return device arrays, quotient writes its device `out`, axpy adds into a device
    `acc` there; so do a resident key's (cuzk.plonk.stages.CudaDevice copies
    cuzk.plonk.prover.extended's arrays to the GPU when it loads the key). What the prover
    reads on the host comes back as numpy: intt's coefficients (blinded on the host; the
    numerator's, from which the prover divides Z_H out on the host: the only 4n vector a
    proof copies back), grand_product's z. The n-sized vectors cross the
    bus per operation: each commitment's coefficients (n + a few), the wires and sigma
    values for the permutation factors and the factors back; a host vector given to a GPU
    step is copied in for that call (so are the coset's points, powers computed on the host,
    once per key: extended's "x").

    keep_points(ptau) places a key's powers of tau on the GPU once (a resident key; commit
    then reads them there); a commitment to points not kept copies them in for its MSM."""

    target = "cuda"

    def __init__(self, curve, ordinal: int = 0):
        from cuzk.arith.jit import require_cuda

        require_cuda()
        super().__init__(curve)
        self.ordinal = ordinal
        self.device = f"cuda:{ordinal}"
        self._points: dict[int, tuple] = {}  # id(ptau) -> (ptau, ResidentPoints)
        self._points_lock = threading.Lock()

    def gpu(self):
        """A context manager making this GPU current in the calling thread."""
        from cuzk.kernels.resident import gpu_context

        return gpu_context(self.ordinal)

    @property
    def batch(self):
        """cuzk.arith.batch's CUDA build for this curve (host operands give host results, a
        device operand a device result)."""
        from cuzk.arith import batch

        return batch("cuda", self.arith)

    # --- moving vectors ---------------------------------------------------------------------
    def to_device(self, a):
        """a on this GPU: a device array as it is, a host array copied in."""
        if on_device(a):
            return a
        from numba import cuda

        with self.gpu():
            return cuda.to_device(_c(a))

    def to_host(self, a) -> np.ndarray:
        """a as a numpy array: a host array as it is, a device array copied back."""
        if on_device(a):
            with self.gpu():
                return a.copy_to_host()
        return a

    def _element(self, k: int):
        """k in Montgomery form as a (1, 4) device array (a kernel's scalar)."""
        return self.to_device(self.mont(k)[None])

    def _launch(self, name: str, count: int, *args) -> None:
        from cuzk.kernels import plonk_cuda

        with self.gpu():
            plonk_cuda.launch(name, count, *args, curve=self.arith)

    def _empty(self, shape):
        from numba import cuda

        with self.gpu():
            return cuda.device_array(shape, np.uint64)

    # --- elementwise on the GPU -------------------------------------------------------------
    def copy(self, a):
        out = self._empty(a.shape)
        with self.gpu():
            out.copy_to_device(a if on_device(a) else _c(a))
        return out

    def roll(self, a, shift: int):
        n = a.shape[0]
        out = self._empty(a.shape)
        self._launch("plonk_roll", n, out, self.to_device(a), shift % n if n else 0)
        return out

    def scale(self, a, k: int):
        """a k as a new device array."""
        out = self.copy(a)
        self._launch("plonk_scale", out.shape[0], out, self._element(k))
        return out

    def axpy(self, acc, x, k: int) -> None:
        """acc[:len(x)] += k x, in place: on the GPU for a device acc, else on the host."""
        if not on_device(acc):
            return super().axpy(acc, self.to_host(x), k)
        self._launch("plonk_axpy", x.shape[0], acc, self.to_device(x), self._element(k))

    def grand_product(self, a, b, c, x, s1, s2, s3, k):
        """FrOps.grand_product: the factors on the GPU, their running product on the host (a
        sequential recurrence with one inversion, cuzk.kernels.plonk_cpu_kernels)."""
        n = a.shape[0]
        num, den = self._empty((n, 4)), self._empty((n, 4))
        d = [self.to_device(v) for v in (a, b, c, x, s1, s2, s3, k)]
        self._launch("plonk_copy_factors", n, num, den, *d)
        num, den = self.to_host(num), self.to_host(den)
        z = np.empty((n, 4), np.uint64)
        last = np.zeros((1, 4), np.uint64)
        self.kernels._grand_product(z, num, den, self.mont(1)[None], last)
        if not last.any():
            return None, 0
        return z, self.to_ints(last)[0]

    def quotient(self, out, a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k):
        """FrOps.quotient on the GPU: out a device array (written there), or a host one
        (the values copied back into it)."""
        vectors = (a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k)
        d = [self.to_device(v) for v in vectors]
        if on_device(out):
            dout = out
        elif out is a:
            dout = d[0]
        else:
            dout = self._empty(out.shape)
        self._launch("plonk_quotient", d[0].shape[0], dout, *d)
        if not on_device(out):
            with self.gpu():
                dout.copy_to_host(out)
        return out

    # --- transforms -------------------------------------------------------------------------
    def intt(self, evaluations) -> np.ndarray:
        from cuzk.kernels import ntt_cuda

        with self.gpu():
            d = ntt_cuda.ntt(self.copy(evaluations), inverse=True, curve=self.arith)
            return d.copy_to_host()

    def coset_evaluations(self, coefficients, size: int):
        """FrOps.coset_evaluations as a device array (the coefficients padded to `size` on
        the device: only they cross the bus)."""
        from cuzk.kernels import ntt_cuda

        if len(coefficients) > size:
            raise ValueError(f"{len(coefficients)} coefficients on a domain of {size}")
        log = size.bit_length() - 1
        x = self._empty((size, 4))
        self._launch("plonk_embed", size, x, self.to_device(coefficients))
        with self.gpu():
            ntt_cuda.coset_shift(x, log, curve=self.arith)
            return ntt_cuda.ntt(x, curve=self.arith)

    def evaluations(self, coefficients, size: int):
        """FrOps.evaluations as a device array (the coefficients padded to `size` on the
        device: only they cross the bus)."""
        from cuzk.kernels import ntt_cuda

        if len(coefficients) > size:
            raise ValueError(f"{len(coefficients)} coefficients on a domain of {size}")
        x = self._empty((size, 4))
        self._launch("plonk_embed", size, x, self.to_device(coefficients))
        with self.gpu():
            return ntt_cuda.ntt(x, curve=self.arith)

    def coset_coefficients(self, evaluations) -> np.ndarray:
        """The inverse of coset_evaluations, as a numpy array (a device `evaluations` is
        consumed; a host one is worked on a device copy and overwritten with the result)."""
        from cuzk.kernels import ntt_cuda

        log = evaluations.shape[0].bit_length() - 1
        d = self.to_device(evaluations)
        with self.gpu():
            ntt_cuda.ntt(d, inverse=True, curve=self.arith)
            ntt_cuda.coset_shift(d, log, inverse=True, curve=self.arith)
            if on_device(evaluations):
                return d.copy_to_host()
            d.copy_to_host(evaluations)
            return evaluations

    # --- commitments ------------------------------------------------------------------------
    def keep_points(self, ptau):
        """Place `ptau` (a key's powers of tau, (m, G1 limbs)) on this GPU for later commits
        to it (once; the key's residency); returns the ResidentPoints."""
        from cuzk.kernels.resident import place_points

        with self._points_lock:
            kept = self._points.get(id(ptau))
            if kept is None:
                pts = place_points(ptau, self.device, "powers of tau", self.arith)
                kept = self._points[id(ptau)] = (ptau, pts)
            return kept[1]

    def drop_points(self, ptau) -> None:
        """Forget keep_points(ptau) (its device memory returns when unreferenced)."""
        with self._points_lock:
            self._points.pop(id(ptau), None)

    def kept_bytes(self, ptau) -> int:
        kept = self._points.get(id(ptau))
        return kept[1].nbytes if kept else 0

    def commit(self, coefficients, ptau, table=None):
        """[p(tau)]_1 by the CUDA G1 MSM, over the powers kept on the GPU where keep_points
        placed them (else copied in for this MSM). ``table`` (a CPU MsmTable, FrOps.commit's)
        is not read here: the GPU's MSM takes the powers themselves."""
        from cuzk.formats.stored import g1_from_limbs
        from cuzk.kernels import msm_cuda

        m = len(coefficients)
        if m > len(ptau):
            raise ValueError(f"a polynomial of {m} coefficients needs {m} powers of tau")
        kept = self._points.get(id(ptau))
        points = kept[1].array[:m] if kept else ptau[:m]
        scalars = self.copy(coefficients)
        self._launch("plonk_to_mont", m, scalars, True)
        with self.gpu():
            row = msm_cuda.msm_g1(points, scalars, curve=self.arith)
        return g1_from_limbs(row, self.curve)
