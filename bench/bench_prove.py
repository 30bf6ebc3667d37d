"""Suite `prove`: `cuzk prove` against `snarkjs groth16 prove` on the same zkey and witness.

For each domain size (toyhash circuits from bench.circuits; keys by `snarkjs groth16 setup` up
to 2^10, by `cuzk setup` above):
- rounds of: the `cuzk prove` command, the `snarkjs groth16 prove` command, and one proof by
  cuzk in process with the key mapped and the kernels loaded (what `cuzk serve` pays per
  proof), after one untimed run of each (Numba cache, page cache and node warm), so that all
  three see the same machine load: min / median / max and the ratios of the medians; the
  per-phase breakdown from Proof.timings (medians over the rounds); the command minus the
  in-process proof is cuzk's start-up (interpreter, imports, cached kernels, key mapping);
- the proof the cuzk command wrote is checked with cuzk's verifier against the key's
  verification key (a fast wrong prover would be no result).
rapidsnark is timed too when a `rapidsnark` binary is on PATH; it does not install from the
package registries (npm has none), so otherwise the result says so and carries issue #4's
figure for this machine kind (0.70 s for a 2^15 circuit, snarkjs 3.98 s on the same).
Profile gpu runs `cuzk prove --device cuda` at the device sizes.
Run alone: ``python -m bench.bench_prove [smoke|quick|full|gpu]``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.circuits import BIN, toyhash
from bench.report import RAPIDSNARK_ISSUE_S, table

SIZES = {"smoke": [10], "quick": [12, 14, 15, 16], "full": [12, 13, 14, 15, 16, 17, 18],
         "gpu": [16, 18, 20]}
REPEATS = {"smoke": 1, "quick": 4, "full": 7, "gpu": 3}  # rounds of (cuzk, snarkjs, in process)
ISSUE = {"log2n": 15, "rapidsnark_s": RAPIDSNARK_ISSUE_S, "snarkjs_s": 3.98,
         "circuit": "30000 constraints (domain 2^15)"}


def _time(cmd) -> float:
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{Path(str(cmd[0])).name} failed ({p.returncode}): "
                           f"{(p.stderr or p.stdout).strip()[-500:]}")
    return dt


def _stats(xs):
    return min(xs), statistics.median(xs), max(xs)


def _shown(path) -> str:
    """A command part as recorded in the results: relative to the checkout when inside it."""
    from bench.circuits import ROOT

    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _cuzk_command() -> list:
    """The installed `cuzk` entry point next to this interpreter, else `python -m cuzk.cli`."""
    script = Path(sys.executable).with_name("cuzk")
    return [script] if script.exists() else [sys.executable, "-m", "cuzk.cli"]


def _rapidsnark() -> str | None:
    return shutil.which("rapidsnark")


def _size(log2n: int, profile: str, device: str, rapidsnark: str | None):
    from cuzk.prover import ProvingKey, load_witness, open_device, prove
    from cuzk.verifier import verify_files

    files = toyhash(log2n)
    work = files["zkey"].parent
    cmds = {
        "cuzk": _cuzk_command() + ["prove", "--device", device, files["zkey"], files["wtns"],
                                   work / "p_cuzk.json", work / "pub_cuzk.json"],
        "snarkjs": [BIN / "snarkjs", "groth16", "prove", files["zkey"], files["wtns"],
                    work / "p_snarkjs.json", work / "pub_snarkjs.json"],
    }
    if rapidsnark:
        cmds["rapidsnark"] = [rapidsnark, files["zkey"], files["wtns"], work / "p_rs.json",
                              work / "pub_rs.json"]
    key = ProvingKey.open(files["zkey"])
    w = load_witness(files["wtns"], key)
    dev = open_device(device)
    for cmd in cmds.values():  # untimed: Numba cache, page cache, node's module cache
        _time(cmd)
    prove(key, w, dev)  # untimed: kernels loaded, key pages touched
    times = {k: [] for k in cmds}
    warm, phase_runs = [], []
    for i in range(REPEATS[profile]):  # one of each per round: all see the same load
        for k, cmd in cmds.items():
            times[k].append(_time(cmd))
        t0 = time.perf_counter()
        proof = prove(key, w, dev)
        warm.append(time.perf_counter() - t0)
        phase_runs.append(proof.timings)
        print(f"  2^{log2n} round {i + 1}/{REPEATS[profile]}: "
              + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items())
              + f", cuzk in process {warm[-1]:.2f} s", flush=True)
    valid = verify_files(files["vk"], work / "pub_cuzk.json", work / "p_cuzk.json")
    phases = {"log2n": log2n}
    for name in phase_runs[0]:
        phases[name] = round(statistics.median(t.get(name, 0.0) for t in phase_runs), 2)

    cmin, cmed, cmax = _stats(times["cuzk"])
    smin, smed, smax = _stats(times["snarkjs"])
    wmin, wmed, wmax = _stats(warm)
    info = json.loads(files["info"].read_text())
    row = {"log2n": log2n, "constraints": info.get("constraints"),
           "key_by": " ".join(str(info.get("setup", "?")).split()[:2]),
           "cuzk_cmd_s": cmed, "cuzk_min_s": cmin, "cuzk_max_s": cmax,
           "snarkjs_s": smed, "snarkjs_min_s": smin, "snarkjs_max_s": smax,
           "cuzk_warm_s": wmed, "cuzk_warm_min_s": wmin, "cuzk_warm_max_s": wmax,
           "speedup_vs_snarkjs": smed / cmed, "speedup_warm_vs_snarkjs": smed / wmed,
           "startup_s": cmed - wmed, "cuzk_proof_valid": bool(valid)}
    if rapidsnark:
        rmin, rmed, rmax = _stats(times["rapidsnark"])
        row.update(rapidsnark_s=rmed, rapidsnark_min_s=rmin, rapidsnark_max_s=rmax,
                   speedup_vs_rapidsnark=rmed / cmed)
    print(f"  2^{log2n}: cuzk {cmed:.3f} s (warm {wmed:.3f} s), snarkjs {smed:.3f} s, "
          f"ratio {row['speedup_vs_snarkjs']:.2f}x (warm {row['speedup_warm_vs_snarkjs']:.1f}x)"
          + ("" if valid else "  PROOF DOES NOT VERIFY"), flush=True)
    if not valid:
        raise RuntimeError(f"cuzk prove's proof for toyhash 2^{log2n} does not verify")
    return row, phases


def run(profile: str = "quick") -> dict:
    device = "cuda" if profile == "gpu" else "cpu"
    rapidsnark = _rapidsnark()
    rows, phases = [], []
    for log2n in SIZES[profile]:
        row, ph = _size(log2n, profile, device, rapidsnark)
        rows.append(row)
        phases.append(ph)
    print(table(rows, ["log2n", "constraints", "cuzk_cmd_s", "cuzk_min_s", "cuzk_max_s",
                       "snarkjs_s", "snarkjs_min_s", "snarkjs_max_s", "speedup_vs_snarkjs",
                       "cuzk_warm_s", "speedup_warm_vs_snarkjs", "startup_s"]))
    print("  per phase, ms (key loaded, median):")
    print(table(phases))
    rs = {"installed": bool(rapidsnark), "binary": rapidsnark, "issue_s": ISSUE["rapidsnark_s"],
          "issue_log2n": ISSUE["log2n"], "issue_snarkjs_s": ISSUE["snarkjs_s"],
          "issue_circuit": ISSUE["circuit"]}
    if not rapidsnark:
        rs["why_not_measured"] = ("rapidsnark does not install from the package registries "
                                  "(npm has no rapidsnark package; no binary on PATH)")
    at = next((r for r in rows if r["log2n"] == ISSUE["log2n"]), None)
    if at:
        rs["cuzk_cmd_vs_issue"] = ISSUE["rapidsnark_s"] / at["cuzk_cmd_s"]
        rs["cuzk_warm_vs_issue"] = ISSUE["rapidsnark_s"] / at["cuzk_warm_s"]
        rs["snarkjs_here_vs_issue"] = at["snarkjs_s"] / ISSUE["snarkjs_s"]
        print(f"  2^15 against issue #4's rapidsnark figure ({ISSUE['rapidsnark_s']} s, not "
              f"rerun): cuzk command {at['cuzk_cmd_s']:.2f} s = "
              f"{rs['cuzk_cmd_vs_issue']:.2f}x its speed, warm {at['cuzk_warm_s']:.2f} s = "
              f"{rs['cuzk_warm_vs_issue']:.2f}x; snarkjs here took "
              f"{rs['snarkjs_here_vs_issue']:.2f}x the issue's {ISSUE['snarkjs_s']} s", flush=True)
    return {"device": device, "cuzk_command": " ".join(_shown(c) for c in _cuzk_command()),
            "rows": rows, "phases_ms": phases, "rapidsnark": rs}


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--suite", "prove", "--profile", sys.argv[1] if len(sys.argv) > 1 else "quick"]))
