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
from functools import cached_property
from typing import NamedTuple
from zlib import crc32

from cuzk.board.layout import (
    BUSY_NAME,
    CHECK,
    JOB_NPART_AT,
    JOB_PAYLOAD,
    JOB_RECORD,
    JOB_SIZE,
    JOB_STATE_AT,
    JOB_STATES,
    KEY_TABLES,
    LAYOUT_VERSION,
    NONE_I32,
    P_FINALIZING,
    P_GPU,
    P_PENDING,
    P_SYNTHESIZING,
    PART_PAYLOAD,
    PART_RECORD,
    PART_SIZE,
    PARTITION_STATES,
    PRIORITIES,
    SEQ,
    SLOT_BUSY,
    SLOT_EMPTY,
    SLOT_IDLE,
    SLOT_KINDS,
    SLOT_PAYLOAD,
    SLOT_RECORD,
    SLOT_SIZE,
    Layout,
    full_record,
    struct,
    unpack_str,
)
from cuzk.board.seqlock import empty_counters, empty_keys, empty_memory


class SlotView(NamedTuple):
    kind: str
    slot: int
    state: str  # empty | idle | proving/finalizing/synthesizing | dead
    generation: int
    pid: int
    ordinal: int
    device: str
    job_id: str | None
    partition: int | None
    started_at: float | None
    busy_secs: float  # finished claims plus the current one up to the snapshot
    heartbeat: float | None
    restarts: int
    from_slot: int | None
    from_generation: int | None

    @property
    def busy(self) -> bool:
        return self.state == BUSY_NAME[self.kind]


class PartitionView(NamedTuple):
    index: int
    state: str  # derived: gpu/finalizing/synthesizing from slots, else stored
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


class Snapshot:
    """One cut of a board. `consistent` is False when no consistent cut was found within the
    retry bound (then records that were being written are shown empty); `torn` lists offsets of
    records whose check failed (shown empty too). When `stable` (both copies agreed, no record
    being written) a torn record would mean the sequence protocol is broken: never expected.
    Records are parsed on first use; the object is immutable."""

    _FIELDS = (
        "board",
        "instance",
        "layout_version",
        "supervisor_pid",
        "started_at",
        "now",
        "consistent",
        "attempts",
        "torn",
        "stable",
        "layout",  # the board's Layout
        "data",  # copy of the slot and job sections
        "rows",  # (lo, hi): job rows lo..hi-1 span every row in use
        "parts",  # copy of the partition records of rows lo..hi-1
        "mem",
    )  # copy of the memory, counters and keys records

    board: str
    instance: str
    layout_version: int
    supervisor_pid: int
    started_at: float
    now: float
    consistent: bool
    attempts: int
    torn: tuple[int, ...]
    stable: bool

    def __init__(self, *values):
        # one dict update instead of a frozen dataclass's per-field object.__setattr__
        self.__dict__.update(zip(self._FIELDS, values, strict=True))

    def __setattr__(self, name, value):
        raise AttributeError(f"Snapshot is immutable ({name})")

    __delattr__ = __setattr__

    def __repr__(self):
        return (
            f"Snapshot(board={self.board!r}, now={self.now:.3f}, "
            f"consistent={self.consistent}, attempts={self.attempts})"
        )

    # --- raw records: tuples (seq, *payload, check) --------------------------------------------
    @cached_property
    def raw_slots(self) -> dict[str, tuple]:
        lay = self.layout
        bad = set(self.torn)
        a0 = lay.offsets["device"]
        recs = list(SLOT_RECORD.iter_unpack(memoryview(self.data)[: lay.offsets["jobs"] - a0]))
        out = {}
        i0 = 0
        for kind in SLOT_KINDS:
            n = lay.slots(kind)
            rs = recs[i0 : i0 + n]
            for i, r in enumerate(rs):
                if r[0] & 1 or a0 + (i0 + i) * SLOT_SIZE in bad:  # being written, or torn
                    rs[i] = (
                        r[0],
                        r[1],
                        SLOT_EMPTY,
                        0,
                        0,
                        0,
                        NONE_I32,
                        b"",
                        b"",
                        math.nan,
                        0.0,
                        math.nan,
                        NONE_I32,
                        0,
                        0,
                    )
            out[kind] = tuple(rs)
            i0 += n
        return out

    @cached_property
    def used(self) -> tuple[tuple[int, int], ...]:
        """(row, partitions) of every job row in use."""
        lay = self.layout
        jrel = lay.offsets["jobs"] - lay.offsets["device"]
        lo, hi = self.rows
        return tuple(
            (
                r,
                min(
                    _U32.unpack_from(self.data, jrel + r * JOB_SIZE + JOB_NPART_AT)[0],
                    lay.max_partitions,
                ),
            )
            for r in range(lo, hi)
            if self.data[jrel + r * JOB_SIZE + JOB_STATE_AT]
        )

    @cached_property
    def raw_jobs(self) -> tuple:
        """(job record, partition records) per row in use."""
        lay = self.layout
        bad = set(self.torn)
        a0, jo = lay.offsets["device"], lay.offsets["jobs"]
        span = lay.max_partitions * PART_SIZE
        lo = self.rows[0]
        out = []
        for row, n in self.used:
            j = JOB_RECORD.unpack_from(self.data, jo - a0 + row * JOB_SIZE)
            base = (row - lo) * span
            pr = list(PART_RECORD.iter_unpack(self.parts[base : base + n * PART_SIZE]))
            if j[0] & 1 or jo + row * JOB_SIZE in bad:
                continue
            for i, r in enumerate(pr):
                if r[0] & 1 or lay.part_offset(row, i) in bad:
                    pr[i] = (r[0], -1, P_PENDING, 0, math.nan, math.nan, math.nan, 0)
            out.append((j, tuple(pr)))
        return tuple(out)

    def _ctl(self, name: str, payload, empty) -> tuple:
        lay = self.layout
        rel = lay.offsets[name] - lay.offsets["memory"]
        if _SEQ_AT(self.mem, rel) & 1 or lay.offsets[name] in self.torn:
            return (0, *empty)
        return full_record(payload).unpack_from(self.mem, rel)

    @cached_property
    def raw_memory(self) -> tuple:
        return self._ctl("memory", self.layout.memory_payload, empty_memory(self.layout))

    @cached_property
    def raw_counters(self) -> tuple:
        return self._ctl("counters", self.layout.counters_payload, empty_counters(self.layout))

    @cached_property
    def raw_keys(self) -> tuple:
        return self._ctl("keys", self.layout.keys_payload, empty_keys(self.layout))

    # --- slots -----------------------------------------------------------------------------------
    @cached_property
    def _handed_off(self) -> dict[int, float]:
        """Device slots whose partition a finalizer has taken over (claim naming slot and
        generation) -> when it did; such a device shows as done with it."""
        dev = self.raw_slots["device"]
        out = {}
        for r in self.raw_slots["finalizer"]:
            if r[2] == SLOT_BUSY and r[12] >= 0 and r[12] < len(dev):
                d = dev[r[12]]
                if d[2] == SLOT_BUSY and d[1] == r[13] and d[6] == r[6] and d[7] == r[7]:
                    out[r[12]] = r[9]
        return out

    def _slot_views(self, kind: str) -> tuple[SlotView, ...]:
        now = self.now
        handed = self._handed_off if kind == "device" else {}
        busy_name = BUSY_NAME[kind]
        out = []
        for i, r in enumerate(self.raw_slots[kind]):
            (
                _,
                gen,
                st,
                restarts,
                pid,
                ordinal,
                part,
                job,
                device,
                started,
                busy,
                hb,
                fs,
                fg,
                _,
            ) = r
            if st == SLOT_BUSY and i in handed:
                busy += max(0.0, handed[i] - started)
                st = SLOT_IDLE
                job, part, started = b"", NONE_I32, math.nan
            elif st == SLOT_BUSY:
                busy += max(0.0, now - started)
            state = ("empty", "idle", busy_name, "dead")[st] if st < 4 else "empty"
            is_busy = st == SLOT_BUSY
            out.append(
                SlotView(
                    kind,
                    i,
                    state,
                    gen,
                    pid,
                    ordinal,
                    unpack_str(device),
                    unpack_str(job) if is_busy else None,
                    part if is_busy else None,
                    _opt(started) if is_busy else None,
                    busy,
                    _opt(hb),
                    restarts,
                    fs if fs >= 0 else None,
                    fg if fs >= 0 else None,
                )
            )
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
        for kind in SLOT_KINDS:
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
            job_id = unpack_str(job)
            pviews = []
            for i, p in enumerate(parts):
                stored = p[2] if p[1] == rowgen else P_PENDING
                state = stored
                kinds = {v.kind for v in named.get((job_id, i), ())}
                if "device" in kinds:
                    state = P_GPU
                elif "finalizer" in kinds:
                    state = P_FINALIZING
                elif "synth" in kinds:
                    state = P_SYNTHESIZING
                ok = p[1] == rowgen
                pviews.append(
                    PartitionView(
                        i,
                        PARTITION_STATES[state],
                        PARTITION_STATES[stored],
                        _opt(p[4]) if ok else None,
                        _opt(p[5]) if ok else None,
                        _opt(p[6]) if ok else None,
                        p[3] if ok else 0,
                    )
                )
            out.append(
                JobView(
                    job_id,
                    unpack_str(kind),
                    PRIORITIES[prio] if prio < len(PRIORITIES) else "normal",
                    JOB_STATES[st] if st < len(JOB_STATES) else "queued",
                    _opt(sub),
                    _opt(started),
                    _opt(finished),
                    tuple(pviews),
                )
            )
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
        for kind, pstate in (
            ("device", "gpu"),
            ("finalizer", "finalizing"),
            ("synth", "synthesizing"),
        ):
            for v in self.slots(kind):
                if v.busy and parts.get((v.job_id, v.partition)) != pstate:
                    bad.append(
                        f"{kind} {v.slot} is {v.state} on {v.job_id}/{v.partition}, which"
                        f" is {parts.get((v.job_id, v.partition), 'not on the board')}"
                    )
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
        by_use = {unpack_str(m[4 + 2 * i]): m[5 + 2 * i] for i in range(n)}
        return {
            "total_bytes": total,
            "reserved_bytes": reserved,
            "used_bytes": reserved,
            "available_bytes": max(0, total - reserved),
            "by_use": by_use,
        }

    @cached_property
    def counters(self) -> dict:
        c = self.raw_counters
        retries, restarts, stale, qdepth, torn_repaired, dropped, nk, recovered = c[1:9]
        completed = {unpack_str(c[9 + 3 * i]): c[10 + 3 * i] for i in range(nk)}
        failed = {unpack_str(c[9 + 3 * i]): c[11 + 3 * i] for i in range(nk)}
        return {
            "total_completed": sum(completed.values()),
            "total_failed": sum(failed.values()),
            "completed_by_kind": {k: v for k, v in completed.items() if v},
            "failed_by_kind": {k: v for k, v in failed.items() if v},
            "retries": retries,
            "restarts": restarts,
            "stale_ends_ignored": stale,
            "queue_depth": qdepth,
            "torn_records_repaired": torn_repaired,
            "jobs_not_shown": dropped,
            "jobs_recovered": recovered,
        }

    @cached_property
    def keys(self) -> list[dict]:
        k = self.raw_keys
        out = []
        for i in range(k[1]):
            key_id, nbytes, devs, last, evictable, tables, curve, tbytes, load_ms, protocol = k[
                2 + 10 * i : 12 + 10 * i
            ]
            d = unpack_str(devs)
            out.append(
                {
                    "key_id": unpack_str(key_id),
                    "bytes": nbytes,
                    "devices": d.split(",") if d else [],
                    "last_used_secs_ago": _ago(self.now, _opt(last)),
                    "evictable": bool(evictable),
                    "curve": unpack_str(curve),
                    "table_bytes": tbytes,
                    "tables": KEY_TABLES[tables] if tables < len(KEY_TABLES) else "none",
                    "load_ms": _opt(load_ms),
                    "protocol": unpack_str(protocol),
                }
            )
        return out

    def to_dict(self) -> dict:
        """The status JSON (GET /status, `cuzk top --json`); shape fixed in TEAM.md."""
        now = self.now
        synth_workers = [
            {
                "worker_id": v.slot,
                "pid": v.pid,
                "state": v.state if v.state != "empty" else "dead",
                "generation": v.generation,
                "job_id": v.job_id,
                "partition": v.partition,
                "started_secs_ago": _ago(now, v.started_at),
                "heartbeat_age_secs": _ago(now, v.heartbeat),
                "restarts": v.restarts,
                "busy_secs": v.busy_secs,
            }
            for v in self.synth
            if v.state != "empty"
        ]
        gpu_workers = [
            {
                "worker_id": v.slot,
                "gpu_ordinal": v.ordinal,
                "device": v.device,
                "pid": v.pid,
                "state": v.state,
                "generation": v.generation,
                "current_job": v.job_id,
                "current_partition": v.partition,
                "started_secs_ago": _ago(now, v.started_at),
                "busy_secs": v.busy_secs,
                "heartbeat_age_secs": _ago(now, v.heartbeat),
                "restarts": v.restarts,
            }
            for v in self.devices
            if v.state != "empty"
        ]
        finalizers = [
            {
                "finalizer_id": v.slot,
                "gpu_ordinal": v.ordinal,
                "pid": v.pid,
                "state": v.state,
                "generation": v.generation,
                "current_job": v.job_id,
                "current_partition": v.partition,
                "started_secs_ago": _ago(now, v.started_at),
                "heartbeat_age_secs": _ago(now, v.heartbeat),
                "restarts": v.restarts,
                "device": v.device,
                "busy_secs": v.busy_secs,
                "from_worker": v.from_slot,
            }
            for v in self.finalizers
            if v.state != "empty"
        ]
        pipelines = []
        for j in self.jobs:
            pipelines.append(
                {
                    "job_id": j.job_id,
                    "proof_kind": j.kind,
                    "priority": j.priority,
                    "state": j.state,
                    "submitted_at": j.submitted_at,
                    "started_secs_ago": _ago(
                        now, j.started_at if j.started_at is not None else j.submitted_at
                    ),
                    "total_partitions": len(j.partitions),
                    "partitions_done": sum(p.state == "done" for p in j.partitions),
                    "partitions_failed": sum(p.state == "failed" for p in j.partitions),
                    "partitions": [
                        {
                            "index": p.index,
                            "state": p.state,
                            "synth_ms": p.synth_ms,
                            "gpu_ms": p.gpu_ms,
                            "finalize_ms": p.finalize_ms,
                            "attempts": p.attempts,
                        }
                        for p in j.partitions
                    ],
                }
            )
        keys = self.keys
        return {
            "instance": self.instance,
            "board": self.board,
            "layout_version": self.layout_version,
            "supervisor_pid": self.supervisor_pid,
            "started_at": self.started_at,
            "now": now,
            "uptime_secs": max(0.0, now - self.started_at),
            "consistent": self.consistent,
            "memory": self.memory,
            "synthesis": {
                "max_concurrent": len(synth_workers),
                "active": sum(w["state"] == "synthesizing" for w in synth_workers),
                "workers": synth_workers,
            },
            "gpu_workers": gpu_workers,
            "finalizers": finalizers,
            "pipelines": pipelines,
            "keys": keys,
            "allocations": {"srs": keys, "pce": []},
            "counters": self.counters,
        }

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)


class _Plan:
    """Per-layout constants for collect(): offsets and numpy strides, computed once."""

    def __init__(self, lay: Layout):
        o = lay.offsets
        self.a0, self.jo, self.a1 = o["device"], o["jobs"], o["partitions"]
        self.m0, self.m1 = o["memory"], o["end"]
        self.po = o["partitions"]
        self.row_span = lay.max_partitions * PART_SIZE
        self.maxp = lay.max_partitions
        self.nslots = lay.device_slots + lay.finalizer_slots + lay.synth_slots
        self.job_rows = lay.job_rows
        j = self.jo - self.a0
        self.slot_seq = slice(0, self.nslots * SLOT_SIZE // 8, SLOT_SIZE // 8)
        self.job_seq = slice(j // 8, None, JOB_SIZE // 8)
        self.job_state = slice(j + JOB_STATE_AT, None, JOB_SIZE)
        self.slot_low = slice(0, self.nslots * SLOT_SIZE, SLOT_SIZE)
        self.job_low = slice(j, None, JOB_SIZE)
        self.ctl = [
            (o[k] - self.m0, p)
            for k, p in (
                ("memory", lay.memory_payload),
                ("counters", lay.counters_payload),
                ("keys", lay.keys_payload),
            )
        ]


_ODD = bytes(i & 1 for i in range(256))  # bytes.translate table: byte -> its low bit


def collect(board, *, tries: int = 64, verify: bool | str = True) -> Snapshot:
    """Take a consistent cut of `board` (see module docstring); never blocks a writer.

    verify: True checks the crc of every record whose sequence changed since this handle last
    verified it (a record's bytes never change without its sequence changing), "all" checks
    every record, False none."""
    buf = board._buf
    plan = board._plan
    if plan is None:
        plan = board._plan = _Plan(board.layout)
    a0, a1, m0, m1, po, span = plan.a0, plan.a1, plan.m0, plan.m1, plan.po, plan.row_span
    psz = PART_SIZE
    ctl_low = [r for r, _ in plan.ctl]
    attempt = 0
    for attempt in range(1, tries + 1):
        if attempt > 8:
            time.sleep(0.00002 * min(attempt, 50))  # let a descheduled writer finish
        A = bytes(buf[a0:a1])
        # job rows in use span lo..hi-1: one copy for all their partition records
        st = A[plan.job_state]
        lo = len(st) - len(st.lstrip(b"\0"))
        hi = len(st.rstrip(b"\0"))
        p0, p1 = po + lo * span, po + max(hi, lo) * span
        P = bytes(buf[p0:p1])
        M = bytes(buf[m0:m1])
        now = _time()
        if bytes(buf[a0:a1]) != A or bytes(buf[p0:p1]) != P or bytes(buf[m0:m1]) != M:
            continue
        # low byte of every sequence number; any odd one: a writer is inside (or died there)
        low = A[plan.slot_low] + A[plan.job_low] + P[::psz] + bytes(M[r] for r in ctl_low)
        if 1 in low.translate(_ODD):
            continue
        torn = _verify(board, plan, verify, A, lo, P, M) if verify else ()
        return Snapshot(
            board.name,
            board.instance,
            LAYOUT_VERSION,
            board.pid,
            board.started_at,
            now,
            not torn,
            attempt,
            torn,
            True,
            board.layout,
            A,
            (lo, max(hi, lo)),
            P,
            M,
        )
    # No consistent cut: return the last copy; records being written are shown empty.
    torn = _verify(board, plan, "all", A, lo, P, M)
    return Snapshot(
        board.name,
        board.instance,
        LAYOUT_VERSION,
        board.pid,
        board.started_at,
        now,
        False,
        attempt,
        torn,
        False,
        board.layout,
        A,
        (lo, max(hi, lo)),
        P,
        M,
    )


_time = time.time
_U32 = struct.Struct("<I")
_SEQ_AT = lambda data, off: SEQ.unpack_from(data, off)[0]  # noqa: E731


def _check(data, rel: int, payload_size: int) -> bool:
    return (
        crc32(data[rel + 8 : rel + 8 + payload_size])
        == CHECK.unpack_from(data, rel + 8 + payload_size)[0]
    )


def _verify(board, plan, verify, A, lo, P, M) -> tuple:
    """Offsets of records with an even sequence whose check does not match their payload.

    With verify=True, records whose sequence equals the one this handle last verified are
    skipped (found with one vectorised comparison per section)."""
    import numpy as np  # here, not at the top: writer processes never need it

    lay = board.layout
    cache = board._verified
    full = verify != True  # noqa: E712 - "all" (or the fallback path)
    if not full and cache.get("last") == (A, lo, P, M):
        return ()
    if "slots" not in cache:
        # a cached seq of 0 never matches: every record was written once at creation
        cache["slots"] = np.zeros(plan.nslots, np.uint64)
        cache["jobs"] = np.zeros(plan.job_rows, np.uint64)
        cache["parts"] = np.zeros(plan.job_rows * plan.maxp, np.uint64)
        cache["ctl"] = {}
    u64 = np.frombuffer(A, np.uint64)
    sseq = u64[plan.slot_seq]
    jseq = u64[plan.job_seq][: plan.job_rows]
    pseq = np.frombuffer(P, np.uint64)[:: PART_SIZE // 8]
    torn = []
    mv = memoryview(A)
    a0 = plan.a0
    ch = range(plan.nslots) if full else (sseq != cache["slots"]).nonzero()[0].tolist()
    for i in ch:
        seq = int(sseq[i])
        if seq & 1:
            continue
        if _check(mv, i * SLOT_SIZE, SLOT_PAYLOAD.size):
            cache["slots"][i] = seq
        else:
            torn.append(a0 + i * SLOT_SIZE)
    jrel = plan.jo - a0
    ch = range(plan.job_rows) if full else (jseq != cache["jobs"]).nonzero()[0].tolist()
    for i in ch:
        seq = int(jseq[i])
        if seq & 1:
            continue
        if _check(mv, jrel + i * JOB_SIZE, JOB_PAYLOAD.size):
            cache["jobs"][i] = seq
        else:
            torn.append(plan.jo + i * JOB_SIZE)
    if len(pseq):
        first = lo * plan.maxp  # index of the span's first partition record in the cache
        cached = cache["parts"][first : first + len(pseq)]
        ch = range(len(pseq)) if full else (pseq != cached).nonzero()[0].tolist()
        pm = memoryview(P)
        for k in ch:
            seq = int(pseq[k])
            if seq & 1:
                continue
            if _check(pm, k * PART_SIZE, PART_PAYLOAD.size):
                cached[k] = seq
            else:
                row, i = divmod(first + k, plan.maxp)
                torn.append(lay.part_offset(row, i))
    for rel, payload in plan.ctl:
        seq = _SEQ_AT(M, rel)
        if seq & 1 or (not full and cache["ctl"].get(rel) == seq):
            continue
        if _check(M, rel, payload.size):
            cache["ctl"][rel] = seq
        else:
            torn.append(plan.m0 + rel)
    if not torn:
        cache["last"] = (A, lo, P, M)
    return tuple(torn)
