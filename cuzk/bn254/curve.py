"""G1 and G2 group arithmetic of BN254 in Jacobian coordinates: one source for CPU and CUDA.

G1: y^2 = x^3 + 3 over Fq.  G2: y^2 = x^3 + b' over Fq2, b' = 3/(9+u) (the sextic twist).

Representations (all coordinates Montgomery-form field elements, see cuzk.bn254.field):
- affine point: (x, y). The point at infinity in affine form is (0, 0), exactly as snarkjs
  stores it (all-zero bytes); (0, 0) is not on either curve (b != 0), so no clash.
- Jacobian point: (X, Y, Z) meaning x = X/Z^2, y = Y/Z^3; infinity iff Z == 0
  (g1_inf() returns (1, 1, 0)).

Formulas come from the Explicit-Formulas Database (EFD, hyperelliptic.org/EFD), section
"g1p/auto-shortw-jacobian-0" (short Weierstrass, a = 0); each routine names the one it uses.
EFD formulas are not complete: the exceptional inputs (an operand at infinity, P = Q,
P = -Q) are caught by explicit branches here.

Every function is a device function of the target being built (see cuzk.jit): import this
module for the CPU build, or ``get_target("cuda").load("cuzk.bn254.curve")`` for CUDA.
G1 and G2 are written out separately (same formulas, Fq vs Fq2 operations): Numba device
functions cannot take the field operations as arguments on both targets.
"""

import numpy as np

from cuzk.bn254.constants import G1_B_MONT, G2_B_MONT, Q_ONE, ZERO
from cuzk.jit import building

T = building()
device_fn = T.device_fn
row_fn = T.row_fn
F = T.load("cuzk.bn254.field")

fq_add, fq_sub, fq_dbl, fq_neg = F.fq_add, F.fq_sub, F.fq_dbl, F.fq_neg
fq_mul, fq_sqr, fq_inv = F.fq_mul, F.fq_sqr, F.fq_inv
fq_is_zero, fq_eq = F.is_zero, F.eq
fq2_add, fq2_sub, fq2_dbl, fq2_neg = F.fq2_add, F.fq2_sub, F.fq2_dbl, F.fq2_neg
fq2_mul, fq2_sqr, fq2_inv = F.fq2_mul, F.fq2_sqr, F.fq2_inv
fq2_is_zero, fq2_eq = F.fq2_is_zero, F.fq2_eq

ONE_BIT = np.uint64(1)
FQ2_ZERO = (ZERO, ZERO)
FQ2_ONE = (Q_ONE, ZERO)


# ======================================= G1 ===============================================

@device_fn
def g1_inf():
    """The point at infinity in Jacobian form, (1, 1, 0)."""
    return (Q_ONE, Q_ONE, ZERO)


@device_fn
def g1_is_inf(P):
    return fq_is_zero(P[2])


@device_fn
def g1_affine_is_inf(a):
    """True for the affine encoding of infinity, (0, 0)."""
    return fq_is_zero(a[0]) and fq_is_zero(a[1])


@device_fn
def g1_from_affine(a):
    """(x, y) -> (x, y, 1); (0, 0) -> infinity."""
    if g1_affine_is_inf(a):
        return g1_inf()
    return (a[0], a[1], Q_ONE)


@device_fn
def g1_to_affine(P):
    """(X, Y, Z) -> (X/Z^2, Y/Z^3) with one inversion; infinity -> (0, 0)."""
    if g1_is_inf(P):
        return (ZERO, ZERO)
    zinv = fq_inv(P[2])
    zinv2 = fq_sqr(zinv)
    return (fq_mul(P[0], zinv2), fq_mul(P[1], fq_mul(zinv2, zinv)))


@device_fn
def g1_neg(P):
    return (P[0], fq_neg(P[1]), P[2])


@device_fn
def g1_neg_affine(a):
    """-(x, y) = (x, -y); (0, 0) stays (0, 0) since -0 = 0."""
    return (a[0], fq_neg(a[1]))


@device_fn
def g1_dbl(P):
    """2P. EFD g1p/auto-shortw-jacobian-0 "dbl-2009-l" (1M + 5S):
    A = X1^2, B = Y1^2, C = B^2, D = 2((X1+B)^2 - A - C), E = 3A, F = E^2,
    X3 = F - 2D, Y3 = E(D - X3) - 8C, Z3 = 2 Y1 Z1.
    Infinity (Z1 = 0) gives Z3 = 0; no point of G1 has y = 0 (the group order is odd)."""
    X1, Y1, Z1 = P
    A = fq_sqr(X1)
    B = fq_sqr(Y1)
    C = fq_sqr(B)
    D = fq_dbl(fq_sub(fq_sub(fq_sqr(fq_add(X1, B)), A), C))
    E = fq_add(fq_dbl(A), A)
    F_ = fq_sqr(E)
    X3 = fq_sub(F_, fq_dbl(D))
    C8 = fq_dbl(fq_dbl(fq_dbl(C)))
    Y3 = fq_sub(fq_mul(E, fq_sub(D, X3)), C8)
    Z3 = fq_dbl(fq_mul(Y1, Z1))
    return (X3, Y3, Z3)


@device_fn
def g1_add(P, Q):
    """P + Q, complete over all inputs. EFD g1p/auto-shortw-jacobian-0 "add-2007-bl"
    (11M + 5S): Z1Z1 = Z1^2, Z2Z2 = Z2^2, U1 = X1 Z2Z2, U2 = X2 Z1Z1, S1 = Y1 Z2 Z2Z2,
    S2 = Y2 Z1 Z1Z1, H = U2 - U1, I = (2H)^2, J = H I, r = 2(S2 - S1), V = U1 I,
    X3 = r^2 - J - 2V, Y3 = r(V - X3) - 2 S1 J, Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H.
    H = 0 means equal x: then r = 0 is P = Q (doubled) and r != 0 is P = -Q (infinity)."""
    if g1_is_inf(P):
        return Q
    if g1_is_inf(Q):
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Q
    Z1Z1 = fq_sqr(Z1)
    Z2Z2 = fq_sqr(Z2)
    U1 = fq_mul(X1, Z2Z2)
    U2 = fq_mul(X2, Z1Z1)
    S1 = fq_mul(Y1, fq_mul(Z2, Z2Z2))
    S2 = fq_mul(Y2, fq_mul(Z1, Z1Z1))
    H = fq_sub(U2, U1)
    r = fq_dbl(fq_sub(S2, S1))
    if fq_is_zero(H):
        if fq_is_zero(r):
            return g1_dbl(P)
        return g1_inf()
    I = fq_sqr(fq_dbl(H))  # noqa: E741 (EFD's name)
    J = fq_mul(H, I)
    V = fq_mul(U1, I)
    X3 = fq_sub(fq_sub(fq_sqr(r), J), fq_dbl(V))
    Y3 = fq_sub(fq_mul(r, fq_sub(V, X3)), fq_dbl(fq_mul(S1, J)))
    Z3 = fq_mul(fq_sub(fq_sub(fq_sqr(fq_add(Z1, Z2)), Z1Z1), Z2Z2), H)
    return (X3, Y3, Z3)


@device_fn
def g1_add_mixed(P, a):
    """P + a for Jacobian P and affine a, complete over all inputs. EFD
    g1p/auto-shortw-jacobian-0 "madd-2007-bl" (7M + 4S): Z1Z1 = Z1^2, U2 = X2 Z1Z1,
    S2 = Y2 Z1 Z1Z1, H = U2 - X1, HH = H^2, I = 4HH, J = H I, r = 2(S2 - Y1), V = X1 I,
    X3 = r^2 - J - 2V, Y3 = r(V - X3) - 2 Y1 J, Z3 = (Z1 + H)^2 - Z1Z1 - HH.
    a = (0, 0) is infinity; H = 0 means P = a (doubled) or P = -a (infinity)."""
    if g1_affine_is_inf(a):
        return P
    if g1_is_inf(P):
        return (a[0], a[1], Q_ONE)
    X1, Y1, Z1 = P
    X2, Y2 = a
    Z1Z1 = fq_sqr(Z1)
    U2 = fq_mul(X2, Z1Z1)
    S2 = fq_mul(Y2, fq_mul(Z1, Z1Z1))
    H = fq_sub(U2, X1)
    r = fq_dbl(fq_sub(S2, Y1))
    if fq_is_zero(H):
        if fq_is_zero(r):
            return g1_dbl(P)
        return g1_inf()
    HH = fq_sqr(H)
    I = fq_dbl(fq_dbl(HH))  # noqa: E741 (EFD's name)
    J = fq_mul(H, I)
    V = fq_mul(X1, I)
    X3 = fq_sub(fq_sub(fq_sqr(r), J), fq_dbl(V))
    Y3 = fq_sub(fq_mul(r, fq_sub(V, X3)), fq_dbl(fq_mul(Y1, J)))
    Z3 = fq_sub(fq_sub(fq_sqr(fq_add(Z1, H)), Z1Z1), HH)
    return (X3, Y3, Z3)


@device_fn
def g1_eq(P, Q):
    """Projective equality: X1 Z2^2 = X2 Z1^2 and Y1 Z2^3 = Y2 Z1^3 (infinity equals only
    infinity)."""
    p_inf = g1_is_inf(P)
    q_inf = g1_is_inf(Q)
    if p_inf or q_inf:
        return p_inf and q_inf
    Z1Z1 = fq_sqr(P[2])
    Z2Z2 = fq_sqr(Q[2])
    if not fq_eq(fq_mul(P[0], Z2Z2), fq_mul(Q[0], Z1Z1)):
        return False
    return fq_eq(fq_mul(P[1], fq_mul(Q[2], Z2Z2)), fq_mul(Q[1], fq_mul(P[2], Z1Z1)))


@device_fn
def g1_mul(P, k):
    """k P for k given as 4 plain uint64 limbs (any 256-bit value), left-to-right
    double-and-add: 256 doublings. For tests and small uses; MSM is the fast path."""
    acc = g1_inf()
    for limb in range(3, -1, -1):
        word = k[limb]
        for bit in range(63, -1, -1):
            acc = g1_dbl(acc)
            if (word >> np.uint64(bit)) & ONE_BIT:
                acc = g1_add(acc, P)
    return acc


@device_fn
def g1_is_on_curve_affine(a):
    """y^2 = x^3 + 3 for an affine point; the infinity encoding (0, 0) counts as on the
    curve (it is the group's identity, as snarkjs stores it)."""
    if g1_affine_is_inf(a):
        return True
    x, y = a
    return fq_eq(fq_sqr(y), fq_add(fq_mul(fq_sqr(x), x), G1_B_MONT))


# ======================================= G2 ===============================================
# The same formulas as G1 over Fq2; see the G1 routines for the derivations.

@device_fn
def g2_inf():
    """The point at infinity in Jacobian form, (1, 1, 0)."""
    return (FQ2_ONE, FQ2_ONE, FQ2_ZERO)


@device_fn
def g2_is_inf(P):
    return fq2_is_zero(P[2])


@device_fn
def g2_affine_is_inf(a):
    return fq2_is_zero(a[0]) and fq2_is_zero(a[1])


@device_fn
def g2_from_affine(a):
    if g2_affine_is_inf(a):
        return g2_inf()
    return (a[0], a[1], FQ2_ONE)


@device_fn
def g2_to_affine(P):
    if g2_is_inf(P):
        return (FQ2_ZERO, FQ2_ZERO)
    zinv = fq2_inv(P[2])
    zinv2 = fq2_sqr(zinv)
    return (fq2_mul(P[0], zinv2), fq2_mul(P[1], fq2_mul(zinv2, zinv)))


@device_fn
def g2_neg(P):
    return (P[0], fq2_neg(P[1]), P[2])


@device_fn
def g2_neg_affine(a):
    return (a[0], fq2_neg(a[1]))


@device_fn
def g2_dbl(P):
    """2P, EFD "dbl-2009-l" over Fq2 (see g1_dbl)."""
    X1, Y1, Z1 = P
    A = fq2_sqr(X1)
    B = fq2_sqr(Y1)
    C = fq2_sqr(B)
    D = fq2_dbl(fq2_sub(fq2_sub(fq2_sqr(fq2_add(X1, B)), A), C))
    E = fq2_add(fq2_dbl(A), A)
    F_ = fq2_sqr(E)
    X3 = fq2_sub(F_, fq2_dbl(D))
    C8 = fq2_dbl(fq2_dbl(fq2_dbl(C)))
    Y3 = fq2_sub(fq2_mul(E, fq2_sub(D, X3)), C8)
    Z3 = fq2_dbl(fq2_mul(Y1, Z1))
    return (X3, Y3, Z3)


@device_fn
def g2_add(P, Q):
    """P + Q, EFD "add-2007-bl" over Fq2 with the exceptional cases (see g1_add)."""
    if g2_is_inf(P):
        return Q
    if g2_is_inf(Q):
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Q
    Z1Z1 = fq2_sqr(Z1)
    Z2Z2 = fq2_sqr(Z2)
    U1 = fq2_mul(X1, Z2Z2)
    U2 = fq2_mul(X2, Z1Z1)
    S1 = fq2_mul(Y1, fq2_mul(Z2, Z2Z2))
    S2 = fq2_mul(Y2, fq2_mul(Z1, Z1Z1))
    H = fq2_sub(U2, U1)
    r = fq2_dbl(fq2_sub(S2, S1))
    if fq2_is_zero(H):
        if fq2_is_zero(r):
            return g2_dbl(P)
        return g2_inf()
    I = fq2_sqr(fq2_dbl(H))  # noqa: E741 (EFD's name)
    J = fq2_mul(H, I)
    V = fq2_mul(U1, I)
    X3 = fq2_sub(fq2_sub(fq2_sqr(r), J), fq2_dbl(V))
    Y3 = fq2_sub(fq2_mul(r, fq2_sub(V, X3)), fq2_dbl(fq2_mul(S1, J)))
    Z3 = fq2_mul(fq2_sub(fq2_sub(fq2_sqr(fq2_add(Z1, Z2)), Z1Z1), Z2Z2), H)
    return (X3, Y3, Z3)


@device_fn
def g2_add_mixed(P, a):
    """P + a (a affine), EFD "madd-2007-bl" over Fq2 with the exceptional cases
    (see g1_add_mixed)."""
    if g2_affine_is_inf(a):
        return P
    if g2_is_inf(P):
        return (a[0], a[1], FQ2_ONE)
    X1, Y1, Z1 = P
    X2, Y2 = a
    Z1Z1 = fq2_sqr(Z1)
    U2 = fq2_mul(X2, Z1Z1)
    S2 = fq2_mul(Y2, fq2_mul(Z1, Z1Z1))
    H = fq2_sub(U2, X1)
    r = fq2_dbl(fq2_sub(S2, Y1))
    if fq2_is_zero(H):
        if fq2_is_zero(r):
            return g2_dbl(P)
        return g2_inf()
    HH = fq2_sqr(H)
    I = fq2_dbl(fq2_dbl(HH))  # noqa: E741 (EFD's name)
    J = fq2_mul(H, I)
    V = fq2_mul(X1, I)
    X3 = fq2_sub(fq2_sub(fq2_sqr(r), J), fq2_dbl(V))
    Y3 = fq2_sub(fq2_mul(r, fq2_sub(V, X3)), fq2_dbl(fq2_mul(Y1, J)))
    Z3 = fq2_sub(fq2_sub(fq2_sqr(fq2_add(Z1, H)), Z1Z1), HH)
    return (X3, Y3, Z3)


@device_fn
def g2_eq(P, Q):
    """Projective equality (see g1_eq)."""
    p_inf = g2_is_inf(P)
    q_inf = g2_is_inf(Q)
    if p_inf or q_inf:
        return p_inf and q_inf
    Z1Z1 = fq2_sqr(P[2])
    Z2Z2 = fq2_sqr(Q[2])
    if not fq2_eq(fq2_mul(P[0], Z2Z2), fq2_mul(Q[0], Z1Z1)):
        return False
    return fq2_eq(fq2_mul(P[1], fq2_mul(Q[2], Z2Z2)), fq2_mul(Q[1], fq2_mul(P[2], Z1Z1)))


@device_fn
def g2_mul(P, k):
    """k P for k given as 4 plain uint64 limbs (double-and-add, see g1_mul)."""
    acc = g2_inf()
    for limb in range(3, -1, -1):
        word = k[limb]
        for bit in range(63, -1, -1):
            acc = g2_dbl(acc)
            if (word >> np.uint64(bit)) & ONE_BIT:
                acc = g2_add(acc, P)
    return acc


@device_fn
def g2_is_on_curve_affine(a):
    """y^2 = x^3 + b' for an affine point over Fq2; (0, 0) counts as on the curve."""
    if g2_affine_is_inf(a):
        return True
    x, y = a
    return fq2_eq(fq2_sqr(y), fq2_add(fq2_mul(fq2_sqr(x), x), G2_B_MONT))


# ================================ array access ============================================
# Layouts (rows of uint64 arrays, limbs little-endian, coordinates in Montgomery form):
#   G1 affine (n, 8) = x || y                  (the zkey's point layout)
#   G1 Jacobian (n, 12) = X || Y || Z
#   G2 affine (n, 16) = x.c0 || x.c1 || y.c0 || y.c1   (the zkey's point layout)
#   G2 Jacobian (n, 24) = X.c0 || X.c1 || Y.c0 || Y.c1 || Z.c0 || Z.c1

fq_load, fq_store, fq2_load, fq2_store = F.load, F.store, F.fq2_load, F.fq2_store


@row_fn
def g1_load_affine(arr, i):
    return (fq_load(arr, i, 0), fq_load(arr, i, 4))


@row_fn
def g1_store_affine(arr, i, a):
    fq_store(arr, i, 0, a[0])
    fq_store(arr, i, 4, a[1])


@row_fn
def g1_load(arr, i):
    return (fq_load(arr, i, 0), fq_load(arr, i, 4), fq_load(arr, i, 8))


@row_fn
def g1_store(arr, i, P):
    fq_store(arr, i, 0, P[0])
    fq_store(arr, i, 4, P[1])
    fq_store(arr, i, 8, P[2])


@row_fn
def g2_load_affine(arr, i):
    return (fq2_load(arr, i, 0), fq2_load(arr, i, 8))


@row_fn
def g2_store_affine(arr, i, a):
    fq2_store(arr, i, 0, a[0])
    fq2_store(arr, i, 8, a[1])


@row_fn
def g2_load(arr, i):
    return (fq2_load(arr, i, 0), fq2_load(arr, i, 8), fq2_load(arr, i, 16))


@row_fn
def g2_store(arr, i, P):
    fq2_store(arr, i, 0, P[0])
    fq2_store(arr, i, 8, P[1])
    fq2_store(arr, i, 16, P[2])
