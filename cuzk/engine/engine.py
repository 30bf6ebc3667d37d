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
- API threads (`Engine`, here; its job calls in jobs.JobAPI): validate, change the shared
  records (books.Books, a jobs.JobLedger) under their lock, wake the supervisor. They never
  wait on children.
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
import weakref

from cuzk.engine import buffers
from cuzk.engine.books import Books
from cuzk.engine.budget import BudgetError
from cuzk.engine.jobs import EngineError, JobAPI
from cuzk.engine.records import JobRecord, KeyRecord
from cuzk.engine.settings import EngineConfig, format_size, prover_options
from cuzk.engine.supervisor import Supervisor
from cuzk.formats.binfile import file_stamp

log = logging.getLogger("cuzk.engine")


_watched: set[str] = set()  # provers whose compiles this process reports (once each)


def _watch_compiles_here(prover) -> None:
    """Report this (the serving) process's kernel compiles in its log and in health()."""
    watch = getattr(prover, "watch_compiles", None)
    if watch is not None and prover.__name__ not in _watched:
        _watched.add(prover.__name__)
        watch(logging.getLogger("cuzk.kernels").warning)


class Engine(JobAPI):
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
        self._key_files: dict[str, tuple] = {}  # key id -> (path, file_stamp) when registered

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
        inputs instead of witnesses. It is loaded here and checked against the key (the key's
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
        # read, not mapped: this process is the daemon, and a key file copied over in place
        # while mapped would kill it with SIGBUS (issue 38)
        pk = prover.ProvingKey.open(path, resident=False)
        b = self._books
        if self._validated.get(stamp) != pk.key_id:
            t0 = time.perf_counter()
            pk.validate()
            log.info(
                "key %s validated in %.0f ms: %s", pk.key_id, (time.perf_counter() - t0) * 1e3, path
            )
            with b.lock:
                self._validated[stamp] = pk.key_id
        if circuit is not None:  # a wasm for another prime (BLS12-381's) or circuit
            from cuzk.witness.errors import check_same_circuit

            check_same_circuit(circuit, pk, os.path.basename(path))
        with b.lock:
            k = b.keys.get(pk.key_id)
            if k is None or k.path == path:  # the file the proving processes open
                self._key_files[pk.key_id] = (path, file_stamp(st))
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
                curve=str(getattr(pk, "curve", "") or ""),
                protocol=str(pk.protocol),
                table_bytes=int(getattr(pk, "table_bytes", 0) or 0),
            )
            if circuit is not None:
                k.wasm, k.wasm_bytes = wasm, int(circuit.instance_bytes)
            b.publish_keys()
        log.info(
            "key %s registered: %s (%s, %s%d vars, domain %d, %s per partition)%s",
            pk.key_id,
            path,
            k.protocol,
            f"{k.curve}, " if k.curve else "",
            pk.n_vars,
            pk.domain_size,
            format_size(pb),
            f", circuit {wasm}" if wasm else "",
        )
        return pk.key_id

    def key_file_changed(self, key_id: str) -> str | None:
        """Why key `key_id`'s file is no longer the one registered (replaced, rewritten in
        place, gone), or None while it is: its jobs are then refused until it is registered
        again (the proving processes would read another key, or a shorter file)."""
        with self._books.lock:
            got = self._key_files.get(key_id)
        if got is None:
            return None
        path, was = got
        try:
            now = file_stamp(os.stat(path))
        except OSError as e:
            return f"its file {path} is gone since it was registered ({e.strerror or e})"
        if now == was:
            return None
        what = "replaced by another file" if now[:2] != was[:2] else "rewritten in place"
        return f"its file {path} was {what} since it was registered ({was[2]} -> {now[2]} bytes)"

    def keys(self) -> list[dict]:
        b = self._books
        with b.lock:
            now = time.time()
            return [k.to_dict(b.devices, now) for k in b.keys.values()]

    def evict_key(self, key_id: str) -> bool:
        """Drop a key's device residency now; False when it was not resident. Raises
        EngineError while a job that uses it is live."""
        with self._books.lock:
            k = self._books.evictable_key(key_id)
            was = bool(k.devices) or k.charged
            self._sup.dispatcher.evict(k)
        self._sup.wake()
        return was

    # ================================================================ jobs (JobAPI's hooks)
    def _taking_jobs(self) -> bool:
        return not self._books.draining and self.running

    def _check_room(self, k: KeyRecord, inputs: list, circuit: bool) -> None:
        b = self._books
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

    def _queued(self, job: JobRecord) -> None:
        b = self._books
        b.status.job_add(job)
        for i, p in enumerate(job.partitions):
            if p.state in ("done", "failed"):  # finished before a restart
                b.status.partition(job, i)
        if job.recovered:
            b.status.count_recovered()
        b.publish_queue()

    def _wake(self) -> None:
        self._sup.wake()

    def _end_job(self, job: JobRecord, state: str, error: str | None) -> None:
        self._sup.dispatcher.end_job(job, state, error)

    # ================================================================ status
    def snapshot(self) -> dict:
        """The status board snapshot (the JSON of GET /status), with ``warming`` while
        kernels compile (see warming())."""
        snap = self._books.status.snapshot()
        warming = self.warming()
        if warming:
            snap["warming"] = warming
        with self._books.lock:
            by_pid = {ch.pid: ch.kernels for ch in self._books.children if ch.kernels}
        for w in (*snap["synthesis"]["workers"], *snap["gpu_workers"], *snap["finalizers"]):
            if w["pid"] in by_pid:  # what the worker's process runs (child.select_kernels)
                w["kernels"] = by_pid[w["pid"]]
        return snap

    def select_kernels_here(self) -> str:
        """Pick this process's kernels as the children pick theirs (child.select_kernels): the
        serving process validates keys. For `cuzk serve`, whose process is its own (an
        in-process engine leaves its caller's choice alone)."""
        from cuzk.engine.child import select_kernels

        return select_kernels(self._prover())

    def process_kernels(self) -> dict[str, str]:
        """{process name: its kernels} as each said when ready ("native", "numba", ...;
        cuzk.engine.child.select_kernels), for the processes that said."""
        with self._books.lock:
            return {ch.name: ch.kernels for ch in self._books.children if ch.kernels}

    @property
    def board_name(self) -> str:
        """The status board's shared-memory name ("" before start: no board yet)."""
        status = self._books.status
        return status.name if status is not None else ""

    def process_pids(self) -> dict[str, list[int]]:
        with self._books.lock:
            return {
                "synth": [c.pid for c in self._books.synth],
                "device": [c.pid for c in self._books.devices],
            }

    def _prover(self):
        prover = importlib.import_module(self.config.prover)
        prover.configure(prover_options(self.config))
        return prover
