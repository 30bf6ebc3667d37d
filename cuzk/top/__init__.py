"""`cuzk top`: a live terminal view of the status board (pure renderer, curses shell)."""

from cuzk.top.derive import Derived, RateWindow, utilisation
from cuzk.top.frame import Frame, strip_ansi
from cuzk.top.render import SORTS, render

__all__ = ["Derived", "Frame", "RateWindow", "SORTS", "render", "strip_ansi", "utilisation"]
