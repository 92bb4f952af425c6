"""Unit tests for the Gemini dialect: request building, parse errors, stream edge cases."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire.dialect import StreamDecoder
from reasonwire.wire.gemini import (
    DIALECT,
    SCHEMA_FIELD,
    STAND_IN_SIGNATURE,
    same_signature,
    synthetic_call_id,
)
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
    User,
)
from reasonwire.wire.registry import get_dialect

SIG = "Q2lJQjBlMktiNlN5ajFhOTYxRWZiV3Y0VzVDOFJnQUEvaEdsZVY5VllKdG5KRmg0+/8="
SIG2 = "AAAA/+8="


def _body(parts: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3},
        "modelVersion": "gemini-3-pro-preview",
        "responseId": "r1",
        **extra,
    }


def _chunk(parts: list[Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], **extra}


def _sse(payloads: list[Any]) -> bytes:
    return "".join(f"data: {json.dumps(p)}\r\n\r\n" for p in payloads).encode()


def _array(payloads: list[Any]) -> bytes:
    return ("[" + ",\r\n".join(json.dumps(p) for p in payloads) + "]").encode()


def _run(data: bytes, step: int = 0) -> list[Any]:
    dec = DIALECT.stream_decoder()
    events: list[Any] = []
    if step:
        for i in range(0, len(data), step):
            events.extend(dec.feed(data[i : i + step]))
    else:
        events.extend(dec.feed(data))
    events.extend(dec.close())
    return events


# -- dialect basics ----------------------------------------------------------------------------


def test_registered_and_protocol() -> None:
    assert get_dialect("gemini") is DIALECT
    assert isinstance(DIALECT.stream_decoder(), StreamDecoder)


def test_request_path() -> None:
    assert DIALECT.request_path(RequestOptions(model="gemini-3-pro-preview")) == (
        "/models/gemini-3-pro-preview:generateContent"
    )
    assert DIALECT.request_path(RequestOptions(model="models/g", stream=True)) == (
        "/models/g:streamGenerateContent?alt=sse"
    )


# -- build_request -----------------------------------------------------------------------------


def test_build_basic_system_tools_effort_max_tokens() -> None:
    tool = ToolSpec("weather", "Get weather", {"type": "object", "additionalProperties": False})
    body = DIALECT.build_request(
        [System("Be brief."), User("Hi")],
        RequestOptions(model="m", tools=(tool,), effort="high", max_tokens=99),
    )
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "weather", "description": "Get weather", SCHEMA_FIELD: tool.parameters}
                ]
            }
        ],
        "generationConfig": {
            "maxOutputTokens": 99,
            "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "high"},
        },
    }


@pytest.mark.parametrize(
    ("effort", "expected"),
    [
        (None, None),
        ("none", None),
        ("low", {"includeThoughts": True, "thinkingLevel": "low"}),
        ("medium", {"includeThoughts": True, "thinkingLevel": "medium"}),
        ("minimal", {"includeThoughts": True, "thinkingLevel": "minimal"}),
    ],
)
def test_effort_mapping(effort: str | None, expected: Any) -> None:
    body = DIALECT.build_request([User("x")], RequestOptions(model="m", effort=effort))
    assert body.get("generationConfig", {}).get("thinkingConfig") == expected


def test_extra_body_deep_merges_last() -> None:
    body = DIALECT.build_request(
        [User("x")],
        RequestOptions(
            model="m",
            effort="low",
            extra_body={
                "generationConfig": {"temperature": 0, "thinkingConfig": {"thinkingLevel": "x"}},
                "safetySettings": [],
            },
        ),
    )
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "x"},
        "temperature": 0,
    }
    assert body["safetySettings"] == []
    assert list(body)[-1] == "safetySettings"


def test_tool_results_grouped_and_ids() -> None:
    native_parts = (
        {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": SIG},
        {"functionCall": {"name": "b", "args": {"x": 1}, "id": "real-b"}},
    )
    turn = DIALECT.parse_response(_body(list(native_parts)))
    ids = [c.id for c in turn.tool_calls]
    assert ids == [synthetic_call_id("a", 0), "real-b"]
    body = DIALECT.build_request(
        [
            User("go"),
            turn.as_message(),
            ToolResult(ids[0], "a", "1"),
            ToolResult(ids[1], "b", "2"),
            User("more"),
        ],
        RequestOptions(model="m"),
    )
    c = body["contents"]
    assert [x["role"] for x in c] == ["user", "model", "user", "user"]
    assert c[1]["parts"][0] is native_parts[0]
    assert c[2]["parts"] == [
        {"functionResponse": {"name": "a", "response": {"output": "1"}}},
        {"functionResponse": {"id": "real-b", "name": "b", "response": {"output": "2"}}},
    ]


def test_foreign_history_stand_in_on_first_call_only_and_thought_text() -> None:
    foreign = Assistant(
        text="Checking.",
        tool_calls=(ToolCall("c1", "a", '{"q": "x"}'), ToolCall("c2", "b", "")),
        carriers=(
            Carrier("chat", "thought", "x", "I think.", opaque=False, text="I think."),
            Carrier("anthropic", "thinking", "content[0]", {"signature": "s"}, opaque=True),
        ),
        native=Native("chat", ({"role": "assistant", "reasoning_content": "secret"},)),
    )
    body = DIALECT.build_request([User("q"), foreign], RequestOptions(model="m"))
    assert body["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "I think.", "thought": True},
            {"text": "Checking."},
            {
                "functionCall": {"name": "a", "args": {"q": "x"}, "id": "c1"},
                "thoughtSignature": STAND_IN_SIGNATURE,
            },
            {"functionCall": {"name": "b", "args": {}, "id": "c2"}},
        ],
    }
    stripped = DIALECT.build_request(
        [User("q"), foreign], RequestOptions(model="m", keep_carriers=False)
    )
    parts = stripped["contents"][1]["parts"]
    assert {"text": "I think.", "thought": True} not in parts
    assert parts[1]["thoughtSignature"] == STAND_IN_SIGNATURE


def test_each_foreign_step_gets_its_own_stand_in() -> None:
    steps = [Assistant(tool_calls=(ToolCall(f"c{i}", "t", "{}"),)) for i in range(2)]
    msgs = [User("q"), steps[0], ToolResult("c0", "t", "r"), steps[1], ToolResult("c1", "t", "r")]
    body = DIALECT.build_request(msgs, RequestOptions(model="m"))
    signed = [c["parts"][0].get("thoughtSignature") for c in body["contents"][1::2]]
    assert signed == [STAND_IN_SIGNATURE, STAND_IN_SIGNATURE]


def test_keep_carriers_false_strips_native_without_touching_received_parts() -> None:
    parts = [
        {"text": "hmm", "thought": True},
        {"text": "Answer", "thoughtSignature": SIG},
        {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": SIG2},
    ]
    turn = DIALECT.parse_response(_body(parts))
    body = DIALECT.build_request([User("q"), turn.as_message()], RequestOptions(model="m"))
    assert body["contents"][1]["parts"] == parts
    stripped = DIALECT.build_request(
        [User("q"), turn.as_message()], RequestOptions(model="m", keep_carriers=False)
    )
    assert stripped["contents"][1]["parts"] == [
        {"text": "Answer"},
        {"functionCall": {"name": "a", "args": {}}},
    ]
    assert parts[1]["thoughtSignature"] == SIG  # received part unchanged


def test_empty_turns_are_left_out() -> None:
    only_thought = DIALECT.parse_response(_body([{"text": "t", "thought": True}]))
    assert DIALECT.strip(only_thought) == []
    assert DIALECT.replay(Assistant()) == []


@pytest.mark.parametrize("args", ["{not json", "[1, 2]"])
def test_bad_tool_arguments(args: str) -> None:
    with pytest.raises(MalformedBody, match="arguments"):
        DIALECT.build_request(
            [Assistant(tool_calls=(ToolCall("c", "t", args),))], RequestOptions(model="m")
        )


# -- parse_response ----------------------------------------------------------------------------


def test_parse_carriers_and_usage() -> None:
    parts = [
        {"text": "plan", "thought": True, "thoughtSignature": SIG2},
        {"text": "Hello"},
        {"functionCall": {"name": "w", "args": {"city": "Zürich"}}, "thoughtSignature": SIG},
    ]
    usage = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 60,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 20,
    }
    turn = DIALECT.parse_response(json.dumps(_body(parts, usageMetadata=usage)).encode())
    assert (turn.text, turn.reasoning_text) == ("Hello", "plan")
    assert turn.tool_calls == (ToolCall("w-2", "w", '{"city":"Zürich"}'),)
    assert [(c.kind, c.path, c.opaque, c.tool_call_id) for c in turn.carriers] == [
        ("thought", "candidates[0].content.parts[0]", False, None),
        ("thoughtSignature", "candidates[0].content.parts[0].thoughtSignature", True, None),
        ("thoughtSignature", "candidates[0].content.parts[2].thoughtSignature", True, "w-2"),
    ]
    assert turn.usage is not None
    assert turn.usage.as_dict() == {
        "input_uncached": 40,
        "cache_read": 60,
        "cache_write": None,
        "billed_input": 100,
        "output": 27,
        "reasoning": 20,
        "cost_usd": None,
    }
    assert (turn.response_id, turn.model, turn.finish_reason) == (
        "r1",
        "gemini-3-pro-preview",
        "STOP",
    )


def test_parse_blocked_prompt_and_absent_usage() -> None:
    turn = DIALECT.parse_response({"promptFeedback": {"blockReason": "SAFETY"}})
    assert (turn.text, turn.tool_calls, turn.finish_reason, turn.usage) == ("", (), "SAFETY", None)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"{oops", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("[1]", "must be a JSON object"),
        ({"candidates": {}}, "must be a list"),
        ({"candidates": [{"content": {"parts": ["x"]}}]}, r"parts\[0\] must be an object"),
        ({"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}, "with a name"),
        ({"candidates": [], "usageMetadata": {"promptTokenCount": "3"}}, "must be an integer"),
        ({"error": {"code": 400, "message": "bad key"}}, "bad key"),
        ({"candidates": [{"content": {"parts": [{"thoughtSignature": 5}]}}]}, "string"),
    ],
)
def test_parse_malformed(body: Any, match: str) -> None:
    with pytest.raises(MalformedBody, match=match):
        DIALECT.parse_response(body)


# -- streams -----------------------------------------------------------------------------------


def _payloads_two_calls() -> list[Any]:
    return [
        _chunk([{"text": "Let me ", "thought": True}]),
        _chunk([{"text": "see.", "thought": True}]),
        _chunk([{"text": "", "thoughtSignature": SIG2}]),
        _chunk([{"functionCall": {"name": "a", "args": {"x": "é"}}, "thoughtSignature": SIG}]),
        _chunk([{"functionCall": {"name": "b", "args": {}}}]),
        _chunk([{"text": ""}], "STOP", usageMetadata={"promptTokenCount": 5}),
    ]


@pytest.mark.parametrize("frame", [_sse, _array])
@pytest.mark.parametrize("step", [0, 1, 7])
def test_stream_parts_events_and_forms(frame: Any, step: int) -> None:
    events = _run(b"\r\n" + frame(_payloads_two_calls()), step)
    done = events[-1]
    assert isinstance(done, Done)
    turn = done.turn
    assert [dict(p) for p in turn.native.items] == [
        {"text": "Let me see.", "thought": True},
        {"text": "", "thoughtSignature": SIG2},
        {"functionCall": {"name": "a", "args": {"x": "é"}}, "thoughtSignature": SIG},
        {"functionCall": {"name": "b", "args": {}}},
    ]
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["Let me ", "see."]
    assert not [e for e in events if isinstance(e, TextDelta)]
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(e.index, e.id, e.arguments) for e in calls] == [
        (0, "a-2", '{"x":"é"}'),
        (1, "b-3", "{}"),
    ]
    announced = [e.carrier for e in events if isinstance(e, CarrierComplete)]
    assert sorted(announced, key=lambda c: c.path) == sorted(turn.carriers, key=lambda c: c.path)
    assert turn.usage is not None and turn.usage.input_uncached == 5


def test_signature_never_moves_and_text_joins_signed_part() -> None:
    payloads = [
        _chunk([{"text": "A"}]),
        _chunk([{"text": "B", "thoughtSignature": SIG}]),
        _chunk([{"text": "C"}], "STOP"),
    ]
    (done,) = [e for e in _run(_sse(payloads)) if isinstance(e, Done)]
    assert list(done.turn.native.items) == [{"text": "A"}, {"text": "BC", "thoughtSignature": SIG}]
    assert done.turn.text == "ABC"


def test_truncated_stream_keeps_partial_turn() -> None:
    dec = DIALECT.stream_decoder()
    dec.feed(_sse([_chunk([{"text": "Hel"}]), _chunk([{"text": "lo"}])]))
    assert dec.partial_turn().text == "Hello"
    with pytest.raises(TruncatedStream) as info:
        dec.close()
    assert info.value.partial.text == "Hello"


def test_array_missing_bracket_after_finish_is_accepted() -> None:
    data = _array([_chunk([{"text": "ok"}], "STOP")])[:-1]
    assert isinstance(_run(data)[-1], Done)
    unfinished = _array([_chunk([{"text": "ok"}])])[:-1]
    with pytest.raises(TruncatedStream) as info:
        _run(unfinished)
    assert info.value.partial.text == "ok"


def test_error_payload_is_an_event_then_close_raises() -> None:
    dec = DIALECT.stream_decoder()
    events = dec.feed(
        _sse([_chunk([{"text": "x"}]), {"error": {"code": 503, "message": "overloaded"}}])
    )
    errors = [e for e in events if isinstance(e, StreamError)]
    assert [e.message for e in errors] == ["overloaded"]
    with pytest.raises(TruncatedStream, match="overloaded"):
        dec.close()


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"data: {nope\n\n", "event #1"),
        (b"data: [1]\n\n", "must be a JSON object"),
        (b'[{"candidates": 3}]', "bad 'candidates'"),
        (b'[{"candidates": [{"content": {"parts": [1]}}]}]', "part is not an object"),
    ],
)
def test_stream_malformed(data: bytes, match: str) -> None:
    dec = DIALECT.stream_decoder()
    with pytest.raises(MalformedBody, match=match):
        dec.feed(data)
        dec.close()


def test_empty_stream_is_truncated() -> None:
    with pytest.raises(TruncatedStream):
        _run(b"")


def test_multibyte_split_in_both_forms() -> None:
    payloads = [_chunk([{"text": "naïve 🙂"}], "STOP")]
    for frame in (_sse, _array):
        events = _run(frame(payloads), step=1)
        assert events[-1].turn.text == "naïve 🙂"


# -- signatures --------------------------------------------------------------------------------


def test_same_signature() -> None:
    urlsafe = SIG.replace("+", "-").replace("/", "_")
    assert urlsafe != SIG
    assert same_signature(SIG, urlsafe)
    assert same_signature(SIG2.rstrip("="), SIG2)
    assert not same_signature(SIG, SIG2)
    assert same_signature(STAND_IN_SIGNATURE, STAND_IN_SIGNATURE)
    assert not same_signature("not base64!", "not base64?")


def test_array_form_tolerates_leading_whitespace() -> None:
    events = _run(b"\n  \r\n" + _array(_payloads_two_calls()), step=2)
    assert isinstance(events[-1], Done)
    assert events[-1].turn.reasoning_text == "Let me see."
