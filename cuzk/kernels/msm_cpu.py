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


from cuzk.kernels.msm_plan import (  # noqa: E402, F401 (the plan's names, as before)
    _BALANCE_SLACK,
    _COST_AFFINE_ADD,
    _COST_BUCKET,
    _COST_CLASS,
    _COST_DOUBLING,
    _COST_INVERSION,
    _COST_MIXED_ADD,
    CHUNK_BYTES,
    CLASS_BOUNDS,
    LANES,
    PARTITION_MIN,
    _class_cost,
    _window_cost,
    digit_type,
    plan_classes,
    window_bits,
)


def digit_dtype(c: int, bits: int = 254):
    """numpy's type of the digits for window width c over scalars below 2^bits
    (cuzk.kernels.msm_plan.digit_type): np.int16 or np.int32."""
    return getattr(np, digit_type(c, bits))


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


# A table is planned only where the model says its MSM does at least this share less work
# (CPU time) than the plain MSM over the same points. The table saves bucket sums, a fixed
# cost a window, while its bucket additions stay those of the plain MSM, so its gain falls as
# n grows: measured (G1, BN254, native library, CPU least of 2-3, 2026-12-05) 0.74x the plain
# MSM at 2^12, 0.82-0.84x at 2^14-2^17, 0.85x at 2^18, but 0.959x at 2^20 and 0.960x at 2^21
# (modelled 0.974 and 0.970), for 7 times the points' memory and a build of 45 s (2^20) and
# 93 s (2^21) of CPU a G1 set. Below this share the key's memory and the build's core are
# worth more than the table: at 2^22 a key's tables took 4.7 GB and ~22 minutes of a core
# to buy ~1% of a proof (docs/benchmarks.md, suite scale at 747a125).
TABLE_MIN_GAIN = 0.05


def table_plan(n: int, factor: int, bits: int = 254, threads: int | None = None):
    """(c, Kf, f) of a table for n points and dense scalars below 2^bits with at most
    ``factor`` groups: the window width c and folded window count Kf (f = ceil(K / Kf) groups,
    K = ceil((bits + 1) / c)) minimising the modelled wall time of its MSM on ``threads``
    threads (Kf windows split over them); None where factor < 2, n is below PARTITION_MIN, or
    the best such table saves less than TABLE_MIN_GAIN of the plain MSM's modelled work (no
    table: the plain MSM)."""
    if factor < 2 or n < PARTITION_MIN:
        return None
    T = _threads.get_num_threads() if threads is None else max(1, int(threads))
    most_work = (1.0 - TABLE_MIN_GAIN) * _window_cost(n, bits, T)[1]
    best = None
    for c in range(4, 21):
        K = windows_for(c, bits)
        for Kf in range(1, K + 1):
            f = -(-K // Kf)
            if f > factor or f < 2:
                continue
            work = Kf * _table_window_cost(n * K / Kf, c)
            if work > most_work:
                continue
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
