"""The helpers every dialect shares (body loading, arguments text, the model turns a request
sends back, Google's usage arithmetic, the stream end): each rule held by literal cases."""

from __future__ import annotations

import hashlib
from types import ModuleType

import pytest

from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire import get_dialect
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.facts import ErrorInfo, SentCarrier
from reasonwire.wire.google_usage import UsageNames, google_usage
from reasonwire.wire.jsontext import arguments_object, arguments_text, json_body, json_object
from reasonwire.wire.model import (
    Assistant,
    Done,
    Native,
    ToolCall,
    Turn,
    Usage,
    native_items,
)
from reasonwire.wire.responses._parse import arguments_text as responses_arguments_text
from reasonwire.wire.turnparts import TurnParts
from reasonwire.wire.vault import carriers_by_turn, sent_turns

# -- jsontext ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "absent", "expected"),
    [
        ('{"a": 1}', "{}", '{"a": 1}'),  # text as the provider wrote it, spaces kept
        ("", "{}", ""),  # an empty string is text, not absent
        (None, "{}", "{}"),
        (None, "", ""),
        ({"b": 1, "a": "é"}, "{}", '{"b":1,"a":"é"}'),  # key order and non-ASCII kept
        ([1, 2], "{}", "[1,2]"),
    ],
)
def test_arguments_text(value: object, absent: str, expected: str) -> None:
    assert arguments_text(value, absent) == expected


def test_responses_arguments_start_empty_when_absent() -> None:
    # a function call item opens with no arguments: its deltas build them from ""
    assert responses_arguments_text(None) == ""
    assert responses_arguments_text({"x": [1]}) == '{"x":[1]}'


def test_json_body_and_object() -> None:
    decoded = {"a": [1, 2]}
    assert json_object(decoded, "b") is decoded  # a decoded value passes as it is
    assert json_object(b'{"a": [1, 2]}', "b") == {"a": [1, 2]}
    assert json_body("[1]", "b") == [1]
    with pytest.raises(MalformedBody, match=r"^the body is not UTF-8 \("):
        json_object(b"\xff\xfe", "the body")
    with pytest.raises(MalformedBody, match=r"^the body is not valid JSON \("):
        json_object("{oops", "the body")
    with pytest.raises(MalformedBody, match=r"^the body must be a JSON object, got list$"):
        json_object("[1]", "the body")


def test_arguments_object() -> None:
    assert arguments_object(ToolCall("c1", "f", '{"a": 1}'), "X") == {"a": 1}
    assert arguments_object(ToolCall("c1", "f", "  "), "X") == {}
    with pytest.raises(MalformedBody, match=r"'c1' \(f\) arguments must be a JSON object for X"):
        arguments_object(ToolCall("c1", "f", "[1]"), "X")
    with pytest.raises(MalformedBody, match=r"'c1' \(f\) arguments are not JSON"):
        arguments_object(ToolCall("c1", "f", "nope"), "X")


# -- the model turns a request sends back ------------------------------------------------------


def test_sent_turns_keeps_only_the_role() -> None:
    mine = {"role": "assistant", "reasoning_content": "r"}
    other = {"role": "assistant"}
    body = {"messages": [{"role": "user", "reasoning_content": "u"}, "junk", mine, 3, other]}
    assert list(sent_turns(body, "messages", "assistant")) == [mine, other]
    assert list(sent_turns({"contents": [mine, {"role": "model"}]}, "contents", "model")) == [
        {"role": "model"}
    ]
    assert list(sent_turns({}, "messages", "assistant")) == []


def test_request_carriers_ignore_other_roles() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi", "reasoning_content": "not the model's"},
            {"role": "assistant", "content": "ok", "reasoning_content": "mine"},
        ]
    }
    assert get_dialect("chat").request_carriers(body) == [
        SentCarrier("reasoning_content", 4, False)
    ]


def test_reattach_leaves_user_turns_alone() -> None:
    user = {"role": "user", "content": "hi", "reasoning_content": "kept as sent"}
    body = {"messages": [dict(user), {"role": "assistant", "content": "ok"}]}
    get_dialect("chat").reattach(body, lambda key: None)
    assert body["messages"][0] == user


# -- a message's own native payload ------------------------------------------------------------


def test_native_items() -> None:
    native = Native("chat", ({"role": "assistant", "content": "x"},))
    message = Assistant(text="x", native=native)
    assert native_items(message, "chat") == native.items
    assert native_items(message, "responses") is None
    assert native_items(Assistant(text="x"), "chat") is None


# -- Google's usage ------------------------------------------------------------------------------

_NAMES = UsageNames("the usage", "in", "cached", "tools", "out", "thoughts")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # input includes cached; tool use is billed as input; thoughts are billed as output
        (
            {"in": 10, "cached": 4, "tools": 3, "out": 5, "thoughts": 7},
            Usage(input_uncached=9, cache_read=4, output=12, reasoning=7),
        ),
        ({"in": 10}, Usage(input_uncached=10)),
        ({"tools": 2}, Usage(input_uncached=2)),
        ({"thoughts": 7}, Usage(output=7, reasoning=7)),
        ({}, Usage()),
    ],
)
def test_google_usage(raw: dict[str, int], expected: Usage) -> None:
    got = google_usage(raw, _NAMES)
    assert got is not None
    assert got.as_dict() == expected.as_dict()
    assert got.raw is raw


def test_google_usage_refuses_non_integers() -> None:
    assert google_usage(None, _NAMES) is None
    with pytest.raises(MalformedBody, match=r"^the usage must be an object$"):
        google_usage([1], _NAMES)
    with pytest.raises(MalformedBody, match=r"^the usage\.in must be an integer, got True$"):
        google_usage({"in": True}, _NAMES)


# -- the end of a stream -------------------------------------------------------------------------


def test_unfinished_stream_raises_with_partial_turn() -> None:
    dec = get_dialect("responses").stream_decoder()
    with pytest.raises(TruncatedStream) as info:
        dec.close()
    assert isinstance(info.value.partial, Turn)


def test_finished_stream_ends_with_done_after_its_carriers() -> None:
    # chat announces the carriers of the finished turn just before Done
    data = (
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"r"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    dec = get_dialect("chat").stream_decoder()
    dec.feed(data)
    tail = dec.close()
    assert [e.type for e in tail] == ["carrier", "done"]
    assert isinstance(tail[-1], Done) and tail[-1].turn.text == "a"


# -- Google's error statuses -----------------------------------------------------------------

# google.rpc.Code names (googleapis google/rpc/code.proto) passed on as written
_PASSED = [
    "INVALID_ARGUMENT",
    "FAILED_PRECONDITION",
    "PERMISSION_DENIED",
    "NOT_FOUND",
    "RESOURCE_EXHAUSTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DEADLINE_EXCEEDED",
]


@pytest.mark.parametrize("dialect", ["gemini", "interactions"])
def test_google_error_statuses(dialect: str) -> None:
    d = get_dialect(dialect)
    for status in _PASSED:
        body = d.error_body(500, "r", "m", ErrorInfo("m", status))
        assert body["error"]["status"] == status
    # anything else: the status of the HTTP code (500 -> INTERNAL)
    body = d.error_body(500, "r", "m", ErrorInfo("m", "CANCELLED"))
    assert body["error"]["status"] == "INTERNAL"


# -- the chat vault key ------------------------------------------------------------------------


def test_chat_vault_key_is_the_text_typed_parts() -> None:
    # a turn without tool calls is keyed by its visible text: the "text" parts only
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "reasoning_content": "r",
                    "content": [
                        {"type": "text", "text": "seen"},
                        {"type": "reference", "text": "not text-typed"},
                    ],
                },
            }
        ]
    }
    turn = get_dialect("chat").parse_response(body)
    ((key, fields),) = get_dialect("chat").vault_entries(turn)
    assert key == "tx:" + hashlib.sha256(b"seen").hexdigest()[:32]
    assert fields == {"reasoning_content": "r"}


def test_chat_visible_text_is_every_part_but_thinking() -> None:
    # the answer's text joins the string text of every part but Magistral thinking parts
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "t"}]},
                        {"type": "text", "text": "a"},
                        {"text": "b"},
                        {"type": "image_url", "image_url": {"url": "u"}},
                    ],
                },
            }
        ]
    }
    assert get_dialect("chat").parse_response(body).text == "ab"


def test_anthropic_message_stop_closes_open_blocks() -> None:
    # a block still open at message_stop is finished then: the final turn holds it
    data = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":'
        b'"message","role":"assistant","model":"x","content":[],"stop_reason":null,'
        b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    dec = get_dialect("anthropic").stream_decoder()
    dec.feed(data)
    done = dec.close()[-1]
    assert isinstance(done, Done)
    assert done.turn.text == "hi"
    assert done.turn.native.items == ({"type": "text", "text": "hi"},)


# -- the carriers a request sends back, by turn (vault.carriers_by_turn) --------------------


def test_carriers_before_the_last_new_turn_are_marked_earlier() -> None:
    # entries: user, model(a), user, model(b, c), user(new turn), model(d)
    history = ["u", "a", "u", "bc", "u", "d"]
    found = carriers_by_turn(
        history,
        lambda entry: entry == "u",
        lambda entry: [] if entry == "u" else [SentCarrier(k, 1, False) for k in str(entry)],
    )
    assert [(c.kind, c.earlier_turn) for c in found] == [
        ("a", True),
        ("b", True),
        ("c", True),
        ("d", False),
    ]


def test_carriers_without_a_new_turn_are_all_current() -> None:
    found = carriers_by_turn(["a"], lambda entry: False, lambda e: [SentCarrier("a", 1, True)])
    assert found == [SentCarrier("a", 1, True)]


# -- the Turn of a parser's pieces (turnparts.TurnParts) -----------------------------------


def test_turn_parts_join_text_plainly_and_reasoning_with_the_given_separator() -> None:
    got = TurnParts(text=["a", "b"], reasoning=["r1", "r2"])
    turn = got.turn(
        Native("responses", ()), {"id": "x", "model": 3}, usage=None, finish=None,
        reasoning_join="\n\n",
    )  # fmt: skip
    assert (turn.dialect, turn.text, turn.reasoning_text) == ("responses", "ab", "r1\n\nr2")
    assert (turn.response_id, turn.model, turn.finish_reason) == ("x", None, None)


def test_turn_parts_read_the_id_and_model_under_the_given_names() -> None:
    raw = {"responseId": "r", "modelVersion": "m", "id": "no"}
    turn = TurnParts().turn(
        Native("gemini", ()), raw, usage=None, finish="STOP", names=("responseId", "modelVersion")
    )
    assert (turn.response_id, turn.model, turn.finish_reason) == ("r", "m", "STOP")
    assert turn.raw == raw


# -- a dialect's facts taken from its _facts module (Dialect.FACT_NAMES) -------------------


def test_a_dialect_takes_its_facts_module_constants_unless_its_body_sets_them() -> None:
    facts = ModuleType("toy_facts")
    facts.ERROR_TYPES = frozenset({"boom"})  # type: ignore[attr-defined]
    facts.FORWARDED_HEADERS = ("x-version",)  # type: ignore[attr-defined]
    facts.STREAM_EVENT = "not in the table"  # type: ignore[attr-defined]

    class Toy(Dialect, facts=facts):
        forwarded_headers = ("x-own",)

    assert Toy.error_types == frozenset({"boom"})
    assert Toy.forwarded_headers == ("x-own",)  # the class body wins
    assert Toy.stream_shape is None  # a constant the table does not name is not taken
    assert Toy.controls == ()  # absent from the module: the default stays


def test_a_dialect_detects_with_its_facts_module_function() -> None:
    facts = ModuleType("toy_facts")
    facts.detects = lambda payload: payload == {"toy": 1}  # type: ignore[attr-defined]

    class Toy(Dialect, facts=facts):
        pass

    assert Toy().detects({"toy": 1}) is True
    assert Toy().detects({"toy": 2}) is False
    assert Dialect().detects({"toy": 1}) is False  # no facts module: detects nothing
