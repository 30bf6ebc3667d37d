"""Suite `witness`: `cuzk wtns calculate` against `snarkjs wtns calculate` on the same files.

For each size (squaring-chain circuits of tests/circuits/squarechain.circom with 2^k steps,
so at least 2^k wires; compiled by circom2 --wasm and cached in bench/work/witness-*):
- one `cuzk wtns calculate` with an empty module cache (the first run on a machine, which
  compiles the .wasm), then rounds of the two whole commands alternately, after one untimed
  run of each (page cache, node warm): min / median / max, the ratio of the medians, and
  each command's peak RSS (from wait4); the two .wtns files must be identical;
- the in-process witness time (what a synthesis process pays per partition: the module
  compiled, an instance ready, the witness written into a preallocated array), split into
  setting the inputs and running the circuit vs gathering the witness;
- the host overhead per witness value, measured apart from any circuit: the helper's gather
  loop against a stub circuit whose getWitness does nothing (direct reads of the circuit's
  memory, and the fallback with readSharedRWMemory calls), plus the copy into mapped memory.
Targets (issue #14): in process >= 3x faster than snarkjs's whole command at 2^15 wires and
up; the whole command no slower than snarkjs's there; host overhead <= 50 ns a value.
Run alone: ``python -m bench.bench_witness [smoke|quick|full]``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.circuits import BIN, ROOT, ensure_tools
from bench.tables import table, target

WORK = ROOT / "bench" / "work"
TEMPLATE = ROOT / "tests" / "circuits" / "squarechain.circom"
SIZES = {"smoke": [8], "quick": [12, 15, 17], "full": [12, 15, 17, 19], "gpu": [12, 15, 17]}
ROUNDS = {"smoke": 1, "quick": 3, "full": 5, "gpu": 3}
STUB_VALUES = {"smoke": 1 << 14, "quick": 1 << 20, "full": 1 << 20, "gpu": 1 << 20}
INPUT = {"x": "3", "b": "5"}


def _source(log2n: int) -> str:
    src = TEMPLATE.read_text().rsplit("component main", 1)[0]
    return src + f"component main {{public [b]}} = SquareChain({1 << log2n});\n"


def build(log2n: int, log=print) -> tuple[Path, Path]:
    """(wasm, input.json) of the 2^log2n-step chain, compiled once and cached."""
    d = WORK / f"witness-squarechain-{log2n}"
    wasm, inp, src = d / "circuit_js" / "circuit.wasm", d / "input.json", _source(log2n)
    circom = d / "circuit.circom"
    if wasm.exists() and inp.exists() and circom.exists() and circom.read_text() == src:
        return wasm, inp
    ensure_tools()
    tmp = WORK / f".witness-squarechain-{log2n}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        (tmp / "circuit.circom").write_text(src)
        log(f"  compiling squarechain 2^{log2n} (circom2 --wasm), cached in {WORK}")
        p = subprocess.run(
            [str(BIN / "circom2"), str(tmp / "circuit.circom"), "--wasm", "-o", str(tmp)],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if p.returncode != 0:
            raise RuntimeError(f"circom2 failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        (tmp / "input.json").write_text(json.dumps(INPUT))
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return wasm, inp


def _command(cmd: list, env=None) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one run of a command; raises if it fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {proc.returncode}: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def _stats(xs):
    return min(xs), statistics.median(xs), max(xs)


def measure_size(log2n: int, rounds: int, log=print) -> dict:
    import numpy as np

    from cuzk.witness import Circuit, read_inputs

    wasm, inp = build(log2n, log)
    work = Path(tempfile.mkdtemp(prefix="cuzk-bench-witness-"))
    try:
        ours, theirs = work / "cuzk.wtns", work / "snarkjs.wtns"
        cache = work / "cache"
        env = dict(os.environ, CUZK_CACHE_DIR=str(cache))
        cuzk = [sys.executable, "-m", "cuzk.cli", "wtns", "calculate", wasm, inp, ours]
        snarkjs = [BIN / "snarkjs", "wtns", "calculate", wasm, inp, theirs]
        cold, _ = _command(cuzk, env)  # compiles the .wasm and fills the cache
        _command(snarkjs)
        c_wall, c_rss, s_wall, s_rss = [], [], [], []
        for _ in range(rounds):
            w, r = _command(snarkjs)
            s_wall.append(w)
            s_rss.append(r)
            w, r = _command(cuzk, env)
            c_wall.append(w)
            c_rss.append(r)
        if ours.read_bytes() != theirs.read_bytes():
            raise RuntimeError(f"2^{log2n}: cuzk's witness differs from snarkjs's")
        circuit = Circuit(wasm)
        calc = circuit.calculator()
        inputs = read_inputs(inp)
        out = np.zeros((circuit.witness_size, 4), dtype=np.uint64)
        calc.calculate(inputs, out=out)  # untimed: first-touch of the instance's memory
        times, run, gather = [], [], []
        for _ in range(max(3, rounds)):
            t0 = time.perf_counter()
            calc.calculate(inputs, out=out)
            times.append(time.perf_counter() - t0)
            run.append(calc.timings["run_s"])
            gather.append(calc.timings["gather_s"])
        if out.tobytes() != theirs.read_bytes()[-circuit.witness_size * 32 :]:
            raise RuntimeError(f"2^{log2n}: the in-process witness differs from snarkjs's")
        n = circuit.witness_size
        s_min, s_med, s_max = _stats(s_wall)
        c_min, c_med, c_max = _stats(c_wall)
        inproc = statistics.median(times)
        return {
            "log2_wires": log2n,
            "wires": n,
            "snarkjs_cmd_s": s_med,
            "snarkjs_cmd_min_s": s_min,
            "snarkjs_cmd_max_s": s_max,
            "cuzk_cmd_s": c_med,
            "cuzk_cmd_min_s": c_min,
            "cuzk_cmd_max_s": c_max,
            "cuzk_cmd_vs_snarkjs": c_med / s_med,
            "cuzk_cold_cmd_s": cold,
            "in_process_s": inproc,
            "snarkjs_cmd_over_in_process": s_med / inproc,
            "run_s": statistics.median(run),
            "gather_s": statistics.median(gather),
            "gather_ns_per_wire": statistics.median(gather) / n * 1e9,
            "snarkjs_rss_mib": max(s_rss),
            "cuzk_rss_mib": max(c_rss),
            "instance_mib": calc.memory_bytes / 2**20,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def host_overhead(n: int) -> dict:
    """ns per value of the helper's machinery alone (a stub circuit), and of the copy out."""
    import ctypes

    import numpy as np
    import wasmtime as w

    from cuzk.witness.cache import wasm_runtime
    from cuzk.witness.calculator import PAGE, _helper

    eng = wasm_runtime()
    store = w.Store(eng)
    stub = w.Module(
        eng,
        w.wat2wasm("""(module (memory (export "memory") 1)
      (func (export "getWitness") (param i32))
      (func (export "readSharedRWMemory") (param i32) (result i32) local.get 0)
      (func (export "writeSharedRWMemory") (param i32 i32))
      (func (export "setInputSignal") (param i32 i32 i32)))"""),
    )
    x = w.Instance(store, stub, []).exports(store)
    funcs = [
        x["getWitness"],
        x["readSharedRWMemory"],
        x["writeSharedRWMemory"],
        x["setInputSignal"],
    ]
    out = np.ones((n, 4), dtype=np.uint64)  # mapped: the daemon's segment is too
    res = {"values": n}
    for direct in (True, False):
        hx = w.Instance(
            store, _helper(eng, direct), funcs + ([x["memory"]] if direct else [])
        ).exports(store)
        hx["memory"].grow(store, n * 32 // PAGE + 1)
        fn = hx["gather_direct" if direct else "gather"]
        args = (store, 0, n, 64) if direct else (store, 0, n)
        src = ctypes.cast(hx["memory"].data_ptr(store), ctypes.c_void_p).value
        best_g = best_c = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            fn(*args)
            t1 = time.perf_counter()
            ctypes.memmove(out.ctypes.data, src, n * 32)
            t2 = time.perf_counter()
            best_g, best_c = min(best_g, t1 - t0), min(best_c, t2 - t1)
        key = "direct" if direct else "calls"
        res[f"gather_{key}_ns"] = best_g / n * 1e9
        res["copy_ns"] = best_c / n * 1e9
    res["host_overhead_ns"] = res["gather_direct_ns"] + res["copy_ns"]
    return res


COLUMNS = [
    "log2_wires",
    "wires",
    "snarkjs_cmd_s",
    "cuzk_cmd_s",
    "cuzk_cmd_vs_snarkjs",
    "cuzk_cold_cmd_s",
    "in_process_s",
    "snarkjs_cmd_over_in_process",
    "run_s",
    "gather_s",
    "gather_ns_per_wire",
    "snarkjs_rss_mib",
    "cuzk_rss_mib",
]


def _targets_met(rows: list[dict], overhead: dict) -> list[dict]:
    big = [r for r in rows if r["log2_wires"] >= 15]
    out = []
    if big:
        worst_in = min(r["snarkjs_cmd_over_in_process"] for r in big)
        worst_cmd = max(r["cuzk_cmd_vs_snarkjs"] for r in big)
        out += [
            {
                "target": "in process vs snarkjs command, >= 2^15 wires",
                "want": ">= 3x",
                "measured": f"{worst_in:.1f}x",
                "met": worst_in >= 3,
            },
            {
                "target": "cuzk command vs snarkjs command, >= 2^15 wires",
                "want": "<= 1.0x",
                "measured": f"{worst_cmd:.2f}x",
                "met": worst_cmd <= 1.0,
            },
        ]
    out.append(
        {
            "target": "host overhead per witness value",
            "want": "<= 50 ns",
            "measured": f"{overhead['host_overhead_ns']:.1f} ns",
            "met": overhead["host_overhead_ns"] <= 50,
        }
    )
    return out


def run(profile: str = "quick") -> dict:
    rows = []
    for log2n in SIZES[profile]:
        print(f"  witness 2^{log2n} ...", flush=True)
        rows.append(measure_size(log2n, ROUNDS[profile]))
    print(table(rows, COLUMNS))
    overhead = host_overhead(STUB_VALUES[profile])
    print(table([overhead], list(overhead)))
    met = _targets_met(rows, overhead)
    print(table(met, ["target", "want", "measured", "met"]))
    return {
        "rows": rows,
        "host_overhead": overhead,
        "targets": met,
        "circuit": "squarechain (tests/circuits/squarechain.circom), 2^k steps",
    }


# --- what the report shows: targets ---------------------------------------------------------------


def targets(get) -> list[dict]:
    """Issue #14's targets (squaring chains): from 2^15 wires up, the in-process witness >= 3x
    faster than snarkjs's whole command and `cuzk wtns calculate` no slower than it; host
    overhead <= 50 ns a value."""
    witness = get()
    rows = [r for r in (witness or {}).get("rows") or [] if r.get("log2_wires", 0) >= 15]
    over = ((witness or {}).get("host_overhead") or {}).get("host_overhead_ns")
    worst_in = min((r["snarkjs_cmd_over_in_process"] for r in rows), default=None)
    worst_cmd = max((r["cuzk_cmd_vs_snarkjs"] for r in rows), default=None)
    span = (
        f"2^{rows[0]['log2_wires']}..2^{rows[-1]['log2_wires']} wires, worst size" if rows else ""
    )
    return [
        target(
            "witness in process: snarkjs's command ÷ cuzk's time",
            "#14",
            3.0,
            "x",
            worst_in,
            upper=False,
            note=span,
            suite="witness",
        ),
        target(
            "`cuzk wtns calculate` ÷ `snarkjs wtns calculate`",
            "#14",
            1.0,
            "x",
            worst_cmd,
            note=span,
            suite="witness",
        ),
        target("witness: host overhead per value", "#14", 50.0, "ns", over, suite="witness"),
    ]


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "quick")
