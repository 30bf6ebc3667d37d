"""Control records: jobs, partitions, memory, counters and keys, which any process may write.

Writers serialise on the control lock (an flock on the segment, segment.ControlLock). Before
each write the writer stores the record's offset + 1 in the header's dirty word and clears it
after, so a writer killed inside leaves a pointer to the one record it may have torn: the next
writer to take the lock repairs that record first (completes it if its check matches, else
resets it to empty) and counts it in torn_records_repaired.
"""

from __future__ import annotations

import math
import time
from zlib import crc32

from cuzk.board.layout import (
    CHECK,
    CTL_DIRTY_OFFSET,
    ID_BYTES,
    J_FINISHED,
    J_FREE,
    J_ID,
    J_NPART,
    J_QUEUED,
    J_ROWGEN,
    J_RUNNING,
    J_STARTED,
    J_STATE,
    J_SUBMITTED,
    JOB_FINISHED,
    JOB_PAYLOAD,
    JOB_STATES,
    KEY_CURVE_BYTES,
    KEY_DEVICES_BYTES,
    KEY_PROTOCOL_BYTES,
    KEY_TABLES,
    LABEL_BYTES,
    P_ATTEMPTS,
    P_FIN_MS,
    P_FINALIZING,
    P_GPU,
    P_GPU_MS,
    P_ROWGEN,
    P_STATE,
    P_SYNTH_MS,
    PART_PAYLOAD,
    PARTITION_STATES,
    PRIORITIES,
    SEQ,
    SLOT_BUSY,
    SLOT_KINDS,
    SLOT_RECORD,
    STORED_PARTITION_STATES,
    Layout,
    check_priority,
    pack_str,
)
from cuzk.board.seqlock import EMPTY_KEY_ROW, empty_part, write_record

_SEQ = SEQ
_CHECK = CHECK
_SLOT_R = SLOT_RECORD
_NAN = math.nan


class ControlRecords:
    """The control records of one board mapping, and the lock that serialises their writers.

    `with control:` holds the lock (and repairs first); the public methods take it themselves.
    """

    def __init__(self, buf, layout: Layout, lock):
        self._buf = buf
        self.layout = layout
        self._lock = lock  # segment.ControlLock on the segment's file descriptor
        self._rows: dict[str, tuple[int, int]] = {}  # job id -> (row, row generation) cache

    # --- the lock, and repair of what a killed writer left --------------------------------------
    def __enter__(self):
        """Enter the control lock and repair what a writer killed inside it left half-written."""
        self._lock.__enter__()
        try:
            dirty = _SEQ.unpack_from(self._buf, CTL_DIRTY_OFFSET)[0]
            if dirty:
                self._repair(dirty - 1)
        except BaseException:
            self._lock.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        self._lock.__exit__()

    def _write(self, off: int, payload, fields) -> None:
        buf = self._buf
        _SEQ.pack_into(buf, CTL_DIRTY_OFFSET, off + 1)
        write_record(buf, off, payload, fields)
        _SEQ.pack_into(buf, CTL_DIRTY_OFFSET, 0)

    def _payload_at(self, off: int):
        o = self.layout.offsets
        if off == o["memory"]:
            return self.layout.memory_payload
        if off == o["counters"]:
            return self.layout.counters_payload
        if off == o["keys"]:
            return self.layout.keys_payload
        if off >= o["partitions"]:
            return PART_PAYLOAD
        return JOB_PAYLOAD

    def _repair(self, off: int) -> None:
        buf = self._buf
        payload = self._payload_at(off)
        seq = _SEQ.unpack_from(buf, off)[0]
        if seq & 1:
            data = bytes(buf[off + 8 : off + 8 + payload.size])
            if crc32(data) == _CHECK.unpack_from(buf, off + 8 + payload.size)[0]:
                fields = payload.unpack(data)  # the write completed except for its last store
            else:
                fields = payload.unpack(bytes(payload.size))  # torn: reset to empty
            write_record(buf, off, payload, fields)
            _SEQ.pack_into(buf, CTL_DIRTY_OFFSET, 0)
            self._count_locked(torn_repaired=1)
        _SEQ.pack_into(buf, CTL_DIRTY_OFFSET, 0)

    def _read(self, off: int, payload) -> list:
        """Fields of a control record (caller holds the control lock: no writer is inside)."""
        return list(payload.unpack_from(self._buf, off + 8))

    # --- counters, memory, keys ------------------------------------------------------------------
    def count(self, **inc) -> None:
        """Add to the counters (keywords of _count_locked) under the lock."""
        with self:
            self._count_locked(**inc)

    # counters payload field indexes
    _C_RETRIES, _C_RESTARTS, _C_STALE, _C_QDEPTH, _C_TORN, _C_DROPPED, _C_NKINDS, _C_RECOVERED = (
        range(8)
    )

    def _count_locked(
        self,
        *,
        retries=0,
        restarts=0,
        stale_ends=0,
        torn_repaired=0,
        jobs_dropped=0,
        recovered=0,
        queue_depth=None,
        completed=None,
        failed=None,
        n=1,
    ):
        lay = self.layout
        off = lay.offsets["counters"]
        payload = lay.counters_payload
        f = self._read(off, payload)
        f[0] += retries
        f[1] += restarts
        f[2] += stale_ends
        if queue_depth is not None:
            f[3] = queue_depth
        f[4] += torn_repaired
        f[5] += jobs_dropped
        f[7] += recovered
        kind = completed if completed is not None else failed
        if kind is not None:
            # struct returns "24s" fields zero padded: compare padded labels
            label = pack_str(kind, LABEL_BYTES, "proof kind").ljust(LABEL_BYTES, b"\0")
            nk = f[6]
            for i in range(nk):
                if f[8 + 3 * i] == label:
                    break
            else:
                if nk < lay.kind_rows:
                    i = nk
                    f[6] = nk + 1
                    f[8 + 3 * i] = label
                else:
                    i = lay.kind_rows - 1
                    f[8 + 3 * i] = b"other"
            f[9 + 3 * i + (0 if completed is not None else 1)] += n
        self._write(off, payload, f)

    def count_completed(self, kind: str, n: int = 1) -> None:
        self.count(completed=kind, n=n)

    def count_failed(self, kind: str, n: int = 1) -> None:
        self.count(failed=kind, n=n)

    def count_recovered(self, n: int = 1) -> None:
        """Count jobs re-queued from the job journal after a restart."""
        self.count(recovered=n)

    def count_retry(self, n: int = 1) -> None:
        self.count(retries=n)

    def count_restart(self, n: int = 1) -> None:
        """Count a restarted child process (reclaim() counts per slot, not here)."""
        self.count(restarts=n)

    def set_queue_depth(self, n: int) -> None:
        self.count(queue_depth=int(n))

    def set_memory(self, total: int, reserved: int, by_use: dict[str, int] | None = None) -> None:
        """The memory budget: total and reserved bytes, and reserved bytes by use label. Labels
        beyond the board's rows are summed into "other"."""
        lay = self.layout
        items = list((by_use or {}).items())
        if len(items) > lay.by_use_rows:
            keep = items[: lay.by_use_rows - 1]
            keep.append(("other", sum(v for _, v in items[lay.by_use_rows - 1 :])))
            items = keep
        f = [int(total), int(reserved), len(items)]
        for i in range(lay.by_use_rows):
            if i < len(items):
                f += [pack_str(items[i][0], LABEL_BYTES, "memory label"), int(items[i][1])]
            else:
                f += [b"", 0]
        with self:
            self._write(lay.offsets["memory"], lay.memory_payload, f)

    def set_keys(self, keys: list[dict]) -> None:
        """Proving keys resident: dicts with key_id, bytes, devices (list of str), evictable,
        last_used (unix time) or last_used_secs_ago, and optionally curve (the key's curve
        as its files name it, "bn128" or "bls12381"), table_bytes (of bytes, the key's
        tables of multiples), tables (their state, one of KEY_TABLES: "none", "building",
        "ready"), load_ms (its last load on a device) and protocol (its proof
        system, "groth16" or "plonk"). Keys beyond the board's rows are dropped (most
        recently used kept)."""
        lay = self.layout
        now = time.time()
        rows = []
        for k in keys:
            if "last_used" in k and k["last_used"] is not None:
                t = float(k["last_used"])
            elif k.get("last_used_secs_ago") is not None:
                t = now - float(k["last_used_secs_ago"])
            else:
                t = _NAN
            devs = ",".join(k.get("devices") or []).encode()[:KEY_DEVICES_BYTES]
            rows.append(
                (
                    pack_str(str(k["key_id"]), ID_BYTES, "key id"),
                    int(k["bytes"]),
                    devs,
                    t,
                    1 if k.get("evictable") else 0,
                    KEY_TABLES.index(k.get("tables") or "none"),
                    str(k.get("curve") or "").encode()[:KEY_CURVE_BYTES],
                    int(k.get("table_bytes") or 0),
                    _NAN if k.get("load_ms") is None else float(k["load_ms"]),
                    str(k.get("protocol") or "").encode()[:KEY_PROTOCOL_BYTES],
                )
            )
        if len(rows) > lay.key_rows:
            rows.sort(key=lambda r: -(r[3] if r[3] == r[3] else -1e300))
            rows = rows[: lay.key_rows]
        f = [len(rows)]
        for i in range(lay.key_rows):
            f += list(rows[i]) if i < len(rows) else EMPTY_KEY_ROW
        with self:
            self._write(lay.offsets["keys"], lay.keys_payload, f)

    # --- jobs ----------------------------------------------------------------------------------
    def find_row(self, job: bytes, job_id: str) -> int | None:
        """Row holding `job` (control lock held), via the cache, else by scanning."""
        buf = self._buf
        job = job.ljust(ID_BYTES, b"\0")  # struct returns "48s" fields zero padded
        hit = self._rows.get(job_id)
        if hit is not None:
            row, rowgen = hit
            f = JOB_PAYLOAD.unpack_from(buf, self.layout.job_offset(row) + 8)
            if f[J_ROWGEN] == rowgen and f[J_ID] == job and f[J_STATE] != J_FREE:
                return row
            del self._rows[job_id]
        for row in range(self.layout.job_rows):
            f = JOB_PAYLOAD.unpack_from(buf, self.layout.job_offset(row) + 8)
            if f[J_ID] == job and f[J_STATE] != J_FREE:
                self._rows[job_id] = (row, f[J_ROWGEN])
                return row
        return None

    def _busy_jobs(self) -> set[bytes]:
        """Job ids named by busy slots right now (a hint for eviction; slots are not locked)."""
        lay = self.layout
        out = set()
        for kind in SLOT_KINDS:
            for i in range(lay.slots(kind)):
                r = _SLOT_R.unpack_from(self._buf, lay.slot_offset(kind, i))
                if r[2] == SLOT_BUSY:
                    out.add(r[7].rstrip(b"\0"))
        return out

    def job_add(
        self,
        job_id: str,
        kind: str,
        priority: str,
        n_partitions: int,
        submitted_at: float | None = None,
    ) -> bool:
        """Put a job on the board (state queued, partitions pending). When the table is full the
        oldest finished job not named by a busy slot makes room; if there is none, the job is
        not shown (jobs_dropped counted) and False is returned: the board never stops proving."""
        job = pack_str(job_id, ID_BYTES, "job id")
        kind_b = pack_str(kind, LABEL_BYTES, "proof kind")
        check_priority(priority)
        lay = self.layout
        if not 1 <= n_partitions <= lay.max_partitions:
            raise ValueError(
                f"job {job_id}: {n_partitions} partitions, the board holds 1.."
                f"{lay.max_partitions} per job"
            )
        submitted_at = time.time() if submitted_at is None else float(submitted_at)
        with self:
            if self.find_row(job, job_id) is not None:
                raise ValueError(f"job {job_id} is already on the board")
            rows = [
                JOB_PAYLOAD.unpack_from(self._buf, lay.job_offset(r) + 8)
                for r in range(lay.job_rows)
            ]
            free = [r for r, f in enumerate(rows) if f[J_STATE] == J_FREE]
            if free:
                row = free[0]
            else:
                busy = self._busy_jobs()
                done = [
                    (
                        f[J_FINISHED] if f[J_FINISHED] == f[J_FINISHED] else 0.0,
                        f[J_SUBMITTED],
                        r,
                    )
                    for r, f in enumerate(rows)
                    if f[J_STATE] in JOB_FINISHED and f[J_ID].rstrip(b"\0") not in busy
                ]
                if not done:
                    self._count_locked(jobs_dropped=1)
                    return False
                row = min(done)[2]
            rowgen = rows[row][J_ROWGEN] + 1
            # Partitions first, then the job record that makes them visible (readers ignore
            # partition records whose row generation differs from their job record's).
            for i in range(n_partitions):
                self._write(lay.part_offset(row, i), PART_PAYLOAD, empty_part(rowgen))
            self._write(
                lay.job_offset(row),
                JOB_PAYLOAD,
                (
                    rowgen,
                    job,
                    kind_b,
                    PRIORITIES.index(priority),
                    J_QUEUED,
                    n_partitions,
                    submitted_at,
                    _NAN,
                    _NAN,
                ),
            )
            self._rows[job_id] = (row, rowgen)
            return True

    def job_set_state(self, job_id: str, state: str) -> bool:
        """queued | running | done | failed | cancelled. False if the job is not on the board."""
        try:
            st = JOB_STATES.index(state)
        except ValueError:
            st = 0
        if st == J_FREE:
            raise ValueError(f"job state must be one of {JOB_STATES[1:]}, got {state!r}")
        job = pack_str(job_id, ID_BYTES, "job id")
        with self:
            row = self.find_row(job, job_id)
            if row is None:
                return False
            off = self.layout.job_offset(row)
            f = self._read(off, JOB_PAYLOAD)
            now = time.time()
            if st == J_RUNNING and f[J_STARTED] != f[J_STARTED]:
                f[J_STARTED] = now
            if st in JOB_FINISHED:
                f[J_FINISHED] = now
            f[J_STATE] = st
            self._write(off, JOB_PAYLOAD, f)
            return True

    def partition_set(
        self,
        job_id: str,
        index: int,
        state: str | None = None,
        *,
        synth_ms: float | None = None,
        gpu_ms: float | None = None,
        finalize_ms: float | None = None,
        attempts: int | None = None,
    ) -> bool:
        """Update a partition's stored state (pending | synth_done | done | failed) and timings;
        None leaves a field as it is. synthesizing, gpu and finalizing are not stored: they come
        from the slot that names the partition (claim it instead). False if the job or the
        index is not on the board."""
        st = None
        if state is not None:
            try:
                st = PARTITION_STATES.index(state)
            except ValueError:
                raise ValueError(f"unknown partition state {state!r}") from None
            if st not in STORED_PARTITION_STATES:
                kind = {P_GPU: "device", P_FINALIZING: "finalizer"}.get(st, "synth")
                raise ValueError(
                    f"partition state {state!r} is derived from the slot that names the "
                    f"partition (claim a {kind} slot instead); partition_set stores pending, "
                    f"synth_done, done, failed"
                )
        job = pack_str(job_id, ID_BYTES, "job id")
        with self:
            row = self.find_row(job, job_id)
            if row is None:
                return False
            jf = JOB_PAYLOAD.unpack_from(self._buf, self.layout.job_offset(row) + 8)
            if not 0 <= index < jf[J_NPART]:
                return False
            off = self.layout.part_offset(row, index)
            f = self._read(off, PART_PAYLOAD)
            f[P_ROWGEN] = jf[J_ROWGEN]
            if st is not None:
                f[P_STATE] = st
            if attempts is not None:
                f[P_ATTEMPTS] = int(attempts)
            if synth_ms is not None:
                f[P_SYNTH_MS] = float(synth_ms)
            if gpu_ms is not None:
                f[P_GPU_MS] = float(gpu_ms)
            if finalize_ms is not None:
                f[P_FIN_MS] = float(finalize_ms)
            self._write(off, PART_PAYLOAD, f)
            return True
