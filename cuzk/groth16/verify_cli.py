"""`cuzk verify`: check a Groth16 proof, in snarkjs's argument order and with its exit codes."""

from __future__ import annotations

import sys

import click

EXIT_VALID, EXIT_INVALID, EXIT_UNUSABLE = 0, 1, 2


@click.command("verify")
@click.argument("vk_json", type=click.Path(dir_okay=False))
@click.argument("public_json", type=click.Path(dir_okay=False))
@click.argument("proof_json", type=click.Path(dir_okay=False))
def verify(vk_json, public_json, proof_json):
    """Verify PROOF_JSON for the public signals PUBLIC_JSON under the key VK_JSON.

    The files are snarkjs's verification_key.json, public.json and proof.json (same order as
    `snarkjs groth16 verify`). Exit status: 0 valid, 1 invalid (the pairing check fails),
    2 unusable input (unreadable or malformed file, a point off the curve or outside its
    group, a value out of range, a public-signal count that is not nPublic), with a one-line
    reason.
    """
    from cuzk.formats.errors import FormatError
    from cuzk.groth16.verifier import verify_files

    try:
        ok = verify_files(vk_json, public_json, proof_json)
    except FormatError as e:
        click.echo(f"cuzk verify: unusable input: {e}", err=True)
        sys.exit(EXIT_UNUSABLE)
    if ok:
        click.echo("OK: the proof is valid")
        sys.exit(EXIT_VALID)
    click.echo("INVALID: the proof does not verify for these public signals", err=True)
    sys.exit(EXIT_INVALID)
