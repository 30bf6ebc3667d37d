"""`cuzk serve` on the native kernel library (cuzk.native): with the library built for this
machine and these sources the daemon's processes (the serve process, synthesis, the CPU
device's workers and finalizers) take it as a one-shot command does, say so in GET /status
("kernels" per worker), are healthy at once (no kernel compiles) and prove without loading
numba; without it they fall back to Numba's JIT builds and the log says so once."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import time

import pytest
from conftest import fixture_circuit
from serve_harness import cli_env, request, serve_daemon, serving

from cuzk.groth16.verifier import verify

TOYHASH = fixture_circuit("toyhash")
FALLBACK_LINE = "the native kernel library is not built here for every curve"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/maps")


@pytest.fixture
def key_root(tmp_path):
    root = tmp_path / "keys"
    root.mkdir()
    for f in ("circuit.zkey", "witness_0.wtns"):
        shutil.copy(TOYHASH.dir / f, root / f)
    return root


def _daemon(tmp_path, key_root, native_dir):
    env = cli_env(CUZK_NATIVE_DIR=str(native_dir))
    s = serve_daemon(
        tmp_path / "serve.log", key_root, "--self-verify", "--log-level", "info", env=env
    )
    yield from serving(s.start())


def _workers(status: dict) -> list[dict]:
    return [*status["synthesis"]["workers"], *status["gpu_workers"], *status["finalizers"]]


def _loads_numba(pid: int) -> list[str]:
    """The files of the numba and llvmlite packages mapped in process `pid` (importing numba
    maps its C extensions and LLVM's library)."""
    packages = tuple(
        os.path.join(importlib.util.find_spec(name).submodule_search_locations[0], "")
        for name in ("numba", "llvmlite")  # found, not imported
    )
    with open(f"/proc/{pid}/maps") as f:
        paths = {line.split()[-1] for line in f if "/" in line}
    return sorted(p for p in paths if p.startswith(packages))


@pytest.fixture
def on_the_library(tmp_path, key_root, native_dir):
    yield from _daemon(tmp_path, key_root, native_dir)


@pytest.fixture
def without_it(tmp_path, key_root):
    empty = tmp_path / "no-library"
    empty.mkdir()
    yield from _daemon(tmp_path, key_root, empty)


def test_serve_on_the_library_is_healthy_at_once_and_proves_without_numba(on_the_library, key_root):
    """Ready means proving: /healthz ok with nothing warming as soon as the daemon listens;
    every worker's process says "native" for BN254; a job's proof verifies; no process of
    the daemon has loaded numba, through the key's tables of multiples (msm_tables' default:
    built beside the proofs once the device loads the key, cuzk.kernels.table_builds, and
    used by its MSMs when done), the finalizer's G2 MSM and self-verification."""
    s = on_the_library
    code, _, health = request(s.url, "GET", "/healthz")
    assert code == 200 and health["status"] == "ok" and "warming" not in health, health
    code, _, status = request(s.url, "GET", "/status")
    workers = _workers(status)
    native = [w["kernels"] in ("native", "native (bn254), numba (bls12_381)") for w in workers]
    assert workers and all(native), workers
    body = {
        "key": str(key_root / "circuit.zkey"),
        "witnesses": [str(key_root / "witness_0.wtns")],
        "timeout": 300,
    }
    code, _, r = request(s.url, "POST", "/v1/prove", body)
    assert code == 200 and r["state"] == "done", r
    vk = json.loads(TOYHASH.vk.read_text())
    assert verify(vk, r["public"][0], r["proofs"][0], backend="python")
    assert "kernels native" in s.log()
    code, _, keys = request(s.url, "GET", "/v1/keys")  # its tables (msm_tables' default),
    assert code == 200 and keys["keys"][0]["table_bytes"] > 0, keys  # built on the library
    deadline = time.monotonic() + 120
    while "tables of multiples for key" not in s.log() and time.monotonic() < deadline:
        time.sleep(0.2)  # (beside the first job: said in the log when ready)
    assert re.search(r"tables of multiples for key \S+ ready in [0-9.]+ s", s.log()), s.log()
    code, _, r = request(s.url, "POST", "/v1/prove", body)  # a job on the tables
    assert code == 200 and r["state"] == "done", r
    for pid in {s.pid, *(w["pid"] for w in workers)}:
        assert _loads_numba(pid) == [], pid


def test_serve_without_the_library_falls_back_to_numba_and_says_so_once(without_it):
    """No library here: every process runs Numba's builds ("numba" per worker in /status) and
    the log has one line saying why and how to build it (not one per process)."""
    s = without_it
    code, _, health = request(s.url, "GET", "/healthz")
    assert code == 200 and health["status"] == "ok", health
    code, _, status = request(s.url, "GET", "/status")
    assert {w["kernels"] for w in _workers(status)} == {"numba"}, status
    assert s.log().count(FALLBACK_LINE) == 1, s.log()
