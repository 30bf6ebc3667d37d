"""A pure-Python Groth16 prover and verifier (BN254) over snarkjs files: the outside reference.

Python ints for F_r, py_ecc.optimized_bn128 for the curves and the pairing; nothing from
cuzk's own arithmetic, so the project's prover can be compared against it. It follows
snarkjs's groth16_prove.js step by step:

  1. a_i = sum of coef * w[signal] over the zkey's A entries of row i, b_i likewise (B), c = a * b.
  2. For each of a, b, c: inverse NTT over the domain of size n, multiply coefficient i by
     w_2n^i (the coset shift), forward NTT; h_i = a_i b_i - c_i on that coset. The zkey's H
     points already absorb the vanishing polynomial, so h goes straight into the H MSM.
  3. Roots of unity as snarkjs: w[28] = 5^((r-1)/2^28), w[k] = w[k+1]^2, w_2n = w[log2(n)+1]
     (snarkjs_roots: derived by ffjavascript's rule, for any r: BLS12-381's too).
  4. pi_a = alpha1 + sum w_i A_i + r delta1;  pi_b = beta2 + sum w_i B2_i + s delta2;
     B1' = beta1 + sum w_i B1_i + s delta1;
     pi_c = sum_{i>nPublic} w_i C_i + sum h_i H_i + s pi_a + r B1' - r s delta1.
Verification: e(pi_a, pi_b) = e(alpha1, beta2) e(sum pub_i IC_i, gamma2) e(pi_c, delta2),
checked as one product of four Miller loops and one final exponentiation.

Small circuits only (a 2^10 domain takes a few seconds). Points in and out are affine ints:
G1 (x, y), G2 ((x0, x1), (y0, y1)), None for infinity.
"""

from __future__ import annotations

import functools
import secrets

from py_ecc import optimized_bn128 as bn

from cuzk.arith.radix import limbs_to_ints
from cuzk.formats import (
    BN254_R,
    g1_array_to_points,
    g1_from_limbs,
    g2_array_to_points,
    g2_from_limbs,
    zkey_coef_to_int,
)

R = BN254_R


def fq12_to_py_ecc(c) -> bn.FQ12:
    """cuzk's tower element sum_k a_k w^k (a_k = x + y u in Fq2, a_k = c[k % 2][k // 2]) in
    py_ecc's basis Fq[W]/(W^12 - 18 W^6 + 82): with W = w, u = W^6 - 9 (so xi = 9 + u = W^6),
    a_k w^k becomes (x - 9y) W^k + y W^(k+6)."""
    q = bn.field_modulus
    co = [0] * 12
    for k in range(6):
        x, y = c[k % 2][k // 2]
        co[k] = (x - 9 * y) % q
        co[k + 6] = y % q
    return bn.FQ12(co)


@functools.cache
def snarkjs_roots(r: int = R) -> tuple[int, ...]:
    """snarkjs's 2-power roots of unity of F_r, w[0..s], derived as its field library does
    (ffjavascript src/wasm_field1.js, the Fr.w that groth16_prove.js reads for the coset;
    wasmcurves src/build_fft.js, the tables of its FFTs and of the powers of tau's Lagrange
    bases, searches the same way): nqr is the least of 2, 3, ... with nqr^((r-1)/2) = -1;
    r - 1 = 2^s t with t odd; w[s] = nqr^t and w[k] = w[k+1]^2."""
    nqr = 2
    while pow(nqr, (r - 1) // 2, r) != r - 1:
        nqr += 1
    s, t = 0, r - 1
    while t % 2 == 0:
        s, t = s + 1, t // 2
    w = [0] * (s + 1)
    w[s] = pow(nqr, t, r)
    for k in range(s - 1, -1, -1):
        w[k] = w[k + 1] * w[k + 1] % r
    return tuple(w)


def root_of_unity(log_n: int, r: int = R) -> int:
    """snarkjs's primitive 2^log_n-th root of unity in F_r (BN254's: w[28] = 5^((r-1)/2^28),
    squared down to w[log_n])."""
    return snarkjs_roots(r)[log_n]


def ntt(values: list[int], omega: int, r: int = R) -> list[int]:
    """Evaluations sum_j values[j] omega^(ij) mod r, i < n (recursive radix-2 Cooley-Tukey)."""
    n = len(values)
    if n == 1:
        return list(values)
    even = ntt(values[0::2], omega * omega % r, r)
    odd = ntt(values[1::2], omega * omega % r, r)
    out = [0] * n
    t = 1
    for i in range(n // 2):
        x = odd[i] * t % r
        out[i] = (even[i] + x) % r
        out[i + n // 2] = (even[i] - x) % r
        t = t * omega % r
    return out


def intt(values: list[int], omega: int, r: int = R) -> list[int]:
    """The inverse of ntt(., omega, r)."""
    n_inv = pow(len(values), -1, r)
    return [v * n_inv % r for v in ntt(values, pow(omega, -1, r), r)]


def synthesize(zkey, w: list[int]) -> tuple[list[int], list[int], list[int]]:
    """a, b, c = a*b on the domain (length domainSize) from the zkey's A and B entries."""
    n = zkey.domain_size
    ab = [[0] * n, [0] * n]
    for m, c, s, v in zkey.coefficients:
        row = ab[int(m)]
        row[int(c)] = (row[int(c)] + zkey_coef_to_int(v) * w[int(s)]) % R
    a, b = ab
    return a, b, [x * y % R for x, y in zip(a, b, strict=True)]


def h_on_coset(a: list[int], b: list[int], c: list[int], r: int = R, roots=None) -> list[int]:
    """h_i = A(g w^i) B(g w^i) - C(g w^i) mod r on the coset g = w_2n (the H MSM's scalars):
    snarkjs's groth16_prove.js step (ifft, batchApplyKey by w_2n^i, fft, joinABC), with
    ``roots`` w[k] (default snarkjs's, snarkjs_roots(r))."""
    n = len(a)
    log_n = n.bit_length() - 1
    roots = snarkjs_roots(r) if roots is None else roots
    omega, shift = roots[log_n], roots[log_n + 1]
    coset = []
    for evals in (a, b, c):
        coeffs = intt(evals, omega, r)
        g = 1
        for i in range(n):
            coeffs[i] = coeffs[i] * g % r
            g = g * shift % r
        coset.append(ntt(coeffs, omega, r))
    ea, eb, ec = coset
    return [(x * y - z) % r for x, y, z in zip(ea, eb, ec, strict=True)]


# --- curve helpers (py_ecc Jacobian <-> affine ints) ----------------------------------------


def g1_jac(p):
    return bn.Z1 if p is None else (bn.FQ(p[0]), bn.FQ(p[1]), bn.FQ.one())


def g2_jac(p):
    if p is None:
        return bn.Z2
    (x0, x1), (y0, y1) = p
    return (bn.FQ2([x0, x1]), bn.FQ2([y0, y1]), bn.FQ2.one())


def g1_affine(P, ec=bn):
    """A py_ecc point of `ec` (optimized_bn128, optimized_bls12_381) as affine ints."""
    if ec.is_inf(P):
        return None
    x, y = ec.normalize(P)
    return int(x.n), int(y.n)


def g2_affine(P, ec=bn):
    if ec.is_inf(P):
        return None
    x, y = ec.normalize(P)
    return tuple(int(c) for c in x.coeffs), tuple(int(c) for c in y.coeffs)


# --- kernel rows of either curve (zkey layout, Montgomery) <-> py_ecc points -----------------

PY_ECC_CURVES = {"bn254": "optimized_bn128", "bls12_381": "optimized_bls12_381"}


def py_ecc_curve(curve: str = "bn254"):
    """The py_ecc module (optimized_bn128, optimized_bls12_381) of cuzk.arith's curve name."""
    import importlib

    return importlib.import_module(f"py_ecc.{PY_ECC_CURVES[curve]}")


def mont_limbs(x: int, curve: str = "bn254") -> list[int]:
    """An Fq element of `curve` as its NQ Montgomery limbs (ints, little-endian)."""
    from cuzk.arith.curves import constants

    k = constants(curve)
    nq = k.FQ_LIMBS
    v = int(x) * (1 << (64 * nq)) % k.FQ_MODULUS
    return [(v >> (64 * i)) & ((1 << 64) - 1) for i in range(nq)]


def unmont_int(limbs, curve: str = "bn254") -> int:
    """NQ Montgomery limbs -> the Fq element as an int."""
    from cuzk.arith.curves import constants

    k = constants(curve)
    v = sum(int(w) << (64 * i) for i, w in enumerate(limbs))
    return v * pow(1 << (64 * k.FQ_LIMBS), -1, k.FQ_MODULUS) % k.FQ_MODULUS


def point_rows(points, group: str, curve: str = "bn254"):
    """py_ecc points of G1 or G2 ("g1", "g2") of `curve` -> (n, 2 NQ) or (n, 4 NQ) uint64 rows
    in the zkey layout (x || y; Fq2 as c0 || c1; zeros = infinity)."""
    import numpy as np

    ec = py_ecc_curve(curve)
    width = (2 if group == "g1" else 4) * len(mont_limbs(0, curve))
    out = []
    for P in points:
        if ec.is_inf(P):
            out.append([0] * width)
            continue
        x, y = ec.normalize(P)
        coords = (x.n, y.n) if group == "g1" else (*x.coeffs, *y.coeffs)
        out.append(sum((mont_limbs(int(c), curve) for c in coords), []))
    return np.array(out, dtype=np.uint64).reshape(len(out), width)


def row_ints(row, curve: str = "bn254"):
    """An affine row (G1 or G2, Montgomery) -> its integer coordinates, None for infinity."""
    nq = len(mont_limbs(0, curve))
    row = [int(v) for v in row]
    if not any(row):
        return None
    return tuple(unmont_int(row[i : i + nq], curve) for i in range(0, len(row), nq))


def py_ecc_ints(P, curve: str = "bn254"):
    """A py_ecc point as the integer coordinates row_ints gives, None for infinity."""
    ec = py_ecc_curve(curve)
    if ec.is_inf(P):
        return None
    x, y = ec.normalize(P)
    if isinstance(x, ec.FQ):
        return (int(x.n), int(y.n))
    return (*(int(c) for c in x.coeffs), *(int(c) for c in y.coeffs))


def scalar_rows(ks):
    """Integers below 2^256 -> (n, 4) uint64 plain little-endian limbs (a .wtns's layout)."""
    import numpy as np

    rows = [[(int(k) >> (64 * i)) & ((1 << 64) - 1) for i in range(4)] for k in ks]
    return np.array(rows, dtype=np.uint64).reshape(len(ks), 4)


def twist_affine(pairing_int, P):
    """A Jacobian twist point of cuzk.arith.pairing_int (either curve's build) as affine ints
    (None = infinity)."""
    x, y, z = P
    if z == (0, 0):
        return None
    zi = pairing_int.fq2_inv(z)
    zi2 = pairing_int.fq2_sqr(zi)
    return (pairing_int.fq2_mul(x, zi2), pairing_int.fq2_mul(y, pairing_int.fq2_mul(zi2, zi)))


def fq2_sqrt(a, q: int):
    """A square root of a = (a0, a1) in Fq2 = Fq[u]/(u^2 + 1) for q = 3 mod 4 (Adj and
    Rodriguez-Henriquez 2012, Alg. 9; both curves' q), or None."""

    def mul(b, c):
        return ((b[0] * c[0] - b[1] * c[1]) % q, (b[0] * c[1] + b[1] * c[0]) % q)

    def power(b, e):
        out = (1, 0)
        while e:
            if e & 1:
                out = mul(out, b)
            b = mul(b, b)
            e >>= 1
        return out

    a1 = power(a, (q - 3) // 4)
    alpha = mul(mul(a1, a1), a)
    x0 = mul(a1, a)
    if alpha == (q - 1, 0):
        y = mul((0, 1), x0)
    else:
        y = mul(power(((1 + alpha[0]) % q, alpha[1]), (q - 1) // 2), x0)
    return y if mul(y, y) == (a[0] % q, a[1] % q) else None


def random_curve_point(curve: str, rng):
    """A random affine point of E(Fq) of cuzk.arith curve `curve` ("bn254", "bls12_381"): on
    BLS12-381 almost surely outside G1 (G1 is a 1/h1 part of it)."""
    from cuzk.arith.curves import constants

    C = constants(curve)
    q = C.FQ_MODULUS
    while True:
        x = rng.randrange(q)
        rhs = (x * x * x + C.G1_B) % q
        y = pow(rhs, (q + 1) // 4, q)  # q = 3 mod 4
        if y * y % q == rhs:
            return (x, y)


def random_twist_point(curve: str, rng):
    """A random affine point of the twist E'(Fq2) of `curve`, almost surely outside G2."""
    from cuzk.arith.curves import constants

    C = constants(curve)
    q, b = C.FQ_MODULUS, C.G2_B
    while True:
        x = (rng.randrange(q), rng.randrange(q))
        x2 = ((x[0] * x[0] - x[1] * x[1]) % q, 2 * x[0] * x[1] % q)
        x3 = ((x2[0] * x[0] - x2[1] * x[1]) % q, (x2[0] * x[1] + x2[1] * x[0]) % q)
        y = fq2_sqrt(((x3[0] + b[0]) % q, (x3[1] + b[1]) % q), q)
        if y is not None:
            return (x, y)


def random_fq12(rng, q: int):
    """A random Fq12 element in cuzk's tower form ((c0, c1, c2), (c3, c4, c5)) of Fq2 pairs."""
    return tuple(tuple((rng.randrange(q), rng.randrange(q)) for _ in range(3)) for _ in range(2))


def msm(points: list, scalars: list[int], zero):
    """sum scalars[i] * points[i] (py_ecc Jacobian points; None/zero skipped), Pippenger with
    windows of c bits: per window, bucket the points by digit, then sum_d d * bucket_d by a
    running sum; windows combine by c doublings each."""
    pairs = [(P, k % R) for P, k in zip(points, scalars, strict=True) if k % R and not bn.is_inf(P)]
    if not pairs:
        return zero
    c = max(1, min(12, len(pairs).bit_length() - 2))
    mask = (1 << c) - 1
    total = zero
    for shift in reversed(range(0, 254, c)):
        for _ in range(c):
            total = bn.double(total)
        buckets = [zero] * (mask + 1)
        for P, k in pairs:
            d = (k >> shift) & mask
            if d:
                buckets[d] = bn.add(buckets[d], P)
        running, window = zero, zero
        for d in range(mask, 0, -1):
            running = bn.add(running, buckets[d])
            window = bn.add(window, running)
        total = bn.add(total, window)
    return total


def msm_naive(points: list, scalars: list[int], zero):
    """sum scalars[i] * points[i] by py_ecc's multiply (checks msm)."""
    acc = zero
    for P, k in zip(points, scalars, strict=True):
        acc = bn.add(acc, bn.multiply(P, k % R))
    return acc


# --- prover and verifier --------------------------------------------------------------------


def prove(zkey, witness: list[int], r: int | None = None, s: int | None = None):
    """A Groth16 proof of `witness` (ints, w[0] = 1) under `zkey` (a cuzk.formats.ZKey).

    Returns (pi_a, pi_b, pi_c, public) with affine int points and public = w[1..nPublic].
    r, s are the blinding scalars (fresh random ones when None).
    """
    if len(witness) != zkey.n_vars:
        raise ValueError(f"witness has {len(witness)} values, key expects {zkey.n_vars}")
    r = secrets.randbelow(R) if r is None else r % R
    s = secrets.randbelow(R) if s is None else s % R
    a, b, c = synthesize(zkey, witness)
    h = h_on_coset(a, b, c)

    g1 = lambda arr: [g1_jac(p) for p in g1_array_to_points(arr)]  # noqa: E731
    A = msm(g1(zkey.points_a), witness, bn.Z1)
    B1 = msm(g1(zkey.points_b1), witness, bn.Z1)
    B2 = msm([g2_jac(p) for p in g2_array_to_points(zkey.points_b2)], witness, bn.Z2)
    C = msm(g1(zkey.points_c), witness[zkey.n_public + 1 :], bn.Z1)
    H = msm(g1(zkey.points_h), h, bn.Z1)

    alpha1, beta1 = g1_jac(g1_from_limbs(zkey.alpha1)), g1_jac(g1_from_limbs(zkey.beta1))
    delta1 = g1_jac(g1_from_limbs(zkey.delta1))
    beta2, delta2 = g2_jac(g2_from_limbs(zkey.beta2)), g2_jac(g2_from_limbs(zkey.delta2))

    pi_a = bn.add(bn.add(A, alpha1), bn.multiply(delta1, r))
    pi_b = bn.add(bn.add(B2, beta2), bn.multiply(delta2, s))
    b1 = bn.add(bn.add(B1, beta1), bn.multiply(delta1, s))
    pi_c = bn.add(C, H)
    pi_c = bn.add(pi_c, bn.multiply(pi_a, s))
    pi_c = bn.add(pi_c, bn.multiply(b1, r))
    pi_c = bn.add(pi_c, bn.multiply(delta1, (-r * s) % R))
    public = witness[1 : zkey.n_public + 1]
    return g1_affine(pi_a), g2_affine(pi_b), g1_affine(pi_c), public


def unblinded_proof(zkey, witness: list[int], h: list[int]):
    """(pi_a, pi_b, pi_c) as affine ints for blinding r = s = 0, from the witness and the
    quotient evaluations h, on the zkey's curve (BN254 or BLS12-381, py_ecc's optimized
    modules): pi_a = alpha1 + sum w_i A_i, pi_b = beta2 + sum w_i B2_i,
    pi_c = sum_{i > nPublic} w_i C_i + sum h_i H_i. Naive MSMs: tiny keys only."""
    from py_ecc import optimized_bls12_381

    curve = zkey.curve
    ec = bn if curve == "bn128" else optimized_bls12_381

    def g1(p):
        return ec.Z1 if p is None else (ec.FQ(p[0]), ec.FQ(p[1]), ec.FQ.one())

    def g2(p):
        return ec.Z2 if p is None else (ec.FQ2(list(p[0])), ec.FQ2(list(p[1])), ec.FQ2.one())

    def lincomb(start, points, scalars):
        acc = start
        for p, k in zip(points, scalars, strict=True):
            acc = ec.add(acc, ec.multiply(p, k))
        return acc

    def g1s(arr):
        return [g1(p) for p in g1_array_to_points(arr, curve)]

    pi_a = lincomb(g1(g1_from_limbs(zkey.alpha1, curve)), g1s(zkey.points_a), witness)
    b2 = [g2(p) for p in g2_array_to_points(zkey.points_b2, curve)]
    pi_b = lincomb(g2(g2_from_limbs(zkey.beta2, curve)), b2, witness)
    pi_c = lincomb(ec.Z1, g1s(zkey.points_c), witness[zkey.n_public + 1 :])
    pi_c = lincomb(pi_c, g1s(zkey.points_h), h)
    return g1_affine(pi_a, ec), g2_affine(pi_b, ec), g1_affine(pi_c, ec)


def prove_files(zkey, wtns_values, r=None, s=None):
    """prove() with the witness given as the (n, 4) limb array read_wtns returns."""
    return prove(zkey, limbs_to_ints(wtns_values), r, s)


def verify(vk, public: list[int], proof) -> bool:
    """Groth16 verification with py_ecc. `vk` has alpha1, beta2, gamma2, delta2, ic (a
    cuzk.formats.VerificationKey); `proof` is (pi_a, pi_b, pi_c) affine ints."""
    pi_a, pi_b, pi_c = proof
    if len(public) != len(vk.ic) - 1:
        return False
    if any(not 0 <= x < R for x in public):
        return False
    A, Bq, C = g1_jac(pi_a), g2_jac(pi_b), g1_jac(pi_c)
    if not (bn.is_on_curve(A, bn.b) and bn.is_on_curve(Bq, bn.b2) and bn.is_on_curve(C, bn.b)):
        return False
    # G2 points must lie in the order-r subgroup (G1 has cofactor 1).
    if not bn.is_inf(bn.multiply(Bq, R)):
        return False
    vk_x = g1_jac(vk.ic[0])
    for x, P in zip(public, vk.ic[1:], strict=True):
        vk_x = bn.add(vk_x, bn.multiply(g1_jac(P), x))
    f = bn.FQ12.one()
    for Q, P in (
        (Bq, bn.neg(A)),
        (g2_jac(vk.beta2), g1_jac(vk.alpha1)),
        (g2_jac(vk.gamma2), vk_x),
        (g2_jac(vk.delta2), C),
    ):
        if bn.is_inf(P) or bn.is_inf(Q):
            continue  # e(., O) = e(O, .) = 1
        f = f * bn.pairing(Q, P, final_exponentiate=False)
    return bn.final_exponentiate(f) == bn.FQ12.one()


# One general-position pair appended to every drawn batch, so that each example (the CUDA
# runs draw only a few) exercises the main formula and not only the exceptional branches.
GENERAL = (0x1D6B2A9C4E7F3051, 0x5A3C9E1B7D2F4068)


def paired(ks, ls, relation="any"):
    """ks and ls of equal length (ls cycled), related as asked, plus the general pair."""
    ls = (ls * len(ks))[: len(ks)]
    if relation == "equal":
        ls = list(ks)
    elif relation == "opposite":
        ls = [-k for k in ks]
    return [*ks, GENERAL[0]], [*ls, GENERAL[1]]
