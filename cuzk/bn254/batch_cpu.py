"""Batch entry points on the CPU: elementwise field and curve operations over numpy arrays.

The same Python functions exist in cuzk.bn254.batch_cuda (same names, same array layouts),
so callers and tests switch targets by switching modules (``cuzk.bn254.batch(target)``).

Array layouts (uint64, C order, one element per row; see cuzk.bn254.curve):
Fq/Fr (n, 4), Fq2 (n, 8), G1 affine (n, 8), G1 Jacobian (n, 12), G2 affine (n, 16),
G2 Jacobian (n, 24). Field elements are in Montgomery form except where a name says
otherwise (``*_to_mont`` takes plain values, scalars ``k`` of ``*_mul`` are plain).
Inverses of 0 are 0 here (no exceptions inside kernels); the Python-level ``fq_inv`` etc. in
cuzk.bn254 raise ZeroDivisionError.

Loops that cost more than a memory pass (multiplications, inversions, curve operations) run
across all cores with ``prange``; add/sub/neg are memory-bound and stay serial (measured:
threads did not pay at the sizes the prover uses them for).
"""

import numpy as np
from numba import njit, prange

from cuzk.bn254 import curve as C
from cuzk.bn254 import field as F
from cuzk.bn254.batch_api import entry_points
from cuzk.bn254.convert import rows

_parallel = njit(cache=True, parallel=True)
_serial = njit(cache=True)

load, store, fq2_load, fq2_store = F.load, F.store, F.fq2_load, F.fq2_store

# Rows per inversion in the batch Jacobian -> affine conversions (and per prange task).
AFFINE_CHUNK = 1024


# ==================================== kernels =============================================
# Fq / Fr / Fq2 elementwise

@_serial
def _fq_add(a, b, out):
    for i in range(out.shape[0]):
        store(out, i, 0, F.fq_add(load(a, i, 0), load(b, i, 0)))


@_serial
def _fq_sub(a, b, out):
    for i in range(out.shape[0]):
        store(out, i, 0, F.fq_sub(load(a, i, 0), load(b, i, 0)))


@_serial
def _fq_neg(a, out):
    for i in range(out.shape[0]):
        store(out, i, 0, F.fq_neg(load(a, i, 0)))


@_parallel
def _fq_mul(a, b, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fq_mul(load(a, i, 0), load(b, i, 0)))


@_parallel
def _fq_inv(a, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fq_inv(load(a, i, 0)))


@_parallel
def _fq_to_mont(a, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fq_to_mont(load(a, i, 0)))


@_parallel
def _fq_from_mont(a, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fq_from_mont(load(a, i, 0)))


@_serial
def _fr_add(a, b, out):
    for i in range(out.shape[0]):
        store(out, i, 0, F.fr_add(load(a, i, 0), load(b, i, 0)))


@_serial
def _fr_sub(a, b, out):
    for i in range(out.shape[0]):
        store(out, i, 0, F.fr_sub(load(a, i, 0), load(b, i, 0)))


@_serial
def _fr_neg(a, out):
    for i in range(out.shape[0]):
        store(out, i, 0, F.fr_neg(load(a, i, 0)))


@_parallel
def _fr_mul(a, b, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fr_mul(load(a, i, 0), load(b, i, 0)))


@_parallel
def _fr_inv(a, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fr_inv(load(a, i, 0)))


@_parallel
def _fr_to_mont(a, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fr_to_mont(load(a, i, 0)))


@_parallel
def _fr_from_mont(a, out):
    for i in prange(out.shape[0]):
        store(out, i, 0, F.fr_from_mont(load(a, i, 0)))


@_serial
def _fq2_add(a, b, out):
    for i in range(out.shape[0]):
        fq2_store(out, i, 0, F.fq2_add(fq2_load(a, i, 0), fq2_load(b, i, 0)))


@_serial
def _fq2_sub(a, b, out):
    for i in range(out.shape[0]):
        fq2_store(out, i, 0, F.fq2_sub(fq2_load(a, i, 0), fq2_load(b, i, 0)))


@_parallel
def _fq2_mul(a, b, out):
    for i in prange(out.shape[0]):
        fq2_store(out, i, 0, F.fq2_mul(fq2_load(a, i, 0), fq2_load(b, i, 0)))


@_parallel
def _fq2_sqr(a, out):
    for i in prange(out.shape[0]):
        fq2_store(out, i, 0, F.fq2_sqr(fq2_load(a, i, 0)))


@_parallel
def _fq2_inv(a, out):
    for i in prange(out.shape[0]):
        fq2_store(out, i, 0, F.fq2_inv(fq2_load(a, i, 0)))


# G1

@_parallel
def _g1_add(P, Q, out):
    for i in prange(out.shape[0]):
        C.g1_store(out, i, C.g1_add(C.g1_load(P, i), C.g1_load(Q, i)))


@_parallel
def _g1_add_mixed(P, a, out):
    for i in prange(out.shape[0]):
        C.g1_store(out, i, C.g1_add_mixed(C.g1_load(P, i), C.g1_load_affine(a, i)))


@_parallel
def _g1_add_affine(a, b, out):
    for i in prange(out.shape[0]):
        P = C.g1_from_affine(C.g1_load_affine(a, i))
        C.g1_store(out, i, C.g1_add_mixed(P, C.g1_load_affine(b, i)))


@_parallel
def _g1_dbl(P, out):
    for i in prange(out.shape[0]):
        C.g1_store(out, i, C.g1_dbl(C.g1_load(P, i)))


@_serial
def _g1_neg(P, out):
    for i in range(out.shape[0]):
        C.g1_store(out, i, C.g1_neg(C.g1_load(P, i)))


@_serial
def _g1_from_affine(a, out):
    for i in range(out.shape[0]):
        C.g1_store(out, i, C.g1_from_affine(C.g1_load_affine(a, i)))


@_parallel
def _g1_to_affine(P, out):
    """Jacobian -> affine with one inversion per chunk of rows (Montgomery's simultaneous
    inversion trick: prefix products of the Z's, one inverse, then back-substitution),
    about 7 multiplications per row instead of a ~380-multiplication inversion. Rows at
    infinity (Z = 0) are skipped in the products and come out as (0, 0)."""
    n = out.shape[0]
    n_chunks = (n + AFFINE_CHUNK - 1) // AFFINE_CHUNK
    for c in prange(n_chunks):
        lo = c * AFFINE_CHUNK
        hi = min(n, lo + AFFINE_CHUNK)
        prefix = np.empty((hi - lo, 4), dtype=np.uint64)
        acc = F.fq_one()
        for i in range(lo, hi):
            store(prefix, i - lo, 0, acc)
            Z = load(P, i, 8)
            if not F.is_zero(Z):
                acc = F.fq_mul(acc, Z)
        inv = F.fq_inv(acc)  # 1 / (Z_lo ... Z_hi-1)
        for i in range(hi - 1, lo - 1, -1):
            Z = load(P, i, 8)
            if F.is_zero(Z):
                store(out, i, 0, F.fq_zero())
                store(out, i, 4, F.fq_zero())
                continue
            zinv = F.fq_mul(inv, load(prefix, i - lo, 0))  # 1/Z_i
            inv = F.fq_mul(inv, Z)  # 1 / (Z_lo ... Z_i-1)
            zinv2 = F.fq_sqr(zinv)
            store(out, i, 0, F.fq_mul(load(P, i, 0), zinv2))
            store(out, i, 4, F.fq_mul(load(P, i, 4), F.fq_mul(zinv2, zinv)))


@_parallel
def _g1_eq(P, Q, out):
    for i in prange(out.shape[0]):
        out[i] = C.g1_eq(C.g1_load(P, i), C.g1_load(Q, i))


@_parallel
def _g1_mul(P, k, out):
    for i in prange(out.shape[0]):
        C.g1_store(out, i, C.g1_mul(C.g1_load(P, i), load(k, i, 0)))


@_parallel
def _g1_is_on_curve_affine(a, out):
    for i in prange(out.shape[0]):
        out[i] = C.g1_is_on_curve_affine(C.g1_load_affine(a, i))


# G2

@_parallel
def _g2_add(P, Q, out):
    for i in prange(out.shape[0]):
        C.g2_store(out, i, C.g2_add(C.g2_load(P, i), C.g2_load(Q, i)))


@_parallel
def _g2_add_mixed(P, a, out):
    for i in prange(out.shape[0]):
        C.g2_store(out, i, C.g2_add_mixed(C.g2_load(P, i), C.g2_load_affine(a, i)))


@_parallel
def _g2_add_affine(a, b, out):
    for i in prange(out.shape[0]):
        P = C.g2_from_affine(C.g2_load_affine(a, i))
        C.g2_store(out, i, C.g2_add_mixed(P, C.g2_load_affine(b, i)))


@_parallel
def _g2_dbl(P, out):
    for i in prange(out.shape[0]):
        C.g2_store(out, i, C.g2_dbl(C.g2_load(P, i)))


@_serial
def _g2_neg(P, out):
    for i in range(out.shape[0]):
        C.g2_store(out, i, C.g2_neg(C.g2_load(P, i)))


@_serial
def _g2_from_affine(a, out):
    for i in range(out.shape[0]):
        C.g2_store(out, i, C.g2_from_affine(C.g2_load_affine(a, i)))


@_parallel
def _g2_to_affine(P, out):
    """Jacobian -> affine over Fq2, one inversion per chunk (see _g1_to_affine)."""
    n = out.shape[0]
    n_chunks = (n + AFFINE_CHUNK - 1) // AFFINE_CHUNK
    for c in prange(n_chunks):
        lo = c * AFFINE_CHUNK
        hi = min(n, lo + AFFINE_CHUNK)
        prefix = np.empty((hi - lo, 8), dtype=np.uint64)
        acc = F.fq2_one()
        for i in range(lo, hi):
            fq2_store(prefix, i - lo, 0, acc)
            Z = fq2_load(P, i, 16)
            if not F.fq2_is_zero(Z):
                acc = F.fq2_mul(acc, Z)
        inv = F.fq2_inv(acc)
        for i in range(hi - 1, lo - 1, -1):
            Z = fq2_load(P, i, 16)
            if F.fq2_is_zero(Z):
                fq2_store(out, i, 0, F.fq2_zero())
                fq2_store(out, i, 8, F.fq2_zero())
                continue
            zinv = F.fq2_mul(inv, fq2_load(prefix, i - lo, 0))
            inv = F.fq2_mul(inv, Z)
            zinv2 = F.fq2_sqr(zinv)
            fq2_store(out, i, 0, F.fq2_mul(fq2_load(P, i, 0), zinv2))
            fq2_store(out, i, 8, F.fq2_mul(fq2_load(P, i, 8), F.fq2_mul(zinv2, zinv)))


@_parallel
def _g2_eq(P, Q, out):
    for i in prange(out.shape[0]):
        out[i] = C.g2_eq(C.g2_load(P, i), C.g2_load(Q, i))


@_parallel
def _g2_mul(P, k, out):
    for i in prange(out.shape[0]):
        C.g2_store(out, i, C.g2_mul(C.g2_load(P, i), load(k, i, 0)))


@_parallel
def _g2_is_on_curve_affine(a, out):
    for i in prange(out.shape[0]):
        out[i] = C.g2_is_on_curve_affine(C.g2_load_affine(a, i))


# ================================= Python entry points ====================================

def _run(kernel, operands, out_width):
    """Check the operands ((array, width, name) triples), run ``kernel`` over their rows into
    a fresh output of ``out_width`` columns (None: a bool per row)."""
    arrays = [rows(a, width, name) for a, width, name in operands]
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"operands differ in length: {[a.shape[0] for a in arrays]}")
    if out_width is None:
        out = np.empty(n, dtype=np.bool_)
    else:
        out = np.empty((n, out_width), dtype=np.uint64)
    kernel(*arrays, out)
    return out


globals().update(entry_points(_run, globals()))
