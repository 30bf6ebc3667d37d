"""The optimal ate pairing on BN254 (Numba CPU), as snarkjs computes it.

    e(P, Q) = ( f_{6x+2,Q}(P) * l_{[6x+2]Q, pi(Q)}(P) * l_{[6x+2]Q + pi(Q), -pi^2(Q)}(P) )^E

for P in G1, Q in G2 (points of the twist E'(Fq2): y^2 = x^3 + 3/xi), x = 4965661367192848881
the BN parameter, pi the q-power Frobenius carried to the twist. The final exponent is

    E = (q^6 - 1)(q^2 + 1) * M * (q^4 - q^2 + 1)/r,   M = 2x(6x^2 + 3x + 1),

i.e. the textbook reduced pairing (exponent (q^12 - 1)/r, as in py_ecc) raised to the fixed
power M. That is what snarkjs (wasmcurves), arkworks and gnark compute: the hard part is the
Fuentes-Castaneda, Knapp and Rodriguez-Henriquez chain ("Faster hashing to G2", SAC 2011),
which is cheaper than the exact exponent. M is prime to r, so e stays bilinear and
non-degenerate and every "product == 1" verdict is the same as the textbook pairing's; values
match snarkjs's (its vk_alphabeta_12) exactly.

Miller loop: Q stays on the twist in homogeneous projective coordinates (X : Y : Z); the line
functions are the D-type twist formulas of Aranha, Karabina, Longa, Gebotys and Lopez, "Faster
explicit formulas for computing pairings over ordinary curves" (Eurocrypt 2011), evaluated at
the affine P, giving sparse Fq12 elements l0 + l1 w + l3 w^3 (cuzk.arith.fq12.fq12_mul_line).
Factors in proper subfields of Fq12 (vertical lines, Fq2 scalings of a line) are dropped: the
final exponentiation sends them to 1. The loop runs over the non-adjacent form of 6x + 2.

A multi-pairing prod_i e(P_i, Q_i) runs all Miller loops in one loop (one shared squaring of f
per step) and one final exponentiation: the Groth16 check is one such product.

BLS12-381 (build parameter ``curve="bls12_381"``: ``get_target("cpu").load("cuzk.arith.pairing",
curve="bls12_381")``; BN254's is the plain module): the same steps on 6-limb Fq, over the NAF
of |x| (x = -0xd201000000010000) with no Frobenius steps and f conjugated at the end (x < 0);
the twist is M-type (untwist (x / w^2, y / w^3)), so a step's three line values land on
w^3, w^2 and 1 (cuzk.arith.fq12.fq12_mul_line_m); the final exponent is 3 (q^12 - 1)/r, its
hard part by 3 (q^4 - q^2 + 1)/r = (x - 1)^2 (x + q)(x^2 + q^2 - 1) + 3: the reduced pairing
cubed, snarkjs's value (as cuzk.arith.pairing_int, whose module doc has the details).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cuzk.arith.curves import DEFAULT, build_params, constants
from cuzk.arith.jit import building
from cuzk.arith.radix import int_to_limb_tuple

T = building()
device_fn = T.device_fn
CURVE = T.param("curve", DEFAULT)
_C = constants(CURVE)
F = T.load("cuzk.arith.field", **build_params(CURVE))
K = T.load("cuzk.arith.fq12", **build_params(CURVE))
FQ_MODULUS, FR_MODULUS, G2_B, Q_ONE = _C.FQ_MODULUS, _C.FR_MODULUS, _C.G2_B, _C.Q_ONE
MONT_R = _C.FQ_MONT_R
NQ = _C.FQ_LIMBS  # limbs per Fq element: 4 (BN254) or 6 (BLS12-381)
FAMILY = _C.FAMILY
IS_BN = FAMILY == "bn"
assert FAMILY in ("bn", "bls12") and NQ in (4, 6)
assert (_C.TWIST == "D") == IS_BN, "BN curves here have D-type twists, BLS12 ones M-type"


def _entry(fn):
    """An njit entry point of this build; another curve's is named apart (one text, a cache
    entry per curve)."""
    if CURVE != DEFAULT:
        fn.__qualname__ = fn.__name__ = f"{fn.__name__}_{CURVE}"
    return njit(cache=True, nogil=True)(fn)


fq_mul, fq_neg, is_zero, fq2_is_zero = F.fq_mul, F.fq_neg, F.is_zero, F.fq2_is_zero
fq2_add, fq2_sub, fq2_dbl, fq2_neg = F.fq2_add, F.fq2_sub, F.fq2_dbl, F.fq2_neg
fq2_mul, fq2_sqr, fq2_mul_fq = F.fq2_mul, F.fq2_sqr, F.fq2_mul_fq
fq2_conj = K.fq2_conj
fq12_one, fq12_mul, fq12_sqr, fq12_inv, fq12_conj = (
    K.fq12_one,
    K.fq12_mul,
    K.fq12_sqr,
    K.fq12_inv,
    K.fq12_conj,
)
fq12_mul_line, fq12_mul_line_m, fq12_cyclotomic_sqr, fq12_is_one = (
    K.fq12_mul_line,
    K.fq12_mul_line_m,
    K.fq12_cyclotomic_sqr,
    K.fq12_is_one,
)
fq12_frobenius, fq12_frobenius2, fq12_frobenius3 = (
    K.fq12_frobenius,
    K.fq12_frobenius2,
    K.fq12_frobenius3,
)

# --- constants ---------------------------------------------------------------------------

X = _C.X  # the curve parameter
if IS_BN:
    BN_X = X  # q = 36x^4 + 36x^3 + 24x^2 + 6x + 1, r = 36x^4 + 36x^3 + 18x^2 + 6x + 1
    ATE_LOOP_COUNT = 6 * BN_X + 2
    # snarkjs's pairing is the textbook (exponent (q^12 - 1)/r) pairing to this power.
    PAIRING_POWER = 2 * BN_X * (6 * BN_X**2 + 3 * BN_X + 1)
    assert 36 * BN_X**4 + 36 * BN_X**3 + 24 * BN_X**2 + 6 * BN_X + 1 == FQ_MODULUS
    assert 36 * BN_X**4 + 36 * BN_X**3 + 18 * BN_X**2 + 6 * BN_X + 1 == FR_MODULUS
else:
    # r = x^4 - x^2 + 1, q = (x - 1)^2 r / 3 + x; snarkjs's value is the reduced pairing cubed.
    ATE_LOOP_COUNT = abs(X)
    PAIRING_POWER = 3
    assert X**4 - X**2 + 1 == FR_MODULUS and (X - 1) ** 2 * FR_MODULUS // 3 + X == FQ_MODULUS


def _naf(n: int) -> list[int]:
    """Non-adjacent form of n, least significant digit first (digits in {-1, 0, 1})."""
    digits = []
    while n:
        if n & 1:
            d = 2 - (n & 3)  # 1 if n = 1 mod 4, -1 if n = 3 mod 4
            n -= d
        else:
            d = 0
        digits.append(d)
        n >>= 1
    return digits


# NAF of the loop count (6x + 2 or |x|), most significant digit first, the leading 1 dropped
# (the loop starts at T = Q).
_ate_naf = _naf(ATE_LOOP_COUNT)
assert _ate_naf[-1] == 1 and sum(d << i for i, d in enumerate(_ate_naf)) == ATE_LOOP_COUNT
ATE_NAF = np.array(_ate_naf[::-1][1:], dtype=np.int8)

X_ABS_U64 = np.uint64(abs(X))
X_ABS_BITS = abs(X).bit_length()  # 63 (BN254), 64 (BLS12-381)
if IS_BN:
    BN_X_U64, BN_X_BITS = X_ABS_U64, X_ABS_BITS


def _fq2_mont(a):
    return tuple(int_to_limb_tuple(c * MONT_R % FQ_MODULUS, NQ) for c in a)


B3_TWIST = _fq2_mont((3 * G2_B[0] % FQ_MODULUS, 3 * G2_B[1] % FQ_MODULUS))  # 3 b', b' = 3/xi
# pi on the twist: psi^-1 o Frobenius o psi with psi(x, y) = (x w^2, y w^3) gives
#   pi(x, y)   = (conj(x) xi^((q-1)/3),  conj(y) xi^((q-1)/2))   = gamma_1[2], gamma_1[3]
#   pi^2(x, y) = (x xi^((q^2-1)/3),      y xi^((q^2-1)/2))      = gamma_2[2], gamma_2[3]
FROB_TWIST_X1, FROB_TWIST_Y1 = K.GAMMA1[2], K.GAMMA1[3]
FROB_TWIST_X2, FROB_TWIST_Y2 = K.GAMMA2[2], K.GAMMA2[3]  # in Fq
FQ2_ONE_M = (Q_ONE, int_to_limb_tuple(0, NQ))
U1 = np.uint64(1)


# --- Miller loop steps -------------------------------------------------------------------


@device_fn
def miller_dbl_step(Tp, xP, yP):
    """T <- 2T and the tangent line at T evaluated at P (Aranha et al. 2011, eq. (10)/(11),
    D-type twist), with the point scaled by 4 to avoid halvings. For T = (X : Y : Z):
      B = Y^2, C = Z^2, E = 3b' C, F = 3E, H = (Y + Z)^2 - B - C (= 2YZ), J = X^2,
      2T = (2XY(B - F) : (B + F)^2 - 12 E^2 : 4 B H),
      l = -H yP + 3 J xP w + (E - B) w^3."""
    X, Y, Z = Tp
    B = fq2_sqr(Y)
    C = fq2_sqr(Z)
    E = fq2_mul(C, B3_TWIST)
    F3 = fq2_add(fq2_dbl(E), E)
    H = fq2_sub(fq2_sub(fq2_sqr(fq2_add(Y, Z)), B), C)
    J = fq2_sqr(X)
    X3 = fq2_dbl(fq2_mul(fq2_mul(X, Y), fq2_sub(B, F3)))
    E2 = fq2_sqr(E)
    E12 = fq2_dbl(fq2_dbl(fq2_add(fq2_dbl(E2), E2)))
    Y3 = fq2_sub(fq2_sqr(fq2_add(B, F3)), E12)
    Z3 = fq2_dbl(fq2_dbl(fq2_mul(B, H)))
    l0 = fq2_mul_fq(H, fq_neg(yP))
    l1 = fq2_mul_fq(fq2_add(fq2_dbl(J), J), xP)
    l3 = fq2_sub(E, B)
    return (X3, Y3, Z3), l0, l1, l3


@device_fn
def miller_add_step(Tp, xQ, yQ, xP, yP):
    """T <- T + Q for affine Q and the line through T and Q evaluated at P (Aranha et al.
    2011, eq. (12)/(13), D-type twist). With theta = Y - yQ Z, lam = X - xQ Z:
      C = theta^2, D = lam^2, E = lam D, F = Z C, G = X D, H = E + F - 2G,
      T + Q = (lam H : theta (G - H) - Y E : Z E),
      l = lam yP - theta xP w + (theta xQ - lam yQ) w^3.
    Not valid for T = +-Q, which the loop never meets for Q in G2 (see the module doc)."""
    X, Y, Z = Tp
    theta = fq2_sub(Y, fq2_mul(yQ, Z))
    lam = fq2_sub(X, fq2_mul(xQ, Z))
    C = fq2_sqr(theta)
    D = fq2_sqr(lam)
    E = fq2_mul(lam, D)
    F_ = fq2_mul(Z, C)
    G = fq2_mul(X, D)
    H = fq2_sub(fq2_add(E, F_), fq2_dbl(G))
    X3 = fq2_mul(lam, H)
    Y3 = fq2_sub(fq2_mul(theta, fq2_sub(G, H)), fq2_mul(Y, E))
    Z3 = fq2_mul(Z, E)
    l0 = fq2_mul_fq(lam, yP)
    l1 = fq2_mul_fq(theta, fq_neg(xP))
    l3 = fq2_sub(fq2_mul(theta, xQ), fq2_mul(lam, yQ))
    return (X3, Y3, Z3), l0, l1, l3


if IS_BN:
    mul_line = fq12_mul_line
else:

    @device_fn
    def mul_line(f, l0, l1, l3):
        """The step's line (yP term l0, xP term l1, constant l3) on the M-type twist:
        f (l3 + l1 w^2 + l0 w^3) (the D-type line with 1/w for w, times w^3, which lies in
        Fq4 and is removed by the final exponentiation)."""
        return fq12_mul_line_m(f, l3, l1, l0)


@device_fn
def twist_frobenius(xQ, yQ):
    """pi(Q) for affine Q on the twist."""
    return fq2_mul(fq2_conj(xQ), FROB_TWIST_X1), fq2_mul(fq2_conj(yQ), FROB_TWIST_Y1)


@device_fn
def twist_frobenius2_neg(xQ, yQ):
    """-pi^2(Q) for affine Q on the twist."""
    return fq2_mul_fq(xQ, FROB_TWIST_X2), fq2_neg(fq2_mul_fq(yQ, FROB_TWIST_Y2))


# --- array access (points arrive as uint64 arrays of Montgomery limbs) --------------------


if NQ == 4:

    @device_fn
    def _fq_at(a, i, j):
        return (a[i, j, 0], a[i, j, 1], a[i, j, 2], a[i, j, 3])

    @device_fn
    def _fq2_at(a, i, j):
        return (
            (a[i, j, 0, 0], a[i, j, 0, 1], a[i, j, 0, 2], a[i, j, 0, 3]),
            (a[i, j, 1, 0], a[i, j, 1, 1], a[i, j, 1, 2], a[i, j, 1, 3]),
        )

else:

    @device_fn
    def _fq_at(a, i, j):
        return (a[i, j, 0], a[i, j, 1], a[i, j, 2], a[i, j, 3], a[i, j, 4], a[i, j, 5])

    @device_fn
    def _fq_at_h(a, i, j, h):
        return (
            a[i, j, h, 0],
            a[i, j, h, 1],
            a[i, j, h, 2],
            a[i, j, h, 3],
            a[i, j, h, 4],
            a[i, j, h, 5],
        )

    @device_fn
    def _fq2_at(a, i, j):
        return (_fq_at_h(a, i, j, 0), _fq_at_h(a, i, j, 1))


@device_fn
def _fq2_put(a, i, j, v):
    for h in range(2):
        for k in range(NQ):
            a[i, j, h, k] = v[h][k]


@device_fn
def _g2_put(a, i, Tp):
    _fq2_put(a, i, 0, Tp[0])
    _fq2_put(a, i, 1, Tp[1])
    _fq2_put(a, i, 2, Tp[2])


@device_fn
def _g2_at(a, i):
    return (_fq2_at(a, i, 0), _fq2_at(a, i, 1), _fq2_at(a, i, 2))


@device_fn
def _fq12_load_4(a):
    """An Fq12 element from a (2, 3, 2, 4) uint64 array (a[i, j, h] = limbs of the c_h
    coefficient of the v^j w^i coefficient)."""
    return (
        (
            (a[0, 0, 0, 0], a[0, 0, 0, 1], a[0, 0, 0, 2], a[0, 0, 0, 3]),
            (a[0, 0, 1, 0], a[0, 0, 1, 1], a[0, 0, 1, 2], a[0, 0, 1, 3]),
        ),
        (
            (a[0, 1, 0, 0], a[0, 1, 0, 1], a[0, 1, 0, 2], a[0, 1, 0, 3]),
            (a[0, 1, 1, 0], a[0, 1, 1, 1], a[0, 1, 1, 2], a[0, 1, 1, 3]),
        ),
        (
            (a[0, 2, 0, 0], a[0, 2, 0, 1], a[0, 2, 0, 2], a[0, 2, 0, 3]),
            (a[0, 2, 1, 0], a[0, 2, 1, 1], a[0, 2, 1, 2], a[0, 2, 1, 3]),
        ),
    ), (
        (
            (a[1, 0, 0, 0], a[1, 0, 0, 1], a[1, 0, 0, 2], a[1, 0, 0, 3]),
            (a[1, 0, 1, 0], a[1, 0, 1, 1], a[1, 0, 1, 2], a[1, 0, 1, 3]),
        ),
        (
            (a[1, 1, 0, 0], a[1, 1, 0, 1], a[1, 1, 0, 2], a[1, 1, 0, 3]),
            (a[1, 1, 1, 0], a[1, 1, 1, 1], a[1, 1, 1, 2], a[1, 1, 1, 3]),
        ),
        (
            (a[1, 2, 0, 0], a[1, 2, 0, 1], a[1, 2, 0, 2], a[1, 2, 0, 3]),
            (a[1, 2, 1, 0], a[1, 2, 1, 1], a[1, 2, 1, 2], a[1, 2, 1, 3]),
        ),
    )


@device_fn
def _fq12_load_6(a):
    """An Fq12 element from a (2, 3, 2, 6) uint64 array (layout as _fq12_load_4)."""
    return (
        (_fq2_at(a, 0, 0), _fq2_at(a, 0, 1), _fq2_at(a, 0, 2)),
        (_fq2_at(a, 1, 0), _fq2_at(a, 1, 1), _fq2_at(a, 1, 2)),
    )


fq12_load = _fq12_load_4 if NQ == 4 else _fq12_load_6


@device_fn
def fq12_store(out, f):
    """Write an Fq12 element into a (2, 3, 2, NQ) uint64 array (layout as fq12_load)."""
    for i in range(2):
        for j in range(3):
            for h in range(2):
                for k in range(NQ):
                    out[i, j, h, k] = f[i][j][h][k]


@_entry
def miller_loop(ps, qs):
    """prod_i of the Miller loop values of (P_i, Q_i), before the final exponentiation.

    ps: (n, 2, NQ) uint64, affine G1 points (x, y) in Montgomery form;
    qs: (n, 2, 2, NQ) uint64, affine G2 points ((x.c0, x.c1), (y.c0, y.c1)) in Montgomery form.
    A pair where either point is the infinity encoding (0, 0) contributes 1 and is skipped.
    Points must lie in G1 and G2 (the caller checks)."""
    n = ps.shape[0]
    active = np.zeros(n, dtype=np.bool_)
    ts = np.zeros((n, 3, 2, NQ), dtype=np.uint64)  # T_i = (X : Y : Z) on the twist
    for i in range(n):
        p_inf = is_zero(_fq_at(ps, i, 0)) and is_zero(_fq_at(ps, i, 1))
        xq = _fq2_at(qs, i, 0)
        yq = _fq2_at(qs, i, 1)
        q_inf = fq2_is_zero(xq) and fq2_is_zero(yq)
        active[i] = not (p_inf or q_inf)
        _g2_put(ts, i, (xq, yq, FQ2_ONE_M))
    f = fq12_one()
    for step in range(ATE_NAF.shape[0]):
        if step > 0:
            f = fq12_sqr(f)
        digit = ATE_NAF[step]
        for i in range(n):
            if not active[i]:
                continue
            xP = _fq_at(ps, i, 0)
            yP = _fq_at(ps, i, 1)
            Tp, l0, l1, l3 = miller_dbl_step(_g2_at(ts, i), xP, yP)
            f = mul_line(f, l0, l1, l3)
            if digit != 0:
                xQ = _fq2_at(qs, i, 0)
                yQ = _fq2_at(qs, i, 1)
                if digit < 0:
                    yQ = fq2_neg(yQ)
                Tp, l0, l1, l3 = miller_add_step(Tp, xQ, yQ, xP, yP)
                f = mul_line(f, l0, l1, l3)
            _g2_put(ts, i, Tp)
    if not IS_BN:
        return fq12_conj(f)  # BLS12-381: x < 0
    for i in range(n):
        if not active[i]:
            continue
        xP = _fq_at(ps, i, 0)
        yP = _fq_at(ps, i, 1)
        xQ = _fq2_at(qs, i, 0)
        yQ = _fq2_at(qs, i, 1)
        x1, y1 = twist_frobenius(xQ, yQ)
        Tp, l0, l1, l3 = miller_add_step(_g2_at(ts, i), x1, y1, xP, yP)
        f = fq12_mul_line(f, l0, l1, l3)
        x2, y2 = twist_frobenius2_neg(xQ, yQ)
        Tp, l0, l1, l3 = miller_add_step(Tp, x2, y2, xP, yP)
        f = fq12_mul_line(f, l0, l1, l3)
    return f


# --- final exponentiation ----------------------------------------------------------------


@device_fn
def cyclotomic_exp_x_abs(a):
    """a^|x| for a in the cyclotomic subgroup (square-and-multiply over the bits of |x|)."""
    acc = a
    for i in range(X_ABS_BITS - 2, -1, -1):
        acc = fq12_cyclotomic_sqr(acc)
        if (X_ABS_U64 >> np.uint64(i)) & U1:
            acc = fq12_mul(acc, a)
    return acc


if X > 0:
    cyclotomic_exp_x = cyclotomic_exp_x_abs
else:

    @device_fn
    def cyclotomic_exp_x(a):
        """a^x = 1/a^|x| for a in the cyclotomic subgroup (x < 0)."""
        return fq12_conj(cyclotomic_exp_x_abs(a))


@device_fn
def final_exponentiation_bls12(f):
    """f^(3 (q^12 - 1)/r): the easy part (q^6 - 1)(q^2 + 1), then the hard part
    g^((x - 1)^2 (x + q)(x^2 + q^2 - 1)) g^3 (cuzk.arith.pairing_int._hard_part_bls12)."""
    f1 = fq12_mul(fq12_conj(f), fq12_inv(f))
    g = fq12_mul(fq12_frobenius2(f1), f1)
    a = fq12_mul(cyclotomic_exp_x(g), fq12_conj(g))  # g^(x - 1)
    a = fq12_mul(cyclotomic_exp_x(a), fq12_conj(a))  # g^((x - 1)^2)
    b = fq12_mul(cyclotomic_exp_x(a), fq12_frobenius(a))  # a^(x + q)
    c = cyclotomic_exp_x(cyclotomic_exp_x(b))  # b^(x^2)
    c = fq12_mul(fq12_mul(c, fq12_frobenius2(b)), fq12_conj(b))  # b^(x^2 + q^2 - 1)
    return fq12_mul(c, fq12_mul(fq12_cyclotomic_sqr(g), g))


@device_fn
def final_exponentiation_bn(f):
    """f^((q^6 - 1)(q^2 + 1) M (q^4 - q^2 + 1)/r), M = 2x(6x^2 + 3x + 1).

    Easy part: f^(q^6 - 1) = conj(f)/f, then ^(q^2 + 1); the result lies in the cyclotomic
    subgroup, where inversion is conjugation and squaring is cyclotomic. Hard part: the
    Fuentes-Castaneda et al. chain in the form of arkworks' and wasmcurves' BN code, with
    exponent (12x^3 + 12x^2 + 6x + 1) + q (12x^3 + 6x^2 + 4x) + q^2 (12x^3 + 6x^2 + 6x)
    + q^3 (12x^3 + 6x^2 + 4x - 1) = M (q^4 - q^2 + 1)/r modulo the subgroup order."""
    f1 = fq12_mul(fq12_conj(f), fq12_inv(f))
    g = fq12_mul(fq12_frobenius2(f1), f1)
    a = fq12_conj(cyclotomic_exp_x(g))  # g^(-x)
    b = fq12_cyclotomic_sqr(a)  # g^(-2x)
    c = fq12_cyclotomic_sqr(b)  # g^(-4x)
    d = fq12_mul(c, b)  # g^(-6x)
    e = fq12_conj(cyclotomic_exp_x(d))  # g^(6x^2)
    e2 = fq12_cyclotomic_sqr(e)  # g^(12x^2)
    h = fq12_conj(cyclotomic_exp_x(e2))  # g^(-12x^3)
    j = fq12_mul(fq12_conj(h), e)  # g^(12x^3 + 6x^2)
    k = fq12_mul(j, fq12_conj(d))  # g^(12x^3 + 6x^2 + 6x)
    m = fq12_mul(k, b)  # g^(12x^3 + 6x^2 + 4x)
    n = fq12_mul(fq12_mul(k, e), g)  # g^(12x^3 + 12x^2 + 6x + 1)
    t = fq12_mul(fq12_frobenius(m), n)
    t = fq12_mul(fq12_frobenius2(k), t)
    u = fq12_frobenius3(fq12_mul(fq12_conj(g), m))  # g^(q^3 (12x^3 + 6x^2 + 4x - 1))
    return fq12_mul(u, t)


final_exponentiation = final_exponentiation_bn if IS_BN else final_exponentiation_bls12


@_entry
def pairing_product_is_one(ps, qs):
    """True iff prod_i e(P_i, Q_i) = 1 (arrays as in miller_loop; one final exponentiation)."""
    return fq12_is_one(final_exponentiation(miller_loop(ps, qs)))


@_entry
def pairing_product(ps, qs, out):
    """out[:] = prod_i e(P_i, Q_i) as a (2, 3, 2, NQ) uint64 array of Montgomery limbs
    (out[i, j, h] is the c_h coefficient (Fq) of the v^j w^i coefficient (Fq2))."""
    fq12_store(out, final_exponentiation(miller_loop(ps, qs)))


# --- Python-level interface on plain integers ---------------------------------------------
# G1 points are (x, y), G2 points ((x.c0, x.c1), (y.c0, y.c1)), plain ints, affine;
# None is the point at infinity. Fq12 values are nested lists [[[c0, c1] * 3] * 2] of ints
# (snarkjs's layout: [c0, c1] of Fq6, each [c0, c1, c2] of Fq2, each [c0, c1] of Fq).

_R_INV_Q = pow(MONT_R, -1, FQ_MODULUS)


def _mont_limbs(x: int) -> np.ndarray:
    """Plain x < q as NQ little-endian uint64 limbs of x R mod q."""
    return np.frombuffer((x * MONT_R % FQ_MODULUS).to_bytes(8 * NQ, "little"), dtype=np.uint64)


def g1_array(points) -> np.ndarray:
    """A sequence of G1 points (plain ints; None = infinity) as an (n, 2, NQ) Montgomery array."""
    out = np.zeros((len(points), 2, NQ), dtype=np.uint64)
    for i, p in enumerate(points):
        if p is not None:
            out[i, 0], out[i, 1] = _mont_limbs(p[0]), _mont_limbs(p[1])
    return out


def g2_array(points) -> np.ndarray:
    """A sequence of G2 points (plain ints; None = infinity) as an (n, 2, 2, NQ) array."""
    out = np.zeros((len(points), 2, 2, NQ), dtype=np.uint64)
    for i, p in enumerate(points):
        if p is not None:
            for j in range(2):
                for h in range(2):
                    out[i, j, h] = _mont_limbs(p[j][h])
    return out


def fq12_from_array(a: np.ndarray) -> list:
    """A (2, 3, 2, NQ) Montgomery-limb Fq12 array as nested lists of plain ints."""

    def fq(limbs):
        mont = int.from_bytes(np.ascontiguousarray(limbs).tobytes(), "little")
        return mont * _R_INV_Q % FQ_MODULUS

    return [[[fq(a[i, j, h]) for h in range(2)] for j in range(3)] for i in range(2)]


def fq12_to_array(c) -> np.ndarray:
    """Nested lists of plain ints (snarkjs layout) as a (2, 3, 2, NQ) Montgomery-limb array."""
    out = np.zeros((2, 3, 2, NQ), dtype=np.uint64)
    for i in range(2):
        for j in range(3):
            for h in range(2):
                out[i, j, h] = _mont_limbs(int(c[i][j][h]) % FQ_MODULUS)
    return out


def pairing(P, Q) -> list:
    """e(P, Q) for P in G1, Q in G2 (plain-int affine points; the caller vouches they are in
    the groups), as nested lists of plain ints in snarkjs's Fq12 layout."""
    return multi_pairing([(P, Q)])


def multi_pairing(pairs) -> list:
    """prod e(P_i, Q_i) over [(P_i, Q_i), ...] with one final exponentiation."""
    out = np.zeros((2, 3, 2, NQ), dtype=np.uint64)
    pairing_product(g1_array([p for p, _ in pairs]), g2_array([q for _, q in pairs]), out)
    return fq12_from_array(out)


def pairing_check(pairs) -> bool:
    """True iff prod e(P_i, Q_i) = 1 over [(P_i, Q_i), ...]."""
    return bool(
        pairing_product_is_one(g1_array([p for p, _ in pairs]), g2_array([q for _, q in pairs]))
    )
