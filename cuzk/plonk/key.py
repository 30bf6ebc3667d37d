"""A PLONK proving key opened once for the engine (cuzk.engine.contract's ProvingKey): the
snarkjs PLONK .zkey (cuzk.formats.plonk_zkey) plus what the engine sizes and budgets by.

What the engine holds per partition: the witness (the circuit's wires, nVars - nAdditions
values: what a .wtns or the circuit's wasm gives) and three buffers a, b, c, each gate's
wire values on the domain H in Montgomery form ((domainSize, 4) limbs each), which
synthesize fills in a synthesis process (the witness extended by the key's additions, then
gathered through the wire maps, the gates checked) and prove_start takes as round 1's
wires (cuzk.plonk.stages).
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from cuzk.formats.errors import BadValue
from cuzk.formats.plonk_zkey import PLONK_HEADER, SELECTORS, PlonkZKey

FR_BYTES = 32
# What the five rounds allocate at their peak in a device process (round 3: the wires and z
# on the domain of 4n, qC + PI there, the quotient's terms; the Python-int vectors of rounds
# 2 and 5; the key's own values there are views of the key, the domain's points the
# device's, kept with the key and counted in nbytes),
# in vectors of 4n elements: tracemalloc's peak over prove_start on a loaded key measured
# 19-21 of them on the fixtures (n = 8, 32; 37-43 when each proof computed the key's), so 24.
PEAK_EXTENDED_VECTORS = 24


# Device processes that may hold a key at once, each with its own extended values (set by
# configure() from the engine's `device_processes` option; 1 for a process never configured).
_copies = 1


def configure(options: dict) -> None:
    """Take ``device_processes`` from the prover's options (absent: 1), and ``msm_tables``
    with its copies and cap (cuzk.kernels.table_setting, one for both systems)."""
    global _copies
    from cuzk.kernels import table_setting as tables

    n = (options or {}).get("device_processes", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"device_processes: expected a whole number >= 1, got {n!r}")
    tables.configure(options or {})
    _copies = n


class ProvingKey:
    """A PLONK key for the engine. `zkey` is the PlonkZKey; `protocol` is "plonk".

    key_id is a short digest of the PLONK header (the primes, the sizes, k1, k2, the
    commitments to the selectors and the permutation, [tau]_2): two keys with one id are the
    same setup. n_vars is the witness's length, nVars - nAdditions (the contract's "witness
    length": a circuit's wasm computes that many wires); n_additions the signals the key adds.

    resident=True (the proving processes) maps the file, its pages shared with the page cache
    and every process proving with it; check_unchanged() says whether the file is still the
    one mapped (issue 38). resident=False (the daemon's own process, validating once; a
    one-shot command) reads every section into memory of its own: nothing is mapped.
    """

    protocol = "plonk"

    def __init__(self, zkey: PlonkZKey, resident: bool = True):
        self.zkey = zkey
        self.resident = resident
        self.path = zkey.path
        self.curve = zkey.curve  # snarkjs's name: "bn128", "bls12381"
        self.arith_curve = zkey.curve_info.arith
        f = zkey.file
        s = f.section(PLONK_HEADER, "PLONK header")
        header = f.read_bytes(s.offset, s.size)
        self.key_id = hashlib.blake2b(b"plonk" + header, digest_size=8).hexdigest()

    @classmethod
    def open(cls, path: os.PathLike | str, resident: bool = True) -> ProvingKey:
        """Open the key (header, section sizes and signal indices are checked; its points and
        field elements are not: call validate() once per key file). A key of another protocol
        raises UnsupportedProtocol naming it."""
        return cls(PlonkZKey(path, private=not resident), resident)

    def check_unchanged(self) -> None:
        """Raise cuzk.formats.errors.Changed when the key's file is no longer the one opened."""
        self.zkey.file.check_unchanged()

    def validate(self) -> dict:
        """Check the key once per instance; raise a FormatError naming the first bad value.
        The header's points on their curves and in their groups (cuzk.plonk.verifier.check_vk
        on the key's verification key), every power of tau's coordinates below q and the
        point on the curve (the compiled batch test, cuzk.arith.batch), every stored field
        element the prover reads (the additions' factors, the selector and permutation
        polynomials, L_1) below r. A power of tau on the curve but outside G1 (BLS12-381's
        G1 has a cofactor) is left to verify(), which refuses commitments outside G1 on such
        a curve. Returns the checked verification key (what verify() takes)."""
        vk = getattr(self, "_vk", None)
        if vk is None:
            from cuzk.arith import batch
            from cuzk.formats.errors import BadPoint
            from cuzk.plonk.verifier import check_vk

            z = self.zkey
            c = z.curve_info
            vk = check_vk(self.verification_key(), str(z.path))
            nq = c.q_limbs
            for j, coord in enumerate("xy"):
                i = first_not_below(z.ptau[:, j * nq : (j + 1) * nq], c.q)
                if i >= 0:
                    raise BadPoint(
                        z.path,
                        f"powers of tau[{i}]: coordinate {coord} (Montgomery form) is not below "
                        "the base field prime q",
                    )
            on = batch("cpu", c.arith).g1_is_on_curve_affine(z.ptau)
            if not on.all():
                i = int(np.flatnonzero(~on)[0])
                raise BadPoint(
                    z.path, f"powers of tau[{i}]: point is not on the curve y^2 = x^3 + {c.g1_b}"
                )
            for name, values in self._field_elements():
                i = first_not_below(values, z.r)
                if i >= 0:
                    raise BadValue(z.path, f"{name}[{i}] is not below the scalar field prime r")
            self._vk = vk
        return vk

    def _field_elements(self):
        """(name, (m, 4) limbs) of every stored field element the prover reads but k1, k2
        (checked on open). Of the Lagrange polynomials only L_1 (round 3's first-row
        term): the public inputs' polynomial is made from the public values on H
        (cuzk.plonk.prover.pi_extended), so L_2 .. L_nPublic are never read. A key with
        256 public signals holds 5.5 GB of them at 2^17: scanned, they were 5.5 GB of
        mapped pages in every command that checked the key, more than snarkjs's prover."""
        z = self.zkey
        if z.n_additions:
            yield "additions' factor_a", z.additions["factor_a"]
            yield "additions' factor_b", z.additions["factor_b"]
        polys = [(name, getattr(z, attr)) for attr, _, name in SELECTORS]
        polys += [(f"S{i + 1}", p) for i, p in enumerate((z.s1, z.s2, z.s3))]
        polys += [("L1", z.lagrange[0])]
        for name, p in polys:
            yield f"{name} coefficients", p.coefficients
            yield f"{name} evaluations", p.evaluations

    def verification_key(self) -> dict:
        """The key's verification key as cuzk.plonk.verifier takes it (from its header,
        unchecked: validate() checks it)."""
        from cuzk.formats.plonk_json import verification_key, vk_from_json

        return vk_from_json(verification_key(self.zkey), str(self.path))

    # sizes --------------------------------------------------------------------------------
    n_vars = property(lambda self: self.zkey.n_witness)  # the witness's length
    n_additions = property(lambda self: self.zkey.n_additions)
    r = property(lambda self: self.zkey.r)  # the scalar field: a circuit's wasm must match it
    n_public = property(lambda self: self.zkey.n_public)
    domain_size = property(lambda self: self.zkey.domain_size)

    @property
    def nbytes(self) -> int:
        """What the key costs while resident: its file (mapped whole, shared by every
        process) and, in each device process that may hold it, its extended values
        (cuzk.plonk.prover.extended: the points of the domain of 4n, 128 bytes per gate of
        the domain, the rest views of the key; made when a device loads the key and kept
        until it is evicted), and the tables
        of multiples of its powers of tau the devices build (table_bytes)."""
        return self.zkey.file.file_size + _copies * self.extended_bytes + self.table_bytes

    @property
    def table_bytes(self) -> int:
        """The tables of multiples of the key's powers of tau for its commitments, one per
        device process that may build it (cuzk.plonk.tables, the msm_tables option; 0 when
        off)."""
        from cuzk.plonk import tables

        return tables.charged_bytes(self)

    @property
    def extended_bytes(self) -> int:
        """One device process's copy of the key's extended values."""
        from cuzk.plonk.prover import extended_nbytes

        return extended_nbytes(self.domain_size)

    def witness_buffer(self) -> tuple:
        """(shape, dtype) of a partition's witness: the circuit's wires, plain-form limbs."""
        return (self.n_vars, 4), "uint64"

    def buffers(self) -> dict:
        """What synthesize fills and prove_start takes: the wires a, b, c on H, each
        (domain_size, 4) Montgomery limbs."""
        shape = (self.domain_size, 4)
        return {"a": (shape, "uint64"), "b": (shape, "uint64"), "c": (shape, "uint64")}

    def partition_bytes(self) -> int:
        """Estimated working set of one partition in flight: the witness extended by the
        additions, a, b, c, and the rounds' vectors on the extended domain at their peak."""
        n = self.domain_size
        full_witness = (self.n_vars + self.n_additions) * FR_BYTES
        return full_witness + 3 * n * FR_BYTES + PEAK_EXTENDED_VECTORS * 4 * n * FR_BYTES

    def __repr__(self):
        return (
            f"plonk.ProvingKey({self.key_id}, {self.path!r}, n_vars={self.n_vars}, "
            f"domain=2^{self.domain_size.bit_length() - 1})"
        )


def first_not_below(values: np.ndarray, modulus: int) -> int:
    """The first row of `values` ((m, k) little-endian uint64 limbs) whose number is not
    below `modulus`; -1 when every row is."""
    values = np.asarray(values, dtype=np.uint64)
    k = values.shape[1]
    limbs = [np.uint64((modulus >> (64 * j)) & (2**64 - 1)) for j in range(k)]
    below = np.zeros(len(values), bool)
    equal = np.ones(len(values), bool)
    for j in reversed(range(k)):
        col = values[:, j]
        below |= equal & (col < limbs[j])
        equal &= col == limbs[j]
    bad = np.flatnonzero(~below)
    return int(bad[0]) if len(bad) else -1


def load_witness(source, key: ProvingKey) -> np.ndarray:
    """The witness as an (nVars - nAdditions, 4) uint64 plain-form array, from a .wtns path
    or its bytes, validated (a .wtns over the key's curve, the circuit's count of wires)."""
    from cuzk.formats.curve import CURVES
    from cuzk.formats.errors import UnsupportedCurve
    from cuzk.formats.wtns import read_wtns

    if isinstance(source, (bytes, bytearray, memoryview)):
        path = "<uploaded witness>"
        witness = read_wtns(path, data=bytes(source))
        values = np.array(witness.values)  # copy: the bytes are the caller's
    else:
        path = str(source)
        witness = read_wtns(source)
        values = witness.values
    if witness.curve != key.curve:
        raise UnsupportedCurve(
            path,
            f"the witness is over {CURVES[witness.curve]}'s scalar field but the key "
            f"{key.path} is over {CURVES[key.curve]}",
        )
    key.zkey.check_witness(values, path)
    return values
