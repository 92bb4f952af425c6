"""Unit tests of the Chat Completions dialect: request building per profile, replay and strip,
usage, stream assembly rules and error paths."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.errors import ConfigError, MalformedBody, TruncatedStream
from reasonwire.wire import chat
from reasonwire.wire.chat._facts import ALL_CARRIER_FIELDS
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    Done,
    Native,
    RequestOptions,
    StreamError,
    StreamEvent,
    System,
    ToolCall,
    ToolResult,
    ToolSpec,
    User,
)

D = chat.ChatDialect()


def _body(
    message: dict[str, Any], usage: Any = None, finish: str | None = "stop"
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def _sse(*payloads: Any, done: bool = True) -> bytes:
    parts = [f"data: {json.dumps(p)}\n\n" for p in payloads]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode("utf-8")


def _chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **top,
    }


def _decode(data: bytes) -> list[StreamEvent]:
    dec = D.stream_decoder()
    return [*dec.feed(data), *dec.close()]


# -- profiles and effort -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "level", "expected"),
    [
        ("default", "high", {"reasoning_effort": "high"}),
        (None, "low", {"reasoning_effort": "low"}),
        ("default", "xhigh", {"reasoning_effort": "xhigh"}),
        ("openrouter", "medium", {"reasoning": {"effort": "medium"}}),
        ("snowflake", "low", {"reasoning": {"effort": "low"}}),
        ("deepseek", "low", {"thinking": {"type": "enabled"}}),
        ("deepseek", "high", {"thinking": {"type": "enabled"}}),
        ("zai", "high", {"thinking": {"type": "enabled", "clear_thinking": False}}),
        ("vllm", "high", {"chat_template_kwargs": {"enable_thinking": True}}),
        ("llamacpp", "medium", {"reasoning_effort": "medium"}),
        ("cerebras", "low", {"reasoning_effort": "low"}),
        ("gemini-openai", "high", {"reasoning_effort": "high"}),
    ],
)
def test_effort_is_expressed_per_profile(
    profile: str | None, level: str, expected: dict[str, Any]
) -> None:
    body = D.build_request([User("hi")], RequestOptions(model="m", effort=level), profile=profile)
    controls = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}
    assert controls == expected


@pytest.mark.parametrize("level", [None, "none"])
@pytest.mark.parametrize("profile", sorted(chat.CHAT_PROFILES))
def test_no_effort_sends_no_reasoning_option(profile: str, level: str | None) -> None:
    body = D.build_request([User("hi")], RequestOptions(model="m", effort=level), profile=profile)
    # MiniMax's only default is where thinking comes back, not whether or how much:
    # reasoning_split true puts it in reasoning_details instead of inline <think> text
    # (https://platform.minimaxi.com/docs/api-reference/text-openai-api).
    split = {"reasoning_split": True} if profile == "minimax" else {}
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
        **split,
    }


def test_unknown_profile_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown chat profile 'nope'"):
        D.build_request([User("hi")], RequestOptions(model="m"), profile="nope")
    with pytest.raises(ConfigError):
        D.replay(Assistant(text="x"), profile="nope")


def test_profiles_are_frozen_data() -> None:
    prof = chat.CHAT_PROFILES["deepseek"]
    assert isinstance(prof, chat.ChatProfile)
    with pytest.raises(AttributeError):
        prof.returns = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        chat.CHAT_PROFILES["x"] = prof  # type: ignore[index]
    assert chat.CHAT_PROFILES["default"].returns is None


# -- request building ----------------------------------------------------------------------


def test_full_request_shape_with_tools_stream_and_extra_body() -> None:
    tool = ToolSpec("get_weather", "Weather now.", {"type": "object", "properties": {}})
    opts = RequestOptions(
        model="m",
        max_tokens=64,
        effort="high",
        tools=(tool, ToolSpec("noop")),
        stream=True,
        extra_body={"reasoning": {"exclude": True}, "temperature": 0, "stream_options": None},
    )
    msgs = [
        System("be brief"),
        User("weather?"),
        Assistant(tool_calls=(ToolCall("c1", "get_weather", '{"city":"X"}'),)),
        ToolResult("c1", "get_weather", "sunny"),
    ]
    body = D.build_request(msgs, opts, profile="openrouter")
    assert body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"X"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
        "max_tokens": 64,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather now.",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
            {
                "type": "function",
                "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}},
            },
        ],
        # extra_body deep-merges into the effort dict and replaces scalars last
        "reasoning": {"effort": "high", "exclude": True},
        "stream": True,
        "stream_options": None,
        "temperature": 0,
    }


def test_stream_asks_for_usage() -> None:
    body = D.build_request([User("x")], RequestOptions(model="m", stream=True))
    assert body["stream_options"] == {"include_usage": True}


def _native_turn() -> Any:
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "rc",
        "reasoning": "r",
        "reasoning_details": [{"type": "reasoning.encrypted", "data": "ENC", "index": 0}],
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {"name": "f", "arguments": "{}"},
                "extra_content": {"google": {"thought_signature": "SIG=="}},
            }
        ],
    }
    return D.parse_response(_body(message, finish="tool_calls")), message


@pytest.mark.parametrize(
    ("profile", "fields"),
    [
        ("default", {"reasoning_content", "reasoning", "reasoning_details"}),
        ("openrouter", {"reasoning", "reasoning_details"}),
        ("deepseek", {"reasoning_content"}),
        ("llamacpp", {"reasoning_content"}),
        # vLLM renamed reasoning_content to reasoning ("To migrate, directly replace
        # reasoning_content with reasoning", https://docs.vllm.ai/en/v0.26.0/features/reasoning_outputs/)
        ("vllm", {"reasoning"}),
        ("gemini-openai", set()),
    ],
)
def test_replay_sends_the_profile_fields_as_the_same_objects(
    profile: str, fields: set[str]
) -> None:
    """The profile chooses which reasoning fields on the message go back; the tool calls go
    back as received (their ``extra_content`` too, on every profile: raw replay)."""
    turn, message = _native_turn()
    [msg] = D.replay(turn, profile=profile)
    assert {f for f in ALL_CARRIER_FIELDS if f in msg} == fields
    for f in fields:
        assert msg[f] is message[f]
    assert msg["tool_calls"] is message["tool_calls"]
    # build_request uses the same replay for a chat-native assistant turn
    body = D.build_request([User("q"), turn.as_message()], RequestOptions(model="m"), profile)
    assert body["messages"][1] == msg


def test_gemini_extra_content_is_an_opaque_tool_call_carrier() -> None:
    turn, message = _native_turn()
    [extra] = [c for c in turn.carriers if c.kind == "extra_content"]
    assert extra.opaque and extra.tool_call_id == "t1"
    assert extra.path == "choices[0].message.tool_calls[0].extra_content"
    assert extra.value is message["tool_calls"][0]["extra_content"]


def test_keep_carriers_false_strips_every_carrier() -> None:
    turn, _ = _native_turn()
    opts = RequestOptions(model="m", keep_carriers=False)
    body = D.build_request([User("q"), turn.as_message()], opts)
    msg = body["messages"][1]
    assert msg == D.strip(turn)[0]
    assert msg == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_foreign_native_is_never_replayed_as_opaque_chat_state() -> None:
    foreign = Assistant(
        text="answer",
        carriers=(
            Carrier("anthropic", "thinking", "content[0]", {"type": "thinking"}, True, text="t"),
            Carrier("responses", "reasoning_details", "output[0]", [{"x": 1}], True),
            Carrier("gemini", "extra_content", "p", {"google": {}}, True, tool_call_id="t1"),
            Carrier("chat", "reasoning_content", "m.reasoning_content", "readable", False),
        ),
        tool_calls=(ToolCall("t1", "f", "{}"),),
        native=Native("anthropic", ({"type": "thinking", "signature": "S"},)),
    )
    [msg] = D.replay(foreign)
    assert msg == {
        "role": "assistant",
        "content": "answer",
        "reasoning_content": "readable",
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_reasoning_content_null_is_never_sent() -> None:
    message = {"role": "assistant", "content": "a", "reasoning_content": None}
    turn = D.parse_response(_body(message))
    assert turn.carriers == ()
    for profile in chat.CHAT_PROFILES:
        [msg] = D.replay(turn, profile=profile)
        assert "reasoning_content" not in msg
    built = Assistant(text="a", carriers=(Carrier("chat", "reasoning_content", "p", None, False),))
    assert "reasoning_content" not in D.replay(built, profile="llamacpp")[0]


def test_empty_reasoning_content_goes_back_as_empty_string() -> None:
    message = {"role": "assistant", "content": None, "reasoning_content": "", "tool_calls": []}
    [msg] = D.replay(D.parse_response(_body(message)), profile="deepseek")
    assert msg == {"role": "assistant", "content": "", "reasoning_content": ""}


# -- parsing and usage ---------------------------------------------------------------------


def test_usage_normalisation() -> None:
    deepseek = {
        "prompt_tokens": 563,
        "completion_tokens": 116,
        "prompt_tokens_details": {"cached_tokens": 500},
        "prompt_cache_hit_tokens": 512,
        "prompt_cache_miss_tokens": 51,
        "completion_tokens_details": {"reasoning_tokens": 60},
    }
    u = D.parse_response(_body({"role": "assistant", "content": "x"}, deepseek)).usage
    assert u is not None
    assert (u.input_uncached, u.cache_read, u.output, u.reasoning) == (51, 512, 116, 60)
    xai = {"prompt_tokens": 10, "completion_tokens": 2, "cost_in_usd_ticks": 2_500_000}
    u = D.parse_response(_body({"role": "assistant", "content": "x"}, xai)).usage
    assert u is not None
    assert (u.input_uncached, u.cache_read, u.reasoning) == (10, None, None)
    assert u.cost_usd == pytest.approx(0.00025)
    assert u.raw is xai
    assert D.parse_response(_body({"role": "assistant", "content": "x"})).usage is None
    # OpenRouter's usage.cost is USD as a JSON number (a float as a rule); ticks may be one
    # too; a boolean is no figure
    for usage, cost in [
        ({"prompt_tokens": 1, "cost": 0.0012}, 0.0012),
        ({"prompt_tokens": 1, "cost": 2}, 2.0),
        ({"prompt_tokens": 1, "cost_in_usd_ticks": 2.5e6}, 0.00025),
        ({"prompt_tokens": 1, "cost": True}, None),
        ({"prompt_tokens": 1, "cost_in_usd_ticks": False}, None),
    ]:
        u = D.parse_response(_body({"role": "assistant", "content": "x"}, usage)).usage
        assert u is not None
        assert u.cost_usd == (pytest.approx(cost) if cost is not None else None), usage


def test_tool_call_arguments_object_is_encoded_compactly() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {"q": "é", "n": 1}}}],
    }
    turn = D.parse_response(_body(message))
    assert turn.tool_calls == (ToolCall("a", "f", '{"q":"é","n":1}'),)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("[1, 2]", "must be a JSON object"),
        ({"choices": []}, "no choices"),
        ({"choices": [{"index": 0}]}, "no choices\\[0\\].message"),
        ({"error": {"message": "quota"}}, "error.*quota"),
        (
            {"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "x"}]}}]},
            "tool_calls\\[0\\] has no function",
        ),
        ({"choices": [{"message": {"role": "assistant"}}], "usage": 5}, "usage must be"),
    ],
)
def test_malformed_bodies_raise_clear_errors(body: Any, match: str) -> None:
    with pytest.raises(MalformedBody, match=match):
        D.parse_response(body)


# -- streams -------------------------------------------------------------------------------


def test_stream_assembles_tool_calls_by_index() -> None:
    data = _sse(
        _chunk({"role": "assistant", "content": None, "reasoning_content": "think"}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "b",
                        "type": "function",
                        "function": {"name": "g", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "a",
                        "function": {"name": "f"},
                        "extra_content": {"google": {"thought_signature": "S"}},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x"'}}]}),
        _chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": ":1}"}}]}),
        _chunk({}, finish="tool_calls"),
        _chunk({}, usage={"prompt_tokens": 3, "completion_tokens": 4}),
    )
    events = _decode(data)
    done = events[-1]
    assert isinstance(done, Done)
    turn = done.turn
    assert turn.tool_calls == (ToolCall("b", "g", "{}"), ToolCall("a", "f", '{"x":1}'))
    assert turn.raw["choices"][0]["message"]["tool_calls"][1]["extra_content"] == {
        "google": {"thought_signature": "S"}
    }
    kinds = [(c.kind, c.tool_call_id) for c in turn.carriers]
    assert kinds == [("reasoning_content", None), ("extra_content", "a")]
    assert [e.type for e in events].count("usage") == 1
    assert turn.usage is not None and turn.usage.output == 4
    [tc_first] = [e for e in events if e.type == "tool_call"][:1]
    assert (tc_first.index, tc_first.id, tc_first.name) == (1, "b", "g")


def test_details_merge_rules() -> None:
    merged = chat.merge_reasoning_details(
        [
            {"type": "reasoning.text", "text": "", "signature": "", "format": None, "index": 0},
            {"type": "reasoning.summary", "summary": "S1", "index": 0},
            {"type": "reasoning.text", "text": "ab", "format": "f1", "index": 0},
            {"type": "reasoning.text", "text": "c", "signature": None, "index": 0, "id": "x"},
            {"type": "reasoning.text", "signature": "SIG", "format": "f2", "index": 0},
            {"type": "reasoning.text", "text": "other", "index": 1},
            {"type": "reasoning.summary", "summary": "S2", "index": 0},
            {"type": "reasoning.encrypted", "data": "AA", "index": 0},
            {"type": "reasoning.encrypted", "data": "BB", "index": 0},
        ]
    )
    assert merged == [
        {
            "type": "reasoning.text",
            "text": "abc",
            "signature": "SIG",
            "format": "f1",
            "index": 0,
            "id": "x",
        },
        {"type": "reasoning.summary", "summary": "S1S2", "index": 0},
        {"type": "reasoning.text", "text": "other", "index": 1},
        {"type": "reasoning.encrypted", "data": "AABB", "index": 0},
    ]
    assert list(merged[0]) == ["type", "text", "signature", "format", "index", "id"]


def test_stream_without_done_or_finish_is_truncated_with_partial() -> None:
    dec = D.stream_decoder()
    dec.feed(_sse(_chunk({"content": "Hel"}), _chunk({"content": "lo"}), done=False))
    with pytest.raises(TruncatedStream, match="without \\[DONE\\]") as info:
        dec.close()
    assert info.value.partial.text == "Hello"


def test_finish_reason_without_done_completes() -> None:
    events = _decode(_sse(_chunk({"content": "ok"}, finish="stop"), done=False))
    assert isinstance(events[-1], Done) and events[-1].turn.text == "ok"


def test_done_without_finish_reason_completes() -> None:
    events = _decode(_sse(_chunk({"content": "ok"})))
    assert isinstance(events[-1], Done) and events[-1].turn.finish_reason is None


def test_error_payload_is_a_stream_error_then_close_raises() -> None:
    dec = D.stream_decoder()
    events = dec.feed(_sse(_chunk({"content": "par"}), {"error": {"message": "overloaded"}}))
    assert [e.type for e in events] == ["text", "error"]
    err = events[-1]
    assert isinstance(err, StreamError) and err.message == "overloaded"
    with pytest.raises(TruncatedStream, match="overloaded") as info:
        dec.close()
    assert info.value.partial.text == "par"


def test_non_json_stream_event_is_malformed_and_named() -> None:
    dec = D.stream_decoder()
    with pytest.raises(MalformedBody, match=r"event #2 .*not JSON"):
        dec.feed(b'data: {"choices":[]}\n\nevent: ping\ndata: {oops\n\n')


# -- properties ----------------------------------------------------------------------------

_text = st.text(max_size=30)
_detail = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("reasoning.text"), "text": _text, "index": st.integers(0, 3)},
        optional={"signature": st.one_of(st.none(), _text), "format": _text},
    ),
    st.fixed_dictionaries(
        {"type": st.just("reasoning.encrypted"), "data": _text, "index": st.integers(0, 3)}
    ),
    st.fixed_dictionaries({"type": st.just("reasoning.summary"), "summary": _text}),
)
_message = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.one_of(st.none(), _text)},
    optional={
        "reasoning_content": st.one_of(st.none(), _text),
        "reasoning": st.one_of(st.none(), _text),
        "reasoning_details": st.lists(_detail, max_size=4),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    message=_message, via_bytes=st.booleans(), profile=st.sampled_from(sorted(chat.CHAT_PROFILES))
)
def test_replay_of_parse_keeps_carrier_values(
    message: dict[str, Any], via_bytes: bool, profile: str
) -> None:
    body = _body(message)
    turn = D.parse_response(json.dumps(body, ensure_ascii=False).encode() if via_bytes else body)
    source = turn.native.items[0]
    [msg] = D.replay(turn, profile=profile)
    prof = chat.CHAT_PROFILES[profile]
    for field in ("reasoning_content", "reasoning", "reasoning_details"):
        if message.get(field) is None or not prof.returns_field(field):
            assert field not in msg
        else:
            assert msg[field] is source[field]
            assert msg[field] == message[field]
    again = D.parse_response(_body(msg))
    assert [c.value for c in again.carriers] == [
        c.value for c in turn.carriers if prof.returns_field(c.kind)
    ]


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.sampled_from(["content", "reasoning_content"]), _text), max_size=8
    ),
    cuts=st.lists(st.integers(0, 4000), max_size=10),
)
def test_split_stream_equals_whole_and_equals_body(
    pieces: list[tuple[str, str]], cuts: list[int]
) -> None:
    data = _sse(*(_chunk({k: v}) for k, v in pieces), _chunk({}, finish="stop"))
    whole = _decode(data)
    dec = D.stream_decoder()
    points = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    split = [e for a, b in itertools.pairwise(points) for e in dec.feed(data[a:b])]
    split += dec.close()
    assert split == whole
    done = whole[-1]
    assert isinstance(done, Done)
    assert done.turn.text == "".join(v for k, v in pieces if k == "content")
    body_turn = D.parse_response(json.dumps(done.turn.raw))
    assert (body_turn.text, body_turn.reasoning_text) == (done.turn.text, done.turn.reasoning_text)


@pytest.mark.parametrize("profile", ["default", "deepseek", "openrouter", "llamacpp"])
def test_raw_replay_keeps_every_received_key_in_order(profile: str) -> None:
    """A proxy-normalised answer (LiteLLM shape) goes back as received: vendor keys our code
    does not model (thinking_blocks, provider_specific_fields, a call's index and
    extra_content) included, in their order; only reasoning fields the profile does not read
    are left out."""
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "step one",
        "thinking_blocks": [{"type": "thinking", "thinking": "step one", "signature": "Eq1"}],
        "provider_specific_fields": {"citations": None, "refusal": None},
        "tool_calls": [
            {
                "index": 0,
                "id": "t1",
                "type": "function",
                "function": {"name": "f", "arguments": "{}"},
                "extra_content": {"google": {"thought_signature": "SIG=="}},
            }
        ],
    }
    [msg] = D.replay(D.parse_response(_body(message, finish="tool_calls")), profile=profile)
    expected = dict(message)
    if profile == "openrouter":
        del expected["reasoning_content"]  # OpenRouter reads reasoning / reasoning_details only
    assert list(msg) == list(expected) and msg == expected
    assert msg["thinking_blocks"] is message["thinking_blocks"]


def test_built_replay_puts_a_tool_calls_extra_content_back() -> None:
    """A chat turn rebuilt from its neutral parts (no native message: e.g. history saved as
    parts) still sends each tool call's ``extra_content`` (Gemini's OpenAI-compatible thought
    signature) on that call: Google's compatibility docs require the signature back on the
    call it came on."""
    turn, message = _native_turn()
    built = Assistant(text=turn.text, tool_calls=turn.tool_calls, carriers=turn.carriers)
    body = D.build_request([User("q"), built], RequestOptions(model="m"))
    (call,) = body["messages"][1]["tool_calls"]
    assert call["extra_content"] == message["tool_calls"][0]["extra_content"]
    assert call["id"] == "t1"
