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
- A cached kernel's library also carries the LLVM bitcode of everything it inlined, kept so
  that a later compile can inline it again; Numba parses it on every load (120 ms of the
  157 ms that nine loads cost at 2^15, and the parsed modules stay in memory). Within the
  block a library is loaded from its object code alone: the symbols it defines come from
  the object's ELF symbol table, and the bitcode is parsed only if something links against
  the library later (a cache miss compiling a caller), see ``_defer_bitcode``.
- Other targets (CUDA) load as Numba loads them; so does everything when this Numba's
  ``Cache`` lacks the internals patched here.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading

_lock = threading.Lock()
_users = 0  # blocks open in this process (any thread); the last one out restores Numba's
_original = None
_original_unserialize = None


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

    if not hasattr(rtsys, "_init"):
        yield
        return

    def load_overload(self, sig, target_context):
        if not isinstance(target_context, CPUContext):  # e.g. CUDA: Numba's own way
            return _original(self, sig, target_context)
        if not rtsys._init:
            _initialize_runtime(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    global _users, _original, _original_unserialize
    with _lock:
        if _users == 0:
            _original = cache.__dict__["load_overload"]
            cache.load_overload = load_overload
            _original_unserialize = _defer_bitcode()
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                cache.load_overload = _original
                if _original_unserialize is not None:
                    from numba.core.codegen import CPUCodeLibrary

                    CPUCodeLibrary._unserialize = _original_unserialize


def _initialize_runtime(ctx) -> None:
    """Numba's runtime (NRT) for ctx, its machine code loaded from a file of its own when one
    was written before: Numba compiles the runtime's functions from LLVM IR in every process
    (30-50 ms of a `cuzk prove` command). The file holds what Numba's own cache holds for a
    kernel (the library's object code and bitcode), under a name keyed by the Numba,
    llvmlite and Python versions and the CPU (Numba's codegen.magic_tuple()); anything wrong
    with it and the runtime is compiled as Numba compiles it."""
    import pickle

    from numba.core.runtime import nrtdynmod, rtsys

    path = _runtime_cache_path(ctx)
    compile_nrt_functions = nrtdynmod.compile_nrt_functions

    def load_or_compile(context):
        if path is not None and path.exists():
            try:
                return context.codegen().unserialize_library(pickle.loads(path.read_bytes()))
            except Exception:  # unreadable or stale: compile instead
                pass
        if path is None or not hasattr(nrtdynmod, "create_nrt_module"):
            return compile_nrt_functions(context)
        # compile_nrt_functions with the object code kept, as Numba keeps a kernel's
        ir_module, library = nrtdynmod.create_nrt_module(context)
        library.enable_object_caching()
        library.add_ir_module(ir_module)
        library.finalize()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(pickle.dumps(library.serialize_using_object_code()))
            os.replace(tmp, path)
        except Exception:  # a read-only install: compiled every time, as Numba does
            with contextlib.suppress(OSError):
                tmp.unlink()
        return library

    with _lock:
        nrtdynmod.compile_nrt_functions = load_or_compile
        try:
            rtsys.initialize(ctx)
        finally:
            nrtdynmod.compile_nrt_functions = compile_nrt_functions


def _runtime_cache_path(ctx):
    """Where _initialize_runtime keeps the runtime's machine code: beside Numba's cache
    (NUMBA_CACHE_DIR) or this package's __pycache__; None when it cannot be written."""
    import hashlib
    import sys
    from pathlib import Path

    import llvmlite
    import numba
    from numba.core import config

    key = repr((numba.__version__, llvmlite.__version__, sys.version, ctx.codegen().magic_tuple()))
    folder = (
        Path(config.CACHE_DIR) / "cuzk-runtime"
        if config.CACHE_DIR
        else Path(__file__).resolve().parent / "__pycache__"
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    return folder / f"numba-runtime-{hashlib.sha256(key.encode()).hexdigest()[:16]}.nrt"


def _defer_bitcode():
    """Load cached CPU libraries from their object code without parsing their bitcode (see
    the module's doc); returns Numba's own ``_unserialize`` to restore, or None when this
    Numba's code library lacks the internals relied on (then nothing is changed)."""
    from numba.core.codegen import CPUCodeLibrary

    needed = ("_unserialize", "_get_module_for_linking", "_set_compiled_object")
    if not all(hasattr(CPUCodeLibrary, name) for name in needed):
        return None
    original = CPUCodeLibrary.__dict__["_unserialize"]
    if not getattr(CPUCodeLibrary, "_cuzk_lazy_linking", False):
        linking = CPUCodeLibrary._get_module_for_linking

        def get_module_for_linking(self):
            bitcode = self.__dict__.pop("_cuzk_bitcode", None)
            if bitcode is not None:
                from llvmlite import binding as ll

                self._shared_module = ll.parse_bitcode(bitcode)
            return linking(self)

        CPUCodeLibrary._get_module_for_linking = get_module_for_linking
        CPUCodeLibrary._cuzk_lazy_linking = True

    def unserialize(cls, codegen, state):
        name, kind, data = state
        symbols = _elf_defined_symbols(data[0]) if kind == "object" else None
        if symbols is None:
            return original.__func__(cls, codegen, state)
        object_code, bitcode = data
        self = codegen.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(object_code)
        self._cuzk_bitcode = bitcode
        self._finalize_final_module()
        self._codegen._engine._defined_symbols |= symbols
        return self

    CPUCodeLibrary._unserialize = classmethod(unserialize)
    return original


def _elf_defined_symbols(obj: bytes) -> set[str] | None:
    """The names an ELF64 little-endian object file defines (its .symtab: functions and
    data, not sections or files), or None when obj is not such a file."""
    if len(obj) < 64 or obj[:6] != b"\x7fELF\x02\x01":
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    names: set[str] = set()
    for k in range(shnum):
        sh = shoff + k * shentsize
        if struct.unpack_from("<I", obj, sh + 4)[0] != 2:  # SHT_SYMTAB
            continue
        offset, size = struct.unpack_from("<QQ", obj, sh + 0x18)
        (link,) = struct.unpack_from("<I", obj, sh + 0x28)
        (entsize,) = struct.unpack_from("<Q", obj, sh + 0x38)
        (strings,) = struct.unpack_from("<Q", obj, shoff + link * shentsize + 0x18)
        for sym in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", obj, sym)
            if st_name == 0 or st_shndx == 0 or (st_info & 0xF) in (3, 4):  # undefined,
                continue  # a section or a file
            start = strings + st_name
            names.add(obj[start : obj.index(b"\0", start)].decode())
    return names


# glibc's mallopt parameter: requests at least this large are served by mmap of their own.
_M_MMAP_THRESHOLD = -3


def return_freed_arrays_to_the_system(threshold: int = 1 << 20) -> bool:
    """Have glibc serve every allocation of ``threshold`` bytes or more by a map of its own,
    returned to the system when freed. By default glibc raises that threshold after the
    first large free (up to 32 MiB), and from then on keeps freed arrays (an MSM's digits,
    its threads' scratch) in its heaps: measured at 2^17, ~20 MiB of a `cuzk prove`
    process's peak that nothing used any more. For a one-shot process; True when set
    (False off glibc)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold)))
    except (OSError, AttributeError):  # no libc symbols to find, or no mallopt (musl)
        return False
