"""Short human forms for byte counts, durations and rates (ASCII only, fixed widths)."""

from __future__ import annotations


def bytes_(n) -> str:
    """1.5 GiB -> '1.5G', 512 MiB -> '512M' (binary units, at most 5 characters below 1000 TiB)."""
    if n is None:
        return "-"
    n = float(n)
    for unit, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= scale:
            v = n / scale
            return f"{v:.1f}{unit}" if v < 100 else f"{v:.0f}{unit}"
    return f"{n:.0f}B"


def secs(s) -> str:
    """0.42 -> '0.4s', 75 -> '1m15s', 7500 -> '2h05m', 200000 -> '2d07h'; None -> '-'."""
    if s is None:
        return "-"
    s = max(0.0, float(s))
    if s < 10:
        return f"{s:.1f}s"
    if s < 60:
        return f"{s:.0f}s"
    m = int(s // 60)
    if m < 60:
        return f"{m}m{int(s % 60):02d}s"
    h = m // 60
    if h < 24:
        return f"{h}h{m % 60:02d}m"
    return f"{h // 24}d{h % 24:02d}h"


def rate(per_min) -> str:
    """Events per minute: 3.14 -> '3.1/m'; None (not yet known) -> '-/m'."""
    return "-/m" if per_min is None else f"{per_min:.1f}/m"


def pct(frac) -> str:
    return "-" if frac is None else f"{100 * frac:.0f}%"


def cut(text, width: int) -> str:
    """Fit text into width, marking a cut with '~' (ASCII, so any terminal locale works)."""
    text = "" if text is None else str(text)
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: width - 1] + "~"


def bar(frac, width: int, fill: str = "|") -> str:
    """A text gauge of `width` cells filled to frac (clamped to [0, 1])."""
    if width <= 0:
        return ""
    frac = 0.0 if frac is None else min(1.0, max(0.0, frac))
    k = int(round(frac * width))
    return fill * k + " " * (width - k)


def curve(name) -> str:
    """A key's curve as its files name it ("bn128", "bls12381") -> its usual name ("BN254",
    "BLS12-381"); another name as given; none -> '-'."""
    if not name:
        return "-"
    from cuzk.formats.curve import TITLES

    return TITLES.get(str(name), str(name))
