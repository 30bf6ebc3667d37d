"""GET /metrics from an engine's snapshot: a farm gateway's (nodes, node fields) adds node
figures and a `node` label; a one-machine snapshot keeps the local daemon's names and labels.

The engine is a stand-in with the methods Metrics reads (snapshot, jobs, job, health), serving
the synthetic snapshots of cuzk.testing.sample; tests/test_serve.py::test_metrics checks the
same families on a real daemon proving real jobs.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from cuzk.serve.metrics import Metrics
from cuzk.testing.sample import busy_snapshot, farm_snapshot


class Engine:
    """Its jobs are the snapshot's pipelines; a job's detail, the pipeline's partitions."""

    def __init__(self, snap: dict):
        self.snap = snap

    def snapshot(self) -> dict:
        return self.snap

    def health(self) -> tuple[bool, dict]:  # a farm's gateway tells its nodes here
        nodes = self.snap.get("nodes")
        return True, {} if nodes is None else {"nodes": len(nodes)}

    def jobs(self) -> list[dict]:
        return [
            {
                "job_id": p["job_id"],
                "kind": p["proof_kind"],
                "state": p["state"],
                "submitted_at": p["submitted_at"],
                "finished_at": p["submitted_at"] + 5.0,
            }
            for p in self.snap["pipelines"]
        ]

    def job(self, job_id: str) -> dict:
        p = next(p for p in self.snap["pipelines"] if p["job_id"] == job_id)
        return {"job_id": job_id, "partitions": p["partitions"]}


def scrape(snap: dict) -> dict:
    """{(sample name, frozenset of labels): value} of one scrape (no *_created samples)."""
    body, ctype = Metrics(Engine(snap)).render()
    assert ctype.startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for fam in text_string_to_metric_families(body.decode())
        for s in fam.samples
        if not s.name.endswith("_created")
    }


def labels_of(samples: dict, name: str) -> set:
    return {frozenset(k for k, _ in labels) for n, labels in samples if n == name}


def test_a_farm_counts_its_nodes_and_labels_workers_and_proofs_by_node():
    snap = farm_snapshot()
    m = scrape(snap)
    assert m[("cuzk_nodes", frozenset())] == 3
    assert m[("cuzk_nodes_alive", frozenset())] == 2
    ids = [n["node_id"] for n in snap["nodes"]]
    roles = {
        "device": (snap["gpu_workers"], "proving"),
        "finalizer": (snap["finalizers"], "finalizing"),
        "synthesis": (snap["synthesis"]["workers"], "synthesizing"),
    }
    for role, (workers, busy) in roles.items():
        for node in ids:  # every node, the dead one at 0
            key = frozenset({"role": role, "node": node}.items())
            mine = [w for w in workers if w["node"] == node]
            assert m[("cuzk_workers", key)] == len(mine)
            assert m[("cuzk_workers_busy", key)] == sum(w["state"] == busy for w in mine)
        # the per-node series add up to the farm's figure
        total = sum(v for (n, k), v in m.items() if n == "cuzk_workers" and ("role", role) in k)
        assert total == len(workers)
    # proofs of finished jobs, by kind and by the node that proved each partition
    want: dict = {}
    for p in snap["pipelines"]:
        if p["state"] in ("done", "failed", "cancelled"):
            for q in p["partitions"]:
                if q["state"] in ("done", "failed"):
                    name = "cuzk_proofs_completed_total"
                    if q["state"] == "failed":
                        name = "cuzk_proofs_failed_total"
                    key = (name, frozenset({"kind": p["proof_kind"], "node": q["node"]}.items()))
                    want[key] = want.get(key, 0) + 1
    got = {k: v for k, v in m.items() if k[0].startswith("cuzk_proofs_")}
    assert want and got == want
    # the rest as on one machine
    assert m[("cuzk_queue_depth", frozenset())] == snap["counters"]["queue_depth"]
    assert labels_of(m, "cuzk_jobs_completed_total") == {frozenset({"kind"})}


def test_one_machine_keeps_the_local_names_and_labels():
    m = scrape(busy_snapshot())
    names = {n for n, _ in m}
    assert not {"cuzk_nodes", "cuzk_nodes_alive"} & names
    assert all("node" not in dict(labels) for _, labels in m)
    assert (
        labels_of(m, "cuzk_workers") == labels_of(m, "cuzk_workers_busy") == {frozenset({"role"})}
    )
    assert labels_of(m, "cuzk_proofs_completed_total") == {frozenset({"kind"})}
    assert m[("cuzk_workers", frozenset({"role": "device"}.items()))] == 4
    for name in (
        "cuzk_jobs_completed_total",
        "cuzk_jobs_failed_total",
        "cuzk_jobs_recovered_total",
        "cuzk_partition_retries_total",
        "cuzk_process_restarts_total",
        "cuzk_stale_ends_ignored_total",
        "cuzk_queue_depth",
        "cuzk_memory_reserved_bytes",
        "cuzk_memory_total_bytes",
        "cuzk_memory_reserved_by_use_bytes",
        "cuzk_pipelines",
        "cuzk_keys_resident",
        "cuzk_uptime_seconds",
        "cuzk_job_duration_seconds_count",
        "cuzk_partition_device_seconds_count",
        "cuzk_proofs_failed_total",
    ):
        assert name in names, name


def test_resident_keys_are_counted_by_curve():
    snap = busy_snapshot(keys=3)  # the sample's keys alternate BN254 and BLS12-381
    m = scrape(snap)
    assert m[("cuzk_keys_resident", frozenset())] == 3
    assert m[("cuzk_keys_resident_by_curve", frozenset({"curve": "bn128"}.items()))] == 2
    assert m[("cuzk_keys_resident_by_curve", frozenset({"curve": "bls12381"}.items()))] == 1


def test_resident_keys_are_counted_by_protocol():
    snap = busy_snapshot(keys=4)  # the sample's keys: groth16, groth16, plonk, groth16
    m = scrape(snap)
    by = {
        dict(labels)["protocol"]: v
        for (n, labels), v in m.items()
        if n == "cuzk_keys_resident_by_protocol"
    }
    assert by == {"groth16": 3, "plonk": 1}


def test_partitions_restored_from_the_journal_are_counted_apart():
    """A recovered job whose partitions were partly proved before the restart (issue 38: 40
    proofs counted by a process that proved 20): cuzk_proofs_completed_total counts only the
    partitions this process proved, those read from the journal go to
    cuzk_proofs_restored_total, and a failure read from the journal to neither."""
    snap = busy_snapshot()
    job = next(p for p in snap["pipelines"] if p["state"] == "done")
    job["proof_kind"] = "recovered-kind"  # no other job of this kind
    states = [("done", True), ("done", True), ("done", False), ("failed", True), ("done", False)]
    job["partitions"] = [{"index": i, "state": s, "restored": r} for i, (s, r) in enumerate(states)]
    m = scrape(snap)
    kind = frozenset({"kind": "recovered-kind"}.items())
    assert m[("cuzk_proofs_completed_total", kind)] == 2
    assert m[("cuzk_proofs_restored_total", kind)] == 2
    assert ("cuzk_proofs_failed_total", kind) not in m
    # a process that restored nothing has the family, at no value for any kind
    plain = scrape(busy_snapshot())
    assert not [k for k in plain if k[0] == "cuzk_proofs_restored_total"]
