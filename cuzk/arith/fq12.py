"""Fq6 and Fq12, the tower above Fq2 where pairings take their values, for BN254 and
BLS12-381 from one source.

Tower (the one snarkjs/ffjavascript, arkworks and the EIP-197 implementations use for BN254,
and the one of BLS12-381's specifications):

    Fq2  = Fq[u]  / (u^2 + 1)
    Fq6  = Fq2[v] / (v^3 - xi),   xi = 9 + u (BN254), 1 + u (BLS12-381)
    Fq12 = Fq6[w] / (w^2 - v)

The curve is a build parameter, as in cuzk.arith.field: ``T.load("cuzk.arith.fq12",
curve="bls12_381")``; BN254's is the plain build. Only fq2_mul_xi and the Frobenius constants
depend on it (and the field build underneath).

An Fq6 element is a tuple (c0, c1, c2) of Fq2 elements meaning c0 + c1 v + c2 v^2; an Fq12
element is a pair (c0, c1) of Fq6 elements meaning c0 + c1 w. Since v = w^2, an Fq12
element is also sum_k a_k w^k over Fq2 with w^6 = xi, where a_k = c[k % 2][k // 2]; the
Frobenius coefficients below are written in that w-power view.

Every function is a device function of the target being built (see cuzk.arith.jit); elements are
nested tuples of Montgomery limbs (cuzk.arith.field) and stay in registers.

References: Beuchat et al., "High-Speed Software Implementation of the Optimal Ate Pairing
over Barreto-Naehrig Curves" (2010) for the tower; Chung and Hasan, "Asymmetric squaring
formulae" (2007) for Fq6 squaring; Granger and Scott, "Faster squaring in the cyclotomic
subgroup of sixth degree extensions" (2010) for cyclotomic squaring.
"""

from cuzk.arith.curves import DEFAULT, build_params, constants
from cuzk.arith.jit import building
from cuzk.arith.radix import int_to_limb_tuple

T = building()
device_fn = T.device_fn
CURVE = T.param("curve", DEFAULT)
_C = constants(CURVE)
F = T.load("cuzk.arith.field", **build_params(CURVE))

fq_neg, fq_mul, fq_add, fq_sub, fq_dbl = F.fq_neg, F.fq_mul, F.fq_add, F.fq_sub, F.fq_dbl
fq2_add, fq2_sub, fq2_neg, fq2_dbl = F.fq2_add, F.fq2_sub, F.fq2_neg, F.fq2_dbl
fq2_mul, fq2_sqr, fq2_inv, fq2_mul_fq = F.fq2_mul, F.fq2_sqr, F.fq2_inv, F.fq2_mul_fq
fq2_zero, fq2_one, fq2_eq, fq2_is_zero = F.fq2_zero, F.fq2_one, F.fq2_eq, F.fq2_is_zero


# --- import-time constants, computed with Python ints and documented by formula ------------

_q = _C.FQ_MODULUS
_N = _C.FQ_LIMBS
_R = _C.FQ_MONT_R


def _fq_mont(a):
    return int_to_limb_tuple(a * _R % _q, _N)


def _f2_mont(a):
    return (_fq_mont(a[0]), _fq_mont(a[1]))


def _f2_mul_int(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % _q, (a[0] * b[1] + a[1] * b[0]) % _q)


def fq2_pow_int(a, e: int):
    """a^e in this curve's Fq2 on Python ints (e >= 0)."""
    out = (1, 0)
    while e:
        if e & 1:
            out = _f2_mul_int(out, a)
        a = _f2_mul_int(a, a)
        e >>= 1
    return out


XI = _C.FQ2_NONRESIDUE  # xi = w^6: 9 + u (BN254), 1 + u (BLS12-381)
assert XI in ((9, 1), (1, 1)), "fq2_mul_xi is written for xi = 9 + u and xi = 1 + u"
# Frobenius on Fq12 in the w-power view: (a w^k)^(q^n) = a^(q^n) * w^k * gamma_n[k] with
# gamma_n[k] = xi^(k (q^n - 1) / 6)   (w^(q^n) = w * (w^6)^((q^n - 1)/6); 6 | q - 1).
# a^(q^n) is the conjugate of a in Fq2 for odd n, a itself for even n.
_GAMMA1 = [fq2_pow_int(XI, k * (_q - 1) // 6) for k in range(6)]
_GAMMA2 = [fq2_pow_int(XI, k * (_q**2 - 1) // 6) for k in range(6)]
_GAMMA3 = [fq2_pow_int(XI, k * (_q**3 - 1) // 6) for k in range(6)]
assert all(g[1] == 0 for g in _GAMMA2), "xi^(k(q^2-1)/6) lies in Fq"

# gamma_n[k] as Montgomery Fq2, indexed [k] = coefficient of w^k.
GAMMA1 = tuple(_f2_mont(g) for g in _GAMMA1)
GAMMA2 = tuple(_fq_mont(g[0]) for g in _GAMMA2)  # in Fq
GAMMA3 = tuple(_f2_mont(g) for g in _GAMMA3)

# Named copies (Numba indexes tuples of tuples fastest with constant indices).
G1_1, G1_2, G1_3, G1_4, G1_5 = GAMMA1[1:]
G2_1, G2_2, G2_3, G2_4, G2_5 = GAMMA2[1:]
G3_1, G3_2, G3_3, G3_4, G3_5 = GAMMA3[1:]


# --- Fq2 helpers ---------------------------------------------------------------------------


@device_fn
def fq2_conj(a):
    """a^q for a in Fq2: c0 - c1 u."""
    return (a[0], fq_neg(a[1]))


if XI == (9, 1):

    @device_fn
    def fq2_mul_xi(a):
        """a * xi = (c0 + c1 u)(9 + u) = (9 c0 - c1) + (c0 + 9 c1) u."""
        c0, c1 = a
        t0 = fq_dbl(fq_dbl(fq_dbl(c0)))  # 8 c0
        t1 = fq_dbl(fq_dbl(fq_dbl(c1)))  # 8 c1
        return (fq_sub(fq_add(t0, c0), c1), fq_add(fq_add(t1, c1), c0))

else:

    @device_fn
    def fq2_mul_xi(a):
        """a * xi = (c0 + c1 u)(1 + u) = (c0 - c1) + (c0 + c1) u."""
        c0, c1 = a
        return (fq_sub(c0, c1), fq_add(c0, c1))


# --- Fq6 = Fq2[v] / (v^3 - xi) -----------------------------------------------------------


@device_fn
def fq6_zero():
    return (fq2_zero(), fq2_zero(), fq2_zero())


@device_fn
def fq6_one():
    return (fq2_one(), fq2_zero(), fq2_zero())


@device_fn
def fq6_add(a, b):
    return (fq2_add(a[0], b[0]), fq2_add(a[1], b[1]), fq2_add(a[2], b[2]))


@device_fn
def fq6_sub(a, b):
    return (fq2_sub(a[0], b[0]), fq2_sub(a[1], b[1]), fq2_sub(a[2], b[2]))


@device_fn
def fq6_neg(a):
    return (fq2_neg(a[0]), fq2_neg(a[1]), fq2_neg(a[2]))


@device_fn
def fq6_dbl(a):
    return (fq2_dbl(a[0]), fq2_dbl(a[1]), fq2_dbl(a[2]))


@device_fn
def fq6_eq(a, b):
    return fq2_eq(a[0], b[0]) and fq2_eq(a[1], b[1]) and fq2_eq(a[2], b[2])


@device_fn
def fq6_mul_v(a):
    """a * v = (c0 + c1 v + c2 v^2) v = xi c2 + c0 v + c1 v^2."""
    return (fq2_mul_xi(a[2]), a[0], a[1])


@device_fn
def fq6_mul_fq2(a, k):
    """a * k for k in Fq2 (3 Fq2 multiplications)."""
    return (fq2_mul(a[0], k), fq2_mul(a[1], k), fq2_mul(a[2], k))


@device_fn
def fq6_mul(a, b):
    """Karatsuba over Fq2 (6 Fq2 multiplications; Beuchat et al. 2010, Alg. 4)."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    t0 = fq2_mul(a0, b0)
    t1 = fq2_mul(a1, b1)
    t2 = fq2_mul(a2, b2)
    # c0 = t0 + xi((a1 + a2)(b1 + b2) - t1 - t2)
    s12 = fq2_mul(fq2_add(a1, a2), fq2_add(b1, b2))
    c0 = fq2_add(t0, fq2_mul_xi(fq2_sub(fq2_sub(s12, t1), t2)))
    # c1 = (a0 + a1)(b0 + b1) - t0 - t1 + xi t2
    s01 = fq2_mul(fq2_add(a0, a1), fq2_add(b0, b1))
    c1 = fq2_add(fq2_sub(fq2_sub(s01, t0), t1), fq2_mul_xi(t2))
    # c2 = (a0 + a2)(b0 + b2) - t0 - t2 + t1
    c2 = fq2_add(fq2_sub(fq2_sub(fq2_mul(fq2_add(a0, a2), fq2_add(b0, b2)), t0), t2), t1)
    return (c0, c1, c2)


@device_fn
def fq6_sqr(a):
    """Chung-Hasan CH-SQR2 (2 Fq2 multiplications, 3 squarings)."""
    a0, a1, a2 = a
    s0 = fq2_sqr(a0)
    s1 = fq2_dbl(fq2_mul(a0, a1))
    s2 = fq2_sqr(fq2_add(fq2_sub(a0, a1), a2))
    s3 = fq2_dbl(fq2_mul(a1, a2))
    s4 = fq2_sqr(a2)
    c0 = fq2_add(s0, fq2_mul_xi(s3))
    c1 = fq2_add(s1, fq2_mul_xi(s4))
    c2 = fq2_sub(fq2_sub(fq2_add(fq2_add(s1, s2), s3), s0), s4)
    return (c0, c1, c2)


@device_fn
def fq6_mul_01(a, b0, b1):
    """a * (b0 + b1 v), the sparse product the line functions need (5 Fq2 multiplications):
    (a0 b0 + xi a2 b1) + (a0 b1 + a1 b0) v + (a1 b1 + a2 b0) v^2."""
    a0, a1, a2 = a
    t0 = fq2_mul(a0, b0)
    t1 = fq2_mul(a1, b1)
    c0 = fq2_add(t0, fq2_mul_xi(fq2_mul(a2, b1)))
    c1 = fq2_sub(fq2_sub(fq2_mul(fq2_add(a0, a1), fq2_add(b0, b1)), t0), t1)
    c2 = fq2_add(t1, fq2_mul(a2, b0))
    return (c0, c1, c2)


@device_fn
def fq6_inv(a):
    """1/a = (t0 + t1 v + t2 v^2) / N with t0 = a0^2 - xi a1 a2, t1 = xi a2^2 - a0 a1,
    t2 = a1^2 - a0 a2 and N = a0 t0 + xi (a2 t1 + a1 t2) in Fq2; the inverse of 0 is 0."""
    a0, a1, a2 = a
    t0 = fq2_sub(fq2_sqr(a0), fq2_mul_xi(fq2_mul(a1, a2)))
    t1 = fq2_sub(fq2_mul_xi(fq2_sqr(a2)), fq2_mul(a0, a1))
    t2 = fq2_sub(fq2_sqr(a1), fq2_mul(a0, a2))
    n = fq2_add(fq2_mul(a0, t0), fq2_mul_xi(fq2_add(fq2_mul(a2, t1), fq2_mul(a1, t2))))
    ni = fq2_inv(n)
    return (fq2_mul(t0, ni), fq2_mul(t1, ni), fq2_mul(t2, ni))


# --- Fq12 = Fq6[w] / (w^2 - v) -----------------------------------------------------------


@device_fn
def fq12_zero():
    return (fq6_zero(), fq6_zero())


@device_fn
def fq12_one():
    return (fq6_one(), fq6_zero())


@device_fn
def fq12_add(a, b):
    return (fq6_add(a[0], b[0]), fq6_add(a[1], b[1]))


@device_fn
def fq12_sub(a, b):
    return (fq6_sub(a[0], b[0]), fq6_sub(a[1], b[1]))


@device_fn
def fq12_eq(a, b):
    return fq6_eq(a[0], b[0]) and fq6_eq(a[1], b[1])


@device_fn
def fq12_is_one(a):
    return fq12_eq(a, fq12_one())


@device_fn
def fq12_mul(a, b):
    """Karatsuba over Fq6 (3 Fq6 = 18 Fq2 multiplications):
    (a0 + a1 w)(b0 + b1 w) = (a0 b0 + v a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) w."""
    t0 = fq6_mul(a[0], b[0])
    t1 = fq6_mul(a[1], b[1])
    c1 = fq6_sub(fq6_sub(fq6_mul(fq6_add(a[0], a[1]), fq6_add(b[0], b[1])), t0), t1)
    return (fq6_add(t0, fq6_mul_v(t1)), c1)


@device_fn
def fq12_sqr(a):
    """Complex squaring (2 Fq6 multiplications): with t = a0 a1,
    (a0 + a1 w)^2 = ((a0 + a1)(a0 + v a1) - t - v t) + 2 t w."""
    a0, a1 = a
    t = fq6_mul(a0, a1)
    c0 = fq6_sub(fq6_sub(fq6_mul(fq6_add(a0, a1), fq6_add(a0, fq6_mul_v(a1))), t), fq6_mul_v(t))
    return (c0, fq6_dbl(t))


@device_fn
def fq12_conj(a):
    """a^(q^6) = a0 - a1 w; the inverse of a for a in the cyclotomic subgroup."""
    return (a[0], fq6_neg(a[1]))


@device_fn
def fq12_inv(a):
    """1/(a0 + a1 w) = (a0 - a1 w) / (a0^2 - v a1^2); the inverse of 0 is 0."""
    a0, a1 = a
    d = fq6_inv(fq6_sub(fq6_sqr(a0), fq6_mul_v(fq6_sqr(a1))))
    return (fq6_mul(a0, d), fq6_neg(fq6_mul(a1, d)))


@device_fn
def fq12_mul_line(f, l0, l1, l3):
    """f * (l0 + l1 w + l3 w^3): a line function value of the Miller loop (13 Fq2
    multiplications instead of 18). As Fq6[w]: l = A + B w, A = (l0, 0, 0), B = (l1, l3, 0)."""
    f0, f1 = f
    t0 = (fq2_mul(f0[0], l0), fq2_mul(f0[1], l0), fq2_mul(f0[2], l0))  # f0 * A
    t1 = fq6_mul_01(f1, l1, l3)  # f1 * B
    c1 = fq6_sub(fq6_sub(fq6_mul_01(fq6_add(f0, f1), fq2_add(l0, l1), l3), t0), t1)
    return (fq6_add(t0, fq6_mul_v(t1)), c1)


@device_fn
def fq12_mul_line_m(f, l0, l2, l3):
    """f * (l0 + l2 w^2 + l3 w^3): a line function value of the Miller loop on an M-type twist
    (BLS12-381; 13 Fq2 multiplications). As Fq6[w] (w^2 = v, w^3 = v w): l = A + B w with
    A = (l0, l2, 0), B = (0, l3, 0); f1 B = v (f1 l3)."""
    f0, f1 = f
    t0 = fq6_mul_01(f0, l0, l2)  # f0 * A
    t1 = fq6_mul_v(fq6_mul_fq2(f1, l3))  # f1 * B
    c1 = fq6_sub(fq6_sub(fq6_mul_01(fq6_add(f0, f1), l0, fq2_add(l2, l3)), t0), t1)
    return (fq6_add(t0, fq6_mul_v(t1)), c1)


# --- Frobenius maps: a -> a^(q^n) --------------------------------------------------------
# In the w-power view a = sum_k a_k w^k, with a_k = c[k % 2][k // 2]:
#   a^(q^n) = sum_k conj^n(a_k) * gamma_n[k] * w^k.


@device_fn
def fq12_frobenius(a):
    """a^q."""
    (a0, a2, a4), (a1, a3, a5) = a
    return (
        (fq2_conj(a0), fq2_mul(fq2_conj(a2), G1_2), fq2_mul(fq2_conj(a4), G1_4)),
        (fq2_mul(fq2_conj(a1), G1_1), fq2_mul(fq2_conj(a3), G1_3), fq2_mul(fq2_conj(a5), G1_5)),
    )


@device_fn
def fq12_frobenius2(a):
    """a^(q^2) (coefficients in Fq: 2 Fq multiplications per Fq2 coefficient)."""
    (a0, a2, a4), (a1, a3, a5) = a
    return (
        (a0, fq2_mul_fq(a2, G2_2), fq2_mul_fq(a4, G2_4)),
        (fq2_mul_fq(a1, G2_1), fq2_mul_fq(a3, G2_3), fq2_mul_fq(a5, G2_5)),
    )


@device_fn
def fq12_frobenius3(a):
    """a^(q^3)."""
    (a0, a2, a4), (a1, a3, a5) = a
    return (
        (fq2_conj(a0), fq2_mul(fq2_conj(a2), G3_2), fq2_mul(fq2_conj(a4), G3_4)),
        (fq2_mul(fq2_conj(a1), G3_1), fq2_mul(fq2_conj(a3), G3_3), fq2_mul(fq2_conj(a5), G3_5)),
    )


# --- the cyclotomic subgroup (elements with a^(q^6 + 1) = 1, a^(q^4 - q^2 + 1) = 1) --------


@device_fn
def _fq4_sqr(a, b):
    """(a + b y)^2 in Fq4 = Fq2[y]/(y^2 - xi): (a^2 + xi b^2, 2ab), by
    a^2 + xi b^2 = (a + b)(a + xi b) - ab - xi ab."""
    t = fq2_mul(a, b)
    c0 = fq2_sub(fq2_sub(fq2_mul(fq2_add(a, b), fq2_add(a, fq2_mul_xi(b))), t), fq2_mul_xi(t))
    return c0, fq2_dbl(t)


@device_fn
def fq12_cyclotomic_sqr(a):
    """a^2 for a in the cyclotomic subgroup (Granger-Scott 2010; 9 Fq2 products instead of
    12). View Fq12 = Fq4[w]/(w^3 - y) with y = w^3, a = A0 + A1 w + A2 w^2, where
    A0 = a_0 + a_3 y, A1 = a_1 + a_4 y, A2 = a_2 + a_5 y (w-power coefficients); then
    a^2 = (3 A0^2 - 2 conj A0) + (3 y A2^2 + 2 conj A1) w + (3 A1^2 - 2 conj A2) w^2."""
    (z0, z4, z3), (z2, z1, z5) = a  # z0 + z1 y = A0, z2 + z3 y = A1, z4 + z5 y = A2
    t0, t1 = _fq4_sqr(z0, z1)  # A0^2
    t2, t3 = _fq4_sqr(z2, z3)  # A1^2
    t4, t5 = _fq4_sqr(z4, z5)  # A2^2
    # A0' = 3 A0^2 - 2 conj A0
    r0 = fq2_add(fq2_dbl(fq2_sub(t0, z0)), t0)
    r1 = fq2_add(fq2_dbl(fq2_add(t1, z1)), t1)
    # A1' = 3 y A2^2 + 2 conj A1, y (t4 + t5 y) = xi t5 + t4 y
    u = fq2_mul_xi(t5)
    r2 = fq2_add(fq2_dbl(fq2_add(u, z2)), u)
    r3 = fq2_add(fq2_dbl(fq2_sub(t4, z3)), t4)
    # A2' = 3 A1^2 - 2 conj A2
    r4 = fq2_add(fq2_dbl(fq2_sub(t2, z4)), t2)
    r5 = fq2_add(fq2_dbl(fq2_add(t3, z5)), t3)
    return ((r0, r4, r3), (r2, r1, r5))
