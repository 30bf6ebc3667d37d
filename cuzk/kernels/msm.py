"""Multi-scalar multiplication building blocks (Pippenger), one source for CPU and CUDA, built
per curve.

MSM computes sum_i k_i P_i for scalars k_i in Fr (plain form, 4 little-endian uint64 limbs,
as snarkjs stores them, on both curves) and affine points P_i (Montgomery form, as the zkey
stores them: G1 rows of 2 NQ limbs x||y, G2 rows of 4 NQ limbs x.c0||x.c1||y.c0||y.c1, NQ the
limbs of an Fq element: 4 on BN254, 6 on BLS12-381; all zeros = infinity).

Built like cuzk.arith.field: imported normally this is the CPU build for BN254;
``T.load("cuzk.kernels.msm", **build_params(curve))`` builds it for another curve or target
(cuzk.arith.curves, "Parametrized builds" in cuzk.arith.jit). What depends on the curve is
r (reduction, negation, R_BITS) and Fq (negating a point row).

Pippenger's bucket method with signed digits
--------------------------------------------
Each scalar is cut into K windows of c bits, k = sum_w d_w 2^{cw}, with signed digits
d_w in [-2^{c-1}, 2^{c-1}) (the top window in [0, 2^{c-1}]): a raw window value
v >= 2^{c-1} becomes v - 2^c and carries 1 into the next window. Then per window w,
point P_i goes to bucket |d_w| with sign sign(d_w) (negating an affine point is one
subtraction), bucket m holds B_m = sum of its points, and the window sum is
W_w = sum_m m B_m, computed with two running sums from the top bucket down
(R += B_m; S += R). Finally sum_w 2^{cw} W_w by Horner (c doublings per window).
Signed digits halve the buckets per window (2^{c-1} instead of 2^c - 1).
For scalars below 2^bits, K = ceil((bits + 1) / c) (windows_for): then k < 2^(K c - 1), so
the top window's raw value is below 2^{c-1} and, plus a carry, stays within [0, 2^{c-1}]:
it never carries out. Every reduced scalar is below r < 2^R_BITS (R_BITS = 254 on BN254,
255 on BLS12-381), so bits = R_BITS serves any scalar (K = ceil(255 / c) or ceil(256 / c)).

What lives here: the digit decomposition and the group-independent row helpers (and, in the
CUDA build, the digit kernel). The drivers are cuzk.kernels.msm_cpu (numba prange over
windows) and cuzk.kernels.msm_cuda (bucket sort, accumulation and reduction kernels on the
device).

The group-dependent steps (batch-affine bucket accumulation, bucket sums, the window
combination) are in cuzk.kernels.buckets, built per (target, group, curve).
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params, constants
from cuzk.arith.jit import CUDA, building
from cuzk.kernels.windows import windows_for  # noqa: F401 (named here as before)

T = building()
device_fn = T.device_fn
inline_fn = T.row_fn  # array-taking helpers: see Target.row_fn
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))
sbb = T.prims.sbb
fq_neg, fq_load, fq_store = F.fq_neg, F.fq_load, F.fq_store
if F.NR != 4:
    raise NotImplementedError(f"{CURVE}: MSM scalars here are 4 limbs, Fr has {F.NR}")

Z = np.uint64(0)
U1 = np.uint64(1)
U64 = np.uint64(64)
R_LIMBS = F.R_LIMBS  # r, plain, 4 limbs
R_BITS = constants(CURVE).FR_MODULUS.bit_length()  # every reduced scalar is below 2^R_BITS
NQ = F.NQ  # limbs of an Fq element (a coordinate of a G1 row, half of one of a G2 row)
# Subtractions of r that reduce any 256-bit value (2^256 / r < 6 on BN254, < 3 on BLS12-381),
# plus the comparison that finds the value reduced.
REDUCE_ROUNDS = ((1 << 256) - 1) // constants(CURVE).FR_MODULUS + 1

# Kinds of a bucket pair (P, Q) in the batch-affine step.
PAIR_ADD = 0  # x_P != x_Q: slope (y_Q - y_P) / (x_Q - x_P)
PAIR_DBL = 1  # P = Q: slope 3 x^2 / 2y
PAIR_TAKE_Q = 2  # P at infinity: the sum is Q
PAIR_TAKE_P = 3  # Q at infinity: the sum is P
PAIR_INF = 4  # P = -Q: the sum is infinity


# ======================================= scalars ==========================================


@device_fn
def scalar_load_reduced(scalars, i):
    """Scalar i as 4 limbs, reduced mod r (inputs may be any 256-bit value; snarkjs's are
    already < r): at most REDUCE_ROUNDS - 1 subtractions."""
    s0, s1, s2, s3 = scalars[i, 0], scalars[i, 1], scalars[i, 2], scalars[i, 3]
    for _ in range(REDUCE_ROUNDS):
        d0, br = sbb(s0, R_LIMBS[0], Z)
        d1, br = sbb(s1, R_LIMBS[1], br)
        d2, br = sbb(s2, R_LIMBS[2], br)
        d3, br = sbb(s3, R_LIMBS[3], br)
        if br != Z:
            break
        s0, s1, s2, s3 = d0, d1, d2, d3
    return s0, s1, s2, s3


@device_fn
def scalar_window(s0, s1, s2, s3, w, c):
    """Bits [w c, w c + c) of the 256-bit scalar (s0..s3), as an int64 (c <= 31)."""
    off = w * c
    limb = off >> 6
    shift = np.uint64(off & 63)
    mask = (U1 << np.uint64(c)) - U1
    if limb == 0:
        lo, hi = s0, s1
    elif limb == 1:
        lo, hi = s1, s2
    elif limb == 2:
        lo, hi = s2, s3
    elif limb == 3:
        lo, hi = s3, Z
    else:
        return np.int64(0)
    v = lo >> shift
    if shift != Z:
        v = v | (hi << (U64 - shift))
    return np.int64(v & mask)


@device_fn
def scalar_signed_digits(scalars, i, c, K, digits):
    """The K signed c-bit digits of scalar i into digits[0:K, i] (int32)."""
    s0, s1, s2, s3 = scalar_load_reduced(scalars, i)
    limbs_signed_digits(s0, s1, s2, s3, c, K, digits, i)


@device_fn
def limbs_signed_digits(s0, s1, s2, s3, c, K, digits, i):
    """The K signed c-bit digits of the scalar (s0..s3) < 2^(K c - 1) into digits[0:K, i]:
    limbs_signed_digits_folded with Kf = K (one group of windows, column i)."""
    limbs_signed_digits_folded(s0, s1, s2, s3, c, K, K, 0, digits, i)


@device_fn
def limbs_signed_digits_folded(s0, s1, s2, s3, c, K, Kf, m, digits, j):
    """The K signed c-bit digits of the scalar (s0..s3) < 2^(K c - 1), digit w into
    digits[w mod Kf, (w div Kf) m + j]: the layout of an MSM over a table of multiples
    (cuzk.kernels.pippenger_cpu.pippenger_table), where window w = g Kf + v of scalar j is
    window v of the point 2^(c Kf g) P_j, column g m + j. Kf = K: every digit in column j
    (limbs_signed_digits)."""
    half = np.int64(1) << np.int64(c - 1)
    full = np.int64(1) << np.int64(c)
    carry = np.int64(0)
    v = 0
    col = np.int64(j)
    step = np.int64(m)
    for w in range(K):
        d = scalar_window(s0, s1, s2, s3, w, c) + carry
        if d >= half and w < K - 1:
            d -= full
            carry = np.int64(1)
        else:
            carry = np.int64(0)
        digits[v, col] = np.int32(d)
        v += 1
        if v == Kf:  # (no division per digit)
            v = 0
            col += step


@device_fn
def scalar_neg_mod_r(s0, s1, s2, s3):
    """r - s for a reduced scalar 0 < s < r."""
    d0, br = sbb(R_LIMBS[0], s0, Z)
    d1, br = sbb(R_LIMBS[1], s1, br)
    d2, br = sbb(R_LIMBS[2], s2, br)
    d3, br = sbb(R_LIMBS[3], s3, br)
    return d0, d1, d2, d3


@device_fn
def limbs_bit_length(s0, s1, s2, s3):
    """The bit length of the 256-bit value (s0..s3): 0 for zero."""
    if s3 != Z:
        top, base = s3, 192
    elif s2 != Z:
        top, base = s2, 128
    elif s1 != Z:
        top, base = s1, 64
    else:
        top, base = s0, 0
    if top == Z:
        return 0
    b = 1
    for k in (32, 16, 8, 4, 2, 1):
        if top >> np.uint64(k) != Z:
            top >>= np.uint64(k)
            b += k
    return base + b


# Scalars shorter than this many bits skip computing r - s, which is then not shorter: a
# scalar of b <= R_BITS - 2 bits has s < 2^(R_BITS - 2) <= r / 2, so r - s > r / 2 has at
# least R_BITS - 1 > b bits. Any bound up to R_BITS - 1 holds; R_BITS - 4 is the 250 BN254
# always used (BLS12-381: 251).
CLASS_NEG_MIN = R_BITS - 4


@device_fn
def scalar_class_bits(scalars, i):
    """The size class of scalar i: its bit length b after reduction mod r, or -b when r - s is
    shorter (the scalar is then used as -(r - s), the point negated); 0 for a zero scalar."""
    s0, s1, s2, s3 = scalar_load_reduced(scalars, i)
    b = limbs_bit_length(s0, s1, s2, s3)
    if b < CLASS_NEG_MIN:  # r - s is longer: see CLASS_NEG_MIN
        return b
    n0, n1, n2, n3 = scalar_neg_mod_r(s0, s1, s2, s3)
    nb = limbs_bit_length(n0, n1, n2, n3)
    return -nb if nb < b else b


@device_fn
def subset_scalar(scalars, idx, j):
    """Scalar idx[j] reduced mod r, or r minus it where idx[j] is complemented (~i); scalar j
    when idx is empty (every point, in order)."""
    if idx.shape[0] == 0:
        return scalar_load_reduced(scalars, j)
    i = idx[j]
    if i >= 0:
        return scalar_load_reduced(scalars, i)
    s0, s1, s2, s3 = scalar_load_reduced(scalars, ~i)
    return scalar_neg_mod_r(s0, s1, s2, s3)


@device_fn
def point_row_is_zero(points, i):
    """True for an all-zero row: the affine encoding of infinity (any width)."""
    acc = Z
    for j in range(points.shape[1]):
        acc |= points[i, j]
    return acc == Z


@device_fn
def scalar_is_zero(scalars, i):
    return (scalars[i, 0] | scalars[i, 1] | scalars[i, 2] | scalars[i, 3]) == Z


# ================================ row copies ==============================================


@inline_fn
def point_row_copy(src, i, dst, j, negate):
    """dst[j] = src[i] (an affine row of 2 NQ or 4 NQ limbs), or -src[i] when negate:
    -(x, y) = (x, -y), coordinate-wise for Fq2 (y's NQ-limb Fq elements negated)."""
    W = src.shape[1]
    half = W >> 1
    for k in range(half):
        dst[j, k] = src[i, k]
    if not negate:
        for k in range(half, W):
            dst[j, k] = src[i, k]
    else:
        for o in range(half, W, NQ):
            fq_store(dst, j, o, fq_neg(fq_load(src, i, o)))


# ================================ the digit kernel (CUDA) =================================

if T.name == CUDA:
    from numba import cuda

    @T.kernel
    def msm_signed_digits(points, scalars, c, K, digits):
        """digits[0:K, i] = the signed c-bit digits of scalars[i]; zeros where the scalar is
        zero or points[i] is infinity (cuzk.kernels.msm_cuda launches it)."""
        i = cuda.grid(1)
        if i < points.shape[0]:
            if point_row_is_zero(points, i) or scalar_is_zero(scalars, i):
                for w in range(K):
                    digits[w, i] = 0
            else:
                scalar_signed_digits(scalars, i, c, K, digits)
