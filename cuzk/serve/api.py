"""The JSON API of `cuzk serve`: request validation and the calls into the Engine.

Every handler validates its whole request before it touches the engine: unknown fields,
wrong types, paths outside the key roots, witnesses that are not .wtns files of the key's
nVars are all answered 4xx with {"error": reason} (docs/api.md lists the codes). Handlers
only read the engine's public API (Engine.submit/job/jobs/result/cancel/keys/...).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import re
import threading
import time

from cuzk.board.layout import check_priority
from cuzk.engine import BudgetError, EngineError, EngineStopped, UnknownJob, UnknownKey
from cuzk.formats.errors import FormatError
from cuzk.formats.json_limits import nested_deeper_than
from cuzk.serve.body import Upload
from cuzk.serve.http import HttpError, Request, Response, Router, StaticFiles
from cuzk.serve.journal import JournalError

log = logging.getLogger("cuzk.serve")

KEY_ID = re.compile(r"^[0-9a-f]{16}$")
MAX_PARTITIONS = 4096  # witnesses per job
MAX_KIND_BYTES = 24  # the board's label width
JOB_FIELDS = {
    "key": True,
    "witnesses": False,
    "inputs": False,
    "kind": False,
    "priority": False,
}  # witnesses or inputs, not both
PROVE_FIELDS = {**JOB_FIELDS, "timeout": False}
JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
JOBS_PAGE, JOBS_PAGE_MAX = 1000, 10000  # GET /v1/jobs: jobs per page by default, at most


def _fields(body: dict, spec: dict[str, bool], what: str) -> None:
    unknown = sorted(set(body) - set(spec))
    if unknown:
        raise HttpError(
            400,
            f"{what}: unknown field(s) {', '.join(map(repr, unknown))} "
            f"(allowed: {', '.join(spec)})",
        )
    missing = [k for k, required in spec.items() if required and k not in body]
    if missing:
        raise HttpError(400, f"{what}: missing field(s) {', '.join(map(repr, missing))}")


def _str_field(body: dict, name: str, default: str | None = None) -> str:
    v = body.get(name, default)
    if not isinstance(v, str) or not v:
        raise HttpError(400, f"{name!r} must be a non-empty string, got {v!r}"[:300])
    return v


def _seconds(value, name: str, limit: float) -> float:
    """Seconds from a JSON number or query string, clamped to `limit`."""
    if isinstance(value, bool):
        raise HttpError(400, f"{name} must be a number of seconds, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise HttpError(400, f"{name} must be a number of seconds, got {value!r}"[:300]) from None
    if not x >= 0 or x == float("inf"):
        raise HttpError(400, f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return min(x, limit)


def _position(job: dict) -> tuple[float, str]:
    """A job's place in GET /v1/jobs's order."""
    return (float(job["submitted_at"]), job["job_id"])


def _cursor(pos: tuple[float, str]) -> str:
    """An opaque cursor for the position `pos` (base64url of its JSON, float exact)."""
    raw = json.dumps([pos[0], pos[1]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_position(cursor: str | None) -> tuple[float, str] | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        # A cursor is one flat array: anything nested is refused before json.loads, whose
        # recursion can overflow the C stack when a library has raised the recursion limit.
        if len(cursor) > 512 or nested_deeper_than(raw, 1):
            raise ValueError
        t, job_id = json.loads(raw)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not isinstance(job_id, str):
            raise ValueError
        if not abs(t) < float("inf"):  # NaN, Infinity
            raise ValueError
        return (float(t), job_id)
    except (ValueError, TypeError, RecursionError):  # binascii.Error is a ValueError
        raise HttpError(
            400, "cursor: not a cursor this server gave (pass next_cursor as it is)"
        ) from None


def resolve_under_roots(path, roots: list[str], what: str) -> str:
    """The real path (symlinks followed) of an absolute `path` that lies inside a key root
    and is a regular file; HttpError 400/403/404 otherwise. Roots are checked before the
    file's existence, so answers reveal nothing about files outside the roots."""
    if not isinstance(path, str) or not path:
        raise HttpError(400, f"{what}: a path must be a non-empty string")
    if "\x00" in path:
        raise HttpError(400, f"{what}: a path must not contain NUL")
    if not os.path.isabs(path):
        raise HttpError(
            400,
            f"{what}: {path!r} is not an absolute path (the server's working "
            "directory is not yours)",
        )
    if not roots:
        raise HttpError(
            403,
            f"{what}: the server has no key roots, so it accepts no paths "
            "(start it with --key-root DIR)",
        )
    real = os.path.realpath(path)
    if not any(os.path.commonpath([real, root]) == root for root in roots):
        raise HttpError(403, f"{what}: {path!r} is outside the key roots")
    if not os.path.isfile(real):
        raise HttpError(404, f"{what}: {path!r}: no such file")
    return real


class Api:
    """The routes of one serve process, over one Engine."""

    def __init__(
        self, engine, config, metrics=None, static: StaticFiles | None = None, journal=None
    ):
        self.engine = engine
        self.config = config
        self.metrics = metrics
        self.journal = journal  # finished jobs the engine no longer holds are served from it
        self.static = static or StaticFiles()
        self.draining = False
        self.started_at = time.time()
        self._key_paths: dict[tuple, str] = {}  # (realpath, mtime_ns, size) -> key_id
        self._lock = threading.Lock()

    def router(self) -> Router:
        r = Router()
        r.add("GET", "/healthz", self.healthz, auth=False, quick=True)
        r.add("GET", "/status", self.status, quick=True)
        r.add("GET", "/metrics", self.metrics_text, quick=True)
        r.add("GET", "/v1/keys", self.list_keys)
        r.add("POST", "/v1/keys", self.register_key)
        r.add("GET", "/v1/keys/{key_id}", self.get_key)
        r.add("POST", "/v1/keys/{key_id}/evict", self.evict_key)
        r.add("GET", "/v1/jobs", self.list_jobs)
        r.add("POST", "/v1/jobs", self.submit)
        r.add("GET", "/v1/jobs/{job_id}", self.get_job)
        r.add("GET", "/v1/jobs/{job_id}/result", self.get_result)
        r.add("POST", "/v1/jobs/{job_id}/cancel", self.cancel)
        r.add("POST", "/v1/prove", self.prove)
        # static files: the web panel (issue 10) and the API description, no token needed
        r.add("GET", "/", self.static.index, auth=False, quick=True)
        r.add("GET", "/ui/{name}", self.static.asset, auth=False, quick=True)
        r.add("GET", "/ui/{dir}/{file}", self._ui_sub, auth=False, quick=True)
        r.add("GET", "/openapi.yaml", self._openapi, auth=False, quick=True)
        return r

    def _ui_sub(self, req: Request) -> Response:
        return self.static.get(f"{req.params['dir']}/{req.params['file']}")

    def _openapi(self, req: Request) -> Response:
        return StaticFiles("cuzk", "serve").get("openapi.yaml")

    # ---------------------------------------------------------------- health, status, metrics
    def healthz(self, req: Request):
        serving, detail = self.engine.health()
        stopping = self.draining or not self.engine.running
        ok = serving and not stopping
        body = {
            "status": "ok" if ok else "draining" if stopping else "no prover node alive",
            "pid": os.getpid(),
            "uptime_secs": round(time.time() - self.started_at, 3),
            **detail,
        }
        return (200 if ok else 503), body

    def status(self, req: Request):
        try:
            return self.engine.snapshot()
        except RuntimeError as e:  # the board is gone: the engine has stopped
            raise HttpError(503, f"status unavailable: {e}") from None

    def metrics_text(self, req: Request) -> Response:
        if self.metrics is None:
            raise HttpError(404, "metrics are not enabled")
        try:
            body, ctype = self.metrics.render()
        except RuntimeError as e:
            raise HttpError(503, f"metrics unavailable: {e}") from None
        return Response(200, body, ctype)

    # ---------------------------------------------------------------- keys
    def _keys(self) -> list[dict]:
        """The engine's keys (each with `protocol` and `curve`, as the key declares them)."""
        return self.engine.keys()

    def _key_by_id(self, key_id: str) -> dict:
        for k in self._keys():
            if k["key_id"] == key_id:
                return k
        raise HttpError(404, f"unknown key id {key_id!r}"[:200])

    def _register_path(self, path, what: str, wasm=None) -> str:
        real = resolve_under_roots(path, self.config.key_roots, what)
        if wasm is not None:  # the circuit's witness calculator, checked against the key
            wasm = resolve_under_roots(wasm, self.config.key_roots, "wasm")
        st = os.stat(real)
        cache_key = (real, st.st_mtime_ns, st.st_size)
        with self._lock:
            key_id = self._key_paths.get(cache_key)
        if (
            key_id is not None
            and wasm is None
            and any(k["key_id"] == key_id for k in self.engine.keys())
        ):
            return key_id
        from cuzk.witness.errors import WitnessError

        try:
            key_id = self.engine.register_key(real, wasm=wasm)
        except WitnessError as e:
            raise HttpError(422, f"wasm: not a usable circuit for this key: {e.problem}") from None
        except FormatError as e:
            raise HttpError(422, f"{what}: not a usable proving key: {e.problem}") from None
        except OSError as e:
            raise HttpError(422, f"{what}: cannot read {path!r}: {e.strerror or e}") from None
        with self._lock:
            self._key_paths[cache_key] = key_id
        return key_id

    def list_keys(self, req: Request):
        return {"keys": self._keys()}

    def register_key(self, req: Request):
        body = req.json()
        _fields(body, {"path": True, "wasm": False}, "register key")
        wasm = body.get("wasm")
        if wasm is not None and not isinstance(wasm, str):
            raise HttpError(400, "wasm: a path must be a non-empty string")
        key_id = self._register_path(body["path"], "path", wasm=wasm)
        return 201, self._key_by_id(key_id)

    def get_key(self, req: Request):
        return self._key_by_id(req.params["key_id"])

    def evict_key(self, req: Request):
        key_id = req.params["key_id"]
        try:
            evicted = self.engine.evict_key(key_id)
        except UnknownKey:
            raise HttpError(404, f"unknown key id {key_id!r}"[:200]) from None
        except EngineError as e:
            raise HttpError(409, str(e)) from None
        return {"key_id": key_id, "evicted": evicted}

    # ---------------------------------------------------------------- jobs
    def _job_request(self, body: dict, spec: dict) -> tuple[str, list, str, str]:
        """(key_id, witnesses as bytes or real paths, kind, priority) of a valid request; for a
        request with circuit inputs, ("inputs", list of JSON objects) in place of witnesses."""
        _fields(body, spec, "job")
        if ("witnesses" in body) == ("inputs" in body):
            raise HttpError(
                400,
                "job: give either 'witnesses' (one .wtns per partition) or "
                "'inputs' (one circuit input object per partition)",
            )
        kind = _str_field(body, "kind", "default")
        if len(kind.encode()) > MAX_KIND_BYTES or not kind.isprintable():
            raise HttpError(
                400,
                f"kind must be a printable label of 1 to {MAX_KIND_BYTES} bytes, got {kind!r}"[
                    :200
                ],
            )
        priority = body.get("priority", "normal")
        try:
            check_priority(priority)
        except ValueError as e:
            raise HttpError(400, str(e)[:200]) from None
        key = _str_field(body, "key")
        if KEY_ID.match(key):
            key_id = key
            key_info = self._key_by_id(key_id)
        else:
            key_id = self._register_path(key, "key")
            key_info = self._key_by_id(key_id)
        if "inputs" in body:
            return key_id, ("inputs", self._inputs(body["inputs"], key_info)), kind, priority
        ws = body["witnesses"]
        if not isinstance(ws, list):
            raise HttpError(400, f"witnesses must be a list, got {type(ws).__name__}")
        if not ws:
            raise HttpError(400, "witnesses: a job needs at least one witness (one per partition)")
        if len(ws) > MAX_PARTITIONS:
            raise HttpError(
                400, f"witnesses: {len(ws)} partitions, at most {MAX_PARTITIONS} per job"
            )
        return key_id, [self._witness(w, i, key_info) for i, w in enumerate(ws)], kind, priority

    @staticmethod
    def _inputs(ins, key_info: dict) -> list:
        if not isinstance(ins, list):
            raise HttpError(400, f"inputs must be a list, got {type(ins).__name__}")
        if not ins:
            raise HttpError(400, "inputs: a job needs at least one input (one per partition)")
        if len(ins) > MAX_PARTITIONS:
            raise HttpError(400, f"inputs: {len(ins)} partitions, at most {MAX_PARTITIONS} per job")
        for i, x in enumerate(ins):
            if not isinstance(x, dict):
                raise HttpError(
                    400,
                    f"inputs[{i}]: expected a JSON object of the circuit's "
                    f"input signals, got {type(x).__name__}",
                )
        if not key_info.get("wasm"):
            raise HttpError(
                400,
                f"key {key_info['key_id']} has no circuit wasm: register it "
                'with its circuit\'s wasm (POST /v1/keys with "wasm") to '
                "submit inputs",
            )
        return ins

    def _witness(self, w, i: int, key_info: dict):
        """One witness entry: {"data": base64} | {"path": str} | "path" -> bytes | real path,
        checked to be a .wtns of the key's curve's r with the key's nVars values."""
        from cuzk.formats.curve import CURVES
        from cuzk.formats.wtns import read_wtns

        what = f"witnesses[{i}]"
        if isinstance(w, str):
            w = {"path": w}
        if not isinstance(w, dict) or len(w) != 1 or next(iter(w)) not in ("data", "path"):
            raise HttpError(
                400, f'{what}: expected {{"data": BASE64}} or {{"path": PATH}} (or a path string)'
            )
        if "data" in w:
            if isinstance(w["data"], Upload):  # decoded as the body arrived (serve.body)
                if not w["data"].valid:
                    raise HttpError(400, f"{what}.data is not valid base64")
                source = w["data"].read()
            elif not isinstance(w["data"], str):
                raise HttpError(400, f"{what}.data must be a base64 string")
            else:
                try:
                    source = base64.b64decode(w["data"], validate=True)
                except (binascii.Error, ValueError):
                    raise HttpError(400, f"{what}.data is not valid base64") from None
            name = f"<{what}>"
        else:
            source = resolve_under_roots(w["path"], self.config.key_roots, what)
            name = source
        try:
            if isinstance(source, bytes):
                witness = read_wtns(name, data=source)
            else:
                witness = read_wtns(source)
            n, curve = len(witness.values), witness.curve
        except FormatError as e:
            raise HttpError(422, f"{what}: not a usable witness: {e.problem}") from None
        except OSError as e:
            raise HttpError(422, f"{what}: cannot read it: {e.strerror or e}") from None
        finally:
            witness = None  # drop the mapping before the engine opens the file
        if key_info.get("curve") and curve != key_info["curve"]:
            raise HttpError(
                422,
                f"{what}: the witness is over {CURVES[curve]}'s scalar field but key "
                f"{key_info['key_id']} is over {CURVES[key_info['curve']]}",
            )
        if n != key_info["n_vars"]:
            raise HttpError(
                422,
                f"{what}: the witness has {n} values but key "
                f"{key_info['key_id']} expects nVars = {key_info['n_vars']}",
            )
        return source

    def _submit(self, body: dict, spec: dict) -> str:
        key_id, witnesses, kind, priority = self._job_request(body, spec)
        changed = getattr(self.engine, "key_file_changed", lambda _: None)(key_id)
        if changed:  # issue 38: a key copied over in place must not be proved with
            raise HttpError(
                422, f"key {key_id}: {changed}; register it again (POST /v1/keys) to use it"
            )
        try:
            if isinstance(witnesses, tuple):  # ("inputs", [...])
                return self.engine.submit(key_id, inputs=witnesses[1], kind=kind, priority=priority)
            return self.engine.submit(key_id, witnesses, kind=kind, priority=priority)
        except EngineStopped as e:
            raise HttpError(503, f"not taking jobs: {e}", {"Retry-After": "5"}) from None
        except UnknownKey:
            raise HttpError(404, f"unknown key id {key_id!r}") from None
        except BudgetError as e:
            raise HttpError(422, f"too large for this prover: {e}") from None
        except ValueError as e:
            raise HttpError(400, str(e)) from None
        except JournalError as e:
            raise HttpError(503, f"not taking jobs: {e}", {"Retry-After": "5"}) from None

    def submit(self, req: Request):
        job_id = self._submit(req.json(), JOB_FIELDS)
        return 201, self._job(job_id)

    def _journalled(self, job_id: str) -> dict | None:
        """A finished job's recorded result from the journal (after a restart, or beyond the
        engine's in-memory history), or None."""
        return self.journal.result(job_id) if self.journal is not None else None

    def _job(self, job_id: str) -> dict:
        try:
            return self.engine.job(job_id)
        except UnknownJob:
            r = self._journalled(job_id)
            if r is not None:
                return {k: v for k, v in r.items() if k not in ("proofs", "public")}
            raise HttpError(
                404,
                f"unknown job id {job_id!r} (never submitted, or finished "
                "and dropped from the history)"[:300],
            ) from None

    def list_jobs(self, req: Request):
        """The engine's jobs and, with a journal, the finished ones that left its memory, in
        (submitted_at, job_id) order, a page of `limit` at a time: `next_cursor` names the
        position after the page (null: it was the last). The engine is read first, so a job
        that leaves it meanwhile is found in the journal (recorded before it leaves)."""
        state = req.arg("state")
        if state is not None and state not in JOB_STATES:
            raise HttpError(400, f"state must be one of {', '.join(JOB_STATES)}")
        limit = req.arg("limit", str(JOBS_PAGE))
        if not limit.isdigit() or not 1 <= int(limit) <= JOBS_PAGE_MAX:
            raise HttpError(400, f"limit must be a whole number from 1 to {JOBS_PAGE_MAX}")
        limit = int(limit)
        after = _cursor_position(req.arg("cursor"))
        held = self.engine.jobs()
        jobs = [
            j
            for j in held
            if (after is None or _position(j) > after) and (state is None or j["state"] == state)
        ]
        if self.journal is not None:
            skip = {j["job_id"] for j in held}
            jobs += self.journal.jobs_page(after, limit + 1, state, skip)
        jobs.sort(key=_position)
        more = len(jobs) > limit
        jobs = jobs[:limit]
        return {"jobs": jobs, "next_cursor": _cursor(_position(jobs[-1])) if more else None}

    def get_job(self, req: Request):
        return self._job(req.params["job_id"])

    def _wait_result(self, job_id: str, wait: float):
        try:
            r = self.engine.result(job_id, timeout=wait)
        except UnknownJob:
            r = self._journalled(job_id)
            if r is None:
                self._job(job_id)  # raises the 404
                raise
        if r is None:
            return 202, {**self._job(job_id), "finished": False}
        return 200, {**r, "finished": True}

    def get_result(self, req: Request):
        wait = _seconds(req.arg("wait", "0"), "wait", self.config.max_wait)
        return self._wait_result(req.params["job_id"], wait)

    def cancel(self, req: Request):
        job_id = req.params["job_id"]
        if req.body:
            req.json()  # a body, if any, must at least be JSON
        try:
            cancelled = self.engine.cancel(job_id)
        except UnknownJob:
            r = self._journalled(job_id)
            if r is not None:
                return {"job_id": job_id, "cancelled": False, "state": r["state"]}
            raise HttpError(404, f"unknown job id {job_id!r}"[:200]) from None
        return {"job_id": job_id, "cancelled": cancelled, "state": self._job(job_id)["state"]}

    def prove(self, req: Request):
        body = req.json()
        wait = _seconds(body.get("timeout", self.config.max_wait), "timeout", self.config.max_wait)
        job_id = self._submit(body, PROVE_FIELDS)
        return self._wait_result(job_id, wait)
