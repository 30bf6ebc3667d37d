"""The widget kit of `cuzk top`: tables that fit their columns, panels that shrink, bars.

Nothing here knows the status snapshot; render.py builds the screen from these. Everything
draws into frame.Line (text with style spans), never to a terminal.

    Col, fit_columns   which columns fit a width (by priority) and how the spare cells spread
    Table              the fitted header and rows of (text, style) cells
    Rows               table rows built on demand: only those that fit are drawn
    Section            a panel: header + rows, shrinking to "+k more" or a one-line summary,
                       laid out side by side (columns_for, side_by_side) when tall and wide
    util_bar           a utilisation bar cell
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.top import fmt
from cuzk.top.frame import Line


@dataclass
class Col:
    """A table column: `prio` says which columns go first when narrow (highest first);
    `flex` is how many extra cells the column may take when there is room."""

    title: str
    width: int
    align: str = "<"
    prio: int = 0
    flex: int = 0
    grow: int = 0  # flexible columns grow in (grow, position) order


def fit_columns(cols: list[Col], width: int) -> list[tuple[int, int]]:
    """(column index, cell width) of the columns that fit in `width`, in display order."""
    keep = list(range(len(cols)))

    def used():
        return sum(cols[i].width for i in keep) + max(0, len(keep) - 1)

    while keep and used() > width:
        keep.remove(max(keep, key=lambda i: (cols[i].prio, i)))
    widths = {i: cols[i].width for i in keep}
    spare = width - used()
    for i in sorted(keep, key=lambda i: (cols[i].grow, i)):
        extra = min(spare, cols[i].flex)
        widths[i] += extra
        spare -= extra
    return [(i, widths[i]) for i in keep]


def _cell(text, w: int, align: str) -> str:
    text = fmt.cut(text, w)
    return text.rjust(w) if align == ">" else text.ljust(w)


class Table:
    """Fits columns once, then draws the header and rows of (text, style) cells."""

    def __init__(self, cols: list[Col], width: int):
        self.cols, self.width = cols, width
        self.fit = fit_columns(cols, width)
        self.plan = [(i, w, cols[i].align == ">") for i, w in self.fit]

    def header(self) -> Line:
        line = Line(base="header")
        line.add(" ".join(_cell(self.cols[i].title, w, self.cols[i].align) for i, w in self.fit))
        return line

    def row(self, cells: list) -> Line:
        """cells: one entry per column (text, or (text, style), or a callable(width) -> list
        of (text, style) for columns drawn glyph by glyph). Unstyled neighbours are merged
        into one segment: fewer segments, fewer curses calls (this is the per-frame hot path)."""
        parts: list = []
        plain: list[str] = []
        sep = False
        for i, w, right in self.plan:
            if sep:
                plain.append(" ")
            sep = True
            cell = cells[i]
            kind = cell.__class__
            if kind is str:
                text, style = cell, None
            elif kind is tuple:
                text, style = cell
            elif callable(cell):
                if plain:
                    parts.append(("".join(plain), None))
                    plain = []
                drawn = 0
                for text, style in cell(w):
                    text = text[: w - drawn]
                    if text:
                        parts.append((text, style))
                        drawn += len(text)
                if drawn < w:
                    plain.append(" " * (w - drawn))
                continue
            else:
                text, style = ("" if cell is None else str(cell)), None
            if len(text) > w:
                text = text[: w - 1] + "~"
            text = text.rjust(w) if right else text.ljust(w)
            if style:
                if plain:
                    parts.append(("".join(plain), None))
                    plain = []
                parts.append((text, style))
            else:
                plain.append(text)
        if plain:
            parts.append(("".join(plain), None))
        return Line(parts=parts)


@dataclass
class Section:
    """Rows of one panel. lines(n) gives at most n lines: a summary line when n == 1,
    else the header, as many rows as fit, and a '+k more' line when some do not. With
    `columns` > 1 the rows are laid out side by side, column by column (like `ls`), each
    table `col_width` wide: a machine with 64 workers fits a wide terminal."""

    header: Line
    rows: Rows
    summary: Line
    what: str = "rows"  # noun for the '+k more' line
    columns: int = 1
    col_width: int = 0

    def want(self) -> int:
        return 1 + -(-len(self.rows) // self.columns)

    def lines(self, n: int) -> list[Line]:
        if n <= 0:
            return []
        if n == 1:
            return [self.summary]
        total, k = len(self.rows), self.columns
        if total <= (n - 1) * k:
            per_col = -(-total // k)
            shown, more = total, None
        else:
            per_col = n - 2
            shown = per_col * k
            more = Line().add(f"  ... +{total - shown} more {self.what}", "dim")
        rows = self.rows[:shown]
        if k == 1:
            body = rows
        else:
            body = [
                side_by_side(
                    [rows[c * per_col + r] for c in range(k) if c * per_col + r < len(rows)],
                    self.col_width,
                )
                for r in range(per_col)
            ]
        header = self.header if k == 1 else side_by_side([self.header] * k, self.col_width)
        return [header, *body, *([more] if more else [])]


def side_by_side(lines: list[Line], width: int, gap: int = 2) -> Line:
    """Lines as columns `width` wide, `gap` blanks apart (a line-wide base style becomes the
    style of its own column only)."""
    out = Line()
    for c, line in enumerate(lines):
        if c:
            out.add(" " * gap)
        used = 0
        for text, style in line.parts:
            text = text[: width - used]
            out.add(text, style or line.base)
            used += len(text)
        out.add(" " * (width - used), line.base)
    return out


def columns_for(n_items: int, width: int, min_width: int, room: int) -> tuple[int, int]:
    """(columns, column width) for a panel of n_items rows whose table needs min_width: side
    by side only when one column would take more than a quarter of the `room` rows."""
    k = 1
    if n_items > max(6, room // 4):
        k = max(1, min((width + 2) // (min_width + 2), -(-n_items // 4)))
    return k, (width - 2 * (k - 1)) // k


class Rows:
    """Table rows drawn on demand: only the rows that fit on screen are ever built (a board
    may have hundreds of slots and jobs; a frame shows a screenful)."""

    def __init__(self, items, draw, empty: str | None = None):
        self.items, self.draw, self.empty = list(items), draw, empty

    def __len__(self) -> int:
        return len(self.items) or (1 if self.empty else 0)

    def __getitem__(self, k):
        if not self.items:
            rows = [Line().add(f"  ({self.empty})", "dim")] if self.empty else []
            return rows[k]
        if isinstance(k, slice):
            return [self.draw(it) for it in self.items[k]]
        return self.draw(self.items[k])

    def __iter__(self):
        return iter(self[:])


def count_states(items, key="state") -> str:
    counts: dict[str, int] = {}
    for it in items:
        counts[it.get(key) or "?"] = counts.get(it.get(key) or "?", 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def util_bar(u):
    """A [=====   ] bar drawn to its cell's width; u in 0..1, or None for no figure."""

    def draw(width):
        inner = max(0, width - 2)
        if u is None:
            return [("[", "dim"), ("-".center(inner), "dim"), ("]", "dim")]
        style = "bar" if u < 0.5 else "bar_mid" if u < 0.85 else "bar_high"
        return [("[", None), (fmt.bar(u, inner), style), ("]", None)]

    return draw


def num(x) -> float:
    """x as a float for sorting; inf for what is not a number (sorts last)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("inf")
