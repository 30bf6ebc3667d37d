"""The plan of a CPU MSM (cuzk.kernels.msm_cpu), without numpy: the cost model that picks a
window width, the scalar classes, the digits' type. Shared by the numpy driver
(cuzk.kernels.msm_cpu) and the one-shot command's driver on plain buffers
(cuzk.groth16.lean), so both make the same choices for the same scalars.
"""

import math

from cuzk.kernels.windows import windows_for

# Cost model of one window, in Fq multiplications: a batch-affine addition ~ 5M + 1S plus
# its bookkeeping (~150 ns against 14 ns per multiplication, measured), an inversion ~ 400M
# per batch round, and per bucket the two batch-affine additions of the lanes' running sums
# plus sorting and copying. The bucket weight is fitted so the choice matches the best
# measured c (2 threads, lanes of 128: G1 c = 12 at 2^15 points ~ 24.6k, 12..15 flat at
# ~98k; G2 best at 12..14). Fitted on BN254; on BLS12-381 every step costs about 2.2 times
# as much (6-limb Fq), the bookkeeping the same, so the weights hold to first order (one
# model, the curve's scalar bits).
_COST_AFFINE_ADD = 9.0
# Raised from 25 to 30 on 2026-12-03 (dense G1 MSMs of the H points, c forced, A/B in one
# process, CPU time): 2^17 c = 13 396 ms against 417 at the old choice 15 (wall 199 / 222);
# 2^15 c = 12 124 / 13 127 (flat); 2^19 c = 15 1556 / 16 1568 (flat).
_COST_BUCKET = 30.0
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


def digit_type(c: int, bits: int = 254) -> str:
    """The digits' type for window width c over scalars below 2^bits: "int16" when every digit
    fits (a digit of a lower window is in [-2^(c-1), 2^(c-1)), the top window's at most
    2^(bits - c (K - 1))), so the (K, n) digits take 2 bytes a point per window (at 2^17:
    5 MiB instead of 10); "int32" otherwise. BN254 (bits = 254): the top digit is at most 2^14
    at c = 15 or 16, int16 up to c = 16. BLS12-381 (bits = 255): at c = 16, K = 16 windows
    leave 15 bits on top, a digit up to 2^15: int32 (c = 15: K = 18, top digit at most 1)."""
    top = bits - c * (windows_for(c, bits) - 1)
    return "int16" if c <= 16 and top <= 14 else "int32"


# Windows run in parallel, each a similar amount of work, so K windows over T threads take
# ceil(K / T) windows of wall time: at 2^19 the least-work c = 15 has K = 17 windows, one
# thread doing 9 while the other does 8, where c = 16 (K = 16) costs as much CPU (measured:
# 1556 against 1568 ms) and splits evenly. Among widths whose modelled work is within this
# share of the least, the one with the least modelled wall time on T threads is taken; work
# stays the first criterion (on a shared machine or in the daemon the other core has other
# work).
_BALANCE_SLACK = 0.02


def _window_cost(n: int, bits: int = 254, threads: int = 1) -> tuple[int, float]:
    """(c, cost): the window width for n scalars below 2^bits, 1 (the binary method) or 2..20
    (buckets), minimising the cost model (work), and that cost; with threads > 1, among the
    widths within _BALANCE_SLACK of the least work, the one whose windows split best over
    the threads."""
    costs = {1: bits * _COST_DOUBLING + n * (bits / 2) * _COST_MIXED_ADD}  # half the bits set
    for c in range(2, 21):
        H = 1 << (c - 1)
        per_bucket = max(n / H, 1.0)
        rounds = max(math.log2(per_bucket), 0.0) + 2.0
        adds = n - H * (1.0 - math.exp(-n / H))  # points minus non-empty buckets
        costs[c] = windows_for(c, bits) * (
            adds * _COST_AFFINE_ADD + H * _COST_BUCKET + rounds * _COST_INVERSION
        )
    best_c = min(costs, key=lambda c: (costs[c], c))
    if threads > 1 and best_c > 1:
        limit = costs[best_c] * (1.0 + _BALANCE_SLACK)

        def wall(c):
            K = windows_for(c, bits)
            return costs[c] * -(-K // threads) * threads / K

        best_c = min((c for c in costs if c > 1 and costs[c] <= limit), key=lambda c: (wall(c), c))
    return best_c, costs[best_c]


def window_bits(n: int, bits: int = 254, threads: int = 1) -> int:
    """The window width c minimising the cost model for n scalars below 2^bits: 1 (the binary
    method) or 2..20 (buckets); threads > 1: see _window_cost."""
    return _window_cost(n, bits, threads)[0]


# Scalar classes (see _msm): the bit lengths are binned at these bounds, and neighbouring
# bins are merged where the cost model says one MSM over both is cheaper than two. The last
# bound is BN254's R_BITS; plan_classes puts the curve's there.
CLASS_BOUNDS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 254)
# Fewer points than this skip the class pass (the proof's blinding sums: 3 to 5 points).
PARTITION_MIN = 64
# What a class costs beyond its windows (a parallel region, its scratch), model units.
_COST_CLASS = 5000.0


def _class_cost(n: int, bits: int) -> float:
    if bits <= 1:  # points_sum: one batch-affine addition a point, an inversion per round
        return n * _COST_AFFINE_ADD + max(math.log2(max(n, 2)), 1.0) * _COST_INVERSION
    return _window_cost(n, bits)[1]


def plan_classes(hist, bits: int = 254) -> list[tuple[int, int, int, int]]:
    """The scalar classes for a histogram of bit lengths (hist[b] scalars of b bits, b = 1..bits,
    bits the curve's R_BITS; hist[0], the zeros, is skipped): (lo, hi, count, top) for each
    class of the scalars whose bit lengths are in [lo, hi], top the largest present. Bins at
    CLASS_BOUNDS (the last one at bits), merged by a shortest path over the non-empty bins
    (cost model: _class_cost + _COST_CLASS a class)."""
    bounds = (*CLASS_BOUNDS[:-1], bits)
    bins = []
    lo = 1
    for hi in bounds:
        part = [int(x) for x in hist[lo : hi + 1]]
        cnt = sum(part)
        if cnt:
            top = max(k for k, x in enumerate(part) if x)
            bins.append((lo, hi, cnt, lo + top))
        lo = hi + 1
    if len(bins) <= 1:
        return bins
    # best[k]: the cheapest split of bins[:k]; a class is bins[j:k] for some j < k
    best = [0.0] + [math.inf] * len(bins)
    cut = [0] * (len(bins) + 1)
    for k in range(1, len(bins) + 1):
        cnt = 0
        for j in range(k - 1, -1, -1):
            cnt += bins[j][2]
            cost = best[j] + _class_cost(cnt, bins[k - 1][3]) + _COST_CLASS
            if cost < best[k]:
                best[k], cut[k] = cost, j
    classes = []
    k = len(bins)
    while k > 0:
        j = cut[k]
        cnt = sum(b[2] for b in bins[j:k])
        classes.append((bins[j][0], bins[k - 1][1], cnt, bins[k - 1][3]))
        k = j
    return classes[::-1]
