# mypy: ignore-errors
"""Scenario: the official openai SDK driven by a hand-written tool loop, as its docs show it:
Chat Completions appends ``completion.choices[0].message`` to ``messages``; Responses adds
``response.output`` to the input list (``store`` as the variant says, and
``include=["reasoning.encrypted_content"]`` when it is off)."""

from __future__ import annotations

from _common import (
    CHAT_TOOLS,
    MODEL,
    RESPONSES_TOOLS,
    STORE,
    by_dialect,
    chat_reply,
    conversation,
    responses_reply,
    run,
)
from openai import OpenAI


def chat():
    client = OpenAI()
    return conversation(
        lambda messages: chat_reply(
            messages,
            client.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS)
            .choices[0]
            .message,
        )
    )


def responses():
    client = OpenAI()
    extra = {"include": ["reasoning.encrypted_content"]} if STORE is False else {}

    def step(items: list) -> str | None:
        response = client.responses.create(
            model=MODEL,
            input=items,
            tools=RESPONSES_TOOLS,
            reasoning={"effort": "medium", "summary": "auto"},
            store=STORE,
            **extra,
        )
        return None if responses_reply(items, response.output) else response.output_text

    return conversation(step)


run(by_dialect(chat=chat, responses=responses))
