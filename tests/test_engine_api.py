"""The engine API (cuzk.engine.contract.EngineAPI) called as `cuzk serve` calls it, on both
engines: the local Engine, and the gateway of a one-node Ray farm (ClusterEngine). Their job
calls and bookkeeping are one piece of code (cuzk.engine.jobs); these tests hold each engine
to it: the journal written before an id is handed out and at each outcome, cancel, waiting,
views, counters, the errors of every call, a recovered job's finished partitions kept, and
intake closed once stopped. The prover double's proofs are digests each test recomputes.
"""

from __future__ import annotations

import pytest
from cluster_harness import farm as start_farm
from test_engine import assert_proofs, config, key_file, public_of, witnesses
from waiting import wait_for

from cuzk.engine import EngineError, EngineStopped, UnknownJob, UnknownKey
from cuzk.serve.journal import Journal
from cuzk.testing import prover_double as double

DOUBLE = "cuzk.testing.prover_double"


@pytest.fixture(scope="module")
def proof_log(tmp_path_factory):
    """The double's log of every proof it computes (one digest a line), for all engines."""
    return tmp_path_factory.mktemp("proofs") / "proofs.log"


@pytest.fixture(
    scope="module",
    params=["local", pytest.param("gateway", marks=[pytest.mark.cluster, pytest.mark.slow])],
)
def open_engine(request, proof_log, tmp_path_factory):
    """`open_engine(journal)`: a started engine of this kind, with the double (one device)."""
    opts = {"synth_secs": 0.02, "start_secs": 0.1, "proof_log": str(proof_log)}
    base = tmp_path_factory.mktemp(request.param)
    if request.param == "local":

        def local(journal):
            from cuzk.engine import Engine

            cfg = config(base, devices="cpu:1", synth_workers=1, opts=opts)
            return Engine(cfg, journal=journal).start()

        yield local
        return
    farm = start_farm(1)
    address = next(farm).address

    def gateway(journal):
        from cuzk.cluster.gateway import ClusterEngine

        nodes = dict(
            devices="cpu:1",
            synth_workers=1,
            memory_budget="1GiB",
            prover=DOUBLE,
            prover_options=opts,
        )
        gw = ClusterEngine(
            address=address, journal=journal, nodes=nodes, prover=DOUBLE, memory_budget="1GiB"
        )
        gw.start()
        wait_for(lambda: gw.health()[1]["nodes_alive"] == 1, timeout=120)
        return gw

    yield gateway
    next(farm, None)  # shuts the farm down


def test_jobs_through_the_engine_api(open_engine, tmp_path):
    j = Journal.open(tmp_path / "state")
    kpath = key_file(tmp_path)
    eng = open_engine(j)
    try:
        kid = eng.register_key(kpath)
        assert [k["key_id"] for k in eng.keys()] == [kid]
        ws = witnesses(3, seed=1)
        a = eng.submit(kid, ws, kind="porep-c2", priority="high")
        b = eng.submit(kid, witnesses(2, seed=2), kind="snap")
        assert eng.cancel(b) is True
        assert eng.cancel(b) is False  # already finished
        r = eng.result(a, timeout=120)
        assert_proofs(r, ws, kpath)
        assert r["kind"] == "porep-c2" and r["priority"] == "high" and r["recovered"] is False
        assert eng.job(a)["state"] == "done" and eng.job(a)["partitions_done"] == 3
        assert len(eng.job(a)["partitions"]) == 3
        assert {x["job_id"]: x["state"] for x in eng.jobs()} == {a: "done", b: "cancelled"}
        assert j.result(a)["proofs"] == r["proofs"]
        assert j.result(b)["state"] == "cancelled"
        assert eng.counters["completed"] == 1 and eng.counters[("completed", "porep-c2")] == 1
        assert not eng.counters["failed"]
        assert [e[2] for e in eng.events if e[1] == "submit"] == [a, b]

        with pytest.raises(UnknownJob):
            eng.job("nope")
        with pytest.raises(UnknownJob):
            eng.result("nope", timeout=0)
        with pytest.raises(UnknownJob):
            eng.cancel("nope")
        with pytest.raises(UnknownKey):
            eng.submit("nope", ws)
        with pytest.raises(UnknownKey):
            eng.evict_key("nope")
        with pytest.raises(ValueError, match="no circuit wasm"):
            eng.submit(kid, inputs=[{"a": "1"}])
        with pytest.raises(ValueError, match="already exists"):
            eng.submit(kid, ws, job_id=a)
        with pytest.raises(ValueError, match="priority"):
            eng.submit(kid, ws, priority="urgent")

        c = eng.submit(kid, witnesses(4, seed=3))
        with pytest.raises(EngineError, match="live job"):
            eng.evict_key(kid)
        assert eng.result(c, timeout=0) is None  # still live
        assert eng.cancel(c) is True
        assert eng.evict_key(kid) in (True, False)  # no live job left: allowed
    finally:
        eng.stop(drain_deadline=0)
    assert not eng.running
    with pytest.raises(EngineStopped):
        eng.submit(kid, ws)
    j.close()


def test_a_job_cut_by_a_stop_stays_in_the_journal(open_engine, tmp_path):
    """Stopping cancels what is live, not finished in the journal: it resumes at the next
    start (the error says so)."""
    j = Journal.open(tmp_path / "state")
    kpath = key_file(tmp_path)
    eng = open_engine(j)
    try:
        kid = eng.register_key(kpath)
        c = eng.submit(kid, witnesses(6, seed=4), priority="critical")
    finally:
        eng.stop(drain_deadline=0)
    r = eng.result(c, timeout=0)
    assert r["state"] == "cancelled" and "resumes when" in r["error"], r
    assert [e.job_id for e in j.unfinished()] == [c]
    assert not eng.counters["failed"] and not eng.counters["completed"]
    j.close()


def test_a_recovered_job_proves_only_its_unfinished_partitions(open_engine, tmp_path, proof_log):
    """submit(done=...): partitions finished before a restart keep their recorded proofs and
    are not proved again (the double's proof log); a job with all of them done ends within
    submit. Only a recovered job takes `done`."""
    kpath = key_file(tmp_path)
    key = double.ProvingKey.open(kpath)
    eng = open_engine(None)
    try:
        kid = eng.register_key(kpath)
        ws = witnesses(4, seed=8)

        def record(i):
            return {
                "state": "done",
                "attempts": 1,
                "proof": double.expected_proof(ws[i], key),
                "public": public_of(ws[i]),
            }

        with pytest.raises(ValueError, match="not one of a recovered job's"):
            eng.submit(kid, ws, done={0: record(0)})
        logged = len(proof_log.read_text().split()) if proof_log.exists() else 0
        a = eng.submit(kid, ws, job_id="00f1", recovered=True, done={1: record(1), 3: record(3)})
        r = eng.result(a, timeout=120)
        assert_proofs(r, ws, kpath)
        assert r["recovered"] is True and eng.counters["recovered"] == 1
        proved = {double.expected_proof(ws[i], key)["w_sha256"]: i for i in range(4)}
        new = proof_log.read_text().split()[logged:]
        assert sorted(proved[d] for d in new) == [0, 2]
        b = eng.submit(
            kid, ws, job_id="00f2", recovered=True, done={i: record(i) for i in range(4)}
        )
        assert_proofs(eng.result(b, timeout=0), ws, kpath)  # finished within submit
        assert len(proof_log.read_text().split()) == logged + 2
    finally:
        eng.stop(drain_deadline=0)


def test_finished_partitions_are_journalled_while_their_job_runs(open_engine, tmp_path):
    """Each partition that finishes while others of its job are left is written to the
    journal (so a restart does not prove it again), by a farm's gateway as by one machine;
    the last needs no record: the job's outcome holds every proof."""
    recorded = []

    class Spy(Journal):
        def partition_done(self, job_id, partition, record):
            recorded.append((job_id, partition, record["state"], record["proof"]))
            return super().partition_done(job_id, partition, record)

    j = Spy.open(tmp_path / "state")
    kpath = key_file(tmp_path)
    eng = open_engine(j)
    try:
        kid = eng.register_key(kpath)
        ws = witnesses(3, seed=11)
        a = eng.submit(kid, ws)
        r = eng.result(a, timeout=120)
        assert_proofs(r, ws, kpath)
        assert len(recorded) == 2 and {x[0] for x in recorded} == {a}
        assert all(state == "done" and proof == r["proofs"][i] for _, i, state, proof in recorded)
    finally:
        eng.stop(drain_deadline=0)
