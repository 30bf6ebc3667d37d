"""The Fq12 tower and the optimal ate pairing against outside references.

References: py_ecc (pure-Python BN254; its Fq12 is Fq[W]/(W^12 - 18 W^6 + 82), reached from
our tower by the explicit basis change below), Python-int arithmetic for exponents, and
snarkjs's own vk_alphabeta_12 values in the committed fixtures.
"""

import json
import random

import numpy as np
import pytest
from numba import njit
from py_ecc import optimized_bn128 as bn
from py_ecc.optimized_bn128.optimized_pairing import final_exponentiate
from reference import fq12_to_py_ecc as to_py_ecc
from reference import g1_affine, g2_affine

from cuzk.arith import pairing as PR
from cuzk.arith.constants import (
    FQ_MODULUS,
    FR_MODULUS,
    G1_GENERATOR,
    G2_GENERATOR,
    MONT_R,
)
from cuzk.arith.curve import g2_from_affine, g2_mul, g2_to_affine
from cuzk.arith.fq12 import (
    fq2_inv,
    fq2_mul,
    fq12_conj,
    fq12_cyclotomic_sqr,
    fq12_frobenius,
    fq12_frobenius2,
    fq12_frobenius3,
    fq12_inv,
    fq12_mul,
    fq12_mul_line,
    fq12_sqr,
)
from cuzk.arith.radix import int_to_limb_tuple
from cuzk.formats.snarkjs_json import fq12_to_json

q, r = FQ_MODULUS, FR_MODULUS
X = PR.BN_X
M = PR.PAIRING_POWER
rng = random.Random(20261129)


# --- conversions -------------------------------------------------------------------------


def mont(x):
    return int_to_limb_tuple(x * MONT_R % q)


def unmont(limbs):
    return sum(int(v) << (64 * i) for i, v in enumerate(limbs)) * pow(MONT_R, -1, q) % q


to_dev = PR.fq12_to_array  # nested ints [[[c0, c1] x3] x2] -> (2, 3, 2, 4) Montgomery limbs
from_dev = PR.fq12_from_array


# Compiled entry points over arrays (device functions take and return register tuples).
@njit(cache=True)
def k_mul(a, b):
    out = np.empty_like(a)
    PR.fq12_store(out, fq12_mul(PR.fq12_load(a), PR.fq12_load(b)))
    return out


@njit(cache=True)
def k_unary(op, a):
    """op: 0 sqr, 1 inv, 2 frobenius, 3 frobenius2, 4 frobenius3, 5 conj, 6 cyclotomic sqr,
    7 easy part of the final exponentiation."""
    f = PR.fq12_load(a)
    if op == 0:
        f = fq12_sqr(f)
    elif op == 1:
        f = fq12_inv(f)
    elif op == 2:
        f = fq12_frobenius(f)
    elif op == 3:
        f = fq12_frobenius2(f)
    elif op == 4:
        f = fq12_frobenius3(f)
    elif op == 5:
        f = fq12_conj(f)
    elif op == 6:
        f = fq12_cyclotomic_sqr(f)
    else:
        g = fq12_mul(fq12_conj(f), fq12_inv(f))
        f = fq12_mul(fq12_frobenius2(g), g)
    out = np.empty_like(a)
    PR.fq12_store(out, f)
    return out


SQR, INV, FROB1, FROB2, FROB3, CONJ, CYC_SQR, EASY = range(8)


@njit(cache=True)
def k_mul_line(a, ls):
    """a * (l0 + l1 w + l3 w^3), ls a (3, 2, 4) array of the three Fq2 coefficients."""
    l0 = (
        (ls[0, 0, 0], ls[0, 0, 1], ls[0, 0, 2], ls[0, 0, 3]),
        (ls[0, 1, 0], ls[0, 1, 1], ls[0, 1, 2], ls[0, 1, 3]),
    )
    l1 = (
        (ls[1, 0, 0], ls[1, 0, 1], ls[1, 0, 2], ls[1, 0, 3]),
        (ls[1, 1, 0], ls[1, 1, 1], ls[1, 1, 2], ls[1, 1, 3]),
    )
    l3 = (
        (ls[2, 0, 0], ls[2, 0, 1], ls[2, 0, 2], ls[2, 0, 3]),
        (ls[2, 1, 0], ls[2, 1, 1], ls[2, 1, 2], ls[2, 1, 3]),
    )
    out = np.empty_like(a)
    PR.fq12_store(out, fq12_mul_line(PR.fq12_load(a), l0, l1, l3))
    return out


@njit(cache=True)
def k_twist(op, qs, ps, out):
    """On the twist, for Q = qs[0], R = qs[1], P = ps[0]; writes an affine point to out:
    op 0: pi(Q), 1: -pi^2(Q), 2: the Miller doubling step's 2Q, 3: the addition step's Q + R,
    4: [k]Q for k = ps[1, 0] as plain limbs (the group law of cuzk.arith.curve)."""
    xq, yq = PR._fq2_at(qs, 0, 0), PR._fq2_at(qs, 0, 1)
    xP, yP = PR._fq_at(ps, 0, 0), PR._fq_at(ps, 0, 1)
    one = PR.FQ2_ONE_M
    if op == 0:
        x, y = PR.twist_frobenius(xq, yq)
    elif op == 1:
        x, y = PR.twist_frobenius2_neg(xq, yq)
    elif op == 4:
        x, y = g2_to_affine(g2_mul(g2_from_affine((xq, yq)), PR._fq_at(ps, 1, 0)))
    else:
        if op == 2:
            T, l0, l1, l3 = PR.miller_dbl_step((xq, yq, one), xP, yP)
        else:
            T, l0, l1, l3 = PR.miller_add_step(
                (xq, yq, one), PR._fq2_at(qs, 1, 0), PR._fq2_at(qs, 1, 1), xP, yP
            )
        zi = fq2_inv(T[2])  # homogeneous projective: x = X/Z, y = Y/Z
        x, y = fq2_mul(T[0], zi), fq2_mul(T[1], zi)
    PR._fq2_put(out, 0, 0, x)
    PR._fq2_put(out, 0, 1, y)


def twist_op(op, Q, R_=None, P=G1_GENERATOR, k=0):
    out = np.zeros((1, 2, 2, 4), dtype=np.uint64)
    ps = PR.g1_array([P, (k, 0)])
    ps[1, 0] = np.array(int_to_limb_tuple(k), dtype=np.uint64)
    k_twist(op, PR.g2_array([Q, R_ if R_ is not None else Q]), ps, out)
    return tuple(tuple(unmont(out[0, j, h]) for h in range(2)) for j in range(2))


def rand_fq12():
    return [[[rng.randrange(q), rng.randrange(q)] for _ in range(3)] for _ in range(2)]


def py_g1(p):
    return (bn.FQ(p[0]), bn.FQ(p[1]), bn.FQ(1))


def py_g2(p):
    return (bn.FQ2(list(p[0])), bn.FQ2(list(p[1])), bn.FQ2.one())


G1 = tuple(G1_GENERATOR)
G2 = tuple(tuple(c) for c in G2_GENERATOR)


# --- the tower ---------------------------------------------------------------------------


def test_basis_change_is_a_ring_isomorphism_on_u_and_w():
    # u^2 = -1 and w^6 = xi map to the same relations in py_ecc's Fq12.
    u = [[[0, 1], [0, 0], [0, 0]], [[0, 0], [0, 0], [0, 0]]]
    w = [[[0, 0], [0, 0], [0, 0]], [[1, 0], [0, 0], [0, 0]]]
    assert to_py_ecc(u) ** 2 == -bn.FQ12.one()
    xi = [[[9, 1], [0, 0], [0, 0]], [[0, 0], [0, 0], [0, 0]]]
    assert to_py_ecc(w) ** 6 == to_py_ecc(xi)


def test_fq12_arithmetic_matches_py_ecc():
    for _ in range(3):
        a, b = rand_fq12(), rand_fq12()
        da, db = to_dev(a), to_dev(b)
        pa, pb = to_py_ecc(a), to_py_ecc(b)
        assert to_py_ecc(from_dev(k_mul(da, db))) == pa * pb
        assert to_py_ecc(from_dev(k_unary(SQR, da))) == pa * pa
        assert to_py_ecc(from_dev(k_unary(INV, da))) == pa.inv()
        assert to_py_ecc(from_dev(k_mul(k_unary(INV, da), da))) == bn.FQ12.one()


def test_frobenius_maps_are_powers_of_q():
    a = rand_fq12()
    da, pa = to_dev(a), to_py_ecc(a)
    f1 = pa**q
    f2 = f1**q
    f3 = f2**q
    assert to_py_ecc(from_dev(k_unary(FROB1, da))) == f1
    assert to_py_ecc(from_dev(k_unary(FROB2, da))) == f2
    assert to_py_ecc(from_dev(k_unary(FROB3, da))) == f3
    # conjugation is the q^6 power
    assert from_dev(k_unary(CONJ, da)) == from_dev(k_unary(FROB3, k_unary(FROB3, da)))


def test_sparse_line_product_equals_full_product():
    a = rand_fq12()
    l0, l1, l3 = ([rng.randrange(q), rng.randrange(q)] for _ in range(3))
    line = [[l0, [0, 0], [0, 0]], [l1, l3, [0, 0]]]  # l0 + l1 w + l3 w^3
    da = to_dev(a)
    ls = np.array([[mont(c) for c in l_] for l_ in (l0, l1, l3)], dtype=np.uint64)
    assert from_dev(k_mul_line(da, ls)) == from_dev(k_mul(da, to_dev(line)))


def test_cyclotomic_square_on_the_cyclotomic_subgroup():
    da = to_dev(rand_fq12())
    # g = a^((q^6 - 1)(q^2 + 1)) lies in the cyclotomic subgroup
    g = k_unary(EASY, da)
    assert to_py_ecc(from_dev(g)) == to_py_ecc(from_dev(da)) ** ((q**6 - 1) * (q**2 + 1))
    assert from_dev(k_unary(CYC_SQR, g)) == from_dev(k_unary(SQR, g))
    assert from_dev(k_unary(CYC_SQR, da)) != from_dev(k_unary(SQR, da))  # only there
    # and its inverse is its conjugate
    assert to_py_ecc(from_dev(k_mul(g, k_unary(CONJ, g)))) == bn.FQ12.one()


# --- exponents and twist maps ------------------------------------------------------------


def test_final_exponent_chain_is_m_times_the_hard_exponent():
    """The hard-part chain computes g^(l0 + l1 q + l2 q^2 + l3 q^3); on the cyclotomic
    subgroup (order Phi_12(q) = q^4 - q^2 + 1) that is g^(M (q^4 - q^2 + 1)/r)."""
    phi12 = q**4 - q**2 + 1
    assert phi12 % r == 0
    lam0 = 12 * X**3 + 12 * X**2 + 6 * X + 1
    lam1 = 12 * X**3 + 6 * X**2 + 4 * X
    lam2 = 12 * X**3 + 6 * X**2 + 6 * X
    lam3 = 12 * X**3 + 6 * X**2 + 4 * X - 1
    chain = lam0 + lam1 * q + lam2 * q**2 + lam3 * q**3
    assert (chain - M * (phi12 // r)) % phi12 == 0
    assert M == 2 * X * (6 * X**2 + 3 * X + 1)
    import math

    assert math.gcd(M, r) == 1  # so e^M is still non-degenerate


def test_ate_naf_digits():
    digits = [int(d) for d in PR.ATE_NAF]
    value = 1
    for d in digits:
        value = 2 * value + d
    assert value == 6 * X + 2
    assert all(not (a and b) for a, b in zip(digits, digits[1:], strict=False))


def test_twist_frobenius_is_multiplication_by_q():
    """pi(Q) = [q]Q and -pi^2(Q) = [-q^2]Q for Q in G2 (q acts as q mod r)."""
    Q = g2_affine(bn.multiply(bn.G2, rng.randrange(1, r)))
    assert twist_op(0, Q) == g2_affine(bn.multiply(py_g2(Q), q % r))
    assert twist_op(1, Q) == g2_affine(bn.multiply(py_g2(Q), (-q * q) % r))
    assert twist_op(4, Q, k=q % r) == twist_op(0, Q)  # and cuzk's own G2 law agrees


def test_miller_steps_move_the_point_like_the_group_law():
    Q = g2_affine(bn.multiply(bn.G2, 7))
    R_ = g2_affine(bn.multiply(bn.G2, 11))
    assert twist_op(2, Q) == g2_affine(bn.multiply(bn.G2, 14))
    assert twist_op(3, Q, R_) == g2_affine(bn.multiply(bn.G2, 18))


# --- the pairing -------------------------------------------------------------------------


@pytest.mark.parametrize("a,b", [(1, 1), (0x1234567, 0xABCDEF0123)])
def test_pairing_equals_py_ecc_to_the_power_m(a, b):
    """Ours = py_ecc's (exponent (q^12 - 1)/r) raised to M = 2x(6x^2 + 3x + 1)."""
    Pp, Qp = bn.multiply(bn.G1, a), bn.multiply(bn.G2, b)
    ours = to_py_ecc(PR.pairing(g1_affine(Pp), g2_affine(Qp)))
    ref = bn.pairing(Qp, Pp)
    assert ours == ref**M
    assert ours != bn.FQ12.one()


def test_bilinearity_and_order():
    a, b = rng.randrange(1, r), rng.randrange(1, r)
    P, Q = G1, G2
    aP = g1_affine(bn.multiply(bn.G1, a))
    bQ = g2_affine(bn.multiply(bn.G2, b))
    abP = g1_affine(bn.multiply(bn.G1, a * b % r))
    abQ = g2_affine(bn.multiply(bn.G2, a * b % r))
    e_ab = PR.pairing(aP, bQ)
    assert e_ab == PR.pairing(abP, Q) == PR.pairing(P, abQ)
    e = to_py_ecc(PR.pairing(P, Q))
    assert to_py_ecc(e_ab) == e ** (a * b % r)
    assert e**r == bn.FQ12.one()  # values lie in the order-r subgroup
    assert e != bn.FQ12.one()  # non-degenerate


def test_infinity_contributes_one():
    one = [[[1, 0], [0, 0], [0, 0]], [[0, 0], [0, 0], [0, 0]]]
    assert PR.pairing(None, G2) == one
    assert PR.pairing(G1, None) == one
    assert PR.multi_pairing([(G1, G2), (None, G2)]) == PR.pairing(G1, G2)


def test_multi_pairing_is_the_product_and_agrees_with_py_ecc_on_is_one():
    a = rng.randrange(1, r)
    aP = g1_affine(bn.multiply(bn.G1, a))
    aQ = g2_affine(bn.multiply(bn.G2, a))
    negP = g1_affine(bn.neg(bn.G1))
    prod = PR.multi_pairing([(aP, G2), (G1, aQ)])
    want = k_mul(to_dev(PR.pairing(aP, G2)), to_dev(PR.pairing(G1, aQ)))
    assert prod == from_dev(want)

    # e(aP, Q) e(-P, aQ) = 1, and a wrong scalar breaks it; py_ecc says the same
    good = [(aP, G2), (negP, aQ)]
    bad = [(aP, G2), (negP, g2_affine(bn.multiply(bn.G2, a + 1)))]
    for pairs, expected in ((good, True), (bad, False)):
        assert PR.pairing_check(pairs) is expected
        f = bn.FQ12.one()
        for p, qq in pairs:
            f = f * bn.pairing(py_g2(qq), py_g1(p), final_exponentiate=False)
        assert (final_exponentiate(f) == bn.FQ12.one()) is expected


def test_arrays_round_trip():
    c = rand_fq12()
    assert PR.fq12_from_array(PR.fq12_to_array(c)) == c
    arr = PR.g1_array([G1, None])
    assert not arr[1].any() and unmont(arr[0, 0]) == G1[0]


# --- snarkjs's values ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tiny", "mulchain", "bits", "toyhash"])
def test_alphabeta_12_matches_snarkjs_verification_keys(circuit_named, name):
    """vk_alphabeta_12 in the committed fixtures was written by `snarkjs zkey export
    verificationkey` (wasmcurves' pairing)."""
    vk = json.loads(circuit_named(name).vk.read_text())
    alpha = tuple(int(v) for v in vk["vk_alpha_1"][:2])
    beta = tuple(tuple(int(v) for v in c) for c in vk["vk_beta_2"][:2])
    assert fq12_to_json(PR.pairing(alpha, beta)) == vk["vk_alphabeta_12"]


def test_pairing_values_are_reduced():
    f = PR.fq12_to_array(PR.pairing(G1, G2))
    assert f.dtype == np.uint64
    for c in np.array(PR.pairing(G1, G2), dtype=object).ravel():
        assert 0 <= c < q
