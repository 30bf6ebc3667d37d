"""cuzk installs through setup.cfg; this file adds the build of the native kernel library.

A regular install (`pip install .`, a wheel built from the sdist) builds the library of each
curve (cuzk.native: the CPU proving kernels compiled ahead of time, so that `cuzk prove`
starts without Numba) into the package it installs, cuzk/native/lib, after the Python files
are in place: ``python -m cuzk.native.build --into ...`` run on those files, so the library's
key (a hash of the kernel sources, the CPU and the Python build) is the installed package's.
Its progress shows under ``pip install -v``; one line sums it up. A build that fails (no C
compiler, say) fails nothing: the install goes on without the library, leaves the reason in
cuzk/native/lib/NOT-BUILT, and the first command that would use it says once how to build it
(`cuzk warmup`). The build needs numba, llvmlite and numpy: the build backend (pyproject.toml,
build_support/cuzk_backend.py) asks for them for a wheel, not for an editable install.

CUZK_BUILD_NATIVE: unset or 1, every curve; 0, no build (a pure-Python wheel); else the
curves to build, e.g. ``bn254`` or ``bn254,bls12_381``. An editable install (`make install`)
never builds: its sources change under it (each edit of a kernel changes the key), and the
test suite builds BN254's library once where `cuzk warmup` would (tests/test_native.py).
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

CURVES = ("bn254", "bls12_381")


def native_curves() -> list[str]:
    """The curves CUZK_BUILD_NATIVE asks for."""
    asked = os.environ.get("CUZK_BUILD_NATIVE", "1").strip()
    if asked in ("", "1"):
        return list(CURVES)
    if asked == "0":
        return []
    return [c for c in asked.replace(",", " ").split() if c]


def say(line: str) -> None:
    print(f"cuzk: {line}", file=sys.stderr, flush=True)


def build_native(package_root: str, curves: list[str]) -> bool:
    """Build ``curves``' native libraries into package_root/cuzk/native/lib with the package
    found there; True when every one was built, else False with the reason in NOT-BUILT."""
    package_root = os.path.abspath(package_root)  # (the build runs in a folder of its own)
    lib = Path(package_root) / "cuzk" / "native" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    (lib / "NOT-BUILT").unlink(missing_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cuzk-native-build-") as cache:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
            "NUMBA_CACHE_DIR": cache,  # Numba's compilations of the build: thrown away
        }
        env.pop("CUZK_NATIVE_DIR", None)
        try:
            p = subprocess.Popen(
                [sys.executable, "-m", "cuzk.native.build", "--into", str(lib), *curves],
                cwd=cache,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            last = ""
            for line in p.stdout:  # the progress, as it comes (shown by pip install -v)
                print(line.rstrip(), file=sys.stderr, flush=True)
                last = line.strip() or last
            ok = p.wait() == 0
            why = last or f"exit status {p.returncode}"
        except OSError as e:
            ok, why = False, str(e)
    if ok:
        say(
            f"native kernel library built for {', '.join(curves)} in "
            f"{time.monotonic() - t0:.0f} s (cuzk/native/lib)"
        )
        return True
    why = why.removeprefix("cuzk: ")
    (lib / "NOT-BUILT").write_text(why + "\n")
    say(
        f"native kernel library not built ({why}); cuzk is installed and uses Numba's "
        "kernels until `cuzk warmup` (or `python -m cuzk.native.build`) builds it"
    )
    return False


class BuildPyWithNative(build_py):
    """build_py, then the native libraries into the built package (not for an editable
    install: see the module's doc)."""

    def run(self):
        super().run()
        curves = native_curves()
        if getattr(self, "editable_mode", False) or not curves:
            return
        build_native(self.build_lib, curves)


class NativeDistribution(Distribution):
    """A wheel that carries the native libraries is one of this platform and Python (the
    libraries are keyed on both): not a pure-Python wheel, unless no build is asked for."""

    def has_ext_modules(self):
        return bool(native_curves())


setup(cmdclass={"build_py": BuildPyWithNative}, distclass=NativeDistribution)
