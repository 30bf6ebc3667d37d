"""The soak's work (bench/bench_soak.py): the clients that submit jobs and check every proof,
the key churn, the bad clients, and the record they all write to.

Every client is a thread of the soak's process talking HTTP to the daemon (cuzk.client for
the well-behaved ones, raw sockets for the bad ones); what each saw goes into one `Record`.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import threading
import time
from pathlib import Path

PRIORITIES = (("critical", 0.2), ("high", 0.3), ("normal", 0.5))
MAX_BODY = 4 << 20
ATTEMPTS_MAX = 3  # the engine's retries (docs/api.md)
THINK_S = 0.4  # a client's pause between jobs, at most
CANCEL_SHARE, ONESHOT_SHARE = 0.10, 0.05
STALL_S = 120.0  # a client without progress this long fails the soak


class Record:
    """What the soak saw, shared by its threads (one lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.accepted: dict[str, dict] = {}  # job id -> what was submitted
        self.finished: dict[str, dict] = {}  # job id -> what came back
        self.duplicates: list[str] = []  # a job id answered twice by a 201
        self.invalid: list[str] = []  # a proof that does not verify, a wrong public
        self.errors: list[str] = []  # an answer no client should get
        self.refused: dict[str, int] = {}  # 503s (a refusal the client may retry)
        self.bad_clients: dict[str, dict] = {}  # kind -> {"n", "unexpected", "statuses"}
        self.keys: dict[str, int] = {}  # action -> count
        self.kills: list[dict] = []
        self.health_ms: list[float] = []
        self.samples: list[dict] = []
        self.listed: set[str] = set()  # every job id GET /v1/jobs ever listed
        self.listed_twice: set[str] = set()  # listed twice in one listing
        self.listings = 0
        self.warm_ids: set[str] = set()  # the warm-up's jobs, before the clock
        self.quiet: list[dict] = []  # the quiet points
        self.progress: dict[int, float] = {}  # client -> when it last began or ended a job
        self.round_trips: dict[str, list[float]] = {}  # priority -> client-side seconds
        self.stalls: list[str] = []

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)
        print(f"  soak: {what}", flush=True)

    def bad(self, kind: str, status, expected) -> None:
        with self.lock:
            b = self.bad_clients.setdefault(kind, {"n": 0, "unexpected": 0, "statuses": {}})
            b["n"] += 1
            b["statuses"][str(status)] = b["statuses"].get(str(status), 0) + 1
            if status not in expected:
                b["unexpected"] += 1
                self.errors.append(f"bad client {kind}: answered {status}, expected {expected}")


class Quiet:
    """Quiet points: the clients finish the job in hand and wait, so the daemon is seen idle
    in the middle of the run (no busy slot, no buffer, nothing reserved but keys) and
    sampled there, where in-flight work does not hide a leak."""

    def __init__(self, n: int):
        self.cv = threading.Condition()
        self.n, self.parked, self.paused = n, 0, False

    def park(self, stop: threading.Event) -> None:
        """A client between two jobs: wait here while paused."""
        with self.cv:
            if not self.paused:
                return
            self.parked += 1
            self.cv.notify_all()
            while self.paused and not stop.is_set():
                self.cv.wait(0.5)
            self.parked -= 1

    def pause(self, timeout: float) -> bool:
        with self.cv:
            self.paused = True
            return self.cv.wait_for(lambda: self.parked == self.n, timeout)

    def resume(self) -> None:
        with self.cv:
            self.paused = False
            self.cv.notify_all()


class Circuit:
    """One fixture under the key root: its key, witnesses, inputs and expected publics."""

    def __init__(self, root: Path, name: str, curve: str):
        self.name, self.curve, self.dir = name, curve, root / name
        self.zkey = self.dir / "circuit.zkey"
        self.wasm = self.dir / "circuit.wasm"
        self.vk = json.loads((self.dir / "verification_key.json").read_text())
        self.witness = [self.dir / f"witness_{k}.wtns" for k in (0, 1)]
        self.data = [base64.b64encode(p.read_bytes()).decode() for p in self.witness]
        self.inputs = [json.loads((self.dir / f"input_{k}.json").read_text()) for k in (0, 1)]
        self.public = [json.loads((self.dir / f"public_{k}.json").read_text()) for k in (0, 1)]
        self.key_id = ""


def _pick(rng: random.Random, weighted) -> str:
    x, acc = rng.random(), 0.0
    for v, w in weighted:
        acc += w
        if x < acc:
            return v
    return weighted[-1][0]


def _job_body(rng: random.Random, c: Circuit) -> tuple[dict, list[int], str]:
    """(body, the input set of each partition, how the witnesses travel)."""
    sets = [rng.randrange(2) for _ in range(rng.randint(1, 4))]
    source = rng.choice(("upload", "path", "inputs"))
    body = {
        "key": c.key_id,
        "kind": f"soak-{c.curve}",
        "priority": _pick(rng, PRIORITIES),
    }
    if source == "inputs":
        body["inputs"] = [c.inputs[k] for k in sets]
    elif source == "upload":
        body["witnesses"] = [{"data": c.data[k]} for k in sets]
    else:
        body["witnesses"] = [str(c.witness[k]) for k in sets]
    return body, sets, source


def _check_result(rec: Record, job_id: str, spec: dict, r: dict) -> None:
    """Every proof the job returned verifies against its partition's public signals; the
    final state is the one its life allows."""
    from cuzk.groth16.verifier import verify

    c: Circuit = spec["circuit"]
    state = r.get("state")
    allowed = ("done", "cancelled") if spec["cancel"] else ("done",)
    if state not in allowed:
        rec.error(f"job {job_id} ({c.name}, {spec['source']}) ended {state}: {r.get('error')}")
    proofs, public = r.get("proofs") or [], r.get("public") or []
    if len(proofs) != len(spec["sets"]) or len(public) != len(spec["sets"]):
        rec.error(f"job {job_id}: {len(proofs)} proofs for {len(spec['sets'])} partitions")
        return
    n_valid = 0
    for i, (proof, pub, k) in enumerate(zip(proofs, public, spec["sets"], strict=True)):
        if proof is None:
            if state == "done":
                rec.error(f"job {job_id} done without a proof for partition {i}")
            continue
        if pub != c.public[k] or not verify(c.vk, pub, proof):
            with rec.lock:
                rec.invalid.append(f"{job_id}/{i}")
            rec.error(f"job {job_id} partition {i}: the proof does not verify")
        else:
            n_valid += 1
    for p in r.get("partitions", []):
        if p.get("attempts", 0) > ATTEMPTS_MAX:
            rec.error(f"job {job_id} partition {p['index']}: {p['attempts']} attempts")
    with rec.lock:
        if job_id in rec.finished:
            rec.duplicates.append(job_id)
        rec.finished[job_id] = {
            "state": state,
            "priority": spec["priority"],
            "latency_s": (r["finished_at"] - r["submitted_at"]) if r.get("finished_at") else None,
            "proofs": n_valid,
            "attempts": [p.get("attempts", 0) for p in r.get("partitions", [])],
        }


def client_loop(rec: Record, url: str, circuits: list, quiet: Quiet, stop, seed: int):
    from cuzk.client import ApiError, Client, ClientError

    rng = random.Random(seed)
    client = Client(url, timeout=120)
    while not stop.is_set():
        quiet.park(stop)
        if stop.is_set():
            return
        rec.progress[seed] = t_start = time.time()
        c = rng.choice(circuits)
        body, sets, source = _job_body(rng, c)
        mode = _pick(rng, (("cancel", CANCEL_SHARE), ("oneshot", ONESHOT_SHARE), ("wait", 1)))
        spec = {
            "circuit": c,
            "sets": sets,
            "source": source,
            "priority": body["priority"],
            "cancel": mode == "cancel",
        }
        try:
            if mode == "oneshot":
                _, r = client.request("POST", "/v1/prove", {**body, "timeout": 600}, timeout=660)
            else:
                _, r = client.request("POST", "/v1/jobs", body)
            job_id = r["job_id"]
            with rec.lock:
                if job_id in rec.accepted:
                    rec.duplicates.append(job_id)
                rec.accepted[job_id] = spec
            if mode == "cancel":
                time.sleep(rng.random() * 0.05)
                client.cancel(job_id)
            if not r.get("finished"):
                r = client.wait(job_id, timeout=900)
            if not r.get("finished"):
                rec.error(f"job {job_id} not finished 900 s after its submission")
                continue
            _check_result(rec, job_id, spec, r)
            with rec.lock:
                rec.round_trips.setdefault(spec["priority"], []).append(time.time() - t_start)
        except ApiError as e:
            if e.status == 503:
                with rec.lock:
                    rec.refused[mode] = rec.refused.get(mode, 0) + 1
            else:
                rec.error(f"{mode} job ({c.name}, {source}): {e}")
        except ClientError as e:
            rec.error(f"{mode} job ({c.name}, {source}): {e}")
        rec.progress[seed] = time.time()
        stop.wait(rng.random() * THINK_S)


def key_loop(rec: Record, url: str, circuits: list, extra: Circuit, stop, every: float):
    """Registrations and evictions: the third key comes and goes, the two curves' keys are
    registered again with their wasm and evicted while jobs use them."""
    from cuzk.client import ApiError, Client, ClientError

    client = Client(url, timeout=120)
    rng = random.Random(7)
    i = 0
    while not stop.wait(every):
        i += 1
        action = ("register", "evict", "reregister", "evict_live")[i % 4]
        try:
            if action == "register":
                k = client.register_key(extra.zkey, extra.wasm)
                extra.key_id = k["key_id"]
            elif action == "evict":
                if extra.key_id:
                    client.evict_key(extra.key_id)
            elif action == "reregister":
                c = rng.choice(circuits)
                if client.register_key(c.zkey, c.wasm)["key_id"] != c.key_id:
                    rec.error(f"{c.name}: registered again under another key id")
            else:
                c = rng.choice(circuits)
                try:
                    client.evict_key(c.key_id)
                except ApiError as e:
                    if e.status != 409:
                        raise
                    action = "evict_409"
            with rec.lock:
                rec.keys[action] = rec.keys.get(action, 0) + 1
        except ClientError as e:
            rec.error(f"key {action}: {e}")


def _raw(port: int, data: bytes, *, timeout: float = 15, close_after_send=False) -> int | None:
    """Send DATA on a fresh connection; the status of the answer (None: none came)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        if close_after_send:
            return None
        buf = b""
        try:
            while b"\r\n" not in buf:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    parts = buf.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def _post_head(port: int, path: str, length: int, ctype="application/json") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


def bad_loop(rec: Record, port: int, circuits: list, stop, every: float):
    """One bad client every EVERY seconds, in turn."""
    a, b = circuits[0], circuits[-1]
    wrong = json.dumps({"key": a.key_id, "witnesses": [str(b.witness[0])]}).encode()
    kinds = [
        ("malformed_json", _post_head(port, "/v1/jobs", 13) + b'{"key": [1, }', (400,)),
        ("oversize", _post_head(port, "/v1/jobs", MAX_BODY + 1), (413,)),
        (
            "form_body",
            _post_head(port, "/v1/jobs", 7, "application/x-www-form-urlencoded") + b"key=abc",
            (415,),
        ),
        ("other_curve_witness", _post_head(port, "/v1/jobs", len(wrong)) + wrong, (422,)),
        (
            "unknown_job",
            f"GET /v1/jobs/00000000deadbeef HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Connection: close\r\n\r\n".encode(),
            (404,),
        ),
        ("garbage_request_line", b"\x16\x03\x01 hello there\r\n\r\n", (400,)),
        ("cut_short", _post_head(port, "/v1/jobs", 5000) + b'{"key": "', None),
    ]
    i = 0
    while not stop.wait(every):
        kind, data, expected = kinds[i % len(kinds)]
        i += 1
        try:
            status = _raw(port, data, close_after_send=expected is None)
        except OSError as e:
            status = f"{type(e).__name__}"
        rec.bad(kind, status, expected or (None,))


def trickle_loop(rec: Record, port: int, stop):
    """A body of a job a byte every 0.5 s: the daemon cuts it with 408 once body_timeout
    (20 s) has passed and it has fallen below body_min_rate; then the next one."""
    body = b'{"key": "' + b"0" * 4000 + b'"}'
    while not stop.is_set():
        status = None
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(_post_head(port, "/v1/jobs", len(body)))
                t_end = time.time() + 90
                for byte in body:
                    if stop.is_set() or time.time() > t_end:
                        break
                    try:
                        s.sendall(bytes([byte]))
                    except (BrokenPipeError, ConnectionResetError):
                        break
                    s.settimeout(0.5)
                    try:
                        got = s.recv(4096)
                    except TimeoutError:
                        continue
                    if got:
                        parts = got.split(b" ", 2)
                        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else got
                    break
        except OSError as e:
            status = type(e).__name__
        if status is None and stop.is_set():
            return  # the run ended while it trickled
        rec.bad("trickle", status, (408,))


def health_loop(rec: Record, url: str, stop, every: float):
    from cuzk.client import Client, ClientError

    client = Client(url, timeout=30)
    while not stop.wait(every):
        t0 = time.perf_counter()
        try:
            h = client.health()
            if h.get("status") != "ok":
                rec.error(f"/healthz: {h}")
        except ClientError as e:
            rec.error(f"/healthz: {e}")
            continue
        with rec.lock:
            rec.health_ms.append((time.perf_counter() - t0) * 1000)


def watch_clients(rec: Record, quiet: Quiet) -> None:
    """A client with a job in hand for STALL_S (tiny jobs take well under a second) is a
    stall: recorded, failed, and the stacks of this process printed once to show where."""
    import faulthandler

    now = time.time()
    for client, t in list(rec.progress.items()):
        if now - t > STALL_S and not quiet.paused and f"client {client}" not in rec.stalls:
            rec.stalls.append(f"client {client}")
            rec.error(f"client {client}: no progress for {now - t:.0f} s (stacks below)")
            faulthandler.dump_traceback(all_threads=True)
