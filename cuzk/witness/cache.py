"""Compiled circom .wasm modules, cached in this process and on disk (wasmtime serialized).

Compiling a circuit's .wasm to machine code (Cranelift) is the slow part of starting a
witness calculator: tens of milliseconds for a small circuit, seconds for a large one. A
compiled module is kept twice:

- in this process, by the SHA-256 of the .wasm bytes: later calculators of the same circuit
  share the Module (a daemon pays compilation once per circuit);
- on disk, as `wasmtime`'s serialized module, in `$CUZK_CACHE_DIR/wasm/` (default
  `$XDG_CACHE_HOME/cuzk/wasm`, `~/.cache/cuzk/wasm`), named by the same hash: a new
  process reads the file instead of compiling (read, not mapped: see load_module). Files are written
  atomically (temporary name, rename); a file wasmtime will not load (another version or
  CPU, damage) is compiled again and replaced. The folder is made private to the user
  (0700): loading a serialized module runs its machine code, so it must be the user's own.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import tempfile
import threading
from pathlib import Path

_lock = threading.Lock()
_wasm_runtime = None
_modules: dict[str, object] = {}  # sha256 hex -> wasmtime.Module


def wasm_runtime():
    """The process's wasmtime Engine, the runtime every circuit Module shares (one a process;
    not cuzk's proving engine)."""
    global _wasm_runtime
    with _lock:
        if _wasm_runtime is None:
            import wasmtime

            _wasm_runtime = wasmtime.Engine(wasmtime.Config())
        return _wasm_runtime


def cache_dir() -> Path:
    """Where serialized modules live: $CUZK_CACHE_DIR/wasm, else the user's cache folder."""
    base = os.environ.get("CUZK_CACHE_DIR")
    if base:
        return Path(base) / "wasm"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "cuzk" / "wasm"


def cache_file(digest: str) -> Path:
    """The serialized module of the wasm whose SHA-256 is `digest`. wasmtime records its
    version and settings in the file and refuses a file of another; load_module then
    compiles again and replaces it."""
    return cache_dir() / f"{digest}.cwasm"


def load_module(code: bytes, stats: dict | None = None):
    """The compiled Module of `code` (wasm bytes): from this process, the disk cache, or
    compiled now (then saved). Raises wasmtime.WasmtimeError for bytes that are not wasm.
    `stats`, when given, gets "source": "process" | "disk" | "compiled" and "sha256"."""
    import wasmtime

    digest = hashlib.sha256(code).hexdigest()
    if stats is not None:
        stats["sha256"] = digest
    with _lock:
        module = _modules.get(digest)
    if module is not None:
        if stats is not None:
            stats["source"] = "process"
        return module
    runtime = wasm_runtime()
    path = cache_file(digest)
    module = None
    if path.exists():
        try:
            # From bytes, not deserialize_file: that maps the file, and a file truncated or
            # rewritten in place while the module lives (a damaged cache repaired by hand,
            # another tool sharing the folder) makes the process die of SIGBUS when the module
            # is next touched, at the latest when it is freed.
            module = wasmtime.Module.deserialize(runtime, path.read_bytes())
            source = "disk"
        except Exception:
            module = None  # another wasmtime, another CPU or a damaged file: compile again
    if module is None:
        module = wasmtime.Module(runtime, code)
        source = "compiled"
        _save(path, module)
    if stats is not None:
        stats["source"] = source
    with _lock:
        module = _modules.setdefault(digest, module)
    return module


def _save(path: Path, module) -> None:
    """Write the serialized module atomically; a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = module.serialize()
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cwasm")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def forget_process_cache() -> None:
    """Drop the in-process modules (tests: make the next load go to disk)."""
    with _lock:
        _modules.clear()


# Free the cached modules while wasmtime is still whole: left to the interpreter's teardown,
# a Module's finalizer can run after wasmtime's own globals are gone and prints "Exception
# ignored in Managed.__del__ ... 'NoneType' object is not callable" at exit.
atexit.register(forget_process_cache)
