"""The snarkjs PLONK proving key (.zkey version 1, protocol 2): a mapped reader.

`snarkjs plonk setup` (plonk_setup.js) turns each R1CS constraint into PLONK gates
qM·a·b + qL·a + qR·b + qO·c + qC = 0 over wires a, b, c (one gate per public signal first,
a = the signal, qL = 1; linear combinations of more than one or three terms are split by
extra "addition" signals), then writes the sections (ids; it writes 3..14 first, the
headers last):

  1 header        u32 protocol id = 2
  2 PLONK header  u32 n8q, q, u32 n8r, r, u32 nVars, u32 nPublic, u32 domainSize,
                  u32 nAdditions, u32 nConstraints, k1, k2 (n8r bytes each, Montgomery),
                  Qm, Ql, Qr, Qo, Qc, S1, S2, S3 (G1), X_2 (G2: [x]_2, tau in G2)
  3 additions     nAdditions x (u32 signal a, u32 signal b, factor a, factor b (n8r each,
                  Montgomery: factor·R)): signal nVars - nAdditions + i = fa·w_a + fb·w_b
  4, 5, 6         A, B, C wire maps: nConstraints x u32 signal index per gate
  7..11           Qm, Ql, Qr, Qo, Qc: n coefficients, then 4n evaluations on the domain of
                  size 4n (not a coset: w_4n^i), Montgomery
 12 sigma         S1, S2, S3, each as 7..11 (5n elements)
 13 Lagrange      L_1 .. L_max(nPublic, 1), each as 7..11
 14 powers of tau (n + 6) G1 points [tau^i]_1, the KZG commitment key

Field elements are Montgomery (x·R mod r, R = 2^256), points affine Montgomery, as in the
Groth16 key (cuzk.formats.zkey). The n = domainSize is the smallest power of two holding
nConstraints gates, at least 8. The witness of a PLONK key has nVars - nAdditions values
(the circuit's wires); the additions extend it.

`PlonkZKey(path)` reads the file and checks sizes and indices; every array is read-only:
with private=False (a daemon's proving processes) a view of the map, shared with the page
cache, no section copied; with `private` (the default, cuzk.formats.binfile) each section
read into the process's own memory, so a file changed under it cannot fault the process.
"""

from __future__ import annotations

import os

import numpy as np

from cuzk.formats.binfile import BinFile
from cuzk.formats.errors import BadHeader, BadSectionSize, BadValue, CountMismatch
from cuzk.formats.stored import from_mont_r
from cuzk.formats.zkey import (
    HEADER,
    PLONK_PROTOCOL_ID,
    ZKEY_VERSION,
    check_domain,
    read_primes,
    require_protocol,
)

# Section ids.
(
    PLONK_HEADER,
    ADDITIONS,
    A_MAP,
    B_MAP,
    C_MAP,
    QM,
    QL,
    QR,
    QO,
    QC,
    SIGMA,
    LAGRANGE,
    PTAU,
) = range(2, 15)

# The selector polynomials: attribute name, section id, snarkjs's name.
SELECTORS = (
    ("qm", QM, "Qm"),
    ("ql", QL, "Ql"),
    ("qr", QR, "Qr"),
    ("qo", QO, "Qo"),
    ("qc", QC, "Qc"),
)
# The header's points in stored order (all G1 but X_2).
HEADER_G1 = ("Qm", "Ql", "Qr", "Qo", "Qc", "S1", "S2", "S3")
PTAU_EXTRA = 6  # section 14 holds domainSize + 6 powers: t's top third has degree n + 5
MIN_DOMAIN = 8  # snarkjs's smallest PLONK domain (2^3)


def additions_dtype(n8r: int = 32) -> np.dtype:
    """One stored addition: u32 signal a, u32 signal b, factor a, factor b (Montgomery)."""
    limbs = n8r // 8
    return np.dtype(
        [
            ("signal_a", "<u4"),
            ("signal_b", "<u4"),
            ("factor_a", "<u8", (limbs,)),
            ("factor_b", "<u8", (limbs,)),
        ]
    )


class Polynomial:
    """A stored polynomial of a PLONK key: `coefficients` (n, 4) and `evaluations` (4n, 4) on
    the domain of 4n, both Montgomery uint64 limbs, views of the map."""

    __slots__ = ("coefficients", "evaluations")

    def __init__(self, block: np.ndarray, n: int):
        self.coefficients = block[:n]
        self.evaluations = block[n : 5 * n]


class LagrangeBasis:
    """The key's L_1 .. L_count (a sequence of Polynomial), each viewed (mapped) or read
    (private) when first asked for: the prover reads L_1 alone, and a key's Lagrange
    section is 160 bytes a gate per public signal (5.5 GB for 256 of them at 2^17)."""

    def __init__(self, file, offset: int, n: int, count: int, limbs: int):
        self._file, self._offset, self._n, self._limbs = file, offset, n, limbs
        self._count = count
        self._made: dict[int, Polynomial] = {}

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        j = i + self._count if i < 0 else i
        if not 0 <= j < self._count:
            raise IndexError(f"L_{i + 1}: the key has {self._count} Lagrange polynomials")
        p = self._made.get(j)
        if p is None:
            n, width = self._n, self._limbs * 8
            block = self._file.limbs(self._offset + j * 5 * n * width, 5 * n, self._limbs)
            p = self._made[j] = Polynomial(block, n)
        return p

    def __iter__(self):
        return (self[j] for j in range(self._count))


class PlonkZKey:
    """A mapped snarkjs PLONK .zkey (see the module docstring).

    Attributes: path, curve (snarkjs's name), curve_info (its Curve), n8q, q, n8r, r,
    n_vars, n_public, domain_size, power (log2 domain_size), n_additions, n_constraints,
    k1, k2 (plain ints); Qm, Ql, Qr, Qo, Qc, S1, S2, S3 (G1 limbs) and X_2 (G2 limbs), the
    header's points as stored; additions (structured, additions_dtype); a_map, b_map, c_map
    (n_constraints,) uint32; qm, ql, qr, qo, qc, s1, s2, s3 (Polynomial); lagrange (a
    LagrangeBasis: max(nPublic, 1) Polynomial L_1, L_2, ..., each read when asked for);
    ptau ((domain_size + 6), G1 limbs).

    `curves_allowed` (snarkjs names) limits the curves accepted, as for ZKey.
    `check_indices` scans the wire maps and additions once (vectorised) for signal indices
    not below nVars. `private`: see the module's docstring.
    """

    def __init__(
        self,
        path: os.PathLike | str,
        check_indices: bool = True,
        curves_allowed=None,
        private: bool = True,
    ):
        self.file = f = BinFile(path, "zkey", (ZKEY_VERSION,), private=private)
        self.path = f.path
        s = f.section(HEADER, "header")
        if s.size != 4:
            raise BadSectionSize(self.path, f"header section (1) is {s.size} bytes, expected 4")
        require_protocol(self.path, f.u32(s.offset), PLONK_PROTOCOL_ID)

        s = f.section(PLONK_HEADER, "PLONK header")
        label = "PLONK header section (2)"
        curve, pos = read_primes(f, s, label, curves_allowed)
        self.curve_info, self.curve = curve, curve.name
        self.n8q, self.q, self.n8r, self.r = curve.n8q, curve.q, curve.n8r, curve.r
        g1, g2 = curve.g1_limbs, curve.g2_limbs
        size = (pos - s.offset) + 5 * 4 + 2 * curve.n8r + 8 * (8 * g1 + g2)
        if s.size != size:
            raise BadSectionSize(self.path, f"{label} is {s.size} bytes, expected {size}")
        (self.n_vars, self.n_public, self.domain_size, self.n_additions, self.n_constraints) = (
            f.u32(pos + 4 * i) for i in range(5)
        )
        pos += 20
        n = self.domain_size
        check_domain(self.path, n, curve, spare_bits=2)
        self.power = n.bit_length() - 1
        if n < MIN_DOMAIN:
            raise BadHeader(self.path, f"domainSize = {n}: a PLONK domain has at least 8 points")
        if self.n_constraints > n:
            raise BadHeader(
                self.path, f"nConstraints = {self.n_constraints} exceeds domainSize = {n}"
            )
        if self.n_public > self.n_constraints or self.n_additions >= self.n_vars:
            raise BadHeader(
                self.path,
                f"nPublic = {self.n_public}, nAdditions = {self.n_additions} do not fit "
                f"nVars = {self.n_vars} and nConstraints = {self.n_constraints}",
            )
        k = []
        for name in ("k1", "k2"):
            v = f.limbs(pos, 1, curve.r_limbs)[0]
            if int.from_bytes(v.tobytes(), "little") >= curve.r:
                raise BadValue(self.path, f"{name} is not below the scalar field prime r")
            k.append(from_mont_r(v, curve))
            pos += curve.n8r
        self.k1, self.k2 = k
        for name in HEADER_G1:
            setattr(self, name, f.limbs(pos, 1, g1)[0])
            pos += 8 * g1
        self.X_2 = f.limbs(pos, 1, g2)[0]

        s = f.section(ADDITIONS, "additions")
        dt = additions_dtype(curve.n8r)
        if s.size != self.n_additions * dt.itemsize:
            raise BadSectionSize(
                self.path,
                f"additions section (3) is {s.size} bytes; {self.n_additions} additions need "
                f"{self.n_additions * dt.itemsize}",
            )
        self.additions = f.view(s.offset, dt, self.n_additions)
        self.a_map, self.b_map, self.c_map = (
            self._map(sid, name) for sid, name in ((A_MAP, "A"), (B_MAP, "B"), (C_MAP, "C"))
        )
        for attr, sid, name in SELECTORS:
            setattr(self, attr, Polynomial(self._elements(sid, name, 5 * n), n))
        sigma = self._elements(SIGMA, "sigma", 15 * n)
        self.s1, self.s2, self.s3 = (Polynomial(sigma[5 * n * i :], n) for i in range(3))
        count = max(self.n_public, 1)
        offset = self._offset(LAGRANGE, "Lagrange", 5 * n * count)
        self.lagrange = LagrangeBasis(f, offset, n, count, self.curve_info.r_limbs)
        s = f.section(PTAU, "powers of tau")
        points = n + PTAU_EXTRA
        if s.size != points * 8 * g1:
            raise BadSectionSize(
                self.path,
                f"powers of tau section (14) is {s.size} bytes, expected {points} G1 points "
                f"= {points * 8 * g1} bytes",
            )
        self.ptau = f.limbs(s.offset, points, g1)
        if check_indices:
            self.check_indices()

    def _map(self, sid: int, name: str) -> np.ndarray:
        s = self.file.section(sid, f"{name} map")
        if s.size != 4 * self.n_constraints:
            raise BadSectionSize(
                self.path,
                f"{name} map section ({sid}) is {s.size} bytes; {self.n_constraints} gates "
                f"need {4 * self.n_constraints}",
            )
        return self.file.view(s.offset, np.dtype("<u4"), self.n_constraints)

    def _offset(self, sid: int, name: str, count: int) -> int:
        """Where section `sid` of `count` field elements starts (BadSectionSize otherwise)."""
        s = self.file.section(sid, name)
        expected = count * self.n8r
        if s.size != expected:
            raise BadSectionSize(
                self.path,
                f"{name} section ({sid}) is {s.size} bytes, expected {count} field elements "
                f"= {expected} bytes",
            )
        return s.offset

    def _elements(self, sid: int, name: str, count: int) -> np.ndarray:
        offset = self._offset(sid, name, count)
        return self.file.limbs(offset, count, self.curve_info.r_limbs)

    def check_indices(self) -> None:
        """BadValue if a gate's wire or an addition's operand is not a signal below nVars, or
        an addition reads a signal it (or a later one) defines."""
        for name, m in (("A", self.a_map), ("B", self.b_map), ("C", self.c_map)):
            bad = np.flatnonzero(m >= self.n_vars)
            if len(bad):
                i = int(bad[0])
                raise BadValue(
                    self.path,
                    f"gate {i} has {name} signal {int(m[i])} >= nVars = {self.n_vars}",
                )
        first = self.n_vars - self.n_additions  # the signal the first addition defines
        own = first + np.arange(self.n_additions)
        for field in ("signal_a", "signal_b"):
            idx = self.additions[field]
            bad = np.flatnonzero(idx >= own)
            if len(bad):
                i = int(bad[0])
                raise BadValue(
                    self.path,
                    f"addition {i} (signal {first + i}) reads signal {int(idx[i])}, "
                    "not defined before it",
                )

    @property
    def n_witness(self) -> int:
        """The values a witness for this key holds: the circuit's wires, nVars - nAdditions."""
        return self.n_vars - self.n_additions

    def check_witness(self, witness, wtns_path: os.PathLike | str | None = None) -> None:
        """CountMismatch unless `witness` (an (n, 4) array or a Witness) has nVars - nAdditions
        values."""
        values = getattr(witness, "values", witness)
        if wtns_path is None:
            wtns_path = getattr(witness, "path", None)
        if len(values) != self.n_witness:
            raise CountMismatch(
                wtns_path,
                f"witness has {len(values)} values but the PLONK key {self.path} expects "
                f"nVars - nAdditions = {self.n_vars} - {self.n_additions} = {self.n_witness}",
            )

    def __repr__(self) -> str:
        return (
            f"PlonkZKey({self.path!r}, curve={self.curve}, n_vars={self.n_vars}, "
            f"n_public={self.n_public}, domain_size={self.domain_size}, "
            f"n_additions={self.n_additions}, n_constraints={self.n_constraints})"
        )
