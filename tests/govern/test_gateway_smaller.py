"""Issue 25's smaller gateway points: ``<think>`` blocks cut on every Chat Completions route
unless the route states its model never writes them (JSON, streams split at every offset,
translated routes too); an upstream stream of the wrong shape ends with the dialect's error
event, never a clean ``[DONE]``; translated Chat->Responses routes pass function tools only,
hosted ones by the route's leave.

Expected values are written here from the rule (the OpenAI SSE terminal ``data: [DONE]``, the
Responses hosted tool types ``web_search_preview`` and ``mcp`` of OpenAI's tools guide), not
read from the gateway's tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from reasonwire.govern.registry import RouteRegistration
from tests.govern.hostile import (
    HostileWorld,
    Reply,
    chat_text_stream,
    hostile_world,
    new_conv,
    sse,
)
from tests.govern.test_hostile_upstream import _text_stream

LITERAL = "chat/h-literal"  # a Chat route whose model never writes <think>
XLATE = "chat-via-responses/h-x"  # Chat clients, Responses upstream
XLATE_WEB = "chat-via-responses/h-web"  # the same, web search allowed
DEFAULT = "chat/h-chat"  # the default OpenAI-compatible profile


@pytest.fixture(scope="module")
def hw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    with hostile_world(tmp_path_factory.mktemp("smaller")) as world:
        reg = world.gateway.registry
        base = reg.routes[DEFAULT]
        reg.add_route(replace(base, route_id=LITERAL, model="h-literal", no_think_tags=True))
        resp = reg.routes["responses/h-resp"]
        reg.add_route(replace(resp, route_id=XLATE, model="h-x", client_dialect="chat"))
        reg.add_route(
            replace(
                resp,
                route_id=XLATE_WEB,
                model="h-web",
                client_dialect="chat",
                hosted_tools=frozenset({"web_search_preview"}),
            )
        )
        yield world


def post(hw: HostileWorld, route: str, conv: str, **body: Any) -> tuple[int, str]:
    model = hw.gateway.registry.routes[route].model
    payload = {"model": model, "messages": [{"role": "user", "content": f"[{conv}] hi"}], **body}
    with httpx.Client(base_url=hw.url, timeout=30) as client:
        r = client.post("/v1/chat/completions", json=payload, headers=hw.headers(conv, route))
        return r.status_code, r.text


def streamed_content(raw: str) -> str:
    text = ""
    for line in raw.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                text += (choice.get("delta") or {}).get("content") or ""
    return text


def chat_body(content: str) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


HIDDEN, SHOWN = "hidden-thought-7f3a", "visible answer"
INLINE = f"<think>{HIDDEN}</think>{SHOWN}"


# -- <think> ----------------------------------------------------------------------------------


def test_think_cut_on_the_default_chat_profile_json(hw: HostileWorld) -> None:
    for escaped in (False, True):
        conv = new_conv()
        raw = chat_body(INLINE)
        if escaped:
            raw = raw.replace(b"<think>", b"\\u003cthink\\u003e").replace(
                b"</think>", b"\\u003c/think\\u003e"
            )
        hw.upstream.plan(conv, Reply(body=raw))
        status, text = post(hw, DEFAULT, conv)
        assert status == 200
        assert json.loads(text)["choices"][0]["message"]["content"] == SHOWN
        assert HIDDEN not in text


def test_think_cut_on_the_default_chat_profile_across_every_chunk_border(
    hw: HostileWorld,
) -> None:
    splits = [[INLINE[:i], INLINE[i:]] for i in range(len(INLINE) + 1)] + [list(INLINE)]
    for pieces in splits:
        conv = new_conv()
        hw.upstream.plan(
            conv, Reply(chunks=chat_text_stream(pieces), content_type="text/event-stream")
        )
        status, text = post(hw, DEFAULT, conv, stream=True)
        assert status == 200 and HIDDEN not in text, pieces
        assert streamed_content(text) == SHOWN, pieces
        assert text.rstrip().endswith("data: [DONE]")


def test_a_route_that_states_no_think_tags_keeps_the_literal_text(hw: HostileWorld) -> None:
    conv = new_conv()
    hw.upstream.plan(conv, Reply(body=chat_body(INLINE)))
    status, text = post(hw, LITERAL, conv)
    assert status == 200 and json.loads(text)["choices"][0]["message"]["content"] == INLINE
    conv = new_conv()
    pieces = [INLINE[:5], INLINE[5:]]
    hw.upstream.plan(conv, Reply(chunks=chat_text_stream(pieces), content_type="text/event-stream"))
    status, text = post(hw, LITERAL, conv, stream=True)
    assert status == 200 and streamed_content(text) == INLINE


def test_think_cut_on_a_translated_route_json_and_stream(hw: HostileWorld) -> None:
    conv = new_conv()
    item = {
        "type": "message",
        "id": "m",
        "role": "assistant",
        "content": [{"type": "output_text", "text": INLINE, "annotations": []}],
    }
    body = {"id": "resp_t", "object": "response", "status": "completed", "output": [item]}
    hw.upstream.plan(conv, Reply(body=json.dumps(body).encode()))
    status, text = post(hw, XLATE, conv)
    assert status == 200, text
    assert json.loads(text)["choices"][0]["message"]["content"] == SHOWN
    for i in range(len(INLINE) + 1):
        conv = new_conv()
        events = _text_stream("responses", [INLINE[:i], INLINE[i:]], INLINE)
        hw.upstream.plan(conv, Reply(chunks=events, content_type="text/event-stream"))
        status, text = post(hw, XLATE, conv, stream=True)
        assert status == 200 and HIDDEN not in text, i
        assert streamed_content(text) == SHOWN, (i, text)


def test_a_route_cannot_say_both_no_think_tags_and_think_tags() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        RouteRegistration(
            route_id="r",
            provider="p",
            model="m",
            dialect="chat",
            upstream_base_url="http://127.0.0.1:1/v1",
            qualification_id="q",
            levels={},
            profile_fields={"think_tags": True},
            no_think_tags=True,
        )


# -- wrong-shaped streams ---------------------------------------------------------------------

WRONG: dict[str, list[bytes]] = {
    "objects of no chunk shape, then [DONE]": [sse({"foo": 1}), sse(b"[DONE]")],
    "only [DONE]": [sse(b"[DONE]")],
    "choices not a list": [sse({"choices": {"a": 1}}), sse(b"[DONE]")],
    "content not a string": [
        sse({"choices": [{"index": 0, "delta": {"content": 5}}]}),
        sse(b"[DONE]"),
    ],
    "a Responses stream, then [DONE]": [
        *_text_stream("responses", ["hi"], "hi"),
        sse(b"[DONE]"),
    ],
    "an Anthropic stream": _text_stream("anthropic", ["hi"], "hi"),
    "a JSON array": [sse([1, 2]), sse(b"[DONE]")],
}


@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_shaped_stream_ends_with_the_error_event(hw: HostileWorld, case: str) -> None:
    conv = new_conv()
    hw.upstream.plan(conv, Reply(chunks=WRONG[case], content_type="text/event-stream"))
    status, text = post(hw, DEFAULT, conv, stream=True)
    assert status == 200  # the stream had begun
    assert "[DONE]" not in text, text  # no clean end an SDK would accept
    last = [line for line in text.splitlines() if line.startswith("data: ")][-1]
    assert json.loads(last[6:])["error"]["code"] == "upstream-stream"
    (row,) = hw.rows(conv)
    assert row.outcome == "upstream-error" and row.stream_state in ("malformed", "cut-by-upstream")


def test_a_good_stream_still_ends_with_done(hw: HostileWorld) -> None:
    conv = new_conv()
    hw.upstream.plan(
        conv, Reply(chunks=chat_text_stream(["a", "b"]), content_type="text/event-stream")
    )
    status, text = post(hw, DEFAULT, conv, stream=True)
    assert status == 200 and text.endswith("data: [DONE]\n\n") and '"error"' not in text
    (row,) = hw.rows(conv)
    assert (row.outcome, row.stream_state) == ("forwarded", "complete")


# -- hosted tools on translated routes --------------------------------------------------------

FUNCTION = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
WEB = {"type": "web_search_preview"}
MCP = {"type": "mcp", "server_label": "x", "server_url": "https://mcp.example/sse"}


@pytest.mark.parametrize(
    ("route", "body", "refused"),
    [
        (XLATE, {"tools": [FUNCTION]}, None),
        (XLATE, {"tools": [FUNCTION, WEB]}, "web_search_preview"),
        (XLATE, {"tools": [MCP]}, "mcp"),
        (XLATE, {"tools": [FUNCTION], "tool_choice": WEB}, "web_search_preview"),
        (XLATE_WEB, {"tools": [FUNCTION, WEB]}, None),
        (XLATE_WEB, {"tools": [WEB, MCP]}, "mcp"),
    ],
    ids=["function", "web", "mcp", "choice-web", "allowed-web", "allowed-web-not-mcp"],
)
def test_translated_routes_pass_function_tools_only_unless_allowed(
    hw: HostileWorld, route: str, body: dict[str, Any], refused: str | None
) -> None:
    conv = new_conv()
    status, text = post(hw, route, conv, **body)
    sent = hw.upstream.find(conv)
    if refused is None:
        assert status == 200, text
        (seen,) = sent
        assert [t["type"] for t in seen.body["tools"]] == [t["type"] for t in body["tools"]]
        return
    assert status == 400, text
    err = json.loads(text)["error"]
    assert err["code"] == "tool-not-allowed" and refused in err["message"]
    assert sent == []  # nothing went upstream
    (row,) = hw.rows(conv)
    assert (row.outcome, row.reason) == ("refused", "tool-not-allowed")
