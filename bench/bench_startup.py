"""Suite `startup`: what a cuzk command pays around its proof (issue #26).

- **warm fixed cost** per size (squaring chains 2^12, 2^15; 2^17 in full): the whole
  `cuzk prove` command (kernel cache warm, the native kernel library built first as `cuzk
  warmup` builds it: cuzk.native) less the same proof in process with the key loaded
  (`prove()`, as the daemon runs it), rounds alternated: median and min; the same command on
  Numba's kernels (CUZK_NATIVE=0) in the same rounds;
- **the pieces of a start**: a bare interpreter (`python -c pass`), the same with `-I -S` (no
  `site`, no .pth hooks), the imports of numpy, numba, click and the thin client
  (`cuzk.groth16.remote`), the installed console script's `--version`;
- **the thin client**: `cuzk prove --server` to a warm `cuzk serve` at 2^12, the command less
  the daemon's own time for the job (submitted → finished), from the development venv's
  console script and from a plain install's (a venv holding only cuzk, no extras) in the same
  rounds;
- **daemon restart to proving**: from starting `cuzk serve` (kernel cache warm, key file in
  the page cache) to the first `cuzk prove --server` proof written, per restart;
- **serve healthy** (issue 36): `cuzk serve` on CPU devices as on a fresh install (the native
  library built, an empty kernel cache): start to the first /healthz "ok" without "warming",
  and to the first `--server` proof; the same on Numba's kernels with a warm cache beside it;
- **cold first run** (full profile only: minutes): `cuzk prove` at 2^12 with an empty kernel
  cache (a fresh NUMBA_CACHE_DIR): when its first stderr line came (the compile notice) and
  the whole command. The same as a new user meets it, in a fresh venv from a clean clone
  (needs the package index; not run by the suite):
  `git clone . /tmp/c && python3 -m venv /tmp/v && /tmp/v/bin/pip install /tmp/c &&
  cd /tmp && time /tmp/v/bin/cuzk prove K.zkey W.wtns p.json q.json` (the install builds
  the native kernel library, so this first proof is on it: issue 36; with
  `CUZK_BUILD_NATIVE=0 pip install` it is Numba's cold compile, the kernels going to the
  `__pycache__` folders of the venv's cuzk, which the notice names), then
  `/tmp/v/bin/cuzk warmup` in another fresh venv for the compile on purpose.
Run alone: ``python -m bench.bench_startup [smoke|quick|full]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
import time

from bench.bench_prove import (
    REPEATS,
    _cuzk_command,
    _run_measured,
    _stats,
    cuzk_prove,
    in_process,
    last_job_seconds,
    native_library,
)
from bench.circuits import circuit
from bench.machine import compile_bytecode
from bench.tables import fmt, table, target

SIZES = {"smoke": [12], "quick": [12, 15], "full": [12, 15, 17], "gpu": [12, 15]}
FAMILY = "squarechain"


def _samples(rounds: int) -> int:
    """Runs of a short command: 3 in the smoke profile (one round), else at least 5."""
    return 3 if rounds == 1 else max(rounds, 5)


def _fixed_cost(log2n: int, rounds: int, native: bool) -> dict:
    """`cuzk prove` (whole command) against prove() in this process, same key and witness;
    the command with the native kernels (when built) and on Numba's (CUZK_NATIVE=0) in the
    same rounds."""
    from cuzk.groth16 import prove

    files = circuit(FAMILY, log2n)
    cmd = cuzk_prove(files, "startup")
    numba_env = {**os.environ, "CUZK_NATIVE": "0"}
    key, w, dev = in_process(files, "cpu")
    _run_measured(cmd)  # untimed: page cache
    _run_measured(cmd, numba_env)
    prove(key, w, dev)  # untimed: kernels loaded
    command, numba, warm = [], [], []
    for _ in range(rounds):
        command.append(_run_measured(cmd)[0])
        numba.append(_run_measured(cmd, numba_env)[0])
        t0 = time.perf_counter()
        prove(key, w, dev)
        warm.append(time.perf_counter() - t0)
    cmed, nmed, wmed = _stats(command)[1], _stats(numba)[1], _stats(warm)[1]
    row = {
        "log2n": log2n,
        "native": native,
        "command_s": cmed,
        "in_process_s": wmed,
        "fixed_s": cmed - wmed,
        "fixed_min_s": min(c - w for c, w in zip(command, warm, strict=True)),  # same round
        "numba_command_s": nmed,
        "numba_fixed_s": nmed - wmed,
    }
    print(
        f"  2^{log2n}: command {cmed:.3f} s ({'native kernels' if native else 'Numba'}), "
        f"on Numba's kernels {nmed:.3f} s, in process {wmed:.3f} s: fixed cost "
        f"{row['fixed_s']:.3f} s (Numba's {row['numba_fixed_s']:.3f} s)",
        flush=True,
    )
    return row


def _time_cmd(argv, rounds: int, env=None) -> float:
    """Median wall seconds of a short command (output discarded)."""
    out = []
    for _ in range(rounds + 1):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        out.append(time.perf_counter() - t0)
    return _stats(out[1:])[1]


def _pieces(rounds: int) -> dict:
    """Start-up pieces, each a median of whole short commands (seconds)."""
    py = sys.executable
    site = sysconfig.get_paths()["purelib"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lean = f"import sys; sys.path[:0] = [{root!r}, {site!r}]; "
    n = _samples(rounds)
    pieces = {
        "python -c pass": _time_cmd([py, "-c", "pass"], n),
        "python -I -S -c pass": _time_cmd([py, "-I", "-S", "-c", "pass"], n),
        "import numpy": _time_cmd([py, "-c", "import numpy"], n),
        "import numba": _time_cmd([py, "-c", "import numba"], n),
        "import click": _time_cmd([py, "-c", "import click"], n),
        "import cuzk.groth16.remote": _time_cmd([py, "-c", "import cuzk.groth16.remote"], n),
        "-I -S, import cuzk.groth16.remote": _time_cmd(
            [py, "-I", "-S", "-c", lean + "import cuzk.groth16.remote"], n
        ),
    }
    script = _cuzk_command()
    pieces["cuzk --version"] = _time_cmd([*map(str, script), "--version"], n)
    for k, v in pieces.items():
        print(f"  {k}: {v * 1e3:.1f} ms", flush=True)
    return {k: round(v, 4) for k, v in pieces.items()}


def _plain_install(folder: str) -> list:
    """A console script in a fresh venv holding only cuzk (a .pth with this checkout, as a
    plain editable install writes it; no other package): what `pip install cuzk` gives a user
    who installs no extras. The development venv also runs numba-cuda's .pth hook at every
    start (the `[cuda]`, `[gpu]` and `[test]` extras install it), ~15 ms of importlib.abc."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    venv = os.path.join(folder, "plain-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with open(os.path.join(site, "cuzk.pth"), "w") as f:
        f.write(root + "\n")
    script = os.path.join(venv, "bin", "cuzk")
    with open(script, "w") as f:  # the console script pip writes for cuzk's entry point
        f.write(
            f"#!{py}\nimport sys\nfrom cuzk.console import main\n"
            "if __name__ == '__main__':\n    sys.exit(main())\n"
        )
    os.chmod(script, 0o755)
    return [script]


def _thin_client(rounds: int) -> dict:
    """`cuzk prove --server` at 2^12 less the daemon's time for the job: from the development
    venv's console script, and from a plain install's (_plain_install) in the same rounds."""
    from bench.bench_prove_server import start_daemon, stop_daemon
    from cuzk.client import Client

    files = circuit(FAMILY, 12)
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-startup-") as folder:
        plain = _plain_install(folder)
        proc, url = start_daemon(folder)
        try:
            client = Client(url, timeout=600)
            cmd = cuzk_prove(files, "thin", "--server", url)
            plain_cmd = plain + cmd[len(_cuzk_command()) :]
            _run_measured(cmd)  # untimed: the daemon registers the key, loads its kernels
            _run_measured(plain_cmd)
            times, jobs, plain_times, plain_jobs = [], [], [], []
            for _ in range(_samples(rounds)):
                times.append(_run_measured(cmd)[0])
                jobs.append(last_job_seconds(client))
                plain_times.append(_run_measured(plain_cmd)[0])
                plain_jobs.append(last_job_seconds(client))
        finally:
            stop_daemon(proc)
    own = [t - j for t, j in zip(times, jobs, strict=True)]
    plain_own = [t - j for t, j in zip(plain_times, plain_jobs, strict=True)]
    row = {
        "log2n": 12,
        "command_s": _stats(times)[1],
        "daemon_job_s": _stats(jobs)[1],
        "client_s": _stats(own)[1],
        "client_min_s": _stats(own)[0],
        "plain_command_s": _stats(plain_times)[1],
        "plain_client_s": _stats(plain_own)[1],
        "plain_client_min_s": _stats(plain_own)[0],
    }
    print(
        f"  thin client 2^12: command {row['command_s']:.3f} s, daemon job "
        f"{row['daemon_job_s']:.3f} s, client {row['client_s'] * 1e3:.0f} ms; from a plain "
        f"install {row['plain_client_s'] * 1e3:.0f} ms",
        flush=True,
    )
    return row


def _restart(rounds: int) -> dict:
    """Seconds from `cuzk serve` starting to the first --server proof written, per start."""
    from bench.bench_prove_server import start_daemon, stop_daemon

    files = circuit(FAMILY, 12)
    listening, proving = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="cuzk-bench-restart-") as folder:
            t0 = time.perf_counter()
            proc, url = start_daemon(folder)
            try:
                listening.append(time.perf_counter() - t0)
                cmd = cuzk_prove(files, "restart", "--server", url)
                _run_measured(cmd)
                proving.append(time.perf_counter() - t0)
            finally:
                stop_daemon(proc)
        print(
            f"  restart: listening after {listening[-1]:.2f} s, first proof written after "
            f"{proving[-1]:.2f} s",
            flush=True,
        )
    return {
        "listening_s": _stats(listening)[1],
        "first_proof_s": _stats(proving)[1],
        "first_proof_min_s": _stats(proving)[0],
    }


def _serve_healthy(rounds: int, native: bool) -> dict:
    """`cuzk serve` on CPU devices as on a fresh install (an empty kernel cache, a fresh state
    folder; the native library built, as `pip install` builds it): seconds from the start to
    the first /healthz "ok" without "warming", and to the first --server proof written (2^12);
    the build its processes said they run (GET /status). With ``native`` False the same on
    Numba's kernels (CUZK_NATIVE=0) with the suite's warm cache: the best a start without the
    library does (an empty cache would compile for minutes: the cold row)."""
    import json
    import re
    import urllib.request

    from bench.bench_prove_server import stop_daemon
    from bench.circuits import WORK
    from cuzk import native as native_kernels

    files = circuit(FAMILY, 12)
    healthy, proving, kernels = [], [], set()
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="cuzk-bench-serve-") as folder:
            env = dict(os.environ)
            if native:
                env["CUZK_NATIVE_DIR"] = str(native_kernels.library_path("bn254").parent)
                env["NUMBA_CACHE_DIR"] = os.path.join(folder, "numba")  # nothing compiled
            else:
                env["CUZK_NATIVE"] = "0"
            log_path = os.path.join(folder, "serve.log")
            argv = [sys.executable, "-m", "cuzk.cli", "serve", "--listen", "127.0.0.1:0"]
            argv += ["--key-root", str(WORK), "--state-dir", os.path.join(folder, "state")]
            t0 = time.perf_counter()
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    argv + ["--log-level", "info"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            try:
                url, health = None, {}
                while time.perf_counter() - t0 < 600 and proc.poll() is None:
                    if url is None:
                        with open(log_path, errors="replace") as f:
                            m = re.search(r"listening on (http://\S+)", f.read())
                        url = m.group(1) if m else None
                    if url is not None:
                        with urllib.request.urlopen(url + "/healthz", timeout=10) as r:
                            health = json.load(r)
                        if health.get("status") == "ok" and "warming" not in health:
                            break
                    time.sleep(0.01)
                else:
                    raise RuntimeError(f"cuzk serve not healthy: {health}")
                healthy.append(time.perf_counter() - t0)
                with urllib.request.urlopen(url + "/status", timeout=10) as r:
                    status = json.load(r)
                for w in [*status["synthesis"]["workers"], *status["gpu_workers"]]:
                    kernels.add(w.get("kernels", ""))
                _run_measured(cuzk_prove(files, "serve-healthy", "--server", url))
                proving.append(time.perf_counter() - t0)
            finally:
                stop_daemon(proc)
        print(
            f"  serve ({'native library' if native else 'Numba, warm cache'}): healthy after "
            f"{healthy[-1]:.2f} s, first proof written after {proving[-1]:.2f} s",
            flush=True,
        )
    return {
        "healthy_s": _stats(healthy)[1],
        "healthy_min_s": _stats(healthy)[0],
        "first_proof_s": _stats(proving)[1],
        "kernels": sorted(kernels),
    }


def _cold() -> dict:
    """`cuzk prove` 2^12 with an empty kernel cache: first stderr line, whole command."""
    files = circuit(FAMILY, 12)
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-cold-") as folder:
        env = {**os.environ, "NUMBA_CACHE_DIR": folder}
        cmd = cuzk_prove(files, "cold")
        t0 = time.perf_counter()
        p = subprocess.Popen(
            [str(c) for c in cmd], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        first, lines = None, 0
        for _ in p.stderr:
            lines += 1
            if first is None:
                first = time.perf_counter() - t0
        code = p.wait()
        total = time.perf_counter() - t0
    if code != 0:
        raise RuntimeError(f"cold cuzk prove failed ({code})")
    print(f"  cold 2^12: first stderr line after {first:.2f} s, whole command {total:.1f} s")
    return {"notice_s": first, "command_s": total, "stderr_lines": lines}


def run(profile: str = "quick") -> dict:
    compile_bytecode()  # the commands run as installed (see bench.machine.compile_bytecode)
    rounds = REPEATS[profile]
    out = {"pieces": _pieces(rounds)}
    native = native_library("bn254")
    out["native_kernels"] = native
    out["fixed"] = [_fixed_cost(k, rounds, native is not None) for k in SIZES[profile]]
    print(table(out["fixed"]))
    out["thin_client"] = _thin_client(rounds)
    out["restart"] = _restart(rounds)
    if native is not None:
        out["serve_healthy"] = _serve_healthy(rounds, native=True)
        if profile != "smoke":
            out["serve_healthy_numba"] = _serve_healthy(rounds, native=False)
    if profile == "full":
        out["cold"] = _cold()
    return out


# --- what the report shows: targets ---------------------------------------------------------------


def targets(get) -> list[dict]:
    """Issue #26's targets: the one-shot command's fixed cost <= 0.2 s, the thin client's own
    cost <= 40 ms, the daemon proving <= 2 s after a restart, the cold run's notice <= 2 s."""
    res = get() or {}
    out = []
    for r in res.get("fixed") or []:
        out.append(
            target(
                f"`cuzk prove` 2^{r['log2n']} fixed cost (command less in-process proof)",
                "#26",
                0.2,
                "s",
                r["fixed_s"],
                best=r.get("fixed_min_s"),
                note=(
                    f"command {fmt(r['command_s'])} s, in process {fmt(r['in_process_s'])} s"
                    + (
                        f"; on Numba's kernels {fmt(r['numba_command_s'])} s"
                        if "numba_command_s" in r
                        else ""
                    )
                ),
                suite="startup",
            )
        )
    thin = res.get("thin_client")
    out.append(
        target(
            "`cuzk prove --server` 2^12, the client's own time",
            "#26",
            40,
            "ms",
            thin["client_s"] * 1e3 if thin else None,
            best=thin["client_min_s"] * 1e3 if thin else None,
            note=(
                f"command {fmt(thin['command_s'])} s, daemon job {fmt(thin['daemon_job_s'])} s"
                if thin
                else ""
            ),
            suite="startup",
        )
    )
    if thin and "plain_client_s" in thin:
        out.append(
            target(
                "`cuzk prove --server` 2^12, the client's own time, plain install (no extras)",
                "#26",
                40,
                "ms",
                thin["plain_client_s"] * 1e3,
                best=thin["plain_client_min_s"] * 1e3,
                note="a venv holding only cuzk: no numba-cuda .pth hook (see the row above)",
                suite="startup",
            )
        )
    rs = res.get("restart")
    out.append(
        target(
            "daemon restart to the first proof written (2^12, warm cache)",
            "#26",
            2.0,
            "s",
            rs["first_proof_s"] if rs else None,
            best=rs["first_proof_min_s"] if rs else None,
            note=f"listening after {fmt(rs['listening_s'])} s" if rs else "",
            suite="startup",
        )
    )
    out.append(_serve_healthy_row(res))
    full = get(profile="full") or {}
    cold = full.get("cold")
    out.append(
        target(
            "cold kernel cache: the first stderr line of `cuzk prove`",
            "#26",
            2.0,
            "s",
            cold["notice_s"] if cold else None,
            note=f"whole command {fmt(cold['command_s'])} s" if cold else "full profile only",
            suite="startup",
            profile="full",
        )
    )
    return out


def _serve_healthy_row(res: dict) -> dict:
    """Issue #36 target 2: `cuzk serve` on CPU devices healthy (proving) <= 2 s after start on
    a fresh install (the native library built, the kernel cache empty)."""
    sh, numba = res.get("serve_healthy"), res.get("serve_healthy_numba")
    note = ""
    if sh:
        kernels = ", ".join(sh["kernels"])
        note = f"first proof (2^12) after {fmt(sh['first_proof_s'])} s; kernels {kernels}"
        if numba:
            note += (
                f"; on Numba's kernels, warm cache: healthy after {fmt(numba['healthy_s'])} s, "
                f"first proof after {fmt(numba['first_proof_s'])} s"
            )
    return target(
        "serve healthy: `cuzk serve` (CPU) start to /healthz ok, fresh install",
        "#36",
        2.0,
        "s",
        sh["healthy_s"] if sh else None,
        best=sh["healthy_min_s"] if sh else None,
        note=note,
        suite="startup",
    )


def summary(get) -> list[str]:
    """The start-up pieces as a table."""
    res = get() or {}
    pieces = res.get("pieces")
    if not pieces:
        return []
    rows = [{"what": k, "ms": round(v * 1e3, 1)} for k, v in pieces.items()]
    return [
        "**Start-up pieces** (median wall time of each whole short command, ms):",
        "",
        table(rows, ["what", "ms"]),
    ]


if __name__ == "__main__":
    from bench.__main__ import main

    profile = sys.argv[1] if len(sys.argv) > 1 else "quick"
    sys.exit(main(["--suite", "startup", "--profile", profile]))
