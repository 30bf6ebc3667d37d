"""Waiting in tests: poll a condition until it holds, never sleep a guessed time.

A loaded machine makes everything slower, never out of order: so tests wait for the state
they need (with a generous timeout that only bounds a hang) instead of asserting how long it
took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    pred: Callable[[], Any],
    timeout: float = 20.0,
    what: str | Callable[[], str] = "the condition",
    every: float = 0.01,
) -> Any:
    """Call `pred` every `every` s until it returns something truthy, and return that.

    After `timeout` s raise AssertionError naming `what` (a string, or a function giving one
    at that moment, e.g. to show the last thing seen).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(every)
    raise AssertionError(
        f"timed out after {timeout} s waiting for {what() if callable(what) else what}"
    )
