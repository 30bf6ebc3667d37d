"""What crosses an engine pipe: one NamedTuple per kind of message, pickled.

    supervisor -> synthesis process   Synth, Ping, Stop
    supervisor -> device process      Prove, Cancel, EvictKey, Ping, Stop
    synthesis process -> supervisor   Ready, Pong, SynthDone, SynthFailed
    device process -> supervisor      Ready, Pong, KeyLoaded, TablesReady, KeyEvicted, Started,
                                      Done, Failed, Dropped
    either child -> supervisor        Warming (kernels compiling, or done)

Every receiver matches on the message's type (`match msg: case Done(): ...`), so grep finds
each kind's senders and its one handler. Messages carry only small plain data: ids, segment
names, timings, proof JSON; the witness and the prover's buffers stay in shared memory
(buffers.py).
"""

from __future__ import annotations

import pickle
import traceback
from typing import NamedTuple

from cuzk.engine.scheduler import WorkKey


def pack(msg) -> bytes:
    """The standard pickle is enough for these small messages (and several times faster than
    the dill pickler that multiprocess connections use by default)."""
    return pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)


unpack = pickle.loads


class Failure(NamedTuple):
    """An exception raised in a child, as plain data. The formatted traceback is logged by the
    supervisor with the failure (concurrent.futures keeps it as the cause)."""

    type: str
    message: str
    traceback: str
    input_error: bool  # a ValueError: the input is at fault, a retry cannot help

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        return cls(
            type(exc).__name__,
            str(exc) or type(exc).__name__,
            "".join(traceback.format_exception(exc)),
            isinstance(exc, ValueError),
        )

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


# -- supervisor -> child -----------------------------------------------------------------------
class Synth(NamedTuple):
    """Synthesize one partition: witness (from `source`) into segment `w`, the key's buffers
    into segment `buffers`. `source`: ("shm", segment name, length) for uploaded bytes, or
    ("path", file path)."""

    work: WorkKey
    key_path: str
    source: tuple
    w: str
    buffers: str
    wasm: str | None  # set: the source is circuit inputs, the witness computed with this
    key_id: str = ""  # the key registered from key_path: the file must still hold it


class Prove(NamedTuple):
    """Prove one synthesized partition from segments `w` and `buffers`."""

    work: WorkKey
    key_id: str
    key_path: str
    w: str
    buffers: str


class Cancel(NamedTuple):
    """Skip this job's partitions at their next stage boundary."""

    job_id: str


class EvictKey(NamedTuple):
    key_id: str


class Ping(NamedTuple):
    sent_at: float


class Stop(NamedTuple):
    """Exit now (the supervisor kills a child that has not exited soon after)."""


# -- child -> supervisor -----------------------------------------------------------------------
class Ready(NamedTuple):
    pid: int
    kernels: str = ""  # what the process's kernels are (child.select_kernels), "" unsaid


class Pong(NamedTuple):
    sent_at: float


class Warming(NamedTuple):
    """The child's kernels are compiling (cuzk.compiling.CompileWatch.warming()'s dict), or,
    with None, done compiling."""

    state: dict | None


class KeyLoaded(NamedTuple):
    key_id: str
    nbytes: int
    load_ms: float
    tables_building: bool = False  # its tables are still being built, beside the proofs


class TablesReady(NamedTuple):
    """A key's tables, built beside its proofs since KeyLoaded, are in place (ok) or were given
    up (not ok: the key proves without them)."""

    key_id: str
    ok: bool
    build_ms: float


class KeyEvicted(NamedTuple):
    key_id: str


class SynthDone(NamedTuple):
    work: WorkKey
    synth_ms: float
    witness_ms: float  # of synth_ms: the witness (computed, or read)
    buffers_ms: float  # of synth_ms: synthesize filling the buffers
    public: list


class SynthFailed(NamedTuple):
    work: WorkKey
    failure: Failure


class Started(NamedTuple):
    """prove_start is over: the supervisor may unlink the partition's buffers segment."""

    work: WorkKey
    gpu_ms: float
    t_start: float  # unix time
    t_end: float


class Done(NamedTuple):
    work: WorkKey
    proof: dict  # proof.json
    public: list  # decimal strings
    gpu_ms: float
    finalize_ms: float
    t_start: float
    t_end: float


class Failed(NamedTuple):
    """A device stage raised. `buffers_intact`: prove_start never ran on this attempt, so the
    buffers segment still holds what synthesize wrote. `permanent`: a retry cannot change the
    outcome."""

    work: WorkKey
    stage: str  # "start" | "finish"
    buffers_intact: bool
    permanent: bool
    failure: Failure


class Dropped(NamedTuple):
    """A partition of a cancelled job, skipped at a stage boundary."""

    work: WorkKey
    stage: str  # "start" | "finish"
