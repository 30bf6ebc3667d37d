"""snarkjs's powers-of-tau file (.ptau, version 1): the parts a PLONK setup reads.

Sections (ids; every point affine, Montgomery, as in a .zkey; the curve is the one whose
base field prime q the header names):

  1 header        u32 n8 (bytes of q), q, u32 power, u32 ceremonyPower
  2 tauG1         2^(power+1) - 1 G1 points [tau^i]_1
  3 tauG2         2^power G2 points [tau^i]_2
  4, 5            alphaTauG1, betaTauG1 (2^power G1 points each)
  6               betaG2 (one G2 point)
  7               the contributions
 12..15           written by `snarkjs powersoftau prepare phase2`: the same points in the
                  Lagrange bases of the domains 2^0 .. 2^power, one after the other (12, from
                  tauG1: 2^0 .. 2^(power+1), 2^(power+2) - 1 points)

A file of power p holds a PLONK key of a domain up to 2^p. `PTau(path)` reads the header and
section table; `tau_g1(count)` and `tau_g2(count)` read only the points asked for (a large
ceremony file is gigabytes), after checking their sections' sizes. `write_ptau` writes one,
section by section as its points are made (cuzk.groth16.powers_of_tau, the development
maker).
"""

from __future__ import annotations

import os

import numpy as np

from cuzk.formats import curve as curves
from cuzk.formats.binfile import BinFile
from cuzk.formats.errors import BadHeader, BadSectionSize, WrongPrime

PTAU_VERSION = 1
HEADER, TAU_G1, TAU_G2 = 1, 2, 3
ALPHA_TAU_G1, BETA_TAU_G1, BETA_G2, CONTRIBUTIONS = 4, 5, 6, 7
LAGRANGE_G1 = 12  # present once the file is prepared for phase 2
LAGRANGE_G2, LAGRANGE_ALPHA_G1, LAGRANGE_BETA_G1 = 13, 14, 15


class PTau:
    """A .ptau file. Attributes: path, curve (cuzk.formats.curve Curve), power,
    ceremony_power, prepared (whether it holds the Lagrange sections)."""

    def __init__(self, path: os.PathLike | str):
        self.file = f = BinFile(path, "ptau", (PTAU_VERSION,))
        self.path = f.path
        s = f.section(HEADER, "header")
        if s.size < 4:
            raise BadSectionSize(self.path, f"header section (1) is {s.size} bytes, too short")
        n8 = f.u32(s.offset)
        if s.size != 4 + n8 + 8:
            raise BadSectionSize(
                self.path, f"header section (1) is {s.size} bytes; n8 = {n8} needs {12 + n8}"
            )
        q = f.bigint(s.offset + 4, n8)
        curve = curves.by_q(q)
        if curve is None or curve.n8q != n8:
            raise WrongPrime(self.path, f"prime {q:#x} is not the base field q of {curves.known()}")
        self.curve = curve
        self.power = f.u32(s.offset + 4 + n8)
        self.ceremony_power = f.u32(s.offset + 8 + n8)
        if not 1 <= self.power <= curve.fr_two_adicity:
            raise BadHeader(
                self.path,
                f"power = {self.power}: {curve.title}'s domains run from 2^1 to "
                f"2^{curve.fr_two_adicity}",
            )
        self.prepared = f.has(LAGRANGE_G1)

    def _points(self, sid: int, name: str, stored: int, count: int, width: int) -> np.ndarray:
        s = self.file.section(sid, name)
        if s.size != stored * 8 * width:
            raise BadSectionSize(
                self.path,
                f"{name} section ({sid}) is {s.size} bytes; power {self.power} needs "
                f"{stored} points = {stored * 8 * width} bytes",
            )
        if count > stored:
            raise ValueError(f"{self.path}: {count} {name} points asked for, {stored} stored")
        return self.file.limbs(s.offset, count, width)

    def tau_g1(self, count: int) -> np.ndarray:
        """[tau^i]_1 for i < count as (count, G1 limbs) stored points."""
        stored = 2 ** (self.power + 1) - 1
        return self._points(TAU_G1, "tauG1", stored, count, self.curve.g1_limbs)

    def tau_g2(self, count: int) -> np.ndarray:
        """[tau^i]_2 for i < count as (count, G2 limbs) stored points."""
        return self._points(TAU_G2, "tauG2", 2**self.power, count, self.curve.g2_limbs)

    def lagrange_g1(self, log_n: int) -> np.ndarray:
        """[L_i(tau)]_1 for the domain of 2^log_n points (a prepared file only), (2^log_n,
        G1 limbs): section 12 holds the domains 2^0 .. 2^(power+1) one after another (tauG1
        reaches 2^(power+1) points, its last taken as zero), so the domain 2^k starts at
        point 2^k - 1."""
        if not self.prepared:
            raise ValueError(f"{self.path}: not prepared for phase 2 (no Lagrange sections)")
        if not 0 <= log_n <= self.power + 1:
            raise ValueError(f"{self.path}: no Lagrange domain of 2^{log_n} in power {self.power}")
        stored = 2 ** (self.power + 2) - 1
        width = self.curve.g1_limbs
        s = self.file.section(LAGRANGE_G1, "lagrangeG1")
        if s.size != stored * 8 * width:
            raise BadSectionSize(
                self.path,
                f"lagrangeG1 section ({LAGRANGE_G1}) is {s.size} bytes; power {self.power} "
                f"needs {stored} points = {stored * 8 * width} bytes",
            )
        n = 1 << log_n
        return self.file.limbs(s.offset + (n - 1) * 8 * width, n, width)

    def __repr__(self) -> str:
        return f"PTau({self.path!r}, curve={self.curve.name}, power={self.power})"


def header_payload(curve, power: int, ceremony_power: int | None = None) -> bytes:
    """Section 1: u32 n8q, q, u32 power, u32 ceremonyPower (snarkjs writes power when none)."""
    from cuzk.arith.radix import int_to_bytes

    return b"".join(
        [
            curve.n8q.to_bytes(4, "little"),
            int_to_bytes(curve.q, curve.n8q),
            power.to_bytes(4, "little"),
            (ceremony_power or power).to_bytes(4, "little"),
        ]
    )


def section_sizes(curve, power: int) -> dict[int, int]:
    """Bytes of each points section of a prepared file of `power` (ids 2..6, 12..15)."""
    g1, g2 = 8 * curve.g1_limbs, 8 * curve.g2_limbs
    n = 2**power
    levels = 2 ** (power + 1) - 1  # the domains 2^0 .. 2^power, one after another
    return {
        TAU_G1: (2 * n - 1) * g1,
        TAU_G2: n * g2,
        ALPHA_TAU_G1: n * g1,
        BETA_TAU_G1: n * g1,
        BETA_G2: g2,
        LAGRANGE_G1: (2 ** (power + 2) - 1) * g1,  # ... and 2^(power+1)
        LAGRANGE_G2: levels * g2,
        LAGRANGE_ALPHA_G1: levels * g1,
        LAGRANGE_BETA_G1: levels * g1,
    }


def write_ptau(path: os.PathLike | str, curve, power: int, sections) -> None:
    """Write a .ptau atomically (temp file + rename), sections in the order given.

    `sections` is an iterable of (id, size, chunks): `chunks` an iterable of bytes or
    C-contiguous arrays, pulled only when its section is written (a section's points are made
    while the previous ones are already on disk), whose lengths must add up to `size`."""
    from cuzk.formats.atomic import atomic_writer
    from cuzk.formats.binfile import FILE_HEADER, SECTION_HEADER

    sections = list(sections)
    with atomic_writer(path) as f:
        f.write(FILE_HEADER.pack(b"ptau", PTAU_VERSION, len(sections)))
        for sid, size, chunks in sections:
            f.write(SECTION_HEADER.pack(sid, size))
            wrote = 0
            for chunk in chunks:
                view = memoryview(chunk).cast("B")
                f.write(view)
                wrote += view.nbytes
            if wrote != size:
                raise ValueError(f"write_ptau: section {sid} has {wrote} bytes, not {size}")
