"""`cuzk serve --ray`: the gateway's HTTP API, `cuzk top --server` and the metrics over a farm
of three prover nodes on this machine (loopback only, tests/cluster_harness.py), each running
the prover double on cpu:1 with one synthesis process.
"""

from __future__ import annotations

import base64
import collections
import threading

import pytest
from cluster_harness import farm as start_farm
from serve_harness import request, run_cli, serve_daemon, serving
from waiting import wait_for

from cuzk.testing import prover_double as double

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

N_NODES = 3


@pytest.fixture(scope="module")
def farm():
    yield from start_farm(N_NODES)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    d = tmp_path_factory.mktemp("farm-keys")
    double.write_key(d / "double.key", n_vars=64, domain_size=128)
    return d


@pytest.fixture(scope="module")
def gateway(farm, root):
    s = serve_daemon(
        root.parent / "gateway.log",
        root,
        "--ray",
        farm.address,
        "--prover",
        "cuzk.testing.prover_double",
        "--prover-options",
        '{"synth_secs": 0.01, "start_secs": 0.04, "finish_secs": 0.01}',
        "--log-level",
        "info",
    ).start()
    wait_for(
        lambda: request(s.url, "GET", "/healthz")[2].get("nodes_alive") == N_NODES, timeout=180
    )
    yield from serving(s)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_healthz_and_status_show_the_farm(gateway, farm):
    st, _, body = request(gateway.url, "GET", "/healthz")
    assert st == 200 and body["status"] == "ok", body
    assert body["nodes"] == body["nodes_alive"] == N_NODES
    st, _, snap = request(gateway.url, "GET", "/status")
    assert st == 200
    assert {n["node_id"] for n in snap["nodes"]} == {n.node_id for n in farm.nodes}
    assert all(n["alive"] and n["incarnation"] >= 1 for n in snap["nodes"])
    assert {w["node"] for w in snap["gpu_workers"]} == {n.node_id for n in farm.nodes}
    assert "farm on the Ray cluster" in gateway.log()


def test_many_jobs_from_eight_threads_complete_once_and_critical_goes_first(
    gateway, root, tmp_path
):
    """200 jobs of mixed priorities submitted over HTTP from 8 threads at once: every job
    completes exactly once with its own proofs, and critical jobs wait less than normal
    ones (p95 of submission-to-finish)."""
    key = str(root / "double.key")
    pk = double.ProvingKey.open(key)
    tmp = tmp_path
    priorities = ["critical", "high", "normal", "normal", "normal"]
    submitted: dict[str, tuple] = {}
    seen = collections.Counter()
    errors = []
    lock = threading.Lock()

    def client(t: int) -> None:
        try:
            for i in range(25):
                n = 1 + (t + i) % 3
                ws = [
                    double.make_wtns(64, 100_000 * t + 100 * i + k, tmp / f"{t}.{i}.{k}.wtns")
                    for k in range(n)
                ]
                prio = priorities[(t + i) % len(priorities)]
                body = {"key": key, "witnesses": [{"data": b64(w)} for w in ws]}
                body["priority"] = prio
                st, _, r = request(gateway.url, "POST", "/v1/jobs", body)
                assert st in (200, 201, 202), r
                with lock:
                    submitted[r["job_id"]] = (prio, ws)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(submitted) == 200
    latency = collections.defaultdict(list)
    for job_id, (prio, ws) in submitted.items():
        st, _, r = request(gateway.url, "GET", f"/v1/jobs/{job_id}/result?wait=300")
        assert st == 200 and r["state"] == "done", r
        assert [p["index"] for p in r["partitions"]] == list(range(len(ws)))
        for proof, w in zip(r["proofs"], ws, strict=True):
            assert proof == double.expected_proof(w, pk)
        seen[job_id] += 1
        latency[prio].append(r["finished_at"] - r["submitted_at"])
    assert len(seen) == 200 and set(seen.values()) == {1}
    st, _, listing = request(gateway.url, "GET", "/v1/jobs")
    ids = [j["job_id"] for j in listing["jobs"]]
    assert len(ids) == len(set(ids)) and set(submitted) <= set(ids)

    def p95(xs):
        xs = sorted(xs)
        return xs[max(0, int(0.95 * len(xs)) - 1)]

    assert p95(latency["critical"]) < p95(latency["normal"]), {
        k: round(p95(v), 3) for k, v in latency.items()
    }


def test_top_over_http_shows_every_node(gateway, farm):
    r = run_cli("top", "--server", gateway.url, "--once", timeout=60)
    assert r.returncode == 0, r.stderr
    for n in farm.nodes:
        assert n.node_id[:8] in r.stdout, r.stdout


def test_metrics_count_the_nodes(gateway):
    st, _, body = request(gateway.url, "GET", "/metrics")
    assert st == 200
    text = body.decode() if isinstance(body, bytes) else body
    assert f"cuzk_nodes {N_NODES}" in text.replace(".0", ""), text[:2000]
    assert f"cuzk_nodes_alive {N_NODES}" in text.replace(".0", "")


def test_bad_requests_get_4xx_and_the_gateway_keeps_serving(gateway, root):
    st, _, r = request(gateway.url, "POST", "/v1/jobs", {"key": str(root / "nope.key")})
    assert 400 <= st < 500 and "error" in r
    st, _, r = request(
        gateway.url,
        "POST",
        "/v1/jobs",
        {"key": str(root / "double.key"), "witnesses": [{"data": "!!"}]},
    )
    assert 400 <= st < 500 and "error" in r
    st, _, r = request(gateway.url, "GET", "/v1/jobs/0123456789abcdef")
    assert st == 404
    assert request(gateway.url, "GET", "/healthz")[0] == 200
