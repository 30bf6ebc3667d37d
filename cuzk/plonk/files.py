"""PLONK proofs from files: what `cuzk prove` runs for a PLONK key (cuzk.groth16.files
dispatches on the key's protocol).

run_prove(zkey, wtns, proof_json, public_json) reads the key (mapped: cuzk.formats.
plonk_zkey) and the witness, proves (cuzk.plonk.prover: on the CPU kernels, or with
device="cuda[:N]" on that GPU's, cuzk.plonk.fr.CudaFrOps), verifies the proof against the
key's own verification key (unless verify=False) and writes proof.json and public.json as
snarkjs does, both or neither. Every reason not to write raises ProveError
(a FormatError or an OSError for unusable files).
"""

from __future__ import annotations

from cuzk.plonk.prover import ProveError


def load_witness(wtns, key):
    """The witness's values ((nVars - nAdditions, 4) plain limbs, a view of the file),
    checked against `key` (a PlonkZKey): the same curve, the count of the circuit's wires."""
    from cuzk.formats.curve import CURVES
    from cuzk.formats.errors import UnsupportedCurve
    from cuzk.formats.wtns import read_wtns

    witness = read_wtns(wtns)
    if witness.curve != key.curve:
        raise UnsupportedCurve(
            str(wtns),
            f"the witness is over {CURVES[witness.curve]}'s scalar field but the key "
            f"{key.path} is over {CURVES[key.curve]}",
        )
    key.check_witness(witness.values, str(wtns))
    return witness.values


def verify_with_key(key, proof) -> bool:
    """The proof checked against the key's verification key (what `cuzk export-vk` writes)."""
    from cuzk.formats.plonk_json import verification_key, vk_from_json
    from cuzk.plonk.verifier import check_vk, kernel_combination, kernel_pairing, verify

    vk = check_vk(vk_from_json(verification_key(key), str(key.path)), str(key.path))
    combine = kernel_combination(vk["curve"])  # (the prover's MSM kernels: loaded already)
    pairing = kernel_pairing(vk["curve"])
    return verify(vk, proof.public, proof.commitments, proof.evaluations, combine, pairing)


def run_prove(zkey, wtns, proof_json, public_json, verify: bool = True, device: str = "cpu"):
    """Prove and write proof_json / public_json atomically, both or neither; returns the
    PlonkProof."""
    from cuzk.formats.atomic import check_outputs
    from cuzk.formats.errors import FormatError
    from cuzk.formats.plonk_json import write_proof_and_public
    from cuzk.formats.plonk_zkey import PlonkZKey
    from cuzk.plonk.prover import prove

    ops = None
    if device != "cpu":  # "cuda[:N]": the rounds on that GPU (DeviceUnavailable where absent)
        from cuzk.plonk.stages import open_device

        dev = open_device(device)
    try:
        key = PlonkZKey(zkey)
        values = load_witness(wtns, key)
    except FormatError as e:
        raise ProveError(str(e)) from None
    check_outputs(proof_json, public_json)  # before the work: one file twice, a missing folder
    if device != "cpu":
        ops = dev.ops(key.curve_info)
    proof = prove(key, values, ops)
    if verify and not verify_with_key(key, proof):
        raise ProveError(
            "the proof does not verify against the key's verification key (the key is "
            "damaged, or a bug: please report it)"
        )
    write_proof_and_public(proof_json, public_json, proof.to_json(), proof.public)
    return proof
