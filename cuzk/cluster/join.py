"""`cuzk cluster join HEAD`: make this prover machine a node of a cuzk farm on Ray.

It composes, prints and runs one `ray start` command line: the node joins the cluster whose
head is HEAD, carries the resource `cuzk_node` (the gateway runs one node-engine actor on each
node that has it), advertises the GPUs its devices setting names, gets an object store of an
explicit size, and records the engine settings given here as node labels
(cuzk.cluster.labels). Ray is imported nowhere here: only its `ray` executable is run.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import click

from cuzk.cluster.labels import NODE_RESOURCE, to_labels
from cuzk.engine import settings as engine_settings
from cuzk.engine.settings import NODE_SETTINGS, format_size

CTX = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
EXIT_USAGE, EXIT_NO_RAY = 2, 1

# The default object store: this fraction of the memory budget, within these bounds.
OBJECT_STORE_FRACTION = 0.10
OBJECT_STORE_MAX = 4 * 1024**3
OBJECT_STORE_MIN = 75 * 1024**2  # Ray refuses a smaller object store

# `ray start` options this command sets itself; passing them after `--` is refused.
OWN_RAY_OPTIONS = (
    "--address",
    "--head",
    "--resources",
    "--num-gpus",
    "--object-store-memory",
    "--labels",
    "--labels-file",
)


class JoinError(ValueError):
    """A join this machine cannot do; str() is the one-line reason."""


# ---------------------------------------------------------------------------- inputs
_HOST_LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_HOST_LABEL}(\.{_HOST_LABEL})*\.?")


def parse_head(value: str) -> str:
    """HEAD as given ("host:port", "10.0.0.1:6379", "[fd00::1]:6379"), checked."""
    s = str(value).strip()
    if s.startswith("["):
        host, _, rest = s[1:].partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else None
        ok_host = _is_ip(host, version=6)
    elif s.count(":") == 1:
        host, port = s.split(":")
        ok_host = _is_ip(host) or bool(_HOST_NAME.fullmatch(host))
    else:
        host, port, ok_host = s, None, False
    if not ok_host or port is None or not port.isdigit() or not 0 < int(port) <= 65535:
        raise JoinError(
            f"HEAD {value!r}: expected the Ray head's HOST:PORT, such as 10.0.0.1:6379 "
            "or [fd00::1]:6379"
        )
    return s


def _is_ip(host: str, version: int | None = None) -> bool:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return version is None or ip.version == version


def default_object_store(memory_budget: int) -> int:
    """The object store for a memory budget when none is given: OBJECT_STORE_FRACTION of
    it, at most OBJECT_STORE_MAX and at least OBJECT_STORE_MIN."""
    return max(OBJECT_STORE_MIN, min(int(memory_budget * OBJECT_STORE_FRACTION), OBJECT_STORE_MAX))


def count_gpus(devices: str) -> int:
    """The GPUs a devices setting uses on this machine: GPU ordinals -> how many (each must
    exist here), cpu:N -> 0, auto -> every CUDA device here (0 when there is none)."""
    spec = str(devices).strip().lower()
    if re.fullmatch(r"cpu(:[0-9]+)?", spec):
        engine_settings.parse_devices(spec, n_gpus=0)  # cpu:0 is refused there
        return 0
    n = engine_settings.cuda_device_count()
    names = engine_settings.parse_devices(spec, n_gpus=n)
    return sum(name.startswith("cuda:") for name in names)


def read_token_file(path: str) -> str:
    """The absolute path of a readable, non-empty Ray token file."""
    full = os.path.abspath(os.path.expanduser(path))
    try:
        with open(full, "rb") as f:
            token = f.read()
    except OSError as e:
        raise JoinError(f"--ray-token-file {path}: {e.strerror or e}") from None
    if not token.strip():
        raise JoinError(f"--ray-token-file {path}: the file is empty")
    return full


def find_ray() -> str | None:
    """The `ray` executable beside the running Python (its virtual environment), else the
    one on PATH, else None."""
    beside = os.path.join(os.path.dirname(sys.executable), "ray")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("ray")


# ---------------------------------------------------------------------------- the plan
@dataclass
class JoinPlan:
    """One `ray start` to run: its argv, the variables it adds to the environment, and
    what it was derived from (for the summary)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    num_gpus: int = 0
    object_store_memory: int = 0
    engine_memory: int = 0

    def command_line(self) -> str:
        """The whole command as one shell line, variables first (VAR=... ray start ...)."""
        assigns = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        return " ".join([*assigns, shlex.join(self.argv)])


def plan_join(
    head: str,
    *,
    ray: str,
    object_store_memory: str | int | None = None,
    ray_token_file: str | None = None,
    ray_args: tuple[str, ...] = (),
    **node: str | int | None,
) -> JoinPlan:
    """The `ray start` that joins this machine to HEAD's cluster; raises JoinError with the
    one-line reason when an input is bad. `node`: this machine's node settings (the `node`
    entries of cuzk.engine.settings's table: devices, synth_workers, ...), None = not given."""
    unknown = sorted(set(node) - {s.name for s in NODE_SETTINGS})
    if unknown:
        raise TypeError(f"plan_join: not a node setting: {', '.join(unknown)}")
    head = parse_head(head)
    devices = node.get("devices")
    try:
        num_gpus = count_gpus("auto" if devices is None else devices)
    except ValueError as e:
        raise JoinError(f"--{e}" if str(e).startswith("devices ") else f"--devices: {e}") from None

    memory_budget = node.get("memory_budget")
    if memory_budget is None:
        memory_budget = "auto"
    budget = _size("--memory-budget", engine_settings.memory_budget_bytes, memory_budget)
    if object_store_memory is None:
        store = default_object_store(budget)
    else:
        store = _size("--object-store-memory", engine_settings.positive_size, object_store_memory)
        if store < OBJECT_STORE_MIN:
            raise JoinError(
                f"--object-store-memory {object_store_memory}: Ray needs at least "
                f"{format_size(OBJECT_STORE_MIN)}"
            )
    engine_memory = budget - store
    if engine_memory <= 0:
        raise JoinError(
            f"the object store ({format_size(store)}) leaves nothing of the memory budget "
            f"({format_size(budget)}) for the engine: raise --memory-budget or lower "
            "--object-store-memory"
        )

    try:  # the memory budget is always recorded, as the bytes left to the engine
        labels = to_labels({**node, "memory_budget": engine_memory})
    except ValueError as e:
        raise JoinError(str(e)) from None

    for arg in ray_args:
        if arg.split("=", 1)[0] in OWN_RAY_OPTIONS:
            raise JoinError(f"{arg.split('=', 1)[0]} is set by cuzk cluster join; leave it out")

    env = {}
    if ray_token_file is not None:
        env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": read_token_file(ray_token_file)}

    argv = [
        ray,
        "start",
        "--address",
        head,
        "--resources",
        json.dumps({NODE_RESOURCE: 1}),
        "--num-gpus",
        str(num_gpus),
        "--object-store-memory",
        str(store),
        "--labels",
        ",".join(f"{k}={v}" for k, v in labels.items()),
        *ray_args,
    ]
    return JoinPlan(argv, env, labels, num_gpus, store, engine_memory)


def _size(option: str, parse, value) -> int:
    try:
        return parse(value)
    except ValueError as e:
        raise JoinError(f"{option}: {e}") from None


# ---------------------------------------------------------------------------- commands
# What join says about a node setting beyond the table's help (cuzk.engine.settings).
JOIN_NOTES = {
    "devices": "Also decides --num-gpus: the GPUs it names, none for cpu:N, every GPU found "
    "here for auto or when left out.",
    "memory_budget": "Here Ray's object store is part of it: the engine gets this less "
    "--object-store-memory.",
}


class _SettingType(click.ParamType):
    """A click type that parses with the setting's own parser (a bad value: usage error)."""

    def __init__(self, setting):
        self.setting = setting
        self.name = setting.metavar

    def convert(self, value, param, ctx):
        try:
            return self.setting.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


def node_options(f):
    """The node settings of the engine's table as options, named and explained as in `cuzk
    serve`. Each left out follows the gateway's setting (None), but the memory budget, which
    join always records (auto: this machine's). Counts are checked as they are parsed; the
    devices and the budget, which need this machine's GPUs and memory, by plan_join."""
    for s in reversed(NODE_SETTINGS):
        counted = hasattr(s.parse, "minimum")
        if s.name == "memory_budget":
            default, shown = s.default, f"[default: {s.default_text}]"
        else:
            default, shown = None, "[default: the gateway's setting]"
        help_text = " ".join(filter(None, (s.help, JOIN_NOTES.get(s.name), shown)))
        f = click.option(
            s.flag,
            s.name,
            default=default,
            metavar=s.metavar,
            type=_SettingType(s) if counted else None,
            help=help_text,
        )(f)
    return f


def _fail(message: str, code: int):
    click.echo(f"cuzk cluster join: {message}", err=True)
    sys.exit(code)


@click.group("cluster", context_settings=CTX)
def cluster():
    """A farm of prover machines on a Ray cluster, behind one gateway (`cuzk serve --ray`).

    Needs Ray: pip install 'cuzk[cluster]'.
    """


@cluster.command("join", context_settings=CTX)
@click.argument("head", metavar="HEAD")
@node_options
@click.option(
    "--object-store-memory",
    metavar="SIZE",
    default=None,
    help="Ray's object store on this machine (witnesses and proofs in transit). [default: "
    f"10% of the memory budget, at most {format_size(OBJECT_STORE_MAX)}, at least "
    f"{format_size(OBJECT_STORE_MIN)}]",
)
@click.option(
    "--ray-token-file",
    metavar="FILE",
    default=None,
    help="The cluster's Ray authentication token (a file, as on the head): ray start runs "
    "with RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=FILE.",
)
@click.option("--dry-run", is_flag=True, help="Print the ray start command; do not run it.")
@click.argument("ray_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- RAY_START_ARGS...]")
def join(head, ray_args, dry_run, **options):
    """Join this prover machine to the Ray cluster whose head is HEAD (HOST:PORT).

    Run it once on each prover machine. It prints, then runs, one `ray start` command: the
    node carries the resource cuzk_node (the gateway, `cuzk serve --ray`, runs one node
    engine on each such node), --num-gpus counted from --devices, an explicit
    --object-store-memory, and node labels recording the settings given here. Settings
    given here override the gateway's for this machine; those left out follow the
    gateway's. The memory budget is always recorded: --memory-budget less the object store.

    Arguments after `--` go to ray start as they are (e.g. -- --node-ip-address 10.0.0.5).
    Exit status: ray start's; 2 for a bad argument; 1 when Ray is not installed.
    """
    ray = find_ray()
    try:
        plan = plan_join(head, ray=ray or "ray", ray_args=tuple(ray_args), **options)
    except JoinError as e:
        _fail(str(e), EXIT_USAGE)
    if ray is None:
        _fail(
            "Ray is not installed (no ray executable beside this Python nor on PATH): "
            "pip install 'cuzk[cluster]'",
            EXIT_NO_RAY,
        )
    click.echo(
        f"cuzk cluster join: {plan.num_gpus} GPU(s); engine memory budget "
        f"{format_size(plan.engine_memory)} + object store "
        f"{format_size(plan.object_store_memory)}",
        err=True,
    )
    click.echo(f"+ {plan.command_line()}")
    if dry_run:
        return
    sys.stdout.flush()
    try:
        rc = subprocess.run(plan.argv, env={**os.environ, **plan.env}).returncode
        rc = 128 - rc if rc < 0 else rc  # killed by a signal: as a shell reports it
    except OSError as e:
        _fail(f"could not run {ray}: {e.strerror or e}", EXIT_NO_RAY)
    except KeyboardInterrupt:
        rc = 130
    sys.exit(rc)
