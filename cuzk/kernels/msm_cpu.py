"""MSM on the CPU: Pippenger with signed digits and batch-affine buckets, parallel over windows.

    msm_g1(points (n, 8) uint64, scalars (n, 4) uint64) -> (8,) uint64 affine point
    msm_g2(points (n, 16) uint64, scalars (n, 4) uint64) -> (16,) uint64 affine point
    (points may also be a cuzk.kernels.points.ResidentPoints placed on "cpu")

Points are affine, Montgomery form, all zeros = infinity (the zkey layout; read-only and
unaligned views over an mmap are fine and are never copied); scalars are plain (not
Montgomery) little-endian limbs, as in a .wtns file. The result uses the same encoding.

Work plan (see cuzk.kernels.msm for the algorithms):
1. one parallel pass over the points writes the K signed digits of every scalar, leaving 0
   for zero scalars and points at infinity (so they are skipped everywhere after);
2. windows run in parallel (numba prange): each counting-sorts its point indices into
   buckets, then gathers the points bucket chunk by bucket chunk (negating the points of
   negative digits), adds pairs within buckets in batch-affine rounds until one point per
   bucket is left, and sums m * B_m with running sums kept in LANES batch-affine lanes
   (cuzk.kernels.buckets.bucket_lanes_sum);
3. Horner over the window sums, one inversion to affine.
Memory: the (K, n) int16 digits (int32 when c > 16) shared by all threads, and per thread
an (n,) int32 sort order, two chunk buffers of CHUNK_BYTES, the H bucket sums and two rows
per lane, reused window after window: ~2 K n + 4 n T bytes plus ~3 MiB per thread.
"""

import os

# Idle OpenMP workers sleep instead of spinning (the NTT module sets the same, see
# cuzk.kernels.ntt_cpu): on a shared 2-core machine spinning waiters cost a 2^12 MSM 40 ms
# of its 25. Read when the OpenMP runtime starts; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402
from numba import get_num_threads  # noqa: E402

from cuzk.arith.jit import get_target  # noqa: E402
from cuzk.kernels.msm import windows_for
from cuzk.kernels.points import G1_WIDTH, G2_WIDTH, ResidentPoints  # noqa: E402

# The drivers of each group (cuzk.kernels.pippenger_cpu, built per group).
_CPU = get_target("cpu")
PIPPENGER = {
    1: _CPU.load("cuzk.kernels.pippenger_cpu", group="g1"),
    2: _CPU.load("cuzk.kernels.pippenger_cpu", group="g2"),
}


# Cost model of one window, in Fq multiplications: a batch-affine addition ~ 5M + 1S plus
# its bookkeeping (~150 ns against 14 ns per multiplication, measured), an inversion ~ 400M
# per batch round, and per bucket the two batch-affine additions of the lanes' running sums
# plus sorting and copying. The bucket weight is fitted so the choice matches the best
# measured c (2 threads, lanes of 128: G1 c = 12 at 2^15 points ~ 24.6k, 12..15 flat at
# ~98k; G2 best at 12..14).
_COST_AFFINE_ADD = 9.0
_COST_BUCKET = 25.0
_COST_INVERSION = 400.0
# The binary method (c = 1, buckets.double_and_add) in the same units: a Jacobian doubling
# ~ 7M, a mixed addition ~ 11M, and it runs on one thread where the buckets use all. It needs
# no inversion, so it wins for a handful of points: the proof's blinding sums (3 to 5 points)
# took ~1 ms each by buckets, 0.1-0.2 ms by it (2 threads, measured); the two cross near 32
# points in G2 and 64 in G1, and the model switches at 27.
_COST_DOUBLING = 8.0
_COST_MIXED_ADD = 20.0

# Lanes of the batch-affine bucket sums (cuzk.kernels.buckets.bucket_lanes_sum), a power of
# two; lanes=0 selects the Jacobian running sums (cuzk.kernels.buckets.bucket_weighted_sum).
# Measured per bucket at H = 4096, one thread: Jacobian 780-860 ns; lanes of 64: 760 ns,
# 128 or 256: 470 ns (one inversion per 128 additions), 512: 550 ns.
LANES = 128

# Bytes of each of a window's two chunk buffers (cuzk.kernels.pippenger_cpu): a chunk of
# buckets is gathered from the points, through the window's sort order, just before its
# rounds, so a thread's scratch is two 1 MiB buffers (16384 G1 rows, 8192 G2 rows) and an
# (n,) int32 order instead of two sorted copies of all n points (at 2^17 in G2: 2 x 12.6 MiB
# per thread). A chunk of BUCKET_CHUNK buckets of random scalars is well below that up to
# 2^20 points; a bucket with more points than a chunk (a skewed window: many equal scalars)
# is added up in pieces, each starting from the sum of the ones before.
CHUNK_BYTES = 1 << 20


def digit_dtype(c: int):
    """The digits' type for window width c: int16 up to c = 16 (a digit of a lower window is
    in [-2^(c-1), 2^(c-1)), the top window's at most 2^(254 - c (K - 1)) <= 2^14 there), so
    the (K, n) digits take 2 bytes a point per window (at 2^17: 5 MiB instead of 10)."""
    return np.int16 if c <= 16 else np.int32


def window_bits(n: int) -> int:
    """The window width c minimising the cost model for n points: 1 (the binary method) or
    2..20 (buckets)."""
    best_c = 1
    best = 254 * _COST_DOUBLING + n * 127 * _COST_MIXED_ADD  # about half the bits are set
    for c in range(2, 21):
        H = 1 << (c - 1)
        per_bucket = max(n / H, 1.0)
        rounds = max(np.log2(per_bucket), 0.0) + 2.0
        adds = n - H * (1.0 - np.exp(-n / H))  # points minus non-empty buckets
        cost = windows_for(c) * (
            adds * _COST_AFFINE_ADD + H * _COST_BUCKET + rounds * _COST_INVERSION
        )
        if cost < best:
            best_c, best = c, cost
    return best_c


def windows_combine(wins, c: int, g: int) -> np.ndarray:
    """sum_w 2^{c w} wins[w] for Jacobian window sums ((K, 12) G1 or (K, 24) G2 rows), as
    an (8,) or (16,) affine row: the host's share of the CUDA MSM."""
    out = np.zeros((1, G1_WIDTH if g == 1 else G2_WIDTH), np.uint64)
    PIPPENGER[g].windows_combine(np.ascontiguousarray(wins, dtype=np.uint64), int(c), out)
    return out[0]


def _check(points, scalars, width, name):
    if isinstance(points, ResidentPoints):
        if points.device != "cpu":
            raise ValueError(f"{name}: point set {points.name!r} is on {points.device}, not cpu")
        points.touch()
        points = points.array
    points = np.asarray(points)
    scalars = np.asarray(scalars)
    if points.dtype != np.uint64 or points.ndim != 2 or points.shape[1] != width:
        raise ValueError(
            f"{name}: points must be (n, {width}) uint64, got {points.dtype} {points.shape}"
        )
    if scalars.dtype != np.uint64 or scalars.ndim != 2 or scalars.shape[1] != 4:
        raise ValueError(
            f"{name}: scalars must be (n, 4) uint64, got {scalars.dtype} {scalars.shape}"
        )
    if scalars.shape[0] != points.shape[0]:
        raise ValueError(f"{name}: {points.shape[0]} points but {scalars.shape[0]} scalars")
    return points, scalars


def _msm(points, scalars, g, width, name, c, lanes=None, rows=None):
    points, scalars = _check(points, scalars, width, name)
    out = np.zeros((1, width), np.uint64)
    if points.shape[0] == 0:
        return out[0]
    c = int(c or window_bits(points.shape[0]))
    if not 1 <= c <= 24:
        raise ValueError(f"{name}: window width c = {c} outside 1..24")
    lanes = LANES if lanes is None else int(lanes)
    if lanes < 0 or lanes & (lanes - 1):
        raise ValueError(f"{name}: lanes = {lanes} is not 0 or a power of two")
    rows = CHUNK_BYTES // (8 * width) if rows is None else int(rows)
    if rows < 2:
        raise ValueError(f"{name}: rows = {rows}: a chunk needs at least 2 rows")
    # (c = 1, the binary method, reads the scalars' bits directly: no digits)
    digits = np.zeros((0 if c == 1 else windows_for(c), points.shape[0]), digit_dtype(c))
    PIPPENGER[g].pippenger(points, scalars, c, lanes, rows, get_num_threads(), digits, out)
    return out[0]


def msm_g1(
    points, scalars, c: int | None = None, lanes: int | None = None, rows: int | None = None
) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G1 as an (8,) affine row (zeros = infinity)."""
    return _msm(points, scalars, 1, G1_WIDTH, "msm_g1", c, lanes, rows)


def msm_g2(
    points, scalars, c: int | None = None, lanes: int | None = None, rows: int | None = None
) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G2 as a (16,) affine row (zeros = infinity)."""
    return _msm(points, scalars, 2, G2_WIDTH, "msm_g2", c, lanes, rows)
