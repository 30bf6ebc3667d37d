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
from cuzk.arith.limbs import cpu_fetch_add, cpu_prefetch_row

T = building()
GROUP = T.param("group")
B = T.load("cuzk.kernels.buckets", group=GROUP)
M = T.load("cuzk.kernels.msm")
prefetch_row = cpu_prefetch_row()
fetch_add = cpu_fetch_add()

# Buckets whose batch-affine rounds run together (at most: a chunk also closes when its
# buffers are full, msm_cpu.CHUNK_BYTES): 256 G1 buckets of ~32 points at 2^15 are
# ~0.5 MiB of rows, an L2's worth (measured at 2^15, one thread: 280-285 ms all at once,
# 254-263 ms in chunks of 256, 278-284 ms in chunks of 64: smaller batches share the
# inversion among fewer pairs).
BUCKET_CHUNK = 256
# How many rows ahead a chunk's gather prefetches (the points are read in bucket order, i.e.
# at random: without it the gather waited on each row's cache miss).
PREFETCH = 16


@T.njit()
def window_sum(points, digits, w, H, L, wins, scratch):
    """Window w: bucket sort, batch-affine rounds, bucket sum (in L lanes, or Jacobian running
    sums when L = 0) into wins[w]; H buckets. scratch (reused from window to window, see
    pippenger): order (n,) int32; buf_a, buf_b (R, W) with R = min(n, rows);
    acc (R // 2 + 1, W // 2); kinds (R // 2 + 1,); sums (H, W); counts, starts (H + 1,);
    slot_start, slot_count, slot_bucket, active (BUCKET_CHUNK,); lanes_r, lanes_s (L, W)."""
    order, buf_a, buf_b, acc, kinds, sums, counts, starts = scratch[0:8]
    slot_start, slot_count, slot_bucket, active, lanes_r, lanes_s = scratch[8:14]
    n = points.shape[0]
    rows = buf_a.shape[0]
    counts[:] = 0
    for i in range(n):
        counts[abs(np.int64(digits[w, i]))] += 1  # int64: abs(-2^15) overflows int16
    total = 0
    for m in range(1, H + 1):
        starts[m] = total
        total += counts[m]
    # Counting sort of the point indices by bucket (~i for a negative digit: the point is
    # negated when gathered); starts[m] is bucket m's cursor meanwhile, then moved back.
    for i in range(n):
        d = np.int64(digits[w, i])
        if d != 0:
            m = abs(d)
            order[starts[m]] = i if d > 0 else ~i
            starts[m] += 1
    for m in range(1, H + 1):
        starts[m] -= counts[m]
    sums[:] = 0  # bucket m at row m - 1; all zeros = empty
    m = 1
    done = 0  # points of bucket m already added up into sums[m - 1]
    while m <= H:
        # Gather a chunk: whole buckets while they fit, or a piece of one that alone does not.
        na = 0
        fill = 0
        while m <= H and na < BUCKET_CHUNK:
            left = counts[m] - done
            if left == 0:
                m += 1
                done = 0
                continue
            if left == 1 and done == 0:  # a bucket of one point is its own sum
                k = order[starts[m]]
                M.point_row_copy(points, k if k >= 0 else ~k, sums, m - 1, k < 0)
                m += 1
                continue
            carried = 1 if done > 0 else 0  # the sum of the bucket's pieces so far
            take = left
            if left + carried > rows - fill:
                if fill > 0:
                    break  # the bucket goes to the next chunk
                take = rows - carried  # a piece of a bucket bigger than a chunk
            slot_start[na] = fill
            slot_count[na] = take + carried
            slot_bucket[na] = m
            active[na] = na
            na += 1
            if carried:
                M.point_row_copy(sums, m - 1, buf_a, fill, False)
                fill += 1
            base = starts[m] + done
            for j in range(take):
                ahead = order[min(base + j + PREFETCH, total - 1)]
                prefetch_row(points, ahead if ahead >= 0 else ~ahead)
                k = order[base + j]
                M.point_row_copy(points, k if k >= 0 else ~k, buf_a, fill, k < 0)
                fill += 1
            done += take
            if done < counts[m]:
                break  # the rest of the bucket starts the next chunk
            m += 1
            done = 0
        # Every round of the chunk before the next one (the buffers swap per round).
        pts = buf_a
        out = buf_b
        while na > 0:
            B.batch_affine_round(pts, out, slot_count, slot_start, active, na, acc, kinds)
            pts, out = out, pts
            na_next = 0
            for a in range(na):
                s = active[a]
                if slot_count[s] == 1:
                    M.point_row_copy(pts, slot_start[s], sums, slot_bucket[s] - 1, False)
                else:
                    active[na_next] = s
                    na_next += 1
            na = na_next
    if L == 0:
        B.bucket_weighted_sum(sums, H, wins, w)
    else:
        B.bucket_lanes_sum(sums, H, L, lanes_r, lanes_s, acc, kinds, wins, w)


@T.njit(parallel=True)
def pippenger(points, scalars, c, lanes, rows, threads, digits, out):
    """out[0] = sum_i scalars[i] * points[i] in this build's group, window width c, chunks of
    at most ``rows`` rows (see msm_cpu.CHUNK_BYTES), windows spread over ``threads`` threads.
    digits: (K, n) zeros, K = ceil(255 / c), int16 (c <= 16) or int32 (see msm_cpu).
    c = 1 is the binary method (buckets.double_and_add: windows of one bit share the
    doublings; no digits, no buckets)."""
    n = points.shape[0]
    if c == 1:
        reduced = np.empty((n, 4), np.uint64)  # each scalar reduced once, not once a bit
        for i in range(n):
            s = M.scalar_load_reduced(scalars, i)
            for k in range(4):
                reduced[i, k] = s[k]
        B.double_and_add(points, reduced, out)
        return
    W = points.shape[1]
    K = digits.shape[0]  # ceil(255 / c), allocated by the caller (msm_cpu)
    H = 1 << (c - 1)
    L = min(H, lanes)
    # Scalars are below r < 2^254, so the top window's digits are at most 2^(254 - c (K - 1))
    # (its bits plus a carry): it needs only that many buckets.
    H_top = min(H, 1 << max(254 - c * (K - 1), 0))
    for i in prange(n):
        if not (M.point_row_is_zero(points, i) or M.scalar_is_zero(scalars, i)):
            M.scalar_signed_digits(scalars, i, c, K, digits)
    wins = np.empty((K, 3 * (W // 2)), np.uint64)
    # T workers, each allocating its scratch once (fresh allocations per window cost page
    # faults: ~10% at 2^16), take windows from a shared counter: whoever is free takes the
    # next, so a thread slowed by another process on the machine does fewer windows instead
    # of holding up the rest (the top window, the cheapest, goes last).
    T = max(1, min(threads, K))
    R = max(min(n, rows), 2)
    # (np.empty and a store: the parallel pass turns np.zeros into a loop of its own, after
    # which a read of a counter so made gave 0 in a test: tests/test_field.py)
    ticket = np.empty(1, np.int64)
    ticket[0] = 0
    for _worker in prange(T):
        scratch = (
            np.empty(n, np.int32),  # order
            np.empty((R, W), np.uint64),  # buf_a
            np.empty((R, W), np.uint64),  # buf_b
            np.empty((max(R // 2, L) + 1, W // 2), np.uint64),  # acc
            np.empty(max(R // 2, L) + 1, np.int64),  # kinds
            np.empty((H, W), np.uint64),  # sums
            np.empty(H + 1, np.int64),  # counts
            np.empty(H + 1, np.int64),  # starts
            np.empty(BUCKET_CHUNK, np.int64),  # slot_start
            np.empty(BUCKET_CHUNK, np.int64),  # slot_count
            np.empty(BUCKET_CHUNK, np.int64),  # slot_bucket
            np.empty(BUCKET_CHUNK, np.int64),  # active
            np.empty((max(L, 1), W), np.uint64),  # lanes_r
            np.empty((max(L, 1), W), np.uint64),  # lanes_s
        )
        w = fetch_add(ticket, 0, 1)
        while w < K:
            Hw = H if w < K - 1 else H_top
            window_sum(points, digits, w, Hw, min(L, Hw), wins, scratch)
            w = fetch_add(ticket, 0, 1)
    B.windows_combine(wins, K, c, out)


@T.njit()
def windows_combine(wins, c, out):
    """out[0] = affine(sum_w 2^{c w} wins[w]) for Jacobian window sums (the host's share of
    the CUDA MSM)."""
    B.windows_combine(wins, wins.shape[0], c, out)
