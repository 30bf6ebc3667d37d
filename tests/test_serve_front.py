"""The HTTP front of `cuzk serve` without a daemon (issue 17): the Host check, the streamed
JSON body, and the asyncio Server over a stand-in router (head deadline, idle connections
evicted at the cap, quick routes while every worker is busy, body memory and the budget),
and issue 29's: bodies that hold what has arrived and keep a minimum rate, never-speaking
connections evicted at the cap, RFC 9112's refusals of two Host headers and foreign
absolute-form targets.

The same properties against a real daemon (300 idle and 70 slow-header connections, four
200 MB uploads, DNS rebinding, board names) are in tests/test_serve_slow.py.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import socket
import threading
import time

import pytest
from serve_harness import BodyHog, SilentConnections

from cuzk.engine.budget import MemoryBudget
from cuzk.serve.body import SKELETON_LIMIT, BodyTooLarge, JsonBody, Upload, loads
from cuzk.serve.front import BodyMemory, Server
from cuzk.serve.http import Router, host_allowed


# ------------------------------------------------------------------------------ Host check
@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.1:9820",
        "127.1.2.3:80",
        "LOCALHOST",
        "localhost:9820",
        "localhost.",
        "[::1]",
        "[::1]:9820",
        "prover7",
        "Prover7:9820",
        "prover7.",
    ],
)
def test_loopback_and_allowed_hosts_pass(host):
    assert host_allowed(host, frozenset({"prover7"}))


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1.rebind.example",
        "127.0.0.1.rebind.example:9820",
        "127.evil.example",
        "evil.example",
        "localhost.evil.example",
        "prover7.evil",
        "127.1",
        "2130706433",
        "0x7f.0.0.1",
        "127.000.000.001",
        "0.0.0.0",
        "10.0.0.1:9820",
        "::1",
        "[::1]x",
        "[::1]:x",
        "[127.0.0.1]",
        "[::ffff:127.0.0.1]",
        "localhost:80:80",
        "127.0.0.1:abc",
        "127.0.0.1:",
        "[",
        "[]",
        ":9820",
    ],
)
def test_other_hosts_are_refused(host):
    """DNS rebinding: any name an attacker's DNS can point at 127.0.0.1 is refused, and so
    are the odd spellings of loopback addresses that only some resolvers read as such."""
    assert not host_allowed(host, frozenset({"prover7"}))


# ------------------------------------------------------------------------------ JSON bodies
def _feed(payload: bytes, rng: random.Random):
    p = JsonBody()
    i = 0
    while i < len(payload):
        n = rng.choice((1, 2, 3, 7, 64, 4096, 100_000))
        p.feed(payload[i : i + n])
        i += n
    skel, uploads = p.finish()
    return p, loads(skel, uploads)


def _decoded(obj):
    """The object with each Upload replaced by its bytes (or 'INVALID')."""
    if isinstance(obj, dict):
        return {k: _decoded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decoded(v) for v in obj]
    if isinstance(obj, Upload):
        return obj.read() if obj.valid else "INVALID"
    return obj


def test_json_body_decodes_every_data_string_and_keeps_the_rest():
    rng = random.Random(17)
    blobs = [rng.randbytes(n) for n in (0, 1, 2, 3, 4, 5, 1000, 300_001)]
    doc = {
        "key": '/k/a "data": \\ zkey',
        "kind": "data",
        "witnesses": [{"data": base64.b64encode(b).decode()} for b in blobs]
        + [{"path": "/w/data.wtns"}, "/w/x.wtns", {"data": 5}, {"data": None}],
        "data_not": {"data": ["nested", {"data": "QUJD"}]},
        "n": [1, 2.5, True, None],
    }
    for text in (
        json.dumps(doc),
        json.dumps(doc, indent=3),
        json.dumps(doc).replace("/", "\\/"),
    ):  # '\/' is JSON for '/'
        p, got = _feed(text.encode(), rng)
        try:
            want = json.loads(text)
            for i, b in enumerate(blobs):
                want["witnesses"][i]["data"] = b
            want["data_not"]["data"][1]["data"] = b"ABC"
            want["key"] = doc["key"]
            assert _decoded(got) == want
            # the skeleton is small: the base64 went to the spool, not into memory
            assert len(p.skeleton) < 2000
        finally:
            p.close()


def test_json_body_base64_strictness_matches_b64decode_validate():
    rng = random.Random(5)
    alphabet = "AB+/=9z\n \\u"
    cases = [
        "",
        "@@@",
        "AAA",
        "A=AA",
        "AA==AA",
        "AAAA====",
        "QQ==",
        "QUI=",
        "QUJD",
        "QQ=",
        "QUJD\\nQUJD",
        "QUJD\\u0041AAA",
        "QUJD QUJD",
        "AAAA====",
        "AAAA=",
        "QQ==QQ==",
    ]
    cases += [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 13))) for _ in range(400)
    ]
    for s in cases:
        try:
            text = json.dumps({"data": json.loads(f'"{s}"')})
        except json.JSONDecodeError:
            continue
        if "\\u" in s:
            continue  # a \\u escape of a base64 letter: refused here (see body.py)
        try:
            want = base64.b64decode(json.loads(text)["data"], validate=True)
        except (binascii.Error, ValueError):
            want = "INVALID"
        p, got = _feed(text.encode(), rng)
        try:
            assert _decoded(got)["data"] == want, s
        finally:
            p.close()


def test_malformed_and_oversized_json_bodies():
    for bad in (b'{"data": "QUJD', b'{"data": "QUJD"', b'{"key": ', b"[1, 2", b'{"a": "\\'):
        p = JsonBody()
        p.feed(bad)
        skel, up = p.finish()
        with pytest.raises(json.JSONDecodeError):
            loads(skel, up)
        p.close()
    p = JsonBody()
    with pytest.raises(BodyTooLarge):
        for _ in range(SKELETON_LIMIT // 65536 + 2):
            p.feed(b"[" + b"1," * 32767 + b"1]")
    p.close()


def test_a_client_cannot_name_an_upload_marker():
    p = JsonBody()
    p.feed(b'{"witnesses": [{"data": "QUJD"}, {"data": "\\u0000upload:0000000000000000:0"}]}')
    skel, up = p.finish()
    got = loads(skel, up)
    p.close()
    assert isinstance(got["witnesses"][0]["data"], Upload)
    assert isinstance(got["witnesses"][1]["data"], Upload)
    assert got["witnesses"][1]["data"].valid is False  # NUL is not base64; never upload 0


# ------------------------------------------------------------------------------ body memory
def test_body_memory_caps_and_charges_the_budget():
    budget = MemoryBudget(10 * 1024**2)
    m = BodyMemory(8 * 1024**2)
    m.budget = budget
    small, reason = m.try_take(1000)  # under CHARGE_MIN: the cap only
    assert small is not None and budget.reserved == 0
    big, reason = m.try_take(5 * 1024**2)
    assert big is not None and budget.by_use() == {"uploads": 5 * 1024**2}
    none, reason = m.try_take(4 * 1024**2)
    assert none is None and "body_memory" in reason
    budget.try_reserve("keys", {"keys": 4 * 1024**2})  # the engine fills the budget
    m.give_back(big)
    none, reason = m.try_take(7 * 1024**2)
    assert none is None and "memory budget is full" in reason and m.used == 1000
    m.give_back(small)
    assert m.used == 0 and budget.reserved == 4 * 1024**2


# ------------------------------------------------------------------------------ the server
@pytest.fixture
def front():
    """A Server with quick /healthz, a /slow route that blocks, and /echo (JSON uploads)."""
    gate = threading.Event()
    router = Router()
    router.add("GET", "/healthz", lambda req: {"status": "ok"}, auth=False, quick=True)
    router.add("GET", "/slow", lambda req: gate.wait(30) and {"slow": True}, auth=False)

    def echo(req):
        obj = req.json()
        return {"sizes": [len(w["data"].read()) for w in obj["witnesses"]]}

    router.add("POST", "/echo", echo, auth=False)
    servers = []

    def make(**kw):
        s = Server(("127.0.0.1", 0), router, **kw)
        t = threading.Thread(target=s.serve_forever, daemon=True)
        t.start()
        servers.append(s)
        return s

    yield make, gate
    gate.set()
    for s in servers:
        s.shutdown()
        s.server_close()


def _get(port, path="/healthz", sock=None, headers=b""):
    s = sock or socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    n = int(
        [
            ln.split(b":")[1]
            for ln in head.split(b"\r\n")
            if ln.lower().startswith(b"content-length")
        ][0]
    )
    while len(rest) < n:
        rest += s.recv(65536)
    return int(head.split()[1]), json.loads(rest), s


def _closed_by_server(s, within: float = 30) -> bool:
    """Whether the server closed `s` within `within` s (reads and drops what it says first)."""
    s.settimeout(within)
    try:
        while s.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def test_head_deadline_closes_slow_and_silent_connections(front):
    make, _ = front
    srv = make(header_timeout=1.0)
    port = srv.server_address[1]
    silent = socket.create_connection(("127.0.0.1", port))
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"GET /healthz HTTP/1.1\r\n")
    for _ in range(3):  # still trickling when the deadline passes
        time.sleep(0.4)
        try:
            slow.sendall(b"X-A: b\r\n")
        except OSError:
            break
    assert _closed_by_server(slow)
    assert _closed_by_server(silent)
    # a keep-alive connection may idle longer than the head deadline between requests
    code, _, s = _get(port)
    time.sleep(1.5)
    code2, _, _ = _get(port, sock=s)
    assert code == code2 == 200
    assert srv.stats["head_timeouts"] >= 2


def test_idle_connections_make_room_and_busy_workers_do_not_block_health(front):
    make, gate = front
    srv = make(max_connections=3, workers=2)
    port = srv.server_address[1]
    idle = [_get(port)[2] for _ in range(3)]  # three keep-alive connections, now idle
    code, body, fresh = _get(port)  # a fourth client is served: the oldest idle one goes
    assert code == 200 and srv.stats["evicted"] == 1
    assert _closed_by_server(idle[0])
    fresh.close()
    for s in idle[1:]:
        s.close()
    # every handler thread blocked on the engine: quick routes still answer
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    for s in slow:
        s.sendall(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
    time.sleep(0.3)
    assert _get(port)[0] == 200  # answered while both workers still wait on the gate
    gate.set()
    for s in slow:
        assert b"200 OK" in s.recv(65536)
        s.close()


def test_uploads_stream_and_bodies_over_the_cap_get_503(front):
    make, _ = front
    srv = make(max_body=4 * 1024**2, body_memory=4 * 1024**2)
    port = srv.server_address[1]
    blob = random.Random(1).randbytes(2_500_000)
    payload = json.dumps(
        {"witnesses": [{"data": base64.b64encode(blob).decode()}, {"data": "QUJD"}]}
    ).encode()
    req = (
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(payload)
    )
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(req + payload)
    out = s.recv(1 << 20)
    assert b"200 OK" in out and b'"sizes":[2500000,3]' in out
    # hold the whole cap with one body in flight; the next one waits, then gets 503 + reason
    hog = socket.create_connection(("127.0.0.1", port), timeout=20)
    hog.sendall(req + payload[:1000])
    time.sleep(0.3)
    t0 = time.monotonic()
    s.sendall(req + payload)
    out = s.recv(1 << 20)
    assert b"503 Service Unavailable" in out and b"too many uploads in flight" in out
    assert srv.stats["body_waits"] == 1 and time.monotonic() - t0 > 4  # it waited for room
    hog.sendall(payload[1000:])
    assert b"200 OK" in hog.recv(1 << 20)
    assert srv.memory.used == 0 and srv.memory.high_water <= 4 * 1024**2
    # a large body that is not JSON is refused before it is read
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2000000\r\n\r\n")
    assert b"415" in s.recv(65536)


# ------------------------------------------------------------------------------ issue 29
def test_body_memory_grows_with_arrival_and_younger_bodies_give_way():
    MiB = 1024**2
    budget = MemoryBudget(6 * MiB)
    m = BodyMemory(4 * MiB)
    m.budget = budget
    old, young, done = m.ticket(), m.ticket(), m.ticket()
    assert m.grow(old, MiB) == (True, "") and budget.reserved == 0  # not over CHARGE_MIN yet
    assert m.grow(young, MiB)[0] and m.grow(done, MiB)[0]
    m.done_reading(done)  # its handler runs: never cut
    assert m.grow(old, MiB)[0] and budget.by_use() == {"uploads": 2 * MiB}  # all of it, now
    # full (4 of 4 MiB): the old body grows by cutting the younger one still arriving
    assert m.grow(old, MiB) == (True, "")
    assert young.cut and "older body" in young.cut and young.held == 0 and m.cuts == 1
    assert m.grow(young, 1)[0] is False  # a cut body stays cut
    # nothing younger left to cut (`done` is complete): the cap says no, nothing changes
    ok, reason = m.grow(old, MiB)
    assert not ok and "body_memory" in reason and old.held == 3 * MiB and done.cut is None
    # a young body cannot cut an older one
    newest = m.ticket()
    ok, reason = m.grow(newest, MiB)
    assert not ok and old.cut is None and m.used == 4 * MiB
    # the budget: the engine holds most of it; cutting younger bodies is the only way in
    m.give_back(done)
    budget.try_reserve("keys", {"keys": 3 * MiB})
    ok, reason = m.grow(old, MiB)
    assert not ok and "memory budget is full" in reason
    for t in (old, newest):
        m.give_back(t)
        m.give_back(t)  # twice: nothing more
    assert m.used == 0 and budget.reserved == 3 * MiB and m.high_water == 4 * MiB


def _post_head(path: str, n: int) -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (path.encode(), n)
    )


def _read_all(s, within: float = 20) -> bytes:
    s.settimeout(within)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except (ConnectionResetError, TimeoutError):
        pass
    return out


def test_trickling_bodies_hold_little_and_are_cut_below_the_minimum_rate(front):
    """Issue 29 item 1: two clients declaring the largest body and sending a byte now and
    then held all of body_memory (and the budget): every other POST got 503."""
    make, _ = front
    MiB = 1024**2
    srv = make(max_body=256 * MiB, body_memory=512 * MiB, body_timeout=1.5, body_min_rate=1000)
    srv.memory.budget = budget = MemoryBudget(600 * MiB)
    port = srv.server_address[1]
    trickle = []
    for _ in range(2):
        t = socket.create_connection(("127.0.0.1", port))
        t.sendall(_post_head("/echo", 256 * MiB) + b'{"witnesses": [')
        trickle.append(t)
    opened = time.monotonic()
    small = json.dumps({"witnesses": [{"data": "QUJD"}]}).encode()
    took = []
    for _ in range(3):
        time.sleep(0.2)
        for t in trickle:
            t.sendall(b" ")
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(_post_head("/echo", len(small)) + small)
        assert b"200 OK" in s.recv(65536)
        took.append(time.monotonic() - t0)
        s.close()
    assert max(took) < 2, took  # no waiting for room at all
    assert srv.memory.used == 2 * MiB and budget.reserved == 0, srv.memory.used  # 1 MiB each
    # below 1000 bytes/s once the 1.5 s of grace are over: cut with 408 and a JSON reason
    outs = [_read_all(t) for t in trickle]
    cut_after = time.monotonic() - opened
    for out in outs:
        assert out.startswith(b"HTTP/1.1 408 "), out[:200]
        reason = json.loads(out.partition(b"\r\n\r\n")[2])["error"]
        assert "body too slow" in reason and "body_min_rate" in reason, reason
    assert 1.5 <= cut_after < 8, cut_after
    assert srv.memory.used == 0 and srv.stats["body_timeouts"] == 2
    # a body that keeps the rate may take longer than the grace: 12 kB in 4 pieces over 3 s
    body = json.dumps({"witnesses": [{"data": base64.b64encode(bytes(9000)).decode()}]}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(_post_head("/echo", len(body)))
    for i in range(4):
        s.sendall(body[i * len(body) // 4 : (i + 1) * len(body) // 4])
        time.sleep(0.75)
    assert b'"sizes":[9000]' in s.recv(65536)
    s.close()


def test_an_older_body_cuts_a_younger_one_when_memory_is_short(front):
    """Two large bodies growing together cannot hold each other up: the younger gives way
    (503 with the reason, after its body is read into nothing), the older is served."""
    make, _ = front
    MiB = 1024**2
    srv = make(max_body=4 * MiB, body_memory=5 * MiB)  # bodies over 1 MiB: 4.375 MiB
    port = srv.server_address[1]
    blob = random.Random(2).randbytes(2_200_000)
    payload = json.dumps({"witnesses": [{"data": base64.b64encode(blob).decode()}]}).encode()
    assert 2.5 * MiB < len(payload) < 4 * MiB
    old = socket.create_connection(("127.0.0.1", port), timeout=20)
    old.sendall(_post_head("/echo", len(payload)) + payload[: 2 * MiB - 10])
    time.sleep(0.3)
    young = socket.create_connection(("127.0.0.1", port), timeout=20)
    young.sendall(_post_head("/echo", len(payload)) + payload[: 2 * MiB - 10])
    time.sleep(0.3)
    assert srv.memory.used == 4 * MiB  # both hold 2 MiB: neither can finish beside the other
    old.sendall(payload[2 * MiB - 10 :])
    assert b'"sizes":[2200000]' in old.recv(1 << 20)
    young.sendall(payload[2 * MiB - 10 :])
    out = young.recv(1 << 20)
    assert b"503 Service Unavailable" in out and b"older body needed the room" in out, out
    assert srv.memory.cuts == 1 and srv.memory.used == 0
    # the connection is kept (its body was read to the end): the retry is served
    young.sendall(_post_head("/echo", len(payload)) + payload)
    assert b'"sizes":[2200000]' in young.recv(1 << 20)


def test_silent_connections_at_the_cap_do_not_shut_out_health(front):
    """Issue 29 item 2: connections that never send a byte filled the cap and were not
    evicted as idle keep-alive ones are: /healthz got 503 on 29 of 30 polls."""
    make, _ = front
    cap = 40
    srv = make(max_connections=cap, header_timeout=5.0)
    port = srv.server_address[1]
    codes = []
    with SilentConnections(port, cap + 10) as silent:
        time.sleep(0.3)
        for _ in range(20):
            try:
                codes.append(_get(port)[0])
            except OSError as e:
                codes.append(repr(e))
            time.sleep(0.05)
        payload = json.dumps({"witnesses": [{"data": "QUJD"}]}).encode()
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(_post_head("/echo", len(payload)) + payload)
        echo = s.recv(65536)
        s.close()
    assert codes.count(200) >= 0.9 * len(codes), codes
    assert b'"sizes":[3]' in echo
    assert srv.stats["evicted"] >= 10 and silent.reopened and srv.stats["refused"] == 0
    # connections busy with a request are never evicted: at the cap with none waiting, 503
    busy = make(max_connections=2, workers=2)
    port = busy.server_address[1]
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    for s in slow:
        s.sendall(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
    time.sleep(0.3)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    out = _read_all(s, 5)
    assert out.startswith(b"HTTP/1.1 503 ") and b"too many connections" in out
    assert busy.stats["refused"] == 1
    for c in slow + [s]:
        c.close()


@pytest.mark.parametrize(
    "head, status, reason",
    [
        (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n", 400, "2 Host"),
        (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nhost: 127.0.0.1\r\n", 400, "2 Host"),
        (b"GET http://evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 400, "evil.example"),
        (b"GET HTTP://evil.example:80/healthz HTTP/1.1\r\nHost: localhost\r\n", 400, "names host"),
        (b"GET https://127.0.0.1.rebind.example/ HTTP/1.1\r\nHost: 127.0.0.1\r\n", 400, "not this"),
        (b"GET http://127.0.0.1@evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 400, "HOST"),
        (b"GET http:///healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 400, "authority"),
        (b"GET ftp://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 400, "unsupported"),
        (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1\r\n  folded\r\n", 400, "folded"),
        (b"GET /healthz HTTP/1.1\r\nHost : evil.example\r\n", 400, "malformed request head"),
        (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rb\r\n", 400, "malformed"),
        (
            b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n"
            b"Content-Length: 30\r\n",
            400,
            "2 Content-Length",
        ),
        # RFC 9112 3.2.2: an absolute-form target's host takes the place of Host: the target
        # names this server, whatever the header says (issue 38 asked; the RFC says it wins)
        (b"GET http://127.0.0.1:9/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 200, None),
        (b"GET http://localhost/healthz?x=1 HTTP/1.1\r\nHost: evil.example\r\n", 200, None),
        (b"GET http://prover7/healthz HTTP/1.1\r\nHost: prover7\r\n", 200, None),
        (b"GET /healthz HTTP/1.1\r\nHost: evil.example\r\n", 403, "not a loopback name"),
        # RFC 9112 3.2: HTTP/1.1 without a Host, or with an empty one, is 400 (issue 38)
        (b"GET /healthz HTTP/1.1\r\n", 400, "an HTTP/1.1 request needs a Host header"),
        (b"GET /healthz HTTP/1.1\r\nHost:\r\n", 400, "empty Host header"),
        (b"GET /healthz HTTP/1.1\r\nHost:   \r\n", 400, "empty Host header"),
        (b"GET http://prover7/healthz HTTP/1.1\r\n", 400, "needs a Host header"),
        (b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: \r\n", 400, "empty Host"),
        (b"POST /echo HTTP/1.1\r\nContent-Length: 2\r\n", 400, "needs a Host"),
        # HTTP/1.0 may leave it out
        (b"GET /healthz HTTP/1.0\r\n", 200, None),
        (b"GET /healthz HTTP/1.0\r\nHost:\r\n", 200, None),
    ],
)
def test_request_heads_refused_as_rfc_9112_says(front, head, status, reason):
    """Issue 29 item 8: two Host headers (the loopback one first) and an absolute-form
    target naming a foreign host were served; issue 38: HTTP/1.1 without a Host or with an
    empty one was served. Every refusal is a JSON reason."""
    make, _ = front
    srv = make(allow_hosts=("prover7",))
    with socket.create_connection(srv.server_address[:2], timeout=10) as s:
        s.sendall(head + b"Connection: close\r\n\r\n")
        out = _read_all(s, 10)
    head_out, _, body = out.partition(b"\r\n\r\n")
    assert int(head_out.split()[1]) == status, out
    assert b"Content-Type: application/json" in head_out
    obj = json.loads(body)
    assert (reason in obj["error"]) if reason else obj == {"status": "ok"}, obj


def test_absolute_form_with_a_token_is_served_on_any_host(front):
    """With a token (any listen address) the Host is not checked, nor then the target's."""
    make, _ = front
    srv = make(token="t" * 20, loopback_only=False)
    with socket.create_connection(srv.server_address[:2], timeout=10) as s:
        s.sendall(
            b"GET http://prover.example/healthz HTTP/1.1\r\nHost: prover.example\r\n"
            b"Connection: close\r\n\r\n"
        )
        assert _read_all(s, 10).startswith(b"HTTP/1.1 200 ")


# ------------------------------------------------------------------------------ issue 38
def test_small_bodies_have_a_reserve_and_stale_small_bodies_give_way():
    MiB = 1024**2
    now = [100.0]
    m = BodyMemory(8 * MiB, clock=lambda: now[0])
    assert m.reserve == MiB and m.large_cap == 7 * MiB
    large = []
    for _ in range(3):  # three 3 MiB bodies sent fast, grown a MiB at a time as they arrive
        t = m.ticket(3 * MiB)
        for _ in range(3):
            m.grow(t, MiB)
        large.append(t)
    assert [t.held for t in large] == [3 * MiB, 3 * MiB, MiB] and m.used_large == 7 * MiB
    ok, reason = m.grow(large[2], MiB)  # the reserve is not theirs, nor can they cut older ones
    assert not ok and "large request bodies" in reason and "body_memory" in reason
    # a small body (a job's JSON) takes the reserve at once
    job = m.ticket(400_000)
    assert m.grow(job, 400_000) == (True, "") and m.used == 7 * MiB + 400_000
    m.give_back(job)
    # small bodies that trickle fill the reserve; fresh ones are never cut ...
    hogs = [m.try_take(MiB // 2)[0] for _ in range(2)]
    assert None not in hogs and m.used == m.cap
    job = m.ticket(1000)
    ok, reason = m.grow(job, 1000)
    assert not ok and "body_memory" in reason and all(h.cut is None for h in hogs)
    # ... but once they have been arriving for SMALL_GRACE, a new small body cuts the oldest
    now[0] += 2.5
    assert m.grow(job, 1000) == (True, "")
    assert hogs[0].cut and "newer small body" in hogs[0].cut and hogs[1].cut is None
    assert m.cuts == 1 and all(t.cut is None for t in large)
    # a small body whose handler runs is never cut (the stale one still arriving is)
    m.done_reading(hogs[1])
    late = m.ticket(MiB // 2)
    assert m.grow(late, MiB // 2)[0] and hogs[1].cut is None and job.cut
    # nor does a large body ever cut a small one to get at the reserve
    now[0] += 2.5
    assert not m.grow(large[2], MiB)[0] and late.cut is None
    for t in large + hogs + [job, late]:
        m.give_back(t)
    assert m.used == m.used_large == 0
    with pytest.raises(ValueError):
        BodyMemory(MiB, reserve=2 * MiB)


@pytest.mark.parametrize(
    "pattern, reopen", [("trickle", False), ("silent", False), ("silent", True)]
)
def test_bodies_held_at_their_largest_never_lock_a_small_post_out(front, pattern, reopen):
    """Issue 38 item 1: clients sending maximum-size bodies fast, then trickling or silent
    (and reopened when cut), held all of body_memory; a third client's job POST got 503 after
    5 s. Here three such clients (7 MiB of an 8 MiB body_memory is all large bodies may hold)
    and two holding small bodies (the reserve) as long as they can: every small POST is
    answered 200 at once, or within SMALL_GRACE when the reserve is held."""
    make, _ = front
    MiB = 1024**2
    # without reopening, a long grace: nothing is cut, the reserve alone keeps the room;
    # reopening, 1.5 s: the hogs are cut (408) or refused (503) and reopen, over and over
    timeout = 1.5 if reopen else 60
    srv = make(max_body=3 * MiB, body_memory=8 * MiB, body_timeout=timeout, body_min_rate=1000)
    port = srv.server_address[1]
    hogs = [BodyHog(port, 3 * MiB, pattern, reopen) for _ in range(3)]
    hogs += [BodyHog(port, MiB - 64, pattern, reopen) for _ in range(2)]
    for h in hogs:
        h.start()
        time.sleep(0.2)
    small = json.dumps({"witnesses": [{"data": "QUJD"}]}).encode()
    took = []
    try:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            time.sleep(0.3)
            t0 = time.monotonic()
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(_post_head("/echo", len(small)) + small)
                out = s.recv(65536)
            took.append(time.monotonic() - t0)
            assert b"200 OK" in out and b'"sizes":[3]' in out, out[:300]
            assert srv.memory.used_large <= 7 * MiB
        # the large hogs held what they could (3 + 3 + 1 MiB), and nothing of theirs finished
        assert srv.memory.high_water >= 7 * MiB + MiB // 2
    finally:
        for h in hogs:
            h.stop.set()
        for h in hogs:
            h.join(5)
    assert max(took) < 2 + 1, took  # SMALL_GRACE plus slack on a busy machine
    assert not any(b"200 OK" in a for h in hogs for a in h.answers)
    if reopen:
        assert any(len(h.answers) > 1 for h in hogs)  # cut or refused, and back again


def test_a_body_sent_fast_then_trickling_earns_no_long_credit(front):
    """The minimum rate as Apache's (a second per body_min_rate bytes, no bound) let a body of
    256 MiB sent in 2.4 s trickle on for 68 minutes; the credit is now body_timeout at most."""
    make, _ = front
    MiB = 1024**2
    srv = make(max_body=3 * MiB, body_memory=8 * MiB, body_timeout=1.5, body_min_rate=1000)
    port = srv.server_address[1]
    s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
    s.sendall(_post_head("/echo", 3 * MiB) + b'{"witnesses": [{"data": "' + b"A" * (2 * MiB))
    t0 = time.monotonic()
    out = b""
    while time.monotonic() - t0 < 15:  # 2 MiB at 1000 bytes/s would once have bought 35 min
        try:
            d = s.recv(65536)
            if not d:
                break
            out += d
        except TimeoutError:
            s.sendall(b"A")
        except ConnectionResetError:
            break
    took = time.monotonic() - t0
    assert out.startswith(b"HTTP/1.1 408 "), out[:300]
    assert b"body too slow" in out and b"body_timeout" in out
    assert took < 6, took  # cut 1.5 s after it slowed (plus the poll step and a busy machine)
    assert srv.memory.used == 0
