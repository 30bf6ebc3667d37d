"""`cuzk prove --server URL`: one proof made by a running `cuzk serve`, written like the local one.

The thin client path of `cuzk prove`. It loads neither numpy nor numba (standard library,
the HTTP client of `cuzk submit` and the atomic writer; tests/test_prove_remote.py checks
`sys.modules`), so the command costs an interpreter start, one request and the daemon's
proving time. The `cuzk` console script (cuzk/console.py) runs it without importing click
either when the command line is plainly one for it (`fast_args`; ~30 ms of CPU, a fifth of
rapidsnark's whole command at 2^12); any other command line goes through click's `cuzk
prove`, which calls `main` here. It keeps the local command's contract:

- the same checks in the same order: the key file, then the witness file (an OSError worded
  as the local path words it), then what the daemon finds wrong with them (a key that is not a
  Groth16 key, a witness that is not a .wtns of BN254's r or has the wrong count), reworded
  into the local path's one-line messages;
- exit 1 with one line for every reason not to write a proof, including a daemon that cannot
  be reached and a proof the daemon rejects (its self-verification, `--self-verify`, on by
  default);
- proof.json and public.json as snarkjs writes them (the daemon answers with the same
  objects the local writers write; they are dumped as cuzk.formats.snarkjs_json.dumps does),
  atomically, both or neither (cuzk.formats.atomic.write_outputs), and only for a good proof;
  outputs that could not be written (one file twice, a missing folder) are refused before
  the request.

How the witness travels (measured, docs/prover.md): uploaded as base64 inside the JSON body
costs ~10 ms of encoding and decoding per MiB on each side; a path costs nothing but lets
the daemon read the file only when it lies under its key roots on the same machine. So a
witness of PATH_MIN_BYTES or more goes to a loopback daemon as its absolute path; if the
daemon refuses that path (outside its key roots, unreadable to it), the same request is sent
again with the bytes. Smaller witnesses, and every witness to another host, are uploaded.
The key always goes by path (the daemon registers it on first use, as for `cuzk submit`).
"""

from __future__ import annotations

import os
import sys
import time

from cuzk.lean_json import dumps as json_dumps

# Witnesses from this size go to a loopback daemon by path first. Below it an upload costs
# under ~2 ms, less than the extra request a refused path would cost.
PATH_MIN_BYTES = 256 * 1024
# Seconds one /v1/prove request may wait (the daemon caps it at its max_wait); a proof that
# takes longer is then waited for on its job's result, without limit, like a local proof.
REQUEST_WAIT = 600.0

_KEY_UNUSABLE = "key: not a usable proving key: "
_WITNESS_UNUSABLE = "witnesses[0]: not a usable witness: "
_WITNESS_COUNT = (
    r"witnesses\[0\]: the witness has (\d+) values but key \S+ "
    r"expects nVars = (\d+)"
)
_NOT_VERIFIED = (
    "the proof does not verify: the witness does not satisfy the circuit of this "
    "key, or the key is damaged (prove with --local --r1cs R1CS to find a "
    "failing constraint)"
)


class RemoteError(Exception):
    """A reason not to write a proof, in one line."""


def is_loopback(server: str) -> bool:
    """True when the URL names this machine's loopback interface."""
    from cuzk.client import split_url

    host = split_url(server)[0]
    return host in ("localhost", "::1") or host.startswith("127.")


def local_words(e, zkey, wtns, server: str) -> str:
    """The daemon's refusal (an ApiError) as the local path words the same problem."""
    m = e.message if isinstance(e.message, str) else str(e)
    if e.status == 422:
        if m.startswith(_KEY_UNUSABLE):
            return f"{zkey}: {m[len(_KEY_UNUSABLE) :]}"
        if m.startswith(_WITNESS_UNUSABLE):
            return f"{wtns}: {m[len(_WITNESS_UNUSABLE) :]}"
        import re

        c = re.fullmatch(_WITNESS_COUNT, m)
        if c:
            return (
                f"{wtns}: witness has {c.group(1)} values but the key {zkey} expects "
                f"nVars = {c.group(2)}"
            )
    return f"cuzk serve at {server} refused the proof: {e}"


def failure_words(r: dict) -> str:
    """Why a finished job holds no proof, in one line."""
    reasons = [p.get("error") or "" for p in r.get("partitions", [])] + [r.get("error") or ""]
    if any("self-verification rejected" in x for x in reasons):
        return _NOT_VERIFIED
    why = r.get("error") or next((x for x in reasons if x), "no reason given")
    return f"the daemon's job {r.get('job_id')} {r.get('state')}: {why}"


# the commitments of a proof.json, by its protocol (the daemon proves Groth16 and PLONK keys)
PROOF_FIELDS = {
    "groth16": {"pi_a", "pi_b", "pi_c"},
    "plonk": {"A", "B", "C", "Z", "T1", "T2", "T3", "Wxi", "Wxiw"},
}


def _proof_of(r: dict) -> tuple[dict, list]:
    """(proof.json object, public.json list) of a finished one-partition job; RemoteError else."""
    if r.get("state") != "done":
        raise RemoteError(failure_words(r))
    try:
        proof, public = r["proofs"][0], r["public"][0]
    except (KeyError, IndexError, TypeError):
        proof = public = None
    if not (
        isinstance(proof, dict)
        and PROOF_FIELDS.get(proof.get("protocol"), PROOF_FIELDS["groth16"]) <= set(proof)
        and isinstance(public, list)
        and all(isinstance(s, str) and s.isdigit() for s in public)
    ):
        raise RemoteError(
            f"the daemon's job {r.get('job_id')} is done but its answer holds "
            "no proof.json / public.json"
        )
    return proof, public


def dumps(obj) -> str:
    """JSON as snarkjs writes it: cuzk.formats.snarkjs_json.dumps, which cannot be imported
    here without numpy (tests/test_prove_remote.py checks that the two agree); json.dumps's
    text without the json package's import (cuzk.lean_json)."""
    return json_dumps(obj, indent=1)


def prove_remote(client, zkey, wtns, proof_json, public_json) -> dict:
    """Prove on the daemon behind `client` (a cuzk.client.Client); write the files.

    Returns the daemon's result (job, partitions with their phase times). Raises OSError for
    a file the local path could not read either or an output that cannot be written
    (OutputError), RemoteError for everything else."""
    from cuzk.client import ApiError, ClientError
    from cuzk.formats.atomic import check_apart, check_outputs, write_outputs

    check_apart((proof_json, public_json), (zkey, wtns))  # as the local path: first
    with open(zkey, "rb"):  # the local path's order: the key, then the witness, the outputs
        pass
    with open(wtns, "rb") as f:
        by_path = is_loopback(client.server) and os.fstat(f.fileno()).st_size >= PATH_MIN_BYTES
        witness = None if by_path else f.read()
    check_outputs(proof_json, public_json)

    def ask(w, upload: bool) -> dict:
        r = client.prove(zkey, [w], upload=upload, timeout=REQUEST_WAIT)
        if not r.get("finished"):
            r = client.wait(r["job_id"])
        return r

    try:
        try:
            r = ask(wtns if by_path else witness, upload=not by_path)
        except ApiError as e:
            if not (by_path and e.status < 500 and e.message.startswith("witnesses[0]:")):
                raise
            with open(wtns, "rb") as f:  # the daemon cannot read it there: send the bytes
                r = ask(f.read(), upload=True)
    except ApiError as e:
        raise RemoteError(local_words(e, zkey, wtns, client.server)) from None
    except ClientError as e:
        raise RemoteError(str(e)) from None
    proof, public = _proof_of(r)
    write_outputs([(proof_json, dumps(proof)), (public_json, dumps(public))])
    return r


def run(zkey, wtns, proof_json, public_json, *, server, token_file=None, timings=False) -> int:
    """Prove on `server` and write the files; the exit status (0; 1 with one line on
    stderr). Click-free: the console script's fast path and click's command both end here."""
    t0 = time.perf_counter()
    from cuzk.client import Client, read_token

    try:
        token = read_token(token_file) if token_file else None
    except OSError as e:
        print(f"cuzk prove: token file {token_file}: {e.strerror or e}", file=sys.stderr)
        return 1
    client = Client(server, token)
    try:
        r = prove_remote(client, zkey, wtns, proof_json, public_json)
    except (RemoteError, OSError) as e:
        print(f"cuzk prove: {e}", file=sys.stderr)
        return 1
    if timings:
        p = r["partitions"][0]
        phases = ", ".join(
            f"{k} {p[f'{k}_ms']:.1f} ms"
            for k in ("synth", "gpu", "finalize")
            if p.get(f"{k}_ms") is not None
        )
        print(
            f"cuzk prove: job {r['job_id']} on {client.server}: {phases}; request and "
            f"files {1000 * (time.perf_counter() - t0):.1f} ms",
            file=sys.stderr,
        )
    return 0


# ---------------------------------------------------------------------------- command lines
# The options `fast_args` takes (with a value, or a flag); any other goes to click.
_VALUED = {"--server": "server", "--token-file": "token_file"}


def scan_args(argv: list[str], valued: dict, flags: dict) -> tuple[dict, list] | None:
    """(options, positionals) of a `cuzk prove` command line with only the options named in
    ``valued`` (``--opt VALUE`` or ``--opt=VALUE``) and ``flags`` (each {option: key}), each
    at most once, and paths click's checks would pass (ZKEY and WTNS not directories; outputs
    not directories, writable if present); None for anything else (then click parses it)."""
    got: dict = {}
    seen: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if not a.startswith("-") or a == "-":
            positional.append(a)
            continue
        name, eq, value = a.partition("=")
        if name in seen:
            return None
        seen.add(name)
        if name in valued:
            if not eq:
                if i >= len(argv):
                    return None
                value = argv[i]
                i += 1
            got[valued[name]] = value
        elif name in flags and not eq:
            key, value = flags[name]
            got[key] = value
        else:
            return None
    if len(positional) != 4:
        return None
    for p in positional:
        if os.path.isdir(p):
            return None
    for p in positional[2:]:
        if os.path.exists(p) and not os.access(p, os.W_OK):
            return None
    return got, positional


def fast_args(argv: list[str], environ) -> dict | None:
    """The arguments of `run` for `cuzk prove ARGV` when the command line is plainly one for
    a server, else None (then click parses it, with its usage errors and --help).

    Plainly: four arguments, the options --server, --token-file (each at most once, as
    `--opt VALUE` or `--opt=VALUE`), --timings, a server from
    --server or CUZK_SERVER, and arguments that click's checks would pass (ZKEY and WTNS
    not directories; outputs not directories, writable if present). --local, --r1cs,
    --device, --help, `--` or anything else: None. tests/test_prove_remote.py checks that
    whatever this accepts, click parses to the same call."""
    scanned = scan_args(argv, _VALUED, {"--timings": ("timings", True)})
    if scanned is None:
        return None
    got, positional = scanned
    got.setdefault("timings", False)
    got.setdefault("server", environ.get("CUZK_SERVER") or None)
    got.setdefault("token_file", environ.get("CUZK_TOKEN_FILE") or None)
    if not got["server"] or got["token_file"] == "":
        return None
    zkey, wtns, proof_json, public_json = positional
    return {"zkey": zkey, "wtns": wtns, "proof_json": proof_json, "public_json": public_json, **got}


def use_server(local: bool) -> bool:
    """Whether click's `cuzk prove`, given a server (--server or CUZK_SERVER), proves there:
    --local proves here instead; --local with --server on the command line is a usage
    error (click's, exit 2)."""
    import click
    from click.core import ParameterSource

    ctx = click.get_current_context()
    if not local:
        return True
    if ctx.get_parameter_source("server") == ParameterSource.COMMANDLINE:
        raise click.UsageError("--server and --local exclude each other", ctx)
    return False


def prove_on_server(
    zkey, wtns, proof_json, public_json, *, server, token_file, r1cs, device, timings
) -> None:
    """click's `cuzk prove` with a server: refuse the local prover's options (usage error,
    exit 2), prove, write, exit (0 written; 1 with one line on stderr)."""
    import click

    for name, given in (("--r1cs", r1cs is not None), ("--device", device != "cpu")):
        if given:
            raise click.UsageError(
                f"{name} is an option of the local prover: with --server "
                "(or CUZK_SERVER) the daemon's devices prove; add --local "
                "to prove here",
                click.get_current_context(),
            )
    code = run(
        zkey, wtns, proof_json, public_json, server=server, token_file=token_file, timings=timings
    )
    if code:
        sys.exit(code)
    from cuzk.groth16.fast_exit import exit_now_if_a_process_of_its_own

    exit_now_if_a_process_of_its_own()
