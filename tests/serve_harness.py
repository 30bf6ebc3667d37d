"""A real `cuzk serve` subprocess on loopback for the serve tests, and raw-HTTP helpers.

ServeProcess starts `python -m cuzk.cli serve --listen 127.0.0.1:0 ...` in its own session,
logs to a file (never a pipe that could fill), learns its URL from the "listening on" line,
and on stop() checks that the process exited and left no shared-memory segment behind. Unless
the arguments name one, it passes a `--state-dir` beside its log file (under the test's
tmp_path), so daemons of parallel tests never share the user's default state directory.
serve_daemon() builds one with the arguments the tests share (daemon_args()); SilentConnections
holds connections that never speak, reopened as the server closes them.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "cuzk.cli"]


def cli_env(**extra) -> dict:
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    for k in [k for k in env if k.startswith("CUZK_") and k != "CUZK_TEST_PROVERS"]:
        env.pop(k)  # the tests say what they mean; nothing leaks in from the shell
    env.update(extra)
    return env


def run_cli(*args, timeout: float = 120, env: dict | None = None, cwd=None):
    """Run `cuzk ARGS...` as a subprocess; returns the CompletedProcess (text)."""
    return subprocess.run(
        [*CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or cli_env(),
        cwd=cwd,
    )


def warm_kernels(*circuits) -> None:
    """Validate each circuit's key and prove once here, so Numba compiles the key checks and
    the prover's kernels (per curve) into its cache once (NUMBA_CACHE_DIR) rather than in every
    device process of every daemon at the same time."""
    from cuzk.groth16 import ProvingKey, load_witness, open_device, prove

    for c in circuits:
        key = ProvingKey.open(c.zkey)
        key.validate()
        prove(key, load_witness(c.witness(0), key), open_device("cpu"))


def daemon_args(
    key_root, *extra, devices: str = "cpu:1", memory: str | None = "1GiB", listen="127.0.0.1:0"
) -> list:
    """The `cuzk serve` arguments the tests share: LISTEN (loopback, a free port), DEVICES, one
    synthesis worker, a MEMORY budget (None: the default), KEY_ROOT, then EXTRA."""
    budget = ["--memory-budget", memory] if memory is not None else []
    return [
        "--listen",
        listen,
        "--devices",
        devices,
        "--synth-workers",
        "1",
        *budget,
        "--key-root",
        key_root,
        *extra,
    ]


class ServeProcess:
    def __init__(self, log_path: Path, *args, env: dict | None = None):
        self.log_path = Path(log_path)
        self.args = [str(a) for a in args]
        if "--state-dir" not in self.args:
            self.args += [
                "--state-dir",
                str(self.log_path.with_name(self.log_path.stem + ".state")),
            ]
        self.env = env or cli_env()
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.board = ""

    def start(self, timeout: float = 300) -> ServeProcess:
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [*CLI, "serve", *self.args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        t_end = time.time() + timeout
        while time.time() < t_end:
            text = self.log()
            m = re.search(r"listening on (http://\S+)", text)
            if m:
                self.url = m.group(1)
                b = re.search(r"board (\S+) \(watch", text)
                self.board = b.group(1) if b else ""
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"cuzk serve exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"cuzk serve did not start in {timeout} s:\n{self.log()}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def hostport(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def leftover_segments(self) -> list[str]:
        """Shared-memory names this daemon created (its buffers, its board) still present."""
        names = os.listdir("/dev/shm")
        return sorted(
            n
            for n in names
            if n.startswith(f"cuzkbuf.{self.pid}.") or (self.board and n == self.board)
        )

    def stop(self, sig=signal.SIGTERM, timeout: float = 60) -> int:
        """Signal the daemon and wait for it; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        """Last resort (a failed test): kill the daemon's whole session (it and its children)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        if hasattr(self, "_log"):
            self._log.close()


def serve_daemon(log_path: Path, key_root, *extra, env: dict | None = None, **kw) -> ServeProcess:
    """A ServeProcess (not yet started) logging to LOG_PATH with `daemon_args(KEY_ROOT, *EXTRA,
    **KW)`."""
    return ServeProcess(log_path, *daemon_args(key_root, *extra, **kw), env=env)


def serving(s: ServeProcess):
    """A fixture's body for a started daemon: yield it, then stop it and check the ending (exit
    0, no shared-memory segment left), killing it if that fails: `yield from serving(s)`."""
    yield s
    try:
        assert s.stop() == 0, s.log()
        assert s.leftover_segments() == []
    finally:
        s.kill()


def request(
    url: str,
    method: str,
    path: str,
    body=None,
    *,
    headers: dict | None = None,
    raw: bytes | None = None,
    timeout: float = 650,
):
    """(status, headers dict, JSON-or-bytes body) of one request on a fresh connection."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    hdrs = dict(headers or {})
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        h = {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()
    if h.get("content-type", "").startswith("application/json"):
        return resp.status, h, json.loads(payload)
    return resp.status, h, payload


def raw_exchange(url: str, data: bytes, timeout: float = 10) -> bytes:
    """Send raw bytes on a socket; returns everything the server sends before closing."""
    import socket

    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while True:
                c = s.recv(65536)
                if not c:
                    break
                chunks.append(c)
        except TimeoutError:
            pass
    return b"".join(chunks)


def split_response(raw: bytes) -> tuple[int, dict]:
    """(status, JSON body) of one raw HTTP/1.x response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body) if body.strip() else {}


class StatusServer:
    """A stand-in for a cuzk serve (or a farm's gateway) on 127.0.0.1: a tiny http.server in a
    thread answering GET /status with `snapshot()` (a function, called per request, or a dict)
    serialised as cuzk serve does. `token` set: requests without `Authorization: Bearer token`
    get 401 with a JSON reason, as from the daemon. `answer` set to (status, content type,
    bytes) replaces every answer (garbage, errors); `files` maps other paths to (content type,
    bytes) (the web panel's files). `requests` counts the GET /status answered."""

    def __init__(self, snapshot, token: str | None = None, files: dict | None = None):
        self.snapshot, self.token, self.files = snapshot, token, files or {}
        self.answer: tuple[int, str, bytes] | None = None
        self.requests = 0
        self.httpd = None

    def __enter__(self) -> StatusServer:
        import http.server
        import threading

        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, ctype, body = owner._answer(self.path, self.headers.get("Authorization"))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def _answer(self, path: str, auth: str | None) -> tuple[int, str, bytes]:
        js = "application/json"
        path = path.split("?", 1)[0]
        if self.answer is not None:
            return self.answer
        if path in self.files:
            return (200, *self.files[path])
        if self.token and auth != f"Bearer {self.token}":
            return 401, js, b'{"error":"missing or wrong bearer token"}'
        if path != "/status":
            return 404, js, b'{"error":"not found"}'
        self.requests += 1
        snap = self.snapshot() if callable(self.snapshot) else self.snapshot
        return 200, js, json.dumps(snap, separators=(",", ":"), allow_nan=False).encode()


class SilentConnections:
    """N connections to 127.0.0.1:PORT that never send a byte, each reopened by a thread (a pass
    every PAUSE s) as soon as the server closes it, while the `with` block runs; closed at its
    end. `reopened` lists the index of each connection reopened."""

    def __init__(self, port: int, n: int, pause: float = 0.01):
        import socket
        import threading

        self.port, self.pause, self.reopened = port, pause, []
        self.conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._hold)

    def _hold(self) -> None:
        import socket

        while not self.stop.is_set():
            for i, c in enumerate(self.conns):
                c.setblocking(False)
                try:
                    gone = c.recv(1) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    c.close()
                    self.conns[i] = socket.create_connection(("127.0.0.1", self.port))
                    self.reopened.append(i)
            time.sleep(self.pause)

    def __enter__(self) -> SilentConnections:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        for c in self.conns:
            c.close()


def closed_port_url() -> str:
    """An http:// URL on loopback where nothing listens (a port bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class BodyHog(threading.Thread):
    """A client holding the most body memory it can: it declares `size` bytes, sends all but
    the last 4 KiB at once, then (`pattern`) sends one byte every 0.5 s ("trickle") or nothing
    ("silent"); with `reopen` it opens a new body whenever the server cuts or refuses it.
    `path`: the route it posts to (JSON with one witness whose data never ends)."""

    def __init__(self, port: int, size: int, pattern: str, reopen: bool, path: str = "/echo"):
        super().__init__(daemon=True)
        self.port, self.size, self.pattern, self.reopen = port, size, pattern, reopen
        self.path = path
        self.stop = threading.Event()
        self.answers: list[bytes] = []

    def run(self):
        body = b'{"witnesses": [{"data": "' + b"A" * self.size
        while not self.stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=0.5)
                head = (
                    b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                    b"\r\nContent-Length: %d\r\n\r\n" % (self.path.encode(), self.size)
                )
                s.sendall(head + body[: self.size - 4096])
                out = b""
                while not self.stop.is_set():
                    try:
                        d = s.recv(65536)
                        if not d:
                            break
                        out += d
                    except TimeoutError:
                        if self.pattern == "trickle":
                            s.sendall(b"A")
                s.close()
                self.answers.append(out[:200])
            except OSError as e:
                self.answers.append(repr(e).encode())
            if not self.reopen:
                self.stop.wait()
