"""cuzk's build backend: setuptools' own, and for a wheel (not an editable install) also
what setup.py's build of the native kernel library imports (numba, llvmlite, numpy, at the
versions setup.cfg installs), unless CUZK_BUILD_NATIVE=0 asks for no build."""

import configparser
import os
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the backend's hooks)

NATIVE_BUILD_NEEDS = ("numba", "llvmlite", "numpy")


def _native_build_requires() -> list[str]:
    if os.environ.get("CUZK_BUILD_NATIVE", "1").strip() == "0":
        return []
    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parent.parent / "setup.cfg")
    wanted = []
    for line in cfg["options"]["install_requires"].splitlines():
        req = line.split("#", 1)[0].strip()
        name = req.split(">", 1)[0].split("<", 1)[0].split("=", 1)[0].strip()
        if name in NATIVE_BUILD_NEEDS:
            wanted.append(req)
    return wanted


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _native_build_requires()
