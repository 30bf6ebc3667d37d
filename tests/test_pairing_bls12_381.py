"""The compiled pairing (cuzk.arith.pairing) built for BLS12-381 (curve="bls12_381", CPU) against
the Python-int pairing's BLS12-381 build (checked against py_ecc in
tests/test_pairing_int_bls12_381.py): equal values, products of pairings as Groth16's check uses
them, infinity, and the entry points named apart from BN254's."""

import random

import pytest

from cuzk.arith import pairing as PR_BN
from cuzk.arith import pairing_int
from cuzk.arith.bls12_381 import FQ_MODULUS, FR_MODULUS, G1_GENERATOR, G2_GENERATOR, X
from cuzk.arith.jit import get_target

PI = pairing_int.for_curve("bls12_381")
q, r = FQ_MODULUS, FR_MODULUS
G1 = tuple(G1_GENERATOR)
G2 = tuple(tuple(c) for c in G2_GENERATOR)
rng = random.Random(20261203)


@pytest.fixture(scope="module")
def PR():
    return get_target("cpu").load("cuzk.arith.pairing", curve="bls12_381")


def g1(k):
    return PI.g1_linear_combination([G1], [k])


def g2(k):
    x, y, z = PI.g2_mul_jacobian((G2[0], G2[1], (1, 0)), k)
    zi = PI.fq2_inv(z)
    zi2 = PI.fq2_sqr(zi)
    return (PI.fq2_mul(x, zi2), PI.fq2_mul(y, PI.fq2_mul(zi2, zi)))


def as_lists(f):
    return [[list(c) for c in f6] for f6 in f]


def test_build(PR):
    assert (PR.CURVE, PR.NQ, PR.FAMILY, PR.ATE_LOOP_COUNT) == ("bls12_381", 6, "bls12", -X)
    assert PR.PAIRING_POWER == PI.PAIRING_POWER == 3
    names = {PR.miller_loop.py_func.__qualname__, PR.pairing_product.py_func.__qualname__}
    assert names == {"miller_loop_bls12_381", "pairing_product_bls12_381"}
    assert PR_BN.miller_loop.py_func.__qualname__ == "miller_loop"  # BN254's keeps its name


def test_values_equal_the_python_int_pairing(PR):
    pairs = [(g1(rng.randrange(1, r)), g2(rng.randrange(1, r))) for _ in range(2)]
    assert PR.multi_pairing(pairs[:1]) == as_lists(PI.multi_pairing(pairs[:1]))
    assert PR.multi_pairing(pairs) == as_lists(PI.multi_pairing(pairs))
    e = PR.pairing(G1, G2)
    assert e == as_lists(PI.multi_pairing([(G1, G2)])) and e != as_lists(PI.FQ12_ONE)


def test_groth16_shaped_product(PR):
    """e(-A, B) e(alpha, beta) e(L, gamma) e(C, delta) = 1 for a b = al be + l ga + c de."""
    al, be, ga, de, l_, c_, b = (rng.randrange(1, r) for _ in range(7))
    a = (al * be + l_ * ga + c_ * de) * pow(b, -1, r) % r
    pairs = [(g1(r - a), g2(b)), (g1(al), g2(be)), (g1(l_), g2(ga)), (g1(c_), g2(de))]
    assert PR.pairing_check(pairs)
    assert not PR.pairing_check(pairs[:3] + [(g1(c_ + 1), g2(de))])
    assert not PR.pairing_check(pairs[1:])


def test_infinity_contributes_one(PR):
    assert PR.pairing_check([(None, G2)]) and PR.pairing_check([(G1, None)])
    assert PR.multi_pairing([(G1, G2), (None, G2)]) == PR.pairing(G1, G2)
