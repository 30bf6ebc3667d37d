"""`cuzk export-vk`: a .zkey's verification_key.json, as `snarkjs zkey export verificationkey`."""

from __future__ import annotations

import sys

import click


def export_vk_file(zkey_path, vk_path) -> dict:
    """Read the key at zkey_path (Groth16 or PLONK, as its header says) and write its
    verification key JSON atomically."""
    from cuzk.formats.atomic import check_apart
    from cuzk.formats.snarkjs_json import verification_key, write_verification_key
    from cuzk.formats.zkey import PLONK_PROTOCOL_ID, ZKey, zkey_protocol

    check_apart((vk_path,), (zkey_path,))  # the key over itself would destroy it
    if zkey_protocol(zkey_path) == PLONK_PROTOCOL_ID:
        from cuzk.formats import plonk_json
        from cuzk.formats.plonk_zkey import PlonkZKey

        vk = plonk_json.verification_key(PlonkZKey(zkey_path, check_indices=False))
    else:
        vk = verification_key(ZKey(zkey_path, check_coefficients=False))
    write_verification_key(vk_path, vk)
    return vk


@click.command("export-vk")
@click.argument("zkey", type=click.Path(dir_okay=False))
@click.argument("vk_json", type=click.Path(dir_okay=False, writable=True))
def export_vk(zkey, vk_json):
    """Write ZKEY's verification key to VK_JSON (the JSON snarkjs writes, byte for byte).

    ZKEY is a Groth16 or a PLONK key (its header says which). Exits 2 with a one-line
    reason if it is neither (an FFLONK key) or not usable.
    """
    from cuzk.formats.errors import FormatError

    try:
        export_vk_file(zkey, vk_json)
    except (FormatError, OSError) as e:
        click.echo(f"cuzk export-vk: {e}", err=True)
        sys.exit(2)
