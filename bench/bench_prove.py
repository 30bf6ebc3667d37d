"""Suite `prove`: `cuzk prove` against rapidsnark and `snarkjs groth16 prove` on the same files.

For each circuit (bench.circuits: the squaring chain at every size, the toyhash circuit the
kernels were first tuned on at 2^15, circomlib's SHA-256, Poseidon Merkle paths,
EdDSA-Poseidon and range checks at 2^15 and 2^17, and issue #35's Semaphore-shaped membership
proofs and 2048-bit modular products at 2^13 (Semaphore: 2^14, its smallest; 2^13 is listed
as skipped), 2^15 and 2^17, 2^19 in the full profile; keys by `snarkjs groth16 setup` up to
2^10, by `cuzk setup` above; each row carries its witness profile, the share of values that
are 0, 1, below 2^64 and dense):
- rounds of: the `cuzk prove` command, rapidsnark's `prover` command (when built), the
  `snarkjs groth16 prove` command (once, its untimed run left out for the circomlib and
  application circuits, from 2^17), and one proof by cuzk in process with the key mapped and
  the kernels loaded (what `cuzk serve` pays per proof), after one untimed run of each (Numba
  cache, page cache and node warm), so that all see the same machine load: min / median /
  max, the ratios of the medians, and each command's peak RSS (from wait4);
- the per-phase breakdown from Proof.timings (medians over the rounds); the command minus
  the in-process proof is cuzk's start-up (interpreter, imports, cached kernels, key mapping);
- the proof the cuzk command wrote is checked with cuzk's verifier against the key's
  verification key (a fast wrong prover would be no result).
rapidsnark is not in the package registries: `RAPIDSNARK=path/to/prover`, else
bench/peers/rapidsnark/prover (built from its public source as README.md says), else
`rapidsnark` on PATH; without one the rows have no rapidsnark columns and the result says
why. Issue #16's targets (squaring chain): cuzk command <= 1.0x rapidsnark's at 2^15 and up,
in process <= 0.5x, peak RSS <= 2x at 2^17 and up. Issue #25's, on every circomlib family: in
process <= 0.5x rapidsnark's command at 2^15, 2^17 and 2^19, the command <= 1.0x and peak RSS
<= 2x at 2^17 and 2^19. Issue #35's (target 3) on its two families: in process <= 0.5x
rapidsnark's command at every size.
The scale rows (issue #35's target 5: 2^21 and 2^22) are suite `scale` (bench.bench_scale).
Profile gpu runs `cuzk prove --device cuda` at the device sizes.
Run alone: ``python -m bench.bench_prove [smoke|quick|full|gpu] [FAMILY ...]`` (run_families).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.circuits import (
    APPLICATION_FAMILIES,
    BIN,
    FAMILIES,
    REAL_FAMILIES,
    ROOT,
    WORK,
    KeyUnavailable,
    circuit,
    profile_text,
    smallest_log2n,
)
from bench.machine import compile_bytecode
from bench.plots import figure, save
from bench.tables import family_row, fmt, squarechain_row, table, target


def application_rows(sizes) -> list:
    """(family, log2n) of issue #35's families at the sizes, each family's smallest domain
    added after 2^13 when one unit needs more (2^13 stays: measure() lists it as skipped)."""
    return [
        (f, k)
        for f in APPLICATION_FAMILIES
        for k in sorted(set(sizes) | ({smallest_log2n(f)} if 13 in sizes else set()))
    ]


def application_target_rows() -> list:
    """(family, log2n) of issue #35's families that its targets read: every size from 2^13
    to 2^19 that holds one unit (a row below a family's smallest domain is only skipped)."""
    return [(f, k) for f, k in application_rows((13, 15, 17, 19)) if k >= smallest_log2n(f)]


# (family, log2n) per profile: the squaring chain at every size, toyhash for continuity,
# circomlib's families (issue #25) at 2^15 and 2^17, issue #35's application-shaped ones at
# 2^13 (or their smallest), 2^15 and 2^17; 2^19 in the full profile.
CIRCUITS = {
    "smoke": [("toyhash", 10)],
    "quick": [("squarechain", 12), ("squarechain", 15), ("toyhash", 15), ("squarechain", 17)]
    + [(f, k) for k in (15, 17) for f in REAL_FAMILIES]
    + application_rows((13, 15, 17)),
    "full": [
        ("squarechain", 12),
        ("squarechain", 15),
        ("toyhash", 15),
        ("squarechain", 17),
        ("squarechain", 19),
    ]
    + [(f, k) for k in (15, 17, 19) for f in REAL_FAMILIES]
    + application_rows((13, 15, 17, 19)),
    "gpu": [("squarechain", 16), ("squarechain", 18), ("squarechain", 20)],
}
REPEATS = {"smoke": 1, "quick": 3, "full": 5, "gpu": 3}  # rounds of every command
SLOW_PEER_LOG2N = 17  # from this size snarkjs (~20 s a proof) runs once, not every round
PEER_DIR = ROOT / "bench" / "peers" / "rapidsnark"


GNU_TIME = "/usr/bin/time"  # Debian's `time`: reports its child's own peak RSS


def _run_measured(cmd, env=None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one command.

    The peak comes from GNU time, which forks the command from its own small process: a child
    forked straight from this interpreter would count the interpreter's pages (Linux keeps the
    high-water mark across exec), hundreds of MiB for a command that uses a few. Without GNU
    time, wait4's figure is recorded and marked as an upper bound (RSS_METHOD)."""
    argv = [str(c) for c in cmd]
    if RSS_METHOD == "gnu-time":
        argv = [GNU_TIME, "-f", "cuzk-bench-rss-kib %M"] + argv
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE, env=env)
        err = p.stderr.read()
        p.stderr.close()
        _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    text = err.decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} failed ({p.returncode}): {text.strip()[-500:]}")
    kib = usage.ru_maxrss
    for line in text.splitlines():
        if line.startswith("cuzk-bench-rss-kib "):
            kib = int(line.split()[1])
    return dt, kib / 1024.0


RSS_METHOD = "gnu-time" if os.access(GNU_TIME, os.X_OK) else "wait4 (upper bound)"


def _snarkjs_verifies(vk, work: Path, tag: str) -> bool:
    """`snarkjs groth16 verify` of work/p_TAG.json with work/pub_TAG.json says OK."""
    p = subprocess.run(
        [str(BIN / "snarkjs"), "groth16", "verify", str(vk)]
        + [str(work / f"pub_{tag}.json"), str(work / f"p_{tag}.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return p.returncode == 0 and "OK" in p.stdout


def last_job_seconds(client) -> float:
    """The daemon's own time for its latest job (submitted -> finished, from GET /v1/jobs)."""
    j = max(client.jobs(), key=lambda j: j["submitted_at"])
    return j["finished_at"] - j["submitted_at"]


def _stats(xs):
    return min(xs), statistics.median(xs), max(xs)


def _shown(path) -> str:
    """A command part as recorded in the results: relative to the checkout when inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def native_library(curve: str = "bn254") -> str | None:
    """Build (or keep) the curve's native kernel library, as `cuzk warmup` does, so that the
    `cuzk prove` commands measured are the ones a user runs after it (cuzk.native); the
    library's file name, or None with the reason printed when it cannot be built."""
    from cuzk.native.build import BuildError, build_library

    try:
        return build_library(curve).name
    except BuildError as e:
        print(f"  no native kernels ({e}): `cuzk prove` runs on Numba's", flush=True)
        return None


def _cuzk_command() -> list:
    """The installed `cuzk` entry point next to this interpreter, else `python -m cuzk.cli`."""
    script = Path(sys.executable).with_name("cuzk")
    return [script] if script.exists() else [sys.executable, "-m", "cuzk.cli"]


def cuzk_prove(files: dict, tag: str, *opts) -> list:
    """The `cuzk prove` command line for a bench circuit's key and witness, writing
    p_TAG.json and pub_TAG.json beside them, with OPTS (--device, --server ...) last."""
    work = files["zkey"].parent
    return _cuzk_command() + [
        "prove",
        files["zkey"],
        files["wtns"],
        work / f"p_{tag}.json",
        work / f"pub_{tag}.json",
        *opts,
    ]


def in_process(files: dict, device: str):
    """(key, witness, device) of a bench circuit, loaded for prove() in this process."""
    from cuzk.groth16 import ProvingKey, load_witness, open_device

    key = ProvingKey.open(files["zkey"])
    return key, load_witness(files["wtns"], key), open_device(device)


def find_rapidsnark() -> tuple[str | None, str]:
    """(path of rapidsnark's prover or None, where it came from or why there is none)."""
    env = os.environ.get("RAPIDSNARK")
    if env:
        if not os.access(env, os.X_OK):
            raise RuntimeError(f"RAPIDSNARK={env} is not an executable file")
        return env, "RAPIDSNARK"
    built = PEER_DIR / "prover"
    if os.access(built, os.X_OK):
        return str(built), "bench/peers/rapidsnark (built from source)"
    on_path = shutil.which("rapidsnark")
    if on_path:
        return on_path, "PATH"
    return None, (
        "no rapidsnark: it is not in the package registries; build it from its "
        "public source (README.md, 'rapidsnark as a peer') or set RAPIDSNARK"
    )


def _circuit(
    family: str,
    log2n: int,
    profile: str,
    device: str,
    rapidsnark: str | None,
    *,
    curve: str = "bn254",
    slow_peer_log2n: int = SLOW_PEER_LOG2N,
    snarkjs_verify: bool = False,
    server=None,
):
    """One row: the commands side by side on one circuit (see the module docstring).
    slow_peer_log2n: from this size snarkjs runs once; on a curve other than BN254 its
    untimed warm-up is then left out too. snarkjs_verify: snarkjs also checks cuzk's proof.
    server: a cuzk.client.Client of a warm `cuzk serve` whose key root holds the circuit:
    `cuzk prove --server` joins the rounds, with the daemon's own time per job."""
    from cuzk.groth16 import prove
    from cuzk.groth16.verifier import verify_files

    files = circuit(family, log2n, curve=curve)
    work = files["zkey"].parent
    cmds = {
        "cuzk": cuzk_prove(files, "cuzk", "--device", device),
        "snarkjs": [
            BIN / "snarkjs",
            "groth16",
            "prove",
            files["zkey"],
            files["wtns"],
            work / "p_snarkjs.json",
            work / "pub_snarkjs.json",
        ],
    }
    if rapidsnark:
        cmds["rapidsnark"] = [
            rapidsnark,
            files["zkey"],
            files["wtns"],
            work / "p_rs.json",
            work / "pub_rs.json",
        ]
    if server is not None:
        cmds["server"] = cuzk_prove(files, "server", "--server", server.server)
    key, w, dev = in_process(files, device)
    real = FAMILIES[family].circomlib or FAMILIES[family].application
    snarkjs_once = log2n >= slow_peer_log2n or real
    snarkjs_cold = real or (curve != "bn254" and snarkjs_once)
    for k, cmd in cmds.items():  # untimed: Numba cache, page cache, node's module cache
        if not (k == "snarkjs" and snarkjs_cold):
            _run_measured(cmd)
    if server is not None:  # the daemon warm: its tables of multiples in place
        from bench.bench_prove_server import tables_ready

        tables_ready(server.keys)
    prove(key, w, dev)  # untimed: kernels loaded, key pages touched
    times = {k: [] for k in cmds}
    rss = {k: [] for k in cmds}
    warm, phase_runs, jobs = [], [], []
    rounds = REPEATS[profile]
    for i in range(rounds):  # one of each per round: all see the same load
        for k, cmd in cmds.items():
            if k == "snarkjs" and snarkjs_once and i > 0:
                continue
            dt, mib = _run_measured(cmd)
            times[k].append(dt)
            rss[k].append(mib)
            if k == "server":
                jobs.append(last_job_seconds(server))
        t0 = time.perf_counter()
        proof = prove(key, w, dev)
        warm.append(time.perf_counter() - t0)
        phase_runs.append(proof.timings)
        print(
            f"  {family} 2^{log2n} round {i + 1}/{rounds}: "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items())
            + f", cuzk in process {warm[-1]:.2f} s",
            flush=True,
        )
    tags = ("cuzk", "server") if server is not None else ("cuzk",)
    valid = all(
        verify_files(files["vk"], work / f"pub_{t}.json", work / f"p_{t}.json") for t in tags
    )
    peer_valid = None
    if snarkjs_verify:  # the proofs as snarkjs sees them (issue #28: every proof accepted)
        peer_valid = all(_snarkjs_verifies(files["vk"], work, t) for t in tags)
    phases = {"circuit": f"{family} 2^{log2n}", "log2n": log2n}
    for name in phase_runs[0]:
        phases[name] = round(statistics.median(t.get(name, 0.0) for t in phase_runs), 2)

    cmin, cmed, cmax = _stats(times["cuzk"])
    smin, smed, smax = _stats(times["snarkjs"])
    wmin, wmed, wmax = _stats(warm)
    info = json.loads(files["info"].read_text())
    row = {
        "family": family,
        "curve": curve,
        "log2n": log2n,
        "constraints": info.get("constraints"),
        "size": f"{info.get('steps')} {info.get('unit', 'steps')}",
        "witness_pct_0/1/small/dense": profile_text(info.get("witness_profile")),
        "witness_profile": info.get("witness_profile"),
        "key_by": " ".join(str(info.get("setup", "?")).split()[:2]),
        "cuzk_cmd_s": cmed,
        "cuzk_min_s": cmin,
        "cuzk_max_s": cmax,
        "snarkjs_s": smed,
        "snarkjs_min_s": smin,
        "snarkjs_max_s": smax,
        "cuzk_warm_s": wmed,
        "cuzk_warm_min_s": wmin,
        "cuzk_warm_max_s": wmax,
        "speedup_vs_snarkjs": smed / cmed,
        "speedup_warm_vs_snarkjs": smed / wmed,
        "startup_s": cmed - wmed,
        "cuzk_rss_mib": max(rss["cuzk"]),
        "snarkjs_rss_mib": max(rss["snarkjs"]),
        "cuzk_proof_valid": bool(valid),
    }
    if peer_valid is not None:
        row["snarkjs_verify"] = peer_valid
    if server is not None:
        vmed = _stats(times["server"])[1]
        row.update(
            server_cmd_s=vmed,
            daemon_job_s=_stats(jobs)[1],
            speedup_server_vs_snarkjs=smed / vmed,
            speedup_daemon_vs_snarkjs=smed / _stats(jobs)[1],
        )
    if rapidsnark:
        rmin, rmed, rmax = _stats(times["rapidsnark"])
        row.update(
            rapidsnark_s=rmed,
            rapidsnark_min_s=rmin,
            rapidsnark_max_s=rmax,
            rapidsnark_rss_mib=max(rss["rapidsnark"]),
            speedup_vs_rapidsnark=rmed / cmed,
            cmd_vs_rapidsnark=cmed / rmed,
            warm_vs_rapidsnark=wmed / rmed,
            rss_vs_rapidsnark=max(rss["cuzk"]) / max(rss["rapidsnark"]),
        )
    print(
        f"  {family} 2^{log2n}: cuzk {cmed:.3f} s (warm {wmed:.3f} s), snarkjs {smed:.3f} s"
        + (
            f", rapidsnark {row['rapidsnark_s']:.3f} s: command "
            f"{row['cmd_vs_rapidsnark']:.2f}x, warm {row['warm_vs_rapidsnark']:.2f}x "
            "rapidsnark's time"
            if rapidsnark
            else ""
        )
        + (
            f", cuzk prove --server {row['server_cmd_s']:.3f} s (daemon "
            f"{row['daemon_job_s']:.3f} s)"
            if server is not None
            else ""
        )
        + ("" if valid else "  PROOF DOES NOT VERIFY")
        + ("  SNARKJS REJECTS THE PROOF" if peer_valid is False else ""),
        flush=True,
    )
    if not valid or peer_valid is False:
        who = "cuzk's verifier" if not valid else "snarkjs groth16 verify"
        raise RuntimeError(f"cuzk prove's proof for {family} 2^{log2n} fails {who}")
    return row, phases


ROW_COLUMNS = [
    "family",
    "log2n",
    "constraints",
    "size",
    "witness_pct_0/1/small/dense",
    "cuzk_cmd_s",
    "cuzk_warm_s",
    "rapidsnark_s",
    "snarkjs_s",
    "cmd_vs_rapidsnark",
    "warm_vs_rapidsnark",
    "speedup_vs_snarkjs",
    "startup_s",
    "cuzk_rss_mib",
    "rapidsnark_rss_mib",
    "snarkjs_rss_mib",
]


def run(profile: str = "quick") -> dict:
    return measure(profile, CIRCUITS[profile])


def measure(
    profile: str,
    circuits: list,
    *,
    curve: str = "bn254",
    no_rapidsnark: str | None = None,
    slow_peer_log2n: int = SLOW_PEER_LOG2N,
    snarkjs_verify: bool = False,
    server=None,
) -> dict:
    """The suite's result for (family, log2n) circuits over a curve. no_rapidsnark: why
    rapidsnark is left out (it refuses the curve). server: a warm daemon's client, measured
    as `cuzk prove --server` in the rounds (see _circuit). A circuit without a key on the
    curve (bench.circuits.KeyUnavailable) is listed under "skipped" with why, not measured."""
    device = "cuda" if profile == "gpu" else "cpu"
    compile_bytecode()  # the commands run as installed (see bench.machine.compile_bytecode)
    native = native_library(curve)
    rapidsnark, origin = (None, no_rapidsnark) if no_rapidsnark else find_rapidsnark()
    rows, phases, skipped = [], [], []
    for family, log2n in circuits:
        try:
            row, ph = _circuit(
                family,
                log2n,
                profile,
                device,
                rapidsnark,
                curve=curve,
                slow_peer_log2n=slow_peer_log2n,
                snarkjs_verify=snarkjs_verify,
                server=server,
            )
        except KeyUnavailable as exc:
            print(f"  {family} 2^{log2n}: skipped: {exc}", flush=True)
            skipped.append({"family": family, "log2n": log2n, "why": str(exc)})
            continue
        rows.append(row)
        phases.append(ph)
    print(table(rows, [c for c in ROW_COLUMNS if any(c in r for r in rows)]))
    print("  per phase, ms (key loaded, median):")
    print(table(phases))
    rs = {
        "installed": bool(rapidsnark),
        "binary": _shown(rapidsnark) if rapidsnark else None,
        "origin": origin,
    }
    info = PEER_DIR / "BUILD-INFO"
    if rapidsnark and info.exists() and Path(rapidsnark).resolve().parent == PEER_DIR.resolve():
        rs["build"] = info.read_text().strip().splitlines()[:3]
    return {
        "device": device,
        "cuzk_command": " ".join(_shown(c) for c in _cuzk_command()),
        "native_kernels": native,
        "rss_method": RSS_METHOD,
        "rows": rows,
        "phases_ms": phases,
        "rapidsnark": rs,
    } | ({"curve": curve, "skipped": skipped} if curve != "bn254" or skipped else {})


# --- what the report shows: targets, the side-by-side summary and plot -------------------------


def targets(get) -> list[dict]:
    """Issue #16's targets against rapidsnark, run side by side on the same files: the command
    <= 1.0x rapidsnark's and the in-process proof (the daemon's case) <= 0.5x at 2^15 and up,
    peak RSS <= 2x at 2^17 and up (squaring-chain circuits)."""
    prove = get()
    have = bool((prove or {}).get("rapidsnark", {}).get("installed"))
    why = "" if have or not prove else "rapidsnark not built here (README: rapidsnark as a peer)"
    out = []
    for log2n in (15, 17, 19):
        r, where = squarechain_row(get, log2n)
        if r is None and log2n == 19:
            continue  # no full-profile run
        ok = bool(r and have)
        note = (
            f"cuzk {fmt(r['cuzk_cmd_s'])} s, rapidsnark {fmt(r['rapidsnark_s'])} s, "
            f"snarkjs {fmt(r['snarkjs_s'])} s"
            if ok
            else why
        )
        out.append(
            target(
                f"`cuzk prove` 2^{log2n}, whole command ÷ rapidsnark's",
                "#16",
                1.0,
                "x",
                r.get("cmd_vs_rapidsnark") if ok else None,
                note=note + where,
                suite="prove",
            )
        )
        out.append(
            target(
                f"cuzk 2^{log2n}, key loaded (daemon's case) ÷ rapidsnark's command",
                "#16",
                0.5,
                "x",
                r.get("warm_vs_rapidsnark") if ok else None,
                note=(f"in process {fmt(r['cuzk_warm_s'])} s{where}" if ok else why),
                suite="prove",
            )
        )
        if log2n >= 17:
            out.append(
                target(
                    f"`cuzk prove` 2^{log2n}, peak RSS ÷ rapidsnark's",
                    "#16",
                    2.0,
                    "x",
                    r.get("rss_vs_rapidsnark") if ok else None,
                    note=(
                        f"{fmt(r['cuzk_rss_mib'])} / {fmt(r['rapidsnark_rss_mib'])} MiB{where}"
                        if ok
                        else why
                    ),
                    suite="prove",
                )
            )
    return out + family_targets(get) + application_targets(get)


def family_targets(get) -> list[dict]:
    """Issue #25's targets on every circomlib family, against rapidsnark's whole command on
    the same files: the in-process proof (the daemon with the key resident) <= 0.5x at 2^15,
    2^17 and 2^19 (target 2), the `cuzk prove` command <= 1.0x at 2^17 and 2^19 (target 4),
    its peak RSS <= 2x at 2^17 and 2^19 (target 5). 2^19 rows come from the full profile;
    the note carries the witness profile (% of values 0/1/small/dense)."""
    prove = get()
    have = bool((prove or {}).get("rapidsnark", {}).get("installed"))
    why = "" if have or not prove else "rapidsnark not built here (README: rapidsnark as a peer)"
    out = []
    for family in REAL_FAMILIES:
        for log2n in (15, 17, 19):
            r, where = family_row(get, family, log2n)
            ok = bool(r and have and "rapidsnark_s" in r)
            wit = f"; witness {r['witness_pct_0/1/small/dense']} %" if r else ""
            goals = [
                (
                    f"{family} 2^{log2n}: cuzk, key loaded (daemon's case) ÷ rapidsnark's command",
                    0.5,
                    "warm_vs_rapidsnark",
                    lambda r: (
                        f"in process {fmt(r['cuzk_warm_s'])} s, rapidsnark "
                        f"{fmt(r['rapidsnark_s'])} s"
                    ),
                )
            ]
            if log2n >= 17:
                goals += [
                    (
                        f"{family} 2^{log2n}: `cuzk prove`, whole command ÷ rapidsnark's",
                        1.0,
                        "cmd_vs_rapidsnark",
                        lambda r: (
                            f"cuzk {fmt(r['cuzk_cmd_s'])} s, rapidsnark {fmt(r['rapidsnark_s'])} s"
                        ),
                    ),
                    (
                        f"{family} 2^{log2n}: `cuzk prove`, peak RSS ÷ rapidsnark's",
                        2.0,
                        "rss_vs_rapidsnark",
                        lambda r: f"{fmt(r['cuzk_rss_mib'])} / {fmt(r['rapidsnark_rss_mib'])} MiB",
                    ),
                ]
            for name, goal, column, note in goals:
                out.append(
                    target(
                        name,
                        "#25",
                        goal,
                        "x",
                        r.get(column) if ok else None,
                        note=(note(r) + wit + where) if ok else (why or "no run at this size"),
                        suite="prove",
                        profile="full" if where else "quick",
                    )
                )
    return out


def application_targets(get) -> list[dict]:
    """Issue #35's target 3 on its application-shaped families (Semaphore-shaped membership
    proofs, 2048-bit modular products): the in-process proof (the daemon with the key
    resident) <= 0.5x rapidsnark's command on the same files at 2^13 (or the family's
    smallest domain), 2^15, 2^17 and 2^19 (the full profile's)."""
    prove = get()
    have = bool((prove or {}).get("rapidsnark", {}).get("installed"))
    why = "" if have or not prove else "rapidsnark not built here (README: rapidsnark as a peer)"
    out = []
    for family, log2n in application_target_rows():
        r, where = family_row(get, family, log2n)
        ok = bool(r and have and "rapidsnark_s" in r)
        out.append(
            target(
                f"{family} 2^{log2n}: cuzk, key loaded (daemon's case) ÷ rapidsnark's command",
                "#35",
                0.5,
                "x",
                r.get("warm_vs_rapidsnark") if ok else None,
                note=(
                    f"in process {fmt(r['cuzk_warm_s'])} s, rapidsnark {fmt(r['rapidsnark_s'])} s"
                    f"; command {fmt(r['cmd_vs_rapidsnark'])}x; witness "
                    f"{r['witness_pct_0/1/small/dense']} %{where}"
                )
                if ok
                else (why or "no run at this size"),
                suite="prove",
                profile="full" if where else "quick",
            )
        )
    return out


SUMMARY_COLUMNS = [c for c in ROW_COLUMNS if c != "snarkjs_rss_mib"]


def summary(get) -> list[str]:
    """Markdown lines after the report's targets: the side-by-side table and it in words."""
    prove = get()
    if not (prove and prove.get("rows")):
        return []
    return [
        "**`cuzk prove` against rapidsnark and `snarkjs groth16 prove`, whole commands "
        "alternating on the same files** (seconds, medians; `*_vs_rapidsnark` is cuzk's "
        "time ÷ rapidsnark's, below 1 is faster; RSS in MiB):",
        "",
        table(prove["rows"], [c for c in SUMMARY_COLUMNS if any(c in r for r in prove["rows"])]),
        prose(prove),
        "",
    ]


def prose(prove: dict) -> str:
    """The side-by-side result in words, from the figures (issue #16's comparison)."""
    rows = sorted(prove["rows"], key=lambda r: (r["log2n"], r.get("family", "")))
    cmd = [r["speedup_vs_snarkjs"] for r in rows]
    warm = [r["speedup_warm_vs_snarkjs"] for r in rows]
    lo, hi = rows[0], rows[-1]
    faster = all(x > 1 for x in cmd)

    def span(xs):
        return f"{fmt(xs[0])}x" if len(xs) == 1 else f"{fmt(min(xs))}x to {fmt(max(xs))}x"

    where = (
        f"at 2^{lo['log2n']}"
        if lo["log2n"] == hi["log2n"]
        else f"from 2^{lo['log2n']} to 2^{hi['log2n']}"
    )
    text = (
        f"As a whole command `cuzk prove` is {span(cmd)} "
        f"{'faster than' if faster else 'the speed of'} `snarkjs groth16 prove` {where}"
        + ("" if faster else " (below 1: slower)")
        + f"; with the key already loaded (the daemon's case) {span(warm)}. The command's "
        "start-up (interpreter, imports, cached kernels, mapping the key), the command's "
        f"time less the in-process proof's, is about "
        f"{fmt(statistics.median(r['startup_s'] for r in rows))} s (median over sizes)."
    )
    server = [r["speedup_server_vs_snarkjs"] for r in rows if "speedup_server_vs_snarkjs" in r]
    if server:
        text += (
            f" Through a warm `cuzk serve`, the whole `cuzk prove --server` command is "
            f"{span(server)} faster than snarkjs's."
        )
    rs = prove.get("rapidsnark") or {}
    if not rs.get("installed") and prove.get("curve", "bn254") != "bn254":
        return text + f" rapidsnark was not compared: {rs.get('origin')}."
    if not rs.get("installed"):
        return text + " rapidsnark was not built on this machine, so it was not compared."
    parts = [
        f"2^{r['log2n']} {r.get('family', '')}: command {fmt(r['cmd_vs_rapidsnark'])}x, "
        f"in process {fmt(r['warm_vs_rapidsnark'])}x, RSS {fmt(r['rss_vs_rapidsnark'])}x"
        for r in rows
        if "cmd_vs_rapidsnark" in r
    ]
    return text + (
        " Against rapidsnark, run side by side (cuzk's time ÷ rapidsnark's; below 1 "
        "is faster): " + "; ".join(parts) + "."
    )


def plot(name, entry, res, img):
    rows = res.get("rows") or []
    if not rows:
        return []
    on = {"bn254": ""}.get(res.get("curve", "bn254"), f" on {res.get('curve')}")
    peers = "rapidsnark and snarkjs" if any("rapidsnark_s" in r for r in rows) else "snarkjs"
    fig, (ax, bx) = figure(
        f"cuzk prove vs {peers}{on}, same zkey and witness (squaring chain)",
        entry,
        ncols=2,
        width=5.6,
    )
    rows = [r for r in rows if r.get("family", "squarechain") == "squarechain"] or rows
    xs = [r["log2n"] for r in rows]
    for col, lo, hi, label in (
        ("cuzk_cmd_s", "cuzk_min_s", "cuzk_max_s", "cuzk prove (command)"),
        ("snarkjs_s", "snarkjs_min_s", "snarkjs_max_s", "snarkjs groth16 prove"),
        ("cuzk_warm_s", "cuzk_warm_min_s", "cuzk_warm_max_s", "cuzk, key loaded (in process)"),
        ("rapidsnark_s", "rapidsnark_min_s", "rapidsnark_max_s", "rapidsnark prover (command)"),
    ):
        if not all(col in r for r in rows):
            continue
        ys = [r[col] for r in rows]
        err = [
            [max(0.0, r[col] - r.get(lo, r[col])) for r in rows],
            [max(0.0, r.get(hi, r[col]) - r[col]) for r in rows],
        ]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xlabel("log2 domain")
    ax.set_ylabel("seconds (median, min-max bars)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6.5)
    phases = res.get("phases_ms") or []
    if phases:
        keys = [k for k in phases[0] if k not in ("log2n", "circuit")]
        totals = [sum(float(p.get(k) or 0.0) for k in keys) or 1.0 for p in phases]
        bottom = [0.0] * len(phases)
        short = {"squarechain": "sq", "toyhash": "toy", "sha256": "sha", "merkle": "mkl"}
        short.update(eddsa="eds", range="rng", semaphore="sem", bigmul="big")
        px = []
        for p in phases:
            fam, _, size = p.get("circuit", f"? 2^{p['log2n']}").partition(" ")
            px.append(f"{short.get(fam, fam)} {size}")
        for k in keys:
            vals = [100.0 * float(p.get(k) or 0.0) / t for p, t in zip(phases, totals, strict=True)]
            bx.bar(px, vals, bottom=bottom, label=k)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        many = len(phases) > 6
        for i, t in enumerate(totals):
            bx.text(
                i,
                101,
                f"{t:.0f} ms",
                ha="center",
                va="bottom",
                fontsize=5.5 if many else 7,
                rotation=90 if many else 0,
            )
        bx.set_ylim(0, 125 if many else 112)
        if many:
            bx.tick_params(axis="x", labelrotation=60, labelsize=6)
        bx.set_xlabel("domain")
        bx.set_ylabel("% of a proof, key loaded (phases)")
        bx.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return [(name, save(fig, f"bench-{name}.png", img))]


def run_families(profile: str, families: list) -> Path:
    """The profile's rows of the named families alone (``python -m bench.bench_prove quick
    semaphore bigmul``): measured, printed and written to bench/work/prove-PROFILE-FAMILY...
    .json, the path returned. A partial run is no suite result: bench/results and
    docs/benchmarks.md are left alone."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise SystemExit(
            f"bench_prove: no family {', '.join(unknown)} (families: {', '.join(FAMILIES)})"
        )
    if profile not in CIRCUITS:
        raise SystemExit(f"bench_prove: no profile {profile} (profiles: {', '.join(CIRCUITS)})")
    rows = [c for c in CIRCUITS[profile] if c[0] in families]
    if not rows:
        raise SystemExit(f"bench_prove: profile {profile} has no rows of {', '.join(families)}")
    res = measure(profile, rows)
    out = WORK / f"prove-{profile}-{'-'.join(families)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"  written to {_shown(out)} (a partial run: not a suite result)", flush=True)
    return out


if __name__ == "__main__":
    profile = sys.argv[1] if len(sys.argv) > 1 else "quick"
    if len(sys.argv) > 2:
        run_families(profile, sys.argv[2:])
        sys.exit(0)
    from bench.__main__ import main

    sys.exit(main(["--suite", "prove", "--profile", profile]))
