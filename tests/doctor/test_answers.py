"""A saved answer (a response body) is read at the place each API documents for the model's
output, so a finding in it names a path the user can find in the file. Synthetic bodies in
each API's published response shape; the expected paths are those shapes' own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonwire.doctor import read
from reasonwire.wire.model import JsonObject

ANSWERS: list[tuple[str, JsonObject, list[str]]] = [
    (
        "chat",  # Chat Completions: the assistant message is choices[i].message
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "deepseek-reasoner",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "a", "reasoning_content": "r"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        },
        ["$.choices[0].message"],
    ),
    (
        "responses",  # Responses: the output items
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": "gpt-5",
            "output": [
                {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "a", "annotations": []}],
                },
            ],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        },
        ["$.output[0]", "$.output[1]"],
    ),
    (
        "anthropic",  # Messages: the content blocks
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "c2ln"},
                {"type": "text", "text": "a"},
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
        ["$.content[0]", "$.content[1]"],
    ),
    (
        "gemini",  # generateContent: the parts of the candidate's content
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "t", "thought": True}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1},
            "modelVersion": "gemini-3-pro-preview",
        },
        ["$.candidates[0].content.parts[0]"],
    ),
]


@pytest.mark.parametrize(("dialect", "body", "paths"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_a_saved_answer_is_read_where_its_api_puts_the_output(
    tmp_path: Path, dialect: str, body: JsonObject, paths: list[str]
) -> None:
    saved = tmp_path / "answer.json"
    saved.write_text(json.dumps(body))
    (conversation,) = read(saved).conversations
    (message,) = conversation.messages
    assert (message.role, message.dialect) == ("assistant", dialect)
    assert [item.path for item in message.items] == paths
