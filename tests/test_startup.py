"""The first command after an install says what it compiles and where it keeps it; `cuzk
warmup` compiles ahead; the kernel cache is keyed on everything compiled code depends on."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cuzk.compiling import CompileWatch
from cuzk.groth16.warmup import write_square_chain

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "tiny"
NOTICE = "compiling the proving kernels for this machine"


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


class _Event:
    def __init__(self, start: bool, fn=None):
        self.is_start, self.is_end = start, not start
        self.data = {"dispatcher": type("D", (), {"py_func": fn})()} if fn else None


def test_compile_watch_announces_reports_progress_and_closes():
    """One notice at the first cache miss (what, why, where), progress while compiles go
    on, one closing line; warming() describes the compile in between, None after."""
    lines, states = [], []
    w = CompileWatch(lines.append, interval=0.05, on_change=states.append)
    assert w.warming() is None

    def square(x):
        return x * x

    w.notify(_Event(True, square))
    assert lines and NOTICE in lines[0] and "kept in" in lines[0] and "cuzk warmup" in lines[0]
    w.notify(_Event(True, square))  # nested: a callee compiled for its caller
    state = w.warming()
    assert state["compiling"].endswith("square") and state["compiled"] == 0
    time.sleep(0.2)
    assert any(line.startswith("still compiling kernels") for line in lines[1:])
    w.notify(_Event(False))
    w.notify(_Event(False))
    w.close()
    assert lines[-1].startswith("kernels compiled: 2 functions in")
    assert w.warming() is None and states[0]["compiled"] == 0 and states[-1] is None
    assert sum("kernels compiled" in line for line in lines) == 1


def test_compile_watch_finishes_by_itself_when_compiles_stop():
    """A daemon's watch is never closed: once no compile has run for an interval it says
    the kernels are compiled, and a later miss starts a new notice."""
    lines = []
    w = CompileWatch(lines.append, interval=0.05)
    w.notify(_Event(True))
    w.notify(_Event(False))
    deadline = time.monotonic() + 10
    while not any("kernels compiled" in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert w.warming() is None and "kernels compiled: 1 function in" in lines[-1]
    w.notify(_Event(True))
    assert sum(NOTICE in line for line in lines) == 2
    w.notify(_Event(False))
    w.close()


def test_square_chain_circuit_is_satisfied_by_its_witness(tmp_path):
    """The warm-up circuit, read back by the .r1cs and .wtns readers: x_{i+1} = x_i^2 mod r
    (Python ints), public output x_n, and every constraint holds."""
    from cuzk.arith.constants import FR_MODULUS
    from cuzk.arith.radix import limbs_to_ints
    from cuzk.formats.r1cs import R1CS
    from cuzk.formats.wtns import read_wtns
    from cuzk.groth16 import first_unsatisfied

    write_square_chain(tmp_path / "c.r1cs", tmp_path / "c.wtns", n=5, x=7)
    r = R1CS(tmp_path / "c.r1cs")
    w = read_wtns(tmp_path / "c.wtns")
    values = limbs_to_ints(w.values)
    assert (r.n_constraints, r.n_wires, r.n_public) == (5, 7, 1)
    assert values[0] == 1 and values[2] == 7 and values[1] == pow(7, 2**5, FR_MODULUS)
    assert first_unsatisfied(r, w.values) is None
    bad = w.values.copy()
    bad[1, 0] ^= 1
    assert first_unsatisfied(r, bad) == 4


def _timed_stderr(cmd, env, stop_when, timeout=600.0):
    """Run cmd; (seconds since start, line) for each stderr line until stop_when(lines) or
    the end; the process is killed if still running. Returns (lines, exit status or None)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    lines = []
    try:
        for line in p.stderr:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
            if stop_when(lines):
                break
        running = p.poll() is None
    finally:
        p.kill()
        p.wait()
        timer.cancel()
    return lines, (None if running else p.returncode)


@pytest.mark.slow
def test_cold_cache_prove_says_what_it_compiles_at_once(tmp_path):
    """With an empty kernel cache, `cuzk prove` names the compile, the machine and the
    cache folder on stderr while the compile is still under way (the process is stopped
    there: the notice, then a progress line, come before any kernel is done), promptly after
    start-up; the warm command (below) prints neither."""
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "numba"), CUZK_COMPILE_PROGRESS_SECS="2")
    cmd = [sys.executable, "-m", "cuzk.console", "prove", str(TINY / "circuit.zkey")]
    cmd += [str(TINY / "witness_0.wtns"), str(tmp_path / "p.json"), str(tmp_path / "q.json")]
    lines, status = _timed_stderr(
        cmd, env, lambda ls: any("still compiling" in line for _, line in ls)
    )
    assert status is None, lines  # still compiling when the lines came
    (first_at, first), (progress_at, progress) = lines[0], lines[-1]
    assert first.startswith(f"cuzk prove: {NOTICE}") and str(tmp_path / "numba") in first
    assert "Numba" in first and "CPU" in first and "cuzk warmup" in first
    # the notice comes at the first compile: right after the imports, well before any
    # kernel could be compiled (the whole compile takes minutes)
    assert first_at < 15, lines
    assert progress.startswith("cuzk prove: still compiling kernels") and progress_at > first_at
    assert not (tmp_path / "p.json").exists()


@pytest.mark.slow
def test_warmup_then_the_next_command_compiles_nothing(tmp_path):
    """`cuzk warmup` (a real setup, proof and check on each curve) ends with one line naming
    the cache; after it, `cuzk prove` prints no compile notice and proves, on either curve."""
    env = _env()
    p = subprocess.run(
        [sys.executable, "-m", "cuzk.console", "warmup", "--constraints", "100"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("cuzk warmup: kernels ready in ") and " kept in " in p.stdout
    for c in (TINY, TINY.parent / "tiny381"):  # BN254, BLS12-381
        cmd = [sys.executable, "-m", "cuzk.console", "prove", str(c / "circuit.zkey")]
        cmd += [str(c / "witness_0.wtns"), str(tmp_path / "p.json"), str(tmp_path / "q.json")]
        q = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        assert q.returncode == 0 and (tmp_path / "p.json").exists(), q.stderr
        assert "compiling" not in q.stderr, (c.name, q.stderr)
        (tmp_path / "p.json").unlink()


def test_cuda_compiles_are_heard_once_a_cuda_device_opens():
    """numba-cuda announces its compiler passes (not compiles) on an event module of its own:
    once a CUDA device is opened (watch_cuda_compiles) an installed watch hears them, once,
    as one compiled function per function whose passes run."""
    from cuzk.compiling import install, uninstall, watch_cuda_compiles

    try:
        from numba.cuda.core import event as cuda_event
    except ImportError:
        pytest.skip("numba-cuda is not installed")
    lines = []
    w = install(CompileWatch(lines.append, interval=60))
    try:
        watch_cuda_compiles()
        watch_cuda_compiles()
        for name in ("msm_kernel", "msm_kernel", "ntt_kernel"):  # two passes of one function
            data = {"module": "cuzk.kernels.msm_cuda", "qualname": name}
            with cuda_event.trigger_event("numba-cuda:run_pass", data=data):
                assert w.warming()["compiling"] == f"cuzk.kernels.msm_cuda.{name} (CUDA)"
        assert sum(NOTICE in line for line in lines) == 1 and w.compiled == 2
        assert w.warming()["compiling"] == ""  # between passes
    finally:
        uninstall(w)
    with cuda_event.trigger_event("numba-cuda:run_pass", data={"qualname": "other"}):
        pass
    assert w.total_compiled == 2  # no longer listening


def test_warming_beside_a_board_is_read_back_and_swept_when_the_board_is_gone():
    """publish_warming / read_warming round trip by board name; a file left for a board that
    no longer exists is removed by the next publish; nothing uses the boards' name prefix."""
    from cuzk import compiling

    live, gone = "cuzk-test-live-board", "cuzk-test-gone-board"
    board = Path(compiling.SIDECAR_DIR) / live
    board.write_bytes(b"")  # stands in for the live board's segment
    state = {"reason": "compiling", "cache": "/c", "processes": []}
    try:
        compiling.publish_warming(gone, state)
        assert compiling.read_warming(gone) == state
        compiling.publish_warming(live, state)
        assert compiling.read_warming(live) == state and compiling.read_warming(gone) is None
        assert not Path(compiling._warming_path(live)).name.startswith("cuzk-")
        compiling.publish_warming(live, None)
        assert compiling.read_warming(live) is None
    finally:
        board.unlink()
        for name in (live, gone):
            Path(compiling._warming_path(name)).unlink(missing_ok=True)
