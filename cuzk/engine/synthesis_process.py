"""A synthesis process: witness -> the prover's buffers in shared memory, one partition at a
time.

Main thread: reads commands from the supervisor (a partition to synthesize, ping, stop); a
dead supervisor ends the process (see child.py). Work thread: for each partition it claims
this process's synthesis slot on the board (the partition goes synthesizing), loads the
witness into the "w" segment (or, for a job with circuit inputs, computes it there with the
circuit's wasm: a WitnessPool keeps one warm calculator per circuit), synthesizes straight
into the "buffers" segment (the arrays the key declares, buffers.Layout), ends the slot
through its token (the partition goes synth_done) and reports to the supervisor. Only small
messages cross the pipe; the witness and buffers stay in shared memory.
"""

from __future__ import annotations

import queue
import time

import numpy as np

from cuzk.engine import child
from cuzk.engine.buffers import Layout, Segment
from cuzk.engine.messages import Failure, Synth, SynthDone, SynthFailed


def synth_main(conn, parent_pid: int, slot: int, opts: dict) -> None:
    """The process's entry point (spawn target)."""
    child.tie_to_parent(parent_pid)
    SynthesisProcess(conn, slot, opts).run()


class SynthesisProcess(child.ChildProcess):
    """One synthesis slot: a work thread synthesizing one partition at a time."""

    def __init__(self, conn, slot: int, opts: dict):
        super().__init__(conn, opts)
        self.slot = slot
        self.status.register_synth(slot)
        self.keys: dict[str, tuple] = {}  # key path -> (ProvingKey, its buffers' Layout)
        self.pool = None  # WitnessPool, created by the first job with circuit inputs
        self.work: queue.Queue = queue.Queue()

    def threads(self) -> list[tuple]:
        return [(self._work_loop, f"synth-{self.slot}")]

    def handle(self, msg) -> None:
        match msg:
            case Synth():
                self.work.put(msg)

    def _work_loop(self) -> None:
        while True:
            self._run_one(self.work.get())

    def _key(self, path: str, key_id: str = "") -> tuple:
        """(key, Layout of its buffers), the key mapped once in this process, and again when
        its file has changed (then it must still be key `key_id`, else Changed)."""
        got = self.keys.get(path)
        if got is not None and not child.key_is_current(got[0], key_id):
            del self.keys[path]
            got = None
        if got is None:
            key = self.prover.ProvingKey.open(path)
            got = self.keys[path] = (key, Layout(key.buffers()))
        child.check_key_id(got[0], key_id, path)
        return got

    def _run_one(self, msg: Synth) -> None:
        prover, status, wk = self.prover, self.status, msg.work
        t0 = time.time()
        token = status.synth_claim(self.slot, wk.job_id, wk.partition)
        segs = []
        try:
            key, layout = self._key(msg.key_path, msg.key_id)
            t_w = time.time()
            source = msg.source
            if source[0] == "shm":
                seg = Segment.attach(source[1])
                segs.append(seg)
                data = bytes(seg.buf[: source[2]])
            else:
                data = source[1]
            wseg = Segment.attach(msg.w)
            bufseg = Segment.attach(msg.buffers)
            segs += [wseg, bufseg]
            w = wseg.array(*key.witness_buffer())
            if msg.wasm:  # circuit inputs: the witness computed straight into w
                if self.pool is None:
                    from cuzk.witness.pool import WitnessPool

                    self.pool = WitnessPool()
                self.pool.calculate_into(
                    msg.wasm, data, w, name=f"job {wk.job_id} partition {wk.partition} inputs"
                )
            else:
                w_loaded = prover.load_witness(data, key)
                np.copyto(w, w_loaded)
                del w_loaded
            del data
            t_buf = time.time()
            out = layout.views(bufseg)
            syn = prover.synthesize(key, w, out=out)
            filled = syn.buffers
            for name, dst in out.items():
                if not np.shares_memory(dst, filled[name]):  # a prover that ignored `out`
                    np.copyto(dst, filled[name])
            public = [int(x) for x in syn.public]
            del syn, filled, out, w
            t_end = time.time()
            ms = (t_end - t0) * 1e3
            status.synth_end(token, wk.job_id, wk.partition, ok=True, synth_ms=ms)
            self.chan.send(SynthDone(wk, ms, (t_buf - t_w) * 1e3, (t_end - t_buf) * 1e3, public))
        except Exception as exc:  # reported; the supervisor decides retry or failure
            ms = (time.time() - t0) * 1e3
            status.synth_end(token, wk.job_id, wk.partition, ok=False, synth_ms=ms)
            self.chan.send(SynthFailed(wk, Failure.of(exc)))
        finally:
            for s in segs:
                s.close()
