"""G1 and G2 arithmetic against py_ecc (an independent pure-Python BN254), on both targets.

Each property has one body, run for the CPU batch kernels and the CUDA ones (simulator here,
GPU when present; small batches there) and for both groups. Inputs are points k*G computed
by py_ecc, put into Jacobian form with a random Z (so the formulas see Z != 1), and results
are compared as affine integers computed by Python arithmetic (cuzk.arith.convert).
"""

import random
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py_ecc import optimized_bn128 as ob
from reference import GENERAL, paired

import cuzk.arith as bn
from cuzk.arith import convert as cv
from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS

TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
# where numba's CUDA simulator (no GPU) takes over 10 s for the cuda case
TARGETS_SLOW_SIM = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.slow])]
GROUPS = ["g1", "g2"]


def examples(target):
    """Hypothesis examples and largest batch per target (the simulator runs Python)."""
    return (20, 4) if target == "cpu" else (3, 2)


def run(prop, target, *strategies):
    n_examples, _ = examples(target)
    settings(
        max_examples=n_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )(given(*strategies)(prop))()


def scalars(target, min_size=1):
    edges = st.sampled_from([0, 1, 2, 3, FR_MODULUS - 1, FR_MODULUS - 2])
    k = st.one_of(edges, st.integers(0, FR_MODULUS - 1))
    return st.lists(k, min_size=min_size, max_size=examples(target)[1])


@dataclass(frozen=True)
class Group:
    """py_ecc view of one group and its limb-array layout here."""

    name: str
    gen: tuple
    field: type
    affine_width: int
    jac_width: int

    def point(self, k):
        return ob.multiply(self.gen, k % FR_MODULUS)

    def ints(self, P):
        """py_ecc point -> affine integers in convert's form (None at infinity)."""
        if ob.is_inf(P):
            return None
        x, y = ob.normalize(P)
        if self.name == "g1":
            return (int(x), int(y))
        return (tuple(int(c) for c in x.coeffs), tuple(int(c) for c in y.coeffs))

    def affine_array(self, points):
        ints = [self.ints(P) for P in points]
        return cv.g1_array(ints) if self.name == "g1" else cv.g2_array(ints)

    def jacobian_array(self, points, rng):
        """Jacobian rows (X, Y, Z) = (x l^2, y l^3, l) for a random l != 0; infinity as
        (1, 1, 0)."""
        rows = []
        for P in points:
            if ob.is_inf(P):
                X, Y, Z = self.field.one(), self.field.one(), self.field.zero()
            else:
                x, y = ob.normalize(P)
                if self.name == "g1":
                    lam = self.field(rng.randrange(1, FQ_MODULUS))
                else:
                    lam = self.field([rng.randrange(1, FQ_MODULUS), rng.randrange(FQ_MODULUS)])
                X, Y, Z = x * lam**2, y * lam**3, lam
            rows.append([X, Y, Z])
        if self.name == "g1":
            return cv.fq_array([int(c) for r in rows for c in r]).reshape(len(points), 12)
        coeffs = [tuple(int(v) for v in c.coeffs) for r in rows for c in r]
        return cv.fq2_array(coeffs).reshape(len(points), 24)

    def jacobian_to_ints(self, arr):
        if self.name == "g1":
            return cv.g1_jacobian_to_ints(arr)
        return cv.g2_jacobian_to_ints(arr)

    def affine_to_ints(self, arr):
        return cv.g1_array_to_ints(arr) if self.name == "g1" else cv.g2_array_to_ints(arr)


G = {
    "g1": Group("g1", ob.G1, ob.FQ, 8, 12),
    "g2": Group("g2", ob.G2, ob.FQ2, 16, 24),
}


def op(target, group, name):
    return getattr(bn.batch(target), f"{group}_{name}")


# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS)
def test_add_matches_py_ecc(target, group):
    """Jacobian + Jacobian, including P = Q (doubling through add), P = -Q and infinity."""
    g = G[group]

    def prop(ks, ls, relation, seed):
        rng = random.Random(seed)
        ks, ls = paired(ks, ls, relation)
        P = [g.point(k) for k in ks]
        Q = [g.point(m) for m in ls]
        out = op(target, group, "add")(g.jacobian_array(P, rng), g.jacobian_array(Q, rng))
        assert g.jacobian_to_ints(out) == [g.ints(ob.add(p, q)) for p, q in zip(P, Q, strict=True)]

    run(
        prop,
        target,
        scalars(target),
        scalars(target),
        st.sampled_from(["any", "equal", "opposite"]),
        st.integers(0, 2**32),
    )


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS)
def test_add_mixed_matches_py_ecc(target, group):
    """Jacobian + affine: a = (0, 0), P at infinity, P = a, P = -a, and the general case."""
    g = G[group]

    def prop(ks, ls, relation, seed):
        rng = random.Random(seed)
        ks, ls = paired(ks, ls, relation)
        P = [g.point(k) for k in ks]
        A = [g.point(m) for m in ls]
        out = op(target, group, "add_mixed")(g.jacobian_array(P, rng), g.affine_array(A))
        assert g.jacobian_to_ints(out) == [g.ints(ob.add(p, a)) for p, a in zip(P, A, strict=True)]

    run(
        prop,
        target,
        scalars(target),
        scalars(target),
        st.sampled_from(["any", "equal", "opposite"]),
        st.integers(0, 2**32),
    )


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS)
def test_add_affine_matches_py_ecc(target, group):
    """affine + affine -> Jacobian and -> affine (the batch entry point)."""
    g = G[group]

    def prop(ks, ls):
        ks, ls = paired(ks, ls)
        A = [g.point(k) for k in ks]
        B = [g.point(m) for m in ls]
        expect = [g.ints(ob.add(a, b)) for a, b in zip(A, B, strict=True)]
        add_affine = op(target, group, "add_affine")
        a, b = g.affine_array(A), g.affine_array(B)
        assert g.jacobian_to_ints(add_affine(a, b)) == expect
        assert g.affine_to_ints(add_affine(a, b, affine=True)) == expect

    run(prop, target, scalars(target), scalars(target))


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS)
def test_dbl_neg_and_affine_round_trip(target, group):
    g = G[group]

    def prop(ks, seed):
        rng = random.Random(seed)
        P = [g.point(k) for k in [*ks, GENERAL[0]]]
        jac = g.jacobian_array(P, rng)
        assert g.jacobian_to_ints(op(target, group, "dbl")(jac)) == [
            g.ints(ob.double(p)) for p in P
        ]
        assert g.jacobian_to_ints(op(target, group, "neg")(jac)) == [g.ints(ob.neg(p)) for p in P]
        affine = op(target, group, "to_affine")(jac)
        assert g.affine_to_ints(affine) == [g.ints(p) for p in P]
        back = op(target, group, "from_affine")(affine)
        assert g.jacobian_to_ints(back) == [g.ints(p) for p in P]

    run(prop, target, scalars(target), st.integers(0, 2**32))


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS)
def test_eq_is_projective(target, group):
    """The same point under two different Z compares equal; different points do not."""
    g = G[group]

    def prop(ks, ls, seed):
        rng = random.Random(seed)
        ks, ls = paired(ks, ls)
        P = [g.point(k) for k in ks]
        Q = [g.point(m) for m in ls]
        eq = op(target, group, "eq")
        assert list(eq(g.jacobian_array(P, rng), g.jacobian_array(P, rng))) == [True] * len(P)
        expect = [ob.eq(p, q) for p, q in zip(P, Q, strict=True)]
        assert list(eq(g.jacobian_array(P, rng), g.jacobian_array(Q, rng))) == expect

    run(prop, target, scalars(target), scalars(target), st.integers(0, 2**32))


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS_SLOW_SIM)
def test_mul_matches_py_ecc(target, group):
    """k P by double-and-add, for k including 0, 1, r - 1 and r (the group order)."""
    g = G[group]
    n_examples, size = examples(target)

    def prop(ks, ms, seed):
        rng = random.Random(seed)
        ks, ms = paired(ks, ms)
        P = [g.point(k) for k in ks]
        out = op(target, group, "mul")(g.jacobian_array(P, rng), cv.ints_to_limbs(ms))
        assert g.jacobian_to_ints(out) == [
            g.ints(ob.multiply(p, m)) for p, m in zip(P, ms, strict=True)
        ]

    k = st.one_of(st.sampled_from([0, 1, FR_MODULUS - 1, FR_MODULUS]), st.integers(0, 2**256 - 1))
    small = st.lists(k, min_size=1, max_size=min(size, 2))
    settings(
        max_examples=max(2, n_examples // 4),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )(given(scalars(target, 1), small, st.integers(0, 2**32))(prop))()


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("target", TARGETS)
def test_on_curve_check(target, group):
    """Points of the group are on the curve, (0, 0) (infinity) counts as on it, and a point
    with a perturbed y is not."""
    g = G[group]

    def prop(ks):
        P = [g.point(k) for k in [*ks, GENERAL[0]]]
        arr = g.affine_array(P)
        assert list(op(target, group, "is_on_curve_affine")(arr)) == [True] * len(P)
        bad = arr.copy()
        bad[:, g.affine_width // 2] ^= np.uint64(1)  # flip the low bit of y's first limb
        # y -> y' with y'^2 != y^2; infinity (0, 0) becomes (0, R^-1), not a point either.
        assert list(op(target, group, "is_on_curve_affine")(bad)) == [False] * len(P)

    run(prop, target, scalars(target))


# --------------------------------- Python-level API ---------------------------------------


def test_python_level_api_matches_py_ecc():
    P, Q = ob.multiply(ob.G1, 12345), ob.multiply(ob.G1, 678)
    a, b = cv.g1_from_py_ecc(P), cv.g1_from_py_ecc(Q)
    S = bn.g1_add_mixed(bn.g1_from_affine(a), b)
    assert ob.eq(cv.g1_to_py_ecc(bn.g1_to_affine(S)), ob.add(P, Q))
    assert bn.g1_eq(
        bn.g1_add(bn.g1_from_affine(a), bn.g1_from_affine(a)), bn.g1_dbl(bn.g1_from_affine(a))
    )
    assert bn.g1_is_inf(bn.g1_add_mixed(bn.g1_from_affine(a), bn.g1_neg_affine(a)))
    assert bn.g1_to_affine(bn.g1_inf()) == cv.g1_from_ints(None)
    assert bn.g1_affine_is_inf(cv.g1_from_ints(None)) and bn.g1_is_on_curve_affine(bn.G1)
    R2 = bn.g2_mul(bn.g2_from_affine(bn.G2), (5, 0, 0, 0))
    assert ob.eq(cv.g2_to_py_ecc(bn.g2_to_affine(R2)), ob.multiply(ob.G2, 5))
    assert bn.g2_is_on_curve_affine(cv.g2_from_py_ecc(ob.multiply(ob.G2, 77)))


def test_constants_match_py_ecc():
    assert bn.field_modulus == ob.field_modulus and bn.curve_order == ob.curve_order
    assert cv.g1_to_ints(bn.G1) == (1, 2)
    assert ob.eq(cv.g2_to_py_ecc(bn.G2), ob.G2)
    b2 = tuple(int(c) for c in ob.b2.coeffs)
    from cuzk.arith.constants import G2_B

    assert tuple(G2_B) == b2
