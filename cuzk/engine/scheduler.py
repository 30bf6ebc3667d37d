"""The scheduler: which partition is synthesized next and which goes to a device next.

Work items are keyed by (job_id, partition, attempt) — a whole job is simply a job of one
partition, so a whole job and a partition can never share a key (Rust cuzk keyed both as
(0, 0) and one silently replaced the other). Every partition of a live job is in exactly one
place at any time:

    SYNTH_QUEUE --pop--> SYNTHESIZING --synthesized--> DEVICE_QUEUE --pop--> PROVING --> done
         ^                    |                             ^                  |
         +------ retry -------+-----------------------------+---- retry -------+

Order within a queue: priority (critical > high > normal), then job submission order, then
partition index, so among partitioned jobs the oldest job's lowest partition goes first, and a
retried partition keeps its place. Pure bookkeeping: no processes, no clocks; the supervisor
thread is the only caller, so there is no lock.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from dataclasses import dataclass

from cuzk.board.layout import PRIORITIES, check_priority

SYNTH_QUEUE = "synth_queue"
SYNTHESIZING = "synthesizing"
DEVICE_QUEUE = "device_queue"
PROVING = "proving"  # on a device: prove_start, then prove_finish
PLACES = (SYNTH_QUEUE, SYNTHESIZING, DEVICE_QUEUE, PROVING)


@dataclass(frozen=True, order=True)
class WorkKey:
    """One attempt at one partition of one job; unique across the engine's lifetime."""

    job_id: str
    partition: int
    attempt: int


class SchedulerError(RuntimeError):
    """A caller broke the scheduler's protocol (a bug in the supervisor, never user input)."""


class Scheduler:
    """Queues and placement of every live work item (see the module docstring)."""

    def __init__(self):
        self._seq = itertools.count()
        self._jobs: dict[str, tuple[int, int, int]] = {}  # job_id -> (rank, seq, n_partitions)
        self._where: dict[WorkKey, str] = {}  # live item -> place
        self._by_partition: dict[tuple[str, int], WorkKey] = {}  # (job, partition) -> live item
        self._heaps: dict[str, list] = {SYNTH_QUEUE: [], DEVICE_QUEUE: []}  # lazy deletion
        self._counts: collections.Counter = collections.Counter()  # place -> live items

    # -- jobs ---------------------------------------------------------------------------
    def add_job(self, job_id: str, priority: str, n_partitions: int, skip=()) -> list[WorkKey]:
        """Queue every partition of a new job for synthesis (attempt 0), but those in `skip`
        (already proved before a restart)."""
        if job_id in self._jobs:
            raise SchedulerError(f"job {job_id} already scheduled")
        check_priority(priority)
        if n_partitions < 1:
            raise ValueError("a job needs at least one partition")
        self._jobs[job_id] = (PRIORITIES.index(priority), next(self._seq), n_partitions)
        keys = [WorkKey(job_id, p, 0) for p in range(n_partitions) if p not in skip]
        for k in keys:
            self._place_new(k, SYNTH_QUEUE)
        return keys

    def drop_job(self, job_id: str) -> tuple[list[WorkKey], list[WorkKey]]:
        """Forget a job (cancelled, failed or finished): returns (queued items removed, items
        still running in a process). The caller releases what the running ones hold when they
        report at their next stage boundary."""
        queued, running = [], []
        info = self._jobs.pop(job_id, None)
        if info is None:
            return queued, running
        for p in range(info[2]):
            k = self._by_partition.pop((job_id, p), None)
            if k is None:
                continue
            place = self._where.pop(k)
            self._counts[place] -= 1
            (queued if place in (SYNTH_QUEUE, DEVICE_QUEUE) else running).append(k)
        return queued, running

    def has_job(self, job_id: str) -> bool:
        return job_id in self._jobs

    # -- items ----------------------------------------------------------------------------
    def place(self, key: WorkKey) -> str | None:
        """Where a live item is, or None when it is not live (finished, dropped, superseded)."""
        return self._where.get(key)

    def live(self, job_id: str, partition: int) -> WorkKey | None:
        return self._by_partition.get((job_id, partition))

    def pop(self, queue: str, accept=None) -> WorkKey | None:
        """Take the first item of a queue (SYNTH_QUEUE -> SYNTHESIZING, DEVICE_QUEUE -> PROVING).

        `accept(key) -> bool` may skip items (left queued, order kept)."""
        heap = self._heaps[queue]
        skipped = []
        found = None
        while heap:
            entry = heapq.heappop(heap)
            k = entry[-1]
            if self._where.get(k) != queue:
                continue  # stale: dropped or moved since it was pushed
            if accept is not None and not accept(k):
                skipped.append(entry)
                continue
            found = k
            break
        for entry in skipped:
            heapq.heappush(heap, entry)
        if found is not None:
            self._set(found, SYNTHESIZING if queue == SYNTH_QUEUE else PROVING)
        return found

    def peek(self, queue: str) -> WorkKey | None:
        heap = self._heaps[queue]
        while heap and self._where.get(heap[0][-1]) != queue:
            heapq.heappop(heap)
        return heap[0][-1] if heap else None

    def synthesized(self, key: WorkKey) -> None:
        """SYNTHESIZING -> DEVICE_QUEUE."""
        self._move(key, SYNTHESIZING, DEVICE_QUEUE)

    def unpop(self, key: WorkKey) -> None:
        """Put an item taken by pop() back in its queue (dispatch could not happen)."""
        place = self._where.get(key)
        if place == SYNTHESIZING:
            self._move(key, SYNTHESIZING, SYNTH_QUEUE)
        elif place == PROVING:
            self._move(key, PROVING, DEVICE_QUEUE)
        else:
            raise SchedulerError(f"{key} is {place}, not running")

    def complete(self, key: WorkKey) -> None:
        """PROVING -> done: the item leaves the scheduler."""
        if self._where.get(key) != PROVING:
            raise SchedulerError(f"{key} completed while {self._where.get(key)}")
        self._remove(key)
        del self._by_partition[(key.job_id, key.partition)]

    def retry(self, key: WorkKey, to: str = SYNTH_QUEUE) -> WorkKey:
        """A running item failed and gets another attempt: it is replaced by (attempt + 1) in
        queue `to` (DEVICE_QUEUE when its synthesis output is still intact)."""
        place = self._where.get(key)
        if place not in (SYNTHESIZING, PROVING):
            raise SchedulerError(f"{key} retried while {place}")
        self._remove(key)
        new = WorkKey(key.job_id, key.partition, key.attempt + 1)
        del self._by_partition[(key.job_id, key.partition)]
        self._place_new(new, to)
        return new

    def give_up(self, key: WorkKey) -> None:
        """A running item failed for the last time: it leaves the scheduler (the job fails)."""
        if self._where.get(key) not in (SYNTHESIZING, PROVING):
            raise SchedulerError(f"{key} given up while {self._where.get(key)}")
        self._remove(key)
        del self._by_partition[(key.job_id, key.partition)]

    # -- views ------------------------------------------------------------------------------
    def count(self, place: str) -> int:
        return self._counts[place]

    def queue_depth(self) -> int:
        """Partitions waiting in either queue."""
        return self._counts[SYNTH_QUEUE] + self._counts[DEVICE_QUEUE]

    def items(self) -> dict[WorkKey, str]:
        return dict(self._where)

    # -- internals ------------------------------------------------------------------------
    def _order(self, key: WorkKey) -> tuple:
        rank, seq, _ = self._jobs[key.job_id]
        return (rank, seq, key.partition, key.attempt, key)

    def _place_new(self, key: WorkKey, place: str) -> None:
        if key in self._where or (key.job_id, key.partition) in self._by_partition:
            raise SchedulerError(f"{key} is already live")  # the Rust cuzk (0,0) collision
        self._set(key, place)
        self._by_partition[(key.job_id, key.partition)] = key
        if place in self._heaps:
            heapq.heappush(self._heaps[place], self._order(key))

    def _move(self, key: WorkKey, src: str, dst: str) -> None:
        if self._where.get(key) != src:
            raise SchedulerError(f"{key} is {self._where.get(key)}, expected {src}")
        self._set(key, dst)
        if dst in self._heaps:
            heapq.heappush(self._heaps[dst], self._order(key))

    def _set(self, key: WorkKey, place: str) -> None:
        old = self._where.get(key)
        if old is not None:
            self._counts[old] -= 1
        self._where[key] = place
        self._counts[place] += 1

    def _remove(self, key: WorkKey) -> None:
        self._counts[self._where.pop(key)] -= 1
