"""Batch entry points: the same contract on both targets (shapes, empty input, infinity rows,
device arrays), the parallel CPU loops over sizes where every thread gets work, and the
generated kernels' disk cache (one entry per kernel and build)."""

import os

import numpy as np
import pytest
from py_ecc import optimized_bn128 as ob

import cuzk.arith as bn
from cuzk.arith import convert as cv
from cuzk.arith.constants import FR_MODULUS

TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.mark.parametrize("target", TARGETS)
def test_shape_errors(target):
    B = bn.batch(target)
    a = cv.fr_array([1, 2, 3])
    with pytest.raises(ValueError, match="differ in length"):
        B.fr_mul(a, a[:2])
    with pytest.raises(ValueError, match=r"\(n, 4\)"):
        B.fr_mul(a, np.zeros((3, 5), np.uint64))
    with pytest.raises(ValueError, match=r"\(n, 8\)"):
        B.g1_add_affine(np.zeros((1, 12), np.uint64), np.zeros((1, 8), np.uint64))


@pytest.mark.parametrize("target", TARGETS)
def test_empty_batches(target):
    B = bn.batch(target)
    z4 = np.zeros((0, 4), np.uint64)
    assert B.fq_mul(z4, z4).shape == (0, 4)
    assert B.g1_add_affine(np.zeros((0, 8), np.uint64), np.zeros((0, 8), np.uint64)).shape == (
        0,
        12,
    )
    assert B.g2_is_on_curve_affine(np.zeros((0, 16), np.uint64)).shape == (0,)


@pytest.mark.parametrize("target", TARGETS)
def test_single_row_and_non_contiguous_inputs(target):
    B = bn.batch(target)
    x, y = 7, FR_MODULUS - 5
    got = B.fr_mul(np.array(cv.fr(x), np.uint64), np.array(cv.fr(y), np.uint64))
    assert cv.fr_array_to_ints(got) == [x * y % FR_MODULUS]
    wide = np.zeros((3, 8), np.uint64)
    wide[:, ::2] = cv.fq_array([3, 4, 5])  # a strided (n, 4) view
    got = B.fq_mul(wide[:, ::2], wide[:, ::2])
    assert cv.fq_array_to_ints(got) == [9, 16, 25]


@pytest.mark.parametrize("target", TARGETS)
def test_infinity_rows_as_stored_in_zkeys(target):
    """All-zero rows are the point at infinity: they pass through additions unchanged."""
    B = bn.batch(target)
    P = [(ob.normalize(ob.multiply(ob.G1, k))) for k in (5, 9)]
    ints = [(int(x), int(y)) for x, y in P]
    a = cv.g1_array([ints[0], None, None])
    b = cv.g1_array([None, ints[1], None])
    assert cv.g1_array_to_ints(B.g1_add_affine(a, b, affine=True)) == [ints[0], ints[1], None]
    assert list(B.g1_is_on_curve_affine(a)) == [True, True, True]


@pytest.mark.cuda
def test_cuda_device_arrays_stay_on_device():
    from numba import cuda

    B = bn.batch("cuda")
    a = cv.fr_array([2, 3])
    d = cuda.to_device(a)
    out = B.fr_mul(d, a)
    assert not isinstance(out, np.ndarray)
    assert cv.fr_array_to_ints(out.copy_to_host()) == [4, 9]


def test_cpu_parallel_loops_over_many_rows():
    """Thousands of rows spread over all threads give the same results as Python ints."""
    B = bn.batch("cpu")
    n = 5000
    xs = [(i * 0x9E3779B97F4A7C15 + 12345) ** 5 % FR_MODULUS for i in range(n)]
    ys = xs[::-1]
    got = cv.fr_array_to_ints(B.fr_mul(cv.fr_array(xs), cv.fr_array(ys)))
    assert got == [x * y % FR_MODULUS for x, y in zip(xs, ys, strict=True)]
    # Jacobian -> affine inverts once per chunk of rows: cross chunk boundaries, with rows at
    # infinity on and next to them.
    ks = [3 + i for i in range(64)]
    pts = [ob.normalize(ob.multiply(ob.G1, k)) for k in ks]
    reps = 2 * B.AFFINE_CHUNK // len(ks) + 1
    aff = np.vstack([cv.g1_array([(int(x), int(y)) for x, y in pts])] * reps)
    chunk = B.AFFINE_CHUNK
    at_infinity = {0, chunk - 1, chunk, 2 * chunk, len(aff) - 1}
    aff[sorted(at_infinity)] = 0
    doubled = cv.g1_array_to_ints(B.g1_add_affine(aff, aff, affine=True))
    expect = [ob.normalize(ob.multiply(ob.G1, 2 * k)) for k in ks]
    expect = [(int(x), int(y)) for x, y in expect]
    assert doubled == [None if i in at_infinity else expect[i % len(ks)] for i in range(len(aff))]


def test_generated_kernels_cache_on_disk_one_entry_per_build():
    """Every kernel is generated from TABLE for each target; Numba's disk cache is keyed by
    source file, qualified name and line, so the qualified names must differ across kernels
    and builds, and a CPU kernel must write its cache (one per loop shape checked here)."""
    from numba.core.caching import NullCache

    from cuzk.arith.batch_api import TABLE

    cpu, cuda_build = bn.batch("cpu"), bn.batch("cuda")
    qualnames = [k.py_func.__qualname__ for k in cpu.KERNELS.values()]
    qualnames += [fn.__qualname__ for fn in cuda_build.KERNELS.values()]
    assert len(set(qualnames)) == len(qualnames) == 2 * len(TABLE)
    assert set(cuda_build.CUDA_KERNELS) == set(TABLE)
    for name, kernel in cpu.KERNELS.items():
        assert not isinstance(kernel._cache, NullCache), name
    a = cv.fq_array([1, 2])
    cpu.fq_add(a, a)  # serial
    cpu.fq_mul(a, a)  # parallel
    cpu.g1_to_affine(np.zeros((2, 12), np.uint64))  # chunked
    for name in ("fq_add", "fq_mul", "g1_to_affine"):
        index = cpu.KERNELS[name]._cache._cache_file._index_path
        assert os.path.exists(index), (name, index)
