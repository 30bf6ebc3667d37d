"""The HTTP layer of `cuzk serve`: a threaded stdlib server, routing, limits, auth, JSON errors.

Why the standard library's ThreadingHTTPServer and not an ASGI stack: the API is a dozen
small JSON routes in front of an engine whose calls block (a result wait parks a thread on a
condition variable), request rates are a few per second per prover, and the daemon's
dependencies stay what the engine already needs. One thread per connection matches the
blocking engine API directly; what a framework would add is enforced here in a few lines:

- a connection cap (`max_connections`): the next connection is answered 503 and closed, so
  a flood costs threads up to the cap, never the process;
- an idle/read timeout per connection (`IDLE_TIMEOUT`), so a stalled client frees its slot;
- a body limit from Content-Length before any byte of the body is read (413; no chunked
  uploads: 411; no Content-Length at all means an empty body);
- every error, including the server's own parse errors and any exception in a handler, is a
  JSON body {"error": "..."}; an exception is logged with its traceback and answered 500;
  the serving thread and the engine carry on.
- bearer-token auth on every route marked `auth` (constant-time compare), and, when no token
  is set (loopback only), a Host header check against DNS rebinding;
- static files of the web panel (issue 10) from the package folder cuzk/web/: GET / is
  web/index.html, GET /ui/<file> any file there (see StaticFiles).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

log = logging.getLogger("cuzk.serve")
access_log = logging.getLogger("cuzk.serve.access")

IDLE_TIMEOUT = 60.0  # seconds a connection may sit idle or stall mid-request
JSON_TYPE = "application/json"


class HttpError(Exception):
    """Raised by handlers: answered as `status` with {"error": message, **extra}."""

    def __init__(self, status: int, message: str, headers: dict | None = None, **extra):
        super().__init__(message)
        self.status, self.message = int(status), message
        self.headers = headers or {}
        self.extra = extra


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: object  # email.message.Message
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)

    def arg(self, name: str, default=None):
        values = self.query.get(name)
        return values[-1] if values else default

    def json(self) -> dict:
        """The body as a JSON object; HttpError 400/415 otherwise."""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != JSON_TYPE:
            raise HttpError(415, f"Content-Type must be {JSON_TYPE}, got {ctype or 'none'}")
        if not self.body:
            raise HttpError(400, "empty body: expected a JSON object")
        try:
            obj = json.loads(self.body)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise HttpError(400, f"malformed JSON: {e}") from None
        if not isinstance(obj, dict):
            raise HttpError(400, f"expected a JSON object, got {type(obj).__name__}")
        return obj


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: dict = field(default_factory=dict)

    @classmethod
    def json(cls, obj, status: int = 200, headers: dict | None = None) -> Response:
        body = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        return cls(status, body, JSON_TYPE, headers or {})


def error_response(status: int, message: str, headers: dict | None = None,
                   **extra) -> Response:
    return Response.json({"error": message, **extra}, status, headers)


@dataclass
class Route:
    method: str
    pattern: str  # "/v1/jobs/{job_id}/result"
    handler: object  # (Request) -> Response | (status, obj) | obj
    auth: bool = True
    regex: re.Pattern = None

    def __post_init__(self):
        rx = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", re.escape(self.pattern).replace(
            r"\{", "{").replace(r"\}", "}"))
        self.regex = re.compile(f"^{rx}$")


class Router:
    def __init__(self):
        self.routes: list[Route] = []

    def add(self, method: str, pattern: str, handler, auth: bool = True) -> None:
        self.routes.append(Route(method.upper(), pattern, handler, auth))

    def match(self, method: str, path: str) -> tuple[Route, dict]:
        allowed = []
        for r in self.routes:
            m = r.regex.match(path)
            if m:
                if r.method == method or (method == "HEAD" and r.method == "GET"):
                    return r, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
                allowed.append(r.method)
        if allowed:
            raise HttpError(405, f"method {method} not allowed on {path} (allowed: "
                                 f"{', '.join(sorted(set(allowed)))})",
                            {"Allow": ", ".join(sorted(set(allowed)))})
        raise HttpError(404, f"no such resource: {path}")


class StaticFiles:
    """The hook for the web panel (issue 10): files shipped in the package folder cuzk/web/.

    GET / serves web/index.html; GET /ui/<name> serves web/<name> (one level of
    subfolders allowed, names of letters, digits, '.', '-', '_' only, so no path can leave
    the folder). Files are read from the installed package (importlib.resources), so they
    work from a wheel as well as a checkout. Absent files are a JSON 404.
    """

    TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
             ".css": "text/css; charset=utf-8", ".json": "application/json",
             ".svg": "image/svg+xml", ".png": "image/png", ".ico": "image/x-icon",
             ".txt": "text/plain; charset=utf-8", ".map": "application/json",
             ".yaml": "application/yaml"}
    NAME = re.compile(r"^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*/)?[A-Za-z0-9_-][A-Za-z0-9._-]*$")

    def __init__(self, package: str = "cuzk", folder: str = "web"):
        self.package, self.folder = package, folder

    def get(self, name: str) -> Response:
        if not self.NAME.match(name) or ".." in name:
            raise HttpError(404, f"no such file: {name}")
        ext = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
        ctype = self.TYPES.get(ext)
        if ctype is None:
            raise HttpError(404, f"no such file: {name}")
        try:
            node = resources.files(self.package).joinpath(self.folder, *name.split("/"))
            data = node.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ModuleNotFoundError):
            raise HttpError(404, f"no such file: {name} (the web panel is not installed)"
                            if name == "index.html" else f"no such file: {name}") from None
        return Response(200, data, ctype, {"Cache-Control": "no-cache",
                                           "X-Content-Type-Options": "nosniff"})

    def index(self, req: Request) -> Response:
        return self.get("index.html")

    def asset(self, req: Request) -> Response:
        return self.get(req.params["name"])


_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


class Server(ThreadingHTTPServer):
    """ThreadingHTTPServer with a connection cap, the router, the token and the body limit."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], router: Router, *, token: str | None = None,
                 max_body: int = 256 * 1024**2, max_connections: int = 64,
                 loopback_only: bool = True):
        self.router = router
        self.token = token
        self.max_body = max_body
        self.loopback_only = loopback_only
        self._slots = threading.BoundedSemaphore(max_connections)
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            try:
                body = json.dumps({"error": "too many connections; retry later"}).encode()
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                                b"application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
                                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                                + body)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request, client_address):
        log.exception("connection from %s: unexpected error", client_address[0])


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections
    timeout = IDLE_TIMEOUT
    server_version = "cuzk"
    error_content_type = JSON_TYPE

    # every method goes through one dispatcher
    def do_GET(self):
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def log_message(self, fmt, *args):
        access_log.debug("%s %s", self.address_string(), fmt % args)

    def send_error(self, code, message=None, explain=None):
        # the stdlib's own errors (bad request line, header too long, ...) as JSON too
        try:
            short = HTTPStatus(code).phrase
        except ValueError:
            short = "error"
        self.close_connection = True
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # answer with a status line and headers
        self._send(error_response(code, message or short))

    def _send(self, resp: Response) -> None:
        try:
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(resp.body)))
            for k, v in resp.headers.items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and resp.status >= 200 and resp.status not in (204, 304):
                self.wfile.write(resp.body)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away; nothing to answer

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise HttpError(411, "chunked bodies are not accepted: send Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            # RFC 9112 6.3: no Content-Length and no Transfer-Encoding means an empty body
            # (what `curl -X POST URL` sends); a handler that needs a body says so (400).
            return b""
        if not length.strip().isdigit():
            self.close_connection = True
            raise HttpError(400, f"bad Content-Length: {length!r}")
        n = int(length)
        if n > self.server.max_body:
            self.close_connection = True  # the body stays unread: this connection is done
            raise HttpError(413, f"request body of {n} bytes exceeds the limit of "
                                 f"{self.server.max_body} bytes", limit=self.server.max_body)
        chunks, left = [], n
        while left:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                self.close_connection = True
                raise HttpError(400, f"body ended after {n - left} of {n} bytes")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _check_host(self) -> None:
        """Without a token, only loopback Host names are served (DNS rebinding defence:
        a web page cannot reach this daemon under a name it controls)."""
        if self.server.token is not None or not self.server.loopback_only:
            return
        host = (self.headers.get("Host") or "").strip().lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name and name not in _LOOPBACK_HOSTS and not name.startswith("127."):
            raise HttpError(403, f"Host {host!r} is not a loopback name; this daemon has no "
                                 "token and serves loopback names only")

    def _check_auth(self) -> None:
        token = self.server.token
        if token is None:
            return
        got = self.headers.get("Authorization") or ""
        scheme, _, value = got.partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(),
                                                                token.encode())
        if not ok:
            raise HttpError(401, "missing or wrong bearer token" if got else
                            "this API requires a bearer token (Authorization: Bearer ...)",
                            {"WWW-Authenticate": 'Bearer realm="cuzk"'})

    def _dispatch(self) -> None:
        resp = None
        self._body_read = False
        try:
            url = urllib.parse.urlsplit(self.path)
            path = url.path if url.path.startswith("/") else "/" + url.path
            self._check_host()
            route, params = self.server.router.match(self.command, path)
            if route.auth:
                self._check_auth()
            body = self._read_body()
            self._body_read = True
            try:
                query = urllib.parse.parse_qs(url.query, keep_blank_values=True,
                                              max_num_fields=64)
            except ValueError as e:
                raise HttpError(400, f"bad query string: {e}") from None
            req = Request(self.command, path, query, self.headers, body, params)
            out = route.handler(req)
            if isinstance(out, Response):
                resp = out
            elif isinstance(out, tuple):
                resp = Response.json(out[1], out[0])
            else:
                resp = Response.json(out)
        except HttpError as e:
            if e.status >= 500:
                log.warning("%s %s: %d %s", self.command, self.path, e.status, e.message)
            resp = error_response(e.status, e.message, e.headers, **e.extra)
        except Exception as e:  # a bug must cost one request, never the daemon
            log.exception("%s %s: unhandled error", self.command, self.path)
            resp = error_response(500, f"internal error ({type(e).__name__}); see the "
                                       "server log")
        if not self._body_read and (self.headers.get("Content-Length") or "0").strip() != "0":
            self.close_connection = True  # an unread body would be parsed as the next request
        self._send(resp)
