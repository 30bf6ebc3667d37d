"""json.loads and json.dumps for the thin client, without importing the json package.

Importing json costs the thin client (`cuzk prove --server`, cuzk.client) ~8 ms of its ~25 ms
budget (issue 36): json.decoder and json.encoder compile regular expressions at import, which
brings `re` and `enum`. The parsing and the string escaping are C functions of the `_json`
extension either way; these two functions call them directly:

- ``loads`` runs the C scanner json.loads runs, made with the same settings as json's default
  decoder, on a document that starts with an object or an array;
- ``dumps`` writes dicts with str keys, lists, tuples, str, int, float, bool and None (the
  exact types, not subclasses), as json.dumps with the same ``indent`` would.

Anything else (a document that does not parse, or starts otherwise; another type; a missing
``_json``) is handed to the json package, imported then, so the result, or the error, is
always json's own. tests/test_lean_json.py compares the two on generated documents.
"""

from __future__ import annotations

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    _json = None


class _Decoder:
    """The settings json.JSONDecoder() hands its C scanner (json.decoder, defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


_scan = _json.make_scanner(_Decoder()) if _json is not None else None
_WHITESPACE = " \t\n\r"  # json.decoder's WHITESPACE


def _decoded(s) -> str | None:
    """s as json.loads would read it when it plainly opens an object or array, else None."""
    if isinstance(s, str):
        return s if s[:1] in ("{", "[") else None
    if isinstance(s, (bytes, bytearray)) and s[:1] in (b"{", b"[") and s[1:2] != b"\x00":
        return bytes(s).decode("utf-8", "surrogatepass")  # json.detect_encoding's utf-8
    return None


def loads(s):
    """json.loads(s): the same object, or json's error."""
    if _scan is not None:
        try:
            text = _decoded(s)
            if text is not None:
                obj, end = _scan(text, 0)
                if not text[end:].strip(_WHITESPACE):
                    return obj
        except Exception:  # json words it (it parses again)
            pass
    import json

    return json.loads(s)


class _Other(Exception):
    """A value this module does not write itself: json.dumps writes the document."""


def _float(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


def _write(o, out: list, indent: int | None, level: int) -> None:
    t = type(o)
    if t is str:
        out.append(_json.encode_basestring_ascii(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif t is int:
        out.append(int.__repr__(o))
    elif t is float:
        out.append(_float(o))
    elif t is list or t is tuple or t is dict:
        if not o:
            out.append("{}" if t is dict else "[]")
            return
        if level > 200:  # deep (or circular): json's own recursion and wording
            raise _Other
        if indent is None:
            sep, close = ", ", ""
        else:
            pad = "\n" + " " * (indent * (level + 1))
            sep, close = "," + pad, "\n" + " " * (indent * level)
        out.append(("{" if t is dict else "[") + ("" if indent is None else pad))
        first = True
        if t is dict:
            for k, v in o.items():
                if type(k) is not str:
                    raise _Other
                if not first:
                    out.append(sep)
                first = False
                out.append(_json.encode_basestring_ascii(k))
                out.append(": ")
                _write(v, out, indent, level + 1)
        else:
            for v in o:
                if not first:
                    out.append(sep)
                first = False
                _write(v, out, indent, level + 1)
        out.append(close + ("}" if t is dict else "]"))
    else:
        raise _Other


def dumps(obj, indent: int | None = None) -> str:
    """json.dumps(obj, indent=indent): the same text, or json's error."""
    if _json is not None and (indent is None or type(indent) is int):
        out: list[str] = []
        try:
            _write(obj, out, indent, 0)
            return "".join(out)
        except _Other:
            pass
    import json

    return json.dumps(obj, indent=indent)
