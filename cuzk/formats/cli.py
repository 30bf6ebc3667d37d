"""`cuzk export-vk`: a .zkey's verification_key.json, as `snarkjs zkey export verificationkey`."""

from __future__ import annotations

import sys

import click


def export_vk_file(zkey_path, vk_path) -> dict:
    """Read the Groth16 key at zkey_path and write its verification key JSON atomically."""
    from cuzk.formats.atomic import check_apart
    from cuzk.formats.snarkjs_json import verification_key, write_verification_key
    from cuzk.formats.zkey import ZKey

    check_apart((vk_path,), (zkey_path,))  # the key over itself would destroy it
    vk = verification_key(ZKey(zkey_path, check_coefficients=False))
    write_verification_key(vk_path, vk)
    return vk


@click.command("export-vk")
@click.argument("zkey", type=click.Path(dir_okay=False))
@click.argument("vk_json", type=click.Path(dir_okay=False, writable=True))
def export_vk(zkey, vk_json):
    """Write ZKEY's verification key to VK_JSON (the JSON snarkjs writes, byte for byte).

    Exits 2 with a one-line reason if ZKEY is not a usable Groth16 key.
    """
    from cuzk.formats.errors import FormatError

    try:
        export_vk_file(zkey, vk_json)
    except (FormatError, OSError) as e:
        click.echo(f"cuzk export-vk: {e}", err=True)
        sys.exit(2)
