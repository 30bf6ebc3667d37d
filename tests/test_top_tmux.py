"""`cuzk top` for real: the curses screen inside tmux, against a board with live writers.

capture-pane must show device workers and pipelines changing between captures; s, p, ? and a
resize change the screen; q exits 0; when the board goes away top exits 0 with a message.
Over HTTP (--server, a stand-in farm gateway): the NODE panel and columns on the live screen,
q exits 0, a gateway that stops answering ends top with its reason and status 3.
tmux comes from apt (`apt-get install -y tmux`); the test installs it when it is missing and
it can (root), and skips saying why only when it cannot.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from need_tool import missing_tool
from serve_harness import StatusServer
from waiting import wait_for

from cuzk.testing.sample import farm_snapshot
from cuzk.testing.simulate import Plan, Simulation

ROOT = Path(__file__).resolve().parents[1]
PLAN = Plan(
    devices=2,
    workers_per_device=2,
    finalizers_per_device=1,
    synth_slots=3,
    synth_procs=1,
    active_jobs=5,
    gpu_s=(0.2, 0.6),
    synth_s=(0.2, 0.5),
    instance="tmux-test",
)


def _tmux() -> str:
    found = shutil.which("tmux")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for step in (
            ["apt-get", "install", "-y", "-q", "tmux"],  # lists may be there
            ["apt-get", "update", "-q"],  # a fresh image: fetch them
            ["apt-get", "install", "-y", "-q", "tmux"],
        ):
            subprocess.run(step, capture_output=True, timeout=300, env=env)
            found = shutil.which("tmux")
            if found:
                return found
    missing_tool(
        "tmux is not installed and could not be installed (needs root and apt-get: "
        "apt-get install -y tmux)"
    )


class Tmux:
    """One private tmux server (own socket), so parallel runs never share sessions."""

    def __init__(self, exe: str, sock: Path):
        self.exe, self.sock = exe, str(sock)

    def __call__(self, *args, check=True) -> str:
        r = subprocess.run(
            [self.exe, "-S", self.sock, *args], capture_output=True, text=True, timeout=20
        )
        if check and r.returncode:
            raise AssertionError(f"tmux {' '.join(args)}: {r.stderr}")
        return r.stdout

    def capture(self, target: str) -> list[str]:
        return self("capture-pane", "-p", "-t", target).splitlines()

    def wait_for(self, target: str, pred, timeout: float = 20.0) -> list[str]:
        seen: list[str] = []

        def matched():
            seen[:] = self.capture(target)
            return pred(seen) and (seen,)

        (lines,) = wait_for(
            matched,
            timeout,
            every=0.1,
            what=lambda: "the screen; last capture:\n" + "\n".join(seen),
        )
        return lines


def _section(lines: list[str], title: str) -> list[str]:
    """Rows under a section header up to the next header."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    out = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.split()[0] in ("FINALIZER", "SYNTH", "JOB", "KEY", "q"):
            break
        out.append(line)
    return out


@pytest.fixture
def tmux(tmp_path):
    t = Tmux(_tmux(), tmp_path / "tmux.sock")
    yield t
    t("kill-server", check=False)


def _start_top(tmux: Tmux, session: str, board: str, marker: Path, w: int, h: int):
    cmd = (
        f"cd {ROOT} && {sys.executable} -m cuzk.cli top --board {board} --interval 0.2; "
        f"echo TOP_EXIT=$? > {marker}; sleep 60"
    )
    tmux("new-session", "-d", "-s", session, "-x", str(w), "-y", str(h), cmd)


def test_live_screen_in_tmux(tmux, tmp_path):
    marker = tmp_path / "exit1"
    with Simulation(PLAN) as sim:
        _start_top(tmux, "top", sim.name, marker, 100, 30)
        first = tmux.wait_for(
            "top",
            lambda ls: (
                any(line.startswith("WORKER") for line in ls)
                and any("proving" in line for line in ls)
            ),
        )
        assert first[0].startswith("cuzk top  tmux-test")
        assert f"board {sim.name}" in first[0]  # shown at width >= 100

        # workers and pipelines change between captures while the writers run
        workers, pipes = [_section(first, "WORKER")], [_section(first, "JOB")]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (
            len(set(map(tuple, workers))) < 3 or len(set(map(tuple, pipes))) < 3
        ):
            time.sleep(0.3)
            cap = tmux.capture("top")
            workers.append(_section(cap, "WORKER"))
            pipes.append(_section(cap, "JOB"))
        assert len(set(map(tuple, workers))) >= 3, "worker rows never changed"
        assert len(set(map(tuple, pipes))) >= 3, "pipeline rows never changed"
        assert all(len(rows) == 4 for rows in workers)
        assert {row.split()[0] for rows in workers for row in rows} == {"0", "1", "2", "3"}
        assert any(("G" in row.split()[-1]) for rows in pipes for row in rows)

        # s cycles the sort, shown in the footer
        tmux("send-keys", "-t", "top", "s")
        tmux.wait_for("top", lambda ls: "sort:age" in ls[-1])
        # p pauses: the screen stops changing while the writers go on
        tmux("send-keys", "-t", "top", "p")
        a = tmux.wait_for("top", lambda ls: "[PAUSED]" in ls[0])
        time.sleep(0.8)
        assert tmux.capture("top") == a
        tmux("send-keys", "-t", "top", "p")
        tmux.wait_for("top", lambda ls: "[PAUSED]" not in ls[0])
        # ? shows the help, any key closes it
        tmux("send-keys", "-t", "top", "?")
        tmux.wait_for("top", lambda ls: any("cycle the pipeline sort" in line for line in ls))
        tmux("send-keys", "-t", "top", "x")
        tmux.wait_for("top", lambda ls: any(line.startswith("WORKER") for line in ls))
        # resize: the frame follows the terminal (KEY_RESIZE)
        tmux("resize-window", "-t", "top", "-x", "80", "-y", "24")
        small = tmux.wait_for(
            "top",
            lambda ls: (
                len(ls) == 24
                and ls[0].startswith("cuzk top")
                and "board " not in ls[0]
                and "jobs" in ls[-1]
            ),
        )
        assert all(len(line) <= 80 for line in small)

        # Down scrolls the pipeline window one row (footer: "jobs first-last/n"), once there
        # are more jobs than fit
        def window(lines):
            m = re.search(r"jobs (\d+)-(\d+)/(\d+)", lines[-1])
            return tuple(map(int, m.groups())) if m else None

        first, _, _ = window(
            tmux.wait_for(
                "top", lambda ls: window(ls) is not None and window(ls)[1] < window(ls)[2]
            )
        )
        tmux("send-keys", "-t", "top", "Down")
        tmux.wait_for("top", lambda ls: window(ls) is not None and window(ls)[0] == first + 1)
        tmux("send-keys", "-t", "top", "q")
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.read_text().strip() == "TOP_EXIT=0"


def test_board_going_away_in_tmux(tmux, tmp_path):
    marker = tmp_path / "exit2"
    with Simulation(PLAN) as sim:
        _start_top(tmux, "gone", sim.name, marker, 90, 26)
        tmux.wait_for("gone", lambda ls: any(line.startswith("WORKER") for line in ls))
        tmux("send-keys", "-t", "gone", "p")  # even a paused viewer notices
        tmux.wait_for("gone", lambda ls: "[PAUSED]" in ls[0])
    # the simulation stopped and unlinked its board, as `cuzk serve` does at shutdown
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.read_text().strip() == "TOP_EXIT=0"
    screen = "\n".join(tmux.capture("gone"))
    assert f"cuzk top: cuzk status board '{sim.name}' went away" in screen


def test_sigterm_restores_the_terminal(tmux, tmp_path):
    import psutil

    marker = tmp_path / "exit3"
    with Simulation(PLAN) as sim:
        _start_top(tmux, "term", sim.name, marker, 90, 26)
        tmux.wait_for("term", lambda ls: any(line.startswith("WORKER") for line in ls))
        shell = psutil.Process(int(tmux("display", "-p", "-t", "term", "#{pane_pid}")))
        top = next(p for p in shell.children(recursive=True) if "top" in p.cmdline())
        top.terminate()
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.read_text().strip() == "TOP_EXIT=0"  # not 143: it unwound
        # curses left the alternate screen: the frame is gone from the pane
        assert not any(line.startswith("WORKER") for line in tmux.capture("term"))


def test_farm_over_http_in_tmux(tmux, tmp_path):
    ticks = iter(range(10**6))
    with StatusServer(lambda: farm_snapshot(tick=next(ticks))) as server:
        ids = [n["node_id"][:8] for n in farm_snapshot()["nodes"]]
        for session, ending, code in (("farm", "q", 0), ("lost", "502", 3)):
            marker = tmp_path / f"exit-{session}"
            cmd = (
                f"cd {ROOT} && {sys.executable} -m cuzk.cli top --server {server.url} "
                f"--interval 0.2; echo TOP_EXIT=$? > {marker}; sleep 60"
            )
            tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd)
            lines = tmux.wait_for(session, lambda ls: any(line.startswith("NODE") for line in ls))
            nodes = _section(lines, "NODE")
            assert [row.split()[0] for row in nodes[:3]] == ids
            assert [row.split()[2] for row in nodes[:3]] == ["alive", "alive", "dead"]
            assert _section(lines, "WORKER")[0].split()[1] == ids[0]
            # the clock moves: the uptime in the header follows the statuses read
            tmux.wait_for(session, lambda ls, first=lines[0]: ls[0] != first)
            if ending == "q":
                tmux("send-keys", "-t", session, "q")
            else:
                server.answer = (502, "application/json", b'{"error":"gateway lost"}')
            wait_for(marker.exists, 10, f"top to exit ({session})")
            assert marker.read_text().strip() == f"TOP_EXIT={code}"
            if code:
                screen = "\n".join(tmux.capture(session))
                assert f"cuzk top: {server.url}/status: HTTP 502: gateway lost" in screen
                server.answer = None
