"""`cuzk top` drawing as a pure function: golden frames, layout properties, derived figures.

Golden frames (tests/golden/top_*.txt) are compared with colour codes stripped, gpustat
style. After an intended change to the screen, regenerate them with
    CUZK_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_top_render.py
and review the diff by eye before committing.
"""

from __future__ import annotations

import curses
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.testing.sample import busy_snapshot, farm_snapshot
from cuzk.top import Derived, RateWindow, render, strip_ansi, utilisation
from cuzk.top.app import View
from cuzk.top.render import GLYPHS, MIN_HEIGHT, MIN_WIDTH, SORTS, sort_pipelines

GOLDEN = Path(__file__).parent / "golden"
BIG = dict(devices=4, workers_per_device=2, finalizers=4, synth_workers=8, pipelines=24, keys=4)
# the benchmark's shape: 64 device slots, 32 pipelines
HUGE = dict(devices=8, workers_per_device=8, finalizers=8, synth_workers=16, pipelines=32, keys=4)


def _pair(**kw):
    """Two snapshots one second apart and what a viewer derives from them."""
    a, b = busy_snapshot(**kw), busy_snapshot(tick=1, **kw)
    rates = RateWindow()
    rates.add(a)
    rates.add(b)
    return b, Derived.between(a, b, rates)


def _frames():
    busy, d = _pair()
    big, dbig = _pair(**BIG)
    huge, dhuge = _pair(**HUGE)
    idle = busy_snapshot(pipelines=0, finalizers=0, keys=0)
    farm_a, farm_b = farm_snapshot(finalizers=4), farm_snapshot(tick=1, finalizers=4)
    rates = RateWindow()
    rates.add(farm_a)
    rates.add(farm_b)
    dfarm = Derived.between(farm_a, farm_b, rates)
    return {
        "top_busy_80x24": render(busy, 80, 24, derived=d),
        "top_busy_160x50": render(big, 160, 50, derived=dbig),
        "top_idle_80x24": render(idle, 80, 24),
        "top_64slots_160x50": render(huge, 160, 50, derived=dhuge),
        "top_help_80x24": render(busy, 80, 24, derived=d, show_help=True),
        "top_farm_80x24": render(farm_b, 80, 24, derived=dfarm),
        "top_farm_160x50": render(farm_b, 160, 50, derived=dfarm),
        "top_scrolled_80x24": render(
            big, 80, 24, derived=dbig, sort="progress", scroll=5, paused=True
        ),
    }


@pytest.mark.parametrize("name", sorted(_frames()))
def test_golden_frame(name):
    frame = _frames()[name]
    text = frame.text()
    # the coloured form carries exactly the same characters
    assert "\x1b[" in frame.ansi()
    assert [line.rstrip() for line in strip_ansi(frame.ansi()).splitlines()] == text.splitlines()
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("CUZK_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}; run with CUZK_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"{name} differs from {path} (CUZK_UPDATE_GOLDEN=1 to accept)"


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(1, 220),
    height=st.integers(1, 70),
    seed=st.integers(0, 50),
    n_pipes=st.integers(0, 40),
    n_dev=st.integers(1, 6),
    n_syn=st.integers(0, 10),
    scroll=st.integers(0, 60),
    sort=st.sampled_from(SORTS),
    help_=st.booleans(),
)
def test_any_size_gives_exact_frame(
    width, height, seed, n_pipes, n_dev, n_syn, scroll, sort, help_
):
    snap, d = _pair(seed=seed, pipelines=n_pipes, devices=n_dev, synth_workers=n_syn)
    f = render(snap, width, height, derived=d, sort=sort, scroll=scroll, show_help=help_)
    assert len(f.lines) == height and all(len(line) == width for line in f.lines)
    for spans in f.styles:
        assert all(0 <= a <= b <= width for a, b, _ in spans)
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        assert width < 10 or f.lines[0].startswith("too small")
        return
    assert f.lines[0].startswith("cuzk top")
    assert "q" in f.lines[-1]
    if not help_:
        assert 0 <= f.scroll <= max(0, n_pipes - 1)
        assert f.scroll + min(f.page, n_pipes) <= max(n_pipes, f.page)


def test_wide_frame_shows_every_worker_job_and_partition():
    snap, d = _pair(**BIG)
    f = render(snap, 160, 50, derived=d)
    rows = {line.split()[0]: line for line in f.lines if line.strip()}
    text = f.text()
    for w in snap["gpu_workers"]:
        assert f" {w['pid']} " in text
    for p in snap["pipelines"]:
        line = rows.get(p["job_id"])
        if line is None:  # scrolled off: the footer must say so
            assert f"/{len(snap['pipelines'])}" in f.lines[-1]
            continue
        strip = "".join(
            GLYPHS[q["state"]] for q in sorted(p["partitions"], key=lambda q: q["index"])
        )
        assert line.rstrip().endswith(strip), (p["job_id"], strip, line)


def test_states_are_styled():
    snap, d = _pair()
    snap["gpu_workers"][0]["state"] = "dead"
    f = render(snap, 120, 40, derived=d)
    styles = {style for spans in f.styles for _, _, style in spans}
    assert {"busy", "dead", "stale", "header", "p_gpu", "p_done", "finalizing"} <= styles
    # the stale highlight covers exactly the heartbeat cell of the stale worker (id 3: 7.5s)
    row = next(i for i, line in enumerate(f.lines) if line.split()[:1] == ["3"])
    stale = [(a, b) for a, b, s in f.styles[row] if s == "stale"]
    assert len(stale) == 1 and f.lines[row][stale[0][0] : stale[0][1]].strip() == "7.5s"


def test_torn_snapshot_and_pause_are_flagged():
    snap, d = _pair()
    snap["consistent"] = False
    first = render(snap, 100, 30, derived=d, paused=True).lines[0]
    assert "[torn snapshot]" in first and "[PAUSED]" in first


def test_sorts_follow_their_keys():
    snap = busy_snapshot(**BIG)
    pipes = snap["pipelines"]
    rank = {"critical": 0, "high": 1, "normal": 2}
    by_prio = sort_pipelines(pipes, "priority")
    keys = [
        (p["state"] in ("done", "failed", "cancelled"), rank[p["priority"]], p["submitted_at"])
        for p in by_prio
    ]
    assert keys == sorted(keys)
    ages = [p["submitted_at"] for p in sort_pipelines(pipes, "age")]
    assert ages == sorted(ages)
    prog = [p["partitions_done"] / p["total_partitions"] for p in sort_pipelines(pipes, "progress")]
    assert prog == sorted(prog)
    order = ["running", "queued", "failed", "cancelled", "done"]
    states = [order.index(p["state"]) for p in sort_pipelines(pipes, "state")]
    assert states == sorted(states)
    with pytest.raises(ValueError):
        render(snap, 80, 24, sort="nonsense")


def test_scroll_is_clamped_and_pages():
    snap, d = _pair(**BIG)
    n = len(snap["pipelines"])
    first = render(snap, 80, 24, derived=d)
    last = render(snap, 80, 24, derived=d, scroll=10_000)
    assert first.scroll == 0 and last.scroll == n - last.page
    assert f"jobs {n - last.page + 1}-{n}/{n}" in last.lines[-1]


def test_utilisation_is_busy_delta_over_wall_delta():
    prev = {
        "now": 100.0,
        "gpu_workers": [
            {"worker_id": 0, "pid": 10, "busy_secs": 10.0},
            {"worker_id": 1, "pid": 11, "busy_secs": 5.0},
            {"worker_id": 2, "pid": 12, "busy_secs": 9.0},
            {"worker_id": 3, "pid": 13, "busy_secs": 1.0},
        ],
    }
    cur = {
        "now": 102.0,
        "gpu_workers": [
            {"worker_id": 0, "pid": 10, "busy_secs": 11.5},  # 1.5 of 2 s
            {"worker_id": 1, "pid": 99, "busy_secs": 6.0},  # restarted: no figure
            {"worker_id": 2, "pid": 12, "busy_secs": 0.5},  # went backwards: no figure
            {"worker_id": 3, "pid": 13, "busy_secs": 4.0},  # 3 of 2 s: clamped
            {"worker_id": 4, "pid": 14, "busy_secs": 1.0},
        ],
    }  # new: no figure
    assert utilisation(prev, cur) == {0: 0.75, 3: 1.0}
    assert utilisation(None, cur) == {} and utilisation(cur, cur) == {}


def test_rates_over_a_sliding_window():
    r = RateWindow(window_secs=60)
    assert r.per_minute() == (None, None)
    for t, done, failed in ((0, 0, 0), (30, 10, 1), (60, 20, 1), (90, 50, 2)):
        r.add({"now": 1000.0 + t, "counters": {"total_completed": done, "total_failed": failed}})
    # window keeps t=30 (the last sample at or before 90-60): 40 done, 1 failed in 60 s
    assert r.per_minute() == (40.0, 1.0)
    r.add({"now": 5.0, "counters": {"total_completed": 0, "total_failed": 0}})  # other board
    assert r.per_minute() == (None, None)


def test_sample_is_consistent_like_a_board_snapshot():
    """Every gpu/finalizing/synthesizing partition is named by exactly one busy slot."""
    for seed in range(20):
        snap = busy_snapshot(seed=seed, **BIG)
        named = {}
        for w in snap["gpu_workers"]:
            if w["state"] == "proving":
                named.setdefault(("gpu", w["current_job"], w["current_partition"]), []).append(w)
        for f in snap["finalizers"]:
            if f["state"] == "finalizing":
                key = ("finalizing", f["current_job"], f["current_partition"])
                named.setdefault(key, []).append(f)
        for s in snap["synthesis"]["workers"]:
            if s["state"] == "synthesizing":
                named.setdefault(("synthesizing", s["job_id"], s["partition"]), []).append(s)
        in_flight = {
            (q["state"], p["job_id"], q["index"])
            for p in snap["pipelines"]
            for q in p["partitions"]
            if q["state"] in ("gpu", "finalizing", "synthesizing")
        }
        assert set(named) == in_flight and all(len(v) == 1 for v in named.values())


def test_keys_drive_the_view():
    v = View()
    assert v.key(ord("s")) and v.sort == SORTS[1]
    for _ in range(len(SORTS) - 1):
        v.key(ord("s"))
    assert v.sort == SORTS[0]
    v.key(ord("p"))
    assert v.paused
    v.key(ord("p"))
    assert not v.paused
    v.key(ord("?"))
    assert v.show_help
    v.key(ord("x"))  # any key closes the help
    assert not v.show_help
    v.page = 7
    v.key(curses.KEY_NPAGE)
    v.key(curses.KEY_DOWN)
    assert v.scroll == 8
    v.key(curses.KEY_UP)
    v.key(curses.KEY_PPAGE)
    assert v.scroll == 0
    v.key(curses.KEY_END)
    snap, d = _pair(**BIG)
    f = v.frame(snap, d, 80, 24)
    assert v.scroll == f.scroll == len(snap["pipelines"]) - f.page
    assert v.key(ord("q")) is False


def test_warming_kernels_get_a_line_of_their_own():
    """A snapshot with "warming" (kernels compiling on a cold cache) shows the reason and
    each compiling process under the header; one without shows nothing of it."""
    snap, d = _pair()
    assert "warming" not in render(snap, 120, 40, derived=d).text()
    snap["warming"] = {
        "reason": "compiling the proving kernels for this machine (one time)",
        "cache": "/var/cache/cuzk/numba/arith-0123456789ab",
        "processes": [{"process": "device process 0 (cpu)", "pid": 7, "secs": 42.0, "compiled": 9}],
    }
    lines = render(snap, 160, 40, derived=d).lines
    (line,) = [x for x in lines[:4] if x.startswith("warming:")]
    assert "one time" in line and "device process 0 (cpu) 9 fns 42 s" in line
