"""Witness files from circuit inputs: the library under `cuzk wtns calculate` (and the witness
half of `cuzk fullprove`, cuzk.groth16.files). Imports neither numpy nor the prover."""

from __future__ import annotations

# The --sym option of the commands that run a circuit (wtns calculate, fullprove).
SYM_HELP = (
    "The circuit's .sym (circom --sym), used only to name missing inputs; found "
    "next to the .wasm (or one folder up, circom's layout) when not given."
)


def run_calculate(wasm, input_json, out_wtns, sym=None) -> memoryview:
    """Calculate the witness of input_json for the circuit wasm and write out_wtns (the
    bytes snarkjs writes, with the circuit's prime: BN254's or BLS12-381's r); nothing is
    written on failure. Returns the values (a view of
    the calculator's memory).
    Imports neither numpy nor the prover."""
    from cuzk.formats.atomic import check_apart
    from cuzk.witness.calculator import Circuit
    from cuzk.witness.inputs import read_inputs
    from cuzk.witness.wtnsfile import write_wtns_bytes

    check_apart((out_wtns,), (wasm, input_json, sym))  # the output over an input destroys it
    inputs = read_inputs(input_json)
    circuit = Circuit(wasm, sym)
    values = circuit.calculator().witness_view(inputs, input_json)
    write_wtns_bytes(out_wtns, values, circuit.prime)
    return values
