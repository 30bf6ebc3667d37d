"""The engine's two contracts: `Prover`, what the engine calls on the module named by
`EngineConfig.prover`, and `EngineAPI`, what `cuzk serve` calls on the engine.

`EngineAPI` is implemented by `Engine` (cuzk.engine.engine, one machine) and `ClusterEngine`
(cuzk.cluster.gateway, the gateway of a Ray farm), both over cuzk.engine.jobs (JobAPI, the job
calls written once); tests/test_engine_contract.py checks both, and the API tests of
tests/test_serve.py run against both. An endpoint that needs a new engine call adds it here.

The real prover (cuzk.groth16), the test double (cuzk.testing.prover_double) and a prover of
another shape (tests/shaped_prover.py) satisfy `Prover`; tests/test_engine_contract.py checks
each (isinstance, and every function's and method's parameters). Where each call happens:

    supervisor          configure, ProvingKey.open, key.validate (once per key file),
                        key.key_id / protocol / n_vars / domain_size / n_public /
                        nbytes / partition_bytes / witness_buffer / buffers
    synthesis process   configure, ProvingKey.open, load_witness, synthesize(out=...)
    device process      configure, open_device, ProvingKey.open, dev.load_key / evict_key /
                        resident_bytes, prove_start, prove_finish, proof.to_json / public;
                        with self_verify: key.verification_key and verify
    every process       watch_compiles(say, on_change), optional: a prover whose kernels
                        compile at first use reports each compile (GET /healthz "warming")
    each child          select_kernels(device), optional: picks the process's kernels once
                        at its start (device: the device process's device, None for
                        synthesis) and returns their name for operators ("native", "numba":
                        the workers' "kernels" in GET /status; a name with "numba" in it
                        has the supervisor log once that the fast build is missing)

Prover buffers. The key declares the arrays one partition needs, as plain data: `witness_buffer()`,
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
    # The proof system the key is for ("groth16", "plonk"; a test prover names its own),
    # shown to operators beside the curve in GET /keys, /status, /metrics and `cuzk top`.
    # Required of every prover, since a daemon may hold keys of several systems at once
    # (cuzk.prover) and an operator cannot tell them apart otherwise; the engine copies it
    # into its key record and the board's key row, and decides nothing by it.
    protocol: str
    # Optional: the curve (or field) the key is over, as its files name it ("bn128",
    # "bls12381"), shown to operators in GET /keys, /status, /metrics, `cuzk top` and the web
    # panel; the engine reads it with getattr(key, "curve", "") and decides nothing by it.
    # Optional: r, the scalar field prime, where the key has one; a circuit's wasm registered
    # with the key must compute over it (cuzk.witness.errors.check_same_circuit).

    @classmethod
    def open(cls, path, resident: bool = True) -> ProvingKey: ...

    # resident=False: the supervisor opens a key to read its sizes and validate it once,
    # then drops it; a prover that maps key files must not map this one (a file truncated
    # under a map kills the process that touches it with SIGBUS, issue 38). Optional:
    # check_unchanged(), raising (cuzk.formats.errors.Changed) when the key's file is no
    # longer the one opened; the proving processes call it before each use of a key they
    # hold and open the file again if it raises.

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

    def load_key(self, key) -> Any:
        """Make the key resident. Returns None, or, where the device goes on building
        something for the key beside its proofs (a CPU device's tables of multiples), an
        object whose wait() blocks until that is in place (True) or given up (False); the
        key proves meanwhile, with the same results."""

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
        """Take `EngineConfig.prover_options` (in every process, before anything else), with
        what the engine adds for every prover (cuzk.engine.settings.prover_options):
        `device_processes`, how many device processes may each hold a key (a prover that
        keeps something per key in each counts that many copies in the key's nbytes)."""

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


@runtime_checkable
class EngineAPI(Protocol):
    """What `cuzk serve` calls on its engine (serve/daemon.py, serve/api.py, serve/metrics.py).

    Errors: UnknownKey, UnknownJob (KeyError), EngineStopped and EngineError, BudgetError,
    ValueError for a bad argument (cuzk.engine.jobs); the daemon answers each with its HTTP
    status.
    """

    budget: Any  # the MemoryBudget request bodies are charged to (cuzk.engine.budget)
    board_name: str  # the status board's shared-memory name; "" where there is none

    # life cycle (daemon.py)
    def start(self, timeout: float = 120.0) -> Any:
        """Start; return once it can take jobs (or raise EngineError)."""

    def stop(self, drain_deadline: float = 30.0) -> None:
        """Drain for up to `drain_deadline` seconds, then stop; return once stopped."""

    def request_stop(self, drain_deadline: float = 30.0) -> None:
        """Start draining (intake stops) without waiting."""

    def wait_stopped(self, timeout: float | None = None) -> bool: ...

    @property
    def running(self) -> bool: ...

    def health(self) -> tuple[bool, dict]:
        """(serving, detail) for GET /healthz."""

    def snapshot(self) -> dict:
        """The JSON of GET /status (RuntimeError once stopped)."""

    # keys
    def register_key(self, path, wasm=None) -> str:
        """Open, validate and register a proving key; its key id."""

    def keys(self) -> list[dict]: ...

    def evict_key(self, key_id: str) -> bool:
        """Drop the key's device residency; False when it was not resident."""

    # jobs
    def submit(
        self,
        key_id: str,
        witnesses=None,
        kind: str = "default",
        priority: str = "normal",
        *,
        inputs=None,
        job_id: str | None = None,
        submitted_at: float | None = None,
        recovered: bool = False,
        done: dict | None = None,
    ) -> str:
        """Queue a job (witnesses or circuit inputs, one per partition); its job id."""

    def job(self, job_id: str) -> dict: ...

    def jobs(self) -> list[dict]: ...

    def result(self, job_id: str, timeout: float | None = None) -> dict | None:
        """Wait up to `timeout` s for the job to finish: its result, or None."""

    def cancel(self, job_id: str) -> bool:
        """Cancel the job; False when it had already finished."""
