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
    against a public bound), 133 constraints each;
  - sha256batch: `hashes` SHA-256 digests of 8-block messages (each its own message), one
    proof, the first digest public: the scale circuits (issue #35's target 5, 2^21 and up).
    circom2 is circom compiled to 32-bit WebAssembly, whose memory stops at 4 GiB: it aborts
    ("memory allocation of 528 bytes failed", 4.2 GB resident) compiling one SHA-256 of 67
    blocks (2^21), so this family compiles one 8-block SHA-256 and puts `hashes` disjoint
    copies of its constraint system into one .r1cs (compose_r1cs; they share only the
    constant-one wire), with the copies' witnesses side by side (compose_witness).
- shaped after applications' circuits (issue #35; `application`, in the prove suite only),
  also as many units as fit in 2^k:
  - semaphore (semaphore.circom): `proofs` Semaphore-shaped membership proofs, 15,897
    constraints and four public values each: a BabyJubjub public key from the identity's
    secret scalar (circomlib's BabyPbk), its Poseidon commitment proved a leaf of a binary
    Poseidon Merkle tree of depth 20, the nullifier Poseidon(scope, secret); one proof needs
    2^14, so the family has no 2^13 circuit (DomainTooSmall);
  - bigmul (bigmul.circom): a chain of `products` modular products of 2048-bit integers in 32
    limbs of 64 bits, x·a = q·p + r with the limbs of q and r range-checked (Num2Bits(64)) and
    the carries checked two limbs at a time, as RSA signature checks do, 6,706 constraints
    each beside 96 public values (a, p and the last remainder, a^(products + 1) mod p).
  They use circomlib's templates but are not flagged `circomlib`: that flag makes a family
  one of issue #25's, measured by every suite (prove-server, prove-plonk, engine, BLS12-381).
Each circuit is built over one curve's scalar field (CURVES; issue #28): BN254 (circom's
default prime, bench/work/<family>-<k>/) or BLS12-381 (`--prime bls12381`,
bench/work/bls12381/<family>-<k>/). The squaring chain, toyhash, SHA-256, the range checks
and the limb products are field-agnostic; circomlib's Poseidon and BabyJubjub are BN254's, so
the Merkle, EdDSA and Semaphore families are BN254 only (Family.curves; see
bench/bench_prove_bls12381.py).
Inputs come from a seeded generator (the same files every time). A circuit is compiled by
circom2 (`-l .tools/node_modules` for circomlib); its witness by `cuzk wtns calculate`; its key
by `snarkjs groth16 setup` when the curve's powers-of-tau file covers it (BN254:
tests/fixtures/pot10.ptau; BLS12-381: a 2^8..2^12 file made here by snarkjs on first use, or
a larger one put in its work folder, see ptau()), and by `cuzk setup` otherwise (snarkjs's
own setup needs a powers-of-tau file of the circuit's size, which takes far longer to make).
Where `cuzk setup` does not take the curve yet, such a circuit raises KeyUnavailable before
anything is compiled.
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
BATCH_BLOCKS = 8  # the SHA-256 compressions of each copy in the sha256batch family
SEMAPHORE_DEPTH = 20  # Semaphore's groups: up to 2^20 members
# the order l of BabyJubjub's prime subgroup: an identity's secret scalar is below it
BABYJUB_L = 2736030358979909402780800718157159386076813972158567259200215660948447373041
BIGMUL_LIMB_BITS, BIGMUL_LIMBS = 64, 32  # 2048-bit integers, as RSA-2048's
FILES = (
    ("r1cs", "circuit.r1cs"),
    ("zkey", "circuit.zkey"),
    ("wtns", "witness.wtns"),
    ("vk", "vk.json"),
    ("info", "info.json"),
)


@dataclass(frozen=True)
class Curve:
    """A curve the bench builds circuits over: circom's and snarkjs's name for it, where its
    circuits are cached, and the largest domain its snarkjs keys cover (ptau())."""

    name: str  # cuzk's name (cuzk.arith.curves)
    prime: str  # circom's `--prime`, snarkjs's `powersoftau new` curve
    work: Path
    ptau_log2: int
    fixture: Path  # a tiny r1cs of this curve (setup_supported()'s probe)


CURVES = {
    "bn254": Curve(
        "bn254", "bn128", WORK, PTAU_LOG2, ROOT / "tests" / "fixtures" / "tiny" / "circuit.r1cs"
    ),
    "bls12_381": Curve(
        "bls12_381",
        "bls12381",
        WORK / "bls12381",
        12,  # snarkjs's ceremony in JavaScript: ~3 min at 2^12 on 2 cores, far longer above
        ROOT / "tests" / "fixtures" / "tiny381" / "circuit.r1cs",
    ),
}


class KeyUnavailable(RuntimeError):
    """No key can be made for a circuit: too large for the curve's powers of tau, and `cuzk
    setup` does not take the curve (yet)."""


class DomainTooSmall(KeyUnavailable):
    """No circuit of the family fits the domain: one unit needs a larger one (so no key of
    that size exists for it either)."""


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


def ptau(curve: str, log2n: int, log=print) -> Path | None:
    """A powers-of-tau file (phase 2 prepared) of the curve covering a domain of 2^log2n, or
    None. BN254: tests/fixtures/pot10.ptau up to 2^10. Other curves: the smallest
    pot<k>.ptau in the curve's work folder with k >= log2n (one made by hand with snarkjs
    counts too), else, up to the curve's ptau_log2, a file of 2^max(8, log2n) made by
    snarkjs (`powersoftau new`, one contribution of fixed entropy, `prepare phase2`) and
    kept there."""
    c = CURVES[curve]
    if curve == "bn254":
        return PTAU if PTAU.exists() and log2n <= c.ptau_log2 else None
    k = max(8, log2n)
    for have in range(k, 29):  # snarkjs's files go to 2^28
        if (c.work / f"pot{have}.ptau").exists():
            return c.work / f"pot{have}.ptau"
    if log2n > c.ptau_log2:
        return None
    out = c.work / f"pot{k}.ptau"
    ensure_tools()
    c.work.mkdir(parents=True, exist_ok=True)
    tmp = c.work / f".pot{k}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        log(f"  making {out.name} ({c.prime}, 2^{k}) with snarkjs ...")
        s = BIN / "snarkjs"
        _run([s, "powersoftau", "new", c.prime, k, tmp / "0.ptau"], timeout=3600)
        _run(
            [s, "powersoftau", "contribute", tmp / "0.ptau", tmp / "1.ptau"]
            + [f"-e=cuzk bench {c.prime} {k}", "--name=bench"],
            timeout=3600,
        )
        _run([s, "powersoftau", "prepare", "phase2", tmp / "1.ptau", tmp / "p.ptau"], timeout=7200)
        (tmp / "p.ptau").rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


_SETUP_OK: dict = {}


def setup_supported(curve: str) -> str | None:
    """None when `cuzk setup` makes keys on the curve, else its one-line refusal (probed once
    on the curve's tiny fixture)."""
    if curve not in _SETUP_OK:
        out = WORK / f".setup-probe-{curve}-{os.getpid()}.zkey"
        WORK.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(  # from the checkout, so that its message names no local path
            [sys.executable, "-m", "cuzk.cli", "setup", "-q"]
            + [CURVES[curve].fixture.relative_to(ROOT), out],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        out.unlink(missing_ok=True)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        _SETUP_OK[curve] = None if p.returncode == 0 else (lines or ["failed"])[-1].strip()
    return _SETUP_OK[curve]


def _fill(log2n: int, per_unit: int, fixed: int = 0) -> int:
    """How many units of per_unit constraints + public inputs fit in a domain of 2^log2n
    beside `fixed` (the circuit's other constraints and public inputs): snarkjs's domain is
    the smallest power of two above constraints + public inputs. At least one."""
    return max(1, ((1 << log2n) - 1 - fixed) // per_unit)


def _units(log2n: int, per_unit: int, fixed: int = 0) -> int:
    """_fill without its floor: 0 when not even one unit fits (circuit() then raises
    DomainTooSmall)."""
    return max(0, ((1 << log2n) - 1 - fixed) // per_unit)


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


def _semaphore_inputs(proofs: int, seed: int) -> dict:
    """Identities' secret scalars below BabyJubjub's l, full-depth Merkle paths at random
    leaves with random siblings (any siblings make a valid path to some root, which the
    circuit outputs), messages and scopes: field elements."""
    rnd = random.Random(f"semaphore {proofs} {seed}")
    return {
        "secret": [rnd.randrange(1, BABYJUB_L) for _ in range(proofs)],
        "depth": [SEMAPHORE_DEPTH] * proofs,
        "index": [rnd.getrandbits(SEMAPHORE_DEPTH) for _ in range(proofs)],
        "siblings": [[rnd.randrange(R) for _ in range(SEMAPHORE_DEPTH)] for _ in range(proofs)],
        "message": [rnd.randrange(R) for _ in range(proofs)],
        "scope": [rnd.randrange(R) for _ in range(proofs)],
    }


def limbs(x: int, n: int = BIGMUL_LIMB_BITS, k: int = BIGMUL_LIMBS) -> list[int]:
    """x's k limbs in base 2^n, least significant first (x < 2^(n·k))."""
    if not 0 <= x < 1 << (n * k):
        raise ValueError(f"{x.bit_length()}-bit value does not fit {k} limbs of {n} bits")
    return [(x >> (n * i)) & ((1 << n) - 1) for i in range(k)]


def bigmul_operands(products: int, seed: int = SEED) -> tuple[int, int]:
    """(a, p) of the bigmul chain with `products` products: an odd 2048-bit modulus p and a
    base a in [2, p)."""
    rnd = random.Random(f"bigmul {products} {seed}")
    bits = BIGMUL_LIMB_BITS * BIGMUL_LIMBS
    p = rnd.getrandbits(bits) | 1 << (bits - 1) | 1
    return rnd.randrange(2, p), p


def _bigmul_inputs(products: int, seed: int) -> dict:
    """a, p and every product's quotient and remainder: x·a = q·p + r with x the previous
    remainder (a for the first), by Python's integers."""
    a, p = bigmul_operands(products, seed)
    q, r, x = [], [], a
    for _ in range(products):
        qt, x = divmod(x * a, p)
        q.append(limbs(qt))
        r.append(limbs(x))
    return {"a": limbs(a), "p": limbs(p), "q": q, "r": r}


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
    application: bool = False  # shaped after an application's circuit: issue #35's families
    curves: tuple = ("bn254", "bls12_381")  # the fields it means something over
    template: str = ""  # tests/circuits/<template>.circom, when not the family's name
    copies: bool = False  # param counts disjoint copies of main (compose_r1cs), not units

    def source(self, param: int) -> str:
        name = self.template or self.name
        src = (CIRCUITS / f"{name}.circom").read_text().rsplit("component main", 1)[0]
        pub = f" {{public [{self.public}]}}" if self.public else ""
        src += f"component main{pub} = {self.main(param)};\n"
        if self.copies:  # what the cached circuit is: the compiled main, composed
            src += f"// the bench's circuit: {param} disjoint copies of main (compose_r1cs)\n"
        return src


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
        curves=("bn254",),  # circomlib's Poseidon constants are BN254's
    ),
    "eddsa": Family(
        "eddsa",
        lambda n: f"EdDSAPoseidonBatch({n})",
        "M",
        lambda k: _fill(k, 8086 + 1),
        _eddsa_inputs,
        "signatures",
        circomlib=True,
        curves=("bn254",),  # BabyJubjub is a curve over BN254's r
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
    "semaphore": Family(
        "semaphore",
        lambda n: f"SemaphoreBatch({n}, {SEMAPHORE_DEPTH})",
        "message, scope",
        lambda k: _units(k, 15897 + 4),
        _semaphore_inputs,
        f"membership proofs of depth {SEMAPHORE_DEPTH}",
        application=True,
        curves=("bn254",),  # BabyJubjub and circomlib's Poseidon are BN254's
    ),
    "bigmul": Family(
        "bigmul",
        lambda n: f"BigMulModChain({n}, {BIGMUL_LIMB_BITS}, {BIGMUL_LIMBS})",
        "a, p",
        lambda k: _units(k, 6706, 3 * BIGMUL_LIMBS),
        _bigmul_inputs,
        f"products mod a {BIGMUL_LIMB_BITS * BIGMUL_LIMBS}-bit p",
        application=True,
    ),
}
FAMILIES["sha256batch"] = Family(
    "sha256batch",
    lambda hashes: f"Sha256({512 * BATCH_BLOCKS - 72})",
    "",
    lambda k: _fill(k, 31264 * BATCH_BLOCKS, 256),
    lambda copy, seed: _sha256_inputs(BATCH_BLOCKS, f"{seed} copy {copy}"),
    f"hashes of {BATCH_BLOCKS} blocks",
    template="sha256",
    copies=True,  # circomlib's SHA-256, but sized for scale, not one of issue #25's families
)
REAL_FAMILIES = tuple(n for n, f in FAMILIES.items() if f.circomlib)
APPLICATION_FAMILIES = tuple(n for n, f in FAMILIES.items() if f.application)


def real_families(curve: str = "bn254") -> tuple:
    """The circomlib families that mean something over the curve's field."""
    return tuple(n for n in REAL_FAMILIES if curve in FAMILIES[n].curves)


def smallest_log2n(family: str) -> int:
    """The smallest domain that holds one unit of the family."""
    return next(k for k in range(1, 29) if FAMILIES[family].size(k) >= 1)


def toyhash(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n toyhash circuit (see circuit())."""
    return circuit("toyhash", log2n, log)


def squarechain(log2n: int, log=print) -> dict:
    """Paths of a cached domain-2^log2n squaring-chain circuit (see circuit())."""
    return circuit("squarechain", log2n, log)


def circuit(family: str, log2n: int, log=print, curve: str = "bn254") -> dict:
    """Paths of a cached domain-2^log2n circuit of a family over a curve: r1cs, zkey, wtns,
    vk, info (made if missing). info.json: family, curve, log2n, the family's param and unit,
    constraints, public inputs, the key's domain, which tool made the key, the witness
    profile, seconds each step took."""
    fam = FAMILIES[family]
    if curve not in fam.curves:
        raise ValueError(f"{family} is not a circuit over {curve} (only {', '.join(fam.curves)})")
    param = fam.size(log2n)
    if param < 1:
        raise DomainTooSmall(
            f"{family} 2^{log2n}: one of its {fam.unit} needs a larger domain "
            f"(the smallest is 2^{smallest_log2n(family)})"
        )
    work = CURVES[curve].work
    d = work / f"{family}-{log2n}"
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
            _write_info(d, fam, param, (info or {}).get("setup", "unknown"), {}, log2n, curve)
        return files
    if ptau(curve, log2n, log) is None and (why := setup_supported(curve)):
        raise KeyUnavailable(
            f"{family} 2^{log2n} on {curve}: no powers of tau of 2^{log2n} (the bench makes "
            f"them up to 2^{CURVES[curve].ptau_log2}) and `cuzk setup` refuses the curve ({why})"
        )
    work.mkdir(parents=True, exist_ok=True)
    tmp = work / f".{family}-{log2n}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        build(family, param, tmp, log, log2n=log2n, curve=curve)
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return files


def build(
    family: str,
    param: int,
    d: Path,
    log=print,
    *,
    log2n: int | None = None,
    curve: str = "bn254",
) -> dict:
    """Compile, witness and key one instance of a family (param units) over a curve into the
    new folder d; the paths as circuit() returns them. With log2n, the key's domain must be
    2^log2n."""
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
        [BIN / "circom2", d / "circuit.circom", "--r1cs", "--wasm", "-l", "node_modules"]
        + ["--prime", CURVES[curve].prime, "-o", d],
        3600,
        cwd=TOOLS.resolve(),
    )
    cuzk = [sys.executable, "-m", "cuzk.cli"]
    copies = param if fam.copies else 1
    for c in range(copies):
        t0 = time.perf_counter()
        inputs = fam.inputs(c if fam.copies else param, SEED)
        steps["inputs"] = round(steps.get("inputs", 0) + time.perf_counter() - t0, 2)
        name = f"input_{c}.json" if fam.copies else "input.json"
        (d / name).write_text(json.dumps(_strings(inputs)))
        step(
            "cuzk wtns calculate" + (f" (copy {c + 1} of {copies})" if fam.copies else ""),
            cuzk
            + ["wtns", "calculate", d / "circuit_js" / "circuit.wasm", d / name]
            + [d / (f"witness_{c}.wtns" if fam.copies else "witness.wtns")],
            3600,
        )
    if fam.copies:
        t0 = time.perf_counter()
        (d / "circuit.r1cs").rename(d / "unit.r1cs")
        compose_r1cs(d / "unit.r1cs", copies, d / "circuit.r1cs")
        units = [d / f"witness_{c}.wtns" for c in range(copies)]
        compose_witness(units, d / "witness.wtns")
        for p in units:
            p.unlink()
        steps["compose"] = round(time.perf_counter() - t0, 2)
    from cuzk.formats.r1cs import R1CS
    from cuzk.groth16.setup import domain_size_for

    r1cs = R1CS(d / "circuit.r1cs")
    domain = domain_size_for(r1cs.n_constraints, r1cs.n_public)
    tau = ptau(curve, domain.bit_length() - 1, log)
    if tau is not None:
        setup = f"snarkjs groth16 setup ({tau.name}, no contribution)"
        step(
            setup,
            [BIN / "snarkjs", "groth16", "setup", d / "circuit.r1cs", tau, d / "circuit.zkey"],
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
    info = _write_info(d, fam, param, setup, steps, log2n, curve)
    if log2n is not None and info["domain_log2"] != log2n:
        raise RuntimeError(
            f"{family} with {param} {fam.unit}: domain 2^{info['domain_log2']}, not 2^{log2n} "
            f"({info['constraints']} constraints, {info['public']} public)"
        )
    return {k: d / f for k, f in FILES}


def compose_r1cs(unit: Path, copies: int, out: Path) -> None:
    """Write to `out` an .r1cs of `copies` disjoint copies of the circuit `unit`, sharing only
    the constant-one wire 0: copy c's wire w >= 1 becomes w + c·(nWires − 1), so the first
    copy keeps its wires, its public signals stay the circuit's (wires 1..nPublic), and the
    other copies' public signals become private wires. Labels shift the same way by nLabels.
    Each copy's constraints are the unit's bytes with the wire numbers of its terms moved."""
    import struct

    import numpy as np

    from cuzk.formats.atomic import atomic_writer
    from cuzk.formats.binfile import BinFile, write_container
    from cuzk.formats.r1cs import CONSTRAINTS, HEADER, R1CS_VERSION, TERM_BYTES, WIRE2LABEL

    data = Path(unit).read_bytes()
    f = BinFile(unit, "r1cs", (R1CS_VERSION,), data=data)
    h = f.section(HEADER, "header")
    header = bytearray(data[h.offset : h.offset + h.size])
    n8 = struct.unpack_from("<I", header, 0)[0]
    n_wires, pub_out, pub_in, prv_in, n_labels, n_constraints = struct.unpack_from(
        "<4IQI", header, 4 + n8
    )
    struct.pack_into(
        "<4IQI",
        header,
        4 + n8,
        1 + copies * (n_wires - 1),
        pub_out,
        pub_in,
        prv_in,
        copies * n_labels,
        copies * n_constraints,
    )
    s = f.section(CONSTRAINTS, "constraints")
    raw = np.frombuffer(data, dtype=np.uint8, count=s.size, offset=s.offset)
    # the byte offset of every term's wire number: each linear combination is a u32 count
    # and that many (u32 wire, value) terms
    u32 = struct.Struct("<I").unpack_from
    starts, counts, pos = [], [], 0
    for _ in range(3 * n_constraints):
        n = u32(data, s.offset + pos)[0]
        starts.append(pos + 4)
        counts.append(n)
        pos += 4 + n * TERM_BYTES
    if pos != s.size:
        raise ValueError(f"{unit}: the constraints section does not parse ({pos} of {s.size})")
    counts = np.array(counts, dtype=np.int64)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    term = np.repeat(np.array(starts, dtype=np.int64), counts)
    term += (np.arange(int(counts.sum()), dtype=np.int64) - first) * TERM_BYTES
    at = term[:, None] + np.arange(4)
    wires = raw[at].copy().view("<u4").reshape(-1)
    moved = wires != 0
    chunks = [raw]
    for c in range(1, copies):
        copy = raw.copy()
        copy[at] = (
            (wires + np.uint32(c * (n_wires - 1)) * moved)
            .astype("<u4")
            .view(np.uint8)
            .reshape(-1, 4)
        )
        chunks.append(copy)
    sections = [(HEADER, [bytes(header)]), (CONSTRAINTS, chunks)]
    if f.has(WIRE2LABEL):
        w = f.section(WIRE2LABEL, "wire to label map")
        labels = np.frombuffer(data, dtype="<u8", count=n_wires, offset=w.offset)
        parts = [labels] + [labels[1:] + np.uint64(c * n_labels) for c in range(1, copies)]
        sections.append((WIRE2LABEL, parts))
    with atomic_writer(out) as fh:
        write_container(fh, "r1cs", R1CS_VERSION, sections)


def compose_witness(witnesses: list, out: Path) -> None:
    """The witness of compose_r1cs's circuit from one witness per copy, in copy order: the
    first whole, then each other's values after its w[0] = 1."""
    import numpy as np

    from cuzk.formats.wtns import read_wtns, write_wtns

    values = [read_wtns(w).values for w in witnesses]
    write_wtns(out, np.concatenate([values[0]] + [v[1:] for v in values[1:]]))


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
    d: Path,
    fam: Family,
    param: int,
    setup: str,
    steps: dict,
    log2n: int | None,
    curve: str = "bn254",
) -> dict:
    from cuzk.formats.r1cs import R1CS
    from cuzk.groth16.setup import domain_size_for

    r1cs = R1CS(d / "circuit.r1cs")
    public = r1cs.n_public
    info = {
        "family": fam.name,
        "curve": curve,
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
