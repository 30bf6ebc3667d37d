"""Suite `prove-plonk`: `cuzk prove`, and a warm `cuzk serve`, against `snarkjs plonk prove`
on the same PLONK keys.

For each circuit (bench.circuits' circomlib families, sized so that the PLONK key's domain is
2^k: 2^12, 2^15 and 2^17 in the quick profile, 2^19 in the full one; a family whose unit
needs more gates than the domain holds, SHA-256's 31,264-constraint block below 2^17, is
listed as skipped): rounds of the `cuzk prove` command, of `cuzk prove --server URL` (the
warm daemon) and of `snarkjs plonk prove` (once, its untimed run left out, from 2^15), after
one untimed run of each, so that all see the same machine load: min / median / max wall
time, peak RSS, and the ratios of the medians (snarkjs ÷ each: how many times faster cuzk
is) and of the peaks (`cuzk prove`'s ÷ snarkjs's). Every proof any command wrote is checked
by `snarkjs plonk verify` against the key's verification key; a row whose proof is refused
stops the suite.

The warm daemon: one `cuzk serve` on loopback (bench.bench_prove_server.start_daemon, its
default prover, which serves PLONK keys; key root bench/work) for the whole run. `cuzk prove
--server` sends the key by path (the untimed run registers it: checked once, then resident)
and the witness by path (POST /v1/prove; a witness under 256 KiB is uploaded instead), so a
timed round is what a client pays for one proof from a warm daemon: the interpreter and the
thin client, the request, the daemon's proof, the files. The daemon's own time per job
(submitted -> finished, GET /v1/jobs) is recorded beside it (daemon_job_s).

The measured runners are listed in RUNNERS (name -> how it proves a circuit's files); the
rows carry one column group per runner, so a runner added there gets its columns and ratio
without changing the rest.

Circuits are compiled and witnessed as bench.circuits does, in their own folders
(bench/work/plonk/<family>-<k>/); the key comes from make_key(), which runs `cuzk setup
--protocol plonk` (snarkjs's `plonk setup` key, byte for byte) over a BN254 powers-of-tau
file of at least the domain's size (ptau(): the committed 2^10 fixture, else
bench/work/pot<k>.ptau, made on first use by `cuzk ptau new` with a fixed seed: a development
file whose maker knows tau, for benchmarks only, made in minutes where
snarkjs's ceremony commands take hours above 2^15; a file put there by hand, e.g. one of the
public ceremony's prepared files, is used instead). Issue #37's targets: `cuzk prove` >= 10x
faster than `snarkjs plonk prove` at 2^15 and above, the warm daemon >= 20x, peak RSS <=
snarkjs's.
Run alone: ``python -m bench.bench_prove_plonk [smoke|quick|full]``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_prove import (
    RSS_METHOD,
    _cuzk_command,
    _run_measured,
    _shown,
    last_job_seconds,
    native_library,
)
from bench.circuits import (
    BIN,
    FAMILIES,
    PTAU,
    PTAU_LOG2,
    TOOLS,
    WORK,
    _run,
    _strings,
    ensure_tools,
    real_families,
)
from bench.machine import compile_bytecode
from bench.tables import fmt, table, target

# (log2n, ...) per profile; the smoke profile proves one small range-check key (the committed
# 2^10 powers of tau: no ceremony), the gpu profile nothing (the PLONK prover is CPU-only).
SIZES = {"smoke": (10,), "quick": (12, 15, 17), "full": (12, 15, 17, 19), "gpu": ()}
FAMILIES_BY_PROFILE = {"smoke": ("range",), "quick": None, "full": None, "gpu": None}
REPEATS = {"smoke": 1, "quick": 3, "full": 5, "gpu": 1}
SLOW_PEER_LOG2N = 15  # from this size snarkjs (a minute a proof and more) runs once, no warm-up
PLONK_WORK = WORK / "plonk"
PTAU_MAKE_LOG2 = 22  # powers of tau the suite makes itself (`cuzk ptau new`: minutes)
FILL = 0.97  # the share of the domain a sized circuit may fill (the gate count is estimated)


class NoCircuit(RuntimeError):
    """No circuit of a family fits the size, or no key can be made for it here."""


# --- keys and circuits ----------------------------------------------------------------------


def ptau(log2n: int, log=print) -> Path:
    """A BN254 powers-of-tau file (phase 2 prepared) covering a domain of 2^log2n: the
    committed tests/fixtures/pot10.ptau up to 2^10, the smallest bench/work/pot<k>.ptau with
    k >= log2n, else one made by `cuzk ptau new k` with a fixed seed (a development file whose
    maker knows tau: for benchmarks only; about 2 minutes at 2^17 on 2 cores, where snarkjs's
    new + contribute + prepare phase2 took over 30 minutes at 2^15). snarkjs's setup reads
    it as it reads a ceremony's (tests/test_ptau_new.py)."""
    if log2n <= PTAU_LOG2 and PTAU.exists():
        return PTAU
    for have in range(max(8, log2n), 29):
        if (WORK / f"pot{have}.ptau").exists():
            return WORK / f"pot{have}.ptau"
    k = max(8, log2n)
    if k > PTAU_MAKE_LOG2:
        raise NoCircuit(
            f"no BN254 powers of tau of 2^{k} or more in bench/work (pot{k}.ptau ...): the suite "
            f"makes them up to 2^{PTAU_MAKE_LOG2}; put one there"
        )
    out = WORK / f"pot{k}.ptau"
    ensure_tools()  # snarkjs's plonk setup reads it next
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f"  making {out.name} (bn128, 2^{k}) with cuzk ptau new (development file) ...")
    cmd = _cuzk_command() + ["ptau", "new", "-q", k, out, f"--seed=cuzk bench bn128 {k}"]
    _run(cmd, timeout=7200)  # written atomically: a file there is whole
    return out


def make_key(r1cs: Path, zkey: Path, log2n: int, log=print) -> str:
    """Write the PLONK key of `r1cs` to `zkey`; returns how it was made (recorded in the
    results). The one place the suite makes keys: `cuzk setup --protocol plonk` over ptau(),
    which writes `snarkjs plonk setup`'s key byte for byte (tests/test_plonk_setup.py,
    tests/test_ptau_new.py) in about half its time and memory (2^17: 20 s and 403 MB against
    44 s and 741 MB): snarkjs proves and verifies with it as with its own."""
    tau = ptau(log2n, log)
    _run(_cuzk_command() + ["setup", "--protocol", "plonk", "-q", r1cs, tau, zkey], timeout=7200)
    return f"cuzk setup --protocol plonk ({tau.name})"


def plonk_gates(r1cs: Path) -> int:
    """The gates `snarkjs plonk setup` makes of a circuit (its processConstraints, counted):
    one per public signal; per constraint one gate plus one addition gate for every term of a
    linear combination beyond what the gate holds (1 per side of a product, 3 for a sum).
    Cancelling terms of a joined sum are not looked for: an upper bound."""
    from cuzk.formats.r1cs import R1CS

    c = R1CS(r1cs)
    gates = c.n_public
    for a, b, cc in c.constraints():
        na = sum(1 for s, v in a.items() if s != 0 and v)
        nb = sum(1 for s, v in b.items() if s != 0 and v)
        nc = sum(1 for s, v in cc.items() if s != 0 and v)
        ka, kb = bool(a.get(0)), bool(b.get(0))
        if (na == 0 and not ka) or (nb == 0 and not kb):
            gates += 1 + max(0, nc - 3)
        elif na == 0:
            gates += 1 + max(0, len(({s for s, v in b.items() if v} | set(cc)) - {0}) - 3)
        elif nb == 0:
            gates += 1 + max(0, len(({s for s, v in a.items() if v} | set(cc)) - {0}) - 3)
        else:
            gates += 1 + max(0, na - 1) + max(0, nb - 1) + max(0, nc - 1)
    return gates


def _compile(family: str, param: int, d: Path, log=print) -> dict:
    """circom2 and the witness of one instance of a family in folder d."""
    fam = FAMILIES[family]
    d.mkdir(parents=True, exist_ok=True)
    (d / "circuit.circom").write_text(fam.source(param))
    log(f"  {family} {param} {fam.unit}: circom2 ...")
    _run(
        [BIN / "circom2", d / "circuit.circom", "--r1cs", "--wasm", "-l", "node_modules"]
        + ["--prime", "bn128", "-o", d],
        timeout=3600,
        cwd=TOOLS.resolve(),
    )
    (d / "input.json").write_text(json.dumps(_strings(fam.inputs(param, 25))))
    log(f"  {family} {param} {fam.unit}: cuzk wtns calculate ...")
    _run(
        [sys.executable, "-m", "cuzk.cli", "wtns", "calculate"]
        + [d / "circuit_js" / "circuit.wasm", d / "input.json", d / "witness.wtns"],
        timeout=3600,
    )
    return {"r1cs": d / "circuit.r1cs", "wtns": d / "witness.wtns"}


def _units(family: str, log2n: int, log=print) -> int:
    """How many units of the family fit a PLONK domain of 2^log2n: the gates of one and two
    units counted (plonk_gates), the fixed part and the per-unit part from their difference
    (cached in bench/work/plonk/units.json)."""
    cache = PLONK_WORK / "units.json"
    known = json.loads(cache.read_text()) if cache.exists() else {}
    if family not in known:
        counts = []
        for p in (1, 2):
            d = PLONK_WORK / f".units-{family}-{p}.{os.getpid()}"
            shutil.rmtree(d, ignore_errors=True)
            try:
                counts.append(plonk_gates(_compile(family, p, d, log)["r1cs"]))
            finally:
                shutil.rmtree(d, ignore_errors=True)
        known[family] = {"per_unit": counts[1] - counts[0], "fixed": 2 * counts[0] - counts[1]}
        PLONK_WORK.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(known, indent=1))
    per, fixed = known[family]["per_unit"], known[family]["fixed"]
    return max(0, math.floor(((1 << log2n) * FILL - fixed) / per))


def circuit(family: str, log2n: int, log=print) -> dict:
    """Paths of a cached PLONK circuit of the family whose key's domain is 2^log2n: r1cs,
    wtns, zkey, vk, info (made if missing)."""
    d = PLONK_WORK / f"{family}-{log2n}"
    files = {k: d / f for k, f in (("r1cs", "circuit.r1cs"), ("wtns", "witness.wtns"))}
    files |= {"zkey": d / "plonk.zkey", "vk": d / "vk.json", "info": d / "info.json"}
    if all(p.exists() for p in files.values()):
        return files
    if (1 << 24) // FAMILIES[family].size(24) >= 1 << log2n:  # R1CS constraints of a unit
        raise NoCircuit(f"{family} at 2^{log2n}: one unit has more constraints than that")
    param = _units(family, log2n, log)
    if param < 1 or (1 << (log2n - 1)) >= _domain_floor(family, param):
        raise NoCircuit(
            f"{family} at 2^{log2n}: "
            + ("one unit needs more gates" if param < 1 else "its units fill a smaller domain")
        )
    ptau(log2n, log)  # before compiling: NoCircuit where there is none
    tmp = PLONK_WORK / f".{family}-{log2n}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        made = _compiled(family, param, log2n, log)
        tmp.mkdir(parents=True)
        for f in ("circuit.r1cs", "witness.wtns", "circuit.circom", "input.json"):
            shutil.copy(made / f, tmp / f)
        made = {"r1cs": tmp / "circuit.r1cs"}
        _check_public(family, log2n, made["r1cs"])
        t0 = time.perf_counter()
        log(f"  {family} {param} {FAMILIES[family].unit}: PLONK key ...")
        how = make_key(made["r1cs"], tmp / "plonk.zkey", log2n, log)
        setup_s = time.perf_counter() - t0
        _run(
            [BIN / "snarkjs", "zkey", "export", "verificationkey", tmp / "plonk.zkey"]
            + [tmp / "vk.json"],
            timeout=3600,
        )
        from cuzk.formats.plonk_zkey import PlonkZKey

        key = PlonkZKey(tmp / "plonk.zkey")
        info = {
            "family": family,
            "param": param,
            "unit": FAMILIES[family].unit,
            "log2n": log2n,
            "domain_log2": key.power,
            "gates": key.n_constraints,
            "additions": key.n_additions,
            "public": key.n_public,
            "setup": how,
            "setup_s": round(setup_s, 1),
        }
        del key
        if info["domain_log2"] != log2n:
            raise RuntimeError(f"{family} with {param} units: domain 2^{info['domain_log2']}")
        (tmp / "info.json").write_text(json.dumps(info, indent=1))
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return files


def _check_public(family: str, log2n: int, r1cs: Path) -> None:
    """NoCircuit when snarkjs's prover could not hold the key's Lagrange polynomials here: a
    PLONK key stores, per public signal, L_i's coefficients and its values on the domain of
    4n (160 bytes a gate), and `snarkjs plonk prove` reads every public signal's 4n values
    into memory (128 bytes a gate each). SHA-256's 256 public digest bits at 2^19 would be a
    21 GB key of which snarkjs reads 17 GB: past half of this machine's memory, listed as
    skipped with these figures rather than killed by the kernel."""
    from bench.machine import machine_info
    from cuzk.formats.r1cs import R1CS

    public = max(1, R1CS(r1cs).n_public)
    read = public * (4 << log2n) * 32
    memory = (machine_info().get("memory_gib") or 0) * 2**30
    if memory and read > memory / 2:
        raise NoCircuit(
            f"{family} at 2^{log2n}: {public} public signals make a "
            f"{public * (5 << log2n) * 32 / 1e9:.0f} GB PLONK key, of which `snarkjs plonk "
            f"prove` reads {read / 1e9:.0f} GB into memory: more than half of this machine's "
            f"{memory / 2**30:.0f} GiB"
        )


def _compiled(family: str, param: int, log2n: int, log=print) -> Path:
    """The folder of the family's circuit of `param` units compiled and witnessed (kept apart
    from its key, so that a key made later reuses it)."""
    d = PLONK_WORK / f".compiled-{family}-{log2n}"
    src = FAMILIES[family].source(param)
    c = d / "circuit.circom"
    if not (c.exists() and c.read_text() == src and (d / "witness.wtns").exists()):
        shutil.rmtree(d, ignore_errors=True)
        _compile(family, param, d, log)
    return d


def _domain_floor(family: str, param: int) -> int:
    """The gates `param` units are estimated at (units.json)."""
    known = json.loads((PLONK_WORK / "units.json").read_text())[family]
    return known["fixed"] + param * known["per_unit"]


# --- the runners ----------------------------------------------------------------------------


def _verified(files: dict, tag: str) -> bool:
    """`snarkjs plonk verify` of p_TAG.json with pub_TAG.json says OK."""
    d = files["zkey"].parent
    p = subprocess.run(
        [str(BIN / "snarkjs"), "plonk", "verify", str(files["vk"])]
        + [str(d / f"pub_{tag}.json"), str(d / f"p_{tag}.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return p.returncode == 0 and "OK" in p.stdout


def cuzk_command(files: dict, tag: str, server=None) -> list:
    d = files["zkey"].parent
    return (
        _cuzk_command()
        + ["prove", files["zkey"], files["wtns"]]
        + [
            d / f"p_{tag}.json",
            d / f"pub_{tag}.json",
        ]
    )


def server_command(files: dict, tag: str, server=None) -> list:
    """`cuzk prove ... --server URL` of the warm daemon (`server`: its cuzk.client.Client)."""
    return cuzk_command(files, tag) + ["--server", server.server]


def snarkjs_command(files: dict, tag: str, server=None) -> list:
    d = files["zkey"].parent
    return [BIN / "snarkjs", "plonk", "prove", files["zkey"], files["wtns"]] + [
        d / f"p_{tag}.json",
        d / f"pub_{tag}.json",
    ]


# name -> (column prefix, the command proving a circuit's files into p_TAG / pub_TAG, is it
# the slow peer that runs once at large sizes). PEER is the one every speed ratio divides
# (snarkjs ÷ the runner); BASE's peak RSS is compared with PEER's (the server runner's RSS is
# the thin client's only: the daemon's memory is its own, resident between proofs).
RUNNERS = {
    "cuzk prove": ("cuzk", cuzk_command, False),
    "cuzk prove --server": ("server", server_command, False),
    "snarkjs plonk prove": ("snarkjs", snarkjs_command, True),
}
BASE, SERVER, PEER = "cuzk", "server", "snarkjs"


def _measure(family: str, log2n: int, profile: str, server=None) -> dict:
    """One row: every runner's rounds on the family's key of 2^log2n. `server`: the warm
    daemon's cuzk.client.Client (its runner is left out without one)."""
    from bench.bench_prove_server import tables_ready

    files = circuit(family, log2n)
    info = json.loads(files["info"].read_text())
    repeats = REPEATS[profile]
    runners = [r for r in RUNNERS.values() if server is not None or r[0] != SERVER]
    times = {p: [] for p, _, _ in runners}
    rss = {p: [] for p, _, _ in runners}
    jobs = []  # the daemon's own time per timed job
    for rnd in range(repeats + 1):  # round 0: untimed warm-up (the daemon registers the key)
        if rnd == 1 and server is not None:  # the daemon warm: the key's table in place
            tables_ready(server.keys)
        for prefix, command, slow in runners:
            if slow and log2n >= SLOW_PEER_LOG2N and rnd not in (1,):
                continue  # the slow peer once, with no warm-up run
            tag = f"{prefix}{rnd}"
            dt, mib = _run_measured(command(files, tag, server=server))
            if not _verified(files, tag):
                raise RuntimeError(f"{family} 2^{log2n}: {prefix}'s proof refused by snarkjs")
            if rnd:
                times[prefix].append(dt)
                rss[prefix].append(mib)
                if prefix == SERVER:
                    jobs.append(last_job_seconds(server))
    row = {
        "family": family,
        "log2n": log2n,
        "units": info["param"],
        "gates": info["gates"],
        "additions": info["additions"],
        "public": info["public"],
    }
    for prefix in times:
        xs = times[prefix]
        row[f"{prefix}_s_min"] = min(xs)
        row[f"{prefix}_s"] = statistics.median(xs)
        row[f"{prefix}_s_max"] = max(xs)
        row[f"{prefix}_rss_mib"] = max(rss[prefix])
        row[f"{prefix}_rounds"] = len(xs)
    if jobs:
        row["daemon_job_s"] = statistics.median(jobs)
    for prefix in times:
        if prefix != PEER:
            row[f"{PEER}_over_{prefix}"] = row[f"{PEER}_s"] / row[f"{prefix}_s"]
    if jobs:
        row[f"{PEER}_over_daemon_job"] = row[f"{PEER}_s"] / row["daemon_job_s"]
    row[f"{BASE}_rss_over_{PEER}"] = row[f"{BASE}_rss_mib"] / row[f"{PEER}_rss_mib"]
    row["verified_by_snarkjs"] = True
    print(
        f"  {family} 2^{log2n}: "
        + ", ".join(f"{p} {fmt(row[f'{p}_s'])} s {fmt(row[f'{p}_rss_mib'])} MiB" for p in times)
        + (f" (daemon job {fmt(row['daemon_job_s'])} s)" if jobs else ""),
        flush=True,
    )
    return row


def run(profile: str = "quick", families=None) -> dict:
    from bench.bench_prove_server import start_daemon, stop_daemon
    from cuzk.client import Client

    compile_bytecode()
    # CUZK_NATIVE=0: the commands run Numba's kernels (no library built or used)
    native = None if os.environ.get("CUZK_NATIVE") == "0" else native_library("bn254")
    rows, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-serve-plonk-") as folder:
        proc, url = start_daemon(folder)  # key root bench/work
        try:
            server = Client(url, timeout=1800)
            for log2n in SIZES[profile]:
                for family in families or FAMILIES_BY_PROFILE[profile] or real_families("bn254"):
                    try:
                        rows.append(_measure(family, log2n, profile, server))
                    except NoCircuit as exc:
                        print(f"  {family} 2^{log2n}: skipped: {exc}", flush=True)
                        skipped.append({"family": family, "log2n": log2n, "why": str(exc)})
        finally:
            stop_daemon(proc)
    print(table(rows))
    return {
        "runners": list(RUNNERS),
        "cuzk_command": " ".join(_shown(c) for c in _cuzk_command()),
        "daemon": "cuzk serve on loopback, default prover and devices, key root bench/work",
        "native_kernels": native,
        "rss_method": RSS_METHOD,
        "rows": rows,
        "skipped": skipped,
    }


def targets(get) -> list[dict]:
    """Issue #37's: `cuzk prove` >= 10x faster than `snarkjs plonk prove` at 2^15 and above
    (the least ratio over the families), the warm daemon >= 20x (the whole `cuzk prove
    --server` command), peak RSS <= snarkjs's (the largest ratio)."""
    res = get()
    rows = [r for r in (res or {}).get("rows", []) if r["log2n"] >= 15]
    speed = min((r["snarkjs_over_cuzk"] for r in rows), default=None)
    warm_rows = [r for r in rows if "snarkjs_over_server" in r]
    warm = min((r["snarkjs_over_server"] for r in warm_rows), default=None)
    mem = max((r["cuzk_rss_over_snarkjs"] for r in rows), default=None)
    sizes = ", ".join(sorted({f"2^{r['log2n']}" for r in rows})) or "none measured"
    job = min((r["snarkjs_over_daemon_job"] for r in warm_rows), default=None)
    return [
        target(
            "cuzk prove vs snarkjs plonk prove (times faster, least)",
            37,
            10,
            "x",
            speed,
            upper=False,
            note=sizes,
            suite="prove-plonk",
        ),
        target(
            "cuzk prove --server (warm daemon) vs snarkjs plonk prove (times faster, least)",
            37,
            20,
            "x",
            warm,
            upper=False,
            note=sizes + ("" if job is None else f"; the daemon's own job time: {fmt(job)}x"),
            suite="prove-plonk",
        ),
        target(
            "cuzk prove peak RSS vs snarkjs plonk prove (largest)",
            37,
            1.0,
            "x",
            mem,
            note=sizes,
            suite="prove-plonk",
        ),
    ]


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "quick"), indent=1))
