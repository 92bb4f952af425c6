"""The agent against recorded tool loops (../shared/conformance): the recorded responses are
served in order through an httpx.MockTransport, and every follow-up request the agent sends
must carry exactly the carriers of the recorded follow-up request.

The recordings come from another client (pydantic-ai), so requests differ in things that are
not carriers (tool lists, ids it added, its own synthetic steps); the comparison is on
carriers: Anthropic thinking blocks, Responses reasoning items (id, encrypted_content,
summary), Gemini thought signatures (compared base64-decoded: the recording client re-encoded
them urlsafe) and thought parts, Chat reasoning fields by tool-call id.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from reasonwire import agent
from reasonwire.wire.model import ToolSpec
from tests.agent.conftest import FAST, key
from tests.conformance.corpus import Interaction, load_cassette

Extract = Callable[[Any], list[Any]]


def _anthropic(body: Any) -> list[Any]:
    return [
        b
        for m in body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") in ("thinking", "redacted_thinking")
    ]


def _responses(body: Any) -> list[Any]:
    return [
        (
            it.get("id"),
            it.get("encrypted_content"),
            [s.get("text") for s in it.get("summary") or []],
        )
        for it in body["input"]
        if isinstance(it, dict) and it.get("type") == "reasoning"
    ]


def _b64(sig: str) -> bytes:
    return base64.urlsafe_b64decode(sig.replace("+", "-").replace("/", "_") + "==")


def _gemini(body: Any) -> list[Any]:
    out: list[Any] = []
    for c in body["contents"]:
        if c.get("role") != "model":
            continue
        for p in c["parts"]:
            name = (p.get("functionCall") or {}).get("name")
            if "thoughtSignature" in p:
                out.append(("signature", name, _b64(p["thoughtSignature"])))
            if p.get("thought"):
                out.append(("thought", p.get("text")))
    return out


CHAT_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")


def _chat(body: Any) -> list[Any]:
    out: list[Any] = []
    for m in body["messages"]:
        if m.get("role") != "assistant":
            continue
        ids = tuple(tc["id"] for tc in m.get("tool_calls") or [])
        for f in CHAT_FIELDS:
            if m.get(f):  # a non-empty carrier (an empty one carries nothing)
                out.append((ids, f, m[f]))
    return out


def _mock(interactions: list[Interaction], sent: list[bytes]) -> httpx.MockTransport:
    queue = list(interactions)

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        it = queue.pop(0)
        if it.streamed:
            assert it.response_text is not None
            return httpx.Response(
                it.status,
                content=it.response_text.encode("utf-8"),
                headers={"content-type": "text/event-stream"},
            )
        return httpx.Response(it.status, json=it.response_json)

    return httpx.MockTransport(handler)


def _const(name: str, value: str) -> agent.Tool:
    return agent.Tool(lambda **_: value, ToolSpec(name=name))


CASES: dict[str, tuple[Callable[[httpx.Client], agent.Model], list[agent.Tool], bool, Extract]] = {
    "pai__test_anthropic__test_anthropic_tool_with_thinking.yaml": (
        lambda c: agent.anthropic("claude-sonnet-4-0", key=key, http_client=c, retries=FAST),
        [_const("get_user_country", "Mexico")],
        False,
        _anthropic,
    ),
    "pai__test_openai_responses__test_openai_responses_thinking_with_tool_calls.yaml": (
        lambda c: agent.openai(
            "gpt-5", store=False, effort="low", key=key, http_client=c, retries=FAST
        ),
        [_const("update_plan", "plan updated")],
        False,
        _responses,
    ),
    "pai__test_openai_responses__test_openai_responses_phase_streamed_on_part_start.yaml": (
        lambda c: agent.openai("gpt-5.5", store=False, key=key, http_client=c, retries=FAST),
        [_const("get_capital", "Potato City")],
        True,
        _responses,
    ),
    "pai__test_google__test_google_streaming_tool_call_thought_signature.yaml": (
        lambda c: agent.gemini("gemini-3-pro-preview", key=key, http_client=c, retries=FAST),
        [_const("get_country", "Mexico")],
        True,
        _gemini,
    ),
    "pai__test_deepseek__test_deepseek_deferred_capability_with_thinking.yaml": (
        lambda c: agent.from_route(
            "deepseek", "deepseek-reasoner", key=key, http_client=c, retries=FAST
        ),
        [
            _const("load_capability", "{}"),
            _const("get_player_name", "Anne"),
            _const("roll_dice", "4"),
        ],
        False,
        _chat,
    ),
}


def _covers(ours: list[Any], recorded: list[Any], chat: bool) -> None:
    if not chat:
        assert ours == recorded
        return
    # The recording client inserted a synthetic step of its own (empty reasoning_content);
    # every carrier the model sent must be ours, and ours must all be recorded ones.
    assert ours == [c for c in recorded if c in ours]
    assert set(map(json.dumps, recorded)) - set(map(json.dumps, ours)) == set()


@pytest.mark.parametrize("name", list(CASES))
def test_agent_replays_exactly_the_recorded_carriers(name: str) -> None:
    interactions = load_cassette(name)
    make_model, tools, stream, extract = CASES[name]
    sent: list[bytes] = []
    with httpx.Client(transport=_mock(interactions, sent)) as client:
        bot = agent.Agent(make_model(client), tools)
        result = bot.run("recorded task", stream=stream)
    assert len(sent) == len(interactions)
    assert result.answer  # the recorded final answer was reached
    for k in range(1, len(sent)):
        ours = extract(json.loads(sent[k]))
        recorded = extract(interactions[k].request)
        assert ours, f"request {k} carries no carrier"
        _covers(ours, recorded, extract is _chat)


def test_store_true_sends_only_the_new_items_with_the_recorded_response_id() -> None:
    """The same recorded Responses loop under the server-state strategy."""
    name = "pai__test_openai_responses__test_openai_responses_thinking_with_tool_calls.yaml"
    interactions = load_cassette(name)
    sent: list[bytes] = []
    with httpx.Client(transport=_mock(interactions, sent)) as client:
        model = agent.openai("gpt-5", effort="low", key=key, http_client=client, retries=FAST)
        agent.Agent(model, [_const("update_plan", "ok")]).run("recorded task")
    second = json.loads(sent[1])
    assert second["previous_response_id"] == interactions[0].response_json["id"]
    assert second["store"] is True
    assert [i["type"] for i in second["input"]] == ["function_call_output"]
    assert "include" not in second
