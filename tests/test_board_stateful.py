"""Hypothesis stateful test: random interleavings of claim / end / handoff / stale end / crash /
reclaim, issued from three actors -- this thread, another thread, another process -- against a
model of what the board must show.

Slot i (synthesis, device and finalizer alike) belongs to actor i: 0 = the test thread, 1 = a
worker thread, 2 = a child process (started with "spawn", killed with -9 by the crash rule and
restarted, as the engine's supervisor would). After every step the model and a snapshot must
agree exactly: slot states, the partition each names, generations, partition states, the stale
end count; and the gpu/proving invariant must hold. One rule fires stale ends from all three
actors at once, so the cross-process counter lock is exercised under real concurrency.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import BOARD_PREFIX as PREFIX
from conftest import board_name
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cuzk.board import Board, Token
from cuzk.board.segment import unlink_segment
from cuzk.testing import drill

pytestmark = pytest.mark.slow

CTX = mp.get_context("spawn")
N_PARTS = 5
JOB = "job-0"
KINDS = ("synth", "device", "finalizer")
FIRED: list[str] = []  # rules that changed something, over all examples


class ProcActor:
    """Board calls executed in a child process (drill.actor_main) over a pipe."""

    def __init__(self):
        self.start()

    def start(self):
        self.outstanding = 0  # replies not read yet (a failed rule can leave some)
        self.conn, child = CTX.Pipe()
        self.proc = CTX.Process(target=drill.actor_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def submit(self, op, *args):
        self.conn.send((op, *[tuple(a) if isinstance(a, Token) else a for a in args]))
        self.outstanding += 1

    def drain(self):
        """Discard replies a failed rule left unread, so the next example starts in step."""
        while self.outstanding:
            self.conn.recv()
            self.outstanding -= 1

    def result(self):
        status, value = self.conn.recv()
        self.outstanding -= 1
        if status != "ok":
            raise AssertionError(f"child: {value}")
        return Token(*value) if isinstance(value, list | tuple) and len(value) == 3 else value

    def call(self, op, *args):
        self.submit(op, *args)
        return self.result()

    def kill(self):
        self.proc.kill()
        self.proc.join(30)
        self.conn.close()

    def stop(self):
        if self.proc.is_alive():
            try:
                self.call("exit")
            except (EOFError, OSError, AssertionError):
                pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.kill()


class LocalActor:
    """Board calls executed here (pool None) or in one worker thread."""

    def __init__(self, pool: ThreadPoolExecutor | None):
        self.pool = pool
        self.board = None
        self.pending = None

    def _run(self, op, *args):
        kw = {}
        if op.startswith("kw:"):
            op, args, kw = op[3:], args[:-1], args[-1]
        obj = self.board
        for part in op.split("."):
            obj = getattr(obj, part)
        return obj(*args, **kw)

    def submit(self, op, *args):
        if self.pool is None:
            self.pending = ("now", self._run(op, *args))
        else:
            self.pending = ("future", self.pool.submit(self._run, op, *args))

    def result(self):
        how, v = self.pending
        return v if how == "now" else v.result(timeout=60)

    def call(self, op, *args):
        self.submit(op, *args)
        return self.result()


class BoardMachine(RuleBasedStateMachine):
    pool: ThreadPoolExecutor
    proc: ProcActor

    def __init__(self):
        super().__init__()
        self.board = Board.create(
            board_name(),
            instance="stateful",
            device_slots=3,
            finalizer_slots=3,
            synth_slots=3,
            job_rows=2,
            max_partitions=N_PARTS,
        )
        self.actors = [LocalActor(None), LocalActor(self.pool), self.proc]
        self.actors[0].board = self.actors[1].board = self.board
        if not self.proc.proc.is_alive():
            self.proc.start()
        self.proc.drain()
        self.proc.call("attach", self.board.name)
        # model
        self.slot = {
            (k, i): {"state": "empty", "token": None, "part": None, "restarts": 0}
            for k in KINDS
            for i in range(3)
        }
        self.stored = ["pending"] * N_PARTS
        self.stale_tokens: list[Token] = []
        self.stale_count = 0
        self.retries = 0
        self.crashes = 0
        self.reads = 0

    @initialize()
    def setup(self):
        self.board.control.job_add(JOB, "porep-c2", "normal", N_PARTS)
        self.board.control.job_set_state(JOB, "running")
        for i, actor in enumerate(self.actors):
            for kind, table in (
                ("synth", "synth"),
                ("device", "devices"),
                ("finalizer", "finalizers"),
            ):
                actor.call(f"{table}.register", i)
                self.slot[(kind, i)]["state"] = "idle"

    def teardown(self):
        try:
            self.proc.call("close")
        except (EOFError, OSError, AssertionError):
            pass
        name = self.board.name
        self.board.close()
        unlink_segment(name)

    # --- helpers ---------------------------------------------------------------------------------
    def named(self, p: int) -> bool:
        return any(s["state"] == "busy" and s["part"] == p for s in self.slot.values())

    def idle(self, kind, i):
        return self.slot[(kind, i)]["state"] == "idle"

    def busy(self, kind, i):
        return self.slot[(kind, i)]["state"] == "busy"

    def retire(self, kind, i):
        s = self.slot[(kind, i)]
        if s["token"] is not None:
            self.stale_tokens.append(s["token"])
        s.update(state="idle", token=None, part=None)

    # --- rules -----------------------------------------------------------------------------------
    def free_slots(self, kind, state="idle"):
        return [i for i in range(3) if self.slot[(kind, i)]["state"] == state]

    def parts(self, stored):
        return [p for p in range(N_PARTS) if self.stored[p] == stored and not self.named(p)]

    @precondition(lambda self: self.free_slots("synth") and self.parts("pending"))
    @rule(data=st.data())
    def synth_claim(self, data):
        i = data.draw(st.sampled_from(self.free_slots("synth")), label="slot")
        p = data.draw(st.sampled_from(self.parts("pending")), label="partition")
        tok = self.actors[i].call("synth.claim", i, JOB, p)
        assert tok.kind == "synth" and tok.slot == i
        self.slot[("synth", i)].update(state="busy", token=tok, part=p)
        FIRED.append("synth_claim")

    @precondition(lambda self: self.free_slots("synth", "busy"))
    @rule(data=st.data())
    def synth_end(self, data):
        i = data.draw(st.sampled_from(self.free_slots("synth", "busy")), label="slot")
        s = self.slot[("synth", i)]
        # the end stores synth_done first, while the slot still names the partition
        assert self.actors[i].call("kw:end", s["token"], {"state": "synth_done"}) is True
        self.stored[s["part"]] = "synth_done"
        self.retire("synth", i)
        FIRED.append("synth_end")

    @precondition(lambda self: self.free_slots("device") and self.parts("synth_done"))
    @rule(data=st.data())
    def device_claim(self, data):
        i = data.draw(st.sampled_from(self.free_slots("device")), label="slot")
        p = data.draw(st.sampled_from(self.parts("synth_done")), label="partition")
        tok = self.actors[i].call("claim_device", i, JOB, p)
        self.slot[("device", i)].update(state="busy", token=tok, part=p)
        FIRED.append("device_claim")

    def can_hand_off(self):
        return [i for i in self.free_slots("device", "busy") if self.idle("finalizer", i)]

    @precondition(lambda self: self.can_hand_off())
    @rule(data=st.data())
    def handoff(self, data):
        i = data.draw(st.sampled_from(self.can_hand_off()), label="slot")
        d = self.slot[("device", i)]
        ftok = self.actors[i].call("handoff", d["token"], i)
        assert ftok is not None and ftok.kind == "finalizer"
        p = d["part"]
        self.retire("device", i)
        self.slot[("finalizer", i)].update(state="busy", token=ftok, part=p)
        FIRED.append("handoff")

    @precondition(lambda self: self.free_slots("finalizer", "busy"))
    @rule(data=st.data(), ok=st.booleans())
    def finalizer_end(self, data, ok):
        i = data.draw(st.sampled_from(self.free_slots("finalizer", "busy")), label="slot")
        s = self.slot[("finalizer", i)]
        state = "done" if ok else "failed"
        assert (
            self.actors[i].call("kw:end", s["token"], {"state": state, "finalize_ms": 1.5}) is True
        )
        self.stored[s["part"]] = state
        self.retire("finalizer", i)
        FIRED.append("finalizer_end")

    @precondition(lambda self: self.free_slots("device", "busy"))
    @rule(data=st.data())
    def device_end_without_split(self, data):
        """Synchronous proving: the device worker ends its own claim, storing done first."""
        i = data.draw(st.sampled_from(self.free_slots("device", "busy")), label="slot")
        d = self.slot[("device", i)]
        assert self.actors[i].call("kw:devices.end", d["token"], {"state": "done"}) is True
        self.stored[d["part"]] = "done"
        self.retire("device", i)
        FIRED.append("device_end_without_split")

    @precondition(lambda self: self.parts("failed") or self.parts("done"))
    @rule(data=st.data())
    def retry(self, data):
        """The supervisor re-queues a finished partition (a retry), so the machine goes on."""
        p = data.draw(st.sampled_from(self.parts("failed") + self.parts("done")))
        self.board.control.partition_set(JOB, p, "pending", attempts=2)
        self.board.control.count(retries=1)
        self.retries += 1
        self.stored[p] = "pending"
        FIRED.append("retry")

    @precondition(lambda self: self.stale_tokens)
    @rule(data=st.data(), by=st.integers(0, 2))
    def stale_end(self, data, by):
        tok = data.draw(st.sampled_from(self.stale_tokens))
        assert self.actors[by].call("end", tok) is False
        self.stale_count += 1
        FIRED.append("stale_end")

    def stale_device_tokens(self):
        return [
            t for t in self.stale_tokens if t.kind == "device" and self.idle("finalizer", t.slot)
        ]

    @precondition(lambda self: self.stale_device_tokens())
    @rule(data=st.data())
    def stale_handoff(self, data):
        tok = data.draw(st.sampled_from(self.stale_device_tokens()))
        i = tok.slot
        assert self.actors[i].call("handoff", tok, i) is None
        self.stale_count += 1
        FIRED.append("stale_handoff")

    @precondition(lambda self: self.stale_tokens)
    @rule(data=st.data(), k=st.integers(1, 20))
    def concurrent_stale_ends(self, data, k):
        """All three actors end stale tokens k times each, at the same time: each end is
        rejected and counted exactly once (the counters' cross-process lock)."""
        toks = [data.draw(st.sampled_from(self.stale_tokens)) for _ in range(3)]
        for _ in range(k):
            self.proc.submit("end", toks[2])
        burst = self.pool.submit(lambda: [self.board.end(toks[1]) for _ in range(k)])
        mine = [self.board.end(toks[0]) for _ in range(k)]
        theirs = [self.proc.result() for _ in range(k)]
        assert mine == theirs == burst.result(timeout=60) == [False] * k
        self.stale_count += 3 * k
        FIRED.append("concurrent_stale_ends")

    @precondition(lambda self: self.reads < 2)
    @rule(k=st.integers(1, 30))
    def heartbeats_while_reading(self, k):
        """The thread and the process stamp heartbeats on all their slots while this thread
        takes snapshots: every consistent one satisfies the invariant."""
        for _ in range(k):
            for table in ("synth", "devices", "finalizers"):
                self.proc.submit(f"{table}.heartbeat", 2)
        burst = self.pool.submit(
            lambda: [self.board.table(kd).heartbeat(1) for _ in range(k) for kd in KINDS]
        )
        for _ in range(k):
            s = self.board.snapshot(tries=8)
            assert not s.consistent or s.invariant_violations() == []
        burst.result(timeout=60)
        for _ in range(3 * k):
            assert self.proc.result() is True
        self.reads += 1
        FIRED.append("heartbeats_while_reading")

    @precondition(lambda self: self.crashes < 1)
    @rule(i=st.integers(1, 2))
    def crash_and_reclaim(self, i):
        """Actor i's process dies (kill -9 for the child; for the thread, its tokens are simply
        abandoned); the supervisor reclaims its slots and a new owner registers them."""
        self.crashes += 1
        if i == 2:
            self.proc.kill()
        for kind in KINDS:
            s = self.slot[(kind, i)]
            self.board.table(kind).reclaim(i)
            self.retire(kind, i)
            s["restarts"] += 1
            s["state"] = "dead"
        snap = self.board.snapshot()
        assert all(snap.slots(k)[i].state == "dead" for k in KINDS)
        if i == 2:
            self.proc.start()
            self.proc.call("attach", self.board.name)
        for kind, table in (("synth", "synth"), ("device", "devices"), ("finalizer", "finalizers")):
            self.actors[i].call(f"{table}.register", i)
            self.slot[(kind, i)]["state"] = "idle"
        FIRED.append("crash_and_reclaim")

    # --- what the board must show ----------------------------------------------------------
    @invariant()
    def board_matches_model(self):
        s = self.board.snapshot(verify="all")
        assert s.consistent and s.torn == ()
        assert s.invariant_violations() == []
        for (kind, i), m in self.slot.items():
            v = s.slots(kind)[i]
            want = {
                "busy": {"synth": "synthesizing", "device": "proving", "finalizer": "finalizing"}[
                    kind
                ]
            }.get(m["state"], m["state"])
            assert v.state == want, (kind, i, v, m)
            assert v.restarts == m["restarts"]
            if m["state"] == "busy":
                assert (v.job_id, v.partition, v.generation) == (
                    JOB,
                    m["part"],
                    m["token"].generation,
                )
            else:
                assert v.job_id is None and v.partition is None
            # every stale token of this slot is older than the slot's claim, or is the claim
            # that ended last (an end leaves the generation; only a claim can make it busy)
            assert all(
                t.generation < v.generation or (t.generation == v.generation and not v.busy)
                for t in self.stale_tokens
                if (t.kind, t.slot) == (kind, i)
            )
        derived = {"synth": "synthesizing", "device": "gpu", "finalizer": "finalizing"}
        for p in range(N_PARTS):
            want = self.stored[p]
            for (kind, _), m in self.slot.items():
                if m["state"] == "busy" and m["part"] == p:
                    want = derived[kind]
            assert s.partition_state(JOB, p) == want, (p, want)
        assert s.counters["stale_ends_ignored"] == self.stale_count
        assert s.counters["retries"] == self.retries


@pytest.fixture(scope="module")
def actors():
    pool = ThreadPoolExecutor(max_workers=1)
    proc = ProcActor()
    yield pool, proc
    proc.stop()
    pool.shutdown()
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(PREFIX)]


def test_board_state_machine(actors):
    BoardMachine.pool, BoardMachine.proc = actors
    FIRED.clear()
    run_state_machine_as_test(
        BoardMachine,
        settings=settings(
            max_examples=int(os.environ.get("CUZK_BOARD_EXAMPLES", "25")),
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    # the interleavings did exercise every transition
    rules = {
        "synth_claim",
        "synth_end",
        "device_claim",
        "handoff",
        "finalizer_end",
        "device_end_without_split",
        "retry",
        "stale_end",
        "stale_handoff",
        "concurrent_stale_ends",
        "heartbeats_while_reading",
        "crash_and_reclaim",
    }
    counts = {r: FIRED.count(r) for r in rules}
    print(counts)
    assert all(counts.values()), counts
