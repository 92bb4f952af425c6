# mypy: ignore-errors
"""Scenario: google-genai automatic function calling: ``client.chats.create`` with Python
functions as tools and ``include_thoughts``; ``chat.send_message`` per user turn (the SDK runs
the tools and keeps the history). The base URL comes from ``GOOGLE_GEMINI_BASE_URL``."""

from __future__ import annotations

from _common import KEY, MODEL, TOOLS, run
from google import genai
from google.genai import types


def afc():
    client = genai.Client(api_key=KEY)
    config = types.GenerateContentConfig(
        tools=list(TOOLS.values()),
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )
    chat = client.chats.create(model=MODEL, config=config)

    def say(text: str) -> str:
        assert client  # the chat needs its client alive (it closes when collected)
        return chat.send_message(text).text or ""

    return say


run({"gemini": afc})
