"""Circuit inputs as snarkjs reads them: names hashed with FNV-1a, values flattened to integers.

snarkjs (`wtns calculate`, `groth16 fullprove`) reads input.json with JSON.parse, turns
strings of digits or 0x-hex into BigInts (ffjavascript's unstringifyBigInts), flattens each
signal's nested arrays depth first (circom_runtime's flatArray: row-major, the order of the
signal's elements) and reduces every value with BigInt(v) mod p, negative values to p - |v|,
p being the prime the circuit's wasm was compiled for (BN254's or BLS12-381's r). Here
the values stay exact integers (at most MAX_DIGITS digits) until the calculator, which knows
its circuit's prime, reduces them (cuzk.witness.calculator); `prime=` reduces them at once.
The same rules here, with deliberate differences (docs/witness.md): a JSON integer above
2^53 keeps its exact value (JavaScript rounds it to a double first), an empty string is an
error (BigInt("") is 0), a decimal integer of more than MAX_DIGITS digits is an error (its
conversion would take quadratic time), and the file may be UTF-16 or UTF-32 with a
byte-order mark. Hostile files (arrays or objects nested more than MAX_DEPTH deep, bytes
that are not text) are refused with one line naming the file, never a traceback
(cuzk.formats.json_limits).
"""

from __future__ import annotations

import math
import re

from cuzk.formats.json_limits import (
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_INPUT_BYTES,
    TooLarge,
    nested_deeper_than,
    read_limited,
)
from cuzk.witness.errors import NotANumber, WitnessError

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1

# BigInt(string) after trimming: a signed decimal, or 0x / 0o / 0b digits without a sign.
_INTEGER = re.compile(r"[+-]?[0-9]+|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def fnv1a64(name: str) -> int:
    """FNV-1a 64-bit hash of a signal name over its UTF-16 code units, as circom_runtime's
    fnvHash (which XORs `charCodeAt`); for ASCII names, over its bytes as circom does."""
    h = FNV64_OFFSET
    units = name.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = (h * FNV64_PRIME) & MASK64
    return h


class LongNumber:
    """A JSON number of more than MAX_DIGITS digits, left unconverted by loads_inputs."""

    __slots__ = ("digits",)

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))


def _too_long(where: str, path, digits: int):
    return NotANumber(
        path,
        f"{where} has {digits} digits: at most {MAX_DIGITS} are read "
        "(values are taken mod r, which has 77)",
    )


def to_integer(value, where: str, path=None) -> int:
    """One input value as JavaScript's BigInt(value) reads it (after unstringifyBigInts)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, LongNumber):
        raise _too_long(where, path, value.digits)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)  # the double's exact value, as BigInt(number)
        raise NotANumber(path, f"{where} = {value!r} is not an integer")
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.fullmatch(text):
            if text[:2].lower() in ("0x", "0o", "0b"):
                return int(text, 0)  # linear in its length
            if len(text.lstrip("+-")) > MAX_DIGITS:
                raise _too_long(where, path, len(text.lstrip("+-")))
            return int(text)
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise NotANumber(
            path, f"{where} = {shown!r} is not a number (decimal or 0x-hex integer expected)"
        )
    kind = (
        "null"
        if value is None
        else "an object"
        if isinstance(value, dict)
        else type(value).__name__
    )
    raise NotANumber(path, f"{where} is {kind}, not a number")


def flatten(name: str, value, path=None, prime: int | None = None) -> list[int]:
    """A signal's values in signal order (nested arrays depth first), each reduced mod prime
    when one is given (else exact, negative ones too). Iterative, so that no nesting the JSON
    parser accepts can exhaust the stack; the field is named ("m[1][0]") only in an error, as
    repr() if it is not printable (a message is one line)."""
    if not (name.isprintable() and name):
        name = repr(name)
    if not isinstance(value, list):
        v = to_integer(value, name, path)
        return [v if prime is None else v % prime]
    out: list[int] = []
    stack = [[value, 0]]  # (array, index of its next element)
    while stack:
        top = stack[-1]
        array, i = top
        if i == len(array):
            stack.pop()
            continue
        top[1] = i + 1
        v = array[i]
        if isinstance(v, list):
            stack.append([v, 0])
            continue
        try:
            out.append(to_integer(v, name, path))
        except NotANumber:
            where = name + "".join(f"[{a[1] - 1}]" for a in stack)
            out.append(to_integer(v, where, path))  # raises, naming the element
    return out if prime is None else [v % prime for v in out]


def parse_inputs(obj, path=None, prime: int | None = None) -> list[tuple[str, list[int]]]:
    """[(signal name, flat values)] in the order of the JSON object's keys; the values exact
    integers, or reduced mod `prime` when one is given."""
    if not isinstance(obj, dict):
        raise WitnessError(
            path, f"the inputs must be a JSON object of signal names, not {type(obj).__name__}"
        )
    return [(name, flatten(name, value, path, prime)) for name, value in obj.items()]


def loads_inputs(data: bytes | str, path=None):
    """The JSON value of an input file's bytes (or text); WitnessError naming `path`, in one
    line, for anything that is not JSON: bytes that are not UTF-8 (UTF-16 or UTF-32 with a
    byte-order mark are read too), bad syntax, arrays or objects nested more than MAX_DEPTH
    deep (measured before parsing: json.loads would recurse in C). A decimal number longer
    than MAX_DIGITS is left as a LongNumber for to_integer to name."""
    import json

    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        encoding = json.detect_encoding(data)
        try:
            data = data.decode(encoding)
        except UnicodeDecodeError as e:
            name = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
            raise WitnessError(
                path,
                f"not {name} text (byte {e.object[e.start]:#04x} at offset {e.start}): JSON "
                "is read as UTF-8, or UTF-16 / UTF-32 with a byte-order mark",
            ) from None
    if data.startswith("\ufeff"):
        data = data[1:]
    if nested_deeper_than(data, MAX_DEPTH):
        raise WitnessError(
            path, f"not readable: arrays or objects nested more than {MAX_DEPTH} deep"
        )
    try:
        return json.loads(data, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise WitnessError(path, f"not valid JSON: {e}") from None
    except RecursionError:  # within MAX_DEPTH, but deep in a thread's stack
        raise WitnessError(path, "not readable: arrays or objects nested too deeply") from None


def _parse_int(text: str):
    return LongNumber(text) if len(text.lstrip("-")) > MAX_DIGITS else int(text)


def read_inputs(path, prime: int | None = None) -> list[tuple[str, list[int]]]:
    """Read and parse an input JSON file (see loads_inputs, parse_inputs); one larger than
    MAX_INPUT_BYTES is refused (WitnessError) after reading no more than that."""
    try:
        data = read_limited(path, MAX_INPUT_BYTES)
    except TooLarge as e:
        raise WitnessError(path, f"too large for circuit inputs ({e})") from None
    return parse_inputs(loads_inputs(data, path), path, prime)
