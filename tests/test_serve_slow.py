"""Slow, greedy and hostile clients against a real `cuzk serve` (issue 17), and board names.

- 300 idle connections (150 that never send a byte, 150 keep-alive after one request) and 70
  connections sending one header byte every 2 s, for 24 s, while a client polls /healthz and
  /status every second: every poll is answered 200 well within the head deadline, and every
  slow connection is closed by the server once its head is overdue (reopened at once).
  Before the asyncio front (thread per connection, 64 slots) every poll got 503.
- Four concurrent uploads of 200 MB bodies (a .wtns of 150 MB, base64 in JSON): the
  daemon's peak RSS (VmHWM) stays within body_memory plus a fixed overhead (RSS_OVERHEAD).
  Measured on the 2-core development machine: +167 MiB with body_memory = 256 MiB (one body
  at a time, the others wait 5 s, then get 503); before, the same four bodies raised the peak
  from 49 to 2,734 MiB.
- Issue 29: two clients declaring 256 MiB bodies and sending a byte now and then, then
  1,100 connections that never speak, reopened as they close: a third client's job is
  accepted (201) within 10 s, /healthz answers 200 on >= 90 % of polls, the trickling bodies
  are cut with 408 once below body_min_rate. Before: 503 after 5 s; /healthz 503 on 29 of 30.
- DNS rebinding: a Host such as 127.0.0.1.rebind.example is refused (403) on every route,
  before any body is read, and no job is created; --allow-host names are served.
- A stale board of any name is cleaned at start; a live one is refused with one line.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import struct
import threading
import time

import pytest
from conftest import fixture_circuit
from serve_harness import (
    BodyHog,
    SilentConnections,
    cli_env,
    request,
    run_cli,
    serve_daemon,
)

TINY = fixture_circuit("tiny")
R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
HEADER_TIMEOUT = 10.0
MiB = 1024**2
# what the daemon may hold above its peak before the uploads besides the body bytes: socket
# and scanner buffers, the witness check's temporaries (~19 MiB for 150 MB), allocator slack.
# Measured: +167 MiB in all with one 150 MB witness (200 MB body) decoded at a time, i.e.
# about 24 MiB beyond the decoded bytes; bound = body_memory + this.
RSS_OVERHEAD = 64 * MiB


def vm_hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    base = tmp_path_factory.mktemp("slow")
    (base / "keys").mkdir()
    shutil.copy(TINY.zkey, base / "keys" / "tiny.zkey")
    return base


def start(base, name, *args, env=None):
    return serve_daemon(
        base / f"{name}.log",
        base / "keys",
        "--state-dir",
        base / f"{name}-state",
        *args,
        env=env,
        memory="2GiB",
    ).start()


@pytest.fixture(scope="module")
def server(keys):
    s = start(
        keys,
        "serve",
        "--allow-host",
        "prover7",
        "--header-timeout",
        str(HEADER_TIMEOUT),
        "--max-body",
        "224MiB",  # bodies over 1 MiB may hold 7/8 of body_memory
        "--body-memory",
        "256MiB",
    )
    yield s
    try:
        assert s.stop() == 0, s.log()
        assert s.leftover_segments() == []
        assert "Traceback" not in s.log()
    finally:
        s.kill()


# ------------------------------------------------------------------------------ slow clients
@pytest.mark.slow
def test_idle_and_slow_header_connections_do_not_starve_health(server):
    port = server.hostport[1]
    silent = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(150)]
    kept = []
    for _ in range(150):  # keep-alive connections, idle after one answered request
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = b""
        while not got.endswith(b"}\n"):
            got += s.recv(4096)
        assert got.startswith(b"HTTP/1.1 200")
        kept.append(s)
    duration = 24.0
    stop = time.monotonic() + duration
    lived: list[float] = []  # seconds each slow connection lasted before the server closed it
    errors: list[str] = []

    def slowloris():
        msg = b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
        conns = [
            [socket.create_connection(("127.0.0.1", port)), time.monotonic(), 0] for _ in range(70)
        ]
        try:
            while time.monotonic() < stop:
                for c in conns:
                    s, opened, i = c
                    try:
                        s.sendall(msg[i : i + 1])
                        c[2] = i + 1
                    except OSError:  # closed by the server: note when, open another
                        lived.append(time.monotonic() - opened)
                        s.close()
                        c[:] = [socket.create_connection(("127.0.0.1", port)), time.monotonic(), 0]
                time.sleep(2)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))
        finally:
            for s, _, _ in conns:
                s.close()

    t = threading.Thread(target=slowloris)
    t.start()
    polls = []
    try:
        time.sleep(1)
        while time.monotonic() < stop:
            t0 = time.monotonic()
            for path in ("/healthz", "/status"):
                try:
                    code = request(server.url, "GET", path, timeout=HEADER_TIMEOUT)[0]
                except OSError as e:
                    code = repr(e)
                polls.append((path, code, time.monotonic() - t0))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    finally:
        t.join()
        for s in silent + kept:
            s.close()
    assert not errors, errors
    assert len(polls) >= 2 * (duration - 3)
    bad = [p for p in polls if p[1] != 200 or p[2] >= HEADER_TIMEOUT]
    assert not bad, bad
    worst = max(p[2] for p in polls)
    # every slow connection is closed once its head is overdue (the first 70 at ~10 s, their
    # successors at ~20 s); the server lingers 1 s, and a sendall notices one or two 2 s ticks later
    assert len(lived) >= 70, len(lived)
    assert all(HEADER_TIMEOUT - 1 <= x <= HEADER_TIMEOUT + 6 for x in lived), sorted(lived)
    print(
        f"{len(polls)} polls, all 200, slowest {worst * 1000:.0f} ms; {len(lived)} slow "
        f"connections closed after {min(lived):.1f}-{max(lived):.1f} s"
    )
    # the silent ones were closed at their deadline too; the idle keep-alive ones stay open
    assert request(server.url, "GET", "/healthz")[0] == 200


# ------------------------------------------------------------------------------ issue 29
@pytest.mark.slow
def test_trickling_uploads_and_silent_floods_do_not_lock_jobs_out(tmp_path):
    """Two clients declaring 256 MiB bodies and sending a byte now and then, then 1,100
    connections that never speak, reopened as the server closes them: a third client's job is
    accepted (201) within 10 s, /healthz answers 200 on >= 90 % of polls. Before: the job
    POSTs got 503 after 5 s, /healthz 503 on 29 of 30 polls (issue 29, items 1 and 2)."""
    from cuzk.testing import prover_double

    (tmp_path / "keys").mkdir()
    prover_double.write_key(tmp_path / "keys" / "k.json")
    wtns = prover_double.make_wtns(64, 1, tmp_path / "w.wtns")
    job = {
        "key": str(tmp_path / "keys" / "k.json"),
        "witnesses": [{"data": base64.b64encode(wtns).decode()}],
    }
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1100 + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"open-files hard limit {hard} < {want}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    s = serve_daemon(
        tmp_path / "flood.log",
        tmp_path / "keys",
        "--prover",
        "cuzk.testing.prover_double",
        "--body-timeout",
        "3",
        "--body-min-rate",
        "1KiB",
    ).start()
    port = s.hostport[1]
    try:
        # ---- item 1: two trickling maximum-size bodies
        trickle = []
        for _ in range(2):
            c = socket.create_connection(("127.0.0.1", port), timeout=20)
            c.sendall(
                b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                b"\r\nContent-Length: 268435456\r\n\r\n{"
            )
            trickle.append(c)
        took = []
        for _ in range(3):
            time.sleep(0.3)
            for c in trickle:
                c.sendall(b" ")
            t0 = time.monotonic()
            code, _, out = request(s.url, "POST", "/v1/jobs", job, timeout=10)
            took.append(time.monotonic() - t0)
            assert code == 201, out
        for c in trickle:  # cut once below 1 KiB/s after 3 s, with a JSON reason
            got = b""
            while chunk := c.recv(65536):
                got += chunk
            assert got.startswith(b"HTTP/1.1 408 "), got[:300]
            assert b"body too slow" in got
            c.close()
        # ---- item 2: 1,100 silent connections held and reopened
        polls = []
        with SilentConnections(port, 1100, pause=0.02):
            time.sleep(0.5)
            for _ in range(12):
                try:
                    polls.append(request(s.url, "GET", "/healthz", timeout=5)[0])
                except OSError as e:
                    polls.append(repr(e))
                time.sleep(0.25)
            code, _, out = request(s.url, "POST", "/v1/jobs", job, timeout=10)
        assert polls.count(200) >= 0.9 * len(polls), polls
        assert code == 201, out
        print(
            f"job POSTs beside two trickling bodies: {max(took) * 1000:.0f} ms at most; "
            f"/healthz under 1,100 silent connections: {polls.count(200)}/{len(polls)} 200"
        )
    finally:
        try:
            assert s.stop() == 0, s.log()
            assert "Traceback" not in s.log()
        finally:
            s.kill()


# ------------------------------------------------------------------------------ issue 38
@pytest.mark.slow
@pytest.mark.parametrize("pattern, reopen", [("trickle", False), ("silent", True)])
def test_bodies_held_at_their_largest_never_lock_a_job_out(tmp_path, pattern, reopen):
    """Issue 38 item 1 against a real daemon: clients sending maximum-size bodies fast, then
    trickling (or silent, reopened when cut), held all of body_memory and a third client's job
    POST got 503 after 5 s, 5 of 5 times. Here (small caps so that it runs in seconds) three
    large and two small such bodies: every job POST is accepted (201) within 10 s."""
    from cuzk.testing import prover_double

    (tmp_path / "keys").mkdir()
    prover_double.write_key(tmp_path / "keys" / "k.json")
    wtns = prover_double.make_wtns(64, 1, tmp_path / "w.wtns")
    job = {
        "key": str(tmp_path / "keys" / "k.json"),
        "witnesses": [{"data": base64.b64encode(wtns).decode()}],
    }
    s = serve_daemon(
        tmp_path / "bodies.log",
        tmp_path / "keys",
        "--prover",
        "cuzk.testing.prover_double",
        "--max-body",
        "3MiB",
        "--body-memory",
        "8MiB",
        "--body-timeout",
        "2" if reopen else "60",
        "--body-min-rate",
        "1KiB",
    ).start()
    port = s.hostport[1]
    hogs = [BodyHog(port, 3 * MiB, pattern, reopen, "/v1/jobs") for _ in range(3)]
    hogs += [BodyHog(port, MiB - 64, pattern, reopen, "/v1/jobs") for _ in range(2)]
    took = []
    try:
        for h in hogs:
            h.start()
            time.sleep(0.2)
        stop = time.monotonic() + 8
        while time.monotonic() < stop:
            t0 = time.monotonic()
            code, _, out = request(s.url, "POST", "/v1/jobs", job, timeout=10)
            took.append(time.monotonic() - t0)
            assert code == 201, out
            time.sleep(0.3)
        print(f"{len(took)} job POSTs beside the hogs ({pattern}): {max(took):.2f} s at most")
        assert max(took) < 10, took
    finally:
        for h in hogs:
            h.stop.set()
        for h in hogs:
            h.join(5)
        try:
            assert s.stop() == 0, s.log()
            assert "Traceback" not in s.log()
        finally:
            s.kill()


# ------------------------------------------------------------------------------ DNS rebinding
def test_dns_rebinding_names_are_refused(server, keys):
    body = {
        "key": str(keys / "keys" / "tiny.zkey"),
        "witnesses": [{"data": base64.b64encode(TINY.witness(0).read_bytes()).decode()}],
    }
    before = request(server.url, "GET", "/v1/jobs")[2]["jobs"]
    port = server.hostport[1]
    for host in (
        "127.0.0.1.rebind.example",
        f"127.0.0.1.rebind.example:{port}",
        f"127.1:{port}",
        "localhost.rebind.example",
        f"evil.example:{port}",
    ):
        for method, path, payload in (
            ("GET", "/status", None),
            ("GET", "/healthz", None),
            ("POST", "/v1/jobs", body),
            ("POST", "/v1/jobs/0123456789abcdef/cancel", None),
        ):
            code, _, out = request(server.url, method, path, payload, headers={"Host": host})
            assert code == 403 and "not a loopback name" in out["error"], (host, path, out)
    assert request(server.url, "GET", "/v1/jobs")[2]["jobs"] == before  # nothing submitted
    for host in (
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"127.3.4.5:{port}",
        f"prover7:{port}",
        "PROVER7",
    ):
        assert request(server.url, "GET", "/status", headers={"Host": host})[0] == 200, host


# ------------------------------------------------------------------------------ uploads
def wtns_bytes(n_values: int) -> bytes:
    """A well-formed .wtns (BN254's r, w[0] = 1, zeros) of n_values values."""
    s1 = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<I", n_values)
    values = bytearray(32 * n_values)
    values[0] = 1
    return (
        b"wtns"
        + struct.pack("<II", 2, 2)
        + struct.pack("<IQ", 1, len(s1))
        + s1
        + struct.pack("<IQ", 2, len(values))
        + bytes(values)
    )


@pytest.mark.slow
def test_four_200MB_uploads_stay_within_body_memory(server, keys):
    body = json.dumps(
        {
            "key": str(keys / "keys" / "tiny.zkey"),
            "witnesses": [{"data": base64.b64encode(wtns_bytes(150_000_000 // 32)).decode()}],
        }
    ).encode()
    assert 199e6 < len(body) < 224 * MiB
    # register the key first: loading it has a peak of its own, not the uploads' concern
    code, _, key = request(
        server.url, "POST", "/v1/keys", {"path": str(keys / "keys" / "tiny.zkey")}
    )
    assert code == 201, key
    base = vm_hwm(server.pid)
    answers = []

    def upload():
        try:
            answers.append(
                request(
                    server.url,
                    "POST",
                    "/v1/jobs",
                    raw=body,
                    timeout=300,
                    headers={"Content-Type": "application/json"},
                )
            )
        except OSError as e:
            answers.append(repr(e))

    threads = [threading.Thread(target=upload) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    peak = vm_hwm(server.pid)
    codes = sorted(a[0] if isinstance(a, tuple) else a for a in answers)
    for a in answers:  # each read and checked (the witness is not this key's), or told to wait
        assert isinstance(a, tuple), a
        code, h, out = a
        assert h["content-type"] == "application/json"
        assert (code == 422 and "4687500 values" in out["error"]) or (
            code == 503 and "too many uploads in flight" in out["error"]
        ), out
    assert 422 in codes, codes
    print(
        f"uploads answered {codes}; peak RSS {base / MiB:.0f} -> {peak / MiB:.0f} MiB "
        f"(+{(peak - base) / MiB:.0f} MiB; bound body_memory 256 MiB + "
        f"{RSS_OVERHEAD // MiB} MiB)"
    )
    assert peak - base <= 256 * MiB + RSS_OVERHEAD
    assert request(server.url, "GET", "/healthz")[0] == 200


# ------------------------------------------------------------------------------ board names
def test_stale_board_of_any_name_is_cleaned_and_a_live_one_refused(keys):
    name = f"relboard{secrets.token_hex(3)}"
    first = start(keys, "board1", "--board", name)
    try:
        assert first.board == name and os.path.exists(f"/dev/shm/{name}")
        # a second daemon on the live board's name: one line, non-zero exit, no traceback
        p = run_cli(
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--devices",
            "cpu:1",
            "--synth-workers",
            "1",
            "--board",
            name,
            "--state-dir",
            keys / "board2-state",
            timeout=120,
        )
        assert p.returncode == 3, p.stderr
        assert "Traceback" not in p.stderr
        lines = [ln for ln in p.stderr.splitlines() if "ERROR" in ln]
        assert len(lines) == 1 and f"board '{name}' is in use" in lines[0], p.stderr
        assert str(first.pid) in lines[0]
        # kill -9: the board stays behind, owned by a dead pid
        os.kill(first.pid, signal.SIGKILL)
        first.proc.wait(30)
        assert os.path.exists(f"/dev/shm/{name}")
    finally:
        first.kill()
    again = start(keys, "board1b", "--board", name, env=cli_env())
    try:
        assert again.board == name
        assert "removed the stale board" in again.log()
        assert again.stop() == 0, again.log()
        assert "Traceback" not in again.log()
        assert not os.path.exists(f"/dev/shm/{name}")
    finally:
        again.kill()
