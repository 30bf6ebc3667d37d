"""Synthetic status snapshots in the `GET /status` shape, for golden frames, docs and benchmarks.

busy_snapshot() builds a seeded, self-consistent picture of a loaded prover: every partition in
state gpu is named by exactly one proving worker, every finalizing one by one finalizer, every
synthesizing one by one synthesis worker (the board's consistency invariant). `tick` advances
the clock by one second and each worker's busy time by its duty cycle, so two snapshots give
the utilisation a reader would compute.
"""

from __future__ import annotations

import random

# kind -> (partitions, priority), after the Rust cuzk proof kinds (shared/docs/cuzk-reference.md).
KINDS = {
    "winning-post": (1, "critical"),
    "window-post": (1, "high"),
    "snap-update": (16, "normal"),
    "porep-c2": (10, "normal"),
}
GIB = 2**30
NOW = 1_764_400_000.0  # a fixed clock so frames are reproducible


def _partition(index, state, rng):
    synthesized = state not in ("pending", "synthesizing")
    gpu_done = state in ("done", "finalizing")
    return {
        "index": index,
        "state": state,
        "synth_ms": round(rng.uniform(800, 2500), 1) if synthesized else None,
        "gpu_ms": round(rng.uniform(1500, 4000), 1) if gpu_done else None,
        "finalize_ms": round(rng.uniform(100, 400), 1) if state == "done" else None,
        "attempts": 2 if state == "failed" else (1 if state != "pending" else 0),
    }


def busy_snapshot(
    *,
    devices: int = 2,
    workers_per_device: int = 2,
    finalizers: int = 2,
    synth_workers: int = 4,
    pipelines: int = 8,
    keys: int = 2,
    seed: int = 7,
    tick: int = 0,
    device_kind: str = "cuda",
) -> dict:
    """A loaded prover's status snapshot (plain dict, JSON-ready)."""
    rng = random.Random(seed)
    now = NOW + tick
    uptime = 7_523.0 + tick
    n_dev = devices * workers_per_device
    duty = [rng.choice((0.0, 0.62, 0.88, 0.97, 1.0)) for _ in range(n_dev)]

    dev_free = [w for w in range(n_dev) if duty[w] > 0]
    rng.shuffle(dev_free)
    fin_free = list(range(finalizers))
    syn_free = list(range(synth_workers))
    dev_job, fin_job, syn_job = {}, {}, {}

    jobs = []
    for j in range(pipelines):
        kind = rng.choice(list(KINDS))
        total, prio = KINDS[kind]
        age = 4.0 + (pipelines - j) * rng.uniform(6, 20)
        jobs.append(
            {
                "job_id": f"job-{1000 + j:04d}-{kind}",
                "proof_kind": kind,
                "priority": prio,
                "submitted_at": round(now - age, 3),
                "total": total,
            }
        )
    jobs.sort(key=lambda p: p["submitted_at"])

    out_pipes = []
    for j, job in enumerate(jobs):
        total = job["total"]
        frac = j / max(1, len(jobs) - 1)
        states = []
        if frac < 0.2 and j % 3 == 0:
            state = "done"
            states = ["done"] * total
        elif j == 1 and len(jobs) > 4:
            state = "failed"
            states = ["done"] * (total - 1) + ["failed"]
        elif frac > 0.85 and not syn_free:
            state = "queued"
            states = ["pending"] * total
        else:
            state = "running"
            k = rng.randint(0, max(0, total - 2))
            states = ["done"] * k
            for i in range(k, total):
                r = rng.random()
                if fin_free and r < 0.25:
                    states.append("finalizing")
                    fin_job[fin_free.pop()] = (job, i)
                elif dev_free and r < 0.6:
                    states.append("gpu")
                    dev_job[dev_free.pop()] = (job, i)
                elif r < 0.7:
                    states.append("synth_done")
                elif syn_free:
                    states.append("synthesizing")
                    syn_job[syn_free.pop()] = (job, i)
                else:
                    states.append("pending")
        started = None if state == "queued" else round(now - job["submitted_at"] - 0.4, 3)
        out_pipes.append(
            {
                "job_id": job["job_id"],
                "proof_kind": job["proof_kind"],
                "priority": job["priority"],
                "state": state,
                "submitted_at": job["submitted_at"],
                "started_secs_ago": started,
                "total_partitions": total,
                "partitions_done": states.count("done"),
                "partitions_failed": states.count("failed"),
                "partitions": [_partition(i, s, rng) for i, s in enumerate(states)],
            }
        )

    gpu_workers = []
    for w in range(n_dev):
        job = dev_job.get(w)
        stale = w == n_dev - 1 and n_dev > 2
        gpu_workers.append(
            {
                "worker_id": w,
                "gpu_ordinal": w // workers_per_device,
                "device": f"{device_kind}:{w // workers_per_device}",
                "pid": 41000 + w,
                "state": "proving" if job else "idle",
                "generation": 100 + 7 * w + (3 if job else 0),
                "current_job": job[0]["job_id"] if job else None,
                "current_partition": job[1] if job else None,
                "started_secs_ago": round(rng.uniform(0.2, 3.5), 2) if job else None,
                "busy_secs": round(uptime * 0.8 * (duty[w] or 0.3) + tick * duty[w], 3),
                "heartbeat_age_secs": 7.5 if stale else round(rng.uniform(0.0, 0.9), 2),
                "restarts": 1 if stale else 0,
            }
        )
    fins = []
    for f in range(finalizers):
        job = fin_job.get(f)
        fins.append(
            {
                "finalizer_id": f,
                "gpu_ordinal": f % max(1, devices),
                "pid": 40990,
                "state": "finalizing" if job else "idle",
                "generation": 50 + f,
                "current_job": job[0]["job_id"] if job else None,
                "current_partition": job[1] if job else None,
                "started_secs_ago": round(rng.uniform(0.05, 0.4), 2) if job else None,
            }
        )
    synth = []
    for s in range(synth_workers):
        job = syn_job.get(s)
        synth.append(
            {
                "worker_id": s,
                "pid": 42000 + s,
                "state": "synthesizing" if job else "idle",
                "generation": 30 + 2 * s,
                "job_id": job[0]["job_id"] if job else None,
                "partition": job[1] if job else None,
                "started_secs_ago": round(rng.uniform(0.1, 2.0), 2) if job else None,
                "heartbeat_age_secs": round(rng.uniform(0.0, 0.9), 2),
                "restarts": 0,
            }
        )
    key_rows = [
        {
            "key_id": f"{kind}-v{1 + i}",
            "bytes": int(rng.uniform(0.4, 3.0) * GIB),
            "devices": [f"{device_kind}:{d}" for d in range(devices)],
            "last_used_secs_ago": round(rng.uniform(0.5, 90), 1),
            "evictable": i % 2 == 1,
            "curve": ("bn128", "bls12381")[i % 2],
        }
        for i, kind in enumerate(list(KINDS)[:keys])
    ]
    for i, k in enumerate(key_rows):  # (after the draws above: the same figures as before)
        k["table_bytes"] = k["bytes"] // 3 if i % 2 == 0 else 0
        k["tables"] = ("ready", "none", "building", "none")[i % 4]
        k["load_ms"] = 800.0 + 450.0 * i
        k["protocol"] = ("groth16", "groth16", "plonk")[i % 3]

    by_use = {
        "abc": sum(
            1
            for p in out_pipes
            for q in p["partitions"]
            if q["state"] in ("synthesizing", "synth_done")
        )
        * int(0.75 * GIB),
        "prove": len(dev_job) * int(0.6 * GIB) + len(fin_job) * int(0.2 * GIB),
        "srs": sum(k["bytes"] for k in key_rows),
    }
    total = max(64 * GIB, 2 * sum(by_use.values()))
    reserved = sum(by_use.values())
    done_by_kind: dict[str, int] = {}
    for i in range(300 + tick):
        kind = list(KINDS)[i % len(KINDS)]
        done_by_kind[kind] = done_by_kind.get(kind, 0) + 1
    return {
        "instance": "prover-a",
        "board": "cuzk-board-prover-a",
        "layout_version": 1,
        "supervisor_pid": 40990,
        "started_at": now - uptime,
        "now": now,
        "uptime_secs": uptime,
        "consistent": True,
        "memory": {
            "total_bytes": total,
            "reserved_bytes": reserved,
            "used_bytes": reserved,
            "available_bytes": total - reserved,
            "by_use": by_use,
        },
        "synthesis": {"max_concurrent": synth_workers, "active": len(syn_job), "workers": synth},
        "gpu_workers": gpu_workers,
        "finalizers": fins,
        "pipelines": out_pipes,
        "keys": key_rows,
        "allocations": {"srs": key_rows, "pce": []},
        "counters": {
            "total_completed": sum(done_by_kind.values()),
            "total_failed": 3 + tick // 4,
            "completed_by_kind": done_by_kind,
            "failed_by_kind": {"porep-c2": 3 + tick // 4},
            "retries": 5,
            "restarts": 1,
            "stale_ends_ignored": 17 + tick,
            "queue_depth": sum(
                1
                for p in out_pipes
                for q in p["partitions"]
                if q["state"] in ("pending", "synth_done")
            ),
        },
    }


def farm_snapshot(*, nodes: int = 3, dead: int = 1, tick: int = 0, seed: int = 7, **kw) -> dict:
    """A farm gateway's status snapshot: busy_snapshot(**kw) spread over `nodes` machines
    (the last `dead` of them gone, with no workers), in the shape of the cluster contract:
    a top-level `nodes` list and a `node` on every worker, finalizer, synthesis worker and
    partition (None while a partition waits in the gateway). Every node numbers its own
    workers from 0, as separate engines do, so worker ids repeat across nodes."""
    kw.setdefault("devices", 2 * (nodes - dead))
    snap = busy_snapshot(tick=tick, seed=seed, **kw)
    rng = random.Random(seed + 1)
    ids = ["".join(rng.choice("0123456789abcdef") for _ in range(56)) for _ in range(nodes)]
    live = ids[: nodes - dead]
    per_node = max(1, -(-kw["devices"] // len(live)))  # devices on each live node
    now = snap["now"]

    def on(node_of_ordinal, items, id_key):
        counts: dict[str, int] = {}
        holder = {}
        for it in items:
            node = node_of_ordinal(it)
            it[id_key] = counts.get(node, 0)
            counts[node] = it[id_key] + 1
            it["node"] = node
            if it.get("gpu_ordinal") is not None:
                it["gpu_ordinal"] %= per_node
                if it.get("device"):
                    it["device"] = it["device"].split(":")[0] + f":{it['gpu_ordinal']}"
            job = it.get("current_job") or it.get("job_id")
            part = it.get("current_partition", it.get("partition"))
            if job is not None:
                holder[(job, part)] = node
        return holder

    holders = {}
    holders |= on(lambda w: live[w["gpu_ordinal"] // per_node], snap["gpu_workers"], "worker_id")
    holders |= on(lambda f: live[f["gpu_ordinal"] // per_node], snap["finalizers"], "finalizer_id")
    synth = snap["synthesis"]["workers"]
    holders |= on(lambda w: live[w["worker_id"] % len(live)], synth, "worker_id")
    for p in snap["pipelines"]:
        for q in p["partitions"]:
            node = holders.get((p["job_id"], q["index"]))
            if node is None and q["state"] not in ("pending", "synth_done"):
                node = live[(sum(map(ord, p["job_id"])) + q["index"]) % len(live)]  # ran there
            q["node"] = node
    snap["nodes"] = [
        {
            "node_id": node,
            "host": f"10.0.0.{11 + n}",
            "alive": node in live,
            "devices": [f"cuda:{d}" for d in range(per_node)],
            "incarnation": 2 if n == 1 else 1,
            "last_seen": round(now - (0.2 + 0.1 * n if node in live else 95.0), 3),
            "outstanding": sum(
                1 for w in snap["gpu_workers"] if w["node"] == node and w["state"] != "idle"
            ),
            "capacity": 2 * per_node if node in live else 0,
        }
        for n, node in enumerate(ids)
    ]
    return snap
