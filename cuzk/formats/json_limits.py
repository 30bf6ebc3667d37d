"""Limits on JSON from outside (input files, request bodies): file size, nesting depth and
integer length.

A JSON file is read whole before it is parsed, so its size is bounded first (`read_limited`
reads at most the limit and one byte): `/dev/zero`, a FIFO that never ends or a huge file
given as proof.json is refused in one line instead of growing the process until MemoryError.
The limits fit the largest real files with room: a verification key holds one G1 point (about
160 bytes as snarkjs writes it) per public signal, public.json about 80 bytes per signal, a
proof under 2 KiB; circuit inputs are bounded as the daemon bounds a request body.

json.loads recurses in C once per nested array or object, bounded only by the interpreter's
recursion limit, which a library may raise (py_ecc sets it to 100,000 on import): 10^5 nested
brackets then overflow the C stack and kill the process instead of raising RecursionError.
And int() of n decimal digits costs O(n^2), which is why Python refuses more than 4,300 by
default (a ValueError that names no field). So text from outside is measured before it is
parsed (`nested_deeper_than`), and long integers are left to the caller's parse_int hook.
"""

from __future__ import annotations

from itertools import accumulate

# Deepest nesting of arrays and objects read. Circuit inputs nest as deep as a signal has
# dimensions (a handful); request bodies three or four levels.
MAX_DEPTH = 512
# Longest decimal integer read (Python's default int_max_str_digits): 55 times the 77 digits
# of BN254's r.
MAX_DIGITS = 4300

MiB = 1 << 20
# Largest JSON file read, by what it holds (bytes).
MAX_PROOF_BYTES = 1 * MiB  # proof.json: three points, under 2 KiB
MAX_PUBLIC_BYTES = 64 * MiB  # public.json: ~80 bytes a signal, some 800,000 signals
MAX_VK_BYTES = 64 * MiB  # verification_key.json: ~160 bytes a public signal (IC), ~400,000
MAX_INPUT_BYTES = 256 * MiB  # input.json: as `cuzk serve`'s max_body, the most it takes


class TooLarge(ValueError):
    """A JSON file longer than the limit for what it holds; str() says so in one line."""


def read_limited(path, limit: int) -> bytes:
    """The bytes of the file `path`; TooLarge when it holds more than `limit` bytes. At most
    limit + 1 bytes are read, whatever the file is (a device, a FIFO, a growing file)."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        size = f"{limit // MiB} MiB" if limit % MiB == 0 else f"{limit} bytes"
        raise TooLarge(f"more than {size}, the most read of such a file")
    return data


_KEEP = b'[]{}"'
_DROP = bytes(c for c in range(256) if c not in _KEEP)
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 for an opening bracket, -1 closing


def nested_deeper_than(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects in the JSON `text` nest more than `limit` deep (brackets
    inside strings do not count). Linear, in C-speed passes (translate, split, accumulate);
    free when the text holds `limit` brackets or fewer."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    # escaped backslashes, then escaped quotes, so that every '"' left opens or closes a string
    data = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _DROP)
    outside = b"".join(data.split(b'"')[0::2])  # the brackets between strings
    steps = memoryview(outside.translate(_STEP)).cast("b")
    return max(accumulate(steps, initial=0)) > limit
