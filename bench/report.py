"""Benchmark results: machine facts, JSON files, tables, and the docs/benchmarks.md report."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def results_dir(path=None) -> Path:
    d = Path(path) if path else ROOT / "bench" / "results"
    d.mkdir(parents=True, exist_ok=True)
    return d


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


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _gpu() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict:
    import psutil

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "gpu": _gpu(),
        "python": platform.python_version(),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
        "numpy": _version("numpy"),
        "cuzk": _version("cuzk"),
        "commit": _git_commit(),
    }


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    tmp.replace(path)


def fmt(v) -> str:
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return "" if v is None else str(v)


def table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A Markdown table of dict rows (columns: the union of keys, in first-seen order)."""
    if not rows:
        return "(no rows)\n"
    if columns is None:
        columns = []
        for r in rows:
            columns += [k for k in r if k not in columns and not isinstance(r[k], (dict, list))]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c)) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _rows_of(result) -> list[tuple[str, list[dict]]]:
    """The tables in a suite's result: lists of dicts found at any depth, with their path."""
    found = []

    def walk(x, path):
        if isinstance(x, list) and x and all(isinstance(r, dict) for r in x):
            found.append((path or "results", x))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else k)

    walk(result, "")
    return found


def _scalars_of(result) -> list[tuple[str, object]]:
    if not isinstance(result, dict):
        return []
    return [(k, v) for k, v in result.items() if isinstance(v, (int, float, str, bool))]


def _plot(name: str, label: str, rows: list[dict]) -> str | None:
    """A log-log plot of the time columns against the size column, if both exist."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    size_col = next((c for c in ("n", "size", "log2n", "domain", "slots") if c in rows[0]), None)
    if size_col is None:
        return None
    ycols = [c for c in rows[0] if c != size_col and isinstance(rows[0][c], (int, float))
             and any(s in c for s in ("_s", "_ms", "_us", "ms", "seconds", "time"))]
    if not ycols:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for c in ycols[:6]:
        pts = [(r[size_col], r[c]) for r in rows
               if isinstance(r.get(size_col), (int, float)) and isinstance(r.get(c), (int, float))
               and r[c] > 0]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=c)
    if size_col != "log2n":
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(size_col)
    ax.set_title(f"{name}: {label}")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    img_dir = DOCS / "img"
    img_dir.mkdir(parents=True, exist_ok=True)
    fname = f"bench-{name}-{label.replace('.', '-').replace(' ', '_')}.png"
    fig.tight_layout()
    fig.savefig(img_dir / fname, dpi=90)
    plt.close(fig)
    return f"img/{fname}"


def write_markdown(results: Path) -> Path:
    """Regenerate docs/benchmarks.md from every bench/results/<suite>.json present."""
    out = ["# Benchmarks", "",
           "Generated by `make bench` (`python -m bench`) from `bench/results/*.json`; every",
           "figure names the machine and date it was measured on. Ratios come from peers run",
           "side by side in the same run; absolute times do not carry across machines.", ""]
    for path in sorted(results.glob("*.json")):
        if path.name == "latest.json":
            continue
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(entry, dict) or "result" not in entry:
            continue
        meta = entry.get("meta", {})
        name = path.stem
        out += [f"## {name}", "",
                f"Measured {meta.get('date', '?')} on {meta.get('cpu', '?')} "
                f"({meta.get('cores', '?')} cores, {meta.get('memory_gib', '?')} GiB"
                f"{', GPU ' + meta['gpu'] if meta.get('gpu') else ', no GPU'}), "
                f"profile {entry.get('profile')}, commit {meta.get('commit')}, "
                f"suite time {fmt(entry.get('seconds'))} s.", ""]
        result = entry["result"]
        scalars = _scalars_of(result)
        if scalars:
            out += ["| figure | value |", "|---|---|"]
            out += [f"| {k} | {fmt(v)} |" for k, v in scalars]
            out.append("")
        for label, rows in _rows_of(result):
            out += [f"**{label}**", "", table(rows)]
            img = _plot(name, label, rows)
            if img:
                out += [f"![{name} {label}]({img})", ""]
    path = DOCS / "benchmarks.md"
    DOCS.mkdir(exist_ok=True)
    path.write_text("\n".join(out) + "\n")
    return path
