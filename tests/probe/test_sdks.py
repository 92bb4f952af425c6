"""The official SDKs as clients, streaming through the probe against the simulator.

Each row's byte counts must equal an independent count (tests/probe/indep.py) of the very
bytes the SDK received, and the request-side carriers must equal the carriers the test itself
put into the follow-up request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from reasonwire.probe import AsyncProbeTransport, ProbeTransport
from reasonwire.sim.server import SimServer
from tests.probe.conftest import Capture
from tests.probe.indep import count
from tests.probe.streams import rows_now

KEY = "sk-sim-not-a-real-key"
TASK = "Find the population of Lyon."


def rows(ledger: Path) -> list[dict[str, Any]]:
    return rows_now(ledger).rows


def billed_of(row: dict[str, Any]) -> int:
    u = row["usage"]
    return int(u["inputTokens"] + u["cacheReadTokens"] + u["cacheWriteTokens"])


def check_row(row: dict[str, Any], dialect: str, raw: bytes) -> None:
    r, t, k = count(dialect, raw)
    assert (row["reasoningBytes"], row["textBytes"], row["toolBytes"]) == (r, t, k)
    assert row["wireBytes"] == len(raw)
    assert row["status"] == "ok" and row["stream"] is True and row["dialect"] == dialect


def test_openai_chat_stream(sim_server: SimServer, capture: Capture, ledger: Path) -> None:
    http = httpx.Client(transport=ProbeTransport("s-chat", ledger_dir=ledger, inner=capture))
    client = openai.OpenAI(base_url=sim_server.base_url, api_key=KEY, http_client=http)
    tools: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}}]  # fmt: skip
    reasoning, usage = "", None
    with client.chat.completions.create(
        model="sim-qwen3", messages=[{"role": "user", "content": TASK}], tools=tools,
        stream=True, stream_options={"include_usage": True},
    ) as s:  # fmt: skip
        for chunk in s:
            usage = chunk.usage or usage
            for ch in chunk.choices:
                reasoning += (ch.delta.model_extra or {}).get("reasoning_content") or ""
    (row,) = rows(ledger)
    check_row(row, "chat", capture.bodies[0])
    assert row["reasoningBytes"] == len(reasoning.encode()) > 0
    assert usage is not None and row["usage"]["outputTokens"] == usage.completion_tokens
    assert billed_of(row) == usage.prompt_tokens
    assert row["usage"]["totalTokens"] == usage.total_tokens
    assert row["model"] and row["sessionId"] == "s-chat" and row["sentReasoningBytes"] == 0

    # The follow-up sends the reasoning back: the row measures exactly those bytes.
    msgs: Any = [{"role": "user", "content": TASK},
                 {"role": "assistant", "content": "ok", "reasoning_content": reasoning},
                 {"role": "user", "content": "and Paris?"}]  # fmt: skip
    with client.chat.completions.create(model="sim-qwen3", messages=msgs, stream=True) as s:
        for _ in s:
            pass
    second = rows(ledger)[1]
    check_row(second, "chat", capture.bodies[1])
    assert second["sentReasoning"] == {
        "reasoning_content": {"bytes": len(reasoning.encode()), "count": 1, "opaque": False}
    }


def test_openai_responses_stream(sim_server: SimServer, capture: Capture, ledger: Path) -> None:
    http = httpx.Client(transport=ProbeTransport("s-resp", ledger_dir=ledger, inner=capture))
    client = openai.OpenAI(base_url=sim_server.base_url, api_key=KEY, http_client=http)
    kw: Any = {"model": "sim-gpt", "store": False, "include": ["reasoning.encrypted_content"],
               "reasoning": {"effort": "medium", "summary": "auto"}}  # fmt: skip
    with client.responses.stream(input=TASK, **kw) as s:
        for _ in s:
            pass
        first = s.get_final_response()
    (row,) = rows(ledger)
    check_row(row, "responses", capture.bodies[0])
    assert row["reasoningBytes"] > 0
    assert (
        first.usage
        and row["usage"]["reasoningTokens"] == first.usage.output_tokens_details.reasoning_tokens
    )
    assert row["usage"]["totalTokens"] == first.usage.total_tokens

    items: Any = [{"role": "user", "content": TASK}]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"role": "user", "content": "and Paris?"})
    with client.responses.stream(input=items, **kw) as s:
        for _ in s:
            pass
    second = rows(ledger)[1]
    check_row(second, "responses", capture.bodies[1])
    sent = json.loads(capture.requests[1])
    reasoning_items = [i for i in sent["input"] if i.get("type") == "reasoning"]
    enc = sum(len(i["encrypted_content"].encode()) for i in reasoning_items)
    summ = sum(len(p["text"].encode()) for i in reasoning_items for p in i.get("summary", []))
    assert enc > 0 and summ > 0
    assert second["sentReasoning"]["encrypted_content"]["bytes"] == enc
    assert second["sentReasoning"]["summary_text"]["bytes"] == summ
    assert second["sentReasoningBytes"] == enc + summ


def test_anthropic_stream(sim_server: SimServer, capture2: Capture, ledger: Path) -> None:
    capture = capture2
    httpx2 = pytest.importorskip("httpx2")  # this anthropic release takes only its httpx fork
    http = httpx2.Client(transport=ProbeTransport("s-ant", "compaction", ledger, capture))
    client = anthropic.Anthropic(base_url=sim_server.root_url, api_key=KEY, http_client=http)
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools: Any = [{"name": "lookup", "description": "Look up.", "input_schema": schema}]
    kw: Any = {"model": "sim-claude", "max_tokens": 2048, "tools": tools,
               "thinking": {"type": "enabled", "budget_tokens": 1024}}  # fmt: skip
    messages: Any = [{"role": "user", "content": TASK}]
    with client.messages.stream(messages=messages, **kw) as s:
        first = s.get_final_message()
    (row,) = rows(ledger)
    check_row(row, "anthropic", capture.bodies[0])
    assert row["purpose"] == "compaction" and row["reasoningBytes"] > 0 and row["toolBytes"] > 0
    u = first.usage
    billed = (
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)
    )
    assert billed_of(row) == billed and row["usage"]["outputTokens"] == u.output_tokens
    assert "totalTokens" not in row["usage"]  # the Messages API reports no total

    tool = next(b for b in first.content if b.type == "tool_use")
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id,
                                      "content": "42"}]},
    ]  # fmt: skip
    with client.messages.stream(messages=messages, **kw) as s:
        s.get_final_message()
    second = rows(ledger)[1]
    check_row(second, "anthropic", capture.bodies[1])
    thinking = [b for b in first.content if b.type == "thinking"]
    assert second["sentReasoning"]["thinking"]["bytes"] == sum(
        len(b.thinking.encode()) for b in thinking
    )
    assert second["sentReasoning"]["signature"] == {
        "bytes": sum(len(b.signature.encode()) for b in thinking),
        "count": len(thinking),
        "opaque": True,
    }


async def test_async_openai_chat_stream(sim_server: SimServer, ledger: Path) -> None:
    http = httpx.AsyncClient(transport=AsyncProbeTransport("s-async", ledger_dir=ledger))
    client = openai.AsyncOpenAI(base_url=sim_server.base_url, api_key=KEY, http_client=http)
    reasoning, text = "", ""
    stream = await client.chat.completions.create(
        model="sim-qwen3", messages=[{"role": "user", "content": "Say hi."}], stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    async for chunk in stream:
        for ch in chunk.choices:
            reasoning += (ch.delta.model_extra or {}).get("reasoning_content") or ""
            text += ch.delta.content or ""
    (row,) = rows(ledger)
    assert row["status"] == "ok" and row["usage"] is not None
    assert (row["reasoningBytes"], row["textBytes"]) == (
        len(reasoning.encode()),
        len(text.encode()),
    )


def test_non_streaming_and_other_endpoints(sim_server: SimServer, ledger: Path) -> None:
    http = httpx.Client(transport=ProbeTransport("s-plain", ledger_dir=ledger))
    client = openai.OpenAI(base_url=sim_server.base_url, api_key=KEY, http_client=http)
    resp = client.chat.completions.create(
        model="sim-qwen3", messages=[{"role": "user", "content": "Say hi."}]
    )
    msg = resp.choices[0].message
    http.get(sim_server.base_url + "/models")  # not a model call: no row
    (row,) = rows(ledger)
    assert row["stream"] is False and row["status"] == "ok"
    assert row["reasoningBytes"] == len((msg.model_extra or {})["reasoning_content"].encode())
    assert row["textBytes"] == len((msg.content or "").encode())
    assert resp.usage and row["usage"]["outputTokens"] == resp.usage.completion_tokens


@pytest.mark.localserver
def test_llama_server_stream(ledger: Path, capture: Capture) -> None:
    """The real llama.cpp server (Qwen3 template) streamed through the probe."""
    from reasonwire.localserver.server import LocalServer

    with LocalServer() as server:
        http = httpx.Client(transport=ProbeTransport("s-llama", ledger_dir=ledger, inner=capture))
        client = openai.OpenAI(base_url=server.base_url, api_key="none", http_client=http)
        with client.chat.completions.create(
            model="local", messages=[{"role": "user", "content": "Hi"}], max_tokens=32,
            stream=True, stream_options={"include_usage": True},
        ) as s:  # fmt: skip
            for _ in s:
                pass
    (row,) = rows(ledger)
    check_row(row, "chat", capture.bodies[0])
    assert row["usage"] is not None


def test_google_genai_interactions_stream(
    sim_server: SimServer, capture: Capture, ledger: Path
) -> None:
    """The Interactions API through google-genai: the summary counts as reasoning, the call's
    streamed arguments as tool bytes; the follow-up's thought signature as re-sent opaque."""
    from google import genai
    from google.genai import types

    http = httpx.Client(transport=ProbeTransport("s-int", ledger_dir=ledger, inner=capture))
    client = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(base_url=sim_server.root_url, httpx_client=http),
    )
    tools: Any = [{"type": "function", "name": "lookup", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]  # fmt: skip
    config: Any = {"thinking_level": "high", "thinking_summaries": "auto"}
    signature, usage = "", None
    for ev in client.interactions.create(
        model="sim-gemini-interactions", input=TASK, tools=tools, generation_config=config,
        stream=True, store=False,
    ):  # fmt: skip
        data = ev.model_dump(mode="json", exclude_none=True)
        delta = data.get("delta") or {}
        if delta.get("type") == "thought_signature":
            signature = delta["signature"]
        if data["event_type"] == "interaction.completed":
            usage = data["interaction"]["usage"]
    (row,) = rows(ledger)
    check_row(row, "interactions", capture.bodies[0])
    assert row["reasoningBytes"] > 0 and row["toolBytes"] > 0
    assert usage is not None and billed_of(row) == usage["total_input_tokens"]
    assert row["usage"]["totalTokens"] == usage["total_tokens"]

    history: Any = [
        {"type": "user_input", "content": [{"type": "text", "text": TASK}]},
        {"type": "thought", "signature": signature},
        {"type": "user_input", "content": [{"type": "text", "text": "and Paris?"}]},
    ]
    client.interactions.create(model="sim-gemini-interactions", input=history, store=False)
    second = rows(ledger)[1]
    assert second["sentReasoning"] == {
        "thought_signature": {"bytes": len(signature.encode()), "count": 1, "opaque": True}
    }
