"""circomlib's and issue #35's benchmark families (bench.circuits) at their smallest sizes:
cuzk proves each, snarkjs accepts the proof, SHA-256's digest is hashlib's, the Semaphore
outputs are circomlibjs's (tests/semaphore_outputs.cjs), the modular products Python's
pow(), and bad inputs are refused.

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
from pathlib import Path

import interop
import pytest

from bench.circuits import (
    APPLICATION_FAMILIES,
    BABYJUB_L,
    FAMILIES,
    REAL_FAMILIES,
    TOOLS,
    DomainTooSmall,
    bigmul_operands,
    build,
    circuit,
    limbs,
    real_families,
    sha256_message,
)

pytestmark = [pytest.mark.interop, pytest.mark.slow]

# family -> units: the smallest instance (range: a few values)
SMALLEST = {"sha256": 1, "merkle": 1, "eddsa": 1, "range": 4, "semaphore": 1, "bigmul": 1}
SNARKJS_CURVE = {"bn254": "bn128", "bls12_381": "bls12381"}  # proof.json's "curve"


FAMILY_CURVES = [(f, "bn254") for f in REAL_FAMILIES + APPLICATION_FAMILIES] + [
    (f, "bls12_381") for f in real_families("bls12_381")
]
SEMAPHORE_OUTPUTS = Path(__file__).with_name("semaphore_outputs.cjs")


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


def test_every_circomlib_and_application_family_is_covered():
    assert set(REAL_FAMILIES) == {name for name, fam in FAMILIES.items() if fam.circomlib}
    assert set(APPLICATION_FAMILIES) == {n for n, fam in FAMILIES.items() if fam.application}
    assert set(SMALLEST) == set(REAL_FAMILIES) | set(APPLICATION_FAMILIES)


def test_semaphore_has_no_2_13_circuit():
    """One membership proof needs 2^14: asked for 2^13, the family says so before compiling."""
    with pytest.raises(DomainTooSmall, match=r"semaphore 2\^13: .*smallest is 2\^14"):
        circuit("semaphore", 13, log=lambda *_: None)


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


def test_semaphore_outputs_are_circomlibjss(proved, tmp_path):
    """merkleRoot and nullifier, the public outputs, as circomlibjs computes them from the
    inputs (BabyJubjub's Base8 times the secret, Poseidon up the path, Poseidon(scope,
    secret))."""
    family, files, proof, public, _ = proved
    if family != "semaphore":
        pytest.skip("the circomlibjs check is Semaphore's")
    ref = subprocess.run(
        ["node", str(SEMAPHORE_OUTPUTS), str(TOOLS / "node_modules")]
        + [str(files["zkey"].parent / "input.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    want = json.loads(ref.stdout)
    n = SMALLEST["semaphore"]
    assert json.loads(public.read_text())[: 2 * n] == want["merkleRoot"] + want["nullifier"]


def test_bigmul_output_is_pythons_pow(proved):
    """The chain's last remainder, its public output, is a^(products + 1) mod p by Python's
    integers; a and p follow it as 64-bit limbs."""
    family, files, proof, public, _ = proved
    if family != "bigmul":
        pytest.skip("the pow() check is bigmul's")
    a, p = bigmul_operands(SMALLEST["bigmul"])
    signals = [int(x) for x in json.loads(public.read_text())]
    assert signals == limbs(pow(a, SMALLEST["bigmul"] + 1, p)) + limbs(a) + limbs(p)


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
    """The circuits check what they claim: a signature over another message, a value at the
    bound, a secret scalar outside BabyJubjub's subgroup, or a remainder off by one, fails
    the circuit's constraints when the witness is calculated."""
    family, d, files, _ = built
    inputs = json.loads((d / "input.json").read_text())
    if family == "eddsa":
        inputs["M"][0] = str(int(inputs["M"][0]) + 1)
    elif family == "range":
        inputs["value"][0] = inputs["bound"]
    elif family == "semaphore":
        inputs["secret"][0] = str(BABYJUB_L)  # not below the subgroup's order
    elif family == "bigmul":
        inputs["r"][0][0] = str(int(inputs["r"][0][0]) ^ 1)  # a remainder off by one
    else:
        pytest.skip("no input of this family is refused by its circuit")
    p = _refused(d, inputs, tmp_path)
    assert "assert" in (p.stdout + p.stderr).lower()
