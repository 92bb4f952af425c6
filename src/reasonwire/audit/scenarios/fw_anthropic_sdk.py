# mypy: ignore-errors
"""Scenario: the official anthropic SDK driven by a hand-written tool loop, as its docs show
it: extended thinking on, the assistant turn appended as ``response.content`` (the SDK's
block objects), tool results in the next user message."""

from __future__ import annotations

from _common import (
    DESCRIPTIONS,
    MAX_TOKENS,
    MODEL,
    PARAMETERS,
    THINKING_BUDGET,
    TOOLS,
    call_tool,
    conversation,
    run,
)
from anthropic import Anthropic

ANTHROPIC_TOOLS = [
    {"name": n, "description": DESCRIPTIONS[n], "input_schema": PARAMETERS} for n in TOOLS
]


def messages_loop():
    client = Anthropic()

    def step(messages: list) -> str | None:
        response = client.messages.create(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            thinking={"type": "enabled", "budget_tokens": THINKING_BUDGET},
            tools=ANTHROPIC_TOOLS,
            messages=messages,
        )
        messages.append({"role": "assistant", "content": response.content})
        uses = [b for b in response.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in response.content if b.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u.id,
                        "content": call_tool(u.name, u.input),
                    }
                    for u in uses
                ],
            }
        )
        return None

    return conversation(step)


run({"anthropic": messages_loop})
