"""The official SDKs as clients of the gateway, streaming and not, with the simulator upstream.

Each test runs a real tool loop: the client never sees plaintext reasoning, yet the upstream
receives the original carriers back (the vault) and answers the verification-word probe from
them; only the resolved effort reaches the upstream whatever the client asked for.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from reasonwire.govern.evidence import EvidenceRow
from tests.govern.conftest import (
    ANTHROPIC_BUDGET,
    ANTHROPIC_TOOLS,
    CHAT_TOOLS,
    RESPONSES_TOOLS,
    RUNTIME_KEY,
    UPSTREAM_KEY,
    World,
    anthropic_tool_reply,
    new_conv,
)

PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."


def _mentions(text: str, word: str) -> bool:
    """Whole-word match: a canary such as "umber" must not match "sequence_number"."""
    return re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text) is not None


def _word(upstream_bodies: list[dict[str, Any]]) -> str:
    """The verification word the simulator put in its reasoning (seen only upstream-side)."""
    text = json.dumps(upstream_bodies)
    marker = "The verification word for this task is "
    assert marker in text
    return text.split(marker, 1)[1].split(".", 1)[0]


def _forwarded(world: World, conv: str) -> list[EvidenceRow]:
    rows = world.store.rows(conv)
    assert rows and all(r.outcome == "forwarded" for r in rows), [
        (r.outcome, r.reason) for r in rows
    ]
    return rows


def _upstream_auth_ok(world: World, conv: str, header: str, value: str) -> None:
    for seen in world.recorder.find(conv):
        assert seen["headers"].get(header) == value
        assert RUNTIME_KEY not in json.dumps(seen["headers"])


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_tool_loop_through_gateway(world: World, stream: bool) -> None:
    conv = new_conv()
    client = world.openai_client(conv, "chat/sim-deepseek", "low")
    messages: list[Any] = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    forged: Any = {"reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": True}}
    if stream:
        args, call_id, name, content, chunks = "", "", "", "", []
        with client.chat.completions.create(
            model="sim-deepseek",
            messages=messages,
            tools=CHAT_TOOLS,
            stream=True,
            extra_body=forged,
        ) as s:
            for chunk in s:
                chunks.append(chunk.model_dump_json())
                for ch in chunk.choices:
                    content += ch.delta.content or ""
                    for tc in ch.delta.tool_calls or []:
                        call_id = tc.id or call_id
                        name = (tc.function and tc.function.name) or name
                        args += (tc.function and tc.function.arguments) or ""
        seen_by_client = "\n".join(chunks)
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            ],
        }
    else:
        first = client.chat.completions.create(
            model="sim-deepseek", messages=messages, tools=CHAT_TOOLS, extra_body=forged
        )
        seen_by_client = first.model_dump_json()
        assistant = first.choices[0].message.model_dump(exclude_none=True)
        assert first.choices[0].message.tool_calls
        call_id = first.choices[0].message.tool_calls[0].id
    assert "reasoning_content" not in seen_by_client and "reasoning_details" not in seen_by_client
    messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": "1. " + PROBE}]
    final = client.chat.completions.create(
        model="sim-deepseek", messages=messages, tools=CHAT_TOOLS, extra_body=forged
    )
    ups = world.recorder.find(conv)
    word = _word([u["body"] for u in ups])  # in the re-attached history only
    assert not _mentions(seen_by_client, word)
    assert final.choices[0].message.content == word  # the vault gave the reasoning back
    assert [u["body"]["reasoning_effort"] for u in ups] == ["low", "low"]
    assert all("chat_template_kwargs" not in u["body"] for u in ups)
    _upstream_auth_ok(world, conv, "authorization", f"Bearer {UPSTREAM_KEY}")
    rows = _forwarded(world, conv)
    assert [(r.requested, r.resolved, r.usage_status) for r in rows] == [
        ("low", "low", "reported")
    ] * 2
    assert rows[0].stream is stream and rows[1].carriers_reattached == 1
    assert rows[0].controls_removed == "reasoning_effort,chat_template_kwargs"


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_tool_loop_through_gateway(world: World, stream: bool) -> None:
    conv = new_conv()
    client = world.openai_client(conv, "responses/sim-gpt", "auto")
    kw: Any = {
        "model": "sim-gpt",
        "tools": RESPONSES_TOOLS,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low", "summary": "detailed"},
    }
    task = f"[{conv}] Find the population of Lyon."
    if stream:
        with client.responses.stream(input=task, **kw) as s:
            events = [e.model_dump_json() for e in s]
            first = s.get_final_response()
        seen_by_client = "\n".join(events)
        assert "reasoning_summary_text" not in seen_by_client
    else:
        first = client.responses.create(input=task, **kw)
        seen_by_client = first.model_dump_json()
    assert [o.type for o in first.output] == ["reasoning", "function_call"]
    rs = first.output[0]
    assert rs.type == "reasoning" and rs.summary == [] and rs.encrypted_content
    call = first.output[1]
    assert call.type == "function_call"
    items: list[Any] = [{"role": "user", "content": task}]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "1. " + PROBE})
    final = client.responses.create(input=items, **kw)
    ups = world.recorder.find(conv)
    # The gateway drops the client's summary request, so the word lives only in the encrypted
    # item: the final answer reads it back from the re-attached original.
    word = final.output_text
    assert word and word != "NONE" and not _mentions(seen_by_client, word)
    assert ups[1]["body"]["input"][1]["encrypted_content"] == rs.encrypted_content
    # Auto resolves to the organisation maximum; the client's "low" never reached upstream.
    assert [u["body"]["reasoning"] for u in ups] == [{"effort": "high"}, {"effort": "high"}]
    rows = _forwarded(world, conv)
    assert [(r.requested, r.resolved) for r in rows] == [("auto", "high")] * 2
    assert rows[1].carriers_reattached == 1
    assert all(r.route_qualification == "Q-ROUTE-sim-gpt" for r in rows)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_loop_through_gateway(world: World, stream: bool) -> None:
    conv = new_conv()
    client = world.anthropic_client(conv, "anthropic/sim-claude", "high")
    kw: Any = {
        "model": "sim-claude",
        "max_tokens": 20000,
        "tools": ANTHROPIC_TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "extra_body": {"output_config": {"effort": "max"}},
    }
    messages: list[Any] = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    if stream:
        with client.messages.stream(messages=messages, **kw) as s:
            events = [e.model_dump_json() for e in s]
            first = s.get_final_message()
        seen_by_client = "\n".join(events)
        assert "thinking_delta" not in seen_by_client
    else:
        first = client.messages.create(messages=messages, **kw)
        seen_by_client = first.model_dump_json()
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use"]
    thinking = first.content[0]
    assert thinking.type == "thinking" and thinking.thinking == "" and thinking.signature
    messages += anthropic_tool_reply(first.content, "1. " + PROBE)
    final = client.messages.create(messages=messages, **kw)
    ups = world.recorder.find(conv)
    word = _word([u["body"] for u in ups])
    assert not _mentions(seen_by_client, word)
    text = [b for b in final.content if b.type == "text"][-1]
    assert text.type == "text" and text.text == word
    budget = ANTHROPIC_BUDGET["high"]
    assert [u["body"]["thinking"] for u in ups] == [
        {"type": "enabled", "budget_tokens": budget}
    ] * 2
    assert all("output_config" not in u["body"] for u in ups)
    _upstream_auth_ok(world, conv, "x-api-key", UPSTREAM_KEY)
    rows = _forwarded(world, conv)
    assert [(r.requested, r.resolved, r.stream) for r in rows] == [
        ("high", "high", stream),
        ("high", "high", False),
    ]
