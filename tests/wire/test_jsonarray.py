"""Incremental decoder for a progressively delivered JSON array (Gemini without alt=sse)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire.jsonarray import JSONArrayDecoder


def decode(chunks: Sequence[bytes]) -> list[Any]:
    dec = JSONArrayDecoder()
    out: list[Any] = []
    for c in chunks:
        out.extend(dec.feed(c))
    dec.close()
    return out


ELEMENTS = [
    {"candidates": [{"content": {"parts": [{"text": "héllo 世界 🧠", "thought": True}]}}]},
    {"candidates": [{"content": {"parts": [{"thoughtSignature": "EpEg+/=="}]}}], "n": -1.5e3},
    {"usageMetadata": {"promptTokenCount": 12}, "s": 'a]b,c["}{'},
]
# Gemini's own framing: "[{...}\r\n,\r\n{...}\r\n]"
SAMPLE = (
    "[" + "\r\n,\r\n".join(json.dumps(e, ensure_ascii=False) for e in ELEMENTS) + "]"
).encode()


def test_every_split() -> None:
    assert decode([SAMPLE]) == ELEMENTS
    assert decode([SAMPLE[i : i + 1] for i in range(len(SAMPLE))]) == ELEMENTS
    for i in range(1, len(SAMPLE)):
        assert decode([SAMPLE[:i], SAMPLE[i:]]) == ELEMENTS, i


def test_elements_arrive_as_soon_as_complete() -> None:
    dec = JSONArrayDecoder()
    first = json.dumps(ELEMENTS[0]).encode()
    assert dec.feed(b"[" + first[:-1]) == []
    assert dec.feed(first[-1:]) == [ELEMENTS[0]]
    assert dec.feed(b",") == []
    assert not dec.ended
    assert dec.feed(b"]") == []
    assert dec.ended
    dec.close()


def test_numbers_at_a_chunk_edge_wait_for_more_digits() -> None:
    assert decode([b"[1", b"23, 4", b"5]"]) == [123, 45]
    assert decode([b"[true", b", null, 1.", b"5e", b"2]"]) == [True, None, 150.0]


def test_truncated_and_malformed() -> None:
    with pytest.raises(TruncatedStream):
        decode([b'[{"a": 1},'])
    with pytest.raises(TruncatedStream):
        decode([b""])
    with pytest.raises(MalformedBody, match="undecodable array element"):
        decode([b'[{"a": 1}, {"b": tru'])
    with pytest.raises(MalformedBody, match="expected a JSON array"):
        decode([b'{"a": 1}'])
    with pytest.raises(MalformedBody, match="after the closing"):
        decode([b"[1] trailing"])
    with pytest.raises(MalformedBody, match="not UTF-8"):
        decode([b'["\xff\xfe\xfd\xfc\xfb"]'])
    with pytest.raises(MalformedBody, match="UTF-8"):
        decode(['["🧠'.encode()[:-1]])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    elements=st.lists(json_values, max_size=6),
    seps=st.sampled_from([",", ", ", "\r\n,\r\n", "\n,"]),
    cuts=st.lists(st.floats(min_value=0, max_value=1), max_size=10),
)
def test_random_arrays_random_chunking(elements: list[Any], seps: str, cuts: list[float]) -> None:
    raw = ("[" + seps.join(json.dumps(e, ensure_ascii=False) for e in elements) + "]").encode()
    points = sorted({int(c * len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode(chunks) == elements
