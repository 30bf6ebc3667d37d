"""The circom/snarkjs witness file (.wtns, version 2; version 1 has the same layout).

Sections: 1 header = u32 n8, prime (n8 bytes), u32 count; 2 values = count x n8 bytes,
little-endian, plain (not Montgomery) form, w[0] = 1.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from cuzk.arith.constants import FR_MODULUS
from cuzk.arith.radix import N8, int_to_bytes, int_to_limb_array, ints_to_limbs
from cuzk.formats.atomic import atomic_writer
from cuzk.formats.binfile import BinFile, write_container
from cuzk.formats.errors import BadSectionSize, BadValue, WrongPrime

WTNS_VERSION = 2
HEADER, VALUES = 1, 2
_R_LIMBS = int_to_limb_array(FR_MODULUS)


class Witness(NamedTuple):
    """A mapped witness: `values` is a read-only (n, 4) uint64 view (plain form)."""

    values: np.ndarray
    prime: int
    path: str | None = None


def read_wtns(path: os.PathLike | str, check_values: bool = True, data=None) -> Witness:
    """Map a .wtns file; returns Witness(values (n, 4) uint64 view, prime, path).

    Validates magic, version, n8 = 32, prime = BN254's r, section sizes, and (with
    `check_values`) w[0] = 1 and every value < r. With `data` (bytes-like, e.g. an upload)
    the witness is read from that buffer (values view it, no copy) and `path` only names it
    in messages.
    """
    f = BinFile(path, "wtns", (1, WTNS_VERSION), data=data)
    s = f.section(HEADER, "header")
    if s.size < 4:
        raise BadSectionSize(f.path, f"header section (1) is {s.size} bytes, too short")
    n8 = f.u32(s.offset)
    if n8 != N8:
        raise WrongPrime(f.path, f"n8 = {n8}: BN254's scalar field needs 32-byte values")
    if s.size != 4 + n8 + 4:
        raise BadSectionSize(f.path, f"header section (1) is {s.size} bytes, expected {4 + n8 + 4}")
    prime = f.bigint(s.offset + 4, n8)
    if prime != FR_MODULUS:
        raise WrongPrime(f.path, f"prime {prime:#x} is not BN254's scalar field r")
    count = f.u32(s.offset + 4 + n8)
    s = f.section(VALUES, "values")
    if s.size != count * n8:
        raise BadSectionSize(
            f.path, f"values section (2) is {s.size} bytes, but {count} values need {count * n8}"
        )
    values = f.limbs(s.offset, count, 4)
    if check_values:
        check_witness_values(values, f.path)
    return Witness(values, prime, f.path)


def _index_of_first_not_below_r(values: np.ndarray) -> int | None:
    """The first row whose 4-limb value is >= r, compared limb by limb from the top."""
    lt_decided = np.zeros(len(values), dtype=bool)
    gt_decided = np.zeros(len(values), dtype=bool)
    for k in (3, 2, 1, 0):
        v, rk = values[:, k], _R_LIMBS[k]
        undecided = ~(lt_decided | gt_decided)
        gt_decided |= undecided & (v > rk)
        lt_decided |= undecided & (v < rk)
    bad = np.flatnonzero(~lt_decided)  # greater, or equal in every limb
    return int(bad[0]) if len(bad) else None


def check_witness_values(values: np.ndarray, path: str | None = None) -> None:
    """Raise BadValue unless w[0] = 1 and every value is a canonical element of F_r."""
    if len(values) == 0:
        raise BadValue(path, "the witness has no values (w[0] = 1 is required)")
    if tuple(int(x) for x in values[0]) != (1, 0, 0, 0):
        raise BadValue(path, "w[0] is not 1 (the constant-one signal)")
    i = _index_of_first_not_below_r(values)
    if i is not None:
        raise BadValue(path, f"w[{i}] is not below the scalar field prime r")


def write_wtns(path: os.PathLike | str, values) -> None:
    """Write a .wtns (version 2) atomically; `values` is an (n, 4) uint64 array or ints."""
    if isinstance(values, np.ndarray) and values.ndim == 2:
        arr = np.ascontiguousarray(values, dtype="<u8")
    else:
        arr = ints_to_limbs([int(v) % FR_MODULUS for v in values])
    header = N8.to_bytes(4, "little") + int_to_bytes(FR_MODULUS) + len(arr).to_bytes(4, "little")
    with atomic_writer(path) as f:
        write_container(f, "wtns", WTNS_VERSION, [(HEADER, [header]), (VALUES, [arr])])
