"""`cuzk top` command line: board choice, `--once` and `--json` output, board going away.

These use a scripted snapshot source in place of the shared-memory board so they pin the
command's behaviour exactly; tests/test_top_board.py runs the same paths on a real board.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from cuzk.cli import main as cuzk_main
from cuzk.testing.sample import busy_snapshot
from cuzk.top import runner as top_runner
from cuzk.top import source as top_source
from cuzk.top.source import EXIT_AMBIGUOUS, EXIT_NO_BOARD, AttachError, BoardGone


class Scripted:
    """Snapshots of a board that advances one second per read and may vanish."""

    def __init__(self, name, gone_after=None):
        self.name, self.gone_after, self.reads, self.closed = name, gone_after, 0, False

    def read(self):
        if self.gone_after is not None and self.reads >= self.gone_after:
            raise BoardGone(f"cuzk status board {self.name!r} went away (cuzk serve stopped)")
        snap = busy_snapshot(tick=self.reads)
        self.reads += 1
        return snap

    def close(self):
        self.closed = True


@pytest.fixture
def boards(monkeypatch):
    """Controls what list_boards() reports and what attaching gives."""
    state = SimpleNamespace(live=[], sources={}, gone_after=None)

    def list_boards():
        return [SimpleNamespace(name=n, alive=True) for n in state.live]

    def attach(name):
        if name not in state.live:
            raise AttachError(f"no cuzk status board named {name!r}", EXIT_NO_BOARD)
        src = state.sources[name] = Scripted(name, state.gone_after)
        return src

    monkeypatch.setattr(top_source, "_board_api", lambda: SimpleNamespace(list_boards=list_boards))
    monkeypatch.setattr(top_runner, "BoardSource", attach)
    return state


def _top(*args):
    return CliRunner().invoke(cuzk_main, ["top", *args])


def test_choose_the_only_live_board(boards):
    boards.live = ["cuzk-1-aa"]
    assert top_source.choose(None) == "cuzk-1-aa"
    assert top_source.choose("cuzk-other") == "cuzk-other"  # a given name is used as is


@pytest.mark.parametrize(
    "live, code", [([], EXIT_NO_BOARD), (["cuzk-1-aa", "cuzk-2-bb"], EXIT_AMBIGUOUS)]
)
def test_none_or_several_boards_exit_nonzero_with_a_list(boards, live, code):
    boards.live = live
    r = _top("--json")
    assert r.exit_code == code
    for name in live:
        assert f"  {name}" in r.output
    assert "--board" in r.output


def test_json_is_the_snapshot(boards):
    boards.live = ["cuzk-1-aa"]
    r = _top("--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == busy_snapshot(tick=0)
    # byte for byte what GET /status sends (cuzk/serve/http.py serialises the same way)
    assert (
        r.output == json.dumps(busy_snapshot(tick=0), separators=(",", ":"), allow_nan=False) + "\n"
    )
    r = _top("--json", "-n", "3", "--interval", "0.01")  # floor: 0.1 s
    docs = [json.loads(line) for line in r.output.splitlines()]
    assert [d["now"] for d in docs] == [busy_snapshot(tick=t)["now"] for t in range(3)]
    assert boards.sources["cuzk-1-aa"].closed


def test_once_prints_one_parsable_frame(boards):
    boards.live = ["cuzk-1-aa"]
    r = _top("--once", "--interval", "0.1", "--width", "100", "--height", "30")
    assert r.exit_code == 0, r.output
    assert "\x1b[" not in r.output  # not a terminal: plain text
    lines = r.output.splitlines()
    assert len(lines) == 30 and all(len(line) <= 100 for line in lines)
    assert lines[0].split()[:3] == ["cuzk", "top", "prover-a"]
    # device-worker rows: parse them back and compare with the last snapshot read
    snap, prev = busy_snapshot(tick=1), busy_snapshot(tick=0)
    head = next(i for i, line in enumerate(lines) if line.startswith("WORKER"))
    cols = lines[head].split()
    left, right = cols[:7], cols[-4:]  # between them: the utilisation gauge
    assert left == ["WORKER", "DEVICE", "STATE", "JOB", "PART", "TIME", "UTIL"]
    assert right == ["GEN", "RST", "PID", "HB"]
    rows = []
    for line in lines[head + 1 : head + 1 + len(snap["gpu_workers"])]:
        cells = line.split()
        rows.append(
            dict(zip(left, cells[:7], strict=True)) | dict(zip(right, cells[-4:], strict=True))
        )
    for w, row in zip(snap["gpu_workers"], rows, strict=True):
        p = next(x for x in prev["gpu_workers"] if x["worker_id"] == w["worker_id"])
        util = (w["busy_secs"] - p["busy_secs"]) / (snap["now"] - prev["now"])
        assert row["WORKER"] == str(w["worker_id"]) and row["STATE"] == w["state"]
        assert row["UTIL"] == f"{100 * min(1, util):.0f}%"
        assert row["PID"] == str(w["pid"]) and row["GEN"] == str(w["generation"])
    m = re.search(r"done (\d+) ([\d.]+)/m", lines[1])
    assert m and int(m.group(1)) == snap["counters"]["total_completed"]
    assert float(m.group(2)) == 60.0 * (
        snap["counters"]["total_completed"] - prev["counters"]["total_completed"]
    )


def test_board_going_away_ends_cleanly(boards):
    boards.live = ["cuzk-1-aa"]
    boards.gone_after = 2
    r = _top("-n", "5", "--interval", "0.1")  # not a tty: frames as text
    assert r.exit_code == 0
    assert r.output.count("cuzk top  prover-a") == 2
    assert "went away" in r.output


def test_options_are_validated(boards):
    boards.live = ["cuzk-1-aa"]
    assert _top("-n", "0").exit_code == 2
    assert _top("--width", "3", "--once").exit_code == 2
    assert "Live view" in _top("--help").output
