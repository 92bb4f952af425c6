"""The fast JSON loader must give exactly what json.loads gives, or json.loads's own error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.errors import FastLoadRefused
from reasonwire.wire.jsonload import StreamGuard, loads

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_same_value_and_key_order_as_stdlib(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    for doc in (text, text.encode("utf-8")):
        got = loads(doc)
        want = json.loads(doc)
        assert got == want
        assert json.dumps(got) == json.dumps(want)  # same key order, same types (int vs float)


def test_integers_beyond_64_bits_stay_exact() -> None:
    big = 123456789012345678901234567890
    assert loads(f'{{"n": {big}}}'.encode()) == {"n": big}
    assert isinstance(loads(b"[18446744073709551616]")[0], int)


def test_inputs_orjson_refuses_fall_back_to_stdlib() -> None:
    assert loads("[NaN]")[0] != loads("[NaN]")[0]  # NaN, as json.loads gives it
    assert loads('"\\ud800"') == json.loads('"\\ud800"')  # lone surrogate
    assert loads(b"\xef\xbb\xbf[1]") == json.loads(b"\xef\xbb\xbf[1]") == [1]  # BOM on bytes


def test_malformed_gives_the_stdlib_error() -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        loads(b'{"a": ')
    with pytest.raises(json.JSONDecodeError) as std:
        json.loads(b'{"a": ')
    assert str(ours.value) == str(std.value)


def test_stream_guard_switches_to_exact_loader_on_a_long_digit_run_split_across_chunks() -> None:
    guard = StreamGuard()
    fast = guard.loader(b'data: {"n": 1234567890')
    assert fast(b"[1]") == [1]
    checked = guard.loader(b"123456789012}\n\n")  # the 22-digit run straddles the border
    with pytest.raises(FastLoadRefused):
        checked(b'{"n": 1234567890123456789012}')
    assert checked(b'{"n": 1}') == {"n": 1}
