"""cuzk.lean_json (the thin client's JSON, without the json package's import) against json:
the same text from dumps and the same objects from loads on generated documents, json's own
errors on what it refuses, and the types it does not write itself handed to json."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk import lean_json

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 300), max_value=1 << 300)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
DOCS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


def same(a, b) -> bool:
    """Equal as JSON values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=300, deadline=None)
@given(DOCS, st.sampled_from([None, 0, 1, 2, 4]))
def test_dumps_writes_json_text_and_loads_reads_it_back(doc, indent):
    text = lean_json.dumps(doc, indent=indent)
    assert text == json.dumps(doc, indent=indent)
    for s in (text, text.encode(), f"{text} \n\t", bytearray(text.encode())):
        assert same(lean_json.loads(s), json.loads(s))


BAD = [
    "",
    " ",
    "[1,]",
    "{'a': 1}",
    '{"a": 1} x',
    "[1] [2]",
    '{"a": "\\x"}',
    '["\x01"]',  # a control character: json's strict decoder refuses it
    "\ufeff[1]",
    b"[1, 2",
    b"\xff\xfe",
    b"[\xff]",
]


@pytest.mark.parametrize("text", BAD, ids=range(len(BAD)))
def test_loads_refuses_what_json_refuses_with_its_error(text):
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(type(expected.value)) as got:
        lean_json.loads(text)
    assert str(got.value) == str(expected.value)


# documents loads hands to json (not an object or array first; a BOM; UTF-16): json's answer
OTHER = ['"a"', " 1", "null", "[1]", b"\xef\xbb\xbf[1]", "[1]".encode("utf-16"), " [1] "]


@pytest.mark.parametrize("text", OTHER, ids=range(len(OTHER)))
def test_loads_reads_what_json_reads(text):
    assert same(lean_json.loads(text), json.loads(text))


class Label(str):
    pass


OTHER_TYPES = [
    {1: "int key"},
    {True: 1, None: 2, 1.5: 3},
    [Label("a str subclass")],
    {"a": (1, [2.5, {"b": None}])},
    [1] * 3,
]


@pytest.mark.parametrize("obj", OTHER_TYPES, ids=range(len(OTHER_TYPES)))
@pytest.mark.parametrize("indent", [None, 1, "\t"])
def test_dumps_hands_other_types_to_json(obj, indent):
    assert lean_json.dumps(obj, indent=indent) == json.dumps(obj, indent=indent)


def test_dumps_refuses_what_json_refuses():
    loop: list = []
    loop.append(loop)
    for bad in ({"a": object()}, {"a": {1, 2}}, loop, b"bytes"):
        with pytest.raises((TypeError, ValueError)) as expected:
            json.dumps(bad)
        with pytest.raises(type(expected.value)) as got:
            lean_json.dumps(bad)
        assert str(got.value) == str(expected.value)
