"""What the engine knows: one record per key, job, partition, work item and child process, and
the views the API returns of them. They are held under the engine's lock by `Books`
(cuzk.engine.books); the job records and partition records also by the gateway's ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk.engine.scheduler import WorkKey


@dataclass
class KeyRecord:
    key_id: str
    path: str
    n_vars: int
    domain_size: int
    n_public: int
    nbytes: int
    partition_bytes: int
    witness_bytes: int  # the witness segment (key.witness_buffer())
    buffer_bytes: int  # the buffers segment (key.buffers(), laid out by buffers.Layout)
    registered_at: float
    last_used: float
    curve: str = ""  # the key's curve as its files name it ("bn128", "bls12381"); "" if none
    protocol: str = ""  # the key's proof system ("groth16", "plonk"), as the key declares it
    wasm: str | None = None  # the circuit's witness calculator (jobs with inputs)
    wasm_bytes: int = 0  # what one calculator instance holds (Circuit.instance_bytes)
    devices: set = field(default_factory=set)  # device indices where resident
    charged: bool = False  # its bytes are reserved in the budget (resident somewhere)
    table_bytes: int = 0  # of nbytes: the tables of multiples a device builds (msm_tables)
    load_ms: float | None = None  # the last load on a device (a build in load_key included)
    # device indices where the key's tables are still being built, beside its proofs
    tables_building: set = field(default_factory=set)
    live_jobs: int = 0

    @property
    def tables(self) -> str:
        """Its tables of multiples: "none" (no table_bytes, or not resident), "building" (on
        a device where it is resident), or "ready"."""
        if not self.table_bytes or not self.devices:
            return "none"
        return "building" if self.tables_building & self.devices else "ready"

    def to_dict(self, devices: list[ChildRecord], now: float) -> dict:
        return {
            "key_id": self.key_id,
            "path": self.path,
            "n_vars": self.n_vars,
            "domain_size": self.domain_size,
            "n_public": self.n_public,
            "protocol": self.protocol,
            "curve": self.curve,
            "bytes": self.nbytes,
            "table_bytes": self.table_bytes,
            "tables": self.tables,
            "load_ms": self.load_ms,
            "partition_bytes": self.partition_bytes,
            "devices": [devices[i].device for i in sorted(self.devices)],
            "live_jobs": self.live_jobs,
            "last_used_secs_ago": now - self.last_used,
            "evictable": self.live_jobs == 0,
            "wasm": self.wasm,
            "wasm_bytes": self.wasm_bytes,
        }


@dataclass
class PartitionRecord:
    state: str = "pending"
    attempts: int = 0
    synth_ms: float | None = None
    witness_ms: float | None = None  # of synth_ms: the witness (computed, or read from a .wtns)
    abc_ms: float | None = None  # of synth_ms: synthesize filling the buffers (Groth16's a, b, c)
    gpu_ms: float | None = None
    finalize_ms: float | None = None
    t_gpu_start: float | None = None  # unix, from the device process
    t_gpu_end: float | None = None
    device: int | None = None
    proof: dict | None = None
    public: list | None = None
    error: str | None = None
    from_journal: bool = False  # finished before a restart: its record read from the journal

    def to_dict(self, index: int) -> dict:
        return {
            "index": index,
            "state": self.state,
            "attempts": self.attempts,
            "synth_ms": self.synth_ms,
            "witness_ms": self.witness_ms,
            "abc_ms": self.abc_ms,
            "gpu_ms": self.gpu_ms,
            "finalize_ms": self.finalize_ms,
            "device": self.device,
            "error": self.error,
            "restored": self.from_journal,
        }

    def record(self) -> dict:
        """What the journal keeps of a finished partition (done, or failed alone), so a
        restart does not prove it again: its view, proof and public signals."""
        d = self.to_dict(0)
        del d["index"], d["restored"]
        d["proof"], d["public"] = self.proof, self.public
        return d

    @classmethod
    def restored(cls, d: dict) -> PartitionRecord:
        """A partition from its journal record (record())."""
        if d.get("state") not in ("done", "failed"):
            raise ValueError(f"not a finished partition: state {d.get('state')!r}")
        names = (
            "state attempts synth_ms witness_ms abc_ms gpu_ms finalize_ms device proof public error"
        ).split()
        return cls(**{k: d[k] for k in names if k in d}, from_journal=True)


@dataclass
class JobRecord:
    job_id: str
    key_id: str
    kind: str
    priority: str
    inputs: list  # bytes or str path, one per partition (JSON bytes for circuit inputs)
    submitted_at: float
    partitions: list[PartitionRecord]
    wasm: str | None = None  # set: `inputs` are circuit inputs, the witness computed from this
    state: str = "queued"
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    n_done: int = 0
    n_failed: int = 0  # partitions failed alone (inputs the circuit rejects)
    recovered: bool = False  # re-queued from the journal after a restart

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    @property
    def partitions_left(self) -> int:
        """Partitions neither done nor failed alone; at 0 the job ends with outcome()."""
        return len(self.partitions) - self.n_done - self.n_failed

    def to_dict(self, detail: bool) -> dict:
        d = {
            "job_id": self.job_id,
            "key_id": self.key_id,
            "kind": self.kind,
            "priority": self.priority,
            "state": self.state,
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": self.error,
            "total_partitions": len(self.partitions),
            "partitions_done": self.n_done,
            "partitions_failed": sum(p.state == "failed" for p in self.partitions),
            "recovered": self.recovered,
        }
        if detail:
            d["partitions"] = [p.to_dict(i) for i, p in enumerate(self.partitions)]
        return d

    def outcome(self) -> tuple[str, str | None]:
        """(state, error) of a job whose every partition is done or failed alone."""
        if not self.n_failed:
            return "done", None
        bad = [i for i, p in enumerate(self.partitions) if p.state == "failed"]
        return "failed", (
            f"{len(bad)} of {len(self.partitions)} partition(s) failed "
            f"(partition {bad[0]}: {self.partitions[bad[0]].error})"
        )

    def result(self) -> dict:
        """The job with its proofs and public signals, ordered by partition."""
        d = self.to_dict(detail=True)
        d["proofs"] = [p.proof for p in self.partitions]
        d["public"] = [p.public for p in self.partitions]
        return d


@dataclass
class WorkRecord:
    """Resources held for one live (or draining) work item: segments and a reservation."""

    wk: WorkKey
    segs: dict = field(default_factory=dict)  # use -> segment name
    child: ChildRecord | None = None

    @property
    def owner(self):
        return ("work", self.wk.job_id, self.wk.partition)


@dataclass
class ChildRecord:
    role: str  # "synth" | "device"
    index: int
    device: str = ""
    proc: object = None
    conn: object = None
    pid: int = 0
    state: str = "down"  # down | starting | ready | dead | stopping
    started_at: float = 0.0
    last_pong: float = 0.0
    restarts: int = 0
    backoff: float = 0.0
    next_start_at: float = 0.0
    items: set = field(default_factory=set)  # WorkKeys this process holds
    inflight: int = 0  # device: items not yet past prove_start
    warming: dict | None = None  # kernels compiling in this process (messages.Warming)
    kernels: str = ""  # what its kernels are, as it said when ready (messages.Ready)

    @property
    def name(self) -> str:
        return f"{self.role} process {self.index}" + (f" ({self.device})" if self.device else "")
