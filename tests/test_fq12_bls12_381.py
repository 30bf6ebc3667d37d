"""The compiled Fq6/Fq12 tower (cuzk.arith.fq12) built for BLS12-381 (build parameter
curve="bls12_381", 6-limb Fq) on the CPU target, against the Python-int tower of
cuzk.arith.pairing_int's BLS12-381 build (itself checked against py_ecc in
tests/test_pairing_int_bls12_381.py): products, squares, inverses, Frobenius maps, conjugation,
cyclotomic squaring, multiplication by xi and the M-type sparse line product."""

import random

import numpy as np
import pytest
from reference import random_fq12

from cuzk.arith import pairing_int
from cuzk.arith.bls12_381 import FQ_MODULUS
from cuzk.arith.jit import get_target
from cuzk.arith.radix import int_to_limb_tuple, limbs_to_int

PI = pairing_int.for_curve("bls12_381")
q = FQ_MODULUS
MONT_R = 1 << 384
R_INV = pow(MONT_R, -1, q)
rng = random.Random(20261203)


@pytest.fixture(scope="module")
def K():
    return get_target("cpu").load("cuzk.arith.fq12", curve="bls12_381")


def m(x):
    return int_to_limb_tuple(x * MONT_R % q, 6)


def um(limbs):
    return limbs_to_int([np.uint64(v) for v in limbs]) * R_INV % q


def to_dev(a):
    """A nested tuple of ints (pairing_int's layout) as Montgomery limb tuples."""
    if isinstance(a, int):
        return m(a)
    return tuple(to_dev(c) for c in a)


def from_dev(a, depth):
    """Back to ints; depth 1 = Fq2, 2 = Fq6, 3 = Fq12."""
    if depth == 0:
        return um(a)
    return tuple(from_dev(c, depth - 1) for c in a)


def rand_fq2():
    return (rng.randrange(q), rng.randrange(q))


def cyclotomic(a):
    f1 = PI.fq12_mul(PI.fq12_conj(a), PI.fq12_inv(a))
    return PI.fq12_mul(PI.fq12_frobenius(f1, 2), f1)


def test_build_is_bls12_381(K):
    assert K.CURVE == "bls12_381" and K.XI == (1, 1)
    assert len(K.GAMMA2[1]) == 6
    assert from_dev(K.GAMMA1, 2) == PI.GAMMA1
    assert tuple(um(g) for g in K.GAMMA2) == PI.GAMMA2
    assert from_dev(K.GAMMA3, 2) == PI.GAMMA3


def test_tower_matches_python_ints(K):
    a, b = random_fq12(rng, q), random_fq12(rng, q)
    da, db = to_dev(a), to_dev(b)
    assert from_dev(K.fq12_mul(da, db), 3) == PI.fq12_mul(a, b)
    assert from_dev(K.fq12_sqr(da), 3) == PI.fq12_sqr(a)
    assert from_dev(K.fq12_inv(da), 3) == PI.fq12_inv(a)
    assert from_dev(K.fq12_conj(da), 3) == PI.fq12_conj(a)
    assert from_dev(K.fq12_frobenius(da), 3) == PI.fq12_frobenius(a, 1)
    assert from_dev(K.fq12_frobenius2(da), 3) == PI.fq12_frobenius(a, 2)
    assert from_dev(K.fq12_frobenius3(da), 3) == PI.fq12_frobenius(a, 3)
    x = rand_fq2()
    assert from_dev(K.fq2_mul_xi(to_dev(x)), 1) == PI._fq2_mul_xi(x)
    assert from_dev(K.fq6_mul(da[0], db[0]), 2) == PI.fq6_mul(a[0], b[0])
    assert from_dev(K.fq6_inv(da[0]), 2) == PI.fq6_inv(a[0])


def test_sparse_lines_and_cyclotomic_square(K):
    a = random_fq12(rng, q)
    l0, l2, l3 = rand_fq2(), rand_fq2(), rand_fq2()
    got = K.fq12_mul_line_m(to_dev(a), to_dev(l0), to_dev(l2), to_dev(l3))
    assert from_dev(got, 3) == PI.fq12_mul_line_m(a, l0, l2, l3)
    got = K.fq12_mul_line(to_dev(a), to_dev(l0), to_dev(l2), to_dev(l3))
    assert from_dev(got, 3) == PI.fq12_mul_line(a, l0, l2, l3)
    g = cyclotomic(a)
    assert from_dev(K.fq12_cyclotomic_sqr(to_dev(g)), 3) == PI.fq12_sqr(g)
