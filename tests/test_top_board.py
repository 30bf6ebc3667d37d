"""`cuzk top` on a real status board driven by live writer processes (cuzk.testing.simulate).

Covers attaching by name, listing when several boards are live, `--json` (the snapshot JSON,
shape from TEAM.md), `--once` (a parsable frame) and a board that goes away mid-run.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from click.testing import CliRunner

from cuzk.board import Board
from cuzk.cli import main as cuzk_main
from cuzk.testing.simulate import Plan, Simulation
from cuzk.top.source import EXIT_AMBIGUOUS, EXIT_NO_BOARD

# Top-level keys of the status JSON (TEAM.md "Shared contracts").
STATUS_KEYS = {
    "instance",
    "board",
    "layout_version",
    "supervisor_pid",
    "started_at",
    "now",
    "uptime_secs",
    "consistent",
    "memory",
    "synthesis",
    "gpu_workers",
    "finalizers",
    "pipelines",
    "keys",
    "allocations",
    "counters",
}
PLAN = Plan(
    devices=2,
    workers_per_device=2,
    finalizers_per_device=1,
    synth_slots=2,
    synth_procs=1,
    active_jobs=4,
    instance="top-test",
)


@pytest.fixture(scope="module")
def sim():
    with Simulation(PLAN) as s:
        b = Board.attach(s.name)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait for writers to be registered and busy
            d = b.snapshot().to_dict()
            if len(d["gpu_workers"]) == 4 and d["pipelines"]:
                break
            time.sleep(0.1)
        b.close()
        yield s
    assert not os.path.exists(f"/dev/shm/{s.name}")


def _top(*args):
    return CliRunner().invoke(cuzk_main, ["top", *args])


def test_json_is_the_board_snapshot(sim):
    r = _top("--board", sim.name, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert set(d) >= STATUS_KEYS
    assert d["board"] == sim.name and d["instance"] == "top-test"
    assert d["supervisor_pid"] == os.getpid()
    assert {w["worker_id"] for w in d["gpu_workers"]} == {0, 1, 2, 3}
    assert all(w["state"] in ("idle", "proving") for w in d["gpu_workers"])
    # the consistency invariant holds in what top prints
    gpu = {
        (p["job_id"], q["index"])
        for p in d["pipelines"]
        for q in p["partitions"]
        if q["state"] == "gpu"
    }
    proving = [
        (w["current_job"], w["current_partition"])
        for w in d["gpu_workers"]
        if w["state"] == "proving"
    ]
    if d["consistent"]:
        assert sorted(gpu) == sorted(proving)


def test_once_frame_names_live_workers_and_jobs(sim):
    r = _top(
        "--board",
        sim.name,
        "--once",
        "--interval",
        "0.2",
        "--width",
        "120",
        "--height",
        "40",
        "--no-color",
    )
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) == 40 and lines[0].startswith("cuzk top  top-test")
    b = Board.attach(sim.name)
    try:
        d = b.snapshot().to_dict()
    finally:
        b.close()
    head = next(i for i, line in enumerate(lines) if line.startswith("WORKER"))
    rows = [line.split() for line in lines[head + 1 : head + 5]]
    assert [row[0] for row in rows] == ["0", "1", "2", "3"]
    pids = {str(w["pid"]) for w in d["gpu_workers"]}
    assert all(any(tok in pids for tok in row) for row in rows)
    assert all(row[-3] == "0" for row in rows)  # RST: no restarts
    # every UTIL cell is a percentage: two samples 0.2 s apart on live writers
    assert all(row[6].endswith("%") for row in rows)
    jobs = {p["job_id"] for p in d["pipelines"]}
    assert sum(1 for line in lines if line.split()[:1] and line.split()[0] in jobs) >= 1


def test_missing_named_board_exits_nonzero():
    r = _top("--board", "cuzk-no-such-board-x", "--json")
    assert r.exit_code == EXIT_NO_BOARD and "no cuzk status board named" in r.output


def test_a_segment_that_is_not_a_board_is_refused():
    from cuzk.board.segment import open_segment, unlink_segment

    name = f"top-test-notaboard-{os.getpid()}"  # no cuzk- prefix: list_boards ignores it
    shm = open_segment(name, create=True, size=4096)  # untracked: unlinked below
    try:
        shm.buf[:8] = b"NOTABRD\0"
        r = _top("--board", name, "--once")
        assert r.exit_code == EXIT_NO_BOARD and "not a cuzk board" in r.output
    finally:
        shm.close()
        unlink_segment(name)


def test_several_live_boards_are_listed(sim):
    other = Board.create(instance="second", device_slots=1, finalizer_slots=1, synth_slots=1)
    try:
        r = _top("--json")
        assert r.exit_code == EXIT_AMBIGUOUS
        assert f"  {sim.name}" in r.output and f"  {other.name}" in r.output
    finally:
        other.close()
        other.unlink()


def test_board_going_away_ends_the_run_cleanly():
    with Simulation(PLAN) as s:
        name = s.name
        threading.Timer(1.0, s.stop).start()
        r = _top("--board", name, "--interval", "0.1")  # no -n: runs until the board goes
    assert r.exit_code == 0
    assert "went away" in r.output and r.output.count("cuzk top  top-test") >= 2
