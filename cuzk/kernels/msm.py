"""Multi-scalar multiplication building blocks (Pippenger), one source for CPU and CUDA.

MSM computes sum_i k_i P_i for scalars k_i in Fr (plain form, 4 little-endian uint64 limbs,
as snarkjs stores them) and affine points P_i (Montgomery form, as the zkey stores them:
G1 rows of 8 limbs x||y, G2 rows of 16 limbs x.c0||x.c1||y.c0||y.c1; all zeros = infinity).

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
K = ceil(255 / c): scalars are < r < 2^254, so the top window plus a carry stays within
[0, 2^{c-1}] and never carries out.

What lives here: the digit decomposition and the group-independent row helpers. The
drivers are cuzk.kernels.msm_cpu (numba prange over windows) and cuzk.kernels.msm_cuda
(bucket sort, accumulation and reduction kernels on the device).

The group-dependent steps (batch-affine bucket accumulation, bucket sums, the window
combination) are in cuzk.kernels.buckets, built per (target, group).
"""

import numpy as np

from cuzk.arith.constants import FR_MODULUS
from cuzk.arith.jit import building
from cuzk.arith.radix import int_to_limb_tuple

T = building()
device_fn = T.device_fn
inline_fn = T.row_fn  # array-taking helpers: see Target.row_fn
F = T.load("cuzk.arith.field")
sbb = T.prims.sbb
fq_neg, fq_load, fq_store = F.fq_neg, F.load, F.store

Z = np.uint64(0)
U1 = np.uint64(1)
U64 = np.uint64(64)
R_LIMBS = int_to_limb_tuple(FR_MODULUS)

# Kinds of a bucket pair (P, Q) in the batch-affine step.
PAIR_ADD = 0  # x_P != x_Q: slope (y_Q - y_P) / (x_Q - x_P)
PAIR_DBL = 1  # P = Q: slope 3 x^2 / 2y
PAIR_TAKE_Q = 2  # P at infinity: the sum is Q
PAIR_TAKE_P = 3  # Q at infinity: the sum is P
PAIR_INF = 4  # P = -Q: the sum is infinity


def windows_for(c: int, bits: int = 254) -> int:
    """K = ceil((bits + 1) / c) windows of c bits for scalars below 2^bits: ceil(255 / c) for
    any scalar below r (see the module docstring); the extra bit holds the top carry."""
    return -(-(bits + 1) // c)


# ======================================= scalars ==========================================


@device_fn
def scalar_load_reduced(scalars, i):
    """Scalar i as 4 limbs, reduced mod r (inputs may be any 256-bit value; snarkjs's are
    already < r). At most five subtractions: 2^256 / r < 6."""
    s0, s1, s2, s3 = scalars[i, 0], scalars[i, 1], scalars[i, 2], scalars[i, 3]
    for _ in range(6):
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
    """The K signed c-bit digits of the scalar (s0..s3) < 2^(K c - 1) into digits[0:K, i]."""
    half = np.int64(1) << np.int64(c - 1)
    full = np.int64(1) << np.int64(c)
    carry = np.int64(0)
    for w in range(K):
        d = scalar_window(s0, s1, s2, s3, w, c) + carry
        if d >= half and w < K - 1:
            d -= full
            carry = np.int64(1)
        else:
            carry = np.int64(0)
        digits[w, i] = np.int32(d)


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


@device_fn
def scalar_class_bits(scalars, i):
    """The size class of scalar i: its bit length b after reduction mod r, or -b when r - s is
    shorter (the scalar is then used as -(r - s), the point negated); 0 for a zero scalar."""
    s0, s1, s2, s3 = scalar_load_reduced(scalars, i)
    b = limbs_bit_length(s0, s1, s2, s3)
    if b < 250:  # r - s has >= 253 bits: not shorter
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
    """dst[j] = src[i] (an affine row of 8 or 16 limbs), or -src[i] when negate: -(x, y) =
    (x, -y), coordinate-wise for Fq2."""
    W = src.shape[1]
    half = W >> 1
    for k in range(half):
        dst[j, k] = src[i, k]
    if not negate:
        for k in range(half, W):
            dst[j, k] = src[i, k]
    else:
        for o in range(half, W, 4):
            fq_store(dst, j, o, fq_neg(fq_load(src, i, o)))
