"""A synthesis process: witness -> a, b, c in shared memory, one partition at a time.

Main thread: reads commands from the supervisor (a partition to synthesize, ping, stop); a
dead supervisor ends the process (see child.py). Work thread: for each partition it claims
this process's synthesis slot on the board (the partition goes synthesizing), loads the
witness into the "w" segment (or, for a job with circuit inputs, computes it there with the
circuit's wasm: a WitnessPool keeps one warm calculator per circuit), synthesizes a, b, c
straight into the "abc" segment, ends the slot through its token (the partition goes
synth_done) and reports to the supervisor. Only small messages cross the pipe; witness and
vectors stay in shared memory.
"""

from __future__ import annotations

import os
import queue
import threading
import time

import numpy as np

from cuzk.engine import child
from cuzk.engine.buffers import Segment
from cuzk.engine.status import ChildStatus


def synth_main(conn, parent_pid: int, slot: int, opts: dict) -> None:
    child.tie_to_parent(parent_pid)
    child.setup_logging(opts.get("log_level", 30))
    chan = child.Channel(conn)
    prover = child.load_prover(opts["prover"], opts.get("prover_options"))
    status = ChildStatus.attach(opts.get("board_name"), pid=os.getpid())
    status.register_synth(slot)
    keys: dict[str, object] = {}  # key path -> ProvingKey, mapped once in this process
    pool = None  # WitnessPool, created by the first job with circuit inputs
    work: queue.Queue = queue.Queue()

    def run_one(spec: dict) -> None:
        nonlocal pool
        job_id, partition, attempt = spec["work"]
        t0 = time.time()
        token = status.synth_claim(slot, job_id, partition)
        segs = []
        try:
            key = keys.get(spec["key_path"])
            if key is None:
                key = keys[spec["key_path"]] = prover.ProvingKey.open(spec["key_path"])
            t_w = time.time()
            source = spec["input"]
            if source[0] == "shm":
                seg = Segment.attach(source[1])
                segs.append(seg)
                data = bytes(seg.buf[: source[2]])
            else:
                data = source[1]
            wseg = Segment.attach(spec["w"])
            abcseg = Segment.attach(spec["abc"])
            segs += [wseg, abcseg]
            w = wseg.array((key.n_vars, 4))
            if spec.get("wasm"):  # circuit inputs: the witness computed straight into w
                if pool is None:
                    from cuzk.witness.pool import WitnessPool

                    pool = WitnessPool()
                pool.calculate_into(spec["wasm"], data, w,
                                    name=f"job {job_id} partition {partition} inputs")
            else:
                w_loaded = prover.load_witness(data, key)
                np.copyto(w, w_loaded)
                del w_loaded
            del data
            t_abc = time.time()
            d = key.domain_size
            out = tuple(abcseg.array((d, 4), offset=i * d * 32) for i in range(3))
            syn = prover.synthesize(key, w, out=out)
            for dst, src in zip(out, (syn.a, syn.b, syn.c), strict=True):
                if not np.shares_memory(dst, src):  # a prover that ignored `out`
                    np.copyto(dst, src)
            public = [int(x) for x in syn.public]
            del syn, out, w
            t_end = time.time()
            ms = (t_end - t0) * 1e3
            status.synth_end(token, job_id, partition, ok=True, synth_ms=ms)
            chan.send(("synth_done", spec["work"], {
                "synth_ms": ms, "witness_ms": (t_abc - t_w) * 1e3,
                "abc_ms": (t_end - t_abc) * 1e3, "public": public}))
        except Exception as exc:  # reported; the supervisor decides retry or failure
            ms = (time.time() - t0) * 1e3
            status.synth_end(token, job_id, partition, ok=False, synth_ms=ms)
            chan.send(("synth_failed", spec["work"], child.describe_exception(exc)))
        finally:
            for s in segs:
                s.close()

    def worker() -> None:
        while True:
            spec = work.get()
            if spec is None:
                return
            run_one(spec)

    t = threading.Thread(target=worker, name=f"synth-{slot}", daemon=True)
    t.start()
    hb = threading.Thread(target=status.heartbeat_loop, name="heartbeat", daemon=True)
    hb.start()
    chan.send(("ready", os.getpid(), {"slot": slot}))
    while True:
        msg = chan.recv()
        kind = msg[0]
        if kind == "synth":
            work.put(msg[1])
        elif kind == "ping":
            chan.send(("pong", msg[1]))
        elif kind == "stop":
            os._exit(0)
