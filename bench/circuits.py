"""Benchmark circuits, generated on demand and cached under bench/work/ (not committed).

A circuit of domain 2^k is the toyhash template of tests/circuits/ with 2^(k-2) rounds
(3 constraints a round: 0.75·2^k constraints, so snarkjs's domain rule gives 2^k), compiled
by circom2; its witness comes from snarkjs's witness calculator and its key from
`cuzk setup` (snarkjs's own setup needs a powers-of-tau file that takes far longer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
BIN = ROOT / ".tools" / "node_modules" / ".bin"
TEMPLATE = ROOT / "tests" / "circuits" / "toyhash.circom"


def _run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def ensure_tools() -> None:
    if not (BIN / "snarkjs").exists():
        _run(["make", "-s", "tools"], cwd=ROOT, timeout=900)


def toyhash(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n circuit: r1cs, zkey, wtns, vk (made if missing)."""
    ensure_tools()
    d = WORK / f"toyhash-{log2n}"
    files = {k: d / f for k, f in (("r1cs", "circuit.r1cs"), ("zkey", "circuit.zkey"),
                                   ("wtns", "witness.wtns"), ("vk", "vk.json"))}
    if all(p.exists() for p in files.values()):
        return files
    d.mkdir(parents=True, exist_ok=True)
    rounds = max(1, 1 << (log2n - 2))
    src = TEMPLATE.read_text().rsplit("component main", 1)[0]
    src += f"component main {{public [k]}} = ToyHash({rounds});\n"
    (d / "circuit.circom").write_text(src)
    log(f"  generating toyhash 2^{log2n} ({rounds} rounds): circom2 ...")
    _run([BIN / "circom2", d / "circuit.circom", "--r1cs", "--wasm", "-o", d], timeout=3600)
    (d / "input.json").write_text(json.dumps({"x": "3", "k": "5"}))
    log("  snarkjs wtns calculate ...")
    _run([BIN / "snarkjs", "wtns", "calculate", d / "circuit_js" / "circuit.wasm",
          d / "input.json", files["wtns"]], timeout=3600)
    log("  cuzk setup ...")
    _run([sys.executable, "-m", "cuzk.cli", "setup", "-q", files["r1cs"], files["zkey"]],
         timeout=7200)
    _run([BIN / "snarkjs", "zkey", "export", "verificationkey", files["zkey"], files["vk"]],
         timeout=3600)
    return files
