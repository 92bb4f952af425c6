"""A hostile upstream behind the gateway, the official SDKs as clients.

Every hidden-reasoning shape (WIRE.md) is planted with a unique canary; no canary may reach
the client (raw bytes and headers, JSON and stream, escapes undone) while visible text, tool
calls, usage and opaque carriers still do. Upstream errors reach the client as the gateway's
own error object only: no upstream key, no upstream text, no vaulted reasoning; Retry-After
passes; a cut or failed stream ends so that the SDK raises, never as a clean finish; every
call leaves an evidence row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from tests.govern.hostile import (
    MAIN,
    ROUTES,
    TAGS,
    Canaries,
    HostileWorld,
    Received,
    Reply,
    Seen,
    Visible,
    anthropic_json,
    anthropic_stream,
    anthropic_stream_events,
    chat_json,
    chat_stream,
    chat_stream_events,
    chat_text_stream,
    hostile_world,
    new_conv,
    responses_json,
    responses_stream,
    responses_stream_events,
    sse,
    user_body,
)

RUNTIME_KEY = "runtime-holds-no-provider-key"
DIALECTS = ["chat", "responses", "anthropic"]


@pytest.fixture(scope="module")
def hw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    with hostile_world(tmp_path_factory.mktemp("hostile")) as world:
        yield world


class Tee:
    """Every byte and header the client received, through an httpx (or httpx2, which the
    anthropic SDK uses) transport wrapper."""

    def __init__(self) -> None:
        self.raw = bytearray()
        self.headers: list[dict[str, str]] = []

    def client(self, mod: Any = httpx) -> Any:
        tee = self

        class _Stream(mod.SyncByteStream):  # type: ignore[misc,name-defined]
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def __iter__(self) -> Iterator[bytes]:
                for chunk in self.inner:
                    tee.raw += chunk
                    yield chunk

            def close(self) -> None:
                self.inner.close()

        class _Transport(mod.BaseTransport):  # type: ignore[misc,name-defined]
            def __init__(self) -> None:
                self.inner = mod.HTTPTransport()

            def handle_request(self, request: Any) -> Any:
                resp = self.inner.handle_request(request)
                tee.headers.append(dict(resp.headers))
                return mod.Response(
                    resp.status_code,
                    headers=resp.headers,
                    stream=_Stream(resp.stream),
                    extensions=resp.extensions,
                )

        return mod.Client(transport=_Transport(), timeout=30)

    def received(self) -> Received:
        merged: dict[str, str] = {}
        for h in self.headers:
            merged.update(h)
        return Received(0, merged, bytes(self.raw))


def _openai(hw: HostileWorld, conv: str, route_id: str, tee: Tee) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=hw.url + "/v1",
        api_key=RUNTIME_KEY,
        max_retries=0,
        default_headers=hw.headers(conv, route_id),
        http_client=tee.client(),
    )


def _anthropic(hw: HostileWorld, conv: str, route_id: str, tee: Tee) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=hw.url,
        api_key=RUNTIME_KEY,
        max_retries=0,
        default_headers=hw.headers(conv, route_id),
        http_client=tee.client(httpx2),
    )


def _no_leak(c: Canaries, seen: str, *secrets: str) -> None:
    assert c.leaked(seen) == {}, "hidden reasoning reached the client"
    for s in secrets:
        assert s not in seen


def _task(conv: str) -> list[Any]:
    return [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]


# -- what a client assembles through the SDK ----------------------------------------------------


class Got:
    """What the SDK client assembled: text, tool call, usage, opaque carriers."""

    def __init__(self) -> None:
        self.text = ""
        self.call_id = ""
        self.args = ""
        self.input_tokens: int | None = None
        self.opaque: list[str] = []


def _chat_sdk(client: openai.OpenAI, model: str, conv: str, stream: bool) -> Got:
    got = Got()
    if not stream:
        r = client.chat.completions.create(model=model, messages=_task(conv))
        msg = r.choices[0].message
        got.text = msg.content if isinstance(msg.content, str) else json.dumps(msg.content)
        call = (msg.tool_calls or [])[0]
        got.call_id = call.id
        got.args = call.function.arguments  # type: ignore[union-attr]
        got.input_tokens = r.usage.prompt_tokens if r.usage else None
        return got
    with client.chat.completions.create(model=model, messages=_task(conv), stream=True) as s:
        for chunk in s:
            if chunk.usage:
                got.input_tokens = chunk.usage.prompt_tokens
            for ch in chunk.choices:
                got.text += ch.delta.content or ""
                for tc in ch.delta.tool_calls or []:
                    got.call_id = tc.id or got.call_id
                    got.args += (tc.function and tc.function.arguments) or ""
    return got


def _responses_sdk(client: openai.OpenAI, model: str, conv: str, stream: bool) -> Got:
    got = Got()
    if stream:
        with client.responses.stream(model=model, input=_task(conv)) as s:
            for _ in s:
                pass
            r = s.get_final_response()
    else:
        r = client.responses.create(model=model, input=_task(conv))
    assert [o.type for o in r.output] == ["reasoning", "message", "function_call"]
    rs, _, call = r.output
    assert rs.type == "reasoning" and rs.summary == [] and not rs.content
    got.opaque.append(rs.encrypted_content or "")
    got.text = r.output_text
    assert call.type == "function_call"
    got.call_id, got.args = call.call_id, call.arguments
    got.input_tokens = r.usage.input_tokens if r.usage else None
    return got


def _anthropic_sdk(client: anthropic.Anthropic, model: str, conv: str, stream: bool) -> Got:
    got = Got()
    kw: Any = {"model": model, "max_tokens": 20000, "messages": _task(conv)}
    if stream:
        with client.messages.stream(**kw) as s:
            for _ in s:
                pass
            m = s.get_final_message()
    else:
        m = client.messages.create(**kw)
    assert [b.type for b in m.content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    thinking, redacted, text, tool = m.content
    assert thinking.type == "thinking" and thinking.thinking == ""
    assert redacted.type == "redacted_thinking" and tool.type == "tool_use"
    assert text.type == "text"
    got.opaque += [thinking.signature, redacted.data]
    got.text, got.call_id, got.args = text.text, tool.id, json.dumps(tool.input)
    got.input_tokens = m.usage.input_tokens
    return got


def _run(hw: HostileWorld, route_id: str, conv: str, stream: bool, tee: Tee) -> Got:
    dialect, model, _ = ROUTES[route_id]
    if dialect == "anthropic":
        return _anthropic_sdk(_anthropic(hw, conv, route_id, tee), model, conv, stream)
    client = _openai(hw, conv, route_id, tee)
    if dialect == "responses":
        return _responses_sdk(client, model, conv, stream)
    return _chat_sdk(client, model, conv, stream)


HIDDEN: dict[str, tuple[Callable[[Canaries, Visible], Reply], Callable[[Canaries, Visible], Reply]]]
HIDDEN = {
    "chat": (chat_json, chat_stream),
    "responses": (responses_json, responses_stream),
    "anthropic": (anthropic_json, anthropic_stream),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_hidden_shapes_never_reach_the_sdk_client(
    hw: HostileWorld, dialect: str, stream: bool
) -> None:
    route_id = MAIN[dialect]
    conv, c, v, tee = new_conv(), Canaries(), Visible(), Tee()
    hw.upstream.plan(conv, HIDDEN[dialect][stream](c, v))
    got = _run(hw, route_id, conv, stream, tee)
    seen = tee.received().seen()
    _no_leak(c, seen, hw.key)
    assert got.text == v.text
    assert got.call_id == v.call_id
    assert json.loads(got.args) == json.loads(v.args)
    assert got.input_tokens == v.prompt_tokens
    if dialect == "chat":  # Gemini-compat thought signature on the tool call
        assert v.signature in seen
    if dialect == "responses":
        assert got.opaque == [v.encrypted]
    if dialect == "anthropic":
        assert got.opaque == [v.signature, v.redacted]
    (row,) = hw.rows(conv)
    assert (row.outcome, row.stream, row.usage_status) == ("forwarded", stream, "reported")
    assert (row.input_uncached, row.output_tokens) == (v.prompt_tokens, v.output_tokens)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_mistral_thinking_chunks_are_cut(hw: HostileWorld, stream: bool) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    if stream:
        pieces = [
            sse(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "role": "assistant",
                                "content": [
                                    {
                                        "type": "thinking",
                                        "thinking": [{"type": "text", "text": c("m1")}],
                                    }
                                ],
                            },
                        }
                    ]
                }
            ),
            sse(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "content": [
                                    {
                                        "type": "thinking",
                                        "thinking": [{"type": "text", "text": c("m2")}],
                                    },
                                    {"type": "text", "text": v.text},
                                ]
                            },
                        }
                    ]
                }
            ),
            sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            sse(b"[DONE]"),
        ]
        hw.upstream.plan(conv, Reply(chunks=pieces, content_type="text/event-stream"))
    else:
        hw.upstream.plan(conv, chat_json(c, v, mistral=True))
    got = hw.post("chat/h-chat", conv, user_body("chat/h-chat", conv, stream=stream))
    assert got.status == 200
    _no_leak(c, got.seen(), hw.key)
    assert v.text in got.seen()
    assert hw.rows(conv)[0].outcome == "forwarded"


# -- <think> blocks -----------------------------------------------------------------------------


THINK_ROUTES = ["chat/h-vllm", "chat/h-tags"]


@pytest.mark.parametrize("route_id", [*THINK_ROUTES, TAGS["responses"], TAGS["anthropic"]])
def test_think_block_cut_from_json_answers(hw: HostileWorld, route_id: str) -> None:
    dialect = ROUTES[route_id][0]
    for escaped in (False, True):
        conv, c, v = new_conv(), Canaries(), Visible()
        inline = f"<think>{c('think block')}</think>{v.text}<think>{c('second block')}</think>"
        if dialect == "chat":
            body: Any = {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": inline},
                        "finish_reason": "stop",
                    }
                ],
            }
        elif dialect == "responses":
            body = {
                "id": "resp_t",
                "object": "response",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "id": "m",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": inline, "annotations": []}],
                    }
                ],
            }
        else:
            body = {
                "id": "msg_t",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": inline}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        raw = json.dumps(body).encode()
        if escaped:
            raw = raw.replace(b"<think>", b"\\u003cthink\\u003e").replace(
                b"</think>", b"\\u003c/think\\u003e"
            )
        hw.upstream.plan(conv, Reply(body=raw))
        got = hw.post(route_id, conv, user_body(route_id, conv))
        assert got.status == 200, got.raw
        _no_leak(c, got.seen())
        assert v.text in got.seen() and "think>" not in got.seen()


def _think_text(c: Canaries, v: Visible) -> str:
    return f"<think>{c('streamed think block')}</think>{v.text}"


@pytest.mark.parametrize("route_id", THINK_ROUTES)
def test_think_tags_split_at_every_offset_sdk_stream(hw: HostileWorld, route_id: str) -> None:
    """The tags and the text split in two deltas at every offset, then one char per delta."""
    c, v = Canaries(), Visible()
    text = _think_text(c, v)
    splits = [[text[:i], text[i:]] for i in range(len(text) + 1)] + [list(text)]
    for pieces in splits:
        conv, tee = new_conv(), Tee()
        hw.upstream.plan(
            conv, Reply(chunks=chat_text_stream(pieces), content_type="text/event-stream")
        )
        client = _openai(hw, conv, route_id, tee)
        content = ""
        with client.chat.completions.create(
            model=ROUTES[route_id][1], messages=_task(conv), stream=True
        ) as s:
            for chunk in s:
                for ch in chunk.choices:
                    content += ch.delta.content or ""
        _no_leak(c, tee.received().seen())
        assert content == v.text, pieces


def _text_stream(dialect: str, pieces: list[str], full: str) -> list[bytes]:
    """A minimal text-only stream in ``dialect`` whose text arrives as ``pieces``."""
    if dialect == "responses":
        at = {"item_id": "msg_t", "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": full, "annotations": []}
        item = {"type": "message", "id": "msg_t", "role": "assistant", "content": [part]}
        resp = {"id": "resp_t", "object": "response", "status": "completed", "output": [item]}
        evs: list[dict[str, Any]] = [
            {
                "type": "response.created",
                "response": {**resp, "status": "in_progress", "output": []},
            },
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": []},
            },
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            *({"type": "response.output_text.delta", **at, "delta": p} for p in pieces),
            {"type": "response.output_text.done", **at, "text": full},
            {"type": "response.content_part.done", **at, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": resp},
        ]
    else:
        msg = {
            "id": "msg_t",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        evs = [
            {"type": "message_start", "message": msg},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            *(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                }
                for p in pieces
            ),
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1},
            },
            {"type": "message_stop"},
        ]
    return [sse(e, event=e["type"]) for e in evs]


@pytest.mark.parametrize("route_id", [TAGS["responses"], TAGS["anthropic"]])
def test_think_tags_cut_in_other_dialects_streams(hw: HostileWorld, route_id: str) -> None:
    """A route whose profile says think_tags cuts them in streams as in JSON, any dialect."""
    dialect = ROUTES[route_id][0]
    c, v = Canaries(), Visible()
    text = _think_text(c, v)
    for i in range(len(text) + 1):
        conv = new_conv()
        chunks = _text_stream(dialect, [text[:i], text[i:]], text)
        hw.upstream.plan(conv, Reply(chunks=chunks, content_type="text/event-stream"))
        got = hw.post(route_id, conv, user_body(route_id, conv, stream=True))
        assert got.status == 200
        assert c.leaked(got.seen()) == {}, i
        deltas = [
            d.get("delta") if dialect == "responses" else d.get("delta", {}).get("text")
            for _, d in got.events()
            if isinstance(d, dict)
            and d.get("type") in ("response.output_text.delta", "content_block_delta")
        ]
        assert "".join(x or "" for x in deltas) == v.text, i


# -- upstream errors ----------------------------------------------------------------------------


def _echo_auth(c: Canaries) -> Callable[[Seen], Reply]:
    """401 quoting the request's credential header and every header (as many servers do)."""

    def reply(seen: Seen) -> Reply:
        auth = seen.headers.get("authorization") or seen.headers.get("x-api-key") or ""
        body = {
            "error": {
                "type": "authentication_error",
                "code": "invalid_api_key",
                "message": f"Incorrect API key provided: {auth}. {c('401 message')}",
                "param": auth,
            },
            "request_headers": seen.headers,
        }
        return Reply(401, json.dumps(body).encode(), headers=[("x-echo-auth", auth)])

    return reply


def _echo_body(c: Canaries) -> Callable[[Seen], Reply]:
    """400 quoting the whole request body (re-attached reasoning included)."""

    def reply(seen: Seen) -> Reply:
        body = {
            "error": {
                "type": "invalid_request_error",
                "code": c("400 code"),
                "message": "Invalid request: " + seen.text,
                "param": seen.text[:4000],
            }
        }
        return Reply(400, json.dumps(body).encode())

    return reply


def _call_raises(
    hw: HostileWorld, route_id: str, conv: str, stream: bool, tee: Tee, body: dict[str, Any]
) -> Exception:
    """Send ``body`` through the dialect's SDK; the exception it raised (it must raise)."""
    dialect = ROUTES[route_id][0]
    try:
        if dialect == "anthropic":
            ac = _anthropic(hw, conv, route_id, tee)
            if stream:
                with ac.messages.stream(**body) as s:
                    for _ in s:
                        pass
            else:
                ac.messages.create(**body)
        elif dialect == "responses":
            oc = _openai(hw, conv, route_id, tee)
            if stream:
                with oc.responses.stream(**body) as rs:
                    for _ in rs:
                        pass
            else:
                oc.responses.create(**body)
        else:
            oc = _openai(hw, conv, route_id, tee)
            if stream:
                with oc.chat.completions.create(**body, stream=True) as cs:
                    for _ in cs:
                        pass
            else:
                oc.chat.completions.create(**body)
    except (openai.APIError, anthropic.APIError) as exc:
        return exc
    raise AssertionError("the SDK finished cleanly")


def _sdk_body(route_id: str, conv: str, messages: list[Any] | None = None) -> dict[str, Any]:
    dialect, model, _ = ROUTES[route_id]
    msgs = messages if messages is not None else _task(conv)
    if dialect == "responses":
        return {"model": model, "input": msgs}
    if dialect == "anthropic":
        return {"model": model, "max_tokens": 20000, "messages": msgs}
    return {"model": model, "messages": msgs}


def _status_error(exc: Exception) -> tuple[int, Any, dict[str, str]]:
    assert isinstance(exc, openai.APIStatusError | anthropic.APIStatusError), exc
    return exc.status_code, exc.body, dict(exc.response.headers)


def _gateway_error(body: Any, status: int) -> dict[str, Any]:
    """The gateway's own error object: status category type, a reason code, its own text."""
    if isinstance(body, dict) and "error" in body:
        body = body["error"]
    assert isinstance(body, dict), body
    assert set(body) <= {"type", "code", "message"}, body
    assert body["message"].startswith(("the upstream", "reasonwire gateway")), body
    return body


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_401_quoting_the_upstream_key_is_not_relayed(
    hw: HostileWorld, dialect: str, stream: bool
) -> None:
    route_id, conv, c, tee = MAIN[dialect], new_conv(), Canaries(), Tee()
    hw.upstream.plan(conv, _echo_auth(c))
    exc = _call_raises(hw, route_id, conv, stream, tee, _sdk_body(route_id, conv))
    status, body, _ = _status_error(exc)
    assert status == 401
    err = _gateway_error(body, status)
    assert err["type"] == "authentication_error"
    (up,) = hw.upstream.find(conv)
    assert hw.key in json.dumps(up.headers)  # the upstream did get (and quote) the key
    seen = tee.received().seen() + str(exc)
    _no_leak(c, seen, hw.key, RUNTIME_KEY)
    (row,) = hw.rows(conv)
    assert (row.outcome, row.status_code, row.reason) == (
        "upstream-error",
        401,
        "upstream status 401",
    )


def _first_turn(hw: HostileWorld, route_id: str, conv: str, c: Canaries, v: Visible) -> list[Any]:
    """A tool-call turn whose reasoning the gateway vaults; the history to send next."""
    dialect = ROUTES[route_id][0]
    hw.upstream.plan(conv, HIDDEN[dialect][0](c, v))
    tee = Tee()
    msgs = _task(conv)
    if dialect == "anthropic":
        m = _anthropic(hw, conv, route_id, tee).messages.create(**_sdk_body(route_id, conv))
        return [
            *msgs,
            {"role": "assistant", "content": [b.model_dump() for b in m.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": v.call_id, "content": "1. Lyon"}
                ],
            },
        ]
    client = _openai(hw, conv, route_id, tee)
    if dialect == "responses":
        r = client.responses.create(**_sdk_body(route_id, conv))
        return [
            *msgs,
            *(o.model_dump(exclude_none=True) for o in r.output),
            {"type": "function_call_output", "call_id": v.call_id, "output": "1. Lyon"},
        ]
    first = client.chat.completions.create(**_sdk_body(route_id, conv))
    return [
        *msgs,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": v.call_id, "content": "1. Lyon"},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_400_quoting_the_request_with_vaulted_reasoning_is_not_relayed(
    hw: HostileWorld, dialect: str, stream: bool
) -> None:
    route_id, conv, c, v = MAIN[dialect], new_conv(), Canaries(), Visible()
    history = _first_turn(hw, route_id, conv, c, v)
    hw.upstream.plan(conv, _echo_body(c))
    tee = Tee()
    exc = _call_raises(hw, route_id, conv, stream, tee, _sdk_body(route_id, conv, history))
    status, body, _ = _status_error(exc)
    assert status == 400
    err = _gateway_error(body, status)
    assert err["type"] == "invalid_request_error" and err["code"] == "upstream-error"
    second = hw.upstream.find(conv)[-1]
    assert c.leaked(second.text), "the vault did not re-attach the reasoning upstream"
    _no_leak(c, tee.received().seen() + str(exc), hw.key)
    rows = hw.rows(conv, 2)
    assert [(r.outcome, r.status_code) for r in rows] == [
        ("forwarded", 200),
        ("upstream-error", 400),
    ]
    assert rows[1].carriers_reattached >= 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_429_retry_after_passes_and_nothing_else(
    hw: HostileWorld, dialect: str, stream: bool
) -> None:
    route_id, conv, c, tee = MAIN[dialect], new_conv(), Canaries(), Tee()
    body = {"error": {"type": "rate_limit_error", "message": c("429 message") + hw.key}}
    headers = [("retry-after", "17"), ("x-ratelimit-reset", c("rl header")), ("x-key", hw.key)]
    hw.upstream.plan(conv, Reply(429, json.dumps(body).encode(), headers=headers))
    exc = _call_raises(hw, route_id, conv, stream, tee, _sdk_body(route_id, conv))
    status, ebody, hdrs = _status_error(exc)
    assert status == 429 and hdrs["retry-after"] == "17"
    assert _gateway_error(ebody, status)["type"] == "rate_limit_error"
    _no_leak(c, tee.received().seen() + str(exc), hw.key)
    (row,) = hw.rows(conv)
    assert (row.outcome, row.status_code) == ("upstream-error", 429)


@pytest.mark.parametrize(
    "value",
    [
        "Wed, 21 Oct 2015 07:28:00 GMT {c}",
        "{c}",
        "17 {c}",
        "\u00b2",  # a latin-1 digit-like character str.isdigit() accepts
        "Wed, 21 Oct 2015 07:28:00 {c}",
        "21 Oct 2015 07:28 {c}",
    ],
)
def test_retry_after_cannot_carry_upstream_text(hw: HostileWorld, value: str) -> None:
    conv, c = new_conv(), Canaries()
    planted = value.format(c=c("retry-after"))
    hw.upstream.plan(conv, Reply(503, b"{}", headers=[("retry-after", planted)]))
    got = hw.post("chat/h-chat", conv, user_body("chat/h-chat", conv))
    assert got.status == 503
    _no_leak(c, got.seen())
    after = got.headers.get("retry-after")
    assert after is None or (after.isascii() and (after.isdigit() or after.endswith(" GMT")))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_5xx_html_body_is_not_relayed(hw: HostileWorld, dialect: str) -> None:
    route_id, conv, c = MAIN[dialect], new_conv(), Canaries()
    page = f"<html><pre>Traceback: key={hw.key} {c('traceback')}</pre></html>".encode()
    hw.upstream.plan(conv, Reply(500, page, content_type="text/html"))
    for stream in (False, True):
        got = hw.post(route_id, conv, user_body(route_id, conv, stream=stream))
        assert got.status == 500 and got.headers["content-type"] == "application/json"
        _gateway_error(got.json(), 500)
        _no_leak(c, got.seen(), hw.key)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_malformed_json_answer_is_a_gateway_error(hw: HostileWorld, dialect: str) -> None:
    route_id, c = MAIN[dialect], Canaries()
    for raw in (
        b'{"choices": [{"message": {"content": "' + c("cut json").encode(),
        b"<html>" + c("html 200").encode(),
        json.dumps([{"reasoning_content": c("top-level list")}]).encode(),
        json.dumps("just a string " + c("json string")).encode(),
        b"null",
    ):
        conv = new_conv()
        hw.upstream.plan(conv, Reply(200, raw))
        got = hw.post(route_id, conv, user_body(route_id, conv))
        assert got.status in (200, 502), got.raw
        _no_leak(c, got.seen())
        (row,) = hw.rows(conv)
        assert row.outcome in ("forwarded", "upstream-error")
        if got.status == 502:
            _gateway_error(got.json(), 502)
            assert (row.outcome, row.reason) == ("upstream-error", "upstream body malformed")


def test_upstream_response_headers_are_not_relayed(hw: HostileWorld) -> None:
    for dialect in DIALECTS:
        route_id = MAIN[dialect]
        for stream in (False, True):
            conv, c, v = new_conv(), Canaries(), Visible()
            reply = HIDDEN[dialect][stream](c, v)
            reply.headers = [("x-reasoning", c("header")), ("set-cookie", "s=" + c("cookie"))]
            ctype = reply.content_type + "; reasoning=" + c("content-type parameter")
            reply.content_type = ctype
            hw.upstream.plan(conv, reply)
            got = hw.post(route_id, conv, user_body(route_id, conv, stream=stream))
            assert got.status == 200
            _no_leak(c, got.seen())
            want = "text/event-stream" if stream else "application/json"
            assert got.headers["content-type"].split(";")[0] == want


# -- streams that fail --------------------------------------------------------------------------

STREAM_EVENTS = {
    "chat": (chat_stream_events, 9),  # cut after the text, before finish_reason
    "responses": (responses_stream_events, 15),  # mid-text
    "anthropic": (anthropic_stream_events, 10),  # mid-text
}


def _cut_reply(dialect: str, c: Canaries, v: Visible, mode: str) -> Reply:
    build, k = STREAM_EVENTS[dialect]
    events = build(c, v)[:k]
    if mode == "eof":  # chunked body, connection dropped
        return Reply(chunks=events, content_type="text/event-stream", cut=True)
    if mode == "short":  # Content-Length declared, connection dropped before it
        return Reply(
            chunks=events, content_type="text/event-stream", cut=True, content_length=10**6
        )
    return Reply(chunks=events, content_type="text/event-stream")  # ended, no terminal event


def _last_event_is_error(tee: Tee) -> None:
    events = Received(0, {}, bytes(tee.raw)).events()
    assert events, "nothing received"
    name, data = events[-1]
    assert isinstance(data, dict) and data.get("type") == "error", events[-1]
    assert name in ("error", None)


@pytest.mark.parametrize("mode", ["eof", "short", "ended"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_stream_cut_mid_way_makes_the_sdk_raise(hw: HostileWorld, dialect: str, mode: str) -> None:
    route_id, conv, c, v, tee = MAIN[dialect], new_conv(), Canaries(), Visible(), Tee()
    hw.upstream.plan(conv, _cut_reply(dialect, c, v, mode))
    exc = _call_raises(hw, route_id, conv, True, tee, _sdk_body(route_id, conv))
    if dialect == "anthropic":
        assert isinstance(exc, anthropic.APIStatusError), exc
    else:
        assert isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIStatusError)
    _last_event_is_error(tee)
    _no_leak(c, tee.received().seen() + str(exc), hw.key)
    (row,) = hw.rows(conv)
    assert row.outcome == "upstream-error" and "stream" in (row.reason or ""), row.reason


def _error_mid_stream(dialect: str, c: Canaries, v: Visible, key: str) -> list[bytes]:
    build, k = STREAM_EVENTS[dialect]
    head = build(c, v)[:k]
    quote = c("upstream error message") + " " + key
    if dialect == "chat":
        err = {"error": {"message": quote, "type": "server_error", "code": c("code")}}
        return [*head, sse(err), sse(b"[DONE]")]
    if dialect == "responses":
        err = {"type": "error", "code": "server_error", "message": quote, "param": c("param")}
        return [*head, sse(err, event="error")]
    err = {"type": "error", "error": {"type": "overloaded_error", "message": quote}}
    return [*head, sse(err, event="error")]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_upstream_error_event_mid_stream_makes_the_sdk_raise(
    hw: HostileWorld, dialect: str
) -> None:
    """An upstream error inside a stream, followed by the stream's clean end ([DONE] for
    chat): the client must still fail, and see none of the upstream's error text."""
    route_id, conv, c, v, tee = MAIN[dialect], new_conv(), Canaries(), Visible(), Tee()
    chunks = _error_mid_stream(dialect, c, v, hw.key)
    hw.upstream.plan(conv, Reply(chunks=chunks, content_type="text/event-stream"))
    exc = _call_raises(hw, route_id, conv, True, tee, _sdk_body(route_id, conv))
    assert isinstance(exc, openai.APIError | anthropic.APIError)
    _no_leak(c, tee.received().seen() + str(exc), hw.key)
    (row,) = hw.rows(conv)
    assert row.outcome == "upstream-error", row.reason


@pytest.mark.parametrize("dialect", DIALECTS)
def test_malformed_sse_chunk_makes_the_sdk_raise(hw: HostileWorld, dialect: str) -> None:
    route_id, conv, c, v, tee = MAIN[dialect], new_conv(), Canaries(), Visible(), Tee()
    build, k = STREAM_EVENTS[dialect]
    events = build(c, v)
    bad = b'data: {"choices": [{"delta": {"content": "' + c("malformed").encode() + b"\n\n"
    hw.upstream.plan(
        conv, Reply(chunks=[*events[:k], bad, *events[k:]], content_type="text/event-stream")
    )
    exc = _call_raises(hw, route_id, conv, True, tee, _sdk_body(route_id, conv))
    assert isinstance(exc, openai.APIError | anthropic.APIError)
    _last_event_is_error(tee)
    _no_leak(c, tee.received().seen() + str(exc), hw.key)
    (row,) = hw.rows(conv)
    assert row.outcome == "upstream-error" and "malformed" in (row.reason or ""), row.reason


@pytest.mark.parametrize("dialect", DIALECTS)
def test_stream_bytes_split_anywhere(hw: HostileWorld, dialect: str) -> None:
    """The hidden-shape stream re-chunked into 1..7-byte TCP pieces: still nothing leaks."""
    route_id, conv, c, v = MAIN[dialect], new_conv(), Canaries(), Visible()
    blob = b"".join(STREAM_EVENTS[dialect][0](c, v))
    sizes, pieces, at = [1, 2, 3, 5, 7], [], 0
    while at < len(blob):
        n = sizes[len(pieces) % len(sizes)]
        pieces.append(blob[at : at + n])
        at += n
    hw.upstream.plan(conv, Reply(chunks=pieces, content_type="text/event-stream"))
    got = hw.post(route_id, conv, user_body(route_id, conv, stream=True))
    assert got.status == 200
    _no_leak(c, got.seen(), hw.key)
    assert hw.rows(conv)[0].outcome == "forwarded"


def test_think_tags_projector_every_three_way_split() -> None:
    """The chat stream projector of a think-tags route, fed the text in three deltas split at
    every pair of offsets (and the SSE bytes in 5-byte pieces): exactly the visible text."""
    from reasonwire.wire import get_dialect

    chat = get_dialect("chat")
    profile = chat.profile("vllm")
    c, v = Canaries(), Visible(text="ok <b> done")
    text = f"pre<think>{c('3-way')}</think>{v.text}"
    want = "pre" + v.text
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            projector = chat.stream_projector(profile)
            blob = b"".join(chat_text_stream([text[:i], text[i:j], text[j:]]))
            out = b"".join(projector.feed(blob[k : k + 5]) for k in range(0, len(blob), 5))
            out += projector.close()
            got = Received(200, {}, out)
            assert c.leaked(got.seen()) == {}, (i, j)
            content = "".join(
                (ch.get("delta") or {}).get("content") or ""
                for _, d in got.events()
                if isinstance(d, dict)
                for ch in d.get("choices") or []
            )
            assert content == want, (i, j)


@pytest.mark.parametrize(
    ("dialect", "etype", "code", "shown_type", "shown_code"),
    [
        (
            "chat",
            "invalid_request_error",
            "context_length_exceeded",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        ("chat", "{c}", "{c}", "invalid_request_error", "upstream-error"),
        (
            "responses",
            "invalid_request_error",
            "invalid_encrypted_content",
            "invalid_request_error",
            "invalid_encrypted_content",
        ),
        ("anthropic", "overloaded_error", None, "overloaded_error", "upstream-error"),
        ("anthropic", "{c}", "{c}", "invalid_request_error", "upstream-error"),
    ],
)
def test_only_allow_listed_provider_type_and_code_are_shown(
    hw: HostileWorld,
    dialect: str,
    etype: str,
    code: str | None,
    shown_type: str,
    shown_code: str,
) -> None:
    route_id, conv, c = MAIN[dialect], new_conv(), Canaries()
    err: dict[str, Any] = {"type": etype.format(c=c("type")), "message": c("message")}
    if code is not None:
        err["code"] = code.format(c=c("code"))
    hw.upstream.plan(conv, Reply(400, json.dumps({"type": "error", "error": err}).encode()))
    got = hw.post(route_id, conv, user_body(route_id, conv))
    assert got.status == 400
    shown = _gateway_error(got.json(), 400)
    assert (shown["type"], shown["code"]) == (shown_type, shown_code)
    _no_leak(c, got.seen())


def test_stream_the_evidence_decoder_cannot_follow_ends_with_an_error_event(
    hw: HostileWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the evidence decoder fails on a stream (any exception: here a decoder bug made
    on purpose), the client's stream still ends with the dialect's error event and the row
    says upstream-error. The stream itself carries a text delta for an output index no item
    was announced for, which the decoder once failed on and now follows."""
    from reasonwire.wire.responses import _stream

    real = _stream.ResponsesStreamDecoder.feed
    real_parsed = _stream.ResponsesStreamDecoder.feed_parsed

    def failing(self: Any, data: bytes) -> Any:
        if re.search(rb'"output_index":\s*7\b', data):
            raise RuntimeError("decoder bug")
        return real(self, data)

    def failing_parsed(self: Any, data: bytes, events: Any, parsed: Any) -> Any:
        # the relay's way in: the events framed and parsed by the projector
        if any(re.search(rb'"output_index":\s*7\b', e[0]) for e in events):
            raise RuntimeError("decoder bug")
        return real_parsed(self, data, events, parsed)

    monkeypatch.setattr(_stream.ResponsesStreamDecoder, "feed", failing)
    monkeypatch.setattr(_stream.ResponsesStreamDecoder, "feed_parsed", failing_parsed)
    conv, c, v = new_conv(), Canaries(), Visible()
    events = responses_stream_events(c, v)[:2]
    events.append(
        sse(
            {
                "type": "response.output_text.delta",
                "output_index": 7,
                "content_index": 0,
                "item_id": "x",
                "delta": "visible",
            },
            event="response.output_text.delta",
        )
    )
    events += responses_stream_events(c, v)[2:]
    hw.upstream.plan(conv, Reply(chunks=events, content_type="text/event-stream"))
    got = hw.post("responses/h-resp", conv, user_body("responses/h-resp", conv, stream=True))
    assert got.status == 200
    _no_leak(c, got.seen(), hw.key)
    _, last = got.events()[-1]
    assert isinstance(last, dict) and last.get("type") == "error", got.events()[-3:]
    (row,) = hw.rows(conv)
    assert row.outcome == "upstream-error" and "malformed" in (row.reason or ""), row.reason


def test_chat_stream_cut_after_finish_before_done_is_a_cut(hw: HostileWorld) -> None:
    """A chunked stream whose connection drops after the finish chunk but before ``[DONE]``
    (and before the terminating zero-size chunk) is a cut: the SDK raises, the row says so."""
    route_id, conv, c, v, tee = MAIN["chat"], new_conv(), Canaries(), Visible(), Tee()
    events = chat_stream_events(c, v)
    assert events[-1].strip().endswith(b"[DONE]")
    hw.upstream.plan(conv, Reply(chunks=events[:-1], content_type="text/event-stream", cut=True))
    exc = _call_raises(hw, route_id, conv, True, tee, _sdk_body(route_id, conv))
    assert isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIStatusError)
    _last_event_is_error(tee)
    (row,) = hw.rows(conv)
    assert row.outcome == "upstream-error" and "cut" in (row.reason or ""), row.reason
