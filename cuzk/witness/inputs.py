"""Circuit inputs as snarkjs reads them: names hashed with FNV-1a, values flattened to F_r.

snarkjs (`wtns calculate`, `groth16 fullprove`) reads input.json with JSON.parse, turns
strings of digits or 0x-hex into BigInts (ffjavascript's unstringifyBigInts), flattens each
signal's nested arrays depth first (circom_runtime's flatArray: row-major, the order of the
signal's elements) and reduces every value with BigInt(v) mod p, negative values to p - |v|.
The same rules here, with two deliberate differences (docs/witness.md): a JSON integer above
2^53 keeps its exact value (JavaScript rounds it to a double first), and an empty string is
an error (BigInt("") is 0).
"""

from __future__ import annotations

import math
import re

from cuzk.arith.constants import FR_MODULUS  # BN254's scalar field r (imports no numpy)
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


def to_integer(value, where: str, path=None) -> int:
    """One input value as JavaScript's BigInt(value) reads it (after unstringifyBigInts)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)  # the double's exact value, as BigInt(number)
        raise NotANumber(path, f"{where} = {value!r} is not an integer")
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.fullmatch(text):
            return int(text, 0) if text[:2].lower() in ("0x", "0o", "0b") else int(text)
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


def flatten(name: str, value, path=None, prime: int = FR_MODULUS) -> list[int]:
    """A signal's values in signal order (nested arrays depth first), each reduced mod prime."""
    out: list[int] = []

    def walk(v, where):
        if isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{where}[{i}]")
        else:
            out.append(to_integer(v, where, path) % prime)

    walk(value, name)
    return out


def parse_inputs(obj, path=None, prime: int = FR_MODULUS) -> list[tuple[str, list[int]]]:
    """[(signal name, flat values mod prime)] in the order of the JSON object's keys."""
    if not isinstance(obj, dict):
        raise WitnessError(
            path, f"the inputs must be a JSON object of signal names, not {type(obj).__name__}"
        )
    return [(name, flatten(name, value, path, prime)) for name, value in obj.items()]


def read_inputs(path, prime: int = FR_MODULUS) -> list[tuple[str, list[int]]]:
    """Read and parse an input JSON file (see parse_inputs)."""
    import json

    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise WitnessError(path, f"not valid JSON: {e}") from None
    return parse_inputs(obj, path, prime)
