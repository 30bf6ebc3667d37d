"""The 2-minute soak of `cuzk serve` (bench/bench_soak.py, issue #38): mixed work on both
curves, cancels, key churn, bad clients and a SIGKILL of the device process, through
`python -m bench --suite soak --profile smoke`, the same command `make soak` runs for 30
minutes.

Strict on correctness, generous on time: the suite itself fails (exit 1) on a lost or
duplicated job, a proof cuzk's verifier rejects, a leaked /dev/shm segment, a busy slot at a
quiet point or at the end, or a resource that grows past its bound after warm-up; this test
also reads its results and checks that the work it claims happened did (jobs of every kind,
a kill and its restart, every bad client answered). Latency is only reported. The pure parts
(the shared-slope fit, the flatness rule) are checked on made-up series.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import bench_soak, soak_resources

ROOT = Path(__file__).resolve().parent.parent


def _sample(t, **values):
    base = {k: 0.0 for k in soak_resources.SERIES}
    return {"t": t, "pids": {1: "supervisor", 2: "device", 3: "synthesis"}, **base, **values}


def test_common_slope_gives_each_run_its_own_level():
    # two incarnations of a worker, each flat, the second 100 MB lower: no growth
    runs = [[(0, 500.0), (10, 500.0), (20, 500.0)], [(30, 400.0), (40, 400.0)]]
    assert soak_resources.common_slope(runs) == 0
    # the same slope in both: found, whatever their levels
    runs = [[(0, 10.0), (10, 20.0)], [(20, 500.0), (30, 510.0), (40, 520.0)]]
    assert soak_resources.common_slope(runs) == pytest.approx(1.0)
    assert soak_resources.common_slope([]) is None


def test_flatness_flags_a_leak_and_passes_noise():
    samples = [
        _sample(t, supervisor_rss_mb=200 + (0.5 if t % 4 else -0.5), supervisor_fds=30 + t // 10)
        for t in range(0, 121, 2)
    ]
    rows = {r["series"]: r for r in soak_resources.flatness(samples, 60, 120)}
    assert rows["supervisor_rss_mb"]["flat"], rows["supervisor_rss_mb"]
    # one descriptor every 10 s: 6 over the second minute, past 4 + 8/hour
    assert not rows["supervisor_fds"]["flat"]
    assert rows["supervisor_fds"]["growth"] == pytest.approx(6, rel=0.1)


def test_a_worker_restart_is_not_growth():
    """The device process killed at 80 s comes back 150 MB smaller and grows back while it
    re-warms: a level of its own, its first REWARM_S left out."""
    samples = []
    for t in range(0, 121, 2):
        pid, rss = (2, 300.0) if t < 80 else (5, 150.0 + min(t - 80, 10) * 10)
        s = _sample(t, device_rss_mb=rss)
        s["pids"] = {1: "supervisor", pid: "device", 3: "synthesis"}
        samples.append(s)
    rows = {r["series"]: r for r in soak_resources.flatness(samples, 60, 120)}
    assert rows["device_rss_mb"]["flat"], rows["device_rss_mb"]
    assert rows["device_rss_mb"]["growth"] == pytest.approx(0)


def test_soak_seconds_from_the_environment(monkeypatch):
    monkeypatch.setenv("CUZK_SOAK_SECONDS", "45")
    assert bench_soak.settings("full")["seconds"] == 45
    monkeypatch.setenv("CUZK_SOAK_SECONDS", "5")
    with pytest.raises(SystemExit, match="at least 30 s"):
        bench_soak.settings("smoke")
    monkeypatch.setenv("CUZK_SOAK_SECONDS", "long")
    with pytest.raises(SystemExit, match="not a number"):
        bench_soak.settings("smoke")


@pytest.mark.slow
def test_two_minute_soak(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CUZK_SOAK_SECONDS"}
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    p = subprocess.run(
        [sys.executable, "-m", "bench", "--suite", "soak", "--profile", "smoke"]
        + ["--no-report", "--results", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=2400,  # 2 minutes of work; a cold kernel cache compiles first
        env=env,
    )
    out = p.stdout[-6000:] + "\n" + p.stderr[-6000:]
    assert p.returncode == 0, out
    r = json.loads((tmp_path / "soak.smoke.json").read_text())["result"]
    assert r["failures"] == [], r["failures"]
    jobs = r["jobs"]
    assert jobs["accepted"] >= 30, jobs  # tiny jobs; even a loaded machine does this many
    assert jobs["lost"] == jobs["duplicates"] == jobs["proofs_invalid"] == 0, jobs
    assert jobs["done"] + jobs["cancelled"] == jobs["accepted"], jobs
    assert jobs["partitions_proved"] >= jobs["done"], jobs
    # the kill happened, the supervisor restarted the process
    assert [k["role"] for k in r["kills"]] == ["device"], r["kills"]
    assert r["end"]["restarts"] >= 1, r["end"]
    # every quiet point and the end found the daemon idle
    assert r["quiet_points"] and all(
        q["busy_slots"] == q["buffers"] == q["live_jobs"] == 0 for q in r["quiet_points"]
    ), r["quiet_points"]
    assert r["end"]["busy_slots"] == r["end"]["buffers_left"] == 0, r["end"]
    assert r["exit_status"] == 0 and r["shm_left_after_stop"] == [], r
    # every bad client was answered as it should be, every kind of work ran
    kinds = {b["client"]: b for b in r["bad_clients"]}
    assert {"malformed_json", "oversize", "form_body", "other_curve_witness"} <= set(kinds)
    assert all(b["unexpected"] == 0 for b in kinds.values()), kinds
    assert r["keys"].get("register", 0) >= 1, r["keys"]
    assert {row["series"] for row in r["resources"]} == set(soak_resources.SERIES)
    assert all(row["flat"] for row in r["resources"]), r["resources"]


def test_the_engine_event_log_is_small_and_bounded():
    """What the soak found: the supervisor's RSS grew ~3 MB a minute under the soak's load for
    20 minutes, its event log filling up to 100 000 events (~25 MB). It keeps EVENTS_KEPT,
    the newest."""
    import logging
    from types import SimpleNamespace

    from cuzk.engine.jobs import EVENTS_KEPT, JobLedger

    ledger = JobLedger(SimpleNamespace(memory_budget=1 << 30), None, logging.getLogger("t"))
    for i in range(3 * EVENTS_KEPT):
        ledger.event("synth", f"{i:016x}", 0, 1, 0)
    assert len(ledger.events) == EVENTS_KEPT <= 10_000
    assert ledger.events[0][2] == f"{2 * EVENTS_KEPT:016x}"
    assert ledger.events[-1][2] == f"{3 * EVENTS_KEPT - 1:016x}"
