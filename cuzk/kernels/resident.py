"""Proving-key point sets placed on a device once and reused by many MSMs.

A Groth16 proving key's bulk is its point sets (pointsA, B1, B2, C, H of a zkey). A GPU
worker places them on its device once (``ResidentKey.place``), runs every proof's MSMs
against them, and lets the engine evict them when idle; ``nbytes`` is what a memory budget
accounts for. On the "cpu" device nothing is copied: the resident arrays are the zkey's
mmap views themselves, and their size is their bytes (the pages are shared with the page
cache, but they are what the prover touches).

    key = ResidentKey({"a": zk.points_a, "b2": zk.points_b2}, device="cuda:0", key_id="mul2")
    msm_cuda.msm_g1(key["a"], scalars)   # or key.msm("a", scalars) on the key's device
    key.nbytes                           # bytes held on the device
    key.free()                           # (= release())

Point sets of any registered curve (cuzk.arith.curves): each ResidentPoints knows its curve
and group, inferred from its row width (BN254 8 and 16 limbs, BLS12-381 12 and 24) unless
``curve=`` says it (then checked against the width); ``ResidentKey.msm`` runs that curve's
MSM, and ``from_zkey`` takes the key's curve.

``ResidentKeys`` is a small registry per process: get-or-place, pinning while MSMs run,
eviction of keys idle longer than a threshold, and rows for the status board's "keys" list.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping

import numpy as np

from cuzk.kernels.points import G1_WIDTH, G2_WIDTH, ResidentPoints, groups_by_width

__all__ = [
    "ResidentPoints",
    "ResidentKey",
    "ResidentKeys",
    "place_points",
    "parse_device",
    "device_name",
    "gpu_context",
    "ZKEY_SETS",
    "G1_WIDTH",
    "G2_WIDTH",
]
# short set names -> cuzk.formats.zkey.ZKey attributes
ZKEY_SETS = {
    "a": "points_a",
    "b1": "points_b1",
    "b2": "points_b2",
    "c": "points_c",
    "h": "points_h",
}


def parse_device(device: str | None) -> tuple[str, int]:
    """ "cpu" / "cpu:N" -> ("cpu", 0); "cuda:N" -> ("cuda", N); "cuda" -> the current CUDA
    device; None -> cuzk.arith.jit.default_device_target() ("cuda" where a real GPU is present)."""
    if device is None:
        from cuzk.arith.jit import default_device_target

        device = default_device_target()
    kind, _, ordinal = str(device).partition(":")
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r} (expected 'cpu', 'cuda' or 'cuda:N')")
    if kind == "cpu":
        return "cpu", 0
    if ordinal:
        return "cuda", int(ordinal)
    from cuzk.arith.jit import cuda_simulated

    if cuda_simulated():
        return "cuda", 0
    from numba import cuda

    return "cuda", int(cuda.get_current_device().id)


def device_name(device: str | None) -> str:
    """The canonical name of a device: "cpu" or "cuda:N"."""
    kind, ordinal = parse_device(device)
    return "cpu" if kind == "cpu" else f"cuda:{ordinal}"


def place_points(
    points: np.ndarray, device: str = "cpu", name: str = "", curve: str | None = None
) -> ResidentPoints:
    """Put one host point set on ``device``: no copy for "cpu", one transfer for "cuda:N"
    ("cuda": the current device). ``curve``: see ResidentPoints (None: from the width)."""
    kind, ordinal = parse_device(device)
    host = np.asarray(points)
    widths = groups_by_width(curve)
    if host.dtype != np.uint64 or host.ndim != 2 or host.shape[1] not in widths:
        expect = "|".join(str(w) for w in sorted(widths))
        raise ValueError(
            f"point set {name!r}: expected (n, {expect}) uint64, got {host.dtype} {host.shape}"
        )
    if kind == "cpu":
        return ResidentPoints(host, "cpu", name, curve)
    from cuzk.arith.jit import require_cuda

    require_cuda()
    from numba import cuda

    with _gpu(cuda, ordinal):
        # C-contiguous and aligned for the transfer (a zkey view may sit at offset 4 mod 8)
        arr = cuda.to_device(np.require(host, requirements=["C", "A"]))
    return ResidentPoints(arr, f"cuda:{ordinal}", name, curve)


def gpu_context(ordinal: int):
    """A context manager making GPU ``ordinal`` current in the calling thread (a CUDA context
    is current per thread; a thread without one gets GPU 0). Nothing in the simulator."""
    from numba import cuda

    return _gpu(cuda, ordinal)


def gpu_facts(ordinal: int) -> dict | None:
    """GPU ``ordinal``'s name, compute capability and memory (total and free bytes), for a
    device's describe(); None in the simulator (its device has no such figures)."""
    from numba import cuda

    from cuzk.arith.jit import cuda_simulated

    if cuda_simulated():
        return None
    with cuda.gpus[ordinal]:
        dev = cuda.get_current_device()
        free, total = cuda.current_context().get_memory_info()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return {"name": name, "cc": dev.compute_capability, "free": free, "total": total}


def _gpu(cuda, ordinal):
    from cuzk.arith.jit import cuda_simulated

    if cuda_simulated():
        return contextlib.nullcontext()
    return cuda.gpus[ordinal]


class ResidentKey:
    """A proving key's point sets, resident on one device.

    ``ResidentKey({"a": points_a, ...}, device="cuda:0")`` places host arrays (numpy, e.g.
    the zkey's mmap views) on the device; values that are already ResidentPoints are kept.
    ``device=None`` means cuzk.arith.jit.default_device_target(): the current GPU where one is
    present, else the CPU (no copy). ``curve`` (cuzk.arith.curves' name): every set must be
    on it; None: each set's curve from its row width (ResidentPoints)."""

    def __init__(
        self,
        sets: Mapping[str, object],
        device: str | None = None,
        key_id: str = "",
        curve: str | None = None,
    ):
        dev = device_name(device)
        placed: dict[str, ResidentPoints] = {}
        try:
            for name, pts in sets.items():
                if isinstance(pts, ResidentPoints):
                    if pts.device != dev:
                        raise ValueError(f"point set {name!r} is on {pts.device}, not {dev}")
                    if curve is not None and pts.curve != curve:
                        raise ValueError(f"point set {name!r} is on {pts.curve}, not {curve}")
                    placed[name] = pts
                else:
                    placed[name] = place_points(pts, dev, name, curve)
        except BaseException:
            placed.clear()  # drop the device arrays placed so far
            raise
        self.key_id = key_id
        self.device = dev
        self.sets = placed
        self._pins = 0
        self._lock = threading.Lock()
        self.last_used = time.monotonic()

    @classmethod
    def place(
        cls,
        key_id: str,
        sets: Mapping[str, np.ndarray],
        device: str = "cpu",
        curve: str | None = None,
    ) -> ResidentKey:
        """Place the named host point sets on ``device`` ("cpu", "cuda" or "cuda:N")."""
        return cls(sets, device, key_id, curve)

    @classmethod
    def from_zkey(
        cls, zkey, device: str = "cpu", key_id: str | None = None, sets=tuple(ZKEY_SETS)
    ) -> ResidentKey:
        """Place a cuzk.formats.zkey.ZKey's point sets ("a", "b1", "b2", "c", "h"), on the
        key's curve."""
        arrays = {name: getattr(zkey, ZKEY_SETS[name]) for name in sets}
        info = getattr(zkey, "curve_info", None)
        curve = info.arith if info is not None else None
        return cls.place(key_id or str(zkey.path), arrays, device, curve)

    @property
    def nbytes(self) -> int:
        """Bytes of all point sets held on the device."""
        return sum(s.nbytes for s in self.sets.values())

    def __getitem__(self, name: str) -> ResidentPoints:
        try:
            return self.sets[name]
        except KeyError:
            raise KeyError(
                f"key {self.key_id!r} has no resident point set {name!r} (has {sorted(self.sets)})"
            ) from None

    def touch(self) -> None:
        self.last_used = time.monotonic()

    @contextlib.contextmanager
    def pinned(self):
        """Mark the key in use (not evictable) for the duration of the block."""
        with self._lock:
            self._pins += 1
        try:
            yield self
        finally:
            with self._lock:
                self._pins -= 1
            self.touch()

    @property
    def in_use(self) -> bool:
        return self._pins > 0

    def msm(self, name: str, scalars):
        """The MSM of point set ``name`` with ``scalars`` on the key's device, on the set's
        curve: an affine row of the set's width ((8,) or (16,) on BN254)."""
        pts = self[name]
        with self.pinned():
            pts.touch()
            if self.device == "cpu":
                from cuzk.kernels import msm_cpu

                fn = msm_cpu.msm_g1 if pts.group == 1 else msm_cpu.msm_g2
                return fn(pts.array, scalars, curve=pts.curve)
            from numba import cuda

            from cuzk.kernels import msm_cuda

            fn = msm_cuda.msm_g1 if pts.group == 1 else msm_cuda.msm_g2
            with _gpu(cuda, int(self.device.partition(":")[2])):
                return fn(pts, scalars, curve=pts.curve)

    def release(self) -> None:
        """Drop the device arrays (their memory returns to the device when unreferenced)."""
        self.sets.clear()

    free = release

    def __repr__(self) -> str:
        return (
            f"<ResidentKey {self.key_id!r} on {self.device}: {sorted(self.sets)} "
            f"{self.nbytes} bytes>"
        )


class ResidentKeys:
    """Per-process registry of resident keys, keyed by (key_id, device)."""

    def __init__(self):
        self._keys: dict[tuple[str, str], ResidentKey] = {}
        self._lock = threading.Lock()

    def get_or_place(self, key_id: str, sets, device: str = "cpu") -> ResidentKey:
        """The resident key (key_id, device), placing ``sets`` (a mapping, or a callable
        returning one, called only when placing) if it is not resident yet."""
        dev = device_name(device)
        with self._lock:
            key = self._keys.get((key_id, dev))
            if key is None:
                key = ResidentKey.place(key_id, sets() if callable(sets) else sets, dev)
                self._keys[(key_id, dev)] = key
            key.touch()
            return key

    def get(self, key_id: str, device: str = "cpu") -> ResidentKey | None:
        return self._keys.get((key_id, device_name(device)))

    def evict(self, key_id: str, device: str | None = None) -> int:
        """Release key_id (on one device, or all); returns the bytes freed. Pinned keys stay."""
        freed = 0
        with self._lock:
            dev = None if device is None else device_name(device)
            matching = [k for k in self._keys if k[0] == key_id and dev in (None, k[1])]
            for k in matching:
                key = self._keys[k]
                if key.in_use:
                    continue
                freed += key.nbytes
                key.release()
                del self._keys[k]
        return freed

    def evict_idle(self, min_idle_secs: float) -> list[tuple[str, str, int]]:
        """Release every unpinned key idle for at least min_idle_secs; returns
        (key_id, device, bytes) for each."""
        now = time.monotonic()
        out = []
        with self._lock:
            for k, key in list(self._keys.items()):
                if not key.in_use and now - key.last_used >= min_idle_secs:
                    out.append((k[0], k[1], key.nbytes))
                    key.release()
                    del self._keys[k]
        return out

    def nbytes(self, device: str | None = None) -> int:
        want = None if device is None else device_name(device)
        return sum(k.nbytes for (_, dev), k in self._keys.items() if want in (None, dev))

    def rows(self) -> list[dict]:
        """One status-board "keys" row per key id: bytes over its devices, devices,
        seconds since last use, evictable (no device copy in use)."""
        now = time.monotonic()
        by_id: dict[str, dict] = {}
        for (key_id, dev), key in sorted(self._keys.items()):
            row = by_id.setdefault(
                key_id,
                {
                    "key_id": key_id,
                    "bytes": 0,
                    "devices": [],
                    "last_used_secs_ago": None,
                    "evictable": True,
                },
            )
            row["bytes"] += key.nbytes
            row["devices"].append(dev)
            ago = now - key.last_used
            if row["last_used_secs_ago"] is None or ago < row["last_used_secs_ago"]:
                row["last_used_secs_ago"] = ago
            row["evictable"] = row["evictable"] and not key.in_use
        return list(by_id.values())

    def __len__(self) -> int:
        return len(self._keys)
