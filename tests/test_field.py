"""Fq, Fr and Fq2 arithmetic against Python integers (and py_ecc's FQ2), on both targets.

One body per property, run through the CPU batch kernels and the CUDA ones (simulator here,
GPU when present). Values are drawn by hypothesis with the edge cases (0, 1, p - 1, limb
boundaries) mixed in.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py_ecc import optimized_bn128 as ob

import cuzk.arith as bn
from cuzk.arith import convert as cv
from cuzk.arith.constants import (
    FQ_MODULUS,
    FR_MODULUS,
    G2_B,
    MONT_R,
    Q_INV,
    Q_LIMBS,
    Q_ONE,
    Q_R2,
    R_INV,
    R_LIMBS,
    R_ONE,
    R_R2,
    fr_roots_of_unity,
)
from cuzk.arith.radix import int_to_limb_tuple, limbs_to_int

TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
MODULI = {"fq": FQ_MODULUS, "fr": FR_MODULUS}


def examples(target):
    """Hypothesis examples and largest batch per target (the simulator runs Python)."""
    return (40, 16) if target == "cpu" else (4, 3)


def run(prop, target, *strategies):
    settings(
        max_examples=examples(target)[0],
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )(given(*strategies)(prop))()


def elements(p):
    edges = [0, 1, 2, p - 1, p - 2, (1 << 64) - 1, 1 << 64, (1 << 192) + 1, p >> 1, MONT_R % p]
    return st.one_of(st.sampled_from(edges), st.integers(0, p - 1))


def batches(target, p, n_args):
    """n_args lists of the same length (1..batch) of elements of F_p."""
    size = examples(target)[1]
    return st.integers(1, size).flatmap(
        lambda n: st.tuples(*[st.lists(elements(p), min_size=n, max_size=n)] * n_args)
    )


def mont(field, xs):
    return cv.fq_array(xs) if field == "fq" else cv.fr_array(xs)


def unmont(field, arr):
    return cv.fq_array_to_ints(arr) if field == "fq" else cv.fr_array_to_ints(arr)


REFERENCE = {
    "add": lambda x, y, p: (x + y) % p,
    "sub": lambda x, y, p: (x - y) % p,
    "mul": lambda x, y, p: x * y % p,
    "neg": lambda x, p: -x % p,
    "inv": lambda x, p: pow(x, -1, p) if x else 0,  # kernels map 0 to 0 (no exceptions)
}


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
@pytest.mark.parametrize("field", ["fq", "fr"])
@pytest.mark.parametrize("target", TARGETS)
def test_binary_ops_match_integers(target, field, name):
    p = MODULI[field]
    fn = getattr(bn.batch(target), f"{field}_{name}")

    def prop(xy):
        xs, ys = xy
        got = unmont(field, fn(mont(field, xs), mont(field, ys)))
        assert got == [REFERENCE[name](x, y, p) for x, y in zip(xs, ys, strict=True)]

    run(prop, target, batches(target, p, 2))


@pytest.mark.parametrize("name", ["neg", "inv"])
@pytest.mark.parametrize("field", ["fq", "fr"])
@pytest.mark.parametrize("target", TARGETS)
def test_unary_ops_match_integers(target, field, name):
    p = MODULI[field]
    fn = getattr(bn.batch(target), f"{field}_{name}")

    def prop(xs):
        (xs,) = xs
        assert unmont(field, fn(mont(field, xs))) == [REFERENCE[name](x, p) for x in xs]

    run(prop, target, batches(target, p, 1))


@pytest.mark.parametrize("field", ["fq", "fr"])
@pytest.mark.parametrize("target", TARGETS)
def test_montgomery_conversion_matches_integers(target, field):
    """to_mont(x) = x R mod p from plain limbs; from_mont undoes it."""
    p = MODULI[field]
    B = bn.batch(target)

    def prop(xs):
        (xs,) = xs
        m = getattr(B, f"{field}_to_mont")(cv.ints_to_limbs(xs))
        assert cv.limbs_to_ints(m) == [x * MONT_R % p for x in xs]
        assert cv.limbs_to_ints(getattr(B, f"{field}_from_mont")(m)) == xs

    run(prop, target, batches(target, p, 1))


def _fq2(c):
    return ob.FQ2([c[0], c[1]])


def _ints2(e):
    return tuple(int(v) for v in e.coeffs)


FQ2_REFERENCE = {  # py_ecc's FQ2 (u^2 = -1) as the outside reference
    "add": lambda a, b: _ints2(_fq2(a) + _fq2(b)),
    "sub": lambda a, b: _ints2(_fq2(a) - _fq2(b)),
    "mul": lambda a, b: _ints2(_fq2(a) * _fq2(b)),
    "sqr": lambda a: _ints2(_fq2(a) * _fq2(a)),
    "inv": lambda a: _ints2(_fq2(a).inv()) if a != (0, 0) else (0, 0),
}


@pytest.mark.parametrize("name", ["add", "sub", "mul", "sqr", "inv"])
@pytest.mark.parametrize("target", TARGETS)
def test_fq2_ops_match_py_ecc(target, name):
    fn = getattr(bn.batch(target), f"fq2_{name}")
    ref = FQ2_REFERENCE[name]
    n_args = 1 if name in ("sqr", "inv") else 2

    def prop(parts):
        # 2 * n_args lists of Fq values -> n_args lists of Fq2 values
        vals = [list(zip(parts[2 * j], parts[2 * j + 1], strict=True)) for j in range(n_args)]
        got = cv.fq2_array_to_ints(fn(*[cv.fq2_array(v) for v in vals]))
        assert got == [ref(*args) for args in zip(*vals, strict=True)]

    run(prop, target, batches(target, FQ_MODULUS, 2 * n_args))


# --------------------------- Python level, constants, encodings ---------------------------


@pytest.mark.parametrize("inv, zero", [
    (bn.fq_inv, cv.fq(0)), (bn.fr_inv, cv.fr(0)), (bn.fq2_inv, cv.fq2((0, 0))),
])  # fmt: skip
def test_python_level_inverse_of_zero_raises(inv, zero):
    with pytest.raises(ZeroDivisionError):
        inv(zero)


@given(st.integers(1, FQ_MODULUS - 1), st.integers(0, FR_MODULUS - 1).filter(bool))
@settings(max_examples=20, deadline=None)
def test_python_level_field_calls(x, y):
    q, r = FQ_MODULUS, FR_MODULUS
    assert cv.fq_int(bn.fq_inv(cv.fq(x))) == pow(x, -1, q)
    assert cv.fr_int(bn.fr_inv(cv.fr(y))) == pow(y, -1, r)
    assert cv.fq_int(bn.fq_mul(cv.fq(x), cv.fq(x))) == x * x % q
    assert cv.fr_int(bn.fr_sub(cv.fr(y), cv.fr(1))) == (y - 1) % r
    assert cv.fq2_int(bn.fq2_inv(cv.fq2((x, 0)))) == (pow(x, -1, q), 0)
    assert cv.fq_int(bn.fq_from_mont(int_to_limb_tuple(x))) == x * pow(MONT_R, -2, q) % q


def test_montgomery_constants():
    for p, limbs, inv, r2, one in (
        (FQ_MODULUS, Q_LIMBS, Q_INV, Q_R2, Q_ONE),
        (FR_MODULUS, R_LIMBS, R_INV, R_R2, R_ONE),
    ):
        assert limbs_to_int(limbs) == p and p < 1 << 254
        assert (int(inv) * p) % (1 << 64) == (1 << 64) - 1  # INV = -p^{-1} mod 2^64
        assert limbs_to_int(r2) == MONT_R**2 % p
        assert limbs_to_int(one) == MONT_R % p
    assert G2_B == _ints2(ob.b2)
    w = fr_roots_of_unity()
    assert pow(w[28], 1 << 28, FR_MODULUS) == 1 and pow(w[28], 1 << 27, FR_MODULUS) != 1


@given(st.lists(st.integers(0, 2**256 - 1), max_size=8))
@settings(max_examples=30, deadline=None)
def test_encodings_round_trip(xs):
    arr = cv.ints_to_limbs(xs)
    assert arr.shape == (len(xs), 4) and arr.dtype == np.uint64
    assert cv.limbs_to_ints(arr) == xs
    buf = cv.limbs_to_bytes(arr)
    assert buf == b"".join(x.to_bytes(32, "little") for x in xs)
    assert np.array_equal(cv.bytes_to_limbs(buf), arr)
    for x in xs:
        assert cv.bytes32_to_int(cv.int_to_bytes32(x)) == x
        assert limbs_to_int(int_to_limb_tuple(x)) == x


def test_encoding_errors():
    with pytest.raises(ValueError):
        cv.ints_to_limbs([1 << 256])
    with pytest.raises(ValueError):
        cv.ints_to_limbs([-1])
    with pytest.raises(ValueError):
        cv.bytes_to_limbs(b"\0" * 33)
    with pytest.raises(ValueError):
        cv.bytes32_to_int(b"\0" * 31)


def test_large_array_conversion_uses_batch_path():
    """Above BATCH_THRESHOLD the Montgomery conversions run in the CPU kernels; results
    agree with the integer path."""
    n = cv.BATCH_THRESHOLD + 3
    xs = [(i * 0x9E3779B97F4A7C15) ** 3 % FR_MODULUS for i in range(n)]
    arr = cv.fr_array(xs)
    assert cv.limbs_to_ints(arr[:5]) == [x * MONT_R % FR_MODULUS for x in xs[:5]]
    assert cv.fr_array_to_ints(arr) == xs
    assert cv.fq_array_to_ints(cv.fq_array(xs)) == xs


# --- the x86-64 assembly multiplication (cuzk.arith.limbs.x86_mont_mul) ----------------------


def _asm_check_kernel():
    from numba import njit

    from cuzk.arith.field import load, mont_mul, mont_mul_cios, store

    @njit(cache=False)
    def both(a, b, out_fast, out_cios, p, inv):
        for i in range(a.shape[0]):
            x = load(a, i, 0)
            y = load(b, i, 0)
            store(out_fast, i, 0, mont_mul(x, y, p, inv))
            store(out_cios, i, 0, mont_mul_cios(x, y, p, inv))

    return both


@pytest.mark.parametrize("field", ["fq", "fr"])
def test_assembly_multiplication_matches_cios_and_integers(field):
    """Where the CPU has BMI2 and ADX the CPU build multiplies in assembly; it must agree with
    the generic CIOS code and with Python integers on edge values and random ones (the
    hypothesis tests above go through it too)."""
    from cuzk.arith.field import mont_mul, mont_mul_cios
    from cuzk.arith.limbs import x86_mont_mul_available

    p = MODULI[field]
    limbs, inv = (Q_LIMBS, Q_INV) if field == "fq" else (R_LIMBS, R_INV)
    assert (mont_mul is not mont_mul_cios) == x86_mont_mul_available()
    rng = np.random.default_rng(7)
    edges = [0, 1, 2, p - 1, p - 2, (1 << 64) - 1, 1 << 64, (1 << 192) + 1, p >> 1]
    xs = edges + [int.from_bytes(rng.bytes(32), "little") % p for _ in range(2000)]
    ys = list(reversed(edges)) + [int.from_bytes(rng.bytes(32), "little") % p for _ in range(2000)]
    a = np.array([int_to_limb_tuple(x) for x in xs], np.uint64)
    b = np.array([int_to_limb_tuple(y) for y in ys], np.uint64)
    fast, cios = np.zeros_like(a), np.zeros_like(a)
    _asm_check_kernel()(a, b, fast, cios, limbs, inv)
    assert np.array_equal(fast, cios)
    r_inv = pow(MONT_R, -1, p)
    for i in range(0, len(xs), 97):
        got = sum(int(v) << (64 * k) for k, v in enumerate(fast[i]))
        assert got == xs[i] * ys[i] * r_inv % p


def test_assembly_can_be_turned_off():
    """CUZK_NO_ASM=1 gives the generic code (the fallback where the CPU lacks BMI2/ADX)."""
    import subprocess
    import sys

    code = (
        "from cuzk.arith.field import mont_mul, mont_mul_cios; import sys; "
        "sys.exit(0 if mont_mul is mont_mul_cios else 1)"
    )
    env = {**__import__("os").environ, "CUZK_NO_ASM": "1"}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0


# --- the CPU's atomic counter (cuzk.arith.limbs.cpu_fetch_add) ------------------------------


def test_fetch_add_hands_each_ticket_out_once():
    """Threads of a parallel loop taking tickets from one counter (as the MSM's windows are
    taken) each get distinct ones, and together all of them: no ticket lost or taken twice."""
    from numba import get_num_threads, njit, prange

    from cuzk.arith.limbs import cpu_fetch_add

    fetch_add = cpu_fetch_add()

    @njit(parallel=True, cache=False)
    def take(n, threads, taken, by):
        ticket = np.empty(1, np.int64)  # as in pippenger_cpu (see there: not np.zeros)
        ticket[0] = 0
        for t in prange(threads):
            k = fetch_add(ticket, 0, 1)
            while k < n:
                taken[k] += 1
                by[k] = t
                k = fetch_add(ticket, 0, 1)
        return ticket[0]

    n, threads = 20000, max(2, get_num_threads())
    taken, by = np.zeros(n, np.int64), np.full(n, -1, np.int64)
    end = take(n, threads, taken, by)
    assert (taken == 1).all()
    assert end == n + threads  # each thread's last ticket was past the end
    assert set(np.unique(by)) <= set(range(threads))


@pytest.mark.parametrize("curve", ["bn254", "bls12_381"])
@pytest.mark.parametrize("target", TARGETS)
def test_fq2_products_of_the_largest_unreduced_sums(target, curve):
    """fq2_mul and fq2_sqr leave their Karatsuba sums unreduced (cuzk.arith.field's
    fq_add_unreduced: up to 2q - 2 into the product): operands whose stored (Montgomery) limbs
    are the largest, q - 1 and q - 2 in both coordinates, still give the exact product, stored
    fully reduced (the rows compared limb for limb with the canonical ones)."""
    from cuzk.arith.curves import constants

    K = constants(curve)
    q, n = K.FQ_MODULUS, K.FQ_LIMBS
    mont_r = 1 << (64 * n)
    r_inv = pow(mont_r, -1, q)
    stored = [q - 1, q - 2, q >> 1, 1, 0] if target == "cpu" else [q - 1, q - 2, 0]
    pairs = [(x, y) for x in stored for y in stored]

    def rows(ps):
        return np.array([int_to_limb_tuple(c, n) for p in ps for c in p], dtype=np.uint64).reshape(
            len(ps), 2 * n
        )

    def value(p):  # the Fq2 value a stored pair holds
        return (p[0] * r_inv % q, p[1] * r_inv % q)

    def stored_of(v):
        return (v[0] * mont_r % q, v[1] * mont_r % q)

    def mul(a, b):
        return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)

    B = bn.batch(target, curve)
    A = [a for a in pairs for _ in pairs]
    C = [b for _ in pairs for b in pairs]
    got = B.fq2_mul(rows(A), rows(C))
    want = rows([stored_of(mul(value(a), value(b))) for a, b in zip(A, C, strict=True)])
    assert np.array_equal(got, want)
    got = B.fq2_sqr(rows(pairs))
    assert np.array_equal(got, rows([stored_of(mul(value(a), value(a))) for a in pairs]))
