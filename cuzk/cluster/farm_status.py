"""The farm's status: one GET /status for every node, in the local engine's shape.

Each node's own board snapshot (cuzk.board.snapshot's to_dict, fetched by the gateway every
poll) gives the workers, finalizers and synthesis workers; each entry gets a `node` field,
and the node's job names (`<epoch>:<job>.<partition>.<attempt>`, cuzk.cluster.node) are
turned back into the gateway's job id and partition (the node's own name stays in
`node_job`). The pipelines are the gateway's jobs; a partition on a node shows the state the
node's board gives it (synthesizing, gpu, finalizing, ...), so the farm view says no more and
no less than the boards. Pure data: no Ray here.
"""

from __future__ import annotations

import collections
import os
import time

from cuzk.cluster.node import parse_local_job_id


def _gateway_ids(local: str | None) -> tuple[str | None, int | None]:
    if not local:
        return None, None
    ids = parse_local_job_id(local.split(":", 1)[-1])
    return (ids[0], ids[1]) if ids else (local, None)


def _relabel(entry: dict, node_id: str, job_field: str, part_field: str) -> dict:
    d = dict(entry)
    d["node"] = node_id
    local = d.get(job_field)
    if local:
        d["node_job"] = local
        job, part = _gateway_ids(local)
        d[job_field] = job
        if part is not None:
            d[part_field] = part
    return d


def _node_partition_states(snap: dict) -> dict:
    """{node job id: state of its one partition} from a node's pipelines."""
    out = {}
    for j in snap.get("pipelines", []):
        parts = j.get("partitions") or []
        if parts:
            out[j["job_id"]] = parts[0]["state"]
    return out


def farm_snapshot(gw) -> dict:
    """The gateway's status JSON (lock held by the caller)."""
    now = time.time()
    synth, workers, finalizers = [], [], []
    memory = {"total_bytes": 0, "reserved_bytes": 0, "used_bytes": 0, "available_bytes": 0}
    by_use: collections.Counter = collections.Counter()
    node_states: dict[str, str] = {}
    consistent = True
    restarts = torn = 0
    layout = 2
    for n in gw.nodes.values():
        snap = (n.status or {}).get("snapshot") if n.alive else None
        if not snap:
            continue
        layout = snap.get("layout_version", layout)
        consistent &= bool(snap.get("consistent", True))
        for w in snap.get("synthesis", {}).get("workers", []):
            synth.append(_relabel(w, n.node_id, "job_id", "partition"))
        for w in snap.get("gpu_workers", []):
            workers.append(_relabel(w, n.node_id, "current_job", "current_partition"))
        for f in snap.get("finalizers", []):
            finalizers.append(_relabel(f, n.node_id, "current_job", "current_partition"))
        mem = snap.get("memory", {})
        for k in memory:
            memory[k] += int(mem.get(k) or 0)
        by_use.update({k: int(v) for k, v in (mem.get("by_use") or {}).items()})
        c = snap.get("counters", {})
        restarts += int(c.get("restarts") or 0)
        torn += int(c.get("torn_records_repaired") or 0)
        for local, state in _node_partition_states(snap).items():
            node_states[local] = state
    memory["by_use"] = dict(by_use)

    pipelines = []
    jobs = list(gw._books.jobs.values())[-gw.config.board_jobs :]
    for j in jobs:
        parts = []
        for i, p in enumerate(j.partitions):
            state = p.state
            if state == "running":
                local = f"{gw.epoch}:{j.job_id}.{i}.{max(0, p.attempts - 1)}"
                state = node_states.get(local, "pending")
            parts.append(
                {
                    "index": i,
                    "state": state,
                    "synth_ms": p.synth_ms,
                    "gpu_ms": p.gpu_ms,
                    "finalize_ms": p.finalize_ms,
                    "attempts": p.attempts,
                    "node": p.node,
                }
            )
        started = j.started_at if j.started_at is not None else j.submitted_at
        pipelines.append(
            {
                "job_id": j.job_id,
                "proof_kind": j.kind,
                "priority": j.priority,
                "state": j.state,
                "submitted_at": j.submitted_at,
                "started_secs_ago": max(0.0, now - started),
                "total_partitions": len(j.partitions),
                "partitions_done": j.n_done,
                "partitions_failed": sum(p.state == "failed" for p in j.partitions),
                "partitions": parts,
            }
        )

    keys = []
    for k in gw.keys():
        keys.append(
            {
                "key_id": k["key_id"],
                "bytes": k["bytes"],
                "devices": k["devices"],
                "last_used_secs_ago": k["last_used_secs_ago"],
                "evictable": k["evictable"],
                "curve": k.get("curve", ""),
                "protocol": k.get("protocol", ""),
                "nodes": k["nodes"],
            }
        )
    c = gw.counters
    by_kind_done = dict(_tagged(c, "completed"))
    by_kind_failed = dict(_tagged(c, "failed"))
    restarts += sum(max(0, n.incarnation - 1) for n in gw.nodes.values())
    return {
        "instance": gw.config.instance,
        "board": "",
        "layout_version": layout,
        "supervisor_pid": os.getpid(),
        "started_at": gw.started_at,
        "now": now,
        "uptime_secs": max(0.0, now - gw.started_at),
        "consistent": consistent,
        "memory": memory,
        "synthesis": {
            "max_concurrent": len(synth),
            "active": sum(w.get("state") == "synthesizing" for w in synth),
            "workers": synth,
        },
        "gpu_workers": workers,
        "finalizers": finalizers,
        "pipelines": pipelines,
        "keys": keys,
        "allocations": {"srs": keys, "pce": []},
        "counters": {
            "total_completed": c["completed"],
            "total_failed": c["failed"],
            "completed_by_kind": by_kind_done,
            "failed_by_kind": by_kind_failed,
            "retries": c["retries"],
            "restarts": restarts,
            "stale_ends_ignored": c["stale_ends_ignored"],
            "queue_depth": gw._books.sched.queue_depth(),
            "torn_records_repaired": torn,
            "jobs_not_shown": max(0, len(gw._books.jobs) - len(jobs)),
            "jobs_recovered": c["recovered"],
        },
        "nodes": [n.to_dict() for n in gw.nodes.values()],
    }


def _tagged(counter, tag: str):
    """(kind, n) for the Counter's (tag, kind) keys."""
    for key, v in counter.items():
        if isinstance(key, tuple) and key[0] == tag:
            yield key[1], v
