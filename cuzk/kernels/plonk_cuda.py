"""The CUDA kernels of the PLONK prover (cuzk.plonk.fr.CudaFrOps drives them): the elementwise
steps over the coset of 4n and the domain, one thread per element, on the per-element
arithmetic of cuzk.kernels.plonk (the device functions cuzk.kernels.plonk_cpu_kernels runs
on the CPU, here built for CUDA: one source for both targets).

    plonk_copy_factors   num[i], den[i]: the permutation's identity and sigma factors at x[i]
                         (round 2; the running product over them stays on the host)
    plonk_quotient       the quotient's numerator / Z_H at each point of the coset of 4n,
                         in one pass (round 3; out may be a)
    plonk_scale          x[i] *= s
    plonk_axpy           acc[i] += s x[i], i < len(x)
    plonk_roll           out[i] = x[(i - shift) mod n] (np.roll's: L_(i+1) on the coset is
                         L_1 rolled by 4i, cuzk.plonk.prover.pi_extended)
    plonk_embed          out[i] = x[i] for i < len(x), else 0 (coefficients padded to the
                         extended domain on the device: only the coefficients cross the bus)
    plonk_to_mont        x[i] to Montgomery form, or from it with inverse (scalars for the MSM)

Vectors are C-contiguous (m, 4) uint64 device arrays of Montgomery-form elements; ``k`` is
the constants array of cuzk.kernels.plonk (rows BETA, GAMMA, ...); a scalar ``s`` one (1, 4)
element. Every kernel is in CUDA_KERNELS with its signature, compiled at first launch and to
PTX by tests/test_ptx.py.

One source, a build per curve (as cuzk.kernels.ntt_cuda): imported normally it is BN254's;
``kernels("bls12_381")`` (``get_target("cuda").load("cuzk.kernels.plonk_cuda",
curve="bls12_381")``) executes it again on BLS12-381's Fr, every kernel renamed for that
build (``plonk_quotient[bls12_381]``).
"""

from __future__ import annotations

from numba import cuda, types

from cuzk.arith.curves import DEFAULT, build_params, curve_build
from cuzk.arith.jit import KernelTable, building, cuda_simulated, get_target

_BUILD = building()  # the plain build when imported; the curve's when loaded for one
CURVE = _BUILD.param("curve", DEFAULT)
P = get_target("cuda").load("cuzk.kernels.plonk", **build_params(CURVE))
load, store, fr_mul, fr_add = P.load, P.store, P.fr_mul, P.fr_add
fr_to_mont, fr_from_mont, fr_zero = P.F.fr_to_mont, P.F.fr_from_mont, P.F.fr_zero
ZH_INV = P.ZH_INV
kernel_fn = _BUILD.kernel  # names each kernel for the build (no change for BN254)

THREADS = 256  # threads per block
SIMULATOR_THREADS = 16  # the simulator runs each thread as a Python thread


@kernel_fn
def plonk_copy_factors(num, den, a, b, c, x, s1, s2, s3, k):
    """num[i], den[i]: the identity and sigma factors at x[i] (cuzk.kernels.plonk)."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        ai, bi, ci = load(a, i), load(b, i), load(c, i)
        store(num, i, P.identity_factor(ai, bi, ci, load(x, i), k))
        store(den, i, P.sigma_factor(ai, bi, ci, load(s1, i), load(s2, i), load(s3, i), k))


@kernel_fn
def plonk_quotient(out, a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k):
    """out[j] = the quotient's numerator at x[j] / Z_H(x[j]) on the coset of 4n (z(w x) is
    z[j + 4]; 1 / Z_H repeats with period 4: k's rows ZH_INV..ZH_INV + 3). out may be a:
    thread j reads z[j + 4], never a."""
    j = cuda.grid(1)
    n = a.shape[0]
    if j < n:
        jw = j + 4
        if jw >= n:
            jw -= n
        v = P.quotient_numerator(
            load(a, j), load(b, j), load(c, j), load(z, j), load(z, jw), load(qm, j),
            load(ql, j), load(qr, j), load(qo, j), load(qc, j), load(s1, j), load(s2, j),
            load(s3, j), load(l1, j), load(x, j), k,
        )  # fmt: skip
        store(out, j, fr_mul(v, load(k, ZH_INV + (j & 3))))


@kernel_fn
def plonk_scale(x, s):
    """x[i] *= s[0]."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        store(x, i, fr_mul(load(x, i), load(s, 0)))


@kernel_fn
def plonk_axpy(acc, x, s):
    """acc[i] += s[0] x[i] for i < len(x)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        store(acc, i, fr_add(load(acc, i), fr_mul(load(s, 0), load(x, i))))


@kernel_fn
def plonk_roll(out, x, shift):
    """out[i] = x[(i - shift) mod n], 0 <= shift < n (out is not x)."""
    i = cuda.grid(1)
    n = x.shape[0]
    if i < n:
        src = i - shift
        if src < 0:
            src += n
        store(out, i, load(x, src))


@kernel_fn
def plonk_embed(out, x):
    """out[i] = x[i] for i < len(x), 0 above (len(x) <= len(out))."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        if i < x.shape[0]:
            store(out, i, load(x, i))
        else:
            store(out, i, fr_zero())


@kernel_fn
def plonk_to_mont(x, inverse):
    """x[i] to Montgomery form (inverse: from it), in place."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        if inverse:
            store(x, i, fr_from_mont(load(x, i)))
        else:
            store(x, i, fr_to_mont(load(x, i)))


_V = types.Array(types.uint64, 2, "C")  # an (n, 4) vector of elements, or the constants
_I = types.int64
_B = types.boolean
# name -> (python function, argument types); tests/test_ptx.py compiles each for sm_90.
CUDA_KERNELS = KernelTable(
    {
        "plonk_copy_factors": (plonk_copy_factors, (_V,) * 10),
        "plonk_quotient": (plonk_quotient, (_V,) * 16),
        "plonk_scale": (plonk_scale, (_V, _V)),
        "plonk_axpy": (plonk_axpy, (_V, _V, _V)),
        "plonk_roll": (plonk_roll, (_V, _V, _I)),
        "plonk_embed": (plonk_embed, (_V, _V)),
        "plonk_to_mont": (plonk_to_mont, (_V, _B)),
    }
)
# Kernels that multiply field elements: their PTX must hold the 64-bit high product.
CUDA_KERNELS.expect = {
    name: ["mul.hi.u64"] for name in CUDA_KERNELS if name not in ("plonk_roll", "plonk_embed")
}


def kernels(curve: str = DEFAULT):
    """The build of this module whose kernels work in ``curve``'s Fr (this module for BN254)."""
    return curve_build("cuzk.kernels.plonk_cuda", curve, "cuda")


def launch(name: str, count: int, *args, curve: str = DEFAULT) -> None:
    """Kernel ``name`` of ``curve``'s build over ``count`` threads (one per element)."""
    threads = SIMULATOR_THREADS if cuda_simulated() else THREADS
    kernels(curve).CUDA_KERNELS.launch(name, count, *args, threads_per_block=threads)
