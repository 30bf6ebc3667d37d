"""Jobs with circuit inputs in the daemon (issue #14 item 4): keys registered with their
circuit's wasm, jobs carrying `inputs` whose witnesses the synthesis processes compute, bad
inputs failing their partition alone, the memory budget counting the calculator, and the
journal recording and resuming such jobs.

References from outside: the committed public.json files were written by snarkjs for the same
inputs (tests/fixtures/make_fixtures.py), and `snarkjs groth16 verify` checks the daemon's
proofs where the tools are installed.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import interop
import pytest
from cluster_harness import farm as start_farm
from conftest import fixture_circuit
from prometheus_client.parser import text_string_to_metric_families
from serve_harness import cli_env, request, run_cli, serve_daemon, serving, warm_kernels
from waiting import wait_for
from wasm_fakes import fake_circom

from cuzk.groth16.verifier import verify

NESTED, TINY = fixture_circuit("nested"), fixture_circuit("tiny")
TINY381 = fixture_circuit("tiny381")  # tiny on BLS12-381, beside tiny (BN254) in one daemon


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Compiled modules go to the session's own cache, never the user's."""
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "wasm-cache"))


def _inputs(k: int) -> dict:
    return json.loads((NESTED.dir / f"input_{k}.json").read_text())


NESTED_OK = {"m": [[1, 2, 3], [4, 5, 6]], "v": [7, 8, 9], "s": 5, "limit": 10}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve-inputs")
    root, outside = base / "keys", base / "outside"
    root.mkdir()
    outside.mkdir()
    for c in (NESTED, TINY, TINY381):
        d = root / c.name
        d.mkdir()
        for f in (
            "circuit.zkey",
            "circuit.wasm",
            "circuit.sym",
            "witness_0.wtns",
            "input_0.json",
            "input_1.json",
        ):
            shutil.copy(c.dir / f, d / f)
    shutil.copy(NESTED.plonk_zkey, root / "nested" / "plonk.zkey")
    (root / "junk.wasm").write_bytes(b"\x7fELF not wasm at all")
    shutil.copy(NESTED.dir / "circuit.wasm", outside / "circuit.wasm")
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module")
def farm():
    """One prover node on a Ray cluster on this machine, for the gateway runs."""
    yield from start_farm(1)


@pytest.fixture(scope="module", params=["local", "gateway"])
def server(request, roots, tmp_path_factory):
    """The daemon the API tests talk to: one machine (`local`), or the gateway of a farm of
    one prover node (`cuzk serve --ray`): jobs of circuit inputs go the same way on both."""
    warm_kernels(NESTED, TINY, TINY381)
    farm = ["--ray", request.getfixturevalue("farm").address] if request.param == "gateway" else []
    s = serve_daemon(
        roots["base"] / f"serve-{request.param}.log",
        roots["root"],
        *farm,
        "--self-verify",
        "--log-level",
        "info",
        env=serve_env(tmp_path_factory.getbasetemp()),
    ).start()
    if farm:
        wait_for(lambda: get(s, "/healthz")[2].get("nodes_alive") == 1, 180)
    yield from serving(s)


def serve_env(base):
    return cli_env(CUZK_CACHE_DIR=str(base / "wasm-cache"))


def post(server, path, body):
    return request(server.url, "POST", path, body)


def get(server, path):
    return request(server.url, "GET", path)


def register(server, roots, name="nested", wasm_name=None):
    d = roots["root"] / name
    body = {"path": str(d / "circuit.zkey")}
    if wasm_name is not False:
        body["wasm"] = str(roots["root"] / (wasm_name or f"{name}/circuit.wasm"))
    return post(server, "/v1/keys", body)


def wait_result(server, job_id):
    code, _, r = get(server, f"/v1/jobs/{job_id}/result?wait=300")
    assert code == 200 and r["finished"], r
    return r


def check_proof(circuit, proof, public, k):
    assert public == json.loads(circuit.public(k).read_text())
    assert verify(json.loads(circuit.vk.read_text()), public, proof)


# ------------------------------------------------------------------------------ registration
BLS12_381_R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def test_register_with_wasm_and_its_errors(server, roots):
    from cuzk.formats import BN254_R

    (roots["root"] / "bls.wasm").write_bytes(fake_circom(BLS12_381_R))
    (roots["root"] / "goldilocks.wasm").write_bytes(fake_circom(0xFFFFFFFF00000001))
    (roots["root"] / "v3.wasm").write_bytes(fake_circom(BN254_R, version=3))
    code, _, key = register(server, roots)
    assert code == 201, key
    assert key["wasm"] == str(roots["root"] / "nested" / "circuit.wasm")
    assert key["wasm_bytes"] > 32 * key["n_vars"]  # the circuit's memory and the witness
    bad = [
        ({"wasm_name": "tiny/circuit.wasm"}, 422, "has 4 wires but circuit.zkey has nVars"),
        ({"wasm_name": "junk.wasm"}, 422, "not a WebAssembly module"),
        ({"wasm_name": "nested/circuit.sym"}, 422, "not a WebAssembly module"),
        # a circuit over BLS12-381 is not the BN254 key's; a prime of no known curve
        ({"wasm_name": "bls.wasm"}, 422, "computes over the prime 0x73eda753"),
        ({"wasm_name": "goldilocks.wasm"}, 422, "compiled for the prime 0xffffffff00000001"),
        ({"wasm_name": "v3.wasm"}, 422, "a circom 3 witness calculator"),
        ({"wasm_name": "nested/none.wasm"}, 404, "no such file"),
    ]
    for kw, status, text in bad:
        code, _, body = register(server, roots, **kw)
        assert code == status and text in body["error"], (kw, code, body)
    code, _, body = post(
        server,
        "/v1/keys",
        {
            "path": str(roots["root"] / "nested" / "circuit.zkey"),
            "wasm": str(roots["outside"] / "circuit.wasm"),
        },
    )
    assert code == 403 and "outside the key roots" in body["error"], body
    code, _, body = post(
        server, "/v1/keys", {"path": str(roots["root"] / "nested" / "circuit.zkey"), "wasm": 7}
    )
    assert code == 400 and "wasm" in body["error"], body
    # the refusals left the key's good wasm in place
    code, _, again = get(server, f"/v1/keys/{key['key_id']}")
    assert again["wasm"] == key["wasm"]


def test_inputs_need_a_key_with_wasm_and_a_valid_body(server, roots):
    code, _, tiny = register(server, roots, "tiny", wasm_name=False)
    assert code == 201 and tiny["wasm"] is None
    zkey = str(roots["root"] / "tiny" / "circuit.zkey")
    code, _, body = post(server, "/v1/jobs", {"key": zkey, "inputs": [{"a": 3, "b": 11}]})
    assert code == 400 and "has no circuit wasm" in body["error"], body
    code, _, nested = register(server, roots)
    nkey = nested["key_id"]
    w = {"data": "d3Rucw=="}
    for job, text in [
        ({"key": nkey}, "either 'witnesses'"),
        ({"key": nkey, "inputs": [NESTED_OK], "witnesses": [w]}, "either 'witnesses'"),
        ({"key": nkey, "inputs": []}, "at least one input"),
        ({"key": nkey, "inputs": {"m": 1}}, "inputs must be a list"),
        ({"key": nkey, "inputs": [NESTED_OK, [1, 2]]}, "inputs[1]: expected a JSON object"),
        (
            {"key": nkey, "inputs": [{**NESTED_OK, "s": "x5"}]},
            "inputs[0]: s = 'x5' is not a number",
        ),
    ]:
        code, _, body = post(server, "/v1/jobs", job)
        assert code == 400 and text in body["error"], (job, code, body)
    assert get(server, "/healthz")[0] == 200


def test_hostile_inputs_over_http_are_400_with_a_reason(server, roots):
    """The hostile input files of `cuzk wtns calculate` (tests/test_witness.py) as job bodies:
    each a 400 with a JSON reason (not a 500), and the daemon keeps serving."""
    code, _, nested = register(server, roots)
    head = (
        b'{"key": "%s", "inputs": [{"m": [[1, 2, 3], [4, 5, 6]], "v": [7, 8, 9], "limit": 10, '
        % (nested["key_id"].encode())
    )
    deep = 10**5
    for tail, text in [
        (b'"s": ' + b"7" * 10**6 + b"}]}", "malformed JSON: a number of 1000000 digits"),
        (b'"s": "' + b"7" * 10**6 + b'"}]}', "inputs[0]: s has 1000000 digits"),
        (b'"s": ' + b"[" * deep + b"]" * deep + b"}]}", "nested more than 512 deep"),
        (b'"s": ' + b'{"a": ' * deep + b"1" + b"}" * deep + b"}]}", "nested more than 512 deep"),
        (b'"s": ' + b"[" * 600 + b"5" + b"]" * 600 + b"}]}", "nested more than 512 deep"),
        (b'"s": "caf\xe9"}]}', "malformed JSON"),
    ]:
        code, _, body = request(
            server.url,
            "POST",
            "/v1/jobs",
            raw=head + tail,
            headers={"Content-Type": "application/json"},
        )
        assert code == 400 and text in body["error"], (tail[:40], code, body)
        assert len(body["error"].splitlines()) == 1
    # nested 500 deep, within MAX_DEPTH: flattened as snarkjs does (s = [[...[5]]] is s = 5),
    # with no recursion to run out of stack on
    code, _, job = request(
        server.url,
        "POST",
        "/v1/jobs",
        raw=head + b'"s": ' + b"[" * 496 + b"5" + b"]" * 496 + b"}]}",
        headers={"Content-Type": "application/json"},
    )
    assert code == 201, job
    assert wait_result(server, job["job_id"])["state"] == "done"
    assert get(server, "/healthz")[0] == 200


# ------------------------------------------------------------------------------ proving
def test_inputs_job_proves(server, roots):
    code, _, key = register(server, roots)
    code, _, job = post(
        server,
        "/v1/jobs",
        {"key": key["key_id"], "kind": "inputs", "inputs": [_inputs(0), _inputs(1), _inputs(0)]},
    )
    assert code == 201 and job["total_partitions"] == 3, job
    r = wait_result(server, job["job_id"])
    assert r["state"] == "done", r
    for proof, public, k in zip(r["proofs"], r["public"], (0, 1, 0), strict=True):
        check_proof(NESTED, proof, public, k)
    for p in r["partitions"]:
        assert p["state"] == "done" and p["attempts"] == 1
        # the witness and a, b, c timed apart, both within the synthesis time
        assert p["witness_ms"] > 0 and p["abc_ms"] > 0
        assert p["witness_ms"] + p["abc_ms"] <= p["synth_ms"] + 1e-6
    # /v1/prove takes inputs too
    code, _, r = post(server, "/v1/prove", {"key": key["key_id"], "inputs": [_inputs(1)]})
    assert code == 200 and r["state"] == "done", r
    check_proof(NESTED, r["proofs"][0], r["public"][0], 1)


@pytest.mark.interop
def test_inputs_job_proofs_verify_with_snarkjs(server, roots, tmp_path, tools):
    code, _, key = register(server, roots)
    code, _, r = post(
        server, "/v1/prove", {"key": key["key_id"], "inputs": [_inputs(0), _inputs(1)]}
    )
    assert code == 200 and r["state"] == "done", r
    for i, (proof, public) in enumerate(zip(r["proofs"], r["public"], strict=True)):
        (tmp_path / f"proof{i}.json").write_text(json.dumps(proof))
        (tmp_path / f"public{i}.json").write_text(json.dumps(public))
        assert interop.groth16_verify(
            NESTED.vk, tmp_path / f"public{i}.json", tmp_path / f"proof{i}.json"
        )


@pytest.mark.interop
def test_plonk_key_with_its_wasm_proves_inputs(server, roots, tmp_path, tools):
    """A PLONK key of the same circuit (nested: with additions) registered with its wasm, on
    one machine and on the farm's gateway alike (issue 37): jobs of inputs give the public
    signals snarkjs wrote, and proofs that `snarkjs plonk verify` accepts."""
    d = roots["root"] / "nested"
    code, _, key = post(
        server, "/v1/keys", {"path": str(d / "plonk.zkey"), "wasm": str(d / "circuit.wasm")}
    )
    assert code == 201 and key["protocol"] == "plonk", key
    code, _, r = post(
        server, "/v1/prove", {"key": key["key_id"], "inputs": [_inputs(1), _inputs(0)]}
    )
    assert code == 200 and r["state"] == "done", r
    for i, k in enumerate((1, 0)):
        assert r["public"][i] == json.loads(NESTED.plonk_public(k).read_text())
        (tmp_path / f"proof{i}.json").write_text(json.dumps(r["proofs"][i]))
        (tmp_path / f"public{i}.json").write_text(json.dumps(r["public"][i]))
        assert interop.plonk_verify(
            NESTED.plonk_vk, tmp_path / f"public{i}.json", tmp_path / f"proof{i}.json"
        )


def test_bad_inputs_fail_their_partition_alone(server, roots):
    code, _, key = register(server, roots)
    missing = {k: v for k, v in NESTED_OK.items() if k != "s"}
    bad_assert = {**NESTED_OK, "s": 10}
    unknown = {**NESTED_OK, "q": 1}
    short = {**NESTED_OK, "v": [7, 8]}
    code, _, job = post(
        server,
        "/v1/jobs",
        {
            "key": key["key_id"],
            "inputs": [_inputs(0), bad_assert, missing, _inputs(1), unknown, short],
        },
    )
    assert code == 201, job
    # another job at the same time, of witnesses, on another key
    code, _, other = post(
        server,
        "/v1/jobs",
        {
            "key": str(roots["root"] / "tiny" / "circuit.zkey"),
            "witnesses": [str(roots["root"] / "tiny" / "witness_0.wtns")],
        },
    )
    assert code == 201, other
    r = wait_result(server, job["job_id"])
    assert r["state"] == "failed" and "4 of 6 partition(s) failed" in r["error"], r
    parts = r["partitions"]
    assert [p["state"] for p in parts] == ["done", "failed", "failed", "done", "failed", "failed"]
    check_proof(NESTED, r["proofs"][0], r["public"][0], 0)
    check_proof(NESTED, r["proofs"][3], r["public"][3], 1)
    assert r["proofs"][1] is None and r["proofs"][2] is None
    assert all(p["attempts"] == 1 for p in parts)  # no retry: an input's fault is permanent
    jid = job["job_id"]
    assert parts[1]["error"] == (
        f"synthesis: AssertFailed: job {jid} partition 1 inputs: the "
        "circuit's assert failed: Error in template Nested_0 line: 18"
    )
    assert (
        "missing input signal s (the circuit circuit.wasm has inputs m, v, limit, s)"
        in parts[2]["error"]
    )
    assert "'q' is not an input signal" in parts[4]["error"]
    assert "v has 2 values, but the circuit's v has 3" in parts[5]["error"]
    o = wait_result(server, other["job_id"])
    assert o["state"] == "done", o
    check_proof(TINY, o["proofs"][0], o["public"][0], 0)
    # the daemon is untouched: healthy, no process restarted, and it proves on
    assert get(server, "/healthz")[0] == 200
    code, _, snap = get(server, "/status")
    assert snap["counters"]["restarts"] == 0, snap["counters"]
    code, _, r = post(server, "/v1/prove", {"key": key["key_id"], "inputs": [_inputs(1)]})
    assert r["state"] == "done", r


# ------------------------------------------------------------------------------ two curves
def test_keys_of_both_curves_share_one_queue(server, roots):
    """tiny and nested (BN254) and tiny381 (BLS12-381) registered side by side, the latter two
    with their wasm; witness and inputs jobs of both curves submitted together into the one
    queue: every proof valid for its own key; both curves in GET /v1/keys, the board's keys
    and /metrics; a key is charged its file's bytes (BLS12-381's 48-byte coordinates
    included); a witness of the other curve refused with 422 naming both. (tiny keeps no
    wasm: test_cli_submit_with_wasm_and_input relies on it.)"""
    keys = {}
    for c, wasm in ((TINY, False), (NESTED, None), (TINY381, None)):
        code, _, k = register(server, roots, c.name, wasm_name=wasm)
        assert code == 201, k
        keys[c.name] = k
        assert k["bytes"] == (roots["root"] / c.name / "circuit.zkey").stat().st_size
    assert keys["tiny"]["curve"] == keys["nested"]["curve"] == "bn128"
    assert keys["tiny381"]["curve"] == "bls12381"
    jobs = []  # (circuit, sets, job id), the curves interleaved
    for c in (TINY381, TINY):
        d = roots["root"] / c.name
        body = {"key": keys[c.name]["key_id"], "witnesses": [str(d / "witness_0.wtns")]}
        code, _, job = post(server, "/v1/jobs", body)
        assert code == 201, job
        jobs.append((c, (0,), job["job_id"]))
    for c in (NESTED, TINY381):
        ins = [json.loads(c.input(k).read_text()) for k in (1, 0)]
        code, _, job = post(server, "/v1/jobs", {"key": keys[c.name]["key_id"], "inputs": ins})
        assert code == 201, job
        jobs.append((c, (1, 0), job["job_id"]))
    for c, sets, job_id in jobs:
        r = wait_result(server, job_id)
        assert r["state"] == "done", r
        for proof, public, k in zip(r["proofs"], r["public"], sets, strict=True):
            check_proof(c, proof, public, k)
    code, _, listed = get(server, "/v1/keys")
    curve_of = {k["key_id"]: k["curve"] for k in listed["keys"]}
    assert curve_of[keys["tiny"]["key_id"]] == "bn128"
    assert curve_of[keys["tiny381"]["key_id"]] == "bls12381"
    code, _, snap = get(server, "/status")
    assert {"bn128", "bls12381"} <= {k["curve"] for k in snap["keys"]}, snap["keys"]
    code, _, text = request(server.url, "GET", "/metrics")
    by_curve = {
        s.labels["curve"]: s.value
        for fam in text_string_to_metric_families(text.decode())
        for s in fam.samples
        if s.name == "cuzk_keys_resident_by_curve"
    }
    assert by_curve.get("bn128", 0) >= 1 and by_curve.get("bls12381", 0) >= 1, by_curve
    for c, other in ((TINY, TINY381), (TINY381, TINY)):
        w = str(roots["root"] / other.name / "witness_0.wtns")
        code, _, r = post(server, "/v1/jobs", {"key": keys[c.name]["key_id"], "witnesses": [w]})
        assert code == 422, r
        assert "BN254" in r["error"] and "BLS12-381" in r["error"], r


# ------------------------------------------------------------------------------ the CLI
def test_cli_submit_with_wasm_and_input(server, roots, tmp_path):
    d = roots["root"] / "nested"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**NESTED_OK, "s": 10}))
    p = run_cli(
        "submit",
        "--server",
        server.url,
        "--wasm",
        d / "circuit.wasm",
        "--wait",
        "--out",
        tmp_path / "out",
        d / "circuit.zkey",
        "--input",
        d / "input_1.json",
        d / "input_0.json",
    )
    assert p.returncode == 0, p.stderr
    for i, k in enumerate((1, 0)):
        check_proof(
            NESTED,
            json.loads((tmp_path / "out" / f"proof-{i}.json").read_text()),
            json.loads((tmp_path / "out" / f"public-{i}.json").read_text()),
            k,
        )
    # a bad input: its partition fails with the reason, exit 1, the good proof written
    p = run_cli(
        "submit",
        "--server",
        server.url,
        "--wait",
        "--out",
        tmp_path / "out2",
        d / "circuit.zkey",
        "--input",
        d / "input_0.json",
        bad,
    )
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "partition 1: failed" in p.stderr and "Nested_0 line: 18" in p.stderr
    assert (tmp_path / "out2" / "proof-0.json").exists()
    assert not (tmp_path / "out2" / "proof-1.json").exists()
    # refused before anything is sent or by the server: exit 2 with the reason
    notjson = tmp_path / "notjson.json"
    notjson.write_text("{nope")
    for args, text in [
        (("--input", tmp_path / "none.json"), "none.json: No such file"),
        (("--input", notjson), "notjson.json: not valid JSON"),
        (
            ("--wasm", roots["root"] / "tiny" / "circuit.wasm", "--input", d / "input_0.json"),
            "has 4 wires but circuit.zkey has nVars",
        ),
    ]:
        p = run_cli("submit", "--server", server.url, d / "circuit.zkey", *args)
        assert p.returncode == 2 and text in p.stderr, (args, p.stderr)
    p = run_cli(
        "submit",
        "--server",
        server.url,
        roots["root"] / "tiny" / "circuit.zkey",
        "--input",
        d / "input_0.json",
    )
    assert p.returncode == 2 and "has no circuit wasm" in p.stderr, p.stderr


# ------------------------------------------------------------------------------ the budget
@pytest.mark.slow
def test_budget_counts_the_calculator(tmp_path, monkeypatch):
    """A partition of circuit inputs reserves the calculator's memory too: a budget that holds
    the key and one partition of witnesses, but not the wasm instance besides, refuses the job
    of inputs and takes the job of witnesses."""
    from cuzk.engine import BudgetError, Engine
    from cuzk.engine.settings import EngineConfig
    from cuzk.groth16 import ProvingKey
    from cuzk.witness import Circuit

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    pk = ProvingKey.open(NESTED.zkey)
    wasm_bytes = Circuit(NESTED.dir / "circuit.wasm").instance_bytes
    doc = json.dumps(_inputs(0), separators=(",", ":")).encode()
    need = int(pk.partition_bytes()) + int(pk.nbytes) + len(doc)
    eng = Engine(
        EngineConfig(devices="cpu:1", synth_workers=1, memory_budget=need + wasm_bytes - 1)
    ).start()
    try:
        kid = eng.register_key(NESTED.zkey, wasm=NESTED.dir / "circuit.wasm")
        assert eng.keys()[0]["wasm_bytes"] == wasm_bytes
        with pytest.raises(BudgetError):
            eng.submit(kid, inputs=[_inputs(0)])
        r = eng.result(eng.submit(kid, [NESTED.witness(0)]), 300)
        assert r["state"] == "done", r
    finally:
        eng.stop(5)
    eng = Engine(
        EngineConfig(devices="cpu:1", synth_workers=1, memory_budget=need + wasm_bytes + 2**20)
    ).start()
    try:
        kid = eng.register_key(NESTED.zkey, wasm=NESTED.dir / "circuit.wasm")
        r = eng.result(eng.submit(kid, inputs=[_inputs(0)]), 300)
        assert r["state"] == "done", r
        # the reservation held the key, the partition, the input and the calculator at once
        assert eng.budget.high_water >= need + wasm_bytes
    finally:
        eng.stop(5)


# ------------------------------------------------------------------------------ the journal
def test_journal_records_inputs_in_the_row(tmp_path):
    from cuzk.serve.journal import Journal

    j = Journal.open(str(tmp_path / "state"))
    try:
        docs = [json.dumps(_inputs(k)).encode() for k in (0, 1)]
        out = j.accept(
            "j1", "k" * 16, "/keys/c.zkey", "default", "normal", 1.0, docs, wasm="/keys/c.wasm"
        )
        assert out == docs
        assert os.listdir(j.spool) == []  # held in the row, not the spool
        (e,) = j.unfinished()
        assert e.wasm == "/keys/c.wasm"
        assert [json.loads(x["json"]) for x in e.inputs] == [_inputs(0), _inputs(1)]
        j.accept("j2", "k" * 16, "/keys/c.zkey", "default", "normal", 2.0, [b"wtns"])
        assert [x.wasm for x in j.unfinished()] == ["/keys/c.wasm", None]
    finally:
        j.close()


@pytest.mark.slow
def test_daemon_resumes_a_journalled_inputs_job(roots, tmp_path):
    """A job of inputs the journal holds unfinished (as after a crash) is proved after the
    start under its id, with the wasm recorded for it; one whose wasm is gone fails with the
    reason."""
    from cuzk.groth16 import ProvingKey
    from cuzk.serve.journal import Journal

    d = roots["root"] / "nested"
    state = tmp_path / "state"
    key_id = ProvingKey.open(d / "circuit.zkey").key_id
    gone = roots["root"] / "gone.wasm"
    shutil.copy(d / "circuit.wasm", gone)
    j = Journal.open(str(state))
    docs = [json.dumps(_inputs(k)).encode() for k in (1, 0)]
    j.accept(
        "resumeme",
        key_id,
        str(d / "circuit.zkey"),
        "default",
        "high",
        time.time(),
        docs,
        wasm=str(d / "circuit.wasm"),
    )
    j.accept(
        "lostwasm",
        key_id,
        str(d / "circuit.zkey"),
        "default",
        "normal",
        time.time(),
        docs[:1],
        wasm=str(gone),
    )
    j.close()
    gone.unlink()
    s = serve_daemon(
        tmp_path / "serve.log",
        roots["root"],
        "--state-dir",
        state,
        env=serve_env(tmp_path),
        memory=None,
    ).start()
    try:
        r = request(s.url, "GET", "/v1/jobs/resumeme/result?wait=300")[2]
        assert r["finished"] and r["state"] == "done" and r["recovered"], r
        for proof, public, k in zip(r["proofs"], r["public"], (1, 0), strict=True):
            check_proof(NESTED, proof, public, k)
        r = request(s.url, "GET", "/v1/jobs/lostwasm/result?wait=30")[2]
        assert r["state"] == "failed" and "gone.wasm" in r["error"], r
        assert s.stop() == 0, s.log()
    finally:
        s.kill()
