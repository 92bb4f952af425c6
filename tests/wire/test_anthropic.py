"""Unit tests for the Anthropic Messages dialect: request building, replay/strip, errors,
and stream decoding of synthesised event streams (the recorded ones are in
tests/conformance/test_anthropic.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.errors import ConfigError, MalformedBody, TruncatedStream
from reasonwire.wire import anthropic
from reasonwire.wire.anthropic import BUDGETS, DEFAULT_MAX_TOKENS, DIALECT
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    CarrierComplete,
    Done,
    Native,
    ReasoningDelta,
    RequestOptions,
    StreamError,
    System,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    ToolSpec,
    Turn,
    UsageEvent,
    User,
    canonical_bytes,
)

# --------------------------------------------------------------------------------------------
# A test-side encoder: a non-streamed message body as the event stream the API would send.
# --------------------------------------------------------------------------------------------


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse_from_message(body: dict[str, Any], piece: int = 7) -> bytes:
    """Encode a Messages response body as an Anthropic SSE stream (deltas of ``piece`` chars).

    Mirrors the API's framing: the message shell with empty content and a first usage, each
    block opened empty and filled by deltas, a signature in one ``signature_delta``, tool input
    as ``input_json_delta`` fragments, then ``message_delta`` with the final usage.
    """
    events: list[tuple[str, dict[str, Any]]] = []
    shell = {k: v for k, v in body.items() if k not in ("content", "stop_reason", "usage")}
    shell.update(content=[], stop_reason=None)
    usage = dict(body.get("usage") or {})
    first = dict(usage, output_tokens=1)
    events.append(
        ("message_start", {"type": "message_start", "message": {**shell, "usage": first}})
    )
    for i, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        elif kind == "text":
            start = {"type": "text", "text": ""}
        elif kind in ("tool_use", "server_tool_use"):
            # the block as received with an empty input (the API sends every other field,
            # e.g. a tool_use's ``caller``, in the start event; the input follows as deltas)
            start = {k: ({} if k == "input" else v) for k, v in block.items()}
        else:
            start = block
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            )
        )
        deltas: list[dict[str, Any]] = []
        if kind == "thinking":
            deltas += [
                {"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], piece)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            deltas += [{"type": "text_delta", "text": p} for p in _pieces(block["text"], piece)]
        elif kind in ("tool_use", "server_tool_use"):
            args = json.dumps(block["input"])  # spaced JSON: the decoder must not keep it verbatim
            deltas += [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(args, piece)
            ]
        for d in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            )
        events.append(("ping", {"type": "ping"}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens")},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(
        f"event: {name}\ndata: {json.dumps(p, ensure_ascii=False)}\n\n" for name, p in events
    ).encode("utf-8")


def decode(data: bytes, cuts: list[int] | None = None) -> tuple[list[Any], Turn]:
    """Decode ``data`` fed in pieces cut at ``cuts``; return events and the final turn."""
    dec = DIALECT.stream_decoder()
    events: list[Any] = []
    prev = 0
    for cut in [*sorted(set(cuts or [])), len(data)]:
        events += dec.feed(data[prev:cut])
        prev = cut
    events += dec.close()
    assert isinstance(events[-1], Done)
    return events, events[-1].turn


SIG = "EqQBCkYIBxgCKkB+signature/with+slashes=="
BODY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [
        {"type": "thinking", "thinking": "Need the weather. ", "signature": SIG},
        {"type": "redacted_thinking", "data": "CAISopaque=="},
        {"type": "text", "text": "Let me check."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "weather",
            "input": {"city": "Zürich", "days": [1, 2]},
        },
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 10,
        "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 100,
        "output_tokens": 42,
    },
}


def opts(**kw: Any) -> RequestOptions:
    return RequestOptions(model="claude-test", **kw)


# --------------------------------------------------------------------------------------------
# build_request
# --------------------------------------------------------------------------------------------


def test_request_path_is_messages() -> None:
    assert DIALECT.request_path(opts()) == "/messages"
    assert DIALECT.request_path(opts(stream=True)) == "/messages"


@pytest.mark.parametrize("effort", [None, "none"])
def test_no_effort_sends_no_thinking_and_default_max_tokens(effort: str | None) -> None:
    body = DIALECT.build_request([User("hi")], opts(effort=effort))
    assert "thinking" not in body and "output_config" not in body
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS == 4096
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["stream"] is False


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_levels_map_to_budget_and_max_tokens_stays_above(effort: str) -> None:
    budget = BUDGETS[effort]
    body = DIALECT.build_request([User("hi")], opts(effort=effort, max_tokens=budget + 1))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == budget + 1
    # a max_tokens at or below the budget is raised so the answer has room
    low = DIALECT.build_request([User("hi")], opts(effort=effort, max_tokens=budget))
    assert low["max_tokens"] > budget
    assert low["max_tokens"] == budget + DEFAULT_MAX_TOKENS


def test_budget_table_is_increasing_and_valid() -> None:
    assert BUDGETS["low"] >= 1024  # the API's minimum budget
    assert BUDGETS["low"] < BUDGETS["medium"] < BUDGETS["high"]


def test_adaptive_and_passthrough_effort() -> None:
    body = DIALECT.build_request([User("hi")], opts(effort="adaptive"))
    assert body["thinking"] == {"type": "adaptive"} and "output_config" not in body
    body = DIALECT.build_request([User("hi")], opts(effort="max"))
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "max"}


def test_tools_system_and_stream() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    body = DIALECT.build_request(
        [System("be brief"), User("weather?")],
        opts(tools=(ToolSpec("weather", "get weather", schema),), stream=True),
    )
    assert body["system"] == "be brief"
    assert body["tools"] == [
        {"name": "weather", "description": "get weather", "input_schema": schema}
    ]
    assert body["stream"] is True
    assert all(m["role"] != "system" for m in body["messages"])
    two = DIALECT.build_request([System("a"), User("x"), System("b")], opts())
    assert two["system"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert [m["role"] for m in two["messages"]] == ["user"]


def test_extra_body_merges_last_and_deep() -> None:
    body = DIALECT.build_request(
        [User("hi")],
        opts(
            effort="low",
            extra_body={"thinking": {"budget_tokens": 2000}, "max_tokens": 9000, "top_k": 5},
        ),
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert body["max_tokens"] == 9000
    assert body["top_k"] == 5


def test_consecutive_tool_results_share_one_user_message() -> None:
    turn = DIALECT.parse_response(json.loads(json.dumps(BODY)))
    msgs = [
        User("q"),
        turn.as_message(),
        ToolResult("toolu_1", "weather", "sunny"),
        ToolResult("toolu_2", "weather", "rainy"),
        User("thanks"),
        ToolResult("toolu_3", "weather", "snow"),
    ]
    body = DIALECT.build_request(msgs, opts())
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "user", "user"]
    merged = body["messages"][2]["content"]
    assert [b["tool_use_id"] for b in merged] == ["toolu_1", "toolu_2"]
    assert merged[0] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
    assert [b["tool_use_id"] for b in body["messages"][4]["content"]] == ["toolu_3"]


def test_native_replay_sends_the_received_block_objects_in_order() -> None:
    turn = DIALECT.parse_response(json.dumps(BODY))
    body = DIALECT.build_request([User("q"), turn.as_message()], opts())
    content = body["messages"][1]["content"]
    assert content == BODY["content"]
    for c in turn.carriers:
        index = int(c.path.removeprefix("content[").removesuffix("]"))
        assert content[index] is c.value


def test_keep_carriers_false_strips_reasoning_blocks() -> None:
    turn = DIALECT.parse_response(json.dumps(BODY))
    body = DIALECT.build_request([User("q"), turn.as_message()], opts(keep_carriers=False))
    content = body["messages"][1]["content"]
    assert [b["type"] for b in content] == ["text", "tool_use"]
    assert content == BODY["content"][2:]
    assert DIALECT.strip(turn) == [{"role": "assistant", "content": content}]


def test_strip_of_a_thinking_only_turn_omits_the_message() -> None:
    only = {**BODY, "content": BODY["content"][:1], "stop_reason": "max_tokens"}
    turn = DIALECT.parse_response(json.dumps(only))
    assert DIALECT.strip(turn) == []
    assert DIALECT.replay(turn)[0]["content"][0]["signature"] == SIG


def test_foreign_history_never_becomes_thinking() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA", "summary": []}
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "weather",
        "arguments": '{"city":"Oslo"}',
    }
    foreign = Assistant(
        text="Checking.",
        tool_calls=(ToolCall("c1", "weather", '{"city":"Oslo"}'),),
        carriers=(
            Carrier("responses", "reasoning_item", "output[0]", reasoning, True, "thought"),
            Carrier(
                "chat",
                "reasoning_content",
                "choices[0].message.reasoning_content",
                "hm",
                False,
                "hm",
            ),
        ),
        native=Native("responses", (reasoning, call)),
    )
    for keep in (True, False):
        body = DIALECT.build_request([User("q"), foreign], opts(keep_carriers=keep))
        assert body["messages"][1] == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}},
            ],
        }
    # only foreign reasoning and no visible output: nothing to send
    empty = Assistant(carriers=foreign.carriers, native=Native("chat", ({"role": "assistant"},)))
    assert DIALECT.replay(empty) == []


def test_anthropic_carriers_without_native_go_first() -> None:
    turn = DIALECT.parse_response(json.dumps(BODY))
    rebuilt = Assistant(text=turn.text, tool_calls=turn.tool_calls, carriers=turn.carriers)
    content = DIALECT.replay(rebuilt)[0]["content"]
    assert [b["type"] for b in content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert content[0] is turn.carriers[0].value
    assert content[3]["input"] == {"city": "Zürich", "days": [1, 2]}
    assert [b["type"] for b in DIALECT.strip(rebuilt)[0]["content"]] == ["text", "tool_use"]


def test_tool_call_arguments_must_be_an_object() -> None:
    bad = Assistant(tool_calls=(ToolCall("c1", "f", "[1, 2]"),))
    with pytest.raises(ConfigError, match="c1"):
        DIALECT.build_request([User("q"), bad], opts())


# --------------------------------------------------------------------------------------------
# parse_response
# --------------------------------------------------------------------------------------------


def test_parse_fields_and_usage() -> None:
    turn = DIALECT.parse_response(json.dumps(BODY).encode())
    assert turn.text == "Let me check."
    assert turn.reasoning_text == "Need the weather. "
    assert turn.tool_calls == (ToolCall("toolu_1", "weather", '{"city":"Zürich","days":[1,2]}'),)
    assert [(c.kind, c.path, c.opaque, c.text) for c in turn.carriers] == [
        ("thinking", "content[0]", True, "Need the weather. "),
        ("redacted_thinking", "content[1]", True, None),
    ]
    assert turn.usage is not None
    assert turn.usage.as_dict() == {
        "input_uncached": 10,
        "cache_read": 100,
        "cache_write": 3,
        "billed_input": 113,
        "output": 42,
        "reasoning": None,
        "cost_usd": None,
    }
    assert (turn.response_id, turn.model, turn.finish_reason) == (
        "msg_1",
        "claude-test",
        "tool_use",
    )
    assert turn.native.dialect == "anthropic" and list(turn.native.items) == BODY["content"]


def test_absent_usage_stays_none() -> None:
    turn = DIALECT.parse_response({"type": "message", "content": []})
    assert turn.usage is None
    partial = DIALECT.parse_response({"content": [], "usage": {"output_tokens": 5}})
    assert partial.usage is not None
    assert partial.usage.input_uncached is None and partial.usage.billed_input is None


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("[1, 2]", "JSON object"),
        ({"type": "message"}, "'content'"),
        ({"content": [{"text": "x"}]}, "content[0]"),
        (
            {"content": [{"type": "thinking", "thinking": 3, "signature": "s"}]},
            "content[0].thinking",
        ),
        ({"content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}, "input"),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "Overloaded",
        ),
    ],
)
def test_malformed_bodies_raise_malformed_body(body: Any, needle: str) -> None:
    with pytest.raises(MalformedBody, match=needle.replace("[", r"\[").replace("]", r"\]")):
        DIALECT.parse_response(body)


# --------------------------------------------------------------------------------------------
# stream decoding
# --------------------------------------------------------------------------------------------


def test_stream_equals_non_stream_and_emits_events() -> None:
    events, turn = decode(sse_from_message(BODY, piece=3))
    ref = DIALECT.parse_response(json.dumps(BODY))
    assert turn.text == ref.text and turn.reasoning_text == ref.reasoning_text
    assert turn.tool_calls == ref.tool_calls
    assert [c.value for c in turn.carriers] == [c.value for c in ref.carriers]
    assert [list(c.value) for c in turn.carriers] == [list(c.value) for c in ref.carriers]
    assert turn.carriers == ref.carriers
    assert turn.usage is not None and ref.usage is not None
    assert turn.usage.as_dict() == ref.usage.as_dict()
    assert list(turn.native.items) == list(ref.native.items)
    assert turn.raw["content"] == BODY["content"] and turn.raw["stop_reason"] == "tool_use"

    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == ref.reasoning_text
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == ref.text
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0].id == "toolu_1" and calls[0].name == "weather"
    assert {e.index for e in calls} == {0}
    assert json.loads("".join(e.arguments for e in calls)) == BODY["content"][3]["input"]
    done = [e.carrier for e in events if isinstance(e, CarrierComplete)]
    assert done == list(ref.carriers)
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert usages[0].output == 1 and usages[-1].output == 42 and usages[-1].cache_read == 100


def test_message_delta_usage_wins_where_present() -> None:
    data = sse_from_message(BODY).replace(
        b'"usage": {"output_tokens": 42}',
        b'"usage": {"output_tokens": 42, "input_tokens": 11, "cache_read_input_tokens": null}',
    )
    _, turn = decode(data)
    assert turn.usage is not None
    assert (turn.usage.input_uncached, turn.usage.cache_read, turn.usage.output) == (11, 100, 42)


def test_truncated_stream_raises_with_partial_turn() -> None:
    data = sse_from_message(BODY, piece=4)
    cut = data.index(b"signature_delta")
    dec = DIALECT.stream_decoder()
    dec.feed(data[:cut])
    with pytest.raises(TruncatedStream) as info:
        dec.close()
    partial = info.value.partial
    assert isinstance(partial, Turn)
    assert partial.reasoning_text == BODY["content"][0]["thinking"]
    assert partial.carriers == () and partial.native.items == ()  # unsigned: not replayable
    assert partial.usage is not None and partial.usage.input_uncached == 10

    no_stop = sse_from_message(BODY).replace(
        b'event: message_stop\ndata: {"type": "message_stop"}\n\n', b""
    )
    dec = DIALECT.stream_decoder()
    dec.feed(no_stop)
    with pytest.raises(TruncatedStream, match="message_stop") as info2:
        dec.close()
    assert [c.kind for c in info2.value.partial.carriers] == ["thinking", "redacted_thinking"]
    assert info2.value.partial.tool_calls == DIALECT.parse_response(json.dumps(BODY)).tool_calls


def test_error_event_is_reported_then_close_raises() -> None:
    data = sse_from_message(BODY)
    cut = data.index(b"event: content_block_start")
    err = (
        b'event: error\ndata: {"type":"error",'
        b'"error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    dec = DIALECT.stream_decoder()
    events = dec.feed(data[:cut] + err)
    errors = [e for e in events if isinstance(e, StreamError)]
    assert len(errors) == 1 and "overloaded_error" in errors[0].message
    assert errors[0].raw["error"]["message"] == "Overloaded"
    with pytest.raises(TruncatedStream, match="Overloaded"):
        dec.close()


def test_non_json_event_data_names_the_event() -> None:
    dec = DIALECT.stream_decoder()
    with pytest.raises(MalformedBody, match="content_block_delta"):
        dec.feed(b"event: content_block_delta\ndata: {oops\n\n")


def test_delta_for_unknown_block_and_bad_tool_json_are_malformed() -> None:
    start = sse_from_message({**BODY, "content": []}).split(b"event: message_delta")[0]
    dec = DIALECT.stream_decoder()
    dec.feed(start)
    with pytest.raises(MalformedBody, match="unknown content block 5"):
        dec.feed(
            b'data: {"type":"content_block_delta","index":5,'
            b'"delta":{"type":"text_delta","text":"x"}}\n\n'
        )
    dec = DIALECT.stream_decoder()
    dec.feed(start)
    dec.feed(
        b'data: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}\n\n'
        b'data: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"input_json_delta","partial_json":"{\\"a\\":"}}\n\n'
    )
    with pytest.raises(MalformedBody, match="tool_use input"):
        dec.feed(b'data: {"type":"content_block_stop","index":0}\n\n')


def test_empty_tool_input_stream_gives_empty_object() -> None:
    body = {**BODY, "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}
    data = sse_from_message(body).replace(b'"partial_json": "{}"', b'"partial_json": ""')
    _, turn = decode(data)
    assert turn.tool_calls == (ToolCall("t", "f", "{}"),)
    assert turn.native.items[0]["input"] == {}


# --------------------------------------------------------------------------------------------
# hypothesis: generated answers
# --------------------------------------------------------------------------------------------

_b64 = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=",
    min_size=1,
    max_size=80,
)
_text = st.text(min_size=0, max_size=40)
_block = st.one_of(
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, _text, _b64),
    st.builds(lambda d: {"type": "redacted_thinking", "data": d}, _b64),
    st.builds(lambda t: {"type": "text", "text": t}, _text),
    st.builds(
        lambda n, inp: {"type": "tool_use", "id": f"toolu_{n}", "name": "f", "input": inp},
        st.integers(0, 999),
        st.dictionaries(
            st.text(max_size=5), st.one_of(st.integers(), _text, st.booleans()), max_size=3
        ),
    ),
)
_bodies = st.builds(
    lambda blocks: {**BODY, "content": blocks},
    st.lists(_block, max_size=6),
)


@settings(max_examples=80, deadline=None)
@given(body=_bodies)
def test_replay_of_parse_keeps_every_carrier_identical(body: dict[str, Any]) -> None:
    wire = json.dumps(body, ensure_ascii=False)
    turn = DIALECT.parse_response(wire)
    content = DIALECT.replay(turn)[0]["content"] if body["content"] else []
    original = json.loads(wire)["content"]
    assert canonical_bytes(content) == canonical_bytes(original)
    for c in turn.carriers:
        index = int(c.path[len("content[") : -1])
        assert content[index] is c.value
        assert canonical_bytes(c.value) == canonical_bytes(original[index])
    stripped = DIALECT.strip(turn)
    kept = [b for b in original if b["type"] not in ("thinking", "redacted_thinking")]
    assert (stripped[0]["content"] if stripped else []) == kept


@settings(max_examples=60, deadline=None)
@given(body=_bodies, piece=st.integers(1, 9), data=st.data())
def test_generated_streams_decode_like_the_body_under_any_split(
    body: dict[str, Any], piece: int, data: st.DataObject
) -> None:
    raw = sse_from_message(body, piece=piece)
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=12))
    _, turn = decode(raw, cuts)
    ref = DIALECT.parse_response(json.dumps(body))
    assert turn.carriers == ref.carriers
    assert (turn.text, turn.reasoning_text, turn.tool_calls) == (
        ref.text,
        ref.reasoning_text,
        ref.tool_calls,
    )
    assert list(turn.native.items) == list(ref.native.items)


def test_module_registers_the_dialect() -> None:
    from reasonwire.wire.registry import get_dialect

    assert get_dialect("anthropic") is anthropic.DIALECT
    assert anthropic.DIALECT.name == "anthropic"


# -- 2026: effort regimes and server tools (documented rule: adaptive from Claude 4.6 on) -------


@pytest.mark.parametrize(
    "model",
    [
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-opus-4-7",
        "claude-sonnet-5",
        "claude-opus-5",
        "claude-mythos-preview",
    ],
)
@pytest.mark.parametrize("level", ["low", "medium", "high"])
def test_newest_models_take_effort_as_adaptive_thinking(model: str, level: str) -> None:
    body = DIALECT.build_request([User("hi")], RequestOptions(model=model, effort=level))
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": level}
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS  # no budget to make room for


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-20250514",
        "claude-3-7-sonnet-20250219",
        "claude-latest",
        "deepseek-v4",
    ],
)
def test_older_and_unversioned_models_keep_the_budget_form(model: str) -> None:
    body = DIALECT.build_request([User("hi")], RequestOptions(model=model, effort="medium"))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": BUDGETS["medium"]}
    assert "output_config" not in body


def test_display_omitted_merges_into_adaptive_thinking() -> None:
    body = DIALECT.build_request(
        [User("hi")],
        RequestOptions(
            model="claude-opus-4-7", effort="xhigh", extra_body={"thinking": {"display": "omitted"}}
        ),
    )
    assert body["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert body["output_config"] == {"effort": "xhigh"}


def test_server_tools_from_extra_body_follow_the_function_tools() -> None:
    server = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    extra: dict[str, Any] = {"tools": [server]}
    body = DIALECT.build_request(
        [User("hi")],
        RequestOptions(model="claude-sonnet-4-6", tools=(ToolSpec("f", "d"),), extra_body=extra),
    )
    assert body["tools"] == [
        {"name": "f", "description": "d", "input_schema": {"type": "object", "properties": {}}},
        server,
    ]
    assert body["tools"][1] is not server  # a copy: the caller's extra_body stays as it was
    assert extra == {"tools": [server]}


def test_signature_only_thinking_block_is_replayed_as_received() -> None:
    block = {"type": "thinking", "thinking": "", "signature": "EooDsig"}
    body = {**BODY, "content": [block, {"type": "text", "text": "4"}]}
    for turn in (DIALECT.parse_response(body), decode(sse_from_message(body, piece=3))[1]):
        assert [c.value for c in turn.carriers] == [block]
        (assistant,) = DIALECT.replay(turn)
        assert assistant["content"][0] == block
        assert list(assistant["content"][0]) == ["type", "thinking", "signature"]
