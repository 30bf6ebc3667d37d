"""The job journal (cuzk.serve.journal) and crash recovery of `cuzk serve`.

Unit tests of the journal itself (accept/finish round trip, spool files, the state-directory
lock, refusal of corrupt, foreign and newer journals, retention pruning), then real daemons:
SIGKILL of `cuzk serve` with finished, running and queued jobs and a restart on the same state
directory (every job completes exactly once under its original id and priority, with proofs
checked by the project's verifier against snarkjs's public signals; finished results still
served; recovered jobs counted on the board and in /metrics), and start-up refusals that
name the problem in one line with exit status 78.
"""

from __future__ import annotations

import base64
import errno
import json
import logging
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time

import pytest
from conftest import fixture_circuit
from serve_harness import ServeProcess, cli_env, daemon_args, request, run_cli, warm_kernels
from waiting import wait_for

from cuzk.groth16.verifier import verify
from cuzk.serve.config import Config, ConfigError
from cuzk.serve.journal import (
    APPLICATION_ID,
    DB_NAME,
    SCHEMA_VERSION,
    DiskFull,
    Journal,
    JournalError,
    default_state_dir,
)

TINY, TOYHASH = fixture_circuit("tiny"), fixture_circuit("toyhash")


def result_of(job_id: str, state: str = "done", n: int = 1) -> dict:
    return {
        "job_id": job_id,
        "state": state,
        "proofs": [{"pi_a": ["1", "2", "1"]}] * n,
        "public": [["7"]] * n,
    }


# ------------------------------------------------------------------------------ the journal
def test_accept_spools_uploads_and_finish_keeps_the_result(tmp_path):
    wpath = tmp_path / "w.wtns"
    wpath.write_bytes(b"path witness")
    j = Journal.open(tmp_path / "state", keep_results=3600)
    try:
        inputs = j.accept(
            "00aa", "k1", "/keys/a.zkey", "porep-c2", "high", 100.5, [b"uploaded bytes", str(wpath)]
        )
        spool = tmp_path / "state" / "spool" / "00aa.0.wtns"
        assert inputs == [str(spool), str(wpath)]
        assert spool.read_bytes() == b"uploaded bytes"
        (e,) = j.unfinished()
        assert (e.job_id, e.key_id, e.key_path, e.kind, e.priority, e.submitted_at) == (
            "00aa",
            "k1",
            "/keys/a.zkey",
            "porep-c2",
            "high",
            100.5,
        )
        assert e.inputs == [{"spool": "00aa.0.wtns"}, {"path": str(wpath)}]
        assert j.result("00aa") is None  # not finished yet
        j.finish("00aa", "done", time.time(), result_of("00aa", n=2))
        assert not spool.exists() and wpath.exists()  # the client's own file is left alone
        assert j.unfinished() == [] and j.result("00aa") == result_of("00aa", n=2)
    finally:
        j.close()
    # durable: a new handle (a new process after a crash would do the same) sees it all
    j = Journal.open(tmp_path / "state")
    try:
        assert j.result("00aa")["proofs"] == result_of("00aa", n=2)["proofs"]
        db = sqlite3.connect(j.path)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        db.close()
    finally:
        j.close()


def test_a_failed_accept_leaves_nothing_behind(tmp_path):
    j = Journal.open(tmp_path, keep_results=60)
    try:
        j.accept("0001", "k", "/k.zkey", "default", "normal", 1.0, ["/w.wtns"])
        # the same id again (the engine never does this): the row cannot be written, and the
        # spool file written for it is removed
        with pytest.raises(JournalError, match="cannot record the job in the journal"):
            j.accept("0001", "k", "/k.zkey", "default", "normal", 2.0, [b"abc"])
        assert os.listdir(tmp_path / "spool") == []
        assert [e.submitted_at for e in j.unfinished()] == [1.0]
        # discard: accepted, then refused by the engine (stopping) before the id went out
        j.accept("0002", "k", "/k.zkey", "default", "normal", 3.0, [b"xyz"])
        j.discard("0002")
        assert os.listdir(tmp_path / "spool") == []
        assert [e.job_id for e in j.unfinished()] == ["0001"]
    finally:
        j.close()


def test_a_job_that_cannot_be_recorded_is_answered_503(tmp_path):
    """The API's side: engine.submit raising JournalError (disk full, I/O error, a closed
    journal) is a 503 with the reason, and the journal keeps nothing of the job."""
    from cuzk.serve.api import Api
    from cuzk.serve.http import HttpError, Request

    j = Journal.open(tmp_path)
    j.close()
    with pytest.raises(JournalError, match="the journal is closed"):
        j.accept("0004", "k", "/k.zkey", "default", "normal", 1.0, [b"abc"])
    assert os.listdir(tmp_path / "spool") == []

    class Engine:  # just enough of one: a key of TINY's nVars, a submit that cannot record
        def keys(self):
            return [{"key_id": "00112233aabbccdd", "path": "/k.zkey", "n_vars": 4}]

        def submit(self, key_id, witnesses, kind, priority):
            return j.accept("0005", key_id, "/k.zkey", kind, priority, 1.0, witnesses)

    class Cfg:
        key_roots, max_wait = [], 1.0

    api = Api(Engine(), Cfg(), journal=j)
    body = json.dumps({"key": "00112233aabbccdd", "witnesses": [{"data": b64(TINY.witness(0))}]})
    req = Request("POST", "/v1/jobs", {}, {"Content-Type": "application/json"}, body.encode())
    with pytest.raises(HttpError) as e:
        api.submit(req)
    assert e.value.status == 503
    assert e.value.message == "not taking jobs: the journal is closed"
    assert e.value.headers == {"Retry-After": "5"}
    assert os.listdir(tmp_path / "spool") == []


def test_orphan_spool_files_are_swept_at_open(tmp_path):
    j = Journal.open(tmp_path)
    j.accept("0003", "k", "/k.zkey", "default", "normal", 1.0, [b"keep me"])
    j.close()
    (tmp_path / "spool" / "dead.0.wtns").write_bytes(b"never recorded")  # crash before commit
    j = Journal.open(tmp_path)
    try:
        assert os.listdir(tmp_path / "spool") == ["0003.0.wtns"]
    finally:
        j.close()


def test_one_daemon_per_state_directory(tmp_path):
    j = Journal.open(tmp_path)
    try:
        with pytest.raises(
            JournalError,
            match=rf"in use by another cuzk serve \(pid "
            rf"{os.getpid()}\)",
        ):
            Journal.open(tmp_path)
    finally:
        j.close()
    Journal.open(tmp_path).close()  # released with its holder


def _modes(base) -> dict[str, int]:
    """{path under base: permission bits} of everything under base."""
    out = {}
    for root, dirs, files in os.walk(base):
        for n in dirs + files:
            p = os.path.join(root, n)
            out[os.path.relpath(p, base)] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o277])
def test_state_directory_private_whatever_the_umask(tmp_path, umask, caplog):
    """The state directory and the parents it creates 0700, every file in it 0600 (the
    journal, its -wal and -shm, the lock, spooled witnesses), even under umask 0; a directory
    the daemon made itself is not warned about."""
    old = os.umask(umask)
    try:
        j = Journal.open(tmp_path / "a" / "b" / "state")
        try:
            j.accept("0001", "k", "/k.zkey", "default", "normal", 1.0, [b"private witness"])
            modes = _modes(tmp_path / "a")
        finally:
            j.close()
    finally:
        os.umask(old)
    dirs = {"b", "b/state", "b/state/spool"}
    files = {"lock", DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", "spool/0001.0.wtns"}
    assert modes == {**{d: 0o700 for d in dirs}, **{f"b/state/{f}": 0o600 for f in files}}
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    assert "open to group or others" not in caplog.text


def test_an_open_state_directory_is_warned_about_and_its_files_made_private(tmp_path, caplog):
    """A state directory left 0755 (by hand, or by an older cuzk, which also left the journal
    0644): a warning at start, the directory left as the operator set it, the files 0600."""
    state = tmp_path / "state"
    Journal.open(state).close()
    state.chmod(0o755)
    (state / DB_NAME).chmod(0o644)
    (state / "spool" / "old.0.wtns").write_bytes(b"x")  # swept: no job needs it
    with caplog.at_level("WARNING", logger="cuzk.serve"):
        Journal.open(state).close()
    assert f"state directory {state} is open to group or others (mode 0755)" in caplog.text
    assert "chmod 700 it" in caplog.text
    assert stat.S_IMODE(state.stat().st_mode) == 0o755
    assert stat.S_IMODE((state / DB_NAME).stat().st_mode) == 0o600


def test_retention_prunes_only_old_finished_jobs(tmp_path):
    j = Journal.open(tmp_path, keep_results=100)
    try:
        now = 10_000.0
        for job_id, finished_at in (("old", now - 101), ("new", now - 99), ("live", None)):
            j.accept(job_id, "k", "/k.zkey", "default", "normal", 1.0, [b"w"])
            if finished_at is not None:
                j.finish(job_id, "done", finished_at, result_of(job_id))
        assert j.prune(now) == 1
        assert j.result("old") is None and j.result("new") == result_of("new")
        assert [e.job_id for e in j.unfinished()] == ["live"]  # never pruned
        assert j.prune(now + 1000) == 1 and j.result("new") is None
        assert [e.job_id for e in j.unfinished()] == ["live"]
        assert j.counts() == {"accepted": 1}
    finally:
        j.close()


def test_finished_partitions_are_kept_until_the_job_ends(tmp_path):
    """partition_done() rows survive a reopen (a crash), and go with the job's outcome."""
    j = Journal.open(tmp_path)
    try:
        j.accept("00bb", "k", "/k.zkey", "default", "normal", 1.0, [b"w0", b"w1", b"w2"])
        assert j.done_partitions("00bb") == {}
        rec = {"state": "done", "attempts": 1, "proof": {"pi_a": ["1"]}, "public": ["7"]}
        assert j.partition_done("00bb", 2, rec) and j.partition_done("00bb", 0, rec)
    finally:
        j.close()
    j = Journal.open(tmp_path)
    try:
        assert j.done_partitions("00bb") == {0: rec, 2: rec}
        assert j.finish("00bb", "done", 5.0, result_of("00bb", n=3)) is True
        assert j.done_partitions("00bb") == {}
        j.accept("00cc", "k", "/k.zkey", "default", "normal", 2.0, [b"w0", b"w1"])
        j.partition_done("00cc", 1, rec)
        j.discard("00cc")
        assert j.done_partitions("00cc") == {}
    finally:
        j.close()


def test_a_version_1_journal_is_upgraded_in_place(tmp_path):
    j = Journal.open(tmp_path)
    j.accept("00dd", "k", "/k.zkey", "default", "normal", 1.0, [b"w"])
    j.close()
    db = sqlite3.connect(tmp_path / DB_NAME)  # as version 1 wrote it: no partitions table
    db.executescript("DROP TABLE partitions; DROP INDEX jobs_by_submission; PRAGMA user_version=1;")
    db.close()
    j = Journal.open(tmp_path)
    try:
        assert [e.job_id for e in j.unfinished()] == ["00dd"]  # its jobs kept
        assert j.partition_done("00dd", 0, {"state": "done"})
        db = sqlite3.connect(j.path)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        db.close()
    finally:
        j.close()


def _fill(j: Journal, full: bool = True) -> None:
    """Fault injection: the journal's file may not grow (SQLite's max_page_count): every
    write that needs a new page fails with "database or disk is full", as on a full disk."""
    n = j._db.execute("PRAGMA page_count").fetchone()[0] if full else 1 << 30
    j._db.execute(f"PRAGMA max_page_count={n}")


def test_an_outcome_that_cannot_be_recorded_is_kept_and_retried(tmp_path, caplog):
    """A full disk at finish(): the outcome is held (served by result() and jobs_page() as
    recorded), retried with backoff, committed once the disk has room, never dropped; one
    still pending when the journal closes is logged by id and its job resumes at the next
    start."""
    caplog.set_level(logging.INFO, logger="cuzk.serve")
    j = Journal.open(tmp_path, keep_results=3600)
    try:
        for i in range(3):
            j.accept(f"00e{i}", "k", "/k.zkey", "default", "normal", 1.0 + i, [b"w" * 100])
        _fill(j)
        big = {**result_of("00e0", n=400), "submitted_at": 1.0}  # needs pages of its own
        assert j.finish("00e0", "done", 10.0, big) is False
        assert j.pending == 1 and j.result("00e0") == big
        assert j.counts() == {"accepted": 3} and len(os.listdir(j.spool)) == 3  # spool kept
        (row,) = j.jobs_page(None, 1)
        assert (row["job_id"], row["state"]) == ("00e0", "done")
        assert [r["job_id"] for r in j.jobs_page(None, 9, "done")] == ["00e0"]
        assert [r["job_id"] for r in j.jobs_page(None, 9, "queued")] == ["00e1", "00e2"]
        assert j.retry_pending() == 1  # not due yet: backing off
        assert j.retry_pending(force=True) == 1  # still full
        _fill(j, full=False)
        assert j.retry_pending(force=True) == 0
        assert j.pending == 0 and j.result("00e0") == big
        assert j.counts() == {"accepted": 2, "done": 1} and len(os.listdir(j.spool)) == 2
        assert "now recorded in the journal" in caplog.text
        _fill(j)
        assert j.finish("00e1", "failed", 11.0, {**big, "job_id": "00e1"}) is False
        caplog.clear()
    finally:
        j.close()
    assert "are proved again at the next start: 00e1" in caplog.text
    j = Journal.open(tmp_path)
    try:
        assert [e.job_id for e in j.unfinished()] == ["00e1", "00e2"]
    finally:
        j.close()


def test_job_listing_pages_the_engine_and_the_journal(tmp_path):
    """GET /v1/jobs: the engine's jobs and the journalled ones that left it, one ordered
    list (submitted_at, then id) paged by limit and cursor, a job never listed twice."""
    from cuzk.serve.api import Api
    from cuzk.serve.http import HttpError, Request

    j = Journal.open(tmp_path)
    times = {"a1": 1.0, "a2": 2.0, "a3": 2.0, "a4": 4.0, "a5": 5.0, "a6": 6.0, "a7": 7.0}
    for job_id, t in times.items():
        j.accept(job_id, "k", "/k.zkey", "default", "normal", t, [b"w"])
    for job_id, state in (("a1", "done"), ("a2", "failed"), ("a3", "done"), ("a5", "done")):
        j.finish(job_id, state, 9.0, {**result_of(job_id, state), "submitted_at": times[job_id]})

    def held(job_id, state):
        return {"job_id": job_id, "state": state, "submitted_at": times[job_id], "kind": "x"}

    class Engine:
        def jobs(self):  # a5 finished and still held; a4 (queued) left the engine
            return [held("a7", "queued"), held("a6", "running"), held("a5", "done")]

    class Cfg:
        key_roots, max_wait = [], 1.0

    api = Api(Engine(), Cfg(), journal=j)

    def page(**q):
        return api.list_jobs(Request("GET", "/v1/jobs", {k: [str(v)] for k, v in q.items()}, {}))

    try:
        whole = page()
        assert whole["next_cursor"] is None
        assert [x["job_id"] for x in whole["jobs"]] == ["a1", "a2", "a3", "a4", "a5", "a6", "a7"]
        assert whole["jobs"][4]["kind"] == "x"  # the engine's view of a job it holds
        assert whole["jobs"][3]["state"] == "queued" and whole["jobs"][1]["state"] == "failed"
        for limit in (1, 2, 3):
            seen, cursor = [], None
            while True:
                p = page(limit=limit, **({"cursor": cursor} if cursor else {}))
                assert len(p["jobs"]) <= limit
                seen += [x["job_id"] for x in p["jobs"]]
                cursor = p["next_cursor"]
                if cursor is None:
                    break
            assert seen == [x["job_id"] for x in whole["jobs"]]
        assert [x["job_id"] for x in page(state="done")["jobs"]] == ["a1", "a3", "a5"]
        p = page(state="done", limit=2)
        assert [x["job_id"] for x in page(state="done", cursor=p["next_cursor"])["jobs"]] == ["a5"]
        assert [x["job_id"] for x in page(state="running")["jobs"]] == ["a6"]
        assert [x["job_id"] for x in page(state="queued")["jobs"]] == ["a4", "a7"]
        for bad in ({"limit": 0}, {"limit": "ten"}, {"limit": 10001}, {"cursor": "x"}):
            with pytest.raises(HttpError) as e:
                page(**bad)
            assert e.value.status == 400 and "\n" not in e.value.message
        deep = base64.urlsafe_b64encode(b"[" * 100000).decode()
        with pytest.raises(HttpError, match="not a cursor this server gave"):
            page(cursor=deep)
    finally:
        j.close()


def _write_db(path, version=SCHEMA_VERSION, app=APPLICATION_ID):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE jobs (job_id TEXT)")
    db.execute(f"PRAGMA user_version={version}")
    db.execute(f"PRAGMA application_id={app}")
    db.commit()
    db.close()


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("garbage", "is corrupt or not a database"),
        ("newer", f"has schema version {SCHEMA_VERSION + 1}, newer than this cuzk's"),
        ("foreign", "is not a cuzk journal"),
        ("truncated", "is corrupt"),
    ],
)
def test_a_bad_journal_is_refused_and_left_alone(tmp_path, damage, reason):
    path = tmp_path / DB_NAME
    if damage == "garbage":
        path.write_bytes(os.urandom(8192))
    elif damage == "newer":
        _write_db(path, version=SCHEMA_VERSION + 1)
    elif damage == "foreign":
        _write_db(path, app=0)
    else:  # a real journal with jobs, cut in the middle of its pages
        j = Journal.open(tmp_path)
        for i in range(200):
            j.accept(f"{i:04x}", "k", "/k.zkey", "default", "normal", i, ["/w" * 50])
        j.close()
        data = path.read_bytes()
        assert len(data) > 16384
        path.write_bytes(data[: len(data) // 2] + os.urandom(4096))
    before = path.read_bytes()
    with pytest.raises(JournalError) as e:
        Journal.open(tmp_path)
    msg = str(e.value)
    assert reason in msg and "\n" not in msg and str(path) in msg, msg
    assert path.read_bytes() == before  # never dropped or rewritten
    Journal.open(tmp_path / "fresh").close()  # the lock was released with the failure
    with pytest.raises(JournalError):  # still refused the second time
        Journal.open(tmp_path)


def test_top_shows_recovered_jobs_when_there_are_any():
    from cuzk.testing.sample import busy_snapshot
    from cuzk.top import render

    snap = busy_snapshot()
    assert "recovered" not in render(snap, 120, 40).text()
    snap["counters"]["jobs_recovered"] = 19
    assert "recovered 19" in render(snap, 120, 40).text()


# ------------------------------------------------------------------------------ the engine's hooks
def test_engine_records_each_job_before_its_id_and_each_outcome(tmp_path):
    """With the prover double: submit() returns an id only once the job (and its uploaded
    witnesses) is in the journal; outcomes are recorded with the proofs; a client's cancel is
    final, while jobs cut by a stop stay unfinished and are proved after a re-queue under
    their ids (from the spooled witnesses), counted as recovered."""
    from test_engine import assert_proofs, config, key_file, witnesses

    from cuzk.engine import Engine

    j = Journal.open(tmp_path / "state")
    kpath = key_file(tmp_path)
    cfg = config(tmp_path, devices="cpu:1", synth_workers=1, opts={"synth_secs": 0.05})
    eng = Engine(cfg, journal=j).start()
    try:
        kid = eng.register_key(kpath)
        ws_a, ws_b, ws_c = witnesses(2, seed=1), witnesses(3, seed=2), witnesses(4, seed=3)
        a = eng.submit(kid, ws_a, kind="porep-c2", priority="high")
        (e,) = j.unfinished()  # recorded before the id came back
        assert (e.job_id, e.kind, e.priority) == (a, "porep-c2", "high")
        assert [open(j.spool_path(x["spool"]), "rb").read() for x in e.inputs] == ws_a
        b = eng.submit(kid, ws_b)
        assert eng.cancel(b)
        r = eng.result(a, timeout=60)
        assert_proofs(r, ws_a, kpath)
        assert j.result(a)["proofs"] == r["proofs"] and j.result(a)["recovered"] is False
        assert j.result(b)["state"] == "cancelled"
        c = eng.submit(kid, ws_c, priority="critical")
    finally:
        eng.stop(drain_deadline=0)
    r = eng.result(c, timeout=0)
    assert r["state"] == "cancelled" and "resumes when the daemon starts again" in r["error"]
    (e,) = j.unfinished()
    assert e.job_id == c and len(os.listdir(j.spool)) == 4
    eng = Engine(cfg, journal=j).start()
    try:
        kid2 = eng.register_key(e.key_path)
        assert kid2 == e.key_id
        eng.submit(
            kid2,
            [j.spool_path(x["spool"]) for x in e.inputs],
            kind=e.kind,
            priority=e.priority,
            job_id=e.job_id,
            submitted_at=e.submitted_at,
            recovered=True,
        )
        assert j.counts() == {"cancelled": 1, "done": 1, "accepted": 1}  # not recorded twice
        r = eng.result(c, timeout=60)
        assert_proofs(r, ws_c, kpath)
        assert r["recovered"] is True and r["priority"] == "critical"
        assert r["submitted_at"] == e.submitted_at
        assert eng.snapshot()["counters"]["jobs_recovered"] == 1
        assert j.unfinished() == [] and j.result(c)["proofs"] == r["proofs"]
        assert os.listdir(j.spool) == []
        with pytest.raises(ValueError, match="already exists"):
            eng.submit(kid2, ws_c, job_id=c)
    finally:
        eng.stop(drain_deadline=0)
        j.close()


def test_a_finished_job_the_journal_cannot_take_stays_served_until_it_does(tmp_path):
    """Disk full while jobs finish, and they leave the engine's history (job_history=1): the
    API still serves each one's result and lists it, from the journal's pending outcomes;
    once the disk has room the daemon's retry records them all. Nothing is lost."""
    from test_engine import assert_proofs, config, key_file, witnesses

    from cuzk.engine import Engine, UnknownJob
    from cuzk.serve.api import Api
    from cuzk.serve.http import Request

    j = Journal.open(tmp_path / "state")
    kpath = key_file(tmp_path)
    cfg = config(tmp_path, devices="cpu:1", synth_workers=1, job_history=1)
    eng = Engine(cfg, journal=j).start()

    class Cfg:
        key_roots, max_wait = [], 1.0

    api = Api(eng, Cfg(), journal=j)
    try:
        kid = eng.register_key(kpath)
        _fill(j)  # accept() still fits in the pages there are; the outcomes do not
        sets = {eng.submit(kid, ws): ws for ws in (witnesses(8, seed=s) for s in (5, 6, 7))}
        wait_for(lambda: j.pending == 3, 60, lambda: f"{j.pending} outcome(s) pending")
        gone = []
        for job_id in sets:
            try:
                eng.job(job_id)
            except UnknownJob:
                gone.append(job_id)
        assert len(gone) >= 2  # left the engine's history of one
        for job_id, ws in sets.items():
            req = Request("GET", f"/v1/jobs/{job_id}/result", {}, {}, params={"job_id": job_id})
            code, r = api.get_result(req)
            assert code == 200 and r["finished"]
            assert_proofs(r, ws, kpath)
        listed = api.list_jobs(Request("GET", "/v1/jobs", {}, {}))["jobs"]
        assert [x["job_id"] for x in listed] == list(sets)
        assert {x["state"] for x in listed} == {"done"}
        assert j.counts() == {"accepted": 3}
        _fill(j, full=False)
        wait_for(lambda: j.retry_pending(force=True) == 0, 10)
        assert j.counts() == {"done": 3} and os.listdir(j.spool) == []
        for job_id, ws in sets.items():
            assert_proofs(j.result(job_id), ws, kpath)
    finally:
        eng.stop(drain_deadline=0)
        j.close()


# ------------------------------------------------------------------------------ configuration
def test_state_dir_and_keep_results_settings(tmp_path):
    assert default_state_dir({"XDG_STATE_HOME": "/x/state", "HOME": "/h"}) == "/x/state/cuzk"
    assert default_state_dir({"HOME": "/h"}) == "/h/.local/state/cuzk"
    assert default_state_dir({"XDG_STATE_HOME": "rel", "HOME": "/h"}) == "/h/.local/state/cuzk"
    c = Config(env={"HOME": "/h"}).load()
    assert c.state_dir == "/h/.local/state/cuzk" and c.keep_results == 86400.0
    assert c.sources["state_dir"] == "default"
    c = Config(env={"CUZK_STATE_DIR": str(tmp_path), "CUZK_KEEP_RESULTS": "12h"}).load()
    assert c.state_dir == str(tmp_path) and c.keep_results == 12 * 3600
    assert c.sources["state_dir"] == "env CUZK_STATE_DIR"
    (tmp_path / "c.toml").write_text('state_dir = "/srv/cuzk/state"\nkeep_results = "30m"\n')
    c = Config(config_file=str(tmp_path / "c.toml"), env={}).load()
    assert c.state_dir == "/srv/cuzk/state" and c.keep_results == 1800
    for text, secs in (("90", 90), ("2d", 172800), ("1.5h", 5400), ("45s", 45), (0, 0)):
        assert Config(env={}, keep_results=text).load().keep_results == secs
    for bad in ("soon", "-1h", "h", "1w"):
        with pytest.raises(ConfigError, match="keep_results .*duration"):
            Config(env={}, keep_results=bad).load()
    p = run_cli("config", "show", "--state-dir", tmp_path / "s", "--keep-results", "2h")
    assert p.returncode == 0, p.stderr
    assert re.search(rf'^state_dir = "{tmp_path}/s" +# flag --state-dir$', p.stdout, re.M)
    assert re.search(r"^keep_results = 7200.0 +# flag --keep-results$", p.stdout, re.M)


# ------------------------------------------------------------------------------ real daemons
def b64(path) -> str:
    return base64.b64encode(open(path, "rb").read()).decode()


def serve_args(root, state, *extra):
    return daemon_args(root, "--state-dir", state, "--self-verify", *extra)


def check_done(circuit, r, sets):
    vk = json.loads(circuit.vk.read_text())
    assert r["state"] == "done" and r["finished"], r
    for proof, public, k in zip(r["proofs"], r["public"], sets, strict=True):
        assert public == json.loads(circuit.public(k).read_text())
        assert verify(vk, public, proof)


@pytest.mark.slow
def test_sigkill_then_restart_completes_every_job_once(tmp_path):
    """Finished, running and queued jobs at a SIGKILL of the daemon; the restart on the same
    state directory re-queues the unfinished ones under their ids and priorities (uploads from
    the spool, path witnesses from the key root) and serves the finished one's result; then a
    third start, with a short retention, re-proves nothing and prunes the old results."""
    warm_kernels(TINY, TOYHASH)
    root, state = tmp_path / "keys", tmp_path / "state"
    for c in (TINY, TOYHASH):
        (root / c.name).mkdir(parents=True)
        for f in ("circuit.zkey", "witness_0.wtns", "witness_1.wtns"):
            shutil.copy(c.dir / f, root / c.name / f)
    tiny_key, toy_key = str(root / "tiny" / "circuit.zkey"), str(root / "toyhash" / "circuit.zkey")
    s1 = ServeProcess(tmp_path / "serve1.log", *serve_args(root, state)).start()
    s2 = s3 = None
    try:
        url = s1.url
        # finished before the crash
        code, _, r = request(
            url,
            "POST",
            "/v1/prove",
            {
                "key": tiny_key,
                "witnesses": [{"data": b64(TINY.witness(0))}, {"data": b64(TINY.witness(1))}],
                "kind": "winning-post",
                "timeout": 300,
            },
        )
        assert code == 200 and r["state"] == "done", r
        finished = r["job_id"]
        # a second daemon on the same state directory is refused, and changes nothing
        p = run_cli(*["serve", *serve_args(root, state)], timeout=120)
        assert p.returncode == 78, p.stderr
        assert re.search(rf"in use by another cuzk serve \(pid {s1.pid}\)", p.stderr)
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
        # a long job that will be running, then queued ones of each priority and input kind
        jobs = {}  # job_id -> (circuit, witness sets, priority)

        def submit(circuit, key, sets, priority, upload=True):
            ws = [
                {"data": b64(circuit.witness(k))}
                if upload
                else {"path": str(root / circuit.name / f"witness_{k}.wtns")}
                for k in sets
            ]
            code, _, job = request(
                url, "POST", "/v1/jobs", {"key": key, "witnesses": ws, "priority": priority}
            )
            assert code == 201, job
            jobs[job["job_id"]] = (circuit, sets, priority)
            return job["job_id"]

        running = submit(TOYHASH, toy_key, (0, 1) * 4, "normal")
        submit(TOYHASH, toy_key, (1, 0), "normal", upload=False)
        for i in range(24):
            submit(
                TINY, tiny_key, (i % 2,), ("critical", "high", "normal")[i % 3], upload=i % 4 != 3
            )
        t_end = time.time() + 600
        while time.time() < t_end:  # until the long job is on the device, part proved
            job = request(url, "GET", f"/v1/jobs/{running}")[2]
            assert job["state"] != "done", "the long job finished before the kill"
            if any(p["state"] in ("gpu", "finalizing", "done") for p in job["partitions"]):
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"job {running} never reached a device:\n{s1.log()}")
        listing = {j["job_id"]: j for j in request(url, "GET", "/v1/jobs")[2]["jobs"]}
        # (critical and high jobs may have gone first) the toyhash job proves, others wait
        assert sum(listing[j]["state"] != "done" for j in jobs) >= 8, listing
        os.kill(s1.pid, signal.SIGKILL)
        assert s1.proc.wait(30) == -signal.SIGKILL
        done_before = set(re.findall(r"job (\w+) done", s1.log()))

        t_start = time.time()
        s2 = ServeProcess(tmp_path / "serve2.log", *serve_args(root, state)).start()
        t_listening = time.time()
        url = s2.url
        t_resumed = None
        # the finished job's result is served from the journal, proofs and all
        code, _, r = request(url, "GET", f"/v1/jobs/{finished}/result")
        assert code == 200, r
        check_done(TINY, r, (0, 1))
        assert request(url, "GET", f"/v1/jobs/{finished}")[2]["state"] == "done"
        code, _, c = request(url, "POST", f"/v1/jobs/{finished}/cancel")
        assert code == 200 and c == {"job_id": finished, "cancelled": False, "state": "done"}
        t_end = time.time() + 600
        results = {}
        while time.time() < t_end and len(results) < len(jobs):
            snap = request(url, "GET", "/status")[2]
            if t_resumed is None and any(w["state"] == "proving" for w in snap["gpu_workers"]):
                t_resumed = time.time()
            for job_id in set(jobs) - set(results):
                code, _, r = request(url, "GET", f"/v1/jobs/{job_id}/result")
                assert code in (200, 202), r
                if code == 200:
                    results[job_id] = r
            time.sleep(0.05)
        assert len(results) == len(jobs), s2.log()
        for job_id, (circuit, sets, priority) in jobs.items():
            r = results[job_id]
            check_done(circuit, r, sets)
            assert r["priority"] == priority and r["job_id"] == job_id
            assert r["submitted_at"] < t_start
        # jobs may still have finished between the listing and the kill: the journal decides
        log2 = s2.log()
        live = re.findall(r"job (\w+) recovered", log2)
        assert running in live and len(live) == len(set(live)), log2
        recovered_line = re.search(
            r"(\d+) unfinished job\(s\) re-queued under their ids in "
            r"(\d+) ms",
            log2,
        )
        assert recovered_line and int(recovered_line.group(1)) == len(live), log2
        for job_id in jobs:
            assert results[job_id]["recovered"] is (job_id in live)
        # exactly once: each job finished in one of the two runs, never in both, never twice
        done_after = re.findall(r"job (\w+) done", log2)
        assert len(done_after) == len(set(done_after))
        assert set(done_after) == set(live) and not set(done_after) & done_before
        # the others finished in the first run (by the journal: a SIGKILL may fall between
        # the outcome's commit and its log line) and are not touched by the second
        for job_id in [*(set(jobs) - set(live)), finished]:
            assert f"job {job_id}" not in log2
        assert finished in done_before
        # recovered jobs on the board and in /metrics
        snap = request(url, "GET", "/status")[2]
        assert snap["counters"]["jobs_recovered"] == len(live)
        assert {p["job_id"] for p in snap["pipelines"]} >= set(live)
        text = request(url, "GET", "/metrics")[2].decode()
        assert f"cuzk_jobs_recovered_total {float(len(live))}" in text
        p = run_cli("status", "--server", url, "--width", "120", "--height", "40")
        assert p.returncode == 0 and f"recovered {len(live)}" in p.stdout, p.stdout
        # the killed daemon's board and buffers were swept; spool files went with their jobs
        assert not [
            n for n in os.listdir("/dev/shm") if n.startswith(f"cuzkbuf.{s1.pid}.") or n == s1.board
        ]
        assert os.listdir(state / "spool") == []
        assert s2.stop() == 0, s2.log()
        assert s2.leftover_segments() == []
        figures = {
            "jobs_recovered": len(live),
            "journal_recovery_ms": int(recovered_line.group(2)),
            "start_to_listening_s": round(t_listening - t_start, 2),
            "start_to_resumed_proving_s": round((t_resumed or time.time()) - t_start, 2),
            "start_to_all_done_s": round(time.time() - t_start, 2),
        }
        print("recovery figures:", json.dumps(figures))
        (tmp_path / "figures.json").write_text(json.dumps(figures))

        # nothing left to resume; results older than the retention are pruned at start
        time.sleep(1.2)
        s3 = ServeProcess(
            tmp_path / "serve3.log", *serve_args(root, state, "--keep-results", "1")
        ).start()
        assert "no unfinished job" in s3.log()
        assert re.search(rf"{len(jobs) + 1} finished job\(s\) older than 1 s pruned", s3.log())
        code, _, out = request(s3.url, "GET", f"/v1/jobs/{finished}/result")
        assert code == 404 and "unknown job" in out["error"]
        assert s3.stop() == 0, s3.log()
        for s in (s1, s2, s3):
            assert "Traceback" not in s.log()
    finally:
        for s in (s1, s2, s3):
            if s is not None:
                s.kill()


def test_partitions_proved_before_a_sigkill_are_not_proved_again(tmp_path):
    """With the prover double (which logs one line per proof it makes): SIGKILL of the daemon
    while an 8-partition job is half proved; the restart proves only the partitions the
    journal did not hold, the job's result has every proof (each one its own witness's), and
    GET /v1/jobs lists it after the finished job of the first run (served from the journal)."""
    from cuzk.client import Client
    from cuzk.testing import prover_double as double

    root, state, plog = tmp_path / "keys", tmp_path / "state", tmp_path / "proofs.log"
    root.mkdir()
    kpath = root / "key.json"
    double.write_key(kpath, n_vars=64, domain_size=128)
    key = double.ProvingKey.open(kpath)
    ws = [double.make_wtns(64, 100 + i, root / f"w{i}.wtns") for i in range(8)]
    digest = [double.expected_proof(w, key)["w_sha256"] for w in ws]

    def daemon(name, finish_secs):
        opts = {"finish_secs": finish_secs, "proof_log": str(plog), "fault_dir": str(tmp_path)}
        return ServeProcess(
            tmp_path / f"{name}.log",
            *serve_args(root, state)[:-1],  # no --self-verify: the double has no verifier
            "--prover",
            "cuzk.testing.prover_double",
            "--prover-options",
            json.dumps(opts),
            "--workers-per-device",
            "1",
            "--finalizers-per-device",
            "1",
        ).start()

    def job(url, paths):
        code, _, r = request(url, "POST", "/v1/jobs", {"key": str(kpath), "witnesses": paths})
        assert code == 201, r
        return r["job_id"]

    s1 = daemon("serve1", 0.4)
    s2 = None
    try:
        first = job(s1.url, [str(root / "w7.wtns")])
        assert request(s1.url, "GET", f"/v1/jobs/{first}/result?wait=60")[0] == 200
        big = job(s1.url, [str(root / f"w{i}.wtns") for i in range(8)])
        wait_for(
            lambda: request(s1.url, "GET", f"/v1/jobs/{big}")[2]["partitions_done"] >= 3,
            60,
            "three partitions proved",
        )
        os.kill(s1.pid, signal.SIGKILL)
        assert s1.proc.wait(30) == -signal.SIGKILL
        db = sqlite3.connect(state / DB_NAME)
        kept = {i for (i,) in db.execute("SELECT partition FROM partitions WHERE job_id=?", (big,))}
        db.close()
        assert 3 <= len(kept) < 8, kept
        before = plog.read_text().split()
        assert {digest[i] for i in kept} <= set(before)

        s2 = daemon("serve2", 0.0)
        code, _, r = request(s2.url, "GET", f"/v1/jobs/{big}/result?wait=60")
        assert code == 200 and r["state"] == "done" and r["recovered"], r
        for i, w in enumerate(ws):
            assert r["proofs"][i] == double.expected_proof(w, key), f"partition {i}"
            assert r["partitions"][i]["state"] == "done"
            assert r["partitions"][i]["restored"] is (i in kept)
        after = plog.read_text().split()[len(before) :]
        assert sorted(after) == sorted(digest[i] for i in range(8) if i not in kept)
        # /metrics counts what this process proved; the journal's partitions apart (issue 38)
        text = request(s2.url, "GET", "/metrics")[2].decode()
        kind = r["kind"]
        assert f'cuzk_proofs_completed_total{{kind="{kind}"}} {8.0 - len(kept)}' in text, text
        assert f'cuzk_proofs_restored_total{{kind="{kind}"}} {float(len(kept))}' in text
        assert f"8 partition(s), {len(kept)} finished before the restart" in s2.log()
        listed = request(s2.url, "GET", "/v1/jobs?limit=1")[2]
        assert [x["job_id"] for x in listed["jobs"]] == [first]  # from the journal
        assert listed["jobs"][0]["state"] == "done" and listed["next_cursor"]
        rest = request(s2.url, "GET", f"/v1/jobs?cursor={listed['next_cursor']}")[2]
        assert [x["job_id"] for x in rest["jobs"]] == [big] and rest["next_cursor"] is None
        assert [x["job_id"] for x in Client(s2.url).jobs(page=1)] == [first, big]
        assert [x["job_id"] for x in Client(s2.url).jobs(state="done")] == [first, big]
        assert s2.stop() == 0, s2.log()
        assert "Traceback" not in s1.log() + s2.log()
    finally:
        for s in (s1, s2):
            if s is not None:
                s.kill()


@pytest.mark.parametrize("damage", ["garbage", "newer"])
def test_serve_refuses_a_bad_journal_in_one_line(tmp_path, damage):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)  # private: no warning line besides the refusal
    path = state / DB_NAME
    if damage == "garbage":
        path.write_bytes(b"\x00garbage, not a journal\xff" * 500)
        reason = "is corrupt or not a database"
    else:
        _write_db(path, version=SCHEMA_VERSION + 7)
        reason = f"has schema version {SCHEMA_VERSION + 7}, newer than this cuzk's"
    before = path.read_bytes()
    p = run_cli(
        "serve", "--listen", "127.0.0.1:0", "--devices", "cpu:1", "--state-dir", state, timeout=120
    )
    assert p.returncode == 78, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0] and str(path) in lines[0], p.stderr
    assert "move it aside" in lines[0]
    assert path.read_bytes() == before


def test_serve_makes_its_state_directory_private(tmp_path):
    """`cuzk serve --state-dir` under umask 0: the directory and its created parents 0700, the
    journal's files 0600 while it runs; a second daemon on it, once it is opened to others,
    is refused (exit 78) after the warning."""
    state = tmp_path / "a" / "b" / "state"
    root = tmp_path / "keys"
    root.mkdir()
    old = os.umask(0)
    try:
        s = ServeProcess(tmp_path / "serve.log", *serve_args(root, state)).start()
    finally:
        os.umask(old)
    try:
        modes = _modes(tmp_path / "a")
        assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
        for d in ("b", "b/state", "b/state/spool"):
            assert modes.pop(d) == 0o700, d
        assert modes == {
            f"b/state/{f}": 0o600 for f in ("lock", DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm")
        }
        assert "open to group or others" not in s.log()
        state.chmod(0o755)
        p = run_cli("serve", *serve_args(root, state), timeout=120)
        assert p.returncode == 78, p.stderr
        warning, refusal = p.stderr.strip().splitlines()
        assert f"state directory {state} is open to group or others (mode 0755)" in warning
        assert "is in use by another cuzk serve" in refusal
    finally:
        try:
            assert s.stop() == 0, s.log()
        finally:
            s.kill()


# ------------------------------------------------------------------------------ a full state disk
# Fault injection below SQLite's Python API: a connection whose statements containing `when`
# raise `error` (SQLite reports a -shm or -wal file it cannot grow as "disk I/O error"), and
# the free space the journal reads with statvfs. The same class is used inside `cuzk serve`
# processes (FAULTY_SERVE), set up from the environment.
FAULTS = """
import os, sqlite3

class Failing:
    def __init__(self, db, when, error):
        object.__setattr__(self, "_f", (db, when, error))

    def execute(self, sql, *args):
        db, when, error = self._f
        if when in sql:
            e = sqlite3.OperationalError(error)
            e.sqlite_errorcode = {"disk I/O error": sqlite3.SQLITE_IOERR}.get(
                error, sqlite3.SQLITE_FULL
            )
            raise e
        return db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._f[0], name)

    def __setattr__(self, name, value):
        setattr(self._f[0], name, value)

    def __enter__(self):
        return self._f[0].__enter__()

    def __exit__(self, *exc):
        return self._f[0].__exit__(*exc)


def inject(when, error, free=None):
    from cuzk.serve import journal

    real = journal.sqlite3.connect
    journal.sqlite3.connect = lambda *a, **kw: Failing(real(*a, **kw), when, error)
    if free is not None:
        journal.free_space = lambda path: free
"""
FAULTY_SERVE = (
    FAULTS
    + """
import sys
free = os.environ.get("FAULT_FREE")
inject(os.environ["FAULT_SQL"], os.environ["FAULT_ERROR"], None if free is None else int(free))
from cuzk.cli import main
sys.argv[0] = "cuzk"
main()
"""
)
_faults: dict = {}
exec(FAULTS, _faults)


def _journal_with_a_finished_job(state) -> bytes:
    j = Journal.open(state)
    j.accept("00f1", "k", "/k.zkey", "default", "normal", 1.0, [b"w"])
    assert j.finish("00f1", "done", 2.0, result_of("00f1"))
    j.close()
    return (state / DB_NAME).read_bytes()


@pytest.mark.parametrize(
    "when, error, free, full",
    [
        ("PRAGMA application_id", "disk I/O error", 0, True),  # the sweep's case
        ("PRAGMA quick_check", "disk I/O error", 4096, True),
        ("PRAGMA journal_mode", "database or disk is full", None, True),  # SQLITE_FULL
        ("PRAGMA application_id", "disk I/O error", 10 << 30, False),  # room: not the disk's
    ],
)
def test_a_full_disk_at_open_is_named_and_the_journal_kept(
    tmp_path, monkeypatch, when, error, free, full
):
    """Issue 38: a full state disk at open was called "corrupt or not a database ... move it
    aside". Now: DiskFull naming the disk, in one line, nothing about corruption, the journal
    left as it was and opened as usual once there is room."""
    state = tmp_path / "state"
    before = _journal_with_a_finished_job(state)
    with monkeypatch.context() as m:
        m.setattr(sqlite3, "connect", sqlite3.connect)  # restored after the block
        _faults["inject"](when, error, free)
        if free is None:
            m.setattr("cuzk.serve.journal.free_space", lambda path: 10 << 30)
        with pytest.raises(JournalError) as e:
            Journal.open(state)
    msg = str(e.value)
    assert "\n" not in msg and "corrupt" not in msg and "move it aside" not in msg, msg
    assert isinstance(e.value, DiskFull) is full, msg
    if full:
        assert f"the disk of the state directory {state} is full" in msg, msg
        assert f"({error})" in msg and "free some space and start again" in msg, msg
    else:
        assert f"cannot read it ({error}): check the disk" in msg, msg
    assert (state / DB_NAME).read_bytes() == before
    j = Journal.open(state)  # room again (and the lock was released)
    try:
        assert j.result("00f1")["state"] == "done"
    finally:
        j.close()


def test_a_full_disk_writing_the_lock_is_named(tmp_path, monkeypatch):
    def pwrite(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", pwrite)
    with pytest.raises(DiskFull, match=r"is full \(.*\): cannot write its pid into lock \(No sp"):
        Journal.open(tmp_path / "state")
    monkeypatch.undo()
    Journal.open(tmp_path / "state").close()


def test_recording_a_recovery_on_a_full_disk_is_one_line(tmp_path):
    """mark_recovered raised sqlite3.OperationalError (a traceback in `cuzk serve`)."""
    j = Journal.open(tmp_path)
    try:
        j.accept("00f2", "k", "/k.zkey", "default", "normal", 1.0, [b"w"])
        real = j._db
        j._db = _faults["Failing"](real, "SET recovered", "database or disk is full")
        with pytest.raises(DiskFull, match="cannot record that job 00f2 was recovered"):
            j.mark_recovered("00f2")
        j._db = _faults["Failing"](real, "SET recovered", "disk I/O error")
        with pytest.raises(JournalError, match="cannot record that job 00f2 was recovered"):
            j.mark_recovered("00f2")
        j._db = real
        j.mark_recovered("00f2")
        assert j.unfinished()[0].recovered == 1
    finally:
        j.close()


def test_a_real_sqlite_full_error_is_the_disks(tmp_path):
    """SQLITE_FULL as SQLite raises it (max_page_count reached), not one made here."""
    from cuzk.serve.journal import disk_full

    j = Journal.open(tmp_path)
    try:
        _fill(j)
        with pytest.raises(sqlite3.OperationalError) as e:
            with j._db:
                j._db.execute("CREATE TABLE filler (x BLOB)")
                j._db.execute("INSERT INTO filler VALUES (zeroblob(100000))")
        assert disk_full(e.value, str(tmp_path)) is not None
        assert disk_full(sqlite3.OperationalError("no such table: x"), str(tmp_path)) is None
    finally:
        _fill(j, full=False)
        j.close()


def _faulty_serve(args, **fault) -> subprocess.CompletedProcess:
    env = cli_env(**{f"FAULT_{k.upper()}": str(v) for k, v in fault.items()})
    return subprocess.run(
        [sys.executable, "-c", FAULTY_SERVE, "serve", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _refused_as_full(p, state) -> None:
    assert p.returncode == 75, (p.returncode, p.stderr)
    errors = [line for line in p.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, p.stderr
    assert f"cannot start: the disk of the state directory {state} is full" in errors[0]
    for bad in ("Traceback", "corrupt", "move it aside"):
        assert bad not in p.stderr, p.stderr


@pytest.mark.slow
def test_serve_on_a_full_disk_exits_75_and_starts_once_there_is_room(tmp_path):
    """Issue 38: with only finished jobs it exited 78 ("corrupt ... move it aside"), which
    the documented unit does not restart; with an unfinished job, 1 and a traceback. Now both
    exit 75 with one line naming the full disk (docs/operations.md's unit restarts on it),
    and the next start, with room, resumes the job."""
    from cuzk.testing import prover_double as double

    root, state = tmp_path / "keys", tmp_path / "state"
    root.mkdir()
    kpath = root / "key.json"
    double.write_key(kpath, n_vars=64, domain_size=128)
    double.make_wtns(64, 7, root / "w.wtns")
    args = [
        *serve_args(root, state)[:-1],  # no --self-verify: the double has no verifier
        "--prover",
        "cuzk.testing.prover_double",
        "--prover-options",
        json.dumps({"finish_secs": 60}),
    ]
    _journal_with_a_finished_job(state)
    p = _faulty_serve(args, sql="PRAGMA application_id", error="disk I/O error", free=0)
    _refused_as_full(p, state)
    assert "cannot open the job journal" in p.stderr

    s = ServeProcess(tmp_path / "serve1.log", *args).start()  # room: it starts
    try:
        code, _, job = request(
            s.url, "POST", "/v1/jobs", {"key": str(kpath), "witnesses": [str(root / "w.wtns")]}
        )
        assert code == 201, job
        os.kill(s.pid, signal.SIGKILL)  # unfinished: proving takes a minute
        s.proc.wait(30)
    finally:
        s.kill()
    p = _faulty_serve(args, sql="SET recovered", error="database or disk is full")
    _refused_as_full(p, state)
    assert f"cannot record that job {job['job_id']} was recovered" in p.stderr

    args[-1] = json.dumps({"finish_secs": 0})
    s = ServeProcess(tmp_path / "serve2.log", *args).start()
    try:
        code, _, r = request(s.url, "GET", f"/v1/jobs/{job['job_id']}/result?wait=60")
        assert code == 200 and r["state"] == "done" and r["recovered"], r
        assert s.stop() == 0, s.log()
    finally:
        s.kill()
