"""`cuzk serve` over real HTTP on loopback: a real daemon process on CPU devices.

The job life cycle (submit, state, result with waiting, cancel, one-shot prove), keys, status
and metrics; every kind of bad request answered 4xx with a JSON reason while the daemon stays
up; path escapes out of the key root (`..`, symlinks, absolute, relative); bearer tokens;
the connection cap; the client commands (submit --wait writes proof-<i>.json/public-<i>.json
and exits 1 when a partition fails); SIGTERM while busy → exit 0 and no segment left.
Proofs are checked with the project's verifier against the fixtures' public signals (which
snarkjs made), and a few with snarkjs itself.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import time

import pytest
from cluster_harness import farm as start_farm
from conftest import fixture_circuit
from prometheus_client.parser import text_string_to_metric_families
from serve_harness import (
    cli_env,
    raw_exchange,
    request,
    run_cli,
    serve_daemon,
    serving,
    split_response,
    warm_kernels,
)
from waiting import wait_for

from cuzk.groth16.verifier import verify

TINY, MULCHAIN, TOYHASH, BITS = (
    fixture_circuit(n) for n in ("tiny", "mulchain", "toyhash", "bits")
)


def b64(path) -> str:
    return base64.b64encode(open(path, "rb").read()).decode()


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """A key root holding copies of the fixtures, a symlink leading out, and an outside dir."""
    base = tmp_path_factory.mktemp("serve")
    root, outside = base / "keys", base / "outside"
    root.mkdir()
    outside.mkdir()
    for c in (TINY, MULCHAIN, TOYHASH, BITS):
        d = root / c.name
        d.mkdir()
        for f in ("circuit.zkey", "witness_0.wtns", "witness_1.wtns", "bad_witness.wtns"):
            shutil.copy(c.dir / f, d / f)
    shutil.copy(TINY.zkey, outside / "secret.zkey")
    shutil.copy(TINY.witness(0), outside / "secret.wtns")
    (root / "link_out.zkey").symlink_to(outside / "secret.zkey")
    (root / "link_dir").symlink_to(outside, target_is_directory=True)
    (root / "tiny" / "link_in.wtns").symlink_to(root / "tiny" / "witness_0.wtns")
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module")
def farm():
    """Two prover nodes on a Ray cluster on this machine, for the gateway runs."""
    yield from start_farm(2)


@pytest.fixture(scope="module", params=["local", "gateway"])
def server(request, roots):
    """The daemon every API test talks to: one machine (`local`), or the gateway of a farm
    of two prover nodes (`cuzk serve --ray`, the same flags, which each node uses)."""
    warm_kernels(TINY, TOYHASH)
    farm = ["--ray", request.getfixturevalue("farm").address] if request.param == "gateway" else []
    s = serve_daemon(
        roots["base"] / f"serve-{request.param}.log",
        roots["root"],
        *farm,
        "--max-body",
        "1MiB",
        "--self-verify",
        "--log-level",
        "info",
        devices="cpu:2",
    ).start()
    s.machines = 1
    if farm:
        s.machines = 2
        wait_for(lambda: get(s, "/healthz")[2].get("nodes_alive") == 2, 180)
    yield from serving(s)


def url_of(server):
    return server.url


def post(server, path, body, **kw):
    return request(server.url, "POST", path, body, **kw)


def get(server, path, **kw):
    return request(server.url, "GET", path, **kw)


def job_body(roots, circuit, sets=(0,), *, upload=True, **extra):
    d = roots["root"] / circuit.name
    ws = [
        {"data": b64(d / f"witness_{k}.wtns")} if upload else {"path": str(d / f"witness_{k}.wtns")}
        for k in sets
    ]
    return {"key": str(d / "circuit.zkey"), "witnesses": ws, **extra}


def expected_public(circuit, k):
    return json.loads(circuit.public(k).read_text())


def check_proofs(circuit, result, sets):
    vk = json.loads(circuit.vk.read_text())
    assert result["state"] == "done", result
    assert len(result["proofs"]) == len(sets)
    for proof, public, k in zip(result["proofs"], result["public"], sets, strict=True):
        assert public == expected_public(circuit, k)
        assert verify(vk, public, proof)


# ------------------------------------------------------------------------------ life cycle
@pytest.mark.slow
def test_job_life_cycle(server, roots):
    code, _, h = get(server, "/healthz")
    assert code == 200 and h["status"] == "ok"
    code, _, job = post(
        server,
        "/v1/jobs",
        job_body(roots, MULCHAIN, (0, 1, 0), kind="window-post", priority="high"),
    )
    assert code == 201, job
    assert job["state"] in ("queued", "running") and job["total_partitions"] == 3
    assert job["kind"] == "window-post" and job["priority"] == "high"
    job_id = job["job_id"]
    code, _, r = get(server, f"/v1/jobs/{job_id}/result?wait=300")
    assert code == 200 and r["finished"], r
    check_proofs(MULCHAIN, r, (0, 1, 0))
    assert [p["index"] for p in r["partitions"]] == [0, 1, 2]
    assert all(p["state"] == "done" and p["attempts"] == 1 for p in r["partitions"])
    # the same witness twice gives two different (blinded) proofs
    assert r["proofs"][0]["pi_a"] != r["proofs"][2]["pi_a"]
    code, _, detail = get(server, f"/v1/jobs/{job_id}")
    assert code == 200 and detail["state"] == "done" and detail["partitions_done"] == 3
    # a finished job cannot be cancelled
    code, _, c = post(server, f"/v1/jobs/{job_id}/cancel", None)
    assert code == 200 and c == {"job_id": job_id, "cancelled": False, "state": "done"}
    code, _, listing = get(server, "/v1/jobs?state=done")
    assert job_id in [j["job_id"] for j in listing["jobs"]]
    # the board shows it: GET /status is the snapshot JSON
    code, _, snap = get(server, "/status")
    assert code == 200
    pipe = [p for p in snap["pipelines"] if p["job_id"] == job_id]
    assert pipe and pipe[0]["state"] == "done" and pipe[0]["partitions_done"] == 3
    assert snap["counters"]["completed_by_kind"]["window-post"] >= 1
    assert len(snap["gpu_workers"]) == 4 * server.machines and {
        w["device"] for w in snap["gpu_workers"]
    } == {
        "cpu:0",
        "cpu:1",
    }


@pytest.mark.slow
def test_every_proof_verifies_with_snarkjs(server, roots, tools, tmp_path):
    """Real circuits end to end (on both nodes of the farm for the gateway): snarkjs accepts
    every proof. BITS is used by no other test, so its key is resident nowhere yet and the
    gateway spreads its partitions by load."""
    from interop import groth16_verify

    sets = (0, 1) * 4
    code, _, r = post(server, "/v1/prove", job_body(roots, BITS, sets))
    assert code == 200, r
    check_proofs(BITS, r, sets)
    if server.machines > 1:
        assert len({p["node"] for p in r["partitions"]}) == server.machines, r["partitions"]
    for i, (proof, public) in enumerate(zip(r["proofs"], r["public"], strict=True)):
        (tmp_path / f"proof_{i}.json").write_text(json.dumps(proof))
        (tmp_path / f"public_{i}.json").write_text(json.dumps(public))
        assert groth16_verify(BITS.vk, tmp_path / f"public_{i}.json", tmp_path / f"proof_{i}.json")


def test_result_not_ready_then_cancel(server, roots):
    # toyhash (2^10) takes long enough per partition that 12 partitions are still running
    code, _, job = post(server, "/v1/jobs", job_body(roots, TOYHASH, (0, 1) * 6, upload=False))
    assert code == 201, job
    code, _, r = get(server, f"/v1/jobs/{job['job_id']}/result?wait=0")
    assert code == 202 and r["finished"] is False and r["state"] in ("queued", "running")
    assert "proofs" not in r
    code, _, c = post(server, f"/v1/jobs/{job['job_id']}/cancel", None)
    assert code == 200 and c["cancelled"] is True and c["state"] == "cancelled"
    code, _, r = get(server, f"/v1/jobs/{job['job_id']}/result?wait=30")
    assert code == 200 and r["state"] == "cancelled" and r["finished"]
    # its buffers and reservations are released once running stages reach a boundary
    t_end = time.time() + 30
    while time.time() < t_end:
        snap = get(server, "/status")[2]
        if set(snap["memory"]["by_use"]) <= {"keys"}:
            break
        time.sleep(0.1)
    assert set(snap["memory"]["by_use"]) <= {"keys"}, snap["memory"]


def test_one_shot_prove_with_paths_and_key_id(server, roots):
    code, _, key = post(server, "/v1/keys", {"path": str(roots["root"] / "tiny" / "circuit.zkey")})
    assert code == 201 and key["n_vars"] == 4, key
    body = {
        "key": key["key_id"],
        "witnesses": [
            str(roots["root"] / "tiny" / "witness_1.wtns"),  # a path string
            {"path": str(roots["root"] / "tiny" / "link_in.wtns")},  # a symlink inside the root
            {"data": b64(TINY.witness(0))},
        ],
        "kind": "winning-post",
        "priority": "critical",
        "timeout": 300,
    }
    code, _, r = post(server, "/v1/prove", body)
    assert code == 200 and r["finished"], r
    check_proofs(TINY, r, (1, 0, 0))
    code, _, keys = get(server, "/v1/keys")
    assert key["key_id"] in [k["key_id"] for k in keys["keys"]]
    code, _, k = get(server, f"/v1/keys/{key['key_id']}")
    assert code == 200 and k["path"] == str(roots["root"] / "tiny" / "circuit.zkey")
    assert (k["curve"], k["protocol"]) == ("bn128", "groth16")
    code, _, ev = post(server, f"/v1/keys/{key['key_id']}/evict", None)
    assert code == 200 and ev == {"key_id": key["key_id"], "evicted": True}
    assert post(server, "/v1/keys/0123456789abcdef/evict", None)[0] == 404


def test_metrics(server, roots):
    before = _metric(server, "cuzk_jobs_completed_total", kind="snap-update")
    proofs_before = _metric(server, "cuzk_proofs_completed_total", kind="snap-update")
    for _ in range(2):
        code, _, r = post(server, "/v1/prove", job_body(roots, TINY, (0, 1), kind="snap-update"))
        assert code == 200 and r["state"] == "done"
    assert _metric(server, "cuzk_jobs_completed_total", kind="snap-update") == before + 2
    # two jobs of two partitions each: four proofs
    assert _metric(server, "cuzk_proofs_completed_total", kind="snap-update") == proofs_before + 4
    assert _metric(server, "cuzk_job_duration_seconds_count", kind="snap-update") == before + 2
    assert _metric(server, "cuzk_memory_total_bytes") == server.machines * 1024**3
    assert _metric(server, "cuzk_workers", role="device") == server.machines * 4
    assert _metric(server, "cuzk_workers_busy", role="device") is not None
    assert _metric(server, "cuzk_queue_depth") is not None
    assert _metric(server, "cuzk_process_restarts_total") == 0
    assert _metric(server, "cuzk_stale_ends_ignored_total") is not None
    code, headers, _ = get(server, "/metrics")
    assert headers["content-type"].startswith("text/plain")


def _metric(server, name, **labels):
    code, _, text = get(server, "/metrics")
    assert code == 200
    found = [
        s.value
        for fam in text_string_to_metric_families(text.decode())
        for s in fam.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    if found:  # a farm has one series per node: their sum
        return sum(found)
    return 0.0 if name.endswith(("_total", "_count")) else None


# ------------------------------------------------------------------------------ bad requests
def bad_requests(roots):
    """(description, method, path, body or raw bytes, headers, expected status, reason part)."""
    r = roots["root"]
    tiny_key = str(r / "tiny" / "circuit.zkey")
    ok_w = {"data": b64(TINY.witness(0))}
    truncated = open(TINY.witness(0), "rb").read()[:40]

    def job(**over):
        body = {"key": tiny_key, "witnesses": [ok_w]}
        body.update(over)
        return {k: v for k, v in body.items() if v is not ...}

    js = {"Content-Type": "application/json"}
    return [
        ("malformed JSON", "POST", "/v1/jobs", b'{"key": ', js, 400, "malformed JSON"),
        ("JSON not an object", "POST", "/v1/jobs", b"[1, 2]", js, 400, "JSON object"),
        ("empty body", "POST", "/v1/jobs", b"", js, 400, "empty body"),
        (
            "form content type",
            "POST",
            "/v1/jobs",
            b"key=x",
            {"Content-Type": "application/x-www-form-urlencoded"},
            415,
            "Content-Type",
        ),
        ("unknown field", "POST", "/v1/jobs", job(partitions=3), None, 400, "'partitions'"),
        ("missing key", "POST", "/v1/jobs", job(key=...), None, 400, "'key'"),
        ("missing witnesses", "POST", "/v1/jobs", job(witnesses=...), None, 400, "'witnesses'"),
        (
            "witnesses not a list",
            "POST",
            "/v1/jobs",
            job(witnesses={"data": "x"}),
            None,
            400,
            "must be a list",
        ),
        ("no witnesses", "POST", "/v1/jobs", job(witnesses=[]), None, 400, "at least one"),
        (
            "witness of the wrong shape",
            "POST",
            "/v1/jobs",
            job(witnesses=[{"data": "AA==", "path": "/x"}]),
            None,
            400,
            "witnesses[0]",
        ),
        (
            "witness data not a string",
            "POST",
            "/v1/jobs",
            job(witnesses=[{"data": 5}]),
            None,
            400,
            "base64 string",
        ),
        (
            "witness not base64",
            "POST",
            "/v1/jobs",
            job(witnesses=[ok_w, {"data": "@@@"}]),
            None,
            400,
            "witnesses[1].data is not valid base64",
        ),
        (
            "witness not a .wtns",
            "POST",
            "/v1/jobs",
            job(witnesses=[{"data": base64.b64encode(b"hello world, not a witness").decode()}]),
            None,
            422,
            "not a usable witness",
        ),
        (
            "truncated witness",
            "POST",
            "/v1/jobs",
            job(witnesses=[{"data": base64.b64encode(truncated).decode()}]),
            None,
            422,
            "not a usable witness",
        ),
        (
            "witness count wrong for the key",
            "POST",
            "/v1/jobs",
            job(witnesses=[ok_w, {"data": b64(MULCHAIN.witness(0))}]),
            None,
            422,
            "witnesses[1]: the witness has",
        ),
        (
            "key is not a zkey",
            "POST",
            "/v1/jobs",
            job(key=str(r / "tiny" / "witness_0.wtns")),
            None,
            422,
            "not a usable proving key",
        ),
        (
            "unknown key id",
            "POST",
            "/v1/jobs",
            job(key="00112233aabbccdd"),
            None,
            404,
            "unknown key id",
        ),
        ("key not a string", "POST", "/v1/jobs", job(key=7), None, 400, "'key'"),
        ("bad priority", "POST", "/v1/jobs", job(priority="urgent"), None, 400, "priority"),
        ("kind too long", "POST", "/v1/jobs", job(kind="k" * 40), None, 400, "kind"),
        ("kind not a string", "POST", "/v1/jobs", job(kind=["a"]), None, 400, "'kind'"),
        (
            "prove timeout not a number",
            "POST",
            "/v1/prove",
            job(timeout="soon"),
            None,
            400,
            "timeout",
        ),
        (
            "register: unknown field",
            "POST",
            "/v1/keys",
            {"path": tiny_key, "x": 1},
            None,
            400,
            "'x'",
        ),
        ("unknown job", "GET", "/v1/jobs/ffffffffffffffff", None, None, 404, "unknown job"),
        (
            "unknown job result",
            "GET",
            "/v1/jobs/nope/result?wait=0",
            None,
            None,
            404,
            "unknown job",
        ),
        ("cancel unknown job", "POST", "/v1/jobs/nope/cancel", None, None, 404, "unknown job"),
        ("bad wait", "GET", "/v1/jobs/nope/result?wait=abc", None, None, 400, "wait"),
        ("negative wait", "GET", "/v1/jobs/nope/result?wait=-1", None, None, 400, "wait"),
        ("bad state filter", "GET", "/v1/jobs?state=lost", None, None, 400, "state"),
        ("unknown key", "GET", "/v1/keys/nope", None, None, 404, "unknown key"),
        ("unknown route", "GET", "/v2/everything", None, None, 404, "no such resource"),
        ("wrong method", "DELETE", "/v1/jobs", None, None, 405, "not allowed"),
        ("wrong method on status", "POST", "/status", {}, None, 405, "not allowed"),
        (
            "web asset outside the folder",
            "GET",
            "/ui/..%2F..%2Fsetup.cfg",
            None,
            None,
            404,
            "no such file",
        ),
    ]


def test_every_bad_request_is_4xx_json_and_harmless(server, roots):
    for desc, method, path, body, headers, status, reason in bad_requests(roots):
        if isinstance(body, (bytes, type(None))):
            code, h, out = request(server.url, method, path, raw=body, headers=headers)
        else:
            code, h, out = request(server.url, method, path, body, headers=headers)
        assert code == status, (desc, code, out)
        assert h["content-type"] == "application/json", desc
        assert isinstance(out, dict) and reason in out["error"], (desc, out)
    code, h, out = request(server.url, "DELETE", "/v1/jobs")
    assert h["allow"] == "GET, POST"
    # still up, still proving
    assert get(server, "/healthz")[0] == 200
    code, _, r = post(server, "/v1/prove", job_body(roots, TINY, (1,)))
    assert code == 200
    check_proofs(TINY, r, (1,))
    assert "Traceback" not in server.log()


def test_malformed_http_is_answered_and_harmless(server, roots):
    # a request line that is not HTTP
    status, out = split_response(raw_exchange(server.url, b"GARBAGE\r\n\r\n"))
    assert status == 400 and "Bad request" in out["error"]
    status, out = split_response(raw_exchange(server.url, b"GET / HTTP/9.9 extra\r\n\r\n"))
    assert status == 400 and "error" in out
    status, out = split_response(raw_exchange(server.url, b"BREW /pot HTTP/1.1\r\n\r\n"))
    assert status == 501 and "BREW" in out["error"]
    # POST without Content-Length: an empty body (RFC 9112), which a job submission lacks
    status, out = split_response(
        raw_exchange(
            server.url,
            b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
            b"application/json\r\nConnection: close\r\n\r\n",
        )
    )
    assert status == 400 and "error" in out, out
    # chunked upload
    status, out = split_response(
        raw_exchange(
            server.url,
            b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked"
            b"\r\nContent-Type: application/json\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        )
    )
    assert status == 411, out
    # a body that ends early (Content-Length larger than what is sent), then the client leaves
    with socket.create_connection(server.hostport, timeout=5) as s:
        s.sendall(
            b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b'\r\nContent-Length: 1000\r\n\r\n{"key":'
        )
    # a body over the limit is refused from its Content-Length, before it is sent
    status, out = split_response(
        raw_exchange(
            server.url,
            b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
            b"application/json\r\nContent-Length: 2000000\r\n\r\n",
        )
    )
    assert status == 413 and "exceeds the limit" in out["error"], out
    # a huge header line
    status, out = split_response(
        raw_exchange(server.url, b"GET /status HTTP/1.1\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
    )
    assert status in (400, 431), out
    # DNS rebinding: a Host name that is not loopback, on a daemon without a token
    code, _, out = get(server, "/status", headers={"Host": "evil.example:9820"})
    assert code == 403 and "loopback" in out["error"]
    # a stalled client does not block others
    with socket.create_connection(server.hostport, timeout=5) as s:
        s.sendall(b"GET /status HTTP/1.1\r\n")  # and nothing more
        assert get(server, "/healthz")[0] == 200
    assert get(server, "/healthz")[0] == 200


def test_path_escapes_are_refused(server, roots):
    r, out = roots["root"], roots["outside"]
    cases = [
        (str(r / ".." / "outside" / "secret.zkey"), 403, "outside the key roots"),
        (str(r / "tiny" / ".." / ".." / "outside" / "secret.zkey"), 403, "outside"),
        (str(r / "link_out.zkey"), 403, "outside"),  # a symlink leading out
        (str(r / "link_dir" / "secret.zkey"), 403, "outside"),  # a symlinked directory
        (str(out / "secret.zkey"), 403, "outside"),
        ("/etc/passwd", 403, "outside"),
        ("tiny/circuit.zkey", 400, "not an absolute path"),
        (str(r / "tiny" / "nothing.zkey"), 404, "no such file"),
        (str(r / "tiny"), 404, "no such file"),  # a directory
        (str(r) + "\x00x", 400, "NUL"),
    ]
    for path, status, reason in cases:
        code, _, body = post(server, "/v1/keys", {"path": path})
        assert code == status and reason in body["error"], (path, body)
        wbody = {"key": str(r / "tiny" / "circuit.zkey"), "witnesses": [{"path": path}]}
        code, _, body = post(server, "/v1/jobs", wbody)
        assert code == status and reason in body["error"], (path, body)
    # the answer for a missing file outside the roots is the same as for an existing one
    code, _, body = post(server, "/v1/keys", {"path": str(out / "absent.zkey")})
    assert code == 403
    # a sibling directory whose name starts with the root's name is outside too
    sibling = roots["base"] / (r.name + "-evil")
    sibling.mkdir(exist_ok=True)
    shutil.copy(TINY.zkey, sibling / "k.zkey")
    code, _, body = post(server, "/v1/keys", {"path": str(sibling / "k.zkey")})
    assert code == 403, body


# ------------------------------------------------------------------------------ the CLI
def test_cli_submit_wait_writes_proofs(server, roots, tmp_path):
    d = roots["root"] / "tiny"
    p = run_cli(
        "submit",
        "--server",
        server.url,
        "--kind",
        "porep-c2",
        "--priority",
        "high",
        "--wait",
        "--out",
        tmp_path / "out",
        d / "circuit.zkey",
        TINY.witness(0),
        TINY.witness(1),
        TINY.witness(0),
    )
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == [
        f"{w}-{i}.json" for w in ("proof", "public") for i in range(3)
    ]
    vk = json.loads(TINY.vk.read_text())
    for i, k in enumerate((0, 1, 0)):
        public = json.loads((out / f"public-{i}.json").read_text())
        assert public == expected_public(TINY, k)
        assert verify(vk, public, json.loads((out / f"proof-{i}.json").read_text()))
    # without --wait: the job id; then jobs lists it and cancel says it had finished
    p = run_cli(
        "submit", "--server", server.url, "--paths", d / "circuit.zkey", d / "witness_1.wtns"
    )
    assert p.returncode == 0, p.stderr
    job_id = p.stdout.strip()
    assert get(server, f"/v1/jobs/{job_id}/result?wait=300")[2]["state"] == "done"
    p = run_cli("jobs", "--server", server.url)
    assert p.returncode == 0 and job_id in p.stdout
    p = run_cli("jobs", "--server", server.url, "--json")
    assert job_id in [j["job_id"] for j in json.loads(p.stdout)]
    p = run_cli("cancel", "--server", server.url, job_id)
    assert p.returncode == 1 and "already finished" in p.stderr
    p = run_cli("cancel", "--server", server.url, "ffffffffffffffff")
    assert p.returncode == 2 and "unknown job" in p.stderr


def test_cli_submit_exits_nonzero_when_a_partition_fails(server, roots, tmp_path):
    # bad_witness.wtns breaks a constraint: self-verification fails it after its retries
    d = roots["root"] / "tiny"
    p = run_cli(
        "submit",
        "--server",
        server.url,
        "--wait",
        "--out",
        tmp_path,
        d / "circuit.zkey",
        TINY.witness(0),
        TINY.bad_witness,
    )
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "partition 1: failed" in p.stderr
    assert not (tmp_path / "proof-1.json").exists()
    # a refused request: exit 2 with the server's reason
    p = run_cli("submit", "--server", server.url, d / "circuit.zkey", MULCHAIN.witness(0))
    assert p.returncode == 2 and "nVars" in p.stderr
    # no server there: exit 3
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    p = run_cli("jobs", "--server", f"http://127.0.0.1:{free}")
    assert p.returncode == 3 and "cannot reach" in p.stderr


def test_openapi_is_served(server):
    code, h, body = get(server, "/openapi.yaml")
    assert code == 200 and h["content-type"] == "application/yaml"
    assert body.startswith(b"openapi: 3") and b"/v1/jobs/{job_id}/result:" in body
    yaml = pytest.importorskip("yaml")  # PyYAML comes with ray (the test extra)
    spec = yaml.safe_load(body)  # valid YAML: a flow mapping once hid an unquoted {job_id}
    assert "/healthz" in spec["paths"] and "/v1/prove" in spec["paths"]


def test_cli_status(server):
    p = run_cli("status", "--server", server.url, "--json")
    assert p.returncode == 0, p.stderr
    snap = json.loads(p.stdout)
    assert snap["board"] == server.board and snap["supervisor_pid"] == server.pid
    p = run_cli("status", "--server", server.url, "--width", "100", "--height", "30")
    assert p.returncode == 0, p.stderr
    assert "cuzk top" in p.stdout and server.board in p.stdout and "cpu:1" in p.stdout


# ------------------------------------------------------------------------------ tokens, caps
@pytest.mark.slow
def test_token_required_and_checked(roots, tmp_path):
    warm_kernels(TINY)
    token = "0123456789abcdef0123456789abcdef"
    tf = tmp_path / "token"
    tf.write_text(token + "\n")
    tf.chmod(0o600)
    s = serve_daemon(
        tmp_path / "serve.log",
        roots["root"],
        "--token-file",
        tf,
        "--max-connections",
        "4",
        listen="0.0.0.0:0",
    ).start()
    try:
        port = s.hostport[1]
        url = f"http://127.0.0.1:{port}"
        code, h, out = request(url, "GET", "/status")
        assert code == 401 and h["www-authenticate"].startswith("Bearer")
        assert "bearer token" in out["error"]
        for bad in ("Bearer wrong", f"Basic {token}", f"Bearer {token}x", "Bearer"):
            code, _, out = request(url, "GET", "/v1/jobs", headers={"Authorization": bad})
            assert code == 401, bad
        code, _, out = request(url, "POST", "/v1/jobs", {"key": "x", "witnesses": []})
        assert code == 401  # refused before the body is even looked at
        auth = {"Authorization": f"Bearer {token}"}
        assert request(url, "GET", "/status", headers=auth)[0] == 200
        assert request(url, "GET", "/healthz")[0] == 200  # health needs no token
        # with a token, any Host name is fine (the token is the defence)
        assert request(url, "GET", "/healthz", headers={"Host": "prover7:9820"})[0] == 200
        body = job_body(roots, TINY, (0, 1))
        code, _, r = request(url, "POST", "/v1/prove", body, headers=auth)
        assert code == 200
        check_proofs(TINY, r, (0, 1))
        # the client commands take --token-file (or CUZK_TOKEN_FILE)
        p = run_cli("jobs", "--server", url)
        assert p.returncode == 2 and "401" in p.stderr
        p = run_cli("jobs", "--server", url, env=cli_env(CUZK_TOKEN_FILE=str(tf)))
        assert p.returncode == 0 and r["job_id"] in p.stdout
        # the connection cap: four connections that never speak fill it; a fifth is served,
        # the one that waited longest closed to make room (issue 29)
        ask = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
        time.sleep(0.3)
        try:
            status, out = split_response(raw_exchange(url, ask))
            assert status == 200, out
            try:
                assert socks[0].recv(1) == b""
            except ConnectionResetError:
                pass
            # four connections busy with a request (bodies still arriving) are never closed
            # for another: the fifth gets 503 at once
            for sk in socks:
                sk.close()
            socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
            for sk in socks:
                sk.sendall(
                    b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                    + token.encode()
                    + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
            time.sleep(0.3)
            status, out = split_response(raw_exchange(url, ask))
            assert status == 503 and "too many connections" in out["error"]
        finally:
            for sk in socks:
                sk.close()
        t_end = time.time() + 10
        while time.time() < t_end:
            try:
                if request(url, "GET", "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        assert request(url, "GET", "/healthz")[0] == 200
        assert s.stop() == 0, s.log()
        assert s.leftover_segments() == []
    finally:
        s.kill()


def test_non_loopback_without_token_refuses_to_start(tmp_path):
    p = run_cli("serve", "--listen", "0.0.0.0:0", "--devices", "cpu:1", timeout=60)
    assert p.returncode == 78
    assert "not a loopback address" in p.stderr and "token" in p.stderr
    p = run_cli("serve", "--listen", "127.0.0.1:0", "--key-root", tmp_path / "absent", timeout=60)
    assert p.returncode == 78 and "key_roots" in p.stderr


# ------------------------------------------------------------------------------ SIGTERM
@pytest.mark.slow
def test_sigterm_while_busy_exits_cleanly(roots, tmp_path):
    warm_kernels(TOYHASH)  # (cheap when the cache is warm; a daemon compiling is not "busy")
    s = serve_daemon(tmp_path / "serve.log", roots["root"], "--drain-timeout", "3").start()
    try:
        jobs = []
        for _ in range(3):
            code, _, job = post(s, "/v1/jobs", job_body(roots, TOYHASH, (0, 1) * 4, upload=False))
            assert code == 201, job
            jobs.append(job["job_id"])
        t_end = time.time() + 60  # wait until a device worker is proving
        while time.time() < t_end:
            snap = get(s, "/status")[2]
            if any(w["state"] == "proving" for w in snap["gpu_workers"]):
                break
            time.sleep(0.02)
        assert any(w["state"] == "proving" for w in snap["gpu_workers"])
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        # draining: health says so, new jobs are refused, the API still answers
        code, _, h = get(s, "/healthz")
        assert code == 503 and h["status"] == "draining"
        code, _, out = post(s, "/v1/jobs", job_body(roots, TINY, (0,)))
        assert code == 503 and "not taking jobs" in out["error"]
        assert s.stop(timeout=60) == 0, s.log()
        log = s.log()
        assert "SIGTERM: draining" in log and "stopped" in log
        assert "Traceback" not in log
        assert s.leftover_segments() == []
    finally:
        s.kill()


# ------------------------------------------------------------------------------ submit --out
def test_submit_writes_each_proof_with_its_public_or_neither(tmp_path, capsys):
    """`cuzk submit --wait --out DIR`: proof-i.json and public-i.json both or neither; an out
    folder that cannot be written is one line and exit 1, no traceback."""
    from cuzk.serve.cli import write_result

    proof = json.loads(TINY.proof(0).read_text())
    public = json.loads(TINY.public(0).read_text())
    r = {
        "job_id": "j1",
        "state": "done",
        "finished": True,
        "error": None,
        "total_partitions": 2,
        "proofs": [proof, proof],
        "public": [public, public],
        "partitions": [{"index": i, "state": "done", "error": None} for i in range(2)],
    }
    (tmp_path / "file").write_text("not a folder")
    assert write_result(r, tmp_path / "file") == 1
    err = capsys.readouterr().err
    assert err.startswith("cuzk submit: job j1 done, but its proofs cannot be written to ")
    assert len(err.splitlines()) == 1
    out = tmp_path / "out"
    (out / "public-1.json").mkdir(parents=True)  # the second pair cannot be written
    assert write_result(r, out) == 1
    assert "(1 written): " in capsys.readouterr().err
    assert sorted(os.listdir(out)) == ["proof-0.json", "public-0.json", "public-1.json"]
    assert json.loads((out / "public-0.json").read_text()) == public
