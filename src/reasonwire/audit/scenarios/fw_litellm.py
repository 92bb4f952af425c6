# mypy: ignore-errors
"""Scenario: the LiteLLM SDK in a hand-written loop, as its docs show it:
``litellm.completion`` appending ``response.choices[0].message`` (DeepSeek chat, Anthropic with
``thinking``, Gemini with ``reasoning_effort``), ``litellm.responses`` adding
``response.output`` to the input (Responses). The simulator's model is registered with the
capabilities of the real model of the dialect (``litellm.register_model``), since LiteLLM
decides reasoning support from its model map."""

from __future__ import annotations

import json

import litellm
from _common import (
    BASE_URL,
    DESCRIPTIONS,
    KEY,
    MAX_TOKENS,
    MODEL,
    PARAMETERS,
    REAL_MODEL,
    ROOT_URL,
    STORE,
    THINKING_BUDGET,
    TOOLS,
    call_tool,
    run,
)

CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": n, "description": DESCRIPTIONS[n], "parameters": PARAMETERS},
    }
    for n in TOOLS
]
RESPONSES_TOOLS = [
    {"type": "function", "name": n, "description": DESCRIPTIONS[n], "parameters": PARAMETERS}
    for n in TOOLS
]


def _register(provider: str) -> str:
    name = f"{provider}/{MODEL}"
    info = litellm.model_cost.get(f"{provider}/{REAL_MODEL}") or litellm.model_cost.get(REAL_MODEL)
    if info:
        litellm.register_model({name: dict(info, litellm_provider=provider)})
    return name


def _completion_loop(model: str, **kwargs):
    messages = []

    def say(text: str) -> str:
        messages.append({"role": "user", "content": text})
        for _ in range(8):
            response = litellm.completion(
                model=model, messages=messages, tools=CHAT_TOOLS, **kwargs
            )
            msg = response.choices[0].message
            messages.append(msg)
            if not msg.tool_calls:
                return msg.content or ""
            for call in msg.tool_calls:
                out = call_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
        raise RuntimeError("tool loop did not end")

    return say


def chat():
    return _completion_loop(_register("deepseek"), api_base=BASE_URL, api_key=KEY)


def anthropic():
    thinking = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    return _completion_loop(
        _register("anthropic"),
        api_base=ROOT_URL,
        api_key=KEY,
        thinking=thinking,
        max_tokens=MAX_TOKENS,
    )


def gemini():
    return _completion_loop(
        _register("gemini"), api_base=ROOT_URL + "/v1beta", api_key=KEY, reasoning_effort="high"
    )


def responses():
    model = _register("openai")
    items = []
    extra = {"include": ["reasoning.encrypted_content"]} if STORE is False else {}

    def say(text: str) -> str:
        items.append({"role": "user", "content": text})
        for _ in range(8):
            response = litellm.responses(
                model=model,
                input=items,
                tools=RESPONSES_TOOLS,
                reasoning={"effort": "medium", "summary": "auto"},
                store=STORE,
                api_base=BASE_URL,
                api_key=KEY,
                **extra,
            )
            items.extend(response.output)
            calls = [o for o in response.output if getattr(o, "type", None) == "function_call"]
            if not calls:
                texts = [
                    c.text
                    for o in response.output
                    if getattr(o, "type", None) == "message"
                    for c in o.content
                ]
                return "".join(texts)
            for call in calls:
                out = call_tool(call.name, json.loads(call.arguments))
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": out}
                )
        raise RuntimeError("tool loop did not end")

    return say


run(
    {
        "chat": chat,
        "responses-store": responses,
        "responses-nostore": responses,
        "anthropic": anthropic,
        "gemini": gemini,
    }
)
