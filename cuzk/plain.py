"""Plain value classes for the modules a one-shot command imports (cuzk.formats.curve,
cuzk.groth16.verifier, cuzk.native.entries): what a frozen dataclass gives them (equality and
a hash over the fields, a repr, no assignment after __init__), without importing dataclasses,
which brings inspect, dis and tokenize: ~7-10 ms of a `cuzk prove` whose own cost is held to
0.08 s (issue 36).

A class lists its fields in ``FIELDS`` and sets them in its own ``__init__`` with
``self._set(name=value, ...)``.
"""

from __future__ import annotations


class Plain:
    FIELDS: tuple[str, ...] = ()

    def _set(self, **values) -> None:
        for name in self.FIELDS:
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r} of {type(self).__name__}")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r} of {type(self).__name__}")

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self.FIELDS)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self):
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS)
        return f"{type(self).__name__}({inner})"
