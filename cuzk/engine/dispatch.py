"""Where work goes and what it holds: placement on processes, the memory budget, key eviction,
retries, and the end of a job.

Called with the engine lock held: by the supervisor thread each turn (dispatch) and on each
message, and by API threads for cancel and evict_key. It sends to children only through the
supervisor's `send`, which never raises (a child that is dying is noticed by its sentinel).

- dispatch: the device queue to devices with free worker capacity first (the device is the
  expensive resource, and proving frees memory), then the synthesis queue to idle synthesis
  processes while the run-ahead bound and the memory budget allow. The head of the synthesis
  queue waits when it does not fit even after evicting idle keys: nothing overtakes it.
- buffers: each partition's segments (in, w, and the prover's buffers, sized from its key)
  are created here before synthesis and unlinked as their stage ends; their bytes are
  reserved in the budget meanwhile.
- outcomes: a failed stage is retried (from the device queue when the buffers are intact,
  else from a new synthesis) or fails its partition and job; ending a job drops what is queued,
  cancels what runs, records the outcome and wakes result() waiters.
"""

from __future__ import annotations

import logging
import time

from cuzk.engine import buffers
from cuzk.engine.books import Books
from cuzk.engine.buffers import BUFFERS_USE
from cuzk.engine.messages import Cancel, EvictKey, Failure, Prove, Synth
from cuzk.engine.records import ChildRecord, JobRecord, KeyRecord, WorkRecord
from cuzk.engine.scheduler import DEVICE_QUEUE, SYNTH_QUEUE, SYNTHESIZING, WorkKey
from cuzk.engine.settings import format_size

log = logging.getLogger("cuzk.engine")


class Dispatcher:
    def __init__(self, books: Books, send):
        self.books = books
        self.send = send  # (ChildRecord, message) -> bool, the supervisor's
        self._seg_seq = 0

    # ---------------------------------------------------------------- placement
    def dispatch(self) -> None:
        b, cfg = self.books, self.books.config
        if b.draining and b.drain_cancelled_at is not None:
            return
        for dev in sorted(b.devices, key=lambda d: d.inflight):
            cap = cfg.workers_per_device + cfg.device_prefetch
            while dev.state == "ready" and dev.inflight < cap:
                wk = b.sched.pop(DEVICE_QUEUE)
                if wk is None:
                    break
                self._send_prove(dev, wk)
        idle = [c for c in b.synth if c.state == "ready" and not c.items]
        while idle:
            ahead = b.sched.count(SYNTHESIZING) + b.sched.count(DEVICE_QUEUE)
            if ahead >= cfg.max_synth_ahead:
                break
            head = b.sched.peek(SYNTH_QUEUE)
            if head is None:
                break
            job, _ = b.job_of(head)
            k = b.keys[job.key_id]
            src = job.inputs[head.partition]
            parts = {BUFFERS_USE: k.buffer_bytes, "witness": k.partition_bytes - k.buffer_bytes}
            if isinstance(src, bytes):
                parts["input"] = len(src)
            if job.wasm is not None:  # the synthesis process's calculator instance
                parts["wasm"] = k.wasm_bytes
            need = sum(parts.values()) + (0 if k.charged else k.nbytes)
            if not b.budget.fits(need):
                self.make_room(need, exclude=k.key_id)
            if not b.budget.fits(need):
                b.counters["budget_waits"] += 1
                b.budget.waiting = True  # any release (an upload's too) wakes the supervisor
                break  # head of line waits for memory; nothing overtakes it
            if not k.charged:
                b.budget.try_reserve(("key", k.key_id), {"keys": k.nbytes})
                k.charged = True
            wk = b.sched.pop(SYNTH_QUEUE)
            assert wk == head
            self._send_synth(idle.pop(0), wk, job, k, parts)
        b.status.set_memory(b.budget)
        b.publish_queue()

    def _seg(self, wk: WorkKey, use: str) -> str:
        self._seg_seq += 1
        return buffers.segment_name(
            f"{wk.job_id}.{wk.partition}.{wk.attempt}.{use}.{self._seg_seq}", self.books.pid
        )

    def _send_synth(
        self, ch: ChildRecord, wk: WorkKey, job: JobRecord, k: KeyRecord, parts: dict
    ) -> None:
        b = self.books
        w = b.works[wk] = WorkRecord(wk, child=ch)
        b.budget.try_reserve(w.owner, parts)
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
            buffers.Segment.create(w.segs["witness"], k.witness_bytes).close()
            w.segs[BUFFERS_USE] = self._seg(wk, "buf")
            buffers.Segment.create(w.segs[BUFFERS_USE], k.buffer_bytes).close()
        except OSError as exc:  # /dev/shm full: fail this partition, not the engine
            log.error("cannot create shared-memory buffers: %s", exc)
            self.fail_stage(wk, f"shared memory: {exc}", retry=False, to_device=False)
            return
        p = job.partitions[wk.partition]
        p.attempts, p.state = wk.attempt + 1, "synthesizing"
        if job.state == "queued":
            job.state, job.started_at = "running", time.time()
            b.status.job_state(job)
        b.status.partition(job, wk.partition)
        ch.items.add(wk)
        b.event("synth", wk.job_id, wk.partition, wk.attempt, ch.index)
        self.send(
            ch,
            Synth(wk, k.path, source, w.segs["witness"], w.segs[BUFFERS_USE], job.wasm, k.key_id),
        )

    def _send_prove(self, dev: ChildRecord, wk: WorkKey) -> None:
        b = self.books
        job, p = b.job_of(wk)
        k = b.keys[job.key_id]
        w = b.works[wk]
        w.child = dev
        k.last_used = time.time()
        dev.items.add(wk)
        dev.inflight += 1
        p.device, p.attempts = dev.index, wk.attempt + 1
        b.event("prove", wk.job_id, wk.partition, wk.attempt, dev.index)
        self.send(dev, Prove(wk, k.key_id, k.path, w.segs["witness"], w.segs[BUFFERS_USE]))

    # ---------------------------------------------------------------- buffers and budget
    def free_part(self, wk: WorkKey, use: str) -> None:
        """Release one part of what a work item holds (its segment and reservation)."""
        b = self.books
        w = b.works.get(wk)
        if w is None:
            return
        name = w.segs.pop(use, None)
        if name:
            buffers.unlink(name)
        b.budget.release(w.owner, use)
        b.status.set_memory(b.budget)

    def free_work(self, wk: WorkKey) -> None:
        """Release everything a work item holds (idempotent)."""
        b = self.books
        w = b.works.pop(wk, None)
        if w is None:
            return
        for name in w.segs.values():
            buffers.unlink(name)
        w.segs.clear()
        b.budget.release(w.owner)
        b.status.set_memory(b.budget)

    def make_room(self, need: int, exclude: str) -> None:
        """Evict idle keys, least recently used first, until `need` bytes fit."""
        b = self.books
        idle = sorted(
            (k for k in b.keys.values() if k.charged and not k.live_jobs and k.key_id != exclude),
            key=lambda k: k.last_used,
        )
        for k in idle:
            if b.budget.fits(need):
                return
            log.info("key %s evicted to make room (%s needed)", k.key_id, format_size(need))
            self.evict(k)

    def evict(self, k: KeyRecord) -> None:
        """Drop a key from every device and release its budget charge."""
        b = self.books
        for dev in b.devices:
            if dev.index in k.devices and dev.state == "ready":
                self.send(dev, EvictKey(k.key_id))
        k.devices.clear()
        if k.charged:
            b.budget.release(("key", k.key_id))
            k.charged = False
        if b.status is not None:
            b.status.set_memory(b.budget)
        b.publish_keys()

    # ---------------------------------------------------------------- outcomes
    def fail_stage(
        self,
        wk: WorkKey,
        reason: str,
        *,
        retry: bool,
        to_device: bool,
        failure: Failure | None = None,
        alone: bool = False,
    ) -> None:
        """A stage of `wk` failed: retry it (to the device queue when `to_device`, else from a
        new synthesis) while attempts are left and `retry`, else fail its job — or only the
        partition, when `alone` (an input the circuit rejects)."""
        b = self.books
        job, p = b.job_of(wk)
        if failure is not None and failure.traceback and not alone:  # an input's fault
            log.warning(
                "job %s partition %d attempt %d failed: %s\n%s",
                wk.job_id,
                wk.partition,
                wk.attempt,
                reason,
                failure.traceback,
            )
        else:
            log.warning(
                "job %s partition %d attempt %d failed: %s",
                wk.job_id,
                wk.partition,
                wk.attempt,
                reason,
            )
        p.error = reason
        if alone or not retry or wk.attempt + 1 >= b.config.max_attempts:
            b.sched.give_up(wk)
            self.free_work(wk)
            p.state = "failed"
            b.status.partition(job, wk.partition)
            if alone:  # this partition fails, the rest of the job goes on
                job.n_failed += 1
                b.record_partition(job, wk.partition)
                self.settle(job)
            else:
                n = wk.attempt + 1
                self.end_job(
                    job,
                    "failed",
                    f"partition {wk.partition} failed after {n} "
                    f"attempt{'s' if n > 1 else ''}: {reason}",
                )
            return
        b.counters["retries"] += 1
        b.status.count_retry()
        new = b.sched.retry(wk, DEVICE_QUEUE if to_device else SYNTH_QUEUE)
        w = b.works.pop(wk, None)
        if to_device and w is not None:
            w.wk, w.child = new, None
            b.works[new] = w
            p.state = "synth_done"
        else:
            if w is not None:
                b.works[wk] = w
                self.free_work(wk)
            p.state = "pending"
        b.status.partition(job, wk.partition)
        b.event("retry", wk.job_id, wk.partition, new.attempt)

    def settle(self, job: JobRecord) -> None:
        """End a job whose every partition is done or failed alone."""
        if not job.partitions_left:
            self.end_job(job, *job.outcome())

    def end_job(
        self, job: JobRecord, state: str, error: str | None, *, shutdown: bool = False
    ) -> None:
        """Finish a job (done, failed, cancelled): drop what is still queued, stop what runs at
        its next stage boundary, then the ledger's bookkeeping (JobLedger.record_end: the
        outcome, counters, result() waiters) and the board. A job cancelled because the engine
        stops (`shutdown`) is not finished in the journal: it is re-queued at the next start."""
        b = self.books
        queued, running = b.sched.drop_job(job.job_id)
        for wk in queued:
            self.free_work(wk)  # device-queued items hold segments and a reservation
        if running:
            for dev in b.devices:
                if any(wk.job_id == job.job_id for wk in dev.items):
                    self.send(dev, Cancel(job.job_id))
        b.record_end(job, state, error, shutdown)
        b.status.job_end(job)
        b.publish_keys()
        b.publish_queue()

    def cancel_unfinished(self, reason: str) -> None:
        """The engine stops: cancel every live job, unfinished in the journal (it resumes when
        the daemon starts again)."""
        b = self.books
        reason = b.stop_reason(reason, "daemon")
        for job in b.unfinished():
            self.end_job(job, "cancelled", reason, shutdown=True)
