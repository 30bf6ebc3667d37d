"""The farm (issue 13): a gateway (ClusterEngine, `cuzk serve --ray`) over node engines on a
Ray cluster of one head and three prover nodes on this machine, loopback only
(tests/cluster_harness.py). Each node's engine runs on cpu:1 with one synthesis process and
the prover double, whose "proofs" are digests each test recomputes from the witness it sent
(a proof of another partition, or of a torn buffer, is caught).
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time

import pytest
from cluster_harness import farm as start_farm
from waiting import wait_for

from cuzk.testing import prover_double as double

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

N_NODES = 3
DOUBLE = "cuzk.testing.prover_double"
STAGES = {"synth_secs": 0.02, "start_secs": 0.15, "finish_secs": 0.02}


@pytest.fixture(scope="module")
def farm():
    yield from start_farm(N_NODES)


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster") / "double.key"
    double.write_key(path, n_vars=64, domain_size=128)
    return str(path)


def gateway(farm, **kw):
    from cuzk.cluster.gateway import ClusterEngine

    settings = dict(
        devices="cpu:1",
        synth_workers=1,
        memory_budget="1GiB",
        prover=DOUBLE,
        prover_options=kw.pop("prover_options", STAGES),
    )
    settings.update(kw.pop("nodes", {}))
    gw = ClusterEngine(
        address=farm.address, nodes=settings, prover=DOUBLE, memory_budget="1GiB", **kw
    )
    gw.start()
    wait_for(lambda: gw.health()[1]["nodes_alive"] == len(farm.nodes), timeout=120)
    return gw


def witnesses(n, seed=0, **fault):
    return [double.make_witness(64, seed + i, fault or None) for i in range(n)]


def check_proofs(key_path, result, ws):
    k = double.ProvingKey.open(key_path)
    assert result["state"] == "done", result
    assert len(result["proofs"]) == len(ws)
    for i, (proof, w) in enumerate(zip(result["proofs"], ws, strict=True)):
        assert proof == double.expected_proof(w, k), f"partition {i}: another partition's proof"


def node_of(gw, node_handle):
    return gw.nodes[node_handle.node_id]


# ------------------------------------------------------------------------------ basics
def test_gateway_proves_on_every_node_and_reports_the_farm(farm, key):
    gw = gateway(farm)
    try:
        kid = gw.register_key(key)
        ws = witnesses(12)
        job = gw.submit(kid, ws)
        r = gw.result(job, timeout=120)
        check_proofs(key, r, ws)
        used = {p["node"] for p in r["partitions"]}
        assert len(used) == N_NODES, used  # 12 partitions, capacity 3 per node: all nodes
        assert all(p["attempts"] == 1 for p in r["partitions"])
        snap = gw.snapshot()
        nodes = {n["node_id"]: n for n in snap["nodes"]}
        assert set(nodes) == {n.node_id for n in farm.nodes}
        for n in nodes.values():
            assert n["alive"] and n["devices"] == ["cpu:0"] and n["incarnation"] >= 1
            assert n["last_seen"] > time.time() - 30
        assert {w["node"] for w in snap["gpu_workers"]} == set(nodes)
        assert {w["node"] for w in snap["finalizers"]} == set(nodes)
        assert {w["node"] for w in snap["synthesis"]["workers"]} == set(nodes)
        (pipe,) = [p for p in snap["pipelines"] if p["job_id"] == job]
        assert pipe["state"] == "done" and pipe["partitions_done"] == 12
        assert {p["node"] for p in pipe["partitions"]} == used
        assert snap["counters"]["total_completed"] >= 1
        json.dumps(snap)  # the status is JSON
    finally:
        gw.stop(0)


def test_priorities_hold_across_nodes(farm, key):
    """Three normal jobs, each several times the farm's capacity (3 nodes x 3 partitions),
    then a critical one: the critical job, submitted last, finishes first."""
    gw = gateway(farm)
    try:
        kid = gw.register_key(key)
        normal = [gw.submit(kid, witnesses(30, 100 * i)) for i in range(3)]
        wait_for(lambda: all(n.free == 0 for n in gw.nodes.values() if n.alive), timeout=30)
        crit_ws = witnesses(2, 999)
        crit = gw.submit(kid, crit_ws, priority="critical")
        rc = gw.result(crit, timeout=120)
        check_proofs(key, rc, crit_ws)
        rn = [gw.result(j, timeout=300) for j in normal]
        assert all(r["state"] == "done" for r in rn)
        assert rc["finished_at"] < min(r["finished_at"] for r in rn), (
            rc["finished_at"],
            [r["finished_at"] for r in rn],
        )
    finally:
        gw.stop(0)


def test_partitions_of_a_key_go_to_the_node_where_it_is_resident(farm, key, tmp_path):
    other = tmp_path / "other.key"
    double.write_key(other, n_vars=64, domain_size=256)
    gw = gateway(farm, affinity_wait=60)
    try:
        kid = gw.register_key(str(other))
        first = gw.result(gw.submit(kid, witnesses(1, 7)), timeout=120)
        (home,) = {p["node"] for p in first["partitions"]}
        wait_for(
            lambda: any(
                k["key_id"] == kid and k["nodes"].get(home) == "resident" for k in gw.keys()
            ),
            timeout=30,
        )
        ws = witnesses(7, 70)  # more than the node's capacity (3): the rest wait for it
        r = gw.result(gw.submit(kid, ws), timeout=120)
        check_proofs(str(other), r, ws)
        assert {p["node"] for p in r["partitions"]} == {home}
        # a key that every live node refuses (as when its file is gone on every machine):
        # its job fails with their reasons instead of waiting in the queue
        with gw._books.lock:
            k = gw._books.keys[kid]
            for n in gw.nodes.values():
                if n.alive:
                    k.checked.discard(n.node_id)
                    k.unreadable[n.node_id] = "OSError: no such file"
        r = gw.result(gw.submit(kid, witnesses(2, 80)), timeout=30)
        assert r["state"] == "failed" and "no prover node can use key" in r["error"], r
    finally:
        gw.stop(0)


def test_a_machine_that_joined_with_its_own_settings_keeps_them(farm, key):
    """`cuzk cluster join --devices cpu:2` records the setting as a Ray node label: that
    node's engine runs two devices while the gateway's flags say cpu:1 for the others."""
    from cuzk.cluster.labels import to_labels

    extra = farm.add_node(**to_labels({"devices": "cpu:2"}))
    gw = gateway(farm)
    try:
        n = gw.nodes[extra.node_id]
        assert n.devices == ["cpu:0", "cpu:1"] and n.capacity == 2 * 3
        assert all(m.devices == ["cpu:0"] for m in gw.nodes.values() if m is not n and m.alive)
        kid = gw.register_key(key)
        ws = witnesses(12, 1200)
        check_proofs(key, gw.result(gw.submit(kid, ws), timeout=120), ws)
    finally:
        gw.stop(0)
        farm.remove_node(extra)


# ------------------------------------------------------------------------------ failures
def leftover_buffers(pids) -> list[str]:
    names = os.listdir("/dev/shm")
    return sorted(n for n in names for pid in pids if n.startswith(f"cuzkbuf.{pid}."))


def test_a_node_removed_mid_job_loses_nothing(farm, key):
    """A node taken away (not gracefully) in the middle of a 40-partition job: the job
    completes, every partition exactly once, the lost ones retried (attempts > 1), and the
    surviving nodes hold no partition buffer afterwards."""
    gw = gateway(farm)
    try:
        kid = gw.register_key(key)
        ws = witnesses(40, 4000)
        job = gw.submit(kid, ws)
        victim = farm.nodes[0]
        vid = victim.node_id
        wait_for(lambda: len(node_of(gw, victim).outstanding) > 0, timeout=60)
        victim_pids = gw.nodes[vid].status["pids"]
        lost = set(node_of(gw, victim).outstanding)
        farm.remove_node(victim)
        r = gw.result(job, timeout=300)
        check_proofs(key, r, ws)  # every partition once, each its own proof
        retried = [r["partitions"][wk.partition] for wk in lost]
        retried = [p for p in retried if not (p["node"] == vid and p["attempts"] == 1)]
        assert retried, "every partition on the removed node had finished before it went"
        for p in retried:  # each lost one proved again elsewhere, counted as an attempt
            assert p["attempts"] > 1 and p["node"] != vid, p
        assert not any(p["node"] == vid for p in r["partitions"] if p["attempts"] > 1)
        snap = gw.snapshot()
        (gone,) = [n for n in snap["nodes"] if n["node_id"] == vid]
        assert not gone["alive"]
        # the removed machine's engine processes died with its actor
        for pid in victim_pids["synth"] + victim_pids["device"]:
            wait_for(lambda pid=pid: not _alive(pid), timeout=60)
        survivors = [n for n in gw.nodes.values() if n.alive]
        pids = [pid for n in survivors for pid in n.status["pids"]["device"]]
        pids += [pid for n in survivors for pid in n.status["pids"]["synth"]]
        pids += [n.status["info"]["pid"] for n in survivors]
        wait_for(lambda: leftover_buffers(pids) == [], timeout=30)
    finally:
        gw.stop(0)
        farm.top_up(N_NODES)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_killed_node_actor_is_restarted_reattached_and_its_work_retried(farm, key, tmp_path):
    import ray

    gw = gateway(farm)
    try:
        kid = gw.register_key(key)
        ws = witnesses(18, 1800)
        job = gw.submit(kid, ws)
        victim = farm.nodes[1]
        n = node_of(gw, victim)
        wait_for(lambda: len(n.outstanding) > 0, timeout=60)
        before = n.incarnation
        lost = set(n.outstanding)
        ray.kill(n.actor, no_restart=False)  # Ray restarts it on the same machine
        r = gw.result(job, timeout=300)
        check_proofs(key, r, ws)
        again = [r["partitions"][wk.partition]["attempts"] > 1 for wk in lost]
        assert any(again), "every partition on the killed actor had finished before it died"
        wait_for(lambda: n.alive and n.incarnation == before + 1, timeout=120)
        # the restarted node takes work again (a key resident nowhere: spread by load)
        fresh = str(tmp_path / "fresh.key")
        double.write_key(fresh, n_vars=64, domain_size=512)
        ws2 = witnesses(9, 900)
        r2 = gw.result(gw.submit(gw.register_key(fresh), ws2), timeout=120)
        check_proofs(fresh, r2, ws2)
        assert victim.node_id in {p["node"] for p in r2["partitions"]}
        assert gw.snapshot()["counters"]["restarts"] >= 1
    finally:
        gw.stop(0)


def test_a_restarted_gateway_reattaches_to_the_node_actors_by_name(farm, key):
    gw = gateway(farm)
    try:
        instances = {nid: n.instance for nid, n in gw.nodes.items() if n.alive}
        pids = {nid: n.status["info"]["pid"] for nid, n in gw.nodes.items() if n.alive}
        old_devices = {nid: n.status["pids"]["device"] for nid, n in gw.nodes.items() if n.alive}
        kid = gw.register_key(key)
        stuck = gw.submit(kid, witnesses(6, 60))  # left running on the nodes
    finally:
        gw.stop(0)
    assert gw.result(stuck, timeout=5)["state"] == "cancelled"
    # restarted with other engine settings: the same actors restart their engines with them
    gw2 = gateway(farm, prover_options={**STAGES, "finish_secs": 0.03})
    try:
        again = {nid: n.instance for nid, n in gw2.nodes.items() if n.alive}
        assert again == instances  # the same actors, found by name, not new ones
        assert all(
            n.status["info"]["pid"] == n_pid
            for n, n_pid in ((gw2.nodes[nid], pids[nid]) for nid in again)
        )
        assert all(
            set(gw2.nodes[nid].status["pids"]["device"]).isdisjoint(old_devices[nid])
            for nid in again
        ), "the node engines kept their old processes"
        kid = gw2.register_key(key)
        ws = witnesses(6, 61)
        check_proofs(key, gw2.result(gw2.submit(kid, ws), timeout=120), ws)
    finally:
        gw2.stop(0)
    gateway(farm).stop(0)  # the next tests run with the module's settings again


def test_with_no_node_alive_jobs_wait_then_fail_after_the_timeout(farm, key, tmp_path):
    """A gateway over a cluster without prover nodes: health says so, a job waits, then
    fails with the reason after node_wait_timeout."""
    from cuzk.cluster.gateway import ClusterEngine

    gw = ClusterEngine(
        address=farm.address,
        nodes={"devices": "cpu:1", "prover": DOUBLE},
        prover=DOUBLE,
        memory_budget="1GiB",
        node_wait_timeout=3.0,
    )
    # only the head's resources are visible: a cluster with no cuzk node
    gw._poll = lambda now: None
    gw.start(timeout=1)
    try:
        ok, detail = gw.health()
        assert not ok and detail["nodes_alive"] == 0
        from cuzk.cluster.gateway import GatewayKey

        with gw._books.lock:  # a key registered while nodes were up
            gw._books.keys["k"] = GatewayKey("k", key, None, {"key_id": "k"})
        job = gw.submit("k", witnesses(2))
        assert gw.result(job, timeout=1) is None  # waits
        r = gw.result(job, timeout=30)
        assert r["state"] == "failed" and "no prover node alive" in r["error"]
    finally:
        gw.stop(0)


# ------------------------------------------------------------------------------ many jobs
def test_many_jobs_from_many_threads_each_complete_once(farm, key):
    gw = gateway(farm)
    try:
        kid = gw.register_key(key)
        results = collections.Counter()
        errors = []

        def client(t):
            try:
                for i in range(10):
                    ws = witnesses(1 + (i % 3), 10_000 * t + 10 * i)
                    r = gw.result(gw.submit(kid, ws), timeout=300)
                    check_proofs(key, r, ws)
                    results[r["job_id"]] += 1
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=client, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(results) == 40 and set(results.values()) == {1}
    finally:
        gw.stop(0)
