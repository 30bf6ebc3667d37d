"""`cuzk prove` in this process, without click: the body of click's command (cuzk.groth16.cli)
and the console script's fast path for a plain local proof (cuzk.console).

Importing click costs a `cuzk prove` ~15-30 ms of its ~0.1 s fixed cost once the kernels come
from the native library (cuzk.native, docs/prover.md). A command line that is plainly a local
proof (fast_args: the four files and at most --r1cs FILE, --timings, --local, --verify /
--no-verify, no server unless --local) runs ``run`` directly, with the same messages and exit
statuses; anything else, including a usage error or --help, goes to click.
"""

from __future__ import annotations

import os
import sys

_VALUED = {"--r1cs": "r1cs"}
_FLAGS = {
    "--timings": ("timings", True),
    "--local": ("local", True),
    "--verify": ("verify", True),
    "--no-verify": ("verify", False),
}


def fast_args(argv: list[str], environ) -> dict | None:
    """The arguments of ``run`` for `cuzk prove ARGV` when the command line is plainly a
    local proof, else None. Plainly: four arguments (paths click's checks pass), the options
    above (each at most once; not both --verify and --no-verify; --r1cs an existing readable
    file, as click checks it), and no server: neither --server nor CUZK_SERVER, unless
    --local. tests/test_prove_remote.py checks that
    whatever this accepts, click parses to the same call."""
    from cuzk.groth16.remote import scan_args

    if "--verify" in argv and "--no-verify" in argv:
        return None
    scanned = scan_args(argv, _VALUED, _FLAGS)
    if scanned is None:
        return None
    got, positional = scanned
    if not got.pop("local", False) and environ.get("CUZK_SERVER"):
        return None
    r1cs = got.get("r1cs")
    if r1cs is not None and not (
        os.path.exists(r1cs) and not os.path.isdir(r1cs) and os.access(r1cs, os.R_OK)
    ):
        return None  # click's check of --r1cs (an existing, readable file) words the error
    zkey, wtns, proof_json, public_json = positional
    return {
        "zkey": zkey,
        "wtns": wtns,
        "proof_json": proof_json,
        "public_json": public_json,
        "r1cs": r1cs,
        "verify": got.get("verify", True),
        "timings": got.get("timings", False),
    }


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(
    zkey, wtns, proof_json, public_json, *, r1cs=None, verify=True, device="cpu", timings=False
) -> int:
    """Prove here and write the outputs (cuzk.groth16.files.run_prove) with the command's
    compile notice; 0, or 1 with one line on stderr for every reason not to write."""
    if timings:  # logging imported only then (~3 ms of the command's own cost)
        import logging

        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(message)s")
        logging.getLogger("numba").setLevel(logging.WARNING)
    if r1cs is None:  # the common case without numpy, where it takes it (cuzk.groth16.lean)
        from cuzk.groth16 import lean

        if lean.prove(zkey, wtns, proof_json, public_json, verify, device):
            return 0
    from cuzk.compiling import compile_notice
    from cuzk.groth16.files import ProveError, run_prove

    try:
        with compile_notice("cuzk prove") as watch:
            run_prove(zkey, wtns, proof_json, public_json, r1cs, verify, device)
    except (ProveError, FileNotFoundError, ValueError, OSError) as e:
        _say(f"cuzk prove: {e}")
        return 1
    native_hint("cuzk prove", watch)
    return 0


def native_hint(command: str, watch) -> None:
    """After a command that compiled kernels (a cold cache): say that `cuzk warmup` would
    also build the native library that lets the next commands start without Numba (unless
    this one ran the library's kernels)."""
    from cuzk import native

    if watch.total_compiled and not native.calls:
        _say(
            f"{command}: `cuzk warmup` also builds the native kernel library, with which "
            "this command starts without loading Numba (docs/prover.md)"
        )
