"""Reading the board: a consistent cut of every record, as plain immutable objects.

collect() copies the board twice without taking any lock and accepts the first copy when
both agree byte for byte and no record is marked as being written (odd sequence). Every
sequence only grows, so equal copies mean no record changed between its two reads, and all
those intervals share the instant between the end of the first copy and the start of the
second: the copy is the board as it was at that instant (x86: loads are not reordered with
older loads, stores not with older stores; docs/status-board.md says what ARM would need).

Transient partition states are derived here, from the slots that name partitions (see
board.py), which is what makes the gpu/proving invariant hold by construction.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple
from zlib import crc32

from cuzk.board import layout as L


class SlotView(NamedTuple):
    kind: str
    slot: int
    state: str          # empty | idle | proving/finalizing/synthesizing | dead
    generation: int
    pid: int
    ordinal: int
    device: str
    job_id: str | None
    partition: int | None
    started_at: float | None
    busy_secs: float    # finished claims plus the current one up to the snapshot
    heartbeat: float | None
    restarts: int
    from_slot: int | None
    from_generation: int | None

    @property
    def busy(self) -> bool:
        return self.state == L.BUSY_NAME[self.kind]


class PartitionView(NamedTuple):
    index: int
    state: str          # derived: gpu/finalizing/synthesizing from slots, else stored
    stored_state: str
    synth_ms: float | None
    gpu_ms: float | None
    finalize_ms: float | None
    attempts: int


class JobView(NamedTuple):
    job_id: str
    kind: str
    priority: str
    state: str
    submitted_at: float | None
    started_at: float | None
    finished_at: float | None
    partitions: tuple[PartitionView, ...]


def _opt(x: float) -> float | None:
    return None if x != x else x


def _ago(now: float, t: float | None) -> float | None:
    return None if t is None else max(0.0, now - t)


@dataclass(frozen=True)
class Snapshot:
    """One cut of a board. `consistent` is False when no consistent cut was found within the
    retry bound; `torn` lists records whose check failed although the sequence protocol
    accepted them (never expected: it would mean the protocol is broken)."""

    board: str
    instance: str
    layout_version: int
    supervisor_pid: int
    started_at: float
    now: float
    consistent: bool
    attempts: int
    torn: tuple[int, ...]
    raw_slots: dict = field(repr=False)     # kind -> tuple of slot records (seq, *payload, check)
    raw_jobs: tuple = field(repr=False)     # (job record, tuple of partition records) per used row
    raw_memory: tuple = field(repr=False)
    raw_counters: tuple = field(repr=False)
    raw_keys: tuple = field(repr=False)

    # --- slots -----------------------------------------------------------------------------------
    @cached_property
    def _handed_off(self) -> dict[int, float]:
        """Device slots whose partition a finalizer has taken over (claim naming slot and
        generation) -> when it did; such a device shows as done with it."""
        dev = self.raw_slots["device"]
        out = {}
        for r in self.raw_slots["finalizer"]:
            if r[2] == L.SLOT_BUSY and r[12] >= 0 and r[12] < len(dev):
                d = dev[r[12]]
                if (d[2] == L.SLOT_BUSY and d[1] == r[13] and d[6] == r[6] and d[7] == r[7]):
                    out[r[12]] = r[9]
        return out

    def _slot_views(self, kind: str) -> tuple[SlotView, ...]:
        now = self.now
        handed = self._handed_off if kind == "device" else {}
        busy_name = L.BUSY_NAME[kind]
        out = []
        for i, r in enumerate(self.raw_slots[kind]):
            (_, gen, st, restarts, pid, ordinal, part, job, device, started, busy, hb, fs, fg,
             _) = r
            if st == L.SLOT_BUSY and i in handed:
                busy += max(0.0, handed[i] - started)
                st = L.SLOT_IDLE
                job, part, started = b"", L.NONE_I32, math.nan
            elif st == L.SLOT_BUSY:
                busy += max(0.0, now - started)
            state = ("empty", "idle", busy_name, "dead")[st] if st < 4 else "empty"
            is_busy = st == L.SLOT_BUSY
            out.append(SlotView(
                kind, i, state, gen, pid, ordinal, L.unpack_str(device),
                L.unpack_str(job) if is_busy else None, part if is_busy else None,
                _opt(started) if is_busy else None, busy, _opt(hb), restarts,
                fs if fs >= 0 else None, fg if fs >= 0 else None))
        return tuple(out)

    @cached_property
    def devices(self) -> tuple[SlotView, ...]:
        return self._slot_views("device")

    @cached_property
    def finalizers(self) -> tuple[SlotView, ...]:
        return self._slot_views("finalizer")

    @cached_property
    def synth(self) -> tuple[SlotView, ...]:
        return self._slot_views("synth")

    def slots(self, kind: str) -> tuple[SlotView, ...]:
        return {"device": self.devices, "finalizer": self.finalizers, "synth": self.synth}[kind]

    @cached_property
    def _named(self) -> dict[tuple[str, int], list[SlotView]]:
        """(job id, partition) -> busy slots (as shown) that name it."""
        out: dict[tuple[str, int], list[SlotView]] = {}
        for kind in L.SLOT_KINDS:
            for v in self.slots(kind):
                if v.busy:
                    out.setdefault((v.job_id, v.partition), []).append(v)
        return out

    # --- jobs ------------------------------------------------------------------------------------
    @cached_property
    def jobs(self) -> tuple[JobView, ...]:
        """Jobs on the board, oldest submission first, with derived partition states."""
        named = self._named
        out = []
        for j, parts in self.raw_jobs:
            (_, rowgen, job, kind, prio, st, npart, sub, started, finished, _) = j
            job_id = L.unpack_str(job)
            pviews = []
            for i, p in enumerate(parts):
                stored = p[2] if p[1] == rowgen else L.P_PENDING
                state = stored
                kinds = {v.kind for v in named.get((job_id, i), ())}
                if "device" in kinds:
                    state = L.P_GPU
                elif "finalizer" in kinds:
                    state = L.P_FINALIZING
                elif "synth" in kinds:
                    state = L.P_SYNTHESIZING
                ok = p[1] == rowgen
                pviews.append(PartitionView(
                    i, L.PARTITION_STATES[state], L.PARTITION_STATES[stored],
                    _opt(p[4]) if ok else None, _opt(p[5]) if ok else None,
                    _opt(p[6]) if ok else None, p[3] if ok else 0))
            out.append(JobView(job_id, L.unpack_str(kind),
                               L.PRIORITIES[prio] if prio < len(L.PRIORITIES) else "normal",
                               L.JOB_STATES[st] if st < len(L.JOB_STATES) else "queued",
                               _opt(sub), _opt(started), _opt(finished), tuple(pviews)))
        out.sort(key=lambda j: (j.submitted_at or 0.0, j.job_id))
        return tuple(out)

    def job(self, job_id: str) -> JobView | None:
        for j in self.jobs:
            if j.job_id == job_id:
                return j
        return None

    def partition_state(self, job_id: str, index: int) -> str | None:
        j = self.job(job_id)
        if j is None or not 0 <= index < len(j.partitions):
            return None
        return j.partitions[index].state

    # --- the invariant -------------------------------------------------------------------------
    def invariant_violations(self) -> list[str]:
        """What breaks "a partition in state gpu is named by exactly one proving device worker,
        and a proving worker names a partition in state gpu" (likewise finalizing/finalizers and
        synthesizing/synthesis workers). Empty for every consistent snapshot."""
        bad = []
        parts = {(j.job_id, p.index): p.state for j in self.jobs for p in j.partitions}
        for kind, pstate in (("device", "gpu"), ("finalizer", "finalizing"),
                             ("synth", "synthesizing")):
            for v in self.slots(kind):
                if v.busy and parts.get((v.job_id, v.partition)) != pstate:
                    bad.append(f"{kind} {v.slot} is {v.state} on {v.job_id}/{v.partition}, which"
                               f" is {parts.get((v.job_id, v.partition), 'not on the board')}")
            for (job_id, i), st in parts.items():
                if st == pstate:
                    n = sum(1 for v in self._named.get((job_id, i), ()) if v.kind == kind)
                    if n != 1:
                        bad.append(f"{job_id}/{i} is {st} but named by {n} {kind} slots")
        return bad

    # --- the rest --------------------------------------------------------------------------------
    @cached_property
    def memory(self) -> dict:
        m = self.raw_memory
        total, reserved, n = m[1], m[2], m[3]
        by_use = {L.unpack_str(m[4 + 2 * i]): m[5 + 2 * i] for i in range(n)}
        return {"total_bytes": total, "reserved_bytes": reserved, "used_bytes": reserved,
                "available_bytes": max(0, total - reserved), "by_use": by_use}

    @cached_property
    def counters(self) -> dict:
        c = self.raw_counters
        retries, restarts, stale, qdepth, torn_repaired, dropped, nk = c[1:8]
        completed = {L.unpack_str(c[8 + 3 * i]): c[9 + 3 * i] for i in range(nk)}
        failed = {L.unpack_str(c[8 + 3 * i]): c[10 + 3 * i] for i in range(nk)}
        return {"total_completed": sum(completed.values()),
                "total_failed": sum(failed.values()),
                "completed_by_kind": {k: v for k, v in completed.items() if v},
                "failed_by_kind": {k: v for k, v in failed.items() if v},
                "retries": retries, "restarts": restarts, "stale_ends_ignored": stale,
                "queue_depth": qdepth, "torn_records_repaired": torn_repaired,
                "jobs_not_shown": dropped}

    @cached_property
    def keys(self) -> list[dict]:
        k = self.raw_keys
        out = []
        for i in range(k[1]):
            key_id, nbytes, devs, last, evictable = k[2 + 5 * i:7 + 5 * i]
            d = L.unpack_str(devs)
            out.append({"key_id": L.unpack_str(key_id), "bytes": nbytes,
                        "devices": d.split(",") if d else [],
                        "last_used_secs_ago": _ago(self.now, _opt(last)),
                        "evictable": bool(evictable)})
        return out

    def to_dict(self) -> dict:
        """The status JSON (GET /status, `cuzk top --json`); shape fixed in TEAM.md."""
        now = self.now
        synth_workers = [
            {"worker_id": v.slot, "pid": v.pid,
             "state": v.state if v.state != "empty" else "dead", "generation": v.generation,
             "job_id": v.job_id, "partition": v.partition,
             "started_secs_ago": _ago(now, v.started_at),
             "heartbeat_age_secs": _ago(now, v.heartbeat), "restarts": v.restarts}
            for v in self.synth if v.state != "empty"]
        gpu_workers = [
            {"worker_id": v.slot, "gpu_ordinal": v.ordinal, "device": v.device, "pid": v.pid,
             "state": v.state, "generation": v.generation, "current_job": v.job_id,
             "current_partition": v.partition, "started_secs_ago": _ago(now, v.started_at),
             "busy_secs": v.busy_secs, "heartbeat_age_secs": _ago(now, v.heartbeat),
             "restarts": v.restarts}
            for v in self.devices if v.state != "empty"]
        finalizers = [
            {"finalizer_id": v.slot, "gpu_ordinal": v.ordinal, "pid": v.pid, "state": v.state,
             "generation": v.generation, "current_job": v.job_id,
             "current_partition": v.partition, "started_secs_ago": _ago(now, v.started_at),
             "heartbeat_age_secs": _ago(now, v.heartbeat), "restarts": v.restarts,
             "from_worker": v.from_slot}
            for v in self.finalizers if v.state != "empty"]
        pipelines = []
        for j in self.jobs:
            pipelines.append({
                "job_id": j.job_id, "proof_kind": j.kind, "priority": j.priority,
                "state": j.state, "submitted_at": j.submitted_at,
                "started_secs_ago": _ago(now, j.started_at if j.started_at is not None
                                         else j.submitted_at),
                "total_partitions": len(j.partitions),
                "partitions_done": sum(p.state == "done" for p in j.partitions),
                "partitions_failed": sum(p.state == "failed" for p in j.partitions),
                "partitions": [{"index": p.index, "state": p.state, "synth_ms": p.synth_ms,
                                "gpu_ms": p.gpu_ms, "finalize_ms": p.finalize_ms,
                                "attempts": p.attempts} for p in j.partitions]})
        keys = self.keys
        return {
            "instance": self.instance, "board": self.board,
            "layout_version": self.layout_version, "supervisor_pid": self.supervisor_pid,
            "started_at": self.started_at, "now": now,
            "uptime_secs": max(0.0, now - self.started_at), "consistent": self.consistent,
            "memory": self.memory,
            "synthesis": {"max_concurrent": len(synth_workers),
                          "active": sum(w["state"] == "synthesizing" for w in synth_workers),
                          "workers": synth_workers},
            "gpu_workers": gpu_workers,
            "finalizers": finalizers,
            "pipelines": pipelines,
            "keys": keys,
            "allocations": {"srs": keys, "pce": []},
            "counters": self.counters,
        }

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)


def collect(board, *, tries: int = 64, verify: bool | str = True) -> Snapshot:
    """Take a consistent cut of `board` (see module docstring); never blocks a writer.

    verify: True checks the crc of every record whose sequence changed since this handle last
    verified it (a record's bytes never change without its sequence changing), "all" checks
    every record, False none."""
    buf = board._buf
    lay = board.layout
    o = lay.offsets
    a0, jo, a1 = o["device"], o["jobs"], o["partitions"]
    m0, m1 = o["memory"], o["end"]
    po = o["partitions"]
    psz = L.PART_SIZE
    row_span = lay.max_partitions * psz
    nslots = {k: lay.slots(k) for k in L.SLOT_KINDS}
    last = None
    attempt = 0
    for attempt in range(1, tries + 1):
        if attempt > 8:
            time.sleep(0.00002 * min(attempt, 50))  # let a descheduled writer finish
        A = bytes(buf[a0:a1])
        jobs = list(L.JOB_RECORD.iter_unpack(memoryview(A)[jo - a0:]))
        used = [(r, min(j[6], lay.max_partitions)) for r, j in enumerate(jobs)
                if j[5] != L.J_FREE]
        P = [bytes(buf[po + r * row_span:po + r * row_span + n * psz]) for r, n in used]
        M = bytes(buf[m0:m1])
        now = time.time()
        stable = (bytes(buf[a0:a1]) == A and bytes(buf[m0:m1]) == M and
                  all(bytes(buf[po + r * row_span:po + r * row_span + n * psz]) == p
                      for (r, n), p in zip(used, P, strict=True)))
        last = (A, jobs, used, P, M, now)
        if not stable:
            continue
        slots_all = list(L.SLOT_RECORD.iter_unpack(memoryview(A)[:jo - a0]))
        parts = [list(L.PART_RECORD.iter_unpack(p)) for p in P]
        if (any(r[0] & 1 for r in slots_all) or any(j[0] & 1 for j in jobs) or
                any(r[0] & 1 for pr in parts for r in pr) or
                any(_SEQ_AT(M, off - m0) & 1 for off in (o["memory"], o["counters"], o["keys"]))):
            continue  # a writer is inside some record (or died there: reclaim repairs it)
        torn = _verify(board, verify, A, a0, slots_all, jobs, jo, used, P, parts, M, m0)
        return _build(board, slots_all, jobs, used, parts, M, now, not torn, attempt, torn,
                      nslots)
    # No consistent cut: parse the last copy record by record, dropping records being written.
    A, jobs, used, P, M, now = last
    slots_all = list(L.SLOT_RECORD.iter_unpack(memoryview(A)[:jo - a0]))
    parts = [list(L.PART_RECORD.iter_unpack(p)) for p in P]
    torn = _verify(board, "all", A, a0, slots_all, jobs, jo, used, P, parts, M, m0)
    return _build(board, slots_all, jobs, used, parts, M, now, False, attempt, torn, nslots)


_SEQ_AT = lambda data, off: L.SEQ.unpack_from(data, off)[0]  # noqa: E731


def _verify(board, verify, A, a0, slots_all, jobs, jo, used, P, parts, M, m0) -> tuple:
    """Offsets of records (with an even sequence) whose check does not match their payload."""
    if not verify:
        return ()
    cache = board._verified if verify is True else {}
    lay = board.layout
    torn = []
    mv = memoryview(A)
    ssz, spay = L.SLOT_SIZE, L.SLOT_PAYLOAD.size
    for i, r in enumerate(slots_all):
        off = a0 + i * ssz
        if r[0] & 1 or cache.get(off) == r[0]:
            continue
        rel = off - a0
        if crc32(mv[rel + 8:rel + 8 + spay]) != r[-1]:
            torn.append(off)
        else:
            cache[off] = r[0]
    jsz, jpay = L.JOB_SIZE, L.JOB_PAYLOAD.size
    for i, r in enumerate(jobs):
        off = jo + i * jsz
        if r[0] & 1 or cache.get(off) == r[0]:
            continue
        rel = off - a0
        if crc32(mv[rel + 8:rel + 8 + jpay]) != r[-1]:
            torn.append(off)
        else:
            cache[off] = r[0]
    psz, ppay = L.PART_SIZE, L.PART_PAYLOAD.size
    for (row, _), p, pr in zip(used, P, parts, strict=True):
        pm = memoryview(p)
        for i, r in enumerate(pr):
            off = lay.part_offset(row, i)
            if r[0] & 1 or cache.get(off) == r[0]:
                continue
            rel = i * psz
            if crc32(pm[rel + 8:rel + 8 + ppay]) != r[-1]:
                torn.append(off)
            else:
                cache[off] = r[0]
    mm = memoryview(M)
    for name, payload in (("memory", lay.memory_payload), ("counters", lay.counters_payload),
                          ("keys", lay.keys_payload)):
        off = lay.offsets[name]
        rel = off - m0
        seq = _SEQ_AT(M, rel)
        if seq & 1 or cache.get(off) == seq:
            continue
        if crc32(mm[rel + 8:rel + 8 + payload.size]) != L.CHECK.unpack_from(
                M, rel + 8 + payload.size)[0]:
            torn.append(off)
        else:
            cache[off] = seq
    return tuple(torn)


def _build(board, slots_all, jobs, used, parts, M, now, consistent, attempts, torn, nslots):
    lay = board.layout
    bad = set(torn)
    ssz = L.SLOT_SIZE
    a0 = lay.offsets["device"]

    def slot_ok(i, r):
        return not (r[0] & 1) and (a0 + i * ssz) not in bad

    raw_slots = {}
    i0 = 0
    for kind in L.SLOT_KINDS:
        n = nslots[kind]
        recs = []
        for i in range(i0, i0 + n):
            r = slots_all[i]
            if not slot_ok(i, r):  # being written or torn: show as unknown/empty
                r = (r[0], r[1], L.SLOT_EMPTY, 0, 0, 0, L.NONE_I32, b"", b"", math.nan, 0.0,
                     math.nan, L.NONE_I32, 0, 0)
            recs.append(r)
        raw_slots[kind] = tuple(recs)
        i0 += n
    jo = lay.offsets["jobs"]
    raw_jobs = []
    for (row, _), pr in zip(used, parts, strict=True):
        j = jobs[row]
        if j[0] & 1 or (jo + row * L.JOB_SIZE) in bad:
            continue
        pr = tuple(r if not (r[0] & 1) and lay.part_offset(row, i) not in bad
                   else (r[0], -1, L.P_PENDING, 0, math.nan, math.nan, math.nan, 0)
                   for i, r in enumerate(pr))
        raw_jobs.append((j, pr))
    m0 = lay.offsets["memory"]

    def ctl(name, payload, empty):
        rel = lay.offsets[name] - m0
        if _SEQ_AT(M, rel) & 1 or lay.offsets[name] in bad:
            return (0, *empty)
        return L.full_record(payload).unpack_from(M, rel)

    from cuzk.board.board import _empty_counters, _empty_keys, _empty_memory

    return Snapshot(
        board=board.name, instance=board.instance, layout_version=L.LAYOUT_VERSION,
        supervisor_pid=board.pid, started_at=board.started_at, now=now, consistent=consistent,
        attempts=attempts, torn=tuple(torn), raw_slots=raw_slots, raw_jobs=tuple(raw_jobs),
        raw_memory=ctl("memory", lay.memory_payload, _empty_memory(lay)),
        raw_counters=ctl("counters", lay.counters_payload, _empty_counters(lay)),
        raw_keys=ctl("keys", lay.keys_payload, _empty_keys(lay)))
