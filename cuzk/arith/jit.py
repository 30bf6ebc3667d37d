"""Compile targets: one Python source of field, curve and kernel logic becomes Numba CPU
functions or CUDA device functions.

How it works
------------
A shared source module (e.g. ``cuzk.arith.field``) starts with ``T = building()`` and takes
its decorator and primitive layer from ``T``:

    T = building()
    device_fn = T.device_fn          # njit on the CPU, cuda.jit(device=True) on CUDA
    mac, adc, sbb, mul_lo = T.prims  # 64-bit limb primitives for this target

Imported normally, a shared module is the CPU build (``building()`` returns the CPU target),
so CPU code, its Numba cache and its tracebacks are ordinary. ``get_target("cuda").load(name)``
executes the same source file again into a separate module object while ``building()``
returns the CUDA target, so every ``@device_fn`` there becomes a CUDA device function, and
names it imports through ``T.load(...)`` resolve to the CUDA builds of their modules.

Under ``NUMBA_ENABLE_CUDASIM=1`` (set before numba is imported) the CUDA target runs in the
simulator, which executes device functions as Python; LLVM intrinsics cannot run there, so the
primitive layer switches to a pure-Python twin (see ``cuzk.arith.limbs``). Everything above
the primitive layer is shared by all three.

Parametrized builds
-------------------
A shared source can also be built more than once per target, with parameters:
``T.load("cuzk.arith.group", group="g2")`` executes ``group.py`` with ``building()`` returning a
Build whose ``param("group")`` is ``"g2"``, so the module binds G2's field operations as module
constants and Numba compiles them straight through (no function arguments, no closures). Each
build is its own module object (``cuzk.arith.group[cpu:g2]``), and every function it
decorates gets the build's suffix in its ``__qualname__`` (``add[g2]``): Numba's disk cache
names entries by file, qualname and line, so two builds of one source never share an entry.
The arithmetic's curve is such a parameter too (``curve="bls12_381"``, see
cuzk.arith.curves); ``T.param(name, default)`` reads an optional one.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
import types

CPU = "cpu"
CUDA = "cuda"

_lock = threading.RLock()


class _Builds(threading.local):
    """The builds this thread is executing (Target.load), innermost last. Per thread: a plain
    import of a shared source in one thread (the default curve's build, e.g. a BN254 proof's
    kernels) while another thread executes a parametrized build (a BLS12-381 proof's) must
    see the plain build, not the other thread's; a shared stack gave the BN254 module the
    BLS12-381 constants, and every BN254 proof of that process was invalid (the soak's first
    concurrent proofs of both curves after a device process restart, bench/bench_soak.py)."""

    def __init__(self):
        self.stack: list[Build] = []


_building = _Builds()
_targets: dict[str, Target] = {}


# The shared arithmetic sources every kernel inlines. Numba's on-disk cache checks only the
# cached function's own file, so a kernel in msm_cpu.py that inlines curve.py would keep stale
# code after curve.py changes. When NUMBA_CACHE_DIR is set, the cache lives in a
# subdirectory named after a hash of these files and of the toolchain (toolchain_key):
# changing one recompiles every user.
SHARED_SOURCES = (
    "cuzk/arith/jit.py",
    "cuzk/arith/limbs.py",
    "cuzk/arith/constants.py",
    "cuzk/arith/radix.py",  # builds the limb constants of constants.py
    "cuzk/arith/curves.py",  # the curve registry and the Montgomery constants' derivation
    "cuzk/arith/bls12_381.py",
    "cuzk/arith/field.py",
    "cuzk/arith/group.py",
    "cuzk/arith/curve.py",
    "cuzk/kernels/msm.py",
    "cuzk/kernels/buckets.py",
    "cuzk/kernels/ntt.py",
    "cuzk/arith/fq12.py",
    "cuzk/arith/pairing.py",
    "cuzk/arith/subgroup.py",
)
_cache_keyed = False


def toolchain_key() -> tuple:
    """What compiled code depends on besides its source: the Numba, llvmlite and Python
    builds, and the CPU code is generated for (Numba's NUMBA_CPU_NAME / NUMBA_CPU_FEATURES
    when set, as its code generator reads them, else the host's name and features). Numba's
    own cache checks its version, the Python minor version and the CPU, not llvmlite's nor a
    Python patch build: keying the cache folder on all of them means a changed one compiles
    into a folder of its own and never loads code built by another (0.6 ms)."""
    import llvmlite
    import numba

    cpu, features = cpu_target()
    return (numba.__version__, llvmlite.__version__, sys.version, sys.platform, cpu, features)


def cpu_target() -> tuple[str, str]:
    """(CPU name, features) Numba's code generator compiles for: NUMBA_CPU_NAME /
    NUMBA_CPU_FEATURES when set, else the host's."""
    from llvmlite import binding as ll
    from numba.core import config

    cpu = config.CPU_NAME or ll.get_host_cpu_name()
    if config.CPU_FEATURES is not None:
        features = config.CPU_FEATURES
    elif config.CPU_NAME:
        features = ""
    else:
        features = ll.get_host_cpu_features().flatten()
    return cpu, features


def cache_folder_name(sources_digest: bytes, toolchain: tuple) -> str:
    """The keyed cache folder's name: ``arith-`` and 12 hex digits of both keys' hash."""
    digest = hashlib.sha256(sources_digest)
    digest.update(repr(toolchain).encode())
    return "arith-" + digest.hexdigest()[:12]


def key_numba_cache_on_sources() -> None:
    """Point numba's cache (when NUMBA_CACHE_DIR is set) at ``$NUMBA_CACHE_DIR/arith-<hash>``
    of SHARED_SOURCES and toolchain_key(). Runs before the first shared-module decorator
    (field.py imports this module first), so every cached kernel of the process uses the
    keyed directory."""
    global _cache_keyed
    with _lock:
        if _cache_keyed:
            return
        _cache_keyed = True
        base = os.environ.get("NUMBA_CACHE_DIR")
        if not base:
            return
        from numba.core import config

        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        digest = hashlib.sha256()
        for rel in SHARED_SOURCES:
            digest.update(rel.encode())
            try:
                with open(os.path.join(root, rel), "rb") as f:
                    digest.update(f.read())
            except OSError:  # an installed copy without some file: still a stable key
                digest.update(b"-")
        config.CACHE_DIR = os.path.join(base, cache_folder_name(digest.digest(), toolchain_key()))


class TargetUnavailable(RuntimeError):
    """Raised when CUDA is asked for but neither a GPU nor the simulator is there."""


def cuda_simulated() -> bool:
    """True when numba.cuda is the simulator (NUMBA_ENABLE_CUDASIM=1 before numba import)."""
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", 0))


def cuda_available() -> bool:
    """True when CUDA kernels can run here: a GPU, or the simulator."""
    if cuda_simulated():
        return True
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # numba-cuda absent or driver broken: no CUDA
        return False


class Target:
    """One compile target: its decorator, its primitive layer, its builds of shared modules."""

    def __init__(self, name: str):
        if name not in (CPU, CUDA):
            raise ValueError(f"unknown compile target {name!r} (expected 'cpu' or 'cuda')")
        self.name = name
        self._modules: dict[tuple, types.ModuleType] = {}
        self._prims = None

    def __repr__(self):
        sim = " (simulator)" if self.simulated else ""
        return f"<Target {self.name}{sim}>"

    @property
    def simulated(self) -> bool:
        return self.name == CUDA and cuda_simulated()

    # -- decorators --------------------------------------------------------------------
    def device_fn(self, fn):
        """Compile ``fn`` as a function callable from kernels of this target."""
        key_numba_cache_on_sources()
        if self.name == CPU:
            from numba import njit

            # LLVM inlines these small functions into their callers by itself (measured: no
            # gain from inline="always", which multiplies compile time).
            return njit(cache=True, nogil=True)(fn)
        from numba import cuda

        if self.simulated:
            return cuda.jit(device=True)(fn)
        # forceinline: NVVM inlines every device function into its kernel (the PTX has no
        # calls). Numba-level inline="always" gives the same PTX but copies and re-types the
        # Numba IR at every call site: measured 96 s vs 6 s to compile a G1 scalar-mult kernel.
        _allow_ptx_without_driver()
        return cuda.jit(device=True, forceinline=True)(fn)

    def row_fn(self, fn):
        """Like device_fn, for the small helpers that read and write array rows: on the CPU
        they are inlined at the Numba IR level, since as separate LLVM functions each call
        passes every array as seven scalars plus reference counting (measured in the MSM
        bucket loop: 178 -> 145 ns per batch-affine addition at 2^16). CUDA inlines them
        anyway (forceinline)."""
        if self.name == CPU:
            key_numba_cache_on_sources()
            from numba import njit

            return njit(cache=True, nogil=True, inline="always")(fn)
        return self.device_fn(fn)

    @property
    def prims(self):
        """The 64-bit limb primitives (mac, adc, sbb, mul_lo) for this target."""
        if self._prims is None:
            from cuzk.arith import limbs

            if self.name == CPU:
                self._prims = limbs.cpu_primitives()
            elif self.simulated:
                self._prims = limbs.python_primitives()
            else:
                self._prims = limbs.cuda_primitives()
        return self._prims

    def mont_mul_asm(self, p, inv, reduce: bool = True):
        """This target's assembly Montgomery multiplication for modulus p, or None where it
        has none (CUDA; a CPU without BMI2/ADX; CUZK_NO_ASM set): see cuzk.arith.limbs.
        reduce=False: its variant without the final subtraction (a result below 2p)."""
        from cuzk.arith import limbs

        if self.name == CPU and limbs.x86_mont_mul_available():
            return limbs.x86_mont_mul(p, inv, reduce)
        return None

    # -- shared modules ----------------------------------------------------------------
    def load(self, module_name: str, **params: str) -> types.ModuleType:
        """The build of shared source module ``module_name`` for this target, with
        ``params`` (see "Parametrized builds" above). The plain CPU build is the module
        imported normally.

        A build is imported through Python's import system under its own name
        (``cuzk.arith.field[cpu:bls12_381]``, _BuildFinder), so it takes that module's import
        lock like any import: one global lock held across a build's execution deadlocked
        against the module locks of plain imports (a device process's finalizer building
        BLS12-381's group held it and waited for the plain field module, which a worker
        thread was importing, waiting for it: every thread of the process stopped, found by
        the soak, bench/bench_soak.py). Python detects a cycle between module locks and
        raises instead of hanging."""
        if self.name == CPU and not params:
            return importlib.import_module(module_name)
        build = Build(self, params)
        key = (module_name, build.params)
        module = self._modules.get(key)
        if module is not None:
            return module
        build.module_name = f"{module_name}[{':'.join((self.name, *build.params_values))}]"
        with _lock:  # a leaf: held only to register the name
            _BuildFinder.builds.setdefault(build.module_name, (build, module_name))
        _BuildFinder.install()
        module = importlib.import_module(build.module_name)
        self._modules[key] = module
        return module


class _BuildLoader:
    """Executes one build's module: the shared source's own bytecode (its .pyc when there is
    one, as for an import: compiling the source again cost each build ~3 ms at every process
    start) with the build on this thread's stack, so that its ``building()`` returns it."""

    def __init__(self, build: Build, source_spec):
        self.build, self.source_spec = build, source_spec

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        module.__file__ = self.source_spec.origin
        module.__package__ = self.source_spec.parent
        code = self.source_spec.loader.get_code(self.source_spec.name)
        _building.stack.append(self.build)
        try:
            exec(code, module.__dict__)
        finally:
            _building.stack.pop()


class _BuildFinder:
    """On sys.meta_path: finds the builds Target.load has named (and only those)."""

    builds: dict[str, tuple] = {}  # build name -> (Build, shared source module name)
    _installed = False

    @classmethod
    def install(cls) -> None:
        with _lock:
            if not cls._installed:
                sys.meta_path.insert(0, cls)
                cls._installed = True

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        entry = cls.builds.get(fullname)
        if entry is None:
            return None
        build, module_name = entry
        # Building needs no GPU (kernels compile to PTX anywhere); launching does, and
        # require_cuda() is what launch sites call first.
        source = importlib.util.find_spec(module_name)
        if source is None or source.origin is None:
            raise ImportError(f"no shared source module {module_name!r}")
        return importlib.util.spec_from_loader(
            fullname, _BuildLoader(build, source), origin=source.origin
        )

    @classmethod
    def invalidate_caches(cls) -> None:
        pass


class Build:
    """One build of a shared source: a Target plus the build's parameters.

    ``building()`` returns one while a shared module executes. It offers the target's
    decorators and primitives, renaming each decorated function for its build (qualname
    suffix ``[g2]``) so that builds never share a Numba cache entry, and ``param(name)``.
    """

    def __init__(self, target: Target, params: dict[str, str] | None = None):
        self.target = target
        self.params = tuple(sorted((params or {}).items()))
        self.module_name: str | None = None  # its module's name, once Target.load names it
        for name, value in self.params:
            if not (isinstance(value, str) and value.isidentifier()):
                raise ValueError(f"build parameter {name}={value!r}: expected an identifier")

    def __repr__(self):
        return f"<Build {self.target.name}{self.suffix}>"

    def __getattr__(self, name):  # name, simulated, prims, mont_mul_asm, load, ...
        return getattr(self.target, name)

    @property
    def params_values(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.params)

    @property
    def suffix(self) -> str:
        """ "" for the plain build, else "[v1,v2]" from the parameter values."""
        return f"[{','.join(self.params_values)}]" if self.params else ""

    def param(self, name: str, default: str | None = None) -> str:
        """The value of build parameter ``name``; ``default`` where the build has none (a
        clear error where there is no default either)."""
        for key, value in self.params:
            if key == name:
                return value
        if default is not None:
            return default
        raise LookupError(
            f"this shared source needs build parameter {name!r}: "
            f"load it with T.load(module, {name}=...)"
        )

    def _named(self, fn):
        if self.params:
            fn.__qualname__ = f"{fn.__qualname__}{self.suffix}"
        return fn

    def device_fn(self, fn):
        return self.target.device_fn(self._named(fn))

    def row_fn(self, fn):
        return self.target.row_fn(self._named(fn))

    def njit(self, **options):
        """numba.njit(cache=True, nogil=True, **options) for a CPU-only function of the build
        (drivers with prange loops); renamed like every decorated function."""
        if self.target.name != CPU:
            raise TypeError(f"T.njit is for the CPU build, not {self.target.name}")
        key_numba_cache_on_sources()
        from numba import njit

        opts = {"cache": True, "nogil": True, **options}

        def decorate(fn):
            return njit(**opts)(self._named(fn))

        return decorate

    def kernel(self, fn):
        """Name a CUDA kernel's Python function for its build and return it uncompiled: the
        module that launches it compiles it (disk-cached by that name on a GPU)."""
        return self._named(fn)


# Compute capability assumed for device functions compiled on a machine with no CUDA driver
# (PTX only); kernels pass their own cc to numba.cuda.compile_ptx.
PTX_ONLY_CC = (9, 0)


class _PtxOnlyDevice:
    compute_capability = PTX_ONLY_CC


def _allow_ptx_without_driver() -> None:
    """Let device functions compile where no CUDA driver exists.

    numba-cuda compiles a (non-inlined) device function for ``get_current_device()``'s
    compute capability, which needs a driver; kernels themselves compile to PTX anywhere with
    ``compile_ptx(..., cc=...)``. Where no GPU is usable, answer that lookup with PTX_ONLY_CC
    (the NVVM IR of a device function does not depend on it: the kernel's cc decides the
    PTX). Where a GPU exists nothing changes.
    """
    with _lock:
        from numba.cuda import dispatcher

        if getattr(dispatcher.get_current_device, "_cuzk_ptx_only", None) is not None:
            return
        real = dispatcher.get_current_device
        try:
            from numba import cuda

            usable = bool(cuda.is_available())
        except Exception:
            usable = False
        if usable:
            real._cuzk_ptx_only = False
            return

        def get_current_device():
            return _PtxOnlyDevice()

        get_current_device._cuzk_ptx_only = True
        dispatcher.get_current_device = get_current_device


def require_cuda() -> None:
    """Fail fast, with the reason, where CUDA kernels are about to be launched."""
    if not cuda_available():
        raise TargetUnavailable(
            "CUDA requested but no CUDA GPU was found "
            "(set NUMBA_ENABLE_CUDASIM=1 before numba is imported to use the simulator)"
        )


def get_target(name: str) -> Target:
    """The Target called ``name`` ("cpu" or "cuda")."""
    with _lock:
        if name not in _targets:
            _targets[name] = Target(name)
        return _targets[name]


def building() -> Build:
    """The build a shared module is executing for: the plain CPU build unless Target.load
    is running that very module (its top level calls this). A plain import nested in a build
    (buckets.py's ``from cuzk.kernels.msm import ...`` while BLS12-381's buckets build runs,
    msm not yet imported) is the plain build: it once saw the outer build, so the plain
    (BN254) msm module took BLS12-381's field, and BN254 kernels compiled in that process
    named the BLS12-381 build's modules in their disk-cache entries, which a later process
    could not load (ModuleNotFoundError; found by the soak, bench/bench_soak.py)."""
    stack = _building.stack
    if stack and stack[-1].module_name == sys._getframe(1).f_globals.get("__name__"):
        return stack[-1]
    return Build(get_target(CPU))


def default_device_target() -> str:
    """ "cuda" where a real GPU is present (or CUZK_TARGET=cuda), else "cpu"."""
    forced = os.environ.get("CUZK_TARGET")
    if forced:
        return forced
    return CUDA if (not cuda_simulated() and cuda_available()) else CPU


# -- CUDA kernels: one registry, one launch helper ----------------------------------------
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS_PER_BLOCK = 16  # the simulator runs each thread of a block as a Python thread


def _threads_per_block(requested: int | None) -> int:
    if requested is None:
        return SIMULATOR_THREADS_PER_BLOCK if cuda_simulated() else THREADS_PER_BLOCK
    return requested


class KernelTable(dict):
    """The CUDA kernels of one module: ``{name: (python function, argument types)}``, plus
    ``expect`` (``{name: [substring, ...]}`` its PTX must contain; tests/test_ptx.py compiles
    every table for cc 9.0 and checks them).

    ``table.kernel(name)`` compiles a kernel at its first use (for the argument types the
    launch sites pass) and caches it on disk where a GPU exists; ``table.launch(name, n,
    *args)`` runs it over n threads. One table per kernel module, the same code for all.
    """

    def __init__(self, kernels: dict, expect: dict | None = None):
        super().__init__(kernels)
        self.expect = dict(expect or {})
        self._compiled: dict[str, object] = {}
        self._compile_lock = threading.Lock()

    def kernel(self, name: str):
        """The launchable dispatcher of kernel ``name``."""
        k = self._compiled.get(name)
        if k is None:
            with self._compile_lock:
                k = self._compiled.get(name)
                if k is None:
                    from numba import cuda

                    fn, _ = self[name]
                    sim = cuda_simulated()
                    k = self._compiled[name] = cuda.jit(fn) if sim else cuda.jit(fn, cache=True)
        return k

    def configure(self, name: str, n: int, stream=0, threads_per_block: int | None = None):
        """Kernel ``name`` configured for one thread per item of ``n`` (n >= 1)."""
        require_cuda()
        threads = max(1, min(_threads_per_block(threads_per_block), n))
        return self.kernel(name)[(n + threads - 1) // threads, threads, stream]

    def launch(self, name: str, n: int, *args, stream=0, threads_per_block=None) -> None:
        """Run kernel ``name`` over ``n`` items (nothing for n = 0)."""
        if n > 0:
            self.configure(name, n, stream, threads_per_block)(*args)
