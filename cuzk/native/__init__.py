"""Native kernels: cuzk's CPU proving kernels compiled ahead of time into a shared library
that a process loads with ctypes, without importing numba.

A one-shot command (`cuzk prove`, `cuzk fullprove`) spends most of its fixed cost importing
Numba and loading its cached kernels (docs/prover.md). ``cuzk warmup`` (and ``python -m
cuzk.native.build``) compiles the kernels a proof runs (cuzk.native.entries: the key checks,
synthesis, the H pipeline, the MSM drivers), each as a Numba cfunc with a C signature, into
one library per curve, linked with a small run-time of its own (runtime.c: memory, parallel
loops, threads) built beside it. The commands run within ``used()``; there the kernel
lookups of the prover (``kernels(module, curve, **params)``) return the library's functions
where the library for the curve exists and matches this machine and these sources, and
Numba's builds otherwise (the same kernels, compiled or loaded as before). A kernel the
library lacks, or arguments of other types than its entries', fall back to Numba's build.

A build (``cuzk warmup``) writes into ``folder()``: $CUZK_NATIVE_DIR, else
$NUMBA_CACHE_DIR/native, else ~/.cache/cuzk/native (XDG_CACHE_HOME). ``pip install`` builds
both curves' libraries into the installed package (``INSTALLED``, cuzk/native/lib; setup.py),
which is searched after ``folder()`` ($CUZK_NATIVE_DIR alone when set). Each file's name
carries ``key()``: a hash of the kernels' sources and of what compiled code depends on (the
CPU's model and flags, the Python build, NUMBA_CPU_NAME / NUMBA_CPU_FEATURES), so a changed
source, CPU or Python finds no library and takes Numba's path until the next warm-up; nothing
stale is ever loaded. ``CUZK_NATIVE=0`` turns the library off. When the install could not
build it (no C compiler, say: it leaves the reason in INSTALLED/NOT-BUILT), or built it for
another CPU or Python, the first command that looks for it says once how to build it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import sys
import threading
from pathlib import Path

from cuzk.arith.curves import DEFAULT

PACKAGE = Path(__file__).resolve().parent.parent  # the cuzk package folder

# What the library's code is compiled from (as package-relative folders or files): the shared
# arithmetic, the kernels, the sweeps and synthesis kernels, the build and its run-time.
SOURCES = (
    "arith",
    "kernels",
    "groth16/point_sweeps.py",
    "groth16/row_tests.py",
    "groth16/synthesis_kernels.py",
    "native",
)


class NativeKernelError(RuntimeError):
    """A kernel of the native library raised (e.g. out of memory); nothing it wrote is valid."""


def _source_files() -> list[Path]:
    files = []
    for rel in SOURCES:
        p = PACKAGE / rel
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.suffix in (".py", ".c"))
        else:
            files.append(p)
    return files


def _cpu_identity() -> str:
    """The CPU the code is for, read without LLVM: /proc/cpuinfo's model and flags (Linux),
    else the machine name; NUMBA_CPU_NAME / NUMBA_CPU_FEATURES when set (the build honours
    them, as Numba does)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
    except OSError:
        pass
    parts = [
        os.uname().machine,
        fields.get("vendor_id", ""),
        fields.get("model name", ""),
        fields.get("flags", fields.get("Features", "")),
        os.environ.get("NUMBA_CPU_NAME", ""),
        os.environ.get("NUMBA_CPU_FEATURES", ""),
    ]
    return "\n".join(parts)


@functools.cache
def key() -> str:
    """16 hex digits: the hash of the kernel sources, the CPU identity and the Python build."""
    h = hashlib.sha256()
    for f in _source_files():
        h.update(str(f.relative_to(PACKAGE)).encode() + b"\0")
        h.update(f.read_bytes())
    h.update(_cpu_identity().encode())
    h.update(sys.version.encode() + sys.platform.encode())
    return h.hexdigest()[:16]


# Where `pip install` builds the libraries (setup.py): inside the installed package.
INSTALLED = Path(__file__).resolve().parent / "lib"
NOT_BUILT = "NOT-BUILT"  # in INSTALLED: why the install did not build them (one line)
HINT_SHOWN = "install-hint-shown"  # in folder(): the hint below was said once


def folder() -> Path:
    """Where a build (`cuzk warmup`, ``python -m cuzk.native.build``) writes."""
    explicit = os.environ.get("CUZK_NATIVE_DIR")
    if explicit:
        return Path(explicit)
    numba_cache = os.environ.get("NUMBA_CACHE_DIR")
    if numba_cache:
        return Path(numba_cache) / "native"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cuzk" / "native"


def folders() -> list[Path]:
    """Where the libraries are looked for, in order: $CUZK_NATIVE_DIR alone when set, else
    folder() and then the install's build (INSTALLED)."""
    if os.environ.get("CUZK_NATIVE_DIR"):
        return [folder()]
    return [folder(), INSTALLED]


def _find(name: str) -> Path:
    """The first of folders() holding ``name``, else where a build writes it (folder())."""
    for d in folders():
        if (d / name).exists():
            return d / name
    return folder() / name


def runtime_path() -> Path:
    return _find(f"runtime-{key()}.so")


def library_path(curve: str = DEFAULT) -> Path:
    return _find(f"kernels-{curve}-{key()}.so")


def default_threads() -> int:
    """NUMBA_NUM_THREADS when set (as Numba reads it), else the CPUs this process may use."""
    explicit = os.environ.get("NUMBA_NUM_THREADS")
    if explicit:
        return max(1, int(explicit))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# --- loading --------------------------------------------------------------------------------

_lock = threading.Lock()
_enabled = False
_runtime: Runtime | None = None
_libraries: dict[str, Library | None] = {}
_kernels: dict[tuple, object] = {}
calls: dict[str, int] = {}  # entry name -> calls this process made into the library


def enable(on: bool = True) -> None:
    """Use the native library from now on in this process (unless CUZK_NATIVE=0)."""
    global _enabled
    _enabled = bool(on) and os.environ.get("CUZK_NATIVE", "1") != "0"
    _kernels.clear()


@contextlib.contextmanager
def used(on: bool = True):
    """Within the block, use the native library (as enable) or not; the setting before is
    restored after it (a command run in process, e.g. under click's CliRunner, leaves the
    process as it found it)."""
    before = _enabled
    enable(on)
    try:
        yield
    finally:
        enable(before)


def enabled() -> bool:
    return _enabled


def serves(curve: str = DEFAULT) -> bool:
    """Whether this process runs ``curve``'s kernels from the library: enabled, and built here."""
    return _enabled and library(curve) is not None


class Runtime:
    """The run-time library (runtime.c), loaded once per process and shared by the kernel
    libraries (RTLD_GLOBAL: their Numba run-time symbols resolve to it)."""

    def __init__(self, path: Path):
        self.cdll = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        c = self.cdll
        c.cuzk_native_init.argtypes = [ctypes.c_int]
        c.cuzk_native_init.restype = None
        c.cuzk_native_errors.restype = ctypes.c_long
        c.get_num_threads.restype = ctypes.c_int
        c.set_num_threads.argtypes = [ctypes.c_int]
        c.set_num_threads.restype = None
        c.set_parallel_chunksize.argtypes = [ctypes.c_uint64]
        c.set_parallel_chunksize.restype = ctypes.c_uint64
        c.cuzk_native_init(default_threads())
        self.errors = c.cuzk_native_errors
        self.get_num_threads = c.get_num_threads
        self.set_num_threads = c.set_num_threads
        self.set_parallel_chunksize = c.set_parallel_chunksize


def forget() -> None:
    """Look the libraries up again at their next use (the loaded run-time stays)."""
    with _lock:
        _libraries.clear()
        _kernels.clear()


def runtime() -> Runtime | None:
    """The loaded run-time when the native library is in use in this process, else None."""
    return _runtime if _enabled else None


def _load_runtime() -> Runtime | None:
    global _runtime
    if _runtime is None:
        path = runtime_path()
        if not path.exists():
            return None
        _runtime = Runtime(path)
    return _runtime


def library(curve: str = DEFAULT) -> Library | None:
    """The native library of ``curve`` for this machine and these sources, loaded; None when
    there is none (or it does not load: then Numba's builds are used)."""
    if curve in _libraries:
        return _libraries[curve]
    with _lock:
        if curve not in _libraries:
            lib = None
            path = library_path(curve)
            try:
                if path.exists() and _load_runtime() is not None:
                    lib = Library(path, _runtime)
                elif not path.exists():
                    _install_hint(curve)
            except OSError as e:  # a damaged file: Numba's path, and say why
                print(f"cuzk: not using {path}: {e}", file=sys.stderr)
            _libraries[curve] = lib
    return _libraries[curve]


def _install_hint(curve: str) -> None:
    """No library for ``curve`` here, though this is an install that meant to build it (its
    INSTALLED folder exists): say once (a stamp in folder()) why there is none and how to
    build it."""
    if os.environ.get("CUZK_NATIVE_DIR") or not INSTALLED.is_dir():
        return
    stamp = folder() / HINT_SHOWN
    if stamp.exists():
        return
    try:
        why = (INSTALLED / NOT_BUILT).read_text().strip().splitlines()[0]
    except (OSError, IndexError):
        if not any(INSTALLED.glob(f"kernels-{curve}-*.so")):
            return
        why = "built for another CPU, Python or source than this one"
    print(
        f"cuzk: the native kernel library ({curve}) is not built here ({why}): commands use "
        "Numba's kernels, slower to start; `cuzk warmup` (or `python -m cuzk.native.build "
        "[CURVE ...]`) builds it (needs a C compiler)",
        file=sys.stderr,
    )
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(f"{curve}: {why}\n")
    except OSError:
        pass


class Library:
    """One curve's kernel library: its functions by entry (cuzk.native.entries)."""

    def __init__(self, path: Path, rt: Runtime):
        from cuzk.native.entries import ENTRIES

        self.path = path
        self.runtime = rt
        self.cdll = ctypes.CDLL(str(path), mode=os.RTLD_NOW)
        self.functions = {}
        for e in ENTRIES:
            fn = getattr(self.cdll, e.symbol)
            types = []
            for a in e.args:
                if a.dtype is None:
                    types.append(ctypes.c_int64)
                else:  # pointer, [span,] shape, [strides]
                    extra = a.ndim + (1 + a.ndim if a.strided else 0)
                    types += [ctypes.c_void_p] + [ctypes.c_int64] * extra
            if e.returns:
                types.append(ctypes.POINTER(ctypes.c_int64))
            fn.argtypes = types
            fn.restype = None
            self.functions[e.name] = fn

    def call(self, name: str, *args, returns: bool = False):
        """Call entry ``name`` with its C arguments (addresses, shapes and ints, as
        cuzk.native.entries lays them out); its int64 result where it ``returns`` one, else
        None. Counted in ``calls``; NativeKernelError when the kernel raised."""
        fn, errors = self.functions[name], self.runtime.errors
        before = errors()
        calls[name] = calls.get(name, 0) + 1
        if returns:
            result = ctypes.c_int64(0)
            fn(*args, ctypes.byref(result))
        else:
            fn(*args)
        if errors() != before:
            raise NativeKernelError(f"native kernel {name} raised (out of memory?); see stderr")
        return result.value if returns else None

    def kernels(self, module: str, curve: str, params: dict):
        from cuzk.native.entries import for_build

        by_fn = for_build(module, params)
        return Kernels(self, module, curve, params, by_fn) if by_fn else None


def strided_span(shape, strides, itemsize: int) -> int:
    """The items a strided array reaches from its first (its shape and byte strides): the
    span a ``strided`` argument passes (0 for an empty array)."""
    if 0 in shape:
        return 0
    return sum((d - 1) * s for d, s in zip(shape, strides, strict=True)) // itemsize + 1


def _c_args(entry, args):
    """The C arguments of ``entry`` for ``args``, or None when an array does not fit it (another
    dtype or number of dimensions, or an output that is not C-contiguous)."""
    import numpy as np

    out = []
    for spec, a in zip(entry.args, args, strict=True):
        if spec.dtype is None:
            out.append(int(a))
            continue
        if not isinstance(a, np.ndarray) or a.dtype != spec.dtype or a.ndim != spec.ndim:
            return None
        if spec.strided and (a.size == 0 or min(a.strides) <= 0):
            a = np.ascontiguousarray(a)  # (an empty or reversed view: its own copy)
        if spec.strided:
            out.append(a)
            out.append(strided_span(a.shape, a.strides, a.itemsize))
            out.extend(a.shape)
            out.extend(a.strides)
            continue
        if not a.flags.c_contiguous:
            if spec.out:
                return None
            a = np.ascontiguousarray(a)
        out.append(a)  # (kept alive through the call; its address taken below)
        out.extend(a.shape)
    return [x.ctypes.data if isinstance(x, np.ndarray) else x for x in out], out


class Kernels:
    """A build's kernels from the library (``name(*args)`` as Numba's build takes them), and
    any other attribute from Numba's build of the same module."""

    def __init__(self, lib: Library, module: str, curve: str, params: dict, by_fn: dict):
        self._module, self._curve, self._params = module, curve, params
        for name, entries in by_fn.items():
            setattr(self, name, self._caller(lib, name, entries))

    def _numba(self):
        from cuzk.arith.curves import curve_build

        return curve_build(self._module, self._curve, **self._params)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._numba(), name)

    def _caller(self, lib: Library, name: str, entries):
        def call(*args):
            for e in entries:
                c = _c_args(e, args)
                if c is not None:
                    return lib.call(e.name, *c[0], returns=e.returns)
            return getattr(self._numba(), name)(*args)

        call.__name__ = name
        return call


def kernels(module: str, curve: str = DEFAULT, **params: str):
    """The kernels of a build of ``module`` for ``curve`` (and ``params``, e.g. group="g1"):
    the native library's where enabled and present, else Numba's (cuzk.arith.curves.curve_build)."""
    if _enabled:
        k = (module, curve, tuple(sorted(params.items())))
        got = _kernels.get(k)
        if got is None:
            lib = library(curve)
            got = lib.kernels(module, curve, params) if lib is not None else None
            _kernels[k] = got if got is not None else False
        if got:
            return got
    from cuzk.arith.curves import curve_build

    return curve_build(module, curve, **params)
