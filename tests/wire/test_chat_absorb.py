"""``ChatStreamDecoder.absorb`` (the probe's bulk path) against ``feed`` (the general path).

The general path is the one the conformance recordings check; ``absorb`` must leave exactly
its state for any stream and any split, and the bulk path must really run on the uniform
runs it exists for (``bulk_events``). The streams mix the two uniform shapes with every kind
of payload that must not be taken in bulk: escapes, quotes, control bytes, other keys,
``content: null``, spaces after colons, tool calls, finish, usage, errors, ``[DONE]``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.errors import ReasonwireError
from reasonwire.wire.chat._stream import ChatStreamDecoder

TOP = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _event(delta: dict[str, Any], *, spaced: bool = False, **choice: Any) -> bytes:
    body = dict(TOP, choices=[{"index": 0, "delta": delta, **choice}])
    sep = (", ", ": ") if spaced else (",", ":")
    return (
        b"data: "
        + json.dumps(body, ensure_ascii=False, separators=sep).encode("utf-8", "surrogatepass")
        + b"\n\n"
    )


plain = st.text(st.characters(blacklist_characters='"\\', min_codepoint=32), max_size=12)
anything = st.text(max_size=12)  # quotes, backslashes, control characters, surrogates...

payloads = st.one_of(
    plain.map(lambda s: _event({"content": s})),
    plain.map(lambda s: _event({"reasoning_content": s})),
    plain.map(lambda s: _event({"reasoning_content": s, "content": None})),
    anything.map(lambda s: _event({"content": s})),
    anything.map(lambda s: _event({"reasoning_content": s})),
    plain.map(lambda s: _event({"content": s}, spaced=True)),
    plain.map(lambda s: _event({"content": s}, logprobs=None)),
    plain.map(lambda s: _event({"reasoning": s})),
    plain.map(lambda s: _event({"role": "assistant", "content": s})),
    plain.map(lambda s: _event({"tool_calls": [{"index": 0, "function": {"arguments": s}}]})),
    st.just(_event({}, finish_reason="stop")),
    st.just(b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'),
    st.just(b": keep-alive\n\n"),
    st.just(b"data: [DONE]\n\n"),
    st.just(b'data: {"error":{"message":"overloaded"}}\n\n'),
    plain.map(
        lambda s: (
            b'data: {"choices":[{"delta":{"content":"'
            + s.encode("utf-8", "surrogatepass")
            + b'"}}]}\r\n\r\n'
        )
    ),
)


def _run(body: bytes, cuts: list[int], bulk: bool) -> tuple[Any, int]:
    dec = ChatStreamDecoder()
    points = [0, *sorted({c for c in cuts if 0 < c < len(body)}), len(body)]
    outcome: Any
    try:
        for a, b in itertools.pairwise(points):
            if bulk:
                dec.absorb(body[a:b])
            else:
                dec.feed(body[a:b])
        outcome = ("done", dec.close()[-1].turn)  # type: ignore[attr-defined]
    except ReasonwireError as exc:
        outcome = (type(exc).__name__, str(exc).split(":")[0], dec.partial_turn())
    return (outcome, dec.assembled()), dec.bulk_events


@settings(max_examples=400, deadline=None)
@given(
    first=st.sampled_from([_event({"role": "assistant", "content": ""}), b""]),
    events=st.lists(payloads, max_size=40),
    cuts=st.lists(st.integers(min_value=1, max_value=4000), max_size=12),
)
def test_absorb_leaves_feeds_state(first: bytes, events: list[bytes], cuts: list[int]) -> None:
    body = first + b"".join(events)
    general, _ = _run(body, cuts, bulk=False)
    absorbed, _ = _run(body, cuts, bulk=True)
    assert absorbed == general


def test_uniform_runs_are_taken_in_bulk() -> None:
    words = ["step", "é", "😀", "naïve", "x" * 30, ""]
    run = [
        _event({"reasoning_content": w} if i % 3 else {"content": w})
        for i, w in enumerate(itertools.islice(itertools.cycle(words), 12000))
    ]
    body = _event({"role": "assistant", "content": ""}) + b"".join(run)
    body += _event({}, finish_reason="stop") + b"data: [DONE]\n\n"
    for size in (len(run[0]), 4096, 65536):  # one event per chunk, and batches
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        general, bulk = ChatStreamDecoder(), ChatStreamDecoder()
        for c in chunks:
            general.feed(c)
            bulk.absorb(c)
        assert bulk.assembled() == general.assembled()
        assert bulk.bulk_events > 0.85 * len(run), size  # all but the first and last chunk
        assert general.bulk_events == 0


@pytest.mark.parametrize(
    "odd",
    [
        _event({"content": 'say "hi"'}),  # an escaped quote in the middle
        _event({"content": "a\nb"}),  # an escaped newline
        _event({"content": "x"}, spaced=True),  # same field, other bytes
        b'data: {"choices":[{"index":0,"delta":{"content":"a"}}],"x":"' + b"q" * 3 + b'"}\n\n',
        _event({"content": "\x01"}, spaced=False).replace(b"\\u0001", b"\x01"),  # raw control
        _event({"content": "é"}).replace("é".encode(), b"\xc3"),  # invalid UTF-8
        _event({"content": "Q"}).replace(b"Q", b'a","role":"x'),  # quotes: another key
        # prefix and suffix sharing their quote (one fewer), beside a middle with one more
        _event({"content": "Q"}).replace(b'Q"', b"")
        + _event({"content": 'a"b'.replace('"', "Q")}).replace(b"Q", b'"'),
        _event({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),  # no shape
    ],
)
def test_a_batch_with_one_odd_payload_takes_the_general_path(odd: bytes) -> None:
    warm = _event({"role": "assistant", "content": ""}) + _event({"content": "learn"}) * 4
    batch = _event({"content": "a"}) * 10 + odd + _event({"content": "b"}) * 10
    general, bulk = ChatStreamDecoder(), ChatStreamDecoder()
    outcomes = []
    for dec, step in ((general, general.feed), (bulk, bulk.absorb)):
        step(warm)
        try:
            step(batch)
            outcomes.append(("ok", dec.assembled()))
        except ReasonwireError as exc:
            outcomes.append((type(exc).__name__, dec.partial_turn()))
    assert outcomes[0] == outcomes[1]
    assert bulk.bulk_events == 0  # learned, but the odd batch was declined whole


def test_one_field_in_two_shapes_keeps_its_order() -> None:
    """Two learned shapes of ``content`` (a short chunk and one with ids), interleaved in a
    batch: taking each shape's pieces together gave "01" for "1" then "0"."""
    first = _event({"role": "assistant", "content": ""})
    short = b'data: {"choices":[{"delta":{"content":"%s"}}]}\r\n\r\n'
    body = first + short % b"" + _event({"content": ""}) + _event({"content": "1"}) + short % b"0"
    for cuts in ([], [329], [len(first) + 40]):
        for bulk in (False, True):
            (outcome, state), _ = _run(body, cuts, bulk)
            assert (
                outcome[0] == "TruncatedStream"
                and state["choices"][0]["message"]["content"] == "10"
            )
