"""Benchmark circuits, generated on demand and cached under bench/work/ (not committed).

A circuit of domain 2^k is the toyhash template of tests/circuits/ with 2^(k-2) rounds
(3 constraints a round: 0.75·2^k constraints plus the public ones, so snarkjs's domain rule
gives 2^k), compiled by circom2; its witness comes from snarkjs's witness calculator. Its key
comes from `snarkjs groth16 setup` over tests/fixtures/pot10.ptau when the circuit fits that
2^10 powers-of-tau file (small ones), and from `cuzk setup` otherwise (snarkjs's own setup
needs a powers-of-tau file of the circuit's size, which takes far longer to make).

A cached circuit is reused when its `circuit.circom` equals what would be generated now (so a
changed template regenerates it) and every file is there; a circuit is built in a scratch
folder and renamed into place, so an interrupted build leaves nothing that looks complete.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
BIN = ROOT / ".tools" / "node_modules" / ".bin"
TEMPLATE = ROOT / "tests" / "circuits" / "toyhash.circom"
PTAU = ROOT / "tests" / "fixtures" / "pot10.ptau"
PTAU_LOG2 = 10
FILES = (("r1cs", "circuit.r1cs"), ("zkey", "circuit.zkey"), ("wtns", "witness.wtns"),
         ("vk", "vk.json"), ("info", "info.json"))


def _run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n"
                           f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def ensure_tools() -> None:
    if not (BIN / "snarkjs").exists() or not (BIN / "circom2").exists():
        _run(["make", "-s", "tools"], cwd=ROOT, timeout=900)


def toyhash_source(log2n: int) -> str:
    rounds = max(1, 1 << (log2n - 2))
    src = TEMPLATE.read_text().rsplit("component main", 1)[0]
    return src + f"component main {{public [k]}} = ToyHash({rounds});\n"


def toyhash(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n circuit: r1cs, zkey, wtns, vk, info (made if missing).

    info.json: log2n, rounds, constraints, which tool made the key, seconds each step took."""
    d = WORK / f"toyhash-{log2n}"
    files = {k: d / f for k, f in FILES}
    src = toyhash_source(log2n)
    circom = d / "circuit.circom"
    if (all(p.exists() for k, p in files.items() if k != "info") and circom.exists()
            and circom.read_text() == src):
        if not files["info"].exists():  # cached before info.json was kept
            _write_info(d, log2n, "unknown (cached before info.json was kept)", {})
        return files
    ensure_tools()
    WORK.mkdir(parents=True, exist_ok=True)
    tmp = WORK / f".toyhash-{log2n}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        _build(tmp, log2n, src, log)
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return files


def _build(d: Path, log2n: int, src: str, log) -> None:
    rounds = max(1, 1 << (log2n - 2))
    (d / "circuit.circom").write_text(src)
    steps = {}

    def step(name, cmd, timeout):
        log(f"  toyhash 2^{log2n}: {name} ...")
        t0 = time.perf_counter()
        _run(cmd, timeout=timeout)
        steps[name] = round(time.perf_counter() - t0, 2)

    log(f"  generating toyhash 2^{log2n} ({rounds} rounds), cached in {WORK}")
    step("circom2", [BIN / "circom2", d / "circuit.circom", "--r1cs", "--wasm", "-o", d], 3600)
    (d / "input.json").write_text(json.dumps({"x": "3", "k": "5"}))
    step("snarkjs wtns calculate", [BIN / "snarkjs", "wtns", "calculate",
                                    d / "circuit_js" / "circuit.wasm", d / "input.json",
                                    d / "witness.wtns"], 3600)
    if log2n <= PTAU_LOG2 and PTAU.exists():
        setup = "snarkjs groth16 setup (pot10.ptau, no contribution)"
        step(setup, [BIN / "snarkjs", "groth16", "setup", d / "circuit.r1cs", PTAU,
                     d / "circuit.zkey"], 3600)
    else:
        setup = "cuzk setup (development-only single-party)"
        step(setup, [sys.executable, "-m", "cuzk.cli", "setup", "-q", d / "circuit.r1cs",
                     d / "circuit.zkey"], 7200)
    step("snarkjs zkey export verificationkey", [BIN / "snarkjs", "zkey", "export",
                                                 "verificationkey", d / "circuit.zkey",
                                                 d / "vk.json"], 3600)
    _write_info(d, log2n, setup, steps)


def _write_info(d: Path, log2n: int, setup: str, steps: dict) -> None:
    from cuzk.formats.r1cs import R1CS

    r1cs = R1CS(d / "circuit.r1cs")
    info = {"log2n": log2n, "rounds": max(1, 1 << (log2n - 2)),
            "constraints": r1cs.n_constraints, "wires": r1cs.n_wires, "setup": setup,
            "seconds": steps}
    (d / "info.json").write_text(json.dumps(info, indent=1))
