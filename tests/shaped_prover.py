"""A prover of another shape than Groth16's, to show that the engine is proof-system neutral:
its key declares a uint32 witness and three buffers of three dtypes and unrelated sizes (none
of them a, b or c, one of an odd byte count), and nothing in cuzk/engine knows them. The
engine loads it by module name (`EngineConfig.prover = "shaped_prover"`; the spawned children
import it from the test process's sys.path, which holds tests/).

It is no proof system. Its "proof" is the SHA-256 of the buffers synthesize filled and of the
witness, which `expected_proof` recomputes from the witness a test submitted, so a proof from
another partition's buffers, a torn buffer, or buffers an earlier prove_start consumed, fails.
Like the real prover's compute_h, prove_start overwrites its buffers (after digesting them).

Key file: JSON {"shaped_key": 1, "n_vars": N, "rows": R, "n_public": P}.
Witness: b"SHPW" + N little-endian uint32. A witness whose w[0] is FAIL_START makes
prove_start raise once (after consuming its buffers; a marker in `fault_dir` remembers it).
Options (configure): fault_dir, start_secs (a sleep in prove_start).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass

import numpy as np

MAGIC = b"SHPW"
FAIL_START = 0xFA17  # w[0] of a witness whose first prove_start raises
_options: dict = {}


def configure(options: dict) -> None:
    _options.clear()
    _options.update(options or {})


# -- keys --------------------------------------------------------------------------------------
@dataclass
class ProvingKey:
    path: str
    key_id: str
    n_vars: int
    rows: int
    n_public: int
    nbytes: int
    protocol = "shaped"  # its own (the vk and proofs name it too)

    @classmethod
    def open(cls, path, resident: bool = True) -> ProvingKey:
        with open(path, "rb") as f:  # read, not mapped: resident changes nothing
            raw = f.read()
        try:
            d = json.loads(raw)
            assert d.get("shaped_key") == 1
        except Exception:
            raise ValueError(f"{path}: not a shaped-prover key file") from None
        return cls(
            str(path),
            "shaped-" + hashlib.sha256(raw).hexdigest()[:12],
            int(d["n_vars"]),
            int(d["rows"]),
            int(d["n_public"]),
            len(raw),
        )

    @property
    def domain_size(self) -> int:  # what GET /keys reports as the key's size
        return self.rows

    def validate(self) -> None:
        """Nothing to check: the key holds only sizes."""

    def witness_buffer(self) -> tuple:
        return (self.n_vars,), "uint32"

    def buffers(self) -> dict:
        return {
            "sums": ((self.rows,), "uint64"),
            "flags": ((self.rows + 3,), "uint8"),  # odd: the next buffer's offset is padded
            "grid": ((2, self.rows, 3), "float64"),
        }

    def partition_bytes(self) -> int:
        """Exactly the declared arrays: the engine adds its layout's padding itself."""
        sizes = [self.witness_buffer(), *self.buffers().values()]
        return sum(np.dtype(dt).itemsize * int(np.prod(shape)) for shape, dt in sizes)

    def verification_key(self) -> dict:
        return {"protocol": "shaped", "key_id": self.key_id}


def write_key(path, n_vars: int = 40, rows: int = 77, n_public: int = 3) -> None:
    with open(path, "w") as f:
        json.dump({"shaped_key": 1, "n_vars": n_vars, "rows": rows, "n_public": n_public}, f)


# -- witnesses ---------------------------------------------------------------------------------
def make_witness(n_vars: int, seed: int, fail_start: bool = False) -> bytes:
    w = np.random.default_rng(seed).integers(0, 2**32, size=n_vars, dtype=np.uint32)
    w[0] = FAIL_START if fail_start else 1
    return MAGIC + w.astype("<u4").tobytes()


def _parse(data) -> np.ndarray:
    data = bytes(data)
    if data[:4] != MAGIC or (len(data) - 4) % 4:
        raise ValueError("not a shaped-prover witness")
    return np.frombuffer(data[4:], dtype="<u4").astype(np.uint32)


def load_witness(source, key: ProvingKey) -> np.ndarray:
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            source = f.read()
    w = _parse(source)
    if w.shape != (key.n_vars,):
        raise ValueError(f"witness has {w.shape[0]} values, the key expects {key.n_vars}")
    return w


# -- stages ------------------------------------------------------------------------------------
def expected_buffers(w: np.ndarray, rows: int) -> dict:
    """The buffers synthesize fills, from the witness alone."""
    n = w.shape[0]
    i = np.arange(rows)
    w64 = w.astype(np.uint64)
    grid = np.empty((2, rows, 3))
    for k in range(2):
        for j in range(3):
            grid[k, :, j] = w[(i * (j + 1) + k) % n] / 7.0
    return {
        "sums": w64[i % n] + w64[(i + 1) % n] * np.uint64(3),
        "flags": (w[np.arange(rows + 3) % n] & 0xFF).astype(np.uint8),
        "grid": grid,
    }


@dataclass
class Synthesis:
    buffers: dict
    public: list


def synthesize(key: ProvingKey, w: np.ndarray, out=None) -> Synthesis:
    made = expected_buffers(w, key.rows)
    if out is not None:
        for name, v in made.items():
            out[name][...] = v
        made = out
    return Synthesis(made, [int(x) for x in w[1 : 1 + key.n_public]])


# A device holds keys by id whatever their shape: the double's serves (open_device is the
# contract's, called by the engine).
from cuzk.testing.prover_double import Device, open_device  # noqa: E402, F401


def buffers_digest(buffers: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(buffers):
        h.update(name.encode())
        h.update(np.ascontiguousarray(buffers[name]).tobytes())
    return h.hexdigest()


def witness_digest(w: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(w).tobytes()).hexdigest()


@dataclass
class Partial:
    digest: str


@dataclass
class Proof:
    digest: str
    w_sha256: str
    public: list

    def to_json(self) -> dict:
        return {"protocol": "shaped", "digest": self.digest, "w_sha256": self.w_sha256}


def prove_start(key: ProvingKey, buffers: dict, w, device: Device) -> Partial:
    """Digest the buffers, then consume them (every byte changed), then maybe fail."""
    if key.key_id not in device.keys:
        raise RuntimeError("prove_start before the key was loaded on the device")
    partial = Partial(buffers_digest(buffers))
    for v in buffers.values():
        raw = v.reshape(-1).view(np.uint8)
        raw += np.uint8(1)
    if int(w[0]) == FAIL_START:
        marker = os.path.join(_options.get("fault_dir", "/tmp"), f"shaped-{witness_digest(w)}")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass  # failed once already
        else:
            raise RuntimeError("injected fault in prove_start, after consuming the buffers")
    time.sleep(_options.get("start_secs", 0.0))
    return partial


def prove_finish(key: ProvingKey, partial: Partial, w) -> Proof:
    return Proof(partial.digest, witness_digest(w), [str(int(x)) for x in w[1 : 1 + key.n_public]])


def verify(vk: dict, public, proof) -> bool:
    return vk.get("protocol") == "shaped" and proof.to_json().get("protocol") == "shaped"


def expected_proof(witness: bytes, key: ProvingKey) -> dict:
    """What a correct engine returns for this witness (the test's independent reference)."""
    w = _parse(witness)
    return {
        "protocol": "shaped",
        "digest": buffers_digest(expected_buffers(w, key.rows)),
        "w_sha256": witness_digest(w),
    }
