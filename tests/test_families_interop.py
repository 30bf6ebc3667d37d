"""circomlib's benchmark families (bench.circuits) at their smallest sizes: cuzk proves each,
snarkjs accepts the proof, SHA-256's digest is hashlib's, and bad inputs are refused.

Each family is built once per module (circom2, `cuzk wtns calculate`, the key) exactly as
the prove benchmarks build it, with one unit instead of as many as fill a domain: over BN254,
and over BLS12-381 (circom2 `--prime bls12381`, issue #28) for the families that mean
something on that curve's field (SHA-256 and the range checks; Poseidon's constants and
BabyJubjub are BN254's).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import interop
import pytest

from bench.circuits import FAMILIES, REAL_FAMILIES, build, real_families, sha256_message

pytestmark = [pytest.mark.interop, pytest.mark.slow]

# family -> units: the smallest instance (range: a few values)
SMALLEST = {"sha256": 1, "merkle": 1, "eddsa": 1, "range": 4}
SNARKJS_CURVE = {"bn254": "bn128", "bls12_381": "bls12381"}  # proof.json's "curve"


FAMILY_CURVES = [(f, "bn254") for f in REAL_FAMILIES] + [
    (f, "bls12_381") for f in real_families("bls12_381")
]


@pytest.fixture(scope="module", params=FAMILY_CURVES, ids=[f"{f}-{c}" for f, c in FAMILY_CURVES])
def built(request, tools, tmp_path_factory):
    family, curve = request.param
    d = tmp_path_factory.mktemp(f"{family}-{curve}") / "circuit"
    files = build(family, SMALLEST[family], d, log=lambda *_: None, curve=curve)
    return family, d, files, curve


@pytest.fixture(scope="module")
def proved(built):
    """cuzk's proof of the family's witness (the `cuzk prove` command's code, the witness
    checked against the .r1cs first), with snarkjs's verification key of the same .zkey."""
    from cuzk.groth16.files import run_prove

    family, d, files, curve = built
    proof, public = d / "proof.json", d / "public.json"
    run_prove(files["zkey"], files["wtns"], proof, public, r1cs=files["r1cs"])
    return family, files, proof, public, curve


def test_every_circomlib_family_is_covered():
    assert (
        set(SMALLEST)
        == set(REAL_FAMILIES)
        == {name for name, fam in FAMILIES.items() if fam.circomlib}
    )


def test_snarkjs_accepts_cuzk_proof(proved, tmp_path):
    family, files, proof, public, curve = proved
    assert json.loads(proof.read_text())["curve"] == SNARKJS_CURVE[curve]
    assert interop.groth16_verify(files["vk"], public, proof), family
    # and refuses it for other public signals (the check can fail)
    signals = json.loads(public.read_text())
    signals[0] = str(int(signals[0]) + 1)
    other = tmp_path / "public.json"
    other.write_text(json.dumps(signals))
    assert not interop.groth16_verify(files["vk"], other, proof), family


def test_sha256_public_digest_is_hashlibs(proved):
    family, files, proof, public, _ = proved
    if family != "sha256":
        pytest.skip("the digest check is SHA-256's")
    bits = json.loads(public.read_text())
    assert len(bits) == 256 and set(bits) <= {"0", "1"}
    digest = int("".join(bits), 2).to_bytes(32, "big")
    assert digest == hashlib.sha256(sha256_message(SMALLEST["sha256"])).digest()


def _refused(d, inputs: dict, tmp_path) -> subprocess.CompletedProcess:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(inputs))
    out = tmp_path / "bad.wtns"
    p = subprocess.run(
        [sys.executable, "-m", "cuzk.cli", "wtns", "calculate"]
        + [str(d / "circuit_js" / "circuit.wasm"), str(bad), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert not out.exists()
    return p


def test_forged_signature_and_out_of_range_value_are_refused(built, tmp_path):
    """The circuits check what they claim: a signature over another message, or a value at
    the bound, fails the circuit's constraints when the witness is calculated."""
    family, d, files, _ = built
    inputs = json.loads((d / "input.json").read_text())
    if family == "eddsa":
        inputs["M"][0] = str(int(inputs["M"][0]) + 1)
    elif family == "range":
        inputs["value"][0] = inputs["bound"]
    else:
        pytest.skip("no input of this family is refused by its circuit")
    p = _refused(d, inputs, tmp_path)
    assert "assert" in (p.stdout + p.stderr).lower()
