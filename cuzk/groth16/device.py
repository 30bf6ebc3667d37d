"""Devices a prover runs its kernels on: the CPU (the native library's kernels where this
process uses it, else Numba's CPU builds: cuzk.native) or one CUDA GPU (Numba CUDA).

A device keeps proving keys resident (on a GPU: the point sets copied to device memory once;
on the CPU: the mapped arrays themselves) and runs the prove_start kernels against them:
the H pipeline (iNTT, coset shift, NTT, a·b − c) and the G1 MSMs for A, B1, C and H.
"""

from __future__ import annotations

import threading

import numpy as np

from cuzk.kernels import table_builds

#: the G1 point sets of a key that prove_start runs MSMs over
G1_SETS = ("a", "b1", "c", "h")


def readonly(x: np.ndarray) -> np.ndarray:
    """A read-only view of x (no copy). The CPU MSM kernel is compiled and cached per argument
    type, and a read-only array is another type than a writable one: passing the witness (a
    read-only map of the .wtns) and h (a fresh array) as they come would make a process load
    two cached builds of the same kernel (~25 ms of CPU each at start-up) instead of one."""
    x = np.asarray(x)
    if not x.flags.writeable:
        return x
    v = x.view()
    v.flags.writeable = False
    return v


def _points(zkey, which: str) -> np.ndarray:
    # only the section asked for: a one-shot key reads each section when first asked for it
    # (a dict of all four read every G1 section at each MSM, three of them twice a proof)
    return getattr(zkey, f"points_{which}")


class CpuDevice:
    """CPU kernels (the native library's or Numba's: cuzk.native.kernels picks per call);
    resident keys are the mapped arrays (no copy, no extra bytes).
    keep_tables=False: the NTT's tables are not kept for later proofs (a one-shot process)."""

    kind = "cpu"

    def __init__(self, ordinal: int = 0, keep_tables: bool = True):
        self.ordinal = ordinal
        self.keep_tables = keep_tables
        self.name = f"cpu:{ordinal}" if ordinal else "cpu"
        self._keys: dict[str, object] = {}
        self._lock = threading.Lock()
        self.table_builds = table_builds.Builds()  # the keys' tables built beside the proofs

    def describe(self) -> str:
        import os

        from cuzk import native

        what = "native library" if native.serves() else "Numba"
        return f"{self.name}: {what} CPU kernels on {os.cpu_count()} cores"

    def load_key(self, key):
        """Hold the key; its tables of multiples for the MSMs (msm_tables; cuzk.groth16.tables)
        built once from here, beside the proofs where the kernels allow: then the build is
        returned (its wait() says when they are in place: cuzk.engine.contract), else None.
        Dropped by evict_key."""
        from cuzk.groth16 import tables

        build = tables.load(key, self.table_builds)
        with self._lock:
            self._keys[key.key_id] = key
        return build if build is not None and build.running else None

    def evict_key(self, key_id: str) -> None:
        with self._lock:
            key = self._keys.pop(key_id, None)
        if key is not None:
            from cuzk.groth16 import tables

            tables.drop(key, self.table_builds)

    def resident_keys(self) -> list[str]:
        return list(self._keys)

    def resident_bytes(self, key_id: str | None = None) -> int:
        # mapped file pages belong to the page cache, shared by every process: only the
        # tables of multiples are this process's
        keys = list(self._keys.values()) if key_id is None else [self._keys.get(key_id)]
        return sum(t.nbytes for k in keys if k is not None for t in k.tables.values())

    def compute_h(self, a, b, c, curve: str = "bn254") -> np.ndarray:
        from cuzk.kernels import ntt_cpu

        return ntt_cpu.compute_h(a, b, c, keep_tables=self.keep_tables, curve=curve)

    def msm_g1(self, key, which: str, scalars) -> np.ndarray:
        from cuzk.groth16.tables import points_for
        from cuzk.kernels import msm_cpu

        points = points_for(key, which, _points(key.zkey, which))
        return msm_cpu.msm_g1(points, readonly(scalars), curve=key.zkey.curve_info.arith)


class DeviceUnavailable(ValueError):
    """The device asked for is not on this machine (so the device setting is bad here)."""


class CudaDevice:
    """Numba CUDA kernels on GPU ``ordinal``; keys resident in device memory until evicted."""

    kind = "cuda"

    def __init__(self, ordinal: int = 0):
        from cuzk.arith.jit import TargetUnavailable, require_cuda

        try:
            require_cuda()
        except TargetUnavailable:
            raise DeviceUnavailable(
                f"device cuda:{ordinal}: no CUDA GPU found on this machine (numba.cuda sees none)"
            ) from None
        from numba import cuda

        if not 0 <= ordinal < len(cuda.gpus):
            raise DeviceUnavailable(
                f"device cuda:{ordinal}: no such GPU ({len(cuda.gpus)} CUDA GPU(s) visible)"
            )
        self.ordinal = ordinal
        self.name = f"cuda:{ordinal}"
        cuda.select_device(ordinal)
        from cuzk.compiling import watch_cuda_compiles

        watch_cuda_compiles()  # a cold cache's CUDA compiles are announced like the CPU's
        self._keys: dict[str, object] = {}
        self._lock = threading.Lock()

    def describe(self) -> str:
        from cuzk.kernels.resident import gpu_facts

        gpu = gpu_facts(self.ordinal)
        if gpu is None:  # the simulator's device has no name or memory figures
            return f"{self.name}: numba CUDA simulator"
        name, free, total = gpu["name"], gpu["free"], gpu["total"]
        return (
            f"{self.name}: {name}, compute capability {gpu['cc']}, "
            f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)"
        )

    def load_key(self, key) -> None:
        """Place key's G1 point sets on this GPU (once)."""
        self.resident(key)

    def resident(self, key):
        """key's ResidentKey on this GPU, its point sets placed there at the first call."""
        from cuzk.kernels import resident

        with self._lock:
            rk = self._keys.get(key.key_id)
            if rk is None:
                # device=self.name: without it ResidentKey picks the default target, which is
                # "cpu" under the simulator (the MSMs then got read-only host arrays)
                rk = self._keys[key.key_id] = resident.ResidentKey(
                    {w: _points(key.zkey, w) for w in G1_SETS}, device=self.name, key_id=key.key_id
                )
            return rk

    def evict_key(self, key_id: str) -> None:
        with self._lock:
            rk = self._keys.pop(key_id, None)
        if rk is not None and hasattr(rk, "free"):
            rk.free()

    def resident_keys(self) -> list[str]:
        return list(self._keys)

    def resident_bytes(self, key_id: str | None = None) -> int:
        keys = (
            [self._keys[key_id]]
            if key_id in self._keys
            else ([] if key_id else list(self._keys.values()))
        )
        return sum(int(k.nbytes) for k in keys)

    def compute_h(self, a, b, c, curve: str = "bn254") -> np.ndarray:
        from cuzk.kernels import ntt_cuda
        from cuzk.kernels.resident import gpu_context

        with gpu_context(self.ordinal):  # this GPU whatever the calling thread's default
            return ntt_cuda.compute_h(a, b, c, curve=curve)

    def msm_g1(self, key, which: str, scalars) -> np.ndarray:
        # ResidentKey.msm pins the key (and its GPU) while the MSM runs
        return self.resident(key).msm(which, scalars)


def open_device(spec: str = "cpu", one_shot: bool = False):
    """A device from "cpu", "cpu:N", "cuda" or "cuda:N". one_shot: it serves one proof (a
    `cuzk prove` process), so it keeps nothing for later ones."""
    kind, _, ordinal = str(spec).partition(":")
    try:
        n = int(ordinal) if ordinal else 0
    except ValueError:
        raise ValueError(f"bad device {spec!r}: expected cpu, cpu:N, cuda or cuda:N") from None
    if kind == "cpu":
        return CpuDevice(n, keep_tables=not one_shot)
    if kind == "cuda":
        return CudaDevice(n)
    raise ValueError(f"bad device {spec!r}: expected cpu, cpu:N, cuda or cuda:N")
