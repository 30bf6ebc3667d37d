"""Suite `cluster`: the farm (issue #13), a gateway (ClusterEngine, `cuzk serve --ray`) over
node engines on a Ray cluster of one head and N prover nodes on this machine.

Every node's engine runs on cpu:1 with one synthesis process and the prover double (fixed
stage sleeps, so two cores suffice and the figures measure the farm's orchestration, not CPU
contention); the whole run is inside a network namespace that has only loopback
(cuzk.testing.netns: Ray never sees another address). The cluster grows one node at a time
and the gateway, started once, attaches each new node as Ray lists it. The gateway runs with
`affinity_wait` 0: every node is sent work as soon as it has room (with the default, a node
that joins while the key is resident on the others would only get work that waited 2 s).
Three parts:

- scaling: with 1, 2, ... nodes, a warm-up job on every node (key resident, processes warm),
  then several jobs of many partitions submitted together. Throughput is partitions per
  second over the steady window: the gateway's "done" events of those jobs, less the first
  and last `capacity` x nodes of them (the fill and the drain), intervals / seconds between
  the first and the last event left. Scaling ratio = throughput(n) / (n x throughput(1))
  (issue #13's target: >= 0.9 at 3 nodes); `vs_device` is throughput against the devices'
  own capacity, n / start_secs (the double's prove_start is the slowest stage and holds the
  device's kernel lock).
- dispatch overhead, on the largest farm, idle: one-partition jobs, one at a time. Per
  partition, overhead = (the gateway's "done" event - its "submit" event) - `node_secs`, the
  node's own time for the partition (measured in the node actor around its engine's
  submit and result; the gateway keeps it in ClusterPartition.node_secs). So it is what the
  farm adds to a local engine: putting the witness in Ray's object store, the actor call
  there and the result back, and the gateway loop's wake-up. Median and p99 in ms.
- a node's death, on the largest farm: a job of many partitions; once partitions are done on
  every node, a node that holds its full capacity of partitions is taken away
  (`ray.cluster_utils.Cluster.remove_node(node, allow_graceful=False)`: its raylet and
  processes killed, as a machine that dies). From the moment of removal: `detect_s`, until the
  gateway has put the first of the node's partitions back in the queue (its first "retry"
  event); `failover_s`, until every one of them has been dispatched to another node (the
  last of their "dispatch" events with a later attempt); the job still completes, every
  partition once.

Ray's health checks are set as the cluster tests set them (a node is declared dead after 4
missed checks 0.5 s apart); a partition whose actor call fails is retried at once. The
shared-memory segments of node engines killed with their machine are removed afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

from bench import plots
from bench.tables import fmt, table, target

DOUBLE = "cuzk.testing.prover_double"
N_VARS = 64
SYSTEM_CONFIG = {  # as tests/cluster_harness.py: fast health checks
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 4,
}
NODE_OBJECT_STORE = 96 * 1024**2
SHM_PID = re.compile(r"^(?:cuzk-(\d+)-|cuzkbuf\.(\d+)\.)")

# profile -> node counts, stage seconds, partitions per node of the scaling jobs (split over
# `jobs` jobs), lone partitions for the overhead, partitions per node of the failover job
SETTINGS = {
    "smoke": dict(
        nodes=(1, 2),
        synth=0.01,
        start=0.05,
        finish=0.01,
        per_node=24,
        jobs=2,
        lone=10,
        failover_per_node=8,
    ),
    "quick": dict(
        nodes=(1, 2, 3),
        synth=0.02,
        start=0.1,
        finish=0.02,
        per_node=80,
        jobs=4,
        lone=100,
        failover_per_node=20,
    ),
    "full": dict(
        nodes=(1, 2, 3, 4),
        synth=0.02,
        start=0.1,
        finish=0.02,
        per_node=200,
        jobs=5,
        lone=300,
        failover_per_node=30,
    ),
    "gpu": dict(  # no device part: the quick sizes
        nodes=(1, 2, 3),
        synth=0.02,
        start=0.1,
        finish=0.02,
        per_node=80,
        jobs=4,
        lone=100,
        failover_per_node=20,
    ),
}


def _wait(cond, timeout, what):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise TimeoutError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.05)


class _Farm:
    """A Ray cluster on this machine: a head with no CPUs, prover nodes added one by one."""

    def __init__(self):
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "_system_config": SYSTEM_CONFIG,
            },
        )
        self.nodes: list = []

    def add_node(self):
        node = self.cluster.add_node(
            num_cpus=1, resources={"cuzk_node": 1}, object_store_memory=NODE_OBJECT_STORE
        )
        self.nodes.append(node)
        self.cluster.wait_for_nodes()
        return node

    def remove_node(self, node) -> None:
        self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.remove(node)

    def shutdown(self) -> None:
        self.cluster.shutdown()


def _events(gw) -> list[tuple]:
    with gw._books.lock:
        return list(gw.events)


def _steady_pps(times: list[float], skip: int) -> tuple[float | None, int]:
    """Events per second between the skip-th and the last-but-skip event (and how many)."""
    times = sorted(times)
    if len(times) < 2 * skip + 3:
        skip = max(0, (len(times) - 3) // 2)
    inner = times[skip : len(times) - skip]
    if len(inner) < 2 or inner[-1] <= inner[0]:
        return None, len(inner)
    return (len(inner) - 1) / (inner[-1] - inner[0]), len(inner)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def _witnesses(n: int, seed: int) -> list[bytes]:
    from cuzk.testing import prover_double as double

    return [double.make_witness(N_VARS, seed + i) for i in range(n)]


def _check(results: list[dict]) -> None:
    bad = [r for r in results if r is None or r["state"] != "done"]
    if bad:
        raise RuntimeError(f"bench job did not complete: {bad[0] and bad[0].get('error')}")


def scaling(gw, kid, n: int, s: dict, seed: int) -> dict:
    """Throughput of `n` nodes (the gateway has them all attached)."""
    capacity = min(r.capacity for r in gw.nodes.values() if r.alive)
    # warm-up: twice the farm's capacity, so every node has the key resident and is warm
    _check([gw.result(gw.submit(kid, _witnesses(2 * n * capacity, seed)), timeout=300)])
    total = s["per_node"] * n
    per_job = -(-total // s["jobs"])
    t0 = time.perf_counter()
    ids = [
        gw.submit(kid, _witnesses(per_job, seed + 1000 + j * per_job), kind="bench")
        for j in range(s["jobs"])
    ]
    results = [gw.result(j, timeout=600) for j in ids]
    wall = time.perf_counter() - t0
    _check(results)
    jobs = set(ids)
    done = [e[0] for e in _events(gw) if e[1] == "done" and e[2] in jobs and e[3] >= 0]
    pps, counted = _steady_pps(done, n * capacity)
    parts = [p for r in results for p in r["partitions"]]
    per_node = sorted(
        (sum(1 for p in parts if p["node"] == node) for node in {p["node"] for p in parts}),
        reverse=True,
    )
    return {
        "nodes": n,
        "partitions": len(parts),
        "steady_partitions": counted,
        "wall_s": wall,
        "throughput_pps": pps,
        "run_pps": len(parts) / wall,
        "scaling": None,  # against one node's, once that is measured
        "device_pps": n / s["start"],
        "vs_device": (pps or 0) / (n / s["start"]),
        "per_node": "/".join(str(c) for c in per_node),
        "retries": sum(p["attempts"] - 1 for p in parts),
        "load_avg": round(os.getloadavg()[0], 1),
    }


def overhead(gw, kid, s: dict, seed: int) -> dict:
    """The gateway's dispatch overhead per partition on an idle farm (see the docstring)."""
    ids, node_secs = [], {}
    for i in range(s["lone"]):
        job = gw.submit(kid, _witnesses(1, seed + i), kind="lone")
        r = gw.result(job, timeout=60)
        _check([r])
        with gw._books.lock:
            node_secs[job] = gw._books.jobs[job].partitions[0].node_secs
        ids.append(job)
    at: dict[tuple[str, str], float] = {}
    for t, what, job, _, _ in _events(gw):
        if job in node_secs and what in ("submit", "dispatch", "done"):
            at.setdefault((job, what), t)
    over, total, node, queue = [], [], [], []
    for job in ids:
        t_sub, t_disp, t_done = (at[(job, w)] for w in ("submit", "dispatch", "done"))
        over.append((t_done - t_sub - node_secs[job]) * 1e3)
        total.append((t_done - t_sub) * 1e3)
        node.append(node_secs[job] * 1e3)
        queue.append((t_disp - t_sub) * 1e3)
    stages = (s["synth"] + s["start"] + s["finish"]) * 1e3
    return {
        "nodes": sum(r.alive for r in gw.nodes.values()),
        "partitions": len(ids),
        "overhead_median_ms": statistics.median(over),
        "overhead_p99_ms": _pct(over, 0.99),
        "overhead_max_ms": max(over),
        "overhead_min_ms": min(over),
        "submit_to_dispatch_median_ms": statistics.median(queue),
        "gateway_median_ms": statistics.median(total),
        "node_median_ms": statistics.median(node),
        "node_engine_median_ms": statistics.median(node) - stages,
        "stages_ms": stages,
        "load_avg": round(os.getloadavg()[0], 1),
    }


def failover(gw, farm: _Farm, kid, s: dict, seed: int, pids: dict) -> dict:
    """Take a node that holds partitions away; how soon they run elsewhere."""
    import ray

    n = len(farm.nodes)
    driver = ray._private.worker.global_worker.node
    victims = [
        v
        for v in farm.nodes
        if driver is None or v._raylet_socket_name != driver._raylet_socket_name
    ]
    victim = victims[0]
    rec = gw.nodes[victim.node_id]
    ws = _witnesses(s["failover_per_node"] * n, seed)
    job = gw.submit(kid, ws, kind="failover")
    capacity = rec.capacity

    def ready():
        with gw._books.lock:
            j = gw._books.jobs[job]
            on_every = {p.node for p in j.partitions if p.state == "done"}
            return len(rec.outstanding) >= capacity and len(on_every) >= n

    _wait(ready, 120, "every node proving the failover job, the victim at capacity")
    with gw._books.lock:
        st = rec.status or {}
        pids[victim.node_id] = _pids_of(st)
        lost = {(wk.partition, wk.attempt) for wk in rec.outstanding if wk.job_id == job}
        t0 = time.time()
    farm.remove_node(victim)
    removal_s = time.time() - t0
    r = gw.result(job, timeout=300)
    _check([r])
    retry_at, dispatch_at, lost_at = {}, {}, None
    for t, what, a, b, c in _events(gw):
        if t < t0:
            continue
        if what == "node_lost" and a == victim.node_id and lost_at is None:
            lost_at = t
        if a != job:
            continue
        for part, attempt in lost:
            if b == part and c > attempt:
                if what == "retry":
                    retry_at.setdefault(part, t)
                elif what == "dispatch":
                    dispatch_at.setdefault(part, t)
    moved = [p for p, _ in lost if p in dispatch_at]
    parts = r["partitions"]
    return {
        "nodes": n,
        "partitions": len(parts),
        "lost_partitions": len(lost),
        "moved_partitions": len(moved),
        "removal_call_s": removal_s,
        "node_lost_s": (lost_at - t0) if lost_at is not None else None,
        "detect_s": (min(retry_at.values()) - t0) if retry_at else None,
        "failover_s": (max(dispatch_at.values()) - t0) if dispatch_at else None,
        "moved_elsewhere": all(parts[p]["node"] != victim.node_id for p in moved),
        "job_state": r["state"],
        "load_avg": round(os.getloadavg()[0], 1),
    }


def _pids_of(status: dict) -> list[int]:
    p = status.get("pids") or {}
    out = list(p.get("synth", [])) + list(p.get("device", []))
    pid = (status.get("info") or {}).get("pid")
    return out + ([pid] if pid else [])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _clean_shm(pids: set[int], timeout: float = 20.0) -> int:
    """Remove the status boards and buffers of node engines killed with their machine."""
    deadline = time.time() + timeout
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    removed = 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/dev/shm"):
            m = SHM_PID.match(name)
            pid = int(m.group(1) or m.group(2)) if m else None
            if pid in pids and not _alive(pid):
                with contextlib.suppress(OSError):
                    os.unlink(f"/dev/shm/{name}")
                    removed += 1
    return removed


def measure(profile: str) -> dict:
    from cuzk.cluster.gateway import ClusterEngine
    from cuzk.testing import netns
    from cuzk.testing import prover_double as double

    s = SETTINGS[profile]
    stages = {"synth_secs": s["synth"], "start_secs": s["start"], "finish_secs": s["finish"]}
    nodes_settings = dict(
        devices="cpu:1",
        synth_workers=1,
        memory_budget="1GiB",
        prover=DOUBLE,
        prover_options=stages,
    )
    rows, pids, joins = [], {}, []
    over = fail = None
    with tempfile.TemporaryDirectory() as tmp, netns.loopback_only():
        if netns.interfaces() != ["lo"]:
            raise RuntimeError(f"the namespace has other interfaces: {netns.interfaces()}")
        key = str(Path(tmp) / "double.key")
        double.write_key(key, n_vars=N_VARS, domain_size=2 * N_VARS)
        t0 = time.time()
        farm = _Farm()
        gw = None
        try:
            farm.add_node()
            print(f"  ray cluster with 1 node up in {time.time() - t0:.1f} s", flush=True)
            gw = ClusterEngine(
                address=farm.cluster.address,
                nodes=nodes_settings,
                prover=DOUBLE,
                memory_budget="1GiB",
                affinity_wait=0.0,
            )
            gw.start()
            for i, n in enumerate(s["nodes"]):
                t1 = time.time()
                while len(farm.nodes) < n:
                    farm.add_node()
                _wait(lambda n=n: gw.health()[1]["nodes_alive"] == n, 180, f"{n} node(s)")
                if i:
                    joins.append(time.time() - t1)
                kid = gw.register_key(key)
                print(f"  {n} node(s): throughput ...", flush=True)
                rows.append(scaling(gw, kid, n, s, seed=100_000 * (i + 1)))
                with gw._books.lock:
                    for r in gw.nodes.values():
                        if r.alive and r.status:
                            pids[r.node_id] = _pids_of(r.status)
            base = rows[0]["throughput_pps"]
            for r in rows:
                r["scaling"] = (r["throughput_pps"] or 0) / (r["nodes"] * base) if base else None
            print(f"  dispatch overhead, {s['lone']} lone partitions ...", flush=True)
            over = overhead(gw, kid, s, seed=900_000)
            print("  a node taken away mid-job ...", flush=True)
            fail = failover(gw, farm, kid, s, 950_000, pids)
        finally:
            if gw is not None:
                gw.stop(0)
            farm.shutdown()
            cleaned = _clean_shm({p for v in pids.values() for p in v})
    return {
        "rows": rows,
        "overhead": over,
        "failover": fail,
        "stages_ms": "/".join(f"{v * 1e3:.0f}" for v in (s["synth"], s["start"], s["finish"])),
        "node_join_s": statistics.median(joins) if joins else None,
        "shm_segments_cleaned": cleaned,
    }


COLUMNS = [
    "nodes",
    "partitions",
    "steady_partitions",
    "throughput_pps",
    "run_pps",
    "scaling",
    "device_pps",
    "vs_device",
    "per_node",
    "retries",
    "wall_s",
    "load_avg",
]


def run(profile: str = "quick") -> dict:
    from cuzk.testing import netns

    why = netns.available()
    if why is not None:
        raise RuntimeError(f"the cluster suite runs Ray in a network namespace of its own: {why}")
    try:
        import ray.cluster_utils  # noqa: F401
    except ImportError:
        raise RuntimeError("the cluster suite needs Ray: pip install 'cuzk[cluster]'") from None
    for name in ("cuzk.cluster", "cuzk.engine"):  # retries and lost nodes are expected here
        logging.getLogger(name).setLevel(logging.ERROR)
    res = measure(profile)
    print(table(res["rows"], COLUMNS))
    o, f = res["overhead"], res["failover"]
    print(
        f"  dispatch overhead over {o['partitions']} lone partitions on {o['nodes']} node(s): "
        f"median {fmt(o['overhead_median_ms'])} ms, p99 {fmt(o['overhead_p99_ms'])} ms "
        f"(node's own {fmt(o['node_median_ms'])} ms, stages {fmt(o['stages_ms'])} ms)"
    )
    print(
        f"  a node taken away holding {f['lost_partitions']} partition(s): detected after "
        f"{fmt(f['detect_s'])} s, all running elsewhere after {fmt(f['failover_s'])} s; "
        f"job {f['job_state']}"
    )
    last = res["rows"][-1]
    res["targets"] = {f"scaling_{last['nodes']}_nodes>=0.9": (last["scaling"] or 0) >= 0.9}
    return res


# --- what the report shows: targets, summary and plot ------------------------------------------


def targets(get) -> list[dict]:
    """Issue #13's target: 3 nodes on one machine give >= 0.9x three times one node's
    throughput."""
    res = get() or {}
    row = next((r for r in res.get("rows") or [] if r.get("nodes") == 3), None)
    o, f = res.get("overhead") or {}, res.get("failover") or {}
    note = ""
    if row:
        note = (
            f"{fmt(row.get('throughput_pps'))} partitions/s on 3 nodes; dispatch overhead "
            f"median {fmt(o.get('overhead_median_ms'))} ms, p99 "
            f"{fmt(o.get('overhead_p99_ms'))} ms; a lost node's partitions running "
            f"elsewhere after {fmt(f.get('failover_s'))} s"
        )
    return [
        target(
            "cluster: throughput of 3 nodes vs 3x one node",
            "#13",
            0.9,
            "x",
            row and row.get("scaling"),
            upper=False,
            suite="cluster",
            note=note,
        )
    ]


def summary(get) -> list[str]:
    res = get() or {}
    o, f = res.get("overhead"), res.get("failover")
    if not o or not f:
        return []
    return [
        f"**The farm** (suite cluster, {o['nodes']} prover nodes on this machine): the "
        f"gateway adds {fmt(o['overhead_median_ms'])} ms to a partition (median; p99 "
        f"{fmt(o['overhead_p99_ms'])} ms) over the node's own time; a node taken away "
        f"holding {f['lost_partitions']} partition(s) is noticed after {fmt(f['detect_s'])} s "
        f"and all of them run elsewhere after {fmt(f['failover_s'])} s.",
        "",
    ]


def plot(name, entry, res, img):
    rows = [r for r in res.get("rows") or [] if r.get("throughput_pps")]
    if not rows:
        return []
    fig, (ax, bx) = plots.figure("Farm throughput by prover nodes on one machine", entry, ncols=2)
    ns = [r["nodes"] for r in rows]
    base = rows[0]["throughput_pps"] / rows[0]["nodes"]
    ax.plot(ns, [r["throughput_pps"] for r in rows], marker="o", label="measured, steady")
    ax.plot(ns, [r["run_pps"] for r in rows], marker=".", linestyle=":", label="whole run")
    ax.plot(ns, [n * base for n in ns], linestyle="--", color="0.5", label="ideal (n x 1 node)")
    ax.plot(ns, [r["device_pps"] for r in rows], linestyle="-.", color="0.7", label="devices")
    ax.set_xlabel("prover nodes")
    ax.set_ylabel("partitions / s")
    ax.set_xticks(ns)
    ax.set_ylim(0, None)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    bx.plot(ns, [r.get("scaling") or 0 for r in rows], marker="o", label="throughput / ideal")
    bx.axhline(0.9, color="crimson", linestyle="--", label="target 0.9x (#13)")
    bx.set_xlabel("prover nodes")
    bx.set_ylabel("x ideal scaling")
    bx.set_xticks(ns)
    bx.set_ylim(0, 1.2)
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=7, loc="lower left")
    return [("throughput by nodes", plots.save(fig, f"bench-{name}.png", img))]


if __name__ == "__main__":
    import sys

    run(sys.argv[1] if len(sys.argv) > 1 else "quick")
