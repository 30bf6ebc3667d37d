"""A small client of the `cuzk serve` API on the standard library (urllib), for the CLI.

Client(url, token).submit(...), .result(job_id, wait=...), .jobs(), .cancel(id), .status().
A refusal by the server raises ApiError (status and the server's reason); a server that
cannot be reached raises Unreachable.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_SERVER = "http://127.0.0.1:9820"


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


class Client:
    def __init__(self, server: str | None = None, token: str | None = None,
                 timeout: float = 60.0):
        self.server = (server or os.environ.get("CUZK_SERVER") or DEFAULT_SERVER).rstrip("/")
        if "://" not in self.server:
            self.server = "http://" + self.server
        self.token = token
        self.timeout = timeout

    # ---------------------------------------------------------------- transport
    def request(self, method: str, path: str, body=None, *, timeout: float | None = None,
                raw: bool = False):
        """(status, JSON body) of one request; ApiError on 4xx/5xx."""
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                payload = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                obj = json.loads(payload)
                message = obj.get("error", payload.decode(errors="replace"))
            except (ValueError, AttributeError):
                obj, message = None, payload.decode(errors="replace")[:300] or e.reason
            raise ApiError(e.code, message, obj) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise Unreachable(f"cannot reach cuzk serve at {self.server}: {reason}") from None
        if raw:
            return status, payload
        try:
            return status, json.loads(payload)
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

    def register_key(self, path) -> dict:
        return self.request("POST", "/v1/keys", {"path": os.path.abspath(path)})[1]

    def evict_key(self, key_id: str) -> dict:
        return self.request("POST", f"/v1/keys/{urllib.parse.quote(key_id)}/evict")[1]

    @staticmethod
    def witness_entry(w, upload: bool = True):
        """A witness for the API: bytes (uploaded), or a path (uploaded by default, else
        sent as an absolute path the server reads under its key roots)."""
        if isinstance(w, (bytes, bytearray)):
            return {"data": base64.b64encode(bytes(w)).decode()}
        if upload:
            with open(w, "rb") as f:
                return {"data": base64.b64encode(f.read()).decode()}
        return {"path": os.path.abspath(w)}

    def job_body(self, key, witnesses, kind="default", priority="normal",
                 upload: bool = True) -> dict:
        if not isinstance(key, str) or os.path.exists(key):
            key = os.path.abspath(key)  # a path; else a key id
        return {"key": key, "witnesses": [self.witness_entry(w, upload) for w in witnesses],
                "kind": kind, "priority": priority}

    def submit(self, key, witnesses, kind="default", priority="normal",
               upload: bool = True) -> dict:
        """Queue a job; returns the job (with "job_id")."""
        return self.request("POST", "/v1/jobs", self.job_body(key, witnesses, kind, priority,
                                                              upload))[1]

    def prove(self, key, witnesses, kind="default", priority="normal", upload: bool = True,
              timeout: float = 600.0) -> dict:
        body = {**self.job_body(key, witnesses, kind, priority, upload), "timeout": timeout}
        return self.request("POST", "/v1/prove", body, timeout=timeout + 30)[1]

    def job(self, job_id: str) -> dict:
        return self.request("GET", f"/v1/jobs/{urllib.parse.quote(job_id)}")[1]

    def jobs(self, state: str | None = None) -> list[dict]:
        q = f"?state={urllib.parse.quote(state)}" if state else ""
        return self.request("GET", f"/v1/jobs{q}")[1]["jobs"]

    def cancel(self, job_id: str) -> dict:
        return self.request("POST", f"/v1/jobs/{urllib.parse.quote(job_id)}/cancel")[1]

    def result(self, job_id: str, wait: float = 0.0) -> dict:
        """The job's result if it finished within `wait` seconds (key "finished" true), else
        its current state (finished false)."""
        path = f"/v1/jobs/{urllib.parse.quote(job_id)}/result?wait={wait:g}"
        return self.request("GET", path, timeout=wait + 30)[1]

    def wait(self, job_id: str, timeout: float | None = None, poll: float = 60.0) -> dict:
        """Long-poll until the job finishes (or `timeout` passes: the last state returned)."""
        deadline = None if timeout is None else time.time() + timeout
        while True:
            left = poll if deadline is None else max(0.0, min(poll, deadline - time.time()))
            r = self.result(job_id, wait=left)
            if r.get("finished") or (deadline is not None and time.time() >= deadline):
                return r


class HttpSource:
    """A snapshot source for cuzk.top (anything with read()) that reads GET /status."""

    def __init__(self, client: Client):
        self.client = client

    def read(self) -> dict:
        return self.client.status()
