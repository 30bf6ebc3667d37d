"""BLS12-381 arithmetic (6-limb Fq, 4-limb Fr, Fq2, G1, G2) against py_ecc's
optimized_bls12_381, on both targets.

The builds under test are those of the shared sources with ``curve="bls12_381"``
(cuzk.arith.curves), reached through ``cuzk.arith.batch(target, "bls12_381")``: one body per
property, run through the CPU kernels and the CUDA ones (simulator here, GPU when present;
small batches there). Everything is written against the ``Curve`` record below (the curve's
constants module, its py_ecc twin, its limb counts), so another curve's tests are one more
record. Field values come from hypothesis with edge cases mixed in; points are k*G computed
by py_ecc, put into Jacobian form with a random Z, and results are compared as affine
integers.
"""

import random
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py_ecc import optimized_bls12_381 as ref
from reference import paired

import cuzk.arith as arith
from cuzk.arith import bls12_381
from cuzk.arith.curves import build_params, constants, no_carry_ok
from cuzk.arith.jit import get_target
from cuzk.arith.radix import int_to_limb_tuple, limbs_to_int

TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
TARGETS_SLOW_SIM = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.slow])]
NAME = "bls12_381"


@dataclass(frozen=True)
class Curve:
    """One curve under test: its constants module and an outside reference (py_ecc)."""

    name: str
    K: object  # the constants module (cuzk.arith.curves.constants(name))
    ref: object  # py_ecc's optimized module for the curve

    @property
    def nq(self):
        return self.K.FQ_LIMBS

    @property
    def nr(self):
        return self.K.FR_LIMBS

    def batch(self, target):
        return arith.batch(target, self.name)

    # --- field elements <-> Montgomery rows --------------------------------------------
    def mont_rows(self, xs, field):
        p, n = (self.K.FQ_MODULUS, self.nq) if field == "fq" else (self.K.FR_MODULUS, self.nr)
        mont_r = 1 << (64 * n)
        rows = [int_to_limb_tuple(x % p * mont_r % p, n) for x in xs]
        return np.array(rows, dtype=np.uint64).reshape(len(xs), n)

    def from_rows(self, arr, field):
        p, n = (self.K.FQ_MODULUS, self.nq) if field == "fq" else (self.K.FR_MODULUS, self.nr)
        r_inv = pow(1 << (64 * n), -1, p)
        flat = np.asarray(arr, dtype=np.uint64).reshape(-1, n)
        return [limbs_to_int(row) * r_inv % p for row in flat]

    def fq2_rows(self, pairs):
        flat = self.mont_rows([c for pair in pairs for c in pair], "fq")
        return flat.reshape(len(pairs), 2 * self.nq)

    def fq2_from_rows(self, arr):
        flat = self.from_rows(arr, "fq")
        return [tuple(flat[i : i + 2]) for i in range(0, len(flat), 2)]


BLS = Curve(NAME, bls12_381, ref)


def run(prop, target, *strategies, n_examples=None):
    settings(
        max_examples=n_examples or (25 if target == "cpu" else 3),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )(given(*strategies)(prop))()


def batch_size(target):
    return 8 if target == "cpu" else 2


# ===================================== constants ==========================================


def test_constants_match_py_ecc():
    assert constants(NAME) is bls12_381
    assert bls12_381.FQ_MODULUS == ref.field_modulus and bls12_381.FR_MODULUS == ref.curve_order
    assert bls12_381.FQ_MODULUS.bit_length() == 381 and bls12_381.FR_MODULUS.bit_length() == 255
    assert (bls12_381.FQ_LIMBS, bls12_381.FR_LIMBS) == (6, 4)
    assert bls12_381.G1_B == int(ref.b) and bls12_381.G2_B == tuple(int(c) for c in ref.b2.coeffs)
    assert bls12_381.FQ2_MODULUS_COEFFS == tuple(ref.FQ2.FQ2_MODULUS_COEFFS)
    assert bls12_381.G1_GENERATOR == tuple(int(c) for c in ref.normalize(ref.G1))
    assert bls12_381.G2_GENERATOR == tuple(
        tuple(int(v) for v in c.coeffs) for c in ref.normalize(ref.G2)
    )
    # The generators generate the order-r subgroups; G1's curve has h1 r points.
    assert ref.is_inf(ref.multiply(ref.G1, bls12_381.FR_MODULUS))
    assert ref.is_on_curve(ref.multiply(ref.G1, bls12_381.G1_COFACTOR), ref.b)


@pytest.mark.parametrize("field", ["fq", "fr"])
def test_montgomery_constants(field):
    p, n = (bls12_381.FQ_MODULUS, 6) if field == "fq" else (bls12_381.FR_MODULUS, 4)
    P = "Q" if field == "fq" else "R"
    c = {
        name: getattr(bls12_381, f"{P}_{name}") for name in "LIMBS INV R2 ONE MINUS_2 ZERO".split()
    }
    mont_r = 1 << (64 * n)
    assert all(len(c[k]) == n for k in ("LIMBS", "R2", "ONE", "MINUS_2", "ZERO"))
    assert all(type(v) is np.uint64 for v in c["LIMBS"])
    assert limbs_to_int(c["LIMBS"]) == p and no_carry_ok(p, n)
    assert (int(c["INV"]) * p) % (1 << 64) == (1 << 64) - 1  # INV = -p^{-1} mod 2^64
    assert limbs_to_int(c["R2"]) == mont_r * mont_r % p
    assert limbs_to_int(c["ONE"]) == mont_r % p
    assert limbs_to_int(c["MINUS_2"]) == p - 2 and limbs_to_int(c["ZERO"]) == 0


def test_curve_coefficients_in_montgomery_form():
    q, mont_r = bls12_381.FQ_MODULUS, 1 << 384
    assert limbs_to_int(bls12_381.G1_B_MONT) == 4 * mont_r % q
    assert [limbs_to_int(c) for c in bls12_381.G2_B_MONT] == [4 * mont_r % q] * 2  # 4(1 + u)


def test_builds_are_named_for_the_curve():
    """BN254 keeps the plain builds; BLS12-381's are separate modules with their own names."""
    assert build_params("bn254") == {} and build_params(NAME) == {"curve": NAME}
    with pytest.raises(ValueError, match="unknown curve"):
        build_params("bn255")
    F = get_target("cpu").load("cuzk.arith.field", curve=NAME)
    import cuzk.arith.field as bn_field

    assert F is not bn_field and (F.NQ, F.NR) == (6, 4) and (bn_field.NQ, bn_field.NR) == (4, 4)
    assert F.fq_mul.py_func.__qualname__ == f"fq_mul[{NAME}]"
    assert F.mont_mul_cios_6.py_func.__qualname__ == f"mont_mul_cios_6[{NAME}]"
    assert not hasattr(bn_field, "mont_mul_cios_6")
    # The batch kernels of both curves can have one text (fr_mul: both Fr have 4 limbs); the
    # build's suffix keeps their Numba cache entries apart.
    bls_kernel = BLS.batch("cpu").KERNELS["fr_mul"].py_func
    bn_kernel = arith.batch("cpu").KERNELS["fr_mul"].py_func
    assert bls_kernel.__qualname__ == bn_kernel.__qualname__ + f"[{NAME}]"


# ================================ fields, both targets ====================================

FIELDS = {"fq": bls12_381.FQ_MODULUS, "fr": bls12_381.FR_MODULUS}


def elements(p, n):
    edges = [0, 1, 2, p - 1, p - 2, (1 << 64) - 1, 1 << 64, 1 << 192, (1 << 320) + 1, p >> 1]
    edges += [(1 << (64 * n)) % p]  # R mod p: Montgomery form of 1 is R^2 mod p
    return st.one_of(st.sampled_from([e % p for e in edges]), st.integers(0, p - 1))


def batches(target, p, n, n_args):
    size = batch_size(target)
    return st.integers(1, size).flatmap(
        lambda k: st.tuples(*[st.lists(elements(p, n), min_size=k, max_size=k)] * n_args)
    )


REFERENCE = {
    "add": lambda x, y, p: (x + y) % p,
    "sub": lambda x, y, p: (x - y) % p,
    "mul": lambda x, y, p: x * y % p,
    "neg": lambda x, p: -x % p,
    "inv": lambda x, p: pow(x, -1, p) if x else 0,  # kernels map 0 to 0
}


@pytest.mark.parametrize("name", ["add", "sub", "mul", "neg", "inv"])
@pytest.mark.parametrize("field", ["fq", "fr"])
@pytest.mark.parametrize("target", TARGETS)
def test_field_ops_match_integers(target, field, name):
    p = FIELDS[field]
    n = BLS.nq if field == "fq" else BLS.nr
    fn = getattr(BLS.batch(target), f"{field}_{name}")
    unary = name in ("neg", "inv")

    def prop(args):
        arrays = [BLS.mont_rows(xs, field) for xs in args]
        got = BLS.from_rows(fn(*arrays), field)
        assert got == [REFERENCE[name](*vals, p) for vals in zip(*args, strict=True)]

    run(prop, target, batches(target, p, n, 1 if unary else 2))


@pytest.mark.parametrize("field", ["fq", "fr"])
@pytest.mark.parametrize("target", TARGETS)
def test_montgomery_conversion_matches_integers(target, field):
    """to_mont(x) = x R mod p from plain limbs (R = 2^384 for Fq, 2^256 for Fr)."""
    p = FIELDS[field]
    n = BLS.nq if field == "fq" else BLS.nr
    B = BLS.batch(target)

    def prop(args):
        (xs,) = args
        plain = np.array([int_to_limb_tuple(x, n) for x in xs], np.uint64).reshape(len(xs), n)
        m = getattr(B, f"{field}_to_mont")(plain)
        assert [limbs_to_int(row) for row in m] == [x * (1 << (64 * n)) % p for x in xs]
        assert [limbs_to_int(row) for row in getattr(B, f"{field}_from_mont")(m)] == xs

    run(prop, target, batches(target, p, n, 1))


def _fq2(c):
    return ref.FQ2([c[0], c[1]])


def _ints2(e):
    return tuple(int(v) for v in e.coeffs)


FQ2_REFERENCE = {  # py_ecc's FQ2 (u^2 = -1)
    "add": lambda a, b: _ints2(_fq2(a) + _fq2(b)),
    "sub": lambda a, b: _ints2(_fq2(a) - _fq2(b)),
    "mul": lambda a, b: _ints2(_fq2(a) * _fq2(b)),
    "sqr": lambda a: _ints2(_fq2(a) * _fq2(a)),
    "inv": lambda a: _ints2(_fq2(a).inv()) if a != (0, 0) else (0, 0),
}


@pytest.mark.parametrize("name", ["add", "sub", "mul", "sqr", "inv"])
@pytest.mark.parametrize("target", TARGETS)
def test_fq2_ops_match_py_ecc(target, name):
    fn = getattr(BLS.batch(target), f"fq2_{name}")
    n_args = 1 if name in ("sqr", "inv") else 2

    def prop(parts):
        vals = [list(zip(parts[2 * j], parts[2 * j + 1], strict=True)) for j in range(n_args)]
        got = BLS.fq2_from_rows(fn(*[BLS.fq2_rows(v) for v in vals]))
        assert got == [FQ2_REFERENCE[name](*args) for args in zip(*vals, strict=True)]

    run(prop, target, batches(target, bls12_381.FQ_MODULUS, BLS.nq, 2 * n_args))


# ================================ groups, both targets ====================================


@dataclass(frozen=True)
class Group:
    """py_ecc's view of one group of the curve, and its rows here."""

    name: str
    curve: Curve

    @property
    def gen(self):
        return self.curve.ref.G1 if self.name == "g1" else self.curve.ref.G2

    @property
    def coord(self):  # py_ecc's coordinate field
        return self.curve.ref.FQ if self.name == "g1" else self.curve.ref.FQ2

    def point(self, k):
        return self.curve.ref.multiply(self.gen, k % self.curve.K.FR_MODULUS)

    def ints(self, P):
        """py_ecc point -> affine integers (None at infinity)."""
        if self.curve.ref.is_inf(P):
            return None
        x, y = self.curve.ref.normalize(P)
        if self.name == "g1":
            return (int(x), int(y))
        return (_ints2(x), _ints2(y))

    def _coords_rows(self, coords, n_points, per_point):
        """Flat py_ecc coordinate values -> Montgomery rows of per_point coordinates."""
        if self.name == "g1":
            flat = self.curve.mont_rows([int(c) for c in coords], "fq")
        else:
            flat = self.curve.fq2_rows([_ints2(c) for c in coords])
        return flat.reshape(n_points, -1)

    def affine_array(self, points):
        coords = []
        for P in points:
            if self.curve.ref.is_inf(P):
                coords += [self.coord.zero(), self.coord.zero()]  # (0, 0), as zkeys store it
            else:
                coords += list(self.curve.ref.normalize(P))
        return self._coords_rows(coords, len(points), 2)

    def jacobian_array(self, points, rng):
        """(X, Y, Z) = (x l^2, y l^3, l) for a random l != 0; infinity as (1, 1, 0)."""
        q = self.curve.K.FQ_MODULUS
        coords = []
        for P in points:
            if self.curve.ref.is_inf(P):
                coords += [self.coord.one(), self.coord.one(), self.coord.zero()]
                continue
            x, y = self.curve.ref.normalize(P)
            if self.name == "g1":
                lam = self.coord(rng.randrange(1, q))
            else:
                lam = self.coord([rng.randrange(1, q), rng.randrange(q)])
            coords += [x * lam**2, y * lam**3, lam]
        return self._coords_rows(coords, len(points), 3)

    def _values(self, arr):
        """Rows -> per row, the list of coordinates as py_ecc field elements."""
        if self.name == "g1":
            vals = [self.coord(v) for v in self.curve.from_rows(arr, "fq")]
        else:
            vals = [self.coord(list(c)) for c in self.curve.fq2_from_rows(arr)]
        k = len(vals) // len(arr)
        return [vals[i * k : (i + 1) * k] for i in range(len(arr))]

    def jacobian_to_ints(self, arr):
        out = []
        for X, Y, Z in self._values(arr):
            if Z == self.coord.zero():
                out.append(None)
                continue
            zinv = self.coord.one() / Z
            x, y = X * zinv**2, Y * zinv**3
            out.append((int(x), int(y)) if self.name == "g1" else (_ints2(x), _ints2(y)))
        return out

    def affine_to_ints(self, arr):
        out = []
        for x, y in self._values(arr):
            if x == self.coord.zero() and y == self.coord.zero():
                out.append(None)
            else:
                out.append((int(x), int(y)) if self.name == "g1" else (_ints2(x), _ints2(y)))
        return out


G = {g: Group(g, BLS) for g in ("g1", "g2")}
WIDTHS = {"g1": (12, 18), "g2": (24, 36)}  # affine, Jacobian row widths on 6-limb Fq


def scalars(target):
    r = bls12_381.FR_MODULUS
    k = st.one_of(st.sampled_from([0, 1, 2, 3, r - 1, r - 2]), st.integers(0, r - 1))
    return st.lists(k, min_size=1, max_size=batch_size(target) // 2 + 1)


def op(target, group, name):
    return getattr(BLS.batch(target), f"{group}_{name}")


def test_row_widths():
    B = BLS.batch("cpu")
    assert B.WIDTH["fq"] == 6 and B.WIDTH["fr"] == 4 and B.WIDTH["fq2"] == 12
    for g, (affine, jacobian) in WIDTHS.items():
        assert (B.WIDTH[g + "a"], B.WIDTH[g]) == (affine, jacobian)
        assert G[g].affine_array([G[g].gen]).shape == (1, affine)


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("target", TARGETS)
def test_add_and_add_mixed_match_py_ecc(target, group):
    """Jacobian + Jacobian and Jacobian + affine, incl. P = Q, P = -Q and infinity."""
    g = G[group]

    def prop(ks, ls, relation, seed):
        rng = random.Random(seed)
        ks, ls = paired(ks, ls, relation)
        P = [g.point(k) for k in ks]
        Q = [g.point(m) for m in ls]
        expect = [g.ints(ref.add(p, q)) for p, q in zip(P, Q, strict=True)]
        jac_p = g.jacobian_array(P, rng)
        assert g.jacobian_to_ints(op(target, group, "add")(jac_p, g.jacobian_array(Q, rng))) == (
            expect
        )
        assert g.jacobian_to_ints(op(target, group, "add_mixed")(jac_p, g.affine_array(Q))) == (
            expect
        )

    relations = st.sampled_from(["any", "equal", "opposite"])
    run(prop, target, scalars(target), scalars(target), relations, st.integers(0, 2**32))


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("target", TARGETS)
def test_add_affine_dbl_neg_and_affine_round_trip(target, group):
    g = G[group]

    def prop(ks, ls, seed):
        rng = random.Random(seed)
        ks, ls = paired(ks, ls)
        A = [g.point(k) for k in ks]
        B = [g.point(m) for m in ls]
        add_affine = op(target, group, "add_affine")
        expect = [g.ints(ref.add(a, b)) for a, b in zip(A, B, strict=True)]
        assert g.affine_to_ints(add_affine(g.affine_array(A), g.affine_array(B), affine=True)) == (
            expect
        )
        jac = g.jacobian_array(A, rng)
        assert g.jacobian_to_ints(op(target, group, "dbl")(jac)) == [
            g.ints(ref.double(a)) for a in A
        ]
        assert g.jacobian_to_ints(op(target, group, "neg")(jac)) == [g.ints(ref.neg(a)) for a in A]
        affine = op(target, group, "to_affine")(jac)
        assert g.affine_to_ints(affine) == [g.ints(a) for a in A]
        assert g.jacobian_to_ints(op(target, group, "from_affine")(affine)) == [
            g.ints(a) for a in A
        ]

    run(prop, target, scalars(target), scalars(target), st.integers(0, 2**32))


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("target", TARGETS)
def test_eq_and_on_curve(target, group):
    """Projective equality under different Z; group points are on the curve, (0, 0) counts
    as on it, a perturbed y is not."""
    g = G[group]

    def prop(ks, ls, seed):
        rng = random.Random(seed)
        ks, ls = paired(ks, ls)
        P = [g.point(k) for k in ks]
        Q = [g.point(m) for m in ls]
        eq = op(target, group, "eq")
        assert list(eq(g.jacobian_array(P, rng), g.jacobian_array(P, rng))) == [True] * len(P)
        expect = [ref.eq(p, q) for p, q in zip(P, Q, strict=True)]
        assert list(eq(g.jacobian_array(P, rng), g.jacobian_array(Q, rng))) == expect
        arr = g.affine_array(P)
        on_curve = op(target, group, "is_on_curve_affine")
        assert list(on_curve(arr)) == [True] * len(P)
        bad = arr.copy()
        bad[:, arr.shape[1] // 2] ^= np.uint64(1)  # the low bit of y's first limb
        assert list(on_curve(bad)) == [False] * len(P)

    run(prop, target, scalars(target), scalars(target), st.integers(0, 2**32))


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("target", TARGETS_SLOW_SIM)
def test_mul_matches_py_ecc(target, group):
    """k P by double-and-add over 4-limb scalars, for k including 0, 1, r - 1 and r."""
    g = G[group]
    r = bls12_381.FR_MODULUS

    def prop(ks, ms, seed):
        rng = random.Random(seed)
        ks, ms = paired(ks, ms)
        P = [g.point(k) for k in ks]
        scalars_rows = np.array([int_to_limb_tuple(m, 4) for m in ms], np.uint64)
        out = op(target, group, "mul")(g.jacobian_array(P, rng), scalars_rows)
        assert g.jacobian_to_ints(out) == [
            g.ints(ref.multiply(p, m)) for p, m in zip(P, ms, strict=True)
        ]

    k = st.one_of(st.sampled_from([0, 1, r - 1, r]), st.integers(0, 2**256 - 1))
    small = st.lists(k, min_size=1, max_size=2)
    run(prop, target, scalars(target), small, st.integers(0, 2**32), n_examples=3)


# ============================ device functions, Python level =============================


def _u64(value):
    """Limbs as np.uint64 again after a call from Python (Numba returns them as ints)."""
    if isinstance(value, tuple):
        return tuple(_u64(v) for v in value)
    return np.uint64(value)


def test_device_functions_called_from_python():
    """The CPU build's device functions are plain callables too: the 6-limb CIOS agrees with
    Python integers on edge values, the generator is on the curve, and 2G by dbl and by add
    agree with py_ecc."""
    F = get_target("cpu").load("cuzk.arith.field", curve=NAME)
    C = get_target("cpu").load("cuzk.arith.curve", curve=NAME)
    q, mont_r = bls12_381.FQ_MODULUS, 1 << 384

    def m(x):
        return int_to_limb_tuple(x * mont_r % q, 6)

    for x, y in [(q - 1, q - 1), (1, q - 1), ((1 << 320) + 7, q - 2), (q >> 1, 3)]:
        got = limbs_to_int(F.mont_mul_cios_6(m(x), m(y), F.Q_LIMBS, F.Q_INV))
        assert got == x * y * mont_r % q  # (x R)(y R) / R = x y R
    g = (m(bls12_381.G1_GENERATOR[0]), m(bls12_381.G1_GENERATOR[1]))
    assert C.g1_is_on_curve_affine(g)
    P = _u64(C.g1_from_affine(g))
    twice = _u64(C.g1_dbl(P))
    assert C.g1_eq(_u64(C.g1_add(P, P)), twice)
    two = np.array(C.g1_to_affine(twice), dtype=np.uint64)
    assert tuple(BLS.from_rows(two, "fq")) == G["g1"].ints(ref.double(ref.G1))


# --- the x86-64 assembly multiplication on 6 limbs (cuzk.arith.limbs.x86_mont_mul) -----------


@pytest.mark.parametrize("field", ["fq", "fr"])
def test_assembly_multiplication_matches_cios_and_integers(field):
    """Where the CPU has BMI2 and ADX the CPU build multiplies both fields in assembly (6
    limbs for Fq, 4 for Fr); it must agree with the generated CIOS code and with Python
    integers on edge values and random ones (the properties above go through it too)."""
    from numba import njit

    from cuzk.arith.limbs import x86_mont_mul_available

    F = get_target("cpu").load("cuzk.arith.field", curve=NAME)
    p, n = (bls12_381.FQ_MODULUS, 6) if field == "fq" else (bls12_381.FR_MODULUS, 4)
    fast, cios = getattr(F, f"mont_mul_{n}"), getattr(F, f"mont_mul_cios_{n}")
    limbs, inv = (F.Q_LIMBS, F.Q_INV) if field == "fq" else (F.R_LIMBS, F.R_INV)
    assert (fast is not cios) == x86_mont_mul_available()
    load, store = getattr(F, f"load_{n}"), getattr(F, f"store_{n}")

    @njit(cache=False)
    def both(a, b, out_fast, out_cios):
        for i in range(a.shape[0]):
            x = load(a, i, 0)
            y = load(b, i, 0)
            store(out_fast, i, 0, fast(x, y, limbs, inv))
            store(out_cios, i, 0, cios(x, y, limbs, inv))

    rng = np.random.default_rng(11)
    edges = [0, 1, 2, p - 1, p - 2, (1 << 64) - 1, 1 << 64, (1 << 192) + 1, p >> 1]
    xs = edges + [int.from_bytes(rng.bytes(8 * n), "little") % p for _ in range(1000)]
    ys = edges[::-1] + [int.from_bytes(rng.bytes(8 * n), "little") % p for _ in range(1000)]
    a = np.array([int_to_limb_tuple(x, n) for x in xs], np.uint64)
    b = np.array([int_to_limb_tuple(y, n) for y in ys], np.uint64)
    out_fast, out_cios = np.zeros_like(a), np.zeros_like(a)
    both(a, b, out_fast, out_cios)
    assert np.array_equal(out_fast, out_cios)
    r_inv = pow(1 << (64 * n), -1, p)
    for i in list(range(len(edges))) + list(range(len(edges), len(xs), 53)):
        assert limbs_to_int(out_fast[i]) == xs[i] * ys[i] * r_inv % p
