"""Binary layout of the status board: record formats, section offsets, enumerations.

Everything here is pure (no shared memory): a `Layout` is computed from the slot and table
counts, and the same counts always give the same offsets. `docs/status-board.md` describes
these bytes one by one; bump LAYOUT_VERSION whenever any format below changes.

Every mutable record is `[seq u64][payload][check u32][pad to 8]`:
  seq    even = stable, odd = a writer is inside; each write adds 2 (odd, then even);
  check  crc32 of the payload bytes, so a read that mixes two writes is detectable even if the
         sequence protocol were broken.
All integers are little-endian; every record starts 8-byte aligned, so `seq` is written with
one aligned 8-byte store.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass

MAGIC = b"CUZKBRD\x00"
LAYOUT_VERSION = 5  # 2: jobs_recovered in the counters record (was padding); 3: a key's curve;
# 4: a key's table bytes and load time; 5: a key's protocol
NAME_PREFIX = "cuzk-"

ID_BYTES = 48  # job ids, key ids (UTF-8, zero padded)
LABEL_BYTES = 24  # proof kinds, memory-use labels, device strings are 8
DEVICE_BYTES = 8
INSTANCE_BYTES = 64
KEY_DEVICES_BYTES = 32
KEY_CURVE_BYTES = 16  # a key's curve name ("bls12381")
KEY_PROTOCOL_BYTES = 16  # a key's proof system ("groth16", "plonk")

# --- enumerations (stored as u8) -------------------------------------------------------------
SLOT_EMPTY, SLOT_IDLE, SLOT_BUSY, SLOT_DEAD = 0, 1, 2, 3
SLOT_KINDS = ("device", "finalizer", "synth")
# what "busy" is called for each slot kind in the status JSON
BUSY_NAME = {"device": "proving", "finalizer": "finalizing", "synth": "synthesizing"}

PARTITION_STATES = ("pending", "synthesizing", "synth_done", "gpu", "finalizing", "done", "failed")
P_PENDING, P_SYNTHESIZING, P_SYNTH_DONE, P_GPU, P_FINALIZING, P_DONE, P_FAILED = range(7)
# States a partition record stores; the other three are derived from the slot that names it.
STORED_PARTITION_STATES = frozenset((P_PENDING, P_SYNTH_DONE, P_DONE, P_FAILED))
# The partition state a busy slot of each kind implies.
SLOT_PARTITION_STATE = {"device": P_GPU, "finalizer": P_FINALIZING, "synth": P_SYNTHESIZING}

JOB_STATES = ("free", "queued", "running", "done", "failed", "cancelled")
J_FREE, J_QUEUED, J_RUNNING, J_DONE, J_FAILED, J_CANCELLED = range(6)
JOB_FINISHED = frozenset((J_DONE, J_FAILED, J_CANCELLED))

# Job priorities, highest first; a job's rank is its index (the scheduler's order, the byte a
# job record stores). Declared only here: the engine, the daemon, its CLI and `cuzk top` import it.
PRIORITIES = ("critical", "high", "normal")


def check_priority(priority) -> str:
    """`priority` when it is one of PRIORITIES, else ValueError naming them."""
    if not isinstance(priority, str) or priority not in PRIORITIES:
        raise ValueError(f"priority must be one of {', '.join(PRIORITIES)}, got {priority!r}")
    return priority


NONE_I32 = -1  # "no partition", "no slot"
NAN = math.nan  # "no value" for float fields (JSON null)

# --- record formats ------------------------------------------------------------------------------
SEQ = struct.Struct("<Q")
CHECK = struct.Struct("<I")

HEADER = struct.Struct(
    "<8s I I Q"  # magic, layout_version, header_size, total_size
    " q d d"  # creator pid, started_at (unix), creator process create_time (pid-reuse guard)
    " 8I"  # device, finalizer, synth slots, job rows, max partitions, key rows,
    # memory-use rows, kind rows
    " 8Q"  # offsets: device, finalizer, synth, jobs, partitions, memory, counters, keys
    f" {INSTANCE_BYTES}s"
)
HEADER_SIZE = 256
# u64 at this header offset: 1 + offset of the control record being written, 0 when none. Only
# written under the control lock; the next lock holder repairs a record left half-written by a
# writer that died (see ControlRecords.__enter__ in control.py).
CTL_DIRTY_OFFSET = 248

# Worker slot (all three kinds share it).
SLOT_PAYLOAD = struct.Struct(
    "<Q"  # generation
    " B 3x I"  # state, restarts
    " q"  # pid of the owning process
    " i i"  # device ordinal, partition index (-1 none)
    f" {ID_BYTES}s"  # job id
    f" {DEVICE_BYTES}s"  # device string: "cpu:0", "cuda:1"
    " d d d"  # started_at (current claim), busy_secs (finished claims), heartbeat (unix)
    " i 4x Q"  # handoff source: device slot and its generation (finalizers), else -1 / 0
)
# Field indexes into a SLOT_PAYLOAD tuple.
(
    S_GEN,
    S_STATE,
    S_RESTARTS,
    S_PID,
    S_ORDINAL,
    S_PARTITION,
    S_JOB,
    S_DEVICE,
    S_STARTED,
    S_BUSY,
    S_HEARTBEAT,
    S_FROM_SLOT,
    S_FROM_GEN,
) = range(13)

JOB_PAYLOAD = struct.Struct(
    "<Q"  # row generation (bumped each time the row gets a new job)
    f" {ID_BYTES}s {LABEL_BYTES}s"  # job id, proof kind
    " B B 2x I"  # priority, job state, number of partitions
    " d d d"  # submitted_at, started_at, finished_at (unix; NaN = not yet)
)
(J_ROWGEN, J_ID, J_KIND, J_PRIORITY, J_STATE, J_NPART, J_SUBMITTED, J_STARTED, J_FINISHED) = range(
    9
)
# Byte offsets inside a job record (after its seq) that readers scan without unpacking it.
JOB_STATE_AT = 8 + struct.calcsize(f"<Q{ID_BYTES}s{LABEL_BYTES}sB")
JOB_NPART_AT = 8 + struct.calcsize(f"<Q{ID_BYTES}s{LABEL_BYTES}sBB2x")

PART_PAYLOAD = struct.Struct(
    "<Q"  # row generation of the job this partition belongs to
    " B 3x I"  # stored state, attempts
    " d d d"  # synth_ms, gpu_ms, finalize_ms (NaN = not measured)
)
(P_ROWGEN, P_STATE, P_ATTEMPTS, P_SYNTH_MS, P_GPU_MS, P_FIN_MS) = range(6)

LABELLED_U64 = struct.Struct(f"<{LABEL_BYTES}s Q")
KIND_COUNTS = struct.Struct(f"<{LABEL_BYTES}s Q Q")
KEY_ROW = struct.Struct(
    f"<{ID_BYTES}s Q {KEY_DEVICES_BYTES}s d B B 6x {KEY_CURVE_BYTES}s Q d {KEY_PROTOCOL_BYTES}s"
)
# A key's tables of multiples, the byte after `evictable` (a padding byte before it was
# there: a row written without it reads "none").
KEY_TABLES = ("none", "building", "ready")


@functools.cache
def memory_payload(by_use_rows: int) -> struct.Struct:
    """total, reserved, number of labels, then `by_use_rows` (label, bytes) pairs."""
    return struct.Struct("<Q Q I 4x" + f" {LABEL_BYTES}s Q" * by_use_rows)


@functools.cache
def counters_payload(kind_rows: int) -> struct.Struct:
    """retries, restarts, stale ends ignored, queue depth, torn records repaired, jobs not
    recorded (table full), number of kinds, jobs recovered from the journal after a restart,
    then `kind_rows` (kind, completed, failed)."""
    return struct.Struct("<Q Q Q q Q Q I I" + f" {LABEL_BYTES}s Q Q" * kind_rows)


@functools.cache
def keys_payload(key_rows: int) -> struct.Struct:
    """number of keys, then `key_rows` (key id, bytes, devices, last_used unix, evictable,
    tables: the index in KEY_TABLES of its tables of multiples' state, curve: the name of
    the key's curve as its files give it, "bn128", "bls12381", or empty;
    table_bytes: of bytes, its tables of multiples; load_ms: the last load on a device, NaN
    before one; protocol: the key's proof system, "groth16", "plonk", or empty)."""
    return struct.Struct("<I 4x" + f" {KEY_ROW.format[1:]}" * key_rows)


def record_size(payload: struct.Struct) -> int:
    """seq + payload + check, rounded up to 8 bytes."""
    return (SEQ.size + payload.size + CHECK.size + 7) // 8 * 8


@functools.cache
def full_record(payload: struct.Struct) -> struct.Struct:
    """A struct that unpacks a whole record: (seq, *payload fields, check)."""
    pad = record_size(payload) - SEQ.size - payload.size - CHECK.size
    return struct.Struct("<Q" + payload.format[1:] + " I" + (f" {pad}x" if pad else ""))


SLOT_SIZE = record_size(SLOT_PAYLOAD)
JOB_SIZE = record_size(JOB_PAYLOAD)
PART_SIZE = record_size(PART_PAYLOAD)
SLOT_RECORD = full_record(SLOT_PAYLOAD)
JOB_RECORD = full_record(JOB_PAYLOAD)
PART_RECORD = full_record(PART_PAYLOAD)


@dataclass(frozen=True)
class Layout:
    """Counts and byte offsets of every section; a pure function of the counts."""

    device_slots: int
    finalizer_slots: int
    synth_slots: int
    job_rows: int
    max_partitions: int
    key_rows: int = 16
    by_use_rows: int = 8
    kind_rows: int = 8

    def __post_init__(self):
        for f in (
            "device_slots",
            "finalizer_slots",
            "synth_slots",
            "job_rows",
            "max_partitions",
            "key_rows",
            "by_use_rows",
            "kind_rows",
        ):
            v = getattr(self, f)
            if not isinstance(v, int) or v < 0 or v > 1 << 16:
                raise ValueError(f"board layout: {f} must be an int in [0, 65536], got {v!r}")
        if self.job_rows < 1 or self.max_partitions < 1:
            raise ValueError("board layout: job_rows and max_partitions must be at least 1")

    def slots(self, kind: str) -> int:
        return {
            "device": self.device_slots,
            "finalizer": self.finalizer_slots,
            "synth": self.synth_slots,
        }[kind]

    @functools.cached_property
    def memory_payload(self) -> struct.Struct:
        return memory_payload(self.by_use_rows)

    @functools.cached_property
    def counters_payload(self) -> struct.Struct:
        return counters_payload(self.kind_rows)

    @functools.cached_property
    def keys_payload(self) -> struct.Struct:
        return keys_payload(self.key_rows)

    @functools.cached_property
    def offsets(self) -> dict[str, int]:
        """Byte offset of each section; sections follow each other in this order."""
        off = HEADER_SIZE
        out = {}
        for name, size in (
            ("device", self.device_slots * SLOT_SIZE),
            ("finalizer", self.finalizer_slots * SLOT_SIZE),
            ("synth", self.synth_slots * SLOT_SIZE),
            ("jobs", self.job_rows * JOB_SIZE),
            ("partitions", self.job_rows * self.max_partitions * PART_SIZE),
            ("memory", record_size(self.memory_payload)),
            ("counters", record_size(self.counters_payload)),
            ("keys", record_size(self.keys_payload)),
        ):
            out[name] = off
            off += size
        out["end"] = off
        return out

    @functools.cached_property
    def total_size(self) -> int:
        return self.offsets["end"]

    def slot_offset(self, kind: str, slot: int) -> int:
        return self.offsets[kind] + slot * SLOT_SIZE

    def job_offset(self, row: int) -> int:
        return self.offsets["jobs"] + row * JOB_SIZE

    def part_offset(self, row: int, index: int) -> int:
        return self.offsets["partitions"] + (row * self.max_partitions + index) * PART_SIZE

    def counts(self) -> tuple[int, ...]:
        return (
            self.device_slots,
            self.finalizer_slots,
            self.synth_slots,
            self.job_rows,
            self.max_partitions,
            self.key_rows,
            self.by_use_rows,
            self.kind_rows,
        )


def pack_str(s: str, n: int, what: str) -> bytes:
    b = s.encode()
    if len(b) > n:
        raise ValueError(f"{what} {s!r} is longer than {n} bytes")
    return b


def unpack_str(b: bytes) -> str:
    return b.rstrip(b"\x00").decode(errors="replace")
