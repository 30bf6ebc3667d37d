"""PLONK keys in the daemon (issue 37, part 3): `cuzk serve`'s default prover (cuzk.prover)
registers and proves PLONK keys beside Groth16 ones in one daemon, with no edit to the engine:
jobs of witnesses and of circuit inputs (the circuit's wasm), priorities, GET /keys (with the
protocol), /status, /metrics and the journal; a witness that breaks a gate fails its partition
with the gate named, a witness of another circuit gets a 422, and the daemon proves on.

References from outside: the committed plonk_public_*.json were written by snarkjs for the
same witnesses (tests/fixtures/make_fixtures.py), and `snarkjs plonk verify` checks the
daemon's PLONK proofs (and `snarkjs groth16 verify` its Groth16 one); cuzk's verifiers check
them too, and the proofs of the second test.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter

import interop
import pytest
from conftest import fixture_circuit
from prometheus_client.parser import text_string_to_metric_families
from serve_harness import cli_env, request, run_cli, serve_daemon, serving, warm_kernels

from cuzk.groth16.verifier import verify as groth16_verify
from cuzk.plonk.verifier import verify_files
from cuzk.plonk.verifier import verify_objects as plonk_verify

MULCHAIN, NESTED = fixture_circuit("mulchain"), fixture_circuit("nested")


def _warm_plonk(*circuits) -> None:
    """Prove once here through the PLONK stages, so the kernels they run are in the Numba
    cache before the daemon's processes start."""
    from cuzk.plonk import stages
    from cuzk.plonk.key import ProvingKey, load_witness

    for c in circuits:
        key = ProvingKey.open(c.plonk_zkey)
        w = load_witness(c.witness(0), key)
        device = stages.open_device("cpu")
        device.load_key(key)
        stages.prove_start(key, stages.synthesize(key, w).buffers, w, device)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve-plonk")
    for c in (MULCHAIN, NESTED):
        d = base / "keys" / c.name
        d.mkdir(parents=True)
        for f in ("circuit.zkey", "plonk.zkey", "circuit.wasm", "witness_0.wtns", "witness_1.wtns"):
            shutil.copy(c.dir / f, d / f)
        shutil.copy(c.bad_witness, d / "bad_witness.wtns")
    return base


@pytest.fixture(scope="module")
def server(root):
    """One daemon of `cuzk serve`'s default prover (the Ray farm's gateway proves PLONK jobs
    in tests/test_serve_inputs.py, beside its Groth16 ones)."""
    warm_kernels(MULCHAIN)
    _warm_plonk(MULCHAIN, NESTED)
    s = serve_daemon(
        root / "serve.log",
        root / "keys",
        "--self-verify",
        "--log-level",
        "info",
        env=cli_env(CUZK_CACHE_DIR=str(root / "wasm-cache")),
    ).start()
    yield from serving(s)


def get(server, path):
    return request(server.url, "GET", path)


def post(server, path, body):
    return request(server.url, "POST", path, body)


def wait_result(server, job_id) -> dict:
    code, _, r = get(server, f"/v1/jobs/{job_id}/result?wait=300")
    assert code == 200 and r["finished"], r
    return r


def check_plonk(tmp_path, circuit, proof, public, k, name, snarkjs=True):
    """The daemon's PLONK proof: snarkjs's public signals, cuzk's verifier accepts it and
    refuses it with the other witness's signals; and `snarkjs plonk verify` accepts it."""
    assert public == json.loads(circuit.plonk_public(k).read_text())
    vk = json.loads(circuit.plonk_vk.read_text())
    assert list(proof)[-2:] == ["protocol", "curve"] and proof["protocol"] == "plonk"
    assert plonk_verify(vk, public, proof)
    assert not plonk_verify(vk, json.loads(circuit.plonk_public(1 - k).read_text()), proof)
    if not snarkjs:
        return
    proof_path, public_path = tmp_path / f"{name}_proof.json", tmp_path / f"{name}_public.json"
    proof_path.write_text(json.dumps(proof))
    public_path.write_text(json.dumps(public))
    assert interop.plonk_verify(circuit.plonk_vk, public_path, proof_path)


@pytest.mark.slow
@pytest.mark.interop
def test_plonk_and_groth16_jobs_in_one_daemon(server, root, tmp_path, tools):
    """One daemon, the default prover: a PLONK key registered with its wasm (jobs of witnesses
    and of inputs, at two priorities) and the same circuit's Groth16 key; every proof checked
    by the verifiers of both projects."""
    d = root / "keys" / "mulchain"
    code, _, pk = post(
        server, "/v1/keys", {"path": str(d / "plonk.zkey"), "wasm": str(d / "circuit.wasm")}
    )
    assert code == 201, pk
    code, _, gk = post(server, "/v1/keys", {"path": str(d / "circuit.zkey")})
    assert code == 201, gk
    assert pk["key_id"] != gk["key_id"]
    assert (pk["protocol"], pk["curve"], gk["protocol"], gk["curve"]) == (
        "plonk",
        "bn128",
        "groth16",
        "bn128",
    )
    assert pk["n_vars"] == gk["n_vars"]  # the witness's length: the circuit's wires, both
    inputs = [json.loads((MULCHAIN.dir / f"input_{k}.json").read_text()) for k in (1, 0)]
    jobs = {
        "plonk": post(
            server,
            "/v1/jobs",
            {
                "key": pk["key_id"],
                "witnesses": [str(d / "witness_0.wtns"), str(d / "witness_1.wtns")],
            },
        ),
        "inputs": post(
            server, "/v1/jobs", {"key": pk["key_id"], "inputs": inputs, "priority": "high"}
        ),
        "groth16": post(
            server, "/v1/jobs", {"key": gk["key_id"], "witnesses": [str(d / "witness_1.wtns")]}
        ),
    }
    for name, (code, _, job) in jobs.items():
        assert code == 201, (name, job)
    results = {name: wait_result(server, job["job_id"]) for name, (_, _, job) in jobs.items()}
    assert all(r["state"] == "done" for r in results.values()), results
    r = results["plonk"]
    for k in (0, 1):  # snarkjs (a node process each time) checks one proof of each job
        check_plonk(tmp_path, MULCHAIN, r["proofs"][k], r["public"][k], k, f"w{k}", k == 0)
    r = results["inputs"]
    for i, k in enumerate((1, 0)):
        check_plonk(tmp_path, MULCHAIN, r["proofs"][i], r["public"][i], k, f"in{k}", i == 0)
    r = results["groth16"]
    assert r["public"][0] == json.loads(MULCHAIN.public(1).read_text())
    assert groth16_verify(json.loads(MULCHAIN.vk.read_text()), r["public"][0], r["proofs"][0])
    (tmp_path / "g_proof.json").write_text(json.dumps(r["proofs"][0]))
    (tmp_path / "g_public.json").write_text(json.dumps(r["public"][0]))
    assert interop.groth16_verify(
        MULCHAIN.vk, tmp_path / "g_public.json", tmp_path / "g_proof.json"
    )
    # the operator's views: the keys by protocol, the jobs on the board and in /metrics
    code, _, keys = get(server, "/v1/keys")
    by_id = {k["key_id"]: k for k in keys["keys"]}
    assert by_id[pk["key_id"]]["protocol"] == "plonk"
    assert by_id[gk["key_id"]]["protocol"] == "groth16"
    code, _, snap = get(server, "/status")
    assert code == 200 and snap["counters"]["restarts"] == 0, snap["counters"]
    on_board = {k["key_id"]: (k["protocol"], k["curve"]) for k in snap["keys"]}
    assert on_board == {k: (by_id[k]["protocol"], by_id[k]["curve"]) for k in by_id}
    assert on_board[pk["key_id"]] == ("plonk", "bn128")
    code, _, text = get(server, "/metrics")
    done = [
        s.value
        for f in text_string_to_metric_families(text.decode())
        for s in f.samples
        if s.name == "cuzk_proofs_completed_total"
    ]
    assert code == 200 and sum(done) == 5, text  # 2 + 2 PLONK proofs, 1 Groth16
    by_protocol = {
        s.labels["protocol"]: s.value
        for f in text_string_to_metric_families(text.decode())
        for s in f.samples
        if s.name == "cuzk_keys_resident_by_protocol"
    }
    assert by_protocol == dict(Counter(k["protocol"] for k in by_id.values())), text
    assert by_protocol["plonk"] >= 1 and by_protocol["groth16"] >= 1, text


def test_bad_plonk_witnesses_and_the_daemon_proves_on(server, root):
    """A witness that breaks a gate fails its job at synthesis (no retry: the input's fault)
    with the gate named; a witness of another circuit is refused at submission (422); a good
    job after them proves."""
    d = root / "keys" / "nested"
    code, _, key = post(server, "/v1/keys", {"path": str(d / "plonk.zkey")})
    assert code == 201 and key["protocol"] == "plonk", key
    assert key["n_vars"] == 22  # nVars - nAdditions = 28 - 6
    code, _, job = post(
        server, "/v1/jobs", {"key": key["key_id"], "witnesses": [str(d / "bad_witness.wtns")]}
    )
    assert code == 201, job
    r = wait_result(server, job["job_id"])
    assert r["state"] == "failed" and r["proofs"] == [None], r
    assert r["error"].startswith(
        "partition 0 failed after 1 attempt: synthesis: ProveError: the witness does not "
        "satisfy PLONK gate 19 of 30 "
    ), r["error"]
    other = root / "keys" / "mulchain" / "witness_0.wtns"
    code, _, body = post(server, "/v1/jobs", {"key": key["key_id"], "witnesses": [str(other)]})
    assert code == 422 and "the witness has 20 values but key" in body["error"], body
    code, _, body = post(
        server, "/v1/prove", {"key": key["key_id"], "witnesses": [str(d / "witness_0.wtns")]}
    )
    assert body["state"] == "done", body
    assert body["public"][0] == json.loads(NESTED.plonk_public(0).read_text())
    assert get(server, "/healthz")[0] == 200


def test_cuzk_prove_on_the_server_with_a_plonk_key(server, root, tmp_path):
    """`cuzk prove --server` hands a PLONK key to the daemon and writes snarkjs's files."""
    d = root / "keys" / "nested"
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    p = run_cli(
        "prove", "--server", server.url, d / "plonk.zkey", d / "witness_1.wtns", proof, public
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert public.read_text() == NESTED.plonk_public(1).read_text()
    assert verify_files(NESTED.plonk_vk, public, proof)
