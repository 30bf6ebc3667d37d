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
- **issue 36, from a fresh install** (fresh_venv: `python -m venv` + `pip install .` of this
  checkout, the regular install that builds the native library, kept under
  bench/work/startup-venv while the installed files are the same): the numba modules `cuzk
  prove` imports with each option (none on the fast path); the own cost of `cuzk prove` (the
  command less the same proof made in a process of that venv with the key loaded, rounds
  alternated) per size (2^12-2^16 quick, to 2^19 full) and option (none, --no-verify,
  --timings, --local with CUZK_SERVER set, --r1cs; the target row takes the costliest of
  the options the issue names, --r1cs beside them); in the same rounds the floor of a
  numpy-free command (bench/numpy_free_floor.py: the interpreter, the library loaded with
  ctypes, the key and witness read, the files written: what such a path could not take off)
  and rapidsnark's command where it is built (the whole command ÷ rapidsnark's: <= 1.5x at
  2^12, <= 1.0x above); `cuzk prove --server`'s own cost from its
  console script (target <= 25 ms) beside the interpreter's bare start. The smoke profile runs
  them on the development venv instead (no install: it checks the code, not the figures).
Run alone: ``python -m bench.bench_startup [smoke|quick|full]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from bench.bench_prove import (
    REPEATS,
    _cuzk_command,
    _run_measured,
    _stats,
    cuzk_prove,
    find_rapidsnark,
    in_process,
    last_job_seconds,
    native_library,
)
from bench.circuits import ROOT, WORK, circuit
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


# --- issue 36: a fresh `pip install .`, as a user installs it ----------------------------------
# The rows below run the commands of a venv holding cuzk installed from this checkout by a
# regular `pip install .` (whose build makes the native kernel library: issue 36, target 1),
# not the development venv's editable install. SIZES_36 are the sizes of the own-cost rows.

SIZES_36 = {
    "smoke": [12],
    "quick": [12, 13, 14, 15, 16],
    "full": [12, 13, 14, 15, 16, 17, 18, 19],
    "gpu": [12, 13, 14, 15, 16],
}
# The options of a local `cuzk prove` whose own cost is measured (each alone); --local with a
# server configured (CUZK_SERVER), --r1cs with the circuit's constraint system.
OPTIONS_36 = ("(none)", "--no-verify", "--timings", "--local", "--r1cs")
# The options issue 36's target 3 names (the costliest of them is its row's figure); --r1cs
# also checks every constraint (work that grows with the circuit), shown beside them.
TARGET_OPTIONS_36 = ("(none)", "--no-verify", "--timings", "--local")
VENV_CURVES = "bn254"  # the bench circuits' curve: the install builds its library only
# What a regular install is made from: a change to any of these makes another venv.
INSTALLED_FROM = ("cuzk", "setup.py", "setup.cfg", "pyproject.toml", "build_support", "README.md")

# The in-process half of an own-cost row, run by the fresh venv's interpreter: the key opened
# (mapped) and the witness read once, a proof made untimed, then one timed proof for every
# line on stdin, its seconds printed; with the native library, as the command uses it.
_IN_PROCESS = """
import sys, time
from cuzk import native
from cuzk.groth16 import ProvingKey, load_witness, open_device, prove
with native.used():
    key = ProvingKey.open(sys.argv[1])
    w = load_witness(sys.argv[2], key)
    dev = open_device("cpu")
    prove(key, w, dev)
    print("ready", native.library(key.arith_curve) is not None, flush=True)
    for _ in sys.stdin:
        t0, c0 = time.perf_counter(), time.process_time()
        prove(key, w, dev)
        print(time.perf_counter() - t0, time.process_time() - c0, flush=True)
"""


def _run_cpu(cmd, env) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of all its threads) of one command."""
    t0 = time.perf_counter()
    p = subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.DEVNULL, cwd=WORK)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed: {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def _source_hash() -> str:
    """A hash of the files a regular install of this checkout is made from."""
    import hashlib

    root = Path(ROOT)
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", *INSTALLED_FROM],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    h = hashlib.sha256()
    for rel in sorted(files):
        p = root / rel
        if p.is_file():
            h.update(rel.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def fresh_venv(log=print) -> dict:
    """A venv (bench/work/startup-venv) with cuzk installed from this checkout by `pip install
    .` (CUZK_BUILD_NATIVE=bn254: the library of the bench circuits' curve), reused while the
    installed files are the same (a stamp holds their hash). When only files outside the
    kernels changed (the same native key, cuzk.native.key()), the venv is kept and cuzk
    installed again without building (CUZK_BUILD_NATIVE=0), its library put back: the same
    code, built by the first install. {"python", "cuzk", "install_s", "reused", ...}."""
    from cuzk import native

    folder = WORK / "startup-venv"
    stamp_path = folder / "cuzk-bench-stamp.json"
    source, key = _source_hash(), native.key()
    stamp = json.loads(stamp_path.read_text()) if stamp_path.exists() else {}
    py, script = folder / "bin" / "python", folder / "bin" / "cuzk"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUZK_", "NUMBA_CACHE"))}
    env.pop("PYTHONPATH", None)
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    reused = "venv"
    if stamp.get("source") != source:
        t0 = time.perf_counter()
        if stamp.get("native_key") == key and py.exists():
            reused = "library"
            log(f"  fresh venv: cuzk changed outside the kernels: reinstalling into {folder}")
            lib = Path(stamp["lib"])
            saved = {p.name: p.read_bytes() for p in lib.glob("*.so")}
            subprocess.run(
                [*pip, "--no-deps", "--force-reinstall", str(ROOT)],
                env={**env, "CUZK_BUILD_NATIVE": "0"},
                check=True,
            )
            lib.mkdir(parents=True, exist_ok=True)
            for name, data in saved.items():
                (lib / name).write_bytes(data)
            os.chmod(lib, 0o755)
            install_s = stamp.get("install_s")
        else:
            reused = None
            log(f"  fresh venv: python -m venv {folder}; pip install . (builds the library)")
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
            subprocess.run(
                [*pip, str(ROOT)], env={**env, "CUZK_BUILD_NATIVE": VENV_CURVES}, check=True
            )
            install_s = time.perf_counter() - t0
        lib = subprocess.run(
            [str(py), "-c", "from cuzk import native; print(native.INSTALLED)"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=folder,
        ).stdout.strip()
        stamp = {"source": source, "native_key": key, "lib": lib, "install_s": install_s}
        stamp_path.write_text(json.dumps(stamp))
    built = sorted(p.name for p in Path(stamp["lib"]).glob(f"kernels-*-{key}.so"))
    log(f"  fresh venv {folder}: library {', '.join(built) or 'NOT BUILT'} ({reused or 'new'})")
    return {
        "python": str(py),
        "cuzk": [str(script)],
        "env": env,
        "install_s": stamp.get("install_s"),
        "reused": reused,
        "library": built,
        "lib_dir": stamp["lib"],
        "native_key": key,
    }


def development_venv() -> dict:
    """The stand-in for fresh_venv() in the smoke profile (which checks that the suite runs,
    not its figures; a fresh install takes minutes): this venv's `cuzk`, whose library
    run() built where the commands look (cuzk.native.folder())."""
    from cuzk import native

    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))  # the in-process helper runs outside the checkout
    return {
        "python": sys.executable,
        "cuzk": [str(c) for c in _cuzk_command()],
        "env": env,
        "install_s": None,
        "reused": "development venv (smoke profile)",
        "library": [native_library("bn254")],
        "lib_dir": str(native.folder()),
        "native_key": native.key(),
    }


def _option_argv(option: str, files: dict) -> tuple[list, dict]:
    """(extra argv, extra environment) of one OPTIONS_36 entry."""
    if option == "(none)":
        return [], {}
    if option == "--local":  # a server configured, and --local proving here all the same
        return ["--local"], {"CUZK_SERVER": "http://127.0.0.1:9"}
    if option == "--r1cs":
        return ["--r1cs", files["r1cs"]], {}
    return [option], {}


def _own_cost(venv: dict, log2n: int, rounds: int) -> dict:
    """`cuzk prove` from the fresh venv with each option, less the same proof made in a
    process of the same venv with the key loaded; rounds alternated (every option, then the
    in-process proof), own cost per option: median, and the least of a round's."""
    files = circuit(FAMILY, log2n)
    work = files["zkey"].parent
    base = [*venv["cuzk"], "prove", files["zkey"], files["wtns"]]
    outs = [work / "p_fresh.json", work / "pub_fresh.json"]
    cmds = {}
    for option in OPTIONS_36:
        extra, env = _option_argv(option, files)
        cmds[option] = ([*base, *outs, *extra], {**venv["env"], **env})
    # beside them: the floor of a numpy-free command (bench/numpy_free_floor.py: interpreter,
    # the library's load, the key and witness read, two files written), and rapidsnark's
    # command on the same files (issue 36: `cuzk prove` <= 1.5x it at 2^12, <= 1.0x above)
    lib = Path(venv["lib_dir"])
    floor_files = [lib / f"runtime-{venv['native_key']}.so"]
    floor_files.append(lib / f"kernels-bn254-{venv['native_key']}.so")
    extra_cmds = {}
    if all(p.exists() for p in floor_files):
        script = Path(__file__).resolve().parent / "numpy_free_floor.py"
        extra_cmds["numpy-free floor"] = (
            [venv["python"], "-I", "-S", script, *floor_files, files["zkey"], files["wtns"]]
            + [work / "p_floor.json", work / "pub_floor.json"],
            venv["env"],
        )
    rapidsnark, _ = find_rapidsnark()
    if rapidsnark:
        extra_cmds["rapidsnark"] = (
            [rapidsnark, files["zkey"], files["wtns"], work / "p_rs.json", work / "pub_rs.json"],
            venv["env"],
        )
    helper = subprocess.Popen(
        [venv["python"], "-c", _IN_PROCESS, str(files["zkey"]), str(files["wtns"])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=venv["env"],
        cwd=WORK,  # not the checkout: the installed cuzk, not this one
    )
    try:
        ready = helper.stdout.readline().split()
        if ready[:1] != ["ready"]:
            raise RuntimeError("the in-process proof of the fresh venv did not start")
        for cmd, env in [*cmds.values(), *extra_cmds.values()]:  # untimed: page cache
            _run_cpu(cmd, env)
        runs = {o: [] for o in [*OPTIONS_36, *extra_cmds]}  # (wall, CPU) of each command
        warm = []  # (wall, CPU) of each proof in process
        for _ in range(_samples(rounds)):
            for option, (cmd, env) in [*cmds.items(), *extra_cmds.items()]:
                runs[option].append(_run_cpu(cmd, env))
            helper.stdin.write("\n")
            helper.stdin.flush()
            warm.append(tuple(map(float, helper.stdout.readline().split())))
    finally:
        helper.stdin.close()
        helper.wait()
    row = {
        "log2n": log2n,
        "in_process_s": _stats([w for w, _ in warm])[1],
        "in_process_cpu_s": _stats([c for _, c in warm])[1],
        "native_in_process": ready[1] == "True",
    }
    for option in OPTIONS_36:
        own = [r[0] - w[0] for r, w in zip(runs[option], warm, strict=True)]
        own_cpu = [r[1] - w[1] for r, w in zip(runs[option], warm, strict=True)]
        row[option] = {
            "command_s": _stats([r[0] for r in runs[option]])[1],
            "own_s": _stats(own)[1],
            "own_min_s": _stats(own)[0],
            "own_cpu_s": _stats(own_cpu)[1],
        }
    for name, field in (("numpy-free floor", "numpy_free_floor"), ("rapidsnark", "rapidsnark")):
        if name in runs:
            row[f"{field}_s"] = _stats([w for w, _ in runs[name]])[1]
            row[f"{field}_min_s"] = _stats([w for w, _ in runs[name]])[0]
    if "rapidsnark_s" in row:
        row["command_vs_rapidsnark"] = row["(none)"]["command_s"] / row["rapidsnark_s"]
    print(
        f"  fresh venv 2^{log2n}: in process {row['in_process_s']:.3f} s; own cost, wall (CPU) "
        + ", ".join(
            f"{o} {row[o]['own_s'] * 1e3:.0f} ({row[o]['own_cpu_s'] * 1e3:.0f}) ms"
            for o in OPTIONS_36
        )
        + (
            f"; numpy-free floor {row['numpy_free_floor_s'] * 1e3:.0f} ms"
            if "numpy_free_floor_s" in row
            else ""
        )
        + (
            f"; command {row['(none)']['command_s']:.3f} s = "
            f"{row['command_vs_rapidsnark']:.2f}x rapidsnark's {row['rapidsnark_s']:.3f} s"
            if "rapidsnark_s" in row
            else ""
        ),
        flush=True,
    )
    return row


def _fresh_thin_client(venv: dict, rounds: int) -> dict:
    """`cuzk prove --server` at 2^12 from the fresh venv's console script, less the daemon's
    own time for the job (submitted -> finished); the interpreter's own start beside it."""
    from bench.bench_prove_server import start_daemon, stop_daemon
    from cuzk.client import Client

    files = circuit(FAMILY, 12)
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-startup-") as folder:
        proc, url = start_daemon(folder)
        try:
            client = Client(url, timeout=600)
            tail = cuzk_prove(files, "fresh-thin", "--server", url)[len(_cuzk_command()) :]
            cmd = [*venv["cuzk"], *tail]
            _run_measured(cmd, venv["env"])  # untimed: the daemon registers the key
            times, jobs, cpu = [], [], []
            for _ in range(max(_samples(rounds), 7 if rounds > 1 else 0)):
                wall, used = _run_cpu(cmd, venv["env"])
                times.append(wall)
                cpu.append(used)
                jobs.append(last_job_seconds(client))
        finally:
            stop_daemon(proc)
    own = [t - j for t, j in zip(times, jobs, strict=True)]
    n = _samples(rounds)
    row = {
        "log2n": 12,
        "command_s": _stats(times)[1],
        "daemon_job_s": _stats(jobs)[1],
        "client_s": _stats(own)[1],
        "client_min_s": _stats(own)[0],
        "client_cpu_s": _stats(cpu)[1],
        "python_s": _time_cmd([venv["python"], "-c", "pass"], n, venv["env"]),
        "python_isolated_s": _time_cmd([venv["python"], "-I", "-S", "-c", "pass"], n, venv["env"]),
    }
    print(
        f"  fresh venv thin client 2^12: command {row['command_s']:.3f} s, daemon job "
        f"{row['daemon_job_s']:.3f} s, client {row['client_s'] * 1e3:.0f} ms, its CPU "
        f"{row['client_cpu_s'] * 1e3:.0f} ms (python -c pass "
        f"{row['python_s'] * 1e3:.0f} ms, -I -S {row['python_isolated_s'] * 1e3:.0f} ms)",
        flush=True,
    )
    return row


def issue36(profile: str, rounds: int) -> dict:
    """Issue 36's rows, from a fresh venv (fresh_venv): the own cost of `cuzk prove` per size
    and option, the thin client's own cost."""
    venv = fresh_venv() if profile != "smoke" else development_venv()
    out = {
        "install_s": venv["install_s"],
        "reused": venv["reused"],
        "library": venv["library"],
        "curves_built": VENV_CURVES,
    }
    out["numba_modules"] = _numba_modules(venv, circuit(FAMILY, SIZES_36[profile][0]))
    print(f"  fresh venv: numba modules imported per option {out['numba_modules']}", flush=True)
    out["own_cost"] = [_own_cost(venv, k, rounds) for k in SIZES_36[profile]]
    out["thin_client"] = _fresh_thin_client(venv, rounds)
    return out


def _numba_modules(venv: dict, files: dict) -> dict:
    """Per option, the numba and llvmlite modules a fresh venv's `cuzk prove` imports at this
    size (python -X importtime; 0 on the fast path)."""
    out = {}
    work = files["zkey"].parent
    for option in OPTIONS_36:
        extra, env = _option_argv(option, files)
        p = subprocess.run(
            [venv["python"], "-X", "importtime", *venv["cuzk"], "prove", files["zkey"]]
            + [files["wtns"], work / "p_fresh.json", work / "pub_fresh.json", *extra],
            capture_output=True,
            text=True,
            env={**venv["env"], **env},
            cwd=WORK,
        )
        if p.returncode != 0:
            raise RuntimeError(f"cuzk prove {option} failed: {p.stderr[-500:]}")
        names = [ln.rsplit("|", 1)[-1].strip() for ln in p.stderr.splitlines() if "|" in ln]
        out[option] = sum(n.split(".")[0] in ("numba", "llvmlite") for n in names)
    return out


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
    out["issue36"] = issue36(profile, rounds)
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
    out += issue36_targets(res.get("issue36") or {})
    out.append(_serve_healthy_row(res))
    full = get(profile="full") or {}
    big = [r for r in (full.get("issue36") or {}).get("own_cost") or [] if r["log2n"] > 16]
    if big:  # the sizes past the quick profile's (2^17-2^19)
        out += issue36_targets({"own_cost": big}, "full")
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


def issue36_targets(res: dict, profile: str = "quick") -> list[dict]:
    """Issue 36's rows (targets 3-5) from a fresh `pip install .`: per size the own cost of
    `cuzk prove` with the costliest of the options the issue names (<= 0.08 s; --r1cs and the
    numpy-free floor in its note) and the whole command ÷ rapidsnark's (<= 1.5x at 2^12,
    <= 1.0x above), the numba modules any option imports (none), the thin client's own cost
    (<= 25 ms)."""
    out = []
    if not res:
        return [
            target(
                "fresh `pip install .`: `cuzk prove` own cost, every option",
                "#36",
                0.08,
                "s",
                None,
                suite="startup",
                profile=profile,
            )
        ]
    how = "fresh venv, `pip install .`" + (
        f" ({fmt(res['install_s'])} s)" if res.get("install_s") else ""
    )
    if str(res.get("reused", "")).startswith("development"):
        how = res["reused"]  # the smoke profile's stand-in
    mods = res.get("numba_modules")
    if mods is not None:
        out.append(
            target(
                "fresh `pip install .`: numba modules `cuzk prove` imports, any option",
                "#36",
                0,
                "modules",
                max(mods.values()),
                note=", ".join(f"{o} {n}" for o, n in mods.items()) + f"; {how}",
                suite="startup",
                profile=profile,
            )
        )
    for r in res.get("own_cost") or []:
        worst = max(TARGET_OPTIONS_36, key=lambda o: r[o]["own_s"])
        floor = (
            f"; the numpy-free floor (bench/numpy_free_floor.py: interpreter, library load, key "
            f"and witness read, files written) {fmt(r['numpy_free_floor_s'])} s whole"
            if "numpy_free_floor_s" in r
            else ""
        )
        out.append(
            target(
                f"fresh `pip install .`: `cuzk prove` 2^{r['log2n']} own cost, costliest "
                "option (command less in-process proof)",
                "#36",
                0.08,
                "s",
                r[worst]["own_s"],
                best=r[worst]["own_min_s"],
                note=f"{worst}; in process {fmt(r['in_process_s'])} s; "
                + ", ".join(f"{o} {fmt(r[o]['own_s'])}" for o in OPTIONS_36)
                + "; CPU time (user + system, the command less the proof in process): "
                + ", ".join(f"{o} {fmt(r[o]['own_cpu_s'])}" for o in OPTIONS_36 if o in r)
                + floor,
                suite="startup",
                profile=profile,
            )
        )
        if "rapidsnark_s" in r:
            k = r["log2n"]
            out.append(
                target(
                    f"fresh `pip install .`: `cuzk prove` 2^{k} (squaring chain), whole command "
                    "÷ rapidsnark's",
                    "#36",
                    1.5 if k <= 12 else 1.0,
                    "x",
                    r["command_vs_rapidsnark"],
                    note=f"cuzk {fmt(r['(none)']['command_s'])} s (in process "
                    f"{fmt(r['in_process_s'])} s), rapidsnark {fmt(r['rapidsnark_s'])} s",
                    suite="startup",
                    profile=profile,
                )
            )
    thin = res.get("thin_client")
    if thin:
        out.append(
            target(
                "fresh `pip install .`: `cuzk prove --server` 2^12, the client's own time",
                "#36",
                25,
                "ms",
                thin["client_s"] * 1e3,
                best=thin["client_min_s"] * 1e3,
                note=f"command {fmt(thin['command_s'])} s, daemon job "
                f"{fmt(thin['daemon_job_s'])} s; the client's CPU time "
                f"{fmt(thin['client_cpu_s'] * 1e3)} ms; python -c pass "
                f"{fmt(thin['python_s'] * 1e3)} ms, -I -S "
                f"{fmt(thin['python_isolated_s'] * 1e3)} ms",
                suite="startup",
                profile=profile,
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
