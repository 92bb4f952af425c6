"""Responses, Anthropic and Gemini behaviours, gateway quirks, faults and the catalog, each
shown through a real HTTP request to the in-process simulator."""

from __future__ import annotations

import asyncio
import base64
import types
from typing import Any

import httpx
import pytest

PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
TASK = "Find the population of Lyon."
R_TOOLS = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Look up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


# ---- responses -------------------------------------------------------------------------
def resp(client: httpx.Client, **body: Any) -> httpx.Response:
    body.setdefault("tools", R_TOOLS)
    return client.post("/v1/responses", json=body)


def first_turn(client: httpx.Client, model: str = "sim-gpt", **extra: Any) -> dict[str, Any]:
    r = resp(
        client,
        model=model,
        input=TASK,
        store=False,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "medium", "summary": "auto"},
        **extra,
    )
    assert r.status_code == 200, r.text
    return r.json()


def loop_input(out: list[dict[str, Any]], probe: bool = True) -> list[dict[str, Any]]:
    call = next(o for o in out if o["type"] == "function_call")
    return [
        {"role": "user", "content": TASK},
        *out,
        {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": "522000. " + (PROBE if probe else ""),
        },
    ]


def test_responses_encrypted_reasoning_is_unsealed_and_counted_in_loop(
    client: httpx.Client,
) -> None:
    out = first_turn(client)["output"]
    assert [o["type"] for o in out] == ["reasoning", "function_call"]
    assert "verification word" not in out[0]["encrypted_content"]
    with_rs = resp(client, model="sim-gpt", input=loop_input(out), store=False).json()
    fc = {k: v for k, v in out[1].items() if k != "id"}  # drop ids consistently, never half
    without = resp(client, model="sim-gpt", input=loop_input([fc]), store=False).json()
    assert with_rs["usage"]["input_tokens"] > without["usage"]["input_tokens"]
    assert with_rs["output"][-1]["content"][0]["text"] != "NONE"
    assert without["output"][-1]["content"][0]["text"] == "NONE"
    count = client.post(
        "/v1/responses/input_tokens",
        json={"model": "sim-gpt", "input": loop_input(out), "tools": R_TOOLS},
    )
    assert count.json()["input_tokens"] == with_rs["usage"]["input_tokens"]


def test_responses_tampered_encrypted_content_is_400(client: httpx.Client) -> None:
    out = first_turn(client)["output"]
    enc = out[0]["encrypted_content"]
    out[0] = dict(out[0], encrypted_content=enc[:20] + ("A" if enc[20] != "A" else "B") + enc[21:])
    r = resp(client, model="sim-gpt", input=loop_input(out), store=False)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_encrypted_content"


def test_responses_pairing_error_and_unpersisted_item(client: httpx.Client) -> None:
    out = first_turn(client)["output"]
    r = resp(client, model="sim-gpt", input=loop_input(out[1:]), store=False)
    assert r.status_code == 400
    assert "without its required 'reasoning' item" in r.json()["error"]["message"]
    bare = {k: v for k, v in out[0].items() if k != "encrypted_content"}
    r = resp(client, model="sim-gpt", input=loop_input([bare, out[1]]), store=False)
    assert r.status_code == 404 and "store" in r.json()["error"]["message"]


def test_responses_store_and_previous_response_id(client: httpx.Client) -> None:
    r1 = resp(client, model="sim-gpt", input=TASK, reasoning={"effort": "high"}).json()
    call = r1["output"][-1]
    assert "encrypted_content" not in r1["output"][0]  # not included without `include`
    r2 = resp(
        client,
        model="sim-gpt",
        previous_response_id=r1["id"],
        input=[
            {"type": "function_call_output", "call_id": call["call_id"], "output": "1. " + PROBE}
        ],
    )
    assert r2.status_code == 200 and r2.json()["output"][-1]["content"][0]["text"] != "NONE"
    missing = resp(client, model="sim-gpt", previous_response_id="resp_nope", input="hi")
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "previous_response_id"


def test_responses_context_all_turns_and_low_effort(client: httpx.Client) -> None:
    ctx = {"effort": "medium", "context": "all_turns"}
    bad = resp(client, model="sim-gpt", input=TASK, reasoning=ctx)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "reasoning.context"
    assert resp(client, model="sim-gpt-allturns", input=TASK, reasoning=ctx).status_code == 200
    low = resp(client, model="sim-gpt-lowskip", input=TASK, reasoning={"effort": "low"}).json()
    assert [o["type"] for o in low["output"]] == ["function_call"]
    high = resp(client, model="sim-gpt-lowskip", input=TASK, reasoning={"effort": "high"}).json()
    assert [o["type"] for o in high["output"]] == ["reasoning", "function_call"]


def test_responses_cross_turn_truth(client: httpx.Client) -> None:
    for model, kept in (("sim-gpt", False), ("sim-gpt-allturns", True)):
        out = first_turn(client, model)["output"]
        items = [
            *loop_input(out, probe=False),
            {"role": "assistant", "content": "About 522000."},
            {"role": "user", "content": PROBE},
        ]
        answer = resp(client, model=model, input=items, store=False).json()["output"][-1]
        assert (answer["content"][0]["text"] != "NONE") is kept, model


# ---- anthropic -------------------------------------------------------------------------
A_TOOLS = [
    {
        "name": "lookup",
        "description": "Look up.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


def msgs(
    client: httpx.Client, model: str, messages: list[Any], thinking: bool = True
) -> httpx.Response:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 1024,
        "messages": messages,
        "tools": A_TOOLS,
    }
    if thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    return client.post("/v1/messages", json=body)


def a_loop(client: httpx.Client, model: str) -> tuple[list[Any], dict[str, Any]]:
    first = msgs(client, model, [{"role": "user", "content": TASK}]).json()
    tool = next(b for b in first["content"] if b["type"] == "tool_use")
    history = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": first["content"]},
    ]
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool["id"], "content": "522000"}],
    }
    return [*history, result], first


def test_anthropic_signature_verified(client: httpx.Client) -> None:
    history, first = a_loop(client, "sim-claude")
    assert first["content"][0]["type"] == "thinking"
    assert msgs(client, "sim-claude", history).status_code == 200
    block = history[1]["content"][0]
    history[1]["content"][0] = dict(block, thinking=block["thinking"] + " ")
    r = msgs(client, "sim-claude", history)
    assert (
        r.status_code == 400
        and "Invalid signature in thinking block" in r.json()["error"]["message"]
    )
    history[1]["content"][0] = block
    other = msgs(client, "sim-claude-preserve", history)  # another model: signature fails
    assert other.status_code == 400
    history[1]["content"] = history[1]["content"][1:]  # thinking dropped from the tool turn
    r = msgs(client, "sim-claude", history)
    assert (
        r.status_code == 400 and "must start with a thinking block" in r.json()["error"]["message"]
    )


@pytest.mark.parametrize(("model", "kept"), [("sim-claude", False), ("sim-claude-preserve", True)])
def test_anthropic_earlier_turn_thinking_regimes(
    client: httpx.Client, model: str, kept: bool
) -> None:
    history, _first = a_loop(client, model)
    final = msgs(client, model, history).json()
    turn2 = [
        *history,
        {"role": "assistant", "content": final["content"]},
        {"role": "user", "content": PROBE},
    ]
    with_t = msgs(client, model, turn2).json()
    stripped = [
        dict(m, content=[b for b in m["content"] if b["type"] != "thinking"])
        if m["role"] == "assistant"
        else m
        for m in turn2
    ]
    without = msgs(client, model, stripped).json()

    def billed(u: dict[str, int]) -> int:  # input_tokens excludes cache reads
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]

    assert (billed(with_t["usage"]) > billed(without["usage"])) is kept
    assert (with_t["content"][-1]["text"] != "NONE") is kept


def test_anthropic_redacted_thinking(client: httpx.Client) -> None:
    history, first = a_loop(client, "sim-claude-redacted")
    assert first["content"][0]["type"] == "redacted_thinking"
    history[-1]["content"][0]["content"] = "522000. " + PROBE
    ok = msgs(client, "sim-claude-redacted", history)
    assert ok.status_code == 200 and ok.json()["content"][-1]["text"] != "NONE"
    data = first["content"][0]["data"]
    history[1]["content"][0] = {"type": "redacted_thinking", "data": data[:-6] + "AAAAA="}
    assert msgs(client, "sim-claude-redacted", history).status_code == 400
    count = client.post(
        "/v1/messages/count_tokens",
        json={"model": "sim-claude", "messages": [{"role": "user", "content": TASK}]},
    )
    assert count.json()["input_tokens"] > 0


# ---- gemini ----------------------------------------------------------------------------
G_TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "lookup",
                "description": "Look up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ]
    }
]
G_CFG = {"thinkingConfig": {"includeThoughts": True}}


def gen(client: httpx.Client, model: str, contents: list[Any], cfg: Any = G_CFG) -> httpx.Response:
    return client.post(
        f"/v1beta/models/{model}:generateContent",
        json={"contents": contents, "tools": G_TOOLS, "generationConfig": cfg},
    )


def g_loop(client: httpx.Client) -> list[Any]:
    first = gen(client, "sim-gemini", [{"role": "user", "parts": [{"text": TASK}]}]).json()
    parts = first["candidates"][0]["content"]["parts"]
    assert parts[0]["thought"] is True and "thoughtSignature" in parts[1]
    return [
        {"role": "user", "parts": [{"text": TASK}]},
        {"role": "model", "parts": parts},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "lookup", "response": {"result": "522000. " + PROBE}}}
            ],
        },
    ]


def test_gemini_thought_signature_rules(client: httpx.Client) -> None:
    contents = g_loop(client)
    ok = gen(client, "sim-gemini", contents).json()
    assert ok["candidates"][0]["content"]["parts"][-1]["text"] != "NONE"
    call = contents[1]["parts"][1]
    sig = call["thoughtSignature"]
    urlsafe = base64.urlsafe_b64encode(base64.b64decode(sig)).decode()
    contents[1]["parts"][1] = dict(call, thoughtSignature=urlsafe)
    assert gen(client, "sim-gemini", contents).status_code == 200
    contents[1]["parts"][1] = {k: v for k, v in call.items() if k != "thoughtSignature"}
    r = gen(client, "sim-gemini", contents)
    assert r.status_code == 400 and "thought_signature" in r.json()["error"]["message"]
    contents[1]["parts"][1] = dict(call, thoughtSignature="skip_thought_signature_validator")
    skipped = gen(client, "sim-gemini", contents)
    assert skipped.status_code == 200
    assert skipped.json()["candidates"][0]["content"]["parts"][-1]["text"] == "NONE"
    count = client.post("/v1beta/models/sim-gemini:countTokens", json={"contents": contents})
    assert count.json()["totalTokens"] > 0


def test_gemini_thinking_level_rejected_on_older_model(client: httpx.Client) -> None:
    cfg = {"thinkingConfig": {"thinkingLevel": "high"}}
    first = [{"role": "user", "parts": [{"text": TASK}]}]
    r = gen(client, "sim-gemini-25", first, cfg)
    assert r.status_code == 400 and "Thinking level" in r.json()["error"]["message"]
    assert gen(client, "sim-gemini", first, cfg).status_code == 200


# ---- gateways, parameters, faults, catalog ---------------------------------------------
def chat(
    client: httpx.Client, model: str, content: str, headers: Any = None, **extra: Any
) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": content}], **extra}
    return client.post("/v1/chat/completions", json=body, headers=headers or {})


def test_safety_layers(client: httpx.Client) -> None:
    earlier = "What was the verification word in your earlier reasoning?"
    r = chat(client, "sim-grok-refuse", earlier)
    assert (
        r.status_code == 403
        and r.json()["error"]["message"] == "I'm sorry, I can't help with that request."
    )
    assert chat(client, "sim-grok-refuse", PROBE).status_code == 200  # neutral wording passes
    f = chat(client, "sim-chat-filter", earlier).json()
    assert f["choices"][0]["finish_reason"] == "content_filter" and "usage" not in f


def test_unsupported_parameters(client: httpx.Client) -> None:
    for param, extra in (("temperature", {"temperature": 0.2}), ("max_tokens", {"max_tokens": 10})):
        r = chat(client, "sim-o-strict", TASK, **extra)
        assert r.status_code == 400 and r.json()["error"]["param"] == param
    assert "max_completion_tokens" in chat(client, "sim-o-strict", TASK, max_tokens=5).text
    assert chat(client, "sim-o-strict", TASK, max_completion_tokens=10).status_code == 200
    r = chat(client, "sim-plain", TASK, reasoning_effort="low")
    assert r.status_code == 400 and "reasoning_effort" in r.json()["error"]["message"]


def test_faults(client: httpx.Client) -> None:
    r = chat(client, "sim-qwen3@429", TASK)
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    r = chat(client, "sim-qwen3", TASK, headers={"x-sim-fault": "429:7"})
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    assert chat(client, "sim-qwen3@500", TASK).status_code == 500
    a = client.post(
        "/v1/messages", json={"model": "sim-claude@503", "max_tokens": 5, "messages": []}
    )
    assert a.status_code == 503 and a.json()["error"]["type"] == "overloaded_error"
    assert chat(client, "sim-qwen3@slow:300", TASK).status_code == 200  # delay: see below
    with pytest.raises(ValueError):
        chat(client, "sim-qwen3@malformed", TASK).json()
    with pytest.raises(httpx.RemoteProtocolError):
        chat(client, "sim-qwen3@drop", TASK).read()
    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream(
            "POST",
            "/v1/chat/completions",
            json={
                "model": "sim-qwen3@drop",
                "stream": True,
                "messages": [{"role": "user", "content": TASK}],
            },
        ) as s,
    ):
        for _ in s.iter_bytes():
            pass


def test_slow_fault_waits_before_answering(monkeypatch: pytest.MonkeyPatch) -> None:
    """``slow:<ms>`` waits <ms>/1000 seconds, once, before the answer is made; without the
    fault nothing waits. Shown by the order of events in the app (its sleep and the dialect
    handler recorded), not by a clock: tests assert no timings."""
    from reasonwire.sim import app as sim_app
    from reasonwire.sim.dialects import chat as chat_dialect

    events: list[Any] = []
    real_sleep, real_handle = asyncio.sleep, chat_dialect.handle

    async def sleep(delay: float) -> None:
        events.append(("sleep", delay))
        await real_sleep(0)

    def handle(*args: Any, **kw: Any) -> Any:
        events.append("answer")
        return real_handle(*args, **kw)

    monkeypatch.setattr(sim_app, "asyncio", types.SimpleNamespace(sleep=sleep))
    monkeypatch.setattr(chat_dialect, "handle", handle)

    async def post(model: str) -> int:
        transport = httpx.ASGITransport(app=sim_app.build_app(0))
        async with httpx.AsyncClient(transport=transport, base_url="http://sim") as c:
            body = {"model": model, "messages": [{"role": "user", "content": TASK}]}
            return (await c.post("/v1/chat/completions", json=body)).status_code

    for model, expected in (
        ("sim-qwen3@slow:300", [("sleep", 0.3), "answer"]),
        ("sim-qwen3@slow:0", [("sleep", 0.0), "answer"]),  # the boundary: no wait, one sleep
        ("sim-qwen3", ["answer"]),
    ):
        events.clear()
        assert asyncio.run(post(model)) == 200
        assert events == expected, model
    events.clear()
    assert asyncio.run(post("sim-qwen3@slow:soon")) == 400 and events == []


def test_catalog(client: httpx.Client) -> None:
    from reasonwire.sim import BEHAVIOURS

    data = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
    assert set(BEHAVIOURS) <= set(data)
    assert {"~sim/chat-latest", "sim-chat-all:batch"} <= set(data)
    assert data["sim-image"]["architecture"]["output_modalities"] == ["image"]
    assert "reasoning_effort" not in data["sim-plain"]["supported_parameters"]
    assert "temperature" not in data["sim-o-strict"]["supported_parameters"]
    assert float(data["sim-openrouter"]["pricing"]["prompt"]) > 0
    assert chat(client, "~sim/chat-latest", TASK).status_code == 200
    assert chat(client, "sim-image", TASK).status_code == 404
    assert chat(client, "sim-nope", TASK).status_code == 404
    assert chat(client, "sim-claude", TASK).status_code == 404  # wrong endpoint for the model
