"""PLONK verification for snarkjs proofs (plonk_verify.js), on Python ints.

A proof (commitments A, B, C, Z, T1, T2, T3, Wxi, Wxiw and evaluations a, b, c, s1, s2,
zw at xi, resp. xi w) of public signals p_1..p_l verifies under a key (Qm, Ql, Qr, Qo, Qc,
S1, S2, S3, X_2 = [tau]_2, k1, k2, n = 2^power) when, with the transcript's challenges
beta, gamma, alpha, xi, v, u (cuzk.plonk.transcript), Z_H(xi) = xi^n - 1 and
L_i(xi) = w^(i-1) Z_H(xi) / (n (xi - w^(i-1))):

    PI = -sum_i p_i L_i(xi)
    r0 = PI - L_1(xi) alpha^2 - alpha (a + beta s1 + gamma)(b + beta s2 + gamma)(c + gamma) zw
    D  = ab Qm + a Ql + b Qr + c Qo + Qc
         + (alpha (a + beta xi + gamma)(b + beta k1 xi + gamma)(c + beta k2 xi + gamma)
            + alpha^2 L_1(xi) + u) Z
         - alpha beta zw (a + beta s1 + gamma)(b + beta s2 + gamma) S3
         - Z_H(xi) (T1 + xi^n T2 + xi^2n T3)
    F  = D + v A + v^2 B + v^3 C + v^4 S1 + v^5 S2
    E  = (-r0 + v a + v^2 b + v^3 c + v^4 s1 + v^5 s2 + u zw) [1]_1
    e(-(Wxi + u Wxiw), [tau]_2) e(xi Wxi + u xi w Wxiw + F - E, [1]_2) = 1.

F - E and the left point are each computed as one linear combination of affine points
(cuzk.arith.pairing_int), then one two-pair pairing product. Inputs are read by
cuzk.formats.plonk_json (shapes, ranges, points on the curve); this module adds the
subgroup checks: X_2 in G2, and on BLS12-381, whose G1 has a cofactor, every G1 point in G1
(as the Groth16 verifier does). Refused input raises a FormatError; False means a
well-formed proof that fails the check. The curve is the one the files name (BN254 or
BLS12-381).
"""

from __future__ import annotations

import os

from cuzk.formats import curve as curves
from cuzk.formats.errors import NotInSubgroup, UnsupportedProtocol
from cuzk.formats.plonk_json import COMMITMENTS, VK_G1, proof_from_json, vk_from_json
from cuzk.formats.snarkjs_json import load, parse_public
from cuzk.plonk.transcript import challenges as draw_challenges


def _ops(curve):
    from cuzk.arith import pairing_int

    return pairing_int.for_curve(curve.arith)


def _constants(curve):
    from cuzk.arith.curves import constants

    return constants(curve.arith)


def check_vk(vk: dict, where: str) -> dict:
    """A key from plonk_json.vk_from_json with its group checks done: X_2 in G2, and on a
    curve whose G1 has a cofactor, the G1 points in G1."""
    curve, ops = vk["curve"], _ops(vk["curve"])
    if vk["X_2"] is not None and not ops.g2_in_subgroup(vk["X_2"]):
        raise NotInSubgroup(f"{where}: X_2", "G2 point is not in the order-r subgroup")
    if curve is not curves.BN254:
        for name in VK_G1:
            _require_g1(ops, vk[name], f"{where}: {name}")
    return vk


def _require_g1(ops, p, where: str) -> None:
    if p is not None and not ops.g1_in_subgroup(p):
        raise NotInSubgroup(where, "G1 point is on the curve but not in the order-r subgroup")


def lagrange_at(xi: int, count: int, power: int, curve) -> tuple[int, list[int]]:
    """(Z_H(xi), [L_1(xi), .., L_count(xi)]) on the domain of 2^power (snarkjs's roots)."""
    r = curve.r
    n = 1 << power
    w = _constants(curve).fr_roots_of_unity()[power]
    zh = (pow(xi, n, r) - 1) % r
    out, wi = [], 1
    for _ in range(count):
        den = n * (xi - wi) % r
        out.append(wi * zh * pow(den, -1, r) % r if den else 0)
        wi = wi * w % r
    return zh, out


def kernel_combination(curve):
    """sum_i k_i P_i (affine ints, None = infinity) by the MSM kernels (cuzk.kernels.msm_cpu:
    ~1 ms for the verifier's 18 points, where Python ints take ~70-100 ms): for the processes
    that prove, which have those kernels loaded (`cuzk prove`'s check of its proof, the
    engine's self-verification); `cuzk verify` keeps Python ints and imports no kernels."""
    import functools

    from cuzk.kernels.verifier_ops import g1_combination

    return functools.partial(g1_combination, curve=curve)


def kernel_pairing(curve):
    """The pairing product check of the native library (cuzk.kernels.verifier_ops: ~2 ms, where
    Python ints take ~15 ms) for a process that proves on it, else None (Python ints): no
    process loads numba for it."""
    from cuzk import native

    if not native.serves(curve.arith):
        return None
    from cuzk.kernels.verifier_ops import for_curve

    return for_curve(curve.arith).pairing_product_is_one


def verify(
    vk: dict, public: list[int], commitments: dict, evaluations: dict, combine=None, pairing=None
) -> bool:
    """True iff the proof verifies (module docstring). vk: a checked key (check_vk);
    public: ints below r, nPublic of them; commitments / evaluations as read by
    plonk_json.proof_from_json (G1 points of the key's curve, in G1). `combine`: how
    sum_i k_i P_i is computed (kernel_combination's, or Python ints by default); `pairing`:
    how the product of the two pairings is checked (kernel_pairing's, or Python ints by
    default)."""
    curve = vk["curve"]
    r = curve.r
    ops = _ops(curve)
    combine = combine or ops.g1_linear_combination
    pairing = pairing or ops.pairing_product_is_one
    ch = draw_challenges(curve, vk, public, commitments, evaluations)
    beta, gamma, alpha, xi, v1, u = (ch[k] for k in ("beta", "gamma", "alpha", "xi", "v", "u"))
    v = [None, v1]
    for _ in range(4):
        v.append(v[-1] * v1 % r)
    a, b, c = evaluations["eval_a"], evaluations["eval_b"], evaluations["eval_c"]
    s1, s2, zw = evaluations["eval_s1"], evaluations["eval_s2"], evaluations["eval_zw"]
    power = vk["power"]
    zh, lag = lagrange_at(xi, max(1, vk["n_public"]), power, curve)
    if any(not x for x in lag) and zh:  # xi on the domain: no such challenge in practice
        return False
    l1 = lag[0]
    xin = (zh + 1) % r
    alpha2 = alpha * alpha % r
    pi = -sum(p * lag[i] for i, p in enumerate(public)) % r
    e3ab = (a + beta * s1 + gamma) * (b + beta * s2 + gamma) % r
    r0 = (pi - l1 * alpha2 - alpha * e3ab * (c + gamma) * zw) % r
    betaxi = beta * xi % r
    d2 = (
        alpha
        * (a + betaxi + gamma)
        * (b + betaxi * vk["k1"] + gamma)
        * (c + betaxi * vk["k2"] + gamma)
        + alpha2 * l1
        + u
    ) % r
    d3 = alpha * beta * zw % r * e3ab % r
    e = (-r0 + v[1] * a + v[2] * b + v[3] * c + v[4] * s1 + v[5] * s2 + u * zw) % r
    w = _constants(curve).fr_roots_of_unity()[power]
    generator = _constants(curve).G1_GENERATOR
    # B1 = xi Wxi + u xi w Wxiw + D + v A + v^2 B + v^3 C + v^4 S1 + v^5 S2 - E
    terms = [
        (vk["Qm"], a * b),
        (vk["Ql"], a),
        (vk["Qr"], b),
        (vk["Qo"], c),
        (vk["Qc"], 1),
        (commitments["Z"], d2),
        (vk["S3"], -d3),
        (commitments["T1"], -zh),
        (commitments["T2"], -zh * xin),
        (commitments["T3"], -zh * xin * xin),
        (commitments["A"], v[1]),
        (commitments["B"], v[2]),
        (commitments["C"], v[3]),
        (vk["S1"], v[4]),
        (vk["S2"], v[5]),
        (tuple(generator), -e),
        (commitments["Wxi"], xi),
        (commitments["Wxiw"], u * xi * w),
    ]
    b1 = combine([p for p, _ in terms], [k % r for _, k in terms])
    # -A1 = -(Wxi + u Wxiw)
    neg_a1 = combine([commitments["Wxi"], commitments["Wxiw"]], [r - 1, (-u) % r])
    g2 = tuple(_constants(curve).G2_GENERATOR)
    return pairing([(neg_a1, vk["X_2"]), (b1, g2)])


def verify_objects(
    vk_obj, public_obj, proof_obj, where=("verification_key.json", "public.json", "proof.json")
) -> bool:
    """verify() on the parsed JSON objects of snarkjs's three files (`where` names them)."""
    vk_where, public_where, proof_where = where
    vk = check_vk(vk_from_json(vk_obj, vk_where), vk_where)
    curve = vk["curve"]
    public = parse_public(public_obj, vk["n_public"], public_where, curve)
    proof_curve, commitments, evaluations = proof_from_json(proof_obj, proof_where)
    if proof_curve is not curve:
        raise UnsupportedProtocol(
            proof_where,
            f"the proof is on {proof_curve.title} but the key ({vk_where}) on {curve.title}",
        )
    if curve is not curves.BN254:
        ops = _ops(curve)
        for name in COMMITMENTS:
            _require_g1(ops, commitments[name], f"{proof_where}: {name}")
    return verify(vk, public, commitments, evaluations)


def verify_files(vk_json, public_json, proof_json) -> bool:
    """`snarkjs plonk verify` on files: verification_key.json, public.json, proof.json."""
    paths = tuple(os.fspath(p) for p in (vk_json, public_json, proof_json))
    return verify_objects(
        load(vk_json, "verification key"),
        load(public_json, "public signals"),
        load(proof_json, "proof"),
        paths,
    )
