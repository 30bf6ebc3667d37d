"""Scripted board writers run in child processes: stress load, fault injection, test actors.

The board's tests and benchmark start these with the "spawn" start method (a fresh
interpreter, as the engine's children are), so they live in an importable module. Nothing in
the daemon uses them.

- writer_main: a device process in miniature: threads that synthesize, prove, hand off and
  finalize partitions of their own jobs as fast as they can, sprinkling stale ends, and report
  what they did.
- actor_main: executes board calls sent over a pipe (the stateful test's "process" actor).
- hang_in_slot_write / hang_in_control_write: start a write, announce it, and wait to be killed
  with -9 in the middle of it.
- hammer_main: claims, ends and updates partitions in a loop until killed at a random moment.
- create_and_wait: creates a board and waits (killed, it leaves a stale board behind).
"""

from __future__ import annotations

import os
import queue
import random
import threading
import time


def _partitions(board, lock, state, prefix: str, n_parts: int):
    """Next (job, partition) for a thread of this process; adds a job when none is left."""
    with lock:
        if not state["todo"]:
            job = f"{prefix}-j{state['jobs']}"
            state["jobs"] += 1
            if not board.control.job_add(job, "porep-c2", "normal", n_parts):
                state["dropped"] += 1
            board.control.job_set_state(job, "running")
            state["left"][job] = n_parts
            state["todo"].extend((job, p) for p in range(n_parts))
        return state["todo"].popleft()


def writer_main(
    name: str,
    proc: int,
    n_threads: int,
    stop,
    results,
    seed: int,
    n_parts: int = 6,
    pause_every: int = 0,
) -> None:
    """Threads t = 0..n_threads-1 own synth, device and finalizer slot proc*n_threads + t.

    pause_every: sleep a little after this many partitions (0: never), so that readers also
    meet quiet moments."""
    from collections import deque

    from cuzk.board import Board

    board = Board.attach(name)
    lock = threading.Lock()
    state = {"todo": deque(), "jobs": 0, "left": {}, "dropped": 0}
    counts = {"partitions": 0, "stale_ends": 0, "stale_rejected": 0, "jobs_done": 0, "writes": 0}
    count_lock = threading.Lock()

    def work(t: int):
        rng = random.Random(seed * 1000 + t)
        slot = proc * n_threads + t
        board.synth.register(slot, ordinal=slot)
        board.devices.register(slot, ordinal=proc, device=f"cpu:{proc}")
        board.finalizers.register(slot, ordinal=proc)
        old = []
        mine = {"partitions": 0, "stale_ends": 0, "stale_rejected": 0, "jobs_done": 0, "writes": 3}
        while not stop.is_set():
            job, p = _partitions(board, lock, state, f"w{proc}", n_parts)
            st = board.synth.claim(slot, job, p)
            board.synth.end(st, state="synth_done", synth_ms=rng.random())
            dt = board.claim_device(slot, job, p)
            board.devices.heartbeat(slot)
            ft = board.handoff(dt, slot)
            # the seed story: a late end for the device claim that was just handed off
            mine["stale_ends"] += 1
            if not board.end(dt):
                mine["stale_rejected"] += 1
            if old and rng.random() < 0.3:
                mine["stale_ends"] += 1
                if not board.end(rng.choice(old)):
                    mine["stale_rejected"] += 1
            old = (old + [dt, st])[-8:]
            board.end(ft, state="done", gpu_ms=rng.random(), finalize_ms=rng.random())
            mine["writes"] += 9
            mine["partitions"] += 1
            with lock:
                state["left"][job] -= 1
                finished = state["left"][job] == 0
                if finished:
                    del state["left"][job]
            if finished:
                board.control.job_set_state(job, "done")
                board.control.count(completed="porep-c2")
                mine["jobs_done"] += 1
            if pause_every and mine["partitions"] % pause_every == 0:
                time.sleep(rng.uniform(0.0005, 0.003))
        with count_lock:
            for k, v in mine.items():
                counts[k] += v

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    counts["jobs_dropped"] = state["dropped"]
    board.close()
    results.put((proc, counts))


def actor_main(conn) -> None:
    """Serve board calls over `conn`: ("attach", name), ("devices.claim", *args),
    ("kw:end", token, {"state": "done"}) ... -> ("ok", reply) or ("error", text)."""
    from cuzk.board import Board, Token

    board = None
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        op, args = msg[0], msg[1:]
        try:
            if op == "attach":
                if board is not None:
                    board.close()
                board = Board.attach(args[0])
                reply = os.getpid()
            elif op == "close":
                if board is not None:
                    board.close()
                board = None
                reply = None
            elif op == "exit":
                conn.send(("ok", None))
                break
            else:
                kw = {}
                if op.startswith("kw:"):  # "kw:method", *args, {keyword arguments}
                    op, args, kw = op[3:], args[:-1], args[-1]
                obj = board
                for part in op.split("."):
                    obj = getattr(obj, part)
                args = [Token(*a) if isinstance(a, tuple) and len(a) == 3 else a for a in args]
                reply = obj(*args, **kw)
                if isinstance(reply, Token):
                    reply = tuple(reply)
            conn.send(("ok", reply))
        except Exception as e:  # report, keep serving
            conn.send(("error", f"{type(e).__name__}: {e}"))
    if board is not None:
        board.close()


def hang_in_slot_write(name: str, kind: str, slot: int, conn) -> None:
    """Register `slot`, claim it, then begin another write (odd sequence, half a payload) and
    wait to be killed with -9."""
    from cuzk.board import Board
    from cuzk.board.layout import SEQ

    board = Board.attach(name)
    table = board.table(kind)
    table.register(slot)
    tok = table.claim(slot, "victim", 0)
    off = board.layout.slot_offset(kind, slot)
    buf = board._buf
    seq = SEQ.unpack_from(buf, off)[0]
    SEQ.pack_into(buf, off, seq + 1)  # writer inside
    buf[off + 8 : off + 8 + 24] = b"\xff" * 24  # half a payload
    conn.send(tuple(tok))
    while True:
        time.sleep(60)


def hang_in_control_write(name: str, job_id: str, index: int, conn) -> None:
    """Take the control lock, begin a partition write and wait to be killed with -9 holding it."""
    from cuzk.board import Board
    from cuzk.board.layout import CTL_DIRTY_OFFSET, SEQ

    board = Board.attach(name)
    board.control.__enter__()  # hold the control lock until killed
    row = board.control.find_row(job_id.encode(), job_id)
    off = board.layout.part_offset(row, index)
    buf = board._buf
    SEQ.pack_into(buf, CTL_DIRTY_OFFSET, off + 1)
    seq = SEQ.unpack_from(buf, off)[0]
    SEQ.pack_into(buf, off, seq + 1)
    buf[off + 8 : off + 8 + 12] = b"\xee" * 12
    conn.send("inside")
    while True:
        time.sleep(60)


def hammer_main(name: str, slot: int, job_id: str, n_parts: int, conn) -> None:
    """Claim, end and update partitions as fast as possible until killed; reports the first
    token, then the count of rounds every 256 rounds (never waits on the pipe)."""
    from cuzk.board import Board

    board = Board.attach(name)
    board.devices.register(slot)
    i = 0
    tok = board.claim_device(slot, job_id, 0)
    conn.send(tuple(tok))
    while True:
        board.end(tok)
        p = i % n_parts
        tok = board.claim_device(slot, job_id, p)
        board.devices.heartbeat(slot)
        board.control.partition_set(job_id, p, "synth_done", synth_ms=float(i), attempts=i % 7)
        i += 1
        if i % 256 == 0:
            try:
                conn.send(i)
            except (BrokenPipeError, OSError):
                pass


def create_and_wait(conn, name: str, instance: str) -> None:
    """Create a board, report its name, and wait (to be killed: a stale board for cleanup)."""
    from cuzk.board import Board

    board = Board.create(
        name,
        instance=instance,
        device_slots=1,
        finalizer_slots=1,
        synth_slots=1,
        job_rows=2,
        max_partitions=2,
    )
    conn.send(board.name)
    try:
        conn.recv()
    except EOFError:
        pass
    while True:
        time.sleep(60)


def drain(q, n: int, timeout: float) -> list:
    """Up to n items from a multiprocessing queue within `timeout` seconds."""
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        try:
            out.append(q.get(timeout=max(0.01, deadline - time.monotonic())))
        except queue.Empty:
            break
    return out
