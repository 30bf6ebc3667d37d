"""The board under fire: writer processes x threads against a reader, and kill -9 mid-write.

- stress: 3 writer processes x 3 threads run the split-proving cycle (synthesize, prove, hand
  off, finalize, plus stale ends) flat out while this process takes >= 10^6 single-record
  reads and as many whole-board snapshots as it can: zero torn records (every record carries
  a crc32 of its payload, so a read the sequence protocol wrongly accepted would show), and the
  gpu/proving invariant in every consistent snapshot.
- kill -9 inside a slot write, inside a control write (holding the flock), and at random
  moments of a hammering writer: readers never hang, other writers are never blocked, the
  supervisor's reclaim makes the board consistent again, and the dead writer's tokens are stale.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
import time
from zlib import crc32

import pytest

from cuzk.board import Token, read_record
from cuzk.board.layout import (
    CHECK,
    JOB_PAYLOAD,
    JOB_RECORD,
    PART_PAYLOAD,
    PART_RECORD,
    SEQ,
    SLOT_KINDS,
    SLOT_PAYLOAD,
    SLOT_RECORD,
)
from cuzk.testing import drill

CTX = mp.get_context("spawn")


def _kill(p):
    if p.is_alive():
        p.kill()
    p.join(30)


PROCS, THREADS = 3, 3
RECORD_READS = 1_000_000


def split_read(buf, off: int, record, payload_size: int):
    """The sequence protocol of read_record, but copying the record in two halves with a pause
    between them, as a reader preempted mid-copy would: if writers did not keep the sequence
    odd for the whole of each write, mixed halves would pass the sequence test and fail the
    check. Returns "ok", "busy" or "torn"."""
    s1 = SEQ.unpack_from(buf, off)[0]
    if s1 & 1:
        return "busy"
    half = record.size // 2
    head = bytes(buf[off : off + half])
    for _ in range(20):
        pass
    data = head + bytes(buf[off + half : off + record.size])
    if SEQ.unpack_from(buf, off)[0] != s1:
        return "busy"
    if crc32(data[8 : 8 + payload_size]) != CHECK.unpack_from(data, 8 + payload_size)[0]:
        return "torn"
    return "ok"


def workload_violations(s) -> list[str]:
    """Relations that drill.writer_main's program order makes true at every instant, so in
    every consistent cut -- and that a cut mixing records from different instants breaks.

    Thread t owns synth, device and finalizer slot t and moves one partition at a time through
    them (synth claim; synth_done stored, then the synth end; device claim; handoff; done
    stored, then the finalizer end)."""
    bad = []
    stored = {(j.job_id, p.index): p.stored_state for j in s.jobs for p in j.partitions}
    for t in range(len(s.devices)):
        busy = [v for v in (s.synth[t], s.devices[t], s.finalizers[t]) if v.busy]
        if len(busy) > 1:
            bad.append(f"thread {t} shows {[(v.kind, v.partition) for v in busy]} at once")
        for v in busy:
            st = stored.get((v.job_id, v.partition))
            ok = {
                "synth": ("pending", "synth_done"),
                "device": ("synth_done",),
                "finalizer": ("synth_done", "done"),
            }[v.kind]
            if st not in ok:
                bad.append(f"{v.kind} {t} busy on {v.job_id}/{v.partition} stored {st}")
    return bad


@pytest.mark.slow
def test_stress_no_torn_records_and_the_invariant_in_every_consistent_snapshot(board_factory):
    n = PROCS * THREADS
    b = board_factory(
        device_slots=n, finalizer_slots=n, synth_slots=n, job_rows=24, max_partitions=8
    )
    stop = CTX.Event()
    results = CTX.Queue()
    procs = [
        CTX.Process(
            target=drill.writer_main, args=(b.name, i, THREADS, stop, results, 1000 + i, 6, 3)
        )
        for i in range(PROCS)
    ]
    for p in procs:
        p.start()
    t_start = time.monotonic()
    try:
        # wait until every writer thread has registered its slots
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            s = b.snapshot()
            if s.consistent and all(v.state != "empty" for v in s.devices):
                break
            time.sleep(0.05)
        else:
            pytest.fail("writers did not start")

        buf, lay = b._buf, b.layout
        targets = (
            [
                (lay.slot_offset(k, i), SLOT_RECORD, SLOT_PAYLOAD.size)
                for k in SLOT_KINDS
                for i in range(n)
            ]
            + [(lay.job_offset(r), JOB_RECORD, JOB_PAYLOAD.size) for r in range(lay.job_rows)]
            + [
                (lay.part_offset(r, i), PART_RECORD, PART_PAYLOAD.size)
                for r in range(lay.job_rows)
                for i in range(6)
            ]
        )
        rng = random.Random(5)
        reads = ok = busy = torn = 0
        snaps = consistent = stable_torn = attempts = 0
        gpu_seen = finalizing_seen = 0
        violations = []
        while reads < RECORD_READS or consistent < 200:
            for _ in range(1000):
                off, rec, psize = targets[rng.randrange(len(targets))]
                _, status = read_record(buf, off, rec, psize, tries=50)
                if status == "ok":
                    ok += 1
                elif status == "busy":
                    busy += 1
                else:
                    torn += 1
                off, rec, psize = targets[rng.randrange(len(targets))]
                status = split_read(buf, off, rec, psize)
                if status == "ok":
                    ok += 1
                elif status == "torn":
                    torn += 1
            reads += 2000
            for _ in range(5):
                s = b.snapshot(verify="all", tries=32)
                snaps += 1
                attempts += s.attempts
                if s.stable and s.torn:
                    stable_torn += 1
                if s.consistent:
                    consistent += 1
                    v = s.invariant_violations() + workload_violations(s)
                    # independently of collect(): no record of the cut was being written
                    seqs = [r[0] for k in SLOT_KINDS for r in s.raw_slots[k]]
                    seqs += [r[0] for j, parts in s.raw_jobs for r in (j, *parts)]
                    if any(q & 1 for q in seqs):
                        v.append("a record with an odd sequence in a consistent cut")
                    if v:
                        violations.append(v)
                    states = [p.state for j in s.jobs for p in j.partitions]
                    gpu_seen += states.count("gpu")
                    finalizing_seen += states.count("finalizing")
            if time.monotonic() - t_start > 150:
                pytest.fail(f"too slow: {reads} reads, {consistent} consistent snapshots")
        assert torn == 0, f"{torn} torn single-record reads out of {reads}"
        assert stable_torn == 0
        assert violations == [], violations[:3]
        assert ok > RECORD_READS // 2, (ok, busy)
        # the snapshots did see the states the invariant is about
        assert gpu_seen > 0 and finalizing_seen > 0
    finally:
        stop.set()
        counts = drill.drain(results, PROCS, 60)
        for p in procs:
            p.join(30)
            _kill(p)
    assert len(counts) == PROCS and all(p.exitcode == 0 for p in procs)
    total = {k: sum(c[k] for _, c in counts) for k in counts[0][1]}
    s = b.snapshot()
    assert s.consistent and s.invariant_violations() == []
    c = s.counters
    # every stale end the writers made was rejected, and each was counted exactly once
    assert total["stale_rejected"] == total["stale_ends"] == c["stale_ends_ignored"]
    assert total["jobs_done"] == c["total_completed"] > 0
    assert total["partitions"] > 100
    # all slots idle at the end, none left naming a partition
    assert all(v.state == "idle" for k in SLOT_KINDS for v in s.slots(k))
    print(
        f"\nstress: {reads} record reads ({busy} busy retries exhausted), {snaps} snapshots "
        f"({consistent} consistent, {attempts / snaps:.1f} attempts each), "
        f"{total['partitions']} partitions, "
        f"{total['stale_ends']} stale ends, {time.monotonic() - t_start:.1f} s"
    )


# --- kill -9 --------------------------------------------------------------------------------------


def test_kill_inside_a_slot_write(board_factory):
    b = board_factory(
        device_slots=2, finalizer_slots=1, synth_slots=1, job_rows=2, max_partitions=2
    )
    b.control.job_add("victim", "porep-c2", "normal", 1)
    parent, child = CTX.Pipe()
    p = CTX.Process(target=drill.hang_in_slot_write, args=(b.name, "device", 1, child))
    p.start()
    try:
        tok = Token(*parent.recv())
        p.kill()
        p.join(30)
        s = b.snapshot(tries=30)
        assert s.attempts == 30  # bounded: gave up after its tries, never waits for the writer
        assert not s.consistent and s.devices[1].state == "empty"
        assert read_record(
            b._buf, b.layout.slot_offset("device", 1), SLOT_RECORD, SLOT_PAYLOAD.size, tries=10
        ) == (None, "busy")
        # the supervisor notices the death and reclaims the slot
        new = b.devices.reclaim(1)
        assert new.generation > tok.generation
        s = b.snapshot(verify="all")
        assert s.consistent and s.torn == () and s.invariant_violations() == []
        assert (s.devices[1].state, s.devices[1].restarts, s.devices[1].job_id) == ("dead", 1, None)
        assert s.partition_state("victim", 0) == "pending"
        assert b.end(tok) is False
        b.devices.register(1)  # the restarted process takes the slot
        assert b.snapshot().devices[1].state == "idle"
    finally:
        _kill(p)


def test_kill_inside_a_control_write_holding_the_lock(board_factory):
    b = board_factory(
        device_slots=1, finalizer_slots=1, synth_slots=1, job_rows=2, max_partitions=3
    )
    b.control.job_add("j", "porep-c2", "normal", 3)
    b.control.partition_set("j", 1, "synth_done", synth_ms=4.0)
    parent, child = CTX.Pipe()
    p = CTX.Process(target=drill.hang_in_control_write, args=(b.name, "j", 1, child))
    p.start()
    try:
        assert parent.recv() == "inside"
        # while the writer lives and holds the lock, another control write waits...
        done = threading.Event()
        th = threading.Thread(
            target=lambda: (b.control.count(queue_depth=3), done.set()), daemon=True
        )
        th.start()
        assert not done.wait(0.3)
        # ...readers do not: they report the record as being written
        s = b.snapshot(tries=10)
        assert not s.consistent
        p.kill()
        p.join(30)
        assert done.wait(10), "a writer killed holding the control lock wedged the others"
        th.join(10)
        s = b.snapshot(verify="all")
        assert s.consistent and s.torn == ()
        assert s.counters["queue_depth"] == 3
        assert s.counters["torn_records_repaired"] == 1
        # the half-written partition was reset to empty (its crc no longer matched)
        assert s.partition_state("j", 1) == "pending"
        assert (
            b.control.partition_set("j", 1, "done")
            and b.snapshot().partition_state("j", 1) == "done"
        )
    finally:
        _kill(p)


def test_kill_a_hammering_writer_at_random_moments(board_factory):
    b = board_factory(
        device_slots=2, finalizer_slots=1, synth_slots=1, job_rows=2, max_partitions=8
    )
    b.control.job_add("h", "porep-c2", "normal", 8)
    rng = random.Random(11)
    restarts = 0
    for _ in range(4):
        parent, child = CTX.Pipe()
        p = CTX.Process(target=drill.hammer_main, args=(b.name, 0, "h", 8, child))
        p.start()
        try:
            first = Token(*parent.recv())
            time.sleep(rng.uniform(0.05, 0.3))
            p.kill()
            p.join(30)
        finally:
            _kill(p)
        s = b.snapshot(tries=30)
        assert s.consistent or s.attempts == 30  # a cut, or gave up after its tries: no wait
        before = b.devices.read(0, tries=3)[0]
        new = b.devices.reclaim(0)
        restarts += 1
        if before is not None:
            assert new.generation == before[1] + 1
        b.control.count(
            queue_depth=0
        )  # any control write repairs a record the kill left half-written
        s = b.snapshot(verify="all")
        assert s.consistent and s.torn == () and s.invariant_violations() == []
        assert s.devices[0].state == "dead" and s.devices[0].restarts == restarts
        assert b.end(first) is False
        assert all(p_.state in ("pending", "synth_done") for p_ in s.job("h").partitions)
