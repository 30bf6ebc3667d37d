"""MSM on the CPU: Pippenger with signed digits and batch-affine buckets, parallel over windows.

    msm_g1(points (n, 2 NQ) uint64, scalars (n, 4) uint64, curve="bn254") -> (2 NQ,) affine
    msm_g2(points (n, 4 NQ) uint64, scalars (n, 4) uint64, curve="bn254") -> (4 NQ,) affine
    (points may also be a cuzk.kernels.points.ResidentPoints placed on "cpu", or an MsmTable:
    the same sum over the set's precomputed multiples, see build_table)

NQ is the curve's limbs per Fq element (cuzk.arith.curves): BN254 4 (G1 rows of 8 limbs,
G2 of 16), BLS12-381 6 (12 and 24). One source, built per (curve, group)
(cuzk.kernels.pippenger_cpu); scalars are 4 limbs on both curves, below r < 2^R_BITS after
reduction (R_BITS = 254 on BN254, 255 on BLS12-381), and every bit count below is the curve's.

Points are affine, Montgomery form, all zeros = infinity (the zkey layout; read-only and
unaligned views over an mmap are fine and are never copied); scalars are plain (not
Montgomery) little-endian limbs, as in a .wtns file. The result uses the same encoding.

Work plan (see cuzk.kernels.msm for the algorithms):
0. the scalars are split by size (an MSM pays for the bits its scalars have): one parallel
   pass gives each scalar its bit length b after reduction, or -b where r - s is shorter
   (the scalar is then used as -(r - s) with the point negated), 0 for a zero scalar or a
   point at infinity (skipped from then on); plan_classes bins the bit lengths and merges
   neighbouring bins by the cost model; each class is an index list into the points (no
   copies; ~i marks a negated point). A class of ones (and r - 1) is a plain sum of its
   points (points_sum: batch-affine pairwise trees, one segment per thread); any other
   class is a Pippenger over K = ceil((b + 1) / c) windows, b its largest bit length, with
   c chosen for its size and b. The classes' results are added. One dense class runs over
   the points in order (no index list). Given a window width c, or for fewer than
   PARTITION_MIN points, the split is off unless asked for (partition=True);
1. one parallel pass over a class writes the K signed digits of every scalar;
2. windows run in parallel (numba prange): each counting-sorts its point indices into
   buckets, then gathers the points bucket chunk by bucket chunk (negating the points of
   negative digits), adds pairs within buckets in batch-affine rounds until one point per
   bucket is left, and sums m * B_m with running sums kept in LANES batch-affine lanes
   (cuzk.kernels.buckets.bucket_lanes_sum);
3. Horner over the window sums, one inversion to affine.
Memory: the (n,) int16 classes and a class's (m,) int32 index list; the class's (K, m)
int16 digits (int32 when c > 16) shared by all threads, and per thread
an (n,) int32 sort order, two chunk buffers of CHUNK_BYTES, the H bucket sums and two rows
per lane, reused window after window: ~2 K n + 4 n T bytes plus ~3 MiB per thread.
"""

import math
import os

# Idle OpenMP workers sleep instead of spinning (the NTT module sets the same, see
# cuzk.kernels.ntt_cpu): on a shared 2-core machine spinning waiters cost a 2^12 MSM 40 ms
# of its 25. Read when the OpenMP runtime starts; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402

from cuzk.arith.curves import DEFAULT, constants  # noqa: E402
from cuzk.kernels import threads as _threads  # noqa: E402
from cuzk.kernels.points import ResidentPoints, point_width  # noqa: E402
from cuzk.kernels.windows import windows_for  # noqa: E402


def drivers(curve: str, g: int):
    """The kernels of G{g} (1 or 2) on ``curve``: the cuzk.kernels.pippenger_cpu build
    (Numba's, or the native library's where a one-shot command loaded it, cuzk.native)."""
    from cuzk.native import kernels as native_kernels

    return native_kernels("cuzk.kernels.pippenger_cpu", curve, group=f"g{g}")


def scalar_bits(curve: str = DEFAULT) -> int:
    """R_BITS: the bit length of the curve's r (254 on BN254, 255 on BLS12-381), so every
    reduced scalar is below 2^R_BITS (cuzk.kernels.msm.R_BITS of the curve's build)."""
    return constants(curve).FR_MODULUS.bit_length()


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


def digit_dtype(c: int, bits: int = 254):
    """The digits' type for window width c over scalars below 2^bits: int16 when every digit
    fits (a digit of a lower window is in [-2^(c-1), 2^(c-1)), the top window's at most
    2^(bits - c (K - 1))), so the (K, n) digits take 2 bytes a point per window (at 2^17:
    5 MiB instead of 10); int32 otherwise. BN254 (bits = 254): the top digit is at most 2^14
    at c = 15 or 16, int16 up to c = 16. BLS12-381 (bits = 255): at c = 16, K = 16 windows
    leave 15 bits on top, a digit up to 2^15: int32 (c = 15: K = 18, top digit at most 1)."""
    top = bits - c * (windows_for(c, bits) - 1)
    return np.int16 if c <= 16 and top <= 14 else np.int32


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
        part = hist[lo : hi + 1]
        cnt = int(part.sum())
        if cnt:
            bins.append((lo, hi, cnt, lo + int(np.flatnonzero(part)[-1])))
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


def windows_combine(wins, c: int, g: int, curve: str = DEFAULT) -> np.ndarray:
    """sum_w 2^{c w} wins[w] for Jacobian window sums ((K, 3 NQ) G1 or (K, 6 NQ) G2 rows), as
    a (2 NQ,) or (4 NQ,) affine row: the host's share of the CUDA MSM."""
    out = np.zeros((1, point_width(g, curve)), np.uint64)
    wins = np.ascontiguousarray(wins, dtype=np.uint64)
    drivers(curve, g).windows_combine(wins, int(c), out)
    return out[0]


def _check(points, scalars, width, name, curve):
    if isinstance(points, MsmTable):
        points = points.points
    if isinstance(points, ResidentPoints):
        if points.device != "cpu":
            raise ValueError(f"{name}: point set {points.name!r} is on {points.device}, not cpu")
        if points.curve != curve:
            raise ValueError(f"{name}: point set {points.name!r} is on {points.curve}, not {curve}")
        points.touch()
        points = points.array
    points = np.asarray(points)
    scalars = np.asarray(scalars)
    if points.dtype != np.uint64 or points.ndim != 2 or points.shape[1] != width:
        raise ValueError(
            f"{name}: points must be (n, {width}) uint64 on {curve}, "
            f"got {points.dtype} {points.shape}"
        )
    if scalars.dtype != np.uint64 or scalars.ndim != 2 or scalars.shape[1] != 4:
        raise ValueError(
            f"{name}: scalars must be (n, 4) uint64, got {scalars.dtype} {scalars.shape}"
        )
    if scalars.shape[0] != points.shape[0]:
        raise ValueError(f"{name}: {points.shape[0]} points but {scalars.shape[0]} scalars")
    return points, scalars


def _msm(points, scalars, g, name, c, lanes=None, rows=None, partition=None, curve=DEFAULT):
    width = point_width(g, curve)  # (checks the curve's name)
    table = _table_of(points, g, curve, name)
    points, scalars = _check(points, scalars, width, name, curve)
    if table is not None and (table.n != points.shape[0] or (c is not None and c != table.c)):
        table = None  # (another window width asked for: the plain MSM)
    out = np.zeros((1, width), np.uint64)
    n = points.shape[0]
    if n == 0:
        return out[0]
    if c is not None and not 1 <= int(c) <= 24:
        raise ValueError(f"{name}: window width c = {c} outside 1..24")
    lanes = LANES if lanes is None else int(lanes)
    if lanes < 0 or lanes & (lanes - 1):
        raise ValueError(f"{name}: lanes = {lanes} is not 0 or a power of two")
    rows = CHUNK_BYTES // (8 * width) if rows is None else int(rows)
    if rows < 2:
        raise ValueError(f"{name}: rows = {rows}: a chunk needs at least 2 rows")
    if partition is None:  # (a handful of points: not worth the class pass)
        partition = c is None and n >= PARTITION_MIN
    P = drivers(curve, g)
    nbits = scalar_bits(curve)
    threads = _threads.get_num_threads()
    if not partition:  # one class: every scalar as it is, below 2^nbits
        if table is not None:
            _pippenger_table(P, table, scalars, _EVERY, nbits, lanes, rows, threads, out, 0)
            return out[0]
        _pippenger(P, points, scalars, _EVERY, nbits, c, lanes, rows, threads, out, 0)
        return out[0]
    # One pass over the scalars: each one's class (bit length, or minus the bit length of
    # r - s where that is shorter), then an index list per class (no copies of points).
    bits = np.empty(n, np.int16)
    P.scalar_classes(points, scalars, bits)
    size = np.abs(bits)
    classes = plan_classes(np.bincount(size, minlength=nbits + 1), nbits)
    if not classes:
        return out[0]
    parts = np.zeros((len(classes), width), np.uint64)
    for k, (lo, hi, _count, top) in enumerate(classes):
        if len(classes) == 1 and top >= nbits - 1:
            # one class, dense: the points in order, no index list, nothing negated (that
            # would not save a window); the digit pass skips zeros and points at infinity
            if table is not None:
                _pippenger_table(P, table, scalars, _EVERY, nbits, lanes, rows, threads, parts, k)
                continue
            _pippenger(P, points, scalars, _EVERY, nbits, c, lanes, rows, threads, parts, k)
            continue
        idx = np.flatnonzero((size >= lo) & (size <= hi)).astype(np.int32)
        neg = bits[idx] < 0
        if neg.any():
            np.invert(idx, out=idx, where=neg)
        if top <= 1:  # scalars 1 (or r - 1): a sum of the selected points
            P.points_sum(points, idx, rows, threads, parts[k : k + 1])
        elif table is not None:
            _pippenger_table(P, table, scalars, idx, top, lanes, rows, threads, parts, k)
        else:
            _pippenger(P, points, scalars, idx, top, c, lanes, rows, threads, parts, k)
    if len(classes) == 1:
        return parts[0]
    P.rows_sum(parts, out)
    return out[0]


_EVERY = np.zeros(0, np.int32)  # an empty index list: every point, in order


def _pippenger(P, points, scalars, idx, bits, c, lanes, rows, threads, parts, k):
    """parts[k] = the MSM over the points and scalars idx selects (pippenger_cpu.pippenger),
    scalars below 2^bits; c from the cost model unless given."""
    m = idx.shape[0] or points.shape[0]
    c = int(c or window_bits(m, bits, threads))
    K = 0 if c == 1 else windows_for(c, bits)  # (c = 1 reads the scalars' bits: no digits)
    digits = np.zeros((K, m), digit_dtype(c, bits))
    P.pippenger(points, scalars, idx, bits, c, lanes, rows, threads, digits, parts[k : k + 1])


def _pippenger_table(P, table, scalars, idx, bits, lanes, rows, threads, parts, k):
    """parts[k] = the MSM over the points and scalars idx selects, scalars below 2^bits, over
    the table's multiples (pippenger_cpu.pippenger_table): K = ceil((bits + 1) / c) windows
    folded into the table's Kf, over the ceil(K / Kf) groups they reach."""
    m = idx.shape[0] or table.n
    K = windows_for(table.c, bits)
    fb = -(-K // table.windows)
    digits = np.zeros((table.windows, fb * m), digit_dtype(table.c, bits))
    P.pippenger_table(
        table.rows,
        table.n,
        scalars,
        idx,
        K,
        table.c,
        lanes,
        rows,
        threads,
        digits,
        parts[k : k + 1],
    )


# ===================================== tables of multiples =================================
#
# A resident key's point sets are fixed, so each can hold multiples of its points
# (pippenger_cpu.table_fill): f groups, group g the points times 2^(c Kf g), and an MSM over
# them runs Kf windows over f n rows instead of K = f Kf windows over n (one set of bucket
# sums per Kf instead of per K; ICICLE's precompute factor). The table costs f times the
# point set's bytes and a build of ~c Kf (f - 1) doublings a point.

# What a table entry costs in the model beyond its bucket addition: the digit pass, the
# counting sort and its order entry (model units, as _COST_AFFINE_ADD).
_COST_TABLE_ENTRY = 1.0


def _table_window_cost(entries: float, c: int) -> float:
    H = 1 << (c - 1)
    rounds = max(math.log2(max(entries / H, 1.0)), 0.0) + 2.0
    adds = entries - H * (1.0 - math.exp(-entries / H))
    return (
        adds * _COST_AFFINE_ADD
        + entries * _COST_TABLE_ENTRY
        + H * _COST_BUCKET
        + rounds * _COST_INVERSION
    )


def table_plan(n: int, factor: int, bits: int = 254, threads: int | None = None):
    """(c, Kf, f) of a table for n points and dense scalars below 2^bits with at most
    ``factor`` groups: the window width c and folded window count Kf (f = ceil(K / Kf) groups,
    K = ceil((bits + 1) / c)) minimising the modelled wall time of its MSM on ``threads``
    threads (Kf windows split over them); None where factor < 2 or n is below PARTITION_MIN
    (no table: the plain MSM)."""
    if factor < 2 or n < PARTITION_MIN:
        return None
    T = _threads.get_num_threads() if threads is None else max(1, int(threads))
    best = None
    for c in range(4, 21):
        K = windows_for(c, bits)
        for Kf in range(1, K + 1):
            f = -(-K // Kf)
            if f > factor or f < 2:
                continue
            work = Kf * _table_window_cost(n * K / Kf, c)
            wall = work * -(-Kf // T) / Kf
            key = (wall, f, c)
            if best is None or key < best[0]:
                best = (key, (c, Kf, f))
    return None if best is None else best[1]


def table_nbytes(n: int, g: int, factor: int, curve: str = DEFAULT, threads=None) -> int:
    """Bytes of the table build_table makes for n points of G{g} on ``curve`` (0: none)."""
    plan = table_plan(n, factor, scalar_bits(curve), threads)
    return 0 if plan is None else plan[2] * n * point_width(g, curve) * 8


# Points a piece of a stoppable build fills at a time (build_table's ``stop``): a 2^15-point
# piece of G1 at f = 8 (224 doublings a point) took 1.35 s of CPU on BN254 (0.7 s on two cores).
FILL_PIECE = 1 << 15


class MsmTable:
    """Multiples of one point set (n affine rows): ``rows`` (f n, width), row g n + i =
    2^(c Kf g) P_i (pippenger_cpu.table_fill); ``windows`` = Kf. msm_g1 / msm_g2 take it in
    place of the points (or find it as a ResidentPoints' ``table``) and give the same sums."""

    def __init__(self, points, rows, c, windows, group, curve, build_secs):
        self.points = points  # the set the table was built from (array or ResidentPoints)
        self.rows = rows
        self.n = _rows_of(points)
        self.factor = rows.shape[0] // max(1, self.n)
        self.c = int(c)
        self.windows = int(windows)
        self.group = group
        self.curve = curve
        self.build_secs = float(build_secs)
        self.nbytes = int(rows.nbytes)

    def __repr__(self):
        return (
            f"<MsmTable G{self.group} n={self.n} f={self.factor} c={self.c} "
            f"Kf={self.windows} {self.nbytes} bytes>"
        )


def _rows_of(points) -> int:
    return len(points) if isinstance(points, ResidentPoints) else int(np.shape(points)[0])


def build_table(
    points,
    factor: int,
    g: int | None = None,
    curve: str | None = None,
    threads=None,
    plan: tuple[int, int] | None = None,
    stop=None,
):
    """The MsmTable of a point set (an (n, width) array or a ResidentPoints on "cpu") with at
    most ``factor`` groups (table_plan); None where the plan is no table. ``plan`` = (c, Kf)
    sets the window width and folded window count instead (f = ceil(K / Kf) groups, factor
    unused). Built in parallel (tasks of 256 points), ~c Kf (f - 1) doublings a point.
    ``stop``: a callable asked between pieces of FILL_PIECE points (a build beside the proofs,
    cuzk.kernels.table_builds); the build ends with None as soon as it says True."""
    import time

    if isinstance(points, ResidentPoints):
        g = points.group if g is None else g
        curve = points.curve if curve is None else curve
        arr = points.array
    else:
        arr = points
    curve = DEFAULT if curve is None else curve
    if g not in (1, 2):
        raise ValueError(f"build_table: group must be 1 or 2, not {g!r}")
    width = point_width(g, curve)
    arr = np.asarray(arr)
    if arr.dtype != np.uint64 or arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"build_table: points must be (n, {width}) uint64 on {curve}")
    n = arr.shape[0]
    if plan is not None:
        c, Kf = int(plan[0]), int(plan[1])
        if not 2 <= c <= 24 or not 1 <= Kf <= windows_for(c, scalar_bits(curve)):
            raise ValueError(f"build_table: plan (c, Kf) = {plan} out of range")
        plan = (c, Kf, -(-windows_for(c, scalar_bits(curve)) // Kf))
    else:
        plan = table_plan(n, int(factor), scalar_bits(curve), threads)
    if plan is None or n == 0:
        return None
    c, Kf, f = plan
    t0 = time.perf_counter()
    rows = np.empty((f * n, width), np.uint64)
    rows[:n] = arr
    fill = drivers(curve, g).table_fill
    if stop is None:
        fill(rows, n, c * Kf, 256)
    else:
        groups = rows.reshape(f, n, width)  # (a view: row g n + i is groups[g, i])
        for lo in range(0, n, FILL_PIECE):
            if stop():
                return None
            hi = min(n, lo + FILL_PIECE)
            piece = np.empty((f * (hi - lo), width), np.uint64)
            piece[: hi - lo] = arr[lo:hi]
            fill(piece, hi - lo, c * Kf, 256)
            groups[1:, lo:hi] = piece.reshape(f, hi - lo, width)[1:]
    return MsmTable(points, rows, c, Kf, g, curve, time.perf_counter() - t0)


def _table_of(points, g, curve, name):
    """The MsmTable given (or held by a ResidentPoints), checked against the MSM's group and
    curve; None for a plain point set."""
    table = points if isinstance(points, MsmTable) else getattr(points, "table", None)
    if table is None:
        return None
    if table.group != g or table.curve != curve:
        raise ValueError(f"{name}: a table of G{table.group} on {table.curve}, not G{g} on {curve}")
    return table


def msm_g1(
    points,
    scalars,
    c: int | None = None,
    lanes: int | None = None,
    rows: int | None = None,
    partition: bool | None = None,
    curve: str = DEFAULT,
) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G1 of ``curve`` (cuzk.arith.curves' name) as a
    (2 NQ,) affine row ((8,) on BN254, (12,) on BLS12-381; zeros = infinity).
    partition (default: when c is not given and n >= PARTITION_MIN): split the scalars by
    size first (see the module docstring)."""
    return _msm(points, scalars, 1, "msm_g1", c, lanes, rows, partition, curve)


def msm_g2(
    points,
    scalars,
    c: int | None = None,
    lanes: int | None = None,
    rows: int | None = None,
    partition: bool | None = None,
    curve: str = DEFAULT,
) -> np.ndarray:
    """sum_i scalars[i] * points[i] over G2 of ``curve`` as a (4 NQ,) affine row ((16,) on
    BN254, (24,) on BLS12-381; zeros = infinity).
    partition (default: when c is not given and n >= PARTITION_MIN): split the scalars by
    size first (see the module docstring)."""
    return _msm(points, scalars, 2, "msm_g2", c, lanes, rows, partition, curve)
