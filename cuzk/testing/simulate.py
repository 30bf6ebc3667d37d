"""Simulated prover activity on a real status board, for trying `cuzk top` without a prover.

Writer processes do on the board what `cuzk serve` does, with sleeps in place of work:

    supervisor (this process) ─ creates the board; adds jobs, marks them running/done/failed;
        │                       memory, queue depth, counters, keys; unlinks at the end
        ├─► synthesis process(es): claim a synth slot per partition, end it synth_done
        └─► one device process per device: a thread per worker slot claims a device slot,
            "runs kernels", hands the partition to a finalizer slot (split proving) and loops;
            finalizer threads end their claim done (or failed)

Used by the tmux test and the `top` benchmark; `python -m cuzk.testing.simulate` runs one until
Ctrl-C and prints the board name to pass to `cuzk top --board`.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import random
import signal
import threading
import time
from dataclasses import dataclass

KINDS = {
    "winning-post": (1, "critical"),
    "window-post": (1, "high"),
    "snap-update": (16, "normal"),
    "porep-c2": (10, "normal"),
}
GIB = 2**30


@dataclass(frozen=True)
class Plan:
    """Shape and pace of the simulated prover (seconds are uniform ranges)."""

    devices: int = 2
    workers_per_device: int = 2
    finalizers_per_device: int = 1
    synth_slots: int = 4
    synth_procs: int = 2
    active_jobs: int = 6  # jobs kept on the go
    job_rows: int = 64
    max_partitions: int = 16
    synth_s: tuple = (0.3, 0.8)
    gpu_s: tuple = (0.4, 1.2)
    finalize_s: tuple = (0.1, 0.3)
    fail_rate: float = 0.005
    heartbeat_s: float = 0.25
    instance: str = "simulated"


def _child_stop(stop_r) -> threading.Event:
    """In a writer process: an event set when the supervisor closes its end of the stop pipe
    or dies (EOF either way), the "parent alive" pipe of Dask's nanny. An mp.Event would do
    the job until a child dies inside wait(); then the parent's set() blocks for ever. The
    child also ignores SIGINT: Ctrl-C in a terminal reaches the whole process group, and the
    supervisor is the one that decides to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()

    def watch():
        try:
            stop_r.recv()
        except (EOFError, OSError):
            pass
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    return stop


def _work(seconds: float, stop, table, slot: int, beat: float) -> None:
    """Sleep `seconds` as if working, stamping the slot's heartbeat every `beat` seconds
    (a real worker's heartbeat thread does the same); returns early on stop."""
    end = time.monotonic() + seconds
    while not stop.is_set():
        left = end - time.monotonic()
        if left <= 0:
            return
        stop.wait(min(beat, left))
        table.heartbeat(slot)


def _synth_main(name, slots, synth_q, gpu_q, stop_r, plan: Plan, seed):
    from cuzk.board import Board

    stop = _child_stop(stop_r)
    board = Board.attach(name)
    rng = random.Random(seed)

    def work(slot):
        board.synth.register(slot, ordinal=slot)
        last_hb = 0.0
        while not stop.is_set():
            if time.monotonic() - last_hb > plan.heartbeat_s:
                board.synth.heartbeat(slot)
                last_hb = time.monotonic()
            try:
                job, part, kind = synth_q.get(timeout=plan.heartbeat_s)
            except queue.Empty:
                continue
            tok = board.synth.claim(slot, job, part)
            t = rng.uniform(*plan.synth_s)
            _work(t, stop, board.synth, slot, plan.heartbeat_s)
            board.end(tok, state="synth_done", synth_ms=1000 * t, attempts=1)
            gpu_q.put((job, part, kind))

    threads = [threading.Thread(target=work, args=(s,), daemon=True) for s in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    board.close()


def _device_main(name, ordinal, dev_slots, fin_slots, gpu_q, done_q, stop_r, plan: Plan, seed):
    from cuzk.board import Board

    stop = _child_stop(stop_r)
    board = Board.attach(name)
    rng = random.Random(seed)
    rng_lock = threading.Lock()
    free_fins: queue.Queue = queue.Queue()
    finishing: list[threading.Thread] = []
    for f in fin_slots:
        board.finalizers.register(f, ordinal=ordinal)
        free_fins.put(f)

    def draw(span):
        with rng_lock:
            return rng.uniform(*span), rng.random()

    def finalize(ftok, fslot, job, part, kind, gpu_ms):
        t, r = draw(plan.finalize_s)
        stop.wait(t)
        ok = r >= plan.fail_rate
        board.end(ftok, state="done" if ok else "failed", gpu_ms=gpu_ms, finalize_ms=1000 * t)
        free_fins.put(fslot)
        done_q.put((job, part, kind, ok))

    def work(slot):
        board.devices.register(slot, ordinal=ordinal, device=f"cpu:{ordinal}")
        last_hb = 0.0
        while not stop.is_set():
            if time.monotonic() - last_hb > plan.heartbeat_s:
                board.devices.heartbeat(slot)
                last_hb = time.monotonic()
            try:
                job, part, kind = gpu_q.get(timeout=plan.heartbeat_s)
            except queue.Empty:
                continue
            tok = board.claim_device(slot, job, part)
            t, _ = draw(plan.gpu_s)
            _work(t, stop, board.devices, slot, plan.heartbeat_s)
            while True:  # wait for a free finalizer, heartbeating
                try:
                    fslot = free_fins.get(timeout=plan.heartbeat_s)
                    break
                except queue.Empty:
                    board.devices.heartbeat(slot)
                    if stop.is_set():
                        return
            ftok = board.handoff(tok, fslot)
            th = threading.Thread(
                target=finalize, args=(ftok, fslot, job, part, kind, 1000 * t), daemon=True
            )
            th.start()
            finishing.append(th)
            finishing[:] = [x for x in finishing if x.is_alive()]

    threads = [threading.Thread(target=work, args=(s,), daemon=True) for s in dev_slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for t in list(finishing):  # finalizers still writing (stop cuts their sleep short)
        t.join()
    board.close()


class Simulation:
    """A board plus writer processes; use as a context manager (`with Simulation() as sim`)."""

    def __init__(self, plan: Plan | None = None, *, name: str | None = None, seed: int = 1):
        self.plan = plan or Plan()
        self.seed = seed
        self._name = name
        self.board = None
        self._procs: list = []
        self._thread = None
        self._stop = self._stop_w = None
        self._queues: tuple = ()

    @property
    def name(self) -> str:
        """The board's shared-memory name (still known after stop())."""
        return self._name

    def start(self) -> Simulation:
        from cuzk.board import Board

        p = self.plan
        n_dev = p.devices * p.workers_per_device
        n_fin = p.devices * p.finalizers_per_device
        self.board = Board.create(
            self._name,
            instance=p.instance,
            device_slots=n_dev,
            finalizer_slots=n_fin,
            synth_slots=p.synth_slots,
            job_rows=p.job_rows,
            max_partitions=p.max_partitions,
        )
        self._name = self.board.name
        ctx = mp.get_context("spawn")
        self._stop = threading.Event()  # this process's threads
        stop_r, self._stop_w = ctx.Pipe(duplex=False)  # the writer processes
        self._synth_q, self._gpu_q, self._done_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
        self._queues = (self._synth_q, self._gpu_q, self._done_q)
        for i in range(max(1, min(p.synth_procs, p.synth_slots))):
            slots = list(range(i, p.synth_slots, max(1, min(p.synth_procs, p.synth_slots))))
            self._procs.append(
                ctx.Process(
                    target=_synth_main,
                    daemon=True,
                    name=f"sim-synth-{i}",
                    args=(
                        self.name,
                        slots,
                        self._synth_q,
                        self._gpu_q,
                        stop_r,
                        p,
                        self.seed * 1000 + i,
                    ),
                )
            )
        for d in range(p.devices):
            dev_slots = list(range(d * p.workers_per_device, (d + 1) * p.workers_per_device))
            fin_slots = list(range(d * p.finalizers_per_device, (d + 1) * p.finalizers_per_device))
            self._procs.append(
                ctx.Process(
                    target=_device_main,
                    daemon=True,
                    name=f"sim-device-{d}",
                    args=(
                        self.name,
                        d,
                        dev_slots,
                        fin_slots,
                        self._gpu_q,
                        self._done_q,
                        stop_r,
                        p,
                        self.seed * 2000 + d,
                    ),
                )
            )
        for proc in self._procs:
            proc.start()
        stop_r.close()
        self._thread = threading.Thread(target=self._supervise, daemon=True)
        self._thread.start()
        return self

    def _supervise(self):
        """The supervisor's share: jobs in, results out, memory and counters."""
        p, board, rng = self.plan, self.board, random.Random(self.seed)
        jobs: dict[str, dict] = {}
        serial = 0
        kinds = [k for k, (n, _) in KINDS.items() if n <= p.max_partitions]
        board.control.set_keys(
            [
                {
                    "key_id": f"{k}.zkey",
                    "bytes": int((0.3 + 0.2 * i) * GIB),
                    "devices": [f"cpu:{d}" for d in range(p.devices)],
                    "last_used_secs_ago": 0.0,
                    "evictable": i % 2 == 1,
                }
                for i, k in enumerate(kinds)
            ]
        )
        last_meta = 0.0
        while not self._stop.is_set():
            while sum(1 for j in jobs.values() if not j["finished"]) < p.active_jobs:
                kind = rng.choice(kinds)
                n, prio = KINDS[kind]
                job_id = f"sim-{serial:05d}-{kind}"
                serial += 1
                if not board.control.job_add(job_id, kind, prio, n):
                    break
                board.control.job_set_state(job_id, "running")
                jobs[job_id] = {"kind": kind, "n": n, "done": 0, "failed": 0, "finished": False}
                for part in range(n):
                    self._synth_q.put((job_id, part, kind))
            try:
                job_id, part, kind, ok = self._done_q.get(timeout=0.1)
            except queue.Empty:
                job_id = None
            if job_id in jobs:
                j = jobs[job_id]
                j["done" if ok else "failed"] += 1
                if j["done"] + j["failed"] == j["n"]:
                    j["finished"] = True
                    board.control.job_set_state(job_id, "done" if not j["failed"] else "failed")
                    board.control.count(**{"failed" if j["failed"] else "completed": kind})
            if time.monotonic() - last_meta > 0.25:
                last_meta = time.monotonic()
                in_flight = sum(
                    j["n"] - j["done"] - j["failed"] for j in jobs.values() if not j["finished"]
                )
                # a/b/c vectors for partitions being synthesized or waiting for a device, and
                # the smaller proving reservation of those on a device or in a finalizer
                held = min(in_flight, 2 * p.synth_slots)
                on_device = min(
                    in_flight, p.devices * (p.workers_per_device + p.finalizers_per_device)
                )
                by_use = {"abc": held * GIB // 2, "prove": on_device * GIB // 4}
                board.control.set_memory(16 * GIB, sum(by_use.values()), by_use)
                board.control.count(queue_depth=int(self._synth_q.qsize()))
            for job_id in [k for k, j in jobs.items() if j["finished"]][:-16]:
                del jobs[job_id]  # the board keeps finished rows until reused

    def stop(self) -> None:
        """Stop the writers, then unlink the board (what `cuzk serve` does at shutdown).
        Safe after a start() that was interrupted half way (Ctrl-C while spawning)."""
        if self.board is None:
            return
        if self._stop is not None:
            self._stop.set()
        if self._stop_w is not None:
            self._stop_w.close()  # EOF on every writer's stop pipe
        if self._thread is not None:
            self._thread.join(timeout=5)
        for proc in self._procs:
            if proc.pid is None:  # never started
                continue
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        # Items nobody will read must not hold up exit (a Queue's feeder thread otherwise
        # waits forever to flush them into a pipe without readers).
        for q in self._queues:
            q.cancel_join_thread()
            q.close()
        board, self.board = self.board, None
        board.close()
        from cuzk.board import segment

        segment.unlink_segment(board.name)

    def __enter__(self) -> Simulation:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:  # pragma: no cover - interactive
    import sys

    with Simulation() as sim:
        print(
            f"simulating on board {sim.name}; run: cuzk top --board {sim.name}  (Ctrl-C stops)",
            file=sys.stderr,
        )
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # pragma: no cover
    main()
