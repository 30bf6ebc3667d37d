"""The engine's plumbing through real processes, with the prover double
(cuzk.testing.prover_double).

The double's proofs are SHA-256 digests of the witness and of the a, b, c it synthesized, so
every test recomputes what each partition's proof must be from the witness it submitted: a
proof from the wrong partition, a torn or reused buffer, or a lost or duplicated partition
fails. Faults are injected at each process boundary: kill -9 of synthesis and device
processes (from outside, found on the board), exits, exceptions and hangs (SIGSTOP) inside a
stage, and the supervisor itself killed. The real-prover acceptance tests are in
test_engine_prover.py.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import psutil
import pytest
from waiting import wait_for

from cuzk.engine import (
    BudgetError,
    Engine,
    EngineConfig,
    EngineError,
    EngineStopped,
    UnknownJob,
    UnknownKey,
    buffers,
)
from cuzk.testing import prover_double as double

N_VARS, DOMAIN = 64, 128


def config(tmp_path, **kw):
    opts = {"fault_dir": str(tmp_path), **kw.pop("opts", {})}
    base = dict(
        devices="cpu:2",
        synth_workers=2,
        prover="cuzk.testing.prover_double",
        prover_options=opts,
        memory_budget="256MiB",
        ping_interval=0.25,
        restart_backoff=0.05,
        board_partitions=64,
    )
    base.update(kw)
    return EngineConfig(**base)


def assert_released(eng):
    """Nothing of this engine left in /dev/shm: no buffers, no board."""
    assert buffers.list_segments(os.getpid()) == []
    assert not os.path.exists(f"/dev/shm/{eng.board_name}")


@contextlib.contextmanager
def running(tmp_path, **kw):
    eng = Engine(config(tmp_path, **kw)).start()
    try:
        yield eng
    finally:
        eng.stop(drain_deadline=5)
        assert_released(eng)


def key_file(tmp_path, **kw):
    path = tmp_path / f"key-{len(kw)}-{kw.get('nbytes', 0)}.json"
    double.write_key(path, n_vars=N_VARS, domain_size=DOMAIN, **kw)
    return path


def witnesses(n, seed=0, faults=None):
    faults = faults or {}
    return [double.make_witness(N_VARS, seed * 1000 + i, faults.get(i)) for i in range(n)]


def public_of(witness: bytes, n_public=2):
    w = np.frombuffer(witness[4:], dtype=np.uint64).reshape(-1, 4)
    return [
        str(sum(int(x) << (64 * j) for j, x in enumerate(w[i]))) for i in range(1, 1 + n_public)
    ]


def assert_proofs(result, ws, key_path):
    """Every partition's proof and public signals are the ones its own witness gives."""
    key = double.ProvingKey.open(key_path)
    assert result["state"] == "done", result
    assert len(result["proofs"]) == len(ws)
    for i, w in enumerate(ws):
        assert result["proofs"][i] == double.expected_proof(w, key), f"partition {i}"
        assert result["public"][i] == public_of(w), f"partition {i}"


def events(eng, what):
    return [e for e in list(eng.events) if e[1] == what]


# ------------------------------------------------------------------------------ shared engine
@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("engine")
    with running(tmp, opts={"synth_secs": 0.01, "start_secs": 0.005, "finish_secs": 0.005}) as eng:
        eng.test_key = key_file(tmp)
        eng.test_key_id = eng.register_key(eng.test_key)
        eng.tmp = tmp
        yield eng


def test_sixteen_partitions_prove_in_order(shared):
    ws = witnesses(16, seed=1)
    job_id = shared.submit(shared.test_key_id, ws, kind="snap-update")
    r = shared.result(job_id, timeout=30)
    assert_proofs(r, ws, shared.test_key)
    assert r["kind"] == "snap-update" and r["priority"] == "normal"
    assert [p["state"] for p in r["partitions"]] == ["done"] * 16
    assert all(
        p["attempts"] == 1 and p["synth_ms"] > 0 and p["gpu_ms"] > 0 and p["finalize_ms"] > 0
        for p in r["partitions"]
    )
    assert {p["device"] for p in r["partitions"]} == {0, 1}  # both device processes used
    snap = shared.snapshot()
    pipe = [p for p in snap["pipelines"] if p["job_id"] == job_id][0]
    assert pipe["state"] == "done" and pipe["partitions_done"] == 16
    assert {p["state"] for p in pipe["partitions"]} == {"done"}
    assert snap["counters"]["completed_by_kind"]["snap-update"] >= 1
    json.dumps(snap)  # plain JSON


def test_witness_paths_and_bytes_mix(shared):
    ws = witnesses(3, seed=2)
    path = shared.tmp / "w1.bin"
    path.write_bytes(ws[1])
    job_id = shared.submit(shared.test_key_id, [ws[0], path, ws[2]], priority="high")
    assert_proofs(shared.result(job_id, timeout=30), ws, shared.test_key)


def test_bad_witness_fails_the_job_without_retries(shared):
    ws = witnesses(2, seed=3)
    job_id = shared.submit(shared.test_key_id, [ws[0], b"not a witness"])
    r = shared.result(job_id, timeout=30)
    assert r["state"] == "failed"
    assert "partition 1" in r["error"] and "bad magic" in r["error"]
    assert r["partitions"][1]["attempts"] == 1  # an input error is not retried
    assert r["proofs"][1] is None
    snap = shared.snapshot()
    pipe = [p for p in snap["pipelines"] if p["job_id"] == job_id][0]
    assert pipe["state"] == "failed" and pipe["partitions"][1]["state"] == "failed"
    # the engine goes on proving
    ok = shared.submit(shared.test_key_id, ws[:1])
    assert_proofs(shared.result(ok, timeout=30), ws[:1], shared.test_key)


def test_stage_exception_is_retried_then_fails_with_the_reason(shared):
    ws = witnesses(3, seed=4, faults={2: {"stage": "finish", "action": "raise"}})
    job_id = shared.submit(shared.test_key_id, ws)
    r = shared.result(job_id, timeout=30)
    assert r["state"] == "failed"
    assert r["partitions"][2]["attempts"] == shared.config.max_attempts
    assert "injected fault at finish" in r["error"] and "3 attempts" in r["error"]


def test_exit_inside_prove_start_is_retried_and_proof_is_valid(shared):
    restarts = shared.counters["restarts"]
    ws = witnesses(4, seed=5, faults={1: {"stage": "start", "action": "exit", "once": True}})
    r = shared.result(shared.submit(shared.test_key_id, ws), timeout=30)
    assert_proofs(r, ws, shared.test_key)
    assert r["partitions"][1]["attempts"] == 2
    assert shared.counters["restarts"] == restarts + 1
    exits = [e for e in events(shared, "exit") if e[2] == "device"]
    assert exits and exits[-1][5] == 7  # the exit code the fault used


def test_prove_start_that_raised_is_retried_from_a_new_synthesis(shared):
    # prove_start overwrites a, b, c in place (the real prover's compute_h; the double too), so
    # a partition whose prove_start raised must be synthesized again, not sent back to a device
    # with the consumed abc buffer (that proved it from wrong data: a wrong digest here, a proof
    # that fails verification with the real prover).
    ws = witnesses(3, seed=6, faults={1: {"stage": "start", "action": "raise", "once": True}})
    job_id = shared.submit(shared.test_key_id, ws)
    r = shared.result(job_id, timeout=30)
    assert_proofs(r, ws, shared.test_key)
    assert r["partitions"][1]["attempts"] == 2
    synths = [e for e in events(shared, "synth") if e[2] == job_id and e[3] == 1]
    assert [e[4] for e in synths] == [0, 1]  # the retry was synthesized afresh


def test_kill9_at_random_moments_never_proves_from_wrong_buffers(tmp_path):
    """kill -9 of device and synthesis processes at random moments of a long job: every
    partition's proof is still the digest of its own witness and a, b, c. Rounds of a few
    kills each, at random delays, so kills land in every stage (attach, prove_start, the
    hand-off, prove_finish, synthesis) across runs."""
    import random

    rng = random.Random(1234)
    with running(
        tmp_path,
        max_attempts=20,
        opts={"synth_secs": 0.02, "start_secs": 0.03, "finish_secs": 0.02},
    ) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        for rnd in range(3):
            ws = witnesses(12, seed=90 + rnd)
            job_id = eng.submit(kid, ws)
            for _ in range(3):
                time.sleep(rng.uniform(0.02, 0.25))
                pid = rng.choice(eng.process_pids()[rng.choice(["device", "device", "synth"])])
                with contextlib.suppress(psutil.NoSuchProcess):
                    if psutil.Process(pid).ppid() == os.getpid():  # ours, not a reused pid
                        os.kill(pid, signal.SIGKILL)
            r = eng.result(job_id, timeout=60)
            assert_proofs(r, ws, key)
        assert eng.counters["restarts"] >= 3


def test_submit_validation(shared):
    with pytest.raises(UnknownKey):
        shared.submit("nope", witnesses(1))
    with pytest.raises(ValueError):
        shared.submit(shared.test_key_id, witnesses(1), priority="urgent")
    with pytest.raises(ValueError):
        shared.submit(shared.test_key_id, [])
    with pytest.raises(ValueError):
        shared.submit(shared.test_key_id, [shared.tmp / "missing.wtns"])
    with pytest.raises(ValueError):
        shared.submit(shared.test_key_id, [123])


def test_keys_and_jobs_listing(shared):
    assert shared.register_key(shared.test_key) == shared.test_key_id  # same file, same id
    k = [k for k in shared.keys() if k["key_id"] == shared.test_key_id][0]
    assert (k["n_vars"], k["domain_size"], k["live_jobs"]) == (N_VARS, DOMAIN, 0)
    job_id = shared.submit(
        shared.test_key_id, witnesses(2, seed=8), kind="window-post", priority="high"
    )
    listed = {j["job_id"]: j for j in shared.jobs()}
    assert listed[job_id]["kind"] == "window-post" and "partitions" not in listed[job_id]
    assert shared.result(job_id, timeout=30)["state"] == "done"
    assert shared.job(job_id)["partitions_done"] == 2
    with pytest.raises(UnknownJob):
        shared.job("no-such-job")
    with pytest.raises(UnknownJob):
        shared.cancel("no-such-job")


def test_cancel_releases_everything_and_engine_goes_on(tmp_path):
    with running(tmp_path, opts={"synth_secs": 0.05, "start_secs": 0.03}) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        ws = witnesses(30, seed=6)
        job_id = eng.submit(kid, ws)
        wait_for(lambda: eng.job(job_id)["partitions_done"] >= 2)
        assert eng.cancel(job_id)
        r = eng.result(job_id, timeout=5)
        assert r["state"] == "cancelled" and r["partitions_done"] < 30
        assert not eng.cancel(job_id)  # already finished
        # running stages stop at their boundary; then nothing is held for the job
        wait_for(lambda: eng.budget.by_use().keys() <= {"keys"}, timeout=5)
        wait_for(lambda: buffers.list_segments(os.getpid()) == [], timeout=5)
        snap = eng.snapshot()
        assert [p for p in snap["pipelines"] if p["job_id"] == job_id][0]["state"] == "cancelled"
        # every slot claimed for the job was ended through its token: nothing stays busy
        wait_for(
            lambda: all(
                w["state"] == "idle"
                for s in [eng.snapshot()]
                for w in s["gpu_workers"] + s["finalizers"] + s["synthesis"]["workers"]
            ),
            timeout=5,
        )
        done_after = len(events(eng, "done"))
        ws2 = witnesses(2, seed=7)
        assert_proofs(eng.result(eng.submit(kid, ws2), timeout=30), ws2, key)
        # no partition of the cancelled job was proved after the cancel settled
        assert all(e[2] != job_id for e in events(eng, "done")[done_after:])


def test_critical_job_submitted_behind_normal_ones_is_proved_next(tmp_path):
    with running(
        tmp_path,
        devices="cpu:1",
        synth_workers=1,
        workers_per_device=1,
        opts={"synth_secs": 0.03, "start_secs": 0.02},
    ) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        normal = [eng.submit(kid, witnesses(8, seed=10 + j)) for j in range(2)]
        wait_for(lambda: eng.job(normal[0])["partitions_done"] >= 1)
        crit = eng.submit(kid, witnesses(1, seed=20), kind="winning-post", priority="critical")
        r = eng.result(crit, timeout=30)
        assert r["state"] == "done"
        # the engine's event log is appended under its lock, so its order is the real order
        log = list(eng.events)
        i_submit = next(i for i, e in enumerate(log) if e[1] == "submit" and e[2] == crit)
        # the first synthesis dispatched after the critical submission is the critical one
        assert next(e for e in log[i_submit:] if e[1] == "synth")[2] == crit
        # and once synthesized it is the next partition sent to the device
        i_synth = next(i for i, e in enumerate(log) if e[1] == "synth_done" and e[2] == crit)
        assert next(e for e in log[i_synth:] if e[1] == "prove")[2] == crit
        # the normal jobs still had queued partitions when it finished
        assert eng.job(normal[1])["partitions_done"] < 8
        for j in normal:
            assert eng.result(j, timeout=30)["state"] == "done"


def test_memory_budget_is_never_exceeded_and_dispatch_waits(tmp_path):
    k = double.ProvingKey.open(key_file(tmp_path))
    per_partition = k.partition_bytes() + len(witnesses(1)[0])
    total = 2 * per_partition + k.nbytes + 100  # room for two partitions at a time
    with running(
        tmp_path,
        synth_workers=2,
        memory_budget=total,
        opts={"synth_secs": 0.01, "start_secs": 0.02, "finish_secs": 0.03},
    ) as eng:
        kid = eng.register_key(key_file(tmp_path))
        samples = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                m = eng.snapshot()["memory"]
                samples.append((m["reserved_bytes"], m["total_bytes"]))
                time.sleep(0.002)

        t = threading.Thread(target=sample)
        t.start()
        ws = witnesses(12, seed=30)
        r = eng.result(eng.submit(kid, ws), timeout=60)
        stop.set()
        t.join()
        assert_proofs(r, ws, key_file(tmp_path))
        assert eng.budget.high_water <= total
        assert eng.budget.high_water > per_partition  # two partitions did overlap
        assert all(res <= tot == total for res, tot in samples) and len(samples) > 20
        assert eng.counters["budget_waits"] > 0  # synthesis waited for memory
        assert max(res for res, _ in samples) > per_partition
        assert eng.budget.by_use() == {"keys": k.nbytes}


def test_a_released_upload_reservation_wakes_a_job_waiting_for_memory(tmp_path, monkeypatch):
    """cuzk serve charges request bodies to the engine's budget ("uploads", from its HTTP
    thread). A job waiting for that memory starts as soon as the body's reservation is given
    back, not at the supervisor's next timer: here the timers are an hour apart, so only the
    wake-up can start it."""
    from cuzk.engine import supervisor

    monkeypatch.setattr(supervisor, "POLL_SECS", 3600.0)
    k = double.ProvingKey.open(key_file(tmp_path))
    need = k.partition_bytes() + len(witnesses(1)[0]) + k.nbytes
    with running(
        tmp_path, devices="cpu:1", synth_workers=1, memory_budget=2 * need, ping_interval=3600
    ) as eng:
        kid = eng.register_key(key_file(tmp_path))
        upload = ("http-body", 1)  # what serve.front.BodyMemory reserves for a body
        assert eng.budget.try_reserve(upload, {"uploads": need + 1})
        ws = witnesses(1, seed=40)
        job_id = eng.submit(kid, ws)
        wait_for(lambda: eng.counters["budget_waits"] > 0, what="the job waiting for memory")
        assert eng.job(job_id)["state"] == "queued"
        eng.budget.release(upload)  # the body was handled (front.BodyMemory.give_back)
        r = eng.result(job_id, timeout=30)
        assert r is not None, "the job did not start when the memory came back"
        assert_proofs(r, ws, key_file(tmp_path))


def test_partition_larger_than_budget_is_refused(tmp_path):
    with running(tmp_path, memory_budget=4096, devices="cpu:1", synth_workers=1) as eng:
        kid = eng.register_key(key_file(tmp_path))
        with pytest.raises(BudgetError):
            eng.submit(kid, witnesses(1))


def test_idle_key_evicted_lru_when_budget_needs_room(tmp_path):
    k = double.ProvingKey.open(key_file(tmp_path))
    big = 10_000_000
    total = big + 3 * (k.partition_bytes() + 2100) + 4096  # one big key at a time
    with running(tmp_path, memory_budget=total, devices="cpu:1", synth_workers=1) as eng:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        ka = eng.register_key(key_file(tmp_path / "a", nbytes=big))
        kb = eng.register_key(key_file(tmp_path / "b", nbytes=big + 1))
        ws = witnesses(2, seed=40)
        assert eng.result(eng.submit(ka, ws), timeout=30)["state"] == "done"
        assert {k["key_id"]: k["devices"] for k in eng.keys()}[ka] == ["cpu:0"]
        assert eng.result(eng.submit(kb, ws), timeout=30)["state"] == "done"
        keys = {k["key_id"]: k for k in eng.keys()}
        assert keys[ka]["devices"] == [] and keys[kb]["devices"] == ["cpu:0"]
        assert eng.budget.by_use()["keys"] == big + 1
        board_keys = {k["key_id"]: k for k in eng.snapshot()["keys"]}
        assert board_keys[kb]["devices"] == ["cpu:0"] and board_keys[ka]["devices"] == []
        assert eng.evict_key(kb)
        assert "keys" not in eng.budget.by_use()
        with pytest.raises(UnknownKey):
            eng.evict_key("nope")


def test_key_idle_longer_than_the_setting_is_evicted(tmp_path):
    with running(tmp_path, devices="cpu:1", synth_workers=1, key_idle_evict_secs=0.3) as eng:
        kid = eng.register_key(key_file(tmp_path))
        assert eng.result(eng.submit(kid, witnesses(1)), timeout=30)["state"] == "done"
        last_used = time.time() - eng.keys()[0]["last_used_secs_ago"]
        wait_for(lambda: "keys" not in eng.budget.by_use(), timeout=10)
        assert time.time() - last_used > 0.3  # not evicted before it was idle that long
        assert [k["devices"] for k in eng.keys()] == [[]]
        # and it comes back on the next job
        assert eng.result(eng.submit(kid, witnesses(1)), timeout=30)["state"] == "done"
        assert [k["devices"] for k in eng.keys()] == [["cpu:0"]]


def _kill_when(eng, find, sig=signal.SIGKILL):
    """Wait until `find(snapshot)` names a worker; kill its process; return (worker, snap)."""

    def probe():
        snap = eng.snapshot()
        return find(snap) and (find(snap), snap)

    worker, snap = wait_for(probe)
    os.kill(worker["pid"], sig)
    return worker, snap


def test_kill9_synthesis_process_mid_run(tmp_path):
    # stages long enough that the kill lands inside the claim the snapshot showed
    with running(tmp_path, opts={"synth_secs": 0.5, "start_secs": 0.01}) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        ws = witnesses(4, seed=50)
        job_id = eng.submit(kid, ws)
        victim, before = _kill_when(
            eng,
            lambda s: next(
                (w for w in s["synthesis"]["workers"] if w["state"] == "synthesizing"), None
            ),
        )
        r = eng.result(job_id, timeout=30)
        assert_proofs(r, ws, key)
        assert r["partitions"][victim["partition"]]["attempts"] == 2
        after = eng.snapshot()
        slot = [w for w in after["synthesis"]["workers"] if w["worker_id"] == victim["worker_id"]]
        assert slot[0]["restarts"] == victim["restarts"] + 1
        assert slot[0]["generation"] > victim["generation"]
        assert slot[0]["pid"] != victim["pid"] and psutil.pid_exists(slot[0]["pid"])
        assert after["counters"]["restarts"] >= 1 and after["counters"]["retries"] >= 1


def test_kill9_device_process_mid_run(tmp_path):
    with running(
        tmp_path, opts={"synth_secs": 0.01, "start_secs": 0.4, "finish_secs": 0.02}
    ) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        ws = witnesses(5, seed=60)
        job_id = eng.submit(kid, ws)
        victim, before = _kill_when(
            eng, lambda s: next((w for w in s["gpu_workers"] if w["state"] == "proving"), None)
        )
        r = eng.result(job_id, timeout=30)
        assert_proofs(r, ws, key)
        assert r["partitions"][victim["current_partition"]]["attempts"] == 2
        after = eng.snapshot()
        same_device = [w for w in after["gpu_workers"] if w["device"] == victim["device"]]
        for w in same_device:  # every worker slot of the dead process was reclaimed
            assert w["restarts"] >= 1 and w["pid"] != victim["pid"]
        slot = [w for w in same_device if w["worker_id"] == victim["worker_id"]][0]
        assert slot["generation"] > victim["generation"]
        assert after["counters"]["restarts"] >= 1


def test_hung_process_is_killed_and_its_work_retried(tmp_path):
    ws = witnesses(3, seed=70, faults={0: {"stage": "synth", "action": "stop", "once": True}})
    with running(tmp_path, ping_interval=0.1, hang_timeout=1.0, opts={"synth_secs": 0.01}) as eng:
        key = key_file(tmp_path)
        r = eng.result(eng.submit(eng.register_key(key), ws), timeout=30)
        assert_proofs(r, ws, key)
        assert events(eng, "hung") and r["partitions"][0]["attempts"] == 2


def test_retries_are_bounded_when_a_process_keeps_dying(tmp_path):
    ws = witnesses(2, seed=80, faults={1: {"stage": "synth", "action": "sigkill"}})
    with running(tmp_path, max_attempts=2, opts={"synth_secs": 0.01}) as eng:
        r = eng.result(eng.submit(eng.register_key(key_file(tmp_path)), ws), timeout=30)
        assert r["state"] == "failed"
        assert "partition 1 failed after 2 attempts" in r["error"]
        assert "killed by SIGKILL" in r["error"]


def test_synchronous_proving_mode(tmp_path):
    with running(
        tmp_path, split_prove=False, opts={"start_secs": 0.01, "finish_secs": 0.02}
    ) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        ws = witnesses(8, seed=90)
        job_id = eng.submit(kid, ws)
        seen = set()
        while eng.job(job_id)["state"] == "running" or eng.job(job_id)["state"] == "queued":
            snap = eng.snapshot()
            seen |= {f["state"] for f in snap["finalizers"]}
            time.sleep(0.003)
        assert_proofs(eng.result(job_id, timeout=30), ws, key)
        assert "finalizing" not in seen  # finalizers unused: workers finish themselves
        assert all(w["state"] == "idle" for w in eng.snapshot()["gpu_workers"])


def test_disable_split_prove_environment_variable(monkeypatch):
    monkeypatch.setenv("CUZK_DISABLE_SPLIT_PROVE", "1")
    assert EngineConfig(devices="cpu:1").validated().split_prove is False
    monkeypatch.setenv("CUZK_DISABLE_SPLIT_PROVE", "0")
    assert EngineConfig(devices="cpu:1").validated().split_prove is True


def invariant_violations(snap):
    """The board invariant, checked from the JSON: a partition in state gpu is named by exactly
    one proving worker, and every proving worker names a partition in state gpu."""
    out = []
    proving = [
        (w["current_job"], w["current_partition"])
        for w in snap["gpu_workers"]
        if w["state"] == "proving"
    ]
    states = {
        (p["job_id"], q["index"]): q["state"] for p in snap["pipelines"] for q in p["partitions"]
    }
    for jp, st in states.items():
        if st == "gpu" and proving.count(jp) != 1:
            out.append(f"{jp} in gpu named by {proving.count(jp)} workers")
    for jp in proving:
        if jp in states and states[jp] != "gpu":
            out.append(f"worker names {jp} in state {states[jp]}")
    return out


def test_invariant_check_catches_the_seed_story():
    # Rust cuzk: A's finalizer marked the worker idle while it already proved B.
    snap = {
        "gpu_workers": [{"state": "idle", "current_job": None, "current_partition": None}],
        "pipelines": [
            {
                "job_id": "j",
                "partitions": [{"index": 0, "state": "finalizing"}, {"index": 1, "state": "gpu"}],
            }
        ],
    }
    assert invariant_violations(snap) == ["('j', 1) in gpu named by 0 workers"]
    snap["gpu_workers"][0].update(state="proving", current_job="j", current_partition=0)
    assert len(invariant_violations(snap)) == 2


def test_board_invariant_holds_throughout_a_split_proving_run(tmp_path):
    with running(
        tmp_path,
        synth_workers=2,
        workers_per_device=2,
        finalizers_per_device=1,
        opts={"synth_secs": 0.004, "start_secs": 0.004, "finish_secs": 0.008},
    ) as eng:
        key = key_file(tmp_path)
        kid = eng.register_key(key)
        jobs = [
            (eng.submit(kid, ws, kind="porep-c2"), ws)
            for ws in (witnesses(40, seed=100 + j) for j in range(3))
        ]
        counts = {"consistent": 0, "gpu": 0, "finalizing": 0}
        bad = []
        while any(eng.job(j)["state"] in ("queued", "running") for j, _ in jobs):
            snap = eng.snapshot()
            if not snap["consistent"]:
                continue
            counts["consistent"] += 1
            states = [q["state"] for p in snap["pipelines"] for q in p["partitions"]]
            counts["gpu"] += states.count("gpu")
            counts["finalizing"] += states.count("finalizing")
            bad += invariant_violations(snap)
        for j, ws in jobs:
            assert_proofs(eng.result(j, timeout=30), ws, key)
        assert bad == []
        assert counts["consistent"] > 100 and counts["gpu"] > 20 and counts["finalizing"] > 20
        final = eng.snapshot()
        assert final["counters"]["stale_ends_ignored"] == 0
        assert all(w["state"] == "idle" for w in final["gpu_workers"] + final["finalizers"])


def test_stop_with_deadline_cancels_what_is_left(tmp_path):
    eng = Engine(config(tmp_path, opts={"synth_secs": 0.1})).start()
    kid = eng.register_key(key_file(tmp_path))
    job_id = eng.submit(kid, witnesses(40, seed=110))
    wait_for(lambda: eng.job(job_id)["state"] == "running")
    eng.stop(drain_deadline=0.3)
    assert eng.result(job_id, timeout=0)["state"] == "cancelled"  # the deadline cut the drain
    assert_released(eng)
    with pytest.raises(EngineStopped):
        eng.submit(kid, witnesses(1))
    eng.stop()  # a second stop is harmless
    for pids in eng.process_pids().values():
        for pid in pids:
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


def test_drain_lets_running_jobs_finish(tmp_path):
    eng = Engine(config(tmp_path, opts={"synth_secs": 0.02})).start()
    key = key_file(tmp_path)
    ws = witnesses(6, seed=120)
    job_id = eng.submit(eng.register_key(key), ws)
    eng.stop(drain_deadline=30)
    assert_proofs(eng.result(job_id, timeout=0), ws, key)
    assert_released(eng)


def test_start_fails_cleanly_when_the_prover_cannot_load(tmp_path):
    eng = Engine(
        config(tmp_path, prover="cuzk.engine.no_such_prover", devices="cpu:1", synth_workers=1)
    )
    with pytest.raises(EngineError, match="died during start-up"):
        eng.start(timeout=60)
    eng.stop(0)
    assert_released(eng)


# ------------------------------------------------------------------ whole-process behaviour
SCRIPT = textwrap.dedent("""
    import json, logging, sys
    from cuzk.engine import Engine, EngineConfig
    from cuzk.testing import prover_double as double

    def main():
        logging.basicConfig(level=logging.INFO)
        tmp = sys.argv[1]
        eng = Engine(EngineConfig(devices="cpu:1", synth_workers=1,
                                  prover="cuzk.testing.prover_double", memory_budget="64MiB",
                                  prover_options={"synth_secs": 0.05, "start_secs": 0.05})).start()
        eng.install_signal_handlers(drain_deadline=float(sys.argv[2]))
        double.write_key(tmp + "/k.json", n_vars=64, domain_size=128)
        kid = eng.register_key(tmp + "/k.json")
        job = eng.submit(kid, [double.make_witness(64, i) for i in range(int(sys.argv[3]))])
        pids = eng.process_pids()
        print(json.dumps({"board": eng.board_name, "pids": pids["synth"] + pids["device"]}),
              flush=True)
        eng.wait_stopped()
        r = eng.result(job, timeout=0)
        print(json.dumps({"state": r["state"], "done": r["partitions_done"]}), flush=True)

    if __name__ == "__main__":
        main()
""")


def _start_script(tmp_path, deadline, n):
    script = tmp_path / "engine_script.py"
    script.write_text(SCRIPT)
    # the script's folder comes first on its sys.path: name this checkout's cuzk explicitly
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
    }
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), str(deadline), str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    return proc, json.loads(line)


def _gone(pids):
    return all(not psutil.pid_exists(p) or psutil.Process(p).status() == "zombie" for p in pids)


def test_sigterm_drains_and_exits_cleanly(tmp_path):
    proc, info = _start_script(tmp_path, deadline=20, n=6)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {"state": "done", "done": 6}
    assert "signal received: draining" in err
    assert buffers.list_segments(proc.pid) == []
    assert not os.path.exists(f"/dev/shm/{info['board']}")
    assert _gone(info["pids"])


def test_sigterm_past_the_deadline_cancels(tmp_path):
    proc, info = _start_script(tmp_path, deadline=0.2, n=200)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["state"] == "cancelled"
    assert buffers.list_segments(proc.pid) == []
    assert not os.path.exists(f"/dev/shm/{info['board']}")
    assert _gone(info["pids"])


def test_children_exit_when_the_supervisor_is_killed(tmp_path):
    proc, info = _start_script(tmp_path, deadline=20, n=200)
    time.sleep(0.3)
    proc.kill()
    proc.communicate(timeout=30)
    wait_for(lambda: _gone(info["pids"]), timeout=10)
    # what the dead supervisor left behind is cleaned by the next engine to start
    assert buffers.list_segments(proc.pid) or os.path.exists(f"/dev/shm/{info['board']}")
    with running(tmp_path, devices="cpu:1", synth_workers=1):
        assert buffers.list_segments(proc.pid) == []
        assert not os.path.exists(f"/dev/shm/{info['board']}")


def test_compiling_children_are_reported_as_warming_until_done(tmp_path, monkeypatch):
    """A child whose prover compiles kernels (the double "compiles" 1.5 s) is named in
    health()'s and snapshot()'s "warming", and beside the board for `cuzk top`, with the
    reason; once done, none of the three has it. (This test process's own compiles, real
    ones on a cold cache from the tests before, are kept out: here only children count.)"""
    import cuzk.compiling
    from cuzk.compiling import read_warming

    monkeypatch.setattr(cuzk.compiling, "warming_here", lambda: [])

    opts = {"compile_secs": 1.5, "compile_progress_secs": 0.2}
    with running(tmp_path, opts=opts, devices="cpu:1", synth_workers=1) as eng:
        deadline = time.time() + 30  # a child reports once its notice is out
        while len(eng.health()[1].get("warming", {}).get("processes", [])) < 2:
            assert time.time() < deadline, eng.health()
            time.sleep(0.05)
        serving, detail = eng.health()
        warming = detail["warming"]
        assert serving and "compiling the proving kernels" in warming["reason"]
        names = sorted(p["process"] for p in warming["processes"])
        assert names == ["device process 0 (cpu:0)", "synth process 0"], warming
        assert eng.snapshot()["warming"]["processes"] and read_warming(eng.board_name)
        deadline = time.time() + 30
        while eng.health()[1] and time.time() < deadline:
            time.sleep(0.1)
        assert eng.health()[1] == {} and "warming" not in eng.snapshot()
        assert read_warming(eng.board_name) is None


def test_a_keys_tables_built_beside_its_proofs_show_building_then_ready(tmp_path, caplog):
    """A device whose load_key returns a build in progress (the double's tables_secs): the
    job proves at once, the key's "tables" is "building" in keys() and on the board until
    the device says they are in place (TablesReady), then "ready", and the log says so."""
    opts = {"synth_secs": 0.01, "start_secs": 0.005, "finish_secs": 0.005, "tables_secs": 1.5}
    with caplog.at_level("INFO", logger="cuzk.engine"), running(tmp_path, opts=opts) as eng:
        path = key_file(tmp_path, table_bytes=4096)
        key_id = eng.register_key(path)
        ((rec,),) = [eng.keys()]
        assert rec["table_bytes"] == 4096 and rec["tables"] == "none"  # not resident yet
        ws = witnesses(1, seed=7)
        t0 = time.monotonic()
        r = eng.result(eng.submit(key_id, ws), timeout=30)
        assert_proofs(r, ws, path)
        if time.monotonic() - t0 < 1.0:  # (the build takes 1.5 s from the load)
            assert eng.keys()[0]["tables"] == "building"
            assert eng.snapshot()["keys"][0]["tables"] == "building"
        wait_for(lambda: eng.keys()[0]["tables"] == "ready", timeout=30)
        wait_for(lambda: eng.snapshot()["keys"][0]["tables"] == "ready", timeout=30)
    assert "being built beside its proofs" in caplog.text
    assert f"key {key_id}: tables of multiples ready on cpu" in caplog.text
