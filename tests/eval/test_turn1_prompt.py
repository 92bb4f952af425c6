"""The opaque step's turn-1 prompt: one fixed text that makes models reason (the weather task
plus a small arithmetic task), as the method's own harness learned; turn 2 replays that same
conversation; the text step keeps its own task. The expected texts are written out here from
the method's description, not read from the fixture module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from reasonwire.eval import EvalConfig, run_eval
from reasonwire.eval.runner import Target
from reasonwire.routes import Route

from .anthropic_stub import Stub, serve

SYSTEM = (
    "You are a careful assistant with one tool, get_weather. Use it when the user asks about "
    "weather, then answer briefly."
)
TURN1 = (
    "What is the weather in Lisbon right now? I need to decide whether to cycle to work. "
    "Also work out how far I ride in a month: 7.4 km each way, 3 days a week, 4 weeks."
)
TEXT_TASK = "What is the weather in Lisbon right now? I need to decide whether to cycle to work."


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def test_turn1_asks_the_fixed_arithmetic_prompt_and_turn2_replays_it(tmp_path: Path) -> None:
    stub = Stub()
    with serve(stub) as url:
        route = Route("stub", "anthropic", url)
        run_eval(EvalConfig(targets=[Target(route, "claude-stub")], out=tmp_path, workers=2))
    turn1 = [b for b in stub.bodies if len(b["messages"]) == 1]
    assert len(turn1) == 1  # the stub always reasons and calls the tool: no climb
    (t1,) = turn1
    assert _text(t1["system"]) == SYSTEM
    assert [(m["role"], _text(m["content"])) for m in t1["messages"]] == [("user", TURN1)]
    turn2 = [b for b in stub.bodies if len(b["messages"]) > 1]
    assert len(turn2) == 4  # verbatim and stripped, in the loop and across turns
    for body in turn2:
        assert body["messages"][0] == t1["messages"][0]  # the conversation turn 1 answered
    cross = [b for b in turn2 if len(b["messages"]) > 3]
    assert cross and all("177.6 km" in _text(b["messages"][3]["content"]) for b in cross)


def test_the_text_step_keeps_its_own_task(tmp_path: Path) -> None:
    """A chat route: its text cells ask the weather task alone; only turn 1 adds the sum."""
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        msg = {"role": "assistant", "content": "NONE"}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "m",
                "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            },
        )

    route = Route("mock", "chat", "http://mock.invalid/v1", local=True)
    cfg = EvalConfig(
        targets=[Target(route, "m")],
        out=tmp_path,
        transport=httpx.MockTransport(handler),
        workers=1,
    )
    run_eval(cfg)
    users = [[m["content"] for m in b["messages"] if m["role"] == "user"] for b in seen]
    firsts = {u[0] for u in users}
    assert firsts == {TEXT_TASK, TURN1}
    opening = [u for u in users if u == [TURN1]]
    assert len(opening) == 3  # turn 1 climbs low > medium > high: this model never calls
