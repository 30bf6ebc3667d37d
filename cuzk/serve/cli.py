"""Click commands of the daemon and its clients: serve, config show, submit, jobs, cancel, status.

Thin, as in uvicorn: options are parsed here and handed on — serve and config show build a
Config (cuzk.serve.config does precedence and validation), the client commands call
cuzk.client. Exit statuses: 0 success; 1 a job or partition failed (submit --wait) or
the job did not finish in time; 2 usage errors and requests the server refused (4xx);
3 the server could not be reached or failed (5xx); 78 (EX_CONFIG) a configuration serve cannot
start with; 75 (EX_TEMPFAIL) serve on a full state disk (cuzk.serve.daemon).
"""

from __future__ import annotations

import json
import os
import sys

import click

from cuzk.board.layout import PRIORITIES
from cuzk.engine.settings import parse_bool
from cuzk.serve.config import EX_CONFIG, SETTINGS

EXIT_FAILED, EXIT_REFUSED, EXIT_UNREACHABLE = 1, 2, 3
OUTS = ("proof", "public")  # `submit --wait` writes <out>/proof-<i>.json and public-<i>.json
CTX = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def config_options(f):
    """The serve settings as options (default None = not given; see cuzk.serve.config)."""
    for s in reversed(SETTINGS):
        flag = s.flag
        shown = f"env {s.env}" + (f"; default: {s.default_text}" if s.default_text else "")
        help_text = f"{s.help} [{shown}]"
        if s.parse is parse_bool:  # --x / --no-x
            f = click.option(f"{flag}/--no-{flag[2:]}", s.name, default=None, help=help_text)(f)
        elif isinstance(s.default, list):  # repeatable
            f = click.option(flag, s.name, multiple=True, metavar=s.metavar, help=help_text)(f)
        else:
            f = click.option(flag, s.name, default=None, metavar=s.metavar, help=help_text)(f)
    return click.option(
        "--config",
        "config_file",
        metavar="FILE",
        default=None,
        help="TOML configuration file (keys as the option names with "
        "underscores). [env CUZK_CONFIG]",
    )(f)


def _load_config(command: str, config_file, settings):
    from cuzk.serve.config import Config, ConfigError

    try:
        return Config(config_file=config_file, **settings).load()
    except ConfigError as e:
        click.echo(f"cuzk {command}: {e}", err=True)
        sys.exit(EX_CONFIG)


@click.command("serve", context_settings=CTX)
@config_options
def serve(config_file, **settings):
    """Run the proving daemon: the engine plus the HTTP API on --listen.

    Each setting comes from its flag, else its CUZK_* variable, else the --config file, else
    its default; `cuzk config show` prints the result. SIGTERM drains: no new jobs, running
    ones get --drain-timeout seconds, then everything stops and exits 0.
    """
    config = _load_config("serve", config_file, settings)
    from cuzk.serve.daemon import run

    sys.exit(run(config))


@click.group("config", context_settings=CTX)
def config():
    """Inspect the serve configuration."""


@config.command("show", context_settings=CTX)
@click.option("--json", "as_json", is_flag=True, help="JSON: {setting: {value, source}}.")
@config_options
def config_show(as_json, config_file, **settings):
    """Print the effective serve configuration and where each value came from.

    Takes the same options as `cuzk serve`; the output (TOML) can be used as a config file.
    """
    cfg = _load_config("config show", config_file, settings)
    click.echo(cfg.to_json() if as_json else cfg.to_toml(), nl=as_json)


# ---------------------------------------------------------------------------- clients
def client_options(f):
    f = click.option(
        "--token-file",
        metavar="FILE",
        envvar="CUZK_TOKEN_FILE",
        help="File holding the API's bearer token. [env CUZK_TOKEN_FILE]",
    )(f)
    return click.option(
        "--server",
        metavar="URL",
        envvar="CUZK_SERVER",
        default="http://127.0.0.1:9820",
        show_default=True,
        help="cuzk serve address. [env CUZK_SERVER]",
    )(f)


def _client(server, token_file, command: str):
    from cuzk.client import Client, read_token

    token = None
    if token_file:
        try:
            token = read_token(token_file)
        except OSError as e:
            _fail(command, f"token file {token_file}: {e.strerror or e}", EXIT_REFUSED)
    return Client(server, token)


def _fail(command: str, message: str, code: int):
    click.echo(f"cuzk {command}: {message}", err=True)
    sys.exit(code)


def _call(command: str, fn, *args, **kw):
    from cuzk.client import ApiError, ClientError

    try:
        return fn(*args, **kw)
    except ApiError as e:
        _fail(command, str(e), EXIT_REFUSED if e.status < 500 else EXIT_UNREACHABLE)
    except ClientError as e:
        _fail(command, str(e), EXIT_UNREACHABLE)


@click.command("submit", context_settings=CTX)
@client_options
@click.option(
    "--kind",
    default="default",
    show_default=True,
    help="Job kind label (e.g. winning-post, window-post, snap-update, porep-c2).",
)
@click.option(
    "--priority",
    type=click.Choice(PRIORITIES),
    default="normal",
    show_default=True,
    help=f"Scheduling priority: {' before '.join(PRIORITIES)}; FIFO within.",
)
@click.option("--wait", is_flag=True, help="Wait for the proofs and write them to --out.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="With --wait: give up after this many seconds (exit 1). [default: none]",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="With --wait: where proof-<i>.json and public-<i>.json (partition i from 0) are written.",
)
@click.option(
    "--paths",
    is_flag=True,
    help="Send witness paths (the server reads them under "
    "its key roots) instead of uploading the files.",
)
@click.option(
    "--input",
    "as_inputs",
    is_flag=True,
    help="The files are circuit inputs "
    "(input.json, as snarkjs takes them), one per partition: the server computes "
    "the witnesses with the key's circuit wasm (see --wasm).",
)
@click.option(
    "--wasm",
    type=click.Path(dir_okay=False),
    default=None,
    help="Register ZKEY (a path) with its circuit's wasm (circom --wasm; a path "
    "under the server's key roots) before submitting.",
)
@click.argument("zkey")
@click.argument("wtns", nargs=-1, required=True)
def submit(
    server, token_file, kind, priority, wait, timeout, out_dir, paths, as_inputs, wasm, zkey, wtns
):
    """Submit a job: proving key ZKEY (a path under the server's key roots, or a key id) and
    one witness WTNS per partition (with --input: one circuit input JSON per partition).
    Prints the job id; with --wait, writes the proofs and exits 1 if any partition failed."""
    if wait:  # the proofs written into --out must not replace the files sent
        from cuzk.formats.atomic import OutputError, check_apart

        outs = [os.path.join(out_dir, f"{w}-{i}.json") for i in range(len(wtns)) for w in OUTS]
        try:
            check_apart(outs, (zkey, *wtns, wasm))
        except OutputError as e:
            _fail("submit", str(e), EXIT_REFUSED)
    inputs = None
    if as_inputs:
        if paths:
            _fail("submit", "--paths is for witnesses; --input files are always sent", EXIT_REFUSED)
        inputs = [_read_input(f) for f in wtns]
    else:
        for w in wtns:
            if not paths and not os.path.isfile(w):
                _fail("submit", f"{w}: no such file", EXIT_REFUSED)
    client = _client(server, token_file, "submit")
    if wasm is not None:
        if not os.path.exists(zkey):
            _fail("submit", f"--wasm registers a key file: {zkey}: no such file", EXIT_REFUSED)
        _call("submit", client.register_key, zkey, wasm)
    job = _call(
        "submit",
        client.submit,
        zkey,
        list(wtns) if inputs is None else None,
        kind=kind,
        priority=priority,
        upload=not paths,
        inputs=inputs,
    )
    job_id = job["job_id"]
    if not wait:
        click.echo(job_id)
        return
    click.echo(f"job {job_id}: {job['total_partitions']} partition(s) submitted; waiting", err=True)
    r = _call("submit", client.wait, job_id, timeout)
    sys.exit(write_result(r, out_dir))


def _read_input(path) -> dict:
    """A circuit input file: one JSON object (its values are checked by the server)."""
    from cuzk.formats.json_limits import MAX_INPUT_BYTES, TooLarge, read_limited

    try:
        obj = json.loads(read_limited(path, MAX_INPUT_BYTES))
    except OSError as e:
        _fail("submit", f"{path}: {e.strerror or e}", EXIT_REFUSED)
    except TooLarge as e:
        _fail("submit", f"{path}: too large for circuit inputs ({e})", EXIT_REFUSED)
    except (ValueError, RecursionError) as e:
        _fail("submit", f"{path}: not valid JSON: {e}", EXIT_REFUSED)
    if not isinstance(obj, dict):
        _fail(
            "submit",
            f"{path}: the circuit's inputs are a JSON object, got {type(obj).__name__}",
            EXIT_REFUSED,
        )
    return obj


def write_result(r: dict, out_dir) -> int:
    """Write proof-<i>.json / public-<i>.json for each proved partition; exit status."""
    from cuzk.formats.atomic import write_outputs
    from cuzk.formats.snarkjs_json import dumps

    if not r.get("finished"):
        click.echo(
            f"cuzk submit: job {r['job_id']} is still {r['state']} after the timeout", err=True
        )
        return EXIT_FAILED
    written = 0
    try:
        os.makedirs(out_dir, exist_ok=True)
        for i, (proof, public) in enumerate(zip(r["proofs"], r["public"], strict=True)):
            if proof is None or public is None:
                continue
            write_outputs(  # the pair or neither
                [
                    (os.path.join(out_dir, f"{w}-{i}.json"), dumps(x))
                    for w, x in zip(OUTS, (proof, public), strict=True)
                ]
            )
            written += 1
    except OSError as e:
        click.echo(
            f"cuzk submit: job {r['job_id']} {r['state']}, but its proofs cannot be written "
            f"to {out_dir} ({written} written): {e.strerror or e}",
            err=True,
        )
        return EXIT_FAILED
    n = r["total_partitions"]
    failed = [p for p in r["partitions"] if p["state"] != "done"]
    if r["state"] == "done" and not failed:
        click.echo(f"job {r['job_id']} done: {written}/{n} proofs written to {out_dir}")
        return 0
    click.echo(
        f"job {r['job_id']} {r['state']}: {written}/{n} proofs written to {out_dir}"
        + (f"; {r['error']}" if r.get("error") else ""),
        err=True,
    )
    for p in failed:
        click.echo(
            f"  partition {p['index']}: {p['state']}"
            + (f" ({p['error']})" if p.get("error") else ""),
            err=True,
        )
    return EXIT_FAILED


@click.command("jobs", context_settings=CTX)
@client_options
@click.option(
    "--state",
    type=click.Choice(["queued", "running", "done", "failed", "cancelled"]),
    default=None,
    help="Only jobs in this state.",
)
@click.option("--json", "as_json", is_flag=True, help="The API's JSON list.")
def jobs(server, token_file, state, as_json):
    """List the server's jobs (live ones and recent history), oldest first."""
    client = _client(server, token_file, "jobs")
    items = _call("jobs", client.jobs, state)
    if as_json:
        click.echo(json.dumps(items, indent=1))
        return
    click.echo(f"{'JOB':16}  {'KIND':14} {'PRIORITY':8} {'STATE':9} {'DONE':>9}  ERROR")
    for j in items:
        done = f"{j['partitions_done']}/{j['total_partitions']}"
        click.echo(
            f"{j['job_id']:16}  {j['kind'][:14]:14} {j['priority']:8} {j['state']:9} "
            f"{done:>9}  {j.get('error') or ''}"
        )


@click.command("cancel", context_settings=CTX)
@client_options
@click.argument("job_id")
def cancel(server, token_file, job_id):
    """Cancel job JOB_ID: queued partitions are dropped, running ones stop at their next
    stage boundary. Exits 1 if the job had already finished."""
    client = _client(server, token_file, "cancel")
    r = _call("cancel", client.cancel, job_id)
    if r["cancelled"]:
        click.echo(f"job {job_id} cancelled")
        return
    click.echo(f"job {job_id} had already finished ({r['state']})", err=True)
    sys.exit(EXIT_FAILED)


@click.command("status", context_settings=CTX)
@client_options
@click.option("--json", "as_json", is_flag=True, help="The GET /status JSON (board snapshot).")
@click.option("--width", type=click.IntRange(min=20), default=None, help="Frame width.")
@click.option("--height", type=click.IntRange(min=5), default=None, help="Frame height.")
def status(server, token_file, as_json, width, height):
    """Show the server's status: one `cuzk top` frame drawn from GET /status, or its JSON."""
    client = _client(server, token_file, "status")
    snap = _call("status", client.status)
    if as_json:
        click.echo(json.dumps(snap, indent=1))
        return
    from cuzk.top.runner import run
    from cuzk.top.source import ServerSource

    sys.exit(
        _call(
            "status",
            run,
            source=ServerSource(client=client),
            once=True,
            interval=0.5,
            width=width,
            height=height,
        )
    )
