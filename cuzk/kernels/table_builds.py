"""Tables of multiples built beside the proofs: a device process that loads a key starts its
tables (cuzk.kernels.msm_cpu.build_table, per cuzk.groth16.tables or cuzk.plonk.tables) on a
thread of its own at a lower priority and proves at once without them; each table is put in
place when it is done, and the MSMs that start after that use it. A proof's bytes are the same
with or without a table, so a job never waits for one: on a 2^21 Groth16 key the tables
(5.45 GB, eight groups) took the device process ~9 minutes, which its first job waited for
when they were built in load_key.

The build runs beside the proofs only where it does not hold the interpreter: the native
library's table kernel (cuzk.native) is a C call that releases the GIL, and its run-time's
parallel loops may run from two threads at once. Numba's own build holds the GIL for the
call and its default threading layer refuses a second caller, so there the tables are built
in load_key as before (``beside(curve)`` says which).

Priority: the build thread lowers its own nice value by NICE (Linux keeps a nice value per
thread, and the threads the run-time starts for its parallel loops inherit it), so a proof's
threads take the cores first and the build takes what they leave. Stopping (the key evicted,
or the process closing): the build is asked between pieces of msm_cpu.FILL_PIECE points and
drops what it made; ``stop`` waits for it, so the memory the engine's budget no longer
counts is freed when it returns.
"""

from __future__ import annotations

import os
import threading
import time

# How much lower the build thread's priority is than the process's (nice + NICE, at most 19).
NICE = 10


def _log():
    import logging  # (here: a one-shot command imports this module and builds no table)

    return logging.getLogger("cuzk.kernels")


def beside(curve: str, groups=(1, 2)) -> bool:
    """Whether tables of ``curve`` are built beside the proofs in this process: the native
    library's table kernel serves every group in ``groups``."""
    from cuzk import native
    from cuzk.kernels import msm_cpu

    return all(isinstance(msm_cpu.drivers(curve, g), native.Kernels) for g in groups)


def _lower_priority() -> None:
    """The calling thread's nice value raised by NICE (a no-op where threads have none)."""
    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + NICE))
    except (AttributeError, OSError):
        pass


class Build:
    """One key's build on its thread: ``make(stop, put)`` builds, asking ``stop()`` between
    pieces, and hands each finished table to ``put``, which installs it (``install(table)``)
    unless the build was stopped first: a table is in place whole or not at all."""

    def __init__(self, name: str, make, install):
        self.name = name
        self._make, self._install = make, install
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # install and stop never interleave
        self.error: BaseException | None = None
        self.secs = 0.0
        self.thread = threading.Thread(target=self._run, name=f"tables-{name}", daemon=True)

    def _run(self) -> None:
        _lower_priority()
        t0 = time.perf_counter()
        try:
            self._make(self._stopped.is_set, self._put)
        except BaseException as exc:  # (a table is an optimisation: the key proves without)
            self.error = exc
            _log().warning("tables of multiples for %s not built: %s", self.name, exc)
            return
        self.secs = time.perf_counter() - t0
        if not self._stopped.is_set():
            _log().info("tables of multiples for %s ready in %.1f s", self.name, self.secs)

    def _put(self, table) -> None:
        with self._lock:
            if table is not None and not self._stopped.is_set():
                self._install(table)

    def stop(self, wait: bool = True) -> None:
        """Ask the build to end (its result is dropped) and, with ``wait``, wait until it has:
        at most one piece's time."""
        with self._lock:
            self._stopped.set()
        if wait and self.thread is not threading.current_thread():
            self.thread.join()

    @property
    def running(self) -> bool:
        return self.thread.is_alive()


class Builds:
    """A device's builds, one per key id."""

    def __init__(self):
        self._lock = threading.Lock()
        self._builds: dict[str, Build] = {}

    def start(self, key_id: str, name: str, make, install) -> Build:
        """Start building a key's tables (a build already under way for it is stopped)."""
        self.stop(key_id)
        b = Build(name, make, install)
        with self._lock:
            self._builds[key_id] = b
        b.thread.start()
        return b

    def stop(self, key_id: str) -> None:
        """Stop the key's build, if any, and wait for it."""
        with self._lock:
            b = self._builds.pop(key_id, None)
        if b is not None:
            b.stop()

    def building(self, key_id: str) -> bool:
        """Whether the key's tables are still being built."""
        with self._lock:
            b = self._builds.get(key_id)
        return b is not None and b.running

    def wait(self, key_id: str, timeout: float | None = None) -> bool:
        """Wait for the key's build to end (True: none is running now)."""
        with self._lock:
            b = self._builds.get(key_id)
        if b is not None:
            b.thread.join(timeout)
        return not self.building(key_id)

    def get(self, key_id: str) -> Build | None:
        with self._lock:
            return self._builds.get(key_id)
