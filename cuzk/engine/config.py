"""Engine configuration: the EngineConfig dataclass and the small parsers others reuse.

`parse_size("8GiB")` and `parse_devices("cpu:2")` are the only places that interpret those
strings; `cuzk serve` (flags, CUZK_* variables, TOML) calls them rather than re-parsing.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field

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


@dataclass
class EngineConfig:
    """Everything the engine needs to start; defaults suit a workstation without a GPU.

    Construct with keyword arguments, then `validated()` checks and normalises the fields
    (sizes parsed, devices resolved) and raises ValueError naming the first bad one.
    """

    devices: str = "auto"  # "auto" | "cpu:N" | "0,1"
    synth_workers: int = 0  # synthesis processes; 0 = max(1, CPU cores - 1)
    workers_per_device: int = 2  # prove_start loops per device process (the interlock)
    finalizers_per_device: int = 2  # prove_finish threads per device process
    memory_budget: int | str = "auto"  # bytes or "auto" (RAM minus margin) or "8GiB"
    board_name: str | None = None  # shared-memory board name; None = derived from instance
    instance: str = "cuzk"
    self_verify: bool = False  # verify every proof with the project's verifier before returning it
    max_attempts: int = 3  # per partition, counting the first
    split_prove: bool | None = None  # None: on unless CUZK_DISABLE_SPLIT_PROVE=1
    prover: str = "cuzk.groth16"  # module implementing the prover contract (tests inject a double)
    prover_options: dict = field(default_factory=dict)  # to prover.configure(), every process
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
        c.device_names = parse_devices(c.devices)
        if c.synth_workers in (0, None):
            c.synth_workers = max(1, (os.cpu_count() or 2) - 1)
        counts = ("synth_workers", "workers_per_device", "finalizers_per_device", "max_attempts")
        for name in counts:
            if int(getattr(c, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(c, name)!r}")
            setattr(c, name, int(getattr(c, name)))
        try:
            c.memory_budget = memory_budget_bytes(c.memory_budget)
        except ValueError as e:
            raise ValueError(f"memory_budget: {e}") from None
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
