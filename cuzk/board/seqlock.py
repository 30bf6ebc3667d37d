"""Seqlocked records: how every board record is written and read, and each record's empty value.

A record is (seq u64, payload, crc32 of the payload u32); docs/status-board.md has the bytes.
A writer makes the sequence odd, stores payload and check, and makes it even again; a reader
accepts a copy taken between two equal even sequences whose check matches. Writers of one
record never overlap (slots: one owning process; control records: the control lock), so the
protocol needs no lock on the read side.
"""

from __future__ import annotations

import math
from zlib import crc32

from cuzk.board.layout import J_FREE, NONE_I32, P_PENDING, SEQ, SLOT_EMPTY, Layout, struct

_SEQ = SEQ
_NAN = math.nan

# An empty slot's payload (generation 0, state empty, no job, NaN times).
EMPTY_SLOT = (0, SLOT_EMPTY, 0, 0, 0, NONE_I32, b"", b"", _NAN, 0.0, _NAN, NONE_I32, 0)


def write_record(buf, off: int, payload: struct.Struct, fields) -> int:
    """Seqlocked write of one whole record; returns the new (even) sequence number.

    Starts from the current sequence whatever it is: an odd one left by a writer that died
    inside is simply completed (s | 1 is the odd value to announce, +1 the even one to finish).
    """
    b = payload.pack(*fields)  # before the odd store: a bad field must not leave it odd
    b += crc32(b).to_bytes(4, "little")
    odd = _SEQ.unpack_from(buf, off)[0] | 1
    _SEQ.pack_into(buf, off, odd)
    # payload and check in one copy: a writer killed between two stores leaves either the old
    # or the new pair, both self-consistent (see SlotTable.reclaim, ControlRecords._repair)
    buf[off + 8 : off + 8 + len(b)] = b
    _SEQ.pack_into(buf, off, odd + 1)
    return odd + 1


def read_record(buf, off: int, record: struct.Struct, payload_size: int, tries: int = 100):
    """One record by the sequence protocol: (fields, status) with status "ok", "busy" (a writer
    stayed inside for all `tries`; fields None) or "torn" (stable even sequence but the check
    does not match: the protocol failed; fields None). Never blocks."""
    for _ in range(tries):
        s1 = _SEQ.unpack_from(buf, off)[0]
        if s1 & 1:
            continue
        data = bytes(buf[off : off + record.size])
        s2 = _SEQ.unpack_from(buf, off)[0]
        if s1 != s2:
            continue
        r = record.unpack(data)
        if r[0] != s1:  # the copy itself saw another sequence than both probes
            continue
        if crc32(data[8 : 8 + payload_size]) != r[-1]:
            return None, "torn"
        return r, "ok"
    return None, "busy"


def empty_job():
    return (0, b"", b"", 0, J_FREE, 0, _NAN, _NAN, _NAN)


def empty_part(rowgen: int):
    return (rowgen, P_PENDING, 0, _NAN, _NAN, _NAN)


def empty_memory(lay: Layout):
    return [0, 0, 0] + [b"", 0] * lay.by_use_rows


def empty_counters(lay: Layout):
    return [0, 0, 0, 0, 0, 0, 0, 0] + [b"", 0, 0] * lay.kind_rows


# One key row's fields, empty (cuzk.board.layout.KEY_ROW): id, bytes, devices, last_used,
# evictable, tables, curve, table_bytes, load_ms, protocol.
EMPTY_KEY_ROW = [b"", 0, b"", _NAN, 0, 0, b"", 0, _NAN, b""]


def empty_keys(lay: Layout):
    return [0] + EMPTY_KEY_ROW * lay.key_rows
