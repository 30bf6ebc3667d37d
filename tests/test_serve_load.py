"""200 small jobs from 8 client threads against one `cuzk serve`: each completes exactly once.

Jobs of 1 to 3 partitions of the tiny and mulchain circuits, mixed priorities, witnesses
uploaded or given by path, submitted through cuzk.client (urllib) from 8 threads at
once. Every job must finish done, with one proof per partition that the project's verifier
accepts for the public signals snarkjs computed for that witness; the job ids are distinct,
the server lists each once, and the board's and Prometheus's completed counts for the kind
grow by exactly 200. A few of the proofs are checked by snarkjs itself.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import threading
import time

import pytest
from conftest import fixture_circuit
from interop import ROOT
from prometheus_client.parser import text_string_to_metric_families
from serve_harness import serve_daemon, warm_kernels

from cuzk.client import Client
from cuzk.groth16.verifier import verify

CIRCUITS = [fixture_circuit("tiny"), fixture_circuit("mulchain")]
N_THREADS, N_JOBS = 8, 200
KIND = "load-test"


@pytest.fixture(scope="module")
def load_run(tmp_path_factory):
    warm_kernels(*CIRCUITS)
    base = tmp_path_factory.mktemp("load")
    root = base / "keys"
    for c in CIRCUITS:
        shutil.copytree(c.dir, root / c.name)
    s = serve_daemon(base / "serve.log", root, "--log-level", "info", devices="cpu:2").start()
    try:
        yield s, root, _run_load(s, root)
        assert s.stop() == 0, s.log()
        assert s.leftover_segments() == []
    finally:
        s.kill()


def _run_load(s, root):
    plan = []  # (thread, circuit, witness sets, upload, priority)
    rng = random.Random(8)
    for i in range(N_JOBS):
        c = CIRCUITS[i % 2]
        sets = tuple(rng.randrange(2) for _ in range(rng.randint(1, 3)))
        plan.append(
            (
                i % N_THREADS,
                c,
                sets,
                rng.random() < 0.5,
                rng.choice(["critical", "high", "normal", "normal"]),
            )
        )
    results, errors = {}, []
    lock = threading.Lock()

    def worker(t):
        client = Client(s.url)
        mine = []
        try:
            for th, c, sets, upload, prio in plan:
                if th != t:
                    continue
                ws = [root / c.name / f"witness_{k}.wtns" for k in sets]
                job = client.submit(
                    root / c.name / "circuit.zkey", ws, kind=KIND, priority=prio, upload=upload
                )
                mine.append((job["job_id"], c, sets))
            for job_id, c, sets in mine:
                r = client.wait(job_id, timeout=300)
                with lock:
                    assert job_id not in results, f"job id {job_id} given twice"
                    results[job_id] = (c, sets, r)
        except Exception as e:  # collected and raised in the test thread
            with lock:
                errors.append(repr(e))

    before = _completed(Client(s.url).metrics())
    t0 = time.time()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    return {"results": results, "errors": errors, "before": before, "secs": time.time() - t0}


def _completed(metrics_text: str) -> float:
    for fam in text_string_to_metric_families(metrics_text):
        for smp in fam.samples:
            if smp.name == "cuzk_jobs_completed_total" and smp.labels.get("kind") == KIND:
                return smp.value
    return 0.0


@pytest.mark.slow
def test_200_jobs_from_8_threads_each_complete_exactly_once(load_run):
    s, root, run = load_run
    assert run["errors"] == []
    results = run["results"]
    assert len(results) == N_JOBS
    vks = {c.name: json.loads(c.vk.read_text()) for c in CIRCUITS}
    n_proofs = 0
    for job_id, (c, sets, r) in results.items():
        assert r["job_id"] == job_id and r["state"] == "done", r
        assert r["partitions_done"] == len(sets) == len(r["proofs"])
        assert all(p["attempts"] == 1 for p in r["partitions"])
        for proof, public, k in zip(r["proofs"], r["public"], sets, strict=True):
            assert public == json.loads(c.public(k).read_text())
            assert verify(vks[c.name], public, proof)
            n_proofs += 1
    # the server lists every job once, done; the counters grew by exactly N_JOBS
    client = Client(s.url)
    listed = [j for j in client.jobs() if j["kind"] == KIND]
    assert sorted(j["job_id"] for j in listed) == sorted(results)
    assert all(j["state"] == "done" for j in listed)
    assert _completed(client.metrics()) - run["before"] == N_JOBS
    snap = client.status()
    assert snap["counters"]["completed_by_kind"][KIND] == N_JOBS
    assert snap["counters"]["queue_depth"] == 0
    assert snap["memory"]["reserved_bytes"] == sum(
        v for u, v in snap["memory"]["by_use"].items() if u == "keys"
    )
    print(f"{N_JOBS} jobs, {n_proofs} proofs in {run['secs']:.1f} s")


@pytest.mark.slow
def test_some_load_proofs_verify_in_snarkjs(load_run, tools):
    s, root, run = load_run
    picked = list(run["results"].values())[:: N_JOBS // 4][:4]
    for c, sets, r in picked:
        vk = root / c.name / "verification_key.json"
        # one node process per job: snarkjs groth16 verify on each partition
        script = """
            const snarkjs = require(process.argv[1]);
            const fs = require("fs");
            const [vk, items] = JSON.parse(fs.readFileSync(0, "utf8"));
            (async () => {
                const out = [];
                for (const [p, s] of items) out.push(await snarkjs.groth16.verify(vk, s, p));
                console.log(JSON.stringify(out));
                process.exit(0);
            })().catch((e) => { console.error(e); process.exit(2); });
        """
        items = [[p, pub] for p, pub in zip(r["proofs"], r["public"], strict=True)]
        # plus a mismatched pair, which snarkjs must reject
        items.append([r["proofs"][0], json.loads(c.public(1 - sets[0]).read_text())])
        p = subprocess.run(
            ["node", "-e", script, str(ROOT / ".tools/node_modules/snarkjs")],
            input=json.dumps([json.loads(vk.read_text()), items]),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout.strip().splitlines()[-1]) == [True] * len(sets) + [False]
