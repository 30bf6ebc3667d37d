"""Suite `pairing`: the BN254 pairing and Groth16 verification on one core.

In-process figures (median of several runs after a warm-up that loads the Numba cache):
Miller loop for 1 and 4 pairs, final exponentiation, one pairing, the 4-pair Groth16 product,
and `verify()` of a snarkjs proof end to end (parsing, checks, vk_x, pairing product), with
the compiled backend and with the Python-int one (cuzk.arith.pairing_int). Whole commands
side by side, alternated, on the same files (a small key: 3 public signals): `cuzk verify`
(the console script, bytecode compiled as an install does) against `snarkjs groth16 verify`;
issue #29's target: the command <= 0.25 s and no slower than snarkjs's.
Cold start: the first verification in a fresh process with an empty Numba cache (compile
time), and with the cache warm.
Run alone: ``python -m bench.bench_pairing [quick|full|smoke]`` (writes
bench/results/pairing.json).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

from bench import plots
from bench.machine import compile_bytecode
from bench.tables import fmt, table, target
from cuzk.arith import pairing as PR

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "toyhash"  # snarkjs-made key and proof, 3 public signals
SNARKJS = ROOT / ".tools" / "node_modules" / ".bin" / "snarkjs"
REPEATS = {"smoke": 3, "quick": 30, "full": 100, "gpu": 30}
COMMAND_REPEATS = {"smoke": 1, "quick": 5, "full": 10, "gpu": 5}
TARGET_VERIFY_MS = 50.0  # issue 4: self-verify every proof, <= 50 ms on one core
TARGET_COMMAND_S = 0.25  # issue 29: `cuzk verify` as a whole command, small key


@njit(cache=True)
def _final_exponentiation(a, out):
    PR.fq12_store(out, PR.final_exponentiation(PR.fq12_load(a)))


@njit(cache=True)
def _miller(ps, qs, out):
    PR.fq12_store(out, PR.miller_loop(ps, qs))


def _median_ms(fn, repeats):
    fn()
    xs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(xs), min(xs)


def _in_process(repeats):
    from cuzk.arith import pairing_int as PI
    from cuzk.arith.constants import G1_GENERATOR, G2_GENERATOR
    from cuzk.groth16.verifier import Proof, VerifyingKey, verify, verify_files

    vk_json = json.loads((FIXTURE / "verification_key.json").read_text())
    pub = json.loads((FIXTURE / "public_0.json").read_text())
    proof_json = json.loads((FIXTURE / "proof_0.json").read_text())
    vk = VerifyingKey.from_json(vk_json)
    proof = Proof.from_json(proof_json)
    ps1, qs1 = PR.g1_array([G1_GENERATOR]), PR.g2_array([G2_GENERATOR])
    ps4, qs4 = np.concatenate([ps1] * 4), np.concatenate([qs1] * 4)
    out = np.zeros((2, 3, 2, 4), dtype=np.uint64)
    _miller(ps1, qs1, out)
    f = out.copy()
    files = (
        FIXTURE / "verification_key.json",
        FIXTURE / "public_0.json",
        FIXTURE / "proof_0.json",
    )
    pairs4 = [(G1_GENERATOR, G2_GENERATOR)] * 4
    cases = [
        ("miller_loop, 1 pair", lambda: _miller(ps1, qs1, out)),
        ("miller_loop, 4 pairs (shared squarings)", lambda: _miller(ps4, qs4, out)),
        ("final_exponentiation", lambda: _final_exponentiation(f, out)),
        ("pairing e(P, Q), ints in and out", lambda: PR.pairing(G1_GENERATOR, G2_GENERATOR)),
        ("4-pair product == 1 (the Groth16 check)", lambda: PR.pairing_product_is_one(ps4, qs4)),
        ("verify(vk, public, proof), all parsed", lambda: verify(vk, pub, proof)),
        ("verify(...) with proof.json parsed and checked", lambda: verify(vk, pub, proof_json)),
        ("verify_files(vk, public, proof)", lambda: verify_files(*files)),
        ("Python ints: 4-pair product == 1", lambda: PI.pairing_product_is_one(pairs4)),
        ("Python ints: G2 subgroup check", lambda: PI.g2_in_subgroup(G2_GENERATOR)),
        (
            "Python ints: verify_files(...) (what `cuzk verify` runs)",
            lambda: verify_files(*files, backend="python"),
        ),
    ]
    rows = []
    for name, fn in cases:
        med, best = _median_ms(fn, repeats)
        rows.append({"operation": name, "median_ms": med, "min_ms": best})
        print(f"  {name}: {med:.3f} ms (min {best:.3f})", flush=True)
    return rows


def _timed(cmd, env=None) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=900)
    return time.perf_counter() - t0, p.returncode


def _commands(repeats):
    """`cuzk verify` and `snarkjs groth16 verify`, whole commands, alternately."""
    files = [FIXTURE / "verification_key.json", FIXTURE / "public_0.json", FIXTURE / "proof_0.json"]
    entry = Path(sys.executable).with_name("cuzk")
    cuzk_cmd = [entry] if entry.exists() else [sys.executable, "-m", "cuzk.cli"]
    cuzk_cmd += ["verify", *files]
    cmds = {"cuzk verify": cuzk_cmd}
    if SNARKJS.exists():
        cmds["snarkjs groth16 verify"] = [SNARKJS, "groth16", "verify", *files]
    compile_bytecode()  # the command runs as installed (see bench.machine.compile_bytecode)
    _timed(cuzk_cmd)  # warm the page cache
    times = {k: [] for k in cmds}
    for _ in range(repeats):
        for name, cmd in cmds.items():
            s, rc = _timed(cmd)
            if rc != 0:
                raise RuntimeError(f"{name} exited {rc} on a valid proof")
            times[name].append(s)
    rows = [
        {"command": k, "median_s": statistics.median(v), "min_s": min(v)} for k, v in times.items()
    ]
    for row in rows:
        row["vs_snarkjs"] = row["median_s"] / rows[-1]["median_s"] if len(rows) == 2 else None
    for row in rows:
        print(f"  {row['command']}: {row['median_s']:.3f} s (min {row['min_s']:.3f})", flush=True)
    return rows


_COLD = """
import time
t0 = time.perf_counter()
from cuzk.groth16.verifier import verify_files
t1 = time.perf_counter()
ok = verify_files({vk!r}, {pub!r}, {proof!r})
t2 = time.perf_counter()
ok2 = verify_files({vk!r}, {pub!r}, {proof!r})
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, ok and ok2)
"""


def _cold_start():
    """First verification in a fresh process: empty Numba cache (compiles), then warm."""
    code = _COLD.format(
        vk=str(FIXTURE / "verification_key.json"),
        pub=str(FIXTURE / "public_0.json"),
        proof=str(FIXTURE / "proof_0.json"),
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="cuzk-numba-cold-") as cache:
        for label in ("empty cache (compile)", "warm cache"):
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            p = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                env=env,
                timeout=1800,
                cwd=ROOT,
            )
            if p.returncode != 0:
                raise RuntimeError(f"cold-start probe failed:\n{p.stderr}")
            imp, first, second, ok = p.stdout.split()
            row = {
                "numba_cache": label,
                "import_s": float(imp),
                "first_verify_s": float(first),
                "next_verify_ms": float(second) * 1e3,
                "valid": ok == "True",
            }
            rows.append(row)
            print(
                f"  {label}: import {row['import_s']:.2f} s, first verify "
                f"{row['first_verify_s']:.2f} s, next {row['next_verify_ms']:.1f} ms",
                flush=True,
            )
    return rows


def run(profile: str = "quick") -> dict:
    repeats = REPEATS.get(profile, 30)
    result = {"fixture": str(FIXTURE.relative_to(ROOT)), "target_verify_ms": TARGET_VERIFY_MS}
    result["in_process"] = _in_process(repeats)
    print(table(result["in_process"], ["operation", "median_ms", "min_ms"]))
    verify_ms = next(
        r["median_ms"]
        for r in result["in_process"]
        if r["operation"].startswith("verify(...) with proof.json")
    )
    result["verify_ms"] = verify_ms
    result["meets_target"] = verify_ms <= TARGET_VERIFY_MS
    result["commands"] = _commands(COMMAND_REPEATS.get(profile, 5))
    result["target_command_s"] = TARGET_COMMAND_S
    print(table(result["commands"], ["command", "median_s", "min_s", "vs_snarkjs"]))
    if profile != "smoke":
        result["cold_start"] = _cold_start()
        print(
            table(
                result["cold_start"],
                ["numba_cache", "import_s", "first_verify_s", "next_verify_ms", "valid"],
            )
        )
    return result


# --- what the report shows: targets and plot ----------------------------------------------------


def targets(get) -> list[dict]:
    """Issue #4's target: verify one proof in <= 50 ms on one core; issue #29's: `cuzk verify`
    as a whole command <= 0.25 s on a small key and no slower than `snarkjs groth16 verify`."""
    pairing = get()
    commands = {r["command"]: r for r in (pairing or {}).get("commands") or []}
    cuzk, snarkjs = commands.get("cuzk verify"), commands.get("snarkjs groth16 verify")
    note = f"median of alternated runs; snarkjs {fmt(snarkjs['median_s'])} s" if snarkjs else ""
    return [
        target(
            "verify one proof, one core",
            "#4",
            TARGET_VERIFY_MS,
            "ms",
            pairing and pairing.get("verify_ms"),
            suite="pairing",
            note="proof.json parsed and checked, key parsed",
        ),
        target(
            "`cuzk verify` whole command, small key",
            "#29",
            TARGET_COMMAND_S,
            "s",
            cuzk and cuzk["median_s"],
            best=cuzk and cuzk["min_s"],
            note=note,
            suite="pairing",
        ),
        target(
            "`cuzk verify` ÷ `snarkjs groth16 verify`, whole commands",
            "#29",
            1.0,
            "x",
            cuzk and cuzk.get("vs_snarkjs"),
            note=note,
            suite="pairing",
        ),
    ]


def plot(name, entry, res, img):
    rows = res.get("in_process") or []
    if not rows:
        return []
    fig, (ax,) = plots.figure("Pairing and verification, ms (one core)", entry)
    ax.barh([r["operation"] for r in rows], [r.get("median_ms") or 0 for r in rows])
    ax.axvline(
        res.get("target_verify_ms", 50.0),
        color="crimson",
        linestyle="--",
        label="target: verify <= 50 ms",
    )
    ax.set_xscale("log")
    ax.tick_params(axis="y", labelsize=6.5)
    ax.set_xlabel("ms (median)")
    ax.legend(fontsize=7)
    return [("pairing", plots.save(fig, f"bench-{name}.png", img))]


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(
        main(
            [
                "--suite",
                "pairing",
                "--no-report",
                "--profile",
                sys.argv[1] if len(sys.argv) > 1 else "quick",
            ]
        )
    )
