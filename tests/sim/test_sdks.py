"""The official SDKs, used as ordinary clients of the simulator, complete a tool loop with
reasoning on their own dialect, streaming and not; their typed models parse our responses."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from reasonwire.sim.server import SimServer

TASK = "Find the population of Lyon."
PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
KEY = "sk-sim-not-a-real-key"


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_tool_loop(sim_server: SimServer, stream: bool) -> None:
    client = openai.OpenAI(base_url=sim_server.base_url, api_key=KEY, max_retries=0)
    tools: Any = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "required": ["q"],
                },
            },
        }
    ]
    messages: list[Any] = [{"role": "user", "content": TASK}]
    if stream:
        reasoning, args, call_id, name = "", "", "", ""
        with client.chat.completions.create(
            model="sim-qwen3",
            messages=messages,
            tools=tools,
            stream=True,
            stream_options={"include_usage": True},
        ) as s:
            usage = None
            for chunk in s:
                usage = chunk.usage or usage
                for ch in chunk.choices:
                    reasoning += (ch.delta.model_extra or {}).get("reasoning_content") or ""
                    for tc in ch.delta.tool_calls or []:
                        call_id = tc.id or call_id
                        name = (tc.function and tc.function.name) or name
                        args += (tc.function and tc.function.arguments) or ""
        assert usage is not None and usage.completion_tokens_details is not None
        assistant = {
            "role": "assistant",
            "content": "",
            "reasoning_content": reasoning,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            ],
        }
    else:
        first = client.chat.completions.create(model="sim-qwen3", messages=messages, tools=tools)
        msg = first.choices[0].message
        reasoning = (msg.model_extra or {})["reasoning_content"]
        assert first.usage and first.usage.prompt_tokens > 0
        assert msg.tool_calls and msg.tool_calls[0].function.name == "lookup"
        assistant = msg.model_dump(exclude_none=True)
        call_id = msg.tool_calls[0].id
    assert "verification word" in reasoning
    messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": "1. " + PROBE}]
    final = client.chat.completions.create(model="sim-qwen3", messages=messages, tools=tools)
    assert final.choices[0].message.content in reasoning  # the word read back from reasoning


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_tool_loop(sim_server: SimServer, stream: bool) -> None:
    client = openai.OpenAI(base_url=sim_server.base_url, api_key=KEY, max_retries=0)
    tools: Any = [
        {
            "type": "function",
            "name": "lookup",
            "strict": False,
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
    ]
    kw: Any = {
        "model": "sim-gpt",
        "tools": tools,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "medium", "summary": "auto"},
    }
    if stream:
        with client.responses.stream(input=TASK, **kw) as s:
            kinds = {e.type for e in s}
            first = s.get_final_response()
        assert "response.reasoning_summary_text.delta" in kinds
    else:
        first = client.responses.create(input=TASK, **kw)
    assert [o.type for o in first.output] == ["reasoning", "function_call"]
    assert first.usage and first.usage.output_tokens_details.reasoning_tokens > 0
    call = first.output[1]
    assert call.type == "function_call"
    items: list[Any] = [{"role": "user", "content": TASK}]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "1. " + PROBE})
    final = client.responses.create(input=items, **kw)
    assert final.output_text and final.output_text != "NONE"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_loop(sim_server: SimServer, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=sim_server.root_url, api_key=KEY, max_retries=0)
    tools: Any = [
        {
            "name": "lookup",
            "description": "Look up.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
    ]
    kw: Any = {
        "model": "sim-claude",
        "max_tokens": 2048,
        "tools": tools,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    messages: list[Any] = [{"role": "user", "content": TASK}]
    if stream:
        with client.messages.stream(messages=messages, **kw) as s:
            first = s.get_final_message()
    else:
        first = client.messages.create(messages=messages, **kw)
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use"]
    tool = first.content[2]
    assert tool.type == "tool_use" and first.stop_reason == "tool_use"
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "1. " + PROBE}],
        },
    ]
    final = client.messages.create(messages=messages, **kw)
    text = [b for b in final.content if b.type == "text"][-1]
    assert text.type == "text" and text.text != "NONE"
    assert final.usage.input_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_google_genai_tool_loop(sim_server: SimServer, stream: bool) -> None:
    client = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(base_url=sim_server.root_url, api_version="v1beta"),
    )
    lookup = types.FunctionDeclaration(
        name="lookup",
        description="Look up.",
        parameters=types.Schema(
            type=types.Type.OBJECT, properties={"q": types.Schema(type=types.Type.STRING)}
        ),
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[lookup])],
        thinking_config=types.ThinkingConfig(include_thoughts=True),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=TASK)])]
    if stream:
        parts: list[types.Part] = []
        for chunk in client.models.generate_content_stream(
            model="sim-gemini", contents=contents, config=config
        ):
            assert chunk.candidates and chunk.candidates[0].content
            parts += chunk.candidates[0].content.parts or []
        model_turn = types.Content(role="model", parts=parts)
    else:
        first = client.models.generate_content(model="sim-gemini", contents=contents, config=config)
        assert first.usage_metadata and first.usage_metadata.thoughts_token_count
        assert first.candidates and first.candidates[0].content
        model_turn = first.candidates[0].content
    assert model_turn.parts
    call_parts = [p for p in model_turn.parts if p.function_call]
    assert call_parts and call_parts[0].thought_signature  # bytes, decoded by the SDK
    assert any(p.thought for p in model_turn.parts)
    contents += [
        model_turn,
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(name="lookup", response={"result": "1. " + PROBE})
            ],
        ),
    ]
    final = client.models.generate_content(model="sim-gemini", contents=contents, config=config)
    assert final.text and final.text != "NONE"
    assert json.dumps(final.model_dump(mode="json"))  # typed model round-trips
