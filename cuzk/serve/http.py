"""The HTTP layer of `cuzk serve`: requests, responses, routing, auth and Host checks, JSON errors.

The connections themselves are served by cuzk.serve.front (an asyncio front that reads heads
and bodies, and worker threads for the handlers; its docstring says why). Here:

- Request/Response and the Router (routes marked `auth` need the token; routes marked `quick`
  never block and run on their own threads, so /healthz answers while every other thread
  waits on the engine);
- every error is a JSON body {"error": "..."} (HttpError carries the status and reason);
- bearer-token auth on every route marked `auth` (constant-time compare), and, when no token
  is set (loopback only), a Host header check against DNS rebinding: the Host must be a
  loopback address literal, `localhost`, or a name the operator allowed (--allow-host);
- static files of the web panel (issue 10) from the package folder cuzk/serve/web/: GET / is
  web/index.html, GET /ui/<file> any file there (see StaticFiles).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import urllib.parse
from dataclasses import dataclass, field
from importlib import resources

from cuzk.serve.body import loads as _loads_body

log = logging.getLogger("cuzk.serve")

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
    body: bytes = b""  # for a JSON body: its skeleton, each "data" string an upload marker
    params: dict[str, str] = field(default_factory=dict)
    uploads: dict = field(default_factory=dict)  # marker -> cuzk.serve.body.Upload

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
            obj = _loads_body(self.body, self.uploads)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError too
            raise HttpError(400, f"malformed JSON: {str(e) or 'nested too deeply'}") from None
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


def error_response(status: int, message: str, headers: dict | None = None, **extra) -> Response:
    return Response.json({"error": message, **extra}, status, headers)


@dataclass
class Route:
    method: str
    pattern: str  # "/v1/jobs/{job_id}/result"
    handler: object  # (Request) -> Response | (status, obj) | obj
    auth: bool = True
    quick: bool = False  # never blocks: served by the front's own small thread pool
    regex: re.Pattern = None

    def __post_init__(self):
        rx = re.sub(
            r"\{(\w+)\}",
            r"(?P<\1>[^/]+)",
            re.escape(self.pattern).replace(r"\{", "{").replace(r"\}", "}"),
        )
        self.regex = re.compile(f"^{rx}$")


class Router:
    def __init__(self):
        self.routes: list[Route] = []

    def add(
        self, method: str, pattern: str, handler, auth: bool = True, quick: bool = False
    ) -> None:
        self.routes.append(Route(method.upper(), pattern, handler, auth, quick))

    def match(self, method: str, path: str) -> tuple[Route, dict]:
        allowed = []
        for r in self.routes:
            m = r.regex.match(path)
            if m:
                if r.method == method or (method == "HEAD" and r.method == "GET"):
                    return r, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
                allowed.append(r.method)
        if allowed:
            raise HttpError(
                405,
                f"method {method} not allowed on {path} (allowed: "
                f"{', '.join(sorted(set(allowed)))})",
                {"Allow": ", ".join(sorted(set(allowed)))},
            )
        raise HttpError(404, f"no such resource: {path}")


class StaticFiles:
    """The hook for the web panel (issue 10): files shipped in the package folder cuzk/serve/web/.

    GET / serves web/index.html; GET /ui/<name> serves web/<name> (one level of
    subfolders allowed, names of letters, digits, '.', '-', '_' only, so no path can leave
    the folder). Files are read from the installed package (importlib.resources), so they
    work from a wheel as well as a checkout. Absent files are a JSON 404.
    """

    TYPES = {
        ".html": "text/html; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".json": "application/json",
        ".svg": "image/svg+xml",
        ".png": "image/png",
        ".ico": "image/x-icon",
        ".txt": "text/plain; charset=utf-8",
        ".map": "application/json",
        ".yaml": "application/yaml",
    }
    NAME = re.compile(r"^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*/)?[A-Za-z0-9_-][A-Za-z0-9._-]*$")

    def __init__(self, package: str = "cuzk.serve", folder: str = "web"):
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
            raise HttpError(
                404,
                f"no such file: {name} (the web panel is not installed)"
                if name == "index.html"
                else f"no such file: {name}",
            ) from None
        return Response(
            200, data, ctype, {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
        )

    def index(self, req: Request) -> Response:
        return self.get("index.html")

    def asset(self, req: Request) -> Response:
        return self.get(req.params["name"])


def host_allowed(host: str, allowed=frozenset()) -> bool:
    """True when a Host header names this machine's loopback: an IPv4 literal in 127.0.0.0/8,
    [::1], `localhost` (each with an optional port), or a name in `allowed` (lower case).
    Anything else, `127.0.0.1.rebind.example` included, may be a name an attacker's DNS
    points at 127.0.0.1 (DNS rebinding)."""
    host = host.strip().lower()
    if host.startswith("["):  # [v6] or [v6]:port
        name, sep, rest = host[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return False
        bracketed = True
    else:
        name, sep, port = host.rpartition(":")
        if not sep:
            name = host
        elif not port.isdigit():
            return False
        bracketed = False
    if name.endswith("."):
        name = name[:-1]  # the absolute form of a name
    if not name:
        return False
    if name in allowed or (not bracketed and name == "localhost"):
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    if bracketed != (ip.version == 6):
        return False
    if ip.version == 4:  # only the dotted-quad form: "127.1" or "2130706433" are not literals
        return ip.is_loopback and name == str(ip)
    return ip == ipaddress.IPv6Address("::1")


def require_host(version: str, headers) -> None:
    """RFC 9112 3.2: an HTTP/1.1 request without a Host header, or with an empty one, is
    answered 400 (an HTTP/1.0 one may lack it). In absolute form too: the client must send the
    target's authority as Host, though the target's wins (3.2.2)."""
    if version < "HTTP/1.1":
        return
    host = headers.get("Host")
    if host is None:
        raise HttpError(400, "an HTTP/1.1 request needs a Host header (RFC 9112 3.2)")
    if not host.strip():
        raise HttpError(400, "empty Host header: name the server's host (RFC 9112 3.2)")


def check_host(server, headers) -> None:
    """Without a token, only loopback Host names (and --allow-host names) are served: a web
    page cannot reach this daemon under a name it controls (DNS rebinding). An HTTP/1.0
    request without a Host header, or with an empty one, is served (require_host refuses
    HTTP/1.1 ones); an absolute-form target's host has replaced the header (RFC 9112 3.2.2)."""
    if server.token is not None or not server.loopback_only:
        return
    host = headers.get("Host")
    if host is None or not host.strip():
        return
    if not host_allowed(host, server.allow_hosts):
        raise HttpError(
            403,
            f"Host {host.strip()!r} is not a loopback name; this daemon has "
            "no token and serves loopback names only (or the names given "
            "with --allow-host)",
        )


def check_auth(server, headers) -> None:
    token = server.token
    if token is None:
        return
    got = headers.get("Authorization") or ""
    scheme, _, value = got.partition(" ")
    ok = scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())
    if not ok:
        raise HttpError(
            401,
            "missing or wrong bearer token"
            if got
            else "this API requires a bearer token (Authorization: Bearer ...)",
            {"WWW-Authenticate": 'Bearer realm="cuzk"'},
        )
