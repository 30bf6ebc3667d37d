"""The snarkjs Groth16 proving key (.zkey, version 1): a mapped reader and a writer.

Sections (ids; snarkjs writes them physically as 1,2,4,3,9,8,5,6,7,10):
  1 header       u32 protocol id (1 = Groth16; 2 = PLONK is cuzk.formats.plonk_zkey's,
                 10 = FFLONK is refused)
  2 Groth16 hdr  u32 n8q, q, u32 n8r, r, u32 nVars, u32 nPublic, u32 domainSize,
                 alpha1 (G1), beta1 (G1), beta2 (G2), gamma2 (G2), delta1 (G1), delta2 (G2)
  3 IC           nPublic+1 G1
  4 coefficients u32 count, then count x (u32 matrix, u32 constraint, u32 signal, value[n8r])
                 matrix 0 = A, 1 = B; value stored as coef·R² mod r
  5 pointsA      nVars G1          6 pointsB1  nVars G1        7 pointsB2  nVars G2
  8 pointsC      nVars-nPublic-1 G1 (signals nPublic+1..)     9 pointsH   domainSize G1
 10 contributions (not needed to prove; optional here)
Points are affine, coordinates in Montgomery form, little-endian; infinity is all zeros.
The curve is the one whose primes q and r the header holds (cuzk.formats.curve): BN254
(n8q = 32: G1 = 8 limbs, G2 = 16) or BLS12-381 (n8q = 48: G1 = 12 limbs, G2 = 24); n8r is
32 for both, so coefficient entries have the same layout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import numpy as np

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS
from cuzk.arith.radix import N8, int_to_bytes
from cuzk.formats import curve as curves
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
PLONK_PROTOCOL_ID = 2
SUPPORTED_PROTOCOLS = (GROTH16_PROTOCOL_ID, PLONK_PROTOCOL_ID)

# BN254's point widths (other curves': cuzk.formats.curve.Curve.g1_limbs, g2_limbs).
G1_LIMBS = 8  # x||y, 4 limbs each
G2_LIMBS = 16  # x.c0||x.c1||y.c0||y.c1
G1_BYTES = 8 * G1_LIMBS
G2_BYTES = 8 * G2_LIMBS

# One coefficient entry as stored: 44 bytes, packed (the value is not 8-byte aligned).
# Rows a private key's section is read and checked in at a time (ZKey.rows): a piece of
# pointsB2 is 32 MiB on BN254, 48 on BLS12-381, where a whole 2^22 section is 512 MiB.
CHECK_ROWS = 1 << 18

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

# The header's points in stored order, with their group (1 = G1, 2 = G2).
HEADER_GROUPS = (
    ("alpha1", 1),
    ("beta1", 1),
    ("beta2", 2),
    ("gamma2", 2),
    ("delta1", 1),
    ("delta2", 2),
)


def header_points(curve) -> tuple[tuple[str, int], ...]:
    """The header's points in stored order with their widths in limbs, on `curve`."""
    return tuple((name, curve.g1_limbs if g == 1 else curve.g2_limbs) for name, g in HEADER_GROUPS)


def groth16_header_size(curve) -> int:
    """Bytes of the Groth16 header section (2) of a key on `curve`."""
    return 4 + curve.n8q + 4 + curve.n8r + 3 * 4 + 3 * 8 * (curve.g1_limbs + curve.g2_limbs)


def protocol_name(protocol: int) -> str:
    """snarkjs's name of a zkey protocol id ("groth16", "plonk", "fflonk"; else "unknown")."""
    return PROTOCOL_NAMES.get(protocol, "unknown")


def require_protocol(path, protocol: int, expected: int) -> None:
    """UnsupportedProtocol naming the key's protocol unless it is `expected`: a protocol cuzk
    proves (Groth16, PLONK) given to the other's reader, or one it does not (FFLONK)."""
    if protocol == expected:
        return
    name = protocol_name(protocol)
    if protocol in SUPPORTED_PROTOCOLS:
        raise UnsupportedProtocol(
            path,
            f"protocol id {protocol} ({name}), not {protocol_name(expected)} "
            f"(id {expected}) as this reader expects",
        )
    supported = " and ".join(f"{protocol_name(p)} (id {p})" for p in SUPPORTED_PROTOCOLS)
    raise UnsupportedProtocol(
        path, f"protocol id {protocol} ({name}) is not supported: cuzk proves {supported} keys"
    )


def zkey_protocol(path: os.PathLike | str, data=None) -> int:
    """The protocol id of the .zkey at `path` (section 1), for a command that dispatches on
    it: 1 = Groth16, 2 = PLONK, 10 = FFLONK. `data`: the file's bytes instead of the path's
    (an upload). Raises a FormatError for a file that is no zkey."""
    f = BinFile(path, "zkey", (ZKEY_VERSION,), data=data)
    s = f.section(HEADER, "header")
    if s.size != 4:
        raise BadSectionSize(f.path, f"header section (1) is {s.size} bytes, expected 4")
    return f.u32(s.offset)


def read_primes(f: BinFile, s, label: str, curves_allowed=None):
    """The curve of a key header section `s` of `f` that opens with u32 n8q, q, u32 n8r, r
    (the Groth16 and PLONK headers do), and the offset after r. `label` names the section in
    messages; `curves_allowed` as for ZKey."""
    path = f.path
    if s.size < 4:
        raise BadSectionSize(path, f"{label} is only {s.size} bytes")
    pos = s.offset
    n8q = f.u32(pos)
    widths = {c.n8q: c for c in curves.CURVES.values()}
    if n8q not in widths:
        sizes = ", ".join(f"{c.title}'s {c.n8q}" for c in curves.CURVES.values())
        raise WrongPrime(
            path, f"n8q = {n8q}: no known curve's base field has {n8q}-byte elements ({sizes})"
        )
    if s.size < 4 + n8q + 4 + 32:
        raise BadSectionSize(path, f"{label} is only {s.size} bytes")
    q = f.bigint(pos + 4, n8q)
    pos += 4 + n8q
    curve = curves.by_q(q)
    if curve is None or curve.n8q != n8q:
        raise WrongPrime(
            path, f"n8q = {n8q}: base field prime q = {q:#x} is not {widths[n8q].title}'s"
        )
    curves.require(curve, curves_allowed, path, "cuzk proves on")
    n8r = f.u32(pos)
    if n8r != curve.n8r:
        raise WrongPrime(path, f"n8r = {n8r}: {curve.title}'s scalar field needs {curve.n8r} bytes")
    r = f.bigint(pos + 4, curve.n8r)
    if r != curve.r:
        raise WrongPrime(path, f"scalar field prime r = {r:#x} is not {curve.title}'s")
    return curve, pos + 4 + curve.n8r


def check_domain(path, d: int, curve, spare_bits: int = 0) -> None:
    """BadHeader unless domainSize d is a power of two whose 2^spare_bits multiple fits the
    curve's 2-adicity (PLONK works on the domain of 4n: spare_bits = 2)."""
    if d < 1 or d & (d - 1):
        raise BadHeader(path, f"domainSize = {d} is not a power of two")
    if d.bit_length() - 1 + spare_bits > curve.fr_two_adicity:
        raise BadHeader(
            path,
            f"domainSize = 2^{d.bit_length() - 1} exceeds {curve.title}'s"
            f" 2^{curve.fr_two_adicity - spare_bits}",
        )


# BN254's (the names this module has always exported).
HEADER_POINTS = header_points(curves.BN254)
GROTH16_HEADER_SIZE = groth16_header_size(curves.BN254)


@dataclass
class ZKeyData:
    """Everything a Groth16 .zkey holds, as arrays in the stored (Montgomery limb) form.

    `ZKey` (the reader) has the same attributes, so `write_zkey(path, ZKey(src))` copies a key.
    G1 = (8,) uint64, G2 = (16,) uint64 on BN254 ((12,) and (24,) on BLS12-381: the curve is
    the one of q and r); `coefficients` is a COEF_DTYPE array.
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
    """A Groth16 .zkey. Point and coefficient arrays are read-only: with `private` (the
    default) arrays of their own, each section read from the file when first used (and
    again after forget()); with private=False views of the mapped file, shared with the page
    cache (a daemon's proving processes: cuzk.groth16.key; see cuzk.formats.binfile for what
    a map risks).

    Attributes: path, n8q, q, n8r, r, n_vars, n_public, domain_size (ints); curve (snarkjs's
    name, "bn128" or "bls12381", from q and r) and curve_info (its cuzk.formats.curve.Curve);
    alpha1, beta1, delta1 (G1,) and beta2, gamma2, delta2 (G2,) uint64 Montgomery limbs;
    ic (n_public+1, G1); coefficients (structured, COEF_DTYPE); points_a (n_vars, G1);
    points_b1 (n_vars, G1); points_b2 (n_vars, G2); points_c (n_vars-n_public-1, G1);
    points_h (domain_size, G1); contributions (bytes or None). G1 and G2 are the curve's
    point widths in limbs: 8 and 16 on BN254, 12 and 24 on BLS12-381.

    `curves` (snarkjs names) limits the curves accepted: a key on another raises
    UnsupportedCurve (the prover passes ("bn128",)); None accepts every known curve.

    `check_coefficients` scans the coefficient section once (vectorised) to confirm that every
    matrix id is 0 or 1 and every constraint/signal index is in range.
    """

    def __init__(
        self,
        path: os.PathLike | str,
        check_coefficients: bool = True,
        curves_allowed=None,
        private: bool = True,
    ):
        self.file = f = BinFile(path, "zkey", (ZKEY_VERSION,), private=private)
        self.path = f.path
        # coefficients and point sections: (offset, dtype, count, row width or 0), their
        # arrays made when first asked for (a private key reads each then; see forget())
        self._where: dict[str, tuple] = {}
        self._arrays: dict[str, np.ndarray] = {}
        # check_on_read(): a check of each section's array the first time it is made
        self._on_read = None
        self._checked: set[str] = set()

        s = f.section(HEADER, "header")
        if s.size != 4:
            raise BadSectionSize(self.path, f"header section (1) is {s.size} bytes, expected 4")
        require_protocol(self.path, f.u32(s.offset), GROTH16_PROTOCOL_ID)

        s = f.section(GROTH16_HEADER, "Groth16 header")
        curve, pos = read_primes(f, s, "Groth16 header section (2)", curves_allowed)
        header_size = groth16_header_size(curve)
        if s.size != header_size:
            raise BadSectionSize(
                self.path,
                f"Groth16 header section (2) is {s.size} bytes, expected {header_size}",
            )
        self.n8q, self.q, self.n8r, self.r = curve.n8q, curve.q, curve.n8r, curve.r
        self.curve_info = curve
        self.curve = curve.name
        g1, g2 = curve.g1_limbs, curve.g2_limbs
        self.n_vars = f.u32(pos)
        self.n_public = f.u32(pos + 4)
        self.domain_size = f.u32(pos + 8)
        pos += 12
        if self.n_public + 1 > self.n_vars:
            raise BadHeader(self.path, f"nPublic = {self.n_public} but nVars = {self.n_vars}")
        check_domain(self.path, self.domain_size, curve)
        for name, width in header_points(curve):
            setattr(self, name, f.limbs(pos, 1, width)[0])
            pos += 8 * width

        self.ic = self._points(IC, "IC", self.n_public + 1, g1)

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
        self._where["coefficients"] = (s.offset + 4, COEF_DTYPE, n_coefs, 0)

        for attr, sid, name, count, width in (
            ("points_a", POINTS_A, "pointsA", self.n_vars, g1),
            ("points_b1", POINTS_B1, "pointsB1", self.n_vars, g1),
            ("points_b2", POINTS_B2, "pointsB2", self.n_vars, g2),
            ("points_c", POINTS_C, "pointsC", self.n_vars - self.n_public - 1, g1),
            ("points_h", POINTS_H, "pointsH", self.domain_size, g1),
        ):
            offset = self._points_at(sid, name, count, width)
            self._where[attr] = (offset, np.dtype("<u8"), count * width, width)
        if f.has(CONTRIBUTIONS):
            s = f.section(CONTRIBUTIONS, "contributions")
            self.contributions = f.read_bytes(s.offset, s.size)
        else:
            self.contributions = None

        if check_coefficients:
            self.check_coefficients()
            if f.private:  # read again when needed: a process that proves holds no copy
                self.forget("coefficients")

    def _section(self, attr: str) -> np.ndarray:
        a = self._arrays.get(attr)
        if a is None:
            offset, dtype, count, width = self._where[attr]
            a = self.file.view(offset, dtype, count)
            if width:
                a = a.reshape(count // width, width)
            check = self._on_read
            if check is not None and attr not in self._checked:
                check(attr, a)  # raises for a bad section: the array is not kept
                self._checked.add(attr)
            a = self._arrays.setdefault(attr, a)
        return a

    def rows(self, attr: str, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi) of a point section (entries, of the coefficients), not kept: a view of
        the map, or for a private key a read of that range alone (a whole section need not be
        held to be checked: cuzk.groth16.validate reads a daemon's keys piece by piece)."""
        offset, dtype, count, width = self._where[attr]
        per = max(width, 1)
        total = count // per
        lo, hi = max(0, int(lo)), min(total, int(hi))
        if hi <= lo:
            return np.empty((0, width) if width else 0, dtype=dtype)
        a = self.file.view(offset + lo * per * dtype.itemsize, dtype, (hi - lo) * per)
        return a.reshape(hi - lo, width) if width else a

    def pieces(self, attr: str, step: int | None = None):
        """(lo, rows [lo, lo + step)) over a section, in order, each made by rows() (not kept);
        step: CHECK_ROWS by default. Nothing for an empty section."""
        step = CHECK_ROWS if step is None else int(step)
        for lo in range(0, self.section_rows(attr), step):
            yield lo, self.rows(attr, lo, lo + step)

    def section_rows(self, attr: str) -> int:
        """Rows of a point section (entries, of the coefficients), without reading it."""
        offset, dtype, count, width = self._where[attr]
        return count // max(width, 1)

    def check_on_read(self, check) -> None:
        """Call check(attr, array) on each point or coefficient section's array the first time
        it is made (read, for a private key), before anything uses it; what it raises goes to
        the reader. A section read again after forget() is not checked again (a private key's
        file is checked unchanged before each read: cuzk.formats.binfile). A one-shot proof
        checks its key's points this way, as its steps read them, instead of reading every
        section once more to check it first (cuzk.groth16.validate)."""
        self._on_read = check

    coefficients = property(lambda self: self._section("coefficients"))
    points_a = property(lambda self: self._section("points_a"))
    points_b1 = property(lambda self: self._section("points_b1"))
    points_b2 = property(lambda self: self._section("points_b2"))
    points_c = property(lambda self: self._section("points_c"))
    points_h = property(lambda self: self._section("points_h"))

    def forget(self, *attrs: str) -> None:
        """Drop this key's arrays of the named sections (a later access makes them again:
        a private key reads them from the file, a mapped one views the map)."""
        for attr in attrs:
            self._arrays.pop(attr, None)

    def section_nbytes(self, attr: str) -> int:
        """Bytes of a coefficient or point section, without reading it."""
        offset, dtype, count, width = self._where[attr]
        return np.dtype(dtype).itemsize * count

    def _points_at(self, sid: int, name: str, count: int, width: int) -> int:
        """The offset of a point section, its size checked."""
        s = self.file.section(sid, name)
        expected = count * 8 * width
        if s.size != expected:
            kind = "G1" if width == self.curve_info.g1_limbs else "G2"
            raise BadSectionSize(
                self.path,
                f"{name} section ({sid}) is {s.size} bytes, expected {count} {kind} points"
                f" = {expected} bytes",
            )
        return s.offset

    def _points(self, sid: int, name: str, count: int, width: int) -> np.ndarray:
        return self.file.limbs(self._points_at(sid, name, count, width), count, width)

    def check_coefficients(self) -> None:
        """Raise BadValue if an entry's matrix, constraint or signal is out of range. Unless
        the section is already held, it is read a piece of CHECK_ROWS entries at a time, and
        a mapped key's pieces leave the process's resident set once checked (a process that
        proves on the key reads them again from the page cache when it needs them; one that
        does not, a device process, never holds them)."""
        kept = "coefficients" in self._arrays
        for lo, c in [(0, self.coefficients)] if kept else self.pieces("coefficients"):
            self._check_coefficients(c, lo)
            if not kept and not self.file.private:
                self.file.release(c)

    def _check_coefficients(self, c, lo: int) -> None:
        """Raise BadValue for the first bad entry of c, entries from entry lo."""
        bad = np.flatnonzero(c["matrix"] > 1)
        if len(bad):
            i = int(bad[0])
            m = int(c["matrix"][i])
            raise BadValue(self.path, f"coefficient {lo + i} has matrix id {m} (only 0 = A, 1 = B)")
        bounds = (
            ("constraint", self.domain_size, "domainSize"),
            ("signal", self.n_vars, "nVars"),
        )
        for field, bound, what in bounds:
            bad = np.flatnonzero(c[field] >= bound)
            if len(bad):
                i = int(bad[0])
                raise BadValue(
                    self.path,
                    f"coefficient {lo + i} has {field} index {int(c[field][i])} >= "
                    f"{what} = {bound}",
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
            f"ZKey({self.path!r}, curve={self.curve}, n_vars={self.n_vars}, "
            f"n_public={self.n_public}, "
            f"domain_size={self.domain_size}, coefficients={self.section_rows('coefficients')})"
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
    q, r = int(getattr(key, "q", FQ_MODULUS)), int(getattr(key, "r", FR_MODULUS))
    curve = curves.by_q(q)
    if curve is None or curve.r != r:
        raise ValueError(f"write_zkey: q = {q:#x}, r = {r:#x} are not one known curve's primes")
    g1, g2 = curve.g1_limbs, curve.g2_limbs
    if d < 1 or d & (d - 1):
        raise ValueError(f"write_zkey: domain_size {d} is not a power of two")
    header = b"".join(
        [
            curve.n8q.to_bytes(4, "little"),
            int_to_bytes(q, curve.n8q),
            curve.n8r.to_bytes(4, "little"),
            int_to_bytes(r, curve.n8r),
            n_vars.to_bytes(4, "little"),
            n_public.to_bytes(4, "little"),
            d.to_bytes(4, "little"),
        ]
        + [
            _check_shape(name, getattr(key, name), (w,)).tobytes()
            for name, w in header_points(curve)
        ]
    )
    assert len(header) == groth16_header_size(curve)
    coefs = np.ascontiguousarray(key.coefficients)
    if coefs.dtype != COEF_DTYPE:
        coefs = coefs.astype(COEF_DTYPE)
    payload = {
        HEADER: [GROTH16_PROTOCOL_ID.to_bytes(4, "little")],
        GROTH16_HEADER: [header],
        IC: [_check_shape("ic", key.ic, (n_public + 1, g1))],
        COEFS: [len(coefs).to_bytes(4, "little"), coefs],
        POINTS_A: [_check_shape("points_a", key.points_a, (n_vars, g1))],
        POINTS_B1: [_check_shape("points_b1", key.points_b1, (n_vars, g1))],
        POINTS_B2: [_check_shape("points_b2", key.points_b2, (n_vars, g2))],
        POINTS_C: [_check_shape("points_c", key.points_c, (n_vars - n_public - 1, g1))],
        POINTS_H: [_check_shape("points_h", key.points_h, (d, g1))],
    }
    contributions = getattr(key, "contributions", None)
    if contributions is not None:
        payload[CONTRIBUTIONS] = [bytes(contributions)]
    sections = [(sid, payload[sid]) for sid in SNARKJS_SECTION_ORDER if sid in payload]
    with atomic_writer(path) as f:
        write_container(f, "zkey", ZKEY_VERSION, sections)
