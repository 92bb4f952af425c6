# mypy: ignore-errors
"""Scenario: the official openai SDK driven by a hand-written tool loop, as its docs show it:
Chat Completions appends ``completion.choices[0].message`` to ``messages``; Responses adds
``response.output`` to the input list (``store`` as the variant says, and
``include=["reasoning.encrypted_content"]`` when it is off)."""

from __future__ import annotations

import json

from _common import DESCRIPTIONS, MODEL, PARAMETERS, STORE, TOOLS, call_tool, run
from openai import OpenAI

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


def chat():
    client = OpenAI()
    messages = []

    def say(text: str) -> str:
        messages.append({"role": "user", "content": text})
        for _ in range(8):
            completion = client.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS
            )
            msg = completion.choices[0].message
            messages.append(msg)
            if not msg.tool_calls:
                return msg.content or ""
            for call in msg.tool_calls:
                out = call_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
        raise RuntimeError("tool loop did not end")

    return say


def responses():
    client = OpenAI()
    items = []
    extra = {"include": ["reasoning.encrypted_content"]} if STORE is False else {}

    def say(text: str) -> str:
        items.append({"role": "user", "content": text})
        for _ in range(8):
            response = client.responses.create(
                model=MODEL,
                input=items,
                tools=RESPONSES_TOOLS,
                reasoning={"effort": "medium", "summary": "auto"},
                store=STORE,
                **extra,
            )
            items.extend(response.output)
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                return response.output_text
            for call in calls:
                out = call_tool(call.name, json.loads(call.arguments))
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": out}
                )
        raise RuntimeError("tool loop did not end")

    return say


run({"chat": chat, "responses-store": responses, "responses-nostore": responses})
