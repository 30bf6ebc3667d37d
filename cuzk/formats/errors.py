"""The one error tree of cuzk's inputs: FormatError and its kinds, raised by every reader and
writer in cuzk.formats, by key validation and by the verifier (`cuzk verify` exits 2 on any).

Each message starts with the file it is about (and the field in it, when there is one) and
says what is wrong, so a command line can print `str(err)` as its one-line reason.
"""

from __future__ import annotations

import os


class FormatError(ValueError):
    """Input cuzk cannot use. `where` names the file, and the field in it when there is one
    ("proof.json: pi_a[0]"); `problem` says what is wrong."""

    def __init__(self, where: os.PathLike | str | None, problem: str):
        self.where = None if where is None else os.fspath(where)
        self.problem = problem
        super().__init__(f"{self.where}: {problem}" if self.where is not None else problem)

    def __reduce__(self):
        # Pickled as what it holds (message, where, problem, any fields a kind adds), not
        # through __init__, whose arguments differ from args: an error raised in another
        # process (a node of a farm, a child) arrives as itself, with its kind and message.
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls, args, state):
    """A FormatError (or kind) from its pickled args and attributes (FormatError.__reduce__)."""
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class BadMagic(FormatError):
    """The file does not start with the expected 4-byte magic ("zkey", "wtns", "r1cs")."""


class BadVersion(FormatError):
    """The container's version is one cuzk does not read."""


class Truncated(FormatError):
    """The file ends before a header, section table entry or section it declares."""


class Changed(FormatError):
    """A file read in parts changed between them: truncated, rewritten or replaced since it
    was opened (a proving key a daemon holds, copied over by a new one)."""


class MissingSection(FormatError):
    """A section the format requires is absent."""


class DuplicateSection(FormatError):
    """A section that must appear once appears more than once."""


class BadSectionSize(FormatError):
    """A section's byte size disagrees with the counts in the header."""


class WrongPrime(FormatError):
    """A field prime (or its byte width) that is no known curve's (BN254's or BLS12-381's
    base field q or scalar field r), or not the one the file's other prime implies."""


class UnsupportedCurve(WrongPrime):
    """A well-formed file over a curve the command does not handle (a BLS12-381 key given to
    the prover, which proves BN254 only)."""


class UnsupportedProtocol(FormatError):
    """A proving key for a protocol other than Groth16 (PLONK, FFLONK, ...), or a snarkjs JSON
    file of another protocol or a curve other than bn128 (BN254)."""


class BadHeader(FormatError):
    """A header field is out of range (domain size not a power of two, nPublic >= nVars, ...)."""


class BadValue(FormatError):
    """A value inside a section is out of range (a field element >= its prime, an index past
    its bound, w[0] != 1)."""


class BadPoint(FormatError):
    """A curve point that is not a point of its group: a coordinate not below q, off the
    curve or the twist, or (G2) outside the order-r subgroup. A key's points (named by
    section and index) raise BadPoint itself; JSON points the kinds below."""


class NotOnCurve(BadPoint):
    """A point that does not satisfy its curve equation."""


class NotInSubgroup(BadPoint):
    """A point on its curve but outside the order-r subgroup: a G2 point on the twist, or a
    G1 point on a curve whose G1 has a cofactor (BLS12-381; BN254's has none)."""


class CountMismatch(FormatError):
    """Two counts that must agree do not: witness length vs the key's nVars, public signals
    or IC points vs nPublic."""


class BadJson(FormatError):
    """A snarkjs JSON file (proof, public signals, verification key) that cannot be read or is
    of the wrong shape: not JSON, a missing key, a number that is not a decimal string."""


class NotInField(BadJson):
    """A JSON number not below its prime: a coordinate not below q, a public signal not
    below r."""
