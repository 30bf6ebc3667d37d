"""The snarkjs Groth16 proving key (.zkey, version 1): a mapped reader and a writer.

Sections (ids; snarkjs writes them physically as 1,2,4,3,9,8,5,6,7,10):
  1 header       u32 protocol id (1 = Groth16; 2 = PLONK and 10 = FFLONK are rejected)
  2 Groth16 hdr  u32 n8q, q, u32 n8r, r, u32 nVars, u32 nPublic, u32 domainSize,
                 alpha1 (G1), beta1 (G1), beta2 (G2), gamma2 (G2), delta1 (G1), delta2 (G2)
  3 IC           nPublic+1 G1
  4 coefficients u32 count, then count x (u32 matrix, u32 constraint, u32 signal, value[n8r])
                 matrix 0 = A, 1 = B; value stored as coef·R² mod r
  5 pointsA      nVars G1          6 pointsB1  nVars G1        7 pointsB2  nVars G2
  8 pointsC      nVars-nPublic-1 G1 (signals nPublic+1..)     9 pointsH   domainSize G1
 10 contributions (not needed to prove; optional here)
Points are affine, coordinates in Montgomery form, little-endian; infinity is all zeros.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import numpy as np

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS
from cuzk.arith.radix import N8, int_to_bytes
from cuzk.formats.atomic import atomic_writer
from cuzk.formats.binfile import BinFile, write_container
from cuzk.formats.errors import (
    BadHeader,
    BadSectionSize,
    BadValue,
    CountMismatch,
    UnsupportedProtocol,
    WrongPrime,
)

ZKEY_VERSION = 1
PROTOCOL_NAMES = {1: "groth16", 2: "plonk", 10: "fflonk"}
GROTH16_PROTOCOL_ID = 1

G1_LIMBS = 8  # x||y, 4 limbs each
G2_LIMBS = 16  # x.c0||x.c1||y.c0||y.c1
G1_BYTES = 8 * G1_LIMBS
G2_BYTES = 8 * G2_LIMBS

# One coefficient entry as stored: 44 bytes, packed (the value is not 8-byte aligned).
COEF_DTYPE = np.dtype(
    [("matrix", "<u4"), ("constraint", "<u4"), ("signal", "<u4"), ("value", "<u8", (4,))]
)
assert COEF_DTYPE.itemsize == 12 + N8

# Section ids.
(
    HEADER,
    GROTH16_HEADER,
    IC,
    COEFS,
    POINTS_A,
    POINTS_B1,
    POINTS_B2,
    POINTS_C,
    POINTS_H,
    CONTRIBUTIONS,
) = range(1, 11)
# The physical order snarkjs writes (zkey_new.js); kept so our keys diff cleanly with theirs.
SNARKJS_SECTION_ORDER = (1, 2, 4, 3, 9, 8, 5, 6, 7, 10)

# The header's points in stored order, with their widths in limbs.
HEADER_POINTS = (
    ("alpha1", G1_LIMBS),
    ("beta1", G1_LIMBS),
    ("beta2", G2_LIMBS),
    ("gamma2", G2_LIMBS),
    ("delta1", G1_LIMBS),
    ("delta2", G2_LIMBS),
)
GROTH16_HEADER_SIZE = 4 + N8 + 4 + N8 + 3 * 4 + 3 * G1_BYTES + 3 * G2_BYTES


@dataclass
class ZKeyData:
    """Everything a Groth16 .zkey holds, as arrays in the stored (Montgomery limb) form.

    `ZKey` (the reader) has the same attributes, so `write_zkey(path, ZKey(src))` copies a key.
    G1 = (8,) uint64, G2 = (16,) uint64; `coefficients` is a COEF_DTYPE array.
    `contributions` is section 10's raw payload (snarkjs: 64-byte circuit hash + u32 count).
    """

    n_vars: int
    n_public: int
    domain_size: int
    alpha1: np.ndarray
    beta1: np.ndarray
    beta2: np.ndarray
    gamma2: np.ndarray
    delta1: np.ndarray
    delta2: np.ndarray
    ic: np.ndarray
    coefficients: np.ndarray
    points_a: np.ndarray
    points_b1: np.ndarray
    points_b2: np.ndarray
    points_c: np.ndarray
    points_h: np.ndarray
    contributions: bytes | None = bytes(64) + bytes(4)
    n8q: int = N8
    q: int = FQ_MODULUS
    n8r: int = N8
    r: int = FR_MODULUS


class ZKey:
    """A mapped Groth16 .zkey. Point and coefficient arrays are read-only views of the file.

    Attributes: path, n8q, q, n8r, r, n_vars, n_public, domain_size (ints);
    alpha1, beta1, delta1 (8,) and beta2, gamma2, delta2 (16,) uint64 Montgomery limbs;
    ic (n_public+1, 8); coefficients (structured, COEF_DTYPE); points_a (n_vars, 8);
    points_b1 (n_vars, 8); points_b2 (n_vars, 16); points_c (n_vars-n_public-1, 8);
    points_h (domain_size, 8); contributions (bytes or None).

    `check_coefficients` scans the coefficient section once (vectorised) to confirm that every
    matrix id is 0 or 1 and every constraint/signal index is in range.
    """

    def __init__(self, path: os.PathLike | str, check_coefficients: bool = True):
        self.file = f = BinFile(path, "zkey", (ZKEY_VERSION,))
        self.path = f.path

        s = f.section(HEADER, "header")
        if s.size != 4:
            raise BadSectionSize(self.path, f"header section (1) is {s.size} bytes, expected 4")
        protocol = f.u32(s.offset)
        if protocol != GROTH16_PROTOCOL_ID:
            name = PROTOCOL_NAMES.get(protocol, "unknown")
            raise UnsupportedProtocol(
                self.path, f"protocol id {protocol} ({name}): cuzk proves Groth16 only (id 1)"
            )

        s = f.section(GROTH16_HEADER, "Groth16 header")
        if s.size < 4:
            raise BadSectionSize(self.path, f"Groth16 header section (2) is only {s.size} bytes")
        pos = s.offset
        self.n8q = f.u32(pos)
        if self.n8q != N8:
            raise WrongPrime(self.path, f"n8q = {self.n8q}: BN254's base field needs 32 bytes")
        if s.size != GROTH16_HEADER_SIZE:
            raise BadSectionSize(
                self.path,
                f"Groth16 header section (2) is {s.size} bytes, expected {GROTH16_HEADER_SIZE}",
            )
        self.q = f.bigint(pos + 4, N8)
        pos += 4 + N8
        if self.q != FQ_MODULUS:
            raise WrongPrime(self.path, f"base field prime q = {self.q:#x} is not BN254's")
        self.n8r = f.u32(pos)
        if self.n8r != N8:
            raise WrongPrime(self.path, f"n8r = {self.n8r}: BN254's scalar field needs 32 bytes")
        self.r = f.bigint(pos + 4, N8)
        pos += 4 + N8
        if self.r != FR_MODULUS:
            raise WrongPrime(self.path, f"scalar field prime r = {self.r:#x} is not BN254's")
        self.n_vars = f.u32(pos)
        self.n_public = f.u32(pos + 4)
        self.domain_size = f.u32(pos + 8)
        pos += 12
        if self.n_public + 1 > self.n_vars:
            raise BadHeader(self.path, f"nPublic = {self.n_public} but nVars = {self.n_vars}")
        d = self.domain_size
        if d < 1 or d & (d - 1):
            raise BadHeader(self.path, f"domainSize = {d} is not a power of two")
        if d.bit_length() - 1 > 28:
            raise BadHeader(self.path, f"domainSize = 2^{d.bit_length() - 1} exceeds BN254's 2^28")
        for name, width in HEADER_POINTS:
            setattr(self, name, f.limbs(pos, 1, width)[0])
            pos += 8 * width

        self.ic = self._points(IC, "IC", self.n_public + 1, G1_LIMBS)

        s = f.section(COEFS, "coefficients")
        if s.size < 4:
            raise BadSectionSize(
                self.path,
                f"coefficients section (4) is {s.size} bytes, too short for its count",
            )
        n_coefs = f.u32(s.offset)
        expected = 4 + n_coefs * COEF_DTYPE.itemsize
        if s.size != expected:
            raise BadSectionSize(
                self.path,
                f"coefficients section (4) is {s.size} bytes; {n_coefs} entries need {expected}",
            )
        self.coefficients = f.view(s.offset + 4, COEF_DTYPE, n_coefs)

        self.points_a = self._points(POINTS_A, "pointsA", self.n_vars, G1_LIMBS)
        self.points_b1 = self._points(POINTS_B1, "pointsB1", self.n_vars, G1_LIMBS)
        self.points_b2 = self._points(POINTS_B2, "pointsB2", self.n_vars, G2_LIMBS)
        self.points_c = self._points(POINTS_C, "pointsC", self.n_vars - self.n_public - 1, G1_LIMBS)
        self.points_h = self._points(POINTS_H, "pointsH", self.domain_size, G1_LIMBS)
        if f.has(CONTRIBUTIONS):
            s = f.section(CONTRIBUTIONS, "contributions")
            self.contributions = bytes(f.mm[s.offset : s.offset + s.size])
        else:
            self.contributions = None

        if check_coefficients:
            self.check_coefficients()

    def _points(self, sid: int, name: str, count: int, width: int) -> np.ndarray:
        s = self.file.section(sid, name)
        expected = count * 8 * width
        if s.size != expected:
            kind = "G1" if width == G1_LIMBS else "G2"
            raise BadSectionSize(
                self.path,
                f"{name} section ({sid}) is {s.size} bytes, expected {count} {kind} points"
                f" = {expected} bytes",
            )
        return self.file.limbs(s.offset, count, width)

    def check_coefficients(self) -> None:
        """Raise BadValue if an entry's matrix, constraint or signal is out of range."""
        c = self.coefficients
        if len(c) == 0:
            return
        bad = np.flatnonzero(c["matrix"] > 1)
        if len(bad):
            i = int(bad[0])
            m = int(c["matrix"][i])
            raise BadValue(self.path, f"coefficient {i} has matrix id {m} (only 0 = A, 1 = B)")
        bounds = (("constraint", self.domain_size, "domainSize"), ("signal", self.n_vars, "nVars"))
        for field, bound, what in bounds:
            bad = np.flatnonzero(c[field] >= bound)
            if len(bad):
                i = int(bad[0])
                raise BadValue(
                    self.path,
                    f"coefficient {i} has {field} index {int(c[field][i])} >= {what} = {bound}",
                )

    @property
    def n_constraints(self) -> int:
        """The circuit's constraint count: snarkjs appends one A row per public signal (and
        the constant one) after the circuit's rows, so rows = nConstraints + nPublic + 1."""
        if len(self.coefficients) == 0:
            return 0
        return int(self.coefficients["constraint"].max()) + 1 - (self.n_public + 1)

    def check_witness(self, witness, wtns_path: os.PathLike | str | None = None) -> None:
        """Raise CountMismatch unless `witness` (an (n, 4) array or a Witness) has nVars values."""
        values = getattr(witness, "values", witness)
        if wtns_path is None:
            wtns_path = getattr(witness, "path", None)
        n = len(values)
        if n != self.n_vars:
            raise CountMismatch(
                wtns_path,
                f"witness has {n} values but the key {self.path} expects nVars = {self.n_vars}",
            )

    def data(self) -> ZKeyData:
        """The key's content as a ZKeyData (views, not copies)."""
        return ZKeyData(**{fl.name: getattr(self, fl.name) for fl in fields(ZKeyData)})

    def __repr__(self) -> str:
        return (
            f"ZKey({self.path!r}, n_vars={self.n_vars}, n_public={self.n_public}, "
            f"domain_size={self.domain_size}, coefficients={len(self.coefficients)})"
        )


def _check_shape(name: str, a, shape) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype="<u8")
    if a.shape != shape:
        raise ValueError(f"write_zkey: {name} has shape {a.shape}, expected {shape}")
    return a


def write_zkey(path: os.PathLike | str, key) -> None:
    """Write a Groth16 .zkey atomically (temp file + rename), sections in snarkjs's order.

    `key` is a ZKeyData or anything with the same attributes (a ZKey, to copy one).
    Arrays are in the stored form (Montgomery limbs; coefficients as COEF_DTYPE or an
    equivalent structured array) and are written without copying when C-contiguous.
    """
    n_vars, n_public, d = int(key.n_vars), int(key.n_public), int(key.domain_size)
    if getattr(key, "q", FQ_MODULUS) != FQ_MODULUS or getattr(key, "r", FR_MODULUS) != FR_MODULUS:
        raise ValueError("write_zkey: only BN254 keys")
    if d < 1 or d & (d - 1):
        raise ValueError(f"write_zkey: domain_size {d} is not a power of two")
    header = b"".join(
        [
            N8.to_bytes(4, "little"),
            int_to_bytes(FQ_MODULUS),
            N8.to_bytes(4, "little"),
            int_to_bytes(FR_MODULUS),
            n_vars.to_bytes(4, "little"),
            n_public.to_bytes(4, "little"),
            d.to_bytes(4, "little"),
        ]
        + [_check_shape(name, getattr(key, name), (w,)).tobytes() for name, w in HEADER_POINTS]
    )
    assert len(header) == GROTH16_HEADER_SIZE
    coefs = np.ascontiguousarray(key.coefficients)
    if coefs.dtype != COEF_DTYPE:
        coefs = coefs.astype(COEF_DTYPE)
    payload = {
        HEADER: [GROTH16_PROTOCOL_ID.to_bytes(4, "little")],
        GROTH16_HEADER: [header],
        IC: [_check_shape("ic", key.ic, (n_public + 1, G1_LIMBS))],
        COEFS: [len(coefs).to_bytes(4, "little"), coefs],
        POINTS_A: [_check_shape("points_a", key.points_a, (n_vars, G1_LIMBS))],
        POINTS_B1: [_check_shape("points_b1", key.points_b1, (n_vars, G1_LIMBS))],
        POINTS_B2: [_check_shape("points_b2", key.points_b2, (n_vars, G2_LIMBS))],
        POINTS_C: [_check_shape("points_c", key.points_c, (n_vars - n_public - 1, G1_LIMBS))],
        POINTS_H: [_check_shape("points_h", key.points_h, (d, G1_LIMBS))],
    }
    contributions = getattr(key, "contributions", None)
    if contributions is not None:
        payload[CONTRIBUTIONS] = [bytes(contributions)]
    sections = [(sid, payload[sid]) for sid in SNARKJS_SECTION_ORDER if sid in payload]
    with atomic_writer(path) as f:
        write_container(f, "zkey", ZKEY_VERSION, sections)
