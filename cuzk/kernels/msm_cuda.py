"""MSM on CUDA: Pippenger with signed digits, buckets sorted and reduced on the device.

    msm_g1(points_or_resident, scalars, curve="bn254") -> (2 NQ,) uint64 affine point
    msm_g2(points_or_resident, scalars, curve="bn254") -> (4 NQ,) uint64 affine point

``points_or_resident`` is a host array in the zkey layout ((n, 2 NQ) G1 or (n, 4 NQ) G2
uint64, Montgomery, affine, zeros = infinity; NQ = 4 on BN254, 6 on BLS12-381; copied to the
device for this call), a numba device array of that shape, or a
cuzk.kernels.points.ResidentPoints placed on the device once and reused (on the same curve).
Scalars are plain (n, 4) uint64 host or device arrays (on both curves).

Kernels, in launch order (the curve's kernels are written once, in cuzk.kernels.msm and
cuzk.kernels.pippenger_cuda, and built per curve and group; their names in CUDA_KERNELS carry
the curve after "msm_" for every curve but BN254: msm_bls12_381_g1_bucket_accumulate):

    msm_signed_digits        thread per point: K signed c-bit digits of its scalar
                             (0 for zero scalars and points at infinity: skipped;
                             cuzk.kernels.msm, built per curve)
    msm_bucket_count         thread per (window, point): atomic count of bucket sizes
    msm_exclusive_scan       one block: bucket starts = exclusive prefix sum of the sizes
    msm_bucket_scatter       thread per (window, point): its (index, sign) entry into its
                             bucket's slice (a counting sort; order within a bucket is
                             whatever the atomics give, and addition does not care)
    msm_gX_bucket_accumulate thread per bucket: Jacobian sum of its points (mixed adds)
    msm_gX_bucket_reduce     thread per (window, segment of buckets): sum of m * B_m
                             over the segment, by running sums plus lo * (segment sum)
    msm_gX_window_sums       thread per window: sum of its segments

Everything stays on the device between launches; the host reads back the K window sums
(K Jacobian points) and finishes on the CPU: Horner over the windows (c doublings each)
and one inversion to affine, ~0.1 ms there against milliseconds for one GPU thread.
"""

from __future__ import annotations

import math

import numpy as np

from cuzk.arith.curves import CURVES, DEFAULT, build_params
from cuzk.arith.jit import KernelTable, cuda_simulated, get_target, require_cuda
from cuzk.kernels.msm import windows_for
from cuzk.kernels.points import ResidentPoints, point_width

T = get_target("cuda")
# Each curve's builds: its digit kernel (cuzk.kernels.msm) and each group's bucket kernels
# (cuzk.kernels.pippenger_cuda). Loading a build compiles nothing (kernels compile at their
# first launch): every curve's are listed, so tests/test_ptx.py compiles them all.
_M = {curve: T.load("cuzk.kernels.msm", **build_params(curve)) for curve in CURVES}
_G = {
    (curve, g): T.load("cuzk.kernels.pippenger_cuda", group=f"g{g}", **build_params(curve))
    for curve in CURVES
    for g in (1, 2)
}

from numba import cuda, types  # noqa: E402  (after the CUDA builds: same numba.cuda they use)

SCAN_THREADS = 1024  # the single block of msm_exclusive_scan (its shared array size)
SEGMENTS = 128  # bucket segments per window in msm_gX_bucket_reduce (at most H)


# ========================== curve- and group-independent kernels ==========================


def msm_bucket_count(digits, H, counts):
    """counts[w H + |d| - 1] += 1 for every nonzero digit d of window w."""
    t = cuda.grid(1)
    n = digits.shape[1]
    if t < digits.shape[0] * n:
        w = t // n
        d = digits[w, t - w * n]
        if d != 0:
            cuda.atomic.add(counts, w * H + abs(d) - 1, 1)


def msm_exclusive_scan(counts, starts):
    """starts[b] = counts[0] + ... + counts[b-1], by one block: each thread sums a chunk,
    thread 0 scans the chunk totals, each thread writes its chunk's prefixes."""
    totals = cuda.shared.array(SCAN_THREADS, np.int64)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    L = counts.shape[0]
    chunk = (L + nt - 1) // nt
    lo = t * chunk
    hi = min(lo + chunk, L)
    s = 0
    for b in range(lo, hi):
        s += counts[b]
    totals[t] = s
    cuda.syncthreads()
    if t == 0:
        run = 0
        for j in range(nt):
            v = totals[j]
            totals[j] = run
            run += v
    cuda.syncthreads()
    run = totals[t]
    for b in range(lo, hi):
        starts[b] = run
        run += counts[b]


def msm_bucket_scatter(digits, H, starts, cursors, entries):
    """entries[starts[b] + k] = 2 i + (d < 0) for the k-th point to land in bucket b."""
    t = cuda.grid(1)
    n = digits.shape[1]
    if t < digits.shape[0] * n:
        w = t // n
        i = t - w * n
        d = digits[w, i]
        if d != 0:
            b = w * H + abs(d) - 1
            pos = starts[b] + cuda.atomic.add(cursors, b, 1)
            neg = 1 if d < 0 else 0
            entries[pos] = np.uint32(2 * i + neg)


def kernel_prefix(curve: str) -> str:
    """The start of a curve's kernel names in CUDA_KERNELS: "msm_" for BN254 (the names it
    always had), "msm_<curve>_" for another."""
    return "msm_" if curve == DEFAULT else f"msm_{curve}_"


# name -> (python function, argument types): tests/test_ptx.py compiles each to PTX (cc 9.0).
U2 = types.Array(types.uint64, 2, "C")
I2 = types.Array(types.int32, 2, "C")
I32 = types.Array(types.int32, 1, "C")
I64 = types.Array(types.int64, 1, "C")
E32 = types.Array(types.uint32, 1, "C")
i64 = types.int64
CUDA_KERNELS = KernelTable(
    {
        "msm_bucket_count": (msm_bucket_count, (I2, i64, I32)),
        "msm_exclusive_scan": (msm_exclusive_scan, (I32, I64)),
        "msm_bucket_scatter": (msm_bucket_scatter, (I2, i64, I64, I32, E32)),
    }
)
_GROUP_SIGS = {
    "bucket_accumulate": (U2, E32, I64, I32, U2),
    "bucket_reduce": (U2, i64, i64, U2),
    "window_sums": (U2, i64, U2),
}
_FIELD_KERNELS = []  # kernels that multiply field elements
for _curve in CURVES:
    _pre = kernel_prefix(_curve)
    CUDA_KERNELS[f"{_pre}signed_digits"] = (_M[_curve].msm_signed_digits, (U2, U2, i64, i64, I2))
    for _g in (1, 2):
        for _name, _sig in _GROUP_SIGS.items():
            CUDA_KERNELS[f"{_pre}g{_g}_{_name}"] = (getattr(_G[(_curve, _g)], _name), _sig)
            _FIELD_KERNELS.append(f"{_pre}g{_g}_{_name}")
# kernels that multiply field elements: their PTX must hold the 64x64->128 high product
CUDA_KERNELS.expect = {name: ["mul.hi.u64"] for name in _FIELD_KERNELS}


def window_bits(n: int) -> int:
    """Window width on the GPU: about n / 2^3 buckets per window (one thread per bucket
    wants many buckets), c in 4..16 (below 4, the 64+ windows cost more than they save)."""
    return max(4, min(16, int(round(math.log2(max(n, 1)))) - 3))


def _on_device(a) -> bool:
    """A numba device array (real or simulated; the simulator has no is_cuda_array)."""
    return hasattr(a, "copy_to_host")


def _device_points(points, width, name, curve):
    if isinstance(points, ResidentPoints):
        if points.curve != curve:
            raise ValueError(f"{name}: point set {points.name!r} is on {points.curve}, not {curve}")
        points.touch()
        points = points.array  # a "cpu" one holds a host array: copied below like any other
    if _on_device(points):
        arr = points
    else:
        host = np.asarray(points)
        if host.dtype != np.uint64 or host.ndim != 2 or host.shape[1] != width:
            raise ValueError(
                f"{name}: points must be (n, {width}) uint64 on {curve}, "
                f"got {host.dtype} {host.shape}"
            )
        arr = cuda.to_device(np.require(host, requirements=["C", "A"]))
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{name}: points must be (n, {width}) on {curve}, got {tuple(arr.shape)}")
    return arr


def _device_scalars(scalars, n, name):
    if _on_device(scalars):
        arr = scalars
    else:
        host = np.asarray(scalars)
        if host.dtype != np.uint64 or host.ndim != 2 or host.shape[1] != 4:
            raise ValueError(
                f"{name}: scalars must be (n, 4) uint64, got {host.dtype} {host.shape}"
            )
        arr = cuda.to_device(np.require(host, requirements=["C", "A"]))
    if arr.shape[0] != n:
        raise ValueError(f"{name}: {n} points but {arr.shape[0]} scalars")
    return arr


def _msm(points, scalars, g, name, c, segments, curve):
    width = point_width(g, curve)  # (checks the curve's name)
    require_cuda()
    pts = _device_points(points, width, name, curve)
    n = pts.shape[0]
    sc = _device_scalars(scalars, n, name)
    if n == 0:
        return np.zeros(width, np.uint64)
    if n >= 1 << 31:
        raise ValueError(f"{name}: at most 2^31 - 1 points per MSM (bucket entries are uint32)")
    c = int(c or window_bits(n))
    if not 2 <= c <= 24:
        raise ValueError(f"{name}: window width c = {c} outside 2..24")
    K = windows_for(c, _M[curve].R_BITS)
    H = 1 << (c - 1)
    L = K * H
    jw = 3 * width // 2  # Jacobian row width
    S = min(int(segments or SEGMENTS), H)
    if H % S:
        raise ValueError(f"{name}: segments ({S}) must divide the 2^{c - 1} buckets of a window")
    pre = kernel_prefix(curve)
    digits = cuda.device_array((K, n), np.int32)
    CUDA_KERNELS.launch(f"{pre}signed_digits", n, pts, sc, c, K, digits)
    counts = cuda.to_device(np.zeros(L, np.int32))
    CUDA_KERNELS.launch("msm_bucket_count", K * n, digits, H, counts)
    starts = cuda.device_array(L, np.int64)
    scan_threads = min(32 if cuda_simulated() else SCAN_THREADS, 1 << max(5, (L - 1).bit_length()))
    CUDA_KERNELS.kernel("msm_exclusive_scan")[1, scan_threads](counts, starts)
    cursors = cuda.to_device(np.zeros(L, np.int32))
    entries = cuda.device_array(K * n, np.uint32)
    CUDA_KERNELS.launch("msm_bucket_scatter", K * n, digits, H, starts, cursors, entries)
    buckets = cuda.device_array((L, jw), np.uint64)
    CUDA_KERNELS.launch(f"{pre}g{g}_bucket_accumulate", L, pts, entries, starts, counts, buckets)
    segs = cuda.device_array((K * S, jw), np.uint64)
    CUDA_KERNELS.launch(f"{pre}g{g}_bucket_reduce", K * S, buckets, H, H // S, segs)
    wins = cuda.device_array((K, jw), np.uint64)
    CUDA_KERNELS.launch(f"{pre}g{g}_window_sums", K, segs, S, wins)
    from cuzk.kernels.msm_cpu import windows_combine

    return windows_combine(wins.copy_to_host(), c, g, curve)


def msm_g1(
    points, scalars, c: int | None = None, segments: int | None = None, curve: str = DEFAULT
) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G1 of ``curve`` (cuzk.arith.curves' name) on the CUDA
    device, as a (2 NQ,) affine row ((8,) on BN254, (12,) on BLS12-381).
    c: window width (default window_bits(n)); segments: bucket segments per window in the
    reduction (default SEGMENTS, at most 2^(c-1); a power of two)."""
    return _msm(points, scalars, 1, "msm_g1", c, segments, curve)


def msm_g2(
    points, scalars, c: int | None = None, segments: int | None = None, curve: str = DEFAULT
) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G2 of ``curve`` on the CUDA device, as a (4 NQ,)
    affine row ((16,) on BN254, (24,) on BLS12-381; c, segments: see msm_g1)."""
    return _msm(points, scalars, 2, "msm_g2", c, segments, curve)
