"""Compile targets: one Python source of field, curve and kernel logic becomes Numba CPU
functions or CUDA device functions.

How it works
------------
A shared source module (e.g. ``cuzk.bn254.field``) starts with ``T = building()`` and takes
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
primitive layer switches to a pure-Python twin (see ``cuzk.bn254.limbs``). Everything above
the primitive layer is shared by all three.
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
_building: list[Target] = []
_targets: dict[str, Target] = {}


# The shared arithmetic sources every kernel inlines. Numba's on-disk cache checks only the
# cached function's own file, so a kernel in msm_cpu.py that inlines curve.py would keep stale
# code after curve.py changes. When NUMBA_CACHE_DIR is set, the cache lives in a
# subdirectory named after a hash of these files: changing one recompiles every user.
SHARED_SOURCES = (
    "cuzk/jit.py",
    "cuzk/bn254/limbs.py",
    "cuzk/bn254/constants.py",
    "cuzk/formats/limbs.py",  # builds the limb constants of constants.py
    "cuzk/bn254/field.py",
    "cuzk/bn254/curve.py",
    "cuzk/kernels/msm.py",
    "cuzk/kernels/ntt.py",
    "cuzk/bn254/fq12.py",
    "cuzk/bn254/pairing.py",
)
_cache_keyed = False


def key_numba_cache_on_sources() -> None:
    """Point numba's cache (when NUMBA_CACHE_DIR is set) at ``$NUMBA_CACHE_DIR/arith-<hash>``
    of SHARED_SOURCES. Runs before the first shared-module decorator (field.py imports this
    module first), so every cached kernel of the process uses the keyed directory."""
    global _cache_keyed
    with _lock:
        if _cache_keyed:
            return
        _cache_keyed = True
        base = os.environ.get("NUMBA_CACHE_DIR")
        if not base:
            return
        from numba.core import config

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        digest = hashlib.sha256()
        for rel in SHARED_SOURCES:
            digest.update(rel.encode())
            try:
                with open(os.path.join(root, rel), "rb") as f:
                    digest.update(f.read())
            except OSError:  # an installed copy without some file: still a stable key
                digest.update(b"-")
        config.CACHE_DIR = os.path.join(base, "arith-" + digest.hexdigest()[:12])


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
        self._modules: dict[str, types.ModuleType] = {}
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
            from cuzk.bn254 import limbs

            if self.name == CPU:
                self._prims = limbs.cpu_primitives()
            elif self.simulated:
                self._prims = limbs.python_primitives()
            else:
                self._prims = limbs.cuda_primitives()
        return self._prims

    def mont_mul_asm(self, p, inv):
        """This target's assembly Montgomery multiplication for modulus p, or None where it
        has none (CUDA; a CPU without BMI2/ADX; CUZK_NO_ASM set): see cuzk.bn254.limbs."""
        from cuzk.bn254 import limbs

        if self.name == CPU and limbs.x86_mont_mul_available():
            return limbs.x86_mont_mul(p, inv)
        return None

    # -- shared modules ----------------------------------------------------------------
    def load(self, module_name: str) -> types.ModuleType:
        """The build of shared source module ``module_name`` for this target."""
        if self.name == CPU:
            return importlib.import_module(module_name)
        with _lock:
            if module_name in self._modules:
                return self._modules[module_name]
            # Building needs no GPU (kernels compile to PTX anywhere); launching does, and
            # require_cuda() below is what launch sites call first.
            spec = importlib.util.find_spec(module_name)
            if spec is None or spec.origin is None:
                raise ImportError(f"no shared source module {module_name!r}")
            build_name = f"{module_name}[{self.name}]"
            module = types.ModuleType(build_name)
            module.__file__ = spec.origin
            module.__package__ = spec.parent
            source = spec.loader.get_source(module_name)
            code = compile(source, spec.origin, "exec")
            self._modules[module_name] = module
            sys.modules[build_name] = module
            _building.append(self)
            try:
                exec(code, module.__dict__)
            except BaseException:
                del self._modules[module_name]
                sys.modules.pop(build_name, None)
                raise
            finally:
                _building.pop()
            return module


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


def building() -> Target:
    """The target a shared module is being built for: CPU unless Target.load is running."""
    return _building[-1] if _building else get_target(CPU)


def default_device_target() -> str:
    """"cuda" where a real GPU is present (or CUZK_TARGET=cuda), else "cpu"."""
    forced = os.environ.get("CUZK_TARGET")
    if forced:
        return forced
    return CUDA if (not cuda_simulated() and cuda_available()) else CPU


# -- launching -------------------------------------------------------------------------------
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS_PER_BLOCK = 16  # the simulator runs each thread of a block as a Python thread


def launch(kernel, n: int, *args, threads_per_block: int | None = None) -> None:
    """Launch a 1-D ``kernel`` (a ``numba.cuda.jit`` dispatcher) over ``n`` items.

    Kernels guard with ``i = cuda.grid(1); if i < n:`` and write into output arrays.
    Works on a GPU and in the simulator (smaller blocks there); n = 0 launches nothing.
    """
    require_cuda()
    if n <= 0:
        return
    if threads_per_block is None:
        threads_per_block = SIMULATOR_THREADS_PER_BLOCK if cuda_simulated() else THREADS_PER_BLOCK
    threads = min(threads_per_block, n)
    blocks = (n + threads - 1) // threads
    kernel[blocks, threads](*args)
