"""Benchmark circuits, generated on demand and cached under bench/work/ (not committed).

Families, each a template of tests/circuits/ sized to fill a domain of 2^k (the key's domain,
the next power of two >= constraints + public inputs + 1, is checked once the key is made):
- synthetic, dense 254-bit witness values, 0.75·2^k constraints:
  - toyhash (toyhash.circom): 2^(k-2) rounds of x <- (x + k + c_i)^5, 3 constraints a round
    (the circuit the kernels were first tuned on);
  - squarechain (squarechain.circom): 0.75·2^k steps of x <- x^2 + b, one constraint a step;
- circomlib's (npm), the circuits people prove (issue #25), as many units as fit in 2^k:
  - sha256 (sha256.circom): SHA-256 of a (64·blocks − 9)-byte message, `blocks`
    compressions of 31,264 constraints, 256 public output bits;
  - merkle (merkle.circom): `paths` Poseidon(2) Merkle paths of depth 20, 10,421 constraints
    and one public root each;
  - eddsa (eddsa.circom): `signatures` EdDSA-Poseidon verifications, 8,086 constraints and
    one public message each, the signatures made by circomlibjs (bench/eddsa_inputs.cjs);
  - range (range.circom): `values` 64-bit range checks (Num2Bits(64) and LessThan(64)
    against a public bound), 133 constraints each.
Inputs come from a seeded generator (the same files every time). A circuit is compiled by
circom2 (`-l .tools/node_modules` for circomlib); its witness by `cuzk wtns calculate`; its key
by `snarkjs groth16 setup` over tests/fixtures/pot10.ptau when the circuit fits that 2^10
powers-of-tau file (small synthetic ones), and by `cuzk setup` otherwise (snarkjs's own setup
needs a powers-of-tau file of the circuit's size, which takes far longer to make).
info.json records the witness profile: the share of values that are 0, 1, other values below
2^64 ("small") and the rest ("dense"; a negative field element such as −1 is dense).

A cached circuit is reused when its `circuit.circom` equals what would be generated now (so a
changed template regenerates it) and every file is there; a circuit is built in a scratch
folder and renamed into place, so an interrupted build leaves nothing that looks complete.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
TOOLS = ROOT / ".tools"
BIN = TOOLS / "node_modules" / ".bin"
CIRCUITS = ROOT / "tests" / "circuits"
PTAU = ROOT / "tests" / "fixtures" / "pot10.ptau"
PTAU_LOG2 = 10
EDDSA_INPUTS = ROOT / "bench" / "eddsa_inputs.cjs"
SEED = 25  # the inputs' seed: the same messages, keys and values in every run
R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
MERKLE_DEPTH = 20
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


def _fill(log2n: int, per_unit: int, fixed: int = 0) -> int:
    """How many units of per_unit constraints + public inputs fit in a domain of 2^log2n
    beside `fixed` (the circuit's other constraints and public inputs): snarkjs's domain is
    the smallest power of two above constraints + public inputs. At least one."""
    return max(1, ((1 << log2n) - 1 - fixed) // per_unit)


def sha256_message(blocks: int, seed: int = SEED) -> bytes:
    """The message of the sha256 circuit with `blocks` compressions: 64·blocks − 9 bytes."""
    rnd = random.Random(f"sha256 {blocks} {seed}")
    return bytes(rnd.getrandbits(8) for _ in range(64 * blocks - 9))


def _bits_msb_first(data: bytes) -> list[int]:
    return [(b >> (7 - j)) & 1 for b in data for j in range(8)]


def _sha256_inputs(blocks: int, seed: int) -> dict:
    return {"in": _bits_msb_first(sha256_message(blocks, seed))}


def _merkle_inputs(paths: int, seed: int) -> dict:
    rnd = random.Random(f"merkle {paths} {seed}")
    return {
        "leaf": [rnd.randrange(R) for _ in range(paths)],
        "index": [rnd.getrandbits(MERKLE_DEPTH) for _ in range(paths)],
        "siblings": [[rnd.randrange(R) for _ in range(MERKLE_DEPTH)] for _ in range(paths)],
    }


def _range_inputs(values: int, seed: int) -> dict:
    rnd = random.Random(f"range {values} {seed}")
    return {
        "value": [rnd.getrandbits(rnd.randint(1, 63)) for _ in range(values)],
        "bound": 1 << 63,
    }


def _eddsa_inputs(signatures: int, seed: int) -> dict:
    p = _run(
        ["node", EDDSA_INPUTS, TOOLS / "node_modules", signatures, seed],
        timeout=600,
    )
    return json.loads(p.stdout)


@dataclass(frozen=True)
class Family:
    """A circuit template of tests/circuits/<name>.circom and how to size it for 2^k."""

    name: str
    main: Callable[[int], str]  # param -> the template instance after `component main ... =`
    public: str  # the `{public [...]}` list of main's inputs, "" for none
    size: Callable[[int], int]  # log2n -> param (rounds, steps, blocks, paths, ...)
    inputs: Callable[[int, int], dict]  # (param, seed) -> the input signals
    unit: str  # what param counts
    circomlib: bool = False  # a circomlib (npm) circuit: issue #25's families

    def source(self, param: int) -> str:
        src = (CIRCUITS / f"{self.name}.circom").read_text().rsplit("component main", 1)[0]
        pub = f" {{public [{self.public}]}}" if self.public else ""
        return src + f"component main{pub} = {self.main(param)};\n"


FAMILIES = {
    "toyhash": Family(
        "toyhash",
        lambda n: f"ToyHash({n})",
        "k",
        lambda k: max(1, 1 << (k - 2)),
        lambda n, seed: {"x": "3", "k": "5"},
        "rounds",
    ),
    "squarechain": Family(
        "squarechain",
        lambda n: f"SquareChain({n})",
        "b",
        lambda k: max(1, 3 << (k - 2)),
        lambda n, seed: {"x": "3", "b": "5"},
        "steps",
    ),
    "sha256": Family(
        "sha256",
        lambda blocks: f"Sha256({512 * blocks - 72})",
        "",
        lambda k: _fill(k, 31264, 256),
        _sha256_inputs,
        "blocks",
        circomlib=True,
    ),
    "merkle": Family(
        "merkle",
        lambda paths: f"MerklePaths({paths}, {MERKLE_DEPTH})",
        "",
        lambda k: _fill(k, 10421 + 1),
        _merkle_inputs,
        f"paths of depth {MERKLE_DEPTH}",
        circomlib=True,
    ),
    "eddsa": Family(
        "eddsa",
        lambda n: f"EdDSAPoseidonBatch({n})",
        "M",
        lambda k: _fill(k, 8086 + 1),
        _eddsa_inputs,
        "signatures",
        circomlib=True,
    ),
    "range": Family(
        "range",
        lambda n: f"RangeCheck({n})",
        "bound",
        lambda k: _fill(k, 133, 1),
        _range_inputs,
        "values",
        circomlib=True,
    ),
}
REAL_FAMILIES = tuple(n for n, f in FAMILIES.items() if f.circomlib)


def toyhash(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n toyhash circuit (see circuit())."""
    return circuit("toyhash", log2n, log)


def squarechain(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n squaring-chain circuit (see circuit())."""
    return circuit("squarechain", log2n, log)


def circuit(family: str, log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n circuit of a family: r1cs, zkey, wtns, vk, info (made
    if missing). info.json: family, log2n, the family's param and unit, constraints, public
    inputs, the key's domain, which tool made the key, the witness profile, seconds each
    step took."""
    fam = FAMILIES[family]
    param = fam.size(log2n)
    d = WORK / f"{family}-{log2n}"
    files = {k: d / f for k, f in FILES}
    src = fam.source(param)
    circom = d / "circuit.circom"
    if (
        all(p.exists() for k, p in files.items() if k != "info")
        and circom.exists()
        and circom.read_text() == src
    ):
        info = json.loads(files["info"].read_text()) if files["info"].exists() else None
        if info is None or "witness_profile" not in info:  # cached before these were kept
            _write_info(d, fam, param, (info or {}).get("setup", "unknown"), {}, log2n)
        return files
    WORK.mkdir(parents=True, exist_ok=True)
    tmp = WORK / f".{family}-{log2n}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        build(family, param, tmp, log, log2n=log2n)
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return files


def build(family: str, param: int, d: Path, log=print, *, log2n: int | None = None) -> dict:
    """Compile, witness and key one instance of a family (param units) into the new folder d;
    the paths as circuit() returns them. With log2n, the key's domain must be 2^log2n."""
    fam = FAMILIES[family]
    ensure_tools()
    d = Path(d)
    d.mkdir(parents=True)
    src = fam.source(param)
    (d / "circuit.circom").write_text(src)
    steps = {}

    def step(name, cmd, timeout, **kw):
        log(f"  {family} {param} {fam.unit}: {name} ...")
        t0 = time.perf_counter()
        p = _run(cmd, timeout=timeout, **kw)
        steps[name] = round(time.perf_counter() - t0, 2)
        return p

    log(f"  generating {family} with {param} {fam.unit} in {d}")
    # circom2 runs under WASI, which does not follow .tools when it is a symbolic link: run it
    # from the real folder, with the paths it is given relative to there
    step(
        "circom2",
        [BIN / "circom2", d / "circuit.circom", "--r1cs", "--wasm", "-l", "node_modules", "-o", d],
        3600,
        cwd=TOOLS.resolve(),
    )
    t0 = time.perf_counter()
    inputs = fam.inputs(param, SEED)
    steps["inputs"] = round(time.perf_counter() - t0, 2)
    (d / "input.json").write_text(json.dumps(_strings(inputs)))
    cuzk = [sys.executable, "-m", "cuzk.cli"]
    step(
        "cuzk wtns calculate",
        cuzk
        + ["wtns", "calculate", d / "circuit_js" / "circuit.wasm", d / "input.json"]
        + [d / "witness.wtns"],
        3600,
    )
    from cuzk.formats.r1cs import R1CS
    from cuzk.groth16.setup import domain_size_for

    r1cs = R1CS(d / "circuit.r1cs")
    if domain_size_for(r1cs.n_constraints, r1cs.n_public) <= 1 << PTAU_LOG2 and PTAU.exists():
        setup = "snarkjs groth16 setup (pot10.ptau, no contribution)"
        step(
            setup,
            [BIN / "snarkjs", "groth16", "setup", d / "circuit.r1cs", PTAU, d / "circuit.zkey"],
            3600,
        )
    else:
        setup = "cuzk setup (development-only single-party)"
        step(setup, cuzk + ["setup", "-q", d / "circuit.r1cs", d / "circuit.zkey"], 7200)
    step(
        "snarkjs zkey export verificationkey",
        [BIN / "snarkjs", "zkey", "export", "verificationkey", d / "circuit.zkey", d / "vk.json"],
        3600,
    )
    info = _write_info(d, fam, param, setup, steps, log2n)
    if log2n is not None and info["domain_log2"] != log2n:
        raise RuntimeError(
            f"{family} with {param} {fam.unit}: domain 2^{info['domain_log2']}, not 2^{log2n} "
            f"({info['constraints']} constraints, {info['public']} public)"
        )
    return {k: d / f for k, f in FILES}


def _strings(x):
    if isinstance(x, dict):
        return {k: _strings(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_strings(v) for v in x]
    return str(x)


def witness_profile(wtns) -> dict:
    """Shares of a witness's values: zero, one, small (2 .. 2^64 − 1) and dense (the rest)."""
    from cuzk.formats.wtns import read_wtns

    v = read_wtns(wtns, check_values=False).values
    high = (v[:, 1] | v[:, 2] | v[:, 3]) == 0
    n = len(v)
    zero = int((high & (v[:, 0] == 0)).sum())
    one = int((high & (v[:, 0] == 1)).sum())
    small = int(high.sum()) - zero - one
    return {
        "values": n,
        "zero": zero / n,
        "one": one / n,
        "small": small / n,
        "dense": (n - zero - one - small) / n,
    }


def profile_text(p: dict | None) -> str:
    """A witness profile as "0/1/small/dense" percentages, e.g. "48/51/0.4/0.6"."""
    if not p:
        return ""

    def pct(x):
        x *= 100
        return "0" if x == 0 else f"{x:.0f}" if x >= 10 or x == round(x) else f"{x:.1f}"

    return "/".join(pct(p[k]) for k in ("zero", "one", "small", "dense"))


def _write_info(
    d: Path, fam: Family, param: int, setup: str, steps: dict, log2n: int | None
) -> dict:
    from cuzk.formats.r1cs import R1CS
    from cuzk.groth16.setup import domain_size_for

    r1cs = R1CS(d / "circuit.r1cs")
    public = r1cs.n_public
    info = {
        "family": fam.name,
        "log2n": log2n,
        "steps": param,
        "unit": fam.unit,
        "constraints": r1cs.n_constraints,
        "public": public,
        "domain_log2": domain_size_for(r1cs.n_constraints, public).bit_length() - 1,
        "wires": r1cs.n_wires,
        "setup": setup,
        "witness_profile": witness_profile(d / "witness.wtns"),
        "seconds": steps,
    }
    (d / "info.json").write_text(json.dumps(info, indent=1))
    return info
