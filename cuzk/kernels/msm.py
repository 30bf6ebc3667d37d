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

What lives here: the digit decomposition, the batch-affine bucket step for the CPU
(see below), and the per-group (G1, G2) bucket-sum and window-combination steps. The
drivers are cuzk.kernels.msm_cpu (numba prange over windows) and cuzk.kernels.msm_cuda
(bucket sort, accumulation and reduction kernels on the device).

Batch-affine bucket accumulation (CPU)
--------------------------------------
Adding two affine points costs one inversion plus 2M + 1S; Montgomery's simultaneous
inversion trick (P. L. Montgomery, "Speeding the Pollard and elliptic curve methods of
factorization", Math. Comp. 48 (1987), section 10.3.1) inverts m denominators with one
inversion and 3(m - 1) multiplications: prefix products a_j = d_0 ... d_j, one inversion
of a_{m-1}, then backwards d_j^{-1} = a_{j-1} * (d_j ... d_{m-1})^{-1}. So an affine
addition costs about 5M + 1S in a large batch, against 7M + 4S for a mixed Jacobian one.
The bucket points are sorted by bucket; each round adds disjoint pairs within every
bucket, all pairs of all buckets sharing one inversion, until each bucket holds one
point (a pairwise tree, as in Aztec's barretenberg "pippenger reduce_buckets"; rounds =
log2 of the largest bucket). The exceptional pairs need no inversion of zero: an operand
at infinity (the result is the other one), P = -P' (infinity), and P = P' (doubling,
slope 3x^2 / 2y; the denominator 2y is never 0 on BN254, whose groups have odd order).
"""

import numpy as np

from cuzk.bn254.constants import FR_MODULUS, Q_ONE, ZERO
from cuzk.formats.limbs import int_to_limb_tuple
from cuzk.jit import building

T = building()
device_fn = T.device_fn
inline_fn = T.row_fn  # array-taking helpers: see Target.row_fn
F = T.load("cuzk.bn254.field")
C = T.load("cuzk.bn254.curve")
sbb = T.prims.sbb

fq_add, fq_sub, fq_dbl, fq_neg = F.fq_add, F.fq_sub, F.fq_dbl, F.fq_neg
fq_mul, fq_sqr, fq_inv = F.fq_mul, F.fq_sqr, F.fq_inv
fq_is_zero, fq_eq = F.is_zero, F.eq
fq2_add, fq2_sub, fq2_dbl, fq2_neg = F.fq2_add, F.fq2_sub, F.fq2_dbl, F.fq2_neg
fq2_mul, fq2_sqr, fq2_inv = F.fq2_mul, F.fq2_sqr, F.fq2_inv
fq2_is_zero, fq2_eq = F.fq2_is_zero, F.fq2_eq

g1_inf, g1_dbl, g1_add, g1_add_mixed = C.g1_inf, C.g1_dbl, C.g1_add, C.g1_add_mixed
g1_to_affine = C.g1_to_affine
g2_inf, g2_dbl, g2_add, g2_add_mixed = C.g2_inf, C.g2_dbl, C.g2_add, C.g2_add_mixed
g2_to_affine = C.g2_to_affine

Z = np.uint64(0)
U1 = np.uint64(1)
U64 = np.uint64(64)
R_LIMBS = int_to_limb_tuple(FR_MODULUS)
FQ2_ONE = (Q_ONE, ZERO)
FQ2_ZERO = (ZERO, ZERO)

# Kinds of a bucket pair (P, Q) in the batch-affine step.
PAIR_ADD = 0  # x_P != x_Q: slope (y_Q - y_P) / (x_Q - x_P)
PAIR_DBL = 1  # P = Q: slope 3 x^2 / 2y
PAIR_TAKE_Q = 2  # P at infinity: the sum is Q
PAIR_TAKE_P = 3  # Q at infinity: the sum is P
PAIR_INF = 4  # P = -Q: the sum is infinity


def windows_for(c: int) -> int:
    """K = ceil(255 / c) windows of c bits (see the module docstring)."""
    return -(-255 // c)


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
def point_row_is_zero(points, i):
    """True for an all-zero row: the affine encoding of infinity (any width)."""
    acc = Z
    for j in range(points.shape[1]):
        acc |= points[i, j]
    return acc == Z


@device_fn
def scalar_is_zero(scalars, i):
    return (scalars[i, 0] | scalars[i, 1] | scalars[i, 2] | scalars[i, 3]) == Z


# ================================ row loads and stores ====================================

# Row access through the shared accessors (inlined at the Numba IR level on the CPU).
fq_load, fq_store, fq2_load, fq2_store = F.load, F.store, F.fq2_load, F.fq2_store
g1_affine_load, g1_affine_store = C.g1_load_affine, C.g1_store_affine
g2_affine_load, g2_affine_store = C.g2_load_affine, C.g2_store_affine
g1_jacobian_load, g1_jacobian_store = C.g1_load, C.g1_store
g2_jacobian_load, g2_jacobian_store = C.g2_load, C.g2_store


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


# ====================== batch-affine pair addition (Montgomery's trick) ===================
# Helpers work on rows of arrays so that one generic driver serves G1 (Fq, 8-limb rows,
# 4-limb inverse rows) and G2 (Fq2, 16-limb rows, 8-limb inverse rows).

@inline_fn
def g1_pair_classify(P, Q):
    """(kind, denominator) of the affine sum P + Q (see the PAIR_* kinds)."""
    if fq_is_zero(P[0]) and fq_is_zero(P[1]):
        return PAIR_TAKE_Q, Q_ONE
    if fq_is_zero(Q[0]) and fq_is_zero(Q[1]):
        return PAIR_TAKE_P, Q_ONE
    if fq_eq(P[0], Q[0]):
        if fq_eq(P[1], Q[1]):
            return PAIR_DBL, fq_dbl(P[1])
        return PAIR_INF, Q_ONE
    return PAIR_ADD, fq_sub(Q[0], P[0])


@inline_fn
def g1_affine_add_given_inverse(P, Q, kind, inv):
    """P + Q for affine P, Q, given inv = 1 / denominator (from g1_pair_classify):
    lambda = (y_Q - y_P) inv (or 3 x_P^2 inv when P = Q), x3 = lambda^2 - x_P - x_Q,
    y3 = lambda (x_P - x3) - y_P."""
    if kind == PAIR_ADD:
        lam = fq_mul(fq_sub(Q[1], P[1]), inv)
    elif kind == PAIR_DBL:
        xx = fq_sqr(P[0])
        lam = fq_mul(fq_add(fq_dbl(xx), xx), inv)
    elif kind == PAIR_TAKE_Q:
        return Q
    elif kind == PAIR_TAKE_P:
        return P
    else:
        return (ZERO, ZERO)
    x3 = fq_sub(fq_sub(fq_sqr(lam), P[0]), Q[0])
    y3 = fq_sub(fq_mul(lam, fq_sub(P[0], x3)), P[1])
    return (x3, y3)


@inline_fn
def g1_chain_forward(pts, i, acc, k):
    """Pair (pts[i], pts[i+1]) as the k-th of a batch: acc[k] = acc[k-1] * denominator
    (prefix product; acc[-1] = 1; pairs needing no inversion repeat acc[k-1]). Returns the
    pair's kind."""
    kind, den = g1_pair_classify(g1_affine_load(pts, i), g1_affine_load(pts, i + 1))
    if k == 0:
        prev = Q_ONE
    else:
        prev = fq_load(acc, k - 1, 0)
    if kind <= PAIR_DBL:
        prev = fq_mul(prev, den)
    fq_store(acc, k, 0, prev)
    return kind


@inline_fn
def g1_chain_backward(pts, i, acc, k, kind, running, out, o):
    """Backward step of the batch for pair k = (pts[i], pts[i+1]): with running =
    1 / (d_0 ... d_k), d_k^{-1} = running * acc[k-1]; out[o] = the sum; returns
    running * d_k = 1 / (d_0 ... d_{k-1})."""
    P = g1_affine_load(pts, i)
    Q = g1_affine_load(pts, i + 1)
    d_inv = Q_ONE
    if kind <= PAIR_DBL:
        if k == 0:
            d_inv = running
        else:
            d_inv = fq_mul(running, fq_load(acc, k - 1, 0))
        if kind == PAIR_ADD:
            den = fq_sub(Q[0], P[0])
        else:
            den = fq_dbl(P[1])
        running = fq_mul(running, den)
    g1_affine_store(out, o, g1_affine_add_given_inverse(P, Q, kind, d_inv))
    return running


@inline_fn
def g2_pair_classify(P, Q):
    if fq2_is_zero(P[0]) and fq2_is_zero(P[1]):
        return PAIR_TAKE_Q, FQ2_ONE
    if fq2_is_zero(Q[0]) and fq2_is_zero(Q[1]):
        return PAIR_TAKE_P, FQ2_ONE
    if fq2_eq(P[0], Q[0]):
        if fq2_eq(P[1], Q[1]):
            return PAIR_DBL, fq2_dbl(P[1])
        return PAIR_INF, FQ2_ONE
    return PAIR_ADD, fq2_sub(Q[0], P[0])


@inline_fn
def g2_affine_add_given_inverse(P, Q, kind, inv):
    """G2 twin of g1_affine_add_given_inverse (over Fq2)."""
    if kind == PAIR_ADD:
        lam = fq2_mul(fq2_sub(Q[1], P[1]), inv)
    elif kind == PAIR_DBL:
        xx = fq2_sqr(P[0])
        lam = fq2_mul(fq2_add(fq2_dbl(xx), xx), inv)
    elif kind == PAIR_TAKE_Q:
        return Q
    elif kind == PAIR_TAKE_P:
        return P
    else:
        return (FQ2_ZERO, FQ2_ZERO)
    x3 = fq2_sub(fq2_sub(fq2_sqr(lam), P[0]), Q[0])
    y3 = fq2_sub(fq2_mul(lam, fq2_sub(P[0], x3)), P[1])
    return (x3, y3)


@inline_fn
def g2_chain_forward(pts, i, acc, k):
    kind, den = g2_pair_classify(g2_affine_load(pts, i), g2_affine_load(pts, i + 1))
    if k == 0:
        prev = FQ2_ONE
    else:
        prev = fq2_load(acc, k - 1, 0)
    if kind <= PAIR_DBL:
        prev = fq2_mul(prev, den)
    fq2_store(acc, k, 0, prev)
    return kind


@inline_fn
def g2_chain_backward(pts, i, acc, k, kind, running, out, o):
    """G2 twin of g1_chain_backward (over Fq2)."""
    P = g2_affine_load(pts, i)
    Q = g2_affine_load(pts, i + 1)
    d_inv = FQ2_ONE
    if kind <= PAIR_DBL:
        if k == 0:
            d_inv = running
        else:
            d_inv = fq2_mul(running, fq2_load(acc, k - 1, 0))
        if kind == PAIR_ADD:
            den = fq2_sub(Q[0], P[0])
        else:
            den = fq2_dbl(P[1])
        running = fq2_mul(running, den)
    g2_affine_store(out, o, g2_affine_add_given_inverse(P, Q, kind, d_inv))
    return running


@device_fn
def g1_batch_affine_round(pts, out, counts, starts, active, na, acc, kinds):
    """One batch-affine round over the na active buckets (bucket m holds counts[m] >= 2
    points at pts[starts[m]:]): pair p of bucket m is summed into out[starts[m] + p], an odd
    last point is carried over, and counts[m] becomes ceil(counts[m] / 2). All pairs of all
    buckets share one inversion (forward prefix products, backward inverses)."""
    k = 0
    for a in range(na):
        m = active[a]
        s = starts[m]
        for p in range(counts[m] >> 1):
            kinds[k] = g1_chain_forward(pts, s + 2 * p, acc, k)
            k += 1
    running = fq_inv(fq_load(acc, k - 1, 0))  # the one inversion of the batch
    for a in range(na - 1, -1, -1):
        m = active[a]
        s = starts[m]
        cnt = counts[m]
        half = cnt >> 1
        for p in range(half - 1, -1, -1):
            k -= 1
            running = g1_chain_backward(pts, s + 2 * p, acc, k, kinds[k], running, out, s + p)
        if cnt & 1:
            point_row_copy(pts, s + cnt - 1, out, s + half, False)
        counts[m] = (cnt + 1) >> 1


@device_fn
def g2_batch_affine_round(pts, out, counts, starts, active, na, acc, kinds):
    """G2 twin of g1_batch_affine_round."""
    k = 0
    for a in range(na):
        m = active[a]
        s = starts[m]
        for p in range(counts[m] >> 1):
            kinds[k] = g2_chain_forward(pts, s + 2 * p, acc, k)
            k += 1
    running = fq2_inv(fq2_load(acc, k - 1, 0))
    for a in range(na - 1, -1, -1):
        m = active[a]
        s = starts[m]
        cnt = counts[m]
        half = cnt >> 1
        for p in range(half - 1, -1, -1):
            k -= 1
            running = g2_chain_backward(pts, s + 2 * p, acc, k, kinds[k], running, out, s + p)
        if cnt & 1:
            point_row_copy(pts, s + cnt - 1, out, s + half, False)
        counts[m] = (cnt + 1) >> 1


# ============================ bucket sums -> window -> result =============================

@device_fn
def g1_bucket_weighted_sum(sums, H, wins, w):
    """wins[w] = sum_{m=1..H} m * sums[m-1] (affine bucket sums, (0, 0) = empty), as a
    Jacobian row, by running sums from the top bucket down: R += B_m; S += R."""
    R = g1_inf()
    S = g1_inf()
    for m in range(H - 1, -1, -1):
        R = g1_add_mixed(R, g1_affine_load(sums, m))
        S = g1_add(S, R)
    g1_jacobian_store(wins, w, S)


@device_fn
def g1_windows_combine(wins, K, c, out):
    """out[0] = affine(sum_w 2^{c w} wins[w]) by Horner from the top window."""
    acc = g1_jacobian_load(wins, K - 1)
    for w in range(K - 2, -1, -1):
        for _ in range(c):
            acc = g1_dbl(acc)
        acc = g1_add(acc, g1_jacobian_load(wins, w))
    g1_affine_store(out, 0, g1_to_affine(acc))


@device_fn
def g2_bucket_weighted_sum(sums, H, wins, w):
    R = g2_inf()
    S = g2_inf()
    for m in range(H - 1, -1, -1):
        R = g2_add_mixed(R, g2_affine_load(sums, m))
        S = g2_add(S, R)
    g2_jacobian_store(wins, w, S)


@device_fn
def g2_windows_combine(wins, K, c, out):
    acc = g2_jacobian_load(wins, K - 1)
    for w in range(K - 2, -1, -1):
        for _ in range(c):
            acc = g2_dbl(acc)
        acc = g2_add(acc, g2_jacobian_load(wins, w))
    g2_affine_store(out, 0, g2_to_affine(acc))
