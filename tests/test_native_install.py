"""The native kernel library built by the install (setup.py): a wheel built from the sdist
builds it into the package (cuzk/native/lib), where `cuzk prove` finds it without a warm-up;
a failing C compiler leaves a wheel that installs and works, and the first command that looks
for the library says once how to build it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

pytestmark = pytest.mark.skipif(
    not (ROOT / "setup.py").exists(), reason="runs from a source checkout (setup.py)"
)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUZK_", "PYTHON"))}
    return {**env, **extra}


def _sdist(tmp_path) -> Path:
    """The source tree as `python setup.py sdist` packs it, unpacked under tmp_path."""
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "--formats=gztar", "-d", str(dist)],
        cwd=ROOT,
        env=_env(),
        check=True,
        capture_output=True,
    )
    (archive,) = dist.glob("cuzk-*.tar.gz")
    with tarfile.open(archive) as t:
        t.extractall(tmp_path / "src", filter="data")
    (src,) = (tmp_path / "src").iterdir()
    assert (src / "build_support" / "cuzk_backend.py").exists()  # the backend travels
    return src


def _wheel(tmp_path, src: Path, **env) -> tuple[Path, str]:
    """A wheel of ``src`` built with this environment's numba (no build isolation) and
    ``env``; (the wheel, pip's output)."""
    p = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "-w", str(tmp_path / "wheels"), str(src)],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (wheel,) = (tmp_path / "wheels").glob("cuzk-*.whl")
    return wheel, p.stdout + p.stderr


def _install(tmp_path, wheel: Path) -> Path:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
        + ["--target", str(site), str(wheel)],
        env=_env(),
        check=True,
        capture_output=True,
    )
    return site


def _run(site, args, xdg, *python_flags):
    """``python ARGS`` with the installed package first on the path (run in ``xdg``'s parent,
    not the checkout, which -m and -c would put first) and an empty cache (the loader's
    folder() then holds nothing: only the install's build can serve)."""
    env = _env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(xdg))
    env.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run(
        [sys.executable, *python_flags, *args],
        env=env,
        cwd=xdg.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        f"{site}/cuzk/"
        in subprocess.run(
            [sys.executable, "-c", "import cuzk; print(cuzk.__file__)"],
            env=env,
            cwd=xdg.parent,
            capture_output=True,
            text=True,
        ).stdout
    )
    return p


FAILING_CC = "#!/bin/sh\necho 'cc: no such compiler here' >&2\nexit 1\n"


def test_a_failing_compiler_installs_and_says_once_how_to_build(tmp_path):
    """CC fails: the wheel builds (tagged for this platform, NOT-BUILT inside saying why), the
    build's summary names the way to build it later, the installed package works (`cuzk
    verify`), and the first look for the library says so once, not at the next command."""
    cc = tmp_path / "cc"
    cc.write_text(FAILING_CC)
    cc.chmod(0o755)
    src = _sdist(tmp_path)
    wheel, out = _wheel(tmp_path, src, CC=str(cc), CUZK_BUILD_NATIVE="bn254")
    assert "native kernel library not built" in out and "cuzk warmup" in out, out[-3000:]
    assert "cc: no such compiler here" in out
    assert not wheel.name.endswith("-none-any.whl")  # the library is this platform's
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "cuzk/native/lib/NOT-BUILT" in names
        assert "no such compiler" in z.read("cuzk/native/lib/NOT-BUILT").decode()
        assert not [n for n in names if n.endswith(".so")]
    site = _install(tmp_path, wheel)
    assert (site / "cuzk" / "native" / "lib" / "NOT-BUILT").exists()

    c = FIXTURES / "toyhash"
    v = _run(
        site,
        ["-m", "cuzk.console", "verify", c / "verification_key.json", c / "public_0.json"]
        + [c / "proof_0.json"],
        tmp_path / "xdg",
    )
    assert v.returncode == 0 and "OK" in v.stdout, v.stderr
    look = "from cuzk import native; native.enable(); print(native.library('bn254'))"
    said = []
    for _ in range(2):
        p = _run(site, ["-c", look], tmp_path / "xdg")
        assert p.returncode == 0 and p.stdout.strip() == "None", p.stderr
        said.append(p.stderr)
    assert "(bn254) is not built here (" in said[0] and "cc: no such compiler here" in said[0]
    assert "`cuzk warmup`" in said[0] and said[1] == ""


def test_no_build_asked_gives_a_pure_wheel(tmp_path):
    """CUZK_BUILD_NATIVE=0: no library, no note, no hint: a pure-Python wheel."""
    wheel, out = _wheel(tmp_path, _sdist(tmp_path), CUZK_BUILD_NATIVE="0")
    assert wheel.name.endswith("-py3-none-any.whl")
    assert "native kernel library" not in out
    with zipfile.ZipFile(wheel) as z:
        assert not [n for n in z.namelist() if n.startswith("cuzk/native/lib/")]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="no C compiler")
def test_the_installed_library_serves_prove_with_no_warmup(tmp_path):
    """A wheel built from the sdist with BN254's library (the build compiles every kernel:
    a minute or more): installed, `cuzk prove` finds the library in the package, imports no
    numba and writes a valid proof; nothing is built or looked for elsewhere first."""
    wheel, out = _wheel(tmp_path, _sdist(tmp_path), CUZK_BUILD_NATIVE="bn254")
    assert "native kernel library built for bn254" in out, out[-3000:]
    with zipfile.ZipFile(wheel) as z:
        libs = [n for n in z.namelist() if n.startswith("cuzk/native/lib/")]
    assert any(n.startswith("cuzk/native/lib/kernels-bn254-") for n in libs), libs
    assert any(n.startswith("cuzk/native/lib/runtime-") for n in libs), libs
    site = _install(tmp_path, wheel)

    c = FIXTURES / "toyhash"
    outs = [tmp_path / "proof.json", tmp_path / "public.json"]
    p = _run(
        site,
        ["-m", "cuzk.console", "prove", c / "circuit.zkey", c / "witness_0.wtns", *outs],
        tmp_path / "xdg",
        "-X",
        "importtime",
    )
    assert p.returncode == 0, p.stderr[-3000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if "|" in line]
    assert "cuzk.native" in imported
    assert not [m for m in imported if m.split(".")[0] in ("numba", "llvmlite")]
    assert "not built here" not in p.stderr
    from cuzk.groth16.verifier import verify_files

    assert verify_files(c / "verification_key.json", outs[1], outs[0])


def test_an_installed_library_of_another_key_is_named_once(tmp_path, monkeypatch, capsys):
    """The install's folder holds a library of another key (built for another CPU, Python or
    source): the first look for the library says so once, with how to build it; a library
    in the cache folder, or $CUZK_NATIVE_DIR set, says nothing."""
    from cuzk import native

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "kernels-bn254-0000000000000000.so").write_bytes(b"")
    monkeypatch.setattr(native, "INSTALLED", lib)
    for var in ("CUZK_NATIVE_DIR", "CUZK_NATIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    try:
        with native.used():
            for _ in range(2):
                native.forget()
                assert native.library("bn254") is None
            err = capsys.readouterr().err
            assert err.count("is not built here") == 1, err
            assert "built for another CPU, Python or source" in err and "cuzk warmup" in err
            (tmp_path / "cache" / "native" / native.HINT_SHOWN).unlink()
            monkeypatch.setenv("CUZK_NATIVE_DIR", str(tmp_path / "cache" / "native"))
            native.forget()
            assert native.library("bn254") is None
            assert capsys.readouterr().err == ""
    finally:
        native.forget()
