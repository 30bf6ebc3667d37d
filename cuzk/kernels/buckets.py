"""Pippenger's bucket steps for one group, written once: built per (target, group, curve).

``T.load("cuzk.kernels.buckets", group="g1")`` (or "g2"; BN254), adding
``curve="bls12_381"`` for another curve (cuzk.arith.curves.build_params), binds the group's
routines (cuzk.arith.group) and its coordinate field's operations as module constants; the MSM
drivers (cuzk.kernels.pippenger_cpu for the CPU, cuzk.kernels.pippenger_cuda for CUDA) take
these builds. See cuzk.kernels.msm for the method and the digit decomposition.

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
slope 3x^2 / 2y; the denominator 2y is never 0: G1 and G2 have odd order r on both curves).
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building
from cuzk.kernels.msm import PAIR_ADD, PAIR_DBL, PAIR_INF, PAIR_TAKE_P, PAIR_TAKE_Q

T = building()
device_fn = T.device_fn
inline_fn = T.row_fn  # array-taking helpers: see Target.row_fn
GROUP = T.param("group")
CURVE = T.param("curve", DEFAULT)
G = T.load("cuzk.arith.group", group=GROUP, **build_params(CURVE))
M = T.load("cuzk.kernels.msm", **build_params(CURVE))
point_row_copy = M.point_row_copy

f_add, f_sub, f_dbl, f_mul, f_sqr, f_inv = G.f_add, G.f_sub, G.f_dbl, G.f_mul, G.f_sqr, G.f_inv
# The batch's running products (prefix, inverse) and the slope only enter other products:
# on G1 they stay below 2q, not fully reduced (cuzk.arith.field.fq_mul_unreduced).
f_mul_u = G.f_mul_unreduced
# ...and so do the differences x_Q - x_P (the denominator), y_Q - y_P and x_P - x_3: on G1
# a - b + q in (0, 2q), without the borrow's mask (cuzk.arith.field.fq_sub_unreduced)
f_sub_u = G.f_sub_unreduced

f_is_zero, f_eq, f_load, f_store = G.f_is_zero, G.f_eq, G.f_load, G.f_store
F_ZERO, F_ONE = G.F_ZERO, G.F_ONE

# The field the batch inverts in. G1: Fq, the denominators themselves. G2: Fq as well, through
# the norms N(d) = d0^2 + d1^2 of the Fq2 denominators d = d0 + d1 u (u^2 = -1), with
# d^-1 = (d0 - d1 u) N(d)^-1: the prefix products, the running inverse and the one inversion
# are Fq's (1 product each instead of an Fq2 product's 3), N(d) is stored beside its prefix
# product (an acc row holds an Fq2 element: columns 0.. and NQ..), and d^-1 costs 2 products.
# So an addition costs 15 Fq products instead of 17. N(d) != 0 for d != 0: -1 is not a square
# mod q (q = 3 mod 4 on both curves).
if GROUP == "g1":
    B_ONE, b_load, b_store, b_inv, b_mul_u = F_ONE, f_load, f_store, f_inv, f_mul_u

    @inline_fn
    def den_enter(acc, k, prev, den):
        """acc[k] = prev * (what den contributes to the batch's product): den itself (G1),
        its norm, stored beside the prefix product (G2)."""
        b_store(acc, k, 0, f_mul_u(prev, den))

    @inline_fn
    def den_leave(acc, k, running, den, share):
        """(1 / den, running without den's share), from share = 1 / (den's contribution)."""
        return share, f_mul_u(running, den)

else:
    FQ = G.F
    B_ONE, b_load, b_store, b_inv = FQ.Q_ONE, FQ.fq_load, FQ.fq_store, FQ.fq_inv
    b_mul_u = FQ.fq_mul_unreduced
    NORM_COL = FQ.NQ  # the acc column of a row's N(d)

    @inline_fn
    def den_enter(acc, k, prev, den):
        norm = FQ.fq_add_unreduced(FQ.fq_sqr(den[0]), FQ.fq_sqr(den[1]))
        b_store(acc, k, 0, b_mul_u(prev, norm))
        b_store(acc, k, NORM_COL, norm)

    @inline_fn
    def den_leave(acc, k, running, den, share):
        norm = b_load(acc, k, NORM_COL)
        d_inv = (FQ.fq_mul(den[0], share), FQ.fq_neg(FQ.fq_mul(den[1], share)))
        return d_inv, b_mul_u(running, norm)


# ====================== batch-affine pair addition (Montgomery's trick) ===================
# Helpers work on rows of arrays: affine points of G.AFFINE_WIDTH limbs, prefix products of
# G.COORD_LIMBS limbs.


@inline_fn
def pair_classify(P, Q):
    """(kind, denominator) of the affine sum P + Q (see the PAIR_* kinds)."""
    if f_is_zero(P[0]) and f_is_zero(P[1]):
        return PAIR_TAKE_Q, F_ONE
    if f_is_zero(Q[0]) and f_is_zero(Q[1]):
        return PAIR_TAKE_P, F_ONE
    if f_eq(P[0], Q[0]):
        if f_eq(P[1], Q[1]):
            return PAIR_DBL, f_dbl(P[1])
        return PAIR_INF, F_ONE
    return PAIR_ADD, f_sub_u(Q[0], P[0])


@inline_fn
def affine_add_given_inverse(P, Q, kind, inv):
    """P + Q for affine P, Q, given inv = 1 / denominator (from pair_classify):
    lambda = (y_Q - y_P) inv (or 3 x_P^2 inv when P = Q), x3 = lambda^2 - x_P - x_Q,
    y3 = lambda (x_P - x3) - y_P."""
    if kind == PAIR_ADD:
        lam = f_mul_u(f_sub_u(Q[1], P[1]), inv)
    elif kind == PAIR_DBL:
        xx = f_sqr(P[0])
        lam = f_mul_u(f_add(f_dbl(xx), xx), inv)
    elif kind == PAIR_TAKE_Q:
        return Q
    elif kind == PAIR_TAKE_P:
        return P
    else:
        return (F_ZERO, F_ZERO)
    x3 = f_sub(f_sub(f_sqr(lam), P[0]), Q[0])
    y3 = f_sub(f_mul(lam, f_sub_u(P[0], x3)), P[1])
    return (x3, y3)


# A batch's prefix products run in CHAINS interleaved chains: pair k extends the product of
# pair k - CHAINS, so consecutive pairs' products do not wait on each other (the processor
# overlaps them); the chains' ends share the batch's one inversion (chains_invert).
CHAINS = 2


@inline_fn
def pair_forward(P, Q, acc, k):
    """Pair (P, Q) as the k-th of a batch: acc[k] = acc[link] * its denominator, link =
    k - CHAINS the pair before k in its chain (acc[link] = 1 when link < 0; pairs needing no
    inversion repeat acc[link]). Returns its kind."""
    kind, den = pair_classify(P, Q)
    link = k - CHAINS
    if link < 0:
        prev = B_ONE
    else:
        prev = b_load(acc, link, 0)
    if kind <= PAIR_DBL:
        den_enter(acc, k, prev, den)
    else:
        b_store(acc, k, 0, prev)
    return kind


@inline_fn
def pair_backward(P, Q, acc, k, kind, running):
    """Backward step of the batch for pair k = (P, Q) (link = k - CHAINS, the pair before it
    in its chain): with running = 1 / acc[k] (the chain's denominators up to d_k),
    d_k^{-1} = running * acc[link]. Returns (P + Q, running * d_k = 1 / acc[link])."""
    d_inv = F_ONE
    link = k - CHAINS
    if kind <= PAIR_DBL:
        if link < 0:
            share = running
        else:
            share = b_mul_u(running, b_load(acc, link, 0))
        if kind == PAIR_ADD:
            den = f_sub_u(Q[0], P[0])
        else:
            den = f_dbl(P[1])
        d_inv, running = den_leave(acc, k, running, den, share)
    return affine_add_given_inverse(P, Q, kind, d_inv), running


@inline_fn
def chains_invert(acc, k):
    """The inverses (of pair k - 1's chain, of the other's) of the CHAINS = 2 chains' last
    prefix products acc[k - 1] and acc[k - 2] (1 when k < 2), by one inversion: 1 / (a b)
    times b, and times a."""
    a = b_load(acc, k - 1, 0)
    if k < 2:
        return b_inv(a), B_ONE
    b = b_load(acc, k - 2, 0)
    ab_inv = b_inv(b_mul_u(a, b))
    return b_mul_u(ab_inv, b), b_mul_u(ab_inv, a)


@device_fn
def batch_affine_round(pts, out, counts, starts, active, na, acc, kinds):
    """One batch-affine round over the na active buckets (bucket m holds counts[m] >= 2
    points at pts[starts[m]:]): pair p of bucket m is summed into out[starts[m] + p], an odd
    last point is carried over, and counts[m] becomes ceil(counts[m] / 2). All pairs of all
    buckets share one inversion (forward prefix products, backward inverses), in CHAINS
    interleaved chains."""
    k = 0
    for a in range(na):
        m = active[a]
        s = starts[m]
        for p in range(counts[m] >> 1):
            i = s + 2 * p
            kinds[k] = pair_forward(G.load_affine(pts, i), G.load_affine(pts, i + 1), acc, k)
            k += 1
    # running: 1 / acc[k] for the pair k taken next (k descending); other: the other chain's
    running, other = chains_invert(acc, k)
    for a in range(na - 1, -1, -1):
        m = active[a]
        s = starts[m]
        cnt = counts[m]
        half = cnt >> 1
        for p in range(half - 1, -1, -1):
            k -= 1
            i = s + 2 * p
            R, running = pair_backward(
                G.load_affine(pts, i), G.load_affine(pts, i + 1), acc, k, kinds[k], running
            )
            running, other = other, running  # pair k - 1 is of the other chain
            G.store_affine(out, s + p, R)
        if cnt & 1:
            point_row_copy(pts, s + cnt - 1, out, s + half, False)
        counts[m] = (cnt + 1) >> 1


@device_fn
def weighted_rows_sum(rows, first, count):
    """sum_{m=1..count} m * rows[first + m - 1] (affine rows, (0, 0) = infinity) as a Jacobian
    point, by running sums from the top row down: R += B_m; S += R."""
    R = G.inf()
    S = G.inf()
    for m in range(count - 1, -1, -1):
        R = G.add_mixed(R, G.load_affine(rows, first + m))
        S = G.add(S, R)
    return S


@device_fn
def bucket_weighted_sum(sums, H, wins, w):
    """wins[w] = sum_{m=1..H} m * sums[m-1] (affine bucket sums, (0, 0) = empty), as a
    Jacobian row (weighted_rows_sum)."""
    G.store(wins, w, weighted_rows_sum(sums, 0, H))


@device_fn
def double_and_add(points, reduced, nbits, out):
    """out[0] = affine(sum_i reduced[i] points[i]) by the binary method with shared doublings
    (Straus), for scalars already reduced mod r and below 2^nbits (nbits <= M.R_BITS < 256):
    one doubling per scalar bit, one mixed addition per set bit of each scalar, all in
    Jacobian coordinates: no inversion but the last. For a handful of points (the proof's
    blinding sums) this beats the bucket method, whose every window pays inversions
    (cuzk.kernels.msm_cpu.window_bits picks it, as c = 1)."""
    n = points.shape[0]
    acc = G.inf()
    for bit in range(nbits - 1, -1, -1):
        acc = G.dbl(acc)
        limb = bit >> 6
        shift = np.uint64(bit & 63)
        for i in range(n):
            if (reduced[i, limb] >> shift) & np.uint64(1):
                acc = G.add_mixed(acc, G.load_affine(points, i))
    G.store_affine(out, 0, G.to_affine(acc))


@device_fn
def windows_combine(wins, K, c, out):
    """out[0] = affine(sum_w 2^{c w} wins[w]) by Horner from the top window."""
    acc = G.load(wins, K - 1)
    for w in range(K - 2, -1, -1):
        for _ in range(c):
            acc = G.dbl(acc)
        acc = G.add(acc, G.load(wins, w))
    G.store_affine(out, 0, G.to_affine(acc))


# ============ bucket sums in batch-affine lanes (CPU): sum_m m B_m with cheap additions =====
# The running sums R += B_m, S += R cost two Jacobian additions per bucket (~27 field
# multiplications). Cutting the buckets into L lanes of s = H / L consecutive buckets and
# running every lane's two sums side by side turns each step into two batches of L affine
# additions sharing one inversion each (~6 multiplications apiece plus the inversion's share).
# Lane l (buckets l s + 1 .. (l + 1) s) ends with R_l = sum of its buckets and
# S_l = sum (m - l s) B_m, so sum_m m B_m = sum_l S_l + s sum_l l R_l; the last sum is the
# same running-sum trick over the L lane totals (weighted_rows_sum), in Jacobian coordinates.


@inline_fn
def _rows_add(X, Y, y0, stride, L, acc, kinds):
    """X[l] += Y[y0 + l * stride] for l < L (affine rows, (0, 0) = infinity), one inversion
    (two chains, as in batch_affine_round)."""
    for l in range(L):
        kinds[l] = pair_forward(G.load_affine(X, l), G.load_affine(Y, y0 + l * stride), acc, l)
    running, other = chains_invert(acc, L)
    for l in range(L - 1, -1, -1):
        R, running = pair_backward(
            G.load_affine(X, l), G.load_affine(Y, y0 + l * stride), acc, l, kinds[l], running
        )
        running, other = other, running
        G.store_affine(X, l, R)


@inline_fn
def _lanes_step(R, S, Y, y0, stride, L, acc, kinds):
    """S[l] += R[l] and R[l] += Y[y0 + l * stride] for l < L, both from the R before the
    step, as one batch of 2 L pairs sharing one inversion (pair 2 l: R's, 2 l + 1: S's; the
    R pairs one chain, the S pairs the other, as in batch_affine_round)."""
    for l in range(L):
        R_l = G.load_affine(R, l)
        kinds[2 * l] = pair_forward(R_l, G.load_affine(Y, y0 + l * stride), acc, 2 * l)
        kinds[2 * l + 1] = pair_forward(G.load_affine(S, l), R_l, acc, 2 * l + 1)
    s_running, r_running = chains_invert(acc, 2 * L)
    for l in range(L - 1, -1, -1):
        # backwards: S's pair (it reads the old R[l]) before R's, which overwrites R[l]
        R_l = G.load_affine(R, l)
        S_new, s_running = pair_backward(
            G.load_affine(S, l), R_l, acc, 2 * l + 1, kinds[2 * l + 1], s_running
        )
        G.store_affine(S, l, S_new)
        R_new, r_running = pair_backward(
            R_l, G.load_affine(Y, y0 + l * stride), acc, 2 * l, kinds[2 * l], r_running
        )
        G.store_affine(R, l, R_new)


@device_fn
def bucket_lanes_sum(sums, H, L, R, S, acc, kinds, wins, w):
    """wins[w] = sum_{m=1..H} m * sums[m-1] (affine bucket sums, (0, 0) = empty) as a
    Jacobian row, in L lanes of batch-affine running sums (H, L powers of two, L <= H).
    R, S: (L, AFFINE_WIDTH) scratch; acc: (2 L, COORD_LIMBS); kinds: (2 L,).
    Each step adds the old R into S while R takes its next bucket (S lags R by one step, so
    one batch of 2 L additions and one inversion a step; S takes the last R at the end)."""
    s = H // L
    R[:L] = 0
    S[:L] = 0
    for t in range(s):
        # bucket (l + 1) s - t is row (l + 1) s - t - 1 = l s + (s - 1 - t)
        _lanes_step(R, S, sums, s - 1 - t, s, L, acc, kinds)
    _rows_add(S, R, 0, 1, L, acc, kinds)
    # sum_l S_l + s * sum_l l R_l
    total = G.inf()
    for l in range(L):
        total = G.add_mixed(total, G.load_affine(S, l))
    weighted = weighted_rows_sum(R, 1, L - 1)  # sum_{l=1..L-1} l R_l
    step = s
    while step > 1:
        weighted = G.dbl(weighted)
        step >>= 1
    G.store(wins, w, G.add(total, weighted))
