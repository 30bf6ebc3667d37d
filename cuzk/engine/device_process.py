"""A device process: proves partitions on one device (a GPU, or a CPU-backed device).

    supervisor --prove--> inbox --> worker loops (workers_per_device) --> finalizer threads
                                     | kernel lock: prove_start           | prove_finish
                                     v                                    v
                             "started" (buffers freed)            "done" (proof JSON)

- Main thread: reads commands (prove, cancel a job, load/evict a key, ping, stop). A dead
  supervisor ends the process (child.py).
- Worker loops: take the next partition, attach its shared-memory buffers, make its key
  resident, then take the kernel lock (the interlock: while one worker runs kernels the
  other has its partition ready, so the device idles only for a lock handoff), claim the
  worker's board slot together with the partition's "gpu" state (one board operation, so no
  consistent snapshot shows one without the other), run prove_start, and — split proving —
  move the partition to "finalizing" as the slot ends, hand it to the finalizers and loop.
  With CUZK_DISABLE_SPLIT_PROVE=1 the worker runs prove_finish itself after releasing the
  kernel lock, keeping its slot and the partition in "gpu" until the proof is done.
- Finalizer threads, one per finalizer slot: the worker hands a partition to a free one
  (board.handoff: the finalizer's claim is the one write that moves the partition from "gpu"
  to "finalizing"); it runs prove_finish (and self-verification when configured), ends its
  slot with the partition "done", reports. When every finalizer is busy the worker waits for
  one after releasing the kernel lock, which bounds the partitions in flight.
Every path that claims a slot ends it through its own generation token, including failures
and partitions of cancelled jobs skipped at a stage boundary.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import time

from cuzk.engine import child
from cuzk.engine.buffers import Layout, Segment
from cuzk.engine.messages import (
    Cancel,
    Done,
    Dropped,
    EvictKey,
    Failed,
    Failure,
    KeyEvicted,
    KeyLoaded,
    Prove,
    Started,
    TablesReady,
)
from cuzk.formats.errors import FormatError


class ProofRejected(RuntimeError):
    """Self-verification rejected a proof: the witness does not satisfy the key's circuit.
    Deterministic, so the partition fails at once instead of being retried."""


def permanent(exc: BaseException) -> bool:
    """A failure that cannot change on retry: a rejected proof, an unusable key file."""
    return isinstance(exc, (ProofRejected, FormatError))


class _Item:
    """One partition inside this process: its Prove message, mapped buffers, timings."""

    __slots__ = ("msg", "work", "key", "wseg", "bufseg", "partial", "gpu_ms", "t_start", "t_end")

    def __init__(self, msg: Prove):
        self.msg = msg
        self.work = msg.work
        self.key = None
        self.wseg = self.bufseg = None
        self.partial = None
        self.gpu_ms = 0.0
        self.t_start = self.t_end = 0.0

    def close(self):
        for s in (self.bufseg, self.wseg):
            if s is not None:
                s.close()
        self.wseg = self.bufseg = None


def visible_only(device_name: str) -> str:
    """Make this process see one GPU (before CUDA is initialised) and return the name to open.

    A CUDA context is current per thread, and a thread without one gets GPU 0: our worker and
    finalizer threads would run "cuda:1"'s kernels on GPU 0. With CUDA_VISIBLE_DEVICES naming
    only our GPU, every thread's default device is the right one. An existing
    CUDA_VISIBLE_DEVICES list is honoured (ordinal i is its i-th entry)."""
    kind, _, ordinal = device_name.partition(":")
    if kind != "cuda":
        return device_name
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    n = int(ordinal or 0)
    os.environ["CUDA_VISIBLE_DEVICES"] = visible[n].strip() if n < len(visible) else str(n)
    return "cuda:0"


def device_main(conn, parent_pid: int, device_index: int, device_name: str, opts: dict) -> None:
    """The process's entry point (spawn target)."""
    child.tie_to_parent(parent_pid)
    open_name = visible_only(device_name)  # before anything initialises CUDA
    DeviceProcess(conn, device_index, device_name, open_name, opts).run()


class DeviceProcess(child.ChildProcess):
    """One device: its worker loops, finalizer threads, resident keys (see the module doc)."""

    def __init__(self, conn, device_index: int, device_name: str, open_name: str, opts: dict):
        super().__init__(conn, opts, device=device_name)
        self.device_name = device_name
        n_workers, n_fin = opts["workers_per_device"], opts["finalizers_per_device"]
        self.split = opts["split_prove"]
        self.self_verify = opts.get("self_verify", False)
        self.worker_slots = [device_index * n_workers + j for j in range(n_workers)]
        self.fin_slots = [device_index * n_fin + j for j in range(n_fin)]
        for s in self.worker_slots:
            self.status.register_gpu_worker(s, device_index, device_name)
        for s in self.fin_slots:
            self.status.register_finalizer(s, device_index, device_name)
        self.dev = self.prover.open_device(open_name)
        self.keys: dict[str, object] = {}  # key_id -> ProvingKey resident on this device
        self.layouts: dict[str, Layout] = {}  # key_id -> Layout of the key's buffers
        self.key_lock = threading.Lock()
        self.kernel_lock = threading.Lock()
        self.inbox: queue.Queue = queue.Queue()
        self.free_fin: queue.Queue = queue.Queue()  # finalizer slots whose thread is free
        self.fin_inbox = {s: queue.Queue(maxsize=1) for s in self.fin_slots}
        for s in self.fin_slots:
            self.free_fin.put(s)
        self.cancelled: set[str] = set()  # job ids; read at every stage boundary
        self.verifiers: dict[str, object] = {}

    def threads(self) -> list[tuple]:
        return [(functools.partial(self._worker, s), f"worker-{s}") for s in self.worker_slots] + [
            (functools.partial(self._finalizer, s), f"finalizer-{s}") for s in self.fin_slots
        ]

    def handle(self, msg) -> None:
        match msg:
            case Prove():
                self.inbox.put(msg)
            case Cancel(job_id):
                self.cancelled.add(job_id)
            case EvictKey(key_id):
                with self.key_lock:
                    if self.keys.pop(key_id, None) is not None:
                        self.dev.evict_key(key_id)
                self.chan.send(KeyEvicted(key_id))

    def _verifier(self, key):
        """proof -> bool for one key, its verification key built once."""
        v = self.verifiers.get(key.key_id)
        if v is None:
            vk, verify = key.verification_key(), self.prover.verify
            v = self.verifiers[key.key_id] = lambda proof: verify(vk, proof.public, proof)
        return v

    def _resident_key(self, msg: Prove):
        with self.key_lock:
            key = self.keys.get(msg.key_id)
            if key is not None and not child.key_is_current(key):  # its file changed: again
                del self.keys[msg.key_id]
                self.dev.evict_key(msg.key_id)
                key = None
            if key is None:
                key = self.prover.ProvingKey.open(msg.key_path)
                child.check_key_id(key, msg.key_id, msg.key_path)
                self.layouts[key.key_id] = Layout(key.buffers())
                t0 = time.time()
                pending = self.dev.load_key(key)  # (None, or its tables still building)
                self.keys[key.key_id] = key
                self.chan.send(
                    KeyLoaded(
                        key.key_id,
                        int(self.dev.resident_bytes(key.key_id)),
                        (time.time() - t0) * 1e3,
                        pending is not None,
                    )
                )
                if pending is not None:
                    threading.Thread(
                        target=self._tables_ready,
                        args=(key.key_id, pending, t0),
                        name=f"tables-ready-{key.key_id}",
                        daemon=True,
                    ).start()
            return key

    def _tables_ready(self, key_id: str, pending, t0: float) -> None:
        """Tell the supervisor when a key's tables, built beside its proofs (the device's
        load_key returned ``pending``: cuzk.engine.contract), are in place or given up."""
        ok = bool(pending.wait())
        self.chan.send(TablesReady(key_id, ok, (time.time() - t0) * 1e3))

    def _fail(self, item: _Item, stage: str, exc: BaseException, buffers_intact=False) -> None:
        """Report a failed stage. `buffers_intact`: prove_start never ran on this item, so its
        buffers segment still holds what synthesize wrote and the supervisor may send the
        retry straight back to a device (prove_start may overwrite the buffers in place)."""
        item.close()
        self.chan.send(Failed(item.work, stage, buffers_intact, permanent(exc), Failure.of(exc)))

    def _drop(self, item: _Item, stage: str) -> None:
        item.close()
        self.chan.send(Dropped(item.work, stage))

    def _finish(self, item: _Item, token) -> None:
        """prove_finish (+ verify); ends `token` (a finalizer's or, synchronous, the worker's)."""
        status = self.status
        t0 = time.time()
        if item.work.job_id in self.cancelled:
            status.finish_end(token, ok=False, gpu_ms=item.gpu_ms, finalize_ms=0.0)
            self._drop(item, "finish")
            return
        try:
            w = item.wseg.array(*item.key.witness_buffer())
            proof = self.prover.prove_finish(item.key, item.partial, w)
            del w
            if self.self_verify and not self._verifier(item.key)(proof):
                raise ProofRejected(
                    "self-verification rejected the proof: the witness does "
                    "not satisfy the key's circuit"
                )
            proof_json = proof.to_json()
            public = [str(x) for x in proof.public]
        except Exception as exc:
            ms = (time.time() - t0) * 1e3
            status.finish_end(token, ok=False, gpu_ms=item.gpu_ms, finalize_ms=ms)
            self._fail(item, "finish", exc)
            return
        ms = (time.time() - t0) * 1e3
        status.finish_end(token, ok=True, gpu_ms=item.gpu_ms, finalize_ms=ms)
        item.close()
        self.chan.send(
            Done(item.work, proof_json, public, item.gpu_ms, ms, item.t_start, item.t_end)
        )

    def _worker(self, slot: int) -> None:
        while True:
            self._prove_one(slot, _Item(self.inbox.get()))

    def _prove_one(self, slot: int, item: _Item) -> None:
        status, wk = self.status, item.work
        if wk.job_id in self.cancelled:
            self._drop(item, "start")
            return
        try:
            item.key = self._resident_key(item.msg)
            item.wseg = Segment.attach(item.msg.w)
            item.bufseg = Segment.attach(item.msg.buffers)
            bufs = self.layouts[item.key.key_id].views(item.bufseg)
            w = item.wseg.array(*item.key.witness_buffer())
        except Exception as exc:
            self._fail(item, "start", exc, buffers_intact=True)  # before prove_start
            return
        fin_slot = fin_token = None
        with self.kernel_lock:
            if wk.job_id in self.cancelled:  # cancelled while waiting for the device
                del bufs, w
                self._drop(item, "start")
                return
            token = status.gpu_claim(slot, wk.job_id, wk.partition)
            item.t_start = time.time()
            try:
                item.partial = self.prover.prove_start(item.key, bufs, w, self.dev)
            except Exception as exc:
                item.t_end = time.time()
                status.gpu_end(token, ok=False, gpu_ms=(item.t_end - item.t_start) * 1e3)
                del bufs, w
                self._fail(item, "start", exc)  # the buffers may be overwritten already
                return
            item.t_end = time.time()
            item.gpu_ms = (item.t_end - item.t_start) * 1e3
            if self.split:
                try:  # a free finalizer now: hand over before the next worker starts
                    fin_slot = self.free_fin.get_nowait()
                    fin_token = status.gpu_handoff(token, fin_slot)
                except queue.Empty:
                    pass
        del bufs, w
        item.bufseg.close()
        item.bufseg = None
        self.chan.send(Started(wk, item.gpu_ms, item.t_start, item.t_end))
        if not self.split:
            self._finish(item, token)
            return
        if fin_slot is None:  # every finalizer busy: wait for one (kernels are not held)
            fin_slot = self.free_fin.get()
            fin_token = status.gpu_handoff(token, fin_slot)
        self.fin_inbox[fin_slot].put((item, fin_token))

    def _finalizer(self, fin_slot: int) -> None:
        while True:
            item, token = self.fin_inbox[fin_slot].get()
            try:
                self._finish(item, token)
            finally:
                self.free_fin.put(fin_slot)
