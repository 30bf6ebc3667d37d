"""The proving engine's API: the object API threads call (cuzk serve, tests, scripts).

Data flow (cf. CPython's concurrent/futures/process.py):

  API threads            supervisor thread                   child processes
  -----------            -----------------                   ---------------
  submit() --jobs-->  Scheduler: SYNTH_QUEUE  --Synth-->     synthesis process (one partition)
  cancel()               | budget reserved,                    witness -> w seg, buffers seg
  result() <--done--     | w/buffers segments created        <--SynthDone--
                         v
                      Scheduler: DEVICE_QUEUE --Prove-->     device process
                         ^                                     worker loops: prove_start
                         |   <--Started-- (buffers freed)      finalizer threads: prove_finish
                         +--------------------<--Done-- proof JSON, public signals
                      multiprocess.connection.wait() on: every child's pipe, every child's
                      sentinel, and a wake-up pipe written by API threads and signal handlers.

The actors and their modules:
- API threads (`Engine`, here): validate, change the shared records (records.Books) under
  their lock, wake the supervisor. They never wait on children.
- The supervisor thread (supervisor.py): the only place that waits: spawn, restart with
  backoff, pings, message handling, drain and teardown.
- Dispatch (dispatch.py): placement on processes, the memory budget and key eviction,
  retries, the end of a job.
- Children (synthesis_process.py, device_process.py): the witness and the buffers the
  prover's key declares travel only through shared-memory segments that the supervisor
  creates and unlinks; pipes carry the small typed messages of messages.py. The prover they
  call is cuzk.engine.contract.Prover.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import logging
import os
import signal
import time
import uuid
import weakref

from cuzk.board.layout import check_priority
from cuzk.engine import buffers
from cuzk.engine.budget import BudgetError, MemoryBudget
from cuzk.engine.config import EngineConfig, format_size
from cuzk.engine.records import Books, JobRecord, KeyRecord, PartitionRecord
from cuzk.engine.supervisor import Supervisor

log = logging.getLogger("cuzk.engine")


class EngineError(RuntimeError):
    """The engine refused a request (the message says why)."""


class EngineStopped(EngineError):
    """The engine is stopping or stopped: no new work is taken."""


class UnknownJob(KeyError):
    pass


class UnknownKey(KeyError):
    pass


def job_request(witnesses, inputs, kind, priority) -> tuple[str, list, bool]:
    """A job's arguments checked and normalised, as Engine.submit takes them: (kind, items,
    circuit). Items: witness bytes or absolute paths of existing files, or (circuit) compact
    JSON bytes of circuit inputs. Raises ValueError naming the first bad argument."""
    check_priority(priority)
    kind = str(kind)
    if not kind or len(kind.encode()) > 24:
        raise ValueError("kind must be a label of 1 to 24 bytes")
    if (witnesses is None) == (inputs is None):
        raise ValueError("a job has either witnesses or inputs")
    if inputs is not None:
        return kind, circuit_inputs(inputs), True
    items = []
    for w in witnesses:
        if isinstance(w, (bytes, bytearray, memoryview)):
            items.append(bytes(w))
        elif isinstance(w, (str, os.PathLike)):
            p = os.path.abspath(os.fspath(w))
            if not os.path.isfile(p):
                raise ValueError(f"witness file not found: {p}")
            items.append(p)
        else:
            raise ValueError(f"a witness is bytes or a path, got {type(w).__name__}")
    if not items:
        raise ValueError("a job needs at least one witness")
    return kind, items, False


def circuit_inputs(objs) -> list[bytes]:
    """Circuit inputs as compact JSON bytes, one per partition, values checked."""
    import json

    from cuzk.witness.inputs import loads_inputs, parse_inputs

    out = []
    for i, x in enumerate(objs):
        what = f"inputs[{i}]"
        if isinstance(x, (bytes, bytearray, str)):
            x = loads_inputs(x, what)  # WitnessError (a ValueError), one line
        if not isinstance(x, dict):
            raise ValueError(
                f"{what}: the circuit's inputs are a JSON object, got {type(x).__name__}"
            )
        parse_inputs(x, what)  # NotANumber (a ValueError) for a value that is not one
        try:
            out.append(json.dumps(x, separators=(",", ":")).encode())
        except RecursionError:  # parse_inputs refuses nested objects; arrays deeper than this
            raise ValueError(f"{what}: arrays nested too deeply") from None
    if not out:
        raise ValueError("a job needs at least one input (one per partition)")
    return out


_watched: set[str] = set()  # provers whose compiles this process reports (once each)


def _watch_compiles_here(prover) -> None:
    """Report this (the serving) process's kernel compiles in its log and in health()."""
    watch = getattr(prover, "watch_compiles", None)
    if watch is not None and prover.__name__ not in _watched:
        _watched.add(prover.__name__)
        watch(logging.getLogger("cuzk.kernels").warning)


class Engine:
    """The proving engine. `Engine(config).start()`, then register keys and submit jobs.

    Thread-safe: every public method may be called from any thread. See the module docstring
    for the actors and docs/architecture.md for failure handling.
    """

    def __init__(self, config: EngineConfig | None = None, *, journal=None, **overrides):
        base = config or EngineConfig()
        if overrides:
            base = dataclasses.replace(base, **overrides)
        self.config = base.validated()
        self._books = Books(self.config, journal)
        self._sup = Supervisor(self._books)
        self._books.budget.on_release = self._sup.wake  # e.g. an upload's reservation
        self._validated: dict[tuple, str] = {}  # (path, size, mtime_ns) -> key id, points checked

    # what tests and the daemon read
    journal = property(lambda self: self._books.journal)
    events = property(lambda self: self._books.events)  # (t, what, ...), the last 100 000
    counters = property(lambda self: self._books.counters)
    pid = property(lambda self: self._books.pid)

    # ================================================================ life cycle
    def start(self, timeout: float = 120.0) -> Engine:
        """Create the board, spawn every process, return once all have reported ready."""
        if self._sup.thread is not None:
            raise EngineError("engine already started")
        buffers.sweep_stale()
        self._sup.start()
        # An engine the program forgot to stop is stopped at interpreter exit (no drain), so
        # its segments and board do not outlive it. The supervisor, not this object: its
        # thread keeps it alive, while a dropped Engine is collected; a weak reference keeps
        # a stopped supervisor collectable.
        ref = weakref.ref(self._sup)
        atexit.register(lambda: (s := ref()) is not None and s.running and s.stop(0))
        if not self._sup.started.wait(timeout):
            self.stop(0)
            raise EngineError(f"processes not ready after {timeout:.0f} s")
        if (err := self._sup.start_error) is not None:
            raise EngineError(f"engine failed to start: {err}") from err
        return self

    def __enter__(self):
        return self if self._sup.thread else self.start()

    def __exit__(self, *exc):
        self.stop(drain_deadline=0 if exc[0] else 30.0)

    def stop(self, drain_deadline: float = 30.0) -> None:
        """Drain: stop intake, let running jobs finish for up to `drain_deadline` seconds,
        cancel the rest, stop every process, release every buffer and the board."""
        self._sup.stop(drain_deadline)

    def request_stop(self, drain_deadline: float = 30.0) -> None:
        """Start draining without waiting (see stop)."""
        self._sup.request_stop(drain_deadline)

    def wait_stopped(self, timeout: float | None = None) -> bool:
        return self._sup.stopped.wait(timeout)

    def install_signal_handlers(self, drain_deadline: float = 30.0) -> None:
        """SIGTERM and SIGINT drain the engine (main thread only). The handler only records
        the request and writes the wake-up pipe; the supervisor thread does the work."""

        def handler(signum, frame):
            self._sup.on_signal(drain_deadline)

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    @property
    def running(self) -> bool:
        return self._sup.running

    def health(self) -> tuple[bool, dict]:
        """(serving, detail) for GET /healthz: one machine serves while it runs; while kernels
        compile (a cold cache), ``detail["warming"]`` says why and where (see warming())."""
        warming = self.warming()
        return self.running, ({"warming": warming} if warming else {})

    def warming(self) -> dict | None:
        """The kernel compiles under way on this machine, or None: the reason, the cache
        folder, and each compiling process (its name, pid, seconds, functions compiled and
        the one compiling now). The processes' jobs wait for their kernels meanwhile."""
        from cuzk.compiling import combine_warming, warming_here

        b = self._books
        with b.lock:
            procs = [(ch.name, ch.pid, ch.warming) for ch in b.children if ch.warming]
        procs += [("serve process", os.getpid(), s) for s in warming_here()]
        return combine_warming(procs)

    # ================================================================ keys
    def register_key(self, path, wasm=None) -> str:
        """Open a proving key once for this instance; returns its key id (same file -> same id).

        The key's points are validated here, once per key file (path, size, mtime), never per
        proof: a key that fails raises the FormatError (BadPoint: the first bad point, by
        section and index) and is not registered.

        `wasm`: the circuit's witness calculator (circom --wasm), for jobs that carry circuit
        inputs instead of witnesses. It is loaded here and checked against the key (BN254's
        prime, wires = the key's nVars): a WitnessError (NotACircuit, WrongCircuitPrime,
        CircuitMismatch) refuses the registration. A key registered again with another wasm
        uses that one for the jobs submitted after; without `wasm` a registered wasm stays."""
        prover = self._prover()
        _watch_compiles_here(prover)  # validating a key compiles its kernels on a cold cache
        path = os.path.abspath(os.fspath(path))
        circuit = None
        if wasm is not None:
            from cuzk.witness.calculator import Circuit

            wasm = os.path.abspath(os.fspath(wasm))
            circuit = Circuit(wasm)  # checks the interface and the prime
        st = os.stat(path)
        stamp = (path, st.st_size, st.st_mtime_ns)
        pk = prover.ProvingKey.open(path)
        b = self._books
        if self._validated.get(stamp) != pk.key_id:
            t0 = time.perf_counter()
            pk.validate()
            log.info(
                "key %s validated in %.0f ms: %s", pk.key_id, (time.perf_counter() - t0) * 1e3, path
            )
            with b.lock:
                self._validated[stamp] = pk.key_id
        if circuit is not None and circuit.witness_size != int(pk.n_vars):
            from cuzk.witness.errors import CircuitMismatch

            raise CircuitMismatch(
                wasm,
                f"has {circuit.witness_size} wires but "
                f"{os.path.basename(path)} has nVars = {pk.n_vars}: "
                "not the same circuit",
            )
        with b.lock:
            k = b.keys.get(pk.key_id)
            if k is not None:
                if circuit is not None:
                    k.wasm, k.wasm_bytes = wasm, int(circuit.instance_bytes)
                    log.info("key %s: circuit %s", pk.key_id, wasm)
                return pk.key_id
            w_bytes = buffers.nbytes(*pk.witness_buffer())
            buf_bytes = buffers.Layout(pk.buffers()).nbytes
            # the prover's estimate, and never less than the segments a partition gets
            pb = max(int(pk.partition_bytes()), w_bytes + buf_bytes)
            now = time.time()
            k = b.keys[pk.key_id] = KeyRecord(
                pk.key_id,
                path,
                int(pk.n_vars),
                int(pk.domain_size),
                int(pk.n_public),
                int(pk.nbytes),
                pb,
                w_bytes,
                buf_bytes,
                now,
                now,
            )
            if circuit is not None:
                k.wasm, k.wasm_bytes = wasm, int(circuit.instance_bytes)
            b.publish_keys()
        log.info(
            "key %s registered: %s (%d vars, domain %d, %s per partition)%s",
            pk.key_id,
            path,
            pk.n_vars,
            pk.domain_size,
            format_size(pb),
            f", circuit {wasm}" if wasm else "",
        )
        return pk.key_id

    def keys(self) -> list[dict]:
        b = self._books
        with b.lock:
            now = time.time()
            return [k.to_dict(b.devices, now) for k in b.keys.values()]

    def evict_key(self, key_id: str) -> bool:
        """Drop a key's device residency now; False when it was not resident. Raises
        EngineError while a job that uses it is live."""
        with self._books.lock:
            k = self._books.keys.get(key_id)
            if k is None:
                raise UnknownKey(key_id)
            if k.live_jobs:
                raise EngineError(f"key {key_id} is used by {k.live_jobs} live job(s)")
            was = bool(k.devices) or k.charged
            self._sup.dispatcher.evict(k)
        self._sup.wake()
        return was

    # ================================================================ jobs
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
        """Queue a job: one witness (bytes, or a path) per partition. Returns the job id.

        Or `inputs` instead of witnesses: one circuit input per partition (a JSON object, its
        text or bytes), for a key registered with its circuit's wasm; the synthesis process
        computes each witness. Values that are not numbers raise the WitnessError
        (NotANumber) here; what only the circuit can tell (a missing signal, a failing
        assert) fails that partition alone when it runs.

        With a journal, the job is recorded durably (uploads spooled to files) before it is
        queued, so the id returned survives a crash. `job_id`, `submitted_at` and
        `recovered=True` re-queue a job the journal already holds, under its original id;
        `done` ({partition: record}, from the journal's done_partitions) are its partitions
        finished before the restart: they keep their proofs and are not proved again. Each
        partition that finishes while others are left is recorded in the journal so."""
        kind, items, circuit = job_request(witnesses, inputs, kind, priority)
        restored = {}
        for i, rec in (done or {}).items():
            if not recovered or not 0 <= int(i) < len(items):
                raise ValueError(f"done: partition {i} is not one of a recovered job's")
            restored[int(i)] = PartitionRecord.restored(rec)
        return self._submit(
            key_id,
            items,
            kind,
            priority,
            job_id,
            submitted_at,
            recovered,
            circuit=circuit,
            restored=restored,
        )

    def _submit(
        self,
        key_id,
        inputs,
        kind,
        priority,
        job_id,
        submitted_at,
        recovered,
        circuit: bool = False,
        restored: dict | None = None,
    ) -> str:
        restored = restored or {}
        b = self._books
        with b.lock:
            self._check_intake(key_id, inputs, circuit)
            k = b.keys[key_id]
            wasm = k.wasm if circuit else None
            if job_id is None:
                job_id = uuid.uuid4().hex[:16]
            elif job_id in b.jobs:
                raise ValueError(f"job {job_id} already exists")
        submitted_at = time.time() if submitted_at is None else float(submitted_at)
        journal = b.journal if not recovered else None
        if journal is not None:  # durable before the id is handed out (fsync: outside the lock)
            inputs = journal.accept(
                job_id, key_id, k.path, kind, priority, submitted_at, inputs, wasm=wasm
            )
        with b.lock:
            try:
                self._check_intake(key_id, inputs, circuit)
            except BaseException:
                if journal is not None:
                    journal.discard(job_id)
                raise
            job = JobRecord(
                job_id,
                key_id,
                kind,
                priority,
                inputs,
                submitted_at,
                [restored.get(i) or PartitionRecord() for i in range(len(inputs))],
                recovered=recovered,
                wasm=wasm,
            )
            job.n_done = sum(p.state == "done" for p in restored.values())
            job.n_failed = len(restored) - job.n_done
            b.jobs[job_id] = job
            k.live_jobs += 1
            b.sched.add_job(job_id, priority, len(inputs), skip=restored)
            b.status.job_add(job)
            for i in sorted(restored):
                b.status.partition(job, i)
            if recovered:
                b.counters["recovered"] += 1
                b.status.count_recovered()
            b.event("submit", job_id, -1, -1)
            b.publish_queue()
            log.info(
                "job %s %s: %s, %s, %d partition(s)%s%s",
                job_id,
                "recovered" if recovered else "submitted",
                kind,
                priority,
                len(inputs),
                f", {len(restored)} finished before the restart" if restored else "",
                " from circuit inputs" if wasm else "",
            )
            if restored:
                self._sup.dispatcher.settle(job)  # every partition was finished already
        self._sup.wake()
        return job_id

    def _check_intake(self, key_id: str, inputs: list, circuit: bool = False) -> None:
        """Raise unless a job of these inputs for this key may be queued now (lock held)."""
        b = self._books
        if b.draining or not self.running:
            raise EngineStopped("engine is not taking new jobs")
        k = b.keys.get(key_id)
        if k is None:
            raise UnknownKey(key_id)
        if circuit and k.wasm is None:
            raise ValueError(
                f"key {key_id} has no circuit wasm: register it with its wasm "
                "to submit inputs, or submit witnesses"
            )
        biggest = max(len(x) if isinstance(x, bytes) else 0 for x in inputs)
        need = (
            k.partition_bytes
            + biggest
            + (0 if k.charged else k.nbytes)
            + (k.wasm_bytes if circuit else 0)
        )
        if need > b.budget.total:
            raise BudgetError(
                f"one partition needs {format_size(need)}, the memory budget is "
                f"{format_size(b.budget.total)}"
            )

    def _job(self, job_id: str) -> JobRecord:
        job = self._books.jobs.get(job_id)
        if job is None:
            raise UnknownJob(job_id)
        return job

    def job(self, job_id: str) -> dict:
        with self._books.lock:
            return self._job(job_id).to_dict(detail=True)

    def jobs(self) -> list[dict]:
        with self._books.lock:
            return [j.to_dict(detail=False) for j in self._books.jobs.values()]

    def result(self, job_id: str, timeout: float | None = None) -> dict | None:
        """Wait up to `timeout` seconds (None: forever) for a job to finish. Returns its result
        ({"state", "proofs", "public", "error", ...}, proofs ordered by partition), or None on
        timeout."""
        deadline = None if timeout is None else time.time() + timeout
        with self._books.lock:
            job = self._job(job_id)
            while not job.finished:
                left = None if deadline is None else deadline - time.time()
                if left is not None and left <= 0:
                    return None
                self._books.changed.wait(left if left is not None else 1.0)
            return job.result()

    def cancel(self, job_id: str) -> bool:
        """Cancel a job: queued partitions are dropped at once, running ones at their next stage
        boundary, their reservations and buffers released. False if it had already finished."""
        with self._books.lock:
            job = self._job(job_id)
            if job.finished:
                return False
            self._sup.dispatcher.end_job(job, "cancelled", "cancelled by request")
        self._sup.wake()
        return True

    def snapshot(self) -> dict:
        """The status board snapshot (the JSON of GET /status), with ``warming`` while
        kernels compile (see warming())."""
        snap = self._books.status.snapshot()
        warming = self.warming()
        if warming:
            snap["warming"] = warming
        return snap

    @property
    def board_name(self) -> str:
        return self._books.status.name

    @property
    def budget(self) -> MemoryBudget:
        return self._books.budget

    def process_pids(self) -> dict[str, list[int]]:
        with self._books.lock:
            return {
                "synth": [c.pid for c in self._books.synth],
                "device": [c.pid for c in self._books.devices],
            }

    def _prover(self):
        prover = importlib.import_module(self.config.prover)
        prover.configure(self.config.prover_options or {})
        return prover
