"""The benchmark harness keeps working: every suite runs at the smoke profile, results parse,
the report renders from them, `--list` and the no-GPU exit of `--profile gpu` behave.

The benchmarks' figures are not checked (they are measurements, not results); what is checked
is that each suite runs end to end through `python -m bench` and writes what the report reads.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import interop
import psutil
import pytest
from need_tool import missing_tool

from bench import report
from bench.__main__ import NO_GPU_MESSAGE, SUITES
from bench.tables import targets_table

ROOT = Path(__file__).resolve().parent.parent
# snarkjs, circom2
NEEDS_NODE_TOOLS = {
    "prove",
    "prove-bls12381",
    "prove-plonk",
    "prove-server",
    "scale",
    "pairing",
    "witness",
    "startup",
}
NEEDS_NETNS = {"cluster"}  # Ray, in a loopback-only network namespace (root, iproute2)
RUN_APART = {"soak"}  # its smoke profile is 2 minutes of work: tests/test_soak.py runs it
# shared-memory names that embed their creator's pid: status boards and engine buffers
SHM_PID = re.compile(r"^(?:cuzk-(\d+)-|cuzkbuf\.(\d+)\.)")


def _bench(*args, timeout=300, env=None):
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def _cluster_unavailable() -> str | None:
    from cuzk.testing import netns

    why = netns.available()
    if why is None and importlib.util.find_spec("ray") is None:
        why = "ray is not installed"
    return why


def _shm_names() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One smoke run of every suite (about 2 minutes with a warm Numba cache and bench/work,
    10-12 on a clean clone: the circuits and the kernels are made first); without snarkjs
    and circom2 (no npm), of every suite that does not run them; without root or Ray, of
    every suite but cluster; never of soak (tests/test_soak.py runs it)."""
    results = tmp_path_factory.mktemp("bench-results")
    suites = [s for s in SUITES if interop.install_tools() or s not in NEEDS_NODE_TOOLS]
    suites = [s for s in suites if s not in NEEDS_NETNS or _cluster_unavailable() is None]
    suites = [s for s in suites if s not in RUN_APART]
    before = _shm_names()
    p = _bench(
        "--profile",
        "smoke",
        "--no-report",
        "--results",
        str(results),
        *[a for s in suites for a in ("--suite", s)],
        timeout=1800,  # an empty kernel cache compiles first: 700 s on the 2-core machine
    )
    leaked = []
    for name in _shm_names() - before:
        m = SHM_PID.match(name)
        if m and not psutil.pid_exists(int(m.group(1) or m.group(2))):
            leaked.append(name)
    return p, results, suites, leaked


def test_list_names_every_suite():
    p = _bench("--list", timeout=60)
    assert p.returncode == 0, p.stderr
    listed = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    assert listed == list(SUITES)
    assert "[gpu: no device part]" in p.stdout  # board, top, pairing say they have none


def test_gpu_profile_exits_with_message_under_the_simulator():
    """The CUDA simulator is not a GPU: its timings would be meaningless."""
    p = _bench(
        "--profile",
        "gpu",
        "--no-report",
        "--results",
        "/nonexistent-never-written",
        timeout=120,
        env={"NUMBA_ENABLE_CUDASIM": "1"},
    )
    assert p.returncode == 2
    assert NO_GPU_MESSAGE in p.stderr
    assert not Path("/nonexistent-never-written").exists()


def test_gpu_profile_exits_with_message_without_gpu(tmp_path):
    from bench.__main__ import gpu_present

    if gpu_present():
        pytest.skip("a CUDA GPU is present: `make bench-gpu` would measure it")
    p = _bench("--profile", "gpu", "--results", str(tmp_path), timeout=120)
    assert p.returncode == 2
    assert "no CUDA GPU" in p.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_smoke_run_of_every_suite(smoke_run):
    p, results, suites, leaked = smoke_run
    assert p.returncode == 0, f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    for i, name in enumerate(suites, 1):  # progress, in order
        assert f"[{i}/{len(suites)}] {name}: done in" in p.stdout
    assert "== bench, profile smoke" in p.stdout
    for name in suites:
        entry = json.loads((results / f"{name}.smoke.json").read_text())
        assert entry["profile"] == "smoke"
        assert isinstance(entry["result"], dict) and entry["result"], name
        assert entry["seconds"] > 0
        for k in ("date", "cpu", "cores", "commit", "python", "numba", "snarkjs"):
            assert k in entry["meta"], (name, k)
    stem = "latest" if suites == list(SUITES) else "partial"
    latest = json.loads((results / f"{stem}.smoke.json").read_text())
    assert [s["suite"] for s in latest["suites"]] == suites
    assert all(s["status"] == "ok" for s in latest["suites"])
    assert latest["failed"] == []
    assert not leaked, f"shared-memory segments left by dead bench processes: {leaked}"


@pytest.mark.slow
@pytest.mark.interop
def test_prove_smoke_compares_on_the_same_files(smoke_run):
    _, results, suites, _ = smoke_run
    if "prove" not in suites:
        missing_tool("snarkjs/circom2 not installed and `make tools` could not install them")
    res = json.loads((results / "prove.smoke.json").read_text())["result"]
    (row,) = res["rows"]
    assert row["cuzk_proof_valid"] is True
    assert row["snarkjs_min_s"] <= row["snarkjs_s"] <= row["snarkjs_max_s"]
    assert row["speedup_vs_snarkjs"] == pytest.approx(row["snarkjs_s"] / row["cuzk_cmd_s"])
    (phases,) = res["phases_ms"]
    assert {"synthesize", "MSM A", "MSM B2 (G2)"} <= set(phases)
    rs = res["rapidsnark"]
    assert rs["installed"] == ("rapidsnark_s" in row)  # a peer is run whenever one is found
    if rs["installed"]:
        assert row["cmd_vs_rapidsnark"] == pytest.approx(row["cuzk_cmd_s"] / row["rapidsnark_s"])
        assert row["rapidsnark_rss_mib"] > 0
    else:
        assert "README" in rs["origin"]
    assert row["cuzk_rss_mib"] > 0 and row["family"] == "toyhash"


@pytest.mark.slow
@pytest.mark.interop
def test_scale_smoke_has_command_daemon_and_peer(smoke_run):
    """Suite scale (issue #35's target 5) on the smoke profile's tiny circuit: the command,
    the daemon (a first and a resident-key job, its processes' peak memory) and rapidsnark
    when built, every proof verified."""
    _, results, suites, _ = smoke_run
    if "scale" not in suites:
        missing_tool("snarkjs/circom2 not installed and `make tools` could not install them")
    res = json.loads((results / "scale.smoke.json").read_text())["result"]
    rs = res["rapidsnark"]
    (big,) = res["rows"]
    assert "error" not in big, big.get("error")
    assert big["proofs_valid"] is True and (big["family"], big["log2n"]) == ("toyhash", 10)
    assert 0 < big["daemon_job_s"] < big["server_cmd_s"] and big["cuzk_rss_mib"] > 0
    # the daemon's tree: its supervisor, synthesis and device processes, Numba loaded in some
    assert big["daemon_rss_mib"] >= big["daemon_pss_mib"] > 100
    assert ("rapidsnark_s" in big) == rs["installed"]
    if rs["installed"]:
        assert big["server_vs_rapidsnark"] == pytest.approx(
            big["server_cmd_s"] / big["rapidsnark_s"]
        )


@pytest.mark.slow
@pytest.mark.interop
def test_prove_plonk_smoke_has_the_warm_daemon(smoke_run):
    """The prove-plonk row carries the command, the warm daemon (`cuzk prove --server`, with
    the daemon's own job time) and snarkjs, every proof accepted by `snarkjs plonk verify`."""
    _, results, suites, _ = smoke_run
    if "prove-plonk" not in suites:
        missing_tool("snarkjs/circom2 not installed and `make tools` could not install them")
    res = json.loads((results / "prove-plonk.smoke.json").read_text())["result"]
    assert res["runners"] == ["cuzk prove", "cuzk prove --server", "snarkjs plonk prove"]
    (row,) = res["rows"]
    assert row["verified_by_snarkjs"] is True
    assert 0 < row["daemon_job_s"] <= row["server_s"]
    for p in ("cuzk", "server"):
        assert row[f"snarkjs_over_{p}"] == pytest.approx(row["snarkjs_s"] / row[f"{p}_s"])
    assert row["snarkjs_over_daemon_job"] == pytest.approx(row["snarkjs_s"] / row["daemon_job_s"])


@pytest.mark.slow
def test_engine_smoke_has_the_throughput_row(smoke_run):
    """Issue #35's target 4 at the smoke size: jobs at once through `cuzk serve`, every proof
    checked, against rapidsnark's commands back to back when it is built (else why not)."""
    _, results, suites, _ = smoke_run
    res = json.loads((results / "engine.smoke.json").read_text())["result"]
    (row,) = res["throughput"]
    assert "error" not in row, row.get("error")
    assert row["proofs_valid"] is True and row["jobs"] == 2
    assert row["daemon_min_s"] <= row["daemon_s"] and row["devices"] == "cpu:0"
    rs = res["rapidsnark"]
    assert rs["installed"] == ("daemon_vs_rapidsnark" in row)
    if rs["installed"]:
        assert row["daemon_vs_rapidsnark"] == pytest.approx(row["daemon_s"] / row["rapidsnark_s"])
    else:
        assert "README" in rs["origin"]


@pytest.mark.slow
def test_report_renders_from_smoke_results(smoke_run, tmp_path):
    """docs/benchmarks.md from the smoke results, relabelled quick (the report skips smoke)."""
    _, results, suites, _ = smoke_run
    quick = tmp_path / "results"
    quick.mkdir()
    for name in suites:
        entry = json.loads((results / f"{name}.smoke.json").read_text())
        entry["profile"] = "quick"
        report.write_json(quick / f"{name}.json", entry)
    md = report.write_markdown(quick, docs=tmp_path / "docs").read_text()
    assert md.startswith("# Benchmarks")
    assert "## Targets from the issues against what was measured" in md
    for name in suites:
        assert f"\n## {name}\n" in md
    meta = json.loads((quick / "board.json").read_text())["meta"]
    assert f"on {meta['cpu']}" in md and meta["date"] in md
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    imgs = sorted(p.name for p in (tmp_path / "docs" / "img").glob("bench-*.png"))
    assert "bench-msm-cpu.png" in imgs and "bench-board.png" in imgs
    assert "bench-prove.png" in imgs or "prove" not in suites
    for img in imgs:  # every plot is referenced and captioned with its machine
        assert f"(img/{img})" in md
    assert "plot failed" not in md


def test_every_suite_sizes_every_profile():
    """Each suite's per-profile tables (module-level dicts keyed by profile) name all four."""
    import importlib

    from bench.__main__ import PROFILES

    for name, (module_name, _, _) in SUITES.items():
        module = importlib.import_module(module_name)
        assert callable(module.run), name
        tables = {
            k: v
            for k, v in vars(module).items()
            if isinstance(v, dict) and v and "quick" in v and set(v) <= set(PROFILES)
        }
        assert tables, f"{module_name}: no per-profile tables"
        for k, v in tables.items():
            assert set(v) == set(PROFILES), f"{module_name}.{k} lacks {set(PROFILES) - set(v)}"


def _entry(result, profile="quick"):
    return {
        "meta": {"date": "2026-01-01T00:00:00+00:00", "cpu": "test cpu", "cores": 2},
        "profile": profile,
        "seconds": 1.0,
        "result": result,
    }


def test_targets_judge_ceilings_floors_and_missing():
    results = {
        ("msm", "quick"): _entry(
            {
                "cpu": [
                    {
                        "group": "g1",
                        "log2n": 16,
                        "ms": 250.0,
                        "min_ms": 190.0,
                        "cpu_ms": 300.0,
                        "cores_used": 1.2,
                    }
                ]
            }
        ),
        ("ntt", "quick"): _entry({"cpu": [{"log2n": 16, "ntt_ms": 12.0, "ntt_min_ms": 11.0}]}),
        ("top", "quick"): _entry({"worst_core_pct": 1.5}),
        ("engine", "quick"): _entry(
            {
                "rows": [
                    {
                        "part": "pipeline (double)",
                        "devices": "cpu:2",
                        "busy_fraction": 0.99,
                        "gap_median_ms": 0.5,
                        "vs_slower_stage": 0.85,
                        "vs_serial": 3.0,
                    }
                ]
            }
        ),
    }
    by = {t["target"]: t for t in report.targets(results)}
    assert by["MSM G1 2^16, CPU"]["status"] == "met by the best run only"
    assert by["MSM G1 2^16, CPU"]["vs_goal"] == pytest.approx(1.25)
    assert by["NTT 2^16, CPU"]["status"] == "met"
    assert by["`cuzk top` at 4 Hz, 64 slots, 32 pipelines"]["status"] == "not met"
    assert by["engine: device busy in steady state"]["status"] == "met"  # a floor
    assert by["engine: throughput vs the slower stage"]["status"] == "not met"
    assert by["MSM G1 2^20, GPU"]["status"] == "not measured"
    assert by["verify one proof, one core"]["status"] == "not measured"
    md = targets_table(list(by.values()))
    assert "| MSM G1 2^16, CPU | #3 | ≤ 200 ms | 250 ms (best 190) | 1.25 |" in md


def test_result_paths_keep_profiles_apart(tmp_path):
    assert report.result_path(tmp_path, "ntt", "quick").name == "ntt.json"
    assert report.result_path(tmp_path, "ntt", "full").name == "ntt.full.json"
    report.write_json(tmp_path / "ntt.json", _entry({"x": 1}))
    report.write_json(tmp_path / "ntt.full.json", _entry({"x": 2}, "full"))
    report.write_json(tmp_path / "ntt.smoke.json", _entry({"x": 3}, "smoke"))
    report.write_json(tmp_path / "latest.json", {"suites": []})
    report.write_json(tmp_path / "partial.gpu.json", {"suites": []})
    found = report.load_results(tmp_path)
    assert set(found) == {("ntt", "quick"), ("ntt", "full")}


@pytest.mark.slow
@pytest.mark.interop
def test_prove_server_smoke_proves_through_a_daemon(smoke_run):
    _, results, suites, _ = smoke_run
    if "prove-server" not in suites:
        missing_tool("snarkjs/circom2 not installed and `make tools` could not install them")
    res = json.loads((results / "prove-server.smoke.json").read_text())["result"]
    (row,) = res["rows"]
    assert row["server_proof_valid"] is True
    assert row["server_min_s"] <= row["server_cmd_s"] <= row["server_max_s"]
    assert 0 < row["daemon_job_s"] < row["server_cmd_s"]
    assert row["client_s"] == pytest.approx(row["server_cmd_s"] - row["daemon_job_s"])
    assert res["rapidsnark"]["installed"] == ("rapidsnark_s" in row)


@pytest.mark.slow
@pytest.mark.interop
def test_prove_bls12381_smoke_proves_in_process_by_command_and_through_a_daemon(smoke_run):
    """Issue #28's bench: BLS12-381 against snarkjs, the daemon's `cuzk prove --server` in the
    same rounds, every proof accepted by cuzk's verifier and by snarkjs."""
    _, results, suites, _ = smoke_run
    if "prove-bls12381" not in suites:
        missing_tool("snarkjs/circom2 not installed and `make tools` could not install them")
    res = json.loads((results / "prove-bls12381.smoke.json").read_text())["result"]
    assert res["curve"] == "bls12_381"
    (row,) = res["rows"]
    assert row["cuzk_proof_valid"] is True and row["snarkjs_verify"] is True
    assert 0 < row["daemon_job_s"] < row["server_cmd_s"]
    assert row["speedup_server_vs_snarkjs"] == pytest.approx(row["snarkjs_s"] / row["server_cmd_s"])
    assert "rapidsnark_s" not in row


def test_issue35_throughput_and_scale_targets():
    """Target 4 from the engine's throughput rows (the best round's ratio beside the median),
    target 5 from suite scale's full-profile rows (a failed circuit says why)."""
    throughput = [
        {
            "circuit": "eddsa:13",
            "log2n": 13,
            "jobs": 16,
            "daemon_s": 3.0,
            "rapidsnark_s": 5.0,
            "daemon_vs_rapidsnark": 0.6,
            "best_daemon_vs_rapidsnark": 0.45,
        },
        {"part": "throughput (sha256:16)", "circuit": "sha256:16", "log2n": 16, "error": "boom"},
    ]
    scale = [
        {
            "family": "sha256batch",
            "log2n": 21,
            "cuzk_cmd_s": 20.0,
            "server_first_s": 30.0,
            "server_cmd_s": 12.0,
            "daemon_job_s": 11.0,
            "rapidsnark_s": 20.0,
            "cuzk_rss_mib": 3000.0,
            "rapidsnark_rss_mib": 4000.0,
            "daemon_pss_mib": 9000.0,
            "daemon_rss_mib": 9500.0,
            "cmd_vs_rapidsnark": 1.0,
            "server_vs_rapidsnark": 0.6,
            "rss_vs_rapidsnark": 0.75,
            "daemon_mem_vs_rapidsnark": 2.25,
        },
        {"family": "sha256batch", "log2n": 22, "error": "circom2: out of memory"},
    ]
    results = {
        ("engine", "quick"): _entry(
            {"rows": [], "throughput": throughput, "rapidsnark": {"installed": True}}
        ),
        ("scale", "full"): _entry({"rows": scale, "rapidsnark": {"installed": True}}),
    }
    by = {t["target"]: t for t in report.targets(results) if t["issue"] == "#35"}
    at13 = by[
        "engine: one-partition jobs at once through `cuzk serve`, 2^13, ÷ as many "
        "rapidsnark commands back to back"
    ]
    assert at13["status"] == "met by the best run only" and "16 jobs of eddsa:13" in at13["note"]
    at16 = by[
        "engine: one-partition jobs at once through `cuzk serve`, 2^16, ÷ as many "
        "rapidsnark commands back to back"
    ]
    assert at16["status"] == "not measured" and at16["note"] == "failed: boom"
    assert by["sha256batch 2^21: `cuzk prove`, whole command ÷ rapidsnark's"]["status"] == "not met"
    assert (
        by["sha256batch 2^21: `cuzk prove --server` (key resident) ÷ rapidsnark's command"][
            "status"
        ]
        == "met"
    )
    assert by["sha256batch 2^21: `cuzk prove`, peak RSS ÷ rapidsnark's"]["status"] == "met"
    daemon_mem = (
        "sha256batch 2^21: the daemon's processes, peak memory (PSS) ÷ rapidsnark's peak RSS"
    )
    assert by[daemon_mem]["status"] == "not met"
    failed = by["sha256batch 2^22: `cuzk prove`, whole command ÷ rapidsnark's"]
    assert failed["status"] == "not measured" and "out of memory" in failed["note"]
