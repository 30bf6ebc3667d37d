"""The optimal ate pairing and the group checks a verifier needs, on plain Python ints, for
BN254 and BLS12-381 from one text.

The same mathematics as cuzk.arith.fq12 and cuzk.arith.pairing (the compiled BN254 pairing; its
module doc explains the exponent), written for CPython instead of Numba so that a one-shot
command (`cuzk verify`) imports neither numpy nor numba and loads no machine code: a 4-pair
product costs tens of milliseconds here, against about half a second of imports and cache
loading for the compiled one; a long-lived process keeps using the compiled one (2 ms).

One text, one build per curve: importing this module gives BN254's; ``for_curve(name)``
runs the same text again with the constants of another curve of cuzk.arith.curves (its
constants module names X, FAMILY "bn" or "bls12", TWIST "D" or "M") and returns that build, a
module object with the same names. What differs between the curves is chosen once, when the
text runs (globals such as Q and K are read by the functions), so BN254's code is not slowed.

Elements are tuples of ints below q: Fq2 (c0, c1) = c0 + c1 u; Fq6 (a0, a1, a2) of Fq2 =
a0 + a1 v + a2 v^2; Fq12 (a0, a1) of Fq6 = a0 + a1 w (the tower Fq2 = Fq[u]/(u^2 + 1),
Fq6 = Fq2[v]/(v^3 - xi), Fq12 = Fq6[w]/(w^2 - v), xi = K + u: 9 + u for BN254 (snarkjs's
tower), 1 + u for BLS12-381). Products are summed unreduced (Python ints do not overflow) and
reduced once per output coefficient. Points: G1 (x, y), G2 ((x.c0, x.c1), (y.c0, y.c1)),
affine, None for infinity.

Algorithms (as in the compiled code): Fq6 products schoolbook with lazy reduction, Fq12
products Karatsuba over Fq6, Fq12 squaring the complex method; Miller loop with the
homogeneous-projective twist steps and lines of Aranha, Karabina, Longa, Gebotys and Lopez
(Eurocrypt 2011), all pairs in one loop: over the NAF of 6x + 2 then two Frobenius steps for
BN254 (D-type twist, lines l0 + l1 w + l3 w^3); over the NAF of |x| for BLS12-381 (M-type
twist: the same three line values land on w^3, w^2 and 1), conjugated since x < 0. Final
exponentiation: the easy part (q^6 - 1)(q^2 + 1), then the hard part with Granger-Scott
cyclotomic squarings (2010): for BN254 Fuentes-Castaneda, Knapp and Rodriguez-Henriquez's
(SAC 2011, a power M of the reduced pairing, as snarkjs's); for BLS12-381 three times
(q^4 - q^2 + 1)/r, from the identity (Hayashida, Hayasaka and Teruya, 2020)
3 (q^4 - q^2 + 1)/r = (x - 1)^2 (x + q)(x^2 + q^2 - 1) + 3: the reduced pairing cubed (3 is
prime to r), which is the value snarkjs (ffjavascript) computes, as BN254's power M is;
py_ecc's value is the inverse of the reduced pairing (its loop does not conjugate for
x < 0), so ours is py_ecc's to the power -3. G2 subgroup checks:
BN254's is El Housni, Guillevic and Piellard's (2022), BLS12-381's is Scott's (2021) psi(Q) =
[x]Q; [r]Q = O as the slow reference for both.
"""

from __future__ import annotations

from cuzk.arith.curves import DEFAULT, constants

# The curve of this build: BN254 on import, another when for_curve runs this text again.
CURVE = globals().get("_BUILD_CURVE", DEFAULT)
_C = constants(CURVE)
Q = _C.FQ_MODULUS
R = _C.FR_MODULUS
G2_B = _C.G2_B
X = _C.X  # the curve parameter (BN or BLS), q and r are polynomials in it
FAMILY = _C.FAMILY  # "bn" or "bls12"
TWIST = _C.TWIST  # "D" (b' = b / xi) or "M" (b' = b xi)
XI = _C.FQ2_NONRESIDUE
K = XI[0]  # xi = K + u; xi (c0 + c1 u) = (K c0 - c1) + (c0 + K c1) u
assert XI[1] == 1 and FAMILY in ("bn", "bls12") and TWIST in ("D", "M")
if FAMILY == "bn":
    assert 36 * X**4 + 36 * X**3 + 24 * X**2 + 6 * X + 1 == Q
    assert 36 * X**4 + 36 * X**3 + 18 * X**2 + 6 * X + 1 == R
    ATE_LOOP_COUNT = 6 * X + 2
else:
    assert X**4 - X**2 + 1 == R and (X - 1) ** 2 * R // 3 + X == Q and (X - 1) % 3 == 0
    ATE_LOOP_COUNT = abs(X)
# BLS12's hard part, times 3: 3 (q^4 - q^2 + 1)/r = (x - 1)^2 (x + q)(x^2 + q^2 - 1) + 3.
PAIRING_POWER = 3 if FAMILY == "bls12" else 2 * X * (6 * X**2 + 3 * X + 1)  # of the reduced one


def _naf(n: int) -> list[int]:
    """Non-adjacent form of n, least significant digit first (digits in {-1, 0, 1})."""
    digits = []
    while n:
        d = 2 - (n & 3) if n & 1 else 0
        n -= d
        digits.append(d)
        n >>= 1
    return digits


# The NAF of the Miller loop's count, most significant first, the leading 1 dropped (the loop
# starts at T = Q).
ATE_NAF = tuple(_naf(ATE_LOOP_COUNT)[::-1][1:])
# |x|, most significant bit first, the leading 1 dropped (square-and-multiply).
X_BITS = tuple(int(b) for b in bin(abs(X))[3:])


def _fq2_mul_int(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q)


def _fq2_pow_int(a, e: int):
    out = (1, 0)
    while e:
        if e & 1:
            out = _fq2_mul_int(out, a)
        a = _fq2_mul_int(a, a)
        e >>= 1
    return out


# Frobenius on Fq12 in the w-power view a = sum_k a_k w^k (w^6 = xi, a_k = c[k % 2][k // 2]):
# a^(q^n) = sum_k conj^n(a_k) gamma_n[k] w^k with gamma_n[k] = xi^(k (q^n - 1) / 6). From
# g = xi^((q - 1)/6) and a^q = conj(a) in Fq2: xi^((q^2 - 1)/6) = g^(q + 1) = g conj(g) (in Fq)
# and xi^((q^3 - 1)/6) = g^(q^2 + q + 1) = g^2 conj(g) (a^(q^2) = a in Fq2); one power only.
_G = _fq2_pow_int(XI, (Q - 1) // 6)
_G_CONJ = (_G[0], -_G[1] % Q)


def _powers(g) -> tuple:
    out = [(1, 0)]
    for _ in range(5):
        out.append(_fq2_mul_int(out[-1], g))
    return tuple(out)


GAMMA1 = _powers(_G)
GAMMA2 = tuple(c[0] for c in _powers(_fq2_mul_int(_G, _G_CONJ)))  # in Fq
GAMMA3 = _powers(_fq2_mul_int(_fq2_mul_int(_G, _G), _G_CONJ))
B3_TWIST = (3 * G2_B[0] % Q, 3 * G2_B[1] % Q)  # 3 b', the twist being y^2 = x^3 + b'


def _fq2_inv_int(a):
    t = pow((a[0] * a[0] + a[1] * a[1]) % Q, -1, Q)
    return (a[0] * t % Q, -a[1] * t % Q)


# psi = untwist-Frobenius-twist on the twist: (x, y) -> (conj(x) PSI_X, conj(y) PSI_Y). The
# D-type untwist is (x w^2, y w^3), so PSI_X = w^(2(q - 1)) = xi^((q - 1)/3) = gamma_1[2] and
# PSI_Y = gamma_1[3]; the M-type one is (x / w^2, y / w^3): their inverses.
if TWIST == "D":
    PSI_X, PSI_Y = GAMMA1[2], GAMMA1[3]
else:
    PSI_X, PSI_Y = _fq2_inv_int(GAMMA1[2]), _fq2_inv_int(GAMMA1[3])

FQ2_ZERO, FQ2_ONE = (0, 0), (1, 0)
FQ6_ZERO = (FQ2_ZERO, FQ2_ZERO, FQ2_ZERO)
FQ12_ONE = ((FQ2_ONE, FQ2_ZERO, FQ2_ZERO), FQ6_ZERO)

_BUILDS: dict = {}


def for_curve(name: str):
    """This module built for curve ``name`` (of cuzk.arith.curves): the same text run again
    with that curve's constants, once per process; BN254's is this module itself."""
    import importlib
    import importlib.util

    base = importlib.import_module(__name__)
    if name == DEFAULT:
        return base
    builds = base._BUILDS
    if name not in builds:
        constants(name)  # an unknown name fails here
        spec = importlib.util.find_spec(__name__)
        mod = importlib.util.module_from_spec(spec)
        mod._BUILD_CURVE = name
        spec.loader.exec_module(mod)
        builds[name] = mod
    return builds[name]


# --- Fq2 -------------------------------------------------------------------------------------


def fq2_mul(a, b):
    a0, a1 = a
    b0, b1 = b
    return ((a0 * b0 - a1 * b1) % Q, (a0 * b1 + a1 * b0) % Q)


def fq2_sqr(a):
    a0, a1 = a
    return ((a0 + a1) * (a0 - a1) % Q, 2 * a0 * a1 % Q)


def fq2_inv(a):
    """1/a = conj(a) / (a0^2 + a1^2) for a != 0."""
    a0, a1 = a
    t = pow((a0 * a0 + a1 * a1) % Q, -1, Q)
    return (a0 * t % Q, -a1 * t % Q)


# --- Fq6 -------------------------------------------------------------------------------------


def fq6_add(a, b):
    (a0, a1), (a2, a3), (a4, a5) = a
    (b0, b1), (b2, b3), (b4, b5) = b
    return (
        ((a0 + b0) % Q, (a1 + b1) % Q),
        ((a2 + b2) % Q, (a3 + b3) % Q),
        ((a4 + b4) % Q, (a5 + b5) % Q),
    )


def fq6_sub(a, b):
    (a0, a1), (a2, a3), (a4, a5) = a
    (b0, b1), (b2, b3), (b4, b5) = b
    return (
        ((a0 - b0) % Q, (a1 - b1) % Q),
        ((a2 - b2) % Q, (a3 - b3) % Q),
        ((a4 - b4) % Q, (a5 - b5) % Q),
    )


def fq6_neg(a):
    (a0, a1), (a2, a3), (a4, a5) = a
    return ((-a0 % Q, -a1 % Q), (-a2 % Q, -a3 % Q), (-a4 % Q, -a5 % Q))


def fq6_mul_v(a):
    """a v = xi a2 + a0 v + a1 v^2, xi (c0 + c1 u) = (K c0 - c1) + (c0 + K c1) u."""
    a0, a1, (c0, c1) = a
    return (((K * c0 - c1) % Q, (c0 + K * c1) % Q), a0, a1)


def fq6_mul(a, b):
    """Schoolbook over Fq2 with one reduction per coefficient:
    (a0 b0 + xi (a1 b2 + a2 b1)) + (a0 b1 + a1 b0 + xi a2 b2) v + (a0 b2 + a1 b1 + a2 b0) v^2."""
    (a0, a1), (a2, a3), (a4, a5) = a
    (b0, b1), (b2, b3), (b4, b5) = b
    s0 = a2 * b4 - a3 * b5 + a4 * b2 - a5 * b3  # a1 b2 + a2 b1
    s1 = a2 * b5 + a3 * b4 + a4 * b3 + a5 * b2
    t0 = a4 * b4 - a5 * b5  # a2 b2
    t1 = a4 * b5 + a5 * b4
    return (
        ((a0 * b0 - a1 * b1 + K * s0 - s1) % Q, (a0 * b1 + a1 * b0 + s0 + K * s1) % Q),
        (
            (a0 * b2 - a1 * b3 + a2 * b0 - a3 * b1 + K * t0 - t1) % Q,
            (a0 * b3 + a1 * b2 + a2 * b1 + a3 * b0 + t0 + K * t1) % Q,
        ),
        (
            (a0 * b4 - a1 * b5 + a2 * b2 - a3 * b3 + a4 * b0 - a5 * b1) % Q,
            (a0 * b5 + a1 * b4 + a2 * b3 + a3 * b2 + a4 * b1 + a5 * b0) % Q,
        ),
    )


def fq6_inv(a):
    """1/a = (t0 + t1 v + t2 v^2) / N with t0 = a0^2 - xi a1 a2, t1 = xi a2^2 - a0 a1,
    t2 = a1^2 - a0 a2 and N = a0 t0 + xi (a2 t1 + a1 t2)."""
    a0, a1, a2 = a
    t0 = _fq2_sub(fq2_sqr(a0), _fq2_mul_xi(fq2_mul(a1, a2)))
    t1 = _fq2_sub(_fq2_mul_xi(fq2_sqr(a2)), fq2_mul(a0, a1))
    t2 = _fq2_sub(fq2_sqr(a1), fq2_mul(a0, a2))
    s = _fq2_mul_xi(_fq2_add(fq2_mul(a2, t1), fq2_mul(a1, t2)))
    ni = fq2_inv(_fq2_add(fq2_mul(a0, t0), s))
    return (fq2_mul(t0, ni), fq2_mul(t1, ni), fq2_mul(t2, ni))


def _fq2_add(a, b):
    return ((a[0] + b[0]) % Q, (a[1] + b[1]) % Q)


def _fq2_sub(a, b):
    return ((a[0] - b[0]) % Q, (a[1] - b[1]) % Q)


def _fq2_mul_xi(a):
    return ((K * a[0] - a[1]) % Q, (a[0] + K * a[1]) % Q)


def _fq2_conj(a):
    return (a[0], -a[1] % Q)


# --- Fq12 ------------------------------------------------------------------------------------


def fq12_mul(a, b):
    """Karatsuba over Fq6: (a0 + a1 w)(b0 + b1 w) = (a0 b0 + v a1 b1)
    + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) w."""
    a0, a1 = a
    b0, b1 = b
    t0 = fq6_mul(a0, b0)
    t1 = fq6_mul(a1, b1)
    return (
        fq6_add(t0, fq6_mul_v(t1)),
        fq6_sub(fq6_sub(fq6_mul(fq6_add(a0, a1), fq6_add(b0, b1)), t0), t1),
    )


def fq12_sqr(a):
    """Complex squaring: with t = a0 a1, (a0 + a1 w)^2 = ((a0 + a1)(a0 + v a1) - t - v t)
    + 2 t w."""
    a0, a1 = a
    t = fq6_mul(a0, a1)
    c0 = fq6_sub(fq6_sub(fq6_mul(fq6_add(a0, a1), fq6_add(a0, fq6_mul_v(a1))), t), fq6_mul_v(t))
    return (c0, fq6_add(t, t))


def fq12_conj(a):
    """a^(q^6) = a0 - a1 w: the inverse of a in the cyclotomic subgroup."""
    return (a[0], fq6_neg(a[1]))


def fq12_inv(a):
    """1/(a0 + a1 w) = (a0 - a1 w) / (a0^2 - v a1^2)."""
    a0, a1 = a
    d = fq6_inv(fq6_sub(fq6_mul(a0, a0), fq6_mul_v(fq6_mul(a1, a1))))
    return (fq6_mul(a0, d), fq6_neg(fq6_mul(a1, d)))


def fq12_mul_line(f, l0, l1, l3):
    """f (l0 + l1 w + l3 w^3), a line value of the Miller loop, in the w-power view
    f = sum_k a_k w^k (a_k = f[k % 2][k // 2], w^6 = xi): coefficient j of the product is
    a_j l0 + a_(j-1) l1 + a_(j-3) l3, a term whose index wraps below 0 taken times xi.
    18 Fq2 products written out on ints, one reduction per coefficient (no calls: this is the
    Miller loop's most frequent operation)."""
    ((a0r, a0i), (a2r, a2i), (a4r, a4i)), ((a1r, a1i), (a3r, a3i), (a5r, a5i)) = f
    b0, b1 = l0
    c0, c1 = l1
    d0, d1 = l3
    # the wrapped terms, before the factor xi: xi (x + y u) = (Kx - y) + (x + Ky) u
    s0 = a5r * c0 - a5i * c1 + a3r * d0 - a3i * d1  # a_5 l1 + a_3 l3 (into w^0)
    s1 = a5r * c1 + a5i * c0 + a3r * d1 + a3i * d0
    t0 = a4r * d0 - a4i * d1  # a_4 l3 (into w^1)
    t1 = a4r * d1 + a4i * d0
    u0 = a5r * d0 - a5i * d1  # a_5 l3 (into w^2)
    u1 = a5r * d1 + a5i * d0
    return (
        (
            ((a0r * b0 - a0i * b1 + K * s0 - s1) % Q, (a0r * b1 + a0i * b0 + s0 + K * s1) % Q),
            (
                (a2r * b0 - a2i * b1 + a1r * c0 - a1i * c1 + K * u0 - u1) % Q,
                (a2r * b1 + a2i * b0 + a1r * c1 + a1i * c0 + u0 + K * u1) % Q,
            ),
            (
                (a4r * b0 - a4i * b1 + a3r * c0 - a3i * c1 + a1r * d0 - a1i * d1) % Q,
                (a4r * b1 + a4i * b0 + a3r * c1 + a3i * c0 + a1r * d1 + a1i * d0) % Q,
            ),
        ),
        (
            (
                (a1r * b0 - a1i * b1 + a0r * c0 - a0i * c1 + K * t0 - t1) % Q,
                (a1r * b1 + a1i * b0 + a0r * c1 + a0i * c0 + t0 + K * t1) % Q,
            ),
            (
                (a3r * b0 - a3i * b1 + a2r * c0 - a2i * c1 + a0r * d0 - a0i * d1) % Q,
                (a3r * b1 + a3i * b0 + a2r * c1 + a2i * c0 + a0r * d1 + a0i * d0) % Q,
            ),
            (
                (a5r * b0 - a5i * b1 + a4r * c0 - a4i * c1 + a2r * d0 - a2i * d1) % Q,
                (a5r * b1 + a5i * b0 + a4r * c1 + a4i * c0 + a2r * d1 + a2i * d0) % Q,
            ),
        ),
    )


def fq12_mul_line_m(f, l0, l2, l3):
    """f (l0 + l2 w^2 + l3 w^3), a line value of the Miller loop on an M-type twist, in the
    w-power view (as fq12_mul_line): coefficient j of the product is
    a_j l0 + a_(j-2) l2 + a_(j-3) l3, a term whose index wraps below 0 taken times xi.
    18 Fq2 products written out on ints, one reduction per coefficient."""
    ((a0r, a0i), (a2r, a2i), (a4r, a4i)), ((a1r, a1i), (a3r, a3i), (a5r, a5i)) = f
    b0, b1 = l0
    c0, c1 = l2
    d0, d1 = l3
    # the wrapped terms, before the factor xi: xi (x + y u) = (Kx - y) + (x + Ky) u
    s0 = a4r * c0 - a4i * c1 + a3r * d0 - a3i * d1  # a_4 l2 + a_3 l3 (into w^0)
    s1 = a4r * c1 + a4i * c0 + a3r * d1 + a3i * d0
    t0 = a5r * c0 - a5i * c1 + a4r * d0 - a4i * d1  # a_5 l2 + a_4 l3 (into w^1)
    t1 = a5r * c1 + a5i * c0 + a4r * d1 + a4i * d0
    u0 = a5r * d0 - a5i * d1  # a_5 l3 (into w^2)
    u1 = a5r * d1 + a5i * d0
    return (
        (
            ((a0r * b0 - a0i * b1 + K * s0 - s1) % Q, (a0r * b1 + a0i * b0 + s0 + K * s1) % Q),
            (
                (a2r * b0 - a2i * b1 + a0r * c0 - a0i * c1 + K * u0 - u1) % Q,
                (a2r * b1 + a2i * b0 + a0r * c1 + a0i * c0 + u0 + K * u1) % Q,
            ),
            (
                (a4r * b0 - a4i * b1 + a2r * c0 - a2i * c1 + a1r * d0 - a1i * d1) % Q,
                (a4r * b1 + a4i * b0 + a2r * c1 + a2i * c0 + a1r * d1 + a1i * d0) % Q,
            ),
        ),
        (
            (
                (a1r * b0 - a1i * b1 + K * t0 - t1) % Q,
                (a1r * b1 + a1i * b0 + t0 + K * t1) % Q,
            ),
            (
                (a3r * b0 - a3i * b1 + a1r * c0 - a1i * c1 + a0r * d0 - a0i * d1) % Q,
                (a3r * b1 + a3i * b0 + a1r * c1 + a1i * c0 + a0r * d1 + a0i * d0) % Q,
            ),
            (
                (a5r * b0 - a5i * b1 + a3r * c0 - a3i * c1 + a2r * d0 - a2i * d1) % Q,
                (a5r * b1 + a5i * b0 + a3r * c1 + a3i * c0 + a2r * d1 + a2i * d0) % Q,
            ),
        ),
    )


if TWIST == "D":
    _mul_line = fq12_mul_line
else:

    def _mul_line(f, l0, l1, l3):
        """The line l0 yP-term, l1 xP-term, l3 constant of the twist steps, on an M-type twist:
        f (l3 + l1 w^2 + l0 w^3) (the D-type line l0 + l1 w + l3 w^3 with w^-1 for w, times
        w^3, a factor in Fq4 that the final exponentiation removes)."""
        return fq12_mul_line_m(f, l3, l1, l0)


def fq12_frobenius(a, n: int = 1):
    """a^(q^n) for n = 1, 2, 3 (the w-power view: conj^n of each a_k times gamma_n[k])."""
    (a0, a2, a4), (a1, a3, a5) = a
    if n == 2:
        g = GAMMA2
        return (
            (a0, _fq2_mul_fq(a2, g[2]), _fq2_mul_fq(a4, g[4])),
            (_fq2_mul_fq(a1, g[1]), _fq2_mul_fq(a3, g[3]), _fq2_mul_fq(a5, g[5])),
        )
    g = GAMMA1 if n == 1 else GAMMA3
    c = _fq2_conj
    return (
        (c(a0), fq2_mul(c(a2), g[2]), fq2_mul(c(a4), g[4])),
        (fq2_mul(c(a1), g[1]), fq2_mul(c(a3), g[3]), fq2_mul(c(a5), g[5])),
    )


def _fq2_mul_fq(a, k):
    return (a[0] * k % Q, a[1] * k % Q)


def _fq4_sqr(a, b):
    """(a + b y)^2 in Fq4 = Fq2[y]/(y^2 - xi): (a^2 + xi b^2, 2ab), unreduced ints."""
    a0, a1 = a
    b0, b1 = b
    s0 = (a0 + a1) * (a0 - a1)  # a^2
    s1 = 2 * a0 * a1
    t0 = (b0 + b1) * (b0 - b1)  # b^2
    t1 = 2 * b0 * b1
    return (s0 + K * t0 - t1, s1 + t0 + K * t1), (2 * (a0 * b0 - a1 * b1), 2 * (a0 * b1 + a1 * b0))


def fq12_cyclotomic_sqr(a):
    """a^2 for a in the cyclotomic subgroup (Granger-Scott 2010). With y = w^3 and
    Fq12 = Fq4[w]/(w^3 - y), a = A0 + A1 w + A2 w^2 where A0 = a_0 + a_3 y, A1 = a_1 + a_4 y,
    A2 = a_2 + a_5 y (w-power coefficients); then
    a^2 = (3 A0^2 - 2 conj A0) + (3 y A2^2 + 2 conj A1) w + (3 A1^2 - 2 conj A2) w^2."""
    (z0, z4, z3), (z2, z1, z5) = a  # A0 = z0 + z1 y, A1 = z2 + z3 y, A2 = z4 + z5 y
    (t0, t1) = _fq4_sqr(z0, z1)
    (t2, t3) = _fq4_sqr(z2, z3)
    (t4, t5) = _fq4_sqr(z4, z5)
    u = (K * t5[0] - t5[1], t5[0] + K * t5[1])  # y (t4 + t5 y) = xi t5 + t4 y

    def sub3(t, z):  # 3 t - 2 z
        return ((3 * t[0] - 2 * z[0]) % Q, (3 * t[1] - 2 * z[1]) % Q)

    def add3(t, z):  # 3 t + 2 z
        return ((3 * t[0] + 2 * z[0]) % Q, (3 * t[1] + 2 * z[1]) % Q)

    return (
        (sub3(t0, z0), sub3(t2, z4), sub3(t4, z3)),
        (add3(u, z2), add3(t1, z1), add3(t3, z5)),
    )


# --- G1 and G2 (Jacobian coordinates for the group law) ---------------------------------------


def g1_add_jacobian(p, q):
    """p + q on y^2 = x^3 + 3 in Jacobian coordinates (X, Y, Z) ~ (X/Z^2, Y/Z^3); Z = 0 is
    infinity (add-2007-bl, doubling dbl-2009-l of the Explicit-Formulas Database)."""
    x1, y1, z1 = p
    x2, y2, z2 = q
    if not z1:
        return q
    if not z2:
        return p
    z1z1, z2z2 = z1 * z1 % Q, z2 * z2 % Q
    u1, u2 = x1 * z2z2 % Q, x2 * z1z1 % Q
    s1, s2 = y1 * z2 * z2z2 % Q, y2 * z1 * z1z1 % Q
    h, rr = (u2 - u1) % Q, 2 * (s2 - s1) % Q
    if not h:
        return g1_dbl_jacobian(p) if not rr else (1, 1, 0)
    i = 4 * h * h % Q
    j = h * i
    v = u1 * i
    x3 = (rr * rr - j - 2 * v) % Q
    return (x3, (rr * (v - x3) - 2 * s1 * j) % Q, ((z1 + z2) ** 2 - z1z1 - z2z2) * h % Q)


def g1_dbl_jacobian(p):
    x, y, z = p
    a, b = x * x % Q, y * y % Q
    c = b * b % Q
    d = 2 * ((x + b) ** 2 - a - c) % Q
    e = 3 * a
    x3 = (e * e - 2 * d) % Q
    return (x3, (e * (d - x3) - 8 * c) % Q, 2 * y * z % Q)


def g1_mul_jacobian(p, k: int):
    """[k]p (p Jacobian), double-and-add from the top bit."""
    acc = (1, 1, 0)
    for bit in bin(k)[2:]:
        acc = g1_dbl_jacobian(acc) if acc[2] else acc
        if bit == "1":
            acc = g1_add_jacobian(acc, p)
    return acc


def g1_to_affine(p):
    """A Jacobian G1 point as affine (x, y), None for infinity."""
    x, y, z = p
    if not z:
        return None
    zi = pow(z, -1, Q)
    zi2 = zi * zi % Q
    return (x * zi2 % Q, y * zi2 * zi % Q)


def g1_linear_combination(points, scalars):
    """sum_i k_i P_i for affine points P_i (None = infinity) and ints k_i >= 0, as affine."""
    acc = (1, 1, 0)
    for p, k in zip(points, scalars, strict=True):
        if p is not None and k:
            acc = g1_add_jacobian(acc, g1_mul_jacobian((p[0], p[1], 1), k))
    return g1_to_affine(acc)


# G1 membership. BN254's G1 is all of E(Fq) (cofactor 1): a point on the curve is in G1.
# BLS12's E(Fq) has order h1 r, h1 = (x - 1)^2 / 3: phi(x, y) = (beta x, y), beta a cube root
# of unity in Fq, acts on G1 as a cube root of unity mod r, and for the beta acting as -x^2
# (chosen below on the generator) P is in G1 iff phi(P) = [-x^2]P (Scott, ePrint 2021/1130
# sec. 6; the proof completed in Dai, Lin, Zhao and Zhou, ePrint 2022/352): two 64-bit
# multiplications by |x| instead of the 255-bit r.
G1_COFACTOR = _C.G1_COFACTOR


def g1_in_subgroup_by_order(p) -> bool:
    """[r]P = O for an affine point (None = infinity) on the curve: the definition."""
    return p is None or not g1_mul_jacobian((p[0], p[1], 1), R)[2]


def _g1_beta() -> int:
    """The cube root of unity beta in Fq for which phi(P) = (beta x, y) is [-x^2] on G1."""
    g = next(g for g in range(2, 100) if pow(g, (Q - 1) // 3, Q) != 1)
    beta = pow(g, (Q - 1) // 3, Q)
    gx, gy = _C.G1_GENERATOR
    x2g = g1_to_affine(g1_mul_jacobian((gx, gy, 1), X * X))
    for b in (beta, beta * beta % Q):
        if (b * gx % Q, gy) == (x2g[0], -x2g[1] % Q):
            return b
    raise AssertionError("no cube root of unity acts as -x^2 on G1")


G1_BETA = _g1_beta() if G1_COFACTOR != 1 else None


def g1_in_subgroup(p) -> bool:
    """Whether an affine point of the curve (None = infinity) lies in G1, the order-r
    subgroup: always for a cofactor-1 curve (BN254), else phi(P) = [-x^2]P (above).
    (g1_in_subgroup_by_order checks [r]P = O itself; the tests compare the two.)"""
    if p is None or G1_COFACTOR == 1:
        return True
    x2p = g1_mul_jacobian(g1_mul_jacobian((p[0], p[1], 1), abs(X)), abs(X))
    return g1_to_affine(x2p) == (G1_BETA * p[0] % Q, -p[1] % Q)


def g2_add_jacobian(p, q):
    """p + q on the twist in Jacobian coordinates over Fq2 (formulas as g1_add_jacobian)."""
    x1, y1, z1 = p
    x2, y2, z2 = q
    if z1 == FQ2_ZERO:
        return q
    if z2 == FQ2_ZERO:
        return p
    z1z1, z2z2 = fq2_sqr(z1), fq2_sqr(z2)
    u1, u2 = fq2_mul(x1, z2z2), fq2_mul(x2, z1z1)
    s1, s2 = fq2_mul(y1, fq2_mul(z2, z2z2)), fq2_mul(y2, fq2_mul(z1, z1z1))
    h = _fq2_sub(u2, u1)
    rr = _fq2_sub(s2, s1)
    rr = _fq2_add(rr, rr)
    if h == FQ2_ZERO:
        return g2_dbl_jacobian(p) if rr == FQ2_ZERO else (FQ2_ONE, FQ2_ONE, FQ2_ZERO)
    h2 = _fq2_add(h, h)
    i = fq2_sqr(h2)
    j = fq2_mul(h, i)
    v = fq2_mul(u1, i)
    x3 = _fq2_sub(_fq2_sub(fq2_sqr(rr), j), _fq2_add(v, v))
    s1j = fq2_mul(s1, j)
    y3 = _fq2_sub(fq2_mul(rr, _fq2_sub(v, x3)), _fq2_add(s1j, s1j))
    z3 = fq2_mul(_fq2_sub(_fq2_sub(fq2_sqr(_fq2_add(z1, z2)), z1z1), z2z2), h)
    return (x3, y3, z3)


def g2_dbl_jacobian(p):
    x, y, z = p
    a, b = fq2_sqr(x), fq2_sqr(y)
    c = fq2_sqr(b)
    d = _fq2_sub(_fq2_sub(fq2_sqr(_fq2_add(x, b)), a), c)
    d = _fq2_add(d, d)
    e = _fq2_add(_fq2_add(a, a), a)
    x3 = _fq2_sub(fq2_sqr(e), _fq2_add(d, d))
    c8 = (8 * c[0] % Q, 8 * c[1] % Q)
    yz = fq2_mul(y, z)
    return (x3, _fq2_sub(fq2_mul(e, _fq2_sub(d, x3)), c8), _fq2_add(yz, yz))


def g2_mul_jacobian(p, k: int):
    """[k]p (p Jacobian on the twist), double-and-add from the top bit."""
    acc = (FQ2_ONE, FQ2_ONE, FQ2_ZERO)
    for bit in bin(k)[2:]:
        if acc[2] != FQ2_ZERO:
            acc = g2_dbl_jacobian(acc)
        if bit == "1":
            acc = g2_add_jacobian(acc, p)
    return acc


def g2_psi_jacobian(p):
    """psi(p) = untwist-Frobenius-twist, (x, y) -> (conj(x) PSI_X, conj(y) PSI_Y) (for BN254's
    D-type twist PSI_X = xi^((q-1)/3), PSI_Y = xi^((q-1)/2)), on Jacobian coordinates (conj is
    a field automorphism, so Z becomes conj(Z))."""
    x, y, z = p
    return (fq2_mul(_fq2_conj(x), PSI_X), fq2_mul(_fq2_conj(y), PSI_Y), _fq2_conj(z))


def g2_eq_jacobian(p, q) -> bool:
    """Whether two Jacobian twist points are the same point."""
    x1, y1, z1 = p
    x2, y2, z2 = q
    if z1 == FQ2_ZERO or z2 == FQ2_ZERO:
        return z1 == z2 == FQ2_ZERO
    z1z1, z2z2 = fq2_sqr(z1), fq2_sqr(z2)
    return fq2_mul(x1, z2z2) == fq2_mul(x2, z1z1) and fq2_mul(y1, fq2_mul(z2, z2z2)) == fq2_mul(
        y2, fq2_mul(z1, z1z1)
    )


def g2_in_subgroup(p) -> bool:
    """Whether an affine point of the twist (None = infinity) lies in G2, the order-r
    subgroup (the twist's group has order r c2 with c2 > 1): _g2_in_subgroup_bn or
    _g2_in_subgroup_bls12, by the curve's family."""
    if p is None:
        return True
    if FAMILY == "bn":
        return _g2_in_subgroup_bn(p)
    return _g2_in_subgroup_bls12(p)


def _g2_in_subgroup_bls12(p) -> bool:
    """Scott's test for BLS12 curves ("A note on group membership tests for G1, G2 and GT on
    BLS pairing-friendly curves", ePrint 2021/1130, sec. 4): Q is in G2 iff psi(Q) = [x]Q, a
    64-bit scalar instead of the 255-bit r (x < 0: [x]Q = -[|x|]Q).
    (g2_in_subgroup_by_order checks [r]Q = O itself; the tests compare the two.)"""
    pj = (p[0], p[1], FQ2_ONE)
    xq = g2_mul_jacobian(pj, abs(X))
    if X < 0:
        xq = (xq[0], _fq2_sub(FQ2_ZERO, xq[1]), xq[2])
    return g2_eq_jacobian(g2_psi_jacobian(pj), xq)


def _g2_in_subgroup_bn(p) -> bool:
    """The test of El Housni, Guillevic
    and Piellard ("Co-factor clearing and subgroup membership testing on pairing-friendly
    curves", Africacrypt 2022, sec. 5.1; gnark-crypto's for BN254), with a 63-bit scalar
    instead of the 254-bit r:  [r]Q = O  iff  [x+1]Q + psi([x]Q) + psi^2([x]Q) = psi^3([2x]Q).
    (g2_in_subgroup_by_order checks [r]Q = O itself; the tests compare the two.)"""
    pj = (p[0], p[1], FQ2_ONE)
    xq = g2_mul_jacobian(pj, X)
    psi_xq = g2_psi_jacobian(xq)
    lhs = g2_add_jacobian(g2_add_jacobian(xq, pj), psi_xq)
    lhs = g2_add_jacobian(lhs, g2_psi_jacobian(psi_xq))
    rhs = g2_psi_jacobian(g2_psi_jacobian(g2_psi_jacobian(g2_dbl_jacobian(xq))))
    return g2_eq_jacobian(lhs, rhs)


def g2_in_subgroup_by_order(p) -> bool:
    """[r]Q = O: the definition, slower (a 254- or 255-bit scalar)."""
    return p is None or g2_mul_jacobian((p[0], p[1], FQ2_ONE), R)[2] == FQ2_ZERO


# --- the Miller loop and the final exponentiation -----------------------------------------------


def _dbl_step(t, xp, yp):
    """T <- 2T and the tangent line at P (Aranha et al. 2011, D-type twist, T projective; the
    same values make the M-type line, see _mul_line):
    B = Y^2, C = Z^2, E = 3b' C, F = 3E, H = 2YZ, J = X^2,
    2T = (2XY(B - F) : (B + F)^2 - 12 E^2 : 4 B H), l = -H yP + 3 J xP w + (E - B) w^3.
    Written out on ints (the Miller loop's second most frequent operation)."""
    (x0, x1), (y0, y1), (z0, z1) = t
    k0, k1 = B3_TWIST
    b0, b1 = (y0 + y1) * (y0 - y1) % Q, 2 * y0 * y1 % Q
    c0, c1 = (z0 + z1) * (z0 - z1) % Q, 2 * z0 * z1 % Q
    e0, e1 = (c0 * k0 - c1 * k1) % Q, (c0 * k1 + c1 * k0) % Q
    f0, f1 = 3 * e0, 3 * e1
    h0, h1 = 2 * (y0 * z0 - y1 * z1) % Q, 2 * (y0 * z1 + y1 * z0) % Q
    m0, m1 = (x0 * y0 - x1 * y1) % Q, (x0 * y1 + x1 * y0) % Q  # XY
    g0, g1 = b0 - f0, b1 - f1
    s0, s1 = b0 + f0, b1 + f1
    x3 = (2 * (m0 * g0 - m1 * g1) % Q, 2 * (m0 * g1 + m1 * g0) % Q)
    y3 = (
        ((s0 + s1) * (s0 - s1) - 12 * (e0 + e1) * (e0 - e1)) % Q,
        (2 * s0 * s1 - 24 * e0 * e1) % Q,
    )
    z3 = (4 * (b0 * h0 - b1 * h1) % Q, 4 * (b0 * h1 + b1 * h0) % Q)
    l0 = (-h0 * yp % Q, -h1 * yp % Q)
    l1 = (3 * (x0 + x1) * (x0 - x1) * xp % Q, 6 * x0 * x1 * xp % Q)  # 3 J xP
    l3 = ((e0 - b0) % Q, (e1 - b1) % Q)
    return (x3, y3, z3), l0, l1, l3


def _add_step(t, xq, yq, xp, yp):
    """T <- T + Q (Q affine) and the line through T and Q at P (Aranha et al. 2011):
    theta = Y - yQ Z, lam = X - xQ Z, C = theta^2, D = lam^2, E = lam D, F = Z C, G = X D,
    H = E + F - 2G, T + Q = (lam H : theta (G - H) - Y E : Z E),
    l = lam yP - theta xP w + (theta xQ - lam yQ) w^3. Written out on ints."""
    (x0, x1), (y0, y1), (z0, z1) = t
    q0, q1 = xq
    r0, r1 = yq
    t0, t1 = (y0 - r0 * z0 + r1 * z1) % Q, (y1 - r0 * z1 - r1 * z0) % Q  # theta
    a0, a1 = (x0 - q0 * z0 + q1 * z1) % Q, (x1 - q0 * z1 - q1 * z0) % Q  # lam
    c0, c1 = (t0 + t1) * (t0 - t1) % Q, 2 * t0 * t1 % Q
    d0, d1 = (a0 + a1) * (a0 - a1) % Q, 2 * a0 * a1 % Q
    e0, e1 = (a0 * d0 - a1 * d1) % Q, (a0 * d1 + a1 * d0) % Q
    f0, f1 = z0 * c0 - z1 * c1, z0 * c1 + z1 * c0
    g0, g1 = (x0 * d0 - x1 * d1) % Q, (x0 * d1 + x1 * d0) % Q
    h0, h1 = (e0 + f0 - 2 * g0) % Q, (e1 + f1 - 2 * g1) % Q
    u0, u1 = g0 - h0, g1 - h1
    x3 = ((a0 * h0 - a1 * h1) % Q, (a0 * h1 + a1 * h0) % Q)
    y3 = (
        (t0 * u0 - t1 * u1 - y0 * e0 + y1 * e1) % Q,
        (t0 * u1 + t1 * u0 - y0 * e1 - y1 * e0) % Q,
    )
    z3 = ((z0 * e0 - z1 * e1) % Q, (z0 * e1 + z1 * e0) % Q)
    l0 = (a0 * yp % Q, a1 * yp % Q)
    l1 = (-t0 * xp % Q, -t1 * xp % Q)
    l3 = (
        (t0 * q0 - t1 * q1 - a0 * r0 + a1 * r1) % Q,
        (t0 * q1 + t1 * q0 - a0 * r1 - a1 * r0) % Q,
    )
    return (x3, y3, z3), l0, l1, l3


def miller_loop(pairs):
    """prod_i of the Miller loop values over pairs of affine (P in G1, Q in G2), one loop for
    all; a pair with a point at infinity contributes 1. BN: f_{6x+2,Q_i}(P_i) l(P_i) l'(P_i)
    (the two Frobenius lines); BLS12: f_{x,Q_i}(P_i), conjugated for x < 0 (1/f_{|x|} up to
    factors the final exponentiation removes)."""
    pairs = [(p, q) for p, q in pairs if p is not None and q is not None]
    ts = [(q[0], q[1], FQ2_ONE) for _, q in pairs]
    negs = [(q[0], (-q[1][0] % Q, -q[1][1] % Q)) for _, q in pairs]
    f = FQ12_ONE
    for step, digit in enumerate(ATE_NAF):
        if step:
            f = fq12_sqr(f)
        for i, ((xp, yp), (xq, yq)) in enumerate(pairs):
            t, l0, l1, l3 = _dbl_step(ts[i], xp, yp)
            f = _mul_line(f, l0, l1, l3)
            if digit:
                yq_ = yq if digit > 0 else negs[i][1]
                t, l0, l1, l3 = _add_step(t, xq, yq_, xp, yp)
                f = _mul_line(f, l0, l1, l3)
            ts[i] = t
    if FAMILY == "bls12":
        return fq12_conj(f) if X < 0 else f
    for i, ((xp, yp), (xq, yq)) in enumerate(pairs):
        # pi(Q) = (conj(x) gamma_1[2], conj(y) gamma_1[3]), -pi^2(Q) = (x g_2[2], -y g_2[3])
        x1 = fq2_mul(_fq2_conj(xq), GAMMA1[2])
        y1 = fq2_mul(_fq2_conj(yq), GAMMA1[3])
        t, l0, l1, l3 = _add_step(ts[i], x1, y1, xp, yp)
        f = fq12_mul_line(f, l0, l1, l3)
        x2 = _fq2_mul_fq(xq, GAMMA2[2])
        y2 = _fq2_mul_fq(yq, -GAMMA2[3] % Q)
        t, l0, l1, l3 = _add_step(t, x2, y2, xp, yp)
        f = fq12_mul_line(f, l0, l1, l3)
    return f


def _cyclotomic_exp_x(a):
    """a^x for a in the cyclotomic subgroup (where 1/a = conj(a))."""
    acc = a
    for bit in X_BITS:
        acc = fq12_cyclotomic_sqr(acc)
        if bit:
            acc = fq12_mul(acc, a)
    return fq12_conj(acc) if X < 0 else acc


def final_exponentiation(f):
    """f^((q^6 - 1)(q^2 + 1) H), H the hard part: the easy part, then _hard_part_bn or
    _hard_part_bls12 by the curve's family."""
    f1 = fq12_mul(fq12_conj(f), fq12_inv(f))
    g = fq12_mul(fq12_frobenius(f1, 2), f1)
    if FAMILY == "bn":
        return _hard_part_bn(g)
    return _hard_part_bls12(g)


def _hard_part_bls12(g):
    """g^(3 (q^4 - q^2 + 1)/r) for g in the cyclotomic subgroup, as
    g^((x - 1)^2 (x + q)(x^2 + q^2 - 1)) g^3 (the identity of the module doc): five
    exponentiations by x, three Frobenius maps."""
    a = fq12_mul(_cyclotomic_exp_x(g), fq12_conj(g))  # g^(x - 1)
    a = fq12_mul(_cyclotomic_exp_x(a), fq12_conj(a))  # g^((x - 1)^2)
    b = fq12_mul(_cyclotomic_exp_x(a), fq12_frobenius(a, 1))  # a^(x + q)
    c = _cyclotomic_exp_x(_cyclotomic_exp_x(b))  # b^(x^2)
    c = fq12_mul(fq12_mul(c, fq12_frobenius(b, 2)), fq12_conj(b))  # b^(x^2 + q^2 - 1)
    return fq12_mul(c, fq12_mul(fq12_cyclotomic_sqr(g), g))


def _hard_part_bn(g):
    """g^(M (q^4 - q^2 + 1)/r), M = 2x(6x^2 + 3x + 1): the Fuentes-Castaneda et al. hard part
    as in cuzk.arith.pairing.final_exponentiation."""
    a = fq12_conj(_cyclotomic_exp_x(g))  # g^(-x)
    b = fq12_cyclotomic_sqr(a)  # g^(-2x)
    c = fq12_cyclotomic_sqr(b)  # g^(-4x)
    d = fq12_mul(c, b)  # g^(-6x)
    e = fq12_conj(_cyclotomic_exp_x(d))  # g^(6x^2)
    e2 = fq12_cyclotomic_sqr(e)  # g^(12x^2)
    h = fq12_conj(_cyclotomic_exp_x(e2))  # g^(-12x^3)
    j = fq12_mul(fq12_conj(h), e)  # g^(12x^3 + 6x^2)
    k = fq12_mul(j, fq12_conj(d))  # g^(12x^3 + 6x^2 + 6x)
    m = fq12_mul(k, b)  # g^(12x^3 + 6x^2 + 4x)
    n = fq12_mul(fq12_mul(k, e), g)  # g^(12x^3 + 12x^2 + 6x + 1)
    t = fq12_mul(fq12_frobenius(m, 1), n)
    t = fq12_mul(fq12_frobenius(k, 2), t)
    u = fq12_frobenius(fq12_mul(fq12_conj(g), m), 3)  # g^(q^3 (12x^3 + 6x^2 + 4x - 1))
    return fq12_mul(u, t)


def multi_pairing(pairs):
    """prod_i e(P_i, Q_i) (one final exponentiation) in the tower layout
    ((Fq2 x3) x2); for BN254 equal to cuzk.arith.pairing.multi_pairing's and to snarkjs's
    values."""
    return final_exponentiation(miller_loop(pairs))


def pairing_product_is_one(pairs) -> bool:
    """True iff prod_i e(P_i, Q_i) = 1 over [(P_i, Q_i), ...] (points in G1 and G2)."""
    return multi_pairing(pairs) == FQ12_ONE
