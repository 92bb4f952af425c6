"""The conversations the prompt-token tests send, and an independent count of their prompts.

The probe is a ~1600-character ``reasoning_content`` on the assistant turn that called a tool.
"In the loop" ends with that tool's result (the next request of the same tool loop, no new user
message); "across turns" continues with the final answer and a new user message.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.localserver.server import ManagedServer
from reasonwire.templates.render import render_chat_template

_SENTENCES = (
    "The user asks for the weather in Paris, so I should call the weather tool first. ",
    "The tool takes a city name; Paris is unambiguous here, no country code is needed. ",
    "After the result arrives I will report the temperature in Celsius and the sky. ",
    "If the tool fails I should say so plainly instead of guessing a forecast. ",
)
PROBE = "".join(_SENTENCES[i % 4] for i in range(24))[:1600]

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def loop_messages(field: str | None = None, value: Any = None) -> list[dict[str, Any]]:
    """System, user, assistant tool call (carrying ``field: value``), tool result."""
    call: dict[str, Any] = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
            }
        ],
    }
    if field is not None:
        call[field] = value
    return [
        {"role": "system", "content": "You are a concise weather assistant."},
        {"role": "user", "content": "What is the weather in Paris right now?"},
        call,
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18, "sky": "clear"}'},
    ]


def across_messages(field: str | None = None, value: Any = None) -> list[dict[str, Any]]:
    """The loop, then the final answer and a new user message."""
    return [
        *loop_messages(field, value),
        {"role": "assistant", "content": "It is 18 °C with a clear sky in Paris."},
        {"role": "user", "content": "Thanks. Should I take a jacket tonight?"},
    ]


def post_chat(server: ManagedServer, messages: list[dict[str, Any]]) -> Any:
    """A raw chat completion request for one token; returns the httpx response."""
    body = {"messages": messages, "tools": TOOLS, "max_tokens": 1, "temperature": 0}
    return server.post("/v1/chat/completions", body)


def prompt_tokens(server: ManagedServer, messages: list[dict[str, Any]]) -> int:
    resp = post_chat(server, messages)
    assert resp.status_code == 200, resp.text
    return int(resp.json()["usage"]["prompt_tokens"])


@functools.cache
def tokenizer(model_file: Path) -> GGUFVocabTokenizer:
    return GGUFVocabTokenizer.from_file(model_file)


def _arguments_as_objects(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call arguments parsed from their JSON string, as llama.cpp hands them to templates.

    llama.cpp passes objects because some templates apply ``tojson`` unconditionally (Qwen2.5);
    templates that accept either (``is string`` checks) render both forms identically.
    """
    out = []
    for msg in messages:
        calls = msg.get("tool_calls")
        if calls:
            msg = {
                **msg,
                "tool_calls": [
                    {
                        **call,
                        "function": {
                            **call["function"],
                            "arguments": json.loads(call["function"]["arguments"]),
                        },
                    }
                    for call in calls
                ],
            }
        out.append(msg)
    return out


def render(template: Path, model_file: Path, messages: list[dict[str, Any]]) -> str:
    """The prompt as transformers-style jinja2 renders it, with the vocab's own BOS/EOS and
    the variables llama-server sets by default (thinking enabled, arguments as objects)."""
    tok = tokenizer(model_file)
    return render_chat_template(
        template.read_text(encoding="utf-8"),
        _arguments_as_objects(messages),
        TOOLS,
        add_generation_prompt=True,
        bos_token=tok.bos_token or "",
        eos_token=tok.eos_token or "",
        enable_thinking=True,
    )


def independent_count(template: Path, model_file: Path, messages: list[dict[str, Any]]) -> int:
    """jinja2 rendering counted with the same vocabulary, without asking the server."""
    return tokenizer(model_file).count(render(template, model_file, messages))
