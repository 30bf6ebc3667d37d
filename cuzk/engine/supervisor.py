"""The supervisor thread: the one place that waits.

Each turn it blocks in multiprocess.connection.wait() on every child's pipe, every child's
sentinel and a wake-up pipe (written by API threads and signal handlers), then, with the
engine lock held:
1. reads every ready pipe and handles each message (a `match` on its type, messages.py);
2. handles every fired sentinel: a dead child is logged with its pid and cause, its board
   slots reclaimed with a new generation, its partitions retried or failed, and it is
   restarted after a backoff (messages it sent before dying still count);
3. runs timers: restarts due, pings (a child that stops answering is killed: a hung child is
   caught like a dead one), idle-key eviction, the drain deadline;
4. dispatches (dispatch.py).
Teardown stops every child (by message, SIGKILL after STOP_JOIN_SECS), cancels what is left
and releases every segment and the board.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import multiprocess
from multiprocess.connection import wait

from cuzk.engine import buffers
from cuzk.engine.board_writes import SupervisorStatus
from cuzk.engine.books import Books
from cuzk.engine.buffers import BUFFERS_USE
from cuzk.engine.dispatch import Dispatcher
from cuzk.engine.messages import (
    Done,
    Dropped,
    Failed,
    KeyEvicted,
    KeyLoaded,
    Ping,
    Pong,
    Ready,
    Started,
    Stop,
    SynthDone,
    SynthFailed,
    TablesReady,
    Warming,
    pack,
    unpack,
)
from cuzk.engine.records import ChildRecord
from cuzk.engine.scheduler import PROVING, SYNTHESIZING, WorkKey
from cuzk.engine.settings import format_size, prover_options

log = logging.getLogger("cuzk.engine")

DRAIN_GRACE_SECS = 3.0  # after the drain deadline, running stages get this long to report
STOP_JOIN_SECS = 3.0  # a child that has not exited this long after Stop is killed
POLL_SECS = 0.5  # the loop's longest sleep: timers (pings, restarts, idle keys) run this often
BACKOFF_RESET_SECS = 30.0  # a child that lived this long restarts without accumulated backoff


class Supervisor:
    def __init__(self, books: Books):
        self.books = books
        self.dispatcher = Dispatcher(books, self.send)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.thread: threading.Thread | None = None
        self.started = threading.Event()  # every child ready, or start-up failed
        self.stopped = threading.Event()
        self.start_error: BaseException | None = None
        self.signal_stop: float | None = None  # set by a signal handler (no locks there)
        self._last_ping = 0.0
        self._said_numba = False  # the fallback to Numba's kernels is logged once

    # ================================================================ API side (any thread)
    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="cuzk-supervisor", daemon=True)
        self.thread.start()

    def wake(self) -> None:
        try:
            os.write(self.wake_w, b"w")
        except (BlockingIOError, OSError):
            pass  # the pipe is full: the supervisor is awake anyway

    def on_signal(self, drain_deadline: float) -> None:
        """From a signal handler: record the request and wake the loop, nothing else."""
        if self.stopped.is_set():
            return  # the wake-up pipe is closed (its fd number may be reused)
        self.signal_stop = drain_deadline
        try:
            os.write(self.wake_w, b"s")
        except OSError:
            pass

    @property
    def running(self) -> bool:
        return self.started.is_set() and not self.stopped.is_set()

    def stop(self, drain_deadline: float) -> None:
        """Drain (see request_stop), then wait for teardown (unless called by the thread)."""
        self.request_stop(drain_deadline)
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join()

    def request_stop(self, drain_deadline: float) -> None:
        """Start draining: intake stops; live jobs get until the deadline."""
        b = self.books
        with b.lock:
            if not b.draining:
                b.draining = True
                b.drain_deadline = time.time() + max(0.0, drain_deadline)
                log.info("draining: intake stopped, deadline in %.1f s", drain_deadline)
            else:
                b.drain_deadline = min(b.drain_deadline, time.time() + drain_deadline)
            b.changed.notify_all()
        self.wake()

    # ================================================================ the thread
    def _run(self) -> None:
        try:
            self._setup()
        except BaseException as exc:
            log.exception("engine start failed")
            self.start_error = exc
            self.started.set()
            self._teardown()
            return
        try:
            self._loop()
        except BaseException:
            log.exception("supervisor crashed; stopping every process")
        finally:
            self._teardown()

    def _setup(self) -> None:
        b, cfg = self.books, self.books.config
        self._ctx = multiprocess.get_context("spawn")
        b.status = SupervisorStatus.create(cfg)
        self._child_opts = {
            "prover": cfg.prover,
            "prover_options": prover_options(cfg),
            "board_name": b.status.name,
            "log_level": logging.getLogger().level or 30,
            "workers_per_device": cfg.workers_per_device,
            "finalizers_per_device": cfg.finalizers_per_device,
            "split_prove": cfg.split_prove,
            "self_verify": cfg.self_verify,
        }
        b.synth = [ChildRecord("synth", i) for i in range(cfg.synth_workers)]
        b.devices = [ChildRecord("device", i, device=d) for i, d in enumerate(cfg.device_names)]
        with b.lock:
            for ch in b.children:
                self._spawn(ch)
        b.status.set_memory(b.budget)
        log.info(
            "engine: %d synthesis process(es), devices %s x %d workers (split proving %s), "
            "memory budget %s, board %s",
            cfg.synth_workers,
            ",".join(cfg.device_names),
            cfg.workers_per_device,
            "on" if cfg.split_prove else "off",
            format_size(b.budget.total),
            b.status.name,
        )

    def _loop(self) -> None:
        b = self.books
        while True:
            with b.lock:
                children = [c for c in b.children if c.proc is not None]
                by_conn = {c.conn: c for c in children if c.conn is not None}
                by_sentinel = {c.proc.sentinel: c for c in children}
                timeout = self._timer_timeout()
            ready = wait([self.wake_r, *by_conn, *by_sentinel], timeout)
            with b.lock:
                if self.wake_r in ready:
                    try:
                        while os.read(self.wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                if self.signal_stop is not None:
                    deadline, self.signal_stop = self.signal_stop, None
                    log.info("signal received: draining")
                    self.request_stop(deadline)
                for conn, ch in by_conn.items():
                    if conn in ready:
                        self._read_child(ch)
                for sentinel, ch in by_sentinel.items():
                    if sentinel in ready:
                        self._on_exit(ch)
                self._timers()
                self.dispatcher.dispatch()
                if not self.started.is_set() and all(c.state == "ready" for c in b.children):
                    self.started.set()
                if b.draining and self._drain_done():
                    return

    def _timer_timeout(self) -> float:
        b = self.books
        t = POLL_SECS
        now = time.time()
        for c in b.children:
            if c.state == "dead":
                t = min(t, max(0.0, c.next_start_at - now))
        if b.draining:
            t = min(t, max(0.0, b.drain_deadline - now) + 0.01)
        return t

    # ================================================================ processes
    def _spawn(self, ch: ChildRecord) -> None:
        from cuzk.engine.device_process import device_main
        from cuzk.engine.synthesis_process import synth_main

        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        if ch.role == "synth":
            target, args = synth_main, (child_conn, os.getpid(), ch.index, self._child_opts)
        else:
            target, args = (
                device_main,
                (child_conn, os.getpid(), ch.index, ch.device, self._child_opts),
            )
        proc = self._ctx.Process(
            target=target, args=args, daemon=True, name=f"cuzk-{ch.role}-{ch.index}"
        )
        try:
            proc.start()
        except BaseException:
            parent_conn.close()
            raise
        finally:
            child_conn.close()  # the child has its own copy; ours would hide its EOF
        ch.proc, ch.conn, ch.pid = proc, parent_conn, proc.pid
        ch.state, ch.started_at, ch.last_pong = "starting", time.time(), time.time()
        ch.items, ch.inflight, ch.warming = set(), 0, None
        self.books.event("spawn", ch.role, ch.index, ch.pid)
        log.debug("%s started, pid %d", ch.name, ch.pid)

    def _publish_warming(self) -> None:
        """The children's kernel compiles, beside the board for `cuzk top` (cuzk.compiling)."""
        from cuzk.compiling import combine_warming, publish_warming

        b = self.books
        procs = [(ch.name, ch.pid, ch.warming) for ch in b.children if ch.warming]
        if b.status is not None and b.status.name:
            publish_warming(b.status.name, combine_warming(procs))

    def send(self, ch: ChildRecord, msg) -> bool:
        if ch.conn is None:  # its pipe reached EOF: it is dying, its sentinel is yet to fire
            return False
        try:
            ch.conn.send_bytes(pack(msg))
            return True
        except (OSError, EOFError, BrokenPipeError):
            return False  # it is dying; its sentinel will fire

    def _read_child(self, ch: ChildRecord) -> None:
        try:
            while ch.conn is not None and ch.conn.poll():
                self._handle(ch, unpack(ch.conn.recv_bytes()))
        except (EOFError, OSError):
            # the child closed its end: it is exiting; the sentinel reports how
            ch.conn.close()
            ch.conn = None

    def _on_exit(self, ch: ChildRecord) -> None:
        b, cfg = self.books, self.books.config
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
        if ch.state == "starting" and not self.started.is_set():
            self.start_error = RuntimeError(
                f"{ch.name} (pid {ch.pid}) died during start-up "
                f"(exit {ch.proc.exitcode}); see its log above"
            )
            self.started.set()
            self.request_stop(0)
        (log.info if expected else log.error)(
            "%s (pid %d) %s: %s", ch.name, ch.pid, "stopped" if expected else "died", cause
        )
        if ch.conn is not None:
            ch.conn.close()
        ch.conn, ch.proc = None, None
        b.status.reclaim_process(ch)
        for wk in list(ch.items):
            self._on_lost(wk, f"{ch.role} process died ({cause})")
        ch.items.clear()
        ch.inflight = 0
        if ch.role == "device":
            for k in b.keys.values():
                k.devices.discard(ch.index)
        b.event("exit", ch.role, ch.index, ch.pid, code)
        if ch.warming is not None:  # died compiling: its successor reports afresh
            ch.warming = None
            self._publish_warming()
        if expected or b.drain_cancelled_at is not None:
            ch.state = "down"  # stopping: work that is left has been cancelled
            return
        ch.state = "dead"
        b.counters["restarts"] += 1
        ch.restarts += 1
        if now - ch.started_at > BACKOFF_RESET_SECS:
            ch.backoff = 0.0
        ch.backoff = min(cfg.restart_backoff_max, max(cfg.restart_backoff, ch.backoff * 2))
        ch.next_start_at = now + ch.backoff
        b.status.count_restart()
        log.warning("%s restarts in %.1f s (restart %d)", ch.name, ch.backoff, ch.restarts)

    def _timers(self) -> None:
        b, cfg = self.books, self.books.config
        now = time.time()
        for ch in b.children:
            if (
                ch.state == "dead" and now >= ch.next_start_at and b.drain_cancelled_at is None
            ):  # a drain still needs its processes
                try:
                    self._spawn(ch)
                except OSError as exc:  # no memory / process limit: try again later
                    ch.backoff = min(cfg.restart_backoff_max, max(1.0, ch.backoff * 2))
                    ch.next_start_at = now + ch.backoff
                    log.error(
                        "%s could not be restarted: %s (next try in %.1f s)",
                        ch.name,
                        exc,
                        ch.backoff,
                    )
        if now - self._last_ping >= cfg.ping_interval:
            self._last_ping = now
            for ch in b.children:
                if ch.state in ("ready", "starting") and ch.proc is not None:
                    # a starting child imports the prover and may compile or load kernels and
                    # open a CUDA context: it gets start_timeout, not the ping timeout
                    limit = (
                        cfg.hang_timeout
                        if ch.state == "ready"
                        else max(cfg.start_timeout, cfg.hang_timeout)
                    )
                    if now - ch.last_pong > limit:
                        log.error(
                            "%s (pid %d) answered no ping for %.0f s: killing it",
                            ch.name,
                            ch.pid,
                            now - ch.last_pong,
                        )
                        b.event("hung", ch.role, ch.index, ch.pid)
                        try:
                            os.kill(ch.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        ch.last_pong = now  # once; the sentinel does the rest
                    elif ch.state == "ready":
                        self.send(ch, Ping(now))
        if cfg.key_idle_evict_secs > 0:
            for k in b.keys.values():
                if k.charged and not k.live_jobs and now - k.last_used > cfg.key_idle_evict_secs:
                    log.info("key %s idle for %.0f s: evicted", k.key_id, now - k.last_used)
                    self.dispatcher.evict(k)

    # ================================================================ messages
    def _handle(self, ch: ChildRecord, msg) -> None:
        """One message from `ch`."""
        b, d = self.books, self.dispatcher
        match msg:
            case Pong():
                ch.last_pong = time.time()
            case Warming(state):
                ch.warming = state
                self._publish_warming()
            case Ready(pid, kernels):
                ch.state, ch.last_pong, ch.kernels = "ready", time.time(), kernels
                log.info(
                    "%s ready, pid %d%s", ch.name, pid, f", kernels {kernels}" if kernels else ""
                )
                if "numba" in kernels and not self._said_numba:
                    self._said_numba = True
                    log.warning(
                        "the native kernel library is not built here for every curve "
                        "(kernels %s; cuzk.native: none built, or built for another CPU, "
                        "Python or cuzk source): those curves' CPU kernels run Numba's JIT "
                        'builds, compiled or loaded at first use (GET /healthz says "warming" '
                        "meanwhile); `cuzk warmup` builds the library",
                        kernels,
                    )
            case KeyLoaded(key_id, _, load_ms, building):
                k = b.keys.get(key_id)
                if k is not None:
                    k.devices.add(ch.index)
                    k.load_ms = load_ms
                    if building:
                        k.tables_building.add(ch.index)
                    else:
                        k.tables_building.discard(ch.index)
                    b.publish_keys()
                log.info(
                    "key %s resident on %s (%.0f ms)%s",
                    key_id,
                    ch.device,
                    load_ms,
                    "; its tables of multiples being built beside its proofs" if building else "",
                )
            case TablesReady(key_id, ok, build_ms):
                k = b.keys.get(key_id)
                if k is not None and ch.index in k.tables_building:
                    k.tables_building.discard(ch.index)
                    b.publish_keys()
                    here = ch.index in k.devices  # (else evicted there: its build stopped)
                    if here and ok:
                        log.info(
                            "key %s: tables of multiples ready on %s (built in %.1f s)",
                            key_id,
                            ch.device,
                            build_ms / 1e3,
                        )
                    elif here:
                        log.warning(
                            "key %s: tables of multiples not built on %s (it proves without)",
                            key_id,
                            ch.device,
                        )
            case KeyEvicted():
                pass
            case SynthDone(wk):
                if not self._current(ch, wk, SYNTHESIZING, "synth_done"):
                    return
                _, p = b.job_of(wk)
                d.free_part(wk, "input")
                d.free_part(wk, "wasm")  # the calculator's memory is the synthesis process's
                b.sched.synthesized(wk)
                p.state, p.synth_ms = "synth_done", msg.synth_ms
                p.witness_ms, p.abc_ms = msg.witness_ms, msg.buffers_ms  # abc_ms: the API's name
            case SynthFailed(wk, failure):
                if not self._current(ch, wk, SYNTHESIZING, "synth_failed"):
                    return
                job, _ = b.job_of(wk)
                # Circuit inputs the circuit rejects (a missing signal, a failing assert) fail
                # their partition alone and at once: the job's other partitions still prove.
                d.fail_stage(
                    wk,
                    f"synthesis: {failure}",
                    retry=not failure.input_error,
                    to_device=False,
                    failure=failure,
                    alone=job.wasm is not None and failure.input_error,
                )
            case Started(wk):
                ch.inflight -= 1
                b.event(
                    "gpu", wk.job_id, wk.partition, wk.attempt, ch.index, msg.t_start, msg.t_end
                )
                d.free_part(wk, BUFFERS_USE)
                _, p = b.job_of(wk)
                if p is not None and b.sched.place(wk) == PROVING:
                    p.gpu_ms, p.t_gpu_start, p.t_gpu_end = msg.gpu_ms, msg.t_start, msg.t_end
                    p.state = "finalizing" if b.config.split_prove else "gpu"
            case Done(wk):
                if not self._current(ch, wk, PROVING, "done"):
                    return
                job, p = b.job_of(wk)
                b.sched.complete(wk)
                d.free_work(wk)
                p.state, p.proof, p.public = "done", msg.proof, msg.public
                p.finalize_ms = msg.finalize_ms
                p.gpu_ms, p.t_gpu_start, p.t_gpu_end = msg.gpu_ms, msg.t_start, msg.t_end
                job.n_done += 1
                b.status.partition(job, wk.partition)
                b.record_partition(job, wk.partition)
                d.settle(job)
            case Failed(wk, stage, buffers_intact, permanent, failure):
                if stage == "start":
                    ch.inflight -= 1
                if not self._current(ch, wk, PROVING, "failed", stage):
                    return
                # Back to the device only when the device says prove_start never ran on this
                # attempt (buffers_intact: a failure while attaching buffers or loading the
                # key). prove_start may overwrite its buffers in place (the real prover's
                # compute_h runs its NTTs in a, b, c's storage), so after a prove_start that
                # raised, the buffers segment no longer holds what synthesize wrote: the retry
                # must synthesize again or it proves from garbage. A failure that cannot change
                # on retry (self-verification rejected the proof, the key file is unusable)
                # fails the partition at once; crashes and other errors are retried.
                w = b.works.get(wk)
                d.fail_stage(
                    wk,
                    f"{stage}: {failure}",
                    retry=not permanent,
                    to_device=buffers_intact and w is not None and BUFFERS_USE in w.segs,
                    failure=failure,
                )
            case Dropped(wk, stage):
                ch.items.discard(wk)
                if stage == "start":
                    ch.inflight -= 1
                d.free_work(wk)
            case _:
                raise TypeError(f"unknown message from {ch.name}: {msg!r}")

    def _current(self, ch: ChildRecord, wk: WorkKey, place: str, what: str, *args) -> bool:
        """`ch` reports the end of its stage of `wk`: it no longer holds the item. True when
        the report is current; False (and what the item holds freed) when the scheduler no
        longer places it there (its job was cancelled or failed meanwhile)."""
        ch.items.discard(wk)
        self.books.event(what, wk.job_id, wk.partition, wk.attempt, *args)
        if self.books.sched.place(wk) == place:
            return True
        self.dispatcher.free_work(wk)
        return False

    def _on_lost(self, wk: WorkKey, reason: str) -> None:
        """An item held by a process that died."""
        if self.books.sched.place(wk) not in (SYNTHESIZING, PROVING):
            self.dispatcher.free_work(wk)
            return
        # A partition lost with its device process is synthesized again, even when its
        # buffers segment still exists: the process may have died inside prove_start, which
        # may overwrite the buffers in place (the real prover's compute_h NTTs a, b, c), and
        # Started — after which the supervisor unlinks the buffers — is only sent once
        # prove_start is over. Sending such a partition straight back to a device proved it
        # from half-transformed a, b, c: a wrong proof (rejected by self-verification when
        # on, returned otherwise). The supervisor cannot tell whether prove_start had begun,
        # so it never reuses the buffers.
        self.dispatcher.fail_stage(wk, reason, retry=True, to_device=False)

    # ================================================================ draining and teardown
    def _drain_done(self) -> bool:
        b = self.books
        now = time.time()
        live = [j for j in b.jobs.values() if not j.finished]
        if live and now < b.drain_deadline:
            return False
        if live:
            log.warning("drain deadline passed: cancelling %d job(s)", len(live))
            self.dispatcher.cancel_unfinished("engine stopped before the job finished")
        if b.drain_cancelled_at is None:
            b.drain_cancelled_at = now
        busy = any(c.items for c in b.children if c.proc is not None)
        return not busy or now - b.drain_cancelled_at > DRAIN_GRACE_SECS

    def _teardown(self) -> None:
        b = self.books
        with b.lock:
            b.draining = True
            children = [c for c in b.children if c.proc is not None]
            for ch in children:
                ch.state = "stopping"
                if ch.conn is not None:
                    self.send(ch, Stop())
        deadline = time.time() + STOP_JOIN_SECS
        for ch in children:
            ch.proc.join(max(0.0, deadline - time.time()))
            if ch.proc.exitcode is None:
                log.warning("%s (pid %d) did not stop: killing it", ch.name, ch.pid)
                ch.proc.kill()
                ch.proc.join(5.0)
        with b.lock:
            for ch in children:
                if ch.conn is not None:
                    ch.conn.close()
                ch.proc, ch.conn, ch.state = None, None, "down"
                ch.items.clear()
            self.dispatcher.cancel_unfinished("engine stopped")
            for wk in list(b.works):
                self.dispatcher.free_work(wk)
            for name in buffers.list_segments(b.pid):  # belt and braces
                buffers.unlink(name)
            if b.status is not None:
                if b.status.name:
                    from cuzk.compiling import publish_warming

                    publish_warming(b.status.name, None)  # kernels compiling, if any
                b.status.close()
            b.changed.notify_all()
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stopped.set()
        self.started.set()
        log.info("engine stopped")
