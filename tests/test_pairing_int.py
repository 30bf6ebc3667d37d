"""The Python-int pairing (cuzk.arith.pairing_int) against outside references: py_ecc's tower
(through the basis change of tests/reference.py), py_ecc's pairing raised to M, snarkjs's
vk_alphabeta_12 in the committed keys, the compiled pairing's values, and [r]Q = O for the
fast G2 subgroup test. No numpy or numba is needed by the module itself."""

import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from py_ecc import optimized_bn128 as bn
from reference import fq12_to_py_ecc as to_py_ecc
from reference import g1_affine, g2_affine, random_fq12, twist_affine

from cuzk.arith import pairing_int as PI
from cuzk.arith.constants import (
    FQ_MODULUS,
    FR_MODULUS,
    G1_GENERATOR,
    G2_B,
    G2_GENERATOR,
    fq2_pow_int,
)
from cuzk.arith.constants import fq2_mul_int as f2mul

q, r = FQ_MODULUS, FR_MODULUS
M = 2 * PI.X * (6 * PI.X**2 + 3 * PI.X + 1)  # ours = py_ecc's ** M
rng = random.Random(20261202)
G1 = tuple(G1_GENERATOR)
G2 = tuple(tuple(c) for c in G2_GENERATOR)
scalars = st.integers(min_value=1, max_value=r - 1)


def twist_points(n):
    """n random points of the twist E'(Fq2) (almost surely outside G2: the cofactor is huge)."""
    out = []
    while len(out) < n:
        x = (rng.randrange(q), rng.randrange(q))
        x3 = f2mul(f2mul(x, x), x)
        rhs = ((x3[0] + G2_B[0]) % q, (x3[1] + G2_B[1]) % q)
        y = _fq2_sqrt(rhs)
        if y is not None:
            out.append((x, y))
    return out


def _fq2_sqrt(a):
    """A square root in Fq2 (q = 3 mod 4; Adj and Rodriguez-Henriquez 2012, Alg. 9) or None."""
    a1 = fq2_pow_int(a, (q - 3) // 4)
    alpha = f2mul(f2mul(a1, a1), a)
    x0 = f2mul(a1, a)
    if alpha == (q - 1, 0):
        x = f2mul((0, 1), x0)
    else:
        x = f2mul(fq2_pow_int(((1 + alpha[0]) % q, alpha[1]), (q - 1) // 2), x0)
    return x if f2mul(x, x) == a else None


# --- the tower -------------------------------------------------------------------------------


def test_fq12_arithmetic_matches_py_ecc():
    for _ in range(3):
        a, b = random_fq12(rng, q), random_fq12(rng, q)
        pa, pb = to_py_ecc(a), to_py_ecc(b)
        assert to_py_ecc(PI.fq12_mul(a, b)) == pa * pb
        assert to_py_ecc(PI.fq12_sqr(a)) == pa * pa
        assert to_py_ecc(PI.fq12_inv(a)) == pa.inv()
        assert PI.fq12_mul(PI.fq12_inv(a), a) == PI.FQ12_ONE


def test_frobenius_maps_are_powers_of_q():
    a = random_fq12(rng, q)
    f = to_py_ecc(a)
    for n in (1, 2, 3):
        f = f**q
        assert to_py_ecc(PI.fq12_frobenius(a, n)) == f
    assert PI.fq12_frobenius(PI.fq12_frobenius(a, 3), 3) == PI.fq12_conj(a)  # q^6


def test_sparse_line_product_equals_full_product():
    a = random_fq12(rng, q)
    l0, l1, l3 = ((rng.randrange(q), rng.randrange(q)) for _ in range(3))
    line = ((l0, (0, 0), (0, 0)), (l1, l3, (0, 0)))  # l0 + l1 w + l3 w^3
    assert PI.fq12_mul_line(a, l0, l1, l3) == PI.fq12_mul(a, line)


def test_cyclotomic_square_on_the_cyclotomic_subgroup():
    a = random_fq12(rng, q)
    # g = a^((q^6 - 1)(q^2 + 1)) lies in the cyclotomic subgroup
    f1 = PI.fq12_mul(PI.fq12_conj(a), PI.fq12_inv(a))
    g = PI.fq12_mul(PI.fq12_frobenius(f1, 2), f1)
    assert to_py_ecc(g) == to_py_ecc(a) ** ((q**6 - 1) * (q**2 + 1))
    assert PI.fq12_cyclotomic_sqr(g) == PI.fq12_sqr(g)
    assert PI.fq12_cyclotomic_sqr(a) != PI.fq12_sqr(a)  # only there
    assert PI.fq12_mul(g, PI.fq12_conj(g)) == PI.FQ12_ONE


def test_constants():
    assert PI.ATE_LOOP_COUNT == sum(d << i for i, d in enumerate(PI._naf(PI.ATE_LOOP_COUNT)))
    assert all(
        x == 0 or x * y == 0 for x, y in zip(PI.ATE_NAF, PI.ATE_NAF[1:], strict=False)
    )  # NAF
    assert int("1" + "".join(map(str, PI.X_BITS)), 2) == PI.X
    xi = (9, 1)
    for k in range(6):
        assert PI.GAMMA1[k] == fq2_pow_int(xi, k * (q - 1) // 6)
        assert (PI.GAMMA2[k], 0) == fq2_pow_int(xi, k * (q**2 - 1) // 6)
        assert PI.GAMMA3[k] == fq2_pow_int(xi, k * (q**3 - 1) // 6)


# --- the pairing -----------------------------------------------------------------------------


def test_pairing_equals_py_ecc_to_the_power_m():
    a, b = 0x1234567, 0xABCDEF0123
    Pp, Qp = bn.multiply(bn.G1, a), bn.multiply(bn.G2, b)
    ours = to_py_ecc(PI.multi_pairing([(g1_affine(Pp), g2_affine(Qp))]))
    assert ours == bn.pairing(Qp, Pp) ** M
    assert ours != bn.FQ12.one()


@pytest.mark.parametrize("name", ["tiny", "mulchain", "bits", "toyhash"])
def test_alphabeta_12_matches_snarkjs_verification_keys(circuit_named, name):
    """vk_alphabeta_12 of the committed keys was written by snarkjs (wasmcurves' pairing)."""
    vk = json.loads(circuit_named(name).vk.read_text())
    alpha = tuple(int(v) for v in vk["vk_alpha_1"][:2])
    beta = tuple(tuple(int(v) for v in c) for c in vk["vk_beta_2"][:2])
    got = PI.multi_pairing([(alpha, beta)])
    assert [[[str(c0), str(c1)] for c0, c1 in f6] for f6 in got] == vk["vk_alphabeta_12"]


@settings(max_examples=3, deadline=None)
@given(a=scalars, b=scalars)
def test_bilinearity_and_products(a, b):
    aP = g1_affine(bn.multiply(bn.G1, a))
    bQ = g2_affine(bn.multiply(bn.G2, b))
    abP = g1_affine(bn.multiply(bn.G1, a * b % r))
    e_ab = PI.multi_pairing([(aP, bQ)])
    assert e_ab == PI.multi_pairing([(abP, G2)])
    # e(aP, bQ) e(-abP, Q) = 1 as one product; a wrong scalar breaks it
    neg_abP = (abP[0], q - abP[1])
    assert PI.pairing_product_is_one([(aP, bQ), (neg_abP, G2)])
    assert not PI.pairing_product_is_one([(aP, bQ), (neg_abP, G2), (G1, G2)])
    # the product of the values is the value of the product (one final exponentiation)
    assert PI.multi_pairing([(aP, bQ), (G1, G2)]) == PI.fq12_mul(e_ab, PI.multi_pairing([(G1, G2)]))


def test_infinity_contributes_one():
    assert PI.multi_pairing([(None, G2)]) == PI.FQ12_ONE
    assert PI.multi_pairing([(G1, None)]) == PI.FQ12_ONE
    assert PI.multi_pairing([(G1, G2), (None, G2)]) == PI.multi_pairing([(G1, G2)])


def test_values_equal_the_compiled_pairing():
    from cuzk.arith import pairing as PR

    pairs = [
        (g1_affine(bn.multiply(bn.G1, rng.randrange(1, r))), g2_affine(bn.multiply(bn.G2, k)))
        for k in (rng.randrange(1, r), rng.randrange(1, r))
    ]
    got = PI.multi_pairing(pairs)
    assert [[list(c) for c in f6] for f6 in got] == PR.multi_pairing(pairs)


# --- the groups ------------------------------------------------------------------------------


@settings(max_examples=5, deadline=None)
@given(ks=st.lists(st.integers(min_value=0, max_value=r - 1), min_size=1, max_size=4))
def test_g1_linear_combination_matches_py_ecc(ks):
    points = [g1_affine(bn.multiply(bn.G1, i + 2)) for i in range(len(ks))]
    want = None
    for i, k in enumerate(ks):
        term = bn.multiply(bn.G1, (i + 2) * k % r)
        want = term if want is None else bn.add(want, term)
    assert PI.g1_linear_combination(points, ks) == g1_affine(want)


def test_g1_linear_combination_edges():
    negG = (G1[0], q - G1[1])
    assert PI.g1_linear_combination([G1, negG], [1, 1]) is None  # P + (-P) = O
    assert PI.g1_linear_combination([G1, G1], [1, 1]) == g1_affine(
        bn.multiply(bn.G1, 2)
    )  # doubling
    assert PI.g1_linear_combination([G1, None], [3, 5]) == g1_affine(bn.multiply(bn.G1, 3))
    assert PI.g1_linear_combination([G1], [r]) is None


def test_g2_subgroup_test_agrees_with_the_order():
    """El Housni et al.'s test against [r]Q = O: points of G2, random twist points, points of
    the cofactor part ([r]P, order dividing c2 = 2q - r) and sums of both."""
    inside = [G2, g2_affine(bn.multiply(bn.G2, rng.randrange(1, r))), None]
    outside = twist_points(4)
    cofactor_part = [twist_affine(PI, PI.g2_mul_jacobian((p[0], p[1], (1, 0)), r)) for p in outside]
    mixed = [
        twist_affine(PI, PI.g2_add_jacobian((G2[0], G2[1], (1, 0)), (c[0], c[1], (1, 0))))
        for c in cofactor_part
    ]
    cleared = [
        twist_affine(PI, PI.g2_mul_jacobian((p[0], p[1], (1, 0)), 2 * q - r)) for p in outside
    ]
    for p in inside + cleared:
        assert PI.g2_in_subgroup(p) and PI.g2_in_subgroup_by_order(p)
    for p in outside + cofactor_part + mixed:
        assert p is not None
        assert not PI.g2_in_subgroup(p) and not PI.g2_in_subgroup_by_order(p)
        assert not bn.is_inf(bn.multiply((bn.FQ2(p[0]), bn.FQ2(p[1]), bn.FQ2.one()), r))


def test_imports_neither_numpy_nor_numba():
    code = (
        "import sys; import cuzk.arith.pairing_int; "
        "assert 'numpy' not in sys.modules and 'numba' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
