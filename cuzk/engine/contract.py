"""The prover contract: what the engine calls on the module named by `EngineConfig.prover`.

The real prover (cuzk.groth16), the test double (cuzk.testing.prover_double) and a prover of
another shape (tests/shaped_prover.py) satisfy `Prover`; tests/test_engine_contract.py checks
each (isinstance, and every function's and method's parameters). Where each call happens:

    supervisor          configure, ProvingKey.open, key.validate (once per key file),
                        key.key_id / n_vars / domain_size / n_public / nbytes /
                        partition_bytes / witness_buffer / buffers
    synthesis process   configure, ProvingKey.open, load_witness, synthesize(out=...)
    device process      configure, open_device, ProvingKey.open, dev.load_key / evict_key /
                        resident_bytes, prove_start, prove_finish, proof.to_json / public;
                        with self_verify: key.verification_key and verify
    every process       watch_compiles(say, on_change), optional: a prover whose kernels
                        compile at first use reports each compile (GET /healthz "warming")

Buffers. The key declares the arrays one partition needs, as plain data: `witness_buffer()`,
the witness's (shape, numpy dtype), and `buffers()`, {name: (shape, numpy dtype)} of what
synthesize fills and prove_start takes. The engine sizes them, creates them in shared memory
(cuzk.engine.buffers.Layout), maps them in each child and frees them, without knowing what
they mean: Groth16 declares a, b, c, another proof system what it needs. synthesize writes
into `out` ({name: array} over shared memory) when given; prove_start takes that mapping and
may overwrite the arrays (the real prover's compute_h runs its NTTs in a, b, c's storage),
which is why the engine never proves twice from one set of buffers: they are freed once
prove_start is over, and a retry after prove_start began synthesizes them again.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ProvingKey(Protocol):
    """A key opened from a file; two keys with one key_id are the same setup."""

    key_id: str
    path: str
    n_vars: int  # witness length
    domain_size: int  # the circuit's size, reported in GET /keys (the engine sizes nothing by it)
    n_public: int
    nbytes: int  # what a resident copy costs (budgeted under "keys")

    @classmethod
    def open(cls, path) -> ProvingKey: ...

    def validate(self) -> Any:
        """Check every point once per key file; raise (cuzk.formats.errors) on a bad one."""

    def partition_bytes(self) -> int:
        """Working set of one partition in flight: its witness and buffers, and what the
        stages allocate besides (the engine reserves at least the witness and buffers'
        shared memory, whatever this says)."""

    def witness_buffer(self) -> tuple:
        """(shape, numpy dtype) of a partition's witness: where load_witness's array (or a
        circuit's witness calculator) puts it; synthesize, prove_start and prove_finish read
        it. Held from synthesis until prove_finish is over."""

    def buffers(self) -> dict:
        """{name: (shape, numpy dtype)}: the arrays synthesize fills and prove_start takes
        (and may overwrite), in the order they are laid out. Freed once prove_start is over."""

    def verification_key(self) -> Any:
        """What verify() takes to check this key's proofs."""


@runtime_checkable
class Device(Protocol):
    """One device opened in a device process, holding resident keys."""

    def load_key(self, key) -> None: ...

    def evict_key(self, key_id: str) -> None: ...

    def resident_bytes(self, key_id: str) -> int: ...


@runtime_checkable
class Proof(Protocol):
    public: list

    def to_json(self) -> dict: ...


@runtime_checkable
class Prover(Protocol):
    """The prover module."""

    ProvingKey: type

    def configure(self, options: dict) -> None:
        """Take `EngineConfig.prover_options` (in every process, before anything else)."""

    def load_witness(self, source, key) -> Any:
        """The witness array (shaped as key.witness_buffer() says) from a path or bytes,
        checked against the key."""

    def synthesize(self, key, w, out=None) -> Any:
        """Fill the key's buffers from the witness: an object with `buffers` ({name: array},
        the arrays of `out` when given: {name: array} shaped as key.buffers() says) and
        `public` (the public signals)."""

    def open_device(self, spec: str) -> Device:
        """A device by name: "cpu:N" or "cuda:N" (each device process opens its own)."""

    def prove_start(self, key, buffers, w, device) -> Any:
        """The device stage, from synthesize's buffers ({name: array}; it may overwrite
        them); returns the partial proof prove_finish takes."""

    def prove_finish(self, key, partial, w) -> Proof: ...

    def verify(self, vk, public, proof) -> bool:
        """Self-verification of a proof prove_finish returned."""
