"""Tables of multiples built beside the proofs (cuzk.kernels.table_builds): a build puts each
finished table in place, stops between pieces when asked (and what it made after that is never
installed), fails without taking the process down, runs its kernels on half the process's
threads (its own thread's setting); a table built in pieces (msm_cpu.build_table's ``stop``) is the
table built whole.
The devices' use of it with the native library: tests/test_native.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_msm import _progression

from cuzk.kernels import msm_cpu, table_builds


def test_a_build_puts_each_table_in_place_and_logs_it(caplog):
    got = []

    def make(stop, put):
        put("a")
        put(None)  # (a set with no table: nothing to install)
        put("b")

    builds = table_builds.Builds()
    with caplog.at_level("INFO", logger="cuzk.kernels"):
        b = builds.start("k1", "key k1", make, got.append)
        assert builds.wait("k1", timeout=30)
    assert got == ["a", "b"] and b.error is None and not builds.building("k1")
    assert "tables of multiples for key k1 ready" in caplog.text


def test_a_stopped_build_installs_nothing_more_and_is_waited_for():
    started, got, asked = threading.Event(), [], []

    def make(stop, put):
        put("first")
        started.set()
        while not stop():  # a piece at a time, as msm_cpu.build_table asks
            threading.Event().wait(0.005)
        asked.append(True)
        put("after the stop")  # dropped: the key is gone

    builds = table_builds.Builds()
    b = builds.start("k", "key k", make, got.append)
    assert started.wait(30) and builds.building("k")
    builds.stop("k")  # returns once the thread has ended
    assert not b.running and asked == [True] and got == ["first"]
    assert builds.get("k") is None and not builds.building("k")
    builds.stop("k")  # (nothing to stop: fine)


def test_a_failed_build_is_logged_and_leaves_the_key_without_tables(caplog):
    def make(stop, put):
        raise MemoryError("no room for the table")

    builds = table_builds.Builds()
    with caplog.at_level("WARNING", logger="cuzk.kernels"):
        b = builds.start("k", "key k", make, lambda t: pytest.fail("installed"))
        assert builds.wait("k", timeout=30)
    assert isinstance(b.error, MemoryError)
    assert "not built: no room for the table" in caplog.text


def test_the_build_runs_on_half_the_threads(monkeypatch):
    from cuzk import native
    from cuzk.kernels import threads

    monkeypatch.setattr(native, "default_threads", lambda: 5)
    assert table_builds.build_threads() == 2
    monkeypatch.setattr(native, "default_threads", lambda: 1)
    assert table_builds.build_threads() == 1
    seen = []
    mine = threads.get_num_threads()
    builds = table_builds.Builds()
    builds.start("k", "key k", lambda stop, put: seen.append(threads.get_num_threads()), print)
    builds.wait("k", timeout=30)
    assert seen == [1] and threads.get_num_threads() == mine  # (the build's thread only)


def test_a_table_built_in_pieces_is_the_table_built_whole(monkeypatch):
    points, _ = _progression(150, 424242, 1010101)
    whole = msm_cpu.build_table(points, 0, g=1, plan=(6, 3))
    monkeypatch.setattr(msm_cpu, "FILL_PIECE", 64)  # pieces of 64, 64 and 22 points
    asked = []
    pieces = msm_cpu.build_table(points, 0, g=1, plan=(6, 3), stop=lambda: bool(asked.append(1)))
    assert len(asked) == 3 and np.array_equal(pieces.rows, whole.rows)
    assert (pieces.c, pieces.windows, pieces.factor) == (whole.c, whole.windows, whole.factor)
    calls = []
    stopped = msm_cpu.build_table(
        points, 0, g=1, plan=(6, 3), stop=lambda: bool(calls.append(1)) or len(calls) > 1
    )
    assert stopped is None and len(calls) == 2
