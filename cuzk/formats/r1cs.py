"""The circom constraint system (.r1cs, version 1), mapped; constraints as CSR matrices.

Sections: 1 header = u32 n8, prime, u32 nWires, u32 nPubOut, u32 nPubIn, u32 nPrvIn,
u64 nLabels, u32 nConstraints; 2 constraints = per constraint three linear combinations
A, B, C, each u32 nTerms then nTerms x (u32 wire, value[n8]); 3 wire -> label map
(nWires x u64). Values are plain form. Wire order: 0 = constant one, then public outputs,
public inputs, private inputs, internal signals (the witness order). The prime is a curve's
scalar field r (cuzk.formats.curve: BN254's or BLS12-381's, both n8 = 32).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from cuzk.arith.radix import N8, limbs_to_ints
from cuzk.formats import curve as curves
from cuzk.formats.binfile import BinFile
from cuzk.formats.errors import BadSectionSize, BadValue, Truncated, WrongPrime

R1CS_VERSION = 1
HEADER, CONSTRAINTS, WIRE2LABEL = 1, 2, 3
HEADER_SIZE = 4 + N8 + 4 * 4 + 8 + 4
TERM_BYTES = 4 + N8


@dataclass
class SparseMatrix:
    """One constraint matrix in CSR form: row i's terms are cols/vals[row_ptr[i]:row_ptr[i+1]].

    cols: uint32 wire indices; vals: (nnz, 4) uint64 plain-form values.
    """

    row_ptr: np.ndarray
    cols: np.ndarray
    vals: np.ndarray

    def row(self, i: int) -> dict[int, int]:
        """Row i as {wire: value} with Python int values."""
        lo, hi = int(self.row_ptr[i]), int(self.row_ptr[i + 1])
        return dict(
            zip((int(c) for c in self.cols[lo:hi]), limbs_to_ints(self.vals[lo:hi]), strict=True)
        )


class R1CS:
    """A .r1cs, read into memory (not mapped: a file truncated under a map kills the process
    that touches it, cuzk.formats.binfile): header fields and the A, B, C matrices
    (SparseMatrix each).

    Attributes: path, prime, n_wires, n_pub_out, n_pub_in, n_prv_in, n_labels, n_constraints,
    n_public (= n_pub_out + n_pub_in), A, B, C, wire_to_label (uint64 view or None);
    curve (snarkjs's name of the prime's curve: "bn128", "bls12381"). `curves_allowed`
    (snarkjs names) limits the curves: another raises UnsupportedCurve.
    """

    def __init__(self, path: os.PathLike | str, curves_allowed=None):
        with open(path, "rb") as fh:
            data = fh.read()
        self.file = f = BinFile(path, "r1cs", (R1CS_VERSION,), data=data)
        self.path = f.path
        s = f.section(HEADER, "header")
        if s.size < 4:
            raise BadSectionSize(self.path, f"header section (1) is {s.size} bytes, too short")
        n8 = f.u32(s.offset)
        if n8 != N8:
            raise WrongPrime(
                self.path, f"n8 = {n8}: the scalar fields of {curves.known()} need 32 bytes"
            )
        if s.size != HEADER_SIZE:
            raise BadSectionSize(
                self.path, f"header section (1) is {s.size} bytes, expected {HEADER_SIZE}"
            )
        self.prime = f.bigint(s.offset + 4, N8)
        curve = curves.by_r(self.prime)
        if curve is None:
            raise WrongPrime(
                self.path, f"prime {self.prime:#x} is not the scalar field r of {curves.known()}"
            )
        curves.require(curve, curves_allowed, self.path, "cuzk sets up on")
        self.curve = curve.name
        pos = s.offset + 4 + N8
        counts = struct.unpack_from("<4I", f.mm, pos)
        self.n_wires, self.n_pub_out, self.n_pub_in, self.n_prv_in = counts
        self.n_labels = f.u64(pos + 16)
        self.n_constraints = f.u32(pos + 24)
        self.n_public = self.n_pub_out + self.n_pub_in

        s = f.section(CONSTRAINTS, "constraints")
        self.A, self.B, self.C = self._parse_constraints(s)

        if f.has(WIRE2LABEL):
            s = f.section(WIRE2LABEL, "wire to label map")
            if s.size != 8 * self.n_wires:
                raise BadSectionSize(
                    self.path,
                    f"wire-to-label section (3) is {s.size} bytes, expected {8 * self.n_wires}",
                )
            self.wire_to_label = f.view(s.offset, "<u8", self.n_wires)
        else:
            self.wire_to_label = None

    def _parse_constraints(self, s) -> tuple[SparseMatrix, SparseMatrix, SparseMatrix]:
        f, end = self.file, s.offset + s.size
        n_lc = 3 * self.n_constraints
        counts = np.empty(n_lc, dtype=np.int64)
        starts = np.empty(n_lc, dtype=np.int64)
        pos = s.offset
        unpack = struct.Struct("<I").unpack_from
        mm = f.mm
        # Pass 1 (sequential: each combination's position depends on the previous counts).
        for k in range(n_lc):
            if pos + 4 > end:
                raise Truncated(
                    self.path,
                    f"constraints section (2) ends inside constraint {k // 3}"
                    f" of {self.n_constraints}",
                )
            n = unpack(mm, pos)[0]
            counts[k] = n
            starts[k] = pos + 4
            pos += 4 + n * TERM_BYTES
        if pos > end:
            raise Truncated(
                self.path,
                f"constraints section (2) ends inside constraint {self.n_constraints - 1}",
            )
        if pos != end:
            raise BadSectionSize(
                self.path,
                f"constraints section (2) has {end - pos} bytes after its"
                f" {self.n_constraints} constraints",
            )
        # Pass 2 (vectorised): the byte offset of every term, then gather wires and values.
        nnz = int(counts.sum())
        first = np.repeat(np.cumsum(counts) - counts, counts)
        term_pos = np.repeat(starts, counts) + (np.arange(nnz, dtype=np.int64) - first) * TERM_BYTES
        raw = np.frombuffer(mm, dtype=np.uint8)
        wires = raw[term_pos[:, None] + np.arange(4)].copy().view("<u4").reshape(nnz)
        vals = raw[term_pos[:, None] + 4 + np.arange(N8)].copy().view("<u8").reshape(nnz, 4)
        if nnz and int(wires.max()) >= self.n_wires:
            i = int(np.flatnonzero(wires >= self.n_wires)[0])
            raise BadValue(
                self.path,
                f"a constraint term names wire {int(wires[i])} >= nWires = {self.n_wires}",
            )
        matrices = []
        for m in range(3):
            c = counts[m::3]
            row_ptr = np.zeros(self.n_constraints + 1, dtype=np.int64)
            np.cumsum(c, out=row_ptr[1:])
            sel = np.repeat(np.tile(np.arange(3) == m, self.n_constraints), counts)
            matrices.append(SparseMatrix(row_ptr, wires[sel], vals[sel]))
        return tuple(matrices)

    def constraints(self) -> list[tuple[dict[int, int], dict[int, int], dict[int, int]]]:
        """All constraints as (A, B, C) rows of {wire: int value}; for small circuits and tests."""
        return [(self.A.row(i), self.B.row(i), self.C.row(i)) for i in range(self.n_constraints)]

    def first_unsatisfied(self, witness: list[int]) -> int | None:
        """The first constraint i with (A_i·w)(B_i·w) != C_i·w, in Python ints; None if all hold.

        A slow reference for small circuits (tests); the prover has its own fast check.
        """
        r = self.prime
        for i, (a, b, c) in enumerate(self.constraints()):
            dot = [sum(v * witness[j] for j, v in row.items()) % r for row in (a, b, c)]
            if dot[0] * dot[1] % r != dot[2]:
                return i
        return None

    def __repr__(self) -> str:
        return (
            f"R1CS({self.path!r}, n_wires={self.n_wires}, n_constraints={self.n_constraints}, "
            f"n_pub_out={self.n_pub_out}, n_pub_in={self.n_pub_in}, n_prv_in={self.n_prv_in})"
        )
