"""`cuzk wtns calculate`: witnesses from inputs, in snarkjs's argument order (`cuzk fullprove`,
which goes on to prove, is a command of cuzk.groth16.cli)."""

from __future__ import annotations

import sys

import click

from cuzk.witness.files import SYM_HELP, run_calculate


@click.group("wtns")
def wtns():
    """Witness files (.wtns)."""


@wtns.command("calculate")
@click.option("--sym", type=click.Path(dir_okay=False), help=SYM_HELP)
@click.argument("circuit_wasm", type=click.Path(dir_okay=False))
@click.argument("input_json", type=click.Path(dir_okay=False))
@click.argument("out_wtns", type=click.Path(dir_okay=False, writable=True))
def calculate(circuit_wasm, input_json, out_wtns, sym):
    """Calculate the witness of INPUT_JSON for CIRCUIT_WASM (circom 2) into OUT_WTNS.

    The file is the one `snarkjs wtns calculate` writes, byte for byte. Bad inputs (a missing
    or unknown signal, a wrong array length, a value that is not a number or has more than
    4,300 digits, a failing assert in the circuit, a file that is not JSON: not UTF-8 text,
    nested more than 512 deep) or a wasm that is not a circom 2 circuit over BN254 or
    BLS12-381 (circom --prime bn128 or bls12381) exit 1 with
    the reason, and nothing is written.
    """
    from cuzk.formats.errors import FormatError

    try:
        run_calculate(circuit_wasm, input_json, out_wtns, sym)
    except (FormatError, OSError) as e:
        click.echo(f"cuzk wtns calculate: {e}", err=True)
        sys.exit(1)
