"""The Anthropic decoder's run path (a batch of one learned delta shape taken at once) gives
what the delta rules say, written here: thinking pieces as reasoning deltas into the thinking
block, then text pieces into the text block, an empty piece adding no event, pieces holding
an escape or a quote, non-ASCII text, the signature delta and block boundaries inside a
batch, at any split."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done, ReasoningDelta, TextDelta

D = get_dialect("anthropic")


def ev(payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload, separators=(",", ":"))
    return f"event: {payload['type']}\ndata: {data}\n\n".encode()


def delta(index: int, kind: str, key: str, piece: str) -> bytes:
    return ev({"type": "content_block_delta", "index": index,
               "delta": {"type": kind, key: piece}})  # fmt: skip


THINK = [f" step {i}" if i != 100 else "" for i in range(300)]  # an empty piece inside a run
THINK += [' a "quote"', " back\\slash", " ü", ""]
TEXT = [f" w{i}" if i != 150 else "" for i in range(300)] + ["", " é", " tab\there"]
SIG = "EqQBCkYIBxgCKkBsig" + "A" * 40
STREAM = b"".join(
    [
        ev({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": None, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        ev({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        *(delta(0, "thinking_delta", "thinking", t) for t in THINK),
        delta(0, "signature_delta", "signature", SIG),
        ev({"type": "content_block_stop", "index": 0}),
        ev({"type": "content_block_start", "index": 1,
            "content_block": {"type": "text", "text": ""}}),
        *(delta(1, "text_delta", "text", t) for t in TEXT[:300]),
        ev({"type": "content_block_delta", "index": 1,  # another key beside the string
            "delta": {"type": "text_delta", "text": " tail", "x_note": "b"}}),
        *(delta(1, "text_delta", "text", t) for t in TEXT[300:]),
        ev({"type": "content_block_stop", "index": 1}),
        ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 700}}),
        ev({"type": "message_stop"}),
    ]
)  # fmt: skip


@pytest.mark.parametrize("step", [1, 13, 512, 4096, 65536, len(STREAM)])
def test_runs_give_the_rule_s_events_and_turn(step: int) -> None:
    dec = D.stream_decoder()
    events: list[Any] = []
    for i in range(0, len(STREAM), step):
        events += dec.feed(STREAM[i : i + step])
    events += dec.close()
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == [t for t in THINK if t]
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        *(t for t in TEXT[:300] if t),
        " tail",
        *(t for t in TEXT[300:] if t),
    ]
    done = events[-1]
    assert isinstance(done, Done)
    assert D.replay(done.turn) == [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "".join(THINK), "signature": SIG},
        {"type": "text", "text": "".join(TEXT[:300]) + " tail" + "".join(TEXT[300:])},
    ]}]  # fmt: skip


def test_the_run_path_is_taken_on_long_runs() -> None:
    """Whether the path is taken (a learned shape), not how fast it is."""
    dec = D.stream_decoder()
    dec.feed(STREAM[: len(STREAM) // 4])
    assert dec._runs and dec._runs[0].key == "thinking"


def _opened() -> Any:
    """A decoder fed up to the text block's first delta (the text block open)."""
    dec = D.stream_decoder()
    at = STREAM.index(b'"text":" w0"')
    dec.feed(STREAM[: STREAM.rindex(b"event: ", 0, at)])
    return dec


def test_a_payload_cut_inside_its_string_in_a_run_is_malformed_not_a_piece() -> None:
    from reasonwire.errors import MalformedBody

    dec = _opened()
    run = b"".join(delta(1, "text_delta", "text", f" w{i}") for i in range(20))
    dec.feed(run)  # learned
    cut = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
    cut += b'"delta":{"type":"text_delta","text":"ab}}\n\n'
    with pytest.raises(MalformedBody):
        dec.feed(run + cut)


def test_a_piece_that_is_also_a_key_teaches_no_shape() -> None:
    """Hostile: the text "delta" is also the name of a key before it; a shape cut there
    would take a later event with that key renamed for a text piece. The renamed event is
    what it is: a delta event without a delta object."""
    from reasonwire.errors import MalformedBody

    dec = _opened()
    dec.feed(delta(1, "text_delta", "text", "delta"))  # the only event its shape could come from
    renamed = delta(1, "text_delta", "text", "delta").replace(b'"delta":{', b'"xyz":{', 1)
    with pytest.raises(MalformedBody, match="without a delta object"):
        dec.feed(renamed)
