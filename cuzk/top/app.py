"""The `cuzk top` shell: sample snapshots on a clock, keep the view state, hand frames to a screen.

    source.read() ──► Sampler (previous snapshot, rate window, GPU telemetry) ──► Derived
                                                                                   │
    keys ──► View (sort, scroll, pause, help) ──► render(snapshot, w, h, ...) ◄───┘
                                                        │
                              curses screen (live) / stdout text (--once, a pipe)

Why curses (standard library): no dependency to install on a prover machine, it runs in any
terminal that has a terminfo entry (ssh, tmux, screen, a serial console), and it reports
terminal resizes as KEY_RESIZE. The frame itself is computed by the pure renderer, so curses
only paints lines and attributes.
"""

from __future__ import annotations

import curses
import json
import os
import signal
import sys
import time
from dataclasses import dataclass

from cuzk.top.derive import Derived, RateWindow
from cuzk.top.frame import ANSI_SGR, Frame
from cuzk.top.render import SORTS, render
from cuzk.top.source import BoardGone

INTERVAL_FLOOR = 0.1


class Sampler:
    """Reads a snapshot and derives what needs the previous one (utilisation, rates)."""

    def __init__(self, source, telemetry=None):
        self.source, self.telemetry = source, telemetry
        self.prev: dict | None = None
        self.rates = RateWindow()

    def sample(self) -> tuple[dict, Derived]:
        snap = self.source.read()
        self.rates.add(snap)
        gpus = self.telemetry.sample() if self.telemetry is not None else ()
        derived = Derived.between(self.prev, snap, self.rates, gpus)
        self.prev = snap
        return snap, derived


@dataclass
class View:
    """What the keys change. key() returns False when the viewer should quit."""

    sort: str = SORTS[0]
    scroll: int = 0
    paused: bool = False
    show_help: bool = False
    page: int = 1  # pipeline rows on screen, from the last frame

    def key(self, k: int) -> bool:
        if k in (ord("q"), ord("Q")):
            return False
        if self.show_help:  # any other key closes the help
            self.show_help = False
            return True
        if k in (ord("?"), ord("h")):
            self.show_help = True
        elif k in (ord("p"), ord("P")):
            self.paused = not self.paused
        elif k in (ord("s"), ord("S")):
            self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        elif k in (curses.KEY_UP, ord("k")):
            self.scroll = max(0, self.scroll - 1)
        elif k in (curses.KEY_DOWN, ord("j")):
            self.scroll += 1
        elif k == curses.KEY_PPAGE:
            self.scroll = max(0, self.scroll - self.page)
        elif k == curses.KEY_NPAGE:
            self.scroll += self.page
        elif k in (curses.KEY_HOME, ord("g")):
            self.scroll = 0
        elif k in (curses.KEY_END, ord("G")):
            self.scroll = 1 << 30  # render() clamps to the last page
        return True

    def frame(self, snap: dict, derived: Derived, width: int, height: int) -> Frame:
        f = render(
            snap,
            width,
            height,
            derived=derived,
            sort=self.sort,
            scroll=self.scroll,
            paused=self.paused,
            show_help=self.show_help,
        )
        if not self.show_help:
            self.scroll, self.page = f.scroll, f.page
        return f


def run_text(
    sampler: Sampler,
    *,
    interval: float,
    iterations: int | None,
    once: bool,
    width: int,
    height: int,
    color: bool,
    out=None,
) -> int:
    """Plain frames to a stream: `--once`, or any run whose stdout is not a terminal.
    `--once` waits one interval between two samples so UTIL and rates have a value."""
    out = out or sys.stdout
    view = View()
    try:
        if once:
            sampler.sample()
            time.sleep(interval)
            iterations = 1
        n = 0
        while iterations is None or n < iterations:
            if n:
                time.sleep(interval)
            snap, derived = sampler.sample()
            f = view.frame(snap, derived, width, height)
            if n:
                out.write("\f\n" if not once else "")
            out.write(f.ansi() if color else f.text())
            out.flush()
            n += 1
    except BoardGone as gone:
        print(f"cuzk top: {gone}", file=sys.stderr)
        return gone.code
    except KeyboardInterrupt:
        pass
    return 0


def run_json(source, *, interval: float, iterations: int | None, out=None) -> int:
    """The snapshot JSON, one line per sample (one sample by default), serialised as the
    `GET /status` body is (compact separators; NaN refused, since it is not JSON)."""
    out = out or sys.stdout
    try:
        for n in range(iterations or 1):
            if n:
                time.sleep(interval)
            out.write(json.dumps(source.read(), separators=(",", ":"), allow_nan=False) + "\n")
            out.flush()
    except BoardGone as gone:
        print(f"cuzk top: {gone}", file=sys.stderr)
        return gone.code
    return 0


def run_curses(sampler: Sampler, *, interval: float, iterations: int | None, color: bool) -> int:
    """The live screen. Returns the exit status; prints why it stopped when the board went
    (or the server stopped answering)."""
    message = []
    # The terminal's own size (ioctl), not LINES/COLUMNS from the environment: shells and
    # multiplexers export those at whatever size they once had, and ncurses prefers them
    # (curses.use_env(False) does not help: Python's initscr() has already run setupterm).
    for var in ("LINES", "COLUMNS"):
        os.environ.pop(var, None)
    # SIGTERM unwinds like Ctrl-C, so curses.wrapper restores the terminal on the way out.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        curses.wrapper(_loop, sampler, interval, iterations, color, message)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    if message:
        print(f"cuzk top: {message[0]}", file=sys.stderr)
        return getattr(message[0], "code", 0)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _loop(stdscr, sampler: Sampler, interval: float, iterations, color: bool, message: list):
    curses.curs_set(0)
    stdscr.keypad(True)
    painter = Painter(color)
    view = View()
    snap = derived = None
    samples = 0
    next_at = time.monotonic()
    dirty = True
    while True:
        now = time.monotonic()
        if snap is None or (not view.paused and now >= next_at):
            try:
                snap, derived = sampler.sample()
            except BoardGone as gone:
                message.append(gone)
                return
            samples += 1
            next_at = max(next_at + interval, now + interval / 2)  # keep the cadence
            dirty = True
        elif view.paused and now >= next_at:
            # paused: no sampling, but a board that went away still ends the viewer
            alive = getattr(sampler.source, "alive", None)
            if alive is not None and not alive():
                message.append(
                    f"cuzk status board {getattr(sampler.source, 'name', '')!r} "
                    "went away (cuzk serve stopped)"
                )
                return
            next_at = now + interval
        if dirty:
            height, width = stdscr.getmaxyx()
            painter.paint(stdscr, view.frame(snap, derived, width, height))
            dirty = False
        if iterations is not None and samples >= iterations:
            return
        wait = next_at - time.monotonic() if not view.paused else interval
        stdscr.timeout(max(1, int(wait * 1000)))
        k = stdscr.getch()
        if k == -1:
            continue
        if k == curses.KEY_RESIZE:
            curses.update_lines_cols()
            painter.invalidate()
            dirty = True
            continue
        if not view.key(k):
            return
        dirty = True


class Painter:
    """Paints a Frame with curses attributes derived from the same style table as ANSI."""

    # ANSI colour number -> curses colour
    COLOURS = {
        0: curses.COLOR_BLACK,
        1: curses.COLOR_RED,
        2: curses.COLOR_GREEN,
        3: curses.COLOR_YELLOW,
        4: curses.COLOR_BLUE,
        5: curses.COLOR_MAGENTA,
        6: curses.COLOR_CYAN,
        7: curses.COLOR_WHITE,
    }

    def __init__(self, color: bool):
        self.color = color and curses.has_colors()
        if self.color:
            curses.start_color()
            try:
                curses.use_default_colors()
                self.default = -1
            except curses.error:
                self.default = curses.COLOR_BLACK
        self.pairs: dict[tuple[int, int], int] = {}
        self.attrs = {name: self._attr(sgr) for name, sgr in ANSI_SGR.items()}
        self._shown: Frame | None = None  # what the screen holds now

    def invalidate(self) -> None:
        """Forget what is on screen (after a resize): the next paint redraws every line."""
        self._shown = None

    def _attr(self, sgr: str) -> int:
        attr, fg, bg = 0, None, None
        for code in (int(c) for c in sgr.split(";")):
            if code == 1:
                attr |= curses.A_BOLD
            elif code == 2:
                attr |= curses.A_DIM
            elif code == 7:
                attr |= curses.A_REVERSE
            elif 30 <= code <= 37:
                fg = self.COLOURS[code - 30]
            elif 40 <= code <= 47:
                bg = self.COLOURS[code - 40]
        if not self.color or (fg is None and bg is None):
            if not self.color and bg is not None:
                attr |= curses.A_REVERSE  # keep "stale" visible in monochrome
            return attr
        key = (self.default if fg is None else fg, self.default if bg is None else bg)
        if key not in self.pairs:
            n = len(self.pairs) + 1
            if n >= curses.COLOR_PAIRS:
                return attr
            curses.init_pair(n, *key)
            self.pairs[key] = n
        return attr | curses.color_pair(self.pairs[key])

    def paint(self, stdscr, frame: Frame) -> None:
        """Draw the lines that differ from the frame on screen. Every line is full width, so
        rewriting a line replaces it; curses then sends the terminal only changed cells."""
        old = self._shown
        if old is None or (old.width, old.height) != (frame.width, frame.height):
            stdscr.erase()
            old = None
        attrs = self.attrs
        for y, (line, spans) in enumerate(zip(frame.lines, frame.styles, strict=True)):
            if old is not None and old.lines[y] == line and old.styles[y] == spans:
                continue
            # Spans from Line.fit: an optional line-wide base first, then disjoint spans in
            # order; the cells between them take the base attribute.
            base, pos = 0, 0
            for start, end, style in spans:
                attr = attrs.get(style, 0)
                if start == 0 and end >= frame.width:
                    base = attr
                    continue
                if start > pos:
                    _put(stdscr, y, pos, line[pos:start], base)
                _put(stdscr, y, start, line[start:end], base | attr)
                pos = end
            if pos < len(line):
                _put(stdscr, y, pos, line[pos:], base)
        stdscr.noutrefresh()
        curses.doupdate()
        self._shown = frame


def _put(stdscr, y, x, text, attr):
    try:
        stdscr.addstr(y, x, text, attr)
    except curses.error:
        pass  # writing the bottom-right cell moves the cursor off screen; the text is drawn
