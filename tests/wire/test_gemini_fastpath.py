"""The Gemini stream decoder's learned-shape fast path gives exactly what the merge rule says
(the expected parts and events are written here from the rule, not read from the decoder):
thought pieces join the thought part, text pieces the text part, a piece holding an escape,
a quote or a changed usage goes the general way, and nothing depends on how bytes are split."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done, ReasoningDelta, TextDelta, UsageEvent

D = get_dialect("gemini")
USAGE = {"promptTokenCount": 29, "totalTokenCount": 29}
LATE = {"promptTokenCount": 29, "totalTokenCount": 99}


def chunk(part: dict[str, Any], usage: dict[str, int] | None = None, finish: bool = False) -> bytes:
    cand: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    body = {"candidates": [cand], "usageMetadata": usage or USAGE, "modelVersion": "gemini-3",
            "responseId": "r1"}  # fmt: skip
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\r\n\r\n"


THOUGHTS = [f" thinking {i}" for i in range(40)]
TEXTS = [f" word {i}" for i in range(40)] + [' a "quoted" bit', " a back\\slash", " é ü"]
STREAM = b"".join(
    [
        *(chunk({"text": t, "thought": True}) for t in THOUGHTS),
        *(chunk({"text": t}) for t in TEXTS),
        chunk({"text": " odd", "extra": "x"}),  # not plain: a part of its own
        chunk({"text": " late"}, usage=LATE),
        chunk({"text": " end", "thoughtSignature": "c2ln"}, usage=LATE, finish=True),
    ]
)
FINAL_PARTS = [
    {"text": "".join(THOUGHTS), "thought": True},
    {"text": "".join(TEXTS)},
    {"text": " odd", "extra": "x"},
    {"text": " late"},
    {"text": " end", "thoughtSignature": "c2ln"},
]


def decode(data: bytes, step: int) -> tuple[list[Any], Any]:
    dec = D.stream_decoder()
    events: list[Any] = []
    for i in range(0, len(data), step):
        events += dec.feed(data[i : i + step])
    events += dec.close()
    return events, dec


@pytest.mark.parametrize("step", [1, 7, 100, 4096, len(STREAM)])
def test_pieces_merge_by_the_rule_at_any_split(step: int) -> None:
    events, _ = decode(STREAM, step)
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == THOUGHTS
    assert [e.text for e in events if isinstance(e, TextDelta)] == [*TEXTS, " odd", " late", " end"]
    done = events[-1]
    assert isinstance(done, Done)
    assert D.replay(done.turn) == [{"role": "model", "parts": FINAL_PARTS}]
    usages = [e.usage.billed_input for e in events if isinstance(e, UsageEvent)]
    assert usages == [29, 29]  # the first usage, then the changed one (its total differs)
    assert done.turn.usage is not None and done.turn.usage.raw["totalTokenCount"] == 99


def test_the_fast_path_is_taken_on_a_long_uniform_run() -> None:
    """Not how fast: whether the learned shape exists once the run has begun."""
    dec = D.stream_decoder()
    dec.feed(STREAM[: STREAM.rindex(b"data: ", 0, STREAM.index(b"word 5"))])
    assert dec._shape is not None and dec._shape[2] is False


def test_a_piece_that_is_also_a_key_teaches_no_shape() -> None:
    """Hostile: the text "parts" also sits in the bytes as a key, so a shape cut there would
    take a later chunk whose key was renamed for a text piece. The rule: a piece that is not
    once in its bytes teaches nothing, and the renamed chunk adds no text."""
    opening = chunk({"text": "a"}) + chunk({"text": "parts"})
    renamed = chunk({"text": "parts"}).replace(b'"parts":[', b'"xyz":[', 1)
    events, _ = decode(opening + renamed + chunk({"text": "!"}, finish=True), 4096)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a", "parts", "!"]
    done = events[-1]
    assert isinstance(done, Done) and done.turn.text == "aparts!"
