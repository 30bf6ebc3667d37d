"""Runs `cuzk top` from parsed options: choose the source (the board, or a server's GET /status),
then the JSON, text or curses mode."""

from __future__ import annotations

import os
import shutil
import sys

from cuzk.top.app import INTERVAL_FLOOR, Sampler, run_curses, run_json, run_text
from cuzk.top.source import AttachError, BoardSource, ServerSource, choose
from cuzk.top.telemetry import Telemetry


def run(
    *,
    board: str | None = None,
    server: str | None = None,
    token_file: str | None = None,
    interval: float = 1.0,
    iterations: int | None = None,
    once: bool = False,
    as_json: bool = False,
    no_color: bool = False,
    width: int | None = None,
    height: int | None = None,
    source=None,
) -> int:
    """Exit status of one `cuzk top` run. The snapshots come from `server`'s GET /status when
    given (with the token in `token_file`), else from the board. `source` (anything with
    read() -> snapshot dict) replaces both, for tests and demos."""
    interval = max(INTERVAL_FLOOR, float(interval))
    if source is None:
        try:
            if server:
                source = ServerSource(server, token_file).open()
            else:
                source = BoardSource(choose(board))
        except AttachError as err:
            print(f"cuzk top: {err}", file=sys.stderr)
            return err.code
    try:
        if as_json:
            return run_json(source, interval=interval, iterations=iterations)
        telemetry = Telemetry()
        try:
            sampler = Sampler(source, telemetry)
            color = not no_color and "NO_COLOR" not in os.environ
            if once or not (sys.stdout.isatty() and sys.stdin.isatty()):
                # A frame as text: the terminal's size, or 80x24 into a pipe or file;
                # colour only when stdout is a terminal.
                tty = sys.stdout.isatty()
                size = _terminal_size() if tty else os.terminal_size((80, 24))
                # on a terminal, one line less than the screen: the prompt after the frame
                # must not push its header off
                lines = size.lines - 1 if tty and once else size.lines
                return run_text(
                    sampler,
                    interval=interval,
                    iterations=iterations,
                    once=once,
                    width=width or size.columns,
                    height=height or lines,
                    color=color and tty,
                )
            return run_curses(sampler, interval=interval, iterations=iterations, color=color)
        finally:
            telemetry.close()
    finally:
        close = getattr(source, "close", None)
        if close:
            close()


def _terminal_size() -> os.terminal_size:
    """The terminal's size from the kernel (LINES/COLUMNS may be stale), else the usual."""
    try:
        return os.get_terminal_size(sys.stdout.fileno())
    except (OSError, ValueError):
        return shutil.get_terminal_size((80, 24))
