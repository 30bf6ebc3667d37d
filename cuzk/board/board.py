"""The status board: one shared-memory segment that every cuzk process writes and viewers read.

Who writes what (the whole concurrency design; docs/status-board.md has the bytes):

    supervisor ──create──► header (once), reclaim(slot) after a child died
    device process ──────► its device slots and the finalizer slots of its finalizer threads
    synthesis process ───► its synthesis slot
    anyone (flock) ──────► jobs, partitions, memory, counters, keys ("control records")
    viewers ─────────────► nothing; snapshot() never blocks a writer

* A slot record has one writing process at a time: the process that registered it (its threads
  serialise on a per-process lock), or the supervisor once that process is dead (reclaim).
  Slot writes therefore need no cross-process lock: a per-record sequence (odd while writing)
  lets readers detect and retry a read that overlapped a write.
* Claiming a slot bumps its generation and returns a Token. end(token) changes nothing when the
  slot's generation has moved on (the seed story: a finalizer for an old partition can no
  longer mark a worker idle that already proves the next one); it is counted instead.
* A partition's transient states are not stored: it is "gpu" exactly when a proving device slot
  names it, "finalizing" when a finalizing finalizer slot names it, "synthesizing" when a
  synthesis slot does. So "a partition in state gpu is named by exactly one proving worker, and a
  proving worker names a partition in state gpu" holds in every consistent snapshot by
  construction, not by writers updating two records at once.
* The device -> finalizer handoff commits with one record write: the finalizer's claim names the
  device slot and generation it takes over from, and from that write on, readers show the device
  as done with the partition even before its own end() lands.
"""

from __future__ import annotations

import math
import os
import time
from typing import NamedTuple
from zlib import crc32

from cuzk.board import layout as L
from cuzk.board import segment as S

_SEQ = L.SEQ
_CHECK = L.CHECK
_SLOT_P = L.SLOT_PAYLOAD
_SLOT_R = L.SLOT_RECORD
_SLOT_PSIZE = L.SLOT_PAYLOAD.size
_NAN = math.nan
_SLOT_SIZE = L.SLOT_SIZE
_SLOT_END = 8 + _SLOT_PSIZE + 4  # end of payload + check inside a slot record
_ID_BYTES = L.ID_BYTES
_BUSY, _IDLE, _NONE = L.SLOT_BUSY, L.SLOT_IDLE, L.NONE_I32
_time = time.time
_new_token = tuple.__new__  # Token(...) without NamedTuple's Python-level __new__
_EMPTY_SLOT = (0, L.SLOT_EMPTY, 0, 0, 0, L.NONE_I32, b"", b"", _NAN, 0.0, _NAN, L.NONE_I32, 0)


class Token(NamedTuple):
    """Proof of a claim: later writes carrying it change nothing once the slot moved on."""

    slot: int
    generation: int
    kind: str = "device"


class BoardError(RuntimeError):
    """The segment is not a board this code can read (bad magic, other layout version)."""


def _write(buf, off: int, payload: L.struct.Struct, fields) -> int:
    """Seqlocked write of one whole record; returns the new (even) sequence number.

    Starts from the current sequence whatever it is: an odd one left by a writer that died
    inside is simply completed (s | 1 is the odd value to announce, +1 the even one to finish).
    """
    b = payload.pack(*fields)  # before the odd store: a bad field must not leave it odd
    b += crc32(b).to_bytes(4, "little")
    odd = _SEQ.unpack_from(buf, off)[0] | 1
    _SEQ.pack_into(buf, off, odd)
    # payload and check in one copy: a writer killed between two stores leaves either the old
    # or the new pair, both self-consistent (see reclaim/_repair)
    buf[off + 8:off + 8 + len(b)] = b
    _SEQ.pack_into(buf, off, odd + 1)
    return odd + 1


def read_record(buf, off: int, record: L.struct.Struct, payload_size: int, tries: int = 100):
    """One record by the sequence protocol: (fields, status) with status "ok", "busy" (a writer
    stayed inside for all `tries`; fields None) or "torn" (stable even sequence but the check
    does not match: the protocol failed; fields None). Never blocks."""
    for _ in range(tries):
        s1 = _SEQ.unpack_from(buf, off)[0]
        if s1 & 1:
            continue
        data = bytes(buf[off:off + record.size])
        s2 = _SEQ.unpack_from(buf, off)[0]
        if s1 != s2:
            continue
        r = record.unpack(data)
        if r[0] != s1:  # the copy itself saw another sequence than both probes
            continue
        if crc32(data[8:8 + payload_size]) != r[-1]:
            return None, "torn"
        return r, "ok"
    return None, "busy"


class SlotTable:
    """The slots of one kind ("device", "finalizer", "synth") on a board."""

    def __init__(self, board: Board, kind: str):
        self.board = board
        self.kind = kind
        self.n = board.layout.slots(kind)
        self._base = board.layout.offsets[kind]
        self._buf = board._buf
        self._lock = S.slot_lock(board.name)

    def __len__(self):
        return self.n

    def _off(self, slot: int) -> int:
        if not 0 <= slot < self.n:
            raise IndexError(f"{self.kind} slot {slot} out of range 0..{self.n - 1}")
        return self._base + slot * L.SLOT_SIZE

    def _fields(self, off: int) -> list:
        """Current payload of a slot this process writes (so no concurrent writer exists)."""
        r = _SLOT_R.unpack_from(self._buf, off)
        return list(r[1:-1])

    def _owned(self, off: int) -> tuple[list, bool, int]:
        """(payload fields, torn, seq) of a slot nobody else is writing now. Torn: a writer
        died inside it (odd seq) in the middle of the payload copy (check mismatch)."""
        r = _SLOT_R.unpack_from(self._buf, off)
        torn = bool(r[0] & 1) and crc32(self._buf[off + 8:off + 8 + _SLOT_PSIZE]) != r[-1]
        return list(r[1:-1]), torn, r[0]

    def register(self, slot: int, pid: int | None = None, *, ordinal: int = 0,
                 device: str | None = None) -> Token:
        """A process starts owning `slot`: state idle, generation bumped (older tokens die).

        `ordinal` is the GPU ordinal (device workers, finalizers) or the worker number
        (synthesis); `device` a label such as "cpu:0" or "cuda:1" (default "cpu:<ordinal>" for
        device workers)."""
        off = self._off(slot)
        if device is None:
            device = f"cpu:{ordinal}" if self.kind == "device" else ""
        dev = L.pack_str(device, L.DEVICE_BYTES, "device")
        now = time.time()
        with self._lock:
            f, torn, seq = self._owned(off)
            if torn or f[L.S_STATE] == L.SLOT_EMPTY:
                f = list(_EMPTY_SLOT)
            # (see reclaim for why seq + 1 outruns every generation of a torn record)
            gen = seq + 1 if torn else f[L.S_GEN] + 1
            f[L.S_GEN] = gen
            f[L.S_STATE] = L.SLOT_IDLE
            f[L.S_PID] = os.getpid() if pid is None else pid
            f[L.S_ORDINAL] = ordinal
            f[L.S_PARTITION] = L.NONE_I32
            f[L.S_JOB] = b""
            f[L.S_DEVICE] = dev
            f[L.S_STARTED] = _NAN
            f[L.S_HEARTBEAT] = now
            f[L.S_FROM_SLOT] = L.NONE_I32
            f[L.S_FROM_GEN] = 0
            _write(self._buf, off, _SLOT_P, f)
        return Token(slot, gen, self.kind)

    def claim(self, slot: int, job_id: str, partition: int, *,
              from_token: Token | None = None) -> Token:
        """Mark `slot` busy on (job_id, partition); returns the token that can end it.

        For a finalizer, `from_token` is the device claim it takes the partition over from: this
        one write is the handoff's commit point (see module docstring)."""
        # The hot path: _write() inlined, module constants, no helper calls.
        if not 0 <= slot < self.n:
            raise IndexError(f"{self.kind} slot {slot} out of range 0..{self.n - 1}")
        off = self._base + slot * _SLOT_SIZE
        job = job_id.encode()
        if len(job) > _ID_BYTES:
            raise ValueError(f"job id {job_id!r} is longer than {_ID_BYTES} bytes")
        if from_token is None:
            fs = fg = None
        else:
            fs, fg = from_token.slot, from_token.generation
        buf = self._buf
        with self._lock:
            now = _time()
            r = _SLOT_R.unpack_from(buf, off)
            gen = r[1] + 1
            busy = r[10]
            if r[2] == _BUSY:  # claimed again without an end: the old claim is over now
                busy += now - r[9]
            b = _SLOT_P.pack(gen, _BUSY, r[3], r[4], r[5], partition, job, r[8], now, busy, now,
                             _NONE if fs is None else fs, 0 if fg is None else fg)
            b += crc32(b).to_bytes(4, "little")
            odd = r[0] | 1
            _SEQ.pack_into(buf, off, odd)
            buf[off + 8:off + _SLOT_END] = b
            _SEQ.pack_into(buf, off, odd + 1)
        return _new_token(Token, (slot, gen, self.kind))

    def end(self, token: Token, **partition_update) -> bool:
        """End the claim `token` names: the slot becomes idle. Returns False, changing nothing
        but the stale-end counter, when the slot has been claimed, reclaimed or registered again
        since (or this claim already ended).

        Keyword arguments (state=, synth_ms=, gpu_ms=, finalize_ms=, attempts=) update the
        partition the claim names first, while the slot still names it, so that no snapshot
        sees the partition fall back to an older state in between."""
        slot, gen, kind = token
        if kind != self.kind:
            raise ValueError(f"a {kind} token cannot end a {self.kind} slot")
        if not 0 <= slot < self.n:
            raise IndexError(f"{self.kind} slot {slot} out of range 0..{self.n - 1}")
        off = self._base + slot * _SLOT_SIZE
        buf = self._buf
        with self._lock:
            r = _SLOT_R.unpack_from(buf, off)
            if r[1] != gen or r[2] != _BUSY:
                self.board._count(stale_ends=1)
                return False
            if partition_update:
                self.board.partition_set(L.unpack_str(r[7]), r[6], **partition_update)
            now = _time()
            b = _SLOT_P.pack(gen, _IDLE, r[3], r[4], r[5], _NONE, b"", r[8], _NAN,
                             r[10] + (now - r[9]), now, _NONE, 0)
            b += crc32(b).to_bytes(4, "little")
            odd = r[0] | 1
            _SEQ.pack_into(buf, off, odd)
            buf[off + 8:off + _SLOT_END] = b
            _SEQ.pack_into(buf, off, odd + 1)
        return True

    def heartbeat(self, slot: int, token: Token | None = None) -> bool:
        """The owning process is alive: stamp the slot's heartbeat time. With `token`, only
        while that claim is current (else nothing is written, the stale write is counted and
        False returned), so a thread still working for an old claim cannot refresh it."""
        off = self._off(slot)
        with self._lock:
            f = self._fields(off)
            if token is not None and (f[L.S_GEN] != token.generation
                                      or f[L.S_STATE] != _BUSY or token.kind != self.kind):
                self.board._count(stale_ends=1)
                return False
            f[L.S_HEARTBEAT] = time.time()
            _write(self._buf, off, _SLOT_P, f)
        return True

    def reclaim(self, slot: int) -> Token:
        """Supervisor only, after the owning process died: new generation (every token of the
        dead process goes stale), state dead, job cleared, restarts + 1. Works on a record the
        dead process left half-written. The next owner calls register()."""
        off = self._off(slot)
        with self._lock:
            f, torn, seq = self._owned(off)
            # Half-written by the dead process? Then its generation field may be torn. But
            # gen <= seq always holds (each write adds 2 to seq and at most 1 to gen), so a new
            # generation of seq + 1 exceeds every token handed out; it equals the seq this
            # write ends with, which keeps gen <= seq.
            gen = seq + 1 if torn else f[L.S_GEN] + 1
            if torn or f[L.S_STATE] == L.SLOT_EMPTY:
                # nothing in a torn payload can be trusted: start from an empty record (its pid,
                # busy time and restart count are lost; restarts becomes 1)
                f = list(_EMPTY_SLOT)
            busy = f[L.S_BUSY]
            if f[L.S_STATE] == L.SLOT_BUSY and not torn and f[L.S_STARTED] == f[L.S_STARTED]:
                busy += max(0.0, time.time() - f[L.S_STARTED])
            f[L.S_GEN] = gen
            f[L.S_STATE] = L.SLOT_DEAD
            f[L.S_RESTARTS] = (f[L.S_RESTARTS] + 1) & 0xFFFFFFFF
            f[L.S_PARTITION] = L.NONE_I32
            f[L.S_JOB] = b""
            f[L.S_STARTED] = _NAN
            f[L.S_BUSY] = busy if busy == busy else 0.0
            f[L.S_FROM_SLOT] = L.NONE_I32
            f[L.S_FROM_GEN] = 0
            _write(self._buf, off, _SLOT_P, f)
        return Token(slot, gen, self.kind)

    def read(self, slot: int, tries: int = 100):
        """(fields, status) of one slot by the sequence protocol; see read_record()."""
        return read_record(self._buf, self._off(slot), _SLOT_R, _SLOT_PSIZE, tries)


class Board:
    """A handle on one status board segment (create it in the supervisor, attach elsewhere)."""

    def __init__(self, shm, layout: L.Layout, *, creator: bool):
        self._shm = shm
        self._buf = shm.buf
        self.name = shm.name.lstrip("/")
        self.layout = layout
        self.is_creator = creator
        h = L.HEADER.unpack_from(self._buf, 0)
        self.pid = h[4]
        self.started_at = h[5]
        self.instance = L.unpack_str(h[-1])
        self._ctl = S.ControlLock(shm._fd)
        self._rows: dict[str, tuple[int, int]] = {}  # job id -> (row, row generation) cache
        self.devices = SlotTable(self, "device")
        self.finalizers = SlotTable(self, "finalizer")
        self.synth = SlotTable(self, "synth")
        self._tables = {"device": self.devices, "finalizer": self.finalizers,
                        "synth": self.synth}
        self._verified: dict = {}  # reader cache, see snapshot._verify
        self._plan = None  # reader constants, see snapshot._Plan

    # --- lifecycle ------------------------------------------------------------------------
    @classmethod
    def create(cls, name: str | None = None, *, instance: str = "cuzk", device_slots: int,
               finalizer_slots: int, synth_slots: int, job_rows: int = 64,
               max_partitions: int = 32, key_rows: int = 16, by_use_rows: int = 8,
               kind_rows: int = 8) -> Board:
        """Create a new board segment (fails if `name` exists). Default name cuzk-<pid>-<hex>."""
        layout = L.Layout(device_slots, finalizer_slots, synth_slots, job_rows, max_partitions,
                          key_rows, by_use_rows, kind_rows)
        inst = L.pack_str(instance, L.INSTANCE_BYTES, "instance name")
        try:
            shm = S.open_segment(name or S.new_name(), create=True, size=layout.total_size)
        except FileExistsError:
            raise BoardError(f"board {name!r} already exists (in use, or left by a process "
                             "that is gone: segment.free_name removes such a one)") from None
        buf = shm.buf
        pid = os.getpid()
        offs = layout.offsets
        header = L.HEADER.pack(b"\0" * 8, L.LAYOUT_VERSION, L.HEADER_SIZE, layout.total_size,
                               pid, time.time(), S.process_create_time(pid), *layout.counts(),
                               *(offs[k] for k in ("device", "finalizer", "synth", "jobs",
                                                   "partitions", "memory", "counters", "keys")),
                               inst)
        buf[:len(header)] = header
        # Write every record once, so each starts with a valid check and NaN "no value" floats.
        for kind in L.SLOT_KINDS:
            for i in range(layout.slots(kind)):
                _write(buf, layout.slot_offset(kind, i), _SLOT_P, _EMPTY_SLOT)
        for row in range(layout.job_rows):
            _write(buf, layout.job_offset(row), L.JOB_PAYLOAD, _empty_job())
            for i in range(layout.max_partitions):
                _write(buf, layout.part_offset(row, i), L.PART_PAYLOAD, _empty_part(0))
        _write(buf, offs["memory"], layout.memory_payload, _empty_memory(layout))
        _write(buf, offs["counters"], layout.counters_payload, _empty_counters(layout))
        _write(buf, offs["keys"], layout.keys_payload, _empty_keys(layout))
        buf[0:8] = L.MAGIC  # last: list_boards() ignores a board until its header is complete
        return cls(shm, layout, creator=True)

    @classmethod
    def attach(cls, name: str) -> Board:
        """Attach to an existing board by name (the resource tracker never unlinks it)."""
        shm = S.open_segment(name)
        try:
            if shm.size < L.HEADER_SIZE:
                raise BoardError(f"{name}: too small to be a board")
            h = L.HEADER.unpack_from(shm.buf, 0)
            if h[0] != L.MAGIC:
                raise BoardError(f"{name}: not a cuzk board (or still being created)")
            if h[1] != L.LAYOUT_VERSION:
                raise BoardError(f"{name}: layout version {h[1]}, this code reads "
                                 f"{L.LAYOUT_VERSION}")
            layout = L.Layout(*h[7:15])
            if layout.total_size != h[3] or shm.size < h[3]:
                raise BoardError(f"{name}: size mismatch")
        except BaseException:
            shm.close()
            raise
        return cls(shm, layout, creator=False)

    def close(self) -> None:
        """Unmap this handle (the board stays for others)."""
        if self._shm is None:
            return
        for t in self._tables.values():
            t._buf = None
        self._buf = None
        self._tables = {}
        self.devices = self.finalizers = self.synth = None
        shm, self._shm = self._shm, None
        shm.close()

    def unlink(self) -> None:
        """Remove the board's name (creator only, at shutdown); mappings stay valid until closed."""
        if not self.is_creator:
            raise PermissionError("only the process that created a board unlinks it")
        S.unlink_segment(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        creator = self.is_creator
        self.close()
        if creator:
            S.unlink_segment(self.name)

    def __repr__(self):
        return f"Board({self.name!r}, instance={self.instance!r}, pid={self.pid})"

    # --- slots: convenience over the three tables --------------------------------------------
    def table(self, kind: str) -> SlotTable:
        return self._tables[kind]

    def claim_device(self, slot: int, job_id: str, partition: int) -> Token:
        """A device worker starts (job_id, partition): from this write on it shows as gpu."""
        return self.devices.claim(slot, job_id, partition)

    def handoff(self, device_token: Token, finalizer_slot: int) -> Token | None:
        """Split proving: the device worker hands its partition to a finalizer thread.

        One write (the finalizer's claim, naming the device claim) moves the partition from gpu
        to finalizing in every snapshot; then the device claim ends. Returns the finalizer's
        token, or None (nothing written, counted as a stale end) if `device_token` is stale.
        Write both slots from the process that owns them (the device process)."""
        off = self.devices._off(device_token.slot)
        with self.devices._lock:
            r = _SLOT_R.unpack_from(self._buf, off)
            if r[1] != device_token.generation or r[2] != L.SLOT_BUSY:
                self._count(stale_ends=1)
                return None
            ftok = self.finalizers.claim(finalizer_slot, L.unpack_str(r[7]), r[6],
                                         from_token=device_token)
            self.devices.end(device_token)
        return ftok

    def end(self, token: Token, **partition_update) -> bool:
        """End any claim; see SlotTable.end."""
        return self._tables[token.kind].end(token, **partition_update)

    # --- control records (serialised by the control lock) ------------------------------------
    def _ctl_begin(self):
        """Enter the control lock and repair what a writer killed inside it left half-written."""
        self._ctl.__enter__()
        try:
            dirty = _SEQ.unpack_from(self._buf, L.CTL_DIRTY_OFFSET)[0]
            if dirty:
                self._repair(dirty - 1)
        except BaseException:
            self._ctl.__exit__()
            raise

    def _ctl_write(self, off: int, payload, fields) -> None:
        buf = self._buf
        _SEQ.pack_into(buf, L.CTL_DIRTY_OFFSET, off + 1)
        _write(buf, off, payload, fields)
        _SEQ.pack_into(buf, L.CTL_DIRTY_OFFSET, 0)

    def _payload_at(self, off: int):
        o = self.layout.offsets
        if off == o["memory"]:
            return self.layout.memory_payload
        if off == o["counters"]:
            return self.layout.counters_payload
        if off == o["keys"]:
            return self.layout.keys_payload
        if off >= o["partitions"]:
            return L.PART_PAYLOAD
        return L.JOB_PAYLOAD

    def _repair(self, off: int) -> None:
        buf = self._buf
        payload = self._payload_at(off)
        seq = _SEQ.unpack_from(buf, off)[0]
        if seq & 1:
            data = bytes(buf[off + 8:off + 8 + payload.size])
            if crc32(data) == _CHECK.unpack_from(buf, off + 8 + payload.size)[0]:
                fields = payload.unpack(data)  # the write completed except for its last store
            else:
                fields = payload.unpack(bytes(payload.size))  # torn: reset to empty
            _write(buf, off, payload, fields)
            _SEQ.pack_into(buf, L.CTL_DIRTY_OFFSET, 0)
            self._count_locked(torn_repaired=1)
        _SEQ.pack_into(buf, L.CTL_DIRTY_OFFSET, 0)

    def _ctl_end(self):
        self._ctl.__exit__()

    def _read_ctl(self, off: int, payload) -> list:
        """Fields of a control record (caller holds the control lock: no writer is inside)."""
        return list(payload.unpack_from(self._buf, off + 8))

    def _count(self, **inc) -> None:
        self._ctl_begin()
        try:
            self._count_locked(**inc)
        finally:
            self._ctl_end()

    # counters payload field indexes
    _C_RETRIES, _C_RESTARTS, _C_STALE, _C_QDEPTH, _C_TORN, _C_DROPPED, _C_NKINDS, \
        _C_RECOVERED = range(8)

    def _count_locked(self, *, retries=0, restarts=0, stale_ends=0, torn_repaired=0,
                      jobs_dropped=0, recovered=0, queue_depth=None, completed=None,
                      failed=None, n=1):
        lay = self.layout
        off = lay.offsets["counters"]
        payload = lay.counters_payload
        f = self._read_ctl(off, payload)
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
            label = L.pack_str(kind, L.LABEL_BYTES, "proof kind").ljust(L.LABEL_BYTES, b"\0")
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
        self._ctl_write(off, payload, f)

    def count_completed(self, kind: str, n: int = 1) -> None:
        self._count(completed=kind, n=n)

    def count_failed(self, kind: str, n: int = 1) -> None:
        self._count(failed=kind, n=n)

    def count_recovered(self, n: int = 1) -> None:
        """Count jobs re-queued from the job journal after a restart."""
        self._count(recovered=n)

    def count_retry(self, n: int = 1) -> None:
        self._count(retries=n)

    def count_restart(self, n: int = 1) -> None:
        """Count a restarted child process (reclaim() counts per slot, not here)."""
        self._count(restarts=n)

    def set_queue_depth(self, n: int) -> None:
        self._count(queue_depth=int(n))

    def set_memory(self, total: int, reserved: int, by_use: dict[str, int] | None = None) -> None:
        """The memory budget: total and reserved bytes, and reserved bytes by use label. Labels
        beyond the board's rows are summed into "other"."""
        lay = self.layout
        items = list((by_use or {}).items())
        if len(items) > lay.by_use_rows:
            keep = items[:lay.by_use_rows - 1]
            keep.append(("other", sum(v for _, v in items[lay.by_use_rows - 1:])))
            items = keep
        f = [int(total), int(reserved), len(items)]
        for i in range(lay.by_use_rows):
            if i < len(items):
                f += [L.pack_str(items[i][0], L.LABEL_BYTES, "memory label"), int(items[i][1])]
            else:
                f += [b"", 0]
        self._ctl_begin()
        try:
            self._ctl_write(lay.offsets["memory"], lay.memory_payload, f)
        finally:
            self._ctl_end()

    def set_keys(self, keys: list[dict]) -> None:
        """Proving keys resident: dicts with key_id, bytes, devices (list of str), evictable and
        last_used (unix time) or last_used_secs_ago. Keys beyond the board's rows are dropped
        (most recently used kept)."""
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
            devs = ",".join(k.get("devices") or []).encode()[:L.KEY_DEVICES_BYTES]
            rows.append((L.pack_str(str(k["key_id"]), L.ID_BYTES, "key id"), int(k["bytes"]),
                         devs, t, 1 if k.get("evictable") else 0))
        if len(rows) > lay.key_rows:
            rows.sort(key=lambda r: -(r[3] if r[3] == r[3] else -1e300))
            rows = rows[:lay.key_rows]
        f = [len(rows)]
        for i in range(lay.key_rows):
            f += list(rows[i]) if i < len(rows) else [b"", 0, b"", _NAN, 0]
        self._ctl_begin()
        try:
            self._ctl_write(lay.offsets["keys"], lay.keys_payload, f)
        finally:
            self._ctl_end()

    # --- jobs ----------------------------------------------------------------------------------
    def _find_row(self, job: bytes, job_id: str) -> int | None:
        """Row holding `job` (control lock held), via the cache, else by scanning."""
        buf = self._buf
        job = job.ljust(L.ID_BYTES, b"\0")  # struct returns "48s" fields zero padded
        hit = self._rows.get(job_id)
        if hit is not None:
            row, rowgen = hit
            f = L.JOB_PAYLOAD.unpack_from(buf, self.layout.job_offset(row) + 8)
            if f[L.J_ROWGEN] == rowgen and f[L.J_ID] == job and f[L.J_STATE] != L.J_FREE:
                return row
            del self._rows[job_id]
        for row in range(self.layout.job_rows):
            f = L.JOB_PAYLOAD.unpack_from(buf, self.layout.job_offset(row) + 8)
            if f[L.J_ID] == job and f[L.J_STATE] != L.J_FREE:
                self._rows[job_id] = (row, f[L.J_ROWGEN])
                return row
        return None

    def _busy_jobs(self) -> set[bytes]:
        """Job ids named by busy slots right now (a hint for eviction; slots are not locked)."""
        out = set()
        for t in self._tables.values():
            for i in range(t.n):
                r = _SLOT_R.unpack_from(self._buf, t._base + i * L.SLOT_SIZE)
                if r[2] == L.SLOT_BUSY:
                    out.add(r[7].rstrip(b"\0"))
        return out

    def job_add(self, job_id: str, kind: str, priority: str, n_partitions: int,
                submitted_at: float | None = None) -> bool:
        """Put a job on the board (state queued, partitions pending). When the table is full the
        oldest finished job not named by a busy slot makes room; if there is none, the job is
        not shown (jobs_dropped counted) and False is returned: the board never stops proving."""
        job = L.pack_str(job_id, L.ID_BYTES, "job id")
        kind_b = L.pack_str(kind, L.LABEL_BYTES, "proof kind")
        if priority not in L.PRIORITIES:
            raise ValueError(f"priority must be one of {L.PRIORITIES}, got {priority!r}")
        lay = self.layout
        if not 1 <= n_partitions <= lay.max_partitions:
            raise ValueError(f"job {job_id}: {n_partitions} partitions, the board holds 1.."
                             f"{lay.max_partitions} per job")
        submitted_at = time.time() if submitted_at is None else float(submitted_at)
        self._ctl_begin()
        try:
            if self._find_row(job, job_id) is not None:
                raise ValueError(f"job {job_id} is already on the board")
            rows = [L.JOB_PAYLOAD.unpack_from(self._buf, lay.job_offset(r) + 8)
                    for r in range(lay.job_rows)]
            free = [r for r, f in enumerate(rows) if f[L.J_STATE] == L.J_FREE]
            if free:
                row = free[0]
            else:
                busy = self._busy_jobs()
                done = [(f[L.J_FINISHED] if f[L.J_FINISHED] == f[L.J_FINISHED] else 0.0,
                         f[L.J_SUBMITTED], r) for r, f in enumerate(rows)
                        if f[L.J_STATE] in L.JOB_FINISHED and f[L.J_ID].rstrip(b"\0") not in busy]
                if not done:
                    self._count_locked(jobs_dropped=1)
                    return False
                row = min(done)[2]
            rowgen = rows[row][L.J_ROWGEN] + 1
            # Partitions first, then the job record that makes them visible (readers ignore
            # partition records whose row generation differs from their job record's).
            for i in range(n_partitions):
                self._ctl_write(lay.part_offset(row, i), L.PART_PAYLOAD, _empty_part(rowgen))
            self._ctl_write(lay.job_offset(row), L.JOB_PAYLOAD,
                            (rowgen, job, kind_b, L.PRIORITIES.index(priority), L.J_QUEUED,
                             n_partitions, submitted_at, _NAN, _NAN))
            self._rows[job_id] = (row, rowgen)
            return True
        finally:
            self._ctl_end()

    def job_set_state(self, job_id: str, state: str) -> bool:
        """queued | running | done | failed | cancelled. False if the job is not on the board."""
        try:
            st = L.JOB_STATES.index(state)
        except ValueError:
            st = 0
        if st == L.J_FREE:
            raise ValueError(f"job state must be one of {L.JOB_STATES[1:]}, got {state!r}")
        job = L.pack_str(job_id, L.ID_BYTES, "job id")
        self._ctl_begin()
        try:
            row = self._find_row(job, job_id)
            if row is None:
                return False
            off = self.layout.job_offset(row)
            f = self._read_ctl(off, L.JOB_PAYLOAD)
            now = time.time()
            if st == L.J_RUNNING and f[L.J_STARTED] != f[L.J_STARTED]:
                f[L.J_STARTED] = now
            if st in L.JOB_FINISHED:
                f[L.J_FINISHED] = now
            f[L.J_STATE] = st
            self._ctl_write(off, L.JOB_PAYLOAD, f)
            return True
        finally:
            self._ctl_end()

    def partition_set(self, job_id: str, index: int, state: str | None = None, *,
                      synth_ms: float | None = None, gpu_ms: float | None = None,
                      finalize_ms: float | None = None, attempts: int | None = None) -> bool:
        """Update a partition's stored state (pending | synth_done | done | failed) and timings;
        None leaves a field as it is. synthesizing, gpu and finalizing are not stored: they come
        from the slot that names the partition (claim it instead). False if the job or the
        index is not on the board."""
        st = None
        if state is not None:
            try:
                st = L.PARTITION_STATES.index(state)
            except ValueError:
                raise ValueError(f"unknown partition state {state!r}") from None
            if st not in L.STORED_PARTITION_STATES:
                kind = {L.P_GPU: "device", L.P_FINALIZING: "finalizer"}.get(st, "synth")
                raise ValueError(
                    f"partition state {state!r} is derived from the slot that names the "
                    f"partition (claim a {kind} slot instead); partition_set stores pending, "
                    f"synth_done, done, failed")
        job = L.pack_str(job_id, L.ID_BYTES, "job id")
        self._ctl_begin()
        try:
            row = self._find_row(job, job_id)
            if row is None:
                return False
            jf = L.JOB_PAYLOAD.unpack_from(self._buf, self.layout.job_offset(row) + 8)
            if not 0 <= index < jf[L.J_NPART]:
                return False
            off = self.layout.part_offset(row, index)
            f = self._read_ctl(off, L.PART_PAYLOAD)
            f[L.P_ROWGEN] = jf[L.J_ROWGEN]
            if st is not None:
                f[L.P_STATE] = st
            if attempts is not None:
                f[L.P_ATTEMPTS] = int(attempts)
            if synth_ms is not None:
                f[L.P_SYNTH_MS] = float(synth_ms)
            if gpu_ms is not None:
                f[L.P_GPU_MS] = float(gpu_ms)
            if finalize_ms is not None:
                f[L.P_FIN_MS] = float(finalize_ms)
            self._ctl_write(off, L.PART_PAYLOAD, f)
            return True
        finally:
            self._ctl_end()

    # --- reading ---------------------------------------------------------------------------------
    def snapshot(self, *, tries: int = 64, verify: bool = True):
        """A consistent cut of the whole board as an immutable Snapshot (see snapshot.py).

        Never blocks writers: copies, copies again, and accepts when both copies agree and no
        writer was inside any record; after `tries` attempts it returns the last copy with
        `consistent=False`."""
        from cuzk.board.snapshot import collect

        return collect(self, tries=tries, verify=verify)


def _empty_job():
    return (0, b"", b"", 0, L.J_FREE, 0, _NAN, _NAN, _NAN)


def _empty_part(rowgen: int):
    return (rowgen, L.P_PENDING, 0, _NAN, _NAN, _NAN)


def _empty_memory(lay: L.Layout):
    return [0, 0, 0] + [b"", 0] * lay.by_use_rows


def _empty_counters(lay: L.Layout):
    return [0, 0, 0, 0, 0, 0, 0, 0] + [b"", 0, 0] * lay.kind_rows


def _empty_keys(lay: L.Layout):
    return [0] + [b"", 0, b"", _NAN, 0] * lay.key_rows
