"""The daemon's prover: keys of every proof system cuzk proves, side by side in one engine.

`cuzk serve`'s default prover (EngineConfig.prover; cuzk.engine.contract). A key file names
its protocol (a .zkey's header section: cuzk.formats.zkey.zkey_protocol), and
`ProvingKey.open` returns that system's key: a Groth16 key (cuzk.groth16.ProvingKey) or a
PLONK key (cuzk.plonk.ProvingKey); an FFLONK key, or a file that is no key, raises the
FormatError the format's reader words. Each key carries `protocol` ("groth16", "plonk"),
and every stage goes to its system's module: synthesize, prove_start, prove_finish,
load_witness by the key's, verify by the proof's. Each key declares its own witness and
buffers, so the engine needs nothing else: it sizes, budgets, schedules and journals both
kinds the same way.

Devices: `open_device(spec)` opens the Groth16 device of the spec (CPU or CUDA) and beside it
PLONK's of the same kind (cuzk.plonk.stages): on a CUDA device process both systems' keys
prove on its GPU (PLONK's sequential steps on its CPU).
"""

from __future__ import annotations

import abc
import importlib

from cuzk.formats.zkey import PLONK_PROTOCOL_ID, zkey_protocol

SYSTEMS = {"groth16": "cuzk.groth16", "plonk": "cuzk.plonk"}


def _system(key):
    """The module of the key's proof system."""
    return importlib.import_module(SYSTEMS[getattr(key, "protocol", "groth16")])


class ProvingKey(abc.ABC):
    """A key of any proof system cuzk proves: open() reads the file's protocol and returns
    that system's key (a virtual subclass of this one), which satisfies the engine's
    ProvingKey contract; the abstract methods say what each system's provides."""

    key_id: str
    path: str
    protocol: str  # "groth16" or "plonk"

    @classmethod
    def open(cls, path, resident: bool = True):
        """A cuzk.groth16.ProvingKey or a cuzk.plonk.ProvingKey, by the file's protocol; a
        protocol neither proves (FFLONK) gets Groth16's reader's UnsupportedProtocol, which
        names it and the protocols cuzk proves."""
        if zkey_protocol(path) == PLONK_PROTOCOL_ID:
            from cuzk.plonk.key import ProvingKey as key_class
        else:
            from cuzk.groth16.key import ProvingKey as key_class
        cls.register(key_class)
        return key_class.open(path, resident=resident)

    @abc.abstractmethod
    def validate(self):
        """Every point and stored value checked, once per key file (the system's checks)."""

    @abc.abstractmethod
    def partition_bytes(self) -> int:
        """The working set of one partition (the system's estimate)."""

    @abc.abstractmethod
    def witness_buffer(self) -> tuple:
        """The witness's (shape, dtype): nVars values (Groth16), nVars - nAdditions (PLONK)."""

    @abc.abstractmethod
    def buffers(self) -> dict:
        """a, b, c of (domain, 4) limbs in both systems: Groth16's A·w, B·w, A·w∘B·w, PLONK's
        gate wires."""

    @abc.abstractmethod
    def verification_key(self):
        """What the system's verify() takes."""


def _proof_types() -> tuple:
    from cuzk.groth16.stages import Proof as Groth16Proof
    from cuzk.plonk.prover import PlonkProof

    return Groth16Proof, PlonkProof


def __getattr__(name: str):
    if name == "Proof":  # a proof of either system (loaded on first use, as the systems are)
        groth16, plonk = _proof_types()
        return groth16 | plonk
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def configure(options: dict) -> None:
    """`prover_options`, handed to both systems."""
    import cuzk.groth16
    import cuzk.plonk

    cuzk.groth16.configure(options)
    cuzk.plonk.configure(options)


def select_kernels(device: str | None = None) -> str:
    """This process's CPU kernels, for both systems: they share one set (the native library
    where it is built, else Numba's builds), which Groth16's choice makes process-wide
    (cuzk.groth16.select_kernels)."""
    import cuzk.groth16

    return cuzk.groth16.select_kernels(device)


def watch_compiles(say, on_change=None):
    """Report this process's kernel compiles (cuzk.compiling: every system's kernels)."""
    from cuzk.compiling import CompileWatch, install

    return install(CompileWatch(say, on_change=on_change))


def load_witness(source, key):
    return _system(key).load_witness(source, key)


def synthesize(key, w, out=None):
    return _system(key).synthesize(key, w, out=out)


def prove_start(key, buffers, w, device):
    return _system(key).prove_start(key, buffers, w, device.for_key(key))


def prove_finish(key, partial, w):
    return _system(key).prove_finish(key, partial, w)


def verify(vk, public, proof) -> bool:
    from cuzk.plonk.prover import PlonkProof

    system = "cuzk.plonk" if isinstance(proof, PlonkProof) else "cuzk.groth16"
    return importlib.import_module(system).verify(vk, public, proof)


class Device:
    """One device process's device for keys of every system: `groth16`, the spec's device
    (cuzk.groth16.open_device: CPU or CUDA), and `plonk`, PLONK's on the same device
    (cuzk.plonk.open_device: the CPU kernels, or the GPU's). Keys go to their system's; an
    eviction to both (a key id is one system's)."""

    def __init__(self, spec: str = "cpu"):
        from cuzk.groth16.device import open_device as groth16_device
        from cuzk.plonk.stages import open_device as plonk_device

        self.groth16 = groth16_device(spec)
        self.plonk = plonk_device(self.groth16.name)
        self.name = self.groth16.name
        self.kind = self.groth16.kind

    def for_key(self, key):
        return self.plonk if getattr(key, "protocol", "groth16") == "plonk" else self.groth16

    def describe(self) -> str:
        if self.kind == "cpu":
            return f"{self.groth16.describe()}; PLONK keys too"
        return f"{self.groth16.describe()}; PLONK keys too (sequential steps on the CPU)"

    def load_key(self, key):
        return self.for_key(key).load_key(key)

    def evict_key(self, key_id: str) -> None:
        self.groth16.evict_key(key_id)
        self.plonk.evict_key(key_id)

    def resident_bytes(self, key_id: str) -> int:
        return int(self.groth16.resident_bytes(key_id)) + int(self.plonk.resident_bytes(key_id))


def open_device(spec: str) -> Device:
    """A device by name: "cpu[:N]" or "cuda[:N]" (each device process opens its own)."""
    return Device(spec)
