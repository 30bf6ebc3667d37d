"""MSM on the CPU: Pippenger with signed digits and batch-affine buckets, parallel over windows.

    msm_g1(points (n, 8) uint64, scalars (n, 4) uint64) -> (8,) uint64 affine point
    msm_g2(points (n, 16) uint64, scalars (n, 4) uint64) -> (16,) uint64 affine point

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
Memory per window in flight: two sorted copies of the window's points (2 x 64 n bytes for
G1, 2 x 128 n for G2) plus half as much for the prefix products: ~160 n bytes for G1.
"""

import numpy as np
from numba import njit, prange

from cuzk.kernels.msm import (
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

# Cost model of one window, in Fq multiplications (measured ratios on this machine kind,
# see bench/bench_msm.py): a batch-affine addition ~ 5M + 1S plus its bookkeeping, a bucket
# in the running sums one mixed + one full Jacobian addition (7M+4S + 11M+5S), an inversion
# ~ 400M per batch round.
_COST_AFFINE_ADD = 9.0
_COST_BUCKET = 30.0
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
        cost = windows_for(c) * (n * _COST_AFFINE_ADD + H * _COST_BUCKET + rounds * _COST_INVERSION)
        if cost < best:
            best_c, best = c, cost
    return best_c


@njit(cache=True, nogil=True)
def _window_sum(points, digits, w, g, H, wins):
    """Window w: bucket sort, batch-affine rounds, weighted bucket sum into wins[w]."""
    n = points.shape[0]
    W = points.shape[1]
    counts = np.zeros(H + 1, np.int64)
    for i in range(n):
        counts[abs(digits[w, i])] += 1
    starts = np.empty(H + 1, np.int64)
    total = 0
    for m in range(1, H + 1):
        starts[m] = total
        total += counts[m]
    sums = np.zeros((H, W), np.uint64)  # bucket m at row m - 1; all zeros = empty
    if total > 0:
        pts = np.empty((total, W), np.uint64)
        cursor = starts.copy()
        for i in range(n):
            d = digits[w, i]
            if d != 0:
                m = abs(d)
                point_row_copy(points, i, pts, cursor[m], d < 0)
                cursor[m] += 1
        active = np.empty(H, np.int64)
        na = 0
        for m in range(1, H + 1):
            if counts[m] == 1:
                point_row_copy(pts, starts[m], sums, m - 1, False)
            elif counts[m] >= 2:
                active[na] = m
                na += 1
        out = np.empty((total, W), np.uint64)
        acc = np.empty((total // 2 + 1, W // 2), np.uint64)
        inv = np.empty((1, W // 2), np.uint64)
        kinds = np.empty(total // 2 + 1, np.int64)
        while na > 0:
            if g == 1:
                g1_batch_affine_round(pts, out, counts, starts, active, na, acc, inv, kinds)
            else:
                g2_batch_affine_round(pts, out, counts, starts, active, na, acc, inv, kinds)
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


@njit(cache=True, parallel=True)
def msm_pippenger(points, scalars, g, c, out):
    """out[0] = sum_i scalars[i] * points[i] in group g (1: G1, 2: G2), window width c."""
    n = points.shape[0]
    K = (255 + c - 1) // c
    H = 1 << (c - 1)
    digits = np.zeros((K, n), np.int32)
    for i in prange(n):
        if not (point_row_is_zero(points, i) or scalar_is_zero(scalars, i)):
            scalar_signed_digits(scalars, i, c, K, digits)
    wins = np.empty((K, 3 * (points.shape[1] // 2)), np.uint64)
    for w in prange(K):
        _window_sum(points, digits, w, g, H, wins)
    if g == 1:
        g1_windows_combine(wins, K, c, out)
    else:
        g2_windows_combine(wins, K, c, out)


@njit(cache=True)
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
    msm_pippenger(points, scalars, g, int(c or window_bits(points.shape[0])), out)
    return out[0]


def msm_g1(points, scalars, c: int | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G1 as an (8,) affine row (zeros = infinity)."""
    return _msm(points, scalars, 1, G1_WIDTH, "msm_g1", c)


def msm_g2(points, scalars, c: int | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G2 as a (16,) affine row (zeros = infinity)."""
    return _msm(points, scalars, 2, G2_WIDTH, "msm_g2", c)
