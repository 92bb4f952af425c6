"""The tool loop's steps without I/O: ``Agent._flow`` fed answers and tool results by hand.

The answers are Chat Completions bodies written out here and parsed by the dialect; the
expected steps (which request, which calls, what the next body ends with, where the round
limit falls) are the loop's documented rule, written as literals.
"""

from __future__ import annotations

import json

import pytest

from reasonwire import agent
from reasonwire.agent.loop import _RunTools, _Send
from reasonwire.wire.model import JSON, Assistant, ToolCall, ToolResult, Turn
from tests.agent.conftest import TOOLS

MODEL = agent.openai_compatible(base_url="http://127.0.0.1:9/v1", model="m")  # never contacted
PARIS = ToolCall("call_1", "lookup", '{"city":"Paris"}')
ROME = ToolCall("call_2", "weather", '{"city":"Rome"}')


def answer(*calls: ToolCall, text: str | None = None) -> Turn:
    message: dict[str, JSON] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return MODEL.dialect.parse_response(json.dumps(body).encode())


def results(*calls: ToolCall) -> tuple[ToolResult, ...]:
    return tuple(ToolResult(c.id, c.name, f"result of {c.id}") for c in calls)


def sent(step: object) -> list[dict[str, JSON]]:
    assert isinstance(step, _Send)
    messages: list[dict[str, JSON]] = json.loads(step.prepared.body)["messages"]
    return messages


def test_a_turn_sends_runs_the_calls_in_order_and_ends_on_an_answer_without_calls() -> None:
    bot = agent.Agent(MODEL, TOOLS)
    flow = bot._flow(bot.session("Weather in Paris and Rome?"), stream=False)
    first = next(flow)
    assert isinstance(first, _Send) and first.request == 0 and not first.prepared.stream
    assert sent(first)[-1] == {"role": "user", "content": "Weather in Paris and Rome?"}
    assert flow.send(answer(PARIS, ROME)) == _RunTools((PARIS, ROME), 0)
    second = flow.send(results(PARIS, ROME))
    assert isinstance(second, _Send) and second.request == 1
    tail = sent(second)[-2:]
    assert [(m["role"], m["tool_call_id"]) for m in tail] == [
        ("tool", "call_1"),
        ("tool", "call_2"),
    ]
    with pytest.raises(StopIteration) as end:
        flow.send(answer(text="Sunny in both."))
    result: agent.RunResult = end.value.value
    assert (result.answer, result.rounds, result.requests) == ("Sunny in both.", 1, 2)
    assert bot.transcript[-1] == Assistant(text="Sunny in both.")


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_the_round_limit_allows_exactly_max_rounds_rounds_of_calls(limit: int) -> None:
    bot = agent.Agent(MODEL, TOOLS, max_rounds=limit)
    flow = bot._flow(bot.session("go"), stream=True)
    step = next(flow)
    for n in range(limit):  # rounds 1..limit: each one's calls run
        step = flow.send(answer(PARIS))
        assert step == _RunTools((PARIS,), n)
        step = flow.send(results(PARIS))
        assert isinstance(step, _Send) and step.request == n + 1 and step.prepared.stream
    with pytest.raises(agent.ToolLoopLimit):  # round limit + 1: refused before its tools run
        flow.send(answer(PARIS))


def test_a_resumed_session_runs_its_pending_calls_first() -> None:
    bot = agent.Agent(MODEL, TOOLS)
    session = bot.session("go")
    session.commit(answer(PARIS))  # the answer arrived, the run failed before its results
    flow = bot._flow(session, stream=False)
    assert next(flow) == _RunTools((PARIS,), 0)
    step = flow.send(results(PARIS))
    assert isinstance(step, _Send) and step.request == 1


def test_an_abandoned_step_leaves_the_session_as_it_was() -> None:
    """A driver whose send fails abandons the flow: nothing was committed, and the next run
    of the session sends the very same bytes."""
    bot = agent.Agent(MODEL, TOOLS)
    session = bot.session("go")
    flow = bot._flow(session, stream=False)
    first = next(flow)
    flow.close()
    assert session.turns == () and bot.transcript == ()
    again = next(bot._flow(session, stream=False))
    assert isinstance(first, _Send) and isinstance(again, _Send)
    assert again.prepared.body == first.prepared.body
