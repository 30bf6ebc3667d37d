"""Slot tables: worker slots, each written by the one process that owns it.

* A slot record has one writing process at a time: the process that registered it (its threads
  serialise on a per-process lock), or the supervisor once that process is dead (reclaim).
  Slot writes therefore need no cross-process lock: the record's sequence (odd while writing,
  records.py) lets readers detect and retry a read that overlapped a write.
* Claiming a slot bumps its generation and returns a Token. end(token) changes nothing when the
  slot's generation has moved on (the seed story: a finalizer for an old partition can no
  longer mark a worker idle that already proves the next one); it is counted instead.
* A finalizer's claim may name the device slot and generation it takes a partition over from
  (`from_token`): that one write is the device -> finalizer handoff's commit point.
"""

from __future__ import annotations

import math
import os
import time
from typing import NamedTuple
from zlib import crc32

from cuzk.board.layout import (
    DEVICE_BYTES,
    ID_BYTES,
    NONE_I32,
    S_BUSY,
    S_DEVICE,
    S_FROM_GEN,
    S_FROM_SLOT,
    S_GEN,
    S_HEARTBEAT,
    S_JOB,
    S_ORDINAL,
    S_PARTITION,
    S_PID,
    S_RESTARTS,
    S_STARTED,
    S_STATE,
    SEQ,
    SLOT_BUSY,
    SLOT_DEAD,
    SLOT_EMPTY,
    SLOT_IDLE,
    SLOT_PAYLOAD,
    SLOT_RECORD,
    SLOT_SIZE,
    pack_str,
    unpack_str,
)
from cuzk.board.records import EMPTY_SLOT as _EMPTY_SLOT
from cuzk.board.records import read_record
from cuzk.board.records import write_record as _write
from cuzk.board.segment import slot_lock

_SEQ = SEQ
_SLOT_P = SLOT_PAYLOAD
_SLOT_R = SLOT_RECORD
_SLOT_PSIZE = SLOT_PAYLOAD.size
_NAN = math.nan
_SLOT_SIZE = SLOT_SIZE
_SLOT_END = 8 + _SLOT_PSIZE + 4  # end of payload + check inside a slot record
_ID_BYTES = ID_BYTES
_BUSY, _IDLE, _NONE = SLOT_BUSY, SLOT_IDLE, NONE_I32
_time = time.time
_new_token = tuple.__new__  # Token(...) without NamedTuple's Python-level __new__


class Token(NamedTuple):
    """Proof of a claim: later writes carrying it change nothing once the slot moved on."""

    slot: int
    generation: int
    kind: str = "device"


class SlotTable:
    """The slots of one kind ("device", "finalizer", "synth") on a board."""

    def __init__(self, board, kind: str):
        self.board = board
        self.kind = kind
        self._control = board.control  # stale ends are counted, partitions updated there
        self.n = board.layout.slots(kind)
        self._base = board.layout.offsets[kind]
        self._buf = board._buf
        self._lock = slot_lock(board.name)

    def __len__(self):
        return self.n

    def _off(self, slot: int) -> int:
        if not 0 <= slot < self.n:
            raise IndexError(f"{self.kind} slot {slot} out of range 0..{self.n - 1}")
        return self._base + slot * SLOT_SIZE

    def _fields(self, off: int) -> list:
        """Current payload of a slot this process writes (so no concurrent writer exists)."""
        r = _SLOT_R.unpack_from(self._buf, off)
        return list(r[1:-1])

    def _owned(self, off: int) -> tuple[list, bool, int]:
        """(payload fields, torn, seq) of a slot nobody else is writing now. Torn: a writer
        died inside it (odd seq) in the middle of the payload copy (check mismatch)."""
        r = _SLOT_R.unpack_from(self._buf, off)
        torn = bool(r[0] & 1) and crc32(self._buf[off + 8 : off + 8 + _SLOT_PSIZE]) != r[-1]
        return list(r[1:-1]), torn, r[0]

    def register(
        self, slot: int, pid: int | None = None, *, ordinal: int = 0, device: str | None = None
    ) -> Token:
        """A process starts owning `slot`: state idle, generation bumped (older tokens die).

        `ordinal` is the GPU ordinal (device workers, finalizers) or the worker number
        (synthesis); `device` a label such as "cpu:0" or "cuda:1" (default "cpu:<ordinal>" for
        device workers)."""
        off = self._off(slot)
        if device is None:
            device = f"cpu:{ordinal}" if self.kind == "device" else ""
        dev = pack_str(device, DEVICE_BYTES, "device")
        now = time.time()
        with self._lock:
            f, torn, seq = self._owned(off)
            if torn or f[S_STATE] == SLOT_EMPTY:
                f = list(_EMPTY_SLOT)
            # (see reclaim for why seq + 1 outruns every generation of a torn record)
            gen = seq + 1 if torn else f[S_GEN] + 1
            f[S_GEN] = gen
            f[S_STATE] = SLOT_IDLE
            f[S_PID] = os.getpid() if pid is None else pid
            f[S_ORDINAL] = ordinal
            f[S_PARTITION] = NONE_I32
            f[S_JOB] = b""
            f[S_DEVICE] = dev
            f[S_STARTED] = _NAN
            f[S_HEARTBEAT] = now
            f[S_FROM_SLOT] = NONE_I32
            f[S_FROM_GEN] = 0
            _write(self._buf, off, _SLOT_P, f)
        return Token(slot, gen, self.kind)

    def claim(
        self, slot: int, job_id: str, partition: int, *, from_token: Token | None = None
    ) -> Token:
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
            b = _SLOT_P.pack(
                gen,
                _BUSY,
                r[3],
                r[4],
                r[5],
                partition,
                job,
                r[8],
                now,
                busy,
                now,
                _NONE if fs is None else fs,
                0 if fg is None else fg,
            )
            b += crc32(b).to_bytes(4, "little")
            odd = r[0] | 1
            _SEQ.pack_into(buf, off, odd)
            buf[off + 8 : off + _SLOT_END] = b
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
                self._control.count(stale_ends=1)
                return False
            if partition_update:
                self._control.partition_set(unpack_str(r[7]), r[6], **partition_update)
            now = _time()
            b = _SLOT_P.pack(
                gen,
                _IDLE,
                r[3],
                r[4],
                r[5],
                _NONE,
                b"",
                r[8],
                _NAN,
                r[10] + (now - r[9]),
                now,
                _NONE,
                0,
            )
            b += crc32(b).to_bytes(4, "little")
            odd = r[0] | 1
            _SEQ.pack_into(buf, off, odd)
            buf[off + 8 : off + _SLOT_END] = b
            _SEQ.pack_into(buf, off, odd + 1)
        return True

    def heartbeat(self, slot: int, token: Token | None = None) -> bool:
        """The owning process is alive: stamp the slot's heartbeat time. With `token`, only
        while that claim is current (else nothing is written, the stale write is counted and
        False returned), so a thread still working for an old claim cannot refresh it."""
        off = self._off(slot)
        with self._lock:
            f = self._fields(off)
            if token is not None and (
                f[S_GEN] != token.generation or f[S_STATE] != _BUSY or token.kind != self.kind
            ):
                self._control.count(stale_ends=1)
                return False
            f[S_HEARTBEAT] = time.time()
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
            gen = seq + 1 if torn else f[S_GEN] + 1
            if torn or f[S_STATE] == SLOT_EMPTY:
                # nothing in a torn payload can be trusted: start from an empty record (its pid,
                # busy time and restart count are lost; restarts becomes 1)
                f = list(_EMPTY_SLOT)
            busy = f[S_BUSY]
            if f[S_STATE] == SLOT_BUSY and not torn and f[S_STARTED] == f[S_STARTED]:
                busy += max(0.0, time.time() - f[S_STARTED])
            f[S_GEN] = gen
            f[S_STATE] = SLOT_DEAD
            f[S_RESTARTS] = (f[S_RESTARTS] + 1) & 0xFFFFFFFF
            f[S_PARTITION] = NONE_I32
            f[S_JOB] = b""
            f[S_STARTED] = _NAN
            f[S_BUSY] = busy if busy == busy else 0.0
            f[S_FROM_SLOT] = NONE_I32
            f[S_FROM_GEN] = 0
            _write(self._buf, off, _SLOT_P, f)
        return Token(slot, gen, self.kind)

    def read(self, slot: int, tries: int = 100):
        """(fields, status) of one slot by the sequence protocol; see read_record()."""
        return read_record(self._buf, self._off(slot), _SLOT_R, _SLOT_PSIZE, tries)
