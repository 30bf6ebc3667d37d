"""Machine facts recorded with every benchmark result: CPU, cores, memory, GPU, versions, load."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools" / "node_modules"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def _npm_version(package: str) -> str | None:
    try:
        return json.loads((TOOLS / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _output(cmd) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _gpu() -> str | None:
    return _output(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict:
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpu": _gpu(),
        "load_average": load_average(),
        "python": platform.python_version(),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
        "numpy": _version("numpy"),
        "cuzk": _version("cuzk"),
        "node": _output(["node", "--version"]),
        "snarkjs": _npm_version("snarkjs"),
        "circom2": _npm_version("circom2"),
        "commit": _output(["git", "rev-parse", "--short", "HEAD"]),
        # the work tree differs from the commit (a shared tree where others are editing)
        "dirty": bool(_output(["git", "status", "--porcelain", "--untracked-files=no"])),
    }


def compile_bytecode() -> None:
    """Compile cuzk's modules to bytecode (.pyc), as `pip install` does for an installed
    package: a command timed from an editable checkout would otherwise pay for compiling
    every module it imports (~0.1 s) whenever no .pyc was written before (for instance with
    PYTHONDONTWRITEBYTECODE set). compileall writes them whatever that setting says."""
    import compileall

    compileall.compile_dir(str(ROOT / "cuzk"), quiet=1)
