"""The status board: layout, the seed story replayed, stale ends, jobs, JSON shape, lifecycle.

The seed story (docs/cuzk-reference.md): with split proving a finalizer for an old partition
marked a GPU worker idle after it had taken the next partition. Here every claim bumps the
slot's generation and an end carries the generation it started with, so that end changes
nothing. test_seed_interleaving replays the story step by step on a real segment.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import struct
import time

import pytest
from conftest import BOARD_PREFIX as PREFIX
from conftest import board_name

from cuzk.board import Board, BoardError, Layout, Token, cleanup_stale, list_boards
from cuzk.board.layout import (
    CTL_DIRTY_OFFSET,
    HEADER,
    HEADER_SIZE,
    JOB_NPART_AT,
    JOB_SIZE,
    JOB_STATE_AT,
    KEY_ROW,
    LAYOUT_VERSION,
    MAGIC,
    PART_SIZE,
    SEQ,
    SLOT_SIZE,
)
from cuzk.board.segment import open_segment, unlink_segment
from cuzk.testing import drill


@pytest.fixture
def board(board_factory):
    return board_factory(
        instance="unit",
        device_slots=4,
        finalizer_slots=4,
        synth_slots=2,
        job_rows=4,
        max_partitions=8,
        key_rows=3,
        by_use_rows=3,
        kind_rows=3,
    )


def raw_slot(b: Board, kind: str, slot: int) -> bytes:
    off = b.layout.slot_offset(kind, slot)
    return bytes(b._buf[off : off + SLOT_SIZE])


def counters(b: Board) -> dict:
    return b.snapshot().counters


# --- layout -----------------------------------------------------------------------------------


def test_layout_is_a_pure_function_of_the_counts_and_8_byte_aligned():
    a = Layout(3, 5, 2, 7, 11, 4, 2, 3)
    b = Layout(3, 5, 2, 7, 11, 4, 2, 3)
    assert a.offsets == b.offsets and a.total_size == b.total_size
    # sections follow each other without gaps, each record 8-byte aligned
    o = a.offsets
    assert o["device"] == HEADER_SIZE
    assert o["finalizer"] - o["device"] == 3 * SLOT_SIZE
    assert o["partitions"] - o["jobs"] == 7 * JOB_SIZE
    assert o["memory"] - o["partitions"] == 7 * 11 * PART_SIZE
    for size in (SLOT_SIZE, JOB_SIZE, PART_SIZE, HEADER_SIZE):
        assert size % 8 == 0
    assert all(v % 8 == 0 for v in o.values())
    assert a.part_offset(6, 10) + PART_SIZE == o["memory"]
    # the header fits its reserved space and leaves the control word alone
    assert HEADER.size <= CTL_DIRTY_OFFSET
    with pytest.raises(ValueError):
        Layout(1, 1, 1, 0, 1)


def test_record_formats_match_the_documented_sizes():
    # docs/status-board.md documents these byte counts; a change must bump LAYOUT_VERSION
    assert (LAYOUT_VERSION, SLOT_SIZE, JOB_SIZE, PART_SIZE) == (5, 144, 128, 56)
    assert KEY_ROW.size == 152  # docs/status-board.md: keys payload
    assert HEADER.size == 208
    assert (JOB_STATE_AT, JOB_NPART_AT) == (89, 92)


def test_header_round_trips_and_attach_checks_it(board):
    other = Board.attach(board.name)
    try:
        assert other.layout == board.layout
        assert (other.instance, other.pid) == ("unit", os.getpid())
        assert abs(other.started_at - time.time()) < 60
        assert not other.is_creator
        with pytest.raises(PermissionError):
            other.unlink()
    finally:
        other.close()
    # a wrong magic or layout version is refused, not misread
    saved = bytes(board._buf[:16])
    try:
        board._buf[0:8] = b"NOTBOARD"
        with pytest.raises(BoardError, match="not a cuzk board"):
            Board.attach(board.name)
        board._buf[0:8] = MAGIC
        struct.pack_into("<I", board._buf, 8, LAYOUT_VERSION + 1)
        with pytest.raises(BoardError, match="layout version"):
            Board.attach(board.name)
    finally:
        board._buf[:16] = saved


def test_every_record_verifies_after_create(board):
    s = board.snapshot(verify="all")
    assert s.consistent and s.stable and s.torn == ()
    # and a flipped payload byte is caught by the check field
    off = board.layout.slot_offset("device", 2) + 20
    board._buf[off] ^= 0x40
    s = board.snapshot(verify="all")
    assert s.torn == (board.layout.slot_offset("device", 2),) and not s.consistent
    board._buf[off] ^= 0x40


# --- the seed story ---------------------------------------------------------------------------


def test_seed_interleaving(board):
    """start A -> A handed to a finalizer -> start B -> A's finalizer ends -> worker shows B."""
    board.devices.register(0, ordinal=0, device="cuda:0")
    board.finalizers.register(0, ordinal=0)
    board.control.job_add("sector-1", "porep-c2", "normal", 2)
    board.control.job_set_state("sector-1", "running")
    for p in (0, 1):
        board.control.partition_set("sector-1", p, "synth_done", synth_ms=10.0)

    # 1. the worker starts partition A (0)
    tok_a = board.claim_device(0, "sector-1", 0)
    s = board.snapshot()
    assert s.consistent and s.invariant_violations() == []
    w = s.devices[0]
    assert (w.state, w.job_id, w.partition, w.generation) == (
        "proving",
        "sector-1",
        0,
        tok_a.generation,
    )
    assert s.partition_state("sector-1", 0) == "gpu"

    # 2. prove_start is done: A goes to a finalizer thread (one write commits the handoff)
    tok_f = board.handoff(tok_a, 0)
    s = board.snapshot()
    assert s.devices[0].state == "idle"
    assert s.finalizers[0].state == "finalizing" and s.finalizers[0].partition == 0
    assert s.partition_state("sector-1", 0) == "finalizing"
    assert s.invariant_violations() == []

    # 3. the worker loops to partition B (1) without waiting
    tok_b = board.claim_device(0, "sector-1", 1)
    assert tok_b.generation > tok_a.generation
    s = board.snapshot()
    assert (s.devices[0].state, s.devices[0].partition) == ("proving", 1)
    assert s.partition_state("sector-1", 1) == "gpu"

    # 4. A's finalizer finishes and -- as Rust cuzk did -- also ends the worker's claim for A
    before = raw_slot(board, "device", 0)
    stale_before = counters(board)["stale_ends_ignored"]
    assert board.end(tok_f, state="done", gpu_ms=5.0, finalize_ms=2.0) is True
    assert board.end(tok_a) is False  # stale: the slot moved on to B
    assert raw_slot(board, "device", 0) == before  # not one byte of the worker's slot changed
    assert counters(board)["stale_ends_ignored"] == stale_before + 1

    # 5. the worker still shows B, proving; A is done; the invariant holds
    s = board.snapshot()
    assert s.consistent and s.invariant_violations() == []
    w = s.devices[0]
    assert (w.state, w.job_id, w.partition, w.generation) == (
        "proving",
        "sector-1",
        1,
        tok_b.generation,
    )
    assert s.partition_state("sector-1", 0) == "done"
    assert s.partition_state("sector-1", 1) == "gpu"
    assert s.finalizers[0].state == "idle"
    p0 = s.job("sector-1").partitions[0]
    assert (p0.synth_ms, p0.gpu_ms, p0.finalize_ms) == (10.0, 5.0, 2.0)


def test_the_seed_bug_is_what_a_generation_free_board_would_show(board):
    """The same steps with an end that ignores generations (what Rust cuzk did): the worker
    reads idle while its partition is in gpu -- the invariant check must catch exactly that."""
    board.devices.register(0)
    board.finalizers.register(0)
    board.control.job_add("j", "porep-c2", "normal", 2)
    tok_a = board.claim_device(0, "j", 0)
    tok_f = board.handoff(tok_a, 0)
    board.claim_device(0, "j", 1)
    board.end(tok_f, state="done")
    # a generation-blind end: forge a token with whatever generation the slot has now
    current = board.devices.read(0)[0][1]
    assert board.end(Token(0, current, "device")) is True  # the forged token "works"
    s = board.snapshot()
    assert s.devices[0].state == "idle"
    # the partition it was proving silently fell back to its stored state: the board can't
    # be fooled into showing gpu with nobody proving it...
    assert s.partition_state("j", 1) == "pending" and s.invariant_violations() == []
    # ...and two workers on one partition are reported (the check can fail)
    board.devices.register(1)
    board.claim_device(0, "j", 1)
    board.claim_device(1, "j", 1)
    assert any("named by 2 device" in v for v in board.snapshot().invariant_violations())


# --- tokens and slots ---------------------------------------------------------------------------


def test_stale_ends_change_nothing_and_are_counted(board):
    t = board.devices
    t.register(1)
    board.control.job_add("j", "snap-update", "high", 4)
    tok1 = t.claim(1, "j", 0)
    tok2 = t.claim(1, "j", 1)  # claimed again without an end: tok1 is stale now
    snap = raw_slot(board, "device", 1)
    assert t.end(tok1) is False
    assert raw_slot(board, "device", 1) == snap
    assert t.end(tok2) is True
    assert t.end(tok2) is False  # a second end of the same claim is stale too
    with pytest.raises(ValueError):
        board.synth.end(tok2)  # a device token cannot end a synthesis slot
    assert counters(board)["stale_ends_ignored"] == 2
    # a stale handoff writes nothing either
    board.finalizers.register(0)
    fsnap = raw_slot(board, "finalizer", 0)
    assert board.handoff(tok2, 0) is None
    assert raw_slot(board, "finalizer", 0) == fsnap
    assert counters(board)["stale_ends_ignored"] == 3


def test_generations_only_grow_across_register_claim_reclaim(board):
    t = board.synth
    gens = [t.register(0).generation]
    for _ in range(3):
        gens.append(t.claim(0, "j", 0).generation)
    gens.append(t.reclaim(0).generation)
    gens.append(t.register(0).generation)
    assert gens == sorted(set(gens))
    s = board.snapshot()
    assert s.synth[0].restarts == 1 and s.synth[0].state == "idle"


def test_reclaim_marks_dead_and_kills_every_token(board):
    board.devices.register(2, pid=12345)
    board.control.job_add("j", "porep-c2", "normal", 1)
    tok = board.claim_device(2, "j", 0)
    time.sleep(0.01)
    board.devices.reclaim(2)
    s = board.snapshot()
    w = s.devices[2]
    assert (w.state, w.job_id, w.restarts, w.pid) == ("dead", None, 1, 12345)
    assert w.busy_secs > 0
    assert s.partition_state("j", 0) == "pending"
    assert board.end(tok) is False
    d = s.to_dict()
    assert d["gpu_workers"][0]["state"] == "dead"


def test_busy_seconds_and_heartbeat(board):
    board.devices.register(0)
    board.control.job_add("j", "porep-c2", "normal", 2)
    tok = board.claim_device(0, "j", 0)
    time.sleep(0.05)
    board.end(tok)
    s = board.snapshot()
    assert 0.04 < s.devices[0].busy_secs < 5
    before = s.devices[0].heartbeat
    time.sleep(0.01)
    assert board.devices.heartbeat(0) is True
    s = board.snapshot()
    assert s.devices[0].heartbeat > before
    # a heartbeat carrying a token writes only while that claim is current
    tok2 = board.claim_device(0, "j", 1)
    assert board.devices.heartbeat(0, tok2) is True
    raw = raw_slot(board, "device", 0)
    assert board.devices.heartbeat(0, tok) is False
    assert raw_slot(board, "device", 0) == raw
    assert counters(board)["stale_ends_ignored"] == 1


def test_slot_and_id_bounds(board):
    with pytest.raises(IndexError):
        board.devices.claim(4, "j", 0)
    with pytest.raises(ValueError, match="longer than"):
        board.devices.claim(0, "x" * 49, 0)
    with pytest.raises(ValueError, match="longer than"):
        board.control.job_add("y" * 49, "porep-c2", "normal", 1)


# --- jobs and partitions ------------------------------------------------------------------------


def test_partition_transient_states_come_only_from_slots(board):
    board.control.job_add("j", "porep-c2", "normal", 3)
    for state in ("gpu", "finalizing", "synthesizing"):
        with pytest.raises(ValueError, match="derived from the slot"):
            board.control.partition_set("j", 0, state)
    with pytest.raises(ValueError, match="unknown partition state"):
        board.control.partition_set("j", 0, "proving")
    assert board.control.partition_set("j", 5, "done") is False  # no such partition
    assert board.control.partition_set("nope", 0, "done") is False  # no such job
    board.synth.register(0)
    tok = board.synth.claim(0, "j", 2)
    assert board.snapshot().partition_state("j", 2) == "synthesizing"
    board.end(tok, state="synth_done", synth_ms=7.5, attempts=2)
    s = board.snapshot()
    p = s.job("j").partitions[2]
    assert (p.state, p.stored_state, p.synth_ms, p.attempts) == ("synth_done", "synth_done", 7.5, 2)
    assert s.job("j").partitions[0].gpu_ms is None


def test_job_states_and_times(board):
    t0 = time.time()
    board.control.job_add("j", "winning-post", "critical", 1, submitted_at=t0 - 3)
    s = board.snapshot()
    j = s.job("j")
    assert (j.state, j.priority, j.kind, j.submitted_at) == (
        "queued",
        "critical",
        "winning-post",
        t0 - 3,
    )
    assert j.started_at is None
    board.control.job_set_state("j", "running")
    board.control.job_set_state("j", "failed")
    j = board.snapshot().job("j")
    assert j.state == "failed" and j.started_at >= t0 and j.finished_at >= j.started_at
    with pytest.raises(ValueError):
        board.control.job_set_state("j", "free")
    with pytest.raises(ValueError):
        board.control.job_add("j", "winning-post", "critical", 1)  # already there
    with pytest.raises(ValueError):
        board.control.job_add("k", "winning-post", "urgent", 1)
    with pytest.raises(ValueError):
        board.control.job_add("k", "porep-c2", "normal", 9)  # the board holds 8 per job
    assert board.control.job_set_state("absent", "done") is False


def test_full_table_evicts_the_oldest_finished_job_not_in_use(board):
    board.devices.register(0)
    for i in range(4):
        assert board.control.job_add(f"j{i}", "porep-c2", "normal", 2, submitted_at=100.0 + i)
    assert board.control.job_add("j4", "porep-c2", "normal", 2) is False  # nothing finished
    assert counters(board)["jobs_not_shown"] == 1
    board.control.job_set_state("j2", "done")
    board.control.job_set_state("j1", "done")
    board.control.job_set_state("j3", "cancelled")
    tok = board.claim_device(0, "j2", 1)  # a late worker still names finished j2
    assert board.control.job_add("j5", "porep-c2", "normal", 2) is True
    names = {j.job_id for j in board.snapshot().jobs}
    assert names == {"j0", "j2", "j3", "j5"}  # j2 finished first but is named: j1 went
    board.end(tok)
    assert board.control.job_add("j6", "porep-c2", "normal", 2) is True
    names = {j.job_id for j in board.snapshot().jobs}
    assert names == {"j0", "j3", "j5", "j6"}  # j2 (finished before j3) went
    # the reused row starts fresh: no partition state leaks from the evicted job
    assert [p.state for p in board.snapshot().job("j6").partitions] == ["pending"] * 2


# --- memory, keys, counters, JSON -------------------------------------------------------------

TEAM_KEYS = {
    "instance",
    "board",
    "layout_version",
    "supervisor_pid",
    "started_at",
    "now",
    "uptime_secs",
    "consistent",
    "memory",
    "synthesis",
    "gpu_workers",
    "finalizers",
    "pipelines",
    "keys",
    "allocations",
    "counters",
}


def test_to_dict_has_the_team_json_shape(board):
    board.devices.register(0, ordinal=1, device="cuda:1")
    board.finalizers.register(0, ordinal=1)
    board.synth.register(0, ordinal=0)
    board.synth.register(1, ordinal=1)
    board.control.job_add("j", "porep-c2", "normal", 2)
    board.control.job_set_state("j", "running")
    board.claim_device(0, "j", 1)
    board.synth.claim(1, "j", 0)
    board.control.set_memory(1000, 600, {"abc": 400, "srs": 150, "pce": 40, "misc": 10})
    board.control.set_keys(
        [
            {
                "key_id": "porep-32g",
                "bytes": 123,
                "devices": ["cuda:1"],
                "last_used_secs_ago": 2.0,
                "evictable": False,
                "curve": "bls12381",
                "table_bytes": 45,
                "tables": "building",
                "load_ms": 1234.5,
                "protocol": "plonk",
            }
        ]
    )
    board.control.count(completed="porep-c2", n=3)
    board.control.count(failed="winning-post")
    board.control.count(retries=1)
    board.control.count(restarts=1)
    board.control.count(queue_depth=7)
    d = json.loads(board.snapshot().to_json())
    assert set(d) >= TEAM_KEYS
    assert d["board"] == board.name and d["layout_version"] == LAYOUT_VERSION
    assert d["consistent"] is True and d["uptime_secs"] >= 0
    assert d["memory"] == {
        "total_bytes": 1000,
        "reserved_bytes": 600,
        "used_bytes": 600,
        "available_bytes": 400,
        "by_use": {"abc": 400, "srs": 150, "other": 50},
    }
    syn = d["synthesis"]
    assert syn["max_concurrent"] == 2 and syn["active"] == 1
    assert set(syn["workers"][1]) >= {
        "worker_id",
        "pid",
        "state",
        "generation",
        "job_id",
        "partition",
        "started_secs_ago",
        "heartbeat_age_secs",
        "restarts",
    }
    assert syn["workers"][1]["state"] == "synthesizing"
    (w,) = d["gpu_workers"]
    assert set(w) >= {
        "worker_id",
        "gpu_ordinal",
        "device",
        "pid",
        "state",
        "generation",
        "current_job",
        "current_partition",
        "started_secs_ago",
        "busy_secs",
        "heartbeat_age_secs",
        "restarts",
    }
    assert (w["device"], w["gpu_ordinal"], w["state"], w["current_partition"]) == (
        "cuda:1",
        1,
        "proving",
        1,
    )
    (f,) = d["finalizers"]
    assert set(f) >= {
        "finalizer_id",
        "gpu_ordinal",
        "pid",
        "state",
        "generation",
        "current_job",
        "current_partition",
        "started_secs_ago",
    }
    (p,) = d["pipelines"]
    assert set(p) >= {
        "job_id",
        "proof_kind",
        "priority",
        "state",
        "submitted_at",
        "started_secs_ago",
        "total_partitions",
        "partitions_done",
        "partitions_failed",
        "partitions",
    }
    assert [q["state"] for q in p["partitions"]] == ["synthesizing", "gpu"]
    assert set(p["partitions"][0]) >= {
        "index",
        "state",
        "synth_ms",
        "gpu_ms",
        "finalize_ms",
        "attempts",
    }
    (k,) = d["keys"]
    assert k["key_id"] == "porep-32g" and k["devices"] == ["cuda:1"] and not k["evictable"]
    assert k["curve"] == "bls12381" and (k["table_bytes"], k["load_ms"]) == (45, 1234.5)
    assert k["protocol"] == "plonk" and k["tables"] == "building"
    assert 2.0 <= k["last_used_secs_ago"] < 60
    assert d["allocations"] == {"srs": d["keys"], "pce": []}
    c = d["counters"]
    assert (
        c["total_completed"],
        c["total_failed"],
        c["retries"],
        c["restarts"],
        c["queue_depth"],
    ) == (3, 1, 1, 1, 7)
    assert c["completed_by_kind"] == {"porep-c2": 3}
    assert c["failed_by_kind"] == {"winning-post": 1}


def test_counters_overflow_kinds_into_other_and_keys_keep_most_recent(board):
    for kind in ("a", "b", "a", "c", "d", "a", "c"):
        board.control.count(completed=kind)
    board.control.count(failed="b")
    c = counters(board)
    assert c["completed_by_kind"] == {"a": 3, "b": 1, "other": 3}
    assert c["failed_by_kind"] == {"b": 1}
    assert (c["total_completed"], c["total_failed"]) == (7, 1)
    now = time.time()
    board.control.set_keys(
        [{"key_id": f"k{i}", "bytes": i, "last_used": now - i} for i in range(5)]
    )
    assert [k["key_id"] for k in board.snapshot().keys] == ["k0", "k1", "k2"]


def test_floats_absent_are_null_in_json(board):
    board.control.job_add("j", "porep-c2", "normal", 1)
    d = board.snapshot().to_dict()
    q = d["pipelines"][0]["partitions"][0]
    assert q["synth_ms"] is None and q["gpu_ms"] is None
    assert "NaN" not in json.dumps(d)


def test_snapshot_is_immutable_and_a_cut(board):
    board.devices.register(0)
    board.control.job_add("j", "porep-c2", "normal", 1)
    s = board.snapshot()
    board.claim_device(0, "j", 0)
    assert s.devices[0].state == "idle"  # taken before the claim: unaffected by it
    with pytest.raises(AttributeError):
        s.consistent = False
    assert not math.isnan(s.now)


# --- reading while a writer sits inside a record ------------------------------------------------


def test_reader_never_hangs_on_a_record_left_odd_and_reclaim_repairs_it(board):
    board.devices.register(3)
    tok = board.claim_device(3, "x", 0)
    off = board.layout.slot_offset("device", 3)
    seq = SEQ.unpack_from(board._buf, off)[0]
    SEQ.pack_into(board._buf, off, seq + 1)  # a writer "died" inside
    board._buf[off + 8 : off + 16] = b"\xff" * 8
    s = board.snapshot(tries=20)
    assert s.attempts == 20  # gave up after its tries: never waits on the dead writer
    assert not s.consistent and s.devices[3].state == "empty"
    assert board.devices.read(3, tries=5) == (None, "busy")
    new = board.devices.reclaim(3)
    assert new.generation > tok.generation
    s = board.snapshot()
    assert s.consistent and s.devices[3].state == "dead"
    assert board.end(tok) is False


# --- lifecycle across processes -------------------------------------------------------------------


def _spawn():
    return mp.get_context("spawn")


def test_attach_in_another_process_does_not_unlink_at_its_exit(board):
    ctx = _spawn()
    parent, child = ctx.Pipe()
    p = ctx.Process(target=drill.actor_main, args=(child,))
    p.start()
    try:
        parent.send(("attach", board.name))
        assert parent.recv()[0] == "ok"
        parent.send(("devices.register", 0))
        assert parent.recv()[0] == "ok"
        parent.send(("exit",))
        parent.recv()
    finally:
        p.join(30)
    assert p.exitcode == 0
    time.sleep(0.2)  # the resource tracker would unlink asynchronously
    assert os.path.exists(f"/dev/shm/{board.name}")
    assert board.snapshot().devices[0].pid == p.pid


def test_list_boards_and_cleanup_of_a_board_whose_creator_died(board):
    ctx = _spawn()
    parent, child = ctx.Pipe()
    name = board_name()
    p = ctx.Process(target=drill.create_and_wait, args=(child, name, "doomed"))
    p.start()
    try:
        assert parent.recv() == name
        live = {i.name: i for i in list_boards(PREFIX)}
        assert set(live) == {board.name, name}
        assert live[name].pid == p.pid and live[name].instance == "doomed"
        assert live[name].alive and live[board.name].alive
        assert cleanup_stale(PREFIX) == []  # both creators alive: nothing removed
        p.kill()
        p.join(30)
        assert [i.name for i in list_boards(PREFIX)] == [board.name]
        dead = [i for i in list_boards(PREFIX, include_dead=True) if i.name == name]
        assert dead and not dead[0].alive
        assert cleanup_stale(PREFIX) == [name]
        assert not os.path.exists(f"/dev/shm/{name}")
        assert os.path.exists(f"/dev/shm/{board.name}")
    finally:
        if p.is_alive():
            p.kill()
            p.join(30)
        unlink_segment(name)


def test_cleanup_leaves_young_incomplete_segments_alone():
    name = board_name()
    shm = open_segment(name, create=True, size=64)  # no header yet: a creator mid-create
    try:
        assert cleanup_stale(PREFIX) == []
        assert os.path.exists(f"/dev/shm/{name}")
        assert cleanup_stale(PREFIX, min_age=0.0) == [name]
    finally:
        shm.close()
        unlink_segment(name)


def test_context_manager_unlinks_for_the_creator():
    with Board.create(
        board_name(),
        instance="cm",
        device_slots=1,
        finalizer_slots=1,
        synth_slots=1,
        job_rows=1,
        max_partitions=1,
    ) as b:
        name = b.name
        assert os.path.exists(f"/dev/shm/{name}")
    assert not os.path.exists(f"/dev/shm/{name}")


def test_default_name_is_discoverable():
    b = Board.create(
        instance="default-name",
        device_slots=1,
        finalizer_slots=1,
        synth_slots=1,
        job_rows=1,
        max_partitions=1,
    )
    try:
        assert b.name.startswith(f"cuzk-{os.getpid()}-")
        assert b.name in {i.name for i in list_boards()}
    finally:
        b.close()
        unlink_segment(b.name)


def test_register_over_a_torn_record_starts_it_afresh(board):
    board.devices.register(0)
    tok = board.claim_device(0, "j", 0)
    off = board.layout.slot_offset("device", 0)
    seq = SEQ.unpack_from(board._buf, off)[0]
    SEQ.pack_into(board._buf, off, seq + 1)
    board._buf[off + 8 : off + 40] = b"\xff" * 32  # generation, state, pid: garbage
    new = board.devices.register(0)
    assert new.generation == seq + 2 > tok.generation
    s = board.snapshot(verify="all")
    assert s.consistent and s.devices[0].state == "idle" and s.devices[0].pid == os.getpid()
    assert board.end(tok) is False
