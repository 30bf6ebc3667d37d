"""Figures that need two snapshots: per-worker utilisation over the last interval and proof rates.

Data apart from drawing: the shell keeps the previous snapshot and a short history of
counters, derives these numbers, and hands them to the pure renderer as plain data.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


def worker_key(w: dict):
    """What names a device worker across snapshots: its id, or (node, id) on a farm's gateway,
    where every node numbers its own workers."""
    return (w.get("node"), w.get("worker_id")) if "node" in w else w.get("worker_id")


def utilisation(prev: dict | None, cur: dict) -> dict:
    """Busy fraction of each device worker between two snapshots.

    u_w = (busy_secs_w(cur) - busy_secs_w(prev)) / (now(cur) - now(prev)), clamped to [0, 1].
    Keyed by worker_key(). A worker is left out (shown as "-") when it has no previous sample,
    when its slot was taken by another process (pid changed) or when its busy time went
    backwards (slot reclaimed and counters reset): no honest figure exists for that interval.
    """
    if not prev:
        return {}
    dt = float(cur.get("now") or 0.0) - float(prev.get("now") or 0.0)
    if dt <= 0:
        return {}
    before = {worker_key(w): w for w in prev.get("gpu_workers") or ()}
    out: dict = {}
    for w in cur.get("gpu_workers") or ():
        p = before.get(worker_key(w))
        if p is None or p.get("pid") != w.get("pid"):
            continue
        b0, b1 = p.get("busy_secs"), w.get("busy_secs")
        if b0 is None or b1 is None or b1 < b0:
            continue
        out[worker_key(w)] = min(1.0, max(0.0, (b1 - b0) / dt))
    return out


@dataclass
class RateWindow:
    """Completed and failed proofs per minute over a sliding window of counter samples."""

    window_secs: float = 60.0
    samples: deque = field(default_factory=deque)

    def add(self, snapshot: dict) -> None:
        c = snapshot.get("counters") or {}
        now = float(snapshot.get("now") or 0.0)
        if self.samples and now < self.samples[-1][0]:
            self.samples.clear()  # a different board or a clock jump: start over
        self.samples.append((now, c.get("total_completed") or 0, c.get("total_failed") or 0))
        # Keep one sample at or before the window start so the window is fully covered.
        while len(self.samples) > 2 and self.samples[1][0] <= now - self.window_secs:
            self.samples.popleft()

    def per_minute(self) -> tuple[float | None, float | None]:
        """(completed/min, failed/min), or (None, None) before two samples exist."""
        if len(self.samples) < 2:
            return None, None
        (t0, c0, f0), (t1, c1, f1) = self.samples[0], self.samples[-1]
        if t1 <= t0 or c1 < c0 or f1 < f0:
            return None, None
        return 60.0 * (c1 - c0) / (t1 - t0), 60.0 * (f1 - f0) / (t1 - t0)


@dataclass(frozen=True)
class Derived:
    """Everything the renderer needs besides the snapshot itself."""

    util: dict = field(default_factory=dict)  # worker_key -> busy fraction
    completed_per_min: float | None = None
    failed_per_min: float | None = None
    gpus: tuple = ()  # GPU telemetry rows (telemetry.py)

    @classmethod
    def between(
        cls, prev: dict | None, cur: dict, rates: RateWindow | None = None, gpus=()
    ) -> Derived:
        done, failed = rates.per_minute() if rates else (None, None)
        return cls(utilisation(prev, cur), done, failed, tuple(gpus))
