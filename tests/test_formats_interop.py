"""cuzk.formats with the real tools: snarkjs reads what cuzk writes, cuzk reads what a fresh
circom2 + snarkjs run writes."""

from __future__ import annotations

import interop
import pytest
from click.testing import CliRunner

from cuzk.arith.radix import limbs_to_ints
from cuzk.formats import R1CS, ZKey, read_wtns, write_wtns, write_zkey

pytestmark = pytest.mark.interop

FIXTURES = interop.ROOT / "tests" / "fixtures"


def test_fresh_circuit_setup_and_export_vk_match_snarkjs(tools, tmp_path):
    compiled = interop.compile_circuit(
        interop.ROOT / "tests" / "circuits" / "tiny.circom", tmp_path
    )
    cs = R1CS(compiled.r1cs)
    assert (cs.n_wires, cs.n_constraints) == (4, 1)
    zkey = interop.groth16_setup(compiled.r1cs, FIXTURES / "pot10.ptau", tmp_path / "t.zkey")
    snark_vk = interop.export_vk(zkey, tmp_path / "snarkjs_vk.json")
    from cuzk.cli import main

    res = CliRunner().invoke(main, ["export-vk", str(zkey), str(tmp_path / "cuzk_vk.json")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cuzk_vk.json").read_bytes() == snark_vk.read_bytes()
    wtns = interop.calculate_witness(compiled.wasm, {"a": 5, "b": 9}, tmp_path / "w.wtns")
    assert limbs_to_ints(read_wtns(wtns).values) == [1, 45, 5, 9]
    ZKey(zkey).check_witness(read_wtns(wtns))


def test_snarkjs_proves_with_zkey_and_wtns_written_by_cuzk(circuit_named, tools, tmp_path):
    c = circuit_named("bits")
    write_zkey(tmp_path / "copy.zkey", ZKey(c.zkey))
    write_wtns(tmp_path / "w.wtns", limbs_to_ints(read_wtns(c.witness(1)).values))
    proof, public = interop.groth16_prove(
        tmp_path / "copy.zkey", tmp_path / "w.wtns", tmp_path / "p.json", tmp_path / "pub.json"
    )
    assert interop.groth16_verify(c.vk, public, proof)
    assert public.read_bytes() == c.public(1).read_bytes()
    vk = interop.export_vk(tmp_path / "copy.zkey", tmp_path / "vk.json")
    assert vk.read_bytes() == c.vk.read_bytes()


def test_snarkjs_proof_of_the_bad_witness_fails_verification(circuit_named, tools, tmp_path):
    """Why cuzk checks witnesses: snarkjs proves an unsatisfying witness without complaint."""
    c = circuit_named("mulchain")
    assert not interop.wtns_check(c.r1cs, c.bad_witness)
    proof, public = interop.groth16_prove(
        c.zkey, c.bad_witness, tmp_path / "p.json", tmp_path / "pub.json"
    )
    assert not interop.groth16_verify(c.vk, public, proof)
