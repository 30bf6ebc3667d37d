"""A stand-in for cuzk.groth16 with the same contract (cuzk.engine.contract.Prover), for engine
plumbing and fault tests and the engine benchmark.

It does no elliptic-curve work. Its "proof" is a pair of SHA-256 digests — of the witness and
of the a, b, c vectors it synthesized — that a test recomputes independently from the witness
it submitted, so a proof that belongs to another partition, or was computed from a torn or
reused buffer, is caught. Stage times are set with `configure({"synth_secs": ..,
"start_secs": .., "finish_secs": ..})` (sleeps, so timing tests do not depend on CPU load),
and a witness can carry a fault to inject at one stage: exit, SIGKILL, raise, or stop (SIGSTOP,
a process that hangs without answering pings), once (guarded by a marker file) or always.

Key file: JSON {"double_key": 1, "n_vars": N, "domain_size": D, "n_public": P}.
Witness: b"DBLW" + N*32 bytes of little-endian 4x64-bit limbs (the plain-form array that
load_witness returns); w[0] carries an optional fault (see make_witness). A snarkjs .wtns
(make_wtns) is accepted too, without faults: the HTTP API checks that container.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"DBLW"
_options: dict = {}


def configure(options: dict) -> None:
    """Set stage durations (seconds: synth_secs, start_secs, finish_secs), fault_dir, and
    proof_log (a file that gets one line per proof made, the witness's SHA-256: tests count
    what was proved)."""
    _options.clear()
    _options.update(options or {})


def watch_compiles(say, on_change=None):
    """As cuzk.groth16's (a cold kernel cache reported), for the option "compile_secs": the
    process "compiles" that long from now (a real cuzk.compiling.CompileWatch fed one compile's
    start and end events), with progress every "compile_progress_secs"."""
    import threading

    from cuzk.compiling import CompileWatch

    secs = float(_options.get("compile_secs") or 0)
    if secs <= 0:
        return None
    watch = CompileWatch(say, _options.get("compile_progress_secs", 10.0), on_change)

    class Event:
        data = None

        def __init__(self, start):
            self.is_start, self.is_end = start, not start

    def compile_once():
        watch.notify(Event(True))
        time.sleep(secs)
        watch.notify(Event(False))

    threading.Thread(target=compile_once, name="double-compile", daemon=True).start()
    return watch


# -- keys --------------------------------------------------------------------------------------
@dataclass
class ProvingKey:
    path: str
    key_id: str
    n_vars: int
    domain_size: int
    n_public: int
    nbytes: int
    curve: str = "bn128"  # what the key file says (shown by the daemon, decides nothing)
    protocol: str = "double"  # the double's own proof system (its vk and proofs say so too)
    table_bytes: int = 0  # tables a device "builds" for it (of nbytes; the option tables_secs)

    @classmethod
    def open(cls, path, resident: bool = True) -> ProvingKey:
        raw = open(path, "rb").read()  # read, not mapped: nothing to check_unchanged
        try:
            d = json.loads(raw)
            assert d.get("double_key") == 1
        except Exception:
            raise ValueError(f"{path}: not a double-prover key file") from None
        return cls(
            str(path),
            hashlib.sha256(raw).hexdigest()[:16],
            int(d["n_vars"]),
            int(d["domain_size"]),
            int(d["n_public"]),
            int(d.get("nbytes", len(raw))),
            str(d.get("curve", "bn128")),
            table_bytes=int(d.get("table_bytes", 0)),
        )

    def validate(self) -> None:
        """Nothing to check: the double's key has no points."""

    def witness_buffer(self) -> tuple:
        return (self.n_vars, 4), "uint64"

    def buffers(self) -> dict:
        shape = (self.domain_size, 4)
        return {"a": (shape, "uint64"), "b": (shape, "uint64"), "c": (shape, "uint64")}

    def partition_bytes(self) -> int:
        return 32 * self.n_vars + 3 * 32 * self.domain_size + 4096

    def verification_key(self) -> dict:
        return {"protocol": "double", "key_id": self.key_id}


def write_key(
    path,
    n_vars: int = 64,
    domain_size: int = 128,
    n_public: int = 2,
    nbytes: int | None = None,
    curve: str | None = None,
    table_bytes: int = 0,
) -> None:
    """A key file; `nbytes` pretends the key is that large (for budget and eviction tests),
    `curve` names a curve for the daemon to show ("bn128" when not given), `table_bytes`
    pretends a device builds tables of that size for it (built beside the proofs, taking the
    prover option tables_secs, when that is set)."""
    d = {"double_key": 1, "n_vars": n_vars, "domain_size": domain_size, "n_public": n_public}
    if nbytes is not None:
        d["nbytes"] = nbytes
    if table_bytes:
        d["table_bytes"] = table_bytes
    if curve is not None:
        d["curve"] = curve
    with open(path, "w") as f:
        json.dump(d, f)


# -- witnesses ---------------------------------------------------------------------------------
# A fault is encoded in the witness itself (w[0] = (1, stage, action, once)), so every process
# that sees the witness array — synthesis or device — knows it without another channel.
STAGES = {"load": 1, "synth": 2, "start": 3, "finish": 4}
ACTIONS = {"exit": 1, "sigkill": 2, "raise": 3, "stop": 4}


def make_witness(n_vars: int, seed: int, fault: dict | None = None) -> bytes:
    """Witness bytes with pseudo-random values from `seed` and an optional fault:
    {"stage": "load"|"synth"|"start"|"finish", "action": "exit"|"sigkill"|"raise"|"stop",
     "once": bool}. A "once" fault fires only while `fault_dir` (configure) has no marker for
    it, then leaves one, so the retry succeeds."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 2**63, size=(n_vars, 4), dtype=np.uint64)
    w[0] = (1, 0, 0, 0)
    if fault:
        w[0] = (1, STAGES[fault["stage"]], ACTIONS[fault["action"]], int(bool(fault.get("once"))))
    return MAGIC + w.tobytes()


def make_wtns(n_vars: int, seed: int, path) -> bytes:
    """A real .wtns file (snarkjs's container, values below r, w[0] = 1) of pseudo-random
    values from `seed`, for tests that go through the HTTP API, which checks the container;
    the double proves it like its own format. Returns the file's bytes."""
    from cuzk.formats.wtns import write_wtns

    rng = np.random.default_rng(seed)
    w = rng.integers(0, 2**63, size=(n_vars, 4), dtype=np.uint64)
    w[:, 3] %= np.uint64(0x30644E72E131A029)  # below r's top limb: every value below r
    w[0] = (1, 0, 0, 0)
    write_wtns(path, w)
    with open(path, "rb") as f:
        return f.read()


def _parse(data) -> np.ndarray:
    data = bytes(data)
    if data[:4] == b"wtns":  # a snarkjs witness file (make_wtns)
        from cuzk.formats.wtns import read_wtns

        return np.array(read_wtns("<witness>", data=data).values)
    if data[:4] != MAGIC:
        raise ValueError("not a double-prover witness (bad magic)")
    body = data[4:]
    if len(body) % 32:
        raise ValueError("witness body is not a whole number of field elements")
    return np.frombuffer(body, dtype=np.uint64).reshape(-1, 4)


def load_witness(source, key: ProvingKey) -> np.ndarray:
    data = source
    if isinstance(data, (str, os.PathLike)):
        data = open(data, "rb").read()
    w = _parse(data)
    if w.shape[0] != key.n_vars:
        raise ValueError(f"witness has {w.shape[0]} values, the key expects {key.n_vars}")
    _maybe_fault("load", w)
    return w.copy()


def witness_digest(w: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(w).tobytes()).hexdigest()


def _maybe_fault(stage: str, w: np.ndarray) -> None:
    _, st, act, once = (int(x) for x in w[0])
    if st != STAGES[stage]:
        return
    if once:
        marker = os.path.join(_options.get("fault_dir", "/tmp"), f"fault-{witness_digest(w)[:24]}")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return  # already fired once
    if act == ACTIONS["exit"]:
        os._exit(7)
    if act == ACTIONS["sigkill"]:
        os.kill(os.getpid(), signal.SIGKILL)
    if act == ACTIONS["stop"]:
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    raise ValueError(f"injected fault at {stage}")


# -- stages ------------------------------------------------------------------------------------
class Synthesis(collections.namedtuple("Synthesis", "a b c public")):
    """a, b, c arrays (also by name, as `buffers`); public ints."""

    __slots__ = ()

    @property
    def buffers(self) -> dict:
        return {"a": self.a, "b": self.b, "c": self.c}


def _limbs_to_int(row) -> int:
    return sum(int(x) << (64 * i) for i, x in enumerate(row))


def expected_abc(w: np.ndarray, domain_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The double's a, b, c: a[i] = w[i mod n], b[i] = w[(i+1) mod n], c = a xor b."""
    idx = np.arange(domain_size) % w.shape[0]
    a = w[idx]
    b = w[(idx + 1) % w.shape[0]]
    return a, b, a ^ b


def synthesize(key: ProvingKey, w: np.ndarray, out=None) -> Synthesis:
    _maybe_fault("synth", w)
    time.sleep(_options.get("synth_secs", 0.0))
    a, b, c = expected_abc(w, key.domain_size)
    if out is not None:
        out["a"][:], out["b"][:], out["c"][:] = a, b, c
        a, b, c = out["a"], out["b"], out["c"]
    return Synthesis(a, b, c, [_limbs_to_int(w[i]) for i in range(1, 1 + key.n_public)])


class _TablesBuild:
    """A build that ends after `secs` (wait() -> True)."""

    def __init__(self, secs: float):
        self._done = threading.Event()
        threading.Timer(secs, self._done.set).start()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


@dataclass
class Device:
    name: str
    keys: dict = field(default_factory=dict)

    def load_key(self, key: ProvingKey):
        """Hold the key; with table_bytes and the option tables_secs, its "tables" are built
        beside the proofs for that long: the build is returned (cuzk.engine.contract)."""
        self.keys[key.key_id] = key.nbytes
        secs = float(_options.get("tables_secs") or 0)
        if getattr(key, "table_bytes", 0) and secs > 0:
            return _TablesBuild(secs)
        return None

    def evict_key(self, key_id: str) -> None:
        self.keys.pop(key_id, None)

    def resident_bytes(self, key_id: str) -> int:
        return self.keys.get(key_id, 0)


def open_device(spec: str) -> Device:
    return Device(spec)


@dataclass
class Partial:
    abc_sha256: str


@dataclass
class Proof:
    abc_sha256: str
    w_sha256: str
    public: list

    def to_json(self) -> dict:
        return {"protocol": "double", "abc_sha256": self.abc_sha256, "w_sha256": self.w_sha256}


def abc_digest(a, b, c) -> str:
    h = hashlib.sha256()
    for v in (a, b, c):
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def prove_start(key: ProvingKey, buffers: dict, w, device: Device) -> Partial:
    """Digest a, b, c, then overwrite them, as the real prover does (its compute_h runs the
    NTTs in a, b, c's storage) — before any fault, so a process that dies or raises anywhere
    in prove_start leaves its a, b, c consumed, and a retry that proved from them again would
    get another digest."""
    if key.key_id not in device.keys:
        raise RuntimeError("prove_start before the key was loaded on the device")
    a, b, c = buffers["a"], buffers["b"], buffers["c"]
    partial = Partial(abc_digest(a, b, c))
    for v in (a, b, c):
        v += np.uint64(1)  # wraps; never an identity, however often it is applied
    _maybe_fault("start", w)
    time.sleep(_options.get("start_secs", 0.0))
    return partial


def prove_finish(key: ProvingKey, partial: Partial, w) -> Proof:
    _maybe_fault("finish", w)
    time.sleep(_options.get("finish_secs", 0.0))
    if _options.get("proof_log"):  # one line per proof made: the witness's digest
        fd = os.open(_options["proof_log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{witness_digest(w)}\n".encode())
        finally:
            os.close(fd)
    return Proof(
        partial.abc_sha256,
        witness_digest(w),
        [str(_limbs_to_int(w[i])) for i in range(1, 1 + key.n_public)],
    )


def verify(vk: dict, public, proof) -> bool:
    return vk.get("protocol") == "double" and proof.to_json().get("protocol") == "double"


def expected_proof(witness: bytes, key: ProvingKey) -> dict:
    """What a correct engine returns for this witness (the test's independent reference)."""
    w = _parse(witness)
    return {
        "protocol": "double",
        "abc_sha256": abc_digest(*expected_abc(w, key.domain_size)),
        "w_sha256": witness_digest(w),
    }
