"""snarkjs's PLONK files: the zkey reader (cuzk.formats.plonk_zkey), the proof and
verification key JSON (cuzk.formats.plonk_json) and the protocol dispatch, against the
committed snarkjs fixtures (tests/fixtures/make_fixtures.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from cuzk.arith.curves import constants
from cuzk.formats.errors import (
    BadJson,
    BadSectionSize,
    BadValue,
    NotInField,
    NotOnCurve,
    Truncated,
    UnsupportedProtocol,
)
from cuzk.formats.plonk_json import (
    proof_from_json,
    proof_to_json,
    read_proof,
    verification_key,
    vk_from_json,
)
from cuzk.formats.plonk_zkey import PlonkZKey
from cuzk.formats.snarkjs_json import dumps
from cuzk.formats.stored import from_mont_r
from cuzk.formats.zkey import ZKey, zkey_protocol


def ints(rows, curve) -> list[int]:
    return [from_mont_r(row, curve) for row in rows]


def test_header_and_sections(plonk_circuit):
    key = PlonkZKey(plonk_circuit.plonk_zkey)
    vk = json.loads(plonk_circuit.plonk_vk.read_text())
    n = key.domain_size
    assert key.curve == vk["curve"] and key.n_public == vk["nPublic"] and 2 ** vk["power"] == n
    assert (key.k1, key.k2) == (2, 3)  # snarkjs's choice
    assert key.n_constraints <= n and n >= 8
    assert key.qm.coefficients.shape == (n, 4) and key.qm.evaluations.shape == (4 * n, 4)
    assert len(key.lagrange) == max(1, key.n_public)
    assert key.ptau.shape == (n + 6, key.curve_info.g1_limbs)
    assert key.a_map.shape == (key.n_constraints,)
    # the public gates come first: gate i reads signal i + 1 on wire a
    assert list(key.a_map[: key.n_public]) == list(range(1, key.n_public + 1))


def test_nested_has_additions(circuit_named):
    key = PlonkZKey(circuit_named("nested").plonk_zkey)
    assert key.n_additions == 6 and key.n_witness == 22  # the circuit's wires


def test_stored_evaluations_are_the_plain_4n_domain(circuit_named):
    """Each polynomial's 4n evaluations are its coefficients' values at w_4n^i (no coset)."""
    key = PlonkZKey(circuit_named("mulchain").plonk_zkey)
    c = key.curve_info
    r, n = c.r, key.domain_size
    w4 = constants(c.arith).fr_roots_of_unity()[key.power + 2]
    for poly in (key.ql, key.s2, key.lagrange[0]):
        coefs = ints(poly.coefficients, c)
        evals = ints(poly.evaluations[::5], c)  # every fifth point, to stay quick
        for j, e in zip(range(0, 4 * n, 5), evals, strict=True):
            x = pow(w4, j, r)
            assert sum(a * pow(x, i, r) for i, a in enumerate(coefs)) % r == e


def test_lagrange_basis(circuit_named):
    """L_1's evaluations on the domain are 1, 0, 0, ... (every fourth point of the 4n)."""
    key = PlonkZKey(circuit_named("mulchain").plonk_zkey)
    values = ints(key.lagrange[0].evaluations[::4], key.curve_info)
    assert values == [1] + [0] * (key.domain_size - 1)


def test_lagrange_polynomials_read_when_asked(circuit_named):
    """Every L_i is L_1 on the domain moved by i - 1 rows (1 at row i - 1), from a mapped
    key and from a private one alike; a private key reads none of them until asked (the
    prover reads L_1 alone: 160 bytes a gate per public signal stay on disk)."""
    path = circuit_named("nested").plonk_zkey
    mapped, private = PlonkZKey(path), PlonkZKey(path, private=True)
    assert len(mapped.lagrange) == len(private.lagrange) == mapped.n_public > 2
    assert private.lagrange._made == {}
    n = mapped.domain_size
    for i, (m, p) in enumerate(zip(mapped.lagrange, private.lagrange, strict=True)):
        assert (m.evaluations == p.evaluations).all()
        assert (m.coefficients == p.coefficients).all()
        values = ints(p.evaluations[::4], mapped.curve_info)
        assert values == [0] * i + [1] + [0] * (n - 1 - i)
    assert private.lagrange[-1] is private.lagrange[len(private.lagrange) - 1]
    with pytest.raises(IndexError, match="Lagrange"):
        private.lagrange[len(private.lagrange)]


def test_export_vk_matches_snarkjs(plonk_circuit):
    vk = verification_key(PlonkZKey(plonk_circuit.plonk_zkey))
    assert dumps(vk) == plonk_circuit.plonk_vk.read_text()


def test_protocol_dispatch(circuit_named):
    tiny = circuit_named("tiny")
    assert zkey_protocol(tiny.zkey) == 1
    assert zkey_protocol(tiny.dir / "plonk.zkey") == 2
    assert zkey_protocol(tiny.dir / "fflonk.zkey") == 10
    with pytest.raises(UnsupportedProtocol, match=r"protocol id 2 \(plonk\), not groth16"):
        ZKey(tiny.dir / "plonk.zkey")
    with pytest.raises(UnsupportedProtocol, match=r"protocol id 1 \(groth16\), not plonk"):
        PlonkZKey(tiny.zkey)
    for reader in (ZKey, PlonkZKey):
        with pytest.raises(UnsupportedProtocol, match=r"id 10 \(fflonk\) is not supported"):
            reader(tiny.dir / "fflonk.zkey")


def _patched(tmp_path, src, offset: int, data: bytes):
    out = tmp_path / "bad.zkey"
    shutil.copy(src, out)
    with open(out, "r+b") as f:
        f.seek(offset)
        f.write(data)
    return out


def test_bad_wire_index_refused(tmp_path, circuit_named):
    src = circuit_named("mulchain").plonk_zkey
    key = PlonkZKey(src)
    offset = key.file.section(5, "B map").offset + 4 * 3
    bad = _patched(tmp_path, src, offset, (key.n_vars).to_bytes(4, "little"))
    with pytest.raises(BadValue, match="gate 3 has B signal 20 >= nVars = 20"):
        PlonkZKey(bad)


def test_bad_addition_refused(tmp_path, circuit_named):
    src = circuit_named("nested").plonk_zkey
    key = PlonkZKey(src)
    own = key.n_vars - key.n_additions  # the signal addition 0 defines
    offset = key.file.section(3, "additions").offset + 4
    bad = _patched(tmp_path, src, offset, own.to_bytes(4, "little"))
    with pytest.raises(BadValue, match="addition 0 .* reads signal"):
        PlonkZKey(bad)


def test_section_sizes_checked(tmp_path, circuit_named):
    """nConstraints one more in the header than the wire maps hold; a file cut short."""
    src = circuit_named("mulchain").plonk_zkey
    key = PlonkZKey(src)
    s = key.file.section(2, "PLONK header")
    at = s.offset + 4 + 32 + 4 + 32 + 4 * 4  # u32 nConstraints
    bad = _patched(tmp_path, src, at, (key.n_constraints + 1).to_bytes(4, "little"))
    with pytest.raises(BadSectionSize, match=r"A map section \(4\) is 80 bytes; 21 gates need 84"):
        PlonkZKey(bad)
    cut = tmp_path / "cut.zkey"
    cut.write_bytes(src.read_bytes()[:-100])
    with pytest.raises(Truncated):
        PlonkZKey(cut)


def test_proof_json_round_trip(plonk_circuit):
    for k in (0, 1):
        text = plonk_circuit.plonk_proof(k).read_text()
        curve, commitments, evaluations = read_proof(plonk_circuit.plonk_proof(k))
        assert dumps(proof_to_json(commitments, evaluations, curve)) == text


def test_vk_json_read(plonk_circuit):
    vk = vk_from_json(json.loads(plonk_circuit.plonk_vk.read_text()))
    assert vk["k1"] == 2 and vk["X_2"] is not None


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("eval_a", "21888242871839275222246405745257275088548364400416034343698204186575808495617",
         NotInField),
        ("eval_b", "0x05", BadJson),
        ("A", ["1", "3", "1"], NotOnCurve),
        ("protocol", "groth16", UnsupportedProtocol),
        ("curve", "bn999", UnsupportedProtocol),
    ],
)  # fmt: skip
def test_bad_proof_json_refused(circuit_named, field, value, error):
    obj = json.loads(circuit_named("mulchain").plonk_proof(0).read_text())
    obj[field] = value
    where = "proof.json" if error is UnsupportedProtocol else f"proof.json: {field}"
    with pytest.raises(error, match=where):
        proof_from_json(obj)


def test_missing_field_refused(circuit_named):
    obj = json.loads(circuit_named("mulchain").plonk_proof(0).read_text())
    del obj["Wxiw"]
    with pytest.raises(BadJson, match="missing 'Wxiw'"):
        proof_from_json(obj)
