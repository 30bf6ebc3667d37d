"""The errors every reader and writer in cuzk.formats raises: FormatError and its kinds.

Each message starts with the file it is about and says what is wrong, so a command line can
print `str(err)` as its one-line reason.
"""

from __future__ import annotations

import os


class FormatError(ValueError):
    """A file cuzk cannot use. `path` is the file, `problem` says what is wrong with it."""

    def __init__(self, path: os.PathLike | str | None, problem: str):
        self.path = None if path is None else os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path is not None else problem)


class BadMagic(FormatError):
    """The file does not start with the expected 4-byte magic ("zkey", "wtns", "r1cs")."""


class BadVersion(FormatError):
    """The container's version is one cuzk does not read."""


class Truncated(FormatError):
    """The file ends before a header, section table entry or section it declares."""


class MissingSection(FormatError):
    """A section the format requires is absent."""


class DuplicateSection(FormatError):
    """A section that must appear once appears more than once."""


class BadSectionSize(FormatError):
    """A section's byte size disagrees with the counts in the header."""


class WrongPrime(FormatError):
    """A field prime (or its byte width) is not BN254's base field q or scalar field r."""


class UnsupportedProtocol(FormatError):
    """A proving key for a protocol other than Groth16 (PLONK, FFLONK, ...)."""


class BadHeader(FormatError):
    """A header field is out of range (domain size not a power of two, nPublic >= nVars, ...)."""


class BadValue(FormatError):
    """A value inside a section is out of range (a field element >= its prime, an index past
    its bound, w[0] != 1)."""


class BadPoint(FormatError):
    """A curve point of a key that is not a point of its group: a coordinate not below q, off
    the curve or the twist, or (a G2 point of the header) outside the order-r subgroup."""


class CountMismatch(FormatError):
    """Two files that must agree do not (witness length vs the key's nVars, ...)."""


class BadJson(FormatError):
    """A snarkjs JSON file (proof, public signals, verification key) of the wrong shape."""
