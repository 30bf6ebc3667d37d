"""Suite `prove-server`: `cuzk prove --server` against a warm `cuzk serve`, beside rapidsnark.

Issue #16's target 3: the whole `cuzk prove --server URL` command (interpreter, the thin
client, the request, the daemon's proof, the files) ≤ 1.0x rapidsnark's whole command at every
size from 2^12, with the daemon warm. One daemon (`cuzk serve` on loopback, its default
devices, key root bench/work, its own journal folder) serves every circuit of the `prove`
suite's list for the profile; per circuit, one untimed proof of each command (the daemon
registers the key and loads its kernels; page cache), then rounds of the two commands
interleaved, so both see the same load: min / median / max, the ratio of the medians, the
daemon's own time per job (submitted → finished, from GET /v1/jobs) and what the command adds
to it (the client: start-up, request, files), the client's peak RSS. The proof the command
wrote is checked with cuzk's verifier. Without rapidsnark the rows carry the cuzk figures only.
Issue #25's target 2 through the daemon: the whole `cuzk prove --server` command <= 0.5x
rapidsnark's on every circomlib family (SHA-256, Poseidon Merkle, EdDSA-Poseidon, range
checks) at 2^15, 2^17 and 2^19 (the full profile). Issue #35's target 3 on its two families
(Semaphore-shaped membership proofs, 2048-bit modular products): the command <= 0.6x
rapidsnark's at 2^13 (Semaphore: 2^14, its smallest), 2^15, 2^17 and 2^19. A circuit the
`prove` suite lists as skipped (no such circuit or key) is listed here as skipped too.
Run alone: ``python -m bench.bench_prove_server [smoke|quick|full|gpu]``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_prove import (
    CIRCUITS,
    REPEATS,
    _run_measured,
    _stats,
    application_target_rows,
    cuzk_prove,
    find_rapidsnark,
    last_job_seconds,
)
from bench.circuits import REAL_FAMILIES, WORK, KeyUnavailable, circuit
from bench.machine import compile_bytecode
from bench.tables import family_row, fmt, squarechain_row, table, target


def start_daemon(folder: str, key_root=WORK) -> tuple[subprocess.Popen, str]:
    """`cuzk serve` with its defaults on a free loopback port, its key root key_root (keys
    and witnesses by path must lie under it), logging to folder/serve.log; (process, URL)."""
    log_path = os.path.join(folder, "serve.log")
    log = open(log_path, "wb")
    Path(key_root).mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cuzk.cli",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--key-root",
            str(key_root),
            "--state-dir",
            os.path.join(folder, "state"),
            "--log-level",
            "info",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    deadline = time.time() + 300
    while time.time() < deadline:
        with open(log_path, errors="replace") as f:
            m = re.search(r"listening on (http://\S+)", f.read())
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop_daemon(proc)
    with open(log_path, errors="replace") as f:
        raise RuntimeError(f"cuzk serve did not start:\n{f.read()[-2000:]}")


def tables_ready(keys, timeout: float = 3600.0) -> float:
    """Wait until no resident key's tables of multiples are still being built beside its
    proofs (``keys``: a callable giving GET /v1/keys' list, cuzk.client.Client.keys or
    Engine.keys): a warm daemon is one whose keys' tables are in place
    (cuzk.kernels.table_builds). Returns the seconds waited."""
    t0 = time.monotonic()
    while any(k.get("tables") == "building" for k in keys()):
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"tables of multiples still building after {timeout:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - t0


def stop_daemon(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def _circuit(client, family: str, log2n: int, profile: str, rapidsnark: str | None) -> dict:
    from cuzk.groth16.verifier import verify_files

    files = circuit(family, log2n)
    work = files["zkey"].parent
    cmds = {"server": cuzk_prove(files, "server", "--server", client.server)}
    if rapidsnark:
        cmds["rapidsnark"] = [
            rapidsnark,
            files["zkey"],
            files["wtns"],
            work / "p_rs.json",
            work / "pub_rs.json",
        ]
    for cmd in cmds.values():  # untimed: the daemon registers the key; page cache
        _run_measured(cmd)
    tables_ready(client.keys)  # (and builds its tables of multiples beside that job)
    times = {k: [] for k in cmds}
    rss, jobs = [], []
    rounds = REPEATS[profile]
    for i in range(rounds):
        for k, cmd in cmds.items():
            dt, mib = _run_measured(cmd)
            times[k].append(dt)
            if k == "server":
                rss.append(mib)
                jobs.append(last_job_seconds(client))
        print(
            f"  {family} 2^{log2n} round {i + 1}/{rounds}: "
            + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items())
            + f", daemon job {jobs[-1]:.3f} s",
            flush=True,
        )
    valid = verify_files(files["vk"], work / "pub_server.json", work / "p_server.json")
    smin, smed, smax = _stats(times["server"])
    row = {
        "family": family,
        "log2n": log2n,
        "server_cmd_s": smed,
        "server_min_s": smin,
        "server_max_s": smax,
        "daemon_job_s": _stats(jobs)[1],
        "client_s": _stats([t - j for t, j in zip(times["server"], jobs, strict=True)])[1],
        "client_rss_mib": max(rss),
        "server_proof_valid": bool(valid),
    }
    if rapidsnark:
        rmin, rmed, rmax = _stats(times["rapidsnark"])
        row.update(
            rapidsnark_s=rmed,
            rapidsnark_min_s=rmin,
            rapidsnark_max_s=rmax,
            server_vs_rapidsnark=smed / rmed,
        )
    print(
        f"  {family} 2^{log2n}: cuzk prove --server {smed:.3f} s (daemon "
        f"{row['daemon_job_s']:.3f} s, client {row['client_s']:.3f} s)"
        + (
            f", rapidsnark {row['rapidsnark_s']:.3f} s: {row['server_vs_rapidsnark']:.2f}x"
            if rapidsnark
            else ""
        )
        + ("" if valid else "  PROOF DOES NOT VERIFY"),
        flush=True,
    )
    if not valid:
        raise RuntimeError(f"cuzk prove --server's proof for {family} 2^{log2n} does not verify")
    return row


ROW_COLUMNS = [
    "family",
    "log2n",
    "server_cmd_s",
    "rapidsnark_s",
    "server_vs_rapidsnark",
    "daemon_job_s",
    "client_s",
    "client_rss_mib",
]


def run(profile: str = "quick") -> dict:
    from cuzk.client import Client

    compile_bytecode()  # the commands run as installed (see bench.machine.compile_bytecode)
    rapidsnark, origin = find_rapidsnark()
    rows, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-serve-") as folder:
        proc, url = start_daemon(folder)
        try:
            client = Client(url, timeout=600)
            for family, log2n in CIRCUITS[profile]:
                try:
                    rows.append(_circuit(client, family, log2n, profile, rapidsnark))
                except KeyUnavailable as exc:
                    print(f"  {family} 2^{log2n}: skipped: {exc}", flush=True)
                    skipped.append({"family": family, "log2n": log2n, "why": str(exc)})
        finally:
            stop_daemon(proc)
    print(table(rows, [c for c in ROW_COLUMNS if any(c in r for r in rows)]))
    return {
        "rows": rows,
        "rapidsnark": {"installed": bool(rapidsnark), "origin": origin},
        "daemon": "cuzk serve on loopback, default devices (profile gpu: every GPU)",
    } | ({"skipped": skipped} if skipped else {})


# --- what the report shows: targets ---------------------------------------------------------------


def targets(get) -> list[dict]:
    """Issue #16's target 3: the whole `cuzk prove --server` command (warm daemon) <= 1.0x
    rapidsnark's whole command at every size from 2^12 (squaring-chain circuits)."""
    server = get()
    have = bool((server or {}).get("rapidsnark", {}).get("installed"))
    why = "" if have or not server else "rapidsnark not built here (README: rapidsnark as a peer)"
    out = []
    for log2n in (12, 15, 17, 19):
        r, where = squarechain_row(get, log2n)
        if r is None and log2n == 19:
            continue  # no full-profile run
        ok = bool(r and have)
        note = (
            f"command {fmt(r['server_cmd_s'])} s (daemon {fmt(r['daemon_job_s'])} s, "
            f"client {fmt(r['client_s'])} s), rapidsnark {fmt(r['rapidsnark_s'])} s"
            if ok
            else why
        )
        out.append(
            target(
                f"`cuzk prove --server` 2^{log2n} (warm daemon), whole command ÷ rapidsnark's",
                "#16",
                1.0,
                "x",
                r.get("server_vs_rapidsnark") if ok else None,
                note=note + where,
                suite="prove-server",
            )
        )

    def family_target(family, log2n, issue, goal):
        r, where = family_row(get, family, log2n)
        ok = bool(r and have and "server_vs_rapidsnark" in r)
        return target(
            f"{family} 2^{log2n}: `cuzk prove --server` (warm daemon), whole command "
            "÷ rapidsnark's",
            issue,
            goal,
            "x",
            r.get("server_vs_rapidsnark") if ok else None,
            note=(
                f"command {fmt(r['server_cmd_s'])} s (daemon {fmt(r['daemon_job_s'])} "
                f"s), rapidsnark {fmt(r['rapidsnark_s'])} s{where}"
                if ok
                else (why or "no run at this size")
            ),
            suite="prove-server",
            profile="full" if where else "quick",
        )

    for family in REAL_FAMILIES:  # issue #25's target 2, through `cuzk serve`
        for log2n in (15, 17, 19):
            out.append(family_target(family, log2n, "#25", 0.5))
    for family, log2n in application_target_rows():  # issue #35's target 3
        out.append(family_target(family, log2n, "#35", 0.6))
    return out


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(
        main(
            ["--suite", "prove-server", "--profile", sys.argv[1] if len(sys.argv) > 1 else "quick"]
        )
    )
