"""`cuzk verify` and cuzk.groth16.verifier on BLS12-381: snarkjs's proofs of the tiny381
fixture (circom2 -p bls12381, a snarkjs bls12381 ceremony) are valid, the same proof against
the other set's signals is invalid, and a proof on another curve than its key's, a point off
the curve or a signal >= r is unusable input (exit 2, one line). Both backends give one
verdict (BLS12-381 is checked on Python ints either way)."""

from __future__ import annotations

import json

import pytest
from conftest import fixture_circuit
from serve_harness import run_cli

from cuzk.arith import bls12_381
from cuzk.formats.errors import FormatError
from cuzk.groth16.verifier import BACKENDS, Proof, VerifyingKey, verify, verify_files

DIR = fixture_circuit("tiny381").dir
VK = DIR / "verification_key.json"
BN_TINY = fixture_circuit("tiny")


def cli(*paths):
    return run_cli("verify", *map(str, paths))


@pytest.mark.parametrize("k", [0, 1])
def test_snarkjs_proofs_are_valid(k):
    r = cli(VK, DIR / f"public_{k}.json", DIR / f"proof_{k}.json")
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stderr
    for backend in BACKENDS:
        assert verify_files(VK, DIR / f"public_{k}.json", DIR / f"proof_{k}.json", backend)


def test_a_proof_against_other_signals_is_invalid():
    r = cli(VK, DIR / "public_1.json", DIR / "proof_0.json")
    assert r.returncode == 1 and r.stderr.startswith("INVALID"), r.stderr
    vk = VerifyingKey.from_json(json.loads(VK.read_text()), backend="python")
    proof = Proof.from_json(json.loads((DIR / "proof_0.json").read_text()), backend="python")
    public = json.loads((DIR / "public_1.json").read_text())
    assert vk.curve.name == "bls12381" and proof.curve is vk.curve
    assert [verify(vk, public, proof, b) for b in BACKENDS] == [False] * len(BACKENDS)


def test_unusable_input_exits_2_in_one_line(tmp_path):
    def check(vk, public, proof, text):
        r = cli(vk, public, proof)
        assert r.returncode == 2 and r.stdout == "", r
        assert r.stderr.startswith("cuzk verify: unusable input: ") and text in r.stderr
        assert r.stderr.count("\n") == 1

    # a BN254 proof against a BLS12-381 key, and the other way round
    check(VK, DIR / "public_0.json", BN_TINY.dir / "proof_0.json", "the proof is on BN254")
    check(BN_TINY.vk, BN_TINY.dir / "public_0.json", DIR / "proof_0.json", "on BLS12-381")
    # pi_a moved off the curve
    proof = json.loads((DIR / "proof_0.json").read_text())
    proof["pi_a"][1] = str((int(proof["pi_a"][1]) + 1) % bls12_381.FQ_MODULUS)
    bad = tmp_path / "proof.json"
    bad.write_text(json.dumps(proof))
    check(VK, DIR / "public_0.json", bad, "pi_a")
    # a public signal >= r (BLS12-381's r, above BN254's)
    signals = json.loads((DIR / "public_0.json").read_text())
    signals[0] = str(bls12_381.FR_MODULUS)
    high = tmp_path / "public.json"
    high.write_text(json.dumps(signals))
    check(VK, high, DIR / "proof_0.json", "public.json")
    with pytest.raises(FormatError):
        verify_files(VK, high, DIR / "proof_0.json", "python")
