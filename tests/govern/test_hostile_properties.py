"""Hypothesis against the gateway, both sides hostile.

- Random client bodies (random JSON, random types at known fields, surrogates, odd attempt
  headers) never produce a 500, and never reach the upstream without an evidence row (a
  refused call is never forwarded; a forwarded one is recorded as such).
- Random upstream answers (JSON trees, error bodies, SSE event sequences re-chunked, cut or
  broken) never deliver a planted secret to the client. The generator places the secret only
  in positions a governed client must not see: under keys outside the dialect's visible
  vocabulary (written here, apart from the code's allow-lists), in the known hidden-reasoning
  shapes (thinking text, reasoning summaries and reasoning_text parts, Mistral thinking
  chunks, ``<think>`` blocks on a think-tags route), in parts or items of unknown kinds, and
  in error bodies. Never inside free-form values the client is meant to see (tool arguments
  and inputs, annotations, citations, echoed tools and metadata).
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire.govern.gateway import ATTEMPT_HEADER
from tests.govern.hostile import (
    MAIN,
    ROUTES,
    HostileWorld,
    Reply,
    hostile_world,
    new_conv,
    sse,
    user_body,
)

SECRET = "scrt" + secrets.token_hex(10)

SETTINGS = settings(
    max_examples=int(os.environ.get("RW_HOSTILE_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def hw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    with hostile_world(tmp_path_factory.mktemp("hostile-props")) as world:
        yield world


# -- random client bodies -----------------------------------------------------------------------

_odd_text = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["\ud800", "a\udfffb", "\udc00\ud800", "\x00", "\u2028", "<think>"]),
)
client_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _odd_text,
)
client_json = st.recursive(
    client_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(_odd_text, kids, max_size=3)
    ),
    max_leaves=10,
)
KNOWN_FIELDS = {
    "chat": [
        "model",
        "messages",
        "tools",
        "tool_choice",
        "stream",
        "stream_options",
        "n",
        "max_tokens",
        "temperature",
        "stop",
        "metadata",
        "response_format",
        "reasoning_effort",
        "chat_template_kwargs",
        "models",
        "extra_body",
    ],
    "responses": [
        "model",
        "input",
        "instructions",
        "tools",
        "stream",
        "store",
        "include",
        "max_output_tokens",
        "reasoning",
        "metadata",
        "text",
        "previous_response_id",
    ],
    "anthropic": [
        "model",
        "messages",
        "system",
        "max_tokens",
        "tools",
        "stream",
        "thinking",
        "output_config",
        "metadata",
        "stop_sequences",
        "top_k",
    ],
}
MESSAGE_FIELDS = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "reasoning_content",
    "type",
    "id",
    "call_id",
    "output",
]


@st.composite
def client_bodies(draw: st.DrawFn, route_id: str, conv: str) -> tuple[bytes, dict[str, Any]]:
    dialect = ROUTES[route_id][0]
    kind = draw(st.sampled_from(["random", "fields", "message", "extra"]))
    body: Any
    if kind == "random":
        body = draw(client_json)
    else:
        body = user_body(route_id, conv, stream=draw(st.booleans()))
        if kind == "fields":
            for name in draw(st.lists(st.sampled_from(KNOWN_FIELDS[dialect]), max_size=3)):
                body[name] = draw(client_json)
        elif kind == "message":
            key = "input" if dialect == "responses" else "messages"
            msg = dict(body[key][0])
            for name in draw(st.lists(st.sampled_from(MESSAGE_FIELDS), min_size=1, max_size=3)):
                msg[name] = draw(client_json)
            body[key] = [*body[key], msg]
        else:
            body.update(draw(st.dictionaries(_odd_text, client_json, max_size=4)))
    ascii_only = draw(st.booleans())
    raw = json.dumps(body, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    headers: dict[str, Any] = {}
    if draw(st.booleans()):
        latin = st.characters(min_codepoint=0x21, max_codepoint=0xFF, exclude_characters="\x7f")
        value = draw(st.text(latin.filter(lambda ch: not 0x80 <= ord(ch) < 0xA1), max_size=6))
        headers[ATTEMPT_HEADER] = value
    return raw, headers


@SETTINGS
@given(data=st.data(), dialect=st.sampled_from(sorted(MAIN)))
def test_random_client_bodies_never_500_and_never_unrecorded(
    hw: HostileWorld, data: st.DataObject, dialect: str
) -> None:
    route_id, conv = MAIN[dialect], new_conv()
    raw, headers = data.draw(client_bodies(route_id, conv))
    before = hw.upstream.count()
    hdrs = {k: v.encode("latin-1") if isinstance(v, str) else v for k, v in headers.items()}
    got = hw.post(route_id, conv, raw=raw, headers=hdrs)  # type: ignore[arg-type]
    assert got.status != 500 and got.status in (200, 400, 403, 413, 431, 502), got.raw[:300]
    rows = hw.rows(conv)
    assert len(rows) == 1, rows
    forwarded = hw.upstream.count() - before
    if rows[0].outcome == "refused":
        assert forwarded == 0
        assert got.status >= 400 and got.json()["error"]["code"] == rows[0].reason
    else:
        assert forwarded == 1 and rows[0].outcome in ("forwarded", "upstream-error")


# -- random upstream answers --------------------------------------------------------------------

VOCAB: dict[str, frozenset[str]] = {
    # every key name a governed client may see somewhere in an answer of the dialect
    "chat": frozenset(
        [
            "id",
            "object",
            "created",
            "model",
            "system_fingerprint",
            "service_tier",
            "choices",
            "index",
            "finish_reason",
            "message",
            "delta",
            "role",
            "content",
            "refusal",
            "tool_calls",
            "type",
            "function",
            "name",
            "arguments",
            "extra_content",
            "google",
            "thought_signature",
            "usage",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "prompt_tokens_details",
            "cached_tokens",
            "audio_tokens",
            "completion_tokens_details",
            "reasoning_tokens",
            "accepted_prediction_tokens",
            "rejected_prediction_tokens",
            "cost",
            "text",
            "error",
        ]
    ),
    "responses": frozenset(
        [
            "id",
            "object",
            "created_at",
            "completed_at",
            "status",
            "model",
            "output",
            "usage",
            "error",
            "incomplete_details",
            "reason",
            "previous_response_id",
            "parallel_tool_calls",
            "tool_choice",
            "tools",
            "store",
            "max_output_tokens",
            "temperature",
            "top_p",
            "truncation",
            "metadata",
            "type",
            "role",
            "content",
            "text",
            "annotations",
            "refusal",
            "call_id",
            "name",
            "arguments",
            "encrypted_content",
            "summary",
            "input_tokens",
            "input_tokens_details",
            "cached_tokens",
            "output_tokens",
            "output_tokens_details",
            "reasoning_tokens",
            "total_tokens",
            "cost",
            "code",
            "sequence_number",
            "response",
            "item",
            "output_index",
            "item_id",
            "content_index",
            "part",
            "delta",
            "annotation_index",
            "annotation",
        ]
    ),
    "anthropic": frozenset(
        [
            "id",
            "type",
            "role",
            "model",
            "content",
            "stop_reason",
            "stop_sequence",
            "usage",
            "text",
            "citations",
            "name",
            "input",
            "thinking",
            "signature",
            "data",
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "cache_creation",
            "service_tier",
            "message",
            "index",
            "content_block",
            "delta",
            "partial_json",
            "citation",
            "signature",
            "error",
            "ephemeral_5m_input_tokens",
            "ephemeral_1h_input_tokens",
        ]
    ),
}
FREE_FORM = frozenset(
    {
        "arguments",
        "input",
        "annotations",
        "annotation",
        "citations",
        "citation",
        "tools",
        "tool_choice",
        "metadata",
        "partial_json",
        "thought_signature",
        "encrypted_content",
        "signature",
        "data",
    }
)
"""Values the client is meant to see whatever they hold: never given a hidden key."""

HIDDEN_NAMES = [
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "thinking",
    "thinking_blocks",
    "provider_specific_fields",
    "reasoning_text",
    "summary",
    "thought",
    "analysis",
    "chain_of_thought",
    "hidden_reasoning",
    "x_reasoning",
    "instructions",
    "logprobs",
    "obfuscation",
    "_trace",
    "think",
]
UNKNOWN_TAGS = [
    "thinking",
    "reasoning",
    "reasoning_text",
    "summary_text",
    "reasoning.text",
    "thought",
    "analysis",
    "thinking_delta",
    "reasoning_delta",
]
VISIBLE_TEXT_TAGS = frozenset(
    {
        "text",
        "output_text",
        "text_delta",
        "refusal",
        "tool_use",
        "function_call",
        "message",
        "redacted_thinking",
        "input_json_delta",
        "signature_delta",
        "citations_delta",
    }
)

leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4))
tree = st.recursive(
    leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=4), kids, max_size=3)
    ),
    max_leaves=5,
)
secret_tree = st.one_of(
    st.just(SECRET),
    st.builds(lambda t, k: {k: SECRET, "_": t}, tree, st.text(max_size=6)),
    st.builds(lambda t: [t, SECRET], tree),
    st.builds(lambda t, k: {"type": "text", "text": SECRET, k: t}, tree, st.text(max_size=3)),
)


def hidden_keys(dialect: str) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HIDDEN_NAMES), st.text(min_size=1, max_size=10)).filter(
        lambda k: k not in VOCAB[dialect]
    )


def unknown_tags(dialect: str) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(UNKNOWN_TAGS), st.text(min_size=1, max_size=8)).filter(
        lambda t: t not in VISIBLE_TEXT_TAGS
    )


def decorate(draw: st.DrawFn, node: Any, dialect: str, tagged_lists: frozenset[str]) -> Any:
    """``node`` with secrets added at hidden positions: hidden keys on objects, unknown-kind
    entries in tagged lists; free-form values are left alone."""
    if isinstance(node, dict):
        out = {
            k: v if k in FREE_FORM else decorate(draw, v, dialect, tagged_lists)
            for k, v in node.items()
        }
        for k, v in out.items():
            if k in tagged_lists and isinstance(v, list) and draw(st.booleans()):
                entry = {
                    "type": draw(unknown_tags(dialect)),
                    "text": SECRET,
                    "thinking": SECRET,
                    "summary": [{"type": "summary_text", "text": SECRET}],
                }
                v.insert(draw(st.integers(0, len(v))), entry)
        for _ in range(draw(st.integers(0, 2))):
            out[draw(hidden_keys(dialect))] = draw(secret_tree)
        return out
    if isinstance(node, list):
        return [decorate(draw, x, dialect, tagged_lists) for x in node]
    return node


TAGGED_LISTS = {
    "chat": frozenset({"content"}),
    "responses": frozenset({"output", "content", "summary"}),
    "anthropic": frozenset({"content"}),
}


def dumps(value: Any, escape: bool) -> bytes:
    """JSON text; with ``escape`` every key's ASCII letters are written as \\u escapes."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            key = json.dumps(k)
            if escape:
                key = (
                    '"'
                    + "".join(
                        f"\\u{ord(ch):04x}" if ch.isascii() and ch.isalpha() else ch
                        for ch in key[1:-1]
                    )
                    + '"'
                )
            parts.append(key.encode() + b":" + dumps(v, escape))
        return b"{" + b",".join(parts) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(dumps(v, escape) for v in value) + b"]"
    return json.dumps(value).encode()


def _text_with_think(draw: st.DrawFn) -> tuple[str, str]:
    """(text with a <think> block holding the secret, the text a client should see)."""
    plain = st.text(st.characters(codec="ascii", exclude_characters="<"), max_size=12)
    before, after = draw(plain), draw(plain)
    return f"{before}<think>{SECRET}</think>{after}", before + after


def chat_answer(draw: st.DrawFn, tags: bool) -> tuple[Any, str | None]:
    content: Any
    expect: str | None = None
    if tags:
        content, expect = _text_with_think(draw)
    elif draw(st.booleans()):
        content = [
            {"type": "thinking", "thinking": [{"type": "text", "text": SECRET}]},
            {"type": "text", "text": "shown"},
        ]
    else:
        content = "shown"
    message = {
        "role": "assistant",
        "content": content,
        "reasoning_content": SECRET,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 1,
            "completion_tokens": 2,
            "total_tokens": 3,
            "completion_tokens_details": {"reasoning_tokens": 1},
        },
    }
    return body, expect


def responses_answer(draw: st.DrawFn, tags: bool) -> tuple[Any, str | None]:
    text, expect = _text_with_think(draw) if tags else ("shown", None)
    body = {
        "id": "r1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "encrypted_content": "enc",
                "summary": [{"type": "summary_text", "text": SECRET}],
                "content": [{"type": "reasoning_text", "text": SECRET}],
            },
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
            {"type": "function_call", "id": "fc", "call_id": "c", "name": "f", "arguments": "{}"},
        ],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 2,
            "total_tokens": 3,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 1},
        },
    }
    return body, expect


def anthropic_answer(draw: st.DrawFn, tags: bool) -> tuple[Any, str | None]:
    text, expect = _text_with_think(draw) if tags else ("shown", None)
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "thinking", "thinking": SECRET, "signature": "sig"},
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"q": 1}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1,
            "output_tokens": 2,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0},
        },
    }
    return body, expect


ANSWERS = {"chat": chat_answer, "responses": responses_answer, "anthropic": anthropic_answer}
ROUTE_CHOICES = [("chat", False), ("chat", True), ("responses", False), ("anthropic", False)]
TAG_ROUTES = {
    "chat": "chat/h-tags",
    "responses": "responses/h-resp-tags",
    "anthropic": "anthropic/h-claude-tags",
}


@SETTINGS
@given(
    data=st.data(),
    choice=st.sampled_from([*ROUTE_CHOICES, ("responses", True), ("anthropic", True)]),
)
def test_random_upstream_json_never_delivers_the_secret(
    hw: HostileWorld, data: st.DataObject, choice: tuple[str, bool]
) -> None:
    dialect, tags = choice
    route_id = TAG_ROUTES[dialect] if tags else MAIN[dialect]
    body, _ = ANSWERS[dialect](data.draw, tags)
    body = decorate(data.draw, body, dialect, TAGGED_LISTS[dialect])
    status = data.draw(st.sampled_from([200, 200, 200, 400, 401, 429, 500, 503]))
    if status != 200:  # an error body: nothing of it is visible, whatever it holds
        body = data.draw(st.one_of(secret_tree, st.just(body)))
    raw = dumps(body, data.draw(st.booleans()))
    conv = new_conv()
    hw.upstream.plan(conv, Reply(status, raw))
    got = hw.post(route_id, conv, user_body(route_id, conv))
    assert got.status != 500 or status == 500, got.raw[:300]
    assert SECRET not in got.seen(), got.raw[:2000]
    assert len(hw.rows(conv)) == 1


# -- random upstream streams --------------------------------------------------------------------


def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def chat_events(draw: st.DrawFn, tags: bool) -> tuple[list[Any], list[Any], str | None]:
    """(visible events in order, hidden events to interleave, expected visible text)."""
    text, expect = _text_with_think(draw) if tags else ("shown", "shown")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    visible = [chunk({"role": "assistant", "content": ""})]
    visible += [chunk({"content": p}) for p in _pieces(draw, text)]
    visible += [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        },
        "[DONE]",
    ]
    hidden = [
        chunk({"reasoning_content": SECRET}),
        chunk({"reasoning": SECRET}),
        chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": SECRET}]}]}),
        chunk({draw(hidden_keys("chat")): draw(secret_tree)}),
    ]
    return visible, hidden, expect


def responses_events(draw: st.DrawFn, tags: bool) -> tuple[list[Any], list[Any], str | None]:
    text, expect = _text_with_think(draw) if tags else ("shown", "shown")
    at = {"item_id": "m1", "output_index": 1, "content_index": 0}
    rs = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}
    msg = {
        "type": "message",
        "id": "m1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    resp = {
        "id": "r1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": [rs, msg],
    }
    visible: list[Any] = [
        {"type": "response.created", "response": {**resp, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": rs},
        {"type": "response.output_item.done", "output_index": 0, "item": rs},
        {"type": "response.output_item.added", "output_index": 1, "item": {**msg, "content": []}},
        {
            "type": "response.content_part.added",
            **at,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        *({"type": "response.output_text.delta", **at, "delta": p} for p in _pieces(draw, text)),
        {"type": "response.output_text.done", **at, "text": text},
        {"type": "response.output_item.done", "output_index": 1, "item": msg},
        {"type": "response.completed", "response": resp},
    ]
    rs0 = {"item_id": "rs_1", "output_index": 0, "content_index": 0}
    hidden = [
        {"type": "response.reasoning_text.delta", **rs0, "delta": SECRET},
        {"type": "response.reasoning_summary_text.delta", **rs0, "delta": SECRET},
        {
            "type": "response.content_part.added",
            **rs0,
            "part": {"type": "reasoning_text", "text": SECRET},
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                **rs,
                "summary": [{"type": "summary_text", "text": SECRET}],
                "content": [{"type": "reasoning_text", "text": SECRET}],
            },
        },
        {"type": draw(unknown_tags("responses")), "delta": SECRET, "text": SECRET},
    ]
    return visible, hidden, expect


def anthropic_events(draw: st.DrawFn, tags: bool) -> tuple[list[Any], list[Any], str | None]:
    text, expect = _text_with_think(draw) if tags else ("shown", "shown")
    start = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    visible: list[Any] = [
        {"type": "message_start", "message": start},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": p}}
            for p in _pieces(draw, text)
        ),
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    hidden = [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": SECRET},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": SECRET, "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": draw(unknown_tags("anthropic")), "text": SECRET},
        },
        {"type": draw(unknown_tags("anthropic")), "index": 1, "delta": {"text": SECRET}},
    ]
    return visible, hidden, expect


EVENTS = {"chat": chat_events, "responses": responses_events, "anthropic": anthropic_events}


def _encode(ev: Any, dialect: str, escape: bool) -> bytes:
    if ev == "[DONE]":
        return sse(b"[DONE]")
    name = ev.get("type") if dialect != "chat" and isinstance(ev.get("type"), str) else None
    return sse(dumps(ev, escape), event=name)


@SETTINGS
@given(data=st.data(), choice=st.sampled_from(ROUTE_CHOICES))
def test_random_upstream_streams_never_deliver_the_secret(
    hw: HostileWorld, data: st.DataObject, choice: tuple[str, bool]
) -> None:
    dialect, tags = choice
    draw = data.draw
    route_id = TAG_ROUTES[dialect] if tags else MAIN[dialect]
    visible, hidden, expect = EVENTS[dialect](draw, tags)
    events = [
        e if e == "[DONE]" else decorate(draw, e, dialect, TAGGED_LISTS[dialect]) for e in visible
    ]
    for ev in draw(st.lists(st.sampled_from(hidden), max_size=6)):
        events.insert(draw(st.integers(0, len(events))), ev)
    escape = draw(st.booleans())
    blob = b"".join(_encode(e, dialect, escape) for e in events)
    broken = draw(st.sampled_from([None, None, "cut", "malformed"]))
    if broken == "malformed":
        at = draw(st.integers(0, len(events)))
        bad = b'data: {"choices": [{"delta": {"content": "' + SECRET.encode() + b"\n\n"
        blob = (
            b"".join(_encode(e, dialect, escape) for e in events[:at])
            + bad
            + b"".join(_encode(e, dialect, escape) for e in events[at:])
        )
    sizes = draw(st.lists(st.integers(1, 300), min_size=1, max_size=8))
    chunks, pos, i = [], 0, 0
    end = draw(st.integers(0, len(blob))) if broken == "cut" else len(blob)
    while pos < end:
        n = min(sizes[i % len(sizes)], end - pos)
        chunks.append(blob[pos : pos + n])
        pos, i = pos + n, i + 1
    conv = new_conv()
    reply = Reply(chunks=chunks or [b""], content_type="text/event-stream", cut=broken == "cut")
    hw.upstream.plan(conv, reply)
    got = hw.post(route_id, conv, user_body(route_id, conv, stream=True))
    assert got.status == 200, got.raw[:300]
    assert SECRET not in got.seen(), got.raw[:3000]
    # Think-tag routes of the other dialects are left out of the stream choices: their stream
    # projectors ignore the profile (see the xfail in test_hostile_upstream).
    (row,) = hw.rows(conv)
    if broken is None and row.outcome == "forwarded":
        texts = []
        for _, d in got.events():
            if not isinstance(d, dict):
                continue
            if dialect == "chat":
                for ch in d.get("choices") or []:
                    c = (ch.get("delta") or {}).get("content")
                    texts.append(c if isinstance(c, str) else "")
            elif dialect == "responses" and d.get("type") == "response.output_text.delta":
                texts.append(d["delta"])
            elif dialect == "anthropic" and (d.get("delta") or {}).get("type") == "text_delta":
                texts.append(d["delta"]["text"])
        assert "".join(texts) == expect
