"""A proving key opened once: the mapped .zkey plus what the engine needs to budget for it."""

from __future__ import annotations

import hashlib
import os

import numpy as np

from cuzk.formats.wtns import read_wtns
from cuzk.formats.zkey import ZKey

FR_BYTES = 32
POINT_SECTIONS = ("points_a", "points_b1", "points_b2", "points_c", "points_h")


# A resident key's coefficients, read once a proof, are dropped from the process's resident
# set piece by piece from this size (ProvingKey.coefficient_pieces): below it, the faults of
# the next read would cost more than the pages are worth.
RELEASE_MIN_BYTES = 64 << 20


class ProvingKey:
    """A Groth16 proving key mapped from a .zkey file (point sections are views, not copies).

    key_id is a short digest of the Groth16 header (α, β, γ, δ and the sizes): two keys with
    the same id are the same setup, whatever their paths.

    A resident key (the default: a daemon's proving processes) is mapped, its pages shared
    with the page cache and every process proving with it; check_unchanged() says whether the
    file is still the one mapped (issue 38: a key copied over in place while mapped kills the
    process that touches a page past the new end with SIGBUS, so a daemon's processes check
    before each use, and the daemon's own process never maps a key). A key opened with
    resident=False (a one-shot command, a key's validation) is read, not mapped: each section
    into memory of its own when first used, and done_with() drops it once a step has read it,
    so the process never holds the whole key at once, and a file changed under it raises
    Truncated or Changed (cuzk.formats.binfile) instead of killing it.
    """

    protocol = "groth16"  # the proof system (cuzk.prover dispatches on it)

    def __init__(self, zkey: ZKey, resident: bool = True):
        self.zkey = zkey
        # The key's curve: every curve cuzk.formats.curve knows is proved, by the same kernels
        # built for it (cuzk.arith.curves). `curve` is snarkjs's name ("bn128", "bls12381"),
        # `arith_curve` the kernels' ("bn254", "bls12_381").
        self.curve = zkey.curve_info.name
        self.arith_curve = zkey.curve_info.arith
        self.resident = resident
        self.path = zkey.path
        header = np.concatenate(
            [zkey.alpha1, zkey.beta1, zkey.beta2, zkey.gamma2, zkey.delta1, zkey.delta2]
        ).tobytes()
        n_coefs = zkey.section_rows("coefficients")  # (its count: the section is not read)
        sizes = f"{zkey.n_vars}:{zkey.n_public}:{zkey.domain_size}:{n_coefs}"
        self.key_id = hashlib.blake2b(header + sizes.encode(), digest_size=8).hexdigest()
        # A CPU device's tables of multiples for this key's MSMs (cuzk.groth16.tables): set
        # name -> cuzk.kernels.msm_cpu.MsmTable while the key is loaded, and their build time.
        self.tables: dict = {}
        self.tables_secs = 0.0

    @classmethod
    def open(cls, path: os.PathLike | str, resident: bool = True) -> ProvingKey:
        """Map the key (header, section sizes and coefficient indices are checked; its points
        are not: call validate() once per key file). resident=False: see done_with()."""
        return cls(ZKey(path, private=not resident), resident)

    def done_with(self, *sections: str) -> None:
        """This process has read the named sections ("coefficients", "points_a", "points_b1",
        "points_b2", "points_c", "points_h") for now: for a key that is not resident, drop
        their pages from the process (a later read faults them back in from the page cache).
        Nothing for a resident key."""
        if self.resident:
            return
        self.zkey.forget(*sections)

    def coefficient_pieces(self):
        """The coefficients for one synthesis, as (structured array, last) pieces in order
        (cuzk.groth16.synthesis.evaluate_abc_pieces). A mapped (resident) key's section of at
        least RELEASE_MIN_BYTES comes in pieces of CHECK_ROWS entries, each dropped from the
        process's resident set once the next is asked for: they stay in the page cache (memory
        the kernel may reclaim; the next synthesis faults them back from there, or from the
        disk if it did), so a synthesis process holds a piece at a time, not 525 MiB of a 2^22
        key, during and between proofs. Otherwise the whole section, as one piece."""
        z = self.zkey
        if not self.resident or z.section_nbytes("coefficients") < RELEASE_MIN_BYTES:
            yield z.coefficients, True
            return
        n = z.section_rows("coefficients")
        for lo, piece in z.pieces("coefficients"):
            try:
                yield piece, lo + len(piece) >= n
            finally:  # (also when the reader stops early)
                z.file.release(piece)

    def check_unchanged(self) -> None:
        """Raise cuzk.formats.errors.Changed when the key's file is no longer the one opened
        (replaced, or rewritten in place: another inode, size or mtime)."""
        self.zkey.file.check_unchanged()

    def validate(
        self, b2_subgroup: bool = True, g1_subgroup: bool = True, sections_on_read: bool = False
    ):
        """Check every point of the key (cuzk.groth16.validate: header points on the curve or
        the twist and G2 ones in the subgroup, every point section on its curve); raise
        cuzk.formats.errors.BadPoint naming the first bad point. Returns the key's checked
        cuzk.groth16.verifier.VerifyingKey. Done once per instance.
        b2_subgroup=False leaves out the batched G2 subgroup test of pointsB2 (on the twist is
        still checked): for a one-shot proof whose own points are tested before it is written
        (cuzk.groth16.files), where a point outside G2 gives a pi_b outside G2.
        g1_subgroup=False likewise leaves out the per-point G1 subgroup test of the G1
        sections on a curve with a G1 cofactor (BLS12-381; cuzk.groth16.validate): a pi_a or
        pi_c outside G1 is refused there.
        sections_on_read=True checks the header now and each point section when a step first
        reads it (raising BadPoint from that step): a one-shot proof reads its key once."""
        vk = getattr(self, "_vk", None)
        if vk is None:
            from cuzk.groth16.validate import validate_key

            vk = self._vk = validate_key(
                self.zkey,
                self.done_with,
                b2_subgroup=b2_subgroup,
                g1_subgroup=g1_subgroup,
                sections_on_read=sections_on_read,
            )
        return vk

    def verification_key(self):
        """The cuzk.groth16.verifier.VerifyingKey read from the key's header (unchecked: validate()
        checks the points), for cuzk.groth16.verifier."""
        from cuzk.groth16 import verifier_backend
        from cuzk.groth16.verifier import VerifyingKey

        return VerifyingKey.from_zkey(self.zkey, verifier_backend(self.arith_curve))

    # sizes --------------------------------------------------------------------------------
    n_vars = property(lambda self: self.zkey.n_vars)
    r = property(lambda self: self.zkey.r)  # the scalar field: a circuit's wasm must match it
    n_public = property(lambda self: self.zkey.n_public)
    domain_size = property(lambda self: self.zkey.domain_size)

    @property
    def nbytes(self) -> int:
        """What a resident copy costs: the bytes of the key file opened, plus the tables of
        multiples a device builds for it under the msm_tables option (table_bytes)."""
        return self.zkey.file.file_size + self.table_bytes

    @property
    def table_bytes(self) -> int:
        """Bytes of the key's tables of multiples under this process's msm_tables option, for
        every CPU device that may build them (cuzk.groth16.tables; 0 when off)."""
        from cuzk.groth16 import tables

        return tables.charged_bytes(self)

    @property
    def points_nbytes(self) -> int:
        z = self.zkey
        return sum(getattr(z, name).nbytes for name in POINT_SECTIONS)

    def witness_bytes(self) -> int:
        return self.n_vars * FR_BYTES

    def abc_bytes(self) -> int:
        return 3 * self.domain_size * FR_BYTES

    def witness_buffer(self) -> tuple:
        """(shape, dtype) of the witness the engine holds for a partition (plain-form limbs)."""
        return (self.n_vars, 4), "uint64"

    def buffers(self) -> dict:
        """What synthesize fills and prove_start takes: a, b, c, each (domain_size, 4) limbs."""
        shape = (self.domain_size, 4)
        return {"a": (shape, "uint64"), "b": (shape, "uint64"), "c": (shape, "uint64")}

    def partition_bytes(self) -> int:
        """Estimated working set of one partition in flight: the witness, a, b, c, and the
        NTT's h vector (the partial proof itself is a few hundred bytes)."""
        return self.witness_bytes() + self.abc_bytes() + self.domain_size * FR_BYTES

    def __repr__(self):
        return (
            f"ProvingKey({self.key_id}, {self.path!r}, n_vars={self.n_vars}, "
            f"domain=2^{self.domain_size.bit_length() - 1})"
        )


def load_witness(source, key: ProvingKey | None = None) -> np.ndarray:
    """The witness as an (n_vars, 4) uint64 plain-form array, from a .wtns path or its bytes,
    validated (prime, values < r, count matching the key; with a key, its curve: a witness
    over another curve's r is refused with UnsupportedCurve)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        import tempfile

        # read_wtns validates a file; keep one code path for paths and uploads.
        with tempfile.NamedTemporaryFile(suffix=".wtns") as f:
            f.write(source)
            f.flush()
            witness = read_wtns(f.name)
            values = np.array(witness.values)  # copy: the temporary file goes away
            path = "<uploaded witness>"
    else:
        witness = read_wtns(source)
        values = witness.values
        path = str(source)
    if key is not None:
        if witness.curve != key.curve:
            from cuzk.formats.curve import CURVES
            from cuzk.formats.errors import UnsupportedCurve

            raise UnsupportedCurve(
                path,
                f"the witness is over {CURVES[witness.curve]}'s scalar field but the key "
                f"{key.path} is over {CURVES[key.curve]}",
            )
        key.zkey.check_witness(values, path)
    return values
