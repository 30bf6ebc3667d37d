"""Engine configuration: the engine's settings table, EngineConfig, and the parsers others reuse.

ENGINE_SETTINGS declares each engine setting once (name, default, parser, help). `cuzk serve`
takes its options, CUZK_* variables and TOML keys for them from it (cuzk.serve.config adds the
daemon's own); those marked `node` are also the options of `cuzk cluster join` and the Ray node
labels (cuzk.cluster.labels); EngineConfig takes its defaults from it and `validated()` runs
its parsers. `parse_size("8GiB")`, `parse_devices("cpu:2")` and `parse_memory_budget("auto")`
are the only places that interpret those strings.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ENV_PREFIX = "CUZK_"  # a setting's environment variable: ENV_PREFIX + NAME
LABEL_PREFIX = "cuzk-"  # a node setting's Ray label: LABEL_PREFIX + name-with-dashes

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "ki": 1024,
    "kib": 1024,
    "mi": 1024**2,
    "mib": 1024**2,
    "gi": 1024**3,
    "gib": 1024**3,
    "ti": 1024**4,
    "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: int | float | str) -> int:
    """Bytes from an int or a string such as "8GiB", "512 MiB", "1.5G", "4096" (SI: kB, MB, GB).

    Raises ValueError naming the value when it is not a size.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"size must not be negative: {value!r}")
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"not a size: {value!r} (examples: 8GiB, 512MiB, 1.5GB, 4096)")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def format_size(n: int) -> str:
    """A short human form of a byte count: 1536 -> '1.5 KiB'."""
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    raise AssertionError  # pragma: no cover


# Where an NVIDIA driver shows itself (Linux: the kernel module's files; WSL2: the GPU
# paravirtualisation device): with none of them there is no CUDA GPU to ask numba.cuda about.
NVIDIA_DRIVER_PATHS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg")


def cuda_device_count() -> int:
    """How many CUDA devices numba.cuda sees (0 when the driver or numba-cuda is absent, and
    under NUMBA_ENABLE_CUDASIM, whose simulated GPU is no place to prove). Where no NVIDIA
    driver is installed it answers 0 without importing numba and numba.cuda (~0.3 s of a
    `cuzk serve` start on a CPU machine, before it listens)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return 0
    if not any(os.path.exists(p) for p in NVIDIA_DRIVER_PATHS):
        return 0
    try:
        from numba import cuda

        if not cuda.is_available():
            return 0
        return len(cuda.gpus)
    except Exception:  # no driver, no toolkit, simulator: no GPU to prove on
        return 0


def parse_devices(spec: str, *, n_gpus: int | None = None) -> list[str]:
    """Device names ("cpu:0", "cuda:1", ...) from a devices setting.

    "auto": every CUDA device, or ["cpu:0"] when there is none; "cpu:N": N CPU-backed device
    processes; "0,1" (or "cuda:0,cuda:1"): those GPUs. Raises ValueError with the reason.
    """
    spec = str(spec).strip().lower()
    if spec == "auto":
        n = cuda_device_count() if n_gpus is None else n_gpus
        return [f"cuda:{i}" for i in range(n)] or ["cpu:0"]
    m = re.fullmatch(r"cpu(?::([0-9]+))?", spec)
    if m:
        n = int(m.group(1) or 1)
        if n < 1:
            raise ValueError(f"devices {spec!r}: need at least one CPU device process")
        return [f"cpu:{i}" for i in range(n)]
    ordinals = []
    for part in spec.split(","):
        part = part.strip().removeprefix("cuda:")
        if not part.isdigit():
            raise ValueError(f"devices {spec!r}: expected auto, cpu:N or GPU ordinals like 0,1")
        ordinals.append(int(part))
    if len(set(ordinals)) != len(ordinals):
        raise ValueError(f"devices {spec!r}: a GPU is named twice")
    n = cuda_device_count() if n_gpus is None else n_gpus
    missing = [o for o in ordinals if o >= n]
    if missing:
        raise ValueError(f"devices {spec!r}: no CUDA device {missing[0]} (found {n})")
    return [f"cuda:{o}" for o in ordinals]


def auto_memory_budget(margin_fraction: float = 0.10, margin_min: int = 2 * 1024**3) -> int:
    """RAM available to proving: total physical memory minus a safety margin
    (the larger of `margin_fraction` of RAM and `margin_min`), never below 1/4 of RAM."""
    import psutil

    total = psutil.virtual_memory().total
    margin = max(int(total * margin_fraction), margin_min)
    return max(total - margin, total // 4)


def positive_size(value: int | float | str) -> int:
    """Bytes from a size (as parse_size), refusing 0: ValueError with the reason."""
    n = parse_size(value)
    if n < 1:
        raise ValueError(f"must be positive (at least 1 byte), got {value!r}")
    return n


def parse_memory_budget(value: int | float | str) -> str | int:
    """A memory budget setting in its one normal form: "auto" (any case, spaces around), or a
    positive number of bytes from a size such as "64GiB" or 68719476736. The only rule for the
    setting: `cuzk serve`, `cuzk cluster join`, the node labels and EngineConfig all call it
    (through memory_budget_bytes where the bytes are needed). Raises ValueError with the reason."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return positive_size(value)


def memory_budget_bytes(value: int | float | str) -> int:
    """The bytes a memory budget setting stands for on this machine: auto is RAM minus a margin
    (auto_memory_budget), a size is itself (parse_memory_budget's rule)."""
    budget = parse_memory_budget(value)
    return auto_memory_budget() if budget == "auto" else budget


# ---------------------------------------------------------------------------- value parsers
def parse_text(v) -> str:
    """A non-empty string, stripped."""
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"expected a non-empty string, got {v!r}")
    return v.strip()


def parse_optional_text(v) -> str | None:
    """None for None or blank, else parse_text."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    return parse_text(v)


def parse_bool(v) -> bool:
    """True or False from a bool or 1/0, true/false, yes/no, on/off (any case; blank: False)."""
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {v!r}")


def count_parser(minimum: int) -> Callable[[Any], int]:
    """A parser of whole numbers (ints or decimal strings, not bools) of at least `minimum`;
    the parser's `minimum` attribute says which."""

    def parse(v) -> int:
        if isinstance(v, bool):
            raise ValueError(f"expected a whole number, got {v!r}")
        try:
            n = int(str(v).strip()) if not isinstance(v, int) else v
        except ValueError:
            raise ValueError(f"expected a whole number, got {v!r}") from None
        if n < minimum:
            raise ValueError(f"must be at least {minimum}, got {n}")
        return n

    parse.minimum = minimum
    return parse


def parse_device_spec(v) -> str:
    """A devices setting as given (lower case), its form checked: whether the GPUs it names
    exist is for the machine that proves to say (parse_devices)."""
    s = parse_text(v).lower()
    parse_devices(s, n_gpus=1 << 16)
    return s


def parse_json_object(v) -> dict:
    """A dict, or the JSON text of an object (blank: {})."""
    if isinstance(v, str):
        try:
            v = json.loads(v) if v.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"not valid JSON: {e}") from None
    if not isinstance(v, dict):
        raise ValueError(f"expected a JSON object, got {type(v).__name__}")
    return v


# Most groups a resident key's tables of multiples may hold (cuzk.kernels.msm_cpu.table_plan).
MSM_TABLES_MAX = 64
# One key's tables (every device's copy) take at most 1/MSM_TABLE_SHARE of the memory budget.
MSM_TABLE_SHARE = 4


def parse_msm_tables(v) -> int:
    """The msm_tables setting: the most groups of multiples per point set, 0 (or off) for none;
    1 is none as well (a table of one group is the points)."""
    if isinstance(v, str) and v.strip().lower() in ("off", "none", "no", "false"):
        return 0
    n = count_parser(0)(v)
    if n > MSM_TABLES_MAX:
        raise ValueError(f"must be at most {MSM_TABLES_MAX}, got {n}")
    return 0 if n == 1 else n


def prover_options(config) -> dict:
    """The options the engine hands its prover's configure() in every process: the config's
    prover_options, plus device_processes (how many device processes there are: each may hold
    every key, so a prover that keeps something per key in each, as PLONK's extended values,
    counts that many copies in the key's nbytes), msm_tables where every device is a CPU
    device (the tables serve the CPU MSMs; on a GPU the MSMs run there, and no key's budget
    counts tables), with the copies of a key's tables the devices may hold (each CPU device
    process builds its own) and their cap: a quarter of the memory budget for one key's
    tables, all copies together (the prover lowers a key's groups to fit, down to none)."""
    out = dict(config.prover_options or {})
    names = getattr(config, "device_names", None) or []
    cpu_only = bool(names) and all(str(d).startswith("cpu") for d in names)
    if names:  # for any prover that keeps something per key in each device process
        out["device_processes"] = len(names)
    out["msm_tables"] = int(config.msm_tables) if cpu_only else 0
    if out["msm_tables"]:
        out["msm_table_copies"] = len(names)
        out["msm_table_cap"] = memory_budget_bytes(config.memory_budget) // MSM_TABLE_SHARE
    return out


# The test suite's provers live here (the double: stage times, no curve work). The wheel
# leaves the package out, and `cuzk serve` refuses them unless this variable is 1.
TEST_PROVERS_PACKAGE = "cuzk.testing"
TEST_PROVERS_ENV = "CUZK_TEST_PROVERS"


def is_test_prover(module: str) -> bool:
    return module == TEST_PROVERS_PACKAGE or module.startswith(TEST_PROVERS_PACKAGE + ".")


def parse_module(v) -> str:
    """A dotted Python module name."""
    s = parse_text(v)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", s):
        raise ValueError(f"expected a Python module name, got {v!r}")
    return s


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Setting:
    """One setting, declared once. Its TOML key is `name`, its environment variable
    CUZK_<NAME>, its flag --name-with-dashes (or `flag_name`); a `node` setting is also a
    `cuzk cluster join` option of the same flag and the Ray node label cuzk-name-with-dashes."""

    name: str  # attribute, TOML key; the flag is --name-with-dashes
    default: Any
    parse: Callable[[Any], Any]  # raw value (flag text, env text, TOML value) -> value
    help: str  # one or two sentences, for every command that takes the setting
    metavar: str = ""
    flag_name: str = ""  # when not --name-with-dashes
    field: str = ""  # the EngineConfig field, when not `name`
    node: bool = False  # a prover machine's own: a join option and a Ray node label

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")

    @property
    def engine_field(self) -> str:
        return self.field or self.name

    @property
    def default_text(self) -> str | None:
        """The default as `--help` shows it, in the spelling a flag or TOML would take (None:
        no default; the help says what happens then)."""
        v = self.default
        if v is None:
            return None
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return ", ".join(map(str, v)) if v else "none"
        if isinstance(v, dict):
            return json.dumps(v)
        if isinstance(v, float):
            return f"{v:g}"
        return str(v)

    @property
    def label(self) -> str | None:
        """The Ray node label key of a node setting; None for the others."""
        return LABEL_PREFIX + self.name.replace("_", "-") if self.node else None


ENGINE_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "devices",
        "auto",
        parse_device_spec,
        "Proving devices: auto (every GPU, else one CPU device), cpu:N (N CPU device "
        "processes) or GPU ordinals such as 0,1.",
        "auto|cpu:N|0,1",
        node=True,
    ),
    Setting(
        "synth_workers",
        0,
        count_parser(0),
        "Synthesis processes (0: CPU cores - 1, at least 1).",
        "N",
        node=True,
    ),
    Setting(
        "workers_per_device",
        2,
        count_parser(1),
        "prove_start loops per device process.",
        "N",
        node=True,
    ),
    Setting(
        "finalizers_per_device",
        2,
        count_parser(1),
        "prove_finish threads per device process.",
        "N",
        node=True,
    ),
    Setting(
        "memory_budget",
        "auto",
        parse_memory_budget,
        "Host memory for keys and partitions in flight: auto (RAM minus max(10%, 2 GiB)) "
        "or a size such as 64GiB.",
        "auto|SIZE",
        node=True,
    ),
    Setting(
        "board",
        None,
        parse_optional_text,
        "Status board (shared-memory) name; default: derived from the instance and pid.",
        "NAME",
        field="board_name",
    ),
    Setting(
        "instance", "cuzk", parse_text, "Instance name shown on the board and in logs.", "NAME"
    ),
    Setting(
        "self_verify",
        True,
        parse_bool,
        "Verify every proof with the project's verifier before returning it (a few ms per "
        "proof; a witness that does not satisfy the circuit then fails its partition instead "
        "of returning an invalid proof).",
        "BOOL",
    ),
    Setting(
        "prover",
        "cuzk.groth16",
        parse_module,
        "Module implementing the prover contract (cuzk.engine.contract). The test suite's "
        "provers (cuzk.testing, not installed by a wheel) prove nothing: `cuzk serve` "
        "refuses them unless CUZK_TEST_PROVERS=1.",
        "MODULE",
    ),
    Setting(
        "prover_options",
        {},
        parse_json_object,
        "A JSON object handed to the prover's configure() in every process (the prover "
        'double\'s stage times, for instance: {"start_secs": 0.1}).',
        "JSON",
    ),
    Setting(
        "msm_tables",
        8,
        parse_msm_tables,
        "Tables of multiples for the MSMs of each resident key (CPU devices): at most this many "
        "precomputed groups per point set (ICICLE's precompute factor), so an MSM runs its "
        "bucket sums once per group of windows instead of once per window. Built when a "
        "device loads the key, dropped with it, counted in the key's bytes in the memory "
        "budget (up to this many times its point sets); none for a point set where the cost "
        "model says a table saves under 5% (on BN254 from 2^20 points). Proofs are the same "
        "bytes. 0 or off: none.",
        "N|off",
    ),
)
ENGINE_SETTING = {s.name: s for s in ENGINE_SETTINGS}
NODE_SETTINGS = tuple(s for s in ENGINE_SETTINGS if s.node)
_FIELD_DEFAULT = {s.engine_field: s.default for s in ENGINE_SETTINGS}


@dataclass
class EngineConfig:
    """Everything the engine needs to start; defaults suit a workstation without a GPU.

    Construct with keyword arguments, then `validated()` checks and normalises the fields
    (sizes parsed, devices resolved) and raises ValueError naming the first bad one. The
    fields of ENGINE_SETTINGS take their defaults, meaning and parser from that table.
    """

    devices: str = _FIELD_DEFAULT["devices"]  # "auto" | "cpu:N" | "0,1"
    synth_workers: int = _FIELD_DEFAULT["synth_workers"]  # 0 = max(1, CPU cores - 1)
    workers_per_device: int = _FIELD_DEFAULT["workers_per_device"]  # (the interlock)
    finalizers_per_device: int = _FIELD_DEFAULT["finalizers_per_device"]
    memory_budget: int | str = _FIELD_DEFAULT["memory_budget"]  # bytes once validated
    board_name: str | None = _FIELD_DEFAULT["board_name"]  # None: derived from instance
    instance: str = _FIELD_DEFAULT["instance"]
    # Off for the library (tests and benchmarks time the prover alone); cuzk serve's default
    # is the table's (on).
    self_verify: bool = False
    max_attempts: int = 3  # per partition, counting the first
    split_prove: bool | None = None  # None: on unless CUZK_DISABLE_SPLIT_PROVE=1
    prover: str = _FIELD_DEFAULT["prover"]  # tests inject a double
    prover_options: dict = field(default_factory=dict)  # the table's default: {}
    msm_tables: int | str = _FIELD_DEFAULT["msm_tables"]  # groups of multiples per point set
    max_synth_ahead: int = 0  # partitions synthesized but not yet on a device; 0 = auto
    device_prefetch: int = 0  # extra partitions queued inside a device process beyond its workers
    restart_backoff: float = 0.2  # seconds before the first restart; doubles, capped at 10 s
    restart_backoff_max: float = 10.0
    ping_interval: float = 2.0  # supervisor -> child liveness ping period
    hang_timeout: float = 300.0  # a child that answers no ping for this long is killed
    start_timeout: float = 600.0  # a child not ready this long after its spawn is killed
    key_idle_evict_secs: float = 0.0  # evict keys idle this long (0 = only when room is needed)
    job_history: int = 256  # finished jobs kept for job()/result()
    board_jobs: int = 64  # job records on the board
    board_partitions: int = 64  # partition records per board job record (larger jobs are
    # proved but not shown on the board)
    board_keys: int = 16  # key records on the board
    device_names: list[str] = field(default_factory=list)  # resolved from `devices` by validated()

    def validated(self) -> EngineConfig:
        c = dataclasses.replace(self)
        if c.synth_workers is None:
            c.synth_workers = 0
        for s in ENGINE_SETTINGS:
            try:
                setattr(c, s.engine_field, s.parse(getattr(c, s.engine_field)))
            except ValueError as e:
                raise ValueError(f"{s.engine_field}: {e}") from None
        c.device_names = parse_devices(c.devices)
        if c.synth_workers == 0:
            c.synth_workers = max(1, (os.cpu_count() or 2) - 1)
        c.memory_budget = memory_budget_bytes(c.memory_budget)  # checked above: only auto left
        try:
            c.max_attempts = count_parser(1)(c.max_attempts)
        except ValueError as e:
            raise ValueError(f"max_attempts: {e}") from None
        if c.split_prove is None:
            flag = os.environ.get("CUZK_DISABLE_SPLIT_PROVE", "").lower()
            disabled = flag in ("1", "true", "yes")
            c.split_prove = not disabled
        n_dev = len(c.device_names)
        if c.max_synth_ahead <= 0:
            c.max_synth_ahead = n_dev * (c.workers_per_device + 1) + c.synth_workers
        if c.device_prefetch < 0:
            raise ValueError("device_prefetch must not be negative")
        return c
