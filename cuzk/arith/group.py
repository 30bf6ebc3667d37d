"""The group arithmetic of G1 and G2 in Jacobian coordinates, written once: one source, built
per (target, group, curve).

BN254: G1 y^2 = x^3 + 3 over Fq, G2 y^2 = x^3 + 3/(9+u) over Fq2 (the D-type sextic twist).
BLS12-381: G1 y^2 = x^3 + 4 over Fq, G2 y^2 = x^3 + 4(1+u) over Fq2 (the M-type twist).
All are short Weierstrass curves with a = 0, so every formula is the same over the two
coordinate fields and the curves; a build binds its field's operations as module constants
(``f_mul`` is ``fq_mul`` in the G1 build, ``fq2_mul`` in the G2 build) and its curve's b, and
Numba compiles them straight through. Load a build with
``T.load("cuzk.arith.group", group="g1")`` (or "g2"; BN254), adding ``curve="bls12_381"`` for
another curve (cuzk.arith.curves.build_params); see "Parametrized builds" in cuzk.arith.jit.
``cuzk.arith.curve`` holds the two builds of each target and the flat names (g1_add,
g2_add, ...) the rest of the code uses.

Representations (all coordinates Montgomery-form field elements, see cuzk.arith.field):
- affine point: (x, y). The point at infinity in affine form is (0, 0), exactly as snarkjs
  stores it (all-zero bytes); (0, 0) is not on either curve (b != 0), so no clash.
- Jacobian point: (X, Y, Z) meaning x = X/Z^2, y = Y/Z^3; infinity iff Z == 0 (``inf()``
  returns (1, 1, 0)).
- rows of uint64 arrays, limbs little-endian, NQ limbs per Fq element (4 for BN254, 6 for
  BLS12-381): G1 affine (n, 2 NQ) = x || y and Jacobian (n, 3 NQ) = X || Y || Z; G2 affine
  (n, 4 NQ) = x.c0 || x.c1 || y.c0 || y.c1 (the zkey's point layouts) and Jacobian (n, 6 NQ).

Formulas come from the Explicit-Formulas Database (EFD, hyperelliptic.org/EFD), section
"g1p/auto-shortw-jacobian-0" (short Weierstrass, a = 0); each routine names the one it uses.
EFD formulas are not complete: the exceptional inputs (an operand at infinity, P = Q,
P = -Q) are caught by explicit branches here.
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building

T = building()
device_fn = T.device_fn
row_fn = T.row_fn
GROUP = T.param("group")
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))

if GROUP == "g1":  # coordinates in Fq
    f_add, f_sub, f_dbl, f_neg = F.fq_add, F.fq_sub, F.fq_dbl, F.fq_neg
    f_mul, f_sqr, f_inv = F.fq_mul, F.fq_sqr, F.fq_inv
    # a product that only enters other products: below 2q, not fully reduced (field.py)
    f_mul_unreduced = F.fq_mul_unreduced
    f_sub_unreduced = F.fq_sub_unreduced  # a difference that only enters products (< 2q)
    f_is_zero, f_eq = F.fq_is_zero, F.fq_eq
    f_load, f_store = F.fq_load, F.fq_store
    F_ZERO, F_ONE = F.Q_ZERO, F.Q_ONE
    CURVE_B = F.G1_B_MONT
elif GROUP == "g2":  # coordinates in Fq2
    f_add, f_sub, f_dbl, f_neg = F.fq2_add, F.fq2_sub, F.fq2_dbl, F.fq2_neg
    f_mul, f_sqr, f_inv = F.fq2_mul, F.fq2_sqr, F.fq2_inv
    f_mul_unreduced = F.fq2_mul  # (Fq2's products take only reduced operands)
    f_sub_unreduced = F.fq2_sub
    f_is_zero, f_eq = F.fq2_is_zero, F.fq2_eq
    f_load, f_store = F.fq2_load, F.fq2_store
    F_ZERO, F_ONE = (F.Q_ZERO, F.Q_ZERO), (F.Q_ONE, F.Q_ZERO)
    CURVE_B = F.G2_B_MONT
else:
    raise ValueError(f"cuzk.arith.group: group must be 'g1' or 'g2', not {GROUP!r}")

COORD_LIMBS = F.NQ if GROUP == "g1" else 2 * F.NQ  # uint64 limbs per coordinate
SCALAR_LIMBS = F.NR  # plain limbs of a scalar k of mul (any value below 2^(64 NR))
AFFINE_WIDTH = 2 * COORD_LIMBS  # row width of an affine point
JACOBIAN_WIDTH = 3 * COORD_LIMBS  # row width of a Jacobian point
ONE_BIT = np.uint64(1)

# The routines every build defines, in the order cuzk.arith.curve exports them.
ROUTINES = (
    "inf is_inf affine_is_inf from_affine to_affine neg neg_affine dbl add add_mixed eq mul "
    "is_on_curve_affine load_affine store_affine load store"
).split()


@device_fn
def inf():
    """The point at infinity in Jacobian form, (1, 1, 0)."""
    return (F_ONE, F_ONE, F_ZERO)


@device_fn
def is_inf(P):
    return f_is_zero(P[2])


@device_fn
def affine_is_inf(a):
    """True for the affine encoding of infinity, (0, 0)."""
    return f_is_zero(a[0]) and f_is_zero(a[1])


@device_fn
def from_affine(a):
    """(x, y) -> (x, y, 1); (0, 0) -> infinity."""
    if affine_is_inf(a):
        return inf()
    return (a[0], a[1], F_ONE)


@device_fn
def to_affine(P):
    """(X, Y, Z) -> (X/Z^2, Y/Z^3) with one inversion; infinity -> (0, 0)."""
    if is_inf(P):
        return (F_ZERO, F_ZERO)
    zinv = f_inv(P[2])
    zinv2 = f_sqr(zinv)
    return (f_mul(P[0], zinv2), f_mul(P[1], f_mul(zinv2, zinv)))


@device_fn
def neg(P):
    return (P[0], f_neg(P[1]), P[2])


@device_fn
def neg_affine(a):
    """-(x, y) = (x, -y); (0, 0) stays (0, 0) since -0 = 0."""
    return (a[0], f_neg(a[1]))


@device_fn
def dbl(P):
    """2P. EFD g1p/auto-shortw-jacobian-0 "dbl-2009-l" (1M + 5S):
    A = X1^2, B = Y1^2, C = B^2, D = 2((X1+B)^2 - A - C), E = 3A, F = E^2,
    X3 = F - 2D, Y3 = E(D - X3) - 8C, Z3 = 2 Y1 Z1.
    Infinity (Z1 = 0) gives Z3 = 0; no point of G1 or G2 has y = 0 (their order is odd: a
    point with y = 0 has order 2)."""
    X1, Y1, Z1 = P
    A = f_sqr(X1)
    B = f_sqr(Y1)
    C = f_sqr(B)
    D = f_dbl(f_sub(f_sub(f_sqr(f_add(X1, B)), A), C))
    E = f_add(f_dbl(A), A)
    F_ = f_sqr(E)
    X3 = f_sub(F_, f_dbl(D))
    C8 = f_dbl(f_dbl(f_dbl(C)))
    Y3 = f_sub(f_mul(E, f_sub(D, X3)), C8)
    Z3 = f_dbl(f_mul(Y1, Z1))
    return (X3, Y3, Z3)


@device_fn
def add(P, Q):
    """P + Q, complete over all inputs. EFD g1p/auto-shortw-jacobian-0 "add-2007-bl"
    (11M + 5S): Z1Z1 = Z1^2, Z2Z2 = Z2^2, U1 = X1 Z2Z2, U2 = X2 Z1Z1, S1 = Y1 Z2 Z2Z2,
    S2 = Y2 Z1 Z1Z1, H = U2 - U1, I = (2H)^2, J = H I, r = 2(S2 - S1), V = U1 I,
    X3 = r^2 - J - 2V, Y3 = r(V - X3) - 2 S1 J, Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H.
    H = 0 means equal x: then r = 0 is P = Q (doubled) and r != 0 is P = -Q (infinity)."""
    if is_inf(P):
        return Q
    if is_inf(Q):
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Q
    Z1Z1 = f_sqr(Z1)
    Z2Z2 = f_sqr(Z2)
    U1 = f_mul(X1, Z2Z2)
    U2 = f_mul(X2, Z1Z1)
    S1 = f_mul(Y1, f_mul(Z2, Z2Z2))
    S2 = f_mul(Y2, f_mul(Z1, Z1Z1))
    H = f_sub(U2, U1)
    r = f_dbl(f_sub(S2, S1))
    if f_is_zero(H):
        if f_is_zero(r):
            return dbl(P)
        return inf()
    I = f_sqr(f_dbl(H))  # noqa: E741 (EFD's name)
    J = f_mul(H, I)
    V = f_mul(U1, I)
    X3 = f_sub(f_sub(f_sqr(r), J), f_dbl(V))
    Y3 = f_sub(f_mul(r, f_sub(V, X3)), f_dbl(f_mul(S1, J)))
    Z3 = f_mul(f_sub(f_sub(f_sqr(f_add(Z1, Z2)), Z1Z1), Z2Z2), H)
    return (X3, Y3, Z3)


@device_fn
def add_mixed(P, a):
    """P + a for Jacobian P and affine a, complete over all inputs. EFD
    g1p/auto-shortw-jacobian-0 "madd-2007-bl" (7M + 4S): Z1Z1 = Z1^2, U2 = X2 Z1Z1,
    S2 = Y2 Z1 Z1Z1, H = U2 - X1, HH = H^2, I = 4HH, J = H I, r = 2(S2 - Y1), V = X1 I,
    X3 = r^2 - J - 2V, Y3 = r(V - X3) - 2 Y1 J, Z3 = (Z1 + H)^2 - Z1Z1 - HH.
    a = (0, 0) is infinity; H = 0 means P = a (doubled) or P = -a (infinity)."""
    if affine_is_inf(a):
        return P
    if is_inf(P):
        return (a[0], a[1], F_ONE)
    X1, Y1, Z1 = P
    X2, Y2 = a
    Z1Z1 = f_sqr(Z1)
    U2 = f_mul(X2, Z1Z1)
    S2 = f_mul(Y2, f_mul(Z1, Z1Z1))
    H = f_sub(U2, X1)
    r = f_dbl(f_sub(S2, Y1))
    if f_is_zero(H):
        if f_is_zero(r):
            return dbl(P)
        return inf()
    HH = f_sqr(H)
    I = f_dbl(f_dbl(HH))  # noqa: E741 (EFD's name)
    J = f_mul(H, I)
    V = f_mul(X1, I)
    X3 = f_sub(f_sub(f_sqr(r), J), f_dbl(V))
    Y3 = f_sub(f_mul(r, f_sub(V, X3)), f_dbl(f_mul(Y1, J)))
    Z3 = f_sub(f_sub(f_sqr(f_add(Z1, H)), Z1Z1), HH)
    return (X3, Y3, Z3)


@device_fn
def eq(P, Q):
    """Projective equality: X1 Z2^2 = X2 Z1^2 and Y1 Z2^3 = Y2 Z1^3 (infinity equals only
    infinity)."""
    p_inf = is_inf(P)
    q_inf = is_inf(Q)
    if p_inf or q_inf:
        return p_inf and q_inf
    Z1Z1 = f_sqr(P[2])
    Z2Z2 = f_sqr(Q[2])
    if not f_eq(f_mul(P[0], Z2Z2), f_mul(Q[0], Z1Z1)):
        return False
    return f_eq(f_mul(P[1], f_mul(Q[2], Z2Z2)), f_mul(Q[1], f_mul(P[2], Z1Z1)))


@device_fn
def mul(P, k):
    """k P for k given as SCALAR_LIMBS plain uint64 limbs (any value below 2^(64
    SCALAR_LIMBS)), left-to-right double-and-add: 64 SCALAR_LIMBS doublings. For tests and
    small uses; MSM is the fast path."""
    acc = inf()
    for limb in range(SCALAR_LIMBS - 1, -1, -1):
        word = k[limb]
        for bit in range(63, -1, -1):
            acc = dbl(acc)
            if (word >> np.uint64(bit)) & ONE_BIT:
                acc = add(acc, P)
    return acc


@device_fn
def is_on_curve_affine(a):
    """y^2 = x^3 + b for an affine point; the infinity encoding (0, 0) counts as on the
    curve (it is the group's identity, as snarkjs stores it)."""
    if affine_is_inf(a):
        return True
    x, y = a
    return f_eq(f_sqr(y), f_add(f_mul(f_sqr(x), x), CURVE_B))


# ================================ array access ============================================


@row_fn
def load_affine(arr, i):
    return (f_load(arr, i, 0), f_load(arr, i, COORD_LIMBS))


@row_fn
def store_affine(arr, i, a):
    f_store(arr, i, 0, a[0])
    f_store(arr, i, COORD_LIMBS, a[1])


@row_fn
def load(arr, i):
    return (f_load(arr, i, 0), f_load(arr, i, COORD_LIMBS), f_load(arr, i, 2 * COORD_LIMBS))


@row_fn
def store(arr, i, P):
    f_store(arr, i, 0, P[0])
    f_store(arr, i, COORD_LIMBS, P[1])
    f_store(arr, i, 2 * COORD_LIMBS, P[2])
