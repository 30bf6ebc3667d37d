"""The scheduler: order (priority, then FIFO, oldest job's lowest partition first), unique keys,
and a stateful property test that no partition is ever lost or duplicated."""

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from cuzk.engine.scheduler import (
    DEVICE_QUEUE,
    PROVING,
    SYNTH_QUEUE,
    SYNTHESIZING,
    Scheduler,
    SchedulerError,
    WorkKey,
)


def drain(s, queue):
    out = []
    while (k := s.pop(queue)) is not None:
        out.append(k)
    return out


def test_priority_then_fifo_then_partition():
    s = Scheduler()
    s.add_job("n1", "normal", 3)
    s.add_job("h1", "high", 2)
    s.add_job("n2", "normal", 1)
    s.add_job("c1", "critical", 2)
    order = [(k.job_id, k.partition) for k in drain(s, SYNTH_QUEUE)]
    assert order == [
        ("c1", 0),
        ("c1", 1),
        ("h1", 0),
        ("h1", 1),
        ("n1", 0),
        ("n1", 1),
        ("n1", 2),
        ("n2", 0),
    ]


def test_critical_submitted_later_jumps_the_queue():
    s = Scheduler()
    s.add_job("a", "normal", 4)
    first = s.pop(SYNTH_QUEUE)
    assert first == WorkKey("a", 0, 0)
    s.add_job("win", "critical", 1)
    assert s.pop(SYNTH_QUEUE) == WorkKey("win", 0, 0)
    assert s.pop(SYNTH_QUEUE) == WorkKey("a", 1, 0)


def test_device_queue_orders_by_priority_too():
    s = Scheduler()
    s.add_job("a", "normal", 2)
    s.add_job("b", "critical", 1)
    for k in drain(s, SYNTH_QUEUE)[::-1]:  # synthesized in reverse order
        s.synthesized(k)
    assert [k.job_id for k in drain(s, DEVICE_QUEUE)] == ["b", "a", "a"]


def test_retry_keeps_its_place_and_bumps_the_attempt():
    s = Scheduler()
    s.add_job("a", "normal", 3)
    k0 = s.pop(SYNTH_QUEUE)
    s.pop(SYNTH_QUEUE)
    new = s.retry(k0)
    assert new == WorkKey("a", 0, 1)
    assert s.pop(SYNTH_QUEUE) == new  # ahead of partition 2
    assert s.place(k0) is None and s.live("a", 0) == new


def test_whole_job_and_partition_zero_do_not_collide():
    # Rust cuzk keyed a whole job and the first pipeline's first partition both (0, 0).
    s = Scheduler()
    s.add_job("whole", "high", 1)
    s.add_job("parted", "high", 3)
    keys = drain(s, SYNTH_QUEUE)
    assert len(set(keys)) == 4 and {k.job_id for k in keys} == {"whole", "parted"}


def test_protocol_errors_are_refused():
    s = Scheduler()
    s.add_job("a", "normal", 1)
    with pytest.raises(SchedulerError):
        s.add_job("a", "normal", 1)
    with pytest.raises(ValueError):
        s.add_job("b", "urgent", 1)
    k = WorkKey("a", 0, 0)
    with pytest.raises(SchedulerError):
        s.complete(k)  # still queued
    with pytest.raises(SchedulerError):
        s.synthesized(k)


def test_accept_filter_skips_without_reordering():
    s = Scheduler()
    s.add_job("a", "normal", 3)
    assert s.pop(SYNTH_QUEUE, accept=lambda k: k.partition == 2) == WorkKey("a", 2, 0)
    assert [k.partition for k in drain(s, SYNTH_QUEUE)] == [0, 1]


class SchedulerMachine(RuleBasedStateMachine):
    """Random submit / pop / synthesized / complete / fail (retry or give up) / cancel.

    A model keeps, per live job, which partitions are finished; the invariant is that every
    unfinished partition of every live job is in exactly one place, under exactly one key, and
    finished or dropped ones are nowhere."""

    @initialize()
    def setup(self):
        self.s = Scheduler()
        self.n = 0
        self.jobs = {}  # job_id -> {partition: "open" | "done"}
        self.running = []  # keys popped and not yet reported
        self.popped_order = []

    @rule(priority=st.sampled_from(["critical", "high", "normal"]), parts=st.integers(1, 5))
    def submit(self, priority, parts):
        job = f"j{self.n}"
        self.n += 1
        self.s.add_job(job, priority, parts)
        self.jobs[job] = dict.fromkeys(range(parts), "open")

    @rule(queue=st.sampled_from([SYNTH_QUEUE, DEVICE_QUEUE]))
    def pop(self, queue):
        k = self.s.pop(queue)
        if k is not None:
            self.running.append(k)

    @precondition(lambda self: self.running)
    @rule(i=st.integers(0, 100), outcome=st.sampled_from(["ok", "retry", "retry_dev", "give_up"]))
    def report(self, i, outcome):
        k = self.running.pop(i % len(self.running))
        place = self.s.place(k)
        if place is None:  # its job was cancelled meanwhile: the report is ignored
            assert (
                k.job_id not in self.jobs
                or self.jobs[k.job_id][k.partition] != "open"
                or self.s.live(k.job_id, k.partition) != k
            )
            return
        if outcome == "ok":
            if place == SYNTHESIZING:
                self.s.synthesized(k)
            else:
                self.s.complete(k)
                self.jobs[k.job_id][k.partition] = "done"
        elif outcome == "give_up":
            self.s.give_up(k)
            self.s.drop_job(k.job_id)
            del self.jobs[k.job_id]
        else:
            new = self.s.retry(k, DEVICE_QUEUE if outcome == "retry_dev" else SYNTH_QUEUE)
            assert new.attempt == k.attempt + 1

    @precondition(lambda self: self.jobs)
    @rule(i=st.integers(0, 100))
    def cancel(self, i):
        job = sorted(self.jobs)[i % len(self.jobs)]
        queued, running = self.s.drop_job(job)
        assert set(running) <= set(self.running)
        del self.jobs[job]

    @invariant()
    def nothing_lost_or_duplicated(self):
        items = self.s.items()
        seen = {}
        for k, place in items.items():
            assert place in (SYNTH_QUEUE, SYNTHESIZING, DEVICE_QUEUE, PROVING)
            assert (k.job_id, k.partition) not in seen, f"duplicate {k}"
            seen[(k.job_id, k.partition)] = k
        expected = {
            (j, p) for j, parts in self.jobs.items() for p, s in parts.items() if s == "open"
        }
        assert set(seen) == expected
        assert self.s.queue_depth() == sum(p in (SYNTH_QUEUE, DEVICE_QUEUE) for p in items.values())
        for place in (SYNTH_QUEUE, SYNTHESIZING, DEVICE_QUEUE, PROVING):
            assert self.s.count(place) == sum(p == place for p in items.values())

    @invariant()
    def running_items_are_known(self):
        for k, place in self.s.items().items():
            if place in (SYNTHESIZING, PROVING):
                assert k in self.running


TestSchedulerMachine = SchedulerMachine.TestCase
TestSchedulerMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
