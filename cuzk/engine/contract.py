"""The prover contract: what the engine calls on the module named by `EngineConfig.prover`.

The real prover (cuzk.groth16) and the test double (cuzk.testing.prover_double) both satisfy
`Prover`; tests/test_engine_contract.py checks each (isinstance, and every function's and
method's parameters). Where each call happens:

    supervisor          configure, ProvingKey.open, key.validate (once per key file),
                        key.key_id / n_vars / domain_size / n_public / nbytes / partition_bytes
    synthesis process   configure, ProvingKey.open, load_witness, synthesize(out=...)
    device process      configure, open_device, ProvingKey.open, dev.load_key / evict_key /
                        resident_bytes, prove_start, prove_finish, proof.to_json / public;
                        with self_verify: key.verification_key and verify
    every process       watch_compiles(say, on_change), optional: a prover whose kernels
                        compile at first use reports each compile (GET /healthz "warming")

Arrays are (n, 4) uint64 limb arrays that may live in shared memory: synthesize writes a, b, c
into `out` when given; prove_start may overwrite a, b, c (the real prover's compute_h runs its
NTTs in their storage), which is why the engine never proves twice from one abc segment.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ProvingKey(Protocol):
    """A key opened from a file; two keys with one key_id are the same setup."""

    key_id: str
    path: str
    n_vars: int  # witness length
    domain_size: int  # length of a, b, c
    n_public: int
    nbytes: int  # what a resident copy costs (budgeted under "keys")

    @classmethod
    def open(cls, path) -> ProvingKey: ...

    def validate(self) -> Any:
        """Check every point once per key file; raise (cuzk.formats.errors) on a bad one."""

    def partition_bytes(self) -> int:
        """Working set of one partition in flight (witness, a, b, c, ...)."""

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
        """The (n_vars, 4) witness from a path or bytes, checked against the key."""

    def synthesize(self, key, w, out=None) -> Any:
        """a, b, c (written into `out` when given) and `public`."""

    def open_device(self, spec: str) -> Device:
        """A device by name: "cpu:N" or "cuda:N" (each device process opens its own)."""

    def prove_start(self, key, a, b, c, w, device) -> Any:
        """The device stage; returns the partial proof prove_finish takes."""

    def prove_finish(self, key, partial, w) -> Proof: ...

    def verify(self, vk, public, proof) -> bool:
        """Self-verification of a proof prove_finish returned."""
