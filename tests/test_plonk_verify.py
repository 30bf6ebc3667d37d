"""PLONK verification (cuzk.plonk.verifier, `cuzk verify` on a PLONK key): snarkjs's own
proofs accepted, tampered ones refused, and the same verdicts as `snarkjs plonk verify`."""

from __future__ import annotations

import hashlib
import json

import pytest

from cuzk.formats.errors import CountMismatch, NotInField, UnsupportedProtocol
from cuzk.groth16.verify_cli import run as verify_command
from cuzk.plonk.keccak import keccak_256
from cuzk.plonk.verifier import verify_files, verify_objects

R_BN254 = 21888242871839275222246405745257275088548364400416034343698204186575808495617


@pytest.mark.parametrize(
    "data, digest",
    [  # Keccak-256 (Ethereum's, Keccak's own padding) test vectors
        (b"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"),
        (b"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"),
        # two blocks (200 > 136 bytes), digest from @noble/hashes' keccak_256 (snarkjs's)
        (b"a" * 200, "96ea54061def936c4be90b518992fdc6f12f535068a256229aca54267b4d084d"),
        # exactly one rate of input: the padding takes a whole block of its own
        (bytes(136), "3a5912a7c5faa06ee4fe906253e339467a9ce87d533c65be3c15cb231cdb25f9"),
    ],
)
def test_keccak_256(data, digest):
    assert keccak_256(data).hex() == digest
    assert hashlib.sha3_256(data).hexdigest() != digest  # FIPS SHA3 pads otherwise


def load(path):
    return json.loads(path.read_text())


def objects(c, k: int = 0):
    return load(c.plonk_vk), load(c.plonk_public(k)), load(c.plonk_proof(k))


def test_snarkjs_proofs_verify(plonk_circuit):
    for k in (0, 1):
        c = plonk_circuit
        assert verify_files(c.plonk_vk, c.plonk_public(k), c.plonk_proof(k))


def test_changed_public_signal_refused(plonk_circuit):
    from cuzk.formats.curve import by_json_name

    vk, public, proof = objects(plonk_circuit)
    public[0] = str((int(public[0]) + 1) % by_json_name(vk["curve"]).r)
    assert not verify_objects(vk, public, proof)


def test_proofs_do_not_cross(plonk_circuit):
    """Proof 0 with the public signals of proof 1 (both valid on their own)."""
    vk, _, proof = objects(plonk_circuit, 0)
    assert not verify_objects(vk, load(plonk_circuit.plonk_public(1)), proof)


@pytest.mark.parametrize("field", ["eval_a", "eval_s2", "eval_zw"])
def test_changed_evaluation_refused(circuit_named, field):
    vk, public, proof = objects(circuit_named("mulchain"))
    proof[field] = str((int(proof[field]) + 1) % R_BN254)
    assert not verify_objects(vk, public, proof)


@pytest.mark.parametrize("a, b", [("A", "B"), ("T1", "T2"), ("Wxi", "Wxiw"), ("Z", "C")])
def test_swapped_commitments_refused(circuit_named, a, b):
    vk, public, proof = objects(circuit_named("nested"))
    proof[a], proof[b] = proof[b], proof[a]
    assert not verify_objects(vk, public, proof)


def test_other_key_refused(circuit_named):
    """mulchain's proof under nested's key (nPublic differs: unusable) and under its own key
    with Qm replaced by nested's (invalid)."""
    mul, nested = circuit_named("mulchain"), circuit_named("nested")
    vk_m, public, proof = objects(mul)
    with pytest.raises(CountMismatch):
        verify_objects(load(nested.plonk_vk), public, proof)
    vk_m["Qm"] = load(nested.plonk_vk)["Qm"]
    assert not verify_objects(vk_m, public, proof)


def test_unusable_input(circuit_named):
    c = circuit_named("mulchain")
    vk, public, proof = objects(c)
    with pytest.raises(NotInField):
        verify_objects(vk, [str(R_BN254), *public[1:]], proof)
    with pytest.raises(CountMismatch):
        verify_objects(vk, public[:-1], proof)
    bls = circuit_named("tiny381")
    with pytest.raises(UnsupportedProtocol, match="the proof is on BLS12-381"):
        verify_objects(vk, public, load(bls.plonk_proof(0)))


def test_command_exit_codes(tmp_path, circuit_named, capsys):
    c = circuit_named("nested")
    assert verify_command(c.plonk_vk, c.plonk_public(0), c.plonk_proof(0)) == 0
    assert verify_command(c.plonk_vk, c.plonk_public(1), c.plonk_proof(0)) == 1
    assert verify_command(c.plonk_vk, c.plonk_public(0), c.proof(0)) == 2  # a Groth16 proof
    err = capsys.readouterr().err
    assert "INVALID" in err and "protocol 'groth16' is not plonk" in err
    tiny = circuit_named("tiny")
    fflonk = tiny.dir / "fflonk_vk.json"
    assert verify_command(fflonk, tiny.public(0), tiny.proof(0)) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("protocol 'fflonk' is not supported: cuzk verifies groth16 and plonk")
    assert len(err.splitlines()) == 1
    # and Groth16 still verifies through the same command
    assert verify_command(tiny.vk, tiny.public(0), tiny.proof(0)) == 0


@pytest.mark.interop
def test_verdicts_equal_snarkjs(tmp_path, tools, circuit_named):
    """snarkjs and cuzk agree on a valid proof and on tampered ones."""
    from interop import plonk_verify

    c = circuit_named("mulchain")
    vk, public, proof = objects(c)
    cases = {"valid": (public, proof)}
    bad_public = list(public)
    bad_public[1] = str(int(bad_public[1]) + 1)
    cases["public"] = (bad_public, proof)
    bad_proof = dict(proof, eval_c=str((int(proof["eval_c"]) + 1) % R_BN254))
    cases["eval_c"] = (public, bad_proof)
    swapped = dict(proof, T1=proof["T3"], T3=proof["T1"])
    cases["T1<->T3"] = (public, swapped)
    for name, (p, pr) in cases.items():
        pp, prp = tmp_path / f"{name}_public.json", tmp_path / f"{name}_proof.json"
        pp.write_text(json.dumps(p))
        prp.write_text(json.dumps(pr))
        ours = verify_files(c.plonk_vk, pp, prp)
        assert ours == plonk_verify(c.plonk_vk, pp, prp) == (name == "valid"), name


def test_console_fast_path_imports_no_numpy(circuit_named):
    """`cuzk verify` of a PLONK proof through the console script's fast path: the verdicts
    and exit codes, importing neither click nor numpy nor numba."""
    import subprocess
    import sys

    c = circuit_named("nested")
    code = (
        "import sys; from cuzk.console import main; sys.argv[0] = 'cuzk'; rc = main(); "
        "assert not {'click', 'numpy', 'numba'} & set(sys.modules), sys.modules.keys(); "
        "sys.exit(rc)"
    )
    for k, want in ((0, 0), (1, 1)):
        args = [str(c.plonk_vk), str(c.plonk_public(k)), str(c.plonk_proof(0))]
        p = subprocess.run(
            [sys.executable, "-c", code, "verify", *args], capture_output=True, text=True
        )
        assert p.returncode == want, p.stderr[-2000:]


def test_kernel_combination_equals_python_ints(plonk_circuit):
    """The provers' check of their proofs sums the verifier's points by the MSM kernels: the
    same points as Python ints (infinity, zero and r - 1 among them, BN254 and BLS12-381), and
    the same verdicts on snarkjs's proof and a tampered one."""
    from cuzk.arith import pairing_int
    from cuzk.formats.plonk_json import proof_from_json, vk_from_json
    from cuzk.formats.snarkjs_json import parse_public
    from cuzk.plonk.verifier import check_vk, kernel_combination, verify

    vk_obj, public_obj, proof_obj = objects(plonk_circuit)
    vk = check_vk(vk_from_json(vk_obj, "vk"), "vk")
    curve = vk["curve"]
    ops = pairing_int.for_curve(curve.arith)
    combine = kernel_combination(curve)
    points = [vk[name] for name in ("Qm", "Ql", "Qr", "Qo", "Qc", "S1", "S2", "S3")] + [None]
    scalars = [0, 1, curve.r - 1, 2**200 + 7, 5, curve.r // 3, 0, 99, 4]
    assert combine(points, scalars) == ops.g1_linear_combination(points, scalars)
    assert combine(points[:2], [0, 0]) is None
    public = parse_public(public_obj, vk["n_public"], "public", curve)
    _, commitments, evaluations = proof_from_json(proof_obj, "proof")
    assert verify(vk, public, commitments, evaluations, combine)
    evaluations["eval_a"] = (evaluations["eval_a"] + 1) % curve.r
    assert not verify(vk, public, commitments, evaluations, combine)
