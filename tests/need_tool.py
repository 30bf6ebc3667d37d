"""What a test does when an outside tool it needs is missing: skip, or fail under CI.

The tools: tmux (a real `cuzk top` run), Debian's headless chromium and chromedriver (the web
panel), snarkjs / circom2 / node (the interop tests). Locally a missing tool skips the test
with the reason; with CUZK_REQUIRE_TOOLS=1 (as `.ci/run` sets) it fails the test with the
same reason, so a CI run cannot pass by skipping what it was meant to check.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENV = "CUZK_REQUIRE_TOOLS"


def tools_required() -> bool:
    """True when CUZK_REQUIRE_TOOLS is set to anything but "", "0", "no" or "false"."""
    return os.environ.get(REQUIRE_ENV, "").strip().lower() not in ("", "0", "no", "false")


def missing_tool(reason: str) -> NoReturn:
    """Skip the calling test (or fixture) for want of a tool; fail it under CUZK_REQUIRE_TOOLS."""
    if tools_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV} is set: a missing tool fails the run)", pytrace=False)
    pytest.skip(reason)
