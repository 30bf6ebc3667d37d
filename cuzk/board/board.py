"""The status board: one shared-memory segment that every cuzk process writes and viewers read.

Who writes what (the whole concurrency design; docs/status-board.md has the bytes):

    supervisor ──create──► header (once), reclaim(slot) after a child died
    device process ──────► its device slots and the finalizer slots of its finalizer threads
    synthesis process ───► its synthesis slot
    anyone (flock) ──────► jobs, partitions, memory, counters, keys ("control records")
    viewers ─────────────► nothing; snapshot() never blocks a writer

Board is the handle that composes the parts, one module each:

    records.py   the seqlock protocol every record follows, and empty records
    slots.py     SlotTable: slots written by their owning process, generations, Tokens
    control.py   ControlRecords: jobs, partitions, memory, counters, keys under the flock
    snapshot.py  collect(): a consistent cut, read without any lock

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

import os
import time

from cuzk.board.control import ControlRecords
from cuzk.board.layout import (
    HEADER,
    HEADER_SIZE,
    INSTANCE_BYTES,
    JOB_PAYLOAD,
    LAYOUT_VERSION,
    MAGIC,
    PART_PAYLOAD,
    SLOT_BUSY,
    SLOT_KINDS,
    SLOT_PAYLOAD,
    SLOT_RECORD,
    Layout,
    pack_str,
    unpack_str,
)
from cuzk.board.segment import (
    ControlLock,
    new_name,
    open_segment,
    process_create_time,
    unlink_segment,
)
from cuzk.board.seqlock import (
    EMPTY_SLOT,
    empty_counters,
    empty_job,
    empty_keys,
    empty_memory,
    empty_part,
    write_record,
)
from cuzk.board.slots import SlotTable, Token
from cuzk.board.snapshot import Snapshot, collect


class BoardError(RuntimeError):
    """The segment is not a board this code can read (bad magic, other layout version)."""


class Board:
    """A handle on one status board segment (create it in the supervisor, attach elsewhere)."""

    def __init__(self, shm, layout: Layout, *, creator: bool):
        self._shm = shm
        self._buf = shm.buf
        self.name = shm.name.lstrip("/")
        self.layout = layout
        self.is_creator = creator
        h = HEADER.unpack_from(self._buf, 0)
        self.pid = h[4]
        self.started_at = h[5]
        self.instance = unpack_str(h[-1])
        self.control = ControlRecords(self._buf, layout, ControlLock(shm._fd))
        self.devices = SlotTable(self, "device")
        self.finalizers = SlotTable(self, "finalizer")
        self.synth = SlotTable(self, "synth")
        self._tables = {"device": self.devices, "finalizer": self.finalizers, "synth": self.synth}
        self._verified: dict = {}  # reader cache, see snapshot._verify
        self._plan = None  # reader constants, see snapshot._Plan

    # --- lifecycle ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        name: str | None = None,
        *,
        instance: str = "cuzk",
        device_slots: int,
        finalizer_slots: int,
        synth_slots: int,
        job_rows: int = 64,
        max_partitions: int = 32,
        key_rows: int = 16,
        by_use_rows: int = 8,
        kind_rows: int = 8,
    ) -> Board:
        """Create a new board segment (fails if `name` exists). Default name cuzk-<pid>-<hex>."""
        layout = Layout(
            device_slots,
            finalizer_slots,
            synth_slots,
            job_rows,
            max_partitions,
            key_rows,
            by_use_rows,
            kind_rows,
        )
        inst = pack_str(instance, INSTANCE_BYTES, "instance name")
        try:
            shm = open_segment(name or new_name(), create=True, size=layout.total_size)
        except FileExistsError:
            raise BoardError(
                f"board {name!r} already exists (in use, or left by a process "
                "that is gone: segment.free_name removes such a one)"
            ) from None
        buf = shm.buf
        pid = os.getpid()
        offs = layout.offsets
        header = HEADER.pack(
            b"\0" * 8,
            LAYOUT_VERSION,
            HEADER_SIZE,
            layout.total_size,
            pid,
            time.time(),
            process_create_time(pid),
            *layout.counts(),
            *(
                offs[k]
                for k in (
                    "device",
                    "finalizer",
                    "synth",
                    "jobs",
                    "partitions",
                    "memory",
                    "counters",
                    "keys",
                )
            ),
            inst,
        )
        buf[: len(header)] = header
        # Write every record once, so each starts with a valid check and NaN "no value" floats.
        for kind in SLOT_KINDS:
            for i in range(layout.slots(kind)):
                write_record(buf, layout.slot_offset(kind, i), SLOT_PAYLOAD, EMPTY_SLOT)
        for row in range(layout.job_rows):
            write_record(buf, layout.job_offset(row), JOB_PAYLOAD, empty_job())
            for i in range(layout.max_partitions):
                write_record(buf, layout.part_offset(row, i), PART_PAYLOAD, empty_part(0))
        write_record(buf, offs["memory"], layout.memory_payload, empty_memory(layout))
        write_record(buf, offs["counters"], layout.counters_payload, empty_counters(layout))
        write_record(buf, offs["keys"], layout.keys_payload, empty_keys(layout))
        buf[0:8] = MAGIC  # last: list_boards() ignores a board until its header is complete
        return cls(shm, layout, creator=True)

    @classmethod
    def attach(cls, name: str) -> Board:
        """Attach to an existing board by name (the resource tracker never unlinks it)."""
        shm = open_segment(name)
        try:
            if shm.size < HEADER_SIZE:
                raise BoardError(f"{name}: too small to be a board")
            h = HEADER.unpack_from(shm.buf, 0)
            if h[0] != MAGIC:
                raise BoardError(f"{name}: not a cuzk board (or still being created)")
            if h[1] != LAYOUT_VERSION:
                raise BoardError(f"{name}: layout version {h[1]}, this code reads {LAYOUT_VERSION}")
            layout = Layout(*h[7:15])
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
        self._buf = self.control._buf = None
        self._tables = {}
        self.devices = self.finalizers = self.synth = None
        shm, self._shm = self._shm, None
        shm.close()

    def unlink(self) -> None:
        """Remove the board's name (creator only, at shutdown); mappings stay valid until closed."""
        if not self.is_creator:
            raise PermissionError("only the process that created a board unlinks it")
        unlink_segment(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        creator = self.is_creator
        self.close()
        if creator:
            unlink_segment(self.name)

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
            r = SLOT_RECORD.unpack_from(self._buf, off)
            if r[1] != device_token.generation or r[2] != SLOT_BUSY:
                self.control.count(stale_ends=1)
                return None
            ftok = self.finalizers.claim(
                finalizer_slot, unpack_str(r[7]), r[6], from_token=device_token
            )
            self.devices.end(device_token)
        return ftok

    def end(self, token: Token, **partition_update) -> bool:
        """End any claim; see SlotTable.end."""
        return self._tables[token.kind].end(token, **partition_update)

    # --- control records: written through board.control (ControlRecords: jobs, partitions,
    # memory, counters, keys), under the control lock; the engine's writes are in one place,
    # cuzk.engine.board_writes.

    # --- reading ---------------------------------------------------------------------------------
    def snapshot(self, *, tries: int = 64, verify: bool = True) -> Snapshot:
        """A consistent cut of the whole board as an immutable Snapshot (see snapshot.py).

        Never blocks writers: copies, copies again, and accepts when both copies agree and no
        writer was inside any record; after `tries` attempts it returns the last copy with
        `consistent=False`."""
        return collect(self, tries=tries, verify=verify)
