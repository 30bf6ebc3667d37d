"""Suite `engine`: partitioned jobs through the engine against a serial baseline, and many
jobs at once through `cuzk serve` against rapidsnark's commands back to back.

Three parts:
- pipeline: the prover double with fixed stage times (sleeps, so the figures measure the
  engine's orchestration, not CPU contention on a small machine). Synthesis capacity is set
  above device capacity, so the device is the bottleneck and should never wait: device busy
  fraction in steady state (target >= 97 %), idle gaps between partitions on a device
  (target median < 2 ms), throughput against the slower stage's capacity (target >= 0.9x) and
  against the serial baseline (synthesize, prove_start, prove_finish one partition at a time).
- real prover: the same measurements with cuzk.groth16 on CPU devices, against the serial
  baseline run in-process with the key loaded and kernels warm: on the small toyhash fixture
  (issue #7), and on circomlib's SHA-256 circuit (bench.circuits, 2^15 quick, 2^17 full;
  issue #25's target 6: the engine keeps up with the prover on a real family).
- throughput (issue #35's target 4, `throughput`): N one-partition jobs submitted at once to
  a warm `cuzk serve` with its defaults (loopback, the key registered and loaded by one
  untimed job, the witness by path) against N rapidsnark `prover` commands back to back on
  the same key and witness, rounds alternating: wall time from the first submission to the
  last result against the commands' total, target <= 0.5x at 2^13 (circomlib's EdDSA-Poseidon,
  one signature) and 2^16 (SHA-256, two blocks); N = 16 (32 in the full profile), each
  daemon proof checked by cuzk's verifier. Without rapidsnark (bench/bench_prove.py says
  where it is looked for) the rows carry the daemon's figures and the result says why.

The machine's 1-minute load average at the end of each run is reported with the figures: on
a shared 2-core machine, other people's work delays the wake-ups the pipeline depends on.
Busy fractions come from two sources that must agree: the board's accumulated busy_secs of
each device's worker slots over the steady window, and the union of the prove_start
intervals the device processes report (which also gives the idle gaps).
"""

from __future__ import annotations

import logging
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench import plots
from bench.bench_prove import find_rapidsnark, in_process
from bench.circuits import REAL_FAMILIES
from bench.tables import find_row, fmt, table, target

ROOT = Path(__file__).resolve().parent.parent

# profile -> pipeline settings: jobs x partitions, stage seconds, processes
PIPELINE = {
    "smoke": dict(
        jobs=2, parts=8, synth=0.02, start=0.01, finish=0.01, devices="cpu:1", synth_workers=3
    ),
    "quick": dict(
        jobs=10, parts=16, synth=0.04, start=0.02, finish=0.02, devices="cpu:2", synth_workers=6
    ),
    "full": dict(
        jobs=12, parts=16, synth=0.04, start=0.02, finish=0.02, devices="cpu:2", synth_workers=6
    ),
    "gpu": dict(
        jobs=6, parts=16, synth=0.04, start=0.02, finish=0.02, devices="cpu:2", synth_workers=6
    ),
}
# profile -> the real-prover runs: circuit "fixture:NAME" (tests/fixtures) or "FAMILY:LOG2N"
REAL = {
    "smoke": [dict(circuit="fixture:toyhash", jobs=1, parts=4, devices="cpu:1", synth_workers=1)],
    "quick": [
        dict(circuit="fixture:toyhash", jobs=2, parts=16, devices="cpu:1", synth_workers=1),
        dict(circuit="sha256:15", jobs=1, parts=8, devices="cpu:1", synth_workers=1),
    ],
    "full": [
        dict(circuit="toyhash:14", jobs=2, parts=10, devices="cpu:1", synth_workers=1),
        dict(circuit="sha256:17", jobs=1, parts=8, devices="cpu:1", synth_workers=1),
    ],
    "gpu": [
        dict(circuit="toyhash:18", jobs=2, parts=16, devices="auto", synth_workers=8),
        dict(circuit="sha256:17", jobs=2, parts=16, devices="auto", synth_workers=8),
    ],
}
WARMUP_PARTITIONS = 2  # per device, excluded from the steady window
# profile -> the throughput runs (issue #35's target 4): N one-partition jobs at once through
# `cuzk serve` with its defaults against N rapidsnark commands back to back, same files.
# N = 16 as in the issue's own measurement: long enough (about 2 s of rapidsnark at 2^13,
# 6 s at 2^16) that the pipeline's fill and drain (the first job's synthesis, the last one's
# finalize) and the timer's noise are small parts of it, short enough for three rounds.
THROUGHPUT = {
    "smoke": [dict(circuit="fixture:toyhash", jobs=2, rounds=1)],
    "quick": [
        dict(circuit="eddsa:13", jobs=16, rounds=3),
        dict(circuit="sha256:16", jobs=16, rounds=3),
    ],
    "full": [
        dict(circuit="eddsa:13", jobs=32, rounds=3),
        dict(circuit="sha256:16", jobs=32, rounds=3),
    ],
    "gpu": [
        dict(circuit="eddsa:13", jobs=16, rounds=3),
        dict(circuit="sha256:16", jobs=16, rounds=3),
    ],
}
THROUGHPUT_GOAL = 0.5  # the daemon's wall time / rapidsnark's, at 2^13 and 2^16


def _intervals(engine, job_ids) -> dict[int, list[tuple[float, float]]]:
    """prove_start intervals (unix start, end) per device, from the device processes."""
    jobs = set(job_ids)
    out: dict[int, list] = {}
    for e in list(engine.events):
        if e[1] == "gpu" and e[2] in jobs:
            out.setdefault(e[5], []).append((e[6], e[7]))
    return {d: sorted(v) for d, v in out.items()}


def _device_figures(intervals: dict[int, list], warmup: int) -> dict:
    """Busy fraction (union of intervals / window) and idle gaps, per device, steady state."""
    busy, gaps, windows = [], [], []
    for iv in intervals.values():
        iv = iv[warmup:]
        if len(iv) < 2:
            continue
        t0, t1 = iv[0][0], max(e for _, e in iv)
        covered, cur_s, cur_e = 0.0, iv[0][0], iv[0][1]
        for s, e in iv[1:]:
            gaps.append(max(0.0, s - cur_e))
            if s > cur_e:
                covered += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        covered += cur_e - cur_s
        busy.append(covered / (t1 - t0))
        windows.append((t0, t1))
    gaps_ms = sorted(g * 1e3 for g in gaps)
    # partitions through the devices per second inside the common steady window
    steady = None
    if windows:
        t0, t1 = max(w[0] for w in windows), min(w[1] for w in windows)
        if t1 > t0:
            n = sum(1 for iv in intervals.values() for s, e in iv if t0 <= s and e <= t1)
            steady = n / (t1 - t0)
    return {
        "steady_pps": steady,
        "busy_fraction": min(busy) if busy else None,
        "gap_median_ms": statistics.median(gaps_ms) if gaps_ms else None,
        "gap_p95_ms": gaps_ms[int(0.95 * (len(gaps_ms) - 1))] if gaps_ms else None,
        "gap_max_ms": gaps_ms[-1] if gaps_ms else None,
        "windows": windows,
    }


def _board_busy(engine, sample_every=0.05, stop=None) -> list:
    """Samples (now, {device: busy_secs summed over its worker slots}) from the board."""
    samples = []
    while not stop.is_set():
        snap = engine.snapshot()
        per = {}
        for w in snap["gpu_workers"]:
            per[w["device"]] = per.get(w["device"], 0.0) + w["busy_secs"]
        samples.append((snap["now"], per))
        time.sleep(sample_every)
    return samples


def _board_fraction(samples, windows) -> float | None:
    """Busy fraction from board samples inside the steady window (the smallest device's)."""
    if not windows or len(samples) < 3:
        return None
    t0 = max(w[0] for w in windows)
    t1 = min(w[1] for w in windows)
    inside = [s for s in samples if t0 <= s[0] <= t1]
    if len(inside) < 2:
        return None
    (a_t, a), (b_t, b) = inside[0], inside[-1]
    return min((b[d] - a[d]) / (b_t - a_t) for d in a)


def _run_engine(cfg, key_path, witnesses, jobs, priority="normal"):
    import threading

    from bench.bench_prove_server import tables_ready
    from cuzk.engine import Engine

    eng = Engine(cfg).start(timeout=900)
    try:
        kid = eng.register_key(key_path)
        # one partition per device first: keys resident, kernels warm, before timing
        eng.result(eng.submit(kid, witnesses[: len(cfg.device_names) * 2 or 1]), timeout=900)
        tables_ready(eng.keys)  # (and their tables of multiples, built beside those, in place)
        stop = threading.Event()
        samples: list = []
        sampler = threading.Thread(target=lambda: samples.extend(_board_busy(eng, stop=stop)))
        sampler.start()
        t0 = time.perf_counter()
        ids = [eng.submit(kid, witnesses, kind="bench", priority=priority) for _ in range(jobs)]
        results = [eng.result(j, timeout=3600) for j in ids]
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        bad = [r["error"] for r in results if r["state"] != "done"]
        if bad:
            raise RuntimeError(f"bench job failed: {bad[0]}")
        figs = _device_figures(_intervals(eng, ids), WARMUP_PARTITIONS)
        figs["board_busy_fraction"] = _board_fraction(samples, figs.pop("windows"))
        parts = [p for r in results for p in r["partitions"]]
        figs.update(
            wall_s=wall,
            partitions=len(parts),
            throughput_pps=len(parts) / wall,
            load_avg=round(os.getloadavg()[0], 1),
            synth_ms=statistics.median(p["synth_ms"] for p in parts),
            gpu_ms=statistics.median(p["gpu_ms"] for p in parts),
            finalize_ms=statistics.median(p["finalize_ms"] for p in parts),
            high_water_bytes=eng.budget.high_water,
        )
        return figs
    finally:
        eng.stop(drain_deadline=5)


def pipeline(profile: str) -> dict:
    from cuzk.engine import EngineConfig
    from cuzk.testing import prover_double as double

    s = PIPELINE[profile]
    with tempfile.TemporaryDirectory() as tmp:
        key = Path(tmp) / "key.json"
        double.write_key(key, n_vars=1 << 10, domain_size=1 << 11)
        ws = [double.make_witness(1 << 10, i) for i in range(s["parts"])]
        cfg = EngineConfig(
            devices=s["devices"],
            synth_workers=s["synth_workers"],
            prover="cuzk.testing.prover_double",
            memory_budget="2GiB",
            prover_options={
                "synth_secs": s["synth"],
                "start_secs": s["start"],
                "finish_secs": s["finish"],
            },
        )
        figs = _run_engine(cfg, key, ws, s["jobs"])
    n_dev = len(cfg.validated().device_names)
    serial = 1.0 / (s["synth"] + s["start"] + s["finish"])
    figs.update(
        part="pipeline (double)",
        devices=s["devices"],
        serial_pps=serial,
        vs_serial=figs["throughput_pps"] / serial,
        **_capacity(figs, n_dev, s["synth_workers"]),
    )
    return figs


def _capacity(figs, n_dev, synth_workers) -> dict:
    """The slower stage's capacity from the stage times measured inside the engine (so a
    stage slowed by contention for the CPU counts as it really ran), and how close the
    steady-state throughput comes to it."""
    device_cap = n_dev / (figs["gpu_ms"] / 1e3)
    synth_cap = synth_workers / (figs["synth_ms"] / 1e3)
    cap = min(device_cap, synth_cap)
    return {
        "stage_ms": f"{figs['synth_ms']:.1f}/{figs['gpu_ms']:.1f}/{figs['finalize_ms']:.1f}",
        "slower_stage": "device" if device_cap <= synth_cap else "synthesis",
        "slower_stage_pps": cap,
        "vs_slower_stage": (figs["steady_pps"] or 0) / cap,
        "run_vs_slower_stage": figs["throughput_pps"] / cap,
    }


def _real_circuit(spec: str) -> dict:
    if spec.startswith("fixture:"):
        d = ROOT / "tests" / "fixtures" / spec.split(":")[1]
        return {
            "zkey": d / "circuit.zkey",
            "wtns": d / "witness_0.wtns",
            "vk": d / "verification_key.json",
        }
    from bench.circuits import circuit

    family, log2n = spec.split(":")
    return circuit(family, int(log2n))


def real(s: dict, profile: str) -> dict:
    import cuzk.groth16 as groth16
    from cuzk.engine import EngineConfig

    files = _real_circuit(s["circuit"])
    key, w, dev = in_process(files, "cuda" if profile == "gpu" else "cpu")
    dev.load_key(key)
    groth16.prove(key, w, dev)  # compile / load kernels
    # serial baseline, and each stage's capacity on its own
    t_syn, t_start, t_fin = [], [], []
    n_serial = max(3, min(8, s["parts"]))
    t0 = time.perf_counter()
    for _ in range(n_serial):
        a = time.perf_counter()
        syn = groth16.synthesize(key, w)
        b = time.perf_counter()
        partial = groth16.prove_start(key, syn.buffers, w, dev)
        c = time.perf_counter()
        groth16.prove_finish(key, partial, w)
        d = time.perf_counter()
        t_syn.append(b - a)
        t_start.append(c - b)
        t_fin.append(d - c)
    serial = n_serial / (time.perf_counter() - t0)
    cfg = EngineConfig(devices=s["devices"], synth_workers=s["synth_workers"], memory_budget="8GiB")
    ws = [files["wtns"]] * s["parts"]
    figs = _run_engine(cfg, files["zkey"], ws, s["jobs"])
    n_dev = len(cfg.validated().device_names)
    figs.update(
        part=f"real prover ({s['circuit']}, domain 2^{key.domain_size.bit_length() - 1})",
        circuit=s["circuit"],
        devices=s["devices"],
        serial_pps=serial,
        vs_serial=figs["throughput_pps"] / serial,
        serial_stage_ms=f"{statistics.median(t_syn) * 1e3:.1f}/"
        f"{statistics.median(t_start) * 1e3:.1f}/"
        f"{statistics.median(t_fin) * 1e3:.1f}",
        **_capacity(figs, n_dev, s["synth_workers"]),
    )
    return figs


def _daemon_batch(client, zkey, wtns, n: int) -> tuple[float, list[dict]]:
    """(wall seconds, results) of n one-partition jobs submitted at once to a daemon (each
    POST /v1/jobs answers once its job is queued; the witness by path, read by the daemon),
    from the first submission to the last result."""
    t0 = time.perf_counter()
    ids = [client.submit(zkey, [wtns], kind="bench", upload=False)["job_id"] for _ in range(n)]
    results = [client.wait(j, timeout=3600) for j in ids]
    wall = time.perf_counter() - t0
    bad = [r.get("error") or r.get("state") for r in results if r.get("state") != "done"]
    if bad:
        raise RuntimeError(f"a throughput job did not finish: {bad[0]}")
    return wall, results


def _rapidsnark_batch(rapidsnark: str, files: dict, n: int, out: Path) -> float:
    """Wall seconds of n rapidsnark `prover` commands back to back on the same files."""
    cmd = [rapidsnark, files["zkey"], files["wtns"], out / "p_rs.json", out / "pub_rs.json"]
    t0 = time.perf_counter()
    for _ in range(n):
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"rapidsnark failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    return time.perf_counter() - t0


def throughput(s: dict, rapidsnark: str | None) -> dict:
    """Issue #35's target 4: s["jobs"] one-partition jobs at once through a warm `cuzk serve`
    (its defaults; the key registered and loaded by one untimed job first) against as many
    rapidsnark commands back to back on the same key and witness, alternating by round; every
    daemon proof (and rapidsnark's last) checked by cuzk's verifier."""
    from bench.bench_prove_server import start_daemon, stop_daemon, tables_ready
    from cuzk.client import Client
    from cuzk.groth16 import ProvingKey
    from cuzk.groth16.verifier import VerifyingKey, load, verify, verify_files

    files = _real_circuit(s["circuit"])
    n = s["jobs"]
    log2n = ProvingKey.open(files["zkey"]).domain_size.bit_length() - 1
    vk = VerifyingKey.from_json(load(files["vk"], "verification key"), str(files["vk"]))
    daemon, peer, stages = [], [], []
    valid = True
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-throughput-") as folder:
        out = Path(folder)
        proc, url = start_daemon(folder, key_root=files["zkey"].parent)
        try:
            client = Client(url, timeout=600)
            _daemon_batch(client, files["zkey"], files["wtns"], 1)  # untimed: key loaded
            tables_ready(client.keys)  # (its tables of multiples built beside that job)
            if rapidsnark:
                _rapidsnark_batch(rapidsnark, files, 1, out)  # untimed: page cache
            for i in range(s["rounds"]):
                wall, results = _daemon_batch(client, files["zkey"], files["wtns"], n)
                daemon.append(wall)
                for r in results:
                    valid &= all(
                        verify(vk, pub, proof)
                        for pub, proof in zip(r["public"], r["proofs"], strict=True)
                    )
                    stages += r["partitions"]
                if rapidsnark:
                    peer.append(_rapidsnark_batch(rapidsnark, files, n, out))
                    valid &= verify_files(files["vk"], out / "pub_rs.json", out / "p_rs.json")
                print(
                    f"  throughput {s['circuit']} round {i + 1}/{s['rounds']}: {n} jobs through "
                    f"the daemon {wall:.2f} s"
                    + (f", {n} rapidsnark commands {peer[-1]:.2f} s" if rapidsnark else ""),
                    flush=True,
                )
            # where the key is loaded: the devices `cuzk serve` chose by its defaults
            devices = sorted({d for k in client.keys() for d in k.get("devices") or []})
        finally:
            stop_daemon(proc)
    if not valid:
        raise RuntimeError(f"a throughput proof of {s['circuit']} does not verify")
    row = {
        "part": f"throughput ({s['circuit']}, domain 2^{log2n})",
        "circuit": s["circuit"],
        "log2n": log2n,
        "jobs": n,
        "daemon_s": statistics.median(daemon),
        "daemon_min_s": min(daemon),
        "daemon_per_proof_s": statistics.median(daemon) / n,
        "stage_ms": "/".join(
            f"{statistics.median(p[k] for p in stages):.1f}"
            for k in ("synth_ms", "gpu_ms", "finalize_ms")
        ),
        "devices": ",".join(devices),
        "proofs_valid": True,
        "load_avg": round(os.getloadavg()[0], 1),
    }
    if peer:
        row.update(
            rapidsnark_s=statistics.median(peer),
            rapidsnark_min_s=min(peer),
            rapidsnark_per_proof_s=statistics.median(peer) / n,
            daemon_vs_rapidsnark=statistics.median(daemon) / statistics.median(peer),
            best_daemon_vs_rapidsnark=min(d / r for d, r in zip(daemon, peer, strict=True)),
        )
    print(
        f"  throughput {s['circuit']}: {n} jobs through the daemon {row['daemon_s']:.2f} s"
        + (
            f", {n} rapidsnark commands {row['rapidsnark_s']:.2f} s: "
            f"{row['daemon_vs_rapidsnark']:.2f}x"
            if peer
            else ""
        ),
        flush=True,
    )
    return row


THROUGHPUT_COLUMNS = [
    "part",
    "jobs",
    "daemon_s",
    "rapidsnark_s",
    "daemon_vs_rapidsnark",
    "best_daemon_vs_rapidsnark",
    "daemon_per_proof_s",
    "rapidsnark_per_proof_s",
    "stage_ms",
    "devices",
    "load_avg",
]


COLUMNS = [
    "part",
    "devices",
    "stage_ms",
    "partitions",
    "throughput_pps",
    "serial_pps",
    "vs_serial",
    "slower_stage",
    "slower_stage_pps",
    "steady_pps",
    "vs_slower_stage",
    "busy_fraction",
    "board_busy_fraction",
    "gap_median_ms",
    "gap_p95_ms",
    "load_avg",
]


def run(profile: str = "quick") -> dict:
    logging.getLogger("cuzk.engine").setLevel(logging.WARNING)
    rows = []
    print("  pipeline with the prover double ...", flush=True)
    rows.append(pipeline(profile))
    for s in REAL[profile]:
        print(f"  real prover, {s['circuit']} ...", flush=True)
        try:
            rows.append(real(s, profile))
        except Exception as exc:  # report the parts that ran; say why this one did not
            print(f"  real prover part failed: {exc}", flush=True)
            rows.append({"part": f"real prover ({s['circuit']})", "error": str(exc)})
    print(table(rows, COLUMNS))
    rapidsnark, origin = find_rapidsnark()
    if not rapidsnark:
        print(f"  throughput: {origin}", flush=True)
    trows = []
    for s in THROUGHPUT[profile]:
        print(f"  throughput, {s['jobs']} jobs of {s['circuit']} through `cuzk serve` ...")
        try:
            trows.append(throughput(s, rapidsnark))
        except Exception as exc:  # report the parts that ran; say why this one did not
            print(f"  throughput part failed: {exc}", flush=True)
            family, _, log2n = s["circuit"].partition(":")
            trows.append(
                {"part": f"throughput ({s['circuit']})", "circuit": s["circuit"], "error": str(exc)}
                | ({"log2n": int(log2n)} if family != "fixture" else {})
            )
    print(table(trows, [c for c in THROUGHPUT_COLUMNS + ["error"] if any(c in r for r in trows)]))
    p = rows[0]
    return {
        "rows": rows,
        "throughput": trows,
        "rapidsnark": {"installed": bool(rapidsnark), "origin": origin},
        "targets": {
            "busy_fraction>=0.97": p["busy_fraction"] >= 0.97,
            "gap_median_ms<2": p["gap_median_ms"] < 2.0,
            "throughput>=0.9x_slower_stage": p["vs_slower_stage"] >= 0.9,
        },
    }


# --- what the report shows: targets and plot ----------------------------------------------------


def targets(get) -> list[dict]:
    """Issue #7's targets: devices busy >= 97% in steady state, median idle gap <= 2 ms,
    throughput >= 0.9x the slower stage's capacity (with the real prover too, when run);
    issue #25's target 6: the same >= 0.9x with the real prover on a circomlib family;
    issue #35's target 4: N one-partition jobs at once through `cuzk serve` <= 0.5x the time
    of N rapidsnark commands back to back, at 2^13 and 2^16."""
    rows = (get() or {}).get("rows") or []
    pipe = next((r for r in rows if str(r.get("part", "")).startswith("pipeline")), None)
    out = [
        target(
            "engine: device busy in steady state",
            "#7",
            0.97,
            "",
            pipe and pipe.get("busy_fraction"),
            upper=False,
            suite="engine",
            note=pipe and f"pipeline with the prover double on {pipe.get('devices')}",
        ),
        target(
            "engine: median idle gap",
            "#7",
            2.0,
            "ms",
            pipe and pipe.get("gap_median_ms"),
            suite="engine",
            note=pipe and f"p95 {fmt(pipe.get('gap_p95_ms'))} ms",
        ),
        target(
            "engine: throughput vs the slower stage",
            "#7",
            0.9,
            "x",
            pipe and pipe.get("vs_slower_stage"),
            upper=False,
            suite="engine",
            note=pipe and f"pipelined {fmt(pipe.get('vs_serial'))}x the serial baseline",
        ),
    ]
    for real_row in rows:
        if not str(real_row.get("part", "")).startswith("real") or "vs_serial" not in real_row:
            continue
        family = str(real_row.get("circuit", "")).partition(":")[0]
        circomlib = family in REAL_FAMILIES
        out.append(
            target(
                "engine, real prover"
                + (f" on {real_row['circuit']}" if circomlib else "")
                + ": throughput vs the slower stage",
                "#25" if circomlib else "#7",
                0.9,
                "x",
                real_row.get("vs_slower_stage"),
                upper=False,
                suite="engine",
                note=f"{real_row.get('part')}: pipelined "
                f"{fmt(real_row.get('vs_serial'))}x the serial baseline, busy "
                f"{fmt(real_row.get('busy_fraction'))}",
            )
        )
    return out + throughput_targets(get)


def throughput_targets(get) -> list[dict]:
    """Issue #35's target 4, from the throughput rows at 2^13 and 2^16 (the best round's
    ratio beside the median's)."""
    res = get() or {}
    rs = res.get("rapidsnark") or {}
    out = []
    for log2n in (13, 16):
        r = find_row(res.get("throughput"), log2n=log2n) or {}
        measured = r.get("daemon_vs_rapidsnark")
        if measured is not None:
            note = (
                f"{r['jobs']} jobs of {r['circuit']}: daemon {fmt(r['daemon_s'])} s, "
                f"rapidsnark {fmt(r['rapidsnark_s'])} s; load {fmt(r.get('load_avg'))}"
            )
        elif r.get("error"):
            note = f"failed: {r['error']}"
        elif res and not rs.get("installed", True):
            note = rs.get("origin") or "rapidsnark not built here"
        else:
            note = "no run at this size" if res else ""
        out.append(
            target(
                f"engine: one-partition jobs at once through `cuzk serve`, 2^{log2n}, "
                "÷ as many rapidsnark commands back to back",
                "#35",
                THROUGHPUT_GOAL,
                "x",
                measured,
                best=r.get("best_daemon_vs_rapidsnark") if measured is not None else None,
                note=note,
                suite="engine",
            )
        )
    return out


def plot(name, entry, res, img):
    rows = [r for r in res.get("rows") or [] if r.get("slower_stage_pps")]
    if not rows:
        return []
    fig, (ax,) = plots.figure("Engine throughput against the slower stage's capacity", entry)
    series = {
        "pipelined (engine), whole run": "throughput_pps",
        "pipelined, steady state": "steady_pps",
        "serial baseline": "serial_pps",
    }
    plots.bars(
        ax,
        [str(r.get("part")) for r in rows],
        {lab: [(r.get(c) or 0) / r["slower_stage_pps"] for r in rows] for lab, c in series.items()},
    )
    w = 0.8 / len(series)
    for i, r in enumerate(rows):
        for j, c in enumerate(series.values()):
            v = r.get(c) or 0
            ax.text(
                i + j * w - 0.4 + w / 2,
                v / r["slower_stage_pps"] + 0.01,
                f"{v:.1f}/s",
                ha="center",
                va="bottom",
                fontsize=6.5,
            )
    ax.axhline(0.9, color="crimson", linestyle="--", label="target 0.9x")
    ax.set_ylabel("x the slower stage's capacity")
    ax.set_ylim(0, 1.45)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    return [("engine", plots.save(fig, f"bench-{name}.png", img))]


if __name__ == "__main__":
    import sys

    run(sys.argv[1] if len(sys.argv) > 1 else "quick")
