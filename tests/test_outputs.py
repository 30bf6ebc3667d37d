"""Outputs of the file commands (issue 38, findings 4 and 5): an output that names one of the
command's inputs (the same path, another spelling, a hard link) is refused in one line with
the input untouched, and no temporary file of an atomic write outlives its command: SIGTERM
removes it as SIGINT does, and one left by a SIGKILL is removed by the next write to the same
file (only ours: our name pattern, a dead pid, this user's file).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner
from conftest import fixture_circuit

from cuzk.cli import main
from cuzk.formats.atomic import OutputError, atomic_write_text, check_apart, sweep_stale

TINY = fixture_circuit("tiny")


@pytest.fixture
def files(tmp_path, monkeypatch):
    """Copies of tiny's files in an empty working directory: k.zkey, w.wtns, c.wasm, c.r1cs,
    input.json."""
    monkeypatch.chdir(tmp_path)
    for src, dst in [
        ("circuit.zkey", "k.zkey"),
        ("witness_0.wtns", "w.wtns"),
        ("circuit.wasm", "c.wasm"),
        ("circuit.r1cs", "c.r1cs"),
        ("input_0.json", "input.json"),
    ]:
        shutil.copy(TINY.dir / src, tmp_path / dst)
    os.link(tmp_path / "k.zkey", tmp_path / "hard.zkey")
    return tmp_path


def _snapshot(d) -> dict:
    return {n: (d / n).read_bytes() for n in sorted(os.listdir(d)) if (d / n).is_file()}


@pytest.mark.parametrize(
    "command, output, victim, code",
    [
        ("prove k.zkey w.wtns proof.json k.zkey", "k.zkey", "k.zkey", 1),
        ("prove k.zkey w.wtns w.wtns public.json", "w.wtns", "w.wtns", 1),
        ("prove k.zkey w.wtns p.json ./sub/../k.zkey", "./sub/../k.zkey", "k.zkey", 1),
        ("prove k.zkey w.wtns p.json hard.zkey", "hard.zkey", "k.zkey", 1),
        ("prove --r1cs c.r1cs k.zkey w.wtns c.r1cs q.json", "c.r1cs", "c.r1cs", 1),
        ("fullprove input.json c.wasm k.zkey p.json input.json", "input.json", "input.json", 1),
        ("fullprove input.json c.wasm k.zkey c.wasm q.json", "c.wasm", "c.wasm", 1),
        ("wtns calculate c.wasm input.json c.wasm", "c.wasm", "c.wasm", 1),
        ("wtns calculate c.wasm input.json input.json", "input.json", "input.json", 1),
        ("setup -q c.r1cs c.r1cs", "c.r1cs", "c.r1cs", 1),
        ("export-vk k.zkey hard.zkey", "hard.zkey", "k.zkey", 2),
        (
            "submit --server http://127.0.0.1:9 --wait --out . k.zkey proof-0.json",
            "./proof-0.json",
            "proof-0.json",
            2,
        ),
    ],
)
def test_an_output_that_names_an_input_is_refused_and_the_input_kept(
    files, command, output, victim, code
):
    if victim == "proof-0.json":  # a witness named as `submit --wait` names its first proof
        shutil.copy(files / "w.wtns", files / victim)
    (files / "sub").mkdir()
    before = _snapshot(files)
    r = CliRunner().invoke(main, command.split())
    assert r.exit_code == code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and f"{output} is the input " in lines[-1], r.output
    assert "give the output its own path" in lines[-1]
    assert _snapshot(files) == before  # the input untouched, nothing else written


def test_the_console_fast_path_refuses_it_too(files, monkeypatch, capsys):
    """`cuzk prove` without click (cuzk.console) says the same line."""
    from cuzk import console

    before = _snapshot(files)
    monkeypatch.setattr(sys, "argv", ["cuzk", "prove", "k.zkey", "w.wtns", "p.json", "k.zkey"])
    assert console.main() == 1
    err = capsys.readouterr().err
    assert err == (
        "cuzk prove: k.zkey is the input k.zkey: writing it would destroy the input; give the "
        "output its own path\n"
    )
    assert _snapshot(files) == before


def test_check_apart(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("a")
    check_apart([tmp_path / "new.json"], [a, None])  # apart
    check_apart([b], [b])  # neither exists: only the input's own error will be said
    with pytest.raises(OutputError, match="are the same file"):
        check_apart([a, f"{tmp_path}/./a"])
    with pytest.raises(OutputError, match=f"^{b} is the input {b}: "):
        b.write_text("b")
        check_apart([b], [a, b])
    os.symlink(a, tmp_path / "link")
    with pytest.raises(OutputError, match="link is the input"):
        check_apart([tmp_path / "link"], [a])
    check_apart(["/dev/stdout"], ["/dev/stdin"])  # a terminal or pipe is not replaced


# ------------------------------------------------------------------------------ temporaries
WRITER = textwrap.dedent(
    """
    import sys, time
    from cuzk.formats import atomic

    how, path = sys.argv[1], sys.argv[2]
    if how == "writer":
        with atomic.atomic_writer(path, "w") as f:
            f.write("partial")
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
    else:  # the pair: stopped between the temporaries and their renames
        real = atomic._rename_all

        def slow(moves):
            print("writing", flush=True)
            time.sleep(60)
            real(moves)

        atomic._rename_all = slow
        atomic.write_outputs([(path, "proof"), (path + ".public", "public")])
    """
)


def _writer(how, path):
    p = subprocess.Popen(
        [sys.executable, "-c", WRITER, how, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout.readline() == "writing\n"
    return p


def _ours(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith((".tmp", ".old")))


@pytest.mark.parametrize("how", ["writer", "pair"])
def test_sigterm_removes_the_temporary_files(tmp_path, how):
    dest = tmp_path / "proof.json"
    dest.write_text("old")
    p = _writer(how, dest)
    assert len(_ours(tmp_path)) == (1 if how == "writer" else 2)
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 128 + signal.SIGTERM
    assert _ours(tmp_path) == [] and dest.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["proof.json"]


def test_a_sigkilled_writers_temporary_is_removed_by_the_next_write(tmp_path):
    dest = tmp_path / "proof.json"
    p = _writer("writer", dest)
    (left,) = _ours(tmp_path)
    assert left.startswith(f".proof.json.{p.pid}-") and left.endswith(".tmp")
    p.kill()
    p.wait(30)
    assert _ours(tmp_path) == [left]  # SIGKILL leaves it
    # not ours to remove: a live process's, another name's, a name not of our pattern
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        keep = [
            f".proof.json.{live.pid}-abcdefgh.tmp",
            f".other.json.{p.pid}-abcdefgh.tmp",
            ".proof.json.abcdefgh.tmp",
            f".proof.json.{p.pid}-abc.tmp",
            f".proof.json.{10**30}-abcdefgh.tmp",  # no pid (os.kill would overflow)
        ]
        for n in keep:
            (tmp_path / n).write_text("x")
        (tmp_path / f".proof.json.{p.pid}-zzzzzzzz.tmp.old").write_text("x")  # a rename's link
        atomic_write_text(dest, "new")
        assert dest.read_text() == "new"
        assert _ours(tmp_path) == sorted(keep)
        assert sweep_stale(str(dest)) == []
    finally:
        live.kill()
        live.wait()
    assert sweep_stale(str(dest)) == [str(tmp_path / keep[0])]  # its process is gone now
