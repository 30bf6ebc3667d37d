"""`cuzk wtns calculate`, `cuzk fullprove`: witnesses from inputs, in snarkjs's argument order."""

from __future__ import annotations

import sys

import click

_SYM_HELP = (
    "The circuit's .sym (circom --sym), used only to name missing inputs; found "
    "next to the .wasm (or one folder up, circom's layout) when not given."
)


def run_calculate(wasm, input_json, out_wtns, sym=None) -> memoryview:
    """Calculate the witness of input_json for the circuit wasm and write out_wtns (the
    bytes snarkjs writes); nothing is written on failure. Returns the values (a view of
    the calculator's memory).
    Imports neither numpy nor the prover."""
    from cuzk.witness.calculator import Circuit
    from cuzk.witness.inputs import read_inputs
    from cuzk.witness.wtnsfile import write_wtns_bytes

    inputs = read_inputs(input_json)
    circuit = Circuit(wasm, sym)
    values = circuit.calculator().witness_view(inputs, input_json)
    write_wtns_bytes(out_wtns, values)
    return values


def check_same_circuit(circuit, zkey) -> None:
    """Raise CircuitMismatch unless the wasm's circuit and the key agree (wires, prime)."""
    from cuzk.witness.errors import CircuitMismatch

    if circuit.prime != zkey.r:
        raise CircuitMismatch(
            circuit.path,
            f"computes over the prime {circuit.prime:#x} but "
            f"{zkey.path} is for {zkey.r:#x}: not the same "
            "circuit",
        )
    if circuit.witness_size != zkey.n_vars:
        raise CircuitMismatch(
            circuit.path,
            f"has {circuit.witness_size} wires but "
            f"{zkey.path} has nVars = {zkey.n_vars}: not the "
            "same circuit",
        )


def run_fullprove(
    input_json, wasm, zkey, proof_json, public_json, verify=True, device="cpu", sym=None
):
    """Witness from input_json, then the proof (cuzk.groth16.cli.run_prove), as snarkjs's
    `groth16 fullprove`. Checks first that wasm and zkey belong to the same circuit.
    Writes proof_json and public_json only for a proof, both or neither; returns the Proof."""
    import tempfile
    from pathlib import Path

    from cuzk.formats.atomic import check_outputs
    from cuzk.formats.zkey import ZKey
    from cuzk.groth16.cli import run_prove
    from cuzk.witness.calculator import Circuit
    from cuzk.witness.inputs import read_inputs
    from cuzk.witness.wtnsfile import write_wtns_bytes

    inputs = read_inputs(input_json)
    circuit = Circuit(wasm, sym)
    check_same_circuit(circuit, ZKey(zkey, check_coefficients=False))
    check_outputs(proof_json, public_json)  # before the work: one file twice, a missing folder
    values = circuit.calculator().witness_view(inputs, input_json)
    with tempfile.TemporaryDirectory(prefix="cuzk-fullprove-") as tmp:
        wtns = Path(tmp) / "witness.wtns"
        write_wtns_bytes(wtns, values)
        return run_prove(zkey, wtns, proof_json, public_json, verify=verify, device=device)


@click.group("wtns")
def wtns():
    """Witness files (.wtns)."""


@wtns.command("calculate")
@click.option("--sym", type=click.Path(dir_okay=False), help=_SYM_HELP)
@click.argument("circuit_wasm", type=click.Path(dir_okay=False))
@click.argument("input_json", type=click.Path(dir_okay=False))
@click.argument("out_wtns", type=click.Path(dir_okay=False, writable=True))
def calculate(circuit_wasm, input_json, out_wtns, sym):
    """Calculate the witness of INPUT_JSON for CIRCUIT_WASM (circom 2) into OUT_WTNS.

    The file is the one `snarkjs wtns calculate` writes, byte for byte. Bad inputs (a missing
    or unknown signal, a wrong array length, a value that is not a number or has more than
    4,300 digits, a failing assert in the circuit, a file that is not JSON: not UTF-8 text,
    nested more than 512 deep) or a wasm that is not a BN254 circom 2 circuit exit 1 with
    the reason, and nothing is written.
    """
    from cuzk.formats.errors import FormatError

    try:
        run_calculate(circuit_wasm, input_json, out_wtns, sym)
    except (FormatError, OSError) as e:
        click.echo(f"cuzk wtns calculate: {e}", err=True)
        sys.exit(1)


@click.command("fullprove")
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Verify the proof before writing it, as `cuzk prove` does.",
)
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    metavar="cpu|cuda[:N]",
    help="Where the NTT and G1 MSM kernels run.",
)
@click.option("--sym", type=click.Path(dir_okay=False), help=_SYM_HELP)
@click.argument("input_json", type=click.Path(dir_okay=False))
@click.argument("circuit_wasm", type=click.Path(dir_okay=False))
@click.argument("zkey", type=click.Path(dir_okay=False))
@click.argument("proof_json", type=click.Path(dir_okay=False, writable=True))
@click.argument("public_json", type=click.Path(dir_okay=False, writable=True))
def fullprove(input_json, circuit_wasm, zkey, proof_json, public_json, verify, device, sym):
    """Witness of INPUT_JSON for CIRCUIT_WASM, then a proof with ZKEY (snarkjs's fullprove).

    Writes PROOF_JSON and PUBLIC_JSON as `snarkjs groth16 fullprove` does, both or neither.
    A wasm and key of different circuits (wire count, prime), bad inputs, a proof that fails
    verification (on unless --no-verify) or outputs that cannot be written (one file for
    both, a missing folder) exit 1 with the reason, and nothing is written.
    """
    from cuzk.compiling import compile_notice
    from cuzk.formats.errors import FormatError
    from cuzk.groth16.cli import ProveError
    from cuzk.groth16.fast_exit import exit_now_if_a_process_of_its_own

    try:
        with compile_notice("cuzk fullprove"):
            run_fullprove(
                input_json, circuit_wasm, zkey, proof_json, public_json, verify, device, sym
            )
    except (ProveError, FormatError, OSError, ValueError) as e:
        click.echo(f"cuzk fullprove: {e}", err=True)
        sys.exit(1)
    exit_now_if_a_process_of_its_own()
