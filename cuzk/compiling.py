"""Kernel compiles made visible: a notice on stderr when Numba compiles cuzk's kernels (a cache
miss), progress while it does, where the result is kept, and what a daemon reports of it
(GET /healthz "warming", `cuzk top`). `cuzk warmup` compiles them on purpose
(cuzk.groth16.warmup).

Numba compiles a kernel at its first call when its on-disk cache has no entry for this CPU,
Numba and Python (a fresh install, an upgrade, another machine), which takes minutes on a
small machine. Whether a call compiles is known only when it does: Numba announces each cache
miss as a "numba:compile" event (numba.core.event, its public event API) and a cache hit
announces nothing, so watching the events costs the warm path nothing at all.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

#: seconds between progress lines while kernels compile (the issue's bound is 15 s)
PROGRESS_SECS = float(os.environ.get("CUZK_COMPILE_PROGRESS_SECS", "10"))


def cache_location() -> str:
    """Where Numba keeps the compiled kernels of this process: NUMBA_CACHE_DIR's keyed folder
    (cuzk.arith.jit.key_numba_cache_on_sources), else the __pycache__ folders beside cuzk's
    sources, else Numba's user-wide cache (a read-only install)."""
    from numba.core import config

    from cuzk.arith.jit import key_numba_cache_on_sources

    key_numba_cache_on_sources()
    if config.CACHE_DIR:
        return str(config.CACHE_DIR)
    package = os.path.dirname(os.path.abspath(__file__))
    if os.access(package, os.W_OK):
        return f"the __pycache__ folders under {package} (set NUMBA_CACHE_DIR to choose)"
    try:
        from numba.misc.appdirs import user_cache_dir

        return user_cache_dir(appname="numba", appauthor=False)
    except Exception:  # pragma: no cover - Numba moved its helper: say what it does
        return "Numba's user-wide cache folder (set NUMBA_CACHE_DIR to choose)"


def machine() -> str:
    """What the compiled code is specific to: the CPU, Numba and Python versions."""
    import numba
    from llvmlite import binding as ll

    python = ".".join(map(str, sys.version_info[:3]))
    return f"CPU {ll.get_host_cpu_name()}, Numba {numba.__version__}, Python {python}"


def _functions(n: int) -> str:
    return f"{n} function" + ("" if n == 1 else "s")


class CompileWatch:
    """Listens to Numba's "numba:compile" events (cache misses) and reports them.

    ``say(line)`` gets one notice at the first compile (what, why, where it is kept), a
    progress line every ``interval`` seconds while compiles go on, and a closing line once
    none has run for an interval (or at ``close()``). ``on_change(state)`` gets
    ``warming()``'s dict when compiling starts or progresses and None when it is over."""

    def __init__(self, say, interval: float = PROGRESS_SECS, on_change=None, what="kernels"):
        self.say = say
        self.interval = interval
        self.on_change = on_change
        self.what = what
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread = None
        self.depth = 0
        self.compiled = 0  # functions compiled (every nesting level)
        self.total_compiled = 0
        self.started_at = None  # the current spell of compiling (None: idle)
        self.last_activity = 0.0
        self.current = ""
        self.where = ""
        self.listening_to: set[str] = set()  # the event modules it is registered with
        self.cuda_listener = None
        self._passes_seen: set[str] = set()

    # -- numba.core.event.Listener's interface (called in the compiling thread) ----------
    def on_start(self, event) -> None:
        first = False
        with self._lock:
            self.depth += 1
            self.last_activity = time.monotonic()
            disp = (event.data or {}).get("dispatcher")
            fn = getattr(disp, "py_func", None)
            if fn is not None:
                self.current = f"{fn.__module__}.{fn.__qualname__}"
            if self.started_at is None:
                self.started_at = time.monotonic()
                self.compiled = 0
                first = True
        if first:
            self._announce()

    def on_end(self, event) -> None:
        with self._lock:
            self.depth = max(0, self.depth - 1)
            self.compiled += 1
            self.total_compiled += 1
            self.last_activity = time.monotonic()

    def notify(self, event) -> None:
        if event.is_start:
            self.on_start(event)
        else:
            self.on_end(event)

    def compiler_pass(self, function: str | None) -> None:
        """One of a compile's passes starts (in `function`) or ends (None): numba-cuda
        announces these and no compile as such (see _CudaPasses)."""
        first = False
        with self._lock:
            self.last_activity = time.monotonic()
            if function is None:
                self.depth = max(0, self.depth - 1)
                return
            self.depth += 1
            if self.started_at is None:
                self.started_at = time.monotonic()
                self.compiled = 0
                self._passes_seen = set()
                first = True
            if function not in self._passes_seen:
                self._passes_seen.add(function)
                self.compiled += 1
                self.total_compiled += 1
            self.current = function
        if first:
            self._announce()

    # -- reporting -----------------------------------------------------------------------
    def warming(self) -> dict | None:
        """The compile under way as a JSON-ready dict (None when idle)."""
        with self._lock:
            if self.started_at is None:
                return None
            return {
                "reason": f"compiling the proving {self.what} for this machine (one time)",
                "secs": round(time.monotonic() - self.started_at, 1),
                "compiled": self.compiled,
                "compiling": self.current if self.depth else "",
                "cache": self.where,
            }

    def _announce(self) -> None:
        try:
            self.where = cache_location()
            on = machine()
        except Exception as e:  # never let a notice break a compile
            self.where, on = self.where or "?", f"this machine ({e})"
        self.say(
            f"compiling the proving {self.what} for this machine ({on}): a one-time wait of "
            f"minutes on a small machine; they are kept in {self.where}, and later runs load "
            "them in under a second (`cuzk warmup` compiles them ahead of time)"
        )
        self._changed()
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._progress, name="compile-progress", daemon=True
                )
                self._thread.start()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change(self.warming())
            except Exception:  # a reporting channel gone: the compile goes on
                pass

    def _progress(self) -> None:
        while not self._wake.wait(self.interval):
            with self._lock:
                if self.started_at is None:
                    continue
                now = time.monotonic()
                idle = self.depth == 0 and now - self.last_activity >= self.interval
            if idle:
                self._finish()
            else:
                state = self.warming()
                if state is not None:
                    doing = f" (now {state['compiling']})" if state["compiling"] else ""
                    self.say(
                        f"still compiling {self.what}: {_functions(state['compiled'])} in "
                        f"{state['secs']:.0f} s{doing}"
                    )
                    self._changed()

    def _finish(self) -> None:
        with self._lock:
            if self.started_at is None:
                return
            secs = time.monotonic() - self.started_at
            n = self.compiled
            self.started_at = None
        self.say(f"{self.what} compiled: {_functions(n)} in {secs:.0f} s, kept in {self.where}")
        if self.on_change is not None:
            try:
                self.on_change(None)
            except Exception:
                pass

    def close(self) -> None:
        """Stop reporting; the closing line if a compile was seen and not yet reported."""
        with self._lock:
            self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._finish()


_watches: list[CompileWatch] = []


class _CudaPasses:
    """numba-cuda's dispatcher announces no compile of a kernel, only each compiler pass
    ("numba-cuda:run_pass", on its own copy of the event module); this forwards them to a
    watch, one compiled function per function whose passes run (a cache hit runs none)."""

    def __init__(self, watch: CompileWatch):
        self.watch = watch

    def on_start(self, event) -> None:
        data = event.data or {}
        self.watch.compiler_pass(f"{data.get('module', '?')}.{data.get('qualname', '?')} (CUDA)")

    def on_end(self, event) -> None:
        self.watch.compiler_pass(None)

    def notify(self, event) -> None:
        (self.on_start if event.is_start else self.on_end)(event)


def _event_modules() -> list:
    """Numba's event module, and numba-cuda's (a copy of its own, announcing CUDA compiles)
    once numba.cuda is imported: the CPU path never imports it for this."""
    from numba.core import event

    mods = [event]
    cuda_event = sys.modules.get("numba.cuda.core.event")
    if cuda_event is not None and cuda_event is not event:
        mods.append(cuda_event)
    return mods


def _register(watch: CompileWatch, mods) -> None:
    for ev in mods:
        if ev.__name__ in watch.listening_to:
            continue
        if ev.__name__.startswith("numba.cuda"):
            ev.Listener.register(_CudaPasses)
            listener = watch.cuda_listener = _CudaPasses(watch)
            ev.register("numba-cuda:run_pass", listener)
        else:
            ev.Listener.register(CompileWatch)  # its interface, without importing numba above
            ev.register("numba:compile", watch)
        watch.listening_to.add(ev.__name__)


def install(watch: CompileWatch) -> CompileWatch:
    """Start `watch` listening to this process's compiles (until uninstall). Where numba is
    not imported yet (a command whose kernels may all come from the native library,
    cuzk.native) it listens from the moment Numba's event module is imported."""
    _watches.append(watch)
    if "numba.core.event" in sys.modules:
        _register(watch, _event_modules())
    elif not any(isinstance(f, _WhenNumbaImports) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenNumbaImports())
    return watch


class _WhenNumbaImports:
    """On sys.meta_path while watches wait for numba: finds numba.core.event with the other
    finders and, once that module has run, registers the installed watches (then leaves)."""

    def find_spec(self, name, path, target=None):
        if name != "numba.core.event":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            numba_imported()

        loader.exec_module = exec_module
        return spec


def numba_imported() -> None:
    """Have the installed watches listen to Numba's compiles."""
    if _watches:
        mods = _event_modules()
        for watch in list(_watches):
            _register(watch, mods)


def watch_cuda_compiles() -> None:
    """Have the installed watches hear CUDA compiles too (called where numba.cuda has just
    been imported: opening a CUDA device)."""
    with contextlib.suppress(ImportError):
        import numba.cuda.core.event  # noqa: F401
    mods = _event_modules()
    for watch in list(_watches):
        _register(watch, mods)


def uninstall(watch: CompileWatch) -> None:
    for ev in _event_modules() if watch.listening_to else ():
        if ev.__name__ in watch.listening_to:
            with contextlib.suppress(ValueError):
                if ev.__name__.startswith("numba.cuda"):
                    ev.unregister("numba-cuda:run_pass", watch.cuda_listener)
                else:
                    ev.unregister("numba:compile", watch)
            watch.listening_to.discard(ev.__name__)
    with contextlib.suppress(ValueError):
        _watches.remove(watch)
    watch.close()


def warming_here() -> list[dict]:
    """warming() of every watch installed in this process that is compiling now."""
    return [s for s in (w.warming() for w in list(_watches)) if s is not None]


def combine_warming(procs: list[tuple]) -> dict | None:
    """One "warming" dict for several processes' (name, pid, warming()) triples: the
    reason, the cache folder, and each process's figures; None when none compiles."""
    if not procs:
        return None
    first = procs[0][2]
    shared = ("reason", "cache")
    return {
        "reason": first.get("reason", "compiling kernels"),
        "cache": first.get("cache", ""),
        "processes": [
            {"process": name, "pid": pid, **{k: v for k, v in s.items() if k not in shared}}
            for name, pid, s in procs
        ],
    }


# -- beside a status board: what `cuzk top` on the machine shows while kernels compile -------
SIDECAR_DIR = "/dev/shm"
# not "cuzk-": the board's own prefix, whose every name the board code takes for a board
SIDECAR_PREFIX = "cuzkwarming."


def _warming_path(board_name: str) -> str:
    return os.path.join(SIDECAR_DIR, SIDECAR_PREFIX + board_name.lstrip("/"))


def _sweep_sidecars() -> None:
    """Remove what publish_warming left for boards that are gone (a daemon killed while its
    kernels compiled)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(SIDECAR_DIR):
            board = name[len(SIDECAR_PREFIX) :]
            if name.startswith(SIDECAR_PREFIX) and not os.path.exists(
                os.path.join(SIDECAR_DIR, board)
            ):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(SIDECAR_DIR, name))


def publish_warming(board_name: str, warming: dict | None) -> None:
    """Write the engine's warming() beside its board (None: remove it); best effort."""
    import json

    _sweep_sidecars()
    path = _warming_path(board_name)
    try:
        if warming is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(warming, f)
        os.replace(tmp, path)
    except OSError:  # no /dev/shm: `cuzk top --server` still shows it
        pass


def read_warming(board_name: str) -> dict | None:
    """What publish_warming wrote for the board, or None (nothing compiling, or unreadable)."""
    import json

    try:
        with open(_warming_path(board_name)) as f:
            warming = json.load(f)
    except (OSError, ValueError):
        return None
    return warming if isinstance(warming, dict) else None


def stderr_say(command: str):
    """say(line) for a command: "cuzk prove: line" on stderr, flushed at once."""

    def say(line: str) -> None:
        print(f"{command}: {line}", file=sys.stderr, flush=True)

    return say


@contextlib.contextmanager
def compile_notice(command: str):
    """Within the block, kernel compiles are announced on stderr as ``command: ...``."""
    watch = install(CompileWatch(stderr_say(command)))
    try:
        yield watch
    finally:
        uninstall(watch)
