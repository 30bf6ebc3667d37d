"""Suite `prove`: `cuzk prove` against `snarkjs groth16 prove` on the same zkey and witness.

Whole commands are timed alternately (cuzk, snarkjs, cuzk, ...) so that both see the same
machine load; a third column times cuzk in-process with the key already mapped and the
kernels compiled (what the daemon pays per proof), with a per-phase breakdown.
rapidsnark does not install from the package registries here; the issue's figure for it on
this machine kind (0.70 s for a 2^15 circuit) is quoted for reference, not re-measured.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from bench.circuits import BIN, toyhash
from bench.report import table

SIZES = {"smoke": [10], "quick": [12, 14, 15, 16], "full": [12, 13, 14, 15, 16, 17, 18],
         "gpu": [16, 18, 20]}
REPEATS = {"smoke": 1, "quick": 3, "full": 5, "gpu": 3}


def _time(cmd) -> float:
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {p.stderr.strip()[-500:]}")
    return dt


def _stats(xs):
    return min(xs), statistics.median(xs), max(xs)


def run(profile: str = "quick") -> dict:
    from cuzk.prover import ProvingKey, load_witness, open_device, prove

    rows, phases = [], []
    device = "cuda" if profile == "gpu" else "cpu"
    for log2n in SIZES[profile]:
        files = toyhash(log2n)
        work = files["zkey"].parent
        cuzk_cmd = [sys.executable, "-m", "cuzk.cli", "prove", "--device", device, files["zkey"],
                    files["wtns"], work / "p_cuzk.json", work / "pub_cuzk.json"]
        snark_cmd = [BIN / "snarkjs", "groth16", "prove", files["zkey"], files["wtns"],
                     work / "p_snarkjs.json", work / "pub_snarkjs.json"]
        _time(cuzk_cmd)  # warm the Numba cache and the page cache for both
        cz, sj = [], []
        for _ in range(REPEATS[profile]):
            cz.append(_time(cuzk_cmd))
            sj.append(_time(snark_cmd))
        key = ProvingKey.open(files["zkey"])
        w = load_witness(files["wtns"], key)
        dev = open_device(device)
        prove(key, w, dev)
        warm = []
        for _ in range(REPEATS[profile]):
            t0 = time.perf_counter()
            proof = prove(key, w, dev)
            warm.append(time.perf_counter() - t0)
        phases.append({"log2n": log2n, **{k: round(v, 2) for k, v in proof.timings.items()}})
        cmin, cmed, cmax = _stats(cz)
        smin, smed, smax = _stats(sj)
        row = {"log2n": log2n, "cuzk_cmd_s": cmed, "cuzk_min_s": cmin, "cuzk_max_s": cmax,
               "snarkjs_s": smed, "snarkjs_min_s": smin, "snarkjs_max_s": smax,
               "cuzk_warm_s": statistics.median(warm),
               "speedup_vs_snarkjs": smed / cmed,
               "speedup_warm_vs_snarkjs": smed / statistics.median(warm)}
        rows.append(row)
        print(f"  2^{log2n}: cuzk {cmed:.3f} s (warm {row['cuzk_warm_s']:.3f} s), "
              f"snarkjs {smed:.3f} s, ratio {row['speedup_vs_snarkjs']:.2f}x", flush=True)
    print(table(rows, ["log2n", "cuzk_cmd_s", "cuzk_warm_s", "snarkjs_s", "speedup_vs_snarkjs",
                       "speedup_warm_vs_snarkjs"]))
    print(table(phases))
    return {"device": device, "rows": rows, "phases_ms": phases,
            "rapidsnark_reference": "0.70 s for a 2^15 circuit on this machine kind "
                                    "(issue #4; not installable from the registries)"}
