"""Fq, Fr and Fq2 arithmetic on 4-limb Montgomery elements: one source for CPU and CUDA.

An element is a tuple of four uint64 limbs, little-endian, in Montgomery form (a*R mod p,
R = 2^256) unless a name says "plain". Tuples stay in registers inside hot loops (measured:
arrays per call cost 4x). An Fq2 element is a pair of Fq elements (c0, c1) meaning c0 + c1*u,
u^2 = -1.

Every function here is a device function of the target being built (see cuzk.arith.jit): import
this module normally for the CPU build, or ``get_target("cuda").load("cuzk.arith.field")``
for the CUDA build. Inputs must be reduced (< p); outputs are reduced.
"""

import numpy as np

from cuzk.arith.constants import (
    PLAIN_ONE,
    Q_INV,
    Q_LIMBS,
    Q_MINUS_2,
    Q_ONE,
    Q_R2,
    R_INV,
    R_LIMBS,
    R_MINUS_2,
    R_ONE,
    R_R2,
    ZERO,
)
from cuzk.arith.jit import building

T = building()
device_fn = T.device_fn
row_fn = T.row_fn
mac, adc, sbb, mul_lo = T.prims

Z = np.uint64(0)
ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)  # br * ALL_ONES: a borrow (0 or 1) as a mask, no overflow
ONE_BIT = np.uint64(1)


# --- generic modular arithmetic over a modulus p given as limbs ---------------------------


@device_fn
def _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, bi, p0, p1, p2, p3, inv):
    """One outer iteration of CIOS (Koç, Acar, Kaliski 1996, "Analyzing and comparing
    Montgomery multiplication algorithms"): t = (t + a*b_i + m*p) / 2^64 with
    m = t0*INV mod 2^64. "No-carry" variant (valid as p's top limb < 2^63 - 1): the carry
    word above t3 is folded into t3 instead of kept in a fifth limb."""
    t0, c = mac(a0, bi, t0, Z)
    t1, c = mac(a1, bi, t1, c)
    t2, c = mac(a2, bi, t2, c)
    t3, c = mac(a3, bi, t3, c)
    t4 = c
    m = mul_lo(t0, inv)
    _, c = mac(m, p0, t0, Z)
    t0, c = mac(m, p1, t1, c)
    t1, c = mac(m, p2, t2, c)
    t2, c = mac(m, p3, t3, c)
    t3, _ = adc(c, t4, Z)
    return t0, t1, t2, t3


@device_fn
def _reduce_once(t0, t1, t2, t3, p):
    """t - p if t >= p else t, for t < 2p."""
    s0, br = sbb(t0, p[0], Z)
    s1, br = sbb(t1, p[1], br)
    s2, br = sbb(t2, p[2], br)
    s3, br = sbb(t3, p[3], br)
    # Branch-free select (keep = all ones when t < p): the outcome is data-dependent, so a
    # branch here mispredicts half the time.
    keep = br * ALL_ONES
    return (
        s0 ^ ((s0 ^ t0) & keep),
        s1 ^ ((s1 ^ t1) & keep),
        s2 ^ ((s2 ^ t2) & keep),
        s3 ^ ((s3 ^ t3) & keep),
    )


@device_fn
def mont_mul_cios(a, b, p, inv):
    """a*b*R^{-1} mod p (Montgomery product), for any 4-limb p with its top bit clear."""
    a0, a1, a2, a3 = a
    t0, t1, t2, t3 = _mont_round(Z, Z, Z, Z, a0, a1, a2, a3, b[0], p[0], p[1], p[2], p[3], inv)
    t0, t1, t2, t3 = _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, b[1], p[0], p[1], p[2], p[3], inv)
    t0, t1, t2, t3 = _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, b[2], p[0], p[1], p[2], p[3], inv)
    t0, t1, t2, t3 = _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, b[3], p[0], p[1], p[2], p[3], inv)
    return _reduce_once(t0, t1, t2, t3, p)


# The target's assembly multiplication for BN254's two moduli, where it has one (the CPU build
# on x86-64 with BMI2 and ADX: cuzk.arith.limbs.x86_mont_mul), else None.
_fq_mul_asm = T.mont_mul_asm(Q_LIMBS, Q_INV)
_fr_mul_asm = T.mont_mul_asm(R_LIMBS, R_INV)

if _fq_mul_asm is None or _fr_mul_asm is None:
    mont_mul = mont_mul_cios
else:

    @device_fn
    def mont_mul(a, b, p, inv):
        """a*b*R^{-1} mod p: the assembly for Fq and Fr (p is a constant at every call site,
        so LLVM folds the choice away), CIOS for any other modulus."""
        if p[0] == Q_LIMBS[0] and p[3] == Q_LIMBS[3]:
            return _fq_mul_asm(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])
        if p[0] == R_LIMBS[0] and p[3] == R_LIMBS[3]:
            return _fr_mul_asm(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])
        return mont_mul_cios(a, b, p, inv)


@device_fn
def mod_add(a, b, p):
    """a + b mod p (no overflow: a + b < 2p < 2^255)."""
    s0, c = adc(a[0], b[0], Z)
    s1, c = adc(a[1], b[1], c)
    s2, c = adc(a[2], b[2], c)
    s3, c = adc(a[3], b[3], c)
    return _reduce_once(s0, s1, s2, s3, p)


@device_fn
def mod_sub(a, b, p):
    """a - b mod p."""
    d0, br = sbb(a[0], b[0], Z)
    d1, br = sbb(a[1], b[1], br)
    d2, br = sbb(a[2], b[2], br)
    d3, br = sbb(a[3], b[3], br)
    # Add p back under a mask instead of a branch (a borrow is data-dependent: see
    # _reduce_once).
    mask = br * ALL_ONES
    d0, c = adc(d0, p[0] & mask, Z)
    d1, c = adc(d1, p[1] & mask, c)
    d2, c = adc(d2, p[2] & mask, c)
    d3, c = adc(d3, p[3] & mask, c)
    return (d0, d1, d2, d3)


@device_fn
def is_zero(a):
    return (a[0] | a[1] | a[2] | a[3]) == Z


@device_fn
def eq(a, b):
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == Z


@device_fn
def mod_neg(a, p):
    """-a mod p (0 stays 0)."""
    if is_zero(a):
        return a
    return mod_sub(p, a, p)


@device_fn
def mont_pow(a, e, one, p, inv):
    """a^e for a Montgomery-form a and an exponent e given as 4 plain limbs
    (left-to-right square-and-multiply)."""
    acc = one
    for limb in range(3, -1, -1):
        word = e[limb]
        for bit in range(63, -1, -1):
            acc = mont_mul(acc, acc, p, inv)
            if (word >> np.uint64(bit)) & ONE_BIT:
                acc = mont_mul(acc, a, p, inv)
    return acc


# --- Fq: the base field -------------------------------------------------------------------


@device_fn
def fq_mul(a, b):
    return mont_mul(a, b, Q_LIMBS, Q_INV)


@device_fn
def fq_sqr(a):
    return mont_mul(a, a, Q_LIMBS, Q_INV)


@device_fn
def fq_add(a, b):
    return mod_add(a, b, Q_LIMBS)


@device_fn
def fq_sub(a, b):
    return mod_sub(a, b, Q_LIMBS)


@device_fn
def fq_neg(a):
    return mod_neg(a, Q_LIMBS)


@device_fn
def fq_dbl(a):
    return mod_add(a, a, Q_LIMBS)


@device_fn
def fq_inv(a):
    """a^{-1} by Fermat (a^{q-2}); the inverse of 0 is 0 here: callers that can meet 0
    check is_zero first (the Python-level API raises ZeroDivisionError)."""
    return mont_pow(a, Q_MINUS_2, Q_ONE, Q_LIMBS, Q_INV)


@device_fn
def fq_to_mont(a):
    """plain -> Montgomery: a * R^2 * R^{-1} = a*R."""
    return mont_mul(a, Q_R2, Q_LIMBS, Q_INV)


@device_fn
def fq_from_mont(a):
    """Montgomery -> plain: a * 1 * R^{-1}."""
    return mont_mul(a, PLAIN_ONE, Q_LIMBS, Q_INV)


@device_fn
def fq_zero():
    return ZERO


@device_fn
def fq_one():
    return Q_ONE


# --- Fr: the scalar field -----------------------------------------------------------------


@device_fn
def fr_mul(a, b):
    return mont_mul(a, b, R_LIMBS, R_INV)


@device_fn
def fr_sqr(a):
    return mont_mul(a, a, R_LIMBS, R_INV)


@device_fn
def fr_add(a, b):
    return mod_add(a, b, R_LIMBS)


@device_fn
def fr_sub(a, b):
    return mod_sub(a, b, R_LIMBS)


@device_fn
def fr_neg(a):
    return mod_neg(a, R_LIMBS)


@device_fn
def fr_inv(a):
    """a^{-1} by Fermat (a^{r-2}); 0 maps to 0 (see fq_inv)."""
    return mont_pow(a, R_MINUS_2, R_ONE, R_LIMBS, R_INV)


@device_fn
def fr_to_mont(a):
    return mont_mul(a, R_R2, R_LIMBS, R_INV)


@device_fn
def fr_from_mont(a):
    return mont_mul(a, PLAIN_ONE, R_LIMBS, R_INV)


@device_fn
def fr_one():
    return R_ONE


# --- Fq2 = Fq[u] / (u^2 + 1) --------------------------------------------------------------


@device_fn
def fq2_add(a, b):
    return (fq_add(a[0], b[0]), fq_add(a[1], b[1]))


@device_fn
def fq2_sub(a, b):
    return (fq_sub(a[0], b[0]), fq_sub(a[1], b[1]))


@device_fn
def fq2_neg(a):
    return (fq_neg(a[0]), fq_neg(a[1]))


@device_fn
def fq2_dbl(a):
    return (fq_dbl(a[0]), fq_dbl(a[1]))


@device_fn
def fq2_mul(a, b):
    """(a0 + a1 u)(b0 + b1 u) with Karatsuba: 3 Fq multiplications."""
    v0 = fq_mul(a[0], b[0])
    v1 = fq_mul(a[1], b[1])
    s = fq_mul(fq_add(a[0], a[1]), fq_add(b[0], b[1]))
    return (fq_sub(v0, v1), fq_sub(fq_sub(s, v0), v1))


@device_fn
def fq2_sqr(a):
    """(a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 Fq multiplications."""
    c0 = fq_mul(fq_add(a[0], a[1]), fq_sub(a[0], a[1]))
    t = fq_mul(a[0], a[1])
    return (c0, fq_add(t, t))


@device_fn
def fq2_mul_fq(a, k):
    """(a0 + a1 u) * k for k in Fq."""
    return (fq_mul(a[0], k), fq_mul(a[1], k))


@device_fn
def fq2_inv(a):
    """1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2); the inverse of 0 is 0."""
    t = fq_inv(fq_add(fq_sqr(a[0]), fq_sqr(a[1])))
    return (fq_mul(a[0], t), fq_neg(fq_mul(a[1], t)))


@device_fn
def fq2_is_zero(a):
    return is_zero(a[0]) and is_zero(a[1])


@device_fn
def fq2_eq(a, b):
    return eq(a[0], b[0]) and eq(a[1], b[1])


@device_fn
def fq2_zero():
    return (ZERO, ZERO)


@device_fn
def fq2_one():
    return (Q_ONE, ZERO)


# --- array access: elements stored as rows of (n, k) uint64 arrays --------------------------
# An Fq/Fr element occupies 4 consecutive columns (limbs, little-endian), an Fq2 element 8
# (c0 limbs, then c1 limbs). Kernels of both targets read and write through these.


@row_fn
def load(arr, i, col):
    """The element in row i, columns col..col+3."""
    return (arr[i, col], arr[i, col + 1], arr[i, col + 2], arr[i, col + 3])


@row_fn
def store(arr, i, col, a):
    arr[i, col] = a[0]
    arr[i, col + 1] = a[1]
    arr[i, col + 2] = a[2]
    arr[i, col + 3] = a[3]


@row_fn
def fq2_load(arr, i, col):
    """The Fq2 element in row i, columns col..col+7 (c0 then c1)."""
    return (load(arr, i, col), load(arr, i, col + 4))


@row_fn
def fq2_store(arr, i, col, a):
    store(arr, i, col, a[0])
    store(arr, i, col + 4, a[1])
