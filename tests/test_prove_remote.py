"""`cuzk prove --server URL` (and CUZK_SERVER): the thin client of a running `cuzk serve`.

One real daemon on loopback (CPU device, a bearer token, self-verification on) serves every
test. Proofs made through it verify (the project's verifier; snarkjs in the interop test) and
their files have the local command's shapes; the client path imports neither numpy nor numba;
bad input gets the local command's message and exit status, checked by running both; an
unreachable server, a key outside the daemon's roots, a missing token and a proof the daemon
rejects exit 1 with one line and write nothing; the witness goes by path to a loopback daemon
that can read it and as bytes when it cannot. Both ways in are tested: click's `cuzk prove`
(`python -m cuzk.cli`) and the console script's click-free path (cuzk/console.py), whose
argument parsing is checked against click's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture_circuit
from serve_harness import cli_env, request, run_cli, serve_daemon, serving, warm_kernels

from cuzk.groth16.verifier import verify

TINY, MULCHAIN = fixture_circuit("tiny"), fixture_circuit("mulchain")
TOKEN = "5f0c1d2e3a4b5c6d7e8f90a1b2c3d4e5"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """A daemon whose key root holds copies of the tiny and mulchain fixtures."""
    base = tmp_path_factory.mktemp("remote")
    root = base / "keys"
    for c in (TINY, MULCHAIN):
        (root / c.name).mkdir(parents=True)
        for f in ("circuit.zkey", "witness_0.wtns", "bad_witness.wtns"):
            shutil.copy(c.dir / f, root / c.name / f)
    # a damaged key: the first point of pointsA (section 5) moved off the curve
    from cuzk.formats.binfile import BinFile

    data = bytearray((root / "tiny" / "circuit.zkey").read_bytes())
    at = BinFile(root / "tiny" / "circuit.zkey", "zkey", (1,)).section(5, "pointsA").offset
    data[at] ^= 1
    (root / "tiny" / "damaged.zkey").write_bytes(bytes(data))
    token = base / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    warm_kernels(TINY)
    s = serve_daemon(
        base / "serve.log",
        root,
        "--token-file",
        token,
        "--self-verify",
        "--log-level",
        "info",
    ).start()
    s.root, s.token = root, token
    # one proof first, without the commands' timeouts: the daemon's processes may compile
    # kernels the in-process warm-up above does not use
    from cuzk.client import Client

    r = Client(s.url, TOKEN).prove(
        str(root / "tiny" / "circuit.zkey"), [TINY.witness(0)], timeout=900
    )
    assert r["state"] == "done", r
    yield from serving(s)


def env_for(daemon, **extra):
    """The environment of a client command: the daemon's token; CUZK_* from the test only."""
    return cli_env(CUZK_TOKEN_FILE=str(daemon.token), **extra)


# the `cuzk` console script (setup.cfg), whatever is installed in this environment
CONSOLE = [sys.executable, "-c", "import sys; from cuzk.console import main; sys.exit(main())"]


def console(*args, env=None, cwd=None):
    return subprocess.run(
        [*CONSOLE, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or cli_env(),
        cwd=cwd,
    )


def remote(daemon, *args, cwd=None, via="click", **env):
    run = run_cli if via == "click" else console
    return run("prove", *args, "--server", daemon.url, env=env_for(daemon, **env), cwd=cwd)


def local(*args, cwd=None):
    return run_cli("prove", *args, "--local", env=cli_env(), cwd=cwd)


def n_jobs(daemon) -> int:
    code, _, body = request(
        daemon.url, "GET", "/v1/jobs", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert code == 200, body
    return len(body["jobs"])


def shape(text: str) -> str:
    """A proof.json's text with its numbers blanked (proofs are randomized)."""
    return re.sub(r'"[0-9]{2,}"', '"N"', text)


# ------------------------------------------------------------------------------ proofs
def test_server_proof_verifies_and_has_the_local_files_shapes(daemon, tmp_path):
    key, wtns = daemon.root / "tiny" / "circuit.zkey", daemon.root / "tiny" / "witness_0.wtns"
    p = remote(daemon, key, wtns, tmp_path / "proof.json", tmp_path / "public.json", via="console")
    assert p.returncode == 0, p.stderr
    assert p.stderr == "" and p.stdout == ""
    proof_text = (tmp_path / "proof.json").read_text()
    public_text = (tmp_path / "public.json").read_text()
    vk = json.loads(TINY.vk.read_text())
    assert json.loads(public_text) == json.loads(TINY.public(0).read_text())
    assert verify(vk, json.loads(public_text), json.loads(proof_text))

    q = local(key, wtns, tmp_path / "lproof.json", tmp_path / "lpublic.json")
    assert q.returncode == 0, q.stderr
    assert (tmp_path / "lpublic.json").read_text() == public_text  # byte for byte
    assert shape((tmp_path / "lproof.json").read_text()) == shape(proof_text)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temporary left


@pytest.mark.interop
def test_server_proof_accepted_by_snarkjs(daemon, tmp_path, tools):
    from interop import groth16_verify

    d = daemon.root / "mulchain"
    p = remote(
        daemon,
        d / "circuit.zkey",
        d / "witness_0.wtns",
        tmp_path / "proof.json",
        tmp_path / "public.json",
    )
    assert p.returncode == 0, p.stderr
    assert groth16_verify(MULCHAIN.vk, tmp_path / "public.json", tmp_path / "proof.json")


def test_dumps_is_the_snarkjs_writer():
    from cuzk.formats.snarkjs_json import dumps
    from cuzk.groth16.remote import dumps as remote_dumps

    for obj in (json.loads(TINY.proof(0).read_text()), json.loads(TINY.public(0).read_text()), []):
        assert remote_dumps(obj) == dumps(obj)


CLIENT_MODULES = """
import io, json, sys
sys.stdout = io.StringIO()  # not the process's own: cuzk prove then returns instead of _exit
from cuzk.{module} import main
try:
    code = main({args})
except SystemExit as e:
    code = e.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "numba", "llvmlite",
                                                            "click"))
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def imported(module: str, args, env) -> dict:
    """{"code", "heavy": numpy, numba, llvmlite and click modules loaded} of one `cuzk ARGS`
    through cuzk.MODULE's main (cli: click's group; console: the console script)."""
    code = CLIENT_MODULES.format(module=module, args="sys.argv[1:]" if module == "cli" else "")
    p = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return json.loads(p.stderr.strip().splitlines()[-1])


def test_client_path_imports_neither_numpy_nor_numba(daemon, tmp_path):
    d = daemon.root / "tiny"
    args = [
        "prove",
        d / "circuit.zkey",
        d / "witness_0.wtns",
        tmp_path / "proof.json",
        tmp_path / "public.json",
    ]
    for extra, env in ((["--server", daemon.url], {}), ([], {"CUZK_SERVER": daemon.url})):
        # click's command: no numpy, no numba (click itself, of course)
        out = imported("cli", args + extra, env_for(daemon, **env))
        assert out == {"code": 0, "heavy": [m for m in out["heavy"] if m.startswith("click")]}
        assert "click" in out["heavy"]
        # the console script: not even click
        assert imported("console", args + extra, env_for(daemon, **env)) == {"code": 0, "heavy": []}
    # the check can fail: the local path imports both on Numba's kernels (with the native
    # library built, numpy only: tests/test_native.py); click's command imports click
    heavy = imported("console", args + ["--local"], cli_env(CUZK_NATIVE="0"))["heavy"]
    assert "numpy" in heavy and "numba" in heavy and "click" not in heavy
    heavy = imported("cli", args + ["--local"], cli_env(CUZK_NATIVE="0"))["heavy"]
    assert "numpy" in heavy and "numba" in heavy and "click" in heavy


URLS = [
    "http://127.0.0.1:9820",
    "http://localhost:1/",
    "http://HOST.example:80/a/b?x=1&y=2",
    "http://h/v1/jobs?state=done",
    "https://h.example",
    "http://h:0",
    "http://[::1]:9820/x",
    "http://user:pw@h:5/p",
    "http://h:5/p#frag",
    "http://h:1?x=1",
    "http://h:/p",
    "cuzk://h:7",
]


@pytest.mark.parametrize("url", URLS)
def test_split_url_reads_urls_as_urlsplit_does(url):
    """The client's URL split (no urllib.parse on the thin client's path) agrees with
    urllib.parse.urlsplit, and refuses an out-of-range port as it does."""
    from urllib.parse import urlsplit

    from cuzk.client import split_url

    u = urlsplit(url)
    assert split_url(url) == (
        u.hostname or "",
        u.port,
        (u.path or "/") + (f"?{u.query}" if u.query else ""),
    )
    for bad in ("http://h:99999/", "http://h:x1/"):
        with pytest.raises(ValueError):
            assert urlsplit(bad).port is None  # (raises)
        with pytest.raises(ValueError):
            split_url(bad)


# what the thin client was cut from (each a few ms of its start: docs/prover.md, issue 36),
# besides numpy, numba and click
NOT_IN_THE_THIN_CLIENT = (
    "urllib.parse",
    "ipaddress",
    "base64",
    "tempfile",
    "dataclasses",
    "json",
    "re",
    "enum",
    "socket",
    "signal",
    "threading",
    "contextlib",
    "importlib",
    "http.client",
    "numpy",
    "numba",
    "llvmlite",
    "click",
)


def test_thin_client_command_imports_only_what_it_uses(daemon, tmp_path):
    """A whole `cuzk prove --server` through the console script, in an interpreter without
    `site` (no .pth hook preloading modules), proves and imports none of
    NOT_IN_THE_THIN_CLIENT (python -X importtime lists every module imported)."""
    root = str(Path(__file__).resolve().parent.parent)
    d = daemon.root / "tiny"
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    code = f"import sys; sys.path.insert(0, {root!r}); from cuzk.console import main; main()"
    args = [d / "circuit.zkey", d / "witness_0.wtns", proof, public, "--server", daemon.url]
    p = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-c", code, "prove", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env_for(daemon),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    vk = json.loads(TINY.vk.read_text())
    assert verify(vk, json.loads(public.read_text()), json.loads(proof.read_text()))
    imported = {
        line.split("|")[-1].strip()
        for line in p.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "cuzk.client" in imported and "cuzk.groth16.remote" in imported  # (the list is read)
    assert sorted(imported & set(NOT_IN_THE_THIN_CLIENT)) == []


def test_thin_client_imports_only_what_it_uses():
    """The thin client's modules, imported without `site` (no .pth hook preloading modules),
    load none of the modules it was cut from (NOT_IN_THE_THIN_CLIENT); and base64 as the
    client writes it is base64's."""
    import base64

    from cuzk.client import _base64

    blob = bytes(range(256)) * 3 + b"x"
    assert _base64(blob) == base64.b64encode(blob).decode()
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        f"import sys; sys.path.insert(0, {root!r}); import cuzk.console, cuzk.client, "
        f"cuzk.groth16.remote, cuzk.formats.atomic; print(sorted(m for m in "
        f"{NOT_IN_THE_THIN_CLIENT!r} if m in sys.modules))"
    )
    p = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_console_script_is_cuzk_console_main():
    cfg = (Path(__file__).resolve().parent.parent / "setup.cfg").read_text()
    assert re.search(r"^\s*cuzk = cuzk\.console:main$", cfg, re.M)


FAST_CASES = [
    "Z W P Q --server http://h:1",
    "Z W P Q --server=http://h:1 --timings",
    "--timings Z --server http://h:1 W P --token-file T Q",
    "Z W P Q",  # the server from CUZK_SERVER
    "Z W P Q --token-file=T",
    "Z W P Q --server -x",  # click too takes "-x" as --server's value
    # click's business (None here):
    "Z W P Q --server http://h:1 --local",
    "Z W P Q --local",
    "Z W P Q --server http://h:1 --r1cs R",
    "Z W P Q --server http://h:1 --device cuda",
    "Z W P Q --server a --server b",
    "Z W P --server http://h:1",
    "Z W P Q R --server http://h:1",
    "Z W P Q --server",
    "Z W P Q --help",
    "-- Z W P Q",
    "Z W P Q --timings=1",
    "Z W P Q --server http://h:1 --no-verify",  # verification is the daemon's; click's option
    "Z W P Q --server=",
    "DIR W P Q --server http://h:1",
    "Z W DIR Q --server http://h:1",
    "Z W RO Q --server http://h:1",
]


@pytest.mark.parametrize("line", FAST_CASES)
def test_fast_args_parse_as_click_does(line, tmp_path, monkeypatch):
    """What the console script's parser accepts, click's `cuzk prove` parses to the same
    call (and a server proof); what it leaves to click, click parses its own way."""
    import click

    from cuzk.groth16.cli import prove
    from cuzk.groth16.remote import fast_args

    (tmp_path / "DIR").mkdir()
    (tmp_path / "RO").write_text("")
    (tmp_path / "RO").chmod(0o444)
    monkeypatch.chdir(tmp_path)
    env = {"CUZK_SERVER": "http://env:2"}
    argv = line.split()
    got = fast_args(argv, env)
    expect_fast = FAST_CASES.index(line) < 6
    if os.geteuid() == 0 and "RO" in argv:  # root may write anything: click agrees
        expect_fast = True
    assert (got is not None) == expect_fast, got
    if got is None:
        return
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CUZK_TOKEN_FILE", raising=False)
    ctx = prove.make_context("prove", list(argv))
    p = ctx.params
    assert p["server"] and not p["local"] and p["r1cs"] is None and p["device"] == "cpu"
    assert got == {
        k: p[k]
        for k in ("zkey", "wtns", "proof_json", "public_json", "server", "token_file", "timings")
    }
    assert isinstance(ctx.command, click.Command)


LOCAL_CASES = [
    "Z W P Q",
    "Z W P Q --timings --no-verify",
    "--local Z W P --verify Q",
    "Z W P Q --local",  # CUZK_SERVER set: --local proves here
    "Z W P Q --r1cs R",
    "--r1cs=R --no-verify Z W P --local Q",
    # click's business, or the server's (None here):
    "Z W P Q --server http://h:1",
    "Z W P Q --verify --no-verify",
    "Z W P Q --r1cs MISSING",  # click's usage error (exit 2) names it
    "Z W P Q --r1cs DIR",
    "Z W P Q --r1cs R --r1cs R",
    "Z W P Q --r1cs",
    "Z W P Q --device cuda",
    "Z W P Q --local --local",
    "Z W P",
    "Z W P Q --help",
    "-- Z W P Q",
    "DIR W P Q",
    "Z W P DIR",
]


@pytest.mark.parametrize("line", LOCAL_CASES)
def test_local_fast_args_parse_as_click_does(line, tmp_path, monkeypatch):
    """What the console script's local parser accepts, click's `cuzk prove` parses to the
    same local call; the server's command lines and click's own business it leaves."""
    from cuzk.groth16.cli import prove
    from cuzk.groth16.local_cli import fast_args

    (tmp_path / "DIR").mkdir()
    (tmp_path / "R").write_text("")
    monkeypatch.chdir(tmp_path)
    argv = line.split()
    env = {"CUZK_SERVER": "http://env:2"} if "--local" in argv else {}
    got = fast_args(argv, env)
    assert (got is not None) == (LOCAL_CASES.index(line) < 6), got
    if got is None:
        return
    monkeypatch.delenv("CUZK_SERVER", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    p = prove.make_context("prove", list(argv)).params
    assert p["device"] == "cpu"
    assert not p["server"] or p["local"]
    assert got == {
        k: p[k] for k in ("zkey", "wtns", "proof_json", "public_json", "r1cs", "verify", "timings")
    }


def test_local_fast_path_proves_and_refuses_as_click_does(tmp_path):
    """The console script's local path and click's command: the same proof, the same one-line
    refusal (exit 1) of a witness of another circuit, nothing written."""
    args = [TINY.zkey, TINY.witness(0), tmp_path / "p.json", tmp_path / "q.json"]
    for run in (console, run_cli):
        p = run("prove", *args, env=cli_env())
        assert p.returncode == 0, p.stderr
        assert verify(
            json.loads(TINY.vk.read_text()),
            json.loads((tmp_path / "q.json").read_text()),
            json.loads((tmp_path / "p.json").read_text()),
        )
        (tmp_path / "p.json").unlink()
        (tmp_path / "q.json").unlink()
    bad = [TINY.zkey, MULCHAIN.witness(0), *args[2:]]
    answers = [run("prove", *bad, env=cli_env()) for run in (console, run_cli)]
    assert [a.returncode for a in answers] == [1, 1]
    assert answers[0].stderr == answers[1].stderr and answers[0].stderr.startswith("cuzk prove: ")
    assert not (tmp_path / "p.json").exists()


def test_cuzk_server_variable_and_local_flag(daemon, tmp_path):
    d = daemon.root / "tiny"
    args = (d / "circuit.zkey", d / "witness_0.wtns", tmp_path / "p.json", tmp_path / "q.json")
    before = n_jobs(daemon)
    p = console("prove", *args, "--timings", env=env_for(daemon, CUZK_SERVER=daemon.url))
    assert p.returncode == 0, p.stderr
    assert n_jobs(daemon) == before + 1
    assert re.fullmatch(
        rf"cuzk prove: job [0-9a-f]{{16}} on {re.escape(daemon.url)}: synth "
        r"[0-9.]+ ms, gpu [0-9.]+ ms, finalize [0-9.]+ ms; request and files "
        r"[0-9.]+ ms\n",
        p.stderr,
    ), p.stderr
    p = run_cli("prove", *args, "--local", env=env_for(daemon, CUZK_SERVER=daemon.url))
    assert p.returncode == 0, p.stderr
    assert n_jobs(daemon) == before + 1  # proved here
    assert verify(
        json.loads(TINY.vk.read_text()),
        json.loads((tmp_path / "q.json").read_text()),
        json.loads((tmp_path / "p.json").read_text()),
    )
    # --local with an explicit --server, and the local prover's options, are usage errors
    for extra in (["--local"], ["--r1cs", TINY.r1cs], ["--device", "cuda"]):
        p = remote(daemon, *args, *extra)
        assert p.returncode == 2, (extra, p.stderr)
        assert "--local" in p.stderr
    assert n_jobs(daemon) == before + 1
    help_text = run_cli("prove", "--help").stdout
    assert "CUZK_SERVER" in help_text and "--local" in help_text


# ------------------------------------------------------------------------------ bad input
def bad_inputs(root, tmp_path):
    """(name, ZKEY, WTNS) of inputs the local path refuses with exit 1 and one line."""
    (tmp_path / "empty.wtns").write_bytes(b"")
    d = root / "tiny"
    return [
        ("missing key", "nope.zkey", d / "witness_0.wtns"),
        ("missing witness", d / "circuit.zkey", "nope.wtns"),
        ("key as witness", d / "circuit.zkey", d / "circuit.zkey"),
        ("witness as key", d / "witness_0.wtns", d / "witness_0.wtns"),
        ("damaged key", d / "damaged.zkey", d / "witness_0.wtns"),
        ("empty witness", d / "circuit.zkey", "empty.wtns"),
        ("another circuit's witness", d / "circuit.zkey", root / "mulchain" / "witness_0.wtns"),
    ]


@pytest.mark.slow
def test_bad_input_same_message_and_status_as_local(daemon, tmp_path):
    for name, key, wtns in bad_inputs(daemon.root, tmp_path):
        outs = (tmp_path / "proof.json", tmp_path / "public.json")
        p_local = local(key, wtns, *outs, cwd=tmp_path)
        assert p_local.returncode == 1, (name, p_local.stderr)
        assert len(p_local.stderr.strip().splitlines()) == 1
        for via in ("click", "console"):
            p_remote = remote(daemon, key, wtns, *outs, cwd=tmp_path, via=via)
            assert (p_remote.returncode, p_remote.stderr) == (1, p_local.stderr), (name, via)
        assert not any(o.exists() for o in outs), name


def test_unreachable_server_exits_1_with_the_reason(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    for run in (run_cli, console):
        p = run(
            "prove",
            TINY.zkey,
            TINY.witness(0),
            tmp_path / "p.json",
            tmp_path / "q.json",
            "--server",
            url,
        )
        assert p.returncode == 1
        assert (
            p.stderr == f"cuzk prove: cannot reach cuzk serve at {url}: "
            "[Errno 111] Connection refused\n"
        )
        assert os.listdir(tmp_path) == []


def test_refusals_exit_1_and_write_nothing(daemon, tmp_path):
    outs = (tmp_path / "p.json", tmp_path / "q.json")
    d = daemon.root / "tiny"
    # a witness that breaks a constraint: the daemon's self-verification rejects the proof
    p = remote(daemon, d / "circuit.zkey", d / "bad_witness.wtns", *outs, via="console")
    assert p.returncode == 1
    assert p.stderr.startswith(
        "cuzk prove: the proof does not verify: the witness does not satisfy the circuit"
    ), p.stderr
    # a key the daemon may not read: outside its key roots
    p = remote(daemon, TINY.zkey, TINY.witness(0), *outs)
    assert p.returncode == 1
    assert "refused the proof: HTTP 403" in p.stderr and "outside the key roots" in p.stderr
    # no token
    env = cli_env()
    p = run_cli(
        "prove", d / "circuit.zkey", d / "witness_0.wtns", *outs, "--server", daemon.url, env=env
    )
    assert p.returncode == 1 and "HTTP 401" in p.stderr, p.stderr
    p = remote(
        daemon, d / "circuit.zkey", d / "witness_0.wtns", *outs, "--token-file", tmp_path / "none"
    )
    assert p.returncode == 1
    assert (
        p.stderr.strip() == f"cuzk prove: token file {tmp_path / 'none'}: No such file or directory"
    )
    assert not any(o.exists() for o in outs)


# ------------------------------------------------------------------------------ witness route
def test_witness_by_path_on_loopback_else_bytes(daemon, tmp_path, monkeypatch):
    """A witness the daemon can read goes by path; one outside its roots is refused there
    and then uploaded; both proofs verify. (In process: PATH_MIN_BYTES lowered to 0.)"""
    from cuzk.cli import main
    from cuzk.client import Client
    from cuzk.groth16 import remote as thin_client

    sent = []
    real = Client.prove

    def spy(self, key, witnesses, *a, upload=True, **kw):
        sent.append("bytes" if isinstance(witnesses[0], bytes) else "upload" if upload else "path")
        return real(self, key, witnesses, *a, upload=upload, **kw)

    monkeypatch.setattr(Client, "prove", spy)
    monkeypatch.setattr(thin_client, "PATH_MIN_BYTES", 0)
    outside = tmp_path / "w.wtns"
    shutil.copy(TINY.witness(0), outside)
    vk = json.loads(TINY.vk.read_text())
    for wtns, route in (
        (daemon.root / "tiny" / "witness_0.wtns", ["path"]),
        (outside, ["path", "bytes"]),
    ):
        sent.clear()
        r = CliRunner().invoke(
            main,
            [
                "prove",
                str(daemon.root / "tiny" / "circuit.zkey"),
                str(wtns),
                str(tmp_path / "p.json"),
                str(tmp_path / "q.json"),
                "--server",
                daemon.url,
                "--token-file",
                str(daemon.token),
            ],
        )
        assert r.exit_code == 0, r.output
        assert sent == route
        assert verify(
            vk,
            json.loads((tmp_path / "q.json").read_text()),
            json.loads((tmp_path / "p.json").read_text()),
        )
    # to a host that is not loopback, and below PATH_MIN_BYTES, always bytes
    is_loopback = thin_client.is_loopback
    assert not is_loopback("http://prover7:9820") and is_loopback("http://[::1]:1")
    assert is_loopback("http://localhost:9820") and is_loopback("http://127.0.0.2:1")


def test_client_transport_reports_what_is_not_http(tmp_path):
    """Something that is not a cuzk serve on the port: Unreachable with the reason."""
    import socket
    import threading

    from cuzk.client import Client, Unreachable

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def answer():
        c, _ = srv.accept()
        c.recv(65536)
        c.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        c.close()

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    with pytest.raises(Unreachable, match="not an HTTP answer: 'SSH-2.0"):
        Client(f"http://127.0.0.1:{srv.getsockname()[1]}").health()
    t.join(10)
    srv.close()


# ------------------------------------------------------------------------------ answers
class StubClient:
    """A client whose /v1/prove answers are given: the daemon's side of prove_remote."""

    server = "http://127.0.0.1:1"

    def __init__(self, first: dict, later: dict | None = None):
        self.first, self.later, self.calls = first, later, []

    def prove(self, key, witnesses, **kw):
        self.calls.append(("prove", kw.get("upload")))
        return self.first

    def wait(self, job_id, timeout=None):
        self.calls.append(("wait", job_id))
        return self.later


def done(proof, public) -> dict:
    return {
        "job_id": "j1",
        "state": "done",
        "finished": True,
        "error": None,
        "proofs": [proof],
        "public": [public],
        "partitions": [{"index": 0, "state": "done", "error": None}],
    }


def test_a_proof_past_the_request_wait_is_waited_for(tmp_path):
    """/v1/prove answers 202 (not finished within the daemon's max_wait): the job's result is
    waited for, then written."""
    from cuzk.groth16.remote import prove_remote

    proof, public = json.loads(TINY.proof(0).read_text()), json.loads(TINY.public(0).read_text())
    c = StubClient({"job_id": "j1", "state": "running", "finished": False}, done(proof, public))
    prove_remote(c, TINY.zkey, TINY.witness(0), tmp_path / "p.json", tmp_path / "q.json")
    assert c.calls == [("prove", True), ("wait", "j1")]
    assert json.loads((tmp_path / "p.json").read_text()) == proof
    assert (tmp_path / "q.json").read_text() == json.dumps(public, indent=1)


@pytest.mark.parametrize(
    "answer, words",
    [
        (done(None, None), "is done but its answer holds no proof.json"),
        (done({"pi_a": []}, ["1"]), "is done but its answer holds no proof.json"),
        (done({"pi_a": [], "pi_b": [], "pi_c": []}, [1]), "is done but its answer holds no"),
        (
            {
                **done(None, None),
                "state": "failed",
                "error": "partition 0 failed after 3 attempts: device process died",
            },
            "the daemon's job j1 failed: partition 0 failed after 3 attempts: device process died",
        ),
        (
            {**done(None, None), "state": "cancelled", "error": None},
            "the daemon's job j1 cancelled: no reason given",
        ),
        (
            {
                **done(None, None),
                "state": "failed",
                "error": "partition 0 failed after 1 attempt: "
                "self-verification rejected the proof: ...",
            },
            "the proof does not verify: the witness does not satisfy the circuit of this key",
        ),
    ],
)
def test_an_answer_without_a_good_proof_writes_nothing(answer, words, tmp_path):
    from cuzk.groth16.remote import RemoteError, prove_remote

    with pytest.raises(RemoteError, match=re.escape(words)):
        prove_remote(
            StubClient(answer), TINY.zkey, TINY.witness(0), tmp_path / "p.json", tmp_path / "q.json"
        )
    assert os.listdir(tmp_path) == []


def test_outputs_checked_before_the_request_and_written_both_or_neither(tmp_path, monkeypatch):
    """One file for both, or a missing folder: refused before anything is sent; a public.json
    that cannot be written (/dev/full, written in place) leaves no proof.json."""
    from cuzk.formats.atomic import OutputError
    from cuzk.groth16.remote import prove_remote

    monkeypatch.chdir(tmp_path)
    proof, public = json.loads(TINY.proof(0).read_text()), json.loads(TINY.public(0).read_text())
    for outs, words in [
        (("p.json", "p.json"), "p.json and p.json are the same file"),
        (("p.json", str(tmp_path / "p.json")), f"p.json and {tmp_path}/p.json are the same"),
        (("p.json", "nodir/q.json"), "nodir/q.json: no such directory"),
    ]:
        c = StubClient(done(proof, public))
        with pytest.raises(OutputError, match=re.escape(words)):
            prove_remote(c, TINY.zkey, TINY.witness(0), *outs)
        assert c.calls == [] and os.listdir(tmp_path) == []
    c = StubClient(done(proof, public))
    with pytest.raises(OutputError, match="^/dev/full: No space left on device$"):
        prove_remote(c, TINY.zkey, TINY.witness(0), "p.json", "/dev/full")
    assert c.calls == [("prove", True)] and os.listdir(tmp_path) == []


def test_one_file_for_both_refused_by_both_paths(daemon, tmp_path):
    d = daemon.root / "tiny"
    before = n_jobs(daemon)
    out = tmp_path / "out.json"
    for via, second in (("console", out), ("click", f"{tmp_path}/./out.json")):
        p = remote(daemon, d / "circuit.zkey", d / "witness_0.wtns", out, second, via=via)
        assert p.returncode == 1, p.stderr
        assert (
            p.stderr
            == f"cuzk prove: {out} and {second} are the same file: give each output its own path\n"
        )
    assert os.listdir(tmp_path) == [] and n_jobs(daemon) == before


def test_interrupted_as_click_answers_it(tmp_path):
    """Ctrl-C while the daemon proves: "Aborted!" and exit 1 on both paths, nothing written."""
    import signal
    import socket
    import time

    with socket.socket() as srv:  # takes each request, never answers
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        srv.settimeout(120)
        url = f"http://127.0.0.1:{srv.getsockname()[1]}"
        outs, conns = [], []
        for cmd in (CONSOLE, [sys.executable, "-m", "cuzk.cli"]):
            p = subprocess.Popen(
                [
                    *cmd,
                    "prove",
                    str(TINY.zkey),
                    str(TINY.witness(0)),
                    str(tmp_path / "p.json"),
                    str(tmp_path / "q.json"),
                    "--server",
                    url,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(),
                # a terminal's Ctrl-C: the child starts with SIGINT's default action, as from
                # a shell prompt, whatever this process inherited (a background job of a
                # non-interactive shell, e.g. `bash .ci/run &`, ignores SIGINT, and Python
                # then installs no KeyboardInterrupt handler in its children)
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
            # Ctrl-C once the client is connected and waiting for the answer, not while the
            # interpreter starts (a fixed sleep raced a slow start on a loaded machine)
            conn, _ = srv.accept()
            conns.append(conn)
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
            outs.append((p.returncode, err))
        for conn in conns:
            conn.close()
        assert outs[0] == outs[1] == (1, "\nAborted!\n"), outs
    assert os.listdir(tmp_path) == []
