"""The job side of the engine API, written once for the local engine and the Ray gateway.

`Engine` (cuzk.engine.engine, one machine) and `ClusterEngine` (cuzk.cluster.gateway, a farm)
both implement contract.EngineAPI; what they do alike about jobs lives here:

- `JobLedger`: the records both keep under one lock (keys, jobs, the finished-job history,
  the scheduler, counters, events, the journal) and the bookkeeping of a job's life: the
  intake checks, recording a new job (journal first), recording its end (journal, counters,
  key use, history, waking result() waiters). The local engine's `Books` extends it with its
  processes and work items; the gateway holds one as it is.
- `JobAPI`: the public job calls (submit, job, jobs, result, cancel) over `self._books`, a
  JobLedger. Each engine fills in what only it knows: whether it takes jobs now, whether a
  partition fits its memory, the record of a partition, what follows queueing a job, and how
  a job's running work is stopped (`_end_job`: the local dispatcher, or the nodes over Ray).
- Intake: `job_request` and `circuit_inputs` check and normalise submit's arguments, and the
  exceptions the API raises.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import uuid

from cuzk.board.layout import check_priority
from cuzk.engine.budget import MemoryBudget
from cuzk.engine.records import JobRecord, PartitionRecord
from cuzk.engine.scheduler import Scheduler


class EngineError(RuntimeError):
    """The engine refused a request (the message says why)."""


class EngineStopped(EngineError):
    """The engine is stopping or stopped: no new work is taken."""


class UnknownJob(KeyError):
    pass


class UnknownKey(KeyError):
    pass


def job_request(witnesses, inputs, kind, priority) -> tuple[str, list, bool]:
    """A job's arguments checked and normalised, as submit takes them: (kind, items,
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


# The event log (submit, synth, prove, done, failed ... with their job, partition and attempt)
# is for tests and for debugging a daemon: the last EVENTS_KEPT events (~2.5 MB). At 100 000
# it held ~25 MB of the supervisor's memory once full, and a busy daemon (the soak: ~5,000
# events a minute) took 20 minutes to fill it, its RSS growing all that while, which a soak
# shorter than that cannot tell from a leak (bench/bench_soak.py).
EVENTS_KEPT = 10_000


class JobLedger:
    """Keys, jobs, the scheduler, counters, events and the journal, under one lock.

    Every read or write is made with `lock` held (an RLock; `changed` is its condition,
    notified when a job finishes or the engine stops). A key record is the engine's own
    (KeyRecord, or the gateway's GatewayKey): the ledger uses its path, wasm, live_jobs and
    last_used.
    """

    def __init__(self, config, journal, log: logging.Logger):
        self.config = config
        # The job journal (cuzk.serve.journal.Journal) or None: submit records each job in it
        # before returning its id, ending a job records its outcome (not a shutdown's cancel).
        self.journal = journal
        self.log = log
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.sched = Scheduler()
        self.budget = MemoryBudget(config.memory_budget)
        self.keys: dict = {}  # key id -> the engine's key record
        self.jobs: dict[str, JobRecord] = {}
        self.finished = collections.deque()  # job ids in finishing order (history bound)
        self.events: collections.deque = collections.deque(maxlen=EVENTS_KEPT)  # (t, what, ...)
        self.counters = collections.Counter()

    def event(self, what: str, *args) -> None:
        self.events.append((time.time(), what, *args))

    def record_partition(self, job: JobRecord, index: int) -> None:
        """Journal a partition that just finished (done, or failed alone) while others of its
        job are left, so a crash or restart before the job ends does not cost it (the journal
        logs a failed write; the partition is then only proved again after a restart). The
        last one needs no record: the job's outcome, recorded next, holds every proof."""
        if self.journal is not None and job.partitions_left:
            self.journal.partition_done(job.job_id, index, job.partitions[index].record())

    def job(self, job_id: str) -> JobRecord:
        job = self.jobs.get(job_id)
        if job is None:
            raise UnknownJob(job_id)
        return job

    def intake_key(self, key_id: str, circuit: bool):
        """The key a new job names, or raise: unknown, or inputs for a key with no circuit."""
        k = self.keys.get(key_id)
        if k is None:
            raise UnknownKey(key_id)
        if circuit and k.wasm is None:
            raise ValueError(
                f"key {key_id} has no circuit wasm: register it with its wasm "
                "to submit inputs, or submit witnesses"
            )
        return k

    def evictable_key(self, key_id: str):
        """The key evict_key names, or raise: unknown, or used by a live job."""
        k = self.keys.get(key_id)
        if k is None:
            raise UnknownKey(key_id)
        if k.live_jobs:
            raise EngineError(f"key {key_id} is used by {k.live_jobs} live job(s)")
        return k

    def record_end(self, job: JobRecord, state: str, error: str | None, shutdown: bool) -> None:
        """The bookkeeping of a job's end (done, failed, cancelled), once its queued work is
        dropped and its running work told to stop: every partition not done or failed is
        cancelled, the outcome is journalled (not a shutdown's cancel: that job is re-queued
        at the next start), the key's use, counters and event recorded, the history bounded,
        and result() waiters woken."""
        for p in job.partitions:
            if p.state not in ("done", "failed"):
                p.state = "cancelled"  # dropped, or stopped at its next stage boundary
        job.state, job.error, job.finished_at = state, error, time.time()
        job.inputs = []
        if self.journal is not None and not shutdown:
            # A write that fails (a full disk) is held by the journal, served as recorded and
            # retried until it is committed: the job may leave the history below meanwhile.
            try:
                self.journal.finish(job.job_id, state, job.finished_at, job.result())
            except Exception:  # never the end of the thread that finishes jobs
                self.log.exception("job %s: cannot record its outcome in the journal", job.job_id)
        k = self.keys.get(job.key_id)
        if k is not None:
            k.live_jobs -= 1
            k.last_used = job.finished_at
        if state in ("done", "failed"):
            counted = "completed" if state == "done" else "failed"
            self.counters[counted] += 1
            self.counters[(counted, job.kind)] += 1
        self.event(state, job.job_id, -1, -1)
        (self.log.info if state == "done" else self.log.warning)(
            "job %s %s%s", job.job_id, state, f": {error}" if error else ""
        )
        self.finished.append(job.job_id)
        while len(self.finished) > self.config.job_history:
            self.jobs.pop(self.finished.popleft(), None)
        self.changed.notify_all()

    def unfinished(self) -> list[JobRecord]:
        return [j for j in self.jobs.values() if not j.finished]

    def stop_reason(self, reason: str, restarts: str) -> str:
        """The error of a job cut by a stop: with a journal it stays unfinished there and is
        re-queued when the `restarts` ("daemon", "gateway") starts again."""
        if self.journal is not None:
            reason += f"; it stays in the journal and resumes when the {restarts} starts again"
        return reason


class JobAPI:
    """submit, job, jobs, result and cancel of contract.EngineAPI, over `self._books` (a
    JobLedger). A subclass sets `_books` and fills in the hooks below."""

    _books: JobLedger
    _partition_type: type = PartitionRecord  # what a job's partitions are recorded as
    _spool_inputs = True  # a job's uploads are served from the journal's spool files after

    # what tests and the daemon read
    budget = property(lambda self: self._books.budget)  # request bodies are charged to it too
    journal = property(lambda self: self._books.journal)
    events = property(lambda self: self._books.events)  # (t, what, ...), the last EVENTS_KEPT
    counters = property(lambda self: self._books.counters)

    # ---------------------------------------------------------------- hooks
    def _taking_jobs(self) -> bool:
        """Whether new jobs are taken now (lock held)."""
        raise NotImplementedError

    def _check_room(self, k, inputs: list, circuit: bool) -> None:
        """Raise (BudgetError) when one partition of such a job can never fit (lock held)."""

    def _job_inputs(self, items: list, circuit: bool) -> list:
        """The items a job carries, from job_request's (before the journal sees them)."""
        return items

    def _queued(self, job: JobRecord) -> None:
        """A new job is recorded and in the scheduler (lock held)."""

    def _wake(self) -> None:
        """After a change that may let work move (lock released)."""

    def _end_job(self, job: JobRecord, state: str, error: str | None) -> None:
        """Finish a job: stop its work, then JobLedger.record_end (lock held)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- the API
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
        text or bytes), for a key registered with its circuit's wasm; the witness of each is
        computed where the partition is synthesized. Values that are not numbers raise the
        WitnessError (NotANumber) here; what only the circuit can tell (a missing signal, a
        failing assert) fails that partition alone when it runs.

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
            restored[int(i)] = self._partition_type.restored(rec)
        items = self._job_inputs(items, circuit)
        b = self._books
        with b.lock:
            k = self._check_intake(key_id, items, circuit)
            if job_id is None:
                job_id = uuid.uuid4().hex[:16]
            elif job_id in b.jobs:
                raise ValueError(f"job {job_id} already exists")
        wasm = k.wasm if circuit else None
        submitted_at = time.time() if submitted_at is None else float(submitted_at)
        journal = b.journal if not recovered else None
        if journal is not None:  # durable before the id is handed out (fsync: outside the lock)
            spooled = journal.accept(
                job_id, key_id, k.path, kind, priority, submitted_at, items, wasm=wasm
            )
            if self._spool_inputs:
                items = spooled
        with b.lock:
            try:
                self._check_intake(key_id, items, circuit)
            except BaseException:
                if journal is not None:
                    journal.discard(job_id)
                raise
            job = JobRecord(
                job_id,
                key_id,
                kind,
                priority,
                items,
                submitted_at,
                [restored.get(i) or self._partition_type() for i in range(len(items))],
                recovered=recovered,
                wasm=wasm,
            )
            job.n_done = sum(p.state == "done" for p in restored.values())
            job.n_failed = len(restored) - job.n_done
            b.jobs[job_id] = job
            k.live_jobs += 1
            b.sched.add_job(job_id, priority, len(items), skip=restored)
            if recovered:
                b.counters["recovered"] += 1
            b.event("submit", job_id, -1, -1)
            b.log.info(
                "job %s %s: %s, %s, %d partition(s)%s%s",
                job_id,
                "recovered" if recovered else "submitted",
                kind,
                priority,
                len(items),
                f", {len(restored)} finished before the restart" if restored else "",
                " from circuit inputs" if wasm else "",
            )
            self._queued(job)
            if restored and not job.partitions_left:
                self._end_job(job, *job.outcome())  # every partition was finished already
        self._wake()
        return job_id

    def _check_intake(self, key_id: str, inputs: list, circuit: bool):
        """The key of a job of these inputs, or raise unless it may be queued now (lock
        held)."""
        if not self._taking_jobs():
            raise EngineStopped("engine is not taking new jobs")
        k = self._books.intake_key(key_id, circuit)
        self._check_room(k, inputs, circuit)
        return k

    def job(self, job_id: str) -> dict:
        with self._books.lock:
            return self._books.job(job_id).to_dict(detail=True)

    def jobs(self) -> list[dict]:
        with self._books.lock:
            return [j.to_dict(detail=False) for j in self._books.jobs.values()]

    def result(self, job_id: str, timeout: float | None = None) -> dict | None:
        """Wait up to `timeout` seconds (None: forever) for a job to finish. Returns its result
        ({"state", "proofs", "public", "error", ...}, proofs ordered by partition), or None on
        timeout."""
        deadline = None if timeout is None else time.time() + timeout
        b = self._books
        with b.lock:
            job = b.job(job_id)
            while not job.finished:
                left = None if deadline is None else deadline - time.time()
                if left is not None and left <= 0:
                    return None
                b.changed.wait(left if left is not None else 1.0)
            return job.result()

    def cancel(self, job_id: str) -> bool:
        """Cancel a job: queued partitions are dropped at once, running ones at their next stage
        boundary, their reservations and buffers released. False if it had already finished."""
        with self._books.lock:
            job = self._books.job(job_id)
            if job.finished:
                return False
            self._end_job(job, "cancelled", "cancelled by request")
        self._wake()
        return True
