"""Batch entry points on CUDA: the kernels of cuzk.bn254.batch_cpu, one GPU thread per row.

Same Python functions, names and array layouts as cuzk.bn254.batch_cpu (see there), built
from the same field and curve source (the CUDA builds of cuzk.bn254.field and .curve).
Host (numpy) operands give host results; if any operand is already a device array the
result stays on the device. Runs on a GPU, or in the simulator under NUMBA_ENABLE_CUDASIM=1.

CUDA_KERNELS lists every kernel here as name -> (python function, signature) so that
tests/test_ptx.py compiles each to PTX for cc 9.0, GPU or not (docs/arithmetic.md).
"""

import numpy as np
from numba import cuda, types

from cuzk.bn254.batch_api import entry_points
from cuzk.bn254.convert import rows
from cuzk.jit import cuda_simulated, get_target, launch

_cuda = get_target("cuda")
F = _cuda.load("cuzk.bn254.field")
C = _cuda.load("cuzk.bn254.curve")
load, store, fq2_load, fq2_store = F.load, F.store, F.fq2_load, F.fq2_store

U2 = types.Array(types.uint64, 2, "C")  # one element per row
B1 = types.Array(types.boolean, 1, "C")  # one predicate result per row

# name -> (python function, argument types): the PTX test compiles every entry.
CUDA_KERNELS: dict = {}
_jitted: dict = {}


def kernel(*argtypes):
    """Register a kernel's Python function and signature in CUDA_KERNELS (compiled lazily
    at first launch, so importing this module needs no GPU)."""

    def register(fn):
        CUDA_KERNELS[fn.__name__.lstrip("_")] = (fn, argtypes)
        return fn

    return register


def _compiled(fn):
    if fn not in _jitted:
        _jitted[fn] = cuda.jit(fn) if cuda_simulated() else cuda.jit(fn, cache=True)
    return _jitted[fn]


# ==================================== kernels =============================================
# Fq / Fr / Fq2 elementwise

@kernel(U2, U2, U2)
def _fq_add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_add(load(a, i, 0), load(b, i, 0)))

@kernel(U2, U2, U2)
def _fq_sub(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_sub(load(a, i, 0), load(b, i, 0)))

@kernel(U2, U2)
def _fq_neg(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_neg(load(a, i, 0)))

@kernel(U2, U2, U2)
def _fq_mul(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_mul(load(a, i, 0), load(b, i, 0)))

@kernel(U2, U2)
def _fq_inv(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_inv(load(a, i, 0)))

@kernel(U2, U2)
def _fq_to_mont(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_to_mont(load(a, i, 0)))

@kernel(U2, U2)
def _fq_from_mont(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fq_from_mont(load(a, i, 0)))

@kernel(U2, U2, U2)
def _fr_add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_add(load(a, i, 0), load(b, i, 0)))

@kernel(U2, U2, U2)
def _fr_sub(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_sub(load(a, i, 0), load(b, i, 0)))

@kernel(U2, U2)
def _fr_neg(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_neg(load(a, i, 0)))

@kernel(U2, U2, U2)
def _fr_mul(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_mul(load(a, i, 0), load(b, i, 0)))

@kernel(U2, U2)
def _fr_inv(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_inv(load(a, i, 0)))

@kernel(U2, U2)
def _fr_to_mont(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_to_mont(load(a, i, 0)))

@kernel(U2, U2)
def _fr_from_mont(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        store(out, i, 0, F.fr_from_mont(load(a, i, 0)))

@kernel(U2, U2, U2)
def _fq2_add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        fq2_store(out, i, 0, F.fq2_add(fq2_load(a, i, 0), fq2_load(b, i, 0)))

@kernel(U2, U2, U2)
def _fq2_sub(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        fq2_store(out, i, 0, F.fq2_sub(fq2_load(a, i, 0), fq2_load(b, i, 0)))

@kernel(U2, U2, U2)
def _fq2_mul(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        fq2_store(out, i, 0, F.fq2_mul(fq2_load(a, i, 0), fq2_load(b, i, 0)))

@kernel(U2, U2)
def _fq2_sqr(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        fq2_store(out, i, 0, F.fq2_sqr(fq2_load(a, i, 0)))

@kernel(U2, U2)
def _fq2_inv(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        fq2_store(out, i, 0, F.fq2_inv(fq2_load(a, i, 0)))

# G1

@kernel(U2, U2, U2)
def _g1_add(P, Q, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store(out, i, C.g1_add(C.g1_load(P, i), C.g1_load(Q, i)))

@kernel(U2, U2, U2)
def _g1_add_mixed(P, a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store(out, i, C.g1_add_mixed(C.g1_load(P, i), C.g1_load_affine(a, i)))

@kernel(U2, U2, U2)
def _g1_add_affine(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        P = C.g1_from_affine(C.g1_load_affine(a, i))
        C.g1_store(out, i, C.g1_add_mixed(P, C.g1_load_affine(b, i)))

@kernel(U2, U2)
def _g1_dbl(P, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store(out, i, C.g1_dbl(C.g1_load(P, i)))

@kernel(U2, U2)
def _g1_neg(P, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store(out, i, C.g1_neg(C.g1_load(P, i)))

@kernel(U2, U2)
def _g1_from_affine(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store(out, i, C.g1_from_affine(C.g1_load_affine(a, i)))

@kernel(U2, U2)
def _g1_to_affine(P, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store_affine(out, i, C.g1_to_affine(C.g1_load(P, i)))

@kernel(U2, U2, B1)
def _g1_eq(P, Q, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = C.g1_eq(C.g1_load(P, i), C.g1_load(Q, i))

@kernel(U2, U2, U2)
def _g1_mul(P, k, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g1_store(out, i, C.g1_mul(C.g1_load(P, i), load(k, i, 0)))

@kernel(U2, B1)
def _g1_is_on_curve_affine(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = C.g1_is_on_curve_affine(C.g1_load_affine(a, i))

# G2

@kernel(U2, U2, U2)
def _g2_add(P, Q, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store(out, i, C.g2_add(C.g2_load(P, i), C.g2_load(Q, i)))

@kernel(U2, U2, U2)
def _g2_add_mixed(P, a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store(out, i, C.g2_add_mixed(C.g2_load(P, i), C.g2_load_affine(a, i)))

@kernel(U2, U2, U2)
def _g2_add_affine(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        P = C.g2_from_affine(C.g2_load_affine(a, i))
        C.g2_store(out, i, C.g2_add_mixed(P, C.g2_load_affine(b, i)))

@kernel(U2, U2)
def _g2_dbl(P, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store(out, i, C.g2_dbl(C.g2_load(P, i)))

@kernel(U2, U2)
def _g2_neg(P, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store(out, i, C.g2_neg(C.g2_load(P, i)))

@kernel(U2, U2)
def _g2_from_affine(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store(out, i, C.g2_from_affine(C.g2_load_affine(a, i)))

@kernel(U2, U2)
def _g2_to_affine(P, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store_affine(out, i, C.g2_to_affine(C.g2_load(P, i)))

@kernel(U2, U2, B1)
def _g2_eq(P, Q, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = C.g2_eq(C.g2_load(P, i), C.g2_load(Q, i))

@kernel(U2, U2, U2)
def _g2_mul(P, k, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        C.g2_store(out, i, C.g2_mul(C.g2_load(P, i), load(k, i, 0)))

@kernel(U2, B1)
def _g2_is_on_curve_affine(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = C.g2_is_on_curve_affine(C.g2_load_affine(a, i))


# Kernels that multiply field elements must show the 64x64->128 product as mul.hi.u64 in
# their PTX (tests/test_ptx.py); the others only add, subtract or move limbs.
_NO_MULTIPLY = {
    "fq_add", "fq_sub", "fq_neg", "fr_add", "fr_sub", "fr_neg", "fq2_add", "fq2_sub",
    "g1_neg", "g1_from_affine", "g2_neg", "g2_from_affine",
}  # fmt: skip
PTX_EXPECT = {name: ["mul.hi.u64"] for name in CUDA_KERNELS if name not in _NO_MULTIPLY}


# ================================= Python entry points ====================================

def _is_device_array(a):
    # numba device arrays, on a GPU and in the simulator (which lacks cuda.is_cuda_array)
    return hasattr(a, "copy_to_host") and not isinstance(a, np.ndarray)


def _operand(a, width, name):
    if _is_device_array(a):
        if len(a.shape) != 2 or a.shape[1] != width:
            raise ValueError(f"{name}: expected shape (n, {width}), got {a.shape}")
        return a, True
    return cuda.to_device(rows(a, width, name)), False


def _run(fn, operands, out_width):
    """Launch ``fn`` over the rows of ``operands`` ((array, width, name) triples) into a
    fresh output of ``out_width`` columns (None: a bool per row)."""
    args, on_device = [], False
    for a, width, name in operands:
        d, dev = _operand(a, width, name)
        args.append(d)
        on_device |= dev
    n = args[0].shape[0]
    if any(d.shape[0] != n for d in args):
        raise ValueError(f"operands differ in length: {[d.shape[0] for d in args]}")
    if out_width is None:
        out = cuda.device_array(n, dtype=np.bool_)
    else:
        out = cuda.device_array((n, out_width), dtype=np.uint64)
    launch(_compiled(fn), n, *args, out)
    return out if on_device else out.copy_to_host()


globals().update(entry_points(_run, globals()))
