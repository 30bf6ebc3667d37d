"""Runs `cuzk serve`: bind, start the engine, serve HTTP, drain on SIGTERM, exit.

Order of events:
  0. lock the state directory and open its job journal (cuzk.serve.journal): a journal that is
     locked by another daemon, corrupt or newer is refused with one line, exit 78; a full
     state disk is named as such in one line, exit 75, so that a supervisor starts the daemon
     again (once there is room it starts as usual);
  1. bind the listening socket (a busy port fails before any process is spawned);
  2. start the Engine (synthesis and device processes, the status board), re-queue every job
     the journal holds unfinished under its original id and priority (recovery);
  3. log one summary line per device and the board name, then "listening on URL";
  4. serve HTTP from a thread; the main thread waits on a self-pipe that the SIGTERM/SIGINT
     handlers write (handlers only enqueue, as in uvicorn's supervisors);
  5. on the first signal: /healthz turns 503, new jobs are refused (503), running jobs get
     `drain_timeout` seconds, results stay fetchable meanwhile; a second signal cuts the
     drain short; then the HTTP server and the engine stop and every segment is released.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
import time

from cuzk.serve.config import Config

log = logging.getLogger("cuzk.serve")

EX_OK = 0
EX_STARTUP = 3  # the engine or the listener could not start (uvicorn's STARTUP_FAILURE)
EX_ENGINE = 1  # the engine stopped without being asked to
EX_JOURNAL = 78  # the state directory cannot be used: restarting will not help (EX_CONFIG)
EX_TEMPFAIL = 75  # the state disk is full: restarting once there is room will (EX_TEMPFAIL)
PRUNE_EVERY_MAX = 600.0  # seconds between two prunings of the journal at most


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )
    logging.getLogger().setLevel(getattr(logging, level.upper()))
    logging.getLogger("numba").setLevel(logging.WARNING)


def describe_device(name: str, cfg, kernels: str = "") -> str:
    """One line about a device process: what it runs (``kernels``: what its process said it
    runs, cuzk.engine.child.select_kernels) and with how many loops."""
    what = f"CPU kernels {kernels}" if kernels else "CPU kernels"
    if name.startswith("cuda:"):
        what = "CUDA"
        try:  # optional telemetry library: name and memory without a CUDA context here
            import pynvml

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(int(name.split(":")[1]))
            gpu = pynvml.nvmlDeviceGetName(h)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total
            what = (
                f"CUDA {gpu.decode() if isinstance(gpu, bytes) else gpu}, {mem / 1024**3:.0f} GiB"
            )
        except Exception:
            pass
    return (
        f"device {name}: {what}; {cfg.workers_per_device} prove_start loop(s), "
        f"{cfg.finalizers_per_device} finalizer thread(s)"
    )


class Daemon:
    """One serve process: engine + HTTP server + signal handling."""

    def __init__(self, config: Config):
        self.config = config
        self.engine = None
        self.kernels = ""  # what this process's kernels are (engine.child.select_kernels)
        self.server = None
        self.api = None
        self.metrics = None
        self.journal = None
        self._next_prune = 0.0
        self._sig_r, self._sig_w = os.pipe()
        os.set_blocking(self._sig_w, False)
        self.signals = 0

    def _on_signal(self, signum, frame):
        try:
            os.write(self._sig_w, bytes([signum]))
        except OSError:
            pass

    def run(self) -> int:
        from cuzk.serve.journal import DiskFull, Journal, JournalError

        try:
            self.journal = Journal.open(self.config.state_dir, self.config.keep_results)
        except JournalError as e:
            log.error("cannot start: %s", e)
            return EX_TEMPFAIL if isinstance(e, DiskFull) else EX_JOURNAL
        try:
            return self._run()
        finally:
            self.journal.close()

    def _run(self) -> int:
        from cuzk.engine import Engine
        from cuzk.serve.api import Api
        from cuzk.serve.front import Server
        from cuzk.serve.http import Router
        from cuzk.serve.journal import DiskFull, JournalError
        from cuzk.serve.metrics import Metrics

        cfg = self.config
        ecfg = cfg.engine_config()
        # signals first: a SIGTERM during start-up still stops everything cleanly
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        try:
            self.server = Server(
                (cfg.host, cfg.port),
                Router(),
                token=cfg.token,
                max_body=cfg.max_body,
                max_connections=cfg.max_connections,
                loopback_only=cfg.token is None,
                allow_hosts=cfg.allow_hosts,
                header_timeout=cfg.header_timeout,
                body_memory=cfg.body_memory,
                body_timeout=cfg.body_timeout,
                body_min_rate=cfg.body_min_rate,
            )
        except OSError as e:
            log.error("cannot listen on %s:%d: %s", cfg.host, cfg.port, e.strerror or e)
            return EX_STARTUP
        if ecfg.board_name and not cfg.ray:  # a live board's name is refused here, in one line
            from cuzk.board.segment import NameInUse, free_name

            try:
                if free_name(ecfg.board_name):
                    log.info(
                        "board %s: removed the stale board of a daemon that is gone",
                        ecfg.board_name,
                    )
            except NameInUse as e:
                log.error("cannot start: %s", e)
                self.server.server_close()
                return EX_STARTUP
        try:
            if cfg.ray:  # the gateway of a farm: the same API, backed by Ray node engines
                from cuzk.cluster.gateway import ClusterEngine

                self.engine = ClusterEngine(
                    ecfg,
                    address=cfg.ray,
                    journal=self.journal,
                    nodes=cfg.node_settings(),
                    affinity_wait=cfg.affinity_wait,
                    node_wait_timeout=cfg.node_wait_timeout,
                )
            else:
                self.engine = Engine(ecfg, journal=self.journal)
                # this process validates keys: its kernels chosen as its children's are
                self.kernels = self.engine.select_kernels_here()
            self.engine.start(timeout=600)
        except Exception as e:
            log.error("engine failed to start: %s", e)
            self.server.server_close()
            if self.engine is not None:
                self.engine.stop(0)
            return EX_STARTUP
        if cfg.ray:
            alive, detail = self.engine.health()
            log.info(
                "farm on the Ray cluster at %s: %d of %d prover node(s) attached; nodes use "
                "devices %s (unless joined with their own)",
                cfg.ray,
                detail["nodes_alive"],
                detail["nodes"],
                cfg.devices,
            )
        else:
            kernels = self.engine.process_kernels()
            for i, name in enumerate(ecfg.device_names):
                log.info(
                    describe_device(name, ecfg, kernels.get(f"device process {i} ({name})", ""))
                )
            synth = sorted({k for n, k in kernels.items() if n.startswith("synth")})
            if synth or self.kernels:
                log.info(
                    "synthesis processes: kernels %s; this process: kernels %s",
                    ", ".join(synth) or "unsaid",
                    self.kernels or "unsaid",
                )
            log.info(
                "board %s (watch it with: cuzk top --board %s)",
                self.engine.board_name,
                self.engine.board_name,
            )
        if not cfg.key_roots:
            log.warning("no --key-root: keys and witnesses given by path are refused")
        else:
            log.info("key roots: %s", ", ".join(cfg.key_roots))
        self.metrics = Metrics(self.engine).start()
        self.api = Api(self.engine, cfg, self.metrics, journal=self.journal)
        self._prune()
        try:
            self._recover()
        except JournalError as e:  # a full disk, most likely: the jobs stay in the journal
            log.error("cannot start: %s", e)
            self.server.server_close()
            self.metrics.stop()
            self.engine.stop(0)
            return EX_TEMPFAIL if isinstance(e, DiskFull) else EX_JOURNAL
        self.server.router = self.api.router()
        self.server.memory.budget = self.engine.budget  # request bodies count in the budget
        thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="cuzk-http",
            daemon=True,
        )
        thread.start()
        log.info(
            "listening on %s (token %s)",
            self.server.url,
            "required" if cfg.token else "not required: loopback only",
        )
        try:
            clean = self._wait()
        finally:
            self.server.shutdown()
            self.server.server_close()
            self.metrics.stop()
            self.engine.stop(0)
        log.info("stopped")
        return EX_OK if clean else EX_ENGINE

    def _wait(self) -> bool:
        """Until a signal, then drain until the engine has stopped. False if the engine
        stopped without being asked to."""
        draining = False
        while True:
            if draining and self.engine.wait_stopped(0):
                return True
            if not draining and not self.engine.running:
                log.error("the engine stopped on its own; exiting")
                return False
            try:
                ready, _, _ = select.select([self._sig_r], [], [], 0.2)
            except InterruptedError:
                continue
            if time.time() >= self._next_prune:
                self._prune()
            if self.journal.pending:  # outcomes a full disk kept out of the journal
                self.journal.retry_pending()
            if not ready:
                continue
            for signum in os.read(self._sig_r, 64):
                self.signals += 1
                name = signal.Signals(signum).name
                if not draining:
                    draining = True
                    self.api.draining = True
                    log.info(
                        "%s: draining (running jobs get %.0f s; a second signal stops at once)",
                        name,
                        self.config.drain_timeout,
                    )
                    self.engine.request_stop(self.config.drain_timeout)
                else:
                    log.info("%s again: stopping now", name)
                    self.engine.request_stop(0)

    # ------------------------------------------------------------------ the journal
    def _prune(self) -> None:
        keep = self.config.keep_results
        self._next_prune = time.time() + min(PRUNE_EVERY_MAX, max(1.0, keep / 10))
        try:
            self.journal.prune()
        except Exception as e:  # sqlite3.Error, OSError: try again later
            log.error("journal: pruning failed: %s", e)

    def _recover(self) -> None:
        """Re-queue every job the journal holds unfinished, oldest first, under its original
        id, priority and submission time. A job whose key or witness is gone (or no longer
        under the key roots, or changed) is recorded as failed with the reason. JournalError
        (DiskFull for a full disk) when a re-queue cannot be recorded: the caller stops."""
        from cuzk.engine import EngineStopped

        entries = self.journal.unfinished()
        if not entries:
            log.info("journal %s: no unfinished job", self.journal.path)
            return
        t0 = time.monotonic()
        ok, failed = 0, []
        for e in entries:
            try:
                key_id, inputs = self._recovered_request(e)
                # partitions proved before the restart keep their proofs (not proved again),
                # on one machine and on a farm's gateway alike
                d = self.journal.done_partitions(e.job_id)
                done = {"done": d} if d else {}
                if e.wasm is not None:  # circuit inputs
                    self.engine.submit(
                        key_id,
                        inputs=inputs,
                        kind=e.kind,
                        priority=e.priority,
                        job_id=e.job_id,
                        submitted_at=e.submitted_at,
                        recovered=True,
                        **done,
                    )
                else:
                    self.engine.submit(
                        key_id,
                        inputs,
                        kind=e.kind,
                        priority=e.priority,
                        job_id=e.job_id,
                        submitted_at=e.submitted_at,
                        recovered=True,
                        **done,
                    )
            except EngineStopped:  # the engine died: the rest stays in the journal
                log.error(
                    "engine stopped during recovery; %d job(s) left in the journal",
                    len(entries) - ok - len(failed),
                )
                return
            except _Unrecoverable as exc:
                reason = str(exc)
            except Exception as exc:  # BudgetError, ValueError, OSError: the job's own problem
                reason = f"{type(exc).__name__}: {exc}"
            else:
                self.journal.mark_recovered(e.job_id)
                ok += 1
                continue
            reason = f"not resumed after a restart: {reason}"
            log.warning("job %s: %s", e.job_id, reason)
            self.journal.finish(e.job_id, "failed", time.time(), _failed_result(e, reason))
            failed.append(e.job_id)
        log.info(
            "journal %s: %d unfinished job(s) re-queued under their ids%s in %.0f ms",
            self.journal.path,
            ok,
            f", {len(failed)} failed" if failed else "",
            (time.monotonic() - t0) * 1e3,
        )

    def _recovered_request(self, e) -> tuple[str, list]:
        from cuzk.serve.api import resolve_under_roots
        from cuzk.serve.http import HttpError

        try:  # the key and path witnesses must still lie under the (current) key roots
            if e.wasm is not None:  # the circuit too, still the key's own
                key_id = self.api._register_path(e.key_path, "key", wasm=e.wasm)
            else:
                key_id = self.api._register_path(e.key_path, "key")
            inputs = []
            for i, x in enumerate(e.inputs):
                if "json" in x:
                    inputs.append(x["json"].encode())
                elif "spool" in x:
                    p = self.journal.spool_path(x["spool"])
                    if not os.path.isfile(p):
                        raise _Unrecoverable(
                            f"witnesses[{i}]: the uploaded witness is missing from the spool ({p})"
                        )
                    inputs.append(p)
                else:
                    inputs.append(
                        resolve_under_roots(x["path"], self.config.key_roots, f"witnesses[{i}]")
                    )
        except HttpError as exc:
            raise _Unrecoverable(exc.message) from None
        if key_id != e.key_id:
            raise _Unrecoverable(
                f"key {e.key_path} changed since the job was accepted (key id "
                f"{key_id}, was {e.key_id})"
            )
        return key_id, inputs


class _Unrecoverable(Exception):
    """A journalled job that cannot be re-queued; str() says why."""


def _failed_result(e, reason: str) -> dict:
    """The result record of a journalled job that could not be re-queued (shape of
    Engine.result())."""
    n = len(e.inputs)
    return {
        "job_id": e.job_id,
        "key_id": e.key_id,
        "kind": e.kind,
        "priority": e.priority,
        "state": "failed",
        "submitted_at": e.submitted_at,
        "started_at": None,
        "finished_at": time.time(),
        "error": reason,
        "total_partitions": n,
        "partitions_done": 0,
        "partitions_failed": 0,
        "recovered": True,
        "partitions": [
            {
                "index": i,
                "state": "cancelled",
                "attempts": 0,
                "synth_ms": None,
                "witness_ms": None,
                "abc_ms": None,
                "gpu_ms": None,
                "finalize_ms": None,
                "device": None,
                "error": None,
            }
            for i in range(n)
        ],
        "proofs": [None] * n,
        "public": [None] * n,
    }


def run(config: Config) -> int:
    """Exit status of a serve run with a loaded Config."""
    from cuzk.pages import large_blocks_to_the_system

    large_blocks_to_the_system()  # a key's validation frees what it read (cuzk.pages)
    setup_logging(config.log_level)
    return Daemon(config).run()
