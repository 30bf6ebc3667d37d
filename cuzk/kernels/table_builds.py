"""Tables of multiples built beside the proofs: a device process that loads a key starts its
tables (cuzk.kernels.msm_cpu.build_table, per cuzk.groth16.tables or cuzk.plonk.tables) on a
thread of its own and proves at once without them; each table is put in
place when it is done, and the MSMs that start after that use it. A proof's bytes are the same
with or without a table, so a job never waits for one: on a 2^21 Groth16 key the tables
(5.45 GB, eight groups) took the device process ~9 minutes, which its first job waited for
when they were built in load_key.

The build runs beside the proofs only where it does not hold the interpreter: the native
library's table kernel (cuzk.native) is a C call that releases the GIL, and its run-time's
parallel loops may run from two threads at once. Numba's own build holds the GIL for the
call and its default threading layer refuses a second caller, so there the tables are built
in load_key as before (``beside(curve)`` says which).

Its share of the cores: the build runs its kernels on half the process's threads (at least
one), at the proofs' priority. Measured on two cores (a 2^19 PLONK key, a 256 MiB table,
~22 s of CPU to build, proofs back to back): built in load_key, the first job took 30.4 s and
the next 12.0-12.6 s; built at nice + 10 beside them, the first took 15.6 s but the build
starved (the proofs keep both cores busy) and the next jobs ran without the table, 14.8-14.9
s; so the build is not lowered: a table pays for itself within a few proofs, and a busy
daemon is where it matters. Stopping (the key evicted, or the process closing): the build is
asked between pieces of msm_cpu.FILL_PIECE points and drops what it made; ``stop`` waits for
it, so the memory the engine's budget no longer counts is freed when it returns.
"""

from __future__ import annotations

import threading
import time

# The build's threads: the process's kernel threads divided by this (at least one).
SHARE = 2


def _log():
    import logging  # (here: a one-shot command imports this module and builds no table)

    return logging.getLogger("cuzk.kernels")


def beside(curve: str, groups=(1, 2)) -> bool:
    """Whether tables of ``curve`` are built beside the proofs in this process: the native
    library's table kernel serves every group in ``groups``."""
    from cuzk import native
    from cuzk.kernels import msm_cpu

    return all(isinstance(msm_cpu.drivers(curve, g), native.Kernels) for g in groups)


def build_threads() -> int:
    """The threads a build beside the proofs runs its kernels on."""
    from cuzk import native

    return max(1, native.default_threads() // SHARE)


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
        from cuzk.kernels import threads

        threads.set_num_threads(build_threads())  # (this thread's kernels only)
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

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build to end: True when it put its tables in place (False: it failed,
        was stopped, or is still running after ``timeout``)."""
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)
        return not self.running and self.error is None and not self._stopped.is_set()

    def stop(self) -> None:
        """Ask the build to end (its result is dropped) and wait until it has: at most one
        piece's time."""
        with self._lock:
            self._stopped.set()
        if self.thread is not threading.current_thread():
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
        b = self.get(key_id)
        if b is not None:
            b.wait(timeout)
        return not self.building(key_id)

    def get(self, key_id: str) -> Build | None:
        with self._lock:
            return self._builds.get(key_id)
