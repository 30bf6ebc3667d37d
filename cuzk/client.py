"""A small client of the `cuzk serve` API on the standard library (urllib), for the CLI.

Client(url, token).submit(...), .result(job_id, wait=...), .jobs(), .cancel(id), .status().
A refusal by the server raises ApiError (status and the server's reason); a server that
cannot be reached raises Unreachable.

Transport: http:// URLs go over a plain socket, one HTTP/1.1 request per connection
(`Connection: close`, the answer read to its Content-Length), without proxies (a prover
daemon is reached directly). urllib would do the same, but importing it (http.client, email,
ssl) costs ~40 ms of the ~50 ms a bare interpreter takes to start, and `cuzk prove --server`
runs this once per proof (measured in docs/prover.md). https:// URLs (a TLS proxy in front
of the daemon) go through urllib, imported only then. For the same reason the socket is the
C module's (`_socket`, not `socket`: enum, selectors) and the JSON cuzk.lean_json's (json's C
parser and string encoder without the json package's import: re, enum).
"""

from __future__ import annotations

import binascii
import os
import time

from cuzk.lean_json import dumps as json_dumps
from cuzk.lean_json import loads as json_loads

DEFAULT_SERVER = "http://127.0.0.1:9820"


def quote(s: str) -> str:
    """urllib.parse.quote, imported at the first call: urllib.parse (and its ipaddress) is
    ~2 ms of the thin client's start (`cuzk prove --server`), which needs no quoting."""
    from urllib.parse import quote as url_quote

    return url_quote(s)


def split_url(url: str) -> tuple[str, int | None, str]:
    """(host, port, target) of a URL as urllib.parse.urlsplit reads it (hostname in lower
    case; port or None, ValueError when out of range; path, "/" when empty, and ?query).
    A plain ``scheme://host[:port][/path][?query]`` is split here, anything else (user
    info, an IPv6 literal, a fragment) by urlsplit, imported then (see quote)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    host, colon, port = netloc.partition(":")
    if (
        sep
        and scheme.isalpha()
        and host
        and not any(c in rest for c in "@[]#\\")
        and (not colon or (port.isascii() and port.isdigit() and int(port) <= 65535))
    ):
        path, q, query = (slash + tail).partition("?")
        return host.lower(), int(port) if colon else None, (path or "/") + q + query
    from urllib.parse import urlsplit

    u = urlsplit(url)
    return u.hostname or "", u.port, (u.path or "/") + (f"?{u.query}" if u.query else "")


def _base64(data: bytes) -> str:
    """Standard base64 of data, as base64.b64encode gives it (binascii alone: the base64
    module imports re and struct)."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


class ClientError(Exception):
    """Base of the client's errors; str() is a one-line reason."""


class Unreachable(ClientError):
    pass


class ApiError(ClientError):
    def __init__(self, status: int, message: str, body=None):
        self.status, self.message, self.body = status, message, body
        super().__init__(f"HTTP {status}: {message}")


def read_token(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def _connect(host, port: int, timeout: float):
    """A TCP connection to (host, port), as socket.create_connection makes it: each address
    getaddrinfo gives in turn, the last one's error if none connects. On the C module
    `_socket`: the `socket` module's import (enum, selectors, array) is ~3 ms of the thin
    client's start."""
    import _socket

    error = None
    for family, kind, proto, _, address in _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM):
        s = _socket.socket(family, kind, proto)
        try:
            s.settimeout(timeout)
            s.connect(address)
            return s
        except OSError as e:
            error = e
            s.close()
    raise error or OSError("getaddrinfo returns an empty list")


class _closing:
    """Closes a `_socket.socket` (which is no context manager) on leaving."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        return self.s

    def __exit__(self, *exc):
        self.s.close()


class _BadAnswer(ValueError):
    """An answer that is not HTTP/1.x (reported as Unreachable: whatever listens there is not
    a cuzk serve)."""


def _socket_exchange(
    url: str, method: str, data: bytes | None, headers: dict, timeout: float
) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.1 request on a fresh connection, any status."""
    host, port, target = split_url(url)
    port = port or 80
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [
        f"{method} {target} HTTP/1.1",
        f"Host: {netloc}",
        "Connection: close",
        f"Content-Length: {len(data or b'')}",
    ]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (data or b"")
    # an ASCII name as bytes: getaddrinfo would otherwise import the idna codec (~2 ms)
    addr = host.encode() if host.isascii() else host
    s = _connect(addr, port, timeout)
    with _closing(s):
        try:
            s.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered early (413, 401) and closed: read that answer
        buf = bytearray()
        while True:
            head_end = buf.find(b"\r\n\r\n")
            if head_end >= 0:
                head = bytes(buf[:head_end]).decode("latin-1").split("\r\n")
                parts = head[0].split(" ", 2)
                if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                    raise _BadAnswer(f"not an HTTP answer: {head[0][:80]!r}")
                status = int(parts[1])
                if 100 <= status < 200:  # an interim answer (100 Continue): the next one
                    del buf[: head_end + 4]
                    continue
                fields = dict(h.split(":", 1) for h in head[1:] if ":" in h)
                length = {k.strip().lower(): v.strip() for k, v in fields.items()}.get(
                    "content-length"
                )
                body = buf[head_end + 4 :]
                while length is None or len(body) < int(length):
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        if length is not None:
                            raise _BadAnswer(
                                f"the answer ended after {len(body)} of {length} bytes"
                            )
                        break
                    body += chunk
                return status, bytes(body if length is None else body[: int(length)])
            chunk = s.recv(1 << 16)
            if not chunk:
                raise _BadAnswer(
                    "the connection closed before an answer"
                    + (f" ({len(buf)} bytes of a head)" if buf else "")
                )
            buf += chunk


def _urllib_exchange(
    url: str, method: str, data: bytes | None, headers: dict, timeout: float
) -> tuple[int, bytes]:
    """(status, body) of one request through urllib (https), any status."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Client:
    def __init__(self, server: str | None = None, token: str | None = None, timeout: float = 60.0):
        self.server = (server or os.environ.get("CUZK_SERVER") or DEFAULT_SERVER).rstrip("/")
        if "://" not in self.server:
            self.server = "http://" + self.server
        self.token = token
        self.timeout = timeout

    # ---------------------------------------------------------------- transport
    def request(
        self, method: str, path: str, body=None, *, timeout: float | None = None, raw: bool = False
    ):
        """(status, JSON body) of one request; ApiError on 4xx/5xx."""
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json_dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        exchange = _socket_exchange if self.server.startswith("http://") else _urllib_exchange
        try:
            status, payload = exchange(
                self.server + path, method, data, headers, timeout or self.timeout
            )
        except (OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise Unreachable(f"cannot reach cuzk serve at {self.server}: {reason}") from None
        if status >= 400:
            try:
                obj = json_loads(payload)
                message = obj.get("error", payload.decode(errors="replace"))
            except (ValueError, AttributeError):
                obj, message = None, payload.decode(errors="replace")[:300] or f"HTTP {status}"
            raise ApiError(status, message, obj)
        if raw:
            return status, payload
        try:
            return status, json_loads(payload)
        except ValueError:
            raise ClientError(f"{self.server}{path}: the answer is not JSON") from None

    # ---------------------------------------------------------------- API
    def health(self) -> dict:
        return self.request("GET", "/healthz")[1]

    def status(self) -> dict:
        return self.request("GET", "/status")[1]

    def metrics(self) -> str:
        return self.request("GET", "/metrics", raw=True)[1].decode()

    def keys(self) -> list[dict]:
        return self.request("GET", "/v1/keys")[1]["keys"]

    def register_key(self, path, wasm=None) -> dict:
        """Register a key (an absolute path under the server's key roots), with its circuit's
        wasm when given (for jobs with circuit inputs)."""
        body = {"path": os.path.abspath(path)}
        if wasm is not None:
            body["wasm"] = os.path.abspath(wasm)
        return self.request("POST", "/v1/keys", body)[1]

    def evict_key(self, key_id: str) -> dict:
        return self.request("POST", f"/v1/keys/{quote(key_id)}/evict")[1]

    @staticmethod
    def witness_entry(w, upload: bool = True):
        """A witness for the API: bytes (uploaded), or a path (uploaded by default, else
        sent as an absolute path the server reads under its key roots)."""
        if isinstance(w, (bytes, bytearray)):
            return {"data": _base64(bytes(w))}
        if upload:
            with open(w, "rb") as f:
                return {"data": _base64(f.read())}
        return {"path": os.path.abspath(w)}

    def job_body(
        self, key, witnesses, kind="default", priority="normal", upload: bool = True, inputs=None
    ) -> dict:
        """`inputs` (one JSON object of circuit inputs per partition) instead of witnesses:
        the key must be registered with its circuit's wasm."""
        if not isinstance(key, str) or os.path.exists(key):
            key = os.path.abspath(key)  # a path; else a key id
        if inputs is not None:
            return {"key": key, "inputs": list(inputs), "kind": kind, "priority": priority}
        return {
            "key": key,
            "witnesses": [self.witness_entry(w, upload) for w in witnesses],
            "kind": kind,
            "priority": priority,
        }

    def submit(
        self,
        key,
        witnesses=None,
        kind="default",
        priority="normal",
        upload: bool = True,
        inputs=None,
    ) -> dict:
        """Queue a job (witnesses, or circuit `inputs`); returns the job (with "job_id")."""
        return self.request(
            "POST", "/v1/jobs", self.job_body(key, witnesses, kind, priority, upload, inputs)
        )[1]

    def prove(
        self,
        key,
        witnesses,
        kind="default",
        priority="normal",
        upload: bool = True,
        timeout: float = 600.0,
    ) -> dict:
        body = {**self.job_body(key, witnesses, kind, priority, upload), "timeout": timeout}
        return self.request("POST", "/v1/prove", body, timeout=timeout + 30)[1]

    def job(self, job_id: str) -> dict:
        return self.request("GET", f"/v1/jobs/{quote(job_id)}")[1]

    def jobs(self, state: str | None = None, page: int | None = None) -> list[dict]:
        """Every job the server lists (the engine's and the journalled ones), following its
        pages (`page` jobs each; None: the server's default)."""
        out, cursor = [], None
        while True:
            q = [f"state={quote(state)}"] if state else []
            if page:
                q.append(f"limit={int(page)}")
            if cursor:
                q.append(f"cursor={quote(cursor)}")
            got = self.request("GET", "/v1/jobs" + ("?" + "&".join(q) if q else ""))[1]
            out += got["jobs"]
            cursor = got.get("next_cursor")
            if not cursor:
                return out

    def cancel(self, job_id: str) -> dict:
        return self.request("POST", f"/v1/jobs/{quote(job_id)}/cancel")[1]

    def result(self, job_id: str, wait: float = 0.0) -> dict:
        """The job's result if it finished within `wait` seconds (key "finished" true), else
        its current state (finished false)."""
        path = f"/v1/jobs/{quote(job_id)}/result?wait={wait:g}"
        return self.request("GET", path, timeout=wait + 30)[1]

    def wait(self, job_id: str, timeout: float | None = None, poll: float = 60.0) -> dict:
        """Long-poll until the job finishes (or `timeout` passes: the last state returned)."""
        deadline = None if timeout is None else time.time() + timeout
        while True:
            left = poll if deadline is None else max(0.0, min(poll, deadline - time.time()))
            r = self.result(job_id, wait=left)
            if r.get("finished") or (deadline is not None and time.time() >= deadline):
                return r
