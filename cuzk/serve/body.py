"""Request bodies read as they arrive: witness uploads decoded in chunks into a spool file.

A job upload is JSON with each witness as a base64 string, `{"data": "d3RucwIA..."}`: 4/3 of
the file's size. Parsed whole, one 200 MB body became the body bytes, a joined copy, a 200 MB
str, the decoded bytes and their copy, all at once. JsonBody instead scans the bytes as they
come off the socket and sends the value of every `"data"` key, decoded base64 chunk by chunk,
straight into one temporary file per request; what remains (the "skeleton": keys, paths,
options) is small and parsed with json.loads at the end, each "data" value replaced by an
Upload that reads its bytes back from the file once (one allocation of the decoded size).

The scanner only needs to know whether it is inside a string: outside, it looks for the next
'"' (bytes.find, C speed); inside, for the next '"' or '\\'. A string is a "data" value when
the previous complete string was exactly `data` and only `:` and whitespace lie between. The
structure of the JSON is left to json.loads, so a malformed body is refused exactly as before.
"""

from __future__ import annotations

import binascii
import json
import re
import secrets
import tempfile

from cuzk.formats.json_limits import MAX_DEPTH, MAX_DIGITS, nested_deeper_than

SKELETON_LIMIT = 8 * 1024**2  # JSON outside the "data" strings (keys, paths, options)
_DATA_KEY = re.compile(rb"\s*:\s*")


class BodyTooLarge(ValueError):
    """The skeleton outgrew SKELETON_LIMIT."""


class Upload:
    """One decoded "data" string: `length` bytes at `offset` of the request's spool file, or
    not valid base64 (`valid` False)."""

    __slots__ = ("_spool", "offset", "length", "valid")

    def __init__(self, spool, offset: int, length: int, valid: bool):
        self._spool, self.offset, self.length, self.valid = spool, offset, length, valid

    def read(self) -> bytes:
        """The decoded bytes (one allocation of their size)."""
        import os

        fd = self._spool.fileno()
        out = os.pread(fd, self.length, self.offset)
        if len(out) != self.length:  # pread may return less for big reads; finish in pieces
            parts, got = [out], len(out)
            while got < self.length:
                more = os.pread(fd, self.length - got, self.offset + got)
                if not more:
                    raise OSError(f"upload spool ended after {got} of {self.length} bytes")
                parts.append(more)
                got += len(more)
            out = b"".join(parts)
        return out

    def __repr__(self):
        return f"Upload({self.length} bytes{'' if self.valid else ', not valid base64'})"


class _Base64Sink:
    """base64 decoded in pieces into a file, exactly as base64.b64decode(validate=True)
    (binascii's strict mode) decodes the whole string: pieces of whole quanta are decoded as
    they come; everything from the quantum before the first '=' on is kept and decoded at the
    end."""

    PAD_TAIL_MAX = 4096  # characters after the first '=': more is refused as not base64

    def __init__(self, spool):
        self.spool = spool
        self.offset = spool.tell()
        self.pending = b""  # fewer than 4 characters, or the padded end
        self.valid = True
        self.length = 0

    def feed(self, chars: bytes) -> None:
        if not self.valid or not chars:
            return
        s = self.pending + chars if self.pending else chars
        pad = s.find(b"=")
        if pad >= 0:  # keep the quantum before the padding too: strict mode judges both
            n = max(0, (pad & ~3) - 4)
            head, self.pending = s[:n], s[n:]
            if len(self.pending) > self.PAD_TAIL_MAX:
                self.valid = False
                return
        else:
            n = len(s) & ~3
            head, self.pending = s[:n], s[n:]
        if head:
            self._decode(head)

    def invalidate(self) -> None:
        self.valid = False

    def close(self) -> Upload:
        if self.valid and self.pending:
            self._decode(self.pending)
        self.pending = b""
        return Upload(self.spool, self.offset, self.length if self.valid else 0, self.valid)

    def _decode(self, chars: bytes) -> None:
        try:
            data = binascii.a2b_base64(chars, strict_mode=True)
        except binascii.Error:
            self.valid = False
            return
        self.spool.write(data)
        self.length += len(data)


class JsonBody:
    """Feed a JSON body in chunks; `finish()` returns (skeleton bytes, uploads by marker).

    The skeleton holds each "data" string as a marker string "\\u0000upload:<nonce>:<i>"
    (the nonce is random per request, so a client cannot name another's upload); parse it
    with `loads()`.
    """

    OUT, STR, DATA = 0, 1, 2

    def __init__(self, spool_dir: str | None = None):
        self.skeleton = bytearray()
        self.state = self.OUT
        self.escape = False  # the previous byte inside a string was a backslash
        self.last_str = (-1, -1)  # skeleton offsets of the last kept string's quotes
        self.nonce = secrets.token_hex(8)
        self.uploads: list[Upload] = []
        self._spool_dir = spool_dir
        self._spool = None
        self._sink: _Base64Sink | None = None

    # ------------------------------------------------------------------ scanning
    def feed(self, chunk: bytes) -> None:
        pos, n = 0, len(chunk)
        while pos < n:
            if self.state == self.OUT:
                q = chunk.find(b'"', pos)
                if q < 0:
                    self._keep(chunk[pos:])
                    return
                self._keep(chunk[pos:q])
                pos = q + 1
                if self._is_data_value():
                    self._begin_upload()
                else:
                    self.state = self.STR
                    self.str_start = len(self.skeleton)
                    self._keep(b'"')
            elif self.state == self.STR:
                if self.escape:  # the byte after a backslash, whatever it is
                    self._keep(chunk[pos : pos + 1])
                    pos += 1
                    self.escape = False
                    continue
                end = _next_special(chunk, pos)
                if end < 0:
                    self._keep(chunk[pos:])
                    return
                self._keep(chunk[pos : end + 1])
                pos = end + 1
                if chunk[end] == 0x5C:  # backslash
                    self.escape = True
                else:
                    self.state = self.OUT
                    self.last_str = (self.str_start, len(self.skeleton) - 1)
            else:  # DATA: base64 characters straight to the sink
                if self.escape:
                    # JSON may write '/' as '\/'; any other escape is not base64
                    if chunk[pos] == 0x2F:
                        self._sink.feed(b"/")
                    else:
                        self._sink.invalidate()
                    pos += 1
                    self.escape = False
                    continue
                end = _next_special(chunk, pos)
                if end < 0:
                    self._sink.feed(chunk[pos:])
                    return
                self._sink.feed(chunk[pos:end])
                pos = end + 1
                if chunk[end] == 0x5C:
                    self.escape = True
                else:
                    self.uploads.append(self._sink.close())
                    self._sink = None
                    self.state = self.OUT
                    self.last_str = (-1, -1)

    def _keep(self, b) -> None:
        if len(self.skeleton) + len(b) > SKELETON_LIMIT:
            raise BodyTooLarge(f"the JSON outside witness data exceeds {SKELETON_LIMIT} bytes")
        self.skeleton += b

    def _is_data_value(self) -> bool:
        start, end = self.last_str
        if start < 0 or self.skeleton[start : end + 1] != b'"data"':
            return False
        return _DATA_KEY.fullmatch(self.skeleton, end + 1) is not None

    def _begin_upload(self) -> None:
        if self._spool is None:
            self._spool = tempfile.TemporaryFile(dir=self._spool_dir, prefix="cuzk-upload-")
        self._sink = _Base64Sink(self._spool)
        self._keep(b'"\\u0000upload:%s:%d"' % (self.nonce.encode(), len(self.uploads)))
        self.state = self.DATA
        self.last_str = (-1, -1)

    # ------------------------------------------------------------------ result
    def finish(self) -> tuple[bytes, dict[str, Upload]]:
        """(skeleton, {marker: Upload}); a string cut off by the end of the body stays in the
        skeleton as an unterminated string, so json.loads reports the body as malformed."""
        if self.state == self.DATA:
            self._sink.close()
            self._keep(b'"')  # keep the damage visible: the marker is followed by junk
            self._keep(b"<truncated>")
        if self._spool is not None:
            self._spool.flush()
        prefix = f"\x00upload:{self.nonce}:"
        return bytes(self.skeleton), {prefix + str(i): u for i, u in enumerate(self.uploads)}

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def _next_special(chunk: bytes, pos: int) -> int:
    """Index of the next '"' or '\\' in chunk from pos, or -1."""
    q = chunk.find(b'"', pos)
    b = chunk.find(b"\\", pos, q if q >= 0 else len(chunk))
    return b if b >= 0 else q


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(
            f"a number of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS}; "
            "circuit inputs are taken mod r, which has 77)"
        )
    return int(text)


def loads(skeleton: bytes, uploads: dict[str, Upload]):
    """json.loads of a skeleton, each "data" marker replaced by its Upload. ValueError (a
    JSONDecodeError, nesting deeper than MAX_DEPTH, a number of more than MAX_DIGITS digits)
    for a body that is not one (cuzk.formats.json_limits)."""
    if nested_deeper_than(skeleton, MAX_DEPTH):
        raise ValueError(f"arrays or objects nested more than {MAX_DEPTH} deep")
    if not uploads:
        return json.loads(skeleton, parse_int=_parse_int)

    def hook(d: dict) -> dict:
        v = d.get("data")
        if isinstance(v, str) and v in uploads:
            d["data"] = uploads[v]
        return d

    return json.loads(skeleton, object_hook=hook, parse_int=_parse_int)
