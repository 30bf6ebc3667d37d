"""`cuzk verify`: check a Groth16 or PLONK proof, in snarkjs's argument order and with its exit
codes. The key's "protocol" picks the verifier (cuzk.groth16.verifier, cuzk.plonk.verifier);
a key of another protocol (fflonk) is unusable input, named in one line.

The command verifies with the Python-int backend (cuzk.groth16.verifier.BACKENDS): one proof
costs tens of milliseconds there, against about half a second of loading numpy, numba and the
cached machine code for the compiled one. A command line that is plainly three files
(`fast_args`) skips click too (cuzk.console: importing click costs ~30 ms); any other goes
through the click command `verify` below, with the same result.
"""

from __future__ import annotations

import os
import sys

EXIT_VALID, EXIT_INVALID, EXIT_UNUSABLE = 0, 1, 2
BACKEND = "python"


def run(vk_json, public_json, proof_json) -> int:
    """Verify and print the verdict (OK on stdout; INVALID or the one-line reason on stderr);
    returns the exit status."""
    from cuzk.formats.errors import FormatError

    try:
        ok = verify_files(vk_json, public_json, proof_json)
    except FormatError as e:
        print(f"cuzk verify: unusable input: {e}", file=sys.stderr)
        return EXIT_UNUSABLE
    if ok:
        print("OK: the proof is valid")
        return EXIT_VALID
    print("INVALID: the proof does not verify for these public signals", file=sys.stderr)
    return EXIT_INVALID


def verify_files(vk_json, public_json, proof_json) -> bool:
    """Verify with the proof system the key names (its "protocol": groth16, or a key of old
    without one; plonk): the verdict, or a FormatError for unusable input, a key of another
    protocol (fflonk) included."""
    from cuzk.formats.errors import UnsupportedProtocol
    from cuzk.formats.plonk_json import json_protocol
    from cuzk.formats.snarkjs_json import load, show

    vk = load(vk_json, "verification key")
    protocol = json_protocol(vk)
    if protocol == "plonk":
        from cuzk.plonk.verifier import verify_objects

        paths = tuple(os.fspath(p) for p in (vk_json, public_json, proof_json))
        return verify_objects(
            vk, load(public_json, "public signals"), load(proof_json, "proof"), paths
        )
    if protocol not in (None, "groth16") and isinstance(vk, dict):
        raise UnsupportedProtocol(
            os.fspath(vk_json),
            f"protocol {show(protocol)} is not supported: cuzk verifies groth16 and plonk",
        )
    from cuzk.groth16.verifier import verify_files as groth16_verify_files

    return groth16_verify_files(vk_json, public_json, proof_json, backend=BACKEND)


def fast_args(argv: list[str]) -> list[str] | None:
    """The three files of `cuzk verify ARGV` when the command line is plainly three paths
    that click's checks pass (no option, nothing starting with "-", no directory), else None
    (click then parses it, with its usage errors and --help)."""
    if len(argv) != 3 or any(a.startswith("-") or os.path.isdir(a) for a in argv):
        return None
    return argv


def _command():
    import click

    @click.command("verify")
    @click.argument("vk_json", type=click.Path(dir_okay=False))
    @click.argument("public_json", type=click.Path(dir_okay=False))
    @click.argument("proof_json", type=click.Path(dir_okay=False))
    def verify(vk_json, public_json, proof_json):
        """Verify PROOF_JSON for the public signals PUBLIC_JSON under the key VK_JSON.

        The files are snarkjs's verification_key.json, public.json and proof.json (same order
        as `snarkjs groth16 verify` and `snarkjs plonk verify`; the key's protocol, groth16 or
        plonk, picks the verifier). Exit status: 0 valid, 1 invalid (the pairing check
        fails), 2 unusable input (unreadable or malformed file, a point off the curve or
        outside its group, a value out of range, a public-signal count that is not nPublic),
        with a one-line reason.
        """
        sys.exit(run(vk_json, public_json, proof_json))

    return verify


def __getattr__(name):
    """`verify`, the click command, built on first use (PEP 562): the fast path of
    cuzk.console imports this module for `run` without importing click."""
    if name == "verify":
        command = globals()["verify"] = _command()
        return command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
