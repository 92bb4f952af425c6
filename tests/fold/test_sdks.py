"""The official openai and anthropic SDKs (and plain httpx for Gemini) with the fold
transport against the simulator: text carriers folded, signed and encrypted carriers sent
unchanged and still accepted by the simulator's validators (which answer 400 to any change),
and the simulator's prompt tokens cut by the folded text."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest

from reasonwire.fold import FoldSettings, FoldTransport
from reasonwire.sim.server import SimServer
from reasonwire.wire.fold import MARKER_RE
from tests.fold.conftest import Sent

KEY = "sk-sim-not-a-real-key"
TASK = "Find the population of Lyon."
ON = FoldSettings(enabled=True)  # the defaults: floor 12000, head 4000, tail 2000
TOOLS: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}]  # fmt: skip


def long_trace(seed: str) -> str:
    """30000 characters: a head canary, filler, a tail canary."""
    head = "HEADCANARY " + seed + " "
    tail = " TAILCANARY"
    return head + ("step by step, " * 3000)[: 30000 - len(head) - len(tail)] + tail


def _openai(sim: SimServer, settings: FoldSettings) -> tuple[openai.OpenAI, Sent]:
    sent = Sent(httpx)
    http = httpx.Client(transport=FoldTransport(settings, inner=sent))
    return openai.OpenAI(base_url=sim.base_url, api_key=KEY, http_client=http,
                         max_retries=0), sent  # fmt: skip


def _assistant(msg: Any) -> dict[str, Any]:
    return msg.model_dump(exclude_none=True)


def test_openai_chat_reasoning_content_folded(sim_server: SimServer) -> None:
    plain, _ = _openai(sim_server, FoldSettings())
    first = plain.chat.completions.create(
        model="sim-qwen3", messages=[{"role": "user", "content": TASK}], tools=TOOLS
    )
    msg = _assistant(first.choices[0].message)
    assert msg.get("tool_calls") and msg.get("reasoning_content")
    msg["reasoning_content"] = long_trace(msg["reasoning_content"])
    call = msg["tool_calls"][0]
    history: Any = [{"role": "user", "content": TASK}, msg,
                    {"role": "tool", "tool_call_id": call["id"], "content": "513,000"}]  # fmt: skip
    inputs = {}
    for name, settings in (("plain", FoldSettings()), ("folded", ON)):
        client, sent = _openai(sim_server, settings)
        resp = client.chat.completions.create(model="sim-qwen3", messages=history, tools=TOOLS)
        assert resp.usage is not None
        inputs[name] = resp.usage.prompt_tokens
        body = json.loads(sent.bodies[-1])
        rc = body["messages"][1]["reasoning_content"]
        if name == "folded":
            assert len(rc) < 6100 and MARKER_RE.search(rc)
            assert rc.startswith("HEADCANARY") and rc.endswith("TAILCANARY")
        else:
            assert rc == msg["reasoning_content"]
    # the simulator counts what the model reads: the folded 24000 characters are gone
    assert inputs["folded"] < inputs["plain"]
    assert inputs["plain"] - inputs["folded"] > 0.7 * (30000 - 6000) / 4 * 0.5


def test_openai_chat_openrouter_details_signed_and_encrypted_untouched(
    sim_server: SimServer,
) -> None:
    plain, _ = _openai(sim_server, FoldSettings())
    first = plain.chat.completions.create(
        model="sim-openrouter", messages=[{"role": "user", "content": TASK}], tools=TOOLS
    )
    msg = _assistant(first.choices[0].message)
    details = msg["reasoning_details"]
    assert [d["type"] for d in details] == ["reasoning.text", "reasoning.encrypted"]
    assert details[0]["signature"]  # signed text: never folded
    msg["reasoning"] = long_trace("r")
    history: Any = [{"role": "user", "content": TASK}, msg,
                    {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"],
                     "content": "513,000"}]  # fmt: skip
    client, sent = _openai(sim_server, FoldSettings(enabled=True, floor_chars=50,
                                                    head_chars=10, tail_chars=10))  # fmt: skip
    resp = client.chat.completions.create(model="sim-openrouter", messages=history, tools=TOOLS)
    assert resp.choices[0].message is not None  # 200: the encrypted entry was accepted
    got = json.loads(sent.bodies[-1])["messages"][1]
    assert got["reasoning_details"] == details  # both entries exactly as returned
    assert MARKER_RE.search(got["reasoning"]) and len(got["reasoning"]) < 100
    # the validator is real: a changed encrypted entry is refused
    bad = json.loads(json.dumps(history))
    bad[1]["reasoning_details"][1]["data"] = "A" + details[1]["data"][1:]
    with pytest.raises(openai.BadRequestError, match="encrypted"):
        plain.chat.completions.create(model="sim-openrouter", messages=bad, tools=TOOLS)


def test_openai_responses_summary_folded_encrypted_untouched(sim_server: SimServer) -> None:
    kw: Any = {"model": "sim-gpt", "store": False, "include": ["reasoning.encrypted_content"],
               "reasoning": {"effort": "medium", "summary": "auto"},
               "tools": [{"type": "function", "name": "lookup", "parameters": {
                   "type": "object", "properties": {"q": {"type": "string"}}}}]}  # fmt: skip
    plain, _ = _openai(sim_server, FoldSettings())
    first = plain.responses.create(input=TASK, **kw)
    items: Any = [{"role": "user", "content": TASK}]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    reasoning = next(i for i in items if i.get("type") == "reasoning")
    assert reasoning["encrypted_content"] and reasoning["summary"]
    reasoning["summary"][0]["text"] = long_trace(reasoning["summary"][0]["text"])
    call = next(i for i in items if i.get("type") == "function_call")
    items.append({"type": "function_call_output", "call_id": call["call_id"], "output": "1"})
    client, sent = _openai(sim_server, ON)
    second = client.responses.create(input=items, **kw)
    assert second.output  # 200: encrypted_content accepted by the simulator
    got = next(i for i in json.loads(sent.bodies[-1])["input"] if i.get("type") == "reasoning")
    assert got["encrypted_content"] == reasoning["encrypted_content"]
    text = got["summary"][0]["text"]
    assert MARKER_RE.search(text) and text.startswith("HEADCANARY") and len(text) < 6100
    bad = json.loads(json.dumps(items))
    next(i for i in bad if i.get("type") == "reasoning")["encrypted_content"] = "QUJD" * 20
    with pytest.raises(openai.BadRequestError):
        plain.responses.create(input=bad, **kw)


def test_anthropic_signed_thinking_untouched_and_accepted(sim_server: SimServer) -> None:
    httpx2 = pytest.importorskip("httpx2")  # this anthropic release takes only its httpx fork
    tight = FoldSettings(enabled=True, floor_chars=20, head_chars=5, tail_chars=5)
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    kw: Any = {"model": "sim-claude", "max_tokens": 2048,
               "tools": [{"name": "lookup", "description": "Look up.", "input_schema": schema}],
               "thinking": {"type": "enabled", "budget_tokens": 1024}}  # fmt: skip

    def client(settings: FoldSettings) -> tuple[anthropic.Anthropic, Sent]:
        sent = Sent(httpx2)
        http = httpx2.Client(transport=FoldTransport(settings, inner=sent))
        return anthropic.Anthropic(base_url=sim_server.root_url, api_key=KEY,
                                   http_client=http, max_retries=0), sent  # fmt: skip

    plain, plain_sent = client(FoldSettings())
    messages: Any = [{"role": "user", "content": TASK}]
    first = plain.messages.create(messages=messages, **kw)
    thinking = [b for b in first.content if b.type == "thinking"]
    assert thinking and len(thinking[0].thinking) > tight.floor_chars
    tool = next(b for b in first.content if b.type == "tool_use")
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id,
                                      "content": "42"}]},
    ]  # fmt: skip
    folding, sent = client(tight)
    second = folding.messages.create(messages=messages, **kw)
    assert second.content  # 200: the signature verified
    plain.messages.create(messages=messages, **kw)
    assert sent.bodies[-1] == plain_sent.bodies[-1]  # byte-identical to the unfolded request
    bad = json.loads(json.dumps(messages))
    bad[1]["content"][0]["thinking"] = thinking[0].thinking[:5] + "..."
    with pytest.raises(anthropic.BadRequestError, match="signature"):
        plain.messages.create(messages=bad, **kw)


def test_gemini_thought_text_folded_signature_untouched(sim_server: SimServer) -> None:
    url = sim_server.root_url + "/v1beta/models/sim-gemini:generateContent"
    headers = {"x-goog-api-key": KEY}
    cfg = {"thinkingConfig": {"includeThoughts": True}}
    tools = [{"functionDeclarations": [{"name": "lookup", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}]}]  # fmt: skip
    contents: Any = [{"role": "user", "parts": [{"text": TASK}]}]
    with httpx.Client() as plain:
        first = plain.post(url, headers=headers, json={"contents": contents, "tools": tools,
                                                       "generationConfig": cfg}).json()  # fmt: skip
    parts = first["candidates"][0]["content"]["parts"]
    thought = next(p for p in parts if p.get("thought") is True)
    call = next(p for p in parts if "functionCall" in p)
    assert call["thoughtSignature"] and "thoughtSignature" not in thought
    thought["text"] = long_trace(thought["text"])
    contents += [{"role": "model", "parts": parts},
                 {"role": "user", "parts": [{"functionResponse": {
                     "name": "lookup", "response": {"result": "1"}}}]}]  # fmt: skip
    sent = Sent(httpx)
    with httpx.Client(transport=FoldTransport(ON, inner=sent)) as c:
        r = c.post(url, headers=headers, json={"contents": contents, "tools": tools,
                                               "generationConfig": cfg})  # fmt: skip
    assert r.status_code == 200, r.text  # the signature was accepted
    got = json.loads(sent.bodies[-1])["contents"][1]["parts"]
    assert next(p for p in got if "functionCall" in p) == call
    folded = next(p for p in got if p.get("thought") is True)["text"]
    assert MARKER_RE.search(folded) and folded.endswith("TAILCANARY")
