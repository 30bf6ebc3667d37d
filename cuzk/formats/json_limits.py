"""Limits on JSON from outside (input files, request bodies): nesting depth and integer length.

json.loads recurses in C once per nested array or object, bounded only by the interpreter's
recursion limit, which a library may raise (py_ecc sets it to 100,000 on import): 10^5 nested
brackets then overflow the C stack and kill the process instead of raising RecursionError.
And int() of n decimal digits costs O(n^2), which is why Python refuses more than 4,300 by
default (a ValueError that names no field). So text from outside is measured before it is
parsed (`nested_deeper_than`), and long integers are left to the caller's parse_int hook.
"""

from __future__ import annotations

import re

# Deepest nesting of arrays and objects read. Circuit inputs nest as deep as a signal has
# dimensions (a handful); request bodies three or four levels.
MAX_DEPTH = 512
# Longest decimal integer read (Python's default int_max_str_digits): 55 times the 77 digits
# of BN254's r.
MAX_DIGITS = 4300

_STRING = {str: re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)}
_STRING[bytes] = re.compile(_STRING[str].pattern.encode(), re.S)
_NOT_BRACKET = {str: re.compile(r"[^\[\]{}]+"), bytes: re.compile(rb"[^\[\]{}]+")}
_OPEN = {str: ("[", "{"), bytes: (b"[", b"{")}


def nested_deeper_than(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects in the JSON `text` nest more than `limit` deep (brackets
    inside strings do not count). Linear; free when the text holds `limit` brackets or fewer."""
    kind = bytes if isinstance(text, (bytes, bytearray)) else str
    lb, lc = _OPEN[kind]
    if text.count(lb) + text.count(lc) <= limit:
        return False
    brackets = _NOT_BRACKET[kind].sub(kind(), _STRING[kind].sub(kind(), text))
    if kind is bytes:
        brackets = brackets.decode("ascii")
    depth = 0
    for c in brackets:
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False
