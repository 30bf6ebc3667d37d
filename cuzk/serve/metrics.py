"""GET /metrics: Prometheus text rendered from the board snapshot (prometheus_client).

Gauges and counters are read from one status snapshot per scrape (a custom collector, so the
figures are the board's, not a second set of books). Durations are not on the board: a small
watcher thread notices jobs as they finish (Engine.jobs() keeps a bounded history, polled
every `interval` seconds) and observes their submit-to-finish time in a histogram by kind.

A farm gateway's snapshot (it lists `nodes`; every worker and partition names its `node`)
adds cuzk_nodes and cuzk_nodes_alive, and a `node` label (the node id) on cuzk_workers,
cuzk_workers_busy and the cuzk_proofs_* counters: one series per node, whose sum is the
farm's figure. A one-machine snapshot has no nodes: its metrics are those of a local daemon,
names and labels alike.
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

log = logging.getLogger("cuzk.serve")

# job wall times from seconds (tiny circuits on CPU) to an hour (large partitioned jobs)
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


class SnapshotCollector:
    """Counters and gauges from the board snapshot, one snapshot per scrape."""

    def __init__(self, snapshot):
        self._snapshot = snapshot  # callable -> snapshot dict

    def describe(self):
        return []  # do not snapshot at registration time

    def collect(self):
        s = self._snapshot()
        c = s.get("counters") or {}
        done = CounterMetricFamily(
            "cuzk_jobs_completed",
            "Jobs whose every partition was proved, by kind.",
            labels=["kind"],
        )
        for kind, n in sorted((c.get("completed_by_kind") or {}).items()):
            done.add_metric([kind], n)
        yield done
        failed = CounterMetricFamily(
            "cuzk_jobs_failed",
            "Jobs that failed (a partition failed after its retries), by kind.",
            labels=["kind"],
        )
        for kind, n in sorted((c.get("failed_by_kind") or {}).items()):
            failed.add_metric([kind], n)
        yield failed
        yield CounterMetricFamily(
            "cuzk_jobs_recovered",
            "Unfinished jobs re-queued from the job journal when the daemon started again.",
            value=c.get("jobs_recovered") or 0,
        )
        yield CounterMetricFamily(
            "cuzk_partition_retries", "Partition attempts retried.", value=c.get("retries") or 0
        )
        yield CounterMetricFamily(
            "cuzk_process_restarts",
            "Synthesis and device processes restarted after dying or hanging.",
            value=c.get("restarts") or 0,
        )
        yield CounterMetricFamily(
            "cuzk_stale_ends_ignored",
            "Board slot ends refused because their generation token was stale.",
            value=c.get("stale_ends_ignored") or 0,
        )
        yield GaugeMetricFamily(
            "cuzk_queue_depth",
            "Partitions waiting for synthesis or a device.",
            value=c.get("queue_depth") or 0,
        )
        nodes = s.get("nodes")
        if nodes is not None:  # a farm's gateway
            yield GaugeMetricFamily("cuzk_nodes", "Nodes of the farm.", value=len(nodes))
            yield GaugeMetricFamily(
                "cuzk_nodes_alive",
                "Nodes of the farm alive now.",
                value=sum(1 for n in nodes if n.get("alive")),
            )
        yield from self._workers(s, nodes)
        m = s.get("memory") or {}
        yield GaugeMetricFamily(
            "cuzk_memory_reserved_bytes",
            "Memory budget reserved now.",
            value=m.get("reserved_bytes") or 0,
        )
        yield GaugeMetricFamily(
            "cuzk_memory_total_bytes", "Memory budget total.", value=m.get("total_bytes") or 0
        )
        by_use = GaugeMetricFamily(
            "cuzk_memory_reserved_by_use_bytes",
            "Memory budget reserved now, by use.",
            labels=["use"],
        )
        for use, n in sorted((m.get("by_use") or {}).items()):
            by_use.add_metric([use], n)
        yield by_use
        states = GaugeMetricFamily(
            "cuzk_pipelines", "Jobs on the board, by state.", labels=["state"]
        )
        counts: dict[str, int] = {}
        for p in s.get("pipelines") or []:
            counts[p.get("state")] = counts.get(p.get("state"), 0) + 1
        for st in ("queued", "running", "done", "failed", "cancelled"):
            states.add_metric([st], counts.get(st, 0))
        yield states
        yield GaugeMetricFamily(
            "cuzk_keys_resident",
            "Proving keys resident on devices.",
            value=len(s.get("keys") or []),
        )
        keys = s.get("keys") or []
        yield _keys_by(
            keys,
            "curve",
            "cuzk_keys_resident_by_curve",
            "Proving keys resident on devices, by the curve their files name.",
        )
        yield _keys_by(
            keys,
            "protocol",
            "cuzk_keys_resident_by_protocol",
            "Proving keys resident on devices, by the proof system they are for.",
        )
        yield GaugeMetricFamily(
            "cuzk_uptime_seconds",
            "Seconds since the engine started.",
            value=s.get("uptime_secs") or 0,
        )

    @staticmethod
    def _workers(s: dict, nodes):
        """cuzk_workers_busy and cuzk_workers by role; on a farm by role and node (every node
        listed, so a dead one reads 0)."""
        by = ["role"] if nodes is None else ["role", "node"]
        busy = GaugeMetricFamily("cuzk_workers_busy", "Workers busy now, by role.", labels=by)
        total = GaugeMetricFamily("cuzk_workers", "Workers, by role.", labels=by)
        roles = {
            "device": (s.get("gpu_workers") or [], ("proving",)),
            "finalizer": (s.get("finalizers") or [], ("finalizing",)),
            "synthesis": ((s.get("synthesis") or {}).get("workers") or [], ("synthesizing",)),
        }
        for role, (workers, busy_states) in roles.items():
            if nodes is None:
                busy.add_metric([role], sum(w.get("state") in busy_states for w in workers))
                total.add_metric([role], len(workers))
                continue
            ids = [n.get("node_id") for n in nodes]
            ids += sorted({w.get("node") for w in workers} - set(ids), key=str)
            for node in ids:
                mine = [w for w in workers if w.get("node") == node]
                label = [role, node or ""]
                busy.add_metric(label, sum(w.get("state") in busy_states for w in mine))
                total.add_metric(label, len(mine))
        yield busy
        yield total


class Metrics:
    """The /metrics registry of one serve process, and its job-duration watcher."""

    def __init__(self, engine, interval: float = 0.25):
        self.engine = engine
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SnapshotCollector(engine.snapshot))
        self.duration = Histogram(
            "cuzk_job_duration_seconds",
            "Seconds from submission to the last partition's proof, for completed jobs, by kind.",
            ["kind"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.partition_device = Histogram(
            "cuzk_partition_device_seconds",
            "Seconds a partition spent in prove_start on a device, by kind.",
            ["kind"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        # One proof per partition: a job of N partitions yields N proofs (or failures); those
        # of a recovered job finished before the restart are counted apart (restored). Made
        # at the first observation, once the engine's health says whether it is a farm's.
        self.proofs_done = self.proofs_failed = self.proofs_restored = None
        self.farm: bool | None = None
        self._seen: set[str] = set()
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="cuzk-metrics", daemon=True)

    def start(self) -> Metrics:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.observe_finished()
            except Exception:  # never let metrics take anything down
                log.exception("metrics watcher")

    def _proof_counters(self) -> None:
        """The cuzk_proofs_* counters: by kind, and on a farm's gateway by kind and node."""
        self.farm = "nodes" in self.engine.health()[1]  # never raises, even once stopped
        by = ["kind", "node"] if self.farm else ["kind"]
        self.proofs_done = Counter(
            "cuzk_proofs_completed",
            "Proofs (partitions) this process completed, by kind.",
            by,
            registry=self.registry,
        )
        self.proofs_failed = Counter(
            "cuzk_proofs_failed",
            "Proofs (partitions) that failed, by kind.",
            by,
            registry=self.registry,
        )
        self.proofs_restored = Counter(
            "cuzk_proofs_restored",
            "Proofs (partitions) of recovered jobs finished before the restart, read from the "
            "journal rather than proved by this process, by kind.",
            by,
            registry=self.registry,
        )

    def observe_finished(self) -> None:
        """Observe the durations of jobs that finished since the last call (idempotent)."""
        with self._lock:
            if self.proofs_done is None:
                self._proof_counters()
            jobs = self.engine.jobs()
            live = set()
            for j in jobs:
                live.add(j["job_id"])
                if j["job_id"] in self._seen or j["state"] not in ("done", "failed", "cancelled"):
                    continue
                self._seen.add(j["job_id"])
                self._count_proofs(j)
                if j["state"] == "done" and j.get("finished_at") and j.get("submitted_at"):
                    self.duration.labels(j["kind"]).observe(
                        max(0.0, j["finished_at"] - j["submitted_at"])
                    )
                    try:
                        detail = self.engine.job(j["job_id"])
                    except KeyError:
                        continue
                    for p in detail.get("partitions") or []:
                        if p.get("gpu_ms") is not None:
                            self.partition_device.labels(j["kind"]).observe(p["gpu_ms"] / 1e3)
            self._seen &= live  # jobs gone from the engine's history cannot come back

    def _count_proofs(self, j: dict) -> None:
        try:
            parts = self.engine.job(j["job_id"]).get("partitions") or []
        except KeyError:
            return
        counters = (
            ("done", False, self.proofs_done),
            ("failed", False, self.proofs_failed),
            ("done", True, self.proofs_restored),
        )
        for state, restored, counter in counters:
            counts: dict[tuple, int] = {}
            for p in parts:
                # a partition finished before a restart (its proof or failure read from the
                # journal) is not this process's work: a proof counted apart, a failure not
                if bool(p.get("restored")) is restored and p.get("state") == state:
                    # on a farm, the node that proved it ("" when the gateway did not say)
                    label = (j["kind"], p.get("node") or "") if self.farm else (j["kind"],)
                    counts[label] = counts.get(label, 0) + 1
            for label, n in sorted(counts.items()):
                counter.labels(*label).inc(n)

    def render(self) -> tuple[bytes, str]:
        """(body, content type) of a scrape."""
        self.observe_finished()
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def _keys_by(keys: list, field: str, name: str, doc: str) -> GaugeMetricFamily:
    """A gauge of the resident keys counted by one field of theirs (curve, protocol), labelled
    by its value ("" where a key has none)."""
    family = GaugeMetricFamily(name, doc, labels=[field])
    counts: dict[str, int] = {}
    for k in keys:
        counts[k.get(field) or ""] = counts.get(k.get(field) or "", 0) + 1
    for value, n in sorted(counts.items()):
        family.add_metric([value], n)
    return family
