"""The soak's resource figures (bench/bench_soak.py): samples of the daemon's process tree from
outside (psutil), and the rule that says whether a series stayed flat after warm-up.

A series is judged over the run's second half: its least-squares slope, each worker
incarnation with a level of its own (a restarted process starts smaller and re-warms), times
the half's length is the growth the fit says; it must stay within `allowance + rate x length`
(BOUNDS, per kind of series).
"""

from __future__ import annotations

import os
from pathlib import Path

REWARM_S = 20.0  # a worker's series leaves out this long after its restart


# growth bounds over the second half: (allowance, rate per hour), in the series' unit
BOUNDS = {
    "rss": (24.0, 16.0),  # MB
    "count": (4.0, 8.0),  # descriptors, threads
    "shm": (0.5, 0.0),  # segments at quiet points: not one more
    "disk": (4.0, 8.0),  # MB
}


# series: name -> (unit, bound kind, restarts split it: the workers' "device", "synthesis" or
# "tree" for both, None for the supervisor's own; "quiet": only the quiet points' samples,
# for the segments, whose number otherwise follows the partitions in flight)
SERIES = {
    "supervisor_rss_mb": ("MB", "rss", None),
    "device_rss_mb": ("MB", "rss", "device"),
    "synthesis_rss_mb": ("MB", "rss", "synthesis"),
    "supervisor_fds": ("", "count", None),
    "tree_fds": ("", "count", "tree"),
    "supervisor_threads": ("", "count", None),
    "tree_threads": ("", "count", "tree"),
    "shm_segments": ("", "shm", "quiet"),
    "state_dir_mb": ("MB", "disk", None),
}


def _roles(status: dict) -> dict[int, str]:
    pids = {w["pid"]: "device" for w in status.get("gpu_workers", []) if w.get("pid")}
    for w in status.get("synthesis", {}).get("workers", []):
        if w.get("pid"):
            pids[w["pid"]] = "synthesis"
    return pids


def _dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def sample(d, status: dict, t: float) -> dict:
    """One sample of the daemon's resources (D: bench_soak.Daemon, STATUS: its GET /status):
    psutil on its process tree, its /dev/shm segments, its state directory."""
    import psutil

    roles = _roles(status)
    out = {
        "t": t,
        "pids": {},
        "restarts": status.get("counters", {}).get("restarts", 0),
        "supervisor_rss_mb": 0.0,
        "device_rss_mb": 0.0,
        "synthesis_rss_mb": 0.0,
        "supervisor_fds": 0,
        "tree_fds": 0,
        "supervisor_threads": 0,
        "tree_threads": 0,
    }
    sup = psutil.Process(d.pid)
    for p in [sup, *sup.children(recursive=True)]:
        try:
            with p.oneshot():
                rss, fds, threads = p.memory_info().rss / 2**20, p.num_fds(), p.num_threads()
        except psutil.Error:
            continue  # gone between the listing and the reading
        role = "supervisor" if p.pid == d.pid else roles.get(p.pid, "other")
        out["pids"][p.pid] = role
        out["tree_fds"] += fds
        out["tree_threads"] += threads
        if role == "supervisor":
            out.update(supervisor_rss_mb=rss, supervisor_fds=fds, supervisor_threads=threads)
        elif role in ("device", "synthesis"):
            out[f"{role}_rss_mb"] += rss
    segs = d.segments()
    out["shm_segments"] = len(segs)
    out["shm_buffers"] = sum(n.startswith("cuzkbuf.") for n in segs)
    out["state_dir_mb"] = _dir_bytes(d.state) / 2**20
    return out


def _segments_of(samples: list[dict], name: str, split: str | None) -> list[list[tuple]]:
    """The samples of one series as [(t, value)] runs: a new run at each restart of the
    workers the series belongs to (their pids change), the first REWARM_S after one left out."""
    runs: list[list[tuple]] = []
    prev, restarted_at = None, None
    for s in samples:
        roles = {"tree": ("device", "synthesis")}.get(split, (split,))
        ids = frozenset(p for p, r in s["pids"].items() if r in roles) if split else None
        if split and prev is not None and ids != prev:
            restarted_at = s["t"]
            runs.append([])
        prev = ids
        if restarted_at is not None and s["t"] - restarted_at < REWARM_S:
            continue
        if not runs:
            runs.append([])
        runs[-1].append((s["t"], float(s[name])))
    return [r for r in runs if len(r) >= 2]


def common_slope(runs: list[list[tuple]]) -> float | None:
    """Least-squares slope shared by every run, each with a level of its own (per second)."""
    sxy = sxx = 0.0
    for run in runs:
        mt = sum(t for t, _ in run) / len(run)
        my = sum(y for _, y in run) / len(run)
        sxy += sum((t - mt) * (y - my) for t, y in run)
        sxx += sum((t - mt) ** 2 for t, _ in run)
    return sxy / sxx if sxx > 0 else None


def flatness(samples: list[dict], warm_until: float, end: float) -> list[dict]:
    """One row per series: values at the start, at the end of warm-up and at the end; the
    growth over the second half the fit says, and its bound."""
    rows = []
    samples = sorted(samples, key=lambda s: s["t"])
    second = [s for s in samples if s["t"] >= warm_until]
    length = max(end - warm_until, 1e-9)
    for name, (unit, kind, split) in SERIES.items():
        if not samples:
            continue
        allowance, rate = BOUNDS[kind]
        bound = allowance + rate * length / 3600
        if split == "quiet":
            runs = [[(s["t"], float(s[name])) for s in second if s.get("quiet")]]
            slope = common_slope([r for r in runs if len(r) >= 2])
        else:
            slope = common_slope(_segments_of(second, name, split))
        growth = None if slope is None else slope * length
        rows.append(
            {
                "series": name,
                "unit": unit,
                "start": samples[0][name],
                "warm": second[0][name] if second else None,
                "end": samples[-1][name],
                "peak": max(s[name] for s in samples),
                "slope_per_hour": None if slope is None else slope * 3600,
                "growth": growth,
                "bound": bound,
                "flat": growth is not None and growth <= bound,
            }
        )
    return rows


def percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]
