"""Benchmark circuits, generated on demand and cached under bench/work/ (not committed).

Two families, both with dense 254-bit witness values and 0.75·2^k constraints for domain 2^k
(plus the public ones, so snarkjs's domain rule gives 2^k):
- toyhash (tests/circuits/toyhash.circom): 2^(k-2) rounds of x <- (x + k + c_i)^5, 3
  constraints a round (the circuit the kernels were first tuned on);
- squarechain (tests/circuits/squarechain.circom): 0.75·2^k steps of x <- x^2 + b, one
  constraint a step.
A circuit is compiled by circom2; its witness comes from snarkjs's witness calculator. Its key
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
CIRCUITS = ROOT / "tests" / "circuits"
PTAU = ROOT / "tests" / "fixtures" / "pot10.ptau"
PTAU_LOG2 = 10
FILES = (
    ("r1cs", "circuit.r1cs"),
    ("zkey", "circuit.zkey"),
    ("wtns", "witness.wtns"),
    ("vk", "vk.json"),
    ("info", "info.json"),
)


def _run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n"
            f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
        )
    return p


def ensure_tools() -> None:
    if not (BIN / "snarkjs").exists() or not (BIN / "circom2").exists():
        _run(["make", "-s", "tools"], cwd=ROOT, timeout=900)


class Family:
    """A circuit template of tests/circuits/ and how to size it for a domain of 2^k."""

    def __init__(self, name, template, public, steps, inputs):
        self.name, self.template, self.public = name, template, public
        self.steps, self.inputs = steps, inputs

    def source(self, log2n: int) -> str:
        src = (CIRCUITS / f"{self.name}.circom").read_text().rsplit("component main", 1)[0]
        return (
            src + f"component main {{public [{self.public}]}} = "
            f"{self.template}({self.steps(log2n)});\n"
        )


FAMILIES = {
    "toyhash": Family(
        "toyhash", "ToyHash", "k", lambda k: max(1, 1 << (k - 2)), {"x": "3", "k": "5"}
    ),
    "squarechain": Family(
        "squarechain", "SquareChain", "b", lambda k: max(1, 3 << (k - 2)), {"x": "3", "b": "5"}
    ),
}


def toyhash_source(log2n: int) -> str:
    return FAMILIES["toyhash"].source(log2n)


def toyhash(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n toyhash circuit (see circuit())."""
    return circuit("toyhash", log2n, log)


def squarechain(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n squaring-chain circuit (see circuit())."""
    return circuit("squarechain", log2n, log)


def circuit(family: str, log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n circuit of a family: r1cs, zkey, wtns, vk, info (made
    if missing). info.json: family, log2n, steps, constraints, which tool made the key,
    seconds each step took."""
    fam = FAMILIES[family]
    d = WORK / f"{family}-{log2n}"
    files = {k: d / f for k, f in FILES}
    src = fam.source(log2n)
    circom = d / "circuit.circom"
    if (
        all(p.exists() for k, p in files.items() if k != "info")
        and circom.exists()
        and circom.read_text() == src
    ):
        if not files["info"].exists():  # cached before info.json was kept
            _write_info(d, fam, log2n, "unknown (cached before info.json was kept)", {})
        return files
    ensure_tools()
    WORK.mkdir(parents=True, exist_ok=True)
    tmp = WORK / f".{family}-{log2n}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        _build(tmp, fam, log2n, src, log)
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return files


def _build(d: Path, fam: Family, log2n: int, src: str, log) -> None:
    (d / "circuit.circom").write_text(src)
    steps = {}

    def step(name, cmd, timeout):
        log(f"  {fam.name} 2^{log2n}: {name} ...")
        t0 = time.perf_counter()
        _run(cmd, timeout=timeout)
        steps[name] = round(time.perf_counter() - t0, 2)

    log(f"  generating {fam.name} 2^{log2n} ({fam.steps(log2n)} steps), cached in {WORK}")
    step("circom2", [BIN / "circom2", d / "circuit.circom", "--r1cs", "--wasm", "-o", d], 3600)
    (d / "input.json").write_text(json.dumps(fam.inputs))
    step(
        "snarkjs wtns calculate",
        [
            BIN / "snarkjs",
            "wtns",
            "calculate",
            d / "circuit_js" / "circuit.wasm",
            d / "input.json",
            d / "witness.wtns",
        ],
        3600,
    )
    if log2n <= PTAU_LOG2 and PTAU.exists():
        setup = "snarkjs groth16 setup (pot10.ptau, no contribution)"
        step(
            setup,
            [BIN / "snarkjs", "groth16", "setup", d / "circuit.r1cs", PTAU, d / "circuit.zkey"],
            3600,
        )
    else:
        setup = "cuzk setup (development-only single-party)"
        step(
            setup,
            [
                sys.executable,
                "-m",
                "cuzk.cli",
                "setup",
                "-q",
                d / "circuit.r1cs",
                d / "circuit.zkey",
            ],
            7200,
        )
    step(
        "snarkjs zkey export verificationkey",
        [BIN / "snarkjs", "zkey", "export", "verificationkey", d / "circuit.zkey", d / "vk.json"],
        3600,
    )
    _write_info(d, fam, log2n, setup, steps)


def _write_info(d: Path, fam: Family, log2n: int, setup: str, steps: dict) -> None:
    from cuzk.formats.r1cs import R1CS

    r1cs = R1CS(d / "circuit.r1cs")
    info = {
        "family": fam.name,
        "log2n": log2n,
        "steps": fam.steps(log2n),
        "constraints": r1cs.n_constraints,
        "wires": r1cs.n_wires,
        "setup": setup,
        "seconds": steps,
    }
    (d / "info.json").write_text(json.dumps(info, indent=1))
