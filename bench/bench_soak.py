"""Suite `soak`: `cuzk serve` for a set time under mixed work; nothing lost, nothing leaked.

Issue #38's target 2. One daemon (`--devices cpu:1`, one synthesis process, a private state
directory, `--max-body 4MiB`, `--keep-results` a minute so the journal reaches its steady
size) serves, for the profile's time (smoke 2 min, quick 5 min, full 30 min; the environment
variable CUZK_SOAK_SECONDS overrides it):

- **jobs**: three clients in a closed loop (submit, wait for the result, a short pause)
  send Groth16 jobs of both curves (the committed `tiny` fixture on BN254, `tiny381` on
  BLS12-381, each key registered with its circuit's .wasm), 1 to 4 partitions each, the
  witnesses uploaded, sent as paths, or computed by the daemon from circuit `inputs`;
  priorities critical, high and normal; one job in ten is cancelled right after its 201, one
  in twenty goes through the one-shot `POST /v1/prove`;
- **keys**: every few seconds a key is registered (a third key, `mulchain`, comes and goes),
  registered again with its wasm, or evicted (409 while a live job uses it is an answer too);
- **bad clients**: malformed JSON (400), a body over `max_body` (413), a form body (415),
  a witness of the other curve (422), an unknown job (404), garbage for a request line (400),
  a body cut short and abandoned, and a body trickled a byte at a time (cut with 408 once
  `body_timeout` has passed);
- **crashes**: a SIGKILL of a worker process every few minutes (smoke: once, a device
  process; quick and full: every 90 s and 180 s, device and synthesis processes in turn); the
  supervisor restarts it and the partitions it held are retried.

Resources are sampled from outside the daemon with psutil (the supervisor's process tree,
every 2 to 10 s): RSS of the supervisor, of the device and of the synthesis processes; open
file descriptors and threads of the supervisor and of the whole tree; the daemon's /dev/shm
segments (its board and `cuzkbuf.<supervisor pid>.*` buffers) and the state directory's bytes
(journal, WAL, spool). Every 30 s (smoke; quick 60 s, full 120 s) comes a **quiet point**:
the clients finish the job in hand and wait until every job is over, so the daemon can be
seen idle in the middle of the run, and is sampled there.

What it asserts (the suite fails, and `make soak` exits 1, when any does not hold):

- every job answered 201 finished exactly once: done, or cancelled when it was cancelled;
  every proof it returned verifies with cuzk's verifier against the fixture's public signals
  (written by snarkjs); every listing of `GET /v1/jobs` (every 5 s, all its pages) holds a
  job at most once, every accepted job is in one, and none the clients did not submit;
  `cuzk_jobs_completed_total` equals the jobs done and `cuzk_proofs_completed_total` the
  proofs received (with the warm-up's); no partition took more than 3 attempts; no request
  answered 5xx other than 503; every bad client got its 4xx; no client went 120 s without
  finishing a job (a stall: the soak's thread stacks are printed);
- at every quiet point and at the end: no board slot busy, no job queued or running, no
  memory reserved but the keys' (and an upload still arriving), no `cuzkbuf` segment;
- **flat after warm-up**: the first half of the run is warm-up. Over the second half, each
  series' least-squares slope (samples within 20 s of a worker restart left out, and a level
  of its own for each worker incarnation) times the half's length, i.e. the growth the fit
  says, must stay within `allowance + rate x length`: RSS 24 MB + 16 MB/hour per role (the
  30-minute run: 28 MB over its last 15 minutes); descriptors and threads 4 + 8/hour;
  /dev/shm segments, sampled at the quiet points only (otherwise they count the partitions
  in flight), not one more; state directory 4 MB + 8 MB/hour. A short run cannot tell a
  slow leak from noise: the allowance is what the 2-minute run can tell (at its ~300 jobs a
  minute, a leak of ~100 KB per job);
- after SIGTERM: exit 0, no process of the tree alive (15 s for the resource trackers to
  see it gone), no /dev/shm name of the daemon left (its board, any buffer of a killed
  worker), no traceback in its log.

Latency is reported, not asserted (the machine is shared): submission to finish per priority
(p50, p99, max, from the daemon's own timestamps; the client's round trip beside them), and
`/healthz`'s answer time. The committed figures below are a quick run's (5 minutes); the
30-minute ones (`make soak`, `--profile full`) are in bench/results/soak.full.json and the
targets table (2026-12-04: 15,582 jobs, 10 SIGKILLs, nothing lost, every series within its
bound; the supervisor's RSS still rose 36 MB/hour over the second half, 9 MB against a 28 MB
allowance: a slow growth to follow over longer runs). What the soak found so far: the
supervisor's RSS grew ~3 MB a minute for 20 minutes while its debugging event log filled to
100 000 events (now 10 000), and the first proofs of both curves at once in a fresh device
process (after a SIGKILL) made every later BN254 proof of that process invalid (a race in
cuzk.arith.jit's builds, fixed; the daemon's self-verification had failed those jobs, 73 in
one 40-second run). The first 30-minute run stopped at 1620 s: after a SIGKILL the new
device process's worker and finalizer threads deadlocked on cuzk.arith.jit's one build lock
against a plain import's module lock, three jobs stuck (builds now take their own import
locks); and a plain import nested in a BLS12-381 build had given the BN254 msm module
BLS12-381's field (fixed likewise).
Run alone: ``python -m bench.bench_soak [smoke|quick|full]``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.soak_resources import BOUNDS, SERIES, flatness, percentile, sample
from bench.soak_work import (
    MAX_BODY,
    PRIORITIES,
    Circuit,
    Quiet,
    Record,
    bad_loop,
    client_loop,
    health_loop,
    key_loop,
    trickle_loop,
    watch_clients,
)
from bench.tables import fmt, table, target

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CIRCUITS = {"bn128": "tiny", "bls12381": "tiny381"}  # the two curves' fixtures
EXTRA_KEY = "mulchain"  # a third key, registered and evicted now and then

# per profile: run seconds, seconds between SIGKILLs (None: one, at 30% of the run), seconds
# between quiet points (below) and between resource samples
PROFILES = {
    "smoke": {"seconds": 120, "kill_every": None, "quiet_every": 30, "sample_every": 2.0},
    "quick": {"seconds": 300, "kill_every": 90, "quiet_every": 60, "sample_every": 3.0},
    "full": {"seconds": 1800, "kill_every": 180, "quiet_every": 120, "sample_every": 10.0},
}
PROFILES["gpu"] = PROFILES["quick"]
KEEP_RESULTS_S = 60  # --keep-results: the journal's steady state comes within the warm-up
CLIENTS = 3
LIST_EVERY = 5.0  # s between listings of GET /v1/jobs (keep_results is longer)


def settings(profile: str) -> dict:
    s = dict(PROFILES[profile])
    env = os.environ.get("CUZK_SOAK_SECONDS")
    if env:
        try:
            s["seconds"] = float(env)
        except ValueError:
            raise SystemExit(f"CUZK_SOAK_SECONDS={env!r} is not a number of seconds") from None
        if s["seconds"] < 30:
            raise SystemExit(f"CUZK_SOAK_SECONDS={env}: a soak needs at least 30 s")
    return s


# --- the daemon ------------------------------------------------------------------------------


def _key_root(work: Path) -> Path:
    """Copies of the fixtures the jobs use, under the daemon's key root."""
    root = work / "keys"
    for name in (*CIRCUITS.values(), EXTRA_KEY):
        d = root / name
        d.mkdir(parents=True)
        for f in ("circuit.zkey", "circuit.wasm", "verification_key.json"):
            shutil.copy(FIXTURES / name / f, d / f)
        for k in (0, 1):
            for f in (f"witness_{k}.wtns", f"input_{k}.json", f"public_{k}.json"):
                shutil.copy(FIXTURES / name / f, d / f)
    return root


class Daemon:
    """`cuzk serve` on a free loopback port, in its own session, logging to a file."""

    def __init__(self, work: Path, root: Path, keep_results: float):
        self.work, self.root = work, root
        self.state = work / "state"
        self.log_path = work / "serve.log"
        self.args = [
            "--listen",
            "127.0.0.1:0",
            "--devices",
            "cpu:1",
            "--synth-workers",
            "1",
            "--memory-budget",
            "2GiB",
            "--max-body",
            str(MAX_BODY),
            "--keep-results",
            str(int(keep_results)),
            "--key-root",
            str(root),
            "--state-dir",
            str(self.state),
            "--log-level",
            "info",
        ]
        self.proc: subprocess.Popen | None = None
        self.url = self.board = ""

    def start(self, timeout: float = 300) -> Daemon:
        env = dict(os.environ)
        env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
        env["CUZK_CACHE_DIR"] = str(self.work / "cache")  # compiled wasm: this run's own
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cuzk.cli", "serve", *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = self.log()
            m = re.search(r"listening on (http://\S+)", text)
            if m:
                self.url = m.group(1)
                b = re.search(r"board (\S+) \(watch", text)
                self.board = b.group(1) if b else ""
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"cuzk serve exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"cuzk serve did not start in {timeout} s:\n{self.log()[-3000:]}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def segments(self) -> list[str]:
        """The daemon's names in /dev/shm: its board (and the board's warming file) and the
        buffers named with its pid."""
        board = {self.board, f"cuzkwarming.{self.board}"} if self.board else set()
        return sorted(
            n for n in os.listdir("/dev/shm") if n.startswith(f"cuzkbuf.{self.pid}.") or n in board
        )

    def stop(self, timeout: float = 120) -> int | None:
        """SIGTERM and wait; its exit status (None: it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)


# --- the record every thread writes to -------------------------------------------------------


# --- the work --------------------------------------------------------------------------------


# --- resources, from outside ---------------------------------------------------------------


def _sampler_loop(rec: Record, d: Daemon, url: str, t0: float, quiet, stop, every: float):
    """Resources every EVERY s; every LIST_EVERY s also GET /v1/jobs, all pages: no job listed
    twice in one listing, and every job seen (a finished one is listed until keep_results
    prunes it, longer than LIST_EVERY)."""
    from cuzk.client import Client, ClientError

    client = Client(url, timeout=60)
    next_list = 0.0
    while True:
        try:
            s = sample(d, client.status(), time.time() - t0)
            with rec.lock:
                rec.samples.append(s)
            if time.time() >= next_list:
                next_list = time.time() + LIST_EVERY
                _list_jobs(rec, client)
        except (ClientError, OSError) as e:
            rec.error(f"sampling: {e}")
        watch_clients(rec, quiet)
        if stop.wait(every):
            return


def _list_jobs(rec: Record, client) -> None:
    ids = [j["job_id"] for j in client.jobs(page=500)]
    twice = {j for j in ids if ids.count(j) > 1} if len(set(ids)) != len(ids) else set()
    with rec.lock:
        rec.listings += 1
        rec.listed |= set(ids)
        rec.listed_twice |= twice


def latency_rows(rec: Record) -> list[dict]:
    rows = []
    for prio, _ in PRIORITIES:
        xs = [
            f["latency_s"]
            for f in rec.finished.values()
            if f["priority"] == prio and f["state"] == "done" and f["latency_s"] is not None
        ]
        rows.append(
            {
                "priority": prio,
                "jobs": len(xs),
                "p50_s": percentile(xs, 0.5),
                "p99_s": percentile(xs, 0.99),
                "max_s": max(xs) if xs else None,
                "round_trip_p99_s": percentile(rec.round_trips.get(prio, []), 0.99),
                "round_trip_max_s": max(rec.round_trips.get(prio, []), default=None),
            }
        )
    return rows


# --- the end ---------------------------------------------------------------------------------


def _kill_one(rec: Record, client, role: str, t: float) -> None:
    status = client.status()
    if role == "device":
        victims = [w["pid"] for w in status["gpu_workers"] if w.get("pid")]
    else:
        victims = [w["pid"] for w in status["synthesis"]["workers"] if w.get("pid")]
    if not victims:
        rec.error(f"no {role} process to kill at {t:.0f} s")
        return
    pid = victims[0]
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        rec.error(f"the {role} process {pid} was gone before its SIGKILL")
        return
    with rec.lock:
        rec.kills.append({"t_s": round(t, 1), "role": role, "pid": pid})
    print(f"  soak: {t:.0f} s: SIGKILL {role} process {pid}", flush=True)


def _metric_sum(text: str, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name == name
    )


def _idle_check(client, d: Daemon, uploads_too: bool = True) -> dict:
    """What must hold once every job has finished (uploads_too False: a body still arriving,
    the trickling client's, may hold its reservation)."""
    status = client.status()
    busy = [
        f"{role} {w.get('worker_id', w.get('finalizer_id'))}: {w['state']}"
        for role, ws in (
            ("device", status["gpu_workers"]),
            ("finalizer", status["finalizers"]),
            ("synthesis", status["synthesis"]["workers"]),
        )
        for w in ws
        if w["state"] != "idle"
    ]
    live = [p["job_id"] for p in status["pipelines"] if p["state"] in ("queued", "running")]
    ignore = {"keys"} if uploads_too else {"keys", "uploads"}
    by_use = {k: v for k, v in status["memory"]["by_use"].items() if k not in ignore and v}
    return {
        "busy_slots": busy,
        "live_jobs": live,
        "queue_depth": status["counters"]["queue_depth"],
        "reserved_besides_keys": by_use,
        "buffers_left": [n for n in d.segments() if n.startswith("cuzkbuf.")],
        "consistent": status.get("consistent"),
        "restarts": status["counters"]["restarts"],
        "retries": status["counters"]["retries"],
    }


def _wait_idle(client, d: Daemon, timeout: float, uploads_too: bool = True) -> dict:
    deadline = time.time() + timeout
    while True:
        idle = _idle_check(client, d, uploads_too)
        clean = not (
            idle["busy_slots"]
            or idle["live_jobs"]
            or idle["queue_depth"]
            or idle["reserved_besides_keys"]
            or idle["buffers_left"]
        )
        if clean or time.time() > deadline:
            return idle
        time.sleep(0.5)


def _quiet_point(rec: Record, quiet: Quiet, client, d: Daemon, t0: float) -> None:
    """Park the clients, wait for every job to finish, check the daemon idle, sample it."""
    t = time.time()
    if not quiet.pause(900):
        rec.error(f"quiet point at {t - t0:.0f} s: the clients did not park in 900 s")
    idle = _wait_idle(client, d, 60, uploads_too=False)
    s = sample(d, client.status(), time.time() - t0)
    s["quiet"] = True
    quiet.resume()
    point = {
        "t_s": round(t - t0, 1),
        "wait_s": round(time.time() - t, 2),
        "busy_slots": len(idle["busy_slots"]),
        "live_jobs": len(idle["live_jobs"]),
        "buffers": len(idle["buffers_left"]),
        "reserved": sum(idle["reserved_besides_keys"].values()),
        "supervisor_rss_mb": round(s["supervisor_rss_mb"], 1),
        "tree_fds": s["tree_fds"],
    }
    with rec.lock:
        rec.samples.append(s)
        rec.quiet.append(point)
    for k in ("busy_slots", "live_jobs", "buffers_left", "reserved_besides_keys"):
        if idle[k]:
            rec.error(f"quiet point at {t - t0:.0f} s, every job finished: {k} {idle[k]}")


def soak(seconds: float, kill_every: float | None, quiet_every: float, sample_every: float):
    """Run the soak; its report (a dict) with `failures`, the list of what did not hold."""
    import psutil

    from cuzk.client import Client

    work = Path(tempfile.mkdtemp(prefix="cuzk-soak-"))
    root = _key_root(work)
    circuits = [Circuit(root, name, curve) for curve, name in CIRCUITS.items()]
    extra = Circuit(root, EXTRA_KEY, "bn128")
    d = Daemon(work, root, KEEP_RESULTS_S).start()
    quiet = Quiet(CLIENTS)
    rec = Record()
    client = Client(d.url, timeout=120)
    threads: list[threading.Thread] = []
    stop, stop_sampling = threading.Event(), threading.Event()
    tree: set[int] = {d.pid}
    report: dict = {}
    try:
        # warm-up before the clock: keys registered with their wasm; one job of each curve
        # and each way its witnesses travel (the kernels compile here on a cold cache)
        t_warm = time.time()
        warm = Client(d.url, timeout=1800)  # a cold kernel cache compiles in these requests
        for c in circuits:
            c.key_id = warm.register_key(c.zkey, c.wasm)["key_id"]
            for body in (
                {"key": c.key_id, "witnesses": [{"data": c.data[0]}]},
                {"key": c.key_id, "inputs": [c.inputs[1]]},
            ):
                job_id = warm.request("POST", "/v1/jobs", body)[1]["job_id"]
                rec.warm_ids.add(job_id)
                r = warm.wait(job_id, timeout=1800)
                if r.get("state") != "done":
                    raise RuntimeError(f"warm-up job of {c.name} ended {r.get('state')}: {r}")
        print(
            f"  soak: daemon {d.url} (pid {d.pid}) warm in {time.time() - t_warm:.0f} s; "
            f"{seconds:.0f} s of mixed work from now",
            flush=True,
        )
        t0 = time.time()
        threads = [
            threading.Thread(
                target=_sampler_loop,
                args=(rec, d, d.url, t0, quiet, stop_sampling, sample_every),
            ),
            threading.Thread(target=health_loop, args=(rec, d.url, stop, 1.0)),
            threading.Thread(target=key_loop, args=(rec, d.url, circuits, extra, stop, 5.0)),
            threading.Thread(target=bad_loop, args=(rec, d.port, circuits, stop, 1.5)),
            threading.Thread(target=trickle_loop, args=(rec, d.port, stop)),
        ] + [
            threading.Thread(target=client_loop, args=(rec, d.url, circuits, quiet, stop, 100 + i))
            for i in range(CLIENTS)
        ]
        for th in threads:
            th.start()
        kills = (
            [0.3 * seconds]
            if kill_every is None
            else [kill_every * (i + 1) for i in range(int(seconds // kill_every))]
        )
        events = [(at, "kill", ("device", "synthesis")[i % 2]) for i, at in enumerate(kills)]
        events += [(q, "quiet", "") for q in range(quiet_every, int(seconds), quiet_every)]
        for at, what, role in sorted(events):
            left = t0 + at - time.time()
            if left > 0:
                time.sleep(left)
            if what == "kill":
                _kill_one(rec, client, role, time.time() - t0)
            else:
                _quiet_point(rec, quiet, client, d, t0)
        while time.time() < t0 + seconds:
            time.sleep(min(1.0, t0 + seconds - time.time()))
            tree |= {p.pid for p in psutil.Process(d.pid).children(recursive=True)}
        stop.set()
        t_stop = time.time()
        for th in threads[1:]:
            th.join(1000)
        drained_s = time.time() - t_stop
        idle = _wait_idle(client, d, 120)
        stop_sampling.set()
        threads[0].join(60)
        last = sample(d, client.status(), time.time() - t0)
        last["quiet"] = True  # the end is the last quiet point
        rec.samples.append(last)
        end = time.time() - t0
        _list_jobs(rec, client)
        metrics = client.metrics()
        for s in rec.samples:
            tree |= set(s["pids"])
        report = _report(rec, seconds, end, drained_s, idle, metrics)
    finally:
        stop.set()
        stop_sampling.set()
        code = d.stop()
        left = [n for n in os.listdir("/dev/shm") if _owned(n, tree, d.board)]
        t_gone = time.time() + 15  # its resource trackers exit once they see it gone
        while (alive := [p for p in tree if _alive(p)]) and time.time() < t_gone:
            time.sleep(0.2)
    report["exit_status"] = code
    report["shm_left_after_stop"] = left
    report["processes_left_after_stop"] = alive
    f = report.setdefault("failures", [])
    if code != 0:
        f.append(f"cuzk serve exited {code} after SIGTERM (0 expected)")
    if left:
        f.append(f"/dev/shm names of the daemon left after it stopped: {left}")
    if alive:
        f.append(f"processes of the daemon alive after it stopped: {alive}")
    tracebacks = d.log().count("Traceback")
    report["log_tracebacks"] = tracebacks
    if tracebacks:
        f.append(f"the daemon's log holds {tracebacks} traceback(s)")
    if f:
        f.append(f"the daemon's log and state are kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _owned(name: str, pids: set[int], board: str) -> bool:
    m = re.match(r"^cuzkbuf\.(\d+)\.", name)
    return bool(m and int(m.group(1)) in pids) or (board and board in name)


def _report(rec: Record, seconds, end, drained_s, idle, metrics) -> dict:
    fin = rec.finished
    done = [j for j, f in fin.items() if f["state"] == "done"]
    cancelled = [j for j, f in fin.items() if f["state"] == "cancelled"]
    lost = sorted(set(rec.accepted) - set(fin))
    listed_twice = sorted(rec.listed_twice)
    unknown = rec.listed - set(rec.accepted) - rec.warm_ids  # a job no client submitted
    completed = _metric_sum(metrics, "cuzk_jobs_completed_total")
    proofs = _metric_sum(metrics, "cuzk_proofs_completed_total")
    n_warm = len(rec.warm_ids)
    partitions = sum(f["proofs"] for f in fin.values())
    warm_until = seconds / 2
    rows = flatness(rec.samples, warm_until, end)
    failures = list(rec.errors)
    if lost:
        failures.append(f"{len(lost)} accepted job(s) never finished: {lost[:5]}")
    if rec.duplicates:
        failures.append(f"job ids seen twice: {rec.duplicates[:5]}")
    if rec.invalid:
        failures.append(f"{len(rec.invalid)} proof(s) do not verify: {rec.invalid[:5]}")
    if listed_twice:
        failures.append(f"GET /v1/jobs lists job(s) twice: {listed_twice[:5]}")
    missing = sorted(set(rec.accepted) - rec.listed)
    if missing:
        failures.append(f"GET /v1/jobs never listed {len(missing)} accepted job(s): {missing[:5]}")
    if unknown:
        failures.append(f"GET /v1/jobs lists {len(unknown)} job(s) no client submitted")
    if completed != len(done) + n_warm:
        failures.append(
            f"cuzk_jobs_completed_total is {completed:.0f}, the clients saw {len(done)} done "
            f"(+ {n_warm} warm-up jobs)"
        )
    if proofs != partitions + n_warm:
        failures.append(
            f"cuzk_proofs_completed_total is {proofs:.0f}, the clients got {partitions} valid "
            f"proofs (+ {n_warm} of the warm-up)"
        )
    for k in ("busy_slots", "live_jobs", "reserved_besides_keys", "buffers_left"):
        if idle[k]:
            failures.append(f"after the run, idle: {k} {idle[k]}")
    if idle["queue_depth"] or not idle["consistent"]:
        failures.append(f"after the run: queue depth {idle['queue_depth']}, {idle}")
    if not rec.kills:
        failures.append("no worker process was killed")
    elif idle["restarts"] < len(rec.kills):
        failures.append(f"{len(rec.kills)} kill(s) but {idle['restarts']} restart(s)")
    for r in rows:
        if not r["flat"]:
            failures.append(
                f"{r['series']} grew {fmt(r['growth'])} {r['unit']} over the second half "
                f"(bound {fmt(r['bound'])}): {fmt(r['warm'])} -> {fmt(r['end'])}"
            )
    if not rec.samples:
        failures.append("no resource sample")
    hs = rec.health_ms
    bad_total = sum(b["n"] for b in rec.bad_clients.values())
    return {
        "seconds": seconds,
        "run_s": end,
        "drain_s": drained_s,
        "jobs": {
            "accepted": len(rec.accepted),
            "done": len(done),
            "cancelled": len(cancelled),
            "lost": len(lost),
            "duplicates": len(rec.duplicates) + len(listed_twice),
            "refused_503": sum(rec.refused.values()),
            "partitions_proved": partitions,
            "listings": rec.listings,
            "proofs_invalid": len(rec.invalid),
            "retried_partitions": sum(sum(a > 1 for a in f["attempts"]) for f in fin.values()),
            "jobs_per_min": len(fin) / (end / 60) if end else None,
        },
        "end": {
            "busy_slots": len(idle["busy_slots"]),
            "buffers_left": len(idle["buffers_left"]),
            "restarts": idle["restarts"],
            "retries": idle["retries"],
            "kills": len(rec.kills),
            "errors": len(rec.errors),
        },
        "healthz": {
            "polls": len(hs),
            "p50_ms": percentile(hs, 0.5),
            "p99_ms": percentile(hs, 0.99),
            "max_ms": max(hs) if hs else None,
        },
        "bad_clients_total": bad_total,
        "keys": dict(rec.keys),
        "latency": latency_rows(rec),
        "resources": rows,
        "bad_clients": [
            {"client": k, "n": b["n"], "unexpected": b["unexpected"], "answers": b["statuses"]}
            for k, b in sorted(rec.bad_clients.items())
        ],
        "kills": rec.kills,
        "quiet_points": rec.quiet,
        "bounds": {f"{k}": f"{a:g} + {r:g}/hour" for k, (a, r) in BOUNDS.items()},
        "series": {
            name: [round(float(s[name]), 3) for s in rec.samples]
            for name in ("t", *SERIES, "shm_buffers", "restarts")
        },
        "failures": failures,
    }


def run(profile: str = "quick") -> dict:
    s = settings(profile)
    print(
        f"  soak: {s['seconds']:.0f} s, SIGKILL "
        + ("once" if s["kill_every"] is None else f"every {s['kill_every']} s")
        + f", samples every {s['sample_every']} s",
        flush=True,
    )
    report = soak(**s)
    j = report.get("jobs", {})
    print(
        f"  soak: {j.get('accepted')} jobs accepted, {j.get('done')} done, "
        f"{j.get('cancelled')} cancelled, {j.get('lost')} lost, {j.get('duplicates')} "
        f"duplicates, {j.get('partitions_proved')} proofs verified, "
        f"{j.get('proofs_invalid')} invalid; {len(report.get('kills', []))} kill(s)",
        flush=True,
    )
    if report.get("resources"):
        print(table(report["resources"]))
        print(table(report["latency"]))
    if report["failures"]:
        print("  soak FAILED:\n    " + "\n    ".join(report["failures"][:40]), flush=True)
        raise AssertionError(
            f"soak: {len(report['failures'])} check(s) failed: {report['failures'][0]}"
        )
    return report


# --- what the report shows -------------------------------------------------------------------


def targets(get) -> list[dict]:
    """Issue #38's target 2: nothing lost or leaked over the full run (make soak)."""
    out = []
    full = get("full")  # the report's getter falls back to another profile's run
    if full is None or full.get("seconds", 0) < PROFILES["full"]["seconds"]:
        out.append(
            target(
                "soak (full, 30 min): jobs lost, duplicated or with an invalid proof; "
                "series past their bound",
                "#38",
                0,
                "",
                None,
                note="`make soak` measures it (30 minutes)",
                suite="soak",
                profile="full",
            )
        )
    for profile in ("full", "quick"):
        r = full if profile == "full" else get()
        if r is None or (profile == "full" and r["seconds"] < PROFILES["full"]["seconds"]):
            continue
        j = r["jobs"]
        note = (
            f"{profile} profile, {fmt(r['run_s'])} s: {j['accepted']} jobs, {j['done']} done, "
            f"{j['cancelled']} cancelled, {j['partitions_proved']} proofs verified, "
            f"{len(r['kills'])} SIGKILL(s)"
        )
        out.append(
            target(
                f"soak ({profile}): jobs lost, duplicated or with an invalid proof",
                "#38",
                0,
                "",
                j["lost"] + j["duplicates"] + j["proofs_invalid"],
                note=note,
                suite="soak",
                profile=profile,
            )
        )
        grew = [x["series"] for x in r["resources"] if not x["flat"]]
        out.append(
            target(
                f"soak ({profile}): series that grew past their bound after warm-up",
                "#38",
                0,
                "",
                len(grew),
                note=", ".join(grew) or "RSS, descriptors, threads, /dev/shm, journal flat",
                suite="soak",
                profile=profile,
            )
        )
        break
    return out


def plot(name, entry, res, img) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.plots import caption

    s = res.get("series") or {}
    if not s.get("t"):
        return []
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for key in ("supervisor_rss_mb", "device_rss_mb", "synthesis_rss_mb"):
        axes[0].plot(s["t"], s[key], label=key.removesuffix("_rss_mb"))
    axes[0].set(title="RSS (MB)", xlabel="s")
    for key in ("supervisor_fds", "tree_fds", "supervisor_threads", "tree_threads"):
        axes[1].plot(s["t"], s[key], label=key)
    axes[1].set(title="descriptors, threads", xlabel="s")
    axes[2].plot(s["t"], s["state_dir_mb"], label="state dir (MB)")
    axes[2].plot(s["t"], s["shm_segments"], label="/dev/shm segments")
    axes[2].set(title="journal, /dev/shm", xlabel="s")
    for ax in axes:
        ax.axvline(res["seconds"] / 2, color="grey", ls=":", lw=1)
        for k in res.get("kills", []):
            ax.axvline(k["t_s"], color="red", ls="--", lw=0.8)
        ax.legend(fontsize=7)
    fig.suptitle(f"soak: warm-up ends at the dotted line, SIGKILLs dashed ({caption(entry)})")
    fig.tight_layout()
    path = Path(img) / f"bench-{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [("resources over the run", f"img/{path.name}")]


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--suite", "soak", "--profile", sys.argv[1] if len(sys.argv) > 1 else "quick"]))
