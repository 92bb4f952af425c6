"""The agent keeps ``reasoning_content`` on every assistant tool-call turn for the routes that
refuse a tool-call turn without it, across user turns too, and never pads it with ``""``.

Documented rules (the expectations of these tests):

- DeepSeek thinking mode: in a tool-calling loop the ``reasoning_content`` of every earlier
  assistant turn must be sent back, or the API answers 400
  (https://api-docs.deepseek.com/guides/thinking_mode).
- Kimi K2 thinking: "thinking is enabled but reasoning_content is missing in assistant tool
  call message" (https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model,
  frequently asked questions).

An empty string passes such a check and carries nothing: a tool-call answer that came back
without ``reasoning_content`` goes back without it (the server's answer then says so).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from reasonwire import agent


def _call(cid: str, reasoning: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ],
    }
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": f"r-{cid}",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
    }


def _final(text: str) -> dict[str, Any]:
    return {
        "id": f"r-{text}",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text, "reasoning_content": "wrap"},
            }
        ],
    }


def lookup() -> str:
    """Look something up."""
    return "found"


# turn 1: a signed-off tool call with reasoning, then an answer; turn 2: a tool call the
# server returned WITHOUT reasoning_content, then an answer.
ANSWERS = [_call("c1", "R1"), _final("one"), _call("c2", None), _final("two")]


@pytest.mark.parametrize("profile", ["deepseek", "deepseek-v4", "kimi"])
def test_reasoning_content_rides_on_every_tool_call_turn_and_is_never_padded(
    profile: str,
) -> None:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=ANSWERS[len(sent) - 1])

    with httpx.Client(transport=httpx.MockTransport(handler)) as c:
        model = agent.openai_compatible(
            base_url="http://mock/v1", model="m", profile=profile, http_client=c
        )
        bot = agent.Agent(model, [lookup])
        assert bot.run("first").answer == "one"
        assert bot.run("second").answer == "two"
    assert len(sent) == len(ANSWERS)
    calls_by_id: dict[str, list[dict[str, Any]]] = {}
    for body in sent:
        for m in body["messages"]:
            if m["role"] == "assistant" and m.get("tool_calls"):
                calls_by_id.setdefault(m["tool_calls"][0]["id"], []).append(m)
    # c1 went back in request 2 (same turn), 3 and 4 (the next user turn): R1 each time
    assert [m.get("reasoning_content") for m in calls_by_id["c1"]] == ["R1", "R1", "R1"]
    # c2 came without reasoning_content: it goes back without, never as ""
    assert len(calls_by_id["c2"]) == 1
    assert "reasoning_content" not in calls_by_id["c2"][0]
    # no assistant message anywhere carries an invented empty reasoning_content
    assert not any(m.get("reasoning_content") == "" for body in sent for m in body["messages"])


def test_kimi_loop_on_the_simulator_and_its_refusal_of_a_bare_tool_call_turn() -> None:
    """The simulated Kimi (``sim-kimi``, WIRE.md's 2026 rule): the agent's loop carries
    reasoning_content and is accepted; the same request with the field removed is refused
    with Kimi's own words; padded with "" it passes and carries nothing."""
    from reasonwire.sim.server import SimServer

    seen: list[bytes] = []
    with (
        SimServer(seed=0) as sim,
        httpx.Client(event_hooks={"request": [lambda r: seen.append(r.content)]}) as http,
    ):
        model = agent.openai_compatible(
            base_url=sim.base_url, model="sim-kimi", profile="kimi", effort="high",
            http_client=http,
        )  # fmt: skip

        def lookup(city: str) -> str:
            """Look a city up."""
            return f"{city}: found"

        result = agent.Agent(model, tools=[lookup]).run("Find Oslo with lookup.")
        assert result.answer
        body = json.loads(seen[1])
        (turn,) = [m for m in body["messages"] if m.get("tool_calls")]
        assert turn["reasoning_content"]
        url = sim.base_url + "/chat/completions"
        del turn["reasoning_content"]
        refused = httpx.post(url, json=body)
        assert refused.status_code == 400
        assert "reasoning_content is missing in assistant tool call message" in refused.text
        turn["reasoning_content"] = ""
        assert httpx.post(url, json=body).status_code == 200
