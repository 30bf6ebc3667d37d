"""MSM (G1, G2) on the CPU and CUDA against py_ecc, an independent pure-Python BN254.

References: points are P_i = a_i G for known a_i, so sum k_i P_i = (sum k_i a_i mod r) G is
one py_ecc multiplication (the "sum in the exponent"); small cases are also checked against
the naive sum of py_ecc multiplications. One body per property runs for both targets: the
CUDA one runs in the simulator here (Python, slow: tiny n) and on a GPU where one exists.
"""

import mmap
import random

import numpy as np
import pytest
from py_ecc import optimized_bn128 as ob
from reference import point_rows, py_ecc_curve, py_ecc_ints, row_ints, scalar_rows

from cuzk.arith.constants import FR_MODULUS
from cuzk.arith.curves import constants

R = FR_MODULUS
TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
# where numba's CUDA simulator (no GPU) takes over 10 s for the cuda case
TARGETS_SLOW_SIM = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.slow])]


def generator(group, curve="bn254"):
    ec = py_ecc_curve(curve)
    return ec.G1 if group == "g1" else ec.G2


def infinity(group, curve="bn254"):
    ec = py_ecc_curve(curve)
    return ec.Z1 if group == "g1" else ec.Z2


def msm_fn(target, group):
    if target == "cpu":
        from cuzk.kernels import msm_cpu as m
    else:
        from cuzk.kernels import msm_cuda as m
    return m.msm_g1 if group == "g1" else m.msm_g2


def exponent_check(
    target,
    group,
    a,
    k,
    c=None,
    points=None,
    lanes=None,
    chunk_rows=None,
    partition=None,
    curve="bn254",
):
    """MSM of points a_i G with scalars k_i (ints; a_i None = infinity) against
    (sum k_i a_i) G from py_ecc, on `curve` (BN254 through the default of curve=)."""
    ec, gen = py_ecc_curve(curve), generator(group, curve)
    r = constants(curve).FR_MODULUS
    if points is None:
        inf = infinity(group, curve)
        points = point_rows([inf if ai is None else ec.multiply(gen, ai) for ai in a], group, curve)
    total = sum(ki * ai for ki, ai in zip(k, a, strict=True) if ai is not None) % r
    options = {"c": c} if c else {}
    if lanes is not None:
        options["lanes"] = lanes
    if chunk_rows is not None:
        options["rows"] = chunk_rows
    if partition is not None:
        options["partition"] = partition
    if curve != "bn254":
        options["curve"] = curve
    got = msm_fn(target, group)(points, scalar_rows(k), **options)
    assert got.dtype == np.uint64 and got.shape == (points.shape[1],)
    assert row_ints(got, curve) == py_ecc_ints(ec.multiply(gen, total), curve)
    return got


def sizes(target):
    return (1, 2, 7, 16, 100) if target == "cpu" else (1, 3, 8)


# ------------------------------------------ G1 --------------------------------------------


@pytest.mark.parametrize("target", TARGETS_SLOW_SIM)
def test_g1_random_against_exponent_sum(target):
    rng = random.Random(11)
    for n in sizes(target):
        a = [rng.randrange(1, R) for _ in range(n)]
        k = [rng.randrange(R) for _ in range(n)]
        exponent_check(target, "g1", a, k)


@pytest.mark.parametrize("target", TARGETS)
def test_g1_naive_py_ecc_sum(target):
    """Against the naive sum of py_ecc multiplications (no exponent shortcut)."""
    rng = random.Random(12)
    n = 8 if target == "cpu" else 4
    pts = [ob.multiply(ob.G1, rng.randrange(1, R)) for _ in range(n)]
    k = [rng.randrange(R) for _ in range(n)]
    expect = ob.Z1
    for P, ki in zip(pts, k, strict=True):
        expect = ob.add(expect, ob.multiply(P, ki))
    got = msm_fn(target, "g1")(point_rows(pts, "g1"), scalar_rows(k))
    assert row_ints(got) == py_ecc_ints(expect)


@pytest.mark.parametrize("target", TARGETS)
def test_g1_edge_cases(target):
    """Zero scalars, r - 1, scalars >= r (reduced), repeated points (doubling in a bucket),
    P and -P in one bucket (cancellation), points at infinity (skipped)."""
    a = [5, 5, 7, 7, R - 7, None, 9, 11]
    k = [3, 3, 0, 2**200 + 1, 2**200 + 1, 12345, R - 1, R + 4]
    if target == "cuda":  # the simulator is slow: the same kinds of case, fewer points
        a, k = a[:2] + a[3:6] + a[6:7], k[:2] + k[3:6] + k[6:7]
    exponent_check(target, "g1", a, k)


@pytest.mark.parametrize("target", TARGETS)
def test_g1_degenerate_inputs(target):
    """n = 1 (with r - 1 and zero), all scalars zero, all points at infinity, n = 0."""
    fn = msm_fn(target, "g1")
    exponent_check(target, "g1", [3], [R - 1])
    zero = fn(point_rows([ob.multiply(ob.G1, 3)], "g1"), scalar_rows([0]))
    assert not zero.any()
    assert not fn(point_rows([ob.G1, ob.multiply(ob.G1, 2)], "g1"), scalar_rows([0, 0])).any()
    assert not fn(np.zeros((3, 8), np.uint64), scalar_rows([1, 2, 3])).any()
    assert not fn(np.zeros((0, 8), np.uint64), np.zeros((0, 4), np.uint64)).any()


@pytest.mark.cuda
def test_g1_cuda_segments_of_several_buckets():
    """The reduction kernel with segments of 4 and 16 buckets (lo > 0 and lo = 0 with
    several running-sum steps), which the default sizes reach only for c >= 9."""
    from cuzk.kernels import msm_cuda

    rng = random.Random(15)
    a = [rng.randrange(1, R) for _ in range(5)]
    k = [rng.randrange(R) for _ in range(5)]
    points = point_rows([ob.multiply(ob.G1, x) for x in a], "g1")
    expect = py_ecc_ints(ob.multiply(ob.G1, sum(x * y for x, y in zip(a, k, strict=True)) % R))
    for segments in (4, 1):
        got = msm_cuda.msm_g1(points, scalar_rows(k), c=5, segments=segments)
        assert row_ints(got) == expect
    with pytest.raises(ValueError, match="must divide"):
        msm_cuda.msm_g1(points, scalar_rows(k), c=5, segments=3)


def test_g1_shape_errors():
    from cuzk.kernels import msm_cpu

    with pytest.raises(ValueError, match="points"):
        msm_cpu.msm_g1(np.zeros((2, 16), np.uint64), np.zeros((2, 4), np.uint64))
    with pytest.raises(ValueError, match="2 points but 3 scalars"):
        msm_cpu.msm_g1(np.zeros((2, 8), np.uint64), np.zeros((3, 4), np.uint64))
    for c in (40, -1):  # 1 is the binary method, 2..24 buckets (c = 0 means the default)
        with pytest.raises(ValueError, match="outside 1..24"):
            msm_cpu.msm_g1(np.zeros((2, 8), np.uint64), np.zeros((2, 4), np.uint64), c=c)


def _progression(n, a0, step, group="g1", curve="bn254"):
    """Rows of P_i = (a0 + i step) G built by py_ecc additions (cheap for thousands)."""
    ec, gen = py_ecc_curve(curve), generator(group, curve)
    Q = ec.multiply(gen, step)
    P = ec.multiply(gen, a0)
    pts = []
    for _ in range(n):
        pts.append(P)
        P = ec.add(P, Q)
    r = constants(curve).FR_MODULUS
    return point_rows(pts, group, curve), [(a0 + i * step) % r for i in range(n)]


@pytest.fixture(scope="module")
def progression_4096():
    return _progression(4096, 1234567, 7654321)


def test_g1_cpu_larger_every_window_width(progression_4096):
    """n = 4096 against the exponent sum, for window widths from tiny (many rounds, heavy
    buckets) to larger than log2(n) (mostly single-point buckets), and the default."""
    points, a = progression_4096
    rng = random.Random(13)
    k = [rng.randrange(R) for _ in a]
    for c in (None, 2, 5, 9, 13, 17):
        exponent_check("cpu", "g1", a, k, c=c, points=points)


def test_g1_cpu_heavy_bucket_and_cancellation():
    """One bucket gets everything: 300 copies of P and 301 of -P with one scalar each, so
    the batch-affine rounds double, cancel, and meet infinity operands."""
    P = ob.multiply(ob.G1, 42)
    rows = point_rows([P] * 300 + [ob.neg(P)] * 301 + [ob.G1], "g1")
    a = [42] * 300 + [R - 42] * 301 + [1]
    k = [987654321] * 601 + [5]
    exponent_check("cpu", "g1", a, k, points=rows)
    exponent_check("cpu", "g1", a, k, c=3, points=rows)


def test_g1_cpu_mmap_view_is_not_copied(tmp_path, progression_4096):
    """Points as a zkey gives them: a read-only, 4-byte-offset (unaligned) view over an mmap."""
    points, a = progression_4096
    points, a = points[:500], a[:500]
    path = tmp_path / "points.bin"
    path.write_bytes(b"\0" * 4 + points.tobytes())
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        view = np.frombuffer(mm, dtype="<u8", count=points.size, offset=4).reshape(points.shape)
        assert not view.flags.writeable and not view.flags.aligned
        k = [random.Random(14).randrange(R) for _ in a]
        exponent_check("cpu", "g1", a, k, points=view)
        del view
    finally:
        mm.close()


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_cpu_bucket_sums_in_lanes(group):
    """The batch-affine bucket sums (cuzk.kernels.buckets.bucket_lanes_sum) against the
    exponent sum for every lane count from one lane per bucket to one lane, and the Jacobian
    running sums (lanes=0): empty buckets (the lanes' running sums double), buckets that
    cancel to infinity, and lane totals that cancel each other."""
    gen = generator(group)
    P5, P7 = ob.multiply(gen, 5), ob.multiply(gen, 7)
    a = [5] * 6 + [R - 5] * 6 + [7, 7, None, 7]
    pts = [P5] * 6 + [ob.neg(P5)] * 6 + [P7, P7, infinity(group), P7]
    # Several points per bucket; P5 and -P5 with equal scalars cancel inside their buckets;
    # 41 and 62 have negative digits with a carry at c = 6.
    k = [9, 9, 41, 31, 31, 2] * 2 + [3, 3, 5, 62]
    points = point_rows(pts, group)
    for c in (3, 6):
        H = 1 << (c - 1)
        for lanes in (0, H, H // 2, 2, 1):
            exponent_check("cpu", group, a, k, c=c, points=points, lanes=lanes)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_cpu_chunks_and_buckets_in_pieces(group):
    """Chunks smaller than a window's points (cuzk.kernels.pippenger_cpu): buckets that do not
    fit the rest of a chunk move to the next one, and a bucket with more points than a chunk
    is added up in pieces, each piece starting from the sum of the ones before (a skewed
    window: equal scalars). Pieces that cancel to infinity, doubling across pieces, points
    at infinity and zero scalars ride along."""
    gen, inf = generator(group), infinity(group)
    rng = random.Random(21)
    a = [rng.randrange(1, 50) for _ in range(40)] + [9] * 8 + [R - 9] * 8 + [None, 4]
    pts = [inf if ai is None else ob.multiply(gen, ai) for ai in a]
    # One scalar for most points (a heavy bucket in every window), a few others, and 0.
    k = [123456789] * 44 + [rng.randrange(R) for _ in range(12)] + [77, 0]
    points = point_rows(pts, group)
    for rows in (2, 3, 5, 16, 10_000):
        for c in (3, 8):
            exponent_check("cpu", group, a, k, c=c, points=points, chunk_rows=rows)
        exponent_check("cpu", group, a, k, c=3, points=points, chunk_rows=rows, lanes=0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        msm_fn("cpu", group)(points, scalar_rows(k), rows=1)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_cpu_digits_at_the_ends_of_their_type(group):
    """Digits are int16 up to c = 16 (cuzk.kernels.msm_cpu.digit_dtype): a window value of
    2^15 recodes to -2^15, the type's most negative value (whose abs overflows int16), and
    2^15 - 1 to the largest; c = 17 takes int32."""
    from cuzk.kernels.msm_cpu import digit_dtype

    assert digit_dtype(16) == np.int16 and digit_dtype(17) == np.int32
    a = [3, 5, 7, 11, 13, 17]
    k = [2**15, 2**15 - 1, 2**31 + 2**15, (2**15 << 16) + 2**15, R - 1, R - 2**15]
    for c in (15, 16, 17):
        exponent_check("cpu", group, a, k, c=c)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_cpu_binary_method_and_buckets_on_the_same_edges(group):
    """A handful of points takes the binary method (c = 1, buckets.double_and_add: no
    inversions), as the proof's blinding sums do; the same edge cases (a doubling when the
    running sum meets its own point, P + (-P), infinity, zero, r - 1 and scalars >= r) by
    both methods, and the switch at the cost model's crossover."""
    from cuzk.kernels.msm_cpu import window_bits

    assert window_bits(3) == window_bits(5) == 1
    assert window_bits(100) >= 2
    a = [5, 5, 7, R - 7, None, 9, 11, 2]
    k = [3, 3, 2**200 + 1, 2**200 + 1, 12345, R - 1, R + 4, 0]
    for c in (None, 1, 3):
        exponent_check("cpu", group, a, k, c=c)
    rng = random.Random(31)
    n = 40  # above the crossover: buckets by default, the binary method when asked
    a = [rng.randrange(1, R) for _ in range(n)]
    k = [rng.randrange(R) for _ in range(n)]
    assert window_bits(n) >= 2
    for c in (None, 1):
        exponent_check("cpu", group, a, k, c=c)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_cpu_top_window_at_its_largest_digits(group):
    """The top window gets only the buckets its digits can reach (2^(254 - c (K - 1)), the
    bits left above the other windows plus a carry): scalars near r and 2^253 reach them,
    at widths leaving 0, 1 and 2 bits up there."""
    a = [3, 5, 7, 11, 13]
    k = [R - 1, R - 2, 2**253, 2**253 + 2**252 - 1, 2**254 - 2**200 - R]
    assert all(0 <= ki < R for ki in k)
    for c in (2, 11, 12):
        exponent_check("cpu", group, a, k, c=c)


def _sized_scalars(rng, n, r=R):
    """Scalars of every size class: 0, 1, r - 1, small, r - small, < 2^64, < 2^128, dense."""
    kinds = (
        lambda: 0,
        lambda: 1,
        lambda: r - 1,
        lambda: rng.randrange(2, 2**12),
        lambda: r - rng.randrange(2, 2**20),
        lambda: rng.randrange(2**64),
        lambda: rng.randrange(2**128),
        lambda: rng.randrange(r),
    )
    weights = (20, 40, 5, 10, 5, 10, 3, 7)
    return [rng.choices(kinds, weights)[0]() for _ in range(n)]


def test_cpu_scalar_classes_against_exponent_sum(progression_4096):
    """Scalars split by size (msm_cpu.plan_classes) before the windows: zeros skipped, ones
    and r - 1 summed by points_sum (segments per thread, in chunks of a few rows too), small
    scalars and r - small (the point negated) in fewer windows, dense as before; each mix
    against the exponent sum, and equal to the MSM without the split."""
    from cuzk.kernels import msm_cpu

    points, a = progression_4096
    rng = random.Random(43)
    for n in (1, 3, 40, 700, 4096):
        k = _sized_scalars(rng, n)
        got = exponent_check("cpu", "g1", a[:n], k, points=points[:n], partition=True)
        plain = msm_cpu.msm_g1(points[:n], scalar_rows(k), partition=False)
        assert (got == plain).all()
    # only ones, only r - 1, ones with points at infinity and repeated points, small chunks
    for k in ([1] * 700, [R - 1] * 700, [1, R - 1] * 350):
        exponent_check("cpu", "g1", a[:700], k, points=points[:700])
    rows = np.concatenate([points[:300], points[:300], np.zeros((4, 8), np.uint64)])
    a2 = a[:300] + a[:300] + [None] * 4
    k = [1] * 300 + [R - 1] * 150 + [1] * 150 + [1] * 4
    for chunk_rows in (2, 3, 64, None):
        exponent_check("cpu", "g1", a2, k, points=rows, chunk_rows=chunk_rows)
    # a given window width keeps one class unless the split is asked for
    k = _sized_scalars(rng, 500)
    for c in (2, 9, 16):
        exponent_check("cpu", "g1", a[:500], k, c=c, points=points[:500], partition=True)


def test_cpu_scalar_classes_g2():
    """The same classes in G2: ones, r - 1, small, r - small, dense and zeros."""
    rng = random.Random(44)
    n = 150
    a = [rng.randrange(1, R) for _ in range(n)]
    exponent_check("cpu", "g2", a, _sized_scalars(rng, n))
    exponent_check("cpu", "g2", a, [1, R - 1, 0] * (n // 3))


def test_plan_classes():
    """The class plan from a histogram of bit lengths: one class per size where each is big
    enough to pay for its own MSM, merged where it is not; zeros never in a class."""
    from cuzk.kernels.msm_cpu import digit_dtype, plan_classes, window_bits

    hist = np.zeros(255, np.int64)
    hist[0] = 1000
    assert plan_classes(hist) == []
    hist[1] = 5000
    assert plan_classes(hist) == [(1, 1, 5000, 1)]
    hist[254] = 5000
    hist[60] = 3000
    assert plan_classes(hist) == [(1, 1, 5000, 1), (49, 64, 3000, 60), (193, 254, 5000, 254)]
    hist[60] = 2  # two scalars below 2^60 go with the dense ones
    assert plan_classes(hist) == [(1, 1, 5000, 1), (49, 254, 5002, 254)]
    # fewer windows for fewer bits, never a wider window
    assert window_bits(1 << 16, 64) <= window_bits(1 << 16)
    # the top window's digit reaches 2^15 at c = 16 over 15-bit scalars: int32
    assert digit_dtype(16, 15) == np.int32 and digit_dtype(16) == np.int16


# ------------------------------------------ G2 --------------------------------------------


@pytest.mark.parametrize("target", TARGETS_SLOW_SIM)
def test_g2_random_and_edges(target):
    rng = random.Random(21)
    if target == "cpu":
        for n in (1, 5, 16):
            exponent_check(
                target,
                "g2",
                [rng.randrange(1, R) for _ in range(n)],
                [rng.randrange(R) for _ in range(n)],
            )
        a = [8, 8, None, 13, R - 13, 2]
        k = [R - 1, R - 1, 3, 77, 77, 0]
    else:
        a = [8, 8, None]
        k = [R - 1, R - 1, 3]
    exponent_check(target, "g2", a, k)


def test_g2_cpu_naive_py_ecc_sum():
    rng = random.Random(22)
    pts = [ob.multiply(ob.G2, rng.randrange(1, R)) for _ in range(4)]
    k = [rng.randrange(R) for _ in range(4)]
    expect = ob.Z2
    for P, ki in zip(pts, k, strict=True):
        expect = ob.add(expect, ob.multiply(P, ki))
    from cuzk.kernels import msm_cpu

    assert row_ints(msm_cpu.msm_g2(point_rows(pts, "g2"), scalar_rows(k))) == py_ecc_ints(expect)


def test_g2_cpu_larger():
    points, a = _progression(600, 17, 3, "g2")
    k = [random.Random(23).randrange(R) for _ in a]
    exponent_check("cpu", "g2", a, k, points=points)


# ---------------------------------------- BLS12-381 ---------------------------------------
# The same kernels built for BLS12-381 (cuzk.arith.curves): Fq on 6 limbs (G1 rows of 12 limbs,
# G2 rows of 24), r of 255 bits (K = ceil(256 / c) windows, scalar classes up to 255 bits);
# py_ecc.optimized_bls12_381 is the reference. Few cases: each build compiles for a while.

BLS = "bls12_381"
R_BLS = constants(BLS).FR_MODULUS
# Widths where ceil(256 / c) != ceil(255 / c) (c divides 255 = 3 * 5 * 17): BN254's window
# count would leave the top of a 255-bit scalar to a window that must carry out; 16: the top
# window then holds 15 bits (int32 digits); 1: the binary method.
BLS_WIDTHS = (1, 3, 5, 15, 16, 17)


def _bls_edges():
    """(a, k): repeated points (a doubling in a bucket), P and -P with one scalar
    (cancellation), a point at infinity, and scalars 0, 1, r - 1, r - 2, near 2^254 and 2^255
    (r > 2^254), and >= r (reduced: r, r + 4, 2^256 - 1)."""
    a = [5, 5, 7, R_BLS - 7, None, 9, 11, 2, 13, 17, 19, 23, 29]
    k = [3, 3, 2**200 + 1, 2**200 + 1, 12345, R_BLS - 1, R_BLS - 2, 0, 1]
    k += [2**254 + 2**253 - 1, R_BLS, R_BLS + 4, 2**256 - 1]
    return a, k


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_bls12_381_cpu_against_exponent_sum(group):
    """Edge cases at every width of BLS_WIDTHS and the default (the binary method for so few
    points), then random dense scalars over 40 points (buckets by default) with r - 1 and
    scalars above 2^254 mixed in, with and without the batch-affine lanes."""
    a, k = _bls_edges()
    for c in (None, *BLS_WIDTHS):
        exponent_check("cpu", group, a, k, c=c, curve=BLS)
    rng = random.Random(381)
    points, a = _progression(40, rng.randrange(1, R_BLS), rng.randrange(1, R_BLS), group, BLS)
    k = [rng.randrange(R_BLS) for _ in a[:-3]] + [R_BLS - 1, 2**254 + 1, R_BLS - 2**200]
    from cuzk.kernels.msm_cpu import scalar_bits, window_bits

    assert window_bits(40, scalar_bits(BLS)) > 1
    exponent_check("cpu", group, a, k, points=points, curve=BLS)
    exponent_check("cpu", group, a, k, c=5, points=points, lanes=0, curve=BLS)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_bls12_381_cpu_scalar_classes(group):
    """Scalars split by size on BLS12-381: zeros, ones and r - 1 (points_sum), small and
    r - small (the point negated), below 2^64 and 2^128, dense (255 bits); each mix against
    the exponent sum and equal to the MSM without the split; ones and r - 1 alone; and one
    dense class (r - 1 and scalars above 2^254 among random ones)."""
    rng = random.Random(382)
    n = 160 if group == "g1" else 80
    points, a = _progression(n, 3, rng.randrange(1, R_BLS), group, BLS)
    k = _sized_scalars(rng, n, R_BLS)
    got = exponent_check("cpu", group, a, k, points=points, curve=BLS)
    plain = msm_fn("cpu", group)(points, scalar_rows(k), partition=False, curve=BLS)
    assert (got == plain).all()
    exponent_check("cpu", group, a, [1, R_BLS - 1] * (n // 2), points=points, curve=BLS)
    k = [rng.randrange(R_BLS) for _ in range(n - 2)] + [R_BLS - 1, 2**254 + 3]
    exponent_check("cpu", group, a, k, points=points, curve=BLS)


@pytest.mark.cuda
@pytest.mark.parametrize("group", ["g1", pytest.param("g2", marks=pytest.mark.slow)])
def test_bls12_381_cuda_against_exponent_sum(group):
    """The CUDA kernels' BLS12-381 builds (tiny n in the simulator): scalars near r and above
    it, a point at infinity, a zero scalar, repeated points; c = 5 (K = ceil(256 / 5) = 52,
    one more window than 255 bits at BN254's count would get) and the default."""
    a = [5, 5, None, 7, 9]
    k = [R_BLS - 1, R_BLS - 1, 3, 2**256 - 1, 0]
    exponent_check("cuda", group, a, k, c=5, curve=BLS)
    if group == "g1":
        exponent_check("cuda", group, a[:2], [2**254 + 2**253, R_BLS + 4], curve=BLS)


@pytest.mark.parametrize("target", TARGETS_SLOW_SIM)
def test_bls12_381_resident_key(target):
    """A key with BLS12-381 point sets (12- and 24-limb rows): each set's curve comes from its
    width (or is given, and checked), key.msm runs that curve's MSM, and an MSM asked on
    another curve than its set's refuses it."""
    from cuzk.kernels import msm_cpu, msm_cuda
    from cuzk.kernels.resident import ResidentKey, place_points

    ec = py_ecc_curve(BLS)
    rng = random.Random(383)
    n = 4 if target == "cpu" else 2
    a = [rng.randrange(1, R_BLS) for _ in range(n)]
    g1 = point_rows([ec.multiply(ec.G1, x) for x in a], "g1", BLS)
    g2 = point_rows([ec.multiply(ec.G2, x) for x in a], "g2", BLS)
    device = "cpu" if target == "cpu" else "cuda:0"
    key = ResidentKey.place("k381", {"a": g1, "b2": g2}, device=device)
    assert key.nbytes == n * 96 + n * 192
    assert (key["a"].curve, key["a"].group, key["b2"].curve, key["b2"].group) == (BLS, 1, BLS, 2)
    k = [rng.randrange(R_BLS) for _ in range(n)]
    total = sum(x * y for x, y in zip(a, k, strict=True)) % R_BLS
    groups = (("a", ec.G1), ("b2", ec.G2)) if target == "cpu" else (("a", ec.G1),)
    for name, gen in groups:
        got = key.msm(name, scalar_rows(k))
        assert row_ints(got, BLS) == py_ecc_ints(ec.multiply(gen, total), BLS)
    mod = msm_cpu if target == "cpu" else msm_cuda
    with pytest.raises(ValueError, match="is on bls12_381, not bn254"):
        mod.msm_g1(key["a"], scalar_rows(k))
    got = mod.msm_g1(key["a"], scalar_rows(k), curve=BLS)
    assert row_ints(got, BLS) == py_ecc_ints(ec.multiply(ec.G1, total), BLS)
    with pytest.raises(ValueError, match="expected"):
        place_points(g1, device, "a", curve="bn254")  # 12 limbs is not a BN254 width
    with pytest.raises(ValueError, match="is on bls12_381, not bn254"):
        ResidentKey({"a": key["a"]}, device=device, curve="bn254")


def test_bls12_381_windows_digits_and_classes():
    """What the curve's 255 bits change: K = ceil(256 / c), the digits' type, the class plan's
    last bound, the row widths; shape errors name the curve's width; unknown curves fail."""
    from cuzk.kernels import msm_cpu
    from cuzk.kernels.msm import windows_for
    from cuzk.kernels.points import groups_by_width, point_width

    assert msm_cpu.scalar_bits(BLS) == 255 and msm_cpu.scalar_bits() == 254
    for c in range(2, 25):
        assert windows_for(c, 255) == -(-256 // c)
        assert windows_for(c, 255) == windows_for(c, 254) + (255 % c == 0)
    assert msm_cpu.digit_dtype(16, 255) == np.int32 and msm_cpu.digit_dtype(15, 255) == np.int16
    hist = np.zeros(256, np.int64)
    hist[255] = 5000
    hist[1] = 5000
    assert msm_cpu.plan_classes(hist, 255) == [(1, 1, 5000, 1), (193, 255, 5000, 255)]
    assert (point_width(1, BLS), point_width(2, BLS)) == (12, 24)
    assert groups_by_width() == {8: ("bn254", 1), 16: ("bn254", 2), 12: (BLS, 1), 24: (BLS, 2)}
    zeros = np.zeros((2, 4), np.uint64)
    with pytest.raises(ValueError, match=r"\(n, 12\) uint64 on bls12_381"):
        msm_cpu.msm_g1(np.zeros((2, 8), np.uint64), zeros, curve=BLS)
    with pytest.raises(ValueError, match="unknown curve"):
        msm_cpu.msm_g2(np.zeros((2, 16), np.uint64), zeros, curve="bls12_377")


# ---------------------------------------- window choice -----------------------------------


def test_window_bits_grows_with_n():
    from cuzk.kernels import msm_cpu, msm_cuda

    for mod in (msm_cpu, msm_cuda):
        cs = [mod.window_bits(1 << e) for e in range(0, 25)]
        assert all(1 <= c <= 20 for c in cs)
        assert cs == sorted(cs)
    assert msm_cpu.window_bits(1 << 16) >= 10


def test_window_bits_splits_windows_over_threads():
    """With threads, a width within _BALANCE_SLACK of the least work whose windows split
    evenly is preferred: at 2^19, c = 16 (16 windows) over c = 15 (17) on two threads."""
    from cuzk.kernels import msm_cpu
    from cuzk.kernels.msm import windows_for

    assert msm_cpu.window_bits(1 << 19) == 15
    assert windows_for(msm_cpu.window_bits(1 << 19, 254, 2), 254) % 2 == 0
    for e in range(0, 25):
        c1, work1 = msm_cpu._window_cost(1 << e)
        c2, work2 = msm_cpu._window_cost(1 << e, 254, 2)
        assert work2 <= work1 * (1 + msm_cpu._BALANCE_SLACK)
    cs = [msm_cpu.window_bits(1 << e, 254, 2) for e in range(0, 25)]
    assert cs == sorted(cs)


# ---------------------------------------- resident keys -----------------------------------


@pytest.mark.parametrize("target", TARGETS_SLOW_SIM)
def test_resident_key_runs_msms(target):
    from cuzk.kernels.resident import ResidentKey

    rng = random.Random(31)
    n = 6 if target == "cpu" else 2
    a = [rng.randrange(1, R) for _ in range(n)]
    b = [rng.randrange(1, R) for _ in range(n)]
    g1 = point_rows([ob.multiply(ob.G1, x) for x in a], "g1")
    g2 = point_rows([ob.multiply(ob.G2, x) for x in b], "g2")
    device = "cpu" if target == "cpu" else "cuda:0"
    key = ResidentKey.place("k", {"a": g1, "b2": g2}, device=device)
    assert key.nbytes == g1.nbytes + g2.nbytes == n * 64 + n * 128
    assert key["a"].group == 1 and key["b2"].group == 2
    if target == "cpu":
        assert key["a"].array is g1  # the host arrays themselves: no copy
    for _ in range(2):  # placed once, used twice
        k = [rng.randrange(R) for _ in range(n)]
        got = key.msm("a", scalar_rows(k))
        expect = ob.multiply(ob.G1, sum(x * y for x, y in zip(a, k, strict=True)) % R)
        assert row_ints(got) == py_ecc_ints(expect)
    if target == "cpu":
        k = [rng.randrange(R) for _ in range(n)]
        got = key.msm("b2", scalar_rows(k))
        expect = ob.multiply(ob.G2, sum(x * y for x, y in zip(b, k, strict=True)) % R)
        assert row_ints(got) == py_ecc_ints(expect)
    with pytest.raises(KeyError, match="no resident point set 'h'"):
        key["h"]
    again = ResidentKey({"a": key["a"]}, device=device)  # already placed: kept, not copied
    assert again["a"] is key["a"] and again.nbytes == g1.nbytes
    key.free()
    assert key.nbytes == 0


def test_resident_key_default_device_and_direct_msm():
    """ResidentKey(sets) places on cuzk.arith.jit.default_device_target() (the CPU here unless a
    real GPU is present) and its point sets go straight into msm_g1 of that device."""
    from cuzk.arith.jit import default_device_target
    from cuzk.kernels import msm_cpu, msm_cuda
    from cuzk.kernels.resident import ResidentKey, device_name

    pts = point_rows([ob.multiply(ob.G1, 5), ob.multiply(ob.G1, 6)], "g1")
    key = ResidentKey({"a": pts})
    assert key.device == device_name(default_device_target())
    mod = msm_cpu if key.device == "cpu" else msm_cuda
    got = mod.msm_g1(key["a"], scalar_rows([2, 3]))
    assert row_ints(got) == py_ecc_ints(ob.multiply(ob.G1, 28))
    with pytest.raises(ValueError, match="unknown device"):
        ResidentKey({"a": pts}, device="tpu:0")


def test_resident_registry_pins_and_evicts():
    from cuzk.kernels.resident import ResidentKeys

    reg = ResidentKeys()
    pts = np.zeros((10, 8), np.uint64)
    placed = []
    key = reg.get_or_place("k1", lambda: placed.append(1) or {"a": pts})
    assert reg.get_or_place("k1", lambda: placed.append(1) or {"a": pts}) is key
    assert placed == [1]  # placed once
    reg.get_or_place("k2", {"h": np.zeros((4, 16), np.uint64)})
    assert reg.nbytes() == 640 + 512 and reg.nbytes("cpu") == 1152 and reg.nbytes("cuda:0") == 0
    rows = {r["key_id"]: r for r in reg.rows()}
    assert rows["k1"]["bytes"] == 640 and rows["k1"]["devices"] == ["cpu"]
    assert rows["k1"]["evictable"]
    with key.pinned():
        assert not {r["key_id"]: r for r in reg.rows()}["k1"]["evictable"]
        evicted = reg.evict_idle(0.0)
        assert [e[0] for e in evicted] == ["k2"]  # k1 is in use
    assert reg.evict_idle(3600.0) == []  # just used
    assert reg.evict("k1") == 640
    assert len(reg) == 0 and reg.rows() == []
