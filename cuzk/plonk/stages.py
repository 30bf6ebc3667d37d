"""The PLONK prover cut where the engine cuts a proof (cuzk.engine.contract):

    synthesize(key, w, out)              synthesis process: the witness extended by the key's
                                         additions, each gate's wires a, b, c on H
                                         (cuzk.plonk.prover.wire_values) into the key's
                                         buffers, the gates checked (a witness that breaks
                                         one fails here, naming it)
    prove_start(key, buffers, w, dev)    device process: the five rounds from those wires
                                         (cuzk.plonk.prover.prove)
    prove_finish(key, partial, w)        the finished proof (the rounds end in commitments:
                                         nothing is left for the finalizer)

The five rounds run on the device process's device: `open_device("cpu[:N]")` gives a
`Device` whose rounds run on this machine's CPU kernels (cuzk.plonk.fr.FrOps),
`open_device("cuda[:N]")` a `CudaDevice` whose rounds run on that GPU's kernels
(cuzk.plonk.fr.CudaFrOps: the transforms, the commitments and the extended domain's
elementwise steps on the GPU, the sequential steps on the CPU). The dispatching prover
(cuzk.prover) opens the one of its device process's kind. Synthesis runs on the CPU
kernels in the synthesis processes, whatever the device.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numpy as np

from cuzk.arith.radix import limbs_to_ints
from cuzk.kernels import table_builds
from cuzk.plonk.prover import (
    PlonkProof,
    ProveError,
    check_gates,
    extended,
    prove,
    wire_values,
)
from cuzk.wires import Synthesis

Proof = PlonkProof
Partial = PlonkProof  # prove_start's rounds end in the proof itself

_ops: dict = {}
_ops_lock = threading.Lock()


def frops(key):
    """This process's CPU FrOps for the key's curve (its roots and kernel builds made once):
    what synthesis runs on."""
    return _frops(key.zkey.curve_info)


def _frops(curve):
    from cuzk.plonk.fr import FrOps

    with _ops_lock:
        ops = _ops.get(curve.name)
        if ops is None:
            ops = _ops[curve.name] = FrOps(curve)
        return ops


def synthesize(key, w, out=None) -> Synthesis:
    """Round 1's wires from the witness `w` ((nVars - nAdditions, 4) plain limbs), into `out`
    ({"a", "b", "c"}, shaped as key.buffers() says) when given; ProveError naming the first
    gate the witness breaks."""
    z, ops = key.zkey, frops(key)
    wires = wire_values(z, w, ops)
    pi_h = np.zeros((z.domain_size, 4), np.uint64)  # PI on H: -p_i at gate i
    if z.n_public:  # (a few Python ints: cuzk.arith.batch's build would cost a process ~2 s)
        pi_h[: z.n_public] = ops.from_ints([-x for x in ops.to_ints(wires[0][: z.n_public])])
    check_gates(z, *wires, pi_h, ops)
    if out is not None:
        for name, v in zip("abc", wires, strict=True):
            np.copyto(out[name], v)
        wires = (out["a"], out["b"], out["c"])
    return Synthesis(*wires, limbs_to_ints(np.asarray(w[1 : 1 + z.n_public])))


def prove_start(key, buffers, w, device) -> Partial:
    """The five rounds from synthesize's wires (buffers "a", "b", "c"; taken as round 1's
    A, B, C, and overwritten as the rounds please)."""
    held = device.held(key.key_id)
    if held is None:
        raise RuntimeError(f"prove_start before key {key.key_id} was loaded on {device.name}")
    wires = (buffers["a"], buffers["b"], buffers["c"])
    ops = device.ops(key.zkey.curve_info)
    return prove(key.zkey, w, ops, wires=wires, ext=held.extended, table=held.table)


@dataclass(frozen=True)
class Held:
    """What a device keeps for one resident key: the key, its extended values
    (cuzk.plonk.prover.extended; on a CUDA device copies on the GPU) and its table of
    multiples (cuzk.plonk.tables; None: no table)."""

    key: object
    extended: dict
    table: object = None


def prove_finish(key, partial: Partial, w) -> Proof:
    """The proof prove_start made (its public signals are the witness's)."""
    return partial


def verify(vk, public, proof) -> bool:
    """Check a proof from prove_finish against ProvingKey.verification_key() (the engine's
    self-verification; cuzk.plonk.verifier): on a curve whose G1 has a cofactor (BLS12-381)
    every commitment must lie in G1 too, as `cuzk verify` requires (a power of tau outside
    G1 would put one outside). The pairing product on the native library's kernels where
    this process proves on it (cuzk.kernels.verifier_ops), else on Python ints."""
    from cuzk.arith import pairing_int
    from cuzk.formats import curve as curves
    from cuzk.plonk.verifier import kernel_combination, kernel_pairing
    from cuzk.plonk.verifier import verify as verify_plonk

    if vk["curve"] is not curves.BN254:
        ops = pairing_int.for_curve(vk["curve"].arith)
        if not all(p is None or ops.g1_in_subgroup(p) for p in proof.commitments.values()):
            return False
    combine = kernel_combination(vk["curve"])  # (this device process's MSM kernels)
    pairing = kernel_pairing(vk["curve"])
    public = [int(x) for x in public]
    return verify_plonk(vk, public, proof.commitments, proof.evaluations, combine, pairing)


class Device:
    """Where PLONK keys are held in a device process: the mapped keys and, per key, what
    every proof's round 3 takes from it on the domain of 4n (cuzk.plonk.prover.extended:
    the selectors, the permutation polynomials and L1, views of the key, and the domain's
    points), made once when the key is loaded and kept until it is evicted (the rounds run
    on this machine's CPU kernels; a key costs no device memory), and, under the
    msm_tables option, a table of multiples of its powers of tau for the commitments
    (cuzk.plonk.tables), built with them and dropped with them."""

    kind = "cpu"

    def __init__(self, name: str = "cpu"):
        self.name = name
        self._held: dict[str, Held] = {}  # key id -> what is kept for it
        self._lock = threading.Lock()
        self.table_builds = table_builds.Builds()  # tables built beside the proofs

    def held(self, key_id: str) -> Held | None:
        """What this device keeps for the key (None: not loaded)."""
        with self._lock:
            return self._held.get(key_id)

    def resident_keys(self) -> list[str]:
        with self._lock:
            return list(self._held)

    def describe(self) -> str:
        return f"{self.name}: PLONK on Numba CPU kernels, {os.cpu_count()} cores"

    def ops(self, curve):
        """The FrOps the rounds run on for a key of `curve` (a cuzk.formats.curve Curve)."""
        return _frops(curve)

    def load_key(self, key):
        """Hold the key: its extended values, and under msm_tables its table of multiples,
        built beside the proofs where the kernels allow (then the build is returned: its
        wait() says when the table is in place, cuzk.engine.contract), else here (None)."""
        from cuzk.plonk import tables

        if self.held(key.key_id) is not None:
            return None  # (loaded: its values and table are kept)
        ext = extended(key.zkey, self.ops(key.zkey.curve_info))  # outside the lock
        if (
            self.kind == "cpu"
            and tables.plan_factor(key) >= 2
            and table_builds.beside(key.arith_curve, groups=(1,))
        ):
            held = Held(key, ext, None)  # proves at once; the table joins it when built
            with self._lock:
                self._held[key.key_id] = held

            def make(stop, put):
                put(tables.build(key, stop=stop))

            def install(table):
                with self._lock:
                    if self._held.get(key.key_id) is held:
                        self._held[key.key_id] = Held(key, ext, table)

            return self.table_builds.start(key.key_id, f"PLONK key {key.key_id}", make, install)
        table = tables.build(key)  # None when msm_tables is off
        with self._lock:
            self._held[key.key_id] = Held(key, ext, table)
        return None

    def evict_key(self, key_id: str) -> None:
        self.table_builds.stop(key_id)  # (waits: its memory is freed with the key's)
        with self._lock:
            self._held.pop(key_id, None)

    def resident_bytes(self, key_id: str) -> int:
        """The key's extended values and table held here (its mapped file's pages belong to
        the page cache, shared by every process)."""
        held = self.held(key_id)
        if held is None:
            return 0
        table = held.table.nbytes if held.table is not None else 0
        return held.extended["x"].nbytes + table  # (the other values are views of the key)


class CudaDevice(Device):
    """PLONK keys on CUDA GPU `ordinal`: the rounds run on cuzk.plonk.fr.CudaFrOps (NTTs,
    MSMs and the extended domain's elementwise steps on the GPU; the running product,
    Horner, the divisions by X - x and the gate check on this machine's CPU kernels). A
    loaded key keeps on the GPU, until evicted, its extended values (the key's ten vectors
    on the domain of 4n copied in, 1.25 KiB per gate of the domain: round 3 reads them
    there) and its powers of tau (n + 6 G1 points: every commitment's MSM reads them
    there); resident_bytes counts both. The CPU's tables of multiples (msm_tables) are not
    built here: the GPU's MSM reads the powers themselves."""

    kind = "cuda"

    def __init__(self, ordinal: int = 0):
        name = f"cuda:{ordinal}"
        _check_gpu(ordinal)
        super().__init__(name)
        self.ordinal = ordinal
        self._ops: dict[str, object] = {}  # curve name -> CudaFrOps

    def describe(self) -> str:
        from cuzk.kernels.resident import gpu_facts

        facts = gpu_facts(self.ordinal)
        gpu = "numba CUDA simulator" if facts is None else facts["name"]
        return (
            f"{self.name}: PLONK on CUDA kernels ({gpu}: NTTs, MSMs, the quotient), "
            f"sequential steps on {os.cpu_count()} CPU cores"
        )

    def ops(self, curve):
        from cuzk.plonk.fr import CudaFrOps

        with self._lock:
            ops = self._ops.get(curve.name)
            if ops is None:
                ops = self._ops[curve.name] = CudaFrOps(curve, self.ordinal)
            return ops

    def load_key(self, key) -> None:
        ops = self.ops(key.zkey.curve_info)
        if self.held(key.key_id) is not None:
            return
        # the key's values on the domain of 4n (host views of its file) and the domain's
        # points, copied to the GPU once
        ext = {name: ops.to_device(v) for name, v in extended(key.zkey, ops).items()}
        ops.keep_points(key.zkey.ptau)
        with self._lock:
            self._held[key.key_id] = Held(key, ext)

    def evict_key(self, key_id: str) -> None:
        with self._lock:
            held = self._held.pop(key_id, None)
        if held is not None:
            self.ops(held.key.zkey.curve_info).drop_points(held.key.zkey.ptau)

    def resident_bytes(self, key_id: str) -> int:
        """The key's extended values and powers of tau held on the GPU."""
        held = self.held(key_id)
        if held is None:
            return 0
        values = sum(int(a.nbytes) for a in held.extended.values())  # (on the GPU: all)
        return values + self.ops(held.key.zkey.curve_info).kept_bytes(held.key.zkey.ptau)


class DeviceUnavailable(ValueError):
    """The device asked for is not on this machine (as cuzk.groth16.device's: a bad device
    setting here)."""


def _check_gpu(ordinal: int) -> None:
    """DeviceUnavailable naming the device unless GPU `ordinal` is usable here."""
    from cuzk.arith.jit import cuda_available, cuda_simulated

    if not cuda_available():
        raise DeviceUnavailable(
            f"device cuda:{ordinal}: no CUDA GPU found on this machine (numba.cuda sees none)"
        )
    if cuda_simulated():
        if ordinal != 0:
            raise DeviceUnavailable(f"device cuda:{ordinal}: no such GPU (the simulator has one)")
        return
    from numba import cuda

    if not 0 <= ordinal < len(cuda.gpus):
        raise DeviceUnavailable(
            f"device cuda:{ordinal}: no such GPU ({len(cuda.gpus)} CUDA GPU(s) visible)"
        )


def open_device(spec: str = "cpu") -> Device:
    """A device from "cpu", "cpu:N", "cuda" or "cuda:N" (DeviceUnavailable, a ValueError,
    where that GPU is not here)."""
    kind, _, ordinal = str(spec).partition(":")
    if kind not in ("cpu", "cuda") or (ordinal and not ordinal.isdigit()):
        raise ValueError(f"bad device {spec!r}: expected cpu, cpu:N, cuda or cuda:N")
    if kind == "cuda":
        return CudaDevice(int(ordinal or 0))
    return Device(str(spec))


__all__ = [
    "CudaDevice",
    "Device",
    "DeviceUnavailable",
    "Partial",
    "Proof",
    "ProveError",
    "Synthesis",
    "open_device",
    "prove_finish",
    "prove_start",
    "synthesize",
    "verify",
]
