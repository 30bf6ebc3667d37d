"""Pippenger's method on the CPU for one group: built per group (CPU target only).

``get_target("cpu").load("cuzk.kernels.pippenger_cpu", group="g1")`` (or "g2"): the drivers
of cuzk.kernels.msm_cpu (the public entry points, which pick the build). Windows run in
parallel (numba prange): each counting-sorts its points into buckets (negating the points of
negative digits), adds pairs within buckets in batch-affine rounds until one point per bucket
is left (cuzk.kernels.buckets), and sums m * B_m with running sums (in batch-affine lanes, or
Jacobian when lanes = 0); then Horner over the window sums and one inversion to affine.
"""

import numpy as np
from numba import prange

from cuzk.arith.jit import building

T = building()
GROUP = T.param("group")
B = T.load("cuzk.kernels.buckets", group=GROUP)
M = T.load("cuzk.kernels.msm")

# Buckets whose batch-affine rounds run together: 256 G1 buckets of ~32 points at 2^15 are
# ~0.5 MiB of rows, an L2's worth (measured at 2^15, one thread: 280-285 ms all at once,
# 254-263 ms in chunks of 256, 278-284 ms in chunks of 64: smaller batches share the
# inversion among fewer pairs).
BUCKET_CHUNK = 256


@T.njit()
def window_sum(points, digits, w, H, L, wins, scratch):
    """Window w: bucket sort, batch-affine rounds, bucket sum (in L lanes, or Jacobian running
    sums when L = 0) into wins[w]; H buckets. scratch (reused from window to window, see
    pippenger): buf_a, buf_b (n, W); acc (n // 2 + 1, W // 2); kinds (n // 2 + 1,); sums
    (H, W); counts, starts, active (H + 1,); lanes_r, lanes_s (L, W)."""
    buf_a, buf_b, acc, kinds, sums, counts, starts, active, lanes_r, lanes_s = scratch
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
            M.point_row_copy(points, i, pts, cursor[m], d < 0)
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
                M.point_row_copy(pts, starts[m], sums, m - 1, False)
            elif counts[m] >= 2:
                active[na] = m
                na += 1
        while na > 0:
            B.batch_affine_round(pts, out, counts, starts, active, na, acc, kinds)
            pts, out = out, pts
            na_next = 0
            for a in range(na):
                m = active[a]
                if counts[m] == 1:
                    M.point_row_copy(pts, starts[m], sums, m - 1, False)
                else:
                    active[na_next] = m
                    na_next += 1
            na = na_next
    if L == 0:
        B.bucket_weighted_sum(sums, H, wins, w)
    else:
        B.bucket_lanes_sum(sums, H, L, lanes_r, lanes_s, acc, kinds, wins, w)


@T.njit(parallel=True)
def pippenger(points, scalars, c, lanes, threads, out):
    """out[0] = sum_i scalars[i] * points[i] in this build's group, window width c, windows
    spread over ``threads`` threads."""
    n = points.shape[0]
    W = points.shape[1]
    K = (255 + c - 1) // c
    H = 1 << (c - 1)
    L = min(H, lanes)
    # Scalars are below r < 2^254, so the top window's digits are at most 2^(254 - c (K - 1))
    # (its bits plus a carry): it needs only that many buckets.
    H_top = min(H, 1 << max(254 - c * (K - 1), 0))
    digits = np.zeros((K, n), np.int32)
    for i in prange(n):
        if not (M.point_row_is_zero(points, i) or M.scalar_is_zero(scalars, i)):
            M.scalar_signed_digits(scalars, i, c, K, digits)
    wins = np.empty((K, 3 * (W // 2)), np.uint64)
    # One group of windows per thread (w = t, t + T, ...), so each thread allocates its
    # scratch once (fresh allocations per window cost page faults: ~10% at 2^16).
    T = max(1, min(threads, K))
    for t in prange(T):
        scratch = (
            np.empty((n, W), np.uint64),  # buf_a
            np.empty((n, W), np.uint64),  # buf_b
            np.empty((max(n // 2, L) + 1, W // 2), np.uint64),  # acc
            np.empty(max(n // 2, L) + 1, np.int64),  # kinds
            np.empty((H, W), np.uint64),  # sums
            np.empty(H + 1, np.int64),  # counts
            np.empty(H + 1, np.int64),  # starts
            np.empty(H + 1, np.int64),  # active
            np.empty((max(L, 1), W), np.uint64),  # lanes_r
            np.empty((max(L, 1), W), np.uint64),  # lanes_s
        )
        for w in range(t, K, T):
            Hw = H if w < K - 1 else H_top
            window_sum(points, digits, w, Hw, min(L, Hw), wins, scratch)
    B.windows_combine(wins, K, c, out)


@T.njit()
def windows_combine(wins, c, out):
    """out[0] = affine(sum_w 2^{c w} wins[w]) for Jacobian window sums (the host's share of
    the CUDA MSM)."""
    B.windows_combine(wins, wins.shape[0], c, out)
