"""The connection front of `cuzk serve`: one asyncio loop accepts, reads heads and bodies,
and hands complete requests to bounded worker pools.

    clients ──► event loop (one thread) ─────────────────────────► worker pools (threads)
                accept; head within header_timeout;                 route handlers, which may
                host / route / auth / size checks;                  block on the engine
                body streamed (JSON uploads decoded to a spool);    ("quick" routes such as
                body bytes charged to BodyMemory                    /healthz have their own)
                ◄──────────────────── Response ───────────────────┘
                write it; keep the connection idle or close it

Why this and not the stdlib's thread per connection: a connection that is idle or sends its
head one byte at a time held a thread and one of 64 slots, so 64 such clients locked
everyone out (issue 17). Here a waiting connection is a suspended coroutine (a few KB); the
head must be complete `header_timeout` seconds after the connection opened (or after the
first byte of a later keep-alive request), else it is closed. At the connection cap, a
connection holding no complete request head is closed to make room: the one that has waited
longest among those that sent nothing (never-speaking new ones, idle keep-alive ones), else
among those whose head is still arriving (issue 29: 1,100 silent connections reopened as
they closed had shut /healthz out). Threads are spent only on complete requests. Why not
uvicorn or aiohttp: handlers block on the engine, so a thread pool is needed anyway, and both
answer malformed requests themselves with plain-text bodies, where this API promises JSON for
every error (docs/api.md). Why not h11 for the parsing alone: see docs/api.md; the head is
parsed as http.server parses it, with RFC 9112's refusals added (400 for a folded or
malformed header line, two Host or two Content-Length headers, an HTTP/1.1 request without a
Host or with an empty one, an absolute-form target whose host is not this server's).
Standard library only.

Memory: a body holds a reservation in BodyMemory (a cap, `body_memory`) and, once over
CHARGE_MIN, in the engine's memory budget (use "uploads"), grown BODY_STEP at a time ahead of
what has arrived, so a client that declares 256 MiB and sends a byte now and then holds
1 MiB, not 256 (issue 29). Bodies over SMALL_BODY (1 MiB) together hold at most seven
eighths of `body_memory`: the last eighth is kept for small bodies (job submissions), and a
small body still arriving SMALL_GRACE seconds after its head gives way to a new small one,
so no number of clients holding all the memory they can shuts a job submission out
(issue 38). A body that cannot grow waits up to BODY_WAIT seconds, cutting younger bodies
still arriving if that makes room, then gets 503 with the reason. A body must arrive at
`body_min_rate` bytes/s, at most `body_timeout` seconds behind (and earning no more than
`body_timeout` seconds of credit by arriving fast: a body sent fast that then trickles is
cut `body_timeout` seconds after it slowed), else it is cut with 408 (as Apache's
mod_reqtimeout, whose credit is unbounded). What a request holds is bounded by its
Content-Length: the JSON skeleton, and the uploads read back one at a time from their spool.
"""

from __future__ import annotations

import asyncio
import http.client
import io
import itertools
import logging
import queue
import re
import resource
import socket
import threading
import time
import urllib.parse
from email.utils import formatdate
from http import HTTPStatus

from cuzk.serve.body import BodyTooLarge, JsonBody
from cuzk.serve.http import (
    JSON_TYPE,
    HttpError,
    Request,
    Response,
    Router,
    check_auth,
    check_host,
    error_response,
    host_allowed,
    require_host,
)

log = logging.getLogger("cuzk.serve")
access_log = logging.getLogger("cuzk.serve.access")

IDLE_TIMEOUT = 60.0  # an idle keep-alive connection, a stalled body or response write
HEADER_TIMEOUT = 10.0  # default: the whole head of a request, from its first byte
MAX_HEAD = 64 * 1024  # request line and headers
STREAM_LIMIT = 256 * 1024  # socket bytes buffered per connection before reading pauses
LINGER = 1.0  # seconds a closing connection's unread input is drained (see _close)
BODY_WAIT = 5.0  # how long a body waits for BodyMemory before 503
CHARGE_MIN = 1024**2  # bodies above this are charged to the engine's memory budget too
BODY_STEP = 1024**2  # a body's reservation grows by this, ahead of what has arrived
SMALL_BODY = BODY_STEP  # bodies up to this size may use BodyMemory's reserve
SMALL_GRACE = 2.0  # seconds after which a small body still arriving gives way to a new one
BODY_TIMEOUT = 20.0  # default: seconds of grace before a body must keep BODY_MIN_RATE
BODY_MIN_RATE = 64 * 1024  # default: bytes/s a body must average after BODY_TIMEOUT
RAW_BODY_MAX = 1024**2  # larger bodies must be JSON (every route that reads one wants JSON)
WORKERS = 64  # threads for handlers that may block (result waits, submissions)
QUICK_WORKERS = 4  # threads for quick routes (/healthz, /status, /metrics, static files)
METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_ABSOLUTE = re.compile(r"(?i)https?://")
_FIELD = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\x00\r\n]*")  # RFC 9110 5.1, 5.5


# ---------------------------------------------------------------------------- worker pool
class _Pool:
    """Daemon threads running callables for the loop (a thread parked in a long result wait
    must not keep the process alive at exit, as ThreadPoolExecutor's would)."""

    def __init__(self, n: int, name: str):
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(n)
        ]
        for t in self._threads:
            t.start()

    def run(self, loop: asyncio.AbstractEventLoop, fn, *args) -> asyncio.Future:
        fut = loop.create_future()
        self._q.put((loop, fut, fn, args))
        return fut

    def _work(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            loop, fut, fn, args = item
            try:
                res, exc = fn(*args), None
            except BaseException as e:  # handed to the awaiting coroutine
                res, exc = None, e
            try:
                loop.call_soon_threadsafe(_settle, fut, res, exc)
            except RuntimeError:
                pass  # the loop has closed: the server stopped meanwhile
            # drop the request, its answer and any traceback (whose frames hold decoded
            # uploads) now, not when the next request arrives
            item = loop = fut = fn = args = res = exc = None

    def stop(self) -> None:
        for _ in self._threads:
            self._q.put(None)


def _settle(fut: asyncio.Future, res, exc) -> None:
    if fut.cancelled():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(res)


# ---------------------------------------------------------------------------- body memory
class Ticket:
    """One body's reservation: `held` bytes of BodyMemory, `charged` of them in the budget.
    `large` when its Content-Length is over SMALL_BODY; `since` when it was opened.
    `reading` until the whole body has arrived; `cut` is the reason when another body took
    its room (BodyMemory.grow), after which it holds nothing."""

    __slots__ = ("owner", "seq", "held", "charged", "reading", "cut", "large", "since")

    def __init__(self, seq: int, large: bool = False, since: float = 0.0):
        self.owner = ("http-body", seq)
        self.seq, self.held, self.charged = seq, 0, 0
        self.reading, self.cut = True, None
        self.large, self.since = large, since


class BodyMemory:
    """Bytes of request bodies in flight: at most `cap`, and (a body once it holds over
    CHARGE_MIN) charged to the engine's MemoryBudget (`budget`, set once the engine runs)
    under "uploads". A body holds what has arrived, rounded up to the next STEP, not its
    Content-Length: a client that declares 256 MiB and sends a byte a minute holds one STEP.

    Large bodies (Content-Length over SMALL_BODY) together hold at most `cap - reserve`:
    the reserve (an eighth of the cap unless given) is room only small bodies (a job's JSON,
    a key registration) can take, so bodies that arrived fast and then stall cannot shut
    the small ones out (issue 38). A small body takes all its room at once.

    When a body cannot grow, others still arriving give way (they are cut): for a small
    body, first small bodies still arriving SMALL_GRACE seconds after they were opened
    (oldest first: connections trickling small bodies cannot hold the reserve); then, for
    any body, younger bodies (youngest first, oldest kept: two large bodies can then never
    hold each other up). Bodies whose handler runs are never cut. Used from the loop thread
    only; the budget is thread-safe."""

    def __init__(self, cap: int, reserve: int | None = None, clock=time.monotonic):
        self.cap = int(cap)
        self.reserve = self.cap // 8 if reserve is None else int(reserve)
        if not 0 <= self.reserve <= self.cap:
            raise ValueError(f"reserve {self.reserve} outside 0..{self.cap}")
        self.large_cap = self.cap - self.reserve
        self.used = 0
        self.used_large = 0
        self.high_water = 0
        self.budget = None
        self.cuts = 0
        self.clock = clock
        self._seq = itertools.count()
        self._live: dict[int, Ticket] = {}  # seq -> ticket, oldest first

    def ticket(self, size: int = 0) -> Ticket:
        """A ticket for a body of Content-Length `size` (it holds nothing yet)."""
        t = Ticket(next(self._seq), size > SMALL_BODY, self.clock())
        self._live[t.seq] = t
        return t

    def try_take(self, n: int) -> tuple[Ticket | None, str]:
        """A new ticket holding `n` bytes (a body of that size), or (None, the reason)."""
        t = self.ticket(n)
        ok, reason = self.grow(t, n)
        if not ok:
            self.give_back(t)
            return None, reason
        return t, ""

    def _may_give_way(self, t: Ticket) -> list[Ticket]:
        """The bodies that give way to `t`, in the order they are cut."""
        arriving = [y for y in self._live.values() if y is not t and y.reading and y.held]
        out = []
        if not t.large:
            stale = self.clock() - SMALL_GRACE
            out = [y for y in arriving if not y.large and y.since < stale]
        out += [y for y in reversed(arriving) if y.seq > t.seq and y not in out]
        return out

    def grow(self, t: Ticket, n: int) -> tuple[bool, str]:
        """Add `n` bytes to `t` (True, ""), cutting bodies that give way to it if that makes
        room, or (False, the reason) without growing or cutting anything."""
        if t.cut is not None:
            return False, t.cut
        total = t.held + n
        charge = total - t.charged if total > CHARGE_MIN and self.budget is not None else 0
        if charge and total > self.budget.total:
            return False, f"a body of {total} bytes exceeds the whole memory budget"
        # what is missing: in the cap, in the large bodies' part, in the budget
        short_all = self.used + n - self.cap
        short_large = self.used_large + n - self.large_cap if t.large else 0
        short_budget = charge - self.budget.available if charge else 0
        cut = []
        for y in self._may_give_way(t):
            if short_all <= 0 and short_large <= 0 and short_budget <= 0:
                break
            if short_all > 0 or (short_large > 0 and y.large) or (short_budget > 0 and y.charged):
                cut.append(y)
                short_all -= y.held
                short_large -= y.held if y.large else 0
                short_budget -= y.charged
        if short_large > 0:
            return False, (
                f"large request bodies in flight hold {self.used_large} of {self.large_cap} "
                f"bytes (body_memory less the {self.reserve} kept for bodies of at most "
                f"{SMALL_BODY} bytes); this one needs {n} more"
            )
        if short_all > 0:
            return False, (
                f"request bodies in flight hold {self.used} of {self.cap} bytes "
                f"(body_memory); this one needs {n} more"
            )
        if short_budget > 0:
            return False, (
                f"the memory budget is full ({self.budget.reserved} of "
                f"{self.budget.total} bytes reserved); this body needs {charge} more"
            )
        for y in cut:
            why = "an older body" if y.seq > t.seq else "a newer small body"
            self.give_back(y, f"{why} needed the room (body_memory {self.cap} bytes)")
            self.cuts += 1
        if charge and not self.budget.try_reserve(t.owner, {"uploads": charge}):
            return False, "the memory budget is full"  # the engine took it meanwhile
        t.charged += charge
        t.held = total
        self.used += n
        if t.large:
            self.used_large += n
        self.high_water = max(self.high_water, self.used)
        return True, ""

    def done_reading(self, t: Ticket) -> None:
        """The whole body has arrived: from now on it is never cut."""
        t.reading = False

    def give_back(self, t: Ticket, cut: str | None = None) -> None:
        """Release everything `t` holds (again: nothing); `cut` marks it as cut, with why."""
        if cut is not None and t.cut is None:
            t.cut = cut
        self._live.pop(t.seq, None)
        self.used -= t.held
        if t.large:
            self.used_large -= t.held
        t.held = 0
        if t.charged and self.budget is not None:
            self.budget.release(t.owner)
        t.charged = 0


# ---------------------------------------------------------------------------- connections
class _Conn:
    __slots__ = ("reader", "writer", "peer", "buf", "waiting_since", "requests")

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("peername")
        self.peer = peer[0] if peer else "?"
        self.buf = bytearray()
        # set while no complete request head is in hand (a new connection, an idle keep-alive
        # one, a head still arriving): such a connection may be evicted at the cap
        self.waiting_since: float | None = time.monotonic()
        self.requests = 0


class _Close(Exception):
    """End the connection without an answer (EOF, reset, a head that timed out)."""


class _Head:
    __slots__ = ("command", "target", "version", "headers", "keep_alive")


class _Inflow:
    """A body being read: its size, what has arrived, its reservation and its clock."""

    __slots__ = ("server", "n", "got", "ticket", "parser", "start", "due")

    def __init__(self, server: Server, n: int):
        self.server, self.n, self.got = server, n, 0
        self.ticket = server.memory.ticket(n)
        self.parser: JsonBody | None = None
        self.start = time.monotonic()
        # when more bytes are due: body_timeout after the head, then one second later for
        # every body_min_rate bytes that arrive, but never more than body_timeout ahead of
        # the clock, so that bytes sent fast earn no credit to trickle on for an hour
        self.due = self.start + server.body_timeout

    @property
    def left(self) -> int:
        return self.n - self.got

    def arrived(self, k: int) -> None:
        self.got += k
        rate = self.server.body_min_rate
        if rate > 0:
            self.due = min(self.due + k / rate, time.monotonic() + self.server.body_timeout)

    def paused(self, seconds: float) -> None:
        """Seconds spent waiting for room: not the client's fault."""
        self.due += seconds

    def deadline(self) -> float:
        """When the body falls below the minimum rate (see `due`)."""
        return self.due if self.server.body_min_rate > 0 else float("inf")


def _too_many(reason: str) -> HttpError:
    return HttpError(
        503, f"too many uploads in flight: {reason}; retry later", {"Retry-After": "2"}
    )


class Server:
    """The HTTP server: bind at construction (a busy port fails at once), serve_forever() in
    a thread, shutdown() from another, server_close() at the end (as socketserver's)."""

    def __init__(
        self,
        address: tuple[str, int],
        router: Router,
        *,
        token: str | None = None,
        max_body: int = 256 * 1024**2,
        max_connections: int = 1024,
        loopback_only: bool = True,
        allow_hosts=(),
        header_timeout: float = HEADER_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
        body_memory: int = 512 * 1024**2,
        body_timeout: float = BODY_TIMEOUT,
        body_min_rate: int = BODY_MIN_RATE,
        body_reserve: int | None = None,
        workers: int = WORKERS,
    ):
        self.router = router
        self.token = token
        self.max_body = max_body
        self.max_connections = max_connections
        self.loopback_only = loopback_only
        self.allow_hosts = frozenset(h.lower() for h in allow_hosts)
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self.memory = BodyMemory(body_memory, body_reserve)
        self.body_timeout = body_timeout
        self.body_min_rate = body_min_rate
        self._workers = workers
        self.stats = {
            "refused": 0,
            "evicted": 0,
            "head_timeouts": 0,
            "body_waits": 0,
            "body_timeouts": 0,
        }
        _raise_fd_limit(max_connections + 512)
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(1024)
        except OSError:
            self.socket.close()
            raise
        self.server_address = self.socket.getsockname()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._done = threading.Event()
        self._done.set()
        self._conns: dict[_Conn, None] = {}
        self._pool = self._quick = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    # ------------------------------------------------------------------ life cycle
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until shutdown() (poll_interval is accepted for socketserver's signature)."""
        self._done.clear()
        try:
            asyncio.run(self._serve())
        finally:
            self._done.set()

    def shutdown(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass  # already closed
        self._done.wait(30)

    def server_close(self) -> None:
        self.socket.close()
        for pool in (self._pool, self._quick):
            if pool is not None:
                pool.stop()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._pool = self._pool or _Pool(self._workers, "cuzk-http")
        self._quick = self._quick or _Pool(QUICK_WORKERS, "cuzk-http-quick")
        server = await asyncio.start_server(
            self._connection, sock=self.socket, limit=STREAM_LIMIT, backlog=1024
        )
        try:
            await self._stop.wait()
        finally:
            server.close()
            for c in list(self._conns):
                c.writer.close()
            self._loop = None

    # ------------------------------------------------------------------ one connection
    async def _connection(self, reader, writer) -> None:
        conn = _Conn(reader, writer)
        if len(self._conns) >= self.max_connections and not self._evict_waiting():
            self.stats["refused"] += 1
            writer.write(
                _raw_response(
                    503, {"error": "too many connections; retry later"}, {"Retry-After": "1"}
                )
            )
            await self._close(conn)
            return
        self._conns[conn] = None
        try:
            while True:
                head = await self._read_head(conn)
                if head is None:
                    break
                if not await self._request(conn, head):
                    break
        except (_Close, ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:  # a bug must cost one connection, never the server
            log.exception("connection from %s: unexpected error", conn.peer)
        finally:
            self._conns.pop(conn, None)
            await self._close(conn)

    def _evict_waiting(self) -> bool:
        """Make room by closing a connection that holds no complete request head: the one
        that has waited longest among those that sent nothing of their next request (new
        connections that never spoke, idle keep-alive ones), else among those whose head is
        still arriving; False if every connection is busy with a request."""
        waiting = [c for c in self._conns if c.waiting_since is not None]
        if not waiting:
            return False
        c = min(waiting, key=lambda c: (bool(c.buf), c.waiting_since))
        self._conns.pop(c, None)
        self.stats["evicted"] += 1
        c.writer.close()
        return True

    @staticmethod
    async def _close(conn: _Conn) -> None:
        """Half-close, then discard what the client still sends for up to LINGER seconds, so
        that unread request bytes do not turn the close into a reset that destroys our last
        answer in the client's buffers (a "lingering close", as httpd does)."""
        w = conn.writer
        try:
            if not w.is_closing() and w.can_write_eof():
                w.write_eof()
                async with asyncio.timeout(LINGER):
                    got = 0
                    while got < (1 << 20):
                        data = await conn.reader.read(65536)
                        if not data:
                            break
                        got += len(data)
        except (ConnectionError, TimeoutError, OSError):
            pass
        try:
            w.close()
            async with asyncio.timeout(1):
                await w.wait_closed()
        except (ConnectionError, TimeoutError, OSError):
            pass

    async def _fill(self, conn: _Conn, n: int = 65536) -> None:
        data = await conn.reader.read(n)
        if not data:
            raise _Close
        conn.buf += data

    async def _read_head(self, conn: _Conn) -> _Head | None:
        """The next request's head, parsed; None when the client closed an idle connection.
        Errors in the head are answered here (as http.server does) and end the connection."""
        if conn.requests:
            conn.waiting_since = time.monotonic()  # cheap and evictable until its head is in
        if conn.requests and not conn.buf:
            try:
                async with asyncio.timeout(self.idle_timeout):
                    await self._fill(conn)
            except (_Close, ConnectionError, TimeoutError):
                return None
        searched = 0
        try:
            async with asyncio.timeout(self.header_timeout):
                while True:
                    m = _HEAD_END.search(conn.buf, max(0, searched - 3))
                    if m:
                        break
                    searched = len(conn.buf)
                    if searched > MAX_HEAD:
                        await self._answer(
                            conn,
                            None,
                            error_response(431, f"request head larger than {MAX_HEAD} bytes"),
                            close=True,
                        )
                        raise _Close
                    await self._fill(conn)
        except TimeoutError:
            self.stats["head_timeouts"] += 1
            if conn.buf:  # a request had begun: say why it ends (best effort, no waiting)
                conn.writer.write(
                    _raw_response(
                        408,
                        {"error": f"request head not received within {self.header_timeout:g} s"},
                    )
                )
            raise _Close from None
        raw = bytes(conn.buf[: m.start()])
        del conn.buf[: m.end()]
        conn.requests += 1
        conn.waiting_since = None
        return await self._parse_head(conn, raw)

    async def _parse_head(self, conn: _Conn, raw: bytes) -> _Head | None:
        line, _, rest = raw.partition(b"\n")
        requestline = line.rstrip(b"\r").decode("iso-8859-1")
        words = requestline.split()
        if not words:
            raise _Close  # http.server closes on an empty request line too
        h = _Head()
        h.version, h.keep_alive = "HTTP/0.9", False
        if len(words) >= 3:
            version = words[-1]
            try:
                if not version.startswith("HTTP/"):
                    raise ValueError
                nums = version.split("/", 1)[1].split(".")
                if len(nums) != 2 or not all(x.isdigit() and len(x) <= 10 for x in nums):
                    raise ValueError
                number = int(nums[0]), int(nums[1])
            except (ValueError, IndexError):
                await self._fail(conn, 400, f"Bad request version ({version!r})")
            if number >= (2, 0):
                await self._fail(conn, 505, f"Invalid HTTP version ({version[5:]})")
            h.version, h.keep_alive = version, number >= (1, 1)
        if not 2 <= len(words) <= 3:
            await self._fail(conn, 400, f"Bad request syntax ({requestline!r})")
        h.command, h.target = words[0], words[1]
        if len(words) == 2 and h.command != "GET":
            await self._fail(conn, 400, f"Bad HTTP/0.9 request type ({h.command!r})")
        for field in rest.split(b"\n") if rest else ():
            field = field.removesuffix(b"\r")
            if not _FIELD.fullmatch(field):  # RFC 9112 5: name ":" value, no folding
                what = "a folded header line" if field[:1] in (b" ", b"\t") else "a header line"
                text = field[:80].decode("iso-8859-1")
                await self._fail(conn, 400, f"malformed request head: {what} {text!r}")
        try:
            h.headers = http.client.parse_headers(io.BytesIO(rest + b"\r\n\r\n"))
        except http.client.LineTooLong as e:
            await self._fail(conn, 431, f"Line too long: {e}")
        except http.client.HTTPException as e:
            await self._fail(conn, 431, f"Too many headers: {e}")
        for name in ("Host", "Content-Length"):  # RFC 9112 3.2, 6.3: one of each at most
            values = h.headers.get_all(name) or []
            if len(values) > 1:
                await self._fail(conn, 400, f"{len(values)} {name} headers; send one")
        conntype = (h.headers.get("Connection") or "").lower()
        if conntype == "close":
            h.keep_alive = False
        elif conntype == "keep-alive":
            h.keep_alive = True
        if h.command not in METHODS:
            await self._fail(conn, 501, f"Unsupported method ({h.command!r})", h)
        return h

    async def _fail(self, conn: _Conn, status: int, message: str, head=None):
        await self._answer(conn, head, error_response(status, message), close=True)
        raise _Close

    # ------------------------------------------------------------------ one request
    async def _request(self, conn: _Conn, head: _Head) -> bool:
        """Check, read the body, run the handler, answer; True to keep the connection."""
        hdrs = head.headers
        length_text = hdrs.get("Content-Length")
        body_read = (length_text is None or length_text.strip() == "0") and not hdrs.get(
            "Transfer-Encoding"
        )
        close = not head.keep_alive
        inflow, resp = None, None
        try:
            require_host(head.version, hdrs)
            path, query_text = self._target(head.target, hdrs)
            check_host(self, hdrs)
            route, params = self.router.match(head.command, path)
            if route.auth:
                check_auth(self, hdrs)
            n = self._body_length(hdrs)
            ctype = (hdrs.get("Content-Type") or "").split(";")[0].strip().lower()
            if n > RAW_BODY_MAX and ctype != JSON_TYPE:
                raise HttpError(
                    415,
                    f"Content-Type must be {JSON_TYPE} for a body of {n} "
                    f"bytes, got {ctype or 'none'}",
                )
            if n:
                expect = (
                    hdrs.get("Expect") or ""
                ).lower() == "100-continue" and head.version >= "HTTP/1.1"
                inflow = _Inflow(self, n)
                ok, reason = await self._grow(inflow, min(n, BODY_STEP))
                if not ok:
                    if not expect:  # the client is sending it anyway: read it into nothing,
                        await self._discard(conn, inflow)  # so that it sees the answer
                    raise _too_many(reason)
                if expect:
                    conn.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                if ctype == JSON_TYPE:
                    inflow.parser = JsonBody()
                body, uploads = await self._read_body(conn, inflow)
            else:
                body, uploads = b"", {}
            body_read = True
            try:
                query = urllib.parse.parse_qs(query_text, keep_blank_values=True, max_num_fields=64)
            except ValueError as e:
                raise HttpError(400, f"bad query string: {e}") from None
            req = Request(head.command, path, query, hdrs, body, params, uploads)
            pool = self._quick if route.quick else self._pool
            resp = await pool.run(asyncio.get_running_loop(), _call, route.handler, req)
        except HttpError as e:
            if e.status >= 500:
                log.warning("%s %s: %d %s", head.command, head.target, e.status, e.message)
            resp = error_response(e.status, e.message, e.headers, **e.extra)
        except (_Close, ConnectionError):
            raise
        except Exception as e:
            log.exception("%s %s: unhandled error", head.command, head.target)
            resp = error_response(500, f"internal error ({type(e).__name__}); see the server log")
        finally:
            if inflow is not None:
                body_read = body_read or inflow.got == inflow.n
                if inflow.parser is not None:
                    inflow.parser.close()
                self.memory.give_back(inflow.ticket)
        if not body_read:
            close = True  # an unread body would be parsed as the next request
        await self._answer(conn, head, resp, close=close)
        return not close

    def _target(self, target: str, hdrs) -> tuple[str, str]:
        """(path, query) of a request target. In absolute form (`http://HOST/path`, RFC 9112
        3.2.2) its host takes the place of the Host header, so it is checked as Host is:
        without a token only a loopback name or an --allow-host name is served (else 400)."""
        m = _ABSOLUTE.match(target)
        if m is None:
            if "://" in target.partition("?")[0]:
                raise HttpError(400, f"unsupported request target {target[:200]!r}")
            path, _, query = target.partition("?")
            return (path if path.startswith("/") else "/" + path), query
        url = urllib.parse.urlsplit(target)
        authority = url.netloc
        if not authority or "@" in authority:
            raise HttpError(
                400, f"request target {target[:200]!r}: the authority must be HOST[:PORT]"
            )
        if (
            self.token is None
            and self.loopback_only
            and not host_allowed(authority, self.allow_hosts)
        ):
            raise HttpError(
                400,
                f"request target {target[:200]!r} names host {authority!r}, not this server "
                "(without a token: a loopback name, localhost or an --allow-host name)",
            )
        if "Host" in hdrs:
            hdrs.replace_header("Host", authority)
        else:
            hdrs["Host"] = authority
        return url.path or "/", url.query

    def _body_length(self, hdrs) -> int:
        if hdrs.get("Transfer-Encoding"):
            raise HttpError(411, "chunked bodies are not accepted: send Content-Length")
        length = hdrs.get("Content-Length")
        if length is None:
            # RFC 9112 6.3: no Content-Length and no Transfer-Encoding means an empty body
            # (what `curl -X POST URL` sends); a handler that needs a body says so (400).
            return 0
        if not length.strip().isdigit():
            raise HttpError(400, f"bad Content-Length: {length!r}")
        n = int(length)
        if n > self.max_body:
            raise HttpError(
                413,
                f"request body of {n} bytes exceeds the limit of {self.max_body} bytes",
                limit=self.max_body,
            )
        return n

    async def _grow(self, inflow: _Inflow, k: int) -> tuple[bool, str]:
        """Add `k` bytes to a body's reservation, waiting up to BODY_WAIT for room (the time
        spent waiting does not count against the body's minimum rate); (ok, reason)."""
        t0 = time.monotonic()
        deadline = t0 + BODY_WAIT
        waited = False
        try:
            while True:
                ok, reason = self.memory.grow(inflow.ticket, k)
                if ok or inflow.ticket.cut is not None or time.monotonic() >= deadline:
                    return ok, reason
                if not waited:
                    self.stats["body_waits"] += 1
                    waited = True
                await asyncio.sleep(0.05)
        finally:
            inflow.paused(time.monotonic() - t0)

    async def _chunk(self, conn: _Conn, inflow: _Inflow, most: int) -> bytes:
        """The next at most `most` bytes of the body: buffered ones first, else from the
        socket within the stall limit (idle_timeout) and the minimum rate's deadline."""
        if conn.buf:
            data = bytes(conn.buf[:most])
            del conn.buf[:most]
            return data
        now = time.monotonic()
        deadline = inflow.deadline()
        wait = min(self.idle_timeout, deadline - now)
        try:
            if wait <= 0:
                raise TimeoutError
            async with asyncio.timeout(wait):
                data = await conn.reader.read(most)
        except TimeoutError:
            self.stats["body_timeouts"] += 1
            n, got, took = inflow.n, inflow.got, time.monotonic() - inflow.start
            if time.monotonic() >= deadline:
                raise HttpError(
                    408,
                    f"body too slow: {got} of {n} bytes in {took:.0f} s; a body must "
                    f"arrive at {self.body_min_rate} bytes/s, at most {self.body_timeout:g} s "
                    "behind (body_timeout, body_min_rate)",
                ) from None
            raise HttpError(
                408, f"body stalled after {got} of {n} bytes ({self.idle_timeout:g} s)"
            ) from None
        if not data:
            raise HttpError(400, f"body ended after {inflow.got} of {inflow.n} bytes")
        return data

    async def _discard(self, conn: _Conn, inflow: _Inflow) -> None:
        """Read the rest of a body and drop it (memory: one socket read at a time), so that
        its sender sees the answer; a sender too slow for that is answered and closed."""
        try:
            while inflow.got < inflow.n:
                inflow.arrived(len(await self._chunk(conn, inflow, min(inflow.left, 1 << 20))))
        except HttpError:
            pass  # the answer says why the body was refused; the connection closes

    async def _read_body(self, conn: _Conn, inflow: _Inflow):
        """(body, uploads): the raw bytes, or for JSON the skeleton and its uploads. The
        body's reservation grows by BODY_STEP ahead of what has arrived."""
        parser, ticket = inflow.parser, inflow.ticket
        raw = bytearray() if parser is None else None
        while inflow.got < inflow.n:
            if ticket.cut is not None or inflow.got >= ticket.held:
                ok, reason = await self._grow(inflow, min(inflow.left, BODY_STEP))
                if not ok:
                    await self._discard(conn, inflow)
                    raise _too_many(reason)
            room = ticket.held - inflow.got
            data = await self._chunk(conn, inflow, min(inflow.left, room, 1 << 20))
            inflow.arrived(len(data))
            if ticket.cut is not None:
                continue  # cut while reading: the next turn drops the rest and answers 503
            if parser is None:
                raw += data
                continue
            try:
                parser.feed(data)
            except BodyTooLarge as e:
                raise HttpError(413, f"request body: {e}") from None
        self.memory.done_reading(ticket)
        if ticket.cut is not None:
            raise _too_many(ticket.cut)
        if parser is None:
            return bytes(raw), {}
        return parser.finish()

    async def _answer(self, conn: _Conn, head: _Head | None, resp: Response, close: bool) -> None:
        command = head.command if head is not None else ""
        status = resp.status
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        version = "HTTP/1.1" if head is None or head.version != "HTTP/1.0" else "HTTP/1.0"
        lines = [
            f"{version} {status} {phrase}",
            "Server: cuzk",
            f"Date: {formatdate(usegmt=True)}",
            f"Content-Type: {resp.content_type}",
            f"Content-Length: {len(resp.body)}",
        ]
        lines += [f"{k}: {v}" for k, v in resp.headers.items()]
        if close:
            lines.append("Connection: close")
        elif head is not None and head.version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        if command != "HEAD" and status >= 200 and status not in (204, 304):
            data += resp.body
        if head is not None:
            access_log.debug(
                '%s "%s %s %s" %d %d',
                conn.peer,
                command,
                head.target,
                head.version,
                status,
                len(resp.body),
            )
        conn.writer.write(data)
        try:
            async with asyncio.timeout(self.idle_timeout):
                await conn.writer.drain()
        except TimeoutError:
            raise _Close from None


def _call(handler, req: Request) -> Response:
    out = handler(req)
    if isinstance(out, Response):
        return out
    if isinstance(out, tuple):
        return Response.json(out[1], out[0])
    return Response.json(out)


def _raw_response(status: int, obj: dict, headers: dict | None = None) -> bytes:
    r = Response.json(obj, status, headers)
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        f"Content-Type: {JSON_TYPE}",
        f"Content-Length: {len(r.body)}",
        "Connection: close",
    ]
    lines += [f"{k}: {v}" for k, v in r.headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + r.body


def _raise_fd_limit(want: int) -> None:
    """Raise the soft open-files limit towards `want` (each connection is a descriptor)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= want:
        return
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            target = soft
    if target < want:
        log.warning(
            "open-files limit %d is below max_connections + 512 = %d; raise it "
            "(ulimit -n, LimitNOFILE=)",
            target,
            want,
        )
