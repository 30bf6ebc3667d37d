"""MSM on the CPU: Pippenger with signed digits and batch-affine buckets, parallel over windows.

    msm_g1(points (n, 8) uint64, scalars (n, 4) uint64) -> (8,) uint64 affine point
    msm_g2(points (n, 16) uint64, scalars (n, 4) uint64) -> (16,) uint64 affine point
    (points may also be a cuzk.kernels.resident.ResidentPoints placed on "cpu")

Points are affine, Montgomery form, all zeros = infinity (the zkey layout; read-only and
unaligned views over an mmap are fine and are never copied); scalars are plain (not
Montgomery) little-endian limbs, as in a .wtns file. The result uses the same encoding.

Work plan (see cuzk.kernels.msm for the algorithms):
1. one parallel pass over the points writes the K signed digits of every scalar, leaving 0
   for zero scalars and points at infinity (so they are skipped everywhere after);
2. windows run in parallel (numba prange): each counting-sorts its points into buckets
   (negating the points of negative digits), adds pairs within buckets in batch-affine
   rounds until one point per bucket is left, and sums m * B_m with running sums;
3. Horner over the window sums, one inversion to affine.
Memory per thread: two sorted copies of a window's points (2 x 64 n bytes for G1,
2 x 128 n for G2) plus n/2 prefix products (32 or 64 bytes each), reused window after
window; plus the (K, n) int32 digits shared by all: ~160 n + 4 K n bytes for G1.
"""

import os

# Idle OpenMP workers sleep instead of spinning (the NTT module sets the same, see
# cuzk.kernels.ntt_cpu): on a shared 2-core machine spinning waiters cost a 2^12 MSM 40 ms
# of its 25. Read when the OpenMP runtime starts; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402
from numba import get_num_threads, njit, prange  # noqa: E402

from cuzk.kernels.msm import (  # noqa: E402
    g1_batch_affine_round,
    g1_bucket_weighted_sum,
    g1_windows_combine,
    g2_batch_affine_round,
    g2_bucket_weighted_sum,
    g2_windows_combine,
    point_row_copy,
    point_row_is_zero,
    scalar_is_zero,
    scalar_signed_digits,
    windows_for,
)

G1_WIDTH = 8
G2_WIDTH = 16
# Buckets whose batch-affine rounds run together: 256 G1 buckets of ~32 points at 2^15 are
# ~0.5 MiB of rows, an L2's worth (measured at 2^15, one thread: 280-285 ms all at once,
# 254-263 ms in chunks of 256, 278-284 ms in chunks of 64: smaller batches share the
# inversion among fewer pairs).
BUCKET_CHUNK = 256

# Cost model of one window, in Fq multiplications: a batch-affine addition ~ 5M + 1S plus
# its bookkeeping (~150 ns against 14 ns per multiplication, measured), an inversion ~ 400M
# per batch round, and per bucket the running sums (one mixed and one full Jacobian
# addition, ~560 ns measured) plus sorting and copying. The bucket weight is fitted so the
# choice matches the best measured c at 2^16 (c = 11; 11..15 span 293..350 ms of CPU time).
_COST_AFFINE_ADD = 9.0
_COST_BUCKET = 60.0
_COST_INVERSION = 400.0


def window_bits(n: int) -> int:
    """The window width c minimising the cost model for n points (c in 2..20)."""
    if n <= 1:
        return 2
    best_c, best = 2, float("inf")
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


@njit(cache=True, nogil=True)
def _window_sum(points, digits, w, g, H, wins, buf_a, buf_b, acc, kinds, sums, counts, starts,
                active):
    """Window w: bucket sort, batch-affine rounds, weighted bucket sum into wins[w].
    buf_a, buf_b: (n, W) scratch; acc: (n // 2 + 1, W // 2); kinds: (n // 2 + 1,);
    sums: (H, W); counts, starts, active: (H + 1,) — reused from window to window."""
    n = points.shape[0]
    counts[:] = 0
    for i in range(n):
        counts[abs(digits[w, i])] += 1
    total = 0
    for m in range(1, H + 1):
        starts[m] = total
        total += counts[m]
    sums[:] = 0  # bucket m at row m - 1; all zeros = empty
    pts = buf_a
    out = buf_b
    cursor = active  # the cursors of the sort, then the list of buckets still to add up
    for m in range(1, H + 1):
        cursor[m] = starts[m]
    for i in range(n):
        d = digits[w, i]
        if d != 0:
            m = abs(d)
            point_row_copy(points, i, pts, cursor[m], d < 0)
            cursor[m] += 1
    # Buckets in chunks whose points fit in the L2 cache: every round of a chunk runs before
    # the next chunk starts (the two buffers swap per round, so each chunk starts from buf_a).
    for m0 in range(1, H + 1, BUCKET_CHUNK):
        m1 = min(m0 + BUCKET_CHUNK, H + 1)
        pts = buf_a
        out = buf_b
        na = 0
        for m in range(m0, m1):
            if counts[m] == 1:
                point_row_copy(pts, starts[m], sums, m - 1, False)
            elif counts[m] >= 2:
                active[na] = m
                na += 1
        while na > 0:
            if g == 1:
                g1_batch_affine_round(pts, out, counts, starts, active, na, acc, kinds)
            else:
                g2_batch_affine_round(pts, out, counts, starts, active, na, acc, kinds)
            pts, out = out, pts
            na_next = 0
            for a in range(na):
                m = active[a]
                if counts[m] == 1:
                    point_row_copy(pts, starts[m], sums, m - 1, False)
                else:
                    active[na_next] = m
                    na_next += 1
            na = na_next
    if g == 1:
        g1_bucket_weighted_sum(sums, H, wins, w)
    else:
        g2_bucket_weighted_sum(sums, H, wins, w)


@njit(cache=True, nogil=True, parallel=True)
def msm_pippenger(points, scalars, g, c, threads, out):
    """out[0] = sum_i scalars[i] * points[i] in group g (1: G1, 2: G2), window width c,
    windows spread over ``threads`` threads."""
    n = points.shape[0]
    W = points.shape[1]
    K = (255 + c - 1) // c
    H = 1 << (c - 1)
    digits = np.zeros((K, n), np.int32)
    for i in prange(n):
        if not (point_row_is_zero(points, i) or scalar_is_zero(scalars, i)):
            scalar_signed_digits(scalars, i, c, K, digits)
    wins = np.empty((K, 3 * (W // 2)), np.uint64)
    # One group of windows per thread (w = t, t + T, ...), so each thread allocates its
    # scratch once (fresh allocations per window cost page faults: ~10% at 2^16).
    T = max(1, min(threads, K))
    for t in prange(T):
        buf_a = np.empty((n, W), np.uint64)
        buf_b = np.empty((n, W), np.uint64)
        acc = np.empty((n // 2 + 1, W // 2), np.uint64)
        kinds = np.empty(n // 2 + 1, np.int64)
        sums = np.empty((H, W), np.uint64)
        counts = np.empty(H + 1, np.int64)
        starts = np.empty(H + 1, np.int64)
        active = np.empty(H + 1, np.int64)
        for w in range(t, K, T):
            _window_sum(points, digits, w, g, H, wins, buf_a, buf_b, acc, kinds, sums, counts,
                        starts, active)
    if g == 1:
        g1_windows_combine(wins, K, c, out)
    else:
        g2_windows_combine(wins, K, c, out)


@njit(cache=True, nogil=True)
def _windows_combine(wins, c, g, out):
    if g == 1:
        g1_windows_combine(wins, wins.shape[0], c, out)
    else:
        g2_windows_combine(wins, wins.shape[0], c, out)


def windows_combine(wins, c: int, g: int) -> np.ndarray:
    """sum_w 2^{c w} wins[w] for Jacobian window sums ((K, 12) G1 or (K, 24) G2 rows), as
    an (8,) or (16,) affine row: the host's share of the CUDA MSM."""
    out = np.zeros((1, G1_WIDTH if g == 1 else G2_WIDTH), np.uint64)
    _windows_combine(np.ascontiguousarray(wins, dtype=np.uint64), int(c), int(g), out)
    return out[0]


def _check(points, scalars, width, name):
    from cuzk.kernels.resident import ResidentPoints

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


def _msm(points, scalars, g, width, name, c):
    points, scalars = _check(points, scalars, width, name)
    out = np.zeros((1, width), np.uint64)
    if points.shape[0] == 0:
        return out[0]
    c = int(c or window_bits(points.shape[0]))
    if not 2 <= c <= 24:
        raise ValueError(f"{name}: window width c = {c} outside 2..24")
    msm_pippenger(points, scalars, g, c, get_num_threads(), out)
    return out[0]


def msm_g1(points, scalars, c: int | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G1 as an (8,) affine row (zeros = infinity)."""
    return _msm(points, scalars, 1, G1_WIDTH, "msm_g1", c)


def msm_g2(points, scalars, c: int | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G2 as a (16,) affine row (zeros = infinity)."""
    return _msm(points, scalars, 2, G2_WIDTH, "msm_g2", c)
