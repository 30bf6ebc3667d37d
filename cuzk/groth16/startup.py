"""Start-up of a one-shot prover process: load cached Numba kernels without the compiler.

Before it loads a kernel from the on-disk cache, Numba "refreshes" its CPU target: it imports
and registers the typing and lowering tables of every Numba feature (arrays, dicts, sets,
random, jitclass, ...), which a cached kernel never uses — they serve the compiler. Measured
at 2^15 for `cuzk prove`: ~100 ms of CPU for the refresh, against ~15 ms for what a cache hit
does need (the runtime, NRT) — the largest single item of the command's start-up after the
imports of numpy and numba themselves.

``lean_cache_loads()`` skips the refresh on cache hits for the duration of a ``with`` block:

- NRT is initialised (``rtsys.initialize``), and ``numba.cpython.hashing`` is imported, the
  one registry module that adds LLVM symbols when imported (Python's hash secret); the other
  symbols a kernel links against (helperlib, math, the parallel runtime, via the kernel's
  reload hook) are added without the refresh. An unresolved symbol would abort the process,
  so tests run `cuzk prove` as a process of its own on every fixture circuit.
- A cache miss still compiles correctly: Numba's compiler pipeline refreshes the target
  itself (``numba.core.compiler.compile_extra``) before typing anything.
- Other targets (CUDA) load as Numba loads them; so does everything when this Numba's
  ``Cache`` lacks the internals patched here.
"""

from __future__ import annotations

import contextlib
import threading

_lock = threading.Lock()
_users = 0  # blocks open in this process (any thread); the last one out restores Numba's
_original = None


@contextlib.contextmanager
def lean_cache_loads():
    """Within the block, cached Numba kernels load without refreshing Numba's CPU target."""
    from numba.core import caching

    cache = caching.Cache
    if not (
        hasattr(cache, "_guard_against_spurious_io_errors") and hasattr(cache, "_load_overload")
    ):
        yield
        return
    import numba.cpython.hashing  # noqa: F401  (adds the hash-secret symbols to LLVM)
    from numba.core.cpu import CPUContext
    from numba.core.runtime import rtsys

    def load_overload(self, sig, target_context):
        if not isinstance(target_context, CPUContext):  # e.g. CUDA: Numba's own way
            return _original(self, sig, target_context)
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    global _users, _original
    with _lock:
        if _users == 0:
            _original = cache.__dict__["load_overload"]
            cache.load_overload = load_overload
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                cache.load_overload = _original
