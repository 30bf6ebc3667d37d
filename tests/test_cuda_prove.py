"""The CUDA proving path end to end, not kernel by kernel.

prove_start on open_device("cuda") gives the CPU device's H vector and G1 MSMs (A, B1, C, H)
bit for bit from the same witness and a, b, c; prove_finish turns it into a proof that
cuzk.groth16.verifier and snarkjs accept; the key's point sets stay resident on the GPU
(placed once, reused by the next proof, accounted in resident_bytes, gone on eviction); `cuzk prove
--device cuda` proves, and says in one line why not where no GPU exists.

Without a GPU the kernels run in numba's CUDA simulator (tests/conftest.py), about 5 s per
prove_start here; with CUZK_TEST_CUDA=gpu on a GPU machine (bench/gpu_check.sh) they run there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import CUDA_MODE, SESSION_CPUS, _has_gpu, fixture_circuit

from cuzk.arith.jit import cuda_available
from cuzk.cli import main
from cuzk.formats import curve as curves
from cuzk.groth16 import (
    ProvingKey,
    load_witness,
    open_device,
    prove_finish,
    prove_start,
    synthesize,
)
from cuzk.groth16.stages import random_scalar
from cuzk.groth16.verifier import VerifyingKey, verify

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU and no simulator")

CIRCUITS = ("tiny", "mulchain", "tiny381")  # domains 4 and 32; tiny381: tiny on BLS12-381
SETS = ("a", "b1", "c", "h")  # the G1 point sets prove_start runs MSMs over


class Run:
    """One circuit's witness, a, b, c, and what each device made of them."""

    def __init__(self, name: str, cuda):
        self.circuit = fixture_circuit(name)
        self.key = ProvingKey.open(self.circuit.zkey)
        self.w = load_witness(self.circuit.witness(0), self.key)
        self.syn = synthesize(self.key, self.w)
        cpu = open_device("cpu")
        self.h_cpu = cpu.compute_h(*self.abc())
        self.h_cuda = np.array(cuda.compute_h(*self.abc()))
        self.cpu = prove_start(self.key, self.buffers(), self.w, cpu)
        self.cuda = prove_start(self.key, self.buffers(), self.w, cuda)

    def abc(self):
        """Fresh copies of a, b, c (compute_h overwrites its inputs)."""
        return self.syn.a.copy(), self.syn.b.copy(), self.syn.c.copy()

    def buffers(self):
        """Fresh copies of a, b, c by name, as prove_start takes them."""
        return dict(zip("abc", self.abc(), strict=True))


@pytest.fixture(scope="module")
def cuda():
    dev = open_device("cuda")
    yield dev
    for key_id in dev.resident_keys():
        dev.evict_key(key_id)


@pytest.fixture(scope="module")
def runs(cuda):
    made: dict[str, Run] = {}

    def get(name: str) -> Run:
        if name not in made:
            made[name] = Run(name, cuda)
        return made[name]

    return get


def _vk(run: Run):
    return VerifyingKey.from_json(json.loads(run.circuit.vk.read_text()))


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", CIRCUITS)
def test_compute_h_matches_cpu(runs, name):
    run = runs(name)
    assert run.h_cuda.shape == (run.key.domain_size, 4)
    assert run.h_cuda.any()
    assert np.array_equal(run.h_cuda, run.h_cpu)


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", CIRCUITS)
def test_prove_start_matches_cpu(runs, name):
    run = runs(name)
    for which in SETS:
        got, want = getattr(run.cuda, which), getattr(run.cpu, which)
        n = curves.by_name(run.key.curve).g1_limbs  # affine x, y
        assert got.shape == want.shape == (n,), which
        assert got.dtype == want.dtype == np.uint64, which
        assert np.array_equal(got, want), which
    assert any(getattr(run.cpu, which).any() for which in SETS)  # not all at infinity


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", CIRCUITS)
def test_cuda_proof_verifies(runs, name):
    """Same r, s: the CUDA partial gives the CPU partial's proof, and cuzk.groth16.verifier accepts
    it for the right public signals only."""
    run = runs(name)
    r, s = random_scalar(), random_scalar()
    proof = prove_finish(run.key, run.cuda, run.w, r, s)
    ref = prove_finish(run.key, run.cpu, run.w, r, s)
    for part in ("pi_a", "pi_b", "pi_c"):
        assert np.array_equal(getattr(proof, part), getattr(ref, part)), part
    public = json.loads(run.circuit.public(0).read_text())
    assert proof.public_json() == public
    vk = _vk(run)
    assert verify(vk, proof.public, proof.to_json())
    wrong = list(proof.public)
    wrong[0] = (wrong[0] + 1) % run.key.r
    assert not verify(vk, wrong, proof.to_json())


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.interop
@pytest.mark.parametrize("name", CIRCUITS)
def test_cuda_proof_verifies_in_snarkjs(tools, runs, name, tmp_path):
    from interop import groth16_verify

    from cuzk.formats.snarkjs_json import write_proof, write_public

    run = runs(name)
    proof = prove_finish(run.key, run.cuda, run.w)
    write_proof(tmp_path / "proof.json", *proof.points())
    write_public(tmp_path / "public.json", proof.public)
    assert groth16_verify(run.circuit.vk, tmp_path / "public.json", tmp_path / "proof.json")


@pytest.mark.cuda
@pytest.mark.slow
def test_key_residency(runs):
    """Placed once on the GPU with its G1 sets' bytes accounted, reused by a second proof
    (from a worker thread, as the engine's device process runs it), gone on eviction, placed
    again by the next proof."""
    dev = open_device("cuda")  # a device of its own: nothing resident yet
    run = runs("tiny")
    key = run.key
    assert dev.resident_keys() == [] and dev.resident_bytes() == 0
    rk = dev.resident(key)
    assert dev.resident_keys() == [key.key_id]
    assert rk.device == dev.name
    want = sum(getattr(key.zkey, f"points_{w}").nbytes for w in SETS)
    assert dev.resident_bytes(key.key_id) == dev.resident_bytes() == rk.nbytes == want
    for which in SETS:
        pts = rk[which]
        assert hasattr(pts.array, "copy_to_host"), f"{which} not in device memory"
        assert np.array_equal(pts.array.copy_to_host(), getattr(key.zkey, f"points_{which}"))
    arrays = {w: rk[w].array for w in SETS}
    assert dev.resident(key) is rk  # no second placement

    other = runs("mulchain").key
    dev.load_key(other)
    assert sorted(dev.resident_keys()) == sorted([key.key_id, other.key_id])
    assert dev.resident_bytes() == want + dev.resident_bytes(other.key_id) > want
    dev.evict_key(other.key_id)
    assert dev.resident_keys() == [key.key_id] and dev.resident_bytes() == want
    bls = runs("tiny381").key  # BLS12-381's G1 points (96 bytes) counted as stored
    dev.load_key(bls)
    bls_want = sum(getattr(bls.zkey, f"points_{w}").nbytes for w in SETS)
    assert bls.zkey.points_a.shape[1] * 8 == 96
    assert dev.resident_bytes(bls.key_id) == bls_want and dev.resident_bytes() == want + bls_want
    dev.evict_key(bls.key_id)

    out = {}

    def worker():
        try:
            out["partial"] = prove_start(key, run.buffers(), run.w, dev)
        except BaseException as e:  # noqa: BLE001  (re-raised in the test thread below)
            out["error"] = e

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    assert dev.resident(key) is rk and all(rk[w].array is arrays[w] for w in SETS)
    assert dev.resident_bytes() == want
    for which in SETS:
        assert np.array_equal(getattr(out["partial"], which), getattr(run.cpu, which)), which

    dev.evict_key(key.key_id)
    dev.evict_key(key.key_id)  # evicting what is not resident is a no-op
    assert dev.resident_keys() == [] and dev.resident_bytes() == 0
    assert rk.nbytes == 0  # its device arrays are dropped
    partial = prove_start(key, run.buffers(), run.w, dev)  # places the key again
    assert dev.resident_keys() == [key.key_id] and dev.resident_bytes() == want
    assert dev.resident(key) is not rk
    assert np.array_equal(partial.a, run.cpu.a) and np.array_equal(partial.h, run.cpu.h)
    dev.evict_key(key.key_id)


@pytest.mark.cuda
@pytest.mark.slow
def test_engine_device_process_on_cuda(monkeypatch, caplog):
    """The engine with one "cuda:0" device process (spawned, CUDA_VISIBLE_DEVICES set; the
    simulator here): jobs give proofs that cuzk.groth16.verifier accepts, the key is resident on
    cuda:0 after the first job, gone after an eviction, and placed again by the next job."""
    import logging

    from cuzk.engine import Engine, EngineConfig, buffers, settings

    if CUDA_MODE == "sim":  # the engine counts no GPU under the simulator: let it count one
        monkeypatch.setattr(settings, "cuda_device_count", lambda: 1)
    caplog.set_level(logging.INFO, logger="cuzk.engine")
    c = fixture_circuit("tiny")
    vk = VerifyingKey.from_json(json.loads(c.vk.read_text()))
    eng = Engine(
        EngineConfig(
            devices="cuda:0",
            synth_workers=1,
            memory_budget="1GiB",
            self_verify=True,
            restart_backoff=0.1,
        )
    ).start(timeout=300)
    try:
        key_id = eng.register_key(c.zkey)

        def devices():
            return [k["devices"] for k in eng.keys() if k["key_id"] == key_id][0]

        for round_ in range(2):
            job = eng.submit(key_id, [c.witness(0), c.witness(1).read_bytes()])
            r = eng.result(job, timeout=300)
            assert r is not None and r["state"] == "done", r and r.get("error")
            for k in range(2):
                assert r["public"][k] == json.loads(c.public(k).read_text())
                assert verify(vk, r["public"][k], r["proofs"][k])
            assert devices() == ["cuda:0"]
            if round_ == 0:
                assert eng.evict_key(key_id)
                assert devices() == []
        snap = eng.snapshot()
        assert {w["device"] for w in snap["gpu_workers"]} == {"cuda:0"}
        assert snap["counters"]["restarts"] == 0 and snap["counters"]["total_failed"] == 0
        loads = [
            rec
            for rec in caplog.records
            if rec.getMessage().startswith(f"key {key_id} resident on cuda:0")
        ]
        assert len(loads) == 2  # placed, evicted, placed again
    finally:
        eng.stop(drain_deadline=10)
    assert buffers.list_segments(os.getpid()) == []
    assert not os.path.exists(f"/dev/shm/{eng.board_name}")


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny", "tiny381"])
def test_cuzk_prove_device_cuda(tmp_path, name):
    """The command itself on the CUDA device (the simulator here): exit 0, a valid proof."""
    c = fixture_circuit(name)
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    r = CliRunner().invoke(
        main, ["prove", "--device", "cuda", str(c.zkey), str(c.witness(1)), str(proof), str(public)]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(public.read_text()) == json.loads(c.public(1).read_text())
    vk = VerifyingKey.from_json(json.loads(c.vk.read_text()))
    assert verify(vk, json.loads(public.read_text()), json.loads(proof.read_text()))


@pytest.mark.cuda
@pytest.mark.slow
def test_cuzk_prove_device_cuda_as_a_process(tmp_path):
    """`cuzk prove --device cuda` as a process of its own (its start-up and exit paths), on
    the GPU or, here, in the simulator this process's environment selects."""
    c = fixture_circuit("tiny")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuzk.cli",
            "prove",
            "--device",
            "cuda",
            str(c.zkey),
            str(c.witness(0)),
            str(proof),
            str(public),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    vk = VerifyingKey.from_json(json.loads(c.vk.read_text()))
    assert verify(vk, json.loads(public.read_text()), json.loads(proof.read_text()))


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuzk_prove_device_cuda_without_gpu(device, tmp_path):
    """No GPU and no simulator: one line naming the device, exit 1, no output files."""
    c = fixture_circuit("tiny")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuzk.cli",
            "prove",
            "--device",
            device,
            str(c.zkey),
            str(c.witness(0)),
            str(proof),
            str(public),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"cuzk prove: device {device if ':' in device else 'cuda:0'}: ")
    assert "no CUDA GPU" in lines[0]
    assert not proof.exists() and not public.exists()


@pytest.mark.cuda
def test_msm_cuda_takes_host_resident_points():
    """A point set "resident" on the CPU (a read-only mapped host array) given to the CUDA
    MSM is copied in like any host array, not handed to the kernel as it is."""
    from cuzk.kernels import msm_cpu, msm_cuda
    from cuzk.kernels.resident import place_points

    c = fixture_circuit("tiny")
    key = ProvingKey.open(c.zkey)
    w = load_witness(c.witness(0), key)
    pts = place_points(key.zkey.points_a, "cpu", "a")
    assert not pts.array.flags.writeable
    assert np.array_equal(msm_cuda.msm_g1(pts, w), msm_cpu.msm_g1(key.zkey.points_a, w))


def test_gpu_check_script_names_what_exists():
    """bench/gpu_check.sh (run where a GPU is lent) parses, and every test file, bench option
    and suite it names exists, so it does not fail on its first real run for a typo."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    script = root / "bench" / "gpu_check.sh"
    text = script.read_text()
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    tests = re.findall(r"tests/\w+\.py", text)
    assert "tests/test_cuda_prove.py" in tests
    for t in tests:
        assert (root / t).is_file(), t
    out = subprocess.run(
        [sys.executable, "-m", "bench", "--help"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    bench_line = text[text.index("-m bench") :].split("\n\n")[0]
    for opt in set(re.findall(r"(--[a-z-]+)", bench_line)):
        assert opt in out, opt
    suites = subprocess.run(
        [sys.executable, "-m", "bench", "--list"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    listed = {line.split()[0] for line in suites.splitlines() if line.strip()}
    named = re.findall(r"--suite (\w+)", bench_line)
    assert named and set(named) <= listed, (named, listed)
    assert "--profile gpu" in bench_line


@pytest.mark.cuda
def test_simulator_tests_run_on_one_cpu():
    """tests/conftest.py's simulator_on_one_cpu: under the simulator this test (marked cuda)
    runs on one CPU, while Numba's thread pool for parallel CPU kernels,
    made before the pinning, keeps the CPUs the session has."""
    if CUDA_MODE != "sim":
        pytest.skip("a GPU runs the kernels: nothing pinned")
    assert len(os.sched_getaffinity(0)) == 1
    if len(SESSION_CPUS) > 1:
        me = threading.get_native_id()
        others = [int(t) for t in os.listdir("/proc/self/task") if int(t) != me]
        assert any(os.sched_getaffinity(t) == SESSION_CPUS for t in others)
