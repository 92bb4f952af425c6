"""Unit tests of the Responses dialect: request building, replay/strip, errors, stream edges.

Stream inputs here are small hand-written event sequences for the edge cases the recorded
corpus does not contain (failures, truncation, an incomplete encrypted_content on
``output_item.added`` that differs from the final one); the recorded streams are covered in
tests/conformance/test_responses.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.errors import ConfigError, MalformedBody, TruncatedStream
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    CarrierComplete,
    Done,
    Native,
    ReasoningDelta,
    RequestOptions,
    StreamError,
    StreamEvent,
    System,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    ToolSpec,
    Turn,
    UsageEvent,
    User,
)
from reasonwire.wire.registry import get_dialect
from reasonwire.wire.responses import DIALECT, error_message

REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "plan it"}],
    "encrypted_content": "gAAAA-final",
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "annotations": [], "text": "Calling."}],
}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "status": "completed",
    "call_id": "call_1",
    "name": "lookup",
    "arguments": '{"q":"x"}',
}
BODY = {
    "id": "resp_1",
    "model": "gpt-x",
    "status": "completed",
    "output": [REASONING, MESSAGE, CALL],
    "usage": {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 40},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 20},
        "total_tokens": 130,
        "cost": 0.0012,
    },
}


def opts(**kw: Any) -> RequestOptions:
    return RequestOptions(model="gpt-x", **kw)


def sse(*payloads: dict[str, Any]) -> bytes:
    return "".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n" for p in payloads).encode(
        "utf-8"
    )


def decode(raw: bytes) -> list[StreamEvent]:
    dec = DIALECT.stream_decoder()
    return dec.feed(raw) + dec.close()


# ------------------------------------------------------------------------------------------
# registry and parsing
# ------------------------------------------------------------------------------------------


def test_registered_under_its_name() -> None:
    assert get_dialect("responses") is DIALECT
    assert DIALECT.request_path(opts()) == "/responses"


def test_parse_body() -> None:
    turn = DIALECT.parse_response(json.dumps(BODY))
    assert turn.text == "Calling."
    assert turn.reasoning_text == "plan it"
    assert turn.tool_calls == (ToolCall("call_1", "lookup", '{"q":"x"}'),)
    (c,) = turn.carriers
    assert (c.kind, c.path, c.opaque, c.text, c.dialect) == (
        "reasoning_item",
        "output[0]",
        True,
        "plan it",
        "responses",
    )
    assert c.value == REASONING
    assert turn.usage is not None
    assert turn.usage.as_dict() == {
        "input_uncached": 60,
        "cache_read": 40,
        "cache_write": None,
        "billed_input": 100,
        "output": 30,
        "reasoning": 20,
        "cost_usd": 0.0012,
    }
    assert (turn.response_id, turn.model, turn.finish_reason) == ("resp_1", "gpt-x", "completed")
    assert turn.native == Native("responses", (REASONING, MESSAGE, CALL))


def test_reasoning_text_and_opacity_rules() -> None:
    items = [
        {"type": "reasoning", "summary": [], "encrypted_content": ""},
        {
            "type": "reasoning",
            "summary": [
                {"type": "summary_text", "text": "a"},
                {"type": "summary_text", "text": "b"},
            ],
            "content": [{"type": "reasoning_text", "text": "raw"}],
            "encrypted_content": None,
        },
    ]
    turn = DIALECT.parse_response({"output": items})
    assert [c.opaque for c in turn.carriers] == [False, False]
    assert [c.text for c in turn.carriers] == [None, "a\n\nb\n\nraw"]
    assert turn.reasoning_text == "a\n\nb\n\nraw"
    assert turn.usage is None and turn.response_id is None


def test_object_arguments_are_compact_json() -> None:
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": {"k": "é", "n": 1}}
    turn = DIALECT.parse_response({"output": [item]})
    assert turn.tool_calls[0].arguments == '{"k":"é","n":1}'


def test_incomplete_finish_reason_and_absent_usage_figures() -> None:
    body = {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [],
        "usage": {"output_tokens": 5},
    }
    turn = DIALECT.parse_response(body)
    assert turn.finish_reason == "max_output_tokens"
    assert turn.usage is not None
    assert (turn.usage.input_uncached, turn.usage.cache_read, turn.usage.reasoning) == (
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("[1, 2]", "must be a JSON object"),
        ({"id": "r"}, "no 'output' list"),
        ({"output": ["x"]}, r"output\[0\] must be an object"),
        ({"output": [{"type": "function_call", "name": "f"}]}, "without call_id"),
        ({"error": {"message": "bad key", "type": "invalid_request_error"}}, "error.*bad key"),
    ],
)
def test_malformed_bodies(body: Any, match: str) -> None:
    with pytest.raises(MalformedBody, match=match):
        DIALECT.parse_response(body)


def test_error_message() -> None:
    assert error_message(b'{"error": {"message": "nope"}}') == "nope"
    assert error_message({"type": "error", "message": "in stream"}) == "in stream"
    assert error_message(b"<html>502</html>") is None
    assert error_message(BODY | {"error": None}) is None


# ------------------------------------------------------------------------------------------
# build_request
# ------------------------------------------------------------------------------------------


def test_build_basic_transcript() -> None:
    turn = DIALECT.parse_response(BODY)
    msgs = [
        System("be brief"),
        User("hi"),
        turn.as_message(),
        ToolResult("call_1", "lookup", "42"),
    ]
    tool = ToolSpec("lookup", "find things", {"type": "object", "properties": {"q": {}}})
    body = DIALECT.build_request(msgs, opts(tools=(tool,), max_tokens=256, stream=True))
    assert body == {
        "model": "gpt-x",
        "input": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            REASONING,
            MESSAGE,
            CALL,
            {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "lookup",
                "description": "find things",
                "parameters": {"type": "object", "properties": {"q": {}}},
            }
        ],
        "max_output_tokens": 256,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
    }
    assert body["input"][2] is turn.native.items[0]  # the received object, not a copy


@pytest.mark.parametrize(
    ("effort", "expected"),
    [
        (None, None),
        ("none", None),
        ("low", {"effort": "low", "summary": "auto"}),
        ("medium", {"effort": "medium", "summary": "auto"}),
        ("high", {"effort": "high", "summary": "auto"}),
        ("minimal", {"effort": "minimal", "summary": "auto"}),
    ],
)
def test_effort_mapping(effort: str | None, expected: Any) -> None:
    body = DIALECT.build_request([User("x")], opts(effort=effort))
    assert body.get("reasoning") == expected


def test_extra_body_deep_merges_last() -> None:
    extra = {
        "reasoning": {"summary": "detailed"},
        "include": [],
        "store": False,
        "text": {"verbosity": "low"},
    }
    body = DIALECT.build_request([User("x")], opts(effort="high", extra_body=extra))
    assert body["reasoning"] == {"effort": "high", "summary": "detailed"}
    assert body["include"] == [] and body["store"] is False
    assert body["text"] == {"verbosity": "low"}
    assert extra["reasoning"] == {"summary": "detailed"}  # caller's mapping untouched


def test_deep_merge_does_not_alias_nested_dicts() -> None:
    src = {"a": {"b": 1}}
    out = deep_merge({}, src)
    out["a"]["b"] = 2
    assert src == {"a": {"b": 1}}


def test_profiles() -> None:
    assert "include" not in DIALECT.build_request([User("x")], opts(), profile="bare")
    assert DIALECT.build_request([User("x")], opts(), profile="default")["include"] == [
        "reasoning.encrypted_content"
    ]
    with pytest.raises(ConfigError, match="unknown profile 'nope'"):
        DIALECT.build_request([User("x")], opts(), profile="nope")


def test_keep_carriers_false_strips_reasoning_and_every_id() -> None:
    turn = DIALECT.parse_response(BODY)
    body = DIALECT.build_request([User("hi"), turn.as_message()], opts(keep_carriers=False))
    assert body["input"][1:] == [
        {k: v for k, v in MESSAGE.items() if k != "id"},
        {k: v for k, v in CALL.items() if k != "id"},
    ]
    assert "gAAAA" not in json.dumps(body)
    assert MESSAGE["id"] == "msg_1"  # the received item is not modified
    assert DIALECT.strip(turn) == body["input"][1:]


def test_foreign_native_is_never_replayed() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "SIG"}
    msg = Assistant(
        text="Answer.",
        tool_calls=(ToolCall("toolu_1", "lookup", '{"q":1}'),),
        carriers=(
            Carrier("anthropic", "thinking", "content[0]", thinking, True, "hmm"),
            Carrier("anthropic", "summary_text", "x", "a summary", False, "a summary"),
            Carrier("chat", "reasoning_text", "y", "raw thoughts", False, "raw thoughts"),
        ),
        native=Native("anthropic", (thinking, {"type": "text", "text": "Answer."})),
    )
    items = DIALECT.build_request([msg], opts())["input"]
    assert items == [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "a summary"}]},
        {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "raw thoughts"}],
        },
        {"role": "assistant", "content": "Answer."},
        {"type": "function_call", "call_id": "toolu_1", "name": "lookup", "arguments": '{"q":1}'},
    ]
    assert "SIG" not in json.dumps(items)
    stripped = DIALECT.build_request([msg], opts(keep_carriers=False))["input"]
    assert stripped == items[2:]


def test_unknown_message_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="message 0"):
        DIALECT.build_request(["hello"], opts())  # type: ignore[list-item]


# ------------------------------------------------------------------------------------------
# stream decoder
# ------------------------------------------------------------------------------------------


def _stream_payloads(final_enc: str = "gAAAA-final") -> list[dict[str, Any]]:
    reasoning_done = {**REASONING, "encrypted_content": final_enc}
    return [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-x", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**REASONING, "summary": [], "encrypted_content": "gAAAA-INCOMPLETE"},
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "plan ",
            "obfuscation": "PADPADPAD",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "it",
            "obfuscation": "PADPAD",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning_done},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**MESSAGE, "status": "in_progress", "content": []},
        },
        {
            "type": "response.output_text.delta",
            "output_index": 1,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": "Call",
        },
        {
            "type": "response.output_text.delta",
            "output_index": 1,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": "ing.",
        },
        {"type": "response.output_item.done", "output_index": 1, "item": MESSAGE},
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": {**CALL, "status": "in_progress", "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 2,
            "item_id": "fc_1",
            "delta": '{"q":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 2,
            "item_id": "fc_1",
            "delta": '"x"}',
        },
        {"type": "response.output_item.done", "output_index": 2, "item": CALL},
        {"type": "response.completed", "response": BODY},
    ]


def test_stream_events_and_turn_equal_body_parse() -> None:
    events = decode(sse(*_stream_payloads()))
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["plan ", "it"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Call", "ing."]
    assert [e for e in events if isinstance(e, ToolCallDelta)] == [
        ToolCallDelta(0, "call_1", "lookup", ""),
        ToolCallDelta(0, None, None, '{"q":'),
        ToolCallDelta(0, None, None, '"x"}'),
    ]
    (carrier_event,) = [e for e in events if isinstance(e, CarrierComplete)]
    assert carrier_event.carrier.value["encrypted_content"] == "gAAAA-final"
    assert any(isinstance(e, UsageEvent) for e in events)
    done = events[-1]
    assert isinstance(done, Done)
    assert done.turn == DIALECT.parse_response(BODY)
    assert "PAD" not in done.turn.reasoning_text


def test_added_encrypted_content_is_never_trusted() -> None:
    payloads = _stream_payloads()
    cut = [p["type"] for p in payloads].index("response.output_item.done")
    dec = DIALECT.stream_decoder()
    dec.feed(sse(*payloads[:cut]))
    partial = dec.partial_turn()
    assert partial.carriers == ()  # the unfinished reasoning item is not a carrier
    assert partial.reasoning_text == "plan it"
    assert "INCOMPLETE" not in json.dumps(partial.raw)
    with pytest.raises(TruncatedStream) as info:
        dec.close()
    assert isinstance(info.value.partial, Turn)
    assert info.value.partial.reasoning_text == "plan it"


def test_truncated_mid_message_keeps_partial_text() -> None:
    payloads = _stream_payloads()
    dec = DIALECT.stream_decoder()
    dec.feed(sse(*payloads[:7]))
    with pytest.raises(TruncatedStream, match=r"response\.completed") as info:
        dec.close()
    partial = info.value.partial
    assert partial.text == "Call"
    assert [c.value["encrypted_content"] for c in partial.carriers] == ["gAAAA-final"]


def test_completed_with_empty_output_uses_done_items() -> None:
    payloads = _stream_payloads()
    payloads[-1] = {"type": "response.completed", "response": {**BODY, "output": []}}
    done = decode(sse(*payloads))[-1]
    assert isinstance(done, Done)
    assert done.turn.native.items == (REASONING, MESSAGE, CALL)
    assert done.turn.raw["output"] == [REASONING, MESSAGE, CALL]


def test_failed_stream_reports_error_then_done() -> None:
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_2",
            "status": "failed",
            "error": {"code": "server_error", "message": "The model crashed."},
            "output": [],
        },
    }
    events = decode(sse(_stream_payloads()[0], failed))
    errors = [e for e in events if isinstance(e, StreamError)]
    assert [e.message for e in errors] == ["The model crashed."]
    done = events[-1]
    assert isinstance(done, Done) and done.turn.finish_reason == "failed"


def test_incomplete_stream_is_an_error_event_and_terminal() -> None:
    inc = {
        "type": "response.incomplete",
        "response": {
            "id": "r",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [MESSAGE],
            "usage": {"input_tokens": 3, "output_tokens": 9},
        },
    }
    events = decode(sse(inc))
    assert [e.message for e in events if isinstance(e, StreamError)] == [
        "response incomplete: max_output_tokens"
    ]
    done = events[-1]
    assert isinstance(done, Done)
    assert (done.turn.finish_reason, done.turn.text) == ("max_output_tokens", "Calling.")


def test_error_event_without_terminal_raises_on_close_only() -> None:
    dec = DIALECT.stream_decoder()
    events = dec.feed(
        sse({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down."})
    )
    assert events == [
        StreamError(
            "rate_limit_exceeded: Slow down.",
            raw={"type": "error", "code": "rate_limit_exceeded", "message": "Slow down."},
        )
    ]
    with pytest.raises(TruncatedStream, match="Slow down"):
        dec.close()


def test_non_json_payload_names_the_event() -> None:
    dec = DIALECT.stream_decoder()
    with pytest.raises(MalformedBody, match=r"response\.output_text\.delta"):
        dec.feed(b"event: response.output_text.delta\ndata: {oops\n\n")


def test_done_marker_and_unknown_events_are_ignored() -> None:
    raw = (
        sse(
            {"type": "response.web_search_call.searching", "output_index": 0},
            *_stream_payloads(),
        )
        + b"data: [DONE]\n\n"
    )
    done = decode(raw)[-1]
    assert isinstance(done, Done) and done.turn.text == "Calling."


def test_events_after_terminal_do_not_change_the_turn() -> None:
    extra = {"type": "response.output_text.delta", "output_index": 1, "delta": "late"}
    done = decode(sse(*_stream_payloads(), extra))[-1]
    assert isinstance(done, Done) and done.turn.text == "Calling."


def test_text_delta_for_an_unannounced_item_is_still_text() -> None:
    """A text delta whose output index no item was announced for (seen from a hostile
    upstream) is decoded as text, not a crash."""
    dec = DIALECT.stream_decoder()
    ev = {"type": "response.output_text.delta", "output_index": 7, "content_index": 0,
          "item_id": "x", "delta": "visible"}  # fmt: skip
    out = dec.feed(b"event: response.output_text.delta\ndata: " + json.dumps(ev).encode() + b"\n\n")
    assert [type(e).__name__ for e in out] == ["TextDelta"] and out[0].text == "visible"
