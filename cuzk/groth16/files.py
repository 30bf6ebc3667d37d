"""Proofs from files: the library under `cuzk prove`, `cuzk fullprove` and `cuzk warmup`.

run_prove(zkey, wtns, proof_json, public_json) proves from a key and a witness file;
run_fullprove(input_json, wasm, zkey, ...) first computes the witness with the circom
circuit (cuzk.witness), then proves as run_prove does. Both write the proof and public JSON
atomically, both or neither, and raise ProveError (or a FormatError / OSError) for every reason
not to; the commands (cuzk.groth16.cli) turn those into one line and exit 1.
"""

from __future__ import annotations


class ProveError(Exception):
    """A reason not to write a proof (bad input, unsatisfied constraint, failed self-check)."""


def run_prove(
    zkey, wtns, proof_json, public_json, r1cs=None, verify=True, device="cpu", native=True
):
    """Prove and write proof_json / public_json atomically, both or neither; raise on any
    reason not to (OutputError, an OSError, for outputs that cannot be written).

    The key's points are validated when it is opened (header points on the curve / twist and
    the G2 ones in G2, every point section on its curve); the proof's points are tested in
    their groups (a pointsB2 point outside G2 that the witness reaches puts pi_b outside:
    refused, naming the point), and with `verify` the proof is checked against the key's own
    verification key, before anything is written.

    native: run the CPU kernels from the native library where it is built for the key's curve
    (cuzk.native; this process then imports no numba), else Numba's cached kernels."""
    import contextlib

    from cuzk import native as native_kernels
    from cuzk.formats.atomic import check_apart
    from cuzk.formats.errors import FormatError
    from cuzk.formats.zkey import PLONK_PROTOCOL_ID, zkey_protocol
    from cuzk.groth16.startup import return_freed_arrays_to_the_system

    check_apart((proof_json, public_json), (zkey, wtns, r1cs))  # no output over an input
    try:
        protocol = zkey_protocol(zkey)
    except FormatError as e:
        raise ProveError(str(e)) from None
    if protocol == PLONK_PROTOCOL_ID:
        with native_kernels.used(native):
            return _run_prove_plonk(zkey, wtns, proof_json, public_json, r1cs, verify, device)
    return_freed_arrays_to_the_system()
    with native_kernels.used(native), contextlib.ExitStack() as loads:
        return _run_prove(zkey, wtns, proof_json, public_json, r1cs, verify, device, loads)


def _run_prove_plonk(zkey, wtns, proof_json, public_json, r1cs, verify, device):
    """A PLONK key's proof (cuzk.plonk.files), with the --r1cs check first."""
    from cuzk.plonk import files as plonk_files

    if r1cs is not None:
        from cuzk.formats.errors import FormatError
        from cuzk.formats.plonk_zkey import PlonkZKey

        try:
            key = PlonkZKey(zkey)
            w = plonk_files.load_witness(wtns, key)
            _check_r1cs(r1cs, zkey, wtns, key, key.n_witness, w, "nVars - nAdditions")
        except FormatError as e:
            raise ProveError(str(e)) from None
    try:
        return plonk_files.run_prove(zkey, wtns, proof_json, public_json, verify, device)
    except plonk_files.ProveError as e:
        raise ProveError(str(e)) from None


def _check_r1cs(r1cs, zkey, wtns, key, n_wires: int, w, wires: str = "nVars") -> None:
    """ProveError unless the circuit of `r1cs` is the key's (curve; `n_wires`, the key's
    `wires`) and the witness `w` satisfies every constraint."""
    from cuzk.formats.curve import CURVES
    from cuzk.formats.r1cs import R1CS
    from cuzk.groth16 import first_unsatisfied

    system = R1CS(r1cs)
    if system.curve != key.curve:
        raise ProveError(
            f"{r1cs}: the circuit is over {CURVES[system.curve]} but {zkey} is over "
            f"{CURVES[key.curve]}: not the same circuit"
        )
    if system.n_wires != n_wires:
        raise ProveError(
            f"{r1cs}: {system.n_wires} wires but {zkey} has "
            f"{wires} = {n_wires}: not the same circuit"
        )
    bad = first_unsatisfied(system, w)
    if bad is not None:
        raise ProveError(f"{wtns}: witness does not satisfy constraint {bad} of {r1cs}")


def _numba_loads(curve: str, loads) -> None:
    """Numba's kernels will be loaded for ``curve`` (no native library in use): load them
    lean (cuzk.groth16.startup) for the rest of the command."""
    from cuzk import native

    if native.serves(curve):
        return
    from cuzk.groth16.startup import lean_cache_loads

    loads.enter_context(lean_cache_loads())


def _name_the_point_outside(key) -> None:
    """The key's subgroup tests that _run_prove leaves out (pointsB2 in G2; on BLS12-381 the
    G1 sections in G1), run once a proof's point came out of its group: raise ProveError
    naming the first point outside (cuzk.groth16.validate's one-line BadPoint)."""
    from cuzk.formats.errors import FormatError
    from cuzk.groth16.validate import validate_key

    try:
        validate_key(key.zkey, key.done_with, b2_subgroup=True, g1_subgroup=True)
    except FormatError as e:
        raise ProveError(str(e)) from None


def _run_prove(zkey, wtns, proof_json, public_json, r1cs, verify, device, loads):
    from cuzk.formats.atomic import check_outputs
    from cuzk.formats.errors import FormatError
    from cuzk.formats.snarkjs_json import write_proof_and_public
    from cuzk.groth16 import ProvingKey, load_witness, open_device, prove

    try:
        key = ProvingKey.open(zkey, resident=False)  # read once: see ProvingKey.done_with
        # the device before any kernel is compiled: a missing GPU is said at once, alone
        dev = open_device(device, one_shot=True)
        _numba_loads(key.arith_curve, loads)
        # No G2 test of every pointsB2 point: a point outside G2 that the witness reaches gives
        # a pi_b outside G2, which the proof's own test below refuses (0.27 s of a 2^15 key's
        # 0.3 s of validation left out of the command); on BLS12-381 likewise the G1 sections'
        # subgroup test (pi_a, pi_c outside G1 are refused). Verified or not (--no-verify).
        # The point sections are checked on their curve as the proof's steps read them (one
        # read of the key, not two: 33 MB at 2^16), a bad point refused from that step.
        vk = key.validate(b2_subgroup=False, g1_subgroup=False, sections_on_read=True)
        w = load_witness(wtns, key)
        if r1cs is not None:
            _check_r1cs(r1cs, zkey, wtns, key, key.n_vars, w)
    except FormatError as e:
        raise ProveError(str(e)) from None
    check_outputs(proof_json, public_json)  # before the work: one file twice, a missing folder
    try:
        proof = prove(key, w, dev)
    except FormatError as e:  # a point section's check on read (BadPoint), a changed file
        raise ProveError(str(e)) from None
    from cuzk.groth16.verifier import Proof, quick_backend
    from cuzk.groth16.verifier import verify as check

    # on the native library's kernels where the proof was made on them (~2 ms), else on
    # Python ints (~20 ms): one check costs less than loading Numba's compiled pairing
    backend = quick_backend(key.arith_curve)
    try:  # the proof's points on their curves and in their groups, verified or not
        pts = Proof.from_points(*proof.points(), backend=backend, curve=proof.curve)
    except FormatError as e:  # e.g. piB outside G2 (a pointsB2 point outside G2)
        if verify:
            raise ProveError(f"the proof does not verify: {e}") from None
        _name_the_point_outside(key)  # the key's tests left out above, to say which point
        raise ProveError(f"the proof is not usable: {e}") from None
    if verify:
        ok = check(vk, proof.public, pts, backend=backend)
        if not ok:
            raise ProveError(
                "the proof does not verify: the witness does not satisfy the "
                "circuit of this key, or the key is damaged (pass --r1cs to find "
                "a failing constraint)"
            )
    write_proof_and_public(proof_json, public_json, proof.points(), proof.public, proof.curve)
    return proof


def run_fullprove(
    input_json, wasm, zkey, proof_json, public_json, verify=True, device="cpu", sym=None
):
    """Witness from input_json, then the proof (run_prove), as snarkjs's
    `groth16 fullprove` (`plonk fullprove` for a PLONK key). Checks first that wasm and
    zkey belong to the same circuit. Writes proof_json and public_json only for a proof,
    both or neither; returns the Proof."""
    import tempfile
    from pathlib import Path

    from cuzk.formats.atomic import check_apart, check_outputs, terminate_cleanly
    from cuzk.formats.zkey import PLONK_PROTOCOL_ID, ZKey, zkey_protocol
    from cuzk.witness.calculator import Circuit
    from cuzk.witness.errors import check_same_circuit
    from cuzk.witness.inputs import read_inputs
    from cuzk.witness.wtnsfile import write_wtns_bytes

    check_apart((proof_json, public_json), (input_json, wasm, zkey, sym))
    inputs = read_inputs(input_json)
    circuit = Circuit(wasm, sym)
    if zkey_protocol(zkey) == PLONK_PROTOCOL_ID:  # its witness: the wires, not the additions
        from types import SimpleNamespace

        from cuzk.formats.plonk_zkey import PlonkZKey

        k = PlonkZKey(zkey, check_indices=False)
        wires = SimpleNamespace(path=k.path, r=k.r, n_vars=k.n_witness)
        check_same_circuit(circuit, wires, f"{k.path} (PLONK: nVars less its additions)")
    else:
        check_same_circuit(circuit, ZKey(zkey, check_coefficients=False))
    check_outputs(proof_json, public_json)  # before the work: one file twice, a missing folder
    values = circuit.calculator().witness_view(inputs, input_json)
    # SIGTERM as SIGINT: the witness's temporary folder is removed either way
    with terminate_cleanly(), tempfile.TemporaryDirectory(prefix="cuzk-fullprove-") as tmp:
        wtns = Path(tmp) / "witness.wtns"
        write_wtns_bytes(wtns, values, circuit.prime)
        return run_prove(zkey, wtns, proof_json, public_json, verify=verify, device=device)
