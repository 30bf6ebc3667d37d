"""cuzk.formats on BLS12-381 against the committed tests/fixtures/tiny381 (circom2 -p bls12381,
a snarkjs bls12381 ceremony, snarkjs setup and proofs: tests/fixtures/make_fixtures.py), with
py_ecc's optimized_bls12_381 as the outside reference for the curve equations and the pairing.
The prover and the verifier are BN254's: they refuse these files with one-line errors."""

from __future__ import annotations

import json
import shutil
import struct

import interop
import numpy as np
import pytest
from click.testing import CliRunner
from py_ecc import optimized_bls12_381 as bls

from cuzk.arith import bls12_381
from cuzk.arith.radix import limbs_to_int, limbs_to_ints
from cuzk.formats import (
    R1CS,
    BadSectionSize,
    UnsupportedCurve,
    UnsupportedProtocol,
    VerificationKey,
    WrongPrime,
    ZKey,
    from_mont_q,
    g1_array_to_points,
    g1_from_limbs,
    g1_to_limbs,
    g2_array_to_points,
    g2_from_limbs,
    g2_to_limbs,
    read_proof,
    read_public,
    read_wtns,
    to_mont_q,
    verification_key,
    write_wtns,
    write_zkey,
    zkey_coef_to_int,
)
from cuzk.formats import curve as curves
from cuzk.formats.binfile import BinFile
from cuzk.formats.snarkjs_json import dumps, fq12_from_py_ecc, proof_to_json
from cuzk.formats.snarkjs_json import load as load_json

DIR = interop.ROOT / "tests" / "fixtures" / "tiny381"
ZKEY, ZKEY0, R1CS_PATH, VK = (
    DIR / "circuit.zkey",
    DIR / "circuit_0000.zkey",
    DIR / "circuit.r1cs",
    DIR / "verification_key.json",
)
Q, R = bls12_381.FQ_MODULUS, bls12_381.FR_MODULUS
SETS = (0, 1)


def _vk_json():
    return json.loads(VK.read_text())


def _on_g1(p) -> bool:
    return p is None or bls.is_on_curve((bls.FQ(p[0]), bls.FQ(p[1]), bls.FQ.one()), bls.b)


def _on_g2(p) -> bool:
    if p is None:
        return True
    pt = (bls.FQ2(list(p[0])), bls.FQ2(list(p[1])), bls.FQ2.one())
    return bls.is_on_curve(pt, bls.b2)


def test_the_curve_table_is_derived_from_cuzk_arith():
    c = curves.BLS12_381
    assert (c.name, c.arith, c.q, c.r) == ("bls12381", "bls12_381", Q, R)
    assert (c.n8q, c.n8r, c.g1_limbs, c.g2_limbs) == (48, 32, 12, 24)
    assert (curves.BN254.n8q, curves.BN254.g1_limbs, curves.BN254.g2_limbs) == (32, 8, 16)
    assert c.fr_two_adicity == 32 and curves.BN254.fr_two_adicity == 28
    assert curves.by_q(Q) is c and curves.by_r(R) is c and curves.by_q(R) is None
    # snarkjs folds case and punctuation when it reads a curve's name
    for text in ("bls12381", "BLS12-381", "bls12_381"):
        assert curves.by_json_name(text) is c
    assert curves.by_json_name("bls12377") is None
    assert curves.by_name("bls12_381") is c and curves.by_name("bn254") is curves.BN254


def test_zkey_header_matches_r1cs_and_snarkjs_vk():
    z, cs, vk = ZKey(ZKEY), R1CS(R1CS_PATH), _vk_json()
    assert (z.curve, cs.curve) == ("bls12381", "bls12381")
    assert z.curve_info is curves.BLS12_381
    assert (z.n8q, z.q, z.n8r, z.r) == (48, Q, 32, R)
    assert (z.n_vars, z.n_public, z.domain_size) == (cs.n_wires, cs.n_public, 4)
    assert z.n_constraints == cs.n_constraints == 1
    assert z.alpha1.shape == z.beta1.shape == z.delta1.shape == (12,)
    assert z.beta2.shape == z.gamma2.shape == z.delta2.shape == (24,)
    assert z.ic.shape == (3, 12) and z.points_b2.shape == (4, 24)
    assert z.points_h.shape == (4, 12) and z.points_c.shape == (1, 12)
    assert vk["nPublic"] == z.n_public
    assert [str(v) for v in g1_from_limbs(z.alpha1, "bls12381")] == vk["vk_alpha_1"][:2]
    beta2 = g2_from_limbs(z.beta2, "bls12381")
    assert [[str(c) for c in pair] for pair in beta2] == vk["vk_beta_2"][:2]
    ic = g1_array_to_points(z.ic, "bls12381")
    assert [[str(x), str(y), "1"] for x, y in ic] == vk["IC"]


def test_zkey_points_lie_on_the_curve_and_the_twist():
    z = ZKey(ZKEY)
    g1 = [z.alpha1, z.beta1, z.delta1, *z.ic, *z.points_a, *z.points_b1, *z.points_c]
    g1 += list(z.points_h)
    points = [g1_from_limbs(p, z.curve) for p in g1]
    assert all(_on_g1(p) for p in points)
    assert sum(p is not None for p in points) > 10
    g2 = g2_array_to_points(np.vstack([z.beta2, z.gamma2, z.delta2, z.points_b2]), z.curve)
    assert all(_on_g2(p) for p in g2)
    # the check can fail: x and y swapped is not a point
    assert not _on_g1(g1_from_limbs(z.alpha1, "bls12381")[::-1])


def test_zkey_coefficients_are_the_r1cs_a_and_b_matrices():
    z, cs = ZKey(ZKEY), R1CS(R1CS_PATH)
    got = {}
    for e in z.coefficients:
        key = (int(e["matrix"]), int(e["constraint"]), int(e["signal"]))
        got[key] = zkey_coef_to_int(e["value"], z.curve)
    want = {}
    for i, (a, b, _) in enumerate(cs.constraints()):
        want.update({(0, i, s): v for s, v in a.items()})
        want.update({(1, i, s): v for s, v in b.items()})
    for s in range(z.n_public + 1):  # snarkjs's rows for the public signals
        want[(0, cs.n_constraints + s, s)] = 1
    assert got == want
    assert want[(0, 0, 2)] == R - 1  # c = a*b is stored as (-a) * b = -c


@pytest.mark.parametrize("k", SETS)
def test_witness_satisfies_the_r1cs_and_matches_public_json(k):
    w = read_wtns(DIR / f"witness_{k}.wtns")
    assert (w.prime, w.curve) == (R, "bls12381")
    values = limbs_to_ints(w.values)
    assert R1CS(R1CS_PATH).first_unsatisfied(values) is None
    assert read_public(DIR / f"public_{k}.json", "bls12381") == values[1:3]
    inputs = json.loads((DIR / f"input_{k}.json").read_text())
    assert values[2:] == [int(inputs["a"]), int(inputs["b"])]
    # a value of the set 1 is above BN254's r: this witness only makes sense on its own field
    assert k == 0 or max(values) > curves.BN254.r


def test_zkey_writer_reproduces_snarkjs_setup_bytes(tmp_path):
    write_zkey(tmp_path / "copy.zkey", ZKey(ZKEY0))
    assert (tmp_path / "copy.zkey").read_bytes() == ZKEY0.read_bytes()


def test_zkey_writer_round_trips_the_contributed_key(tmp_path):
    """`snarkjs zkey contribute` writes sections in id order, cuzk in setup's order: the same
    content, and writing what was read gives the same bytes again."""
    a, b = tmp_path / "a.zkey", tmp_path / "b.zkey"
    write_zkey(a, ZKey(ZKEY))
    write_zkey(b, ZKey(a))
    assert a.read_bytes() == b.read_bytes()
    src, copy = ZKey(ZKEY).data(), ZKey(a).data()
    for name, value in vars(src).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(copy, name)), name
        else:
            assert value == getattr(copy, name), name
    for sid in range(1, 11):
        s1, s2 = BinFile(ZKEY, "zkey", (1,)), BinFile(a, "zkey", (1,))
        x, y = s1.section(sid, ""), s2.section(sid, "")
        assert s1.read_bytes(x.offset, x.size) == s2.read_bytes(y.offset, y.size), sid


def test_zkey_writer_refuses_points_of_the_wrong_width(tmp_path):
    data = ZKey(ZKEY).data()
    data.alpha1 = data.alpha1[:8]
    with pytest.raises(ValueError, match=r"alpha1 has shape \(8,\), expected \(12,\)"):
        write_zkey(tmp_path / "bad.zkey", data)
    data = ZKey(ZKEY).data()
    data.r = curves.BN254.r
    with pytest.raises(ValueError, match="not one known curve's primes"):
        write_zkey(tmp_path / "bad.zkey", data)


@pytest.mark.parametrize("k", SETS)
def test_wtns_writer_round_trips(k, tmp_path):
    src = DIR / f"witness_{k}.wtns"
    write_wtns(tmp_path / "w.wtns", limbs_to_ints(read_wtns(src).values), prime=R)
    assert (tmp_path / "w.wtns").read_bytes() == src.read_bytes()
    write_wtns(tmp_path / "a.wtns", read_wtns(src).values, prime=R)
    assert (tmp_path / "a.wtns").read_bytes() == src.read_bytes()


def test_montgomery_and_point_limbs_round_trip():
    x = Q - 12345
    limbs = to_mont_q(x, "bls12381")
    assert limbs.shape == (6,)
    assert limbs_to_int(limbs) == (x << 384) % Q  # R = 2^384 on 6 limbs
    assert from_mont_q(limbs, "bls12381") == x
    g1 = bls12_381.G1_GENERATOR
    assert g1_from_limbs(g1_to_limbs(g1, "bls12381"), "bls12381") == g1
    g2 = bls12_381.G2_GENERATOR
    assert g2_from_limbs(g2_to_limbs(g2, "bls12381"), "bls12381") == g2
    assert not g1_to_limbs(None, "bls12381").any() and g2_to_limbs(None, "bls12381").shape == (24,)
    with pytest.raises(ValueError, match="has 12 limbs"):
        g1_from_limbs(np.ones(8, np.uint64), "bls12381")


def test_verification_key_is_snarkjs_byte_for_byte_given_alphabeta():
    """Everything of `snarkjs zkey export verificationkey` but e(alpha1, beta2) (which needs
    the BLS12-381 pairing) comes from the key: given snarkjs's value, the text is its own."""
    vk = VerificationKey(VK, curves_allowed=None)
    assert vk.curve == "bls12381"
    obj = verification_key(ZKey(ZKEY), alphabeta=vk.alphabeta)
    assert dumps(obj) == VK.read_text()


def test_snarkjs_alphabeta_is_the_textbook_pairing_to_the_minus_3():
    """What vk_alphabeta_12 is on BLS12-381 (for the pairing that will compute it): snarkjs's
    final exponentiation (wasmcurves, the zkcrypto chain) yields e(alpha1, beta2)^-3 of the
    textbook reduced ate pairing (py_ecc's), in the tower u^2 = -1, v^3 = 1 + u, w^2 = v."""
    vk = _vk_json()
    a, b = vk["vk_alpha_1"], vk["vk_beta_2"]
    p = (bls.FQ(int(a[0])), bls.FQ(int(a[1])), bls.FQ.one())
    q = tuple(bls.FQ2([int(c) for c in b[i]]) for i in range(2)) + (bls.FQ2.one(),)
    f = bls.pairing(q, p)
    tower = fq12_from_py_ecc(f.inv() ** 3, "bls12381")
    assert [[[str(c0), str(c1)] for c0, c1 in fq6] for fq6 in tower] == vk["vk_alphabeta_12"]
    assert fq12_from_py_ecc(f, "bls12381") != fq12_from_py_ecc(f.inv() ** 3, "bls12381")


def test_export_vk_of_a_bls_key(tmp_path):
    """Byte for byte snarkjs's file (vk_alphabeta_12 by the BLS12-381 pairing on Python ints,
    which raises to snarkjs's power)."""
    from cuzk.cli import main

    out = tmp_path / "vk.json"
    res = CliRunner().invoke(main, ["export-vk", str(ZKEY), str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == VK.read_bytes()


@pytest.mark.parametrize("k", SETS)
def test_proof_and_public_json_round_trip_byte_for_byte(k):
    proof_path, public_path = DIR / f"proof_{k}.json", DIR / f"public_{k}.json"
    points = read_proof(proof_path, curves_allowed=None)
    assert _on_g1(points[0]) and _on_g2(points[1]) and _on_g1(points[2])
    assert max(points[0]) > curves.BN254.q  # BLS12-381 coordinates, wider than BN254's
    assert dumps(proof_to_json(*points, "bls12381")) == proof_path.read_text()
    signals = read_public(public_path, "bls12381")
    assert dumps([str(s) for s in signals]) == public_path.read_text()


def test_bn254_readers_refuse_bls_json_in_one_line():
    with pytest.raises(UnsupportedProtocol, match=r"curve 'bls12381' is not bn128 \(BN254\)"):
        read_proof(DIR / "proof_0.json")
    with pytest.raises(UnsupportedProtocol, match="is not bn128"):
        VerificationKey(VK)
    # a BLS12-381 coordinate is not below BN254's q, and a signal of set 1 not below its r
    obj = load_json(DIR / "proof_0.json", "proof")
    obj["curve"] = "bn128"
    from cuzk.formats import NotInField
    from cuzk.formats.snarkjs_json import proof_from_json

    with pytest.raises(NotInField, match="digit number is not below|not below the base field"):
        proof_from_json(obj, "p.json")
    with pytest.raises(NotInField, match="not below the scalar field prime r"):
        read_public(DIR / "public_1.json")


def test_json_points_off_the_bls_curve_are_refused():
    from cuzk.formats import NotOnCurve
    from cuzk.formats.snarkjs_json import proof_from_json

    obj = load_json(DIR / "proof_0.json", "proof")
    obj["pi_a"][1] = str((int(obj["pi_a"][1]) + 1) % Q)
    with pytest.raises(NotOnCurve, match=r"p.json: pi_a: .*y\^2 = x\^3 \+ 4"):
        proof_from_json(obj, "p.json", None)
    obj = load_json(DIR / "proof_0.json", "proof")
    obj["pi_b"][0][1] = str((int(obj["pi_b"][0][1]) + 1) % Q)
    with pytest.raises(NotOnCurve, match=r"pi_b: .*twist y\^2 = x\^3 \+ 4\(1\+u\)"):
        proof_from_json(obj, "p.json", None)


# --- damaged BLS12-381 files --------------------------------------------------------------


def _copy(src, tmp_path):
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    return dst


def _patch(path, offset, data: bytes):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def _header(path):
    return BinFile(path, "zkey", (1,)).section(2, "")


def test_zkey_with_a_damaged_prime_is_refused(tmp_path):
    z = _copy(ZKEY, tmp_path)
    _patch(z, _header(z).offset + 4, (Q - 2).to_bytes(48, "little"))
    with pytest.raises(WrongPrime, match=r"n8q = 48: base field prime q = 0x1a01.* not BLS12-381"):
        ZKey(z)
    z = _copy(ZKEY, tmp_path)
    _patch(z, _header(z).offset + 4 + 48 + 4, (R + 2).to_bytes(32, "little"))
    with pytest.raises(WrongPrime, match="scalar field prime r = .* is not BLS12-381's"):
        ZKey(z)


@pytest.mark.parametrize("n8q", [32, 40, 64])
def test_zkey_with_a_wrong_n8q_is_refused(tmp_path, n8q):
    z = _copy(ZKEY, tmp_path)
    _patch(z, _header(z).offset, struct.pack("<I", n8q))
    with pytest.raises(WrongPrime, match=f"n8q = {n8q}") as e:
        ZKey(z)
    assert str(e.value).startswith(str(z)) and "\n" not in str(e.value)


def test_zkey_point_sections_are_sized_with_the_curve(tmp_path):
    z = _copy(ZKEY, tmp_path)
    s = _header(z).offset + 4 + 48 + 4 + 32
    _patch(z, s, struct.pack("<I", 5))  # nVars 4 -> 5
    with pytest.raises(BadSectionSize, match=r"pointsA section \(5\) is 384 bytes, expected 5 G1"):
        ZKey(z)
    z = _copy(ZKEY, tmp_path)
    data = bytearray(z.read_bytes())
    sec = BinFile(z, "zkey", (1,)).section(2, "")
    # the Groth16 header one G2 point short: BN254's size would not fit either
    data[sec.offset - 8 : sec.offset] = struct.pack("<Q", sec.size - 192)
    z.write_bytes(bytes(data[: sec.offset + sec.size - 192]) + bytes(data[sec.offset + sec.size :]))
    with pytest.raises(BadSectionSize, match="Groth16 header section"):
        ZKey(z)


def test_wtns_and_r1cs_with_a_damaged_prime_are_refused(tmp_path):
    w = _copy(DIR / "witness_0.wtns", tmp_path)
    _patch(w, BinFile(w, "wtns", (2,)).section(1, "").offset + 4, (R - 2).to_bytes(32, "little"))
    with pytest.raises(WrongPrime, match="not the scalar field r of BN254 or BLS12-381"):
        read_wtns(w)
    r = _copy(R1CS_PATH, tmp_path)
    _patch(r, BinFile(r, "r1cs", (1,)).section(1, "").offset + 4, (R + 1).to_bytes(32, "little"))
    with pytest.raises(WrongPrime, match="prime"):
        R1CS(r)


def test_wtns_values_are_checked_against_their_own_r(tmp_path):
    w = _copy(DIR / "witness_0.wtns", tmp_path)
    raw = bytearray(w.read_bytes())
    raw[-32:] = R.to_bytes(32, "little")  # the last value = r: not canonical
    w.write_bytes(bytes(raw))
    from cuzk.formats import BadValue

    with pytest.raises(BadValue, match=r"w\[3\] is not below the scalar field prime r"):
        read_wtns(w)


# --- the BN254 prover, setup and verifier refuse BLS12-381 files -------------------------


def test_readers_limited_to_bn254_refuse_bls_files():
    msg = r"the curve is bls12381 \(BLS12-381\); cuzk .* on bn128 \(BN254\) only"
    with pytest.raises(UnsupportedCurve, match=msg):
        ZKey(ZKEY, curves_allowed=curves.BN254_ONLY)
    with pytest.raises(UnsupportedCurve, match=msg):
        read_wtns(DIR / "witness_0.wtns", curves_allowed=curves.BN254_ONLY)
    with pytest.raises(UnsupportedCurve, match=msg):
        R1CS(R1CS_PATH, curves_allowed=curves.BN254_ONLY)


def test_a_bls_key_opens_for_proving_and_registers_with_its_curve():
    """The prover takes keys of either curve (tests/test_prover.py proves with this one); the
    engine registers it and reports its curve (no running engine needed)."""
    from cuzk.engine import Engine
    from cuzk.groth16.key import ProvingKey

    key = ProvingKey.open(ZKEY)
    assert (key.curve, key.arith_curve) == ("bls12381", "bls12_381")
    eng = Engine(prover="cuzk.groth16")
    key_id = eng.register_key(ZKEY)
    (k,) = eng.keys()
    assert k["key_id"] == key_id == key.key_id and k["curve"] == "bls12381"


def test_cuzk_verify_of_a_bls_proof_through_click():
    """(tests/test_verify_bls12_381.py has the verdicts; here the click command's path.)"""
    from cuzk.cli import main

    args = ["verify", str(VK), str(DIR / "public_0.json"), str(DIR / "proof_0.json")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and res.output.startswith("OK"), res.output


# --- with the real tools --------------------------------------------------------------------


@pytest.mark.interop
def test_snarkjs_proves_with_bls_zkey_and_wtns_written_by_cuzk(tools, tmp_path):
    """A fresh circom2 -p bls12381 build reads as the committed one; snarkjs proves and
    verifies with the key and witness as cuzk rewrote them."""
    compiled = interop.compile_circuit(
        interop.ROOT / "tests" / "circuits" / "tiny.circom", tmp_path, prime="bls12381"
    )
    cs = R1CS(compiled.r1cs)
    assert (cs.curve, cs.n_wires, cs.n_constraints) == ("bls12381", 4, 1)
    wtns = interop.calculate_witness(compiled.wasm, {"a": 5, "b": R - 9}, tmp_path / "w.wtns")
    w = read_wtns(wtns)
    assert w.curve == "bls12381" and limbs_to_ints(w.values) == [1, R - 45, 5, R - 9]
    write_zkey(tmp_path / "copy.zkey", ZKey(ZKEY))
    write_wtns(tmp_path / "copy.wtns", limbs_to_ints(w.values), prime=R)
    proof, public = interop.groth16_prove(
        tmp_path / "copy.zkey", tmp_path / "copy.wtns", tmp_path / "p.json", tmp_path / "pub.json"
    )
    assert interop.groth16_verify(VK, public, proof)
    assert read_public(public, "bls12381") == [R - 45, 5]
    points = read_proof(proof, curves_allowed=None)
    assert dumps(proof_to_json(*points, "bls12381")) == proof.read_text()
    vk = interop.export_vk(tmp_path / "copy.zkey", tmp_path / "vk.json")
    assert vk.read_bytes() == VK.read_bytes()
