"""Chat Completions -> Responses translation against the simulator's Responses models: a
two-round tool loop, JSON and stream, with the reasoning kept out of the chat answers and
put back from the vault (the simulator checks pairing and encrypted content)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from reasonwire.sim import SimServer
from reasonwire.wire.sse import SSEDecoder
from reasonwire.wire.translate import ResponsesToChatStream, chat_to_responses, responses_to_chat

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(seed=3) as server:
        yield server


def _call(sim: SimServer, chat: dict[str, Any], vault: dict[str, Any], stream: bool) -> Any:
    body, reattached = chat_to_responses(chat, vault.get)
    assert "reasoning" not in orjson.dumps(chat).decode() or reattached >= 0
    if stream:
        body["stream"] = True
        with httpx.stream("POST", sim.root_url + "/v1/responses", json=body, timeout=10) as r:
            assert r.status_code == 200, r.read()
            tr = ResponsesToChatStream(include_usage=True)
            raw = b"".join(tr.feed(c) for c in r.iter_bytes()) + tr.close()
        assert tr.completed is not None
        answer, (key, items) = responses_to_chat(tr.completed)
        vault[key] = items
        return _assemble(raw), raw, reattached
    r = httpx.post(sim.root_url + "/v1/responses", json=body, timeout=10)
    assert r.status_code == 200, r.text
    answer, (key, items) = responses_to_chat(r.json())
    vault[key] = items
    return answer["choices"][0]["message"], orjson.dumps(answer), reattached


def _assemble(raw: bytes) -> dict[str, Any]:
    """A chat message from chunks, the way the openai SDK's stream helpers do."""
    msg: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    dec = SSEDecoder()
    events = [*dec.feed(raw), *dec.close()]
    assert events[-1].data == "[DONE]"
    for ev in events[:-1]:
        chunk = orjson.loads(ev.data)
        for choice in chunk["choices"]:
            d = choice["delta"]
            msg["content"] += d.get("content") or ""
            for tc in d.get("tool_calls") or ():
                c = calls.setdefault(
                    tc["index"],
                    {
                        "id": tc.get("id"),
                        "type": "function",
                        "function": {"name": "", "arguments": ""},
                    },
                )
                c["function"]["name"] += (tc.get("function") or {}).get("name") or ""
                c["function"]["arguments"] += (tc.get("function") or {}).get("arguments") or ""
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


@pytest.mark.parametrize("stream", [False, True])
def test_two_round_tool_loop_through_translation(sim: SimServer, stream: bool) -> None:
    vault: dict[str, Any] = {}
    chat: dict[str, Any] = {
        "model": "sim-gpt",
        "messages": [{"role": "user", "content": "Weather in Oslo, then Bergen?"}],
        "tools": TOOLS,
        "max_tokens": 200,
    }
    for round_ in range(2):
        msg, raw, reattached = _call(sim, chat, vault, stream)
        assert b"encrypted_content" not in raw and b"summary_text" not in raw
        assert reattached == round_
        assert msg.get("tool_calls"), msg
        chat["messages"].append(msg)
        for tc in msg["tool_calls"]:
            chat["messages"].append(
                {
                    "role": "tool",
                    "tool_call_id": tc["id"],
                    "content": "sunny; next tool: get_weather" if round_ == 0 else "rain",
                }
            )
    msg, raw, reattached = _call(sim, chat, vault, stream)
    assert reattached == 2 and msg["content"]


def test_request_mapping_is_the_documented_one() -> None:
    chat = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_completion_tokens": 64,
        "temperature": 0,
    }  # fmt: skip
    body, n = chat_to_responses(chat, lambda k: None)
    assert n == 0
    assert body == {
        "model": "m",
        "input": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ],
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "max_output_tokens": 64,
        "temperature": 0,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }  # fmt: skip
