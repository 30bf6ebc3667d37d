"""The Python-int pairing built for BLS12-381 (cuzk.arith.pairing_int.for_curve) against py_ecc's
optimized_bls12_381 and snarkjs's ffjavascript: the tower through a change of basis, the
pairing value (snarkjs's exactly: the reduced pairing cubed; py_ecc's to the power -3, py_ecc
not conjugating for x < 0), bilinearity, non-degeneracy, products of pairings as Groth16's
check uses them, and the G2 subgroup test against [r]Q = O."""

import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from need_tool import missing_tool
from py_ecc import optimized_bls12_381 as bls
from reference import g1_affine, g2_affine, random_fq12, twist_affine

from cuzk.arith import pairing_int
from cuzk.arith.bls12_381 import FQ_MODULUS, FR_MODULUS, G1_GENERATOR, G2_B, G2_GENERATOR, X

PI = pairing_int.for_curve("bls12_381")
q, r, x = FQ_MODULUS, FR_MODULUS, X
rng = random.Random(20261203)
G1 = tuple(G1_GENERATOR)
G2 = tuple(tuple(c) for c in G2_GENERATOR)
scalars = st.integers(min_value=1, max_value=r - 1)


def to_py_ecc(c) -> bls.FQ12:
    """cuzk's tower element sum_k a_k w^k (a_k = y0 + y1 u in Fq2, a_k = c[k % 2][k // 2]) in
    py_ecc's basis Fq[W]/(W^12 - 2 W^6 + 2): with W = w, u = W^6 - 1 (so xi = 1 + u = W^6),
    a_k w^k becomes (y0 - y1) W^k + y1 W^(k+6)."""
    co = [0] * 12
    for k in range(6):
        y0, y1 = c[k % 2][k // 2]
        co[k] = (y0 - y1) % q
        co[k + 6] = y1 % q
    return bls.FQ12(co)


def jac(p):
    return (p[0], p[1], (1, 0))


def _fq2_pow(a, e):
    out = (1, 0)
    while e:
        if e & 1:
            out = PI.fq2_mul(out, a)
        a = PI.fq2_sqr(a)
        e >>= 1
    return out


def _fq2_sqrt(a):
    """A square root in Fq2 (q = 3 mod 4; Adj and Rodriguez-Henriquez 2012, Alg. 9) or None."""
    a1 = _fq2_pow(a, (q - 3) // 4)
    alpha = PI.fq2_mul(PI.fq2_sqr(a1), a)
    x0 = PI.fq2_mul(a1, a)
    if alpha == (q - 1, 0):
        y = PI.fq2_mul((0, 1), x0)
    else:
        y = PI.fq2_mul(_fq2_pow(((1 + alpha[0]) % q, alpha[1]), (q - 1) // 2), x0)
    return y if PI.fq2_sqr(y) == a else None


def twist_points(n):
    """n random points of the twist E'(Fq2): y^2 = x^3 + 4(1 + u) (almost surely outside G2)."""
    out = []
    while len(out) < n:
        px = (rng.randrange(q), rng.randrange(q))
        rhs = PI.fq2_mul(PI.fq2_sqr(px), px)
        rhs = ((rhs[0] + G2_B[0]) % q, (rhs[1] + G2_B[1]) % q)
        py = _fq2_sqrt(rhs)
        if py is not None:
            out.append((px, py))
    return out


# --- the build -------------------------------------------------------------------------------


def test_build_is_per_curve_and_bn254_is_the_module():
    assert pairing_int.for_curve("bn254") is pairing_int
    assert pairing_int.for_curve("bls12_381") is PI
    assert (PI.CURVE, PI.Q, PI.R, PI.K, PI.FAMILY, PI.TWIST) == ("bls12_381", q, r, 1, "bls12", "M")
    assert (pairing_int.Q, pairing_int.K, pairing_int.FAMILY) != (PI.Q, PI.K, PI.FAMILY)
    try:
        pairing_int.for_curve("bls12_377")
    except ValueError as e:
        assert "unknown curve" in str(e)
    else:
        raise AssertionError("an unknown curve was built")


def test_constants():
    assert PI.ATE_LOOP_COUNT == -x == 0xD201000000010000
    assert sum(d << i for i, d in enumerate(PI._naf(PI.ATE_LOOP_COUNT))) == PI.ATE_LOOP_COUNT
    assert int("1" + "".join(map(str, PI.X_BITS)), 2) == -x
    # the hard part's identity, in integers
    assert (q**4 - q**2 + 1) % r == 0
    assert 3 * (q**4 - q**2 + 1) // r == (x - 1) ** 2 * (x + q) * (x * x + q * q - 1) + 3
    assert PI.PAIRING_POWER == 3 and r % 3
    xi = (1, 1)
    for k in range(6):
        assert PI.GAMMA1[k] == _fq2_pow(xi, k * (q - 1) // 6)
        assert (PI.GAMMA2[k], 0) == _fq2_pow(xi, k * (q**2 - 1) // 6)
        assert PI.GAMMA3[k] == _fq2_pow(xi, k * (q**3 - 1) // 6)
    assert PI.fq2_mul(PI.PSI_X, PI.GAMMA1[2]) == (1, 0)
    assert PI.fq2_mul(PI.PSI_Y, PI.GAMMA1[3]) == (1, 0)


# --- the tower -------------------------------------------------------------------------------


def test_fq12_arithmetic_matches_py_ecc():
    for _ in range(2):
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
    assert PI.fq12_frobenius(PI.fq12_frobenius(a, 3), 3) == PI.fq12_conj(a)


def test_sparse_line_products_equal_full_products():
    a = random_fq12(rng, q)
    l0, l1, l3 = ((rng.randrange(q), rng.randrange(q)) for _ in range(3))
    z = (0, 0)
    # the M-type line l0 + l2 w^2 + l3 w^3, and what the Miller loop multiplies by
    assert PI.fq12_mul_line_m(a, l0, l1, l3) == PI.fq12_mul(a, ((l0, l1, z), (z, l3, z)))
    assert PI._mul_line(a, l0, l1, l3) == PI.fq12_mul(a, ((l3, l1, z), (z, l0, z)))
    # the D-type one with this tower's xi
    assert PI.fq12_mul_line(a, l0, l1, l3) == PI.fq12_mul(a, ((l0, z, z), (l1, l3, z)))


def test_cyclotomic_square_and_exponentiations():
    a = random_fq12(rng, q)
    f1 = PI.fq12_mul(PI.fq12_conj(a), PI.fq12_inv(a))
    g = PI.fq12_mul(PI.fq12_frobenius(f1, 2), f1)
    assert to_py_ecc(g) == to_py_ecc(a) ** ((q**6 - 1) * (q**2 + 1))
    assert PI.fq12_cyclotomic_sqr(g) == PI.fq12_sqr(g)
    assert PI.fq12_cyclotomic_sqr(a) != PI.fq12_sqr(a)
    gx = to_py_ecc(PI._cyclotomic_exp_x(g))
    assert gx * to_py_ecc(g) ** (-x) == bls.FQ12.one()  # g^x, x < 0
    assert to_py_ecc(PI._hard_part_bls12(g)) == to_py_ecc(g) ** (3 * (q**4 - q**2 + 1) // r)


# --- the pairing -----------------------------------------------------------------------------


def test_pairing_is_py_ecc_s_to_the_power_minus_3():
    """py_ecc's Miller loop runs over |x| and does not conjugate, and its final exponent is
    (q^12 - 1)/r: its value is the inverse of the reduced pairing; ours is the cube."""
    a, b = 0x1234567, 0xABCDEF0123
    Pp, Qp = bls.multiply(bls.G1, a), bls.multiply(bls.G2, b)
    ours = to_py_ecc(PI.multi_pairing([(g1_affine(Pp, bls), g2_affine(Qp, bls))]))
    ref = bls.pairing(Qp, Pp)
    assert ours * ref**3 == bls.FQ12.one()
    assert ours != bls.FQ12.one()  # non-degenerate
    assert ours**r == bls.FQ12.one()  # in mu_r


@settings(max_examples=3, deadline=None)
@given(a=scalars, b=scalars)
def test_bilinearity_and_products(a, b):
    aP = g1_affine(bls.multiply(bls.G1, a), bls)
    bQ = g2_affine(bls.multiply(bls.G2, b), bls)
    abP = g1_affine(bls.multiply(bls.G1, a * b % r), bls)
    e_ab = PI.multi_pairing([(aP, bQ)])
    e_1 = PI.multi_pairing([(G1, G2)])
    assert e_ab == PI.multi_pairing([(abP, G2)])
    # e(aP, bQ) = e(P, Q)^(ab), on py_ecc's side of the basis change
    assert to_py_ecc(e_ab) == to_py_ecc(e_1) ** (a * b % r)
    # e(aP, bQ) e(-abP, Q) = 1 as one product; a wrong term breaks it
    neg_abP = (abP[0], q - abP[1])
    assert PI.pairing_product_is_one([(aP, bQ), (neg_abP, G2)])
    assert not PI.pairing_product_is_one([(aP, bQ), (neg_abP, G2), (G1, G2)])
    assert PI.multi_pairing([(aP, bQ), (G1, G2)]) == PI.fq12_mul(e_ab, e_1)


def test_groth16_shaped_product():
    """e(A, B) = e(alpha, beta) e(L, gamma) e(C, delta) as verify checks it, with
    e(-A, B) e(alpha, beta) e(L, gamma) e(C, delta) = 1, on points built to satisfy it:
    a b = al be + l ga + c de (mod r)."""
    al, be, ga, de, l_, c_, b = (rng.randrange(1, r) for _ in range(7))
    a = (al * be + l_ * ga + c_ * de) * pow(b, -1, r) % r

    def p1(k):
        return g1_affine(bls.multiply(bls.G1, k), bls)

    def p2(k):
        return g2_affine(bls.multiply(bls.G2, k), bls)

    negA = p1(-a % r)
    pairs = [(negA, p2(b)), (p1(al), p2(be)), (p1(l_), p2(ga)), (p1(c_), p2(de))]
    assert PI.pairing_product_is_one(pairs)
    bad = list(pairs)
    bad[3] = (p1(c_ + 1), p2(de))
    assert not PI.pairing_product_is_one(bad)


def test_infinity_contributes_one():
    assert PI.multi_pairing([(None, G2)]) == PI.FQ12_ONE
    assert PI.multi_pairing([(G1, None)]) == PI.FQ12_ONE


FFJS_SCRIPT = """
const { getCurveFromName } = require(process.argv[1]);
(async () => {
  const curve = await getCurveFromName("bls12381", true);
  const out = [];
  for (const [a, b] of JSON.parse(process.argv[2])) {
    const P = curve.G1.timesScalar(curve.G1.g, BigInt(a));
    const Q = curve.G2.timesScalar(curve.G2.g, BigInt(b));
    out.push(curve.Gt.toObject(curve.pairing(P, Q)));
  }
  console.log(JSON.stringify(out, (k, v) => (typeof v === "bigint" ? v.toString() : v)));
  await curve.terminate();
})();
"""


def test_pairing_equals_snarkjs_s():
    """e(aP, bQ) against ffjavascript's (snarkjs's curve library) in the same tower layout:
    the value vk_alphabeta_12 of a BLS12-381 verification key is made of."""
    ffjs = Path(__file__).resolve().parents[1] / ".tools" / "node_modules" / "ffjavascript"
    if shutil.which("node") is None or not ffjs.is_dir():
        missing_tool("node and .tools/node_modules/ffjavascript are needed (make tools)")
    scalars = [(1, 1), (rng.randrange(1, r), rng.randrange(1, r))]
    proc = subprocess.run(
        ["node", "-e", FFJS_SCRIPT, str(ffjs), json.dumps([[str(a), str(b)] for a, b in scalars])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = json.loads(proc.stdout)
    for (a, b), w in zip(scalars, want, strict=True):
        P, Q = g1_affine(bls.multiply(bls.G1, a), bls), g2_affine(bls.multiply(bls.G2, b), bls)
        got = PI.multi_pairing([(P, Q)])
        assert [[[str(c) for c in f2] for f2 in f6] for f6 in got] == w


# --- the groups ------------------------------------------------------------------------------


def test_g1_linear_combination_matches_py_ecc():
    ks = [rng.randrange(r) for _ in range(3)]
    points = [g1_affine(bls.multiply(bls.G1, i + 2), bls) for i in range(3)]
    want = bls.Z1
    for i, k in enumerate(ks):
        want = bls.add(want, bls.multiply(bls.G1, (i + 2) * k % r))
    assert PI.g1_linear_combination(points, ks) == g1_affine(want, bls)
    assert PI.g1_linear_combination([G1], [r]) is None


def test_g2_subgroup_test_agrees_with_the_order():
    """psi(Q) = [x]Q against [r]Q = O: points of G2, random twist points, their cofactor parts
    ([r]P) and sums of both, and cofactor-cleared points ([h2]P, h2 = #E'(Fq2)/r)."""
    outside = twist_points(3)
    # #E'(Fq2) = q^2 + 1 - t' for one of the sextic twists' traces t': from t2 = t^2 - 2q (the
    # trace of E over Fq2, t = x + 1) and t2^2 - 4 q^2 = -3 f^2, t' is one of +-t2,
    # (+-t2 +- 3f)/2; E' is the one of order divisible by r whose order kills the points.
    t = x + 1
    t2 = t * t - 2 * q
    f = math.isqrt((4 * q * q - t2 * t2) // 3)
    assert 3 * f * f == 4 * q * q - t2 * t2
    traces = [s1 * t2 for s1 in (1, -1)] + [
        (s1 * t2 + s2 * 3 * f) // 2 for s1 in (1, -1) for s2 in (1, -1)
    ]
    n2s = [
        n
        for n in (q * q + 1 - tr for tr in traces)
        if n % r == 0 and all(PI.g2_mul_jacobian(jac(p), n)[2] == (0, 0) for p in outside)
    ]
    assert len(n2s) == 1
    n2 = n2s[0]
    h2 = n2 // r
    inside = [G2, g2_affine(bls.multiply(bls.G2, rng.randrange(1, r)), bls), None]
    cleared = [twist_affine(PI, PI.g2_mul_jacobian(jac(p), h2)) for p in outside]
    cofactor_part = [twist_affine(PI, PI.g2_mul_jacobian(jac(p), r)) for p in outside]
    mixed = [twist_affine(PI, PI.g2_add_jacobian(jac(G2), jac(c))) for c in cofactor_part]
    for p in inside + cleared:
        assert PI.g2_in_subgroup(p) and PI.g2_in_subgroup_by_order(p)
    for p in outside + cofactor_part + mixed:
        assert p is not None
        assert not PI.g2_in_subgroup(p) and not PI.g2_in_subgroup_by_order(p)
        assert not bls.is_inf(bls.multiply((bls.FQ2(p[0]), bls.FQ2(p[1]), bls.FQ2.one()), r))


def test_imports_neither_numpy_nor_numba():
    code = (
        "import sys; from cuzk.arith import pairing_int; pairing_int.for_curve('bls12_381'); "
        "assert 'numpy' not in sys.modules and 'numba' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
