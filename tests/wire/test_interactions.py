"""The Interactions dialect's own rules, on streams and requests built here (the recordings
are in tests/conformance/test_interactions.py): text and summary deltas join onto the step's
last text item, a request carries the documented field names, effort maps to
``thinking_level`` and ``none`` sends none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.wire import get_dialect
from reasonwire.wire.model import (
    Done,
    ReasoningDelta,
    RequestOptions,
    System,
    TextDelta,
    ToolSpec,
    User,
)

D = get_dialect("interactions")


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


SUMMARY = ["The user wants ", "the weather; ", "I answer."]
TEXT = ["It is ", "sunny ", "in Oslo."]
STREAM = _sse(
    {"interaction": {"id": "v1_x", "status": "in_progress", "object": "interaction"},
     "event_type": "interaction.created"},
    {"index": 0, "step": {"type": "thought"}, "event_type": "step.start"},
    *({"index": 0, "delta": {"content": {"type": "text", "text": t}, "type": "thought_summary"},
       "event_type": "step.delta"} for t in SUMMARY),
    {"index": 0, "delta": {"signature": "c2ln", "type": "thought_signature"},
     "event_type": "step.delta"},
    {"index": 0, "event_type": "step.stop"},
    {"index": 1, "step": {"type": "model_output", "content": []}, "event_type": "step.start"},
    *({"index": 1, "delta": {"text": t, "type": "text"}, "event_type": "step.delta"} for t in TEXT),
    {"index": 1, "event_type": "step.stop"},
    {"interaction": {"id": "v1_x", "status": "completed", "usage": {"total_input_tokens": 9}},
     "event_type": "interaction.completed"},
)  # fmt: skip


@pytest.mark.parametrize("step", [1, 5, 64, len(STREAM)])
def test_deltas_join_onto_one_text_item(step: int) -> None:
    dec = D.stream_decoder()
    events = []
    for i in range(0, len(STREAM), step):
        events += dec.feed(STREAM[i : i + step])
    events += dec.close()
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == SUMMARY
    assert [e.text for e in events if isinstance(e, TextDelta)] == TEXT
    turn = events[-1].turn if isinstance(events[-1], Done) else None
    assert turn is not None
    assert D.replay(turn) == [
        {"type": "thought", "summary": [{"type": "text", "text": "".join(SUMMARY)}],
         "signature": "c2ln"},
        {"type": "model_output", "content": [{"type": "text", "text": "".join(TEXT)}]},
    ]  # fmt: skip
    assert turn.text == "".join(TEXT) and turn.reasoning_text == "".join(SUMMARY)


def test_partial_turn_mid_stream_then_more_deltas() -> None:
    """Asking for the partial turn between deltas loses no piece (the join is idempotent)."""
    dec = D.stream_decoder()
    half = STREAM.index(b'"It is "')
    half = STREAM.rindex(b"data:", 0, half + 40)
    dec.feed(STREAM[:half])
    assert dec.partial_turn().reasoning_text == "".join(SUMMARY)
    dec.feed(STREAM[half:])
    (*_, done) = dec.close()
    assert isinstance(done, Done) and done.turn.text == "".join(TEXT)


def test_request_uses_the_documented_fields() -> None:
    tool = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {}})
    body = D.build_request(
        [System("be brief"), User("hi")],
        RequestOptions(model="gemini-3-flash", effort="low", tools=(tool,), stream=True,
                       max_tokens=99),
    )  # fmt: skip
    assert body == {
        "model": "gemini-3-flash",
        "input": [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}],
        "system_instruction": "be brief",
        "tools": [{"type": "function", "name": "lookup", "description": "Look up.",
                   "parameters": {"type": "object", "properties": {}}}],
        "generation_config": {"max_output_tokens": 99, "thinking_level": "low",
                              "thinking_summaries": "auto"},
        "stream": True,
    }  # fmt: skip
    assert D.request_path(RequestOptions(model="m")) == "/interactions"


def test_effort_none_sends_no_thinking_level() -> None:
    body = D.build_request([User("hi")], RequestOptions(model="m", effort="none"))
    assert "generation_config" not in body


def test_the_gateway_strips_every_client_thinking_control() -> None:
    body = {"model": "m", "input": "hi", "agent": "deep-research",
            "generation_config": {"thinking_level": "xhigh", "thinking_summaries": "auto",
                                  "temperature": 0.2}}  # fmt: skip
    kept, removed = D.strip_controls(D.validate_request(body))
    assert kept == {"model": "m", "input": "hi", "generation_config": {"temperature": 0.2}}
    assert set(removed) == {
        "generation_config.thinking_level", "generation_config.thinking_summaries", "agent"
    }  # fmt: skip


def test_an_unknown_input_step_is_refused_not_dropped() -> None:
    from reasonwire.errors import ShapeError

    with pytest.raises(ShapeError, match=r"input\[0\]"):
        D.validate_request({"model": "m", "input": [{"type": "secret_step", "x": 1}]})


def test_cached_tokens_are_part_of_the_prompt_and_tool_use_is_billed_input() -> None:
    """The SDK's ``Usage`` docs: ``total_input_tokens`` is the "number of tokens in the prompt",
    ``total_cached_tokens`` the "number of tokens in the cached part of the prompt", and
    ``total_tool_use_tokens`` the tokens "present in tool-use prompt(s)" (input the API adds).
    So billed input = prompt + tool use, of which the cached part is a cache read."""
    body = {"object": "interaction", "status": "completed", "steps": [], "usage": {
        "total_input_tokens": 100, "total_cached_tokens": 60, "total_tool_use_tokens": 7,
        "total_output_tokens": 5, "total_thought_tokens": 3, "total_tokens": 115}}  # fmt: skip
    usage = D.parse_response(body).usage
    assert usage is not None
    assert (usage.input_uncached, usage.cache_read, usage.billed_input) == (47, 60, 107)
    assert (usage.output, usage.reasoning) == (8, 3)
