"""The project's own wire dialects read simulator answers: the streamed and non-streamed
answer to the same request decode to the same turn, and replay() of that turn is accepted."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reasonwire.wire.model import Turn
from reasonwire.wire.registry import get_dialect

TASK = "Find the population of Lyon."
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": (
        "/v1/chat/completions",
        {
            "model": "sim-openrouter",
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": TASK}],
            "tools": [
                {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
            ],
        },
    ),
    "responses": (
        "/v1/responses",
        {
            "model": "sim-gpt",
            "input": TASK,
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "reasoning": {"summary": "auto"},
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        },
    ),
    "anthropic": (
        "/v1/messages",
        {
            "model": "sim-claude",
            "max_tokens": 99,
            "thinking": {"type": "enabled", "budget_tokens": 50},
            "messages": [{"role": "user", "content": TASK}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        },
    ),
    "gemini": (
        "/v1beta/models/sim-gemini:generateContent",
        {
            "contents": [{"role": "user", "parts": [{"text": TASK}]}],
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "object"}}]}],
        },
    ),
}


def summary(t: Turn) -> Any:
    return (
        t.text,
        t.reasoning_text,
        [(c.name, c.arguments) for c in t.tool_calls],
        [c.value for c in t.carriers],
        t.usage and (t.usage.input_uncached, t.usage.cache_read, t.usage.output, t.usage.reasoning),
    )


@pytest.mark.parametrize("name", list(CASES))
def test_stream_and_body_decode_to_the_same_turn(client: httpx.Client, name: str) -> None:
    dialect = get_dialect(name)
    path, body = CASES[name]
    plain = dialect.parse_response(client.post(path, json=body).content)
    if name == "gemini":
        r = client.post(
            path.replace(":generateContent", ":streamGenerateContent?alt=sse"), json=body
        )
    else:
        r = client.post(path, json=dict(body, stream=True))
    dec = dialect.stream_decoder()
    for i in range(0, len(r.content), 97):  # odd split points
        dec.feed(r.content[i : i + 97])
    streamed = dec.close()[-1].turn  # type: ignore[attr-defined]
    assert summary(plain) == summary(streamed)
    assert plain.tool_calls and plain.reasoning_text and plain.carriers
