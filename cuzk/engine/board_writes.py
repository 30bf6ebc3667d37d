"""The engine's writes to the status board, in one place (cuzk.board does the bytes).

Children own their slots (ChildStatus): a synthesis process its synthesis slot, a device
process its device-worker slots and its finalizer slots; threads inside a process are
serialised by the board. The supervisor (SupervisorStatus) creates the board, writes the job
table, memory, keys and counters, and reclaims the slots of a process that died (new
generation, so every token the dead process held is stale).

Partition states synthesizing / gpu / finalizing are not written by anyone: the board derives
them from the slot that names the partition, which is why claiming a device slot *is* moving
its partition to gpu, and a finalizer's claim (board.handoff) *is* the move to finalizing.
"""

from __future__ import annotations

import threading
import time

from cuzk.board import Board, Token
from cuzk.board import segment as board_segment

HEARTBEAT_SECS = 1.0


def _ordinal(device: str) -> int:
    try:
        return int(device.split(":")[1])
    except (IndexError, ValueError):
        return 0


class ChildStatus:
    """A child process's handle on the board: its slots and their tokens."""

    def __init__(self, board: Board | None, pid: int):
        self.board = board
        self.pid = pid
        self._slots: list[tuple[str, int]] = []  # (kind, slot) this process owns

    @classmethod
    def attach(cls, name: str | None, pid: int) -> ChildStatus:
        return cls(Board.attach(name) if name else None, pid)

    # -- registration ------------------------------------------------------------------------
    def register_synth(self, slot: int) -> None:
        if self.board:
            self.board.synth.register(slot, self.pid, ordinal=slot, device="")
            self._slots.append(("synth", slot))

    def register_gpu_worker(self, slot: int, device_index: int, device: str) -> None:
        if self.board:
            self.board.devices.register(slot, self.pid, ordinal=_ordinal(device), device=device)
            self._slots.append(("device", slot))

    def register_finalizer(self, slot: int, device_index: int, device: str) -> None:
        if self.board:
            self.board.finalizers.register(slot, self.pid, ordinal=_ordinal(device), device=device)
            self._slots.append(("finalizer", slot))

    def heartbeat_loop(self) -> None:
        while self.board:
            for kind, slot in self._slots:
                self.board.table(kind).heartbeat(slot)
            time.sleep(HEARTBEAT_SECS)

    # -- synthesis ------------------------------------------------------------------------------
    def synth_claim(self, slot: int, job_id: str, partition: int) -> Token | None:
        return self.board.synth.claim(slot, job_id, partition) if self.board else None

    def synth_end(self, token, job_id: str, partition: int, *, ok: bool, synth_ms: float):
        if token is not None:
            self.board.end(token, state="synth_done" if ok else "pending", synth_ms=synth_ms)

    # -- device ---------------------------------------------------------------------------------
    def gpu_claim(self, slot: int, job_id: str, partition: int) -> Token | None:
        """The worker starts kernels on the partition: from this write on it is "gpu"."""
        return self.board.claim_device(slot, job_id, partition) if self.board else None

    def gpu_handoff(self, token, fin_slot: int) -> Token | None:
        """Split proving: one write moves the partition gpu -> finalizing (the finalizer's
        claim), then the worker's slot ends. Slot records only: no control-record lock is
        taken while the next worker waits for the kernels (timings go with the final end)."""
        return self.board.handoff(token, fin_slot) if token is not None else None

    def gpu_end(self, token, *, ok: bool, gpu_ms: float) -> None:
        """prove_start failed: the worker's slot ends, the partition back to synth_done (the
        supervisor then requeues or fails it)."""
        if token is not None:
            self.board.end(token, state="synth_done", gpu_ms=gpu_ms)

    def finish_end(self, token, *, ok: bool, gpu_ms: float, finalize_ms: float) -> None:
        """End a finalizer claim (or, synchronous proving, the worker's own claim)."""
        if token is not None:
            self.board.end(
                token, state="done" if ok else "synth_done", gpu_ms=gpu_ms, finalize_ms=finalize_ms
            )


class SupervisorStatus:
    """The supervisor's handle: board creation, job table, memory, keys, counters, reclaim."""

    def __init__(self, board: Board, cfg):
        self.board = board
        self.name = board.name
        self.cfg = cfg
        self._lock = threading.Lock()
        self._last_memory = None

    @classmethod
    def create(cls, cfg) -> SupervisorStatus:
        board_segment.cleanup_stale()
        if cfg.board_name:  # a name of any spelling, left by a daemon that is gone
            board_segment.free_name(cfg.board_name)
        n_dev = len(cfg.device_names)
        board = Board.create(
            cfg.board_name,
            instance=cfg.instance,
            device_slots=n_dev * cfg.workers_per_device,
            finalizer_slots=n_dev * cfg.finalizers_per_device,
            synth_slots=cfg.synth_workers,
            job_rows=cfg.board_jobs,
            max_partitions=cfg.board_partitions,
            key_rows=cfg.board_keys,
        )
        return cls(board, cfg)

    def close(self) -> None:
        if self.board is not None:
            self.board.unlink()
            self.board.close()
            self.board = None

    def snapshot(self) -> dict:
        if self.board is None:
            raise RuntimeError("the engine is not running")
        return self.board.snapshot().to_dict()

    # -- jobs ------------------------------------------------------------------------------------
    def job_add(self, job) -> None:
        try:
            self.board.control.job_add(
                job.job_id,
                job.kind,
                job.priority,
                len(job.partitions),
                submitted_at=job.submitted_at,
            )
        except ValueError:
            pass  # more partitions than a board record holds: proved, just not shown

    def job_state(self, job) -> None:
        self.board.control.job_set_state(job.job_id, job.state)

    def job_end(self, job) -> None:
        for i, p in enumerate(job.partitions):
            if p.state == "failed":
                self.board.control.partition_set(job.job_id, i, "failed", attempts=p.attempts)
        self.board.control.job_set_state(job.job_id, job.state)
        if job.state == "done":
            self.board.control.count(completed=job.kind)
        elif job.state == "failed":
            self.board.control.count(failed=job.kind)

    def partition(self, job, index: int) -> None:
        p = job.partitions[index]
        stored = p.state if p.state in ("pending", "synth_done", "done", "failed") else None
        self.board.control.partition_set(
            job.job_id,
            index,
            stored,
            attempts=p.attempts,
            synth_ms=p.synth_ms,
            gpu_ms=p.gpu_ms,
            finalize_ms=p.finalize_ms,
        )

    # -- budget, keys, counters -----------------------------------------------------------------
    def set_memory(self, budget) -> None:
        m = (budget.total, budget.reserved, tuple(sorted(budget.by_use().items())))
        if m != self._last_memory:
            self._last_memory = m
            self.board.control.set_memory(m[0], m[1], dict(m[2]))

    def set_keys(self, keys, devices) -> None:
        self.board.control.set_keys(
            [
                {
                    "key_id": k.key_id,
                    "bytes": k.nbytes,
                    "devices": [devices[i].device for i in sorted(k.devices)],
                    "last_used": k.last_used,
                    "evictable": k.live_jobs == 0,
                    "curve": k.curve,
                    "protocol": k.protocol,
                    "table_bytes": k.table_bytes,
                    "tables": k.tables,
                    "load_ms": k.load_ms,
                }
                for k in keys
            ]
        )

    def set_queue_depth(self, n: int) -> None:
        self.board.control.count(queue_depth=int(n))

    def count_retry(self) -> None:
        self.board.control.count(retries=1)

    def count_recovered(self) -> None:
        self.board.control.count(recovered=1)

    def count_restart(self) -> None:
        self.board.control.count(restarts=1)

    def reclaim_process(self, ch) -> None:
        """A child died: every slot it owned gets a new generation and state dead."""
        if ch.role == "synth":
            self.board.synth.reclaim(ch.index)
            return
        w, f = self.cfg.workers_per_device, self.cfg.finalizers_per_device
        for s in range(ch.index * w, (ch.index + 1) * w):
            self.board.devices.reclaim(s)
        for s in range(ch.index * f, (ch.index + 1) * f):
            self.board.finalizers.reclaim(s)
