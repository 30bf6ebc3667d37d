"""The proving engine: a supervisor thread, synthesis processes and one process per device.

Data flow (cf. CPython's concurrent/futures/process.py):

  API threads            supervisor thread                   child processes
  -----------            -----------------                   ---------------
  submit() --jobs-->  Scheduler: SYNTH_QUEUE  --"synth"-->   synthesis process (one partition)
  cancel()               | budget reserved,                    witness -> w seg, a,b,c -> abc seg
  result() <--done--     | w/abc segments created            <--"synth_done"--
                         v
                      Scheduler: DEVICE_QUEUE --"prove"-->   device process
                         ^                                     worker loops: prove_start
                         |   <--"started"-- (abc freed)        finalizer threads: prove_finish
                         +--------------------<--"done"-- proof JSON, public signals
                      multiprocess.connection.wait() on: every child's pipe, every child's
                      sentinel, and a wake-up pipe written by API threads and signal handlers.

- API threads (Engine methods): validate, change shared state under `_lock`, wake the
  supervisor. They never talk to children except through the same locked state.
- Supervisor thread: the only place that waits. It reads child messages, notices a dead child
  the moment its sentinel fires (exit code or signal logged with the pid, board slots
  reclaimed with a new generation, its partitions retried or failed, the process restarted
  after a backoff), pings children and kills one that stops answering (a hung child), and
  dispatches: device queue -> devices with free worker capacity, synthesis queue -> idle
  synthesis processes while the memory budget has room (head of line waits: a large critical
  partition is not overtaken by small normal ones).
- Children: see synthesis_process.py and device_process.py. Witness and a, b, c travel only through
  shared-memory segments that this supervisor creates and unlinks; pipes carry small
  messages (ids, timings, proof JSON).
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import signal
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field

import multiprocess
from multiprocess.connection import wait

from cuzk.engine import buffers, child
from cuzk.engine.budget import BudgetError, MemoryBudget
from cuzk.engine.config import PRIORITIES, EngineConfig, format_size
from cuzk.engine.scheduler import (
    DEVICE_QUEUE,
    PROVING,
    SYNTH_QUEUE,
    SYNTHESIZING,
    Scheduler,
    WorkKey,
)
from cuzk.engine.status import SupervisorStatus

log = logging.getLogger("cuzk.engine")

DRAIN_GRACE_SECS = 3.0  # after the drain deadline, running stages get this long to report
STOP_JOIN_SECS = 3.0  # a child that has not exited this long after "stop" is killed
BACKOFF_RESET_SECS = 30.0  # a child that lived this long restarts without accumulated backoff


class EngineError(RuntimeError):
    """The engine refused a request (the message says why)."""


class EngineStopped(EngineError):
    """The engine is stopping or stopped: no new work is taken."""


class UnknownJob(KeyError):
    pass


class UnknownKey(KeyError):
    pass


@dataclass
class _Key:
    key_id: str
    path: str
    n_vars: int
    domain_size: int
    n_public: int
    nbytes: int
    partition_bytes: int
    abc_bytes: int
    registered_at: float
    last_used: float
    wasm: str | None = None  # the circuit's witness calculator (jobs with inputs)
    wasm_bytes: int = 0  # what one calculator instance holds (Circuit.instance_bytes)
    devices: set = field(default_factory=set)  # device indices where resident
    charged: bool = False  # its bytes are reserved in the budget (resident somewhere)
    live_jobs: int = 0


@dataclass
class _Partition:
    state: str = "pending"
    attempts: int = 0
    synth_ms: float | None = None
    witness_ms: float | None = None  # of synth_ms: the witness (computed, or read from a .wtns)
    abc_ms: float | None = None  # of synth_ms: a, b, c
    gpu_ms: float | None = None
    finalize_ms: float | None = None
    t_gpu_start: float | None = None  # unix, from the device process
    t_gpu_end: float | None = None
    device: int | None = None
    proof: dict | None = None
    public: list | None = None
    error: str | None = None


@dataclass
class _Job:
    job_id: str
    key_id: str
    kind: str
    priority: str
    inputs: list  # bytes or str path, one per partition (JSON bytes for circuit inputs)
    submitted_at: float
    partitions: list
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


@dataclass
class _Work:
    """Resources held for one live (or draining) work item: segments and a reservation."""

    wk: WorkKey
    segs: dict = field(default_factory=dict)  # use -> segment name
    child: object = None

    @property
    def owner(self):
        return ("work", self.wk.job_id, self.wk.partition)


@dataclass
class _Child:
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

    @property
    def name(self) -> str:
        return f"{self.role} process {self.index}" + (f" ({self.device})" if self.device else "")


class Engine:
    """The proving engine. `Engine(config).start()`, then register keys and submit jobs.

    Thread-safe: every public method may be called from any thread. See the module docstring
    for the actors and docs/architecture.md for failure handling.
    """

    def __init__(self, config: EngineConfig | None = None, *, journal=None, **overrides):
        base = config or EngineConfig()
        if overrides:
            import dataclasses

            base = dataclasses.replace(base, **overrides)
        self.config = base.validated()
        # The job journal (cuzk.serve.journal.Journal) or None: submit() records each job in it
        # before returning its id, _end_job() records each outcome (not a shutdown's cancel).
        self.journal = journal
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._sched = Scheduler()
        self._budget = MemoryBudget(self.config.memory_budget)
        self._keys: dict[str, _Key] = {}
        self._validated: dict[tuple, str] = {}  # (path, size, mtime_ns) -> key id, points checked
        self._jobs: dict[str, _Job] = {}
        self._finished = collections.deque()  # job ids in finishing order (history bound)
        self._works: dict[WorkKey, _Work] = {}
        self._synth: list[_Child] = []
        self._devices: list[_Child] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._stopped = threading.Event()
        self._start_error: BaseException | None = None
        self._draining = False
        self._drain_deadline = 0.0
        self._drain_cancelled_at: float | None = None
        self._signal_stop: float | None = None  # set by a signal handler (no locks there)
        self._last_ping = 0.0
        self._status: SupervisorStatus | None = None
        self._seg_seq = 0
        self._last_depth = -1
        self.events: collections.deque = collections.deque(maxlen=100_000)  # (t, what, ...)
        self.counters = collections.Counter()
        self.pid = os.getpid()

    # ================================================================ life cycle
    def start(self, timeout: float = 120.0) -> Engine:
        """Create the board, spawn every process, return once all have reported ready."""
        if self._thread is not None:
            raise EngineError("engine already started")
        buffers.sweep_stale()
        self._thread = threading.Thread(target=self._run, name="cuzk-supervisor", daemon=True)
        self._thread.start()
        # An engine the program forgot to stop is stopped at interpreter exit (no drain), so
        # its segments and board do not outlive it; a weak reference keeps it collectable.
        ref = weakref.ref(self)
        atexit.register(lambda: (e := ref()) is not None and e.running and e.stop(0))
        if not self._started.wait(timeout):
            self.stop(0)
            raise EngineError(f"processes not ready after {timeout:.0f} s")
        if self._start_error is not None:
            raise EngineError(f"engine failed to start: {self._start_error}") from self._start_error
        return self

    def __enter__(self):
        return self if self._thread else self.start()

    def __exit__(self, *exc):
        self.stop(drain_deadline=0 if exc[0] else 30.0)

    def stop(self, drain_deadline: float = 30.0) -> None:
        """Drain: stop intake, let running jobs finish for up to `drain_deadline` seconds,
        cancel the rest, stop every process, release every buffer and the board."""
        self.request_stop(drain_deadline)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def request_stop(self, drain_deadline: float = 30.0) -> None:
        """Start draining without waiting (see stop)."""
        with self._lock:
            if not self._draining:
                self._draining = True
                self._drain_deadline = time.time() + max(0.0, drain_deadline)
                log.info("draining: intake stopped, deadline in %.1f s", drain_deadline)
            else:
                self._drain_deadline = min(self._drain_deadline, time.time() + drain_deadline)
            self._changed.notify_all()
        self._wake()

    def wait_stopped(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    def install_signal_handlers(self, drain_deadline: float = 30.0) -> None:
        """SIGTERM and SIGINT drain the engine (main thread only). The handler only records
        the request and writes the wake-up pipe; the supervisor thread does the work."""

        def handler(signum, frame):
            if self._stopped.is_set():
                return  # the wake-up pipe is closed (its fd number may be reused)
            self._signal_stop = drain_deadline
            try:
                os.write(self._wake_w, b"s")
            except OSError:
                pass

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    @property
    def running(self) -> bool:
        return self._started.is_set() and not self._stopped.is_set()

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
        path = os.path.abspath(os.fspath(path))
        circuit = None
        if wasm is not None:
            from cuzk.witness.calculator import Circuit

            wasm = os.path.abspath(os.fspath(wasm))
            circuit = Circuit(wasm)  # checks the interface and the prime
        st = os.stat(path)
        stamp = (path, st.st_size, st.st_mtime_ns)
        pk = prover.ProvingKey.open(path)
        if hasattr(pk, "validate") and self._validated.get(stamp) != pk.key_id:
            t0 = time.perf_counter()
            pk.validate()
            log.info("key %s validated in %.0f ms: %s", pk.key_id,
                     (time.perf_counter() - t0) * 1e3, path)
            with self._lock:
                self._validated[stamp] = pk.key_id
        if circuit is not None and circuit.witness_size != int(pk.n_vars):
            from cuzk.witness.errors import CircuitMismatch

            raise CircuitMismatch(wasm, f"has {circuit.witness_size} wires but "
                                        f"{os.path.basename(path)} has nVars = {pk.n_vars}: "
                                        "not the same circuit")
        with self._lock:
            if pk.key_id in self._keys:
                if circuit is not None:
                    k = self._keys[pk.key_id]
                    k.wasm, k.wasm_bytes = wasm, int(circuit.instance_bytes)
                    log.info("key %s: circuit %s", pk.key_id, wasm)
                return pk.key_id
            pb = int(pk.partition_bytes())
            abc = min(3 * 32 * int(pk.domain_size), pb)
            now = time.time()
            self._keys[pk.key_id] = _Key(pk.key_id, path, int(pk.n_vars), int(pk.domain_size),
                                         int(pk.n_public), int(pk.nbytes), pb, abc, now, now)
            if circuit is not None:
                self._keys[pk.key_id].wasm = wasm
                self._keys[pk.key_id].wasm_bytes = int(circuit.instance_bytes)
            self._publish_keys()
        log.info("key %s registered: %s (%d vars, domain %d, %s per partition)%s", pk.key_id,
                 path, pk.n_vars, pk.domain_size, format_size(pb),
                 f", circuit {wasm}" if wasm else "")
        return pk.key_id

    def keys(self) -> list[dict]:
        with self._lock:
            now = time.time()
            return [self._key_dict(k, now) for k in self._keys.values()]

    def evict_key(self, key_id: str) -> bool:
        """Drop a key's device residency now; False when it was not resident. Raises
        EngineError while a job that uses it is live."""
        with self._lock:
            k = self._keys.get(key_id)
            if k is None:
                raise UnknownKey(key_id)
            if k.live_jobs:
                raise EngineError(f"key {key_id} is used by {k.live_jobs} live job(s)")
            was = bool(k.devices) or k.charged
            self._evict(k)
        self._wake()
        return was

    # ================================================================ jobs
    def submit(self, key_id: str, witnesses=None, kind: str = "default",
               priority: str = "normal", *, inputs=None, job_id: str | None = None,
               submitted_at: float | None = None, recovered: bool = False) -> str:
        """Queue a job: one witness (bytes, or a path) per partition. Returns the job id.

        Or `inputs` instead of witnesses: one circuit input per partition (a JSON object, its
        text or bytes), for a key registered with its circuit's wasm; the synthesis process
        computes each witness. Values that are not numbers raise the WitnessError
        (NotANumber) here; what only the circuit can tell (a missing signal, a failing
        assert) fails that partition alone when it runs.

        With a journal, the job is recorded durably (uploads spooled to files) before it is
        queued, so the id returned survives a crash. `job_id`, `submitted_at` and
        `recovered=True` re-queue a job the journal already holds, under its original id."""
        if priority not in PRIORITIES:
            raise ValueError(f"priority must be one of {', '.join(PRIORITIES)}, got {priority!r}")
        kind = str(kind)
        if not kind or len(kind.encode()) > 24:
            raise ValueError("kind must be a label of 1 to 24 bytes")
        if (witnesses is None) == (inputs is None):
            raise ValueError("a job has either witnesses or inputs")
        if inputs is not None:
            return self._submit(key_id, self._circuit_inputs(inputs), kind, priority, job_id,
                                submitted_at, recovered, circuit=True)
        inputs = []
        for w in witnesses:
            if isinstance(w, (bytes, bytearray, memoryview)):
                inputs.append(bytes(w))
            elif isinstance(w, (str, os.PathLike)):
                p = os.path.abspath(os.fspath(w))
                if not os.path.isfile(p):
                    raise ValueError(f"witness file not found: {p}")
                inputs.append(p)
            else:
                raise ValueError(f"a witness is bytes or a path, got {type(w).__name__}")
        if not inputs:
            raise ValueError("a job needs at least one witness")
        return self._submit(key_id, inputs, kind, priority, job_id, submitted_at, recovered)

    @staticmethod
    def _circuit_inputs(objs) -> list[bytes]:
        """Circuit inputs as compact JSON bytes, one per partition, values checked."""
        import json

        from cuzk.witness.inputs import parse_inputs

        out = []
        for i, x in enumerate(objs):
            what = f"inputs[{i}]"
            if isinstance(x, (bytes, bytearray, str)):
                try:
                    x = json.loads(x)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    raise ValueError(f"{what}: not valid JSON: {e}") from None
            if not isinstance(x, dict):
                raise ValueError(f"{what}: the circuit's inputs are a JSON object, got "
                                 f"{type(x).__name__}")
            parse_inputs(x, what)  # NotANumber (a ValueError) for a value that is not one
            out.append(json.dumps(x, separators=(",", ":")).encode())
        if not out:
            raise ValueError("a job needs at least one input (one per partition)")
        return out

    def _submit(self, key_id, inputs, kind, priority, job_id, submitted_at, recovered,
                circuit: bool = False) -> str:
        with self._lock:
            self._check_intake(key_id, inputs, circuit)
            k = self._keys[key_id]
            wasm = k.wasm if circuit else None
            if job_id is None:
                job_id = uuid.uuid4().hex[:16]
            elif job_id in self._jobs:
                raise ValueError(f"job {job_id} already exists")
        submitted_at = time.time() if submitted_at is None else float(submitted_at)
        journal = self.journal if not recovered else None
        if journal is not None:  # durable before the id is handed out (fsync: outside the lock)
            inputs = journal.accept(job_id, key_id, k.path, kind, priority, submitted_at, inputs,
                                    wasm=wasm)
        with self._lock:
            try:
                self._check_intake(key_id, inputs, circuit)
            except BaseException:
                if journal is not None:
                    journal.discard(job_id)
                raise
            job = _Job(job_id, key_id, kind, priority, inputs, submitted_at,
                       [_Partition() for _ in inputs], recovered=recovered, wasm=wasm)
            self._jobs[job_id] = job
            k.live_jobs += 1
            self._sched.add_job(job_id, priority, len(inputs))
            self._status.job_add(job)
            if recovered:
                self.counters["recovered"] += 1
                self._status.count_recovered()
            self._event("submit", job_id, -1, -1)
            self._publish_queue()
        self._wake()
        log.info("job %s %s: %s, %s, %d partition(s)%s", job_id,
                 "recovered" if recovered else "submitted", kind, priority, len(inputs),
                 " from circuit inputs" if wasm else "")
        return job_id

    def _check_intake(self, key_id: str, inputs: list, circuit: bool = False) -> None:
        """Raise unless a job of these inputs for this key may be queued now (under _lock)."""
        if self._draining or not self.running:
            raise EngineStopped("engine is not taking new jobs")
        k = self._keys.get(key_id)
        if k is None:
            raise UnknownKey(key_id)
        if circuit and k.wasm is None:
            raise ValueError(f"key {key_id} has no circuit wasm: register it with its wasm "
                             "to submit inputs, or submit witnesses")
        biggest = max(len(x) if isinstance(x, bytes) else 0 for x in inputs)
        need = (k.partition_bytes + biggest + (0 if k.charged else k.nbytes)
                + (k.wasm_bytes if circuit else 0))
        if need > self._budget.total:
            raise BudgetError(f"one partition needs {format_size(need)}, the memory budget is "
                              f"{format_size(self._budget.total)}")

    def job(self, job_id: str) -> dict:
        with self._lock:
            return self._job_dict(self._get_job(job_id), detail=True)

    def jobs(self) -> list[dict]:
        with self._lock:
            return [self._job_dict(j, detail=False) for j in self._jobs.values()]

    def result(self, job_id: str, timeout: float | None = None) -> dict | None:
        """Wait up to `timeout` seconds (None: forever) for a job to finish. Returns its result
        ({"state", "proofs", "public", "error", ...}, proofs ordered by partition), or None on
        timeout."""
        deadline = None if timeout is None else time.time() + timeout
        with self._lock:
            job = self._get_job(job_id)
            while not job.finished:
                left = None if deadline is None else deadline - time.time()
                if left is not None and left <= 0:
                    return None
                self._changed.wait(left if left is not None else 1.0)
            return self._result_dict(job)

    def cancel(self, job_id: str) -> bool:
        """Cancel a job: queued partitions are dropped at once, running ones at their next stage
        boundary, their reservations and buffers released. False if it had already finished."""
        with self._lock:
            job = self._get_job(job_id)
            if job.finished:
                return False
            self._end_job(job, "cancelled", "cancelled by request")
        self._wake()
        return True

    def snapshot(self) -> dict:
        """The status board snapshot (the JSON of GET /status)."""
        return self._status.snapshot()

    @property
    def board_name(self) -> str:
        return self._status.name

    @property
    def budget(self) -> MemoryBudget:
        return self._budget

    def process_pids(self) -> dict[str, list[int]]:
        with self._lock:
            return {"synth": [c.pid for c in self._synth], "device": [c.pid for c in self._devices]}

    # ================================================================ supervisor thread
    def _run(self) -> None:
        try:
            self._setup()
        except BaseException as exc:
            log.exception("engine start failed")
            self._start_error = exc
            self._started.set()
            self._teardown()
            return
        try:
            self._loop()
        except BaseException:
            log.exception("supervisor crashed; stopping every process")
        finally:
            self._teardown()

    def _setup(self) -> None:
        cfg = self.config
        self._ctx = multiprocess.get_context("spawn")
        self._status = SupervisorStatus.create(cfg)
        self._child_opts = {
            "prover": cfg.prover, "prover_options": cfg.prover_options,
            "board_name": self._status.name, "log_level": logging.getLogger().level or 30,
            "workers_per_device": cfg.workers_per_device,
            "finalizers_per_device": cfg.finalizers_per_device,
            "split_prove": cfg.split_prove, "self_verify": cfg.self_verify,
        }
        self._synth = [_Child("synth", i) for i in range(cfg.synth_workers)]
        self._devices = [_Child("device", i, device=d) for i, d in enumerate(cfg.device_names)]
        with self._lock:
            for ch in self._synth + self._devices:
                self._spawn(ch)
        self._status.set_memory(self._budget)
        log.info("engine: %d synthesis process(es), devices %s x %d workers (split proving %s), "
                 "memory budget %s, board %s", cfg.synth_workers, ",".join(cfg.device_names),
                 cfg.workers_per_device, "on" if cfg.split_prove else "off",
                 format_size(self._budget.total), self._status.name)

    def _loop(self) -> None:
        while True:
            with self._lock:
                children = [c for c in self._synth + self._devices if c.proc is not None]
                by_conn = {c.conn: c for c in children if c.conn is not None}
                by_sentinel = {c.proc.sentinel: c for c in children}
                timeout = self._timer_timeout()
            ready = wait([self._wake_r, *by_conn, *by_sentinel], timeout)
            with self._lock:
                if self._wake_r in ready:
                    try:
                        while os.read(self._wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                if self._signal_stop is not None:
                    deadline, self._signal_stop = self._signal_stop, None
                    log.info("signal received: draining")
                    self.request_stop(deadline)
                for conn, ch in by_conn.items():
                    if conn in ready:
                        self._read_child(ch)
                for sentinel, ch in by_sentinel.items():
                    if sentinel in ready:
                        self._on_exit(ch)
                self._timers()
                self._dispatch()
                if not self._started.is_set() and all(
                        c.state == "ready" for c in self._synth + self._devices):
                    self._started.set()
                if self._draining and self._drain_done():
                    return

    def _timer_timeout(self) -> float:
        t = 0.5
        now = time.time()
        for c in self._synth + self._devices:
            if c.state == "dead":
                t = min(t, max(0.0, c.next_start_at - now))
        if self._draining:
            t = min(t, max(0.0, self._drain_deadline - now) + 0.01)
        return t

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"w")
        except (BlockingIOError, OSError):
            pass  # the pipe is full: the supervisor is awake anyway

    # ---------------------------------------------------------------- processes
    def _spawn(self, ch: _Child) -> None:
        from cuzk.engine.device_process import device_main
        from cuzk.engine.synthesis_process import synth_main

        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        if ch.role == "synth":
            target, args = synth_main, (child_conn, os.getpid(), ch.index, self._child_opts)
        else:
            target, args = device_main, (child_conn, os.getpid(), ch.index, ch.device,
                                         self._child_opts)
        proc = self._ctx.Process(target=target, args=args, daemon=True,
                                 name=f"cuzk-{ch.role}-{ch.index}")
        try:
            proc.start()
        except BaseException:
            parent_conn.close()
            raise
        finally:
            child_conn.close()  # the child has its own copy; ours would hide its EOF
        ch.proc, ch.conn, ch.pid = proc, parent_conn, proc.pid
        ch.state, ch.started_at, ch.last_pong = "starting", time.time(), time.time()
        ch.items, ch.inflight = set(), 0
        self._event("spawn", ch.role, ch.index, ch.pid)
        log.debug("%s started, pid %d", ch.name, ch.pid)

    def _send(self, ch: _Child, msg) -> bool:
        try:
            ch.conn.send_bytes(child.pack(msg))
            return True
        except (OSError, EOFError, BrokenPipeError):
            return False  # it is dying; its sentinel will fire

    def _read_child(self, ch: _Child) -> None:
        try:
            while ch.conn is not None and ch.conn.poll():
                self._on_message(ch, child.unpack(ch.conn.recv_bytes()))
        except (EOFError, OSError):
            # the child closed its end: it is exiting; the sentinel reports how
            ch.conn.close()
            ch.conn = None

    def _on_exit(self, ch: _Child) -> None:
        if ch.conn is not None:
            self._read_child(ch)  # messages it sent before dying still count
        ch.proc.join(1.0)
        code = ch.proc.exitcode
        if code is not None and code < 0:
            cause = f"killed by {signal.Signals(-code).name}"
        else:
            cause = f"exit code {code}"
        now = time.time()
        expected = ch.state == "stopping"
        if ch.state == "starting" and not self._started.is_set():
            self._start_error = EngineError(f"{ch.name} (pid {ch.pid}) died during start-up "
                                            f"(exit {ch.proc.exitcode}); see its log above")
            self._started.set()
            self.request_stop(0)
        (log.info if expected else log.error)("%s (pid %d) %s: %s", ch.name, ch.pid,
                                              "stopped" if expected else "died", cause)
        if ch.conn is not None:
            ch.conn.close()
        ch.conn, ch.proc = None, None
        self._status.reclaim_process(ch)
        for wk in list(ch.items):
            self._on_lost(ch, wk, f"{ch.role} process died ({cause})")
        ch.items.clear()
        ch.inflight = 0
        if ch.role == "device":
            for k in self._keys.values():
                k.devices.discard(ch.index)
        self._event("exit", ch.role, ch.index, ch.pid, code)
        if expected or self._drain_cancelled_at is not None:
            ch.state = "down"  # stopping: work that is left has been cancelled
            return
        ch.state = "dead"
        self.counters["restarts"] += 1
        ch.restarts += 1
        if now - ch.started_at > BACKOFF_RESET_SECS:
            ch.backoff = 0.0
        ch.backoff = min(self.config.restart_backoff_max,
                         max(self.config.restart_backoff, ch.backoff * 2))
        ch.next_start_at = now + ch.backoff
        self._status.count_restart()
        log.warning("%s restarts in %.1f s (restart %d)", ch.name, ch.backoff, ch.restarts)

    def _timers(self) -> None:
        now = time.time()
        for ch in self._synth + self._devices:
            if (ch.state == "dead" and now >= ch.next_start_at
                    and self._drain_cancelled_at is None):  # a drain still needs its processes
                try:
                    self._spawn(ch)
                except OSError as exc:  # no memory / process limit: try again later
                    ch.backoff = min(self.config.restart_backoff_max, max(1.0, ch.backoff * 2))
                    ch.next_start_at = now + ch.backoff
                    log.error("%s could not be restarted: %s (next try in %.1f s)", ch.name,
                              exc, ch.backoff)
        if now - self._last_ping >= self.config.ping_interval:
            self._last_ping = now
            for ch in self._synth + self._devices:
                if ch.state in ("ready", "starting") and ch.proc is not None:
                    # a starting child imports the prover and may compile or load kernels and
                    # open a CUDA context: it gets start_timeout, not the ping timeout
                    limit = (self.config.hang_timeout if ch.state == "ready"
                             else max(self.config.start_timeout, self.config.hang_timeout))
                    if now - ch.last_pong > limit:
                        log.error("%s (pid %d) answered no ping for %.0f s: killing it", ch.name,
                                  ch.pid, now - ch.last_pong)
                        self._event("hung", ch.role, ch.index, ch.pid)
                        try:
                            os.kill(ch.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        ch.last_pong = now  # once; the sentinel does the rest
                    elif ch.state == "ready":
                        self._send(ch, ("ping", now))
        if self.config.key_idle_evict_secs > 0:
            for k in self._keys.values():
                if (k.charged and not k.live_jobs
                        and now - k.last_used > self.config.key_idle_evict_secs):
                    log.info("key %s idle for %.0f s: evicted", k.key_id, now - k.last_used)
                    self._evict(k)

    # ---------------------------------------------------------------- messages
    def _on_message(self, ch: _Child, msg) -> None:
        kind = msg[0]
        now = time.time()
        if kind == "pong":
            ch.last_pong = now
            return
        if kind == "ready":
            ch.state, ch.last_pong = "ready", now
            log.info("%s ready, pid %d", ch.name, msg[1])
            return
        if kind == "key_loaded":
            k = self._keys.get(msg[1])
            if k is not None:
                k.devices.add(ch.index)
                self._publish_keys()
            log.info("key %s resident on %s (%.0f ms)", msg[1], ch.device, msg[2]["load_ms"])
            return
        if kind == "key_evicted":
            return
        wk = WorkKey(*msg[1])
        info = msg[2]
        handler = getattr(self, f"_on_{kind}")
        handler(ch, wk, info)

    def _job_of(self, wk: WorkKey) -> tuple[_Job | None, _Partition | None]:
        job = self._jobs.get(wk.job_id)
        return (job, job.partitions[wk.partition]) if job else (None, None)

    def _on_synth_done(self, ch, wk, info) -> None:
        ch.items.discard(wk)
        self._event("synth_done", wk.job_id, wk.partition, wk.attempt)
        if self._sched.place(wk) != SYNTHESIZING:
            self._free_work(wk)  # cancelled or failed meanwhile: stage boundary reached
            return
        job, p = self._job_of(wk)
        self._free_part(wk, "input")
        self._free_part(wk, "wasm")  # the calculator's memory is the synthesis process's
        self._sched.synthesized(wk)
        p.state, p.synth_ms = "synth_done", info["synth_ms"]
        p.witness_ms, p.abc_ms = info.get("witness_ms"), info.get("abc_ms")

    def _on_synth_failed(self, ch, wk, info) -> None:
        ch.items.discard(wk)
        self._event("synth_failed", wk.job_id, wk.partition, wk.attempt)
        if self._sched.place(wk) != SYNTHESIZING:
            self._free_work(wk)
            return
        job, p = self._job_of(wk)
        # Circuit inputs the circuit rejects (a missing signal, a failing assert) fail their
        # partition alone and at once: the job's other partitions still prove.
        self._failed_stage(wk, f"synthesis: {info['type']}: {info['message']}",
                           retry=not info.get("input_error"), to_device=False, tb=info,
                           alone=job.wasm is not None and bool(info.get("input_error")))

    def _on_started(self, ch, wk, info) -> None:
        ch.inflight -= 1
        self._event("gpu", wk.job_id, wk.partition, wk.attempt, ch.index, info["t_start"],
                    info["t_end"])
        self._free_part(wk, "abc")
        job, p = self._job_of(wk)
        if p is not None and self._sched.place(wk) == PROVING:
            p.gpu_ms, p.t_gpu_start, p.t_gpu_end = info["gpu_ms"], info["t_start"], info["t_end"]
            p.state = "finalizing" if self.config.split_prove else "gpu"

    def _on_done(self, ch, wk, info) -> None:
        ch.items.discard(wk)
        self._event("done", wk.job_id, wk.partition, wk.attempt)
        if self._sched.place(wk) != PROVING:
            self._free_work(wk)
            return
        job, p = self._job_of(wk)
        self._sched.complete(wk)
        self._free_work(wk)
        p.state, p.proof, p.public = "done", info["proof"], info["public"]
        p.finalize_ms = info["finalize_ms"]
        p.gpu_ms, p.t_gpu_start, p.t_gpu_end = info["gpu_ms"], info["t_start"], info["t_end"]
        job.n_done += 1
        self._status.partition(job, wk.partition)
        self._settled(job)

    def _settled(self, job: _Job) -> None:
        """End a job whose every partition is done or failed alone."""
        if job.n_done + job.n_failed < len(job.partitions):
            return
        if not job.n_failed:
            self._end_job(job, "done", None)
            return
        bad = [i for i, p in enumerate(job.partitions) if p.state == "failed"]
        self._end_job(job, "failed", f"{len(bad)} of {len(job.partitions)} partition(s) failed "
                      f"(partition {bad[0]}: {job.partitions[bad[0]].error})")

    def _on_failed(self, ch, wk, info) -> None:
        ch.items.discard(wk)
        if info["stage"] == "start":
            ch.inflight -= 1
        self._event("failed", wk.job_id, wk.partition, wk.attempt, info["stage"])
        if self._sched.place(wk) != PROVING:
            self._free_work(wk)
            return
        # Back to the device only when the device says prove_start never ran on this attempt
        # ("abc_intact": a failure while attaching buffers or loading the key). prove_start
        # overwrites a, b, c in place (the prover's compute_h runs its NTTs in that storage),
        # so after a prove_start that raised, the abc segment no longer holds a, b, c: the
        # retry must synthesize again or it proves from garbage.
        # A failure that cannot change on retry (self-verification rejected the proof, the key
        # file is unusable) fails the partition at once; crashes and other errors are retried.
        w = self._works.get(wk)
        self._failed_stage(wk, f"{info['stage']}: {info['type']}: {info['message']}",
                           retry=not info.get("permanent"),
                           to_device=(bool(info.get("abc_intact"))
                                                  and w is not None and "abc" in w.segs),
                           tb=info)

    def _on_dropped(self, ch, wk, info) -> None:
        ch.items.discard(wk)
        if info["stage"] == "start":
            ch.inflight -= 1
        self._free_work(wk)

    def _on_lost(self, ch: _Child, wk: WorkKey, reason: str) -> None:
        """An item held by a process that died."""
        place = self._sched.place(wk)
        if place not in (SYNTHESIZING, PROVING):
            self._free_work(wk)
            return
        # A partition lost with its device process is synthesized again, even when its abc
        # segment still exists: the process may have died inside prove_start, which
        # overwrites a, b, c in place (compute_h's NTTs), and "started" — after which the
        # supervisor unlinks abc — is only sent once prove_start is over. Sending such a
        # partition straight back to a device proved it from half-transformed a, b, c: a
        # wrong proof (rejected by self-verification when on, returned otherwise). The
        # supervisor cannot tell whether prove_start had begun, so it never reuses a, b, c.
        self._failed_stage(wk, reason, retry=True, to_device=False, tb=None)

    def _failed_stage(self, wk: WorkKey, reason: str, *, retry: bool, to_device: bool,
                      tb, alone: bool = False) -> None:
        job, p = self._job_of(wk)
        if tb and tb.get("traceback") and not alone:  # an input's fault needs no traceback
            log.warning("job %s partition %d attempt %d failed: %s\n%s", wk.job_id,
                        wk.partition, wk.attempt, reason, tb["traceback"])
        else:
            log.warning("job %s partition %d attempt %d failed: %s", wk.job_id, wk.partition,
                        wk.attempt, reason)
        p.error = reason
        if alone:  # this partition fails, the rest of the job goes on
            self._sched.give_up(wk)
            self._free_work(wk)
            p.state = "failed"
            job.n_failed += 1
            self._status.partition(job, wk.partition)
            self._settled(job)
            return
        if not retry or wk.attempt + 1 >= self.config.max_attempts:
            self._sched.give_up(wk)
            self._free_work(wk)
            p.state = "failed"
            self._status.partition(job, wk.partition)
            n = wk.attempt + 1
            self._end_job(job, "failed", f"partition {wk.partition} failed after {n} "
                          f"attempt{'s' if n > 1 else ''}: {reason}")
            return
        self.counters["retries"] += 1
        self._status.count_retry()
        new = self._sched.retry(wk, DEVICE_QUEUE if to_device else SYNTH_QUEUE)
        w = self._works.pop(wk, None)
        if to_device and w is not None:
            w.wk, w.child = new, None
            self._works[new] = w
            p.state = "synth_done"
        else:
            if w is not None:
                self._works[wk] = w
                self._free_work(wk)
            p.state = "pending"
        self._status.partition(job, wk.partition)
        self._event("retry", wk.job_id, wk.partition, new.attempt)

    # ---------------------------------------------------------------- jobs
    def _end_job(self, job: _Job, state: str, error: str | None, *,
                 shutdown: bool = False) -> None:
        """Finish a job (done, failed, cancelled): drop what is still queued, stop what runs at
        its next stage boundary, record the outcome, wake result() waiters. A job cancelled
        because the engine stops (`shutdown`) is not finished in the journal: it is re-queued
        at the next start."""
        queued, running = self._sched.drop_job(job.job_id)
        for wk in queued:
            self._free_work(wk)  # device-queued items hold segments and a reservation
        if running:
            for dev in self._devices:
                if any(wk.job_id == job.job_id for wk in dev.items):
                    self._send(dev, ("cancel", job.job_id))
        for p in job.partitions:
            if p.state not in ("done", "failed"):
                p.state = "cancelled"  # dropped, or stopped at its next stage boundary
        job.state, job.error, job.finished_at = state, error, time.time()
        job.inputs = []
        if self.journal is not None and not shutdown:
            try:
                self.journal.finish(job.job_id, state, job.finished_at, self._result_dict(job))
            except Exception as exc:  # a full disk costs the record, never the supervisor
                log.error("job %s: cannot record its outcome in the journal: %s (it will be "
                          "proved again after a restart)", job.job_id, exc)
        k = self._keys.get(job.key_id)
        if k is not None:
            k.live_jobs -= 1
            k.last_used = job.finished_at
        self._status.job_end(job)
        self._publish_keys()
        if state == "done":
            self.counters["completed"] += 1
        elif state == "failed":
            self.counters["failed"] += 1
        self._event(state, job.job_id, -1, -1)
        (log.info if state == "done" else log.warning)(
            "job %s %s%s", job.job_id, state, f": {error}" if error else "")
        self._finished.append(job.job_id)
        while len(self._finished) > self.config.job_history:
            self._jobs.pop(self._finished.popleft(), None)
        self._publish_queue()
        self._changed.notify_all()

    def _resume_note(self) -> str:
        return ("; it stays in the journal and resumes when the daemon starts again"
                if self.journal is not None else "")

    def _get_job(self, job_id: str) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise UnknownJob(job_id)
        return job

    # ---------------------------------------------------------------- dispatch
    def _dispatch(self) -> None:
        if self._draining and self._drain_cancelled_at is not None:
            return
        # devices first: they are the expensive resource, and proving frees memory
        for dev in sorted(self._devices, key=lambda d: d.inflight):
            cap = self.config.workers_per_device + self.config.device_prefetch
            while dev.state == "ready" and dev.inflight < cap:
                wk = self._sched.pop(DEVICE_QUEUE)
                if wk is None:
                    break
                self._send_prove(dev, wk)
        # then synthesis, while processes are idle, the run-ahead bound and the budget allow
        idle = [c for c in self._synth if c.state == "ready" and not c.items]
        while idle:
            ahead = self._sched.count(SYNTHESIZING) + self._sched.count(DEVICE_QUEUE)
            if ahead >= self.config.max_synth_ahead:
                break
            head = self._sched.peek(SYNTH_QUEUE)
            if head is None:
                break
            job, p = self._job_of(head)
            k = self._keys[job.key_id]
            src = job.inputs[head.partition]
            parts = {"abc": k.abc_bytes, "witness": k.partition_bytes - k.abc_bytes}
            if isinstance(src, bytes):
                parts["input"] = len(src)
            if job.wasm is not None:  # the synthesis process's calculator instance
                parts["wasm"] = k.wasm_bytes
            need = sum(parts.values()) + (0 if k.charged else k.nbytes)
            if not self._budget.fits(need):
                self._make_room(need, exclude=k.key_id)
            if not self._budget.fits(need):
                self.counters["budget_waits"] += 1
                break  # head of line waits for memory; nothing overtakes it
            if not k.charged:
                self._budget.try_reserve(("key", k.key_id), {"keys": k.nbytes})
                k.charged = True
            wk = self._sched.pop(SYNTH_QUEUE)
            assert wk == head
            ch = idle.pop(0)
            self._send_synth(ch, wk, job, k, parts)
        self._status.set_memory(self._budget)
        self._publish_queue()

    def _seg(self, wk: WorkKey, use: str) -> str:
        self._seg_seq += 1
        return buffers.segment_name(f"{wk.job_id}.{wk.partition}.{wk.attempt}.{use}."
                                    f"{self._seg_seq}", self.pid)

    def _send_synth(self, ch: _Child, wk: WorkKey, job: _Job, k: _Key, parts: dict) -> None:
        w = _Work(wk, child=ch)
        self._works[wk] = w
        self._budget.try_reserve(w.owner, parts)
        src = job.inputs[wk.partition]
        try:
            if isinstance(src, bytes):
                name = self._seg(wk, "in")
                with buffers.Segment.create(name, len(src)) as seg:
                    seg.buf[: len(src)] = src
                w.segs["input"] = name
                source = ("shm", name, len(src))
            else:
                source = ("path", src)
            w.segs["witness"] = self._seg(wk, "w")
            buffers.Segment.create(w.segs["witness"], 32 * k.n_vars).close()
            w.segs["abc"] = self._seg(wk, "abc")
            buffers.Segment.create(w.segs["abc"], 3 * 32 * k.domain_size).close()
        except OSError as exc:  # /dev/shm full: fail this partition, not the engine
            log.error("cannot create shared-memory buffers: %s", exc)
            self._failed_stage(wk, f"shared memory: {exc}", retry=False, to_device=False,
                               tb=None)
            return
        job.partitions[wk.partition].attempts = wk.attempt + 1
        job.partitions[wk.partition].state = "synthesizing"
        if job.state == "queued":
            job.state, job.started_at = "running", time.time()
            self._status.job_state(job)
        self._status.partition(job, wk.partition)
        spec = {"work": tuple(wk.__dict__.values()), "key_path": k.path, "input": source,
                "w": w.segs["witness"], "abc": w.segs["abc"], "wasm": job.wasm}
        ch.items.add(wk)
        self._event("synth", wk.job_id, wk.partition, wk.attempt, ch.index)
        self._send(ch, ("synth", spec))

    def _send_prove(self, dev: _Child, wk: WorkKey) -> None:
        job, p = self._job_of(wk)
        k = self._keys[job.key_id]
        w = self._works[wk]
        w.child = dev
        k.last_used = time.time()
        spec = {"work": tuple(wk.__dict__.values()), "key_id": k.key_id, "key_path": k.path,
                "w": w.segs["witness"], "abc": w.segs["abc"]}
        dev.items.add(wk)
        dev.inflight += 1
        p.device, p.attempts = dev.index, wk.attempt + 1
        self._event("prove", wk.job_id, wk.partition, wk.attempt, dev.index)
        self._send(dev, ("prove", spec))

    def _free_part(self, wk: WorkKey, use: str) -> None:
        w = self._works.get(wk)
        if w is None:
            return
        name = w.segs.pop(use, None)
        if name:
            buffers.unlink(name)
        self._budget.release(w.owner, use)
        self._status.set_memory(self._budget)

    def _free_work(self, wk: WorkKey) -> None:
        """Release everything a work item holds (idempotent)."""
        w = self._works.pop(wk, None)
        if w is None:
            return
        for name in w.segs.values():
            buffers.unlink(name)
        w.segs.clear()
        self._budget.release(w.owner)
        self._status.set_memory(self._budget)

    def _make_room(self, need: int, exclude: str) -> None:
        """Evict idle keys, least recently used first, until `need` bytes fit."""
        idle = sorted((k for k in self._keys.values()
                       if k.charged and not k.live_jobs and k.key_id != exclude),
                      key=lambda k: k.last_used)
        for k in idle:
            if self._budget.fits(need):
                return
            log.info("key %s evicted to make room (%s needed)", k.key_id, format_size(need))
            self._evict(k)

    def _evict(self, k: _Key) -> None:
        for dev in self._devices:
            if dev.index in k.devices and dev.state == "ready":
                self._send(dev, ("evict_key", k.key_id))
        k.devices.clear()
        if k.charged:
            self._budget.release(("key", k.key_id))
            k.charged = False
        self._status.set_memory(self._budget)
        self._publish_keys()

    # ---------------------------------------------------------------- draining
    def _drain_done(self) -> bool:
        now = time.time()
        live = [j for j in self._jobs.values() if not j.finished]
        if live and now < self._drain_deadline:
            return False
        if live:
            log.warning("drain deadline passed: cancelling %d job(s)", len(live))
            for j in live:
                self._end_job(j, "cancelled", "engine stopped before the job finished"
                              + self._resume_note(), shutdown=True)
        if self._drain_cancelled_at is None:
            self._drain_cancelled_at = now
        busy = any(c.items for c in self._synth + self._devices if c.proc is not None)
        return not busy or now - self._drain_cancelled_at > DRAIN_GRACE_SECS

    def _teardown(self) -> None:
        with self._lock:
            self._draining = True
            children = [c for c in self._synth + self._devices if c.proc is not None]
            for ch in children:
                ch.state = "stopping"
                if ch.conn is not None:
                    self._send(ch, ("stop",))
        deadline = time.time() + STOP_JOIN_SECS
        for ch in children:
            ch.proc.join(max(0.0, deadline - time.time()))
            if ch.proc.exitcode is None:
                log.warning("%s (pid %d) did not stop: killing it", ch.name, ch.pid)
                ch.proc.kill()
                ch.proc.join(5.0)
        with self._lock:
            for ch in children:
                if ch.conn is not None:
                    ch.conn.close()
                ch.proc, ch.conn, ch.state = None, None, "down"
                ch.items.clear()
            for j in list(self._jobs.values()):
                if not j.finished:
                    self._end_job(j, "cancelled", "engine stopped" + self._resume_note(),
                                  shutdown=True)
            for wk in list(self._works):
                self._free_work(wk)
            for name in buffers.list_segments(self.pid):  # belt and braces
                buffers.unlink(name)
            if self._status is not None:
                self._status.close()
            self._changed.notify_all()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stopped.set()
        self._started.set()
        log.info("engine stopped")

    # ---------------------------------------------------------------- views
    def _event(self, what: str, *args) -> None:
        self.events.append((time.time(), what, *args))

    def _publish_queue(self) -> None:
        if self._status is not None:
            depth = self._sched.queue_depth()
            if depth != self._last_depth:
                self._last_depth = depth
                self._status.set_queue_depth(depth)

    def _publish_keys(self) -> None:
        if self._status is not None:
            self._status.set_keys(self._keys.values(), self._devices)

    def _key_dict(self, k: _Key, now: float) -> dict:
        return {"key_id": k.key_id, "path": k.path, "n_vars": k.n_vars,
                "domain_size": k.domain_size, "n_public": k.n_public, "bytes": k.nbytes,
                "partition_bytes": k.partition_bytes,
                "devices": [self._devices[i].device for i in sorted(k.devices)],
                "live_jobs": k.live_jobs, "last_used_secs_ago": now - k.last_used,
                "evictable": k.live_jobs == 0, "wasm": k.wasm, "wasm_bytes": k.wasm_bytes}

    def _job_dict(self, job: _Job, detail: bool) -> dict:
        d = {"job_id": job.job_id, "key_id": job.key_id, "kind": job.kind,
             "priority": job.priority, "state": job.state, "submitted_at": job.submitted_at,
             "started_at": job.started_at, "finished_at": job.finished_at, "error": job.error,
             "total_partitions": len(job.partitions), "partitions_done": job.n_done,
             "partitions_failed": sum(p.state == "failed" for p in job.partitions),
             "recovered": job.recovered}
        if detail:
            d["partitions"] = [
                {"index": i, "state": p.state, "attempts": p.attempts, "synth_ms": p.synth_ms,
                 "witness_ms": p.witness_ms, "abc_ms": p.abc_ms, "gpu_ms": p.gpu_ms,
                 "finalize_ms": p.finalize_ms, "device": p.device,
                 "error": p.error} for i, p in enumerate(job.partitions)]
        return d

    def _result_dict(self, job: _Job) -> dict:
        d = self._job_dict(job, detail=True)
        d["proofs"] = [p.proof for p in job.partitions]
        d["public"] = [p.public for p in job.partitions]
        return d

    def _prover(self):
        import importlib

        prover = importlib.import_module(self.config.prover)
        if self.config.prover_options and hasattr(prover, "configure"):
            prover.configure(self.config.prover_options)
        return prover
