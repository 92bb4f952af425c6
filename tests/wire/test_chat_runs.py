"""The chat decoder's run path (a batch of one learned shape taken at once) gives the events
and turn the delta rules say, written here: reasoning pieces in order as reasoning deltas,
then content pieces as text deltas, an empty piece adding no event, a piece with an escape or
a quote, non-ASCII text, and the change from reasoning to text inside one batch, at any split."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done, ReasoningDelta, TextDelta

D = get_dialect("chat")


def ev(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    body: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "created": 1,
                            "model": "m", "choices": [{"index": 0, "delta": delta,
                                                       "finish_reason": finish}]}  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


THINK = [f" step {i}" for i in range(300)] + [' a "quote"', " back\\slash", " ü"]
TEXT = [f" w{i}" for i in range(300)] + ["", " é", " tab\there"]
STREAM = b"".join(
    [
        ev({"role": "assistant", "content": ""}),
        *(ev({"reasoning_content": t}) for t in THINK),
        *(ev({"content": t}) for t in TEXT),
        ev({"content": " tail", "x_note": "b"}),  # another key beside the string: not a run
        ev(
            {},
            finish="stop",
            usage={"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
        ),
        b"data: [DONE]\n\n",
    ]
)


@pytest.mark.parametrize("step", [1, 13, 512, 4096, 65536, len(STREAM)])
def test_runs_give_the_rule_s_events_and_turn(step: int) -> None:
    dec = D.stream_decoder()
    events: list[Any] = []
    for i in range(0, len(STREAM), step):
        events += dec.feed(STREAM[i : i + step])
    events += dec.close()
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == THINK
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        *(t for t in TEXT if t),
        " tail",
    ]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.turn.reasoning_text == "".join(THINK)
    assert done.turn.text == "".join(TEXT) + " tail"
    (message,) = D.replay(done.turn)
    assert message["reasoning_content"] == "".join(THINK)
    assert message["content"] == "".join(TEXT) + " tail"


def test_the_run_path_is_taken_on_long_runs() -> None:
    """Whether the path is taken (a learned shape), not how fast it is."""
    dec = D.stream_decoder()
    dec.feed(STREAM[: len(STREAM) // 4])
    assert dec._shapes
