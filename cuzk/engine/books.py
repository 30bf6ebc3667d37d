"""The local engine's books: the job ledger plus its work items, child processes and board.

API threads and the supervisor thread share the Books: every read or write of a record is
made with `books.lock` held (an RLock; `books.changed` is its condition, notified when a job
finishes or the engine stops).
"""

from __future__ import annotations

import logging
import os

from cuzk.engine.jobs import JobLedger
from cuzk.engine.records import ChildRecord, JobRecord, KeyRecord, PartitionRecord, WorkRecord
from cuzk.engine.scheduler import WorkKey

log = logging.getLogger("cuzk.engine")


class Books(JobLedger):
    """The ledger's keys, jobs, scheduler, budget, counters and events, plus every work item,
    every child process, the board handle and the drain state."""

    keys: dict[str, KeyRecord]

    def __init__(self, config, journal):
        super().__init__(config, journal, log)
        self.works: dict[WorkKey, WorkRecord] = {}
        self.synth: list[ChildRecord] = []
        self.devices: list[ChildRecord] = []
        self.status = None  # SupervisorStatus, from start-up to teardown
        self.draining = False
        self.drain_deadline = 0.0
        self.drain_cancelled_at: float | None = None  # when draining cancelled what was left
        self.pid = os.getpid()
        self._last_depth = -1

    @property
    def children(self) -> list[ChildRecord]:
        return self.synth + self.devices

    def job_of(self, wk: WorkKey) -> tuple[JobRecord | None, PartitionRecord | None]:
        job = self.jobs.get(wk.job_id)
        return (job, job.partitions[wk.partition]) if job else (None, None)

    def publish_queue(self) -> None:
        if self.status is not None:
            depth = self.sched.queue_depth()
            if depth != self._last_depth:
                self._last_depth = depth
                self.status.set_queue_depth(depth)

    def publish_keys(self) -> None:
        if self.status is not None:
            self.status.set_keys(self.keys.values(), self.devices)
