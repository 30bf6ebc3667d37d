"""Pippenger's method on the CPU for one group: built per (group, curve) (CPU target only).

``get_target("cpu").load("cuzk.kernels.pippenger_cpu", group="g1")`` (or "g2"; BN254, adding
``curve="bls12_381"`` for another curve: cuzk.arith.curves.build_params): the drivers of
cuzk.kernels.msm_cpu (the public entry points, which pick the build). Windows run in
parallel (numba prange): each counting-sorts its points into buckets (negating the points of
negative digits), adds pairs within buckets in batch-affine rounds until one point per bucket
is left (cuzk.kernels.buckets), and sums m * B_m with running sums (in batch-affine lanes, or
Jacobian when lanes = 0); then Horner over the window sums and one inversion to affine.
"""

import numpy as np
from numba import prange

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building
from cuzk.arith.limbs import cpu_fetch_add, cpu_prefetch_row

T = building()
GROUP = T.param("group")
CURVE = T.param("curve", DEFAULT)
B = T.load("cuzk.kernels.buckets", group=GROUP, **build_params(CURVE))
G = T.load("cuzk.arith.group", group=GROUP, **build_params(CURVE))
M = T.load("cuzk.kernels.msm", **build_params(CURVE))
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


@T.row_fn
def subset_point(idx, k):
    """(point index, negate) of entry k of a window's order: k is a position j in idx, or ~j
    for a negative digit; idx[j] is a point index i, or ~i for a scalar used as -(r - s)."""
    neg = k < 0
    j = ~k if neg else k
    if idx.shape[0] == 0:  # every point, in order
        return j, neg
    i = idx[j]
    if i < 0:
        return ~i, not neg
    return i, neg


@T.njit()
def window_sum(points, idx, digits, w, H, L, wins, scratch):
    """Window w over the points idx[j] (~i: the point negated) with digits[w, j]: bucket sort
    (into point indices),
    batch-affine rounds, bucket sum (in L lanes, or Jacobian running sums when L = 0) into
    wins[w]; H buckets; n = len(idx). scratch (reused from window to window, see
    pippenger): order (n,) int32; buf_a, buf_b (R, W) with R = min(n, rows);
    acc (max(R // 2, 2 L) + 1, W // 2); kinds (the same rows); sums (H, W); counts, starts (H + 1,);
    slot_start, slot_count, slot_bucket, active (BUCKET_CHUNK,); lanes_r, lanes_s (L, W)."""
    order, buf_a, buf_b, acc, kinds, sums, counts, starts = scratch[0:8]
    slot_start, slot_count, slot_bucket, active, lanes_r, lanes_s = scratch[8:14]
    n = digits.shape[1]  # the points idx selects
    rows = buf_a.shape[0]
    counts[:] = 0
    for i in range(n):
        counts[abs(np.int64(digits[w, i]))] += 1  # int64: abs(-2^15) overflows int16
    total = 0
    for m in range(1, H + 1):
        starts[m] = total
        total += counts[m]
    # Counting sort of the point indices by bucket (~i where the point is negated when
    # gathered: a negative digit, or a scalar used as -(r - s) in idx, not both); idx is read
    # here in order, so the gathers below index the points directly. starts[m] is bucket m's
    # cursor meanwhile, then moved back.
    for j in range(n):
        d = np.int64(digits[w, j])
        if d != 0:
            m = abs(d)
            i, neg = subset_point(idx, j)
            order[starts[m]] = ~i if neg != (d < 0) else i
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
def run_windows(points, idx, digits, H, H_top, L, rows, threads, wins):
    """wins[w] = window_sum of window w (H buckets; the last window H_top) for every row of
    digits, spread over ``threads`` workers (pippenger, pippenger_table)."""
    K = digits.shape[0]
    n = digits.shape[1]
    W = points.shape[1]
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
            np.empty((max(R // 2, 2 * L) + 1, W // 2), np.uint64),  # acc
            np.empty(max(R // 2, 2 * L) + 1, np.int64),  # kinds
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
            window_sum(points, idx, digits, w, Hw, min(L, Hw), wins, scratch)
            w = fetch_add(ticket, 0, 1)


@T.njit(parallel=True)
def pippenger(points, scalars, idx, bits, c, lanes, rows, threads, digits, out):
    """out[0] = sum_j s_j * points[idx[j]] in this build's group, where s_j = scalars[idx[j]]
    (or, where idx[j] = ~i, the scalar used as -(r - s) with the point negated: then s_j =
    r - scalars[i]), every s_j below 2^bits; an empty idx: every point, in order (zero
    scalars and points at infinity skipped); window width c, chunks of at most ``rows`` rows
    (see msm_cpu.CHUNK_BYTES), windows spread over ``threads`` threads.
    digits: (K, len(idx)) zeros, K = ceil((bits + 1) / c), int16 or int32 (see msm_cpu).
    c = 1 is the binary method (buckets.double_and_add: windows of one bit share the
    doublings; no digits, no buckets)."""
    n = idx.shape[0] if idx.shape[0] > 0 else points.shape[0]
    W = points.shape[1]
    if c == 1:
        reduced = np.empty((n, 4), np.uint64)  # each scalar reduced once, not once a bit
        sub = np.empty((n, W), np.uint64)  # the few points, negated where marked
        for j in range(n):
            s = M.subset_scalar(scalars, idx, j)
            for k in range(4):
                reduced[j, k] = s[k]
            p, neg = subset_point(idx, j)
            M.point_row_copy(points, p, sub, j, neg)
        B.double_and_add(sub, reduced, bits, out)
        return
    K = digits.shape[0]  # ceil((bits + 1) / c), allocated by the caller (msm_cpu)
    H = 1 << (c - 1)
    L = min(H, lanes)
    # The scalars are below 2^bits, so the top window's digits are at most 2^(bits - c (K - 1))
    # (its bits plus a carry): it needs only that many buckets.
    H_top = min(H, 1 << max(bits - c * (K - 1), 0))
    for j in prange(n):
        if idx.shape[0] == 0 and (M.point_row_is_zero(points, j) or M.scalar_is_zero(scalars, j)):
            continue  # (digits stay 0: skipped; a subset has neither)
        s0, s1, s2, s3 = M.subset_scalar(scalars, idx, j)
        M.limbs_signed_digits(s0, s1, s2, s3, c, K, digits, j)
    wins = np.empty((K, 3 * (W // 2)), np.uint64)
    run_windows(points, idx, digits, H, H_top, L, rows, threads, wins)
    B.windows_combine(wins, K, c, out)


# ============================ tables of multiples (resident keys) ===========================
#
# A point set that stays (a resident key's) can hold f copies of itself, group g the points
# times 2^(c Kf g): row g n + i = 2^(c Kf g) P_i. With K = f Kf windows a scalar's digit w =
# g Kf + v is digit v of the point 2^(c Kf g) P_i, since s P = sum_g sum_v d_(g Kf + v)
# 2^(c v) (2^(c Kf g) P). So the MSM of n points over K windows is an MSM of f n table rows
# over Kf windows: the same buckets (window_sum), with Kf bucket sums and Kf - 1 Horner steps
# instead of K (ICICLE's precompute factor f; Kf = 1: every digit in one set of buckets).


@T.njit()
def table_chunk(table, n, shift, lo, hi, jac, pre):
    """table_fill's task: rows g n + i, lo <= i < hi, of every group g >= 1."""
    f = table.shape[0] // n
    for g in range(1, f):
        src = (g - 1) * n
        dst = g * n
        acc = G.F_ONE
        for i in range(lo, hi):
            P = G.from_affine(G.load_affine(table, src + i))
            for _ in range(shift):
                P = G.dbl(P)
            G.store(jac, i - lo, P)
            if not G.is_inf(P):
                acc = G.f_mul(acc, P[2])
            G.f_store(pre, i - lo, 0, acc)  # prefix products of the Z's (infinity: skipped)
        inv = G.f_inv(acc)  # 1 / (the product of the chunk's Z's)
        for i in range(hi - 1, lo - 1, -1):
            P = G.load(jac, i - lo)
            if G.is_inf(P):
                for k in range(table.shape[1]):
                    table[dst + i, k] = 0
                continue
            zinv = inv
            if i > lo:
                zinv = G.f_mul(inv, G.f_load(pre, i - lo - 1, 0))
            inv = G.f_mul(inv, P[2])
            zinv2 = G.f_sqr(zinv)
            x = G.f_mul(P[0], zinv2)
            y = G.f_mul(P[1], G.f_mul(zinv2, zinv))
            G.store_affine(table, dst + i, (x, y))


@T.njit(parallel=True)
def table_fill(table, n, shift, chunk):
    """Rows g n + i of ``table`` for g = 1 .. f - 1 (f = rows / n) = 2^shift times row
    (g - 1) n + i, affine (zeros: infinity); rows 0 .. n - 1 hold the points already. Tasks of
    ``chunk`` points: per group a chain of Jacobian doublings each, then one inversion for the
    chunk (Montgomery's simultaneous inversion) back to affine."""
    CL = G.COORD_LIMBS
    for t in prange((n + chunk - 1) // chunk):
        lo = t * chunk
        table_chunk(
            table,
            n,
            shift,
            lo,
            min(n, lo + chunk),
            np.empty((chunk, 3 * CL), np.uint64),
            np.empty((chunk, CL), np.uint64),
        )


@T.njit(parallel=True)
def pippenger_table(table, n, scalars, idx, K, c, lanes, rows, threads, digits, out):
    """out[0] = sum_j s_j * P_(idx[j]) as pippenger (idx empty: every point, in order; ~i: the
    scalar used as -(r - s), the point negated), over a table of multiples (table_fill with
    shift = c Kf): row g n + i = 2^(c Kf g) P_i. The scalars' K windows (K c > their bits)
    fold into Kf = digits.shape[0] windows over fb = digits.shape[1] / m groups of the table
    (fb Kf >= K; m = len(idx), or n): digit w = g Kf + v of scalar j is window v's digit of
    column g m + j (msm.limbs_signed_digits_folded), i.e. of row g n + idx[j]. digits: zeros,
    int16 or int32 as for pippenger at this c."""
    m = idx.shape[0] if idx.shape[0] > 0 else n
    Kf = digits.shape[0]
    fb = digits.shape[1] // m
    W = table.shape[1]
    H = 1 << (c - 1)
    L = min(H, lanes)
    for j in prange(m):
        if idx.shape[0] == 0 and (M.point_row_is_zero(table, j) or M.scalar_is_zero(scalars, j)):
            continue  # (digits stay 0: skipped)
        s0, s1, s2, s3 = M.subset_scalar(scalars, idx, j)
        M.limbs_signed_digits_folded(s0, s1, s2, s3, c, K, Kf, m, digits, j)
    if idx.shape[0] == 0:
        tidx = idx  # column g n + i is row g n + i
    else:  # column g m + j -> row g n + i, ~ kept
        tidx = np.empty(fb * m, np.int32)
        for j in prange(m):
            i = idx[j]
            for g in range(fb):
                tidx[g * m + j] = i + g * n if i >= 0 else ~(~i + g * n)
    wins = np.empty((Kf, 3 * (W // 2)), np.uint64)
    run_windows(table, tidx, digits, H, H, L, rows, threads, wins)
    B.windows_combine(wins, Kf, c, out)


@T.njit(parallel=True)
def scalar_classes(points, scalars, bits):
    """bits[i] = the size class of scalar i (msm.scalar_class_bits: b, or -b where -(r - s) is
    shorter), 0 for a zero scalar or a point at infinity: nothing to add."""
    for i in prange(points.shape[0]):
        if M.point_row_is_zero(points, i):
            bits[i] = 0
        else:
            bits[i] = M.scalar_class_bits(scalars, i)


@T.njit()
def bits_histogram(bits, hist):
    """hist[b] = the scalars of size class +-b (scalar_classes' bits), b = 0..len(hist) - 1:
    the histogram the class plan takes (cuzk.kernels.msm_plan.plan_classes), for a driver
    without numpy (cuzk.groth16.lean)."""
    for b in range(hist.shape[0]):
        hist[b] = 0
    for i in range(bits.shape[0]):
        hist[abs(bits[i])] += 1


@T.njit()
def class_index(bits, lo, hi, idx):
    """idx[:m] = the indices i whose class |bits[i]| lies in [lo, hi], in order, ~i where
    bits[i] < 0 (the point negated); returns m. A class's index list, as msm_cpu builds it
    with numpy, for a driver without numpy (cuzk.groth16.lean)."""
    m = 0
    for i in range(bits.shape[0]):
        b = bits[i]
        size = abs(b)
        if lo <= size <= hi:
            idx[m] = ~np.int32(i) if b < 0 else np.int32(i)
            m += 1
    return m


@T.njit()
def segment_sum(points, idx, lo, hi, parts, t, buf_a, buf_b, acc, kinds, slots):
    """parts[t] = the affine sum of the points idx[lo:hi] (~i: negated): chunks of buf_a's rows
    gathered in turn (each starting from the sum so far) and added up by batch-affine rounds,
    a pairwise tree sharing one inversion per round."""
    rows = buf_a.shape[0]
    count, start, active = slots[0:1], slots[1:2], slots[2:3]
    start[0] = 0
    active[0] = 0
    parts[t, :] = 0
    j = lo
    while j < hi:
        M.point_row_copy(parts, t, buf_a, 0, False)  # the sum so far (zeros: infinity)
        fill = 1
        while fill < rows and j < hi:
            ahead, _ = subset_point(idx, min(j + PREFETCH, hi - 1))
            prefetch_row(points, ahead)
            p, neg = subset_point(idx, j)
            M.point_row_copy(points, p, buf_a, fill, neg)
            fill += 1
            j += 1
        count[0] = fill
        pts = buf_a
        out = buf_b
        while count[0] > 1:
            B.batch_affine_round(pts, out, count, start, active, 1, acc, kinds)
            pts, out = out, pts
        M.point_row_copy(pts, 0, parts, t, False)


@T.njit(parallel=True)
def points_sum(points, idx, rows, threads, out):
    """out[0] = sum_j points[idx[j]] (~i: negated), affine: the MSM's scalars equal to 1 (or
    r - 1). idx is cut into one segment per thread (segment_sum), the segments' sums added
    in Jacobian coordinates; ~1 batch-affine addition per point, no windows, no buckets."""
    n = idx.shape[0]
    W = points.shape[1]
    T = max(1, min(threads, n // 64))
    R = max(min(n // T + 1, rows), 2)
    parts = np.zeros((T, W), np.uint64)
    for t in prange(T):
        segment_sum(
            points,
            idx,
            n * t // T,
            n * (t + 1) // T,
            parts,
            t,
            np.empty((R, W), np.uint64),
            np.empty((R, W), np.uint64),
            np.empty((R // 2 + 1, W // 2), np.uint64),
            np.empty(R // 2 + 1, np.int64),
            np.empty(3, np.int64),
        )
    rows_sum(parts, out)


@T.njit()
def rows_sum(rows, out):
    """out[0] = affine(sum of the affine rows), in Jacobian coordinates: one inversion."""
    acc = G.inf()
    for k in range(rows.shape[0]):
        acc = G.add_mixed(acc, G.load_affine(rows, k))
    G.store_affine(out, 0, G.to_affine(acc))


@T.njit()
def windows_combine(wins, c, out):
    """out[0] = affine(sum_w 2^{c w} wins[w]) for Jacobian window sums (the host's share of
    the CUDA MSM)."""
    B.windows_combine(wins, wins.shape[0], c, out)
