"""A device process: proves partitions on one device (a GPU, or a CPU-backed device).

    supervisor --prove--> inbox --> worker loops (workers_per_device) --> finalizer threads
                                     | kernel lock: prove_start           | prove_finish
                                     v                                    v
                             "started" (a,b,c freed)              "done" (proof JSON)

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

import os
import queue
import threading
import time

from cuzk.engine import child
from cuzk.engine.buffers import Segment
from cuzk.engine.status import ChildStatus
from cuzk.formats.errors import FormatError


class ProofRejected(RuntimeError):
    """Self-verification rejected a proof: the witness does not satisfy the key's circuit.
    Deterministic, so the partition fails at once instead of being retried."""


def permanent(exc: BaseException) -> bool:
    """A failure that cannot change on retry: a rejected proof, an unusable key file."""
    return isinstance(exc, (ProofRejected, FormatError))


class _Item:
    """One partition inside this process: its spec, mapped buffers, timings."""

    __slots__ = ("spec", "work", "key", "wseg", "abcseg", "partial", "gpu_ms", "t_start", "t_end")

    def __init__(self, spec):
        self.spec = spec
        self.work = tuple(spec["work"])
        self.key = None
        self.wseg = self.abcseg = None
        self.partial = None
        self.gpu_ms = 0.0
        self.t_start = self.t_end = 0.0

    def close(self):
        for s in (self.abcseg, self.wseg):
            if s is not None:
                s.close()
        self.wseg = self.abcseg = None


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
    child.tie_to_parent(parent_pid)
    open_name = visible_only(device_name)
    child.setup_logging(opts.get("log_level", 30))
    chan = child.Channel(conn)
    prover = child.load_prover(opts["prover"], opts.get("prover_options"))
    status = ChildStatus.attach(opts.get("board_name"), pid=os.getpid())
    n_workers = opts["workers_per_device"]
    n_fin = opts["finalizers_per_device"]
    split = opts["split_prove"]
    self_verify = opts.get("self_verify", False)
    worker_slots = [device_index * n_workers + j for j in range(n_workers)]
    fin_slots = [device_index * n_fin + j for j in range(n_fin)]
    for s in worker_slots:
        status.register_gpu_worker(s, device_index, device_name)
    for s in fin_slots:
        status.register_finalizer(s, device_index, device_name)

    dev = prover.open_device(open_name)
    keys: dict[str, object] = {}  # key_id -> ProvingKey resident on this device
    key_lock = threading.Lock()
    kernel_lock = threading.Lock()
    inbox: queue.Queue = queue.Queue()
    free_fin: queue.Queue = queue.Queue()  # finalizer slots whose thread is free
    fin_inbox = {s: queue.Queue(maxsize=1) for s in fin_slots}
    for s in fin_slots:
        free_fin.put(s)
    cancelled: set[str] = set()  # job ids; read at every stage boundary
    verifiers: dict[str, object] = {}

    def verifier(key):
        """proof -> bool for one key: the prover's own verify() when its keys carry their
        verification key (the double), else cuzk.prover.verify with the verifying key read from the
        mapped zkey (built once per key)."""
        v = verifiers.get(key.key_id)
        if v is None:
            if hasattr(prover, "verify") and hasattr(key, "verification_key"):
                vk = key.verification_key()
                v = lambda proof: prover.verify(vk, proof.public, proof)  # noqa: E731
            else:
                from cuzk.prover import verify as V

                vk = V.VerifyingKey.from_zkey(key.zkey)
                v = lambda proof: V.verify(vk, proof.public, proof.to_json())  # noqa: E731
            verifiers[key.key_id] = v
        return v

    def resident_key(spec):
        with key_lock:
            key = keys.get(spec["key_id"])
            if key is None:
                key = prover.ProvingKey.open(spec["key_path"])
                t0 = time.time()
                dev.load_key(key)
                keys[key.key_id] = key
                chan.send(("key_loaded", key.key_id, {"bytes": int(dev.resident_bytes(key.key_id)),
                                                      "load_ms": (time.time() - t0) * 1e3}))
            return key

    def fail(item, stage, exc, abc_intact=False):
        """Report a failed stage. `abc_intact`: prove_start never ran on this item, so its
        abc segment still holds a, b, c and the supervisor may send the retry straight back to
        a device (prove_start overwrites a, b, c in place)."""
        item.close()
        chan.send(("failed", item.work, {"stage": stage, "abc_intact": abc_intact,
                                         "permanent": permanent(exc),
                                         **child.describe_exception(exc)}))

    def finish(item, token):
        """prove_finish (+ verify); ends `token` (a finalizer's or, synchronous, the worker's)."""
        job_id, part, _ = item.work
        t0 = time.time()
        if job_id in cancelled:
            status.finish_end(token, ok=False, gpu_ms=item.gpu_ms, finalize_ms=0.0)
            item.close()
            chan.send(("dropped", item.work, {"stage": "finish"}))
            return
        try:
            w = item.wseg.array((item.key.n_vars, 4))
            proof = prover.prove_finish(item.key, item.partial, w)
            del w
            if self_verify and not verifier(item.key)(proof):
                raise ProofRejected("self-verification rejected the proof: the witness does "
                                    "not satisfy the key's circuit")
            proof_json = proof.to_json()
            public = [str(x) for x in proof.public]
        except Exception as exc:
            ms = (time.time() - t0) * 1e3
            status.finish_end(token, ok=False, gpu_ms=item.gpu_ms, finalize_ms=ms)
            fail(item, "finish", exc)
            return
        ms = (time.time() - t0) * 1e3
        status.finish_end(token, ok=True, gpu_ms=item.gpu_ms, finalize_ms=ms)
        item.close()
        chan.send(("done", item.work, {"proof": proof_json, "public": public,
                                       "gpu_ms": item.gpu_ms, "finalize_ms": ms,
                                       "t_start": item.t_start, "t_end": item.t_end}))

    def worker(slot: int) -> None:
        while True:
            spec = inbox.get()
            if spec is None:
                return
            item = _Item(spec)
            job_id, part, _ = item.work
            if job_id in cancelled:
                chan.send(("dropped", item.work, {"stage": "start"}))
                continue
            try:
                item.key = resident_key(spec)
                item.wseg = Segment.attach(spec["w"])
                item.abcseg = Segment.attach(spec["abc"])
                d = item.key.domain_size
                a, b, c = (item.abcseg.array((d, 4), offset=i * d * 32) for i in range(3))
                w = item.wseg.array((item.key.n_vars, 4))
            except Exception as exc:
                fail(item, "start", exc, abc_intact=True)  # before prove_start
                continue
            fin_token = None
            with kernel_lock:
                if job_id in cancelled:  # cancelled while waiting for the device
                    del a, b, c, w
                    item.close()
                    chan.send(("dropped", item.work, {"stage": "start"}))
                    continue
                token = status.gpu_claim(slot, job_id, part)
                item.t_start = time.time()
                try:
                    item.partial = prover.prove_start(item.key, a, b, c, w, dev)
                except Exception as exc:
                    item.t_end = time.time()
                    status.gpu_end(token, ok=False, gpu_ms=(item.t_end - item.t_start) * 1e3)
                    del a, b, c, w
                    fail(item, "start", exc)  # a, b, c may be overwritten already
                    continue
                item.t_end = time.time()
                item.gpu_ms = (item.t_end - item.t_start) * 1e3
                if split:
                    try:  # a free finalizer now: hand over before the next worker starts
                        fin_slot = free_fin.get_nowait()
                        fin_token = status.gpu_handoff(token, fin_slot)
                    except queue.Empty:
                        fin_slot = None
            del a, b, c, w
            item.abcseg.close()
            item.abcseg = None
            chan.send(("started", item.work, {"gpu_ms": item.gpu_ms, "t_start": item.t_start,
                                              "t_end": item.t_end}))
            if not split:
                finish(item, token)
                continue
            if fin_slot is None:  # every finalizer busy: wait for one (kernels are not held)
                fin_slot = free_fin.get()
                fin_token = status.gpu_handoff(token, fin_slot)
            fin_inbox[fin_slot].put((item, fin_token))

    def finalizer(fin_slot: int) -> None:
        while True:
            item, token = fin_inbox[fin_slot].get()
            try:
                finish(item, token)
            finally:
                free_fin.put(fin_slot)

    threads = [threading.Thread(target=worker, args=(s,), name=f"worker-{s}", daemon=True)
               for s in worker_slots]
    threads += [threading.Thread(target=finalizer, args=(s,), name=f"finalizer-{s}", daemon=True)
                for s in fin_slots]
    threads.append(threading.Thread(target=status.heartbeat_loop, name="heartbeat", daemon=True))
    for t in threads:
        t.start()
    chan.send(("ready", os.getpid(), {"device": device_name}))
    while True:
        msg = chan.recv()
        kind = msg[0]
        if kind == "prove":
            inbox.put(msg[1])
        elif kind == "cancel":
            cancelled.add(msg[1])
        elif kind == "evict_key":
            with key_lock:
                if keys.pop(msg[1], None) is not None:
                    dev.evict_key(msg[1])
            chan.send(("key_evicted", msg[1], {}))
        elif kind == "ping":
            chan.send(("pong", msg[1]))
        elif kind == "stop":
            os._exit(0)
