"""A drawn frame: fixed-width plain-text lines with named styles carried separately.

The renderer never emits escape codes. Each line is exactly `width` characters; its styles
are (start, end, style) spans painted in order over a line-wide base style, so the same frame
can become plain text (tests, `--once` into a pipe), ANSI text (`--once` on a terminal) or
curses attributes (the live screen) without re-rendering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# style name -> ANSI SGR parameters. The curses shell maps the same names to colour pairs
# (cuzk/top/app.py); keep the two tables' keys in step.
ANSI_SGR: dict[str, str] = {
    "bold": "1",
    "dim": "2",
    "header": "7",  # section column headers: reverse video, like htop
    "title": "1;36",
    "key": "1;36",
    "idle": "2",
    "busy": "1;32",  # proving / synthesizing
    "finalizing": "1;35",
    "dead": "1;31",
    "stale": "1;33;41",  # heartbeat older than the stale threshold
    "warn": "1;33",
    "bad": "1;31",
    "good": "32",
    "bar": "32",
    "bar_mid": "33",
    "bar_high": "31",
    "p_pending": "2",
    "p_synthesizing": "36",
    "p_synth_done": "33",
    "p_gpu": "1;32",
    "p_finalizing": "35",
    "p_done": "32",
    "p_failed": "1;31",
}

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (what gpustat-style golden tests compare without)."""
    return _ANSI_RE.sub("", text)


@dataclass(frozen=True)
class Frame:
    """One screen: `height` lines of exactly `width` characters, plus their style spans."""

    width: int
    height: int
    lines: tuple[str, ...]
    styles: tuple[tuple[tuple[int, int, str], ...], ...]
    scroll: int = 0  # pipeline scroll offset after clamping to what fits
    page: int = 0  # pipeline rows visible (PgUp/PgDn step)
    pipelines: int = 0  # pipeline rows in total

    def text(self) -> str:
        """Plain text, trailing blanks removed from every line."""
        return "\n".join(line.rstrip() for line in self.lines) + "\n"

    def ansi(self) -> str:
        """Text with ANSI colour codes, for `--once` on a terminal."""
        out = []
        for line, spans in zip(self.lines, self.styles, strict=True):
            # trailing blanks go, except under a line-wide style (a reverse-video header)
            wide = any(a == 0 and b >= self.width for a, b, _ in spans)
            out.append(_ansi_line(line if wide else line.rstrip(), spans))
        return "\n".join(out) + "\n"


def _ansi_line(line: str, spans) -> str:
    # Resolve each column's style stack (base first, later spans on top) into SGR runs.
    n = len(line)
    cell = [()] * n
    for start, end, style in spans:
        for i in range(max(0, start), min(n, end)):
            cell[i] = cell[i] + (style,)
    parts, i = [], 0
    while i < n:
        j = i
        while j < n and cell[j] == cell[i]:
            j += 1
        codes = ";".join(ANSI_SGR[s] for s in cell[i] if s in ANSI_SGR)
        chunk = line[i:j]
        parts.append(f"\x1b[0;{codes}m{chunk}\x1b[0m" if codes else chunk)
        i = j
    return "".join(parts)


@dataclass
class Line:
    """A line under construction: text segments with optional styles, then fit to a width."""

    base: str | None = None
    parts: list[tuple[str, str | None]] = field(default_factory=list)

    def add(self, text: str, style: str | None = None) -> Line:
        if text:
            self.parts.append((text, style))
        return self

    def __len__(self) -> int:
        return sum(len(t) for t, _ in self.parts)

    def fit(self, width: int) -> tuple[str, tuple[tuple[int, int, str], ...]]:
        """Cut at `width`, pad with blanks, and return (text, spans)."""
        spans: list[tuple[int, int, str]] = []
        if self.base:
            spans.append((0, width, self.base))
        text, pos = [], 0
        for chunk, style in self.parts:
            if pos >= width:
                break
            chunk = chunk[: width - pos]
            if style:
                spans.append((pos, pos + len(chunk), style))
            text.append(chunk)
            pos += len(chunk)
        return "".join(text).ljust(width), tuple(spans)


def build(lines: list[Line], width: int, height: int, **meta) -> Frame:
    """Fit `lines` into a width x height frame (extra lines dropped, missing ones blank)."""
    lines = list(lines[:height]) + [Line() for _ in range(height - len(lines))]
    fitted = [line.fit(width) for line in lines]
    return Frame(width, height, tuple(t for t, _ in fitted), tuple(s for _, s in fitted), **meta)
