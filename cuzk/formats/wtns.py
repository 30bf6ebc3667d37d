"""The circom/snarkjs witness file (.wtns, version 2; version 1 has the same layout).

Sections: 1 header = u32 n8, prime (n8 bytes), u32 count; 2 values = count x n8 bytes,
little-endian, plain (not Montgomery) form, w[0] = 1. The prime is a curve's scalar field r
(cuzk.formats.curve: BN254's or BLS12-381's, both n8 = 32).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from cuzk.arith.constants import FR_MODULUS
from cuzk.arith.radix import N8, int_to_bytes, int_to_limb_array, ints_to_limbs
from cuzk.formats import curve as curves
from cuzk.formats.atomic import atomic_writer
from cuzk.formats.binfile import BinFile, write_container
from cuzk.formats.errors import BadSectionSize, BadValue, WrongPrime

WTNS_VERSION = 2
HEADER, VALUES = 1, 2


class Witness(NamedTuple):
    """A witness: `values` is a read-only (n, 4) uint64 array (plain form); `prime` the
    scalar field prime it is over, `curve` (a property) snarkjs's name of that curve."""

    values: np.ndarray
    prime: int
    path: str | None = None

    @property
    def curve(self) -> str:
        return curves.by_r(self.prime).name


def read_wtns(
    path: os.PathLike | str, check_values: bool = True, data=None, curves_allowed=None
) -> Witness:
    """Read a .wtns file; returns Witness(values (n, 4) uint64 array, prime, path).

    Validates magic, version, the prime (a known curve's r: BN254's or BLS12-381's) and its
    width n8 = 32, section sizes, and (with `check_values`) w[0] = 1 and every value < r.
    `curves_allowed` (snarkjs names) limits the curves: another raises UnsupportedCurve.
    With `data` (bytes-like, e.g. an upload) the witness is read from that buffer (values
    view it, no copy) and `path` only names it in messages. A file is read into this
    process's memory, not mapped: one truncated while in use gives Truncated, never SIGBUS
    (cuzk.formats.binfile; the values are read in full by every user anyway).
    """
    f = BinFile(path, "wtns", (1, WTNS_VERSION), data=data, private=data is None)
    s = f.section(HEADER, "header")
    if s.size < 4:
        raise BadSectionSize(f.path, f"header section (1) is {s.size} bytes, too short")
    n8 = f.u32(s.offset)
    if n8 != N8:
        raise WrongPrime(
            f.path, f"n8 = {n8}: the scalar fields of {curves.known()} need 32-byte values"
        )
    if s.size != 4 + n8 + 4:
        raise BadSectionSize(f.path, f"header section (1) is {s.size} bytes, expected {4 + n8 + 4}")
    prime = f.bigint(s.offset + 4, n8)
    curve = curves.by_r(prime)
    if curve is None:
        raise WrongPrime(f.path, f"prime {prime:#x} is not the scalar field r of {curves.known()}")
    curves.require(curve, curves_allowed, f.path, "cuzk proves on")
    count = f.u32(s.offset + 4 + n8)
    s = f.section(VALUES, "values")
    if s.size != count * n8:
        raise BadSectionSize(
            f.path, f"values section (2) is {s.size} bytes, but {count} values need {count * n8}"
        )
    values = f.limbs(s.offset, count, 4)
    if check_values:
        check_witness_values(values, f.path, prime)
    return Witness(values, prime, f.path)


def _index_of_first_not_below_r(values: np.ndarray, r: int = FR_MODULUS) -> int | None:
    """The first row whose 4-limb value is >= r, compared limb by limb from the top."""
    r_limbs = int_to_limb_array(r)
    lt_decided = np.zeros(len(values), dtype=bool)
    gt_decided = np.zeros(len(values), dtype=bool)
    for k in (3, 2, 1, 0):
        v, rk = values[:, k], r_limbs[k]
        undecided = ~(lt_decided | gt_decided)
        gt_decided |= undecided & (v > rk)
        lt_decided |= undecided & (v < rk)
    bad = np.flatnonzero(~lt_decided)  # greater, or equal in every limb
    return int(bad[0]) if len(bad) else None


def check_witness_values(values: np.ndarray, path: str | None = None, r: int = FR_MODULUS) -> None:
    """Raise BadValue unless w[0] = 1 and every value is a canonical element of F_r (r is
    BN254's unless given)."""
    if len(values) == 0:
        raise BadValue(path, "the witness has no values (w[0] = 1 is required)")
    if tuple(int(x) for x in values[0]) != (1, 0, 0, 0):
        raise BadValue(path, "w[0] is not 1 (the constant-one signal)")
    i = _index_of_first_not_below_r(values, r)
    if i is not None:
        raise BadValue(path, f"w[{i}] is not below the scalar field prime r")


def write_wtns(path: os.PathLike | str, values, prime: int = FR_MODULUS) -> None:
    """Write a .wtns (version 2) atomically; `values` is an (n, 4) uint64 array or ints;
    `prime` the scalar field prime of its curve (BN254's r unless given)."""
    if curves.by_r(prime) is None:
        raise ValueError(f"write_wtns: {prime:#x} is not the scalar field r of {curves.known()}")
    if isinstance(values, np.ndarray) and values.ndim == 2:
        arr = np.ascontiguousarray(values, dtype="<u8")
    else:
        arr = ints_to_limbs([int(v) % prime for v in values])
    header = N8.to_bytes(4, "little") + int_to_bytes(prime) + len(arr).to_bytes(4, "little")
    with atomic_writer(path) as f:
        write_container(f, "wtns", WTNS_VERSION, [(HEADER, [header]), (VALUES, [arr])])
